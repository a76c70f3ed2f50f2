//! `fbo compare`: paired comparisons of a run's algorithms against a baseline.
//!
//! Every algorithm of a spec sees the same objectives, seeds and initial points, so its result
//! for a (run, target agent) unit is paired with the baseline's for that unit. The differences
//! per unit, not the spread of the agents, decide.

pub mod stats;

use crate::error::{FboError, Result};
use crate::run::outdir::write_beside;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Bootstrap resamples per comparison by default.
pub const DEFAULT_RESAMPLES: usize = 10_000;
/// Fixed seed of the bootstrap, so compare.csv is reproducible; each comparison gets its own
/// stream derived from it, so the output does not depend on the order or number of threads.
const BOOTSTRAP_SEED: u64 = 0x00c0_ffee;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// The best metric so far (AUC, error, or f for synthetic objectives); better is decided
    /// by best_f, which fbo always maximises.
    BestMetric,
    /// max f - best f: lower is better.
    SimpleRegret,
}

impl Metric {
    pub fn parse(s: &str) -> Option<Metric> {
        match s {
            "best-metric" => Some(Metric::BestMetric),
            "simple-regret" => Some(Metric::SimpleRegret),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Metric::BestMetric => "best-metric",
            Metric::SimpleRegret => "simple-regret",
        }
    }
}

pub struct CompareOptions {
    /// A run's folder (holding trace.csv) or a trace.csv.
    pub input: PathBuf,
    /// More runs of the same algorithms (other objectives: the federations of one skew
    /// type), pooled with `input`: a unit is then (input, run, agent).
    pub pool: Vec<PathBuf>,
    /// Pooled runs: only these (input as given, agent) units (a CSV `input,agent`), e.g. the
    /// tail clients of a federation.
    pub units: Option<PathBuf>,
    pub baseline: Option<String>,
    /// Iterations to compare at; empty: the last iteration.
    pub at: Vec<i64>,
    /// Simulated times (seconds) to compare at instead (`sim_clock_s`): each unit's value
    /// after its last evaluation finished by then.
    pub at_clock: Vec<f64>,
    pub metric: Metric,
    pub resamples: usize,
    pub markdown: bool,
    /// Print CSV (compare.csv's columns) instead of the table.
    pub csv: bool,
    /// The accountant whose epsilon orders a sweep's points for the trend.
    pub accountant: crate::privacy::Accountant,
    /// Accept units whose initial points differ (an algorithm that picks its own, such as
    /// DP-FTS-DE with sub-region initialisation): they stay paired by seed and objective.
    pub allow_init_differences: bool,
}

/// One unit's values at one iteration: (metric value, best_f).
type Unit = (u64, u64); // (run, agent)

struct Trace {
    algorithms: Vec<String>,
    /// (algorithm, iteration) -> unit -> (value of the metric, best_f)
    values: BTreeMap<(usize, i64), BTreeMap<Unit, (f64, f64)>>,
    /// algorithm -> unit -> initial points in order (grid index and unit coordinates, as
    /// written)
    init: Vec<BTreeMap<Unit, Vec<String>>>,
    last_iteration: i64,
}

/// A CSV reader and a lookup of its columns by name; errors name the file and say what kind
/// of file was expected (input errors: exit 2).
fn open_csv(
    path: &Path,
    kind: &'static str,
) -> Result<(
    csv::Reader<std::fs::File>,
    impl Fn(&str) -> Result<usize> + use<>,
)> {
    let bad = |msg: String| FboError::spec(path, "", msg);
    let mut rdr = csv::Reader::from_path(path).map_err(|e| bad(e.to_string()))?;
    let headers = rdr.headers().map_err(|e| bad(e.to_string()))?.clone();
    let path = path.to_path_buf();
    let col = move |name: &str| {
        headers
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| FboError::spec(&path, "", format!("not {kind}: no column `{name}`")))
    };
    Ok((rdr, col))
}

/// Whether a larger value of the compared column is better. best_f is fbo's maximised scale,
/// so the best metric's direction is the sign of metric / best_f on any row where both are
/// non-zero; simple regret is always better lower.
fn higher_is_better(t: &Trace, metric: Metric) -> Option<bool> {
    if metric == Metric::SimpleRegret {
        return Some(false);
    }
    t.values
        .values()
        .flat_map(|units| units.values())
        .find(|(v, f)| *v != 0.0 && *f != 0.0 && v.is_finite() && f.is_finite())
        .map(|(v, f)| (v / f) > 0.0)
}

/// (algorithm, j, unit) -> (iteration, value, best_f) of the unit's latest evaluation
/// finished by the j-th time of `--at-clock`.
type ByClock = BTreeMap<(usize, usize, Unit), (i64, f64, f64)>;

/// The trace's values by iteration; with `at_clock` instead, by simulated time: pseudo-
/// iteration j + 1 holds each unit's value after its last evaluation finished by
/// `at_clock[j]` seconds (`sim_clock_s`, initial points included).
fn read_trace(path: &Path, metric: Metric, at_clock: &[f64]) -> Result<Trace> {
    let bad = |msg: String| FboError::spec(path, "", msg);
    let (mut rdr, col) = open_csv(path, "a trace.csv")?;
    let value_col = col(match metric {
        Metric::BestMetric => "best_metric",
        Metric::SimpleRegret => "simple_regret",
    })?;
    let (c_alg, c_run, c_agent, c_it, c_x, c_bf) = (
        col("algorithm")?,
        col("run")?,
        col("agent")?,
        col("iteration")?,
        col("x_index")?,
        col("best_f")?,
    );
    // The unit coordinates follow x_index: on a box they identify the point.
    let unit = crate::run::output::unit_column_of(|n| col(n).is_ok());
    let mut c_coords = Vec::new();
    while let Ok(c) = col(&unit(c_coords.len())) {
        c_coords.push(c);
    }
    let mut t = Trace {
        algorithms: Vec::new(),
        values: BTreeMap::new(),
        init: Vec::new(),
        last_iteration: i64::MIN,
    };
    let c_clock = if at_clock.is_empty() {
        None
    } else {
        Some(col("sim_clock_s")?)
    };
    // (algorithm, j, unit) -> (iteration, value, best_f) of the latest evaluation by at_clock[j].
    let mut by_clock: ByClock = BTreeMap::new();
    for (line, rec) in rdr.records().enumerate() {
        let rec = rec.map_err(|e| bad(e.to_string()))?;
        let num = |c: usize| -> Result<f64> {
            rec[c]
                .parse::<f64>()
                .map_err(|_| bad(format!("row {}: `{}` is not a number", line + 2, &rec[c])))
        };
        let alg = &rec[c_alg];
        let a = match t.algorithms.iter().position(|x| x == alg) {
            Some(a) => a,
            None => {
                t.algorithms.push(alg.to_string());
                t.init.push(BTreeMap::new());
                t.algorithms.len() - 1
            }
        };
        let unit = (num(c_run)? as u64, num(c_agent)? as u64);
        let it = num(c_it)? as i64;
        if let Some(c) = c_clock {
            if rec[c].is_empty() {
                return Err(bad(format!(
                    "row {}: no sim_clock_s (the run had no [clock] and output.timing was off); --at-clock needs one",
                    line + 2
                )));
            }
            let (clock, value, best_f) = (num(c)?, num(value_col)?, num(c_bf)?);
            for (j, &limit) in at_clock.iter().enumerate() {
                let e = by_clock.entry((a, j, unit)).or_insert((i64::MIN, 0.0, 0.0));
                if clock <= limit && it > e.0 {
                    *e = (it, value, best_f);
                }
            }
        }
        if it <= 0 {
            let point = std::iter::once(c_x)
                .chain(c_coords.iter().copied())
                .map(|c| &rec[c])
                .collect::<Vec<_>>()
                .join(" ");
            t.init[a].entry(unit).or_default().push(point);
            continue;
        }
        t.last_iteration = t.last_iteration.max(it);
        if rec[value_col].is_empty() && metric == Metric::SimpleRegret {
            return Err(bad(format!(
                "row {}: no simple regret (the objective's maximum is unknown, as for live models); compare with --metric best-metric",
                line + 2
            )));
        }
        t.values
            .entry((a, it))
            .or_default()
            .insert(unit, (num(value_col)?, num(c_bf)?));
    }
    if t.algorithms.is_empty() {
        return Err(bad("holds no rows".into()));
    }
    if !at_clock.is_empty() {
        values_at_clock(&mut t, by_clock, at_clock, path)?;
    }
    Ok(t)
}

/// The trace's values by simulated time (`fbo compare --at-clock`): pseudo-iteration j + 1
/// holds each unit's latest value by `at_clock[j]` (`by_clock`, keyed by (algorithm, j, unit)).
fn values_at_clock(t: &mut Trace, by_clock: ByClock, at_clock: &[f64], path: &Path) -> Result<()> {
    // A unit that has finished nothing by a time in some algorithm (a slow site still on
    // its initial points) has no value there: it is left out of that time's pairs.
    let empty: BTreeSet<(usize, Unit)> = by_clock
        .iter()
        .filter(|(_, v)| v.0 == i64::MIN)
        .map(|((_, j, unit), _)| (*j, *unit))
        .collect();
    t.values.clear();
    for ((a, j, unit), (_, value, best_f)) in by_clock {
        if !empty.contains(&(j, unit)) {
            t.values
                .entry((a, j as i64 + 1))
                .or_default()
                .insert(unit, (value, best_f));
        }
    }
    if let Some(j) = (0..at_clock.len()).find(|&j| !t.values.contains_key(&(0, j as i64 + 1))) {
        return Err(FboError::spec(
            path,
            "--at-clock",
            format!(
                "no agent has finished an evaluation in every algorithm by {} s; compare at a later time",
                at_clock[j]
            ),
        ));
    }
    t.last_iteration = at_clock.len() as i64;
    Ok(())
}

/// One row of compare.csv.
#[derive(Clone, Debug)]
pub struct Comparison {
    pub iteration: i64,
    /// With `--at-clock`: the simulated time compared at (`iteration` is then its index).
    pub clock_s: Option<f64>,
    pub algorithm: String,
    pub n: usize,
    pub mean_diff: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub wins: usize,
    pub ties: usize,
    pub losses: usize,
    pub p: f64,
    pub p_holm: f64,
    pub method: stats::WilcoxonMethod,
}

/// The paired comparisons of every algorithm against the baseline at each requested
/// iteration, with Holm's adjustment over all of them. A sweep's folder (with sweep.csv)
/// compares each point with the reference point instead, algorithm by algorithm, and adds the
/// trend of the metric on epsilon.
pub fn compare(opts: &CompareOptions) -> Result<Report> {
    if let Some(c) = opts
        .at_clock
        .iter()
        .find(|c| !(c.is_finite() && **c >= 0.0))
    {
        return Err(FboError::spec(
            &opts.input,
            "--at-clock",
            format!("times must be finite seconds >= 0, got {c}"),
        ));
    }
    if !opts.at_clock.is_empty() && opts.input.is_dir() && opts.input.join("sweep.csv").is_file() {
        return Err(FboError::spec(
            &opts.input,
            "--at-clock",
            "applies to a run's trace, not to a sweep's points",
        ));
    }
    if !opts.pool.is_empty() || opts.units.is_some() {
        return compare_pooled(opts);
    }
    if opts.input.is_dir() && opts.input.join("sweep.csv").is_file() {
        return compare_sweep(opts);
    }
    let path = if opts.input.is_dir() {
        opts.input.join("trace.csv")
    } else {
        opts.input.clone()
    };
    let t = read_trace(&path, opts.metric, &opts.at_clock)?;
    if t.algorithms.len() < 2 {
        return Err(FboError::spec(
            &path,
            "",
            format!(
                "holds one algorithm ({}): there is nothing to compare it with; run a spec with two or more algorithms",
                t.algorithms[0]
            ),
        ));
    }
    report(&t, opts, &path, opts.allow_init_differences)
}

/// Every series of `t` against its baseline, Holm-adjusted over them all, as a report.
fn report(t: &Trace, opts: &CompareOptions, path: &Path, allow_init: bool) -> Result<Report> {
    let base = baseline_index(t, opts, path)?;
    let mut rows = compare_trace(t, base, opts, path, allow_init)?;
    adjust(&mut rows);
    Ok(Report {
        baseline: t.algorithms[base].clone(),
        higher_is_better: higher_is_better(t, opts.metric),
        rows,
        trends: Vec::new(),
    })
}

fn trace_of(input: &Path) -> PathBuf {
    if input.is_dir() {
        input.join("trace.csv")
    } else {
        input.to_path_buf()
    }
}

/// The (input as written, agent) units of a `--units` file.
fn read_units(path: &Path) -> Result<BTreeSet<(String, u64)>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| FboError::spec(path, "--units", format!("cannot read: {e}")))?;
    let mut out = BTreeSet::new();
    for (k, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || (k == 0 && line == "input,agent") {
            continue;
        }
        let bad = || {
            FboError::spec(
                path,
                format!("line {}", k + 1),
                format!(
                    "expected `input,agent` (an input as given to compare, an agent number), got {line:?}"
                ),
            )
        };
        let (input, agent) = line.rsplit_once(',').ok_or_else(bad)?;
        out.insert((input.to_string(), agent.trim().parse().map_err(|_| bad())?));
    }
    Ok(out)
}

/// Several runs of the same algorithms pooled: each is checked for pairing on its own (same
/// units and initial points across algorithms), then its units join the pool as
/// (input, run, agent), optionally only those `--units` lists.
fn compare_pooled(opts: &CompareOptions) -> Result<Report> {
    let inputs: Vec<&PathBuf> = std::iter::once(&opts.input).chain(&opts.pool).collect();
    let keep = opts.units.as_deref().map(read_units).transpose()?;
    let mut pooled: Option<Trace> = None;
    let first = trace_of(inputs[0]);
    for (i, input) in inputs.iter().enumerate() {
        let path = trace_of(input);
        let t = read_trace(&path, opts.metric, &opts.at_clock)?;
        if let Some(p) = &pooled
            && (p.algorithms != t.algorithms || p.last_iteration != t.last_iteration)
        {
            return Err(FboError::spec(
                &path,
                "",
                format!(
                    "cannot pool with {}: the algorithms or iterations differ (pooled runs must come from one spec)",
                    first.display()
                ),
            ));
        }
        let base = baseline_index(&t, opts, &path)?;
        let others: Vec<usize> = (0..t.algorithms.len()).filter(|&a| a != base).collect();
        let at = iterations_at(&t, opts, &path)?;
        check_paired(&t, base, &others, &at, opts.allow_init_differences, &path)?;
        let name = input.to_string_lossy().into_owned();
        let kept = |u: &Unit| {
            keep.as_ref()
                .is_none_or(|k| k.contains(&(name.clone(), u.1)))
        };
        // Runs of input i become i * 2^32 + run: units of different inputs never meet.
        let rekey = |u: &Unit| (((i as u64) << 32) | u.0, u.1);
        let p = pooled.get_or_insert_with(|| Trace {
            algorithms: t.algorithms.clone(),
            values: BTreeMap::new(),
            init: vec![BTreeMap::new(); t.algorithms.len()],
            last_iteration: t.last_iteration,
        });
        for (key, units) in &t.values {
            let slot = p.values.entry(*key).or_default();
            for (u, v) in units.iter().filter(|(u, _)| kept(u)) {
                slot.insert(rekey(u), *v);
            }
        }
        for (a, units) in t.init.iter().enumerate() {
            for (u, x) in units.iter().filter(|(u, _)| kept(u)) {
                p.init[a].insert(rekey(u), x.clone());
            }
        }
    }
    let t = pooled.expect("at least one input");
    if t.values.values().all(|m| m.is_empty()) {
        return Err(FboError::spec(
            opts.units.as_deref().unwrap_or(&first),
            "--units",
            "no unit of the inputs is listed: each line is an input exactly as given to compare, and an agent",
        ));
    }
    // Pairing was checked input by input above.
    report(&t, opts, &first, true)
}

fn baseline_index(t: &Trace, opts: &CompareOptions, path: &Path) -> Result<usize> {
    match &opts.baseline {
        None => Ok(0),
        Some(b) => t.algorithms.iter().position(|a| a == b).ok_or_else(|| {
            FboError::spec(
                path,
                "--baseline",
                format!(
                    "no algorithm \"{b}\" here; it has: {}",
                    t.algorithms.join(", ")
                ),
            )
        }),
    }
}

/// The iterations to compare at: `--at`, checked against the trace, or its last.
fn iterations_at(t: &Trace, opts: &CompareOptions, path: &Path) -> Result<Vec<i64>> {
    if !opts.at_clock.is_empty() {
        return Ok((1..=opts.at_clock.len() as i64).collect());
    }
    if opts.at.is_empty() {
        return Ok(vec![t.last_iteration]);
    }
    for &i in &opts.at {
        if i < 1 || i > t.last_iteration {
            return Err(FboError::spec(
                path,
                "--at",
                format!(
                    "iteration {i} is not in the trace (1..={})",
                    t.last_iteration
                ),
            ));
        }
    }
    Ok(opts.at.clone())
}

/// What `compare` found.
pub struct Report {
    pub baseline: String,
    /// Whether a larger difference is better: false for simple regret; for the best metric
    /// the metric's own direction (an error rate or a minimised command's value is better
    /// lower), read off the trace; None where the trace cannot tell (every value 0).
    pub higher_is_better: Option<bool>,
    pub rows: Vec<Comparison>,
    /// Sweeps only: the metric's trend on epsilon, per algorithm.
    pub trends: Vec<Trend>,
}

fn adjust(rows: &mut [Comparison]) {
    let adjusted = stats::holm(&rows.iter().map(|r| r.p).collect::<Vec<_>>());
    for (r, p) in rows.iter_mut().zip(adjusted) {
        r.p_holm = p;
    }
}

/// What makes `others` and `base` paired at the iterations `at`: the same (run, agent) units,
/// the same initial points unit by unit (unless `allow_init_differences`), and a finite value
/// for every unit (an agent whose every evaluation failed has none). `compare`, `plot
/// difference` and `plot ranks` refuse the same inputs.
fn check_paired(
    t: &Trace,
    base: usize,
    others: &[usize],
    at: &[i64],
    allow_init_differences: bool,
    path: &Path,
) -> Result<()> {
    // Pairing: the same units, and the same initial points unit by unit, as the baseline.
    let units = |a: usize, it: i64| -> BTreeSet<Unit> {
        t.values
            .get(&(a, it))
            .map(|m| m.keys().copied().collect())
            .unwrap_or_default()
    };
    for &a in others {
        for &it in at {
            let (ub, ua) = (units(base, it), units(a, it));
            if ub != ua {
                let only: Vec<String> = ub
                    .symmetric_difference(&ua)
                    .take(5)
                    .map(|(r, g)| format!("run {r} agent {g}"))
                    .collect();
                return Err(FboError::spec(
                    path,
                    "",
                    format!(
                        "unpaired input: {} and {} do not cover the same (run, agent) units at iteration {it} (e.g. {})",
                        t.algorithms[a],
                        t.algorithms[base],
                        only.join(", ")
                    ),
                ));
            }
        }
        if let Some((unit, _)) = t.init[base]
            .iter()
            .find(|(u, x)| t.init[a].get(u).is_some_and(|y| y != *x))
            .filter(|_| !allow_init_differences)
        {
            return Err(FboError::spec(
                path,
                "",
                format!(
                    "unpaired input: {} and {} start run {} agent {} from different initial points, so their differences are not paired (if the algorithm chooses its own initial points by design, as DP-FTS-DE's sub-region initialisation does, pass --allow-init-differences: units then stay paired by seed and objective)",
                    t.algorithms[a], t.algorithms[base], unit.0, unit.1
                ),
            ));
        }
    }
    for &a in std::iter::once(&base).chain(others) {
        for &it in at {
            let Some(values) = t.values.get(&(a, it)) else {
                continue;
            };
            if let Some(((r, g), _)) = values
                .iter()
                .find(|(_, (v, f))| !v.is_finite() || !f.is_finite())
            {
                return Err(FboError::spec(
                    path,
                    "",
                    format!(
                        "{} run {r} agent {g} has no finite value at iteration {it} (did every evaluation of that agent fail?); statistics over it would be NaN: rerun the failed evaluations, or compare at an iteration where every unit has a value",
                        t.algorithms[a]
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Every series of `t` against series `base`: pairing checks, then the statistics (Holm is
/// applied by the caller, over everything it shows).
fn compare_trace(
    t: &Trace,
    base: usize,
    opts: &CompareOptions,
    path: &Path,
    allow_init: bool,
) -> Result<Vec<Comparison>> {
    let at = iterations_at(t, opts, path)?;
    let others: Vec<usize> = (0..t.algorithms.len()).filter(|&a| a != base).collect();
    check_paired(t, base, &others, &at, allow_init, path)?;
    let mut rows = Vec::new();
    for &it in &at {
        for &a in &others {
            let (Some(vb), Some(va)) = (t.values.get(&(base, it)), t.values.get(&(a, it))) else {
                return Err(FboError::spec(
                    path,
                    "--at",
                    format!(
                        "{} or {} has no rows at iteration {it}",
                        t.algorithms[a], t.algorithms[base]
                    ),
                ));
            };
            let mut diffs = Vec::with_capacity(vb.len());
            let (mut wins, mut ties, mut losses) = (0, 0, 0);
            for (u, &(b_val, b_f)) in vb {
                let (a_val, a_f) = va[u];
                diffs.push(a_val - b_val);
                // Better: higher best_f, or lower simple regret.
                let gain = match opts.metric {
                    Metric::BestMetric => a_f - b_f,
                    Metric::SimpleRegret => b_val - a_val,
                };
                match gain.partial_cmp(&0.0) {
                    Some(std::cmp::Ordering::Greater) => wins += 1,
                    Some(std::cmp::Ordering::Less) => losses += 1,
                    _ => ties += 1,
                }
            }
            let n = diffs.len();
            let mean_diff = diffs.iter().sum::<f64>() / n as f64;
            let mut rng = crate::math::rng::stream(
                BOOTSTRAP_SEED,
                it as u64,
                a as u64,
                crate::math::rng::Purpose::Compare,
            );
            let (ci_low, ci_high) =
                stats::bootstrap_mean_ci(&diffs, opts.resamples, 0.95, &mut rng);
            let w = stats::wilcoxon(&diffs);
            rows.push(Comparison {
                iteration: it,
                clock_s: (!opts.at_clock.is_empty()).then(|| opts.at_clock[it as usize - 1]),
                algorithm: t.algorithms[a].clone(),
                n,
                mean_diff,
                ci_low,
                ci_high,
                wins,
                ties,
                losses,
                p: w.p,
                p_holm: 0.0,
                method: w.method,
            });
        }
    }
    Ok(rows)
}

/// A sweep's trend: the least-squares slope of the mean metric over the paired units on the
/// points' epsilon, with a bootstrap interval over units.
#[derive(Clone, Debug)]
pub struct Trend {
    pub algorithm: String,
    pub iteration: i64,
    pub points: usize,
    pub n: usize,
    pub epsilon_min: f64,
    pub epsilon_max: f64,
    pub slope: f64,
    pub ci_low: f64,
    pub ci_high: f64,
}

/// A sweep's point: its name, its swept values, and [(label, epsilon)] in the spec's
/// algorithm order.
type SweepPoint = (String, String, Vec<(String, Option<f64>)>);

fn compare_sweep(opts: &CompareOptions) -> Result<Report> {
    let sweep_path = opts.input.join("sweep.csv");
    let bad = |msg: String| FboError::spec(&sweep_path, "", msg);
    let (points, base) = sweep_points(opts, &sweep_path)?;
    let traces: Vec<Trace> = points
        .iter()
        .map(|p| {
            read_trace(
                &opts.input.join("points").join(&p.0).join("trace.csv"),
                opts.metric,
                &[],
            )
        })
        .collect::<Result<_>>()?;
    let n_alg = traces[base].algorithms.len();
    let mut rows = Vec::new();
    let mut trends = Vec::new();
    for k in 0..n_alg {
        if let Some(p) = traces.iter().position(|tr| tr.algorithms.len() != n_alg) {
            return Err(bad(format!(
                "point {} has {} algorithms, point {} has {n_alg}: not one spec's sweep",
                points[p].0,
                traces[p].algorithms.len(),
                points[base].0
            )));
        }
        let (t, base_in_kept) = across_points(k, &points, &traces, base);
        if t.algorithms.len() > 1 {
            rows.extend(compare_trace(
                &t,
                base_in_kept,
                opts,
                &sweep_path,
                opts.allow_init_differences,
            )?);
        }
        let it = opts.at.last().copied().unwrap_or(t.last_iteration);
        trends.extend(epsilon_trend(k, it, &points, &traces, base, opts));
    }
    adjust(&mut rows);
    Ok(Report {
        baseline: format!("{} ({})", points[base].0, points[base].1),
        higher_is_better: higher_is_better(&traces[base], opts.metric),
        rows,
        trends,
    })
}

/// The finished points of a sweep.csv, in its order, and the index of the baseline
/// (`--baseline`, else the first).
fn sweep_points(opts: &CompareOptions, sweep_path: &Path) -> Result<(Vec<SweepPoint>, usize)> {
    let bad = |msg: String| FboError::spec(sweep_path, "", msg);
    let (mut rdr, col) = open_csv(sweep_path, "an fbo sweep.csv")?;
    let headers = rdr.headers().map_err(|e| bad(e.to_string()))?.clone();
    let c_alg = col("algorithm")?;
    let eps_name = format!("epsilon_{}", opts.accountant.name().replace('-', "_"));
    let c_eps = col(&eps_name)?;
    let mut points: Vec<SweepPoint> = Vec::new();
    for rec in rdr.records() {
        let rec = rec.map_err(|e| bad(e.to_string()))?;
        let name = rec[0].to_string();
        let values: Vec<String> = (1..c_alg)
            .map(|i| format!("{}={}", &headers[i], &rec[i]))
            .collect();
        let eps = rec[c_eps].parse::<f64>().ok();
        match points.iter_mut().find(|p| p.0 == name) {
            Some(p) => p.2.push((rec[c_alg].to_string(), eps)),
            None => points.push((name, values.join(" "), vec![(rec[c_alg].to_string(), eps)])),
        }
    }
    if points.len() < 2 {
        return Err(bad(
            "a sweep needs at least two finished points to compare".into()
        ));
    }
    let base = match &opts.baseline {
        None => 0,
        Some(b) => points.iter().position(|p| &p.0 == b).ok_or_else(|| {
            FboError::spec(
                sweep_path,
                "--baseline",
                format!(
                    "no point \"{b}\" in this sweep; it has: {}",
                    points
                        .iter()
                        .map(|p| p.0.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })?,
    };
    Ok((points, base))
}

/// Algorithm k across the points as one trace, a series per point (the baseline's index in
/// it second), leaving out the points where it gives the baseline's results exactly.
fn across_points(k: usize, points: &[SweepPoint], traces: &[Trace], base: usize) -> (Trace, usize) {
    // Algorithm k's values at one point, to tell where the swept keys did not reach it.
    let of = |tr: &Trace| -> Vec<_> {
        tr.values
            .iter()
            .filter(|((a, _), _)| *a == k)
            .map(|((_, it), m)| (*it, m.clone()))
            .collect()
    };
    let at_base = of(&traces[base]);
    // Points where it gives the base point's results exactly (the swept keys do not
    // reach it): differences of zero, not tested, and not counted in Holm's correction.
    let kept: Vec<usize> = (0..points.len())
        .filter(|&i| i == base || of(&traces[i]) != at_base)
        .collect();
    if kept.len() == 1 {
        eprintln!(
            "note: {} gives the same results at every point (the swept keys do not reach it): left out of the comparisons",
            traces[base].algorithms[k]
        );
    }
    // One series per point: algorithm k of that point.
    let mut t = Trace {
        algorithms: Vec::new(),
        values: BTreeMap::new(),
        init: Vec::new(),
        last_iteration: traces[base].last_iteration,
    };
    for (j, &i) in kept.iter().enumerate() {
        let (p, tr) = (&points[i], &traces[i]);
        t.algorithms
            .push(format!("{} ({}): {}", p.0, p.1, tr.algorithms[k]));
        t.init.push(tr.init[k].clone());
        for ((a, it), m) in &tr.values {
            if *a == k {
                t.values.insert((j, *it), m.clone());
            }
        }
    }
    let base_in_kept = kept.iter().position(|&i| i == base).expect("base kept");
    (t, base_in_kept)
}

/// Algorithm k's trend of the metric at iteration `it` against epsilon over the points
/// where it has one (at least two different), with a bootstrap interval over the units.
fn epsilon_trend(
    k: usize,
    it: i64,
    points: &[SweepPoint],
    traces: &[Trace],
    base: usize,
    opts: &CompareOptions,
) -> Option<Trend> {
    let with_eps: Vec<(usize, f64)> = points
        .iter()
        .enumerate()
        .filter_map(|(i, p)| p.2.get(k).and_then(|(_, e)| *e).map(|e| (i, e)))
        .filter(|(_, e)| e.is_finite())
        .collect();
    let eps: Vec<f64> = with_eps.iter().map(|&(_, e)| e).collect();
    if with_eps.len() >= 2 && eps.iter().any(|&e| e != eps[0]) {
        // units x points matrix of the metric (the units are the same at every point:
        // compare_trace checked that).
        let units: Vec<Unit> = traces[with_eps[0].0].values[&(k, it)]
            .keys()
            .copied()
            .collect();
        let y: Vec<Vec<f64>> = with_eps
            .iter()
            .map(|&(i, _)| {
                units
                    .iter()
                    .map(|u| traces[i].values[&(k, it)][u].0)
                    .collect()
            })
            .collect();
        let slope_of = |idx: &[usize]| {
            let means: Vec<f64> = y
                .iter()
                .map(|col| idx.iter().map(|&u| col[u]).sum::<f64>() / idx.len() as f64)
                .collect();
            stats::slope(&eps, &means)
        };
        let all: Vec<usize> = (0..units.len()).collect();
        let mut rng = crate::math::rng::stream(
            BOOTSTRAP_SEED,
            it as u64,
            (1 << 32) + k as u64,
            crate::math::rng::Purpose::Compare,
        );
        let (lo, hi) =
            stats::bootstrap_units_ci(units.len(), opts.resamples, 0.95, &mut rng, slope_of);
        return Some(Trend {
            algorithm: traces[base].algorithms[k].clone(),
            iteration: it,
            points: with_eps.len(),
            n: units.len(),
            epsilon_min: eps.iter().cloned().fold(f64::INFINITY, f64::min),
            epsilon_max: eps.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
            slope: slope_of(&all),
            ci_low: lo,
            ci_high: hi,
        });
    }
    None
}

pub fn trend_csv(metric: Metric, trends: &[Trend]) -> String {
    let mut out = String::from(
        "metric,iteration,algorithm,points,n,epsilon_min,epsilon_max,slope,ci_low,ci_high\n",
    );
    for t in trends {
        out += &format!(
            "{},{},{},{},{},{},{},{},{},{}\n",
            metric.name(),
            t.iteration,
            crate::run::sweep::csv_escape(&t.algorithm),
            t.points,
            t.n,
            t.epsilon_min,
            t.epsilon_max,
            t.slope,
            t.ci_low,
            t.ci_high
        );
    }
    out
}

pub fn trend_table(metric: Metric, trends: &[Trend], markdown: bool) -> String {
    let mut out = format!(
        "\nTrend of {} on epsilon across the points (least-squares slope of the mean over the paired units, per unit of epsilon; 95% bootstrap interval over units):\n",
        metric.name()
    );
    if markdown {
        out += "\n| algorithm (reference point's label) | iteration | points | epsilon | slope | 95% CI |\n|---|---|---|---|---|---|\n";
    }
    for t in trends {
        let cells = [
            t.algorithm.clone(),
            t.iteration.to_string(),
            t.points.to_string(),
            // Each is an upper bound on a point's epsilon: rounded up, it stays one.
            format!(
                "{}-{}",
                crate::privacy::show_upper(t.epsilon_min, 2),
                crate::privacy::show_upper(t.epsilon_max, 2)
            ),
            format!("{:+.3e}", t.slope),
            format!("[{:+.3e}, {:+.3e}]", t.ci_low, t.ci_high),
        ];
        if markdown {
            out += &format!("| {} |\n", cells.join(" | "));
        } else {
            out += &format!(
                "  {}: iteration {}, {} points, epsilon {}: slope {} {}\n",
                cells[0], cells[1], cells[2], cells[3], cells[4], cells[5]
            );
        }
    }
    out
}

/// One algorithm's curve against iteration: (iteration, value, band low, band high).
pub type Curve = (String, Vec<(i64, f64, f64, f64)>);

/// `fbo plot difference`: for every algorithm but the baseline, the paired mean difference to
/// the baseline at each iteration 1..=T with its 95% bootstrap interval. Returns the
/// baseline's label and the curves.
pub fn difference_curves(
    trace: &Path,
    baseline: Option<&str>,
    metric: Metric,
    resamples: usize,
) -> Result<(String, Vec<Curve>)> {
    let t = read_trace(trace, metric, &[])?;
    let base = match baseline {
        None => 0,
        Some(b) => t.algorithms.iter().position(|a| a == b).ok_or_else(|| {
            FboError::spec(
                trace,
                "--baseline",
                format!(
                    "no algorithm \"{b}\" here; it has: {}",
                    t.algorithms.join(", ")
                ),
            )
        })?,
    };
    let opts = CompareOptions {
        input: trace.to_path_buf(),
        pool: Vec::new(),
        units: None,
        baseline: None,
        at: (1..=t.last_iteration).collect(),
        at_clock: Vec::new(),
        metric,
        resamples,
        markdown: false,
        csv: false,
        accountant: crate::privacy::Accountant::RdpInt,
        // A picture of differences over time: the pairing by seed and objective is what
        // matters, and the DP protocol's algorithms start from their own sub-regions.
        allow_init_differences: true,
    };
    let rows = compare_trace(&t, base, &opts, trace, opts.allow_init_differences)?;
    let mut curves: Vec<Curve> = Vec::new();
    for r in rows {
        match curves.iter_mut().find(|c| c.0 == r.algorithm) {
            Some(c) => c.1.push((r.iteration, r.mean_diff, r.ci_low, r.ci_high)),
            None => curves.push((
                r.algorithm.clone(),
                vec![(r.iteration, r.mean_diff, r.ci_low, r.ci_high)],
            )),
        }
    }
    Ok((t.algorithms[base].clone(), curves))
}

/// `fbo plot ranks`: each algorithm's mean rank over the (run, agent) units at every iteration
/// (1 = best; ties share their average rank; better = higher best f or lower simple regret),
/// among `among` (labels; empty: every algorithm of the trace). Refused, as by `compare`,
/// unless every algorithm covers the same units with finite values.
pub fn rank_curves(trace: &Path, metric: Metric, among: &[String]) -> Result<Vec<Curve>> {
    let t = read_trace(trace, metric, &[])?;
    let chosen: Vec<usize> = if among.is_empty() {
        (0..t.algorithms.len()).collect()
    } else {
        among
            .iter()
            .map(|l| {
                t.algorithms.iter().position(|a| a == l).ok_or_else(|| {
                    FboError::spec(
                        trace,
                        "--algorithms",
                        format!(
                            "no algorithm \"{l}\" here; it has: {}",
                            t.algorithms.join(", ")
                        ),
                    )
                })
            })
            .collect::<Result<_>>()?
    };
    // Ranks are comparisons too: only of paired units, as `compare` requires (initial
    // points may differ by design, as for `plot difference`).
    let at: Vec<i64> = (1..=t.last_iteration).collect();
    check_paired(&t, chosen[0], &chosen[1..], &at, true, trace)?;
    let k = chosen.len();
    let mut curves: Vec<Curve> = chosen
        .iter()
        .map(|&a| (t.algorithms[a].clone(), Vec::new()))
        .collect();
    for it in 1..=t.last_iteration {
        let Some(first) = t.values.get(&(chosen[0], it)) else {
            continue;
        };
        let mut sums = vec![0.0; k];
        let mut n = 0usize;
        for u in first.keys() {
            let Some(goodness) = chosen
                .iter()
                .map(|&a| {
                    t.values
                        .get(&(a, it))
                        .and_then(|m| m.get(u))
                        .map(|&(v, f)| match metric {
                            Metric::BestMetric => f,
                            Metric::SimpleRegret => -v,
                        })
                })
                .collect::<Option<Vec<f64>>>()
            else {
                continue;
            };
            for (a, g) in goodness.iter().enumerate() {
                let better = goodness.iter().filter(|&&x| x > *g).count() as f64;
                let equal = goodness.iter().filter(|&&x| x == *g).count() as f64;
                sums[a] += better + (equal + 1.0) / 2.0;
            }
            n += 1;
        }
        if n > 0 {
            for (a, c) in curves.iter_mut().enumerate() {
                let r = sums[a] / n as f64;
                c.1.push((it, r, r, r));
            }
        }
    }
    Ok(curves)
}

pub const CSV_HEADER: &str = "metric,iteration,algorithm,baseline,n,mean_diff,ci_low,ci_high,wins,ties,losses,p_value,p_holm,p_method\n";

pub fn to_csv(metric: Metric, baseline: &str, rows: &[Comparison]) -> String {
    // Compared at simulated times, the second column holds them.
    let mut out = match rows.first().and_then(|r| r.clock_s) {
        Some(_) => CSV_HEADER.replacen("iteration", "clock_s", 1),
        None => String::from(CSV_HEADER),
    };
    for r in rows {
        out += &format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
            metric.name(),
            r.clock_s
                .map_or_else(|| r.iteration.to_string(), |c| c.to_string()),
            crate::run::sweep::csv_escape(&r.algorithm),
            crate::run::sweep::csv_escape(baseline),
            r.n,
            r.mean_diff,
            r.ci_low,
            r.ci_high,
            r.wins,
            r.ties,
            r.losses,
            r.p,
            r.p_holm,
            r.method.name()
        );
    }
    out
}

/// Three significant digits, in scientific notation below 1e-3.
fn fmt_p(p: f64) -> String {
    if p < 1e-3 {
        format!("{p:.2e}")
    } else {
        format!("{p:.3}")
    }
}

/// The table for people: aligned text, or Markdown.
pub fn to_table(
    metric: Metric,
    baseline: &str,
    higher_is_better: Option<bool>,
    rows: &[Comparison],
    markdown: bool,
) -> String {
    let clock = rows.first().is_some_and(|r| r.clock_s.is_some());
    let head = [
        if clock { "clock (s)" } else { "iteration" },
        "algorithm",
        "n",
        "mean diff",
        "95% CI",
        "win/tie/loss",
        "p (Wilcoxon)",
        "p (Holm)",
    ];
    let body: Vec<[String; 8]> = rows
        .iter()
        .map(|r| {
            [
                r.clock_s
                    .map_or_else(|| r.iteration.to_string(), |c| c.to_string()),
                r.algorithm.clone(),
                r.n.to_string(),
                format!("{:+.4}", r.mean_diff),
                format!("[{:+.4}, {:+.4}]", r.ci_low, r.ci_high),
                format!("{}/{}/{}", r.wins, r.ties, r.losses),
                format!(
                    "{}{}",
                    fmt_p(r.p),
                    if r.method == stats::WilcoxonMethod::Exact {
                        " (exact)"
                    } else {
                        ""
                    }
                ),
                fmt_p(r.p_holm),
            ]
        })
        .collect();
    let better = match higher_is_better {
        Some(true) => "; higher is better",
        Some(false) => "; lower is better",
        None => "",
    };
    let mut out = format!(
        "{} against {baseline} (difference = algorithm - baseline{better}, paired over run x agent; win/tie/loss by the better direction):\n\n",
        metric.name()
    );
    if markdown {
        out += &format!("| {} |\n", head.join(" | "));
        out += &format!("|{}\n", "---|".repeat(head.len()));
        for r in &body {
            out += &format!("| {} |\n", r.join(" | "));
        }
    } else {
        let widths: Vec<usize> = (0..head.len())
            .map(|i| {
                body.iter()
                    .map(|r| r[i].len())
                    .chain([head[i].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: Vec<&str>| {
            cells
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c:<w$}"))
                .collect::<Vec<_>>()
                .join("  ")
                .trim_end()
                .to_string()
                + "\n"
        };
        out += &line(head.to_vec());
        for r in &body {
            out += &line(r.iter().map(String::as_str).collect());
        }
    }
    out
}

/// `fbo compare`: prints the table and writes compare.csv beside the trace (pooled runs:
/// prints only; `--csv` prints CSV).
pub fn run(opts: &CompareOptions) -> Result<()> {
    let report = compare(opts)?;
    let (baseline, rows) = (&report.baseline, &report.rows);
    let dir = if opts.input.is_dir() {
        opts.input.clone()
    } else {
        opts.input
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
    };
    // A pooled comparison belongs to no one run: printed only (the caller keeps it).
    if opts.pool.is_empty() && opts.units.is_none() {
        write_beside(
            &dir,
            "compare.csv",
            to_csv(opts.metric, baseline, rows).as_bytes(),
        )?;
    }
    if opts.csv {
        print!("{}", to_csv(opts.metric, baseline, rows));
    } else {
        print!(
            "{}",
            to_table(
                opts.metric,
                baseline,
                report.higher_is_better,
                rows,
                opts.markdown
            )
        );
    }
    if !report.trends.is_empty() {
        write_beside(
            &dir,
            "trend.csv",
            trend_csv(opts.metric, &report.trends).as_bytes(),
        )?;
        print!(
            "{}",
            trend_table(opts.metric, &report.trends, opts.markdown)
        );
    }
    Ok(())
}
