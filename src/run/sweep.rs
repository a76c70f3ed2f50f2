//! `fbo sweep`: one spec, many parameter values. The [sweep] table maps spec paths to lists of
//! values, run as a Cartesian product:
//!
//! ```toml
//! [sweep]
//! "server.q" = [0.1, 0.25, 0.35]
//! "algorithm[1].server.clip" = [5.0, 11.0]
//! ```
//!
//! or lists the points explicitly: `points = [{ "server.q" = 0.1, "server.z" = 1.0 }, ...]`.
//! Every point is the base spec with those values set, checked like any spec, and run on the
//! same seeds into `points/pNNN/`. A finished point leaves `point.csv`; a rerun into the same
//! folder skips finished points whose spec is unchanged, and `sweep.csv` gathers every finished
//! point's rows.

use crate::error::{FboError, Result};
use crate::privacy::Accountant;
use crate::run::outdir::{Claim, Identity, OutDir};
use crate::run::runner::{Reuse, RunOptions, Work, progress_bar, run_spec};
use crate::spec::Spec;
use indicatif::{MultiProgress, ProgressDrawTarget};
use std::collections::HashMap;
use std::fs;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Sweeps of this many points or more get a note before their points are checked.
const LARGE_SWEEP: usize = 20_000;

pub struct Point {
    pub name: String,
    /// (path, value as written in the CSV), in the order of `Sweep::keys`.
    pub values: Vec<(String, String)>,
    pub spec: Spec,
}

pub struct Sweep {
    pub keys: Vec<String>,
    pub points: Vec<Point>,
    /// `[sweep] select`: the tuning loop the sweep stands for, whose cost `selection.csv` states.
    pub select: Option<Selection>,
}

/// `[sweep] select = { mean = 10.0, shape = 1.0 }`: the tuning loop runs a random number K of
/// candidates, K from the truncated negative binomial of that mean and shape (shape 1:
/// geometric; 0: logarithmic), each a sweep point drawn at random, and releases only the best
/// run (Papernot and Steinke 2022; `privacy::select`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Selection {
    pub mean: f64,
    pub shape: f64,
}

impl Selection {
    fn parse(v: &toml::Value) -> std::result::Result<Selection, String> {
        let t = v
            .as_table()
            .ok_or("must be a table: select = { mean = 10.0, shape = 1.0 }")?;
        if let Some(k) = t.keys().find(|k| *k != "mean" && *k != "shape") {
            return Err(format!("unknown key \"{k}\"; allowed: \"mean\", \"shape\""));
        }
        let num = |k: &str, default: Option<f64>| -> std::result::Result<f64, String> {
            match t.get(k) {
                None => default.ok_or(format!("needs {k}")),
                Some(v) => v
                    .as_float()
                    .or_else(|| v.as_integer().map(|i| i as f64))
                    .ok_or(format!("{k} must be a number")),
            }
        };
        let mean = num("mean", None)?;
        if !(mean.is_finite() && (1.0..=1e9).contains(&mean)) {
            return Err(format!(
                "mean must be in [1, 1e9] (the mean number of candidates run), got {mean}"
            ));
        }
        let shape = num("shape", Some(1.0))?;
        if !(shape.is_finite() && (0.0..=100.0).contains(&shape)) {
            return Err(format!(
                "shape must be in [0, 100] (0 logarithmic, 1 geometric), got {shape}"
            ));
        }
        Ok(Selection { mean, shape })
    }
}

enum Step {
    Key(String),
    Index(usize),
}

/// "algorithm[1].server.q" -> Key(algorithm), Index(1), Key(server), Key(q).
fn parse_path(path: &str) -> Option<Vec<Step>> {
    let mut steps = Vec::new();
    for part in path.split('.') {
        let (name, rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if name.is_empty() {
            return None;
        }
        steps.push(Step::Key(name.to_string()));
        let mut rest = rest;
        while let Some(stripped) = rest.strip_prefix('[') {
            let end = stripped.find(']')?;
            steps.push(Step::Index(stripped[..end].parse().ok()?));
            rest = &stripped[end + 1..];
        }
        if !rest.is_empty() {
            return None;
        }
    }
    Some(steps)
}

/// Sets `path` in the spec table, creating intermediate tables (an algorithm's inline
/// `server = {...}`, say) where missing.
fn set_path(
    table: &mut toml::Table,
    path: &str,
    value: toml::Value,
) -> std::result::Result<(), String> {
    let steps = parse_path(path).ok_or_else(|| {
        format!("\"{path}\" is not a spec path (use a.b.c or algorithm[1].server.q)")
    })?;
    let mut cur = table;
    let mut i = 0;
    while i < steps.len() {
        let Step::Key(k) = &steps[i] else {
            return Err(format!("\"{path}\": an index must follow a key"));
        };
        let last = i + 1 == steps.len();
        if last {
            cur.insert(k.clone(), value);
            return Ok(());
        }
        let entry = cur
            .entry(k.clone())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        let next = if let Some(Step::Index(n)) = steps.get(i + 1) {
            i += 1;
            let arr = entry
                .as_array_mut()
                .ok_or_else(|| format!("\"{path}\": `{k}` is not a list"))?;
            let len = arr.len();
            arr.get_mut(*n)
                .ok_or_else(|| format!("\"{path}\": `{k}` has {len} entries, no [{n}]"))?
        } else {
            entry
        };
        if i + 1 == steps.len() {
            return Err(format!(
                "\"{path}\" ends at a list entry; name a key inside it"
            ));
        }
        cur = next
            .as_table_mut()
            .ok_or_else(|| format!("\"{path}\": `{k}` is not a table"))?;
        i += 1;
    }
    Ok(())
}

fn show(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Reads a sweep spec and expands its points, checking each one.
pub fn load(path: &Path) -> Result<Sweep> {
    let base = Spec::load(path)?; // the base spec must be valid on its own
    let err = |key: &str, msg: String| FboError::spec(path, key, msg);
    let mut table: toml::Table = base
        .source
        .parse()
        .map_err(|e| err("", format!("invalid spec: {e}")))?;
    let Some(toml::Value::Table(mut sweep)) = table.remove("sweep") else {
        return Err(err(
            "sweep",
            "missing [sweep] table: list the values to sweep, e.g. \"server.q\" = [0.1, 0.25]"
                .into(),
        ));
    };
    let select = sweep
        .remove("select")
        .map(|v| Selection::parse(&v).map_err(|m| err("sweep.select", m)))
        .transpose()?;
    let combos = combinations(&sweep, &err)?;
    if combos.is_empty() || combos[0].is_empty() {
        return Err(err("sweep", "lists no values".into()));
    }
    let mut keys: Vec<String> = Vec::new();
    for c in &combos {
        for (k, _) in c {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    // Each point's spec is built and checked before anything runs: say so before a long
    // silence (a million points take minutes).
    if combos.len() >= LARGE_SWEEP {
        eprintln!(
            "note: {}: checking the {} points of this sweep before anything runs (7 s per 100,000 points measured on 2 cores)...",
            path.display(),
            combos.len()
        );
    }
    // Points running the same experiment, found by a hash of the experiment (comparing
    // every pair took hours at a million points); equal hashes are compared in full.
    let mut by_hash: std::collections::HashMap<u64, Vec<usize>> = Default::default();
    let mut points = Vec::with_capacity(combos.len());
    for (i, combo) in combos.into_iter().enumerate() {
        let point = spec_point(path, &table, &keys, i, &combo)?;
        // A swept key that every algorithm overrides (say `server.q` beside
        // `server = { q = ... }` in each [[algorithm]]) changes nothing: refuse rather than run
        // identical points and report a flat trade-off.
        let experiment = |s: &Spec| {
            let mut e = s.clone();
            e.source.clear();
            e
        };
        let mine = experiment(&point.spec);
        let hash = {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            format!("{mine:?}").hash(&mut h);
            h.finish()
        };
        let twins = by_hash.entry(hash).or_default();
        if let Some(same) = twins
            .iter()
            .map(|&j| &points[j])
            .find(|p: &&Point| experiment(&p.spec) == mine)
        {
            return Err(err(
                "sweep",
                format!(
                    "points {} and {} ({}) run the same experiment: the swept value does not reach any algorithm (is it overridden by each [[algorithm]]'s own table, e.g. server = {{ q = ... }}?)",
                    same.name,
                    point.name,
                    label_of(&combo)
                ),
            ));
        }
        twins.push(points.len());
        points.push(point);
    }
    if select.is_some()
        && !points.iter().any(|p| {
            p.spec
                .algorithms
                .iter()
                .any(|a| a.mechanism(1, 1).is_some())
        })
    {
        return Err(err(
            "sweep.select",
            "states the privacy cost of choosing among private runs, and no algorithm of this sweep is private".into(),
        ));
    }
    Ok(Sweep {
        keys,
        points,
        select,
    })
}

/// One swept setting: (key path, value) pairs.
type Combo = Vec<(String, toml::Value)>;

/// A point's label: its swept values as `key = value`.
fn label_of(combo: &Combo) -> String {
    combo
        .iter()
        .map(|(k, v)| format!("{k} = {}", show(v)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The settings a [sweep] table lists: its `points`, or the product of its per-key lists.
fn combinations(sweep: &toml::Table, err: &dyn Fn(&str, String) -> FboError) -> Result<Vec<Combo>> {
    let combos: Vec<Combo> = if let Some(points) = sweep.get("points") {
        if sweep.len() > 1 {
            return Err(err(
                "sweep",
                "give either `points` or per-key lists, not both".into(),
            ));
        }
        let list = points
            .as_array()
            .ok_or_else(|| err("sweep.points", "must be a list of tables".into()))?;
        list.iter()
            .enumerate()
            .map(|(i, p)| {
                p.as_table()
                    .map(|t| t.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                    .ok_or_else(|| {
                        err(
                            &format!("sweep.points[{i}]"),
                            "must be a table of path = value".into(),
                        )
                    })
            })
            .collect::<Result<_>>()?
    } else {
        let mut combos: Vec<Vec<(String, toml::Value)>> = vec![Vec::new()];
        for (k, v) in sweep {
            let values = v.as_array().filter(|a| !a.is_empty()).ok_or_else(|| {
                err(
                    &format!("sweep.\"{k}\""),
                    "must be a non-empty list of values".into(),
                )
            })?;
            combos = combos
                .into_iter()
                .flat_map(|c| {
                    values.iter().map(move |val| {
                        let mut c = c.clone();
                        c.push((k.clone(), val.clone()));
                        c
                    })
                })
                .collect();
        }
        combos
    };
    Ok(combos)
}

/// Point `i` of a sweep as a spec: the base spec's `table` with `combo` set, checked as a spec (an
/// error names the point), and its value of every swept key (`keys`).
fn spec_point(
    path: &Path,
    table: &toml::Table,
    keys: &[String],
    i: usize,
    combo: &Combo,
) -> Result<Point> {
    let err = |key: &str, msg: String| FboError::spec(path, key, msg);
    let name = format!("p{i:03}");
    let mut t = table.clone();
    let label = label_of(combo);
    for (k, v) in combo {
        set_path(&mut t, k, v.clone()).map_err(|m| err(&format!("sweep.\"{k}\""), m))?;
    }
    let text =
        toml::to_string(&t).map_err(|e| err("sweep", format!("cannot write point {name}: {e}")))?;
    let spec = Spec::parse(&text, path).map_err(|e| match e {
        FboError::Spec { file, key, message } => FboError::Spec {
            file,
            key,
            message: format!("{message} (in sweep point {name}: {label})"),
        },
        other => other,
    })?;
    let values = keys
        .iter()
        .map(|k| {
            let v = combo
                .iter()
                .find(|(ck, _)| ck == k)
                .map(|(_, v)| show(v))
                .unwrap_or_default();
            (k.clone(), v)
        })
        .collect();
    Ok(Point { name, values, spec })
}

/// One row of selection.csv: a private algorithm of the sweep and the cost of choosing.
pub struct SelectionRow {
    pub algorithm: usize,
    pub label: String,
    pub against: crate::privacy::Against,
    pub delta: f64,
    /// One run at its costliest point.
    pub one_run_max: f64,
    /// Every point run and released (composition).
    pub all_points: f64,
    /// `select`'s tuning loop (repeat-and-select).
    pub select: f64,
}

/// For each private algorithm of the sweep, the epsilon (RDP, improved conversion, at the
/// smallest delta of the points) of one run at its costliest point, of running every point and
/// releasing all of them (composition), and of `select`'s tuning loop (repeat-and-select, each
/// candidate's curve the largest over the points: a candidate drawn at random is a mixture,
/// whose Renyi divergence is at most the largest of its components'). A candidate that is not
/// private makes the selection not private: epsilon inf.
pub fn selection_rows(
    sweep: &Sweep,
    select: Selection,
) -> std::result::Result<Vec<SelectionRow>, String> {
    use crate::privacy::{Noise, Sampling, rdp};
    let delta = sweep
        .points
        .iter()
        .map(|p| p.spec.privacy.delta)
        .fold(f64::INFINITY, f64::min);
    let mut out = Vec::new();
    for i in 0..sweep.points[0].spec.algorithms.len() {
        let guarantees: Vec<Option<(crate::privacy::Against, crate::privacy::Mechanism)>> = sweep
            .points
            .iter()
            .map(|p| {
                p.spec.algorithms[i]
                    .guarantees(p.spec.iterations as u64, p.spec.total_agents())
                    .first()
                    .copied()
            })
            .collect();
        let Some((against, _)) = guarantees.iter().flatten().next().copied() else {
            continue;
        };
        let mut row = SelectionRow {
            algorithm: i,
            label: sweep.points[0].spec.algorithms[i].label.clone(),
            against,
            delta,
            one_run_max: f64::INFINITY,
            all_points: f64::INFINITY,
            select: f64::INFINITY,
        };
        if guarantees.iter().any(|g| g.is_none()) {
            out.push(row);
            continue;
        }
        let ms: Vec<crate::privacy::Mechanism> = guarantees.iter().flatten().map(|g| g.1).collect();
        // Fractional orders only where every candidate has them.
        let orders = if ms
            .iter()
            .all(|m| m.sampling == Sampling::Poisson && m.noise == Noise::Gaussian)
        {
            rdp::fine_orders(&ms[0])
        } else {
            (2..=256).map(f64::from).collect()
        };
        let curves: Vec<Vec<f64>> = ms
            .iter()
            .map(|m| rdp::rdp_curve(m, &orders))
            .collect::<std::result::Result<_, String>>()?;
        let eps = |curve: &[f64]| rdp::to_dp_improved(&orders, curve, delta).0;
        let per_order = |f: fn(f64, f64) -> f64, init: f64| -> Vec<f64> {
            (0..orders.len())
                .map(|k| curves.iter().map(|c| c[k]).fold(init, f))
                .collect()
        };
        let worst = per_order(f64::max, 0.0);
        let selected =
            crate::privacy::select::repeat_and_select(&orders, &worst, select.mean, select.shape)?;
        row.one_run_max = curves.iter().map(|c| eps(c)).fold(0.0, f64::max);
        row.all_points = eps(&per_order(|a, b| a + b, 0.0));
        row.select = eps(&selected);
        out.push(row);
    }
    Ok(out)
}

/// selection.csv from `selection_rows`.
fn selection_csv(sweep: &Sweep, select: Selection, rows: &[SelectionRow]) -> String {
    let mut out = String::from(
        "algorithm,label,points,against,delta,mean_candidates,shape,epsilon_one_run_max,epsilon_all_points,epsilon_select\n",
    );
    for r in rows {
        out += &format!(
            "{},{},{},{},{},{},{},{},{},{}\n",
            r.algorithm,
            csv_escape(&r.label),
            sweep.points.len(),
            r.against.name(),
            r.delta,
            select.mean,
            select.shape,
            r.one_run_max,
            r.all_points,
            r.select
        );
    }
    out
}

pub struct SweepOptions {
    pub out: PathBuf,
    pub threads: Option<usize>,
    pub quiet: bool,
    pub runs: Option<usize>,
    pub no_timing: bool,
    pub overwrite: bool,
    /// All points, a shard of the sweep's runs, or only the merge.
    pub work: Work,
}

pub(crate) fn csv_escape(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The records of the CSV file at `p` (none if it does not exist), header left out.
fn csv_rows(p: &Path) -> Result<Vec<Vec<String>>> {
    if !p.exists() {
        return Ok(Vec::new());
    }
    let err = |e: csv::Error| FboError::Run(format!("{}: {e}", p.display()));
    let mut rdr = csv::Reader::from_path(p).map_err(err)?;
    rdr.records()
        .map(|r| r.map(|r| r.iter().map(String::from).collect()).map_err(err))
        .collect()
}

/// The fraction of selected agents clipped over algorithm `a`'s rounds in server.csv
/// (algorithm, run, iteration, selected, clipped, ...); blank without a DP server and under
/// secure aggregation, where the server never learns who clipped.
fn clipped_fraction(a: &crate::spec::AlgorithmSpec, server: &[Vec<String>]) -> String {
    let (sel, clip) =
        server
            .iter()
            .filter(|r| r[0] == a.label)
            .fold((0usize, 0usize), |(s, c), r| {
                (
                    s + r[3].parse::<usize>().unwrap_or(0),
                    c + r[4].parse::<usize>().unwrap_or(0),
                )
            });
    let known = a
        .server
        .as_ref()
        .is_some_and(|s| s.dp.is_some() && s.secure.is_none());
    if known && sel > 0 {
        (clip as f64 / sel as f64).to_string()
    } else {
        String::new()
    }
}

/// Reads a point's result files into its sweep.csv rows (one per algorithm).
fn point_rows(point: &Point, dir: &Path, wall_s: Option<f64>, allocation: bool) -> Result<String> {
    let spec = &point.spec;
    let read = |f: &str| csv_rows(&dir.join(f));
    let last = spec.evaluations().to_string();
    let summary = read("summary.csv")?;
    let privacy = read("privacy.csv")?;
    let server = read("server.csv")?;
    let mut out = String::new();
    for a in &spec.algorithms {
        // summary.csv: algorithm, iteration, n, mean_simple_regret, se_simple_regret,
        // mean_best_f, se_best_f, mean_cumulative_regret, se_cumulative_regret,
        // mean_best_metric, se_best_metric, params_sent, mean_elapsed_s, mean_sim_clock_s
        // (means over agents and runs).
        let fin = summary.iter().find(|r| r[0] == a.label && r[1] == last);
        let get = |c: usize| fin.map(|r| r[c].clone()).unwrap_or_default();
        // privacy.csv: algorithm, run, iteration, accountant, sampling, adjacency, q, delta,
        // noise, against, epsilon. The sweep reports the release's guarantee (the first row of
        // each accountant; a server's own view, where written, follows it).
        let final_row = |acc: Accountant| {
            privacy
                .iter()
                .find(|r| r[0] == a.label && r[1] == "0" && r[2] == last && r[3] == acc.name())
        };
        let eps = |acc: Accountant| -> String {
            final_row(acc).map(|r| r[10].clone()).unwrap_or_default()
        };
        let accounted_q = Accountant::ALL
            .into_iter()
            .chain([Accountant::Allocation])
            .find_map(final_row)
            .map(|r| r[6].clone())
            .unwrap_or_default();
        let dp = a.server.as_ref().and_then(|s| s.dp);
        let released = a.mechanism(1, spec.total_agents());
        let sampling = released.map(|m| m.sampling.name()).unwrap_or_default();
        let adjacency = released.map(|m| m.adjacency.name()).unwrap_or_default();
        // The round after which a privacy budget stopped the server; empty if it never did.
        let stopped_after = dp
            .and_then(|d| d.budget)
            .filter(|b| b.rounds < spec.iterations as u64)
            .map(|b| b.rounds.to_string())
            .unwrap_or_default();
        let clipped = clipped_fraction(a, &server);
        let mut fields = vec![point.name.clone()];
        fields.extend(point.values.iter().map(|(_, v)| csv_escape(v)));
        fields.extend([
            csv_escape(&a.label),
            spec.runs.to_string(),
            get(9),
            get(10),
            get(3),
            get(4),
            eps(Accountant::RdpInt),
            eps(Accountant::Rdp),
            eps(Accountant::Pld),
        ]);
        if allocation {
            fields.push(eps(Accountant::Allocation));
        }
        fields.extend([
            accounted_q,
            sampling.to_string(),
            adjacency.to_string(),
            stopped_after,
            clipped,
            wall_s.map(|w| format!("{w:.3}")).unwrap_or_default(),
            spec.total_agents().to_string(),
            get(11),
            get(12),
            get(13),
        ]);
        out += &fields.join(",");
        out.push('\n');
    }
    Ok(out)
}

/// Everything of a point's spec that reaches algorithm `a` (its own settings, its index, and
/// the shared sections), as text: two points with the same text give the algorithm the same
/// results, whatever else the sweep changed (a `server.z` does not reach TS).
pub fn reach(spec: &Spec, a: usize) -> String {
    let mut only = spec.clone();
    only.name.clear();
    only.path = PathBuf::new();
    only.source.clear();
    only.algorithms = vec![spec.algorithms[a].clone()];
    format!("{a} {only:?}")
}

fn refuse_measured_shards(sweep: &Sweep) -> Result<()> {
    sweep
        .points
        .iter()
        .try_for_each(|p| crate::run::runner::refuse_measured_shards(&p.spec))
}

/// The sweep spec's text and which experiment its output folder belongs to.
fn sweep_identity(path: &Path) -> Result<(String, Identity)> {
    let text = fs::read_to_string(path).map_err(|e| FboError::io(path, e))?;
    let canonical = crate::spec::portable::canonical(&text, path);
    let id = Identity::new("sweep", path, &canonical);
    Ok((text, id))
}

pub fn run(path: &Path, opts: &SweepOptions) -> Result<()> {
    let mut sweep = load(path)?;
    for p in &mut sweep.points {
        if let Some(r) = opts.runs {
            p.spec.runs = r;
        }
        if opts.no_timing {
            p.spec.output.timing = false;
        }
    }
    note_long_sweep(&sweep, opts)?;
    let out = &opts.out;
    let sharded = matches!(opts.work, Work::Shard { .. });
    // Refused here, before any folder is written, as `fbo run --shard` refuses it.
    if sharded {
        refuse_measured_shards(&sweep)?;
    }
    if sharded && opts.overwrite {
        return Err(FboError::spec(
            out,
            "--overwrite",
            "does not go with --shard: shards share the folder",
        ));
    }
    let (text, identity) = sweep_identity(path)?;
    let mut planned = vec!["spec.toml".to_string(), "sweep.csv".to_string()];
    if sweep.select.is_some() {
        planned.push("selection.csv".into());
    }
    let dir = OutDir::claim(
        out,
        Claim {
            identity,
            planned: &planned,
            overwrite: opts.overwrite,
            shared: sharded,
        },
    )?;
    dir.write(
        "spec.toml",
        crate::spec::portable::portable(&text, path, out).as_bytes(),
    )?;
    if sharded {
        return run_shard(&sweep, &dir, opts);
    }
    let merge_only = opts.work == Work::Merge;
    let draw = !opts.quiet && std::io::stderr().is_terminal();
    let multi = MultiProgress::with_draw_target(if draw {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    });
    let points_bar = multi.add(crate::run::progress::bar(
        sweep.points.len() as u64,
        !draw,
        "points",
    ));
    let runs_bar = multi.add(progress_bar(1, !draw));
    let _ticker = crate::run::progress::Ticker::start(&points_bar, opts.quiet, "points");
    let _note = crate::run::progress::InterruptNote::set(
        &points_bar,
        "points (and the finished units of the next)",
        out.join("points"),
    );
    let mut skipped = 0;
    let mut failures = Vec::new();
    // (algorithm's configuration, as far as it reaches the algorithm) -> the point this
    // invocation finished with it: an algorithm the swept keys do not reach runs once, and
    // the other points copy its runs.
    let mut computed: HashMap<String, PathBuf> = HashMap::new();
    for point in &sweep.points {
        let (context, bar) = ((&sweep, path), &runs_bar);
        match sweep_point(point, context, &dir, opts, merge_only, bar, &mut computed)? {
            PointDone::Skipped => skipped += 1,
            PointDone::Failed(why) => failures.push(why),
            PointDone::Ran => {}
        }
        points_bar.inc(1);
    }
    runs_bar.finish_and_clear();
    points_bar.finish_and_clear();
    if skipped > 0 && !opts.quiet {
        eprintln!(
            "resumed: skipped {skipped} of {} points already finished in {}",
            sweep.points.len(),
            out.display()
        );
    }
    finish_sweep(&sweep, &dir, opts, merge_only, &failures)
}

/// A warning, not progress (--quiet keeps it), when the sweep is estimated to run long.
fn note_long_sweep(sweep: &Sweep, opts: &SweepOptions) -> Result<()> {
    let threads = opts.threads.unwrap_or_else(rayon::current_num_threads);
    let wall = crate::run::budget::sweep_wall_s(sweep.points.iter().map(|p| &p.spec), threads)?;
    if wall > crate::run::budget::LONG_S {
        eprintln!(
            "note: this sweep of {} points is estimated at about {} on {threads} threads; finished points and runs are saved as they complete, so Ctrl-C and a rerun resume",
            sweep.points.len(),
            crate::run::budget::human_seconds(wall)
        );
    }
    Ok(())
}

/// A shard's share of every point's units (`fbo sweep --shard`), saved in the points' parts
/// folders without merging; the points whose units failed are named.
fn run_shard(sweep: &Sweep, dir: &OutDir, opts: &SweepOptions) -> Result<()> {
    let later = left_to_merge(sweep);
    let mut failures = Vec::new();
    for (point, (lo, hi)) in shard_ranges(sweep, Some(opts.work)) {
        let rel = format!("points/{}", point.name);
        let pdir = dir.create_dir(&rel)?;
        let res = run_spec(
            &point.spec,
            &RunOptions {
                out: pdir,
                threads: opts.threads,
                quiet: true,
                nested: true,
                progress: None,
                overwrite: false,
                work: Work::Units { lo, hi },
                // Points of a shard are not finished (merged) yet: what an earlier
                // point's shard computes is copied by the merge.
                reuse: later[&point.name].clone(),
            },
        );
        if let Err(e) = res {
            failures.push(format!("{}: {e}", point.name));
        }
    }
    if !failures.is_empty() {
        return Err(FboError::Run(format!(
            "{} points of this shard failed (rerun the shard to retry them):\n  {}",
            failures.len(),
            failures.join("\n  ")
        )));
    }
    Ok(())
}

/// What became of one point in this invocation.
enum PointDone {
    /// Finished by an earlier invocation with this spec and columns.
    Skipped,
    /// Its runs failed, or (merging) some of its units are missing: why.
    Failed(String),
    Ran,
}

/// A merge's failure for a point whose units are not all computed: how many miss, and the
/// first five of them.
fn missing_units(name: &str, st: &crate::run::runner::Status) -> String {
    let absent = st.missing.len() + st.running.len();
    let first: Vec<String> = st
        .missing
        .iter()
        .chain(&st.running)
        .take(5)
        .cloned()
        .collect();
    format!(
        "{name}: {absent} of {} units missing ({}{})",
        absent + st.done.len() + st.at_merge.len(),
        first.join(", "),
        if absent > 5 { ", ..." } else { "" }
    )
}

/// One point of the sweep: skipped where an earlier invocation finished it, its runs copied
/// from the point that ran an algorithm the swept keys do not reach (`computed`), else run
/// (or merged) into points/NAME with its point.csv rows.
fn sweep_point(
    point: &Point,
    (sweep, path): (&Sweep, &Path),
    dir: &OutDir,
    opts: &SweepOptions,
    merge_only: bool,
    runs_bar: &indicatif::ProgressBar,
    computed: &mut HashMap<String, PathBuf>,
) -> Result<PointDone> {
    let rel = format!("points/{}", point.name);
    let marker_rel = format!("{rel}/point.csv");
    let pdir = dir.create_dir(&rel)?;
    let marker = pdir.join("point.csv");
    let portable = crate::spec::portable::portable(&point.spec.source, path, &pdir);
    let same_spec = fs::read_to_string(pdir.join("spec.toml")).is_ok_and(|s| s == portable);
    // A point finished by an fbo with other sweep.csv columns is run again.
    let same_format = fs::read(&marker).is_ok_and(|b| {
        csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(b.as_slice())
            .records()
            .all(|r| r.is_ok_and(|r| r.len() == header_fields(sweep)))
    });
    let keys: Vec<String> = (0..point.spec.algorithms.len())
        .map(|a| reach(&point.spec, a))
        .collect();
    if dir.owns(&marker_rel) && marker.exists() && same_spec && same_format {
        // Not a source to copy from: an earlier invocation may have run it with other
        // options (--no-timing) than this one's; except in a merge, whose shards and
        // earlier merges all had this one's options (parts made otherwise are refused).
        if merge_only {
            for k in keys {
                computed.entry(k).or_insert_with(|| pdir.clone());
            }
        }
        dir.keep(&marker_rel);
        return Ok(PointDone::Skipped);
    }
    let reuse: Vec<Option<Reuse>> = keys
        .iter()
        .map(|k| {
            computed
                .get(k)
                .filter(|d| d.join("trace.csv").is_file())
                .map(|d| Reuse::From(d.clone()))
        })
        .collect();
    if dir.owns(&marker_rel) {
        let _ = fs::remove_file(&marker);
    }
    // Merging a sharded sweep: each point's runs must all be there.
    let st = merge_only
        .then(|| crate::run::runner::status_of(&point.spec, &pdir, (0, usize::MAX), &reuse));
    if let Some(st) = st.filter(|st| !st.missing.is_empty()) {
        return Ok(PointDone::Failed(missing_units(&point.name, &st)));
    }
    let started = Instant::now();
    let res = run_spec(
        &point.spec,
        &RunOptions {
            out: pdir.clone(),
            threads: opts.threads,
            quiet: true,
            nested: true,
            progress: Some(runs_bar.clone()),
            overwrite: opts.overwrite,
            work: if merge_only { Work::Merge } else { Work::All },
            reuse,
        },
    )
    .and_then(|_| {
        let wall = (!opts.no_timing).then(|| started.elapsed().as_secs_f64());
        point_rows(point, &pdir, wall, allocates(sweep))
    })
    .and_then(|rows| dir.write(&marker_rel, rows.as_bytes()));
    match res {
        Err(e) => Ok(PointDone::Failed(format!("{}: {e}", point.name))),
        Ok(()) => {
            for k in keys {
                computed.entry(k).or_insert_with(|| pdir.clone());
            }
            Ok(PointDone::Ran)
        }
    }
}

/// The end of a sweep: sweep.csv from every finished point in point order, the selection's
/// cost where the sweep selects, and the failures said (a merge refused while points miss
/// units); stale files pruned when every point finished.
fn finish_sweep(
    sweep: &Sweep,
    dir: &OutDir,
    opts: &SweepOptions,
    merge_only: bool,
    failures: &[String],
) -> Result<()> {
    let out = &opts.out;
    // sweep.csv from every finished point, in point order.
    let header = sweep_header(sweep);
    let mut csv = header.join(",") + "\n";
    for point in &sweep.points {
        let marker = out.join("points").join(&point.name).join("point.csv");
        if let Ok(rows) = fs::read_to_string(&marker) {
            csv += &rows;
        }
    }
    if merge_only && !failures.is_empty() {
        return Err(FboError::Run(format!(
            "cannot merge the sweep: {} of {} points have units missing (run the missing shards, or `fbo sweep` without --merge):\n  {}",
            failures.len(),
            sweep.points.len(),
            failures.join("\n  ")
        )));
    }
    dir.write("sweep.csv", csv.as_bytes())?;
    // The selection's cost depends on the points' settings only, not on their runs.
    if let Some(select) = sweep.select {
        let rows = selection_rows(sweep, select).map_err(FboError::Run)?;
        dir.write(
            "selection.csv",
            selection_csv(sweep, select, &rows).as_bytes(),
        )?;
        if !opts.quiet {
            for r in &rows {
                let show = |e: f64| crate::privacy::show_upper(e, 3);
                eprintln!(
                    "selection: {} (algorithm {}): the best of a random number of runs (mean {}, shape {}) over {} points costs epsilon {} (rdp, delta {:e}, against {}); one run at most {}, every point released {}",
                    r.label,
                    r.algorithm,
                    select.mean,
                    select.shape,
                    sweep.points.len(),
                    show(r.select),
                    r.delta,
                    r.against.name(),
                    show(r.one_run_max),
                    show(r.all_points)
                );
            }
        }
    }
    if !failures.is_empty() {
        return Err(FboError::Run(format!(
            "{} of {} sweep points failed (rerun the same command to retry them):\n  {}",
            failures.len(),
            sweep.points.len(),
            failures.join("\n  ")
        )));
    }
    dir.prune()?;
    Ok(())
}

/// Per point and algorithm, `Reuse::AtMerge` where an earlier point has the same
/// configuration as far as it reaches the algorithm: that point's shard computes its units,
/// and the merge copies them here.
fn left_to_merge(sweep: &Sweep) -> HashMap<String, Vec<Option<Reuse>>> {
    let mut seen = std::collections::HashSet::new();
    sweep
        .points
        .iter()
        .map(|p| {
            let reuse = (0..p.spec.algorithms.len())
                .map(|a| (!seen.insert(reach(&p.spec, a))).then_some(Reuse::AtMerge))
                .collect();
            (p.name.clone(), reuse)
        })
        .collect()
}

/// The points a shard of the sweep touches, each with its share of the point's units
/// (lo..hi in (run, algorithm) order): shard I of N is the I-th of N blocks of all the
/// sweep's units in (point, run, algorithm) order, cut at the points, so it touches few
/// points. Without a shard, every point whole.
fn shard_ranges(sweep: &Sweep, shard: Option<Work>) -> Vec<(&Point, (usize, usize))> {
    let units = |p: &Point| p.spec.runs * p.spec.algorithms.len();
    let total: usize = sweep.points.iter().map(units).sum();
    let (lo, hi) = match shard {
        Some(Work::Shard { index, count }) => crate::run::runner::block(index, count, total),
        _ => (0, total),
    };
    let mut offset = 0;
    let mut out = Vec::new();
    for p in &sweep.points {
        let n = units(p);
        let (a, b) = (lo.max(offset), hi.min(offset + n));
        if a < b {
            let (a, b) = crate::run::runner::whole_runs(&p.spec, (a - offset, b - offset));
            if a < b {
                out.push((p, (a, b)));
            }
        }
        offset += n;
    }
    out
}

/// `fbo sweep SPEC --status`: done, running and missing runs per point.
pub fn status(path: &Path, out: &Path, shard: Option<Work>) -> Result<()> {
    use std::io::Write;
    let sweep = load(path)?;
    crate::run::outdir::check_owner(out, &sweep_identity(path)?.1)?;
    if shard.is_some() {
        refuse_measured_shards(&sweep)?;
    }
    let mut w = std::io::stdout().lock();
    let (mut done, mut running, mut missing) = (0, 0, 0);
    let mut lines = Vec::new();
    let later = left_to_merge(&sweep);
    let mut copied = 0;
    for (point, range) in shard_ranges(&sweep, shard) {
        let pdir = out.join("points").join(&point.name);
        let st = crate::run::runner::status_of(&point.spec, &pdir, range, &later[&point.name]);
        done += st.done.len();
        running += st.running.len();
        missing += st.missing.len();
        copied += st.at_merge.len();
        lines.push(format!(
            "{}: {} done, {} running, {} missing{}",
            point.name,
            st.done.len(),
            st.running.len(),
            st.missing.len(),
            at_merge_note(st.at_merge.len())
        ));
    }
    let _ = writeln!(
        w,
        "{}: {} points; units (seed, algorithm): {done} done, {running} running, {missing} missing{}{}",
        out.display(),
        sweep.points.len(),
        at_merge_note(copied),
        if shard.is_some() {
            ""
        } else if running + missing == 0 {
            " (ready to merge: fbo sweep SPEC --merge)"
        } else {
            ""
        }
    );
    for l in lines {
        if writeln!(w, "{l}").is_err() {
            break;
        }
    }
    Ok(())
}

/// ", N copied by the merge" for units a point takes from an earlier one, or nothing.
fn at_merge_note(n: usize) -> String {
    if n == 0 {
        String::new()
    } else {
        format!(", {n} copied by the merge (the swept keys do not reach their algorithm)")
    }
}

/// Whether an algorithm of some point allocates (`sampling = "allocation"`): its sweep.csv then
/// has an `epsilon_allocation` column after the rate-based ones (only then, so that the
/// other sweeps' files keep their bytes).
fn allocates(sweep: &Sweep) -> bool {
    sweep.points.iter().any(|p| {
        p.spec.algorithms.iter().any(|a| {
            a.server
                .as_ref()
                .and_then(|s| s.dp)
                .is_some_and(|d| matches!(d.sampling, crate::privacy::Sampling::Allocation { .. }))
        })
    })
}

/// sweep.csv's columns: point, the swept keys, then one summary per algorithm.
fn sweep_header(sweep: &Sweep) -> Vec<String> {
    let mut header = vec!["point".to_string()];
    header.extend(sweep.keys.iter().map(|k| csv_escape(k)));
    header.extend(
        [
            "algorithm",
            "runs",
            "mean_best_metric",
            "se_best_metric",
            "mean_simple_regret",
            "se_simple_regret",
            "epsilon_rdp_int",
            "epsilon_rdp",
            "epsilon_pld",
        ]
        .map(String::from),
    );
    if allocates(sweep) {
        header.push("epsilon_allocation".into());
    }
    header.extend(
        [
            "accounted_q",
            "sampling",
            "adjacency",
            "budget_stopped_after",
            "clipped_fraction",
            "wall_s",
            "agents",
            "params_sent",
            "mean_elapsed_s",
            "mean_sim_clock_s",
        ]
        .map(String::from),
    );
    header
}

fn header_fields(sweep: &Sweep) -> usize {
    sweep_header(sweep).len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_reach_nested_tables_and_list_entries() {
        let mut t: toml::Table =
            "a = 1\n[[algorithm]]\nkind = \"ts\"\n[[algorithm]]\nkind = \"x\"\n"
                .parse()
                .unwrap();
        set_path(&mut t, "server.q", toml::Value::Float(0.5)).unwrap();
        set_path(&mut t, "algorithm[1].server.clip", toml::Value::Float(3.0)).unwrap();
        assert_eq!(t["server"]["q"].as_float(), Some(0.5));
        assert_eq!(t["algorithm"][1]["server"]["clip"].as_float(), Some(3.0));
        assert!(
            set_path(&mut t, "algorithm[5].q", toml::Value::Float(1.0))
                .unwrap_err()
                .contains("has 2 entries")
        );
        assert!(
            set_path(&mut t, "a.b", toml::Value::Float(1.0))
                .unwrap_err()
                .contains("not a table")
        );
        assert!(parse_path("x[1").is_none() && parse_path(".x").is_none());
    }
}
