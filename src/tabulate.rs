//! `fbo tabulate`: turns a raw dataset into a hyperparameter-response table. For every agent
//! and every point of a grid over the normalised hyperparameter box it trains the model and
//! records the validation metric. Each agent's rows are written as soon as it finishes, so an
//! interrupted build resumes where it stopped.
//!
//! A dataset is a `Task`: its agents' prepared splits and a function from (agent, grid point,
//! raw hyperparameters) to the metric. The driver (grid, parallelism, resume, provenance) is
//! shared.

use crate::data::{self, emnist, har, landmine};
use crate::error::{FboError, Result};
use crate::model::cnn::{self, CnnParams};
use crate::model::logreg::{self, SgdParams};
use crate::model::metrics::roc_auc;
use crate::model::svm::{SvmParams, rbf_kernel, train};
use crate::output::write_atomic;
use crate::rng::{Purpose, stream};
use crate::runner::{progress_bar, with_threads};
use ndarray::{Array1, Array2, Axis};
use rayon::prelude::*;
use serde::Deserialize;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    Linear,
    Log,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Hyper {
    pub name: String,
    pub low: f64,
    pub high: f64,
    pub scale: Scale,
}

impl Hyper {
    /// The raw value at normalised coordinate u in [0, 1].
    pub fn value(&self, u: f64) -> f64 {
        match self.scale {
            Scale::Linear => self.low + (self.high - self.low) * u,
            Scale::Log => (self.low.ln() + (self.high.ln() - self.low.ln()) * u).exp(),
        }
    }

    fn linear(name: &str, low: f64, high: f64) -> Self {
        Hyper {
            name: name.into(),
            low,
            high,
            scale: Scale::Linear,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dataset {
    Landmine,
    Har,
    Emnist,
}

impl Dataset {
    fn parse(s: &str) -> Option<Self> {
        match s {
            "landmine" => Some(Dataset::Landmine),
            "har" => Some(Dataset::Har),
            "emnist" => Some(Dataset::Emnist),
            _ => None,
        }
    }

    /// The papers' hyperparameters and ranges (algorithms.md section 1; linear maps as in the
    /// authors' code). HAR defaults to the FTS paper's ranges; the DP paper's are in
    /// configs/tabulate-har-dp.toml.
    fn defaults(self) -> Vec<Hyper> {
        match self {
            Dataset::Landmine => vec![
                Hyper::linear("C", 1e-4, 10.0),
                Hyper::linear("gamma", 0.01, 10.0),
            ],
            Dataset::Har => vec![
                Hyper::linear("batch_size", 20.0, 60.0),
                Hyper::linear("l2", 1e-6, 1.0),
                Hyper::linear("learning_rate", 0.01, 0.1),
            ],
            Dataset::Emnist => vec![
                Hyper::linear("learning_rate", 1e-7, 0.02),
                Hyper::linear("lr_decay", 1e-7, 0.02),
                Hyper::linear("l2", 1e-7, 0.02),
            ],
        }
    }

    /// Points per dimension by default: the suggested sizes (64^2, 16^3) and, for the
    /// CNN, 8^3, which tabulates in about two hours on 2 cores.
    fn default_grid(self) -> i64 {
        match self {
            Dataset::Landmine => 64,
            Dataset::Har => 16,
            Dataset::Emnist => 8,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Dataset::Landmine => "landmine",
            Dataset::Har => "har",
            Dataset::Emnist => "emnist",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct TabulateConfig {
    pub dataset: Dataset,
    /// Names the default output folder data/<name>/.
    pub name: String,
    /// Points per dimension.
    pub grid: usize,
    pub split_seed: u64,
    /// Training epochs (SGD models).
    pub epochs: usize,
    /// Minibatch size of the CNN (EMNIST); HAR tunes its batch size, the SVM has none.
    pub batch_size: usize,
    pub hyper: Vec<Hyper>,
    pub source: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    dataset: String,
    name: Option<String>,
    grid: Option<i64>,
    split_seed: Option<i64>,
    epochs: Option<i64>,
    batch_size: Option<i64>,
    hyperparameters: Option<Vec<RawHyper>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHyper {
    name: String,
    low: f64,
    high: f64,
    scale: Option<String>,
}

impl TabulateConfig {
    pub fn load(path: &Path) -> Result<Self> {
        let text = fs::read_to_string(path)
            .map_err(|e| FboError::spec(path, "", format!("cannot read: {e}")))?;
        let raw: RawConfig = toml::from_str(&text).map_err(|e| {
            FboError::spec(
                path,
                "",
                format!("invalid config: {}", e.to_string().trim_end()),
            )
        })?;
        let err = |k: &str, m: String| FboError::spec(path, k, m);
        let dataset = Dataset::parse(&raw.dataset).ok_or_else(|| {
            err(
                "dataset",
                format!(
                    "unknown dataset \"{}\"; allowed: \"landmine\", \"har\", \"emnist\"",
                    raw.dataset
                ),
            )
        })?;
        let defaults = dataset.defaults();
        let grid = raw.grid.unwrap_or(dataset.default_grid());
        if !(2..=4096).contains(&grid) {
            return Err(err(
                "grid",
                format!("must be an integer in [2, 4096], got {grid}"),
            ));
        }
        let split_seed = raw.split_seed.unwrap_or(0);
        if split_seed < 0 {
            return Err(err("split_seed", format!("must be >= 0, got {split_seed}")));
        }
        let epochs = raw.epochs.unwrap_or(20);
        if !(1..=100_000).contains(&epochs) {
            return Err(err(
                "epochs",
                format!("must be an integer in [1, 100000], got {epochs}"),
            ));
        }
        let batch_size = match (dataset, raw.batch_size) {
            (Dataset::Emnist, b) => b.unwrap_or(20),
            (_, None) => 0,
            (_, Some(_)) => {
                return Err(err(
                    "batch_size",
                    "only the emnist dataset has a fixed batch size (har tunes it as a hyperparameter)".into(),
                ));
            }
        };
        if dataset == Dataset::Emnist && !(1..=100_000).contains(&batch_size) {
            return Err(err(
                "batch_size",
                format!("must be an integer in [1, 100000], got {batch_size}"),
            ));
        }
        let name = raw.name.unwrap_or_else(|| dataset.name().to_string());
        if name.is_empty() || name.contains(['/', '\\']) {
            return Err(err(
                "name",
                "must be non-empty without path separators".into(),
            ));
        }
        let hyper = match raw.hyperparameters {
            None => defaults,
            Some(list) => {
                if list.len() != defaults.len() {
                    return Err(err(
                        "hyperparameters",
                        format!(
                            "{:?} has {} hyperparameters, got {}",
                            raw.dataset,
                            defaults.len(),
                            list.len()
                        ),
                    ));
                }
                let mut out = Vec::new();
                for (i, (h, d)) in list.into_iter().zip(&defaults).enumerate() {
                    let k = |f: &str| format!("hyperparameters[{i}].{f}");
                    if h.name != d.name {
                        return Err(err(
                            &k("name"),
                            format!(
                                "must be \"{}\" (the order is fixed), got \"{}\"",
                                d.name, h.name
                            ),
                        ));
                    }
                    let scale = match h.scale.as_deref() {
                        None | Some("linear") => Scale::Linear,
                        Some("log") => Scale::Log,
                        Some(o) => {
                            return Err(err(
                                &k("scale"),
                                format!("unknown scale \"{o}\"; allowed: \"linear\", \"log\""),
                            ));
                        }
                    };
                    // Every hyperparameter here (C, gamma, rates, penalties, sizes) is positive.
                    if !(h.low.is_finite() && h.high.is_finite() && 0.0 < h.low && h.low < h.high) {
                        return Err(err(
                            &k("low"),
                            format!("need 0 < low < high, got [{}, {}]", h.low, h.high),
                        ));
                    }
                    out.push(Hyper {
                        name: h.name,
                        low: h.low,
                        high: h.high,
                        scale,
                    });
                }
                out
            }
        };
        Ok(TabulateConfig {
            dataset,
            name,
            grid: grid as usize,
            split_seed: split_seed as u64,
            epochs: epochs as usize,
            batch_size: batch_size as usize,
            hyper,
            source: text,
        })
    }

    /// Normalised coordinates of grid point p (row-major: the last dimension varies fastest).
    pub fn coords(&self, p: usize) -> Vec<f64> {
        let d = self.hyper.len();
        let mut c = vec![0.0; d];
        let mut rest = p;
        for k in (0..d).rev() {
            c[k] = (rest % self.grid) as f64 / (self.grid - 1) as f64;
            rest /= self.grid;
        }
        c
    }

    pub fn points(&self) -> usize {
        self.grid.pow(self.hyper.len() as u32)
    }
}

pub struct TabulateOptions {
    pub data: PathBuf,
    pub out: PathBuf,
    pub threads: Option<usize>,
    pub quiet: bool,
}

/// One agent's binary data split for training and validation.
pub struct AgentSplit {
    pub x_train: Array2<f64>,
    pub y_train: Vec<f64>,
    pub x_valid: Array2<f64>,
    pub valid_pos: Vec<bool>,
}

impl AgentSplit {
    /// Splits a field with `stratified_half_split`; returns it with the train mask.
    pub fn landmine(f: &landmine::Field, seed: u64, agent: usize) -> (Self, Vec<bool>) {
        let (tr, va, train_rows) = data::half_split_rows(&f.labels, seed, agent);
        let split = AgentSplit {
            x_train: f.x.select(Axis(0), &tr),
            y_train: tr
                .iter()
                .map(|&i| if f.labels[i] == 1 { 1.0 } else { -1.0 })
                .collect(),
            x_valid: f.x.select(Axis(0), &va),
            valid_pos: va.iter().map(|&i| f.labels[i] == 1).collect(),
        };
        (split, train_rows)
    }
}

/// Validation ROC-AUC of an RBF SVM trained on the split's training half.
pub fn svm_auc(a: &AgentSplit, c: f64, gamma: f64) -> f64 {
    let k = rbf_kernel(a.x_train.view(), a.x_train.view(), gamma);
    let model = train(&k, &a.y_train, &SvmParams::new(c, gamma));
    let kv = rbf_kernel(a.x_train.view(), a.x_valid.view(), gamma);
    let scores = model.decision(&kv);
    roc_auc(scores.as_slice().expect("contiguous"), &a.valid_pos)
        .expect("both classes in validation")
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
        let mut x_train = x.select(Axis(0), &tr);
        let mut x_valid = x.select(Axis(0), &va);
        let mean: Array1<f64> = x_train.mean_axis(Axis(0)).expect("training rows");
        let sd: Array1<f64> = x_train
            .std_axis(Axis(0), 0.0)
            .mapv(|s| if s > 1e-12 { s } else { 1.0 });
        for m in [&mut x_train, &mut x_valid] {
            *m -= &mean;
            *m /= &sd;
        }
        let split = ClassSplit {
            x_train,
            y_train: tr.iter().map(|&i| labels[i]).collect(),
            x_valid,
            y_valid: va.iter().map(|&i| labels[i]).collect(),
        };
        (split, train_rows)
    }
}

/// Validation error of multinomial logistic regression trained by minibatch SGD; the batch
/// order is seeded by (split seed, agent, grid point).
pub fn logreg_error(s: &ClassSplit, p: &SgdParams, seed: u64, agent: usize, point: usize) -> f64 {
    let mut rng = stream(seed, point as u64, agent as u64, Purpose::HyperFit);
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

/// A dataset ready to tabulate.
enum Task {
    Landmine(Vec<AgentSplit>),
    Har(Vec<ClassSplit>),
    Emnist(Vec<ImageSplit>),
}

impl Task {
    fn agents(&self) -> usize {
        match self {
            Task::Landmine(a) => a.len(),
            Task::Har(a) => a.len(),
            Task::Emnist(a) => a.len(),
        }
    }

    fn evaluate(&self, cfg: &TabulateConfig, agent: usize, point: usize, raw: &[f64]) -> f64 {
        match self {
            Task::Landmine(a) => svm_auc(&a[agent], raw[0], raw[1]),
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
        }
    }
}

fn half_split_note(seed: u64) -> String {
    format!(
        "split = \"stratified 50/50 per agent, split_seed {seed}: split.csv (set = train | valid)\"\n"
    )
}

/// Reads and splits the raw data: the task, split.csv, the source's sha256, and the lines of
/// provenance particular to the dataset.
fn prepare(cfg: &TabulateConfig, data_path: &Path) -> Result<(Task, String, String, String)> {
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
                let (split, rows) = AgentSplit::landmine(f, cfg.split_seed, a);
                note(a, &rows);
                agents.push(split);
            }
            let meta = "model = \"RBF-kernel SVM, C-SVC trained by SMO (libsvm working-set selection, stopping tolerance 1e-9 min(1, C), Q in single precision as in libsvm, no shrinking), raw features, score = decision value\"\n\
                        metric = \"auc\"\ndirection = \"maximize\"\n\
                        agent_ids = \"landmine fields 1..29 (agent = field - 1); split.csv index = index_in_field\"\n";
            let meta = format!("{meta}{}", half_split_note(cfg.split_seed));
            Ok((Task::Landmine(agents), split_csv, sha, meta))
        }
        Dataset::Har => {
            let (subjects, sha) = har::read(data_path)?;
            let mut agents = Vec::with_capacity(subjects.len());
            for (a, s) in subjects.iter().enumerate() {
                let (split, rows) = ClassSplit::new(&s.x, &s.labels, cfg.split_seed, a);
                note(a, &rows);
                agents.push(split);
            }
            let ids: Vec<String> = subjects.iter().map(|s| s.id.to_string()).collect();
            let meta = format!(
                "model = \"multinomial logistic regression, minibatch SGD from zero weights, {} epochs, features standardised by the training half, batch size rounded to an integer; a diverged fit predicts class 0\"\n\
                 metric = \"validation_error\"\ndirection = \"minimize\"\n\
                 agent_ids = \"UCI HAR subjects [{}] in this order; split.csv index = the subject's row among its X_train rows\"\n{}",
                cfg.epochs,
                ids.join(", "),
                half_split_note(cfg.split_seed)
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
    }
}

pub fn run(config_path: &Path, opts: &TabulateOptions) -> Result<()> {
    let cfg = TabulateConfig::load(config_path)?;
    let started = Instant::now();
    let (task, split_csv, sha, dataset_meta) = prepare(&cfg, &opts.data)?;
    let n_agents = task.agents();
    let out = &opts.out;
    let parts = out.join("parts");
    fs::create_dir_all(&parts).map_err(|e| FboError::io(&parts, e))?;
    let fingerprint = format!("{}\n# data sha256 {sha}\n", cfg.source);
    let fp_path = parts.join("fingerprint");
    if fs::read_to_string(&fp_path)
        .map(|s| s != fingerprint)
        .unwrap_or(true)
    {
        fs::remove_dir_all(&parts).map_err(|e| FboError::io(&parts, e))?;
        fs::create_dir_all(&parts).map_err(|e| FboError::io(&parts, e))?;
        write_atomic(&fp_path, fingerprint.as_bytes())?;
    }
    write_atomic(&out.join("split.csv"), split_csv.as_bytes())?;
    let part = |a: usize| parts.join(format!("agent-{a:03}.csv"));
    let todo: Vec<usize> = (0..n_agents).filter(|&a| !part(a).exists()).collect();
    let n_points = cfg.points();
    if todo.len() < n_agents && !opts.quiet {
        eprintln!(
            "resuming: {} of {n_agents} agents already tabulated in {}",
            n_agents - todo.len(),
            parts.display()
        );
    }
    let pb = progress_bar((n_agents * n_points) as u64, opts.quiet);
    pb.set_position(((n_agents - todo.len()) * n_points) as u64);
    let work = || -> Result<()> {
        todo.par_iter().try_for_each(|&a| {
            let mut rows = String::new();
            for p in 0..n_points {
                let u = cfg.coords(p);
                let raw: Vec<f64> = cfg.hyper.iter().zip(&u).map(|(h, &v)| h.value(v)).collect();
                let t0 = Instant::now();
                let metric = task.evaluate(&cfg, a, p, &raw);
                let secs = t0.elapsed().as_secs_f64();
                let coords: Vec<String> = u.iter().chain(&raw).map(|v| v.to_string()).collect();
                rows += &format!("{a},{p},{},{metric},{secs:.6}\n", coords.join(","));
                pb.inc(1);
            }
            write_atomic(&part(a), rows.as_bytes())
        })
    };
    with_threads(opts.threads, work)??;
    pb.finish_and_clear();
    let d = cfg.hyper.len();
    let mut header = vec!["agent".to_string(), "point".to_string()];
    header.extend((0..d).map(|k| format!("x{k}")));
    header.extend(cfg.hyper.iter().map(|h| h.name.clone()));
    header.extend(["metric".to_string(), "train_seconds".to_string()]);
    let mut table = header.join(",") + "\n";
    for a in 0..n_agents {
        table += &fs::read_to_string(part(a)).map_err(|e| FboError::io(part(a), e))?;
    }
    write_atomic(&out.join("table.csv"), table.as_bytes())?;
    let mut meta = format!(
        "# Hyperparameter-response table made by `fbo tabulate` (src/tabulate.rs).\n\
         dataset = \"{}\"\nsource = \"{}\"\nsource_sha256 = \"{sha}\"\n{dataset_meta}\
         agents = {n_agents}\ngrid = {}\npoints_per_agent = {n_points}\n\
         build_seconds = {:.1}\n",
        cfg.dataset.name(),
        opts.data
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        cfg.grid,
        started.elapsed().as_secs_f64(),
    );
    for h in &cfg.hyper {
        meta += &format!(
            "\n[[hyperparameters]]\nname = \"{}\"\nlow = {}\nhigh = {}\nscale = \"{}\"\n",
            h.name,
            h.low,
            h.high,
            if h.scale == Scale::Log {
                "log"
            } else {
                "linear"
            }
        );
    }
    write_atomic(&out.join("table.toml"), meta.as_bytes())?;
    fs::remove_dir_all(&parts).map_err(|e| FboError::io(&parts, e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_coordinates_and_value_maps() {
        let h = Hyper::linear("C", 1e-4, 10.0);
        assert_eq!(h.value(0.0), 1e-4);
        assert_eq!(h.value(1.0), 10.0);
        let g = Hyper {
            scale: Scale::Log,
            ..Hyper::linear("lr", 1e-6, 1.0)
        };
        assert!((g.value(0.5) - 1e-3).abs() < 1e-15);
        let cfg = TabulateConfig {
            dataset: Dataset::Landmine,
            name: "t".into(),
            grid: 4,
            split_seed: 0,
            epochs: 1,
            batch_size: 0,
            hyper: vec![h.clone(), h],
            source: String::new(),
        };
        assert_eq!(cfg.points(), 16);
        assert_eq!(cfg.coords(0), vec![0.0, 0.0]);
        assert_eq!(cfg.coords(1), vec![0.0, 1.0 / 3.0]);
        assert_eq!(cfg.coords(15), vec![1.0, 1.0]);
    }
}
