//! `fbo import`: response tables measured by someone else, turned into fbo tables
//! (`objective.kind = "table"`). Today one format: PrivTuna's per-client grids
//! (`data::privtuna`), one table per federation: agents = the clients that have a grid,
//! points = the grid points every one of them ran, unit coordinates (log learning rate,
//! momentum, log batch size), metric = validation accuracy (or loss), train_seconds = the
//! measured duration. The federation's FedAvg grid is kept beside it (fedavg.csv.gz), the
//! one-shared-configuration reference.

use crate::data::privtuna::{self, Federation, GridRow};
use crate::error::{FboError, Result};
use crate::run::outdir::{Claim, Identity, OutDir};
use clap::Args;
use flate2::Compression;
use flate2::write::GzEncoder;
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    ValAccuracy,
    ValLoss,
}

impl Metric {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "val_accuracy" => Some(Metric::ValAccuracy),
            "val_loss" => Some(Metric::ValLoss),
            _ => None,
        }
    }
    fn name(self) -> &'static str {
        match self {
            Metric::ValAccuracy => "val_accuracy",
            Metric::ValLoss => "val_loss",
        }
    }
    fn direction(self) -> &'static str {
        match self {
            Metric::ValAccuracy => "maximize",
            Metric::ValLoss => "minimize",
        }
    }
    fn of(self, r: &GridRow) -> f64 {
        match self {
            Metric::ValAccuracy => r.val_accuracy,
            Metric::ValLoss => r.val_loss,
        }
    }
}

pub struct ImportOptions {
    pub source: PathBuf,
    pub out: PathBuf,
    pub metric: Metric,
    pub overwrite: bool,
    pub quiet: bool,
}

/// One axis of the table: a hyperparameter, its scale and range over the grid.
struct Axis {
    name: &'static str,
    log: bool,
    low: f64,
    high: f64,
}

impl Axis {
    fn new(name: &'static str, log: bool, values: &[f64]) -> Axis {
        let low = values.iter().copied().fold(f64::INFINITY, f64::min);
        let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Axis {
            name,
            log,
            low,
            high,
        }
    }

    /// The unit coordinate of value v: (t(v) - t(low)) / (t(high) - t(low)), t = ln on a log
    /// axis; an axis with one value sits at 0.
    fn unit(&self, v: f64) -> f64 {
        if self.high == self.low {
            return 0.0;
        }
        // ln(v / low) / ln(high / low): a power of two between powers of two lands exactly.
        let u = if self.log {
            (v / self.low).ln() / (self.high / self.low).ln()
        } else {
            (v - self.low) / (self.high - self.low)
        };
        u.clamp(0.0, 1.0)
    }
}

/// The points every client of the federation ran with a finite metric and duration, sorted
/// by (batch size, learning rate, momentum), and how many points some client lacks (not run,
/// or diverged to NaN).
fn common_points(fed: &Federation, metric: Metric) -> (Vec<[f64; 3]>, usize) {
    let keys = |c: &privtuna::ClientGrid| -> BTreeSet<[u64; 3]> {
        c.rows
            .iter()
            .filter(|r| metric.of(r).is_finite() && r.duration.is_finite())
            .map(|r| r.key().map(f64::to_bits))
            .collect()
    };
    let all_keys = |c: &privtuna::ClientGrid| -> BTreeSet<[u64; 3]> {
        c.rows.iter().map(|r| r.key().map(f64::to_bits)).collect()
    };
    let mut all: BTreeSet<[u64; 3]> = BTreeSet::new();
    let mut common: Option<BTreeSet<[u64; 3]>> = None;
    for c in &fed.clients {
        let k = keys(c);
        all.extend(all_keys(c));
        common = Some(match common {
            None => k,
            Some(s) => s.intersection(&k).copied().collect(),
        });
    }
    let mut pts: Vec<[f64; 3]> = common
        .unwrap_or_default()
        .into_iter()
        .map(|k| k.map(f64::from_bits))
        .collect();
    pts.sort_by(|a, b| {
        (a[2], a[0], a[1])
            .partial_cmp(&(b[2], b[0], b[1]))
            .expect("finite hyperparameters")
    });
    let dropped = all.len() - pts.len();
    (pts, dropped)
}

fn gz(bytes: &[u8]) -> Vec<u8> {
    // Header time 0 (flate2's default): the same table gives the same bytes.
    let mut e = GzEncoder::new(Vec::new(), Compression::best());
    e.write_all(bytes).expect("gzip to memory");
    e.finish().expect("gzip to memory")
}

/// The folder provenance paths are relative to: the nearest one above the federation that
/// holds the layout's top (`non-IID_res/` or `fed_grid_search_results/`), else the source,
/// so that a table names its files the same way whichever folder was imported.
fn layout_root(folder: &Path, source: &Path) -> PathBuf {
    folder
        .ancestors()
        .find(|a| a.join("non-IID_res").is_dir() || a.join("fed_grid_search_results").is_dir())
        .unwrap_or(source)
        .to_path_buf()
}

/// Relative path of `p` from `base` for provenance, else the full path.
fn rel(p: &Path, base: &Path) -> String {
    p.strip_prefix(base)
        .unwrap_or(p)
        .to_string_lossy()
        .into_owned()
}

fn toml_str(s: &str) -> String {
    format!("{s:?}")
}

/// The table folder's files for one federation: table.toml, table.csv.gz, fedavg.csv.gz.
fn write_federation(fed: &Federation, source: &Path, opts: &ImportOptions) -> Result<String> {
    let base = &layout_root(&fed.folder, source);
    let (points, dropped) = common_points(fed, opts.metric);
    let col = |k: usize| points.iter().map(|p| p[k]).collect::<Vec<f64>>();
    let axes = [
        Axis::new("client_lr", true, &col(0)),
        Axis::new("client_momentum", false, &col(1)),
        Axis::new("batch_size", true, &col(2)),
    ];
    let (csv, sources) = client_rows(fed, &points, &axes, opts, base);
    let mut meta = format!(
        "# Response table imported by `fbo import privtuna` (src/import.rs) from PrivTuna's\n\
         # per-client grids (Sav et al., arXiv 2402.16087; Apache-2.0, data/raw/privtuna/).\n\
         # Agent k is client clients[k]; unit coordinates: ln client_lr, client_momentum,\n\
         # ln batch_size, each scaled to [0, 1] over the grid.\n\
         dataset = {}\nskew = {}\nlevel = {}\nparties = {}\nclients = [{}]\nmissing_clients = [{}]\n\
         metric = \"{}\"\ndirection = \"{}\"\nagents = {}\npoints_per_agent = {}\n\
         points_dropped = {dropped}  # grid points some client did not run, or ran to a NaN\n\
         source = [\n  {}\n]\n",
        toml_str(&fed.dataset),
        toml_str(&fed.skew),
        toml_str(&fed.level),
        fed.parties,
        fed.clients
            .iter()
            .map(|c| c.client.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        fed.missing
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        opts.metric.name(),
        opts.metric.direction(),
        fed.clients.len(),
        points.len(),
        sources.join(",\n  "),
    );
    let mut planned = vec!["table.toml".to_string(), "table.csv.gz".to_string()];
    let fedavg_csv = fedavg_rows(fed, &points, base, &mut meta);
    if fedavg_csv.is_some() {
        planned.push("fedavg.csv.gz".to_string());
    }
    for a in &axes {
        meta += &format!(
            "\n[[hyperparameters]]\nname = \"{}\"\nlow = {}\nhigh = {}\nscale = \"{}\"\n",
            a.name,
            a.low,
            a.high,
            if a.log { "log" } else { "linear" }
        );
    }
    let folder = opts.out.join(&fed.name);
    let dir = OutDir::claim(
        &folder,
        Claim {
            identity: Identity::new(
                "import",
                &fed.folder,
                &format!("privtuna {} {}", fed.name, opts.metric.name()),
            ),
            planned: &planned,
            overwrite: opts.overwrite,
            shared: false,
        },
    )?;
    dir.write("table.csv.gz", &gz(csv.as_bytes()))?;
    if let Some(text) = fedavg_csv {
        dir.write("fedavg.csv.gz", &gz(text.as_bytes()))?;
    }
    // Written last: a table folder without its description is not a table yet.
    dir.write("table.toml", meta.as_bytes())?;
    dir.prune()?;
    Ok(import_summary(fed, points.len(), dropped, &folder))
}

/// table.csv's rows, client after client over the common points, and each client's source
/// line for table.toml (its file and sha256).
fn client_rows(
    fed: &Federation,
    points: &[[f64; 3]],
    axes: &[Axis],
    opts: &ImportOptions,
    base: &Path,
) -> (String, Vec<String>) {
    let mut csv = String::from(
        "agent,point,x0,x1,x2,client_lr,client_momentum,batch_size,metric,train_seconds\n",
    );
    let mut sources = Vec::new();
    for (agent, c) in fed.clients.iter().enumerate() {
        sources.push(format!(
            "{{ client = {}, file = {}, sha256 = \"{}\" }}",
            c.client,
            toml_str(&rel(&c.file, base)),
            c.sha256
        ));
        for (p, key) in points.iter().enumerate() {
            let r = c
                .rows
                .iter()
                .find(|r| r.key() == *key)
                .expect("a common point is in every client's grid");
            let u: Vec<String> = axes
                .iter()
                .zip(key)
                .map(|(a, &v)| a.unit(v).to_string())
                .collect();
            csv += &format!(
                "{agent},{p},{},{},{},{},{},{}\n",
                u.join(","),
                key[0],
                key[1],
                key[2],
                opts.metric.of(r),
                r.duration
            );
        }
    }
    (csv, sources)
}

/// fedavg.csv's text from the federation's FedAvg grids (None without any), each grid's
/// best described in `meta`.
fn fedavg_rows(
    fed: &Federation,
    points: &[[f64; 3]],
    base: &Path,
    meta: &mut String,
) -> Option<String> {
    let mut fedavg_csv = None;
    if !fed.fedavg.is_empty() {
        let names: BTreeSet<&String> = fed
            .fedavg
            .iter()
            .flat_map(|g| g.rows.iter().flat_map(|r| r.params.keys()))
            .collect();
        let mut text = format!(
            "source,test_accuracy,{}\n",
            names
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(",")
        );
        for g in &fed.fedavg {
            let best = g
                .rows
                .iter()
                .max_by(|a, b| a.test_accuracy.total_cmp(&b.test_accuracy))
                .expect("a FedAvg grid has rows");
            let on_grid = points.iter().position(|p| {
                Some(&p[0]) == best.params.get("client_lr")
                    && Some(&p[1]) == best.params.get("client_momentum")
                    && Some(&p[2]) == best.params.get("batch_size")
            });
            *meta += &format!(
                "\n[[fedavg]]\nfile = {}\npoints = {}\nbest_test_accuracy = {}\nbest = {{ {} }}\nbest_point = {}  # the client grid's point of the best's client hyperparameters (-1: not on it)\n",
                toml_str(&rel(&g.file, base)),
                g.rows.len(),
                best.test_accuracy,
                best.params
                    .iter()
                    .map(|(k, v)| format!("{k} = {v}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                on_grid.map_or(-1, |p| p as i64),
            );
            let src = rel(&g.file, base);
            for r in &g.rows {
                let vals: Vec<String> = names
                    .iter()
                    .map(|n| r.params.get(*n).map(|v| v.to_string()).unwrap_or_default())
                    .collect();
                text += &format!("{src},{},{}\n", r.test_accuracy, vals.join(","));
            }
        }
        fedavg_csv = Some(text);
    }
    fedavg_csv
}

/// The line `fbo import` prints for one federation imported.
fn import_summary(fed: &Federation, points: usize, dropped: usize, folder: &Path) -> String {
    format!(
        "{}: {} clients x {} points{}{} -> {}",
        fed.name,
        fed.clients.len(),
        points,
        if fed.missing.is_empty() {
            String::new()
        } else {
            format!(
                " (MISSING clients {} of {})",
                fed.missing
                    .iter()
                    .map(|c| c.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                fed.parties
            )
        },
        if dropped > 0 {
            format!(" ({dropped} points not run by every client, or NaN, left out)")
        } else {
            String::new()
        },
        folder.join("table.toml").display()
    )
}

/// Imports every federation under the source folder; everything is read and checked before
/// any folder is written, so a malformed file leaves nothing half-imported.
pub fn privtuna(opts: &ImportOptions) -> Result<()> {
    let found = privtuna::find(&opts.source)?;
    let base = opts
        .source
        .canonicalize()
        .map_err(|e| FboError::io(&opts.source, e))?;
    let mut names = BTreeSet::new();
    for f in &found.federations {
        if !names.insert(&f.name) {
            return Err(FboError::spec(
                &f.folder,
                "",
                format!(
                    "two federations under {} would both be {}; import them one at a time into different --out folders",
                    opts.source.display(),
                    f.name
                ),
            ));
        }
    }
    for f in &found.federations {
        if common_points(f, opts.metric).0.is_empty() {
            return Err(FboError::spec(
                &f.folder,
                "",
                format!(
                    "federation {}: its clients' grids have no point in common",
                    f.name
                ),
            ));
        }
    }
    let mut lines = Vec::new();
    for f in &found.federations {
        lines.push(write_federation(f, &base, opts)?);
    }
    if !opts.quiet {
        for s in &found.skipped {
            eprintln!("skipped {}: {}", rel(&s.file, &base), s.reason);
        }
    }
    for l in lines {
        eprintln!("{l}");
    }
    let missing = found
        .federations
        .iter()
        .filter(|f| !f.missing.is_empty())
        .count();
    eprintln!(
        "imported {} federation{} ({missing} with missing clients); {} files skipped",
        found.federations.len(),
        if found.federations.len() == 1 {
            ""
        } else {
            "s"
        },
        found.skipped.len()
    );
    Ok(())
}

#[derive(Args)]
pub struct ImportArgs {
    /// The format of the source.
    #[arg(value_parser = ["privtuna"])]
    format: String,
    /// The source folder.
    source: PathBuf,
    /// Where the table folders go.
    #[arg(long, default_value = "data/privtuna")]
    out: PathBuf,
    /// The table's metric: validation accuracy (maximised) or validation loss (minimised).
    #[arg(long, default_value = "val_accuracy", value_parser = ["val_accuracy", "val_loss"])]
    metric: String,
    /// Replace files fbo did not write in the output folders.
    #[arg(long)]
    overwrite: bool,
    /// Do not list the skipped files (the summary still shows).
    #[arg(long)]
    quiet: bool,
}

pub fn cmd_import(a: ImportArgs) -> Result<()> {
    let ImportArgs {
        format: _,
        source,
        out,
        metric,
        overwrite,
        quiet,
    } = a;
    crate::cli::import::privtuna(&crate::cli::import::ImportOptions {
        source,
        out,
        metric: crate::cli::import::Metric::parse(&metric).expect("clap checked the metric"),
        overwrite,
        quiet,
    })
}
