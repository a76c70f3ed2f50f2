//! Live model objectives: the datasets' models (landmine SVM, HAR logistic regression,
//! EMNIST CNN), their per-agent splits, and the evaluation of one agent's model at one point.
//! `fbo tabulate` evaluates them on a grid and stores the table; `objective.kind = "model"`
//! evaluates them at each query. One code path, so a live run and a table agree wherever
//! they meet.

use super::{Evaluate, Landscape, Point, Request};
use crate::data::{self, emnist, har, heart, landmine};
use crate::error::{FboError, Result};
use crate::math::rng::{Purpose, stream};
use crate::model::cnn::{self, CnnParams};
use crate::model::logreg::{self, SgdParams};
use crate::model::metrics::roc_auc;
use crate::model::svm::{Stopping, SvmParams, rbf_kernel, train};
use crate::objective::ObjectiveSpec;
use crate::objective::space::Param;
use ndarray::{Array1, Array2, Axis};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dataset {
    Landmine,
    Har,
    Emnist,
    /// UCI Heart Disease's four hospitals (issue 39): logistic regression, validation AUC.
    Heart,
}

impl Dataset {
    /// The metric its model reports, for axis labels, and whether higher is better.
    pub fn metric_label(self) -> (&'static str, bool) {
        match self {
            Dataset::Landmine | Dataset::Heart => ("AUC", true),
            Dataset::Har | Dataset::Emnist => ("validation error", false),
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "landmine" => Some(Dataset::Landmine),
            "har" => Some(Dataset::Har),
            "emnist" => Some(Dataset::Emnist),
            "heart" => Some(Dataset::Heart),
            _ => None,
        }
    }

    /// The papers' hyperparameters and ranges (algorithms.md section 1; linear maps as in the
    /// authors' code). HAR defaults to the FTS paper's ranges; the DP paper's are in
    /// configs/tabulate-har-dp.toml.
    pub fn defaults(self) -> Vec<Param> {
        match self {
            Dataset::Landmine => vec![
                Param::linear("C", 1e-4, 10.0),
                Param::linear("gamma", 0.01, 10.0),
            ],
            Dataset::Har => vec![
                Param::linear("batch_size", 20.0, 60.0),
                Param::linear("l2", 1e-6, 1.0),
                Param::linear("learning_rate", 0.01, 0.1),
            ],
            Dataset::Emnist => vec![
                Param::linear("learning_rate", 1e-7, 0.02),
                Param::linear("lr_decay", 1e-7, 0.02),
                Param::linear("l2", 1e-7, 0.02),
            ],
            // Ours (no paper tunes it): lr * l2 <= 1 keeps the penalty's step from diverging.
            Dataset::Heart => vec![
                Param::log("l2", 1e-4, 1.0),
                Param::log("learning_rate", 1e-3, 1.0),
                Param::categorical("class_weight", vec!["none".into(), "balanced".into()]),
            ],
        }
    }

    /// Points per dimension by default: the suggested sizes (64^2, 16^3) and, for the
    /// CNN, 8^3, which tabulates in about two hours on 2 cores.
    pub fn default_grid(self) -> i64 {
        match self {
            Dataset::Landmine => 64,
            Dataset::Har => 16,
            Dataset::Emnist | Dataset::Heart => 8,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Dataset::Landmine => "landmine",
            Dataset::Har => "har",
            Dataset::Emnist => "emnist",
            Dataset::Heart => "heart",
        }
    }
}

/// A data row of a split file and the line that listed it.
pub type ListedRow = (usize, usize);

/// A train/validation split read from a file (`objective.split`): per agent, its training
/// and validation rows (indices within the agent's data) in the order the file gives them.
/// Order matters to a solver that stops early (libsvm's SMO at its default tolerance).
#[derive(Clone, Debug, PartialEq)]
pub struct SplitFile {
    pub path: PathBuf,
    pub sha256: String,
    /// agents[a] = (training rows, validation rows), each row with the file's line that
    /// listed it (for errors found once the data's size is known).
    pub agents: Vec<(Vec<ListedRow>, Vec<ListedRow>)>,
}

impl SplitFile {
    /// Reads fbo's `split.csv` format, `agent,index,set` (rows in the order listed within each
    /// set), or `agent,set,position,index` (rows ordered by position within each set).
    /// Every agent from 0 to the largest must be present; an index may appear once per agent.
    pub fn read(path: &Path) -> Result<Self> {
        let bad =
            |line: usize, msg: String| FboError::spec(path, "", format!("line {line}: {msg}"));
        let bytes = std::fs::read(path).map_err(|e| FboError::io(path, e))?;
        let text = String::from_utf8(bytes.clone())
            .map_err(|_| FboError::spec(path, "", "not UTF-8 text"))?;
        let mut lines = text.lines().enumerate();
        let header = lines.next().map(|(_, h)| h.trim()).unwrap_or("");
        let (ia, is, ip, ii) = match header {
            "agent,index,set" => (0, 2, None, 1),
            "agent,set,position,index" => (0, 1, Some(2), 3),
            other => {
                return Err(bad(
                    1,
                    format!(
                        "header must be agent,index,set or agent,set,position,index, got {other:?}"
                    ),
                ));
            }
        };
        // (agent, is training set) -> its rows as (position, index, line).
        type Rows = Vec<(usize, usize, usize)>;
        let mut sets: std::collections::BTreeMap<(usize, bool), Rows> = Default::default();
        let mut seen = std::collections::HashMap::new();
        for (n, line) in lines {
            let n = n + 1;
            if line.trim().is_empty() {
                continue;
            }
            let f: Vec<&str> = line.split(',').map(str::trim).collect();
            if f.len() != if ip.is_some() { 4 } else { 3 } {
                return Err(bad(
                    n,
                    format!("expected the header's columns, got {line:?}"),
                ));
            }
            let int = |s: &str, what: &str| {
                s.parse::<usize>()
                    .map_err(|_| bad(n, format!("{what} must be a whole number >= 0, got {s:?}")))
            };
            let agent = int(f[ia], "agent")?;
            let index = int(f[ii], "index")?;
            let train = match f[is] {
                "train" => true,
                "valid" => false,
                other => return Err(bad(n, format!("set must be train or valid, got {other:?}"))),
            };
            let position = match ip {
                Some(i) => int(f[i], "position")?,
                None => n,
            };
            if let Some(first) = seen.insert((agent, index), n) {
                return Err(bad(
                    n,
                    format!("agent {agent} row {index} is listed twice (also line {first})"),
                ));
            }
            sets.entry((agent, train))
                .or_default()
                .push((position, index, n));
        }
        let count = sets.keys().map(|k| k.0 + 1).max().unwrap_or(0);
        let mut agents = Vec::with_capacity(count);
        for a in 0..count {
            let mut take = |train: bool| -> Result<Vec<(usize, usize)>> {
                let mut rows = sets.remove(&(a, train)).ok_or_else(|| {
                    FboError::spec(
                        path,
                        "",
                        format!(
                            "agent {a} has no {} rows",
                            if train { "train" } else { "valid" }
                        ),
                    )
                })?;
                rows.sort_by_key(|r| r.0);
                if let Some(w) = rows.windows(2).find(|w| w[0].0 == w[1].0) {
                    return Err(bad(
                        w[1].2,
                        format!("position {} repeats line {}", w[1].0, w[0].2),
                    ));
                }
                Ok(rows.into_iter().map(|r| (r.1, r.2)).collect())
            };
            agents.push((take(true)?, take(false)?));
        }
        Ok(SplitFile {
            path: path.to_path_buf(),
            sha256: data::sha256_hex(&bytes),
            agents,
        })
    }

    /// Agent `a`'s training and validation rows, checked against its `n` rows of data.
    fn rows(&self, a: usize, n: usize) -> Result<(Vec<usize>, Vec<usize>, Vec<bool>)> {
        let (tr, va) = self.agents.get(a).ok_or_else(|| {
            FboError::spec(
                &self.path,
                "",
                format!(
                    "has agents 0..{} but the data have agent {a}",
                    self.agents.len().saturating_sub(1)
                ),
            )
        })?;
        let mut mask = vec![None; n];
        for (rows, train) in [(tr, true), (va, false)] {
            for &(i, line) in rows {
                let slot = mask.get_mut(i).ok_or_else(|| {
                    FboError::spec(
                        &self.path,
                        format!("line {line}"),
                        format!(
                            "agent {a} row {i} is out of range (its data have {n} rows, 0..{})",
                            n.saturating_sub(1)
                        ),
                    )
                })?;
                *slot = Some(train);
            }
        }
        if let Some(i) = mask.iter().position(Option::is_none) {
            return Err(FboError::spec(
                &self.path,
                "",
                format!(
                    "agent {a} row {i} is in neither set (every row of the data must be listed)"
                ),
            ));
        }
        let index = |rows: &[(usize, usize)]| rows.iter().map(|r| r.0).collect();
        Ok((
            index(tr),
            index(va),
            mask.into_iter().map(|m| m == Some(true)).collect(),
        ))
    }
}

impl Dataset {
    /// The split file named by a spec or tabulation config (`rel`, relative to the config's
    /// folder `base`), read and checked; the error is the message for the key that named it.
    pub fn split_file(
        self,
        base: &Path,
        rel: Option<&str>,
    ) -> std::result::Result<Option<Arc<SplitFile>>, String> {
        match rel {
            None => Ok(None),
            Some(_) if self == Dataset::Emnist => Err(
                "emnist uses its writers' own train / val split; a split file applies to landmine and har"
                    .into(),
            ),
            Some(rel) => SplitFile::read(&base.join(rel))
                .map(|f| Some(Arc::new(f)))
                .map_err(|e| e.to_string()),
        }
    }

    /// The SVM's stopping rule named by a spec or tabulation config (landmine only).
    pub fn svm_stopping(self, v: Option<&str>) -> std::result::Result<Stopping, String> {
        match v {
            None => Ok(Stopping::Converged),
            Some(_) if self != Dataset::Landmine => {
                Err("applies only to dataset = \"landmine\"".into())
            }
            Some(v) => Stopping::parse(v)
                .ok_or_else(|| format!("unknown stopping \"{v}\"; allowed: {}", Stopping::NAMES)),
        }
    }
}

impl ModelSettings {
    /// The landmine SVM's solver settings at (C, gamma).
    pub fn svm_params(&self, c: f64, gamma: f64) -> SvmParams {
        match self.svm_stopping {
            Stopping::Converged => SvmParams::new(c, gamma),
            Stopping::Libsvm => SvmParams::libsvm(c, gamma),
        }
    }
}

/// What fixes a dataset's models apart from the tuned hyperparameters.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelSettings {
    pub dataset: Dataset,
    /// The raw data: the landmine .mat file, the HAR or EMNIST folder.
    pub data: PathBuf,
    /// Seeds the stratified half split (unless `split_file` gives it) and the models' own
    /// randomness (Platt folds, SGD batch order).
    pub split_seed: u64,
    /// The split from a file instead of the seeded half split (landmine and HAR).
    pub split_file: Option<Arc<SplitFile>>,
    /// Where the landmine SVM's solver stops (unused by the other datasets).
    pub svm_stopping: Stopping,
    /// Training epochs (SGD models).
    pub epochs: usize,
    /// Minibatch size of the CNN (EMNIST); HAR tunes its batch size, the SVM has none.
    pub batch_size: usize,
    /// The landmine SVM's score (unused by the other datasets).
    pub metric: SvmMetric,
}

/// One agent's binary data split for training and validation.
pub struct AgentSplit {
    pub x_train: Array2<f64>,
    pub y_train: Vec<f64>,
    pub x_valid: Array2<f64>,
    pub valid_pos: Vec<bool>,
}

/// Agent `a`'s training rows, validation rows and train mask: from the split file if there is
/// one, else the seeded stratified half split.
fn split_rows(
    cfg: &ModelSettings,
    labels: &[usize],
    a: usize,
) -> Result<(Vec<usize>, Vec<usize>, Vec<bool>)> {
    match &cfg.split_file {
        Some(file) => file.rows(a, labels.len()),
        None => Ok(data::half_split_rows(labels, cfg.split_seed, a)),
    }
}

impl AgentSplit {
    /// Splits a field with `stratified_half_split`; returns it with the train mask.
    pub fn landmine(f: &landmine::Field, seed: u64, agent: usize) -> (Self, Vec<bool>) {
        let (tr, va, train_rows) = data::half_split_rows(&f.labels, seed, agent);
        (Self::from_rows(f, &tr, &va), train_rows)
    }

    /// The field's rows `tr` for training and `va` for validation, in that order.
    pub fn from_rows(f: &landmine::Field, tr: &[usize], va: &[usize]) -> Self {
        AgentSplit {
            x_train: f.x.select(Axis(0), tr),
            y_train: tr
                .iter()
                .map(|&i| if f.labels[i] == 1 { 1.0 } else { -1.0 })
                .collect(),
            x_valid: f.x.select(Axis(0), va),
            valid_pos: va.iter().map(|&i| f.labels[i] == 1).collect(),
        }
    }
}

/// Validation ROC-AUC of an RBF SVM trained on the split's training half.
pub fn svm_auc(a: &AgentSplit, p: &SvmParams) -> f64 {
    let k = p.train_kernel(a.x_train.view());
    let model = train(&k, &a.y_train, p);
    let kv = rbf_kernel(a.x_train.view(), a.x_valid.view(), p.gamma);
    let scores = model.decision(&kv);
    roc_auc(scores.as_slice().expect("contiguous"), &a.valid_pos)
        .expect("both classes in validation")
}

/// What the landmine objective scores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SvmMetric {
    /// AUC of the SVM's decision values (the tables' metric).
    Auc,
    /// AUC of Platt-calibrated probabilities, as scikit-learn's SVC(probability=True) gives
    /// them and the authors scored their SVMs: libsvm's sigmoid fitted to 5-fold
    /// cross-validated decision values, probabilities clamped to [1e-7, 1 - 1e-7]. The
    /// sigmoid is monotone, so this equals the decision-value AUC up to the clamp's ties,
    /// except where the cross-validation finds the classifier ranks backwards (A > 0): then
    /// the calibration inverts it and the AUC becomes 1 - AUC.
    PlattAuc,
}

/// libsvm's `svm_binary_svc_probability`: decision values of every training point from a
/// model trained on the other four folds of a random 5-fold split (folds of a libsvm-style
/// shuffle), then the sigmoid fit. As in libsvm, whose first class is scikit-learn's class 0,
/// the sigmoid gives P(negative class): (A, B) are fitted to the negated decision values with
/// the negatives as the positive label.
pub fn platt_fit<R: rand::Rng + ?Sized>(
    k: &Array2<f64>,
    y: &[f64],
    p: &SvmParams,
    rng: &mut R,
) -> (f64, f64) {
    let n = y.len();
    let mut perm: Vec<usize> = (0..n).collect();
    for i in 0..n {
        let j = i + rng.random_range(0..n - i);
        perm.swap(i, j);
    }
    let folds = 5;
    let mut dec = vec![0.0; n];
    for f in 0..folds {
        let (begin, end) = (f * n / folds, (f + 1) * n / folds);
        let rest: Vec<usize> = perm[..begin].iter().chain(&perm[end..]).copied().collect();
        let held = &perm[begin..end];
        let y_sub: Vec<f64> = rest.iter().map(|&i| y[i]).collect();
        let (has_pos, has_neg) = (
            y_sub.iter().any(|&v| v > 0.0),
            y_sub.iter().any(|&v| v < 0.0),
        );
        if !(has_pos && has_neg) {
            // libsvm's convention for a one-class fold: every held-out value +1 or -1.
            let v = if has_pos {
                1.0
            } else if has_neg {
                -1.0
            } else {
                0.0
            };
            for &i in held {
                dec[i] = v;
            }
            continue;
        }
        let k_sub = k.select(Axis(0), &rest).select(Axis(1), &rest);
        let model = train(&k_sub, &y_sub, p);
        let k_cross = k.select(Axis(0), &rest).select(Axis(1), held);
        for (&i, v) in held.iter().zip(model.decision(&k_cross)) {
            dec[i] = v;
        }
    }
    let neg_dec: Vec<f64> = dec.iter().map(|d| -d).collect();
    let negative: Vec<bool> = y.iter().map(|&v| v < 0.0).collect();
    crate::model::platt::sigmoid_train(&neg_dec, &negative)
}

/// Validation AUC of the SVM's Platt-calibrated probabilities (`SvmMetric::PlattAuc`) as
/// scikit-learn's predict_proba gives them: the clamped sigmoid of P(negative class), coupled
/// by libsvm's two-class `multiclass_probability`, then P(positive). The fold shuffle draws
/// from `rng`.
pub fn svm_platt_auc<R: rand::Rng + ?Sized>(a: &AgentSplit, p: &SvmParams, rng: &mut R) -> f64 {
    let k = p.train_kernel(a.x_train.view());
    let model = train(&k, &a.y_train, p);
    let (pa, pb) = platt_fit(&k, &a.y_train, p, rng);
    let kv = rbf_kernel(a.x_train.view(), a.x_valid.view(), p.gamma);
    calibrated_auc(
        model.decision(&kv).as_slice().expect("contiguous"),
        pa,
        pb,
        &a.valid_pos,
    )
}

/// The AUC of predict_proba[:, 1] given the decision values (positive: positive class) and
/// libsvm's sigmoid (A, B) for P(negative class).
pub fn calibrated_auc(dec: &[f64], a: f64, b: f64, positive: &[bool]) -> f64 {
    use crate::model::platt::{coupled_probability, sigmoid_predict};
    let probs: Vec<f64> = dec
        .iter()
        .map(|&d| coupled_probability(sigmoid_predict(-d, a, b).clamp(1e-7, 1.0 - 1e-7)).1)
        .collect();
    roc_auc(&probs, positive).expect("both classes in validation")
}

/// One subject's multiclass split, standardised with the training half's mean and s.d.
pub struct ClassSplit {
    pub x_train: Array2<f64>,
    pub y_train: Vec<usize>,
    pub x_valid: Array2<f64>,
    pub y_valid: Vec<usize>,
}

impl ClassSplit {
    pub fn new(x: &Array2<f64>, labels: &[usize], seed: u64, agent: usize) -> (Self, Vec<bool>) {
        let (tr, va, train_rows) = data::half_split_rows(labels, seed, agent);
        (Self::from_rows(x, labels, &tr, &va), train_rows)
    }

    /// Rows `tr` for training and `va` for validation, features standardised by the former.
    pub fn from_rows(x: &Array2<f64>, labels: &[usize], tr: &[usize], va: &[usize]) -> Self {
        let mut x_train = x.select(Axis(0), tr);
        let mut x_valid = x.select(Axis(0), va);
        let mean: Array1<f64> = x_train.mean_axis(Axis(0)).expect("training rows");
        let sd: Array1<f64> = x_train
            .std_axis(Axis(0), 0.0)
            .mapv(|s| if s > 1e-12 { s } else { 1.0 });
        for m in [&mut x_train, &mut x_valid] {
            *m -= &mean;
            *m /= &sd;
        }
        ClassSplit {
            x_train,
            y_train: tr.iter().map(|&i| labels[i]).collect(),
            x_valid,
            y_valid: va.iter().map(|&i| labels[i]).collect(),
        }
    }
}

/// Validation error of multinomial logistic regression trained by minibatch SGD; the batch
/// order is seeded by (split seed, agent, point key: the grid index in a table, a hash of the
/// coordinates in a live run).
pub fn logreg_error(s: &ClassSplit, p: &SgdParams, seed: u64, agent: usize, point: u64) -> f64 {
    let mut rng = stream(seed, point, agent as u64, Purpose::HyperFit);
    let m = logreg::train(s.x_train.view(), &s.y_train, har::CLASSES, p, &mut rng);
    logreg::error_rate(&m.predict(s.x_valid.view()), &s.y_valid)
}

/// One writer's images as the network's f32 input.
pub struct ImageSplit {
    pub x_train: Array2<f32>,
    pub y_train: Vec<usize>,
    pub x_valid: Array2<f32>,
    pub y_valid: Vec<usize>,
}

/// Validation error of the CNN. The seed depends on the agent only, so every grid point of an
/// agent starts from the same weights and batch order (common random numbers): neighbouring
/// table entries then differ by their hyperparameters, not by initialisation luck.
pub fn cnn_error(s: &ImageSplit, p: &CnnParams, seed: u64, agent: usize) -> f64 {
    let mut rng = stream(seed, 0, agent as u64, Purpose::HyperFit);
    let net = cnn::train(s.x_train.view(), &s.y_train, emnist::CLASSES, p, &mut rng);
    logreg::error_rate(&net.predict(s.x_valid.view()), &s.y_valid)
}

/// Validation AUC of binary logistic regression on a hospital's encoded split
/// (`data::heart`), trained by `epochs` full-batch gradient steps; class_weight = 1 weights
/// each class by n / (2 n_class) (scikit-learn's "balanced"). A diverged fit scores 0.5 (its
/// scores rank nothing).
pub fn heart_auc(s: &heart::Encoded, l2: f64, lr: f64, balanced: bool, epochs: usize) -> f64 {
    let n = s.y_train.len() as f64;
    let pos = s.y_train.iter().filter(|&&y| y == 1).count() as f64;
    let weight: Vec<f64> = s
        .y_train
        .iter()
        .map(|&y| match (balanced, y) {
            (false, _) => 1.0,
            (true, 1) => n / (2.0 * pos.max(1.0)),
            (true, _) => n / (2.0 * (n - pos).max(1.0)),
        })
        .collect();
    let (w, b) = logreg::train_binary(s.x_train.view(), &s.y_train, &weight, l2, lr, epochs);
    let scores: Vec<f64> = s
        .x_valid
        .rows()
        .into_iter()
        .map(|r| r.dot(&w) + b)
        .collect();
    if scores.iter().any(|v| !v.is_finite()) {
        return 0.5;
    }
    let positive: Vec<bool> = s.y_valid.iter().map(|&y| y == 1).collect();
    roc_auc(&scores, &positive).expect("both classes in validation (stratified split)")
}

/// A dataset ready to tabulate.
pub enum Task {
    Landmine(Vec<AgentSplit>),
    Har(Vec<ClassSplit>),
    Emnist(Vec<ImageSplit>),
    /// None: the site's file is not on this machine.
    Heart(Vec<Option<heart::Encoded>>),
}

impl Task {
    pub fn agents(&self) -> usize {
        match self {
            Task::Landmine(a) => a.len(),
            Task::Har(a) => a.len(),
            Task::Emnist(a) => a.len(),
            Task::Heart(a) => a.len(),
        }
    }

    /// Whether this machine holds `agent`'s data (a hospital has only its own).
    pub fn holds(&self, agent: usize) -> bool {
        match self {
            Task::Heart(a) => a[agent].is_some(),
            _ => true,
        }
    }

    /// The validation metric of `agent`'s model trained at raw hyperparameters `raw`.
    pub fn evaluate(&self, cfg: &ModelSettings, agent: usize, point: u64, raw: &[f64]) -> f64 {
        match self {
            Task::Landmine(a) => match cfg.metric {
                SvmMetric::Auc => svm_auc(&a[agent], &cfg.svm_params(raw[0], raw[1])),
                SvmMetric::PlattAuc => {
                    let mut rng = stream(cfg.split_seed, point, agent as u64, Purpose::HyperFit);
                    svm_platt_auc(&a[agent], &cfg.svm_params(raw[0], raw[1]), &mut rng)
                }
            },
            Task::Har(a) => {
                let p = SgdParams {
                    batch: raw[0].round() as usize,
                    l2: raw[1],
                    lr: raw[2],
                    epochs: cfg.epochs,
                };
                logreg_error(&a[agent], &p, cfg.split_seed, agent, point)
            }
            Task::Emnist(a) => {
                let p = CnnParams {
                    lr: raw[0],
                    decay: raw[1],
                    l2: raw[2],
                    batch: cfg.batch_size,
                    epochs: cfg.epochs,
                };
                cnn_error(&a[agent], &p, cfg.split_seed, agent)
            }
            Task::Heart(a) => heart_auc(
                a[agent].as_ref().expect("checked by Task::holds"),
                raw[0],
                raw[1],
                raw[2] == 1.0,
                cfg.epochs,
            ),
        }
    }
}

fn half_split_note(cfg: &ModelSettings) -> String {
    match &cfg.split_file {
        Some(f) => format!(
            "split = \"from {} (sha256 {}), training rows in its order: split.csv (set = train | valid)\"\n",
            f.path.display(),
            f.sha256
        ),
        None => format!(
            "split = \"stratified 50/50 per agent, split_seed {}: split.csv (set = train | valid)\"\n",
            cfg.split_seed
        ),
    }
}

/// Reads and splits the raw data: the task, split.csv, the source's sha256, and the lines of
/// provenance particular to the dataset.
pub fn prepare(cfg: &ModelSettings, data_path: &Path) -> Result<(Task, String, String, String)> {
    let mut split_csv = String::from("agent,index,set\n");
    let mut note = |a: usize, rows: &[bool]| {
        for (i, &t) in rows.iter().enumerate() {
            split_csv += &format!("{a},{i},{}\n", if t { "train" } else { "valid" });
        }
    };
    match cfg.dataset {
        Dataset::Landmine => {
            let (fields, sha) = landmine::read(data_path)?;
            let mut agents = Vec::with_capacity(fields.len());
            for (a, f) in fields.iter().enumerate() {
                let (tr, va, rows) = split_rows(cfg, &f.labels, a)?;
                note(a, &rows);
                agents.push(AgentSplit::from_rows(f, &tr, &va));
            }
            let meta = landmine_meta(cfg);
            Ok((Task::Landmine(agents), split_csv, sha, meta))
        }
        Dataset::Har => {
            let (subjects, sha) = har::read(data_path)?;
            let mut agents = Vec::with_capacity(subjects.len());
            for (a, s) in subjects.iter().enumerate() {
                let (tr, va, rows) = split_rows(cfg, &s.labels, a)?;
                note(a, &rows);
                agents.push(ClassSplit::from_rows(&s.x, &s.labels, &tr, &va));
            }
            let ids: Vec<String> = subjects.iter().map(|s| s.id.to_string()).collect();
            let meta = format!(
                "model = \"multinomial logistic regression, minibatch SGD from zero weights, {} epochs, features standardised by the training half, batch size rounded to an integer; a diverged fit predicts class 0\"\n\
                 metric = \"validation_error\"\ndirection = \"minimize\"\n\
                 agent_ids = \"UCI HAR subjects [{}] in this order; split.csv index = the subject's row among its X_train rows\"\n{}",
                cfg.epochs,
                ids.join(", "),
                half_split_note(cfg)
            );
            Ok((Task::Har(agents), split_csv, sha, meta))
        }
        Dataset::Emnist => {
            let (writers, sha) = emnist::read(data_path)?;
            let mut agents = Vec::with_capacity(writers.len());
            for (a, w) in writers.iter().enumerate() {
                for (set, images) in [("train", &w.train_images), ("valid", &w.valid_images)] {
                    for i in images {
                        split_csv += &format!("{a},{i},{set}\n");
                    }
                }
                agents.push(ImageSplit {
                    x_train: cnn::to_f32(&w.x_train),
                    y_train: w.y_train.clone(),
                    x_valid: cnn::to_f32(&w.x_valid),
                    y_valid: w.y_valid.clone(),
                });
            }
            let ids: Vec<&str> = writers.iter().map(|w| w.id.as_str()).collect();
            let meta = format!(
                "model = \"CNN conv3x3(8)-relu-maxpool2-conv3x3(16)-relu-maxpool2-dense(10), He-normal init seeded per agent, plain SGD, batch {}, {} epochs, lr_t = lr / (1 + lr_decay t) per step, loss + l2 sum(w^2); pixels (255 - byte) / 255; a diverged fit predicts class 0\"\n\
                 metric = \"validation_error\"\ndirection = \"minimize\"\n\
                 agent_ids = \"LEAF FEMNIST writers [{}] (writer_index = agent); split.csv index = image (row of femnist_digits_first50_index.csv)\"\n\
                 split = \"the source's own per-writer train / val split (LEAF 90/10): split.csv (set = train | valid)\"\n",
                cfg.batch_size,
                cfg.epochs,
                ids.join(", ")
            );
            Ok((Task::Emnist(agents), split_csv, sha, meta))
        }
        Dataset::Heart => {
            let (sites, sha) = heart::read(data_path)?;
            let mut agents = Vec::with_capacity(sites.len());
            for (a, s) in sites.iter().enumerate() {
                if !s.present {
                    agents.push(None);
                    continue;
                }
                let (tr, va, rows) = split_rows(cfg, &s.labels, a)?;
                note(a, &rows);
                agents.push(Some(heart::encode(s, &tr, &va)));
            }
            let meta = format!(
                "model = \"binary logistic regression, {} full-batch gradient steps from zero, {} features encoded per site (data::heart: medians, majorities, one-hot, standardisation fitted on the training half)\"\n\
                 metric = \"auc\"\ndirection = \"maximize\"\n\
                 agent_ids = \"hospitals [{}] in this order; split.csv index = the row in the site's file\"\n{}",
                cfg.epochs,
                heart::FEATURES,
                heart::SITE_NAMES.join(", "),
                half_split_note(cfg)
            );
            Ok((Task::Heart(agents), split_csv, sha, meta))
        }
    }
}

/// The provenance lines of a landmine table: the SVM, its solver and its score.
fn landmine_meta(cfg: &ModelSettings) -> String {
    let (score, metric) = match cfg.metric {
        SvmMetric::Auc => ("decision value", "auc"),
        SvmMetric::PlattAuc => (
            "Platt-calibrated probability as scikit-learn's SVC(probability=True): libsvm's sigmoid on 5-fold cross-validated decision values (folds seeded by split_seed, agent and point), two-class coupling",
            "platt_auc",
        ),
    };
    let solver = match cfg.svm_stopping {
        Stopping::Converged => {
            "libsvm working-set selection, stopping tolerance 1e-9 min(1, C), Q in single precision as in libsvm, no shrinking"
        }
        Stopping::Libsvm => {
            "libsvm's Solver as scikit-learn's default SVC(): tolerance 1e-3, shrinking, libsvm's kernel formula and label order, Q in single precision; training rows in the split's order"
        }
    };
    format!(
        "model = \"RBF-kernel SVM, C-SVC trained by SMO ({solver}), raw features, score = {score}\"\n\
         metric = \"{metric}\"\ndirection = \"maximize\"\n\
         agent_ids = \"landmine fields 1..29 (agent = field - 1); split.csv index = index_in_field\"\n{}",
        half_split_note(cfg)
    )
}

/// A 64-bit key of a point's coordinates: the seed of its stochastic training (HAR's batch
/// order), so a point's value does not depend on when or by whom it was queried.
fn point_key(p: &Point) -> u64 {
    p.x.iter().fold(0x243F_6A88_85A3_08D3u64, |h, v| {
        (h ^ v.to_bits())
            .wrapping_mul(0x0000_0100_0000_01B3)
            .rotate_left(29)
    })
}

struct Live {
    task: Task,
    /// The data's agent of each fbo agent.
    agents: Vec<usize>,
    settings: ModelSettings,
    sign: f64,
}

impl Evaluate for Live {
    fn evaluate(&self, req: &Request, point: &Point, raw: &[f64]) -> Result<(f64, f64)> {
        let agent = req.agent;
        if !self.task.holds(self.agents[agent]) {
            return Err(FboError::Run(format!(
                "agent {agent}'s data are not on this machine ({}): evaluate it where they are",
                self.settings.data.display()
            )));
        }
        let t0 = Instant::now();
        let key = point.index.map_or_else(|| point_key(point), |i| i as u64);
        let metric = self
            .task
            .evaluate(&self.settings, self.agents[agent], key, raw);
        Ok((self.sign * metric, t0.elapsed().as_secs_f64()))
    }
}

/// The metric's sign as BO sees it: AUC is maximised, validation error minimised.
pub fn metric_sign(dataset: Dataset) -> f64 {
    match dataset {
        Dataset::Landmine | Dataset::Heart => 1.0,
        Dataset::Har | Dataset::Emnist => -1.0,
    }
}

/// The landscape of a live model: the dataset read and split once, every query trained.
pub fn landscape(
    settings: &ModelSettings,
    agents: &[usize],
    spec: &ObjectiveSpec,
) -> Result<Arc<Landscape>> {
    let (task, _, _, _) = prepare(settings, &settings.data)?;
    if let Some(&a) = agents.iter().find(|&&a| a >= task.agents()) {
        return Err(FboError::Run(format!(
            "agent {a} is not in {} ({} agents)",
            settings.data.display(),
            task.agents()
        )));
    }
    let sign = metric_sign(settings.dataset);
    let space = Arc::new(spec.space());
    let live = Live {
        task,
        agents: agents.to_vec(),
        settings: settings.clone(),
        sign,
    };
    Ok(Arc::new(
        Landscape::live(space, agents.len(), Box::new(live), None, spec.noise_var)
            .with_metric_sign(sign),
    ))
}

/// Agents a dataset's raw data defines, for spec validation (reads the data).
pub fn count_agents(settings: &ModelSettings) -> Result<usize> {
    Ok(match settings.dataset {
        Dataset::Landmine => landmine::read(&settings.data)?.0.len(),
        Dataset::Har => har::read(&settings.data)?.0.len(),
        Dataset::Emnist => emnist::read(&settings.data)?.0.len(),
        Dataset::Heart => heart::SITES.len(),
    })
}
