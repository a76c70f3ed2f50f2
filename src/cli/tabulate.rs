//! `fbo tabulate`: turns a raw dataset into a hyperparameter-response table. For every agent
//! and every point of a grid over the normalised hyperparameter box it trains the model and
//! records the validation metric. Each agent's rows are written as soon as it finishes, so an
//! interrupted build resumes where it stopped.
//!
//! A dataset is a `Task`: its agents' prepared splits and a function from (agent, grid point,
//! raw hyperparameters) to the metric. The driver (grid, parallelism, resume, provenance) is
//! shared.

use super::{say_finished, work_of};
use crate::error::{FboError, Result};
pub use crate::objective::model::{AgentSplit, Dataset, ModelSettings, SvmMetric, svm_auc};
use crate::objective::model::{Task, prepare};
use crate::objective::space::{Param, Scale};
use crate::run::outdir::{Claim, Identity, OutDir, PARTS_FINGERPRINT};
use crate::run::runner::with_threads;
use clap::Args;
use rayon::prelude::*;
use serde::Deserialize;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Clone, Debug, PartialEq)]
pub struct TabulateConfig {
    pub dataset: Dataset,
    /// Names the default output folder data/<name>/.
    pub name: String,
    /// Points per dimension.
    pub grid: usize,
    pub split_seed: u64,
    /// A split file (`split`, relative to the config) instead of the seeded half split.
    pub split_file: Option<std::sync::Arc<crate::objective::model::SplitFile>>,
    /// Where the landmine SVM's solver stops (`svm_stopping`).
    pub svm_stopping: crate::model::svm::Stopping,
    /// Training epochs (SGD models).
    pub epochs: usize,
    /// Minibatch size of the CNN (EMNIST); HAR tunes its batch size, the SVM has none.
    pub batch_size: usize,
    /// The landmine SVM's score (`metric = "auc"`, the default, or `"platt-auc"`).
    pub metric: SvmMetric,
    pub hyper: Vec<Param>,
    pub source: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    dataset: String,
    name: Option<String>,
    grid: Option<i64>,
    split: Option<String>,
    split_seed: Option<i64>,
    svm_stopping: Option<String>,
    epochs: Option<i64>,
    batch_size: Option<i64>,
    metric: Option<String>,
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

/// `metric`: landmine's SVM scores AUC (the default) or Platt-calibrated AUC; the other
/// datasets have one metric each.
fn config_metric(path: &Path, dataset: Dataset, metric: Option<&str>) -> Result<SvmMetric> {
    let err = |k: &str, m: String| FboError::spec(path, k, m);
    let metric = match (dataset, metric) {
        (_, None) | (Dataset::Landmine, Some("auc")) => SvmMetric::Auc,
        (Dataset::Landmine, Some("platt-auc")) => SvmMetric::PlattAuc,
        (Dataset::Landmine, Some(other)) => {
            return Err(err(
                "metric",
                format!("unknown metric \"{other}\"; allowed: \"auc\" (default), \"platt-auc\""),
            ));
        }
        (_, Some(_)) => {
            return Err(err(
                "metric",
                "applies only to dataset = \"landmine\"".into(),
            ));
        }
    };
    Ok(metric)
}

/// `batch_size`: only the EMNIST CNN has a fixed one (HAR tunes it; the SVM has none).
fn config_batch_size(path: &Path, dataset: Dataset, batch_size: Option<i64>) -> Result<usize> {
    let err = |k: &str, m: String| FboError::spec(path, k, m);
    let batch_size = match (dataset, batch_size) {
        (Dataset::Emnist, b) => b.unwrap_or(20),
        (_, None) => 0,
        (_, Some(_)) => {
            return Err(err(
                "batch_size",
                "only the emnist dataset has a fixed batch size (har tunes it as a hyperparameter)"
                    .into(),
            ));
        }
    };
    if dataset == Dataset::Emnist && !(1..=100_000).contains(&batch_size) {
        return Err(err(
            "batch_size",
            format!("must be an integer in [1, 100000], got {batch_size}"),
        ));
    }
    Ok(batch_size as usize)
}

/// `hyperparameters`: the dataset's own list (`defaults`) in its fixed order, each range and
/// scale as the user writes it.
fn config_hyperparameters(
    path: &Path,
    dataset: &str,
    list: Option<Vec<RawHyper>>,
    defaults: Vec<Param>,
) -> Result<Vec<Param>> {
    let err = |k: &str, m: String| FboError::spec(path, k, m);
    let hyper = match list {
        None => defaults,
        Some(list) => {
            if list.len() != defaults.len() {
                return Err(err(
                    "hyperparameters",
                    format!(
                        "{:?} has {} hyperparameters, got {}",
                        dataset,
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
                out.push(Param {
                    name: h.name,
                    low: h.low,
                    high: h.high,
                    scale,
                    integer: false,
                    choices: Vec::new(),
                });
            }
            out
        }
    };
    Ok(hyper)
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
        let base = path.parent().unwrap_or(Path::new("."));
        let split_file = dataset
            .split_file(base, raw.split.as_deref())
            .map_err(|m| err("split", m))?;
        let svm_stopping = dataset
            .svm_stopping(raw.svm_stopping.as_deref())
            .map_err(|m| err("svm_stopping", m))?;
        let epochs = raw.epochs.unwrap_or(20);
        if !(1..=100_000).contains(&epochs) {
            return Err(err(
                "epochs",
                format!("must be an integer in [1, 100000], got {epochs}"),
            ));
        }
        let metric = config_metric(path, dataset, raw.metric.as_deref())?;
        let batch_size = config_batch_size(path, dataset, raw.batch_size)?;
        let name = raw.name.unwrap_or_else(|| dataset.name().to_string());
        if name.is_empty() || name.contains(['/', '\\']) {
            return Err(err(
                "name",
                "must be non-empty without path separators".into(),
            ));
        }
        let hyper = config_hyperparameters(path, &raw.dataset, raw.hyperparameters, defaults)?;
        Ok(TabulateConfig {
            dataset,
            name,
            grid: grid as usize,
            split_seed: split_seed as u64,
            split_file,
            svm_stopping,
            epochs: epochs as usize,
            batch_size,
            metric,
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
    pub overwrite: bool,
    /// All agents, a shard of them (parts only), or only the merge into the table.
    pub work: crate::run::runner::Work,
}

const WALL: &str = "parts/wall_seconds";

pub fn run(config_path: &Path, opts: &TabulateOptions) -> Result<()> {
    let cfg = TabulateConfig::load(config_path)?;
    let started = Instant::now();
    let settings = ModelSettings {
        dataset: cfg.dataset,
        data: opts.data.clone(),
        split_seed: cfg.split_seed,
        split_file: cfg.split_file.clone(),
        svm_stopping: cfg.svm_stopping,
        epochs: cfg.epochs,
        batch_size: cfg.batch_size,
        metric: cfg.metric,
    };
    let (task, split_csv, sha, dataset_meta) = prepare(&settings, &opts.data)?;
    let n_agents = task.agents();
    if let Some(a) = (0..n_agents).find(|&a| !task.holds(a)) {
        return Err(FboError::spec(
            &opts.data,
            "--data",
            format!("holds no data for agent {a}: a table needs every agent's"),
        ));
    }
    let part = |a: usize| format!("parts/agent-{a:03}.csv");
    let claim_of = |a: usize| format!("parts/agent-{a:03}.claim");
    use crate::run::runner::Work;
    let shard = match opts.work {
        Work::Shard { index, count } => Some(crate::run::runner::block(index, count, n_agents)),
        _ => None,
    };
    let (dir, parts, reusable) =
        claim_table_folder(config_path, &cfg, opts, n_agents, shard, &sha)?;
    let before = earlier_wall(&dir, reusable);
    dir.write("split.csv", split_csv.as_bytes())?;
    let todo: Vec<usize> = (0..n_agents)
        .filter(|a| shard.is_none_or(|(lo, hi)| (lo..hi).contains(a)))
        .filter(|&a| !(reusable && dir.resume(&part(a))))
        .collect();
    if opts.work == Work::Merge && !todo.is_empty() {
        return Err(missing_for_merge(&todo, n_agents, &parts));
    }
    // A shard computes an agent only while it holds the agent's claim.
    let (todo, claims) = match shard {
        None => (todo, Vec::new()),
        Some(_) => dir.claim_units(todo, |&a| claim_of(a))?,
    };
    let n_points = cfg.points();
    if todo.len() < n_agents && !opts.quiet {
        eprintln!(
            "resuming: {} of {n_agents} agents already tabulated in {}",
            n_agents - todo.len(),
            parts.display()
        );
    }
    let pb = crate::run::progress::bar((n_agents * n_points) as u64, opts.quiet, "grid points");
    pb.set_position(((n_agents - todo.len()) * n_points) as u64);
    let _ticker = crate::run::progress::Ticker::start(&pb, opts.quiet, "grid points");
    let wall_lock = std::sync::Mutex::new(());
    let work = || -> Result<()> {
        todo.par_iter().try_for_each(|&a| {
            let rows = agent_rows(&cfg, &task, &settings, a, &pb);
            dir.write(&part(a), rows.as_bytes())?;
            if shard.is_some() {
                // Shards at once have no one wall time to add up.
                return Ok(());
            }
            let _g = wall_lock.lock().expect("wall lock");
            dir.write(
                WALL,
                format!("{}\n", before + started.elapsed().as_secs_f64()).as_bytes(),
            )
        })
    };
    with_threads(opts.threads, work)??;
    pb.finish_and_clear();
    drop(claims);
    if shard.is_some() {
        return Ok(());
    }
    write_table(&dir, &cfg, n_agents, &part)?;
    let seconds = before + started.elapsed().as_secs_f64();
    dir.write(
        "table.toml",
        table_toml(&cfg, opts, n_agents, &sha, &dataset_meta, seconds).as_bytes(),
    )?;
    dir.remove_under("parts/")?;
    dir.prune()?;
    Ok(())
}

/// Wall time of earlier, interrupted invocations, so build_seconds counts the whole build.
fn earlier_wall(dir: &OutDir, reusable: bool) -> f64 {
    if !(reusable && dir.resume(WALL)) {
        return 0.0;
    }
    fs::read_to_string(dir.path(WALL))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0.0)
}

/// A merge's refusal when the agents `todo` have no part in `parts` yet.
fn missing_for_merge(todo: &[usize], n_agents: usize, parts: &Path) -> FboError {
    let agents: Vec<String> = todo.iter().map(|a| a.to_string()).collect();
    FboError::Run(format!(
        "cannot merge: {} of {n_agents} agents are missing in {} (agents {}); run the missing shards, or tabulate without --merge",
        todo.len(),
        parts.display(),
        agents.join(", ")
    ))
}

/// The output folder claimed for a table of `n_agents` (one part per agent), its parts/
/// and whether the parts there were made from the same config and data (else a shard or a
/// merge refuses: it must not throw away other shards' agents).
fn claim_table_folder(
    config_path: &Path,
    cfg: &TabulateConfig,
    opts: &TabulateOptions,
    n_agents: usize,
    shard: Option<(usize, usize)>,
    sha: &str,
) -> Result<(OutDir, PathBuf, bool)> {
    use crate::run::runner::Work;
    let out = &opts.out;
    if shard.is_some() && opts.overwrite {
        return Err(FboError::spec(
            out,
            "--overwrite",
            "does not go with --shard: shards share the folder",
        ));
    }
    let mut planned: Vec<String> = [
        "table.csv",
        "table.toml",
        "split.csv",
        PARTS_FINGERPRINT,
        WALL,
    ]
    .map(String::from)
    .to_vec();
    planned.extend((0..n_agents).map(|a| format!("parts/agent-{a:03}.csv")));
    let dir = OutDir::claim(
        out,
        Claim {
            identity: Identity::new("tabulate", config_path, &cfg.source),
            planned: &planned,
            overwrite: opts.overwrite,
            shared: shard.is_some(),
        },
    )?;
    let fingerprint = format!("{}\n# data sha256 {sha}\n", cfg.source);
    if (shard.is_some() || opts.work == Work::Merge) && dir.parts_made_otherwise(&fingerprint) {
        return Err(FboError::spec(
            out,
            "--data",
            "parts/ here were made from other data or another config; every shard and the merge need the same",
        ));
    }
    let (parts, reusable) = dir.parts(&fingerprint)?;
    Ok((dir, parts, reusable))
}

/// One agent's rows of the table: every grid point's coordinates, raw values, metric and
/// training seconds, evaluated in point order.
fn agent_rows(
    cfg: &TabulateConfig,
    task: &Task,
    settings: &ModelSettings,
    a: usize,
    pb: &indicatif::ProgressBar,
) -> String {
    let mut rows = String::new();
    for p in 0..cfg.points() {
        let u = cfg.coords(p);
        let raw: Vec<f64> = cfg.hyper.iter().zip(&u).map(|(h, &v)| h.value(v)).collect();
        let t0 = Instant::now();
        let metric = task.evaluate(settings, a, p as u64, &raw);
        let secs = t0.elapsed().as_secs_f64();
        let coords: Vec<String> = u.iter().chain(&raw).map(|v| v.to_string()).collect();
        rows += &format!("{a},{p},{},{metric},{secs:.6}\n", coords.join(","));
        pb.inc(1);
    }
    rows
}

/// table.csv: its header, then every agent's part in agent order.
fn write_table(
    dir: &OutDir,
    cfg: &TabulateConfig,
    n_agents: usize,
    part: &dyn Fn(usize) -> String,
) -> Result<()> {
    let d = cfg.hyper.len();
    let mut header = vec!["agent".to_string(), "point".to_string()];
    header.extend((0..d).map(|k| format!("x{k}")));
    header.extend(cfg.hyper.iter().map(|h| h.name.clone()));
    header.extend(["metric".to_string(), "train_seconds".to_string()]);
    let mut table = header.join(",") + "\n";
    for a in 0..n_agents {
        let p = dir.path(&part(a));
        table += &fs::read_to_string(&p).map_err(|e| FboError::io(&p, e))?;
    }
    dir.write("table.csv", table.as_bytes())
}

/// table.toml: the table's provenance (data and its sha256, build seconds) and its
/// hyperparameters.
fn table_toml(
    cfg: &TabulateConfig,
    opts: &TabulateOptions,
    n_agents: usize,
    sha: &str,
    dataset_meta: &str,
    seconds: f64,
) -> String {
    let n_points = cfg.points();
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
        seconds,
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
    meta
}

#[derive(Args)]
pub struct TabulateArgs {
    /// The tabulation config (TOML), e.g. configs/tabulate-landmine.toml.
    config: PathBuf,
    /// The raw data: the landmine CSV file (data/raw/landmine/landmine.csv.gz), the HAR folder (data/raw/har) or the EMNIST folder (data/raw/emnist).
    #[arg(long)]
    data: PathBuf,
    /// Output folder [default: data/<name>/, name from the config, else the dataset].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Worker threads [default: one per core]. The table does not depend on it.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    threads: Option<u32>,
    /// No progress bar or resume messages on stderr (notes and warnings still show).
    #[arg(long)]
    quiet: bool,
    /// Replace another table's files in the output folder (only files fbo wrote).
    #[arg(long)]
    overwrite: bool,
    /// Tabulate only shard I of N (0 <= I < N): the I-th of N blocks of the agents,
    /// saved in parts/ without building the table; shards may run at once.
    #[arg(long, value_parser = crate::run::runner::Work::parse_shard, conflicts_with = "merge")]
    shard: Option<crate::run::runner::Work>,
    /// Only build the table from the agents saved by shards; refused while any is missing.
    #[arg(long)]
    merge: bool,
}

pub fn cmd_tabulate(a: TabulateArgs) -> Result<()> {
    let TabulateArgs {
        config,
        data,
        out,
        threads,
        quiet,
        overwrite,
        shard,
        merge,
    } = a;
    let cfg = TabulateConfig::load(&config)?;
    let work = work_of(shard, merge);
    let out = out.unwrap_or_else(|| Path::new("data").join(&cfg.name));
    run(
        &config,
        &TabulateOptions {
            data,
            out: out.clone(),
            threads: threads.map(|t| t as usize),
            quiet,
            overwrite,
            work,
        },
    )?;
    say_finished(
        quiet,
        work,
        |index, count| {
            format!(
                "shard {index}/{count} tabulated; build the table with --merge once every shard is done"
            )
        },
        || format!("table -> {}", out.join("table.csv").display()),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_coordinates_and_value_maps() {
        let h = Param::linear("C", 1e-4, 10.0);
        assert_eq!(h.value(0.0), 1e-4);
        assert_eq!(h.value(1.0), 10.0);
        let g = Param {
            scale: Scale::Log,
            ..Param::linear("lr", 1e-6, 1.0)
        };
        assert!((g.value(0.5) - 1e-3).abs() < 1e-15);
        let cfg = TabulateConfig {
            dataset: Dataset::Landmine,
            name: "t".into(),
            grid: 4,
            split_seed: 0,
            split_file: None,
            svm_stopping: crate::model::svm::Stopping::Converged,
            epochs: 1,
            batch_size: 0,
            metric: SvmMetric::Auc,
            hyper: vec![h.clone(), h],
            source: String::new(),
        };
        assert_eq!(cfg.points(), 16);
        assert_eq!(cfg.coords(0), vec![0.0, 0.0]);
        assert_eq!(cfg.coords(1), vec![0.0, 1.0 / 3.0]);
        assert_eq!(cfg.coords(15), vec![1.0, 1.0]);
    }
}
