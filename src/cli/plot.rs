//! `fbo plot`: figures from the CSVs fbo writes. Each kind turns its inputs into a `Figure`
//! (series of points with optional standard-error bands or bars), and one renderer draws any
//! figure to PNG or SVG (chosen by the output's extension) with plotters. Text uses the bundled
//! DejaVu Sans, so PNGs render the same on a machine without fonts.

use crate::error::{FboError, Result};
use clap::Args;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// summary.csv: a quantity against BO iteration, mean +/- s.e. bands.
    Iterations,
    /// summary.csv: best metric against the mean (simulated) wall clock.
    Time,
    /// summary.csv: best metric at the last iteration against parameters sent per agent.
    Messages,
    /// sweep.csv: utility at the last iteration against privacy loss epsilon.
    Privacy,
    /// sweep.csv: the target's BO overhead over the whole run against the number of agents.
    Scaling,
    /// trace.csv (or a run's folder): each algorithm's paired mean difference to the baseline
    /// against iteration, with its 95% bootstrap band (as `fbo compare`).
    Difference,
    /// trace.csv (or a run's folder): each algorithm's mean rank over the paired units against
    /// iteration (1 = best).
    Ranks,
    /// beliefs.csv (or a run's folder; `output.beliefs`): each length scale of the agents'
    /// models against iteration, the geometric mean over runs and agents.
    Beliefs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Quantity {
    BestMetric,
    SimpleRegret,
    CumulativeRegret,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Clock {
    /// Measured BO overhead plus the table's recorded training time.
    Simulated,
    /// Measured BO overhead only.
    Overhead,
}

pub struct PlotOptions {
    pub kind: Kind,
    pub inputs: Vec<PathBuf>,
    pub out: PathBuf,
    pub title: Option<String>,
    /// The vertical axis of iterations, time, difference and ranks plots [best-metric].
    pub quantity: Option<Quantity>,
    /// The clock of time plots [simulated].
    pub clock: Option<Clock>,
    pub accountant: String,
    pub log_y: bool,
    /// Only these algorithm labels, in this order (default: all, in file order).
    pub algorithms: Vec<String>,
    /// `difference`: the algorithm to subtract (default: the first in the trace).
    pub baseline: Option<String>,
}

/// One point: x, y and its band's ends (mean +/- s.e., or an interval).
type Point = (f64, f64, f64, f64);

/// A point with the band mean +/- s.e.
fn with_se(x: f64, y: f64, se: f64) -> Point {
    (x, y, y - se, y + se)
}

/// One series of a sweep: its rows' labels and its points with their notes.
type SweepGroup = (Vec<String>, Vec<(Point, String)>);

pub struct Series {
    pub label: String,
    pub points: Vec<Point>,
    /// Text beside each point (a sweep point's values); empty for none.
    pub notes: Vec<String>,
    /// Connect the points (and shade the s.e. band) rather than draw markers with bars.
    pub line: bool,
}

pub struct Figure {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub log_x: bool,
    pub log_y: bool,
    pub series: Vec<Series>,
    /// Horizontal reference lines (label, y), e.g. TS in a messages plot.
    pub references: Vec<(String, f64)>,
}

/// A CSV as rows of named fields; errors name the file and column.
struct Table {
    path: PathBuf,
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn read(path: &Path) -> Result<Self> {
        let mut rdr = csv::Reader::from_path(path).map_err(|e| FboError::io(path, e.into()))?;
        let header = rdr
            .headers()
            .map_err(|e| FboError::Run(format!("{}: {e}", path.display())))?
            .iter()
            .map(String::from)
            .collect();
        let rows = rdr
            .records()
            .map(|r| {
                r.map(|r| r.iter().map(String::from).collect())
                    .map_err(|e| FboError::Run(format!("{}: {e}", path.display())))
            })
            .collect::<Result<_>>()?;
        Ok(Table {
            path: path.to_path_buf(),
            header,
            rows,
        })
    }

    fn col(&self, name: &str) -> Result<usize> {
        self.header.iter().position(|h| h == name).ok_or_else(|| {
            FboError::Run(format!(
                "{}: no column `{name}` (is this the right kind of CSV for this plot?)",
                self.path.display()
            ))
        })
    }

    /// The number in `row` at column `c`; None when the field is empty.
    fn num(&self, row: &[String], c: usize) -> Result<Option<f64>> {
        let s = &row[c];
        if s.is_empty() {
            return Ok(None);
        }
        s.parse().map(Some).map_err(|_| {
            FboError::Run(format!(
                "{}: column `{}` holds {s:?}, not a number",
                self.path.display(),
                self.header[c]
            ))
        })
    }
}

/// An algorithm's label, its table and its rows.
type Group<'a> = (String, &'a Table, Vec<&'a [String]>);

/// Rows grouped by algorithm label, in first-appearance order; labels of later inputs that
/// repeat an earlier input's are prefixed with the input's folder name.
fn by_algorithm(tables: &[Table]) -> Result<Vec<Group<'_>>> {
    let mut out: Vec<Group> = Vec::new();
    for t in tables {
        let ca = t.col("algorithm")?;
        let mut groups: Vec<(String, Vec<&[String]>)> = Vec::new();
        for r in &t.rows {
            match groups.iter_mut().find(|(l, _)| *l == r[ca]) {
                Some((_, g)) => g.push(r),
                None => groups.push((r[ca].clone(), vec![r])),
            }
        }
        for (label, rows) in groups {
            let label = if out.iter().any(|(l, _, _)| *l == label) {
                let folder = t
                    .path
                    .parent()
                    .and_then(|p| p.file_name())
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                format!("{folder}: {label}")
            } else {
                label
            };
            out.push((label, t, rows));
        }
    }
    Ok(out)
}

fn keep(opts: &PlotOptions, label: &str) -> bool {
    opts.algorithms.is_empty() || opts.algorithms.iter().any(|a| a == label)
}

fn order(opts: &PlotOptions, mut series: Vec<Series>) -> Vec<Series> {
    if !opts.algorithms.is_empty() {
        series.sort_by_key(|s| opts.algorithms.iter().position(|a| *a == s.label));
    }
    series
}

/// Builds the figure of `opts.kind` from its input files.
pub fn figure(opts: &PlotOptions) -> Result<Figure> {
    check_options(opts)?;
    let label = metric_label(&opts.inputs[0]);
    let metric_name = label
        .as_ref()
        .map_or("metric", |l| l.0.as_str())
        .to_string();
    let higher = label.as_ref().map(|l| l.1);
    let better = match higher {
        Some(true) => " (higher is better)",
        Some(false) => " (lower is better)",
        None => "",
    };
    if matches!(opts.kind, Kind::Difference | Kind::Ranks) {
        return paired_figure(opts, &metric_name, higher);
    }
    if opts.kind == Kind::Beliefs {
        return beliefs_figure(opts);
    }
    let tables: Vec<Table> = opts
        .inputs
        .iter()
        .map(|p| Table::read(p))
        .collect::<Result<_>>()?;
    let mut fig = Figure {
        title: opts.title.clone().unwrap_or_default(),
        x_label: String::new(),
        y_label: String::new(),
        log_x: false,
        log_y: opts.log_y,
        series: Vec::new(),
        references: Vec::new(),
    };
    let best_name = format!("best {metric_name} so far{better}");
    let metric = |q: Quantity| match q {
        Quantity::BestMetric => ("mean_best_metric", "se_best_metric", best_name.clone()),
        Quantity::SimpleRegret => (
            "mean_simple_regret",
            "se_simple_regret",
            "simple regret (lower is better)".to_string(),
        ),
        Quantity::CumulativeRegret => (
            "mean_cumulative_regret",
            "se_cumulative_regret",
            "cumulative regret (lower is better)".to_string(),
        ),
    };
    let quantity = opts.quantity.unwrap_or(Quantity::BestMetric);
    let clock = opts.clock.unwrap_or(Clock::Simulated);
    match opts.kind {
        Kind::Iterations | Kind::Time => {
            let (mean_col, se_col, name) = metric(quantity);
            curves(&mut fig, opts, &tables, clock, (mean_col, se_col, name))?;
        }
        Kind::Messages => messages(&mut fig, opts, &tables, &metric_name, better)?,
        Kind::Difference | Kind::Ranks => unreachable!("drawn by paired_figure"),
        Kind::Beliefs => unreachable!("drawn by beliefs_figure"),
        Kind::Privacy | Kind::Scaling => {
            sweep_series(&mut fig, opts, &tables, &metric_name, better)?
        }
    }
    fig.series = order(opts, std::mem::take(&mut fig.series));
    leave_out_non_finite(&mut fig, opts)?;
    Ok(fig)
}

/// The options every plot kind checks first.
fn check_options(opts: &PlotOptions) -> Result<()> {
    if opts.inputs.is_empty() {
        return Err(FboError::Run(
            "fbo plot needs at least one --input CSV".into(),
        ));
    }
    if opts.quantity.is_some()
        && matches!(
            opts.kind,
            Kind::Messages | Kind::Privacy | Kind::Scaling | Kind::Beliefs
        )
    {
        return Err(FboError::spec(
            "fbo plot",
            "--y",
            "applies to iterations, time, difference and ranks plots only",
        ));
    }
    if opts.clock.is_some() && opts.kind != Kind::Time {
        return Err(FboError::spec(
            "fbo plot",
            "--clock",
            "applies to time plots only",
        ));
    }
    Ok(())
}

/// The curves of an iterations or time plot: per algorithm, the mean of `mean_col` with its
/// s.e. against the iteration or the run time.
fn curves(
    fig: &mut Figure,
    opts: &PlotOptions,
    tables: &[Table],
    clock: Clock,
    (mean_col, se_col, name): (&str, &str, String),
) -> Result<()> {
    let x_name = match (opts.kind, clock) {
        (Kind::Iterations, _) => "iteration",
        (_, Clock::Simulated) => "mean_sim_clock_s",
        (_, Clock::Overhead) => "mean_elapsed_s",
    };
    fig.x_label = match (opts.kind, clock) {
        (Kind::Iterations, _) => "iteration".into(),
        (_, Clock::Simulated) => "simulated run time (s)".into(),
        (_, Clock::Overhead) => "BO overhead (s)".into(),
    };
    fig.y_label = fit_y_label([format!("{name} (mean +/- s.e.)"), name]);
    for (label, t, rows) in by_algorithm(tables)? {
        if !keep(opts, &label) {
            continue;
        }
        let (cx, cm, cs, ci) = (
            t.col(x_name)?,
            t.col(mean_col)?,
            t.col(se_col)?,
            t.col("iteration")?,
        );
        let mut points = Vec::new();
        for r in rows {
            // From the state after the initial points on.
            if t.num(r, ci)?.is_some_and(|i| i < 0.0) {
                continue;
            }
            let Some(x) = t.num(r, cx)? else {
                return Err(FboError::Run(format!(
                    "{}: `{x_name}` is empty; rerun with timing on (output.timing = true)",
                    t.path.display()
                )));
            };
            let Some(y) = t.num(r, cm)? else {
                return Err(FboError::spec(
                    &t.path,
                    mean_col,
                    "is empty: the objective's maximum is unknown (live models), so there is no regret; plot --y best-metric",
                ));
            };
            points.push(with_se(x, y, t.num(r, cs)?.unwrap_or(0.0)));
        }
        fig.series.push(Series {
            label,
            points,
            notes: Vec::new(),
            line: true,
        });
    }
    Ok(())
}

/// A messages plot: per algorithm family, the final best metric against the parameters each
/// agent sent; algorithms that send none are reference lines.
fn messages(
    fig: &mut Figure,
    opts: &PlotOptions,
    tables: &[Table],
    metric_name: &str,
    better: &str,
) -> Result<()> {
    fig.x_label = "parameters sent per agent".into();
    fig.y_label = final_label(metric_name, better);
    fig.log_x = true;
    let mut families: BTreeMap<String, Series> = BTreeMap::new();
    let mut family_order = Vec::new();
    for (label, t, rows) in by_algorithm(tables)? {
        if !keep(opts, &label) {
            continue;
        }
        let (ci, cp, cm, cs) = (
            t.col("iteration")?,
            t.col("params_sent")?,
            t.col("mean_best_metric")?,
            t.col("se_best_metric")?,
        );
        let Some(last) = rows.iter().max_by(|a, b| {
            let n = |r: &[String]| r[ci].parse::<i64>().unwrap_or(i64::MIN);
            n(a).cmp(&n(b))
        }) else {
            continue;
        };
        let params = t.num(last, cp)?.unwrap_or(0.0);
        let y = t.num(last, cm)?.unwrap_or(f64::NAN);
        let se = t.num(last, cs)?.unwrap_or(0.0);
        if params <= 0.0 {
            fig.references.push((label, y));
            continue;
        }
        // "FTS M=100" and "FTS M=50" are one family drawn as one line.
        let family = label.split(" M=").next().unwrap_or(&label).to_string();
        if !families.contains_key(&family) {
            family_order.push(family.clone());
        }
        families
            .entry(family.clone())
            .or_insert_with(|| Series {
                label: family,
                points: Vec::new(),
                notes: Vec::new(),
                line: true,
            })
            .points
            .push(with_se(params, y, se));
    }
    for f in family_order {
        let mut s = families.remove(&f).expect("listed");
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
        fig.series.push(s);
    }
    Ok(())
}

/// A privacy or scaling plot from a sweep.csv: each algorithm's series over the sweep's
/// points (epsilon or agents on x), a summary.csv beside it giving reference lines.
fn sweep_series(
    fig: &mut Figure,
    opts: &PlotOptions,
    tables: &[Table],
    metric_name: &str,
    better: &str,
) -> Result<()> {
    let privacy = opts.kind == Kind::Privacy;
    let eps_col = format!("epsilon_{}", opts.accountant.replace('-', "_"));
    let (x_col, y_col, se_col) = if privacy {
        (eps_col.as_str(), "mean_best_metric", Some("se_best_metric"))
    } else {
        ("agents", "mean_elapsed_s", None)
    };
    fig.x_label = if privacy {
        format!("privacy loss epsilon ({})", opts.accountant)
    } else {
        "N (agents other than the target)".into()
    };
    fig.y_label = if privacy {
        final_label(metric_name, better)
    } else {
        "BO overhead over the run (s)".into()
    };
    if tables[0].col("point").is_err() {
        return Err(FboError::spec(
            &tables[0].path,
            "--input",
            format!(
                "a {} plot reads a sweep.csv (written by `fbo sweep`) as its first --input; this file has no `point` column{}",
                if privacy { "privacy" } else { "scaling" },
                if privacy {
                    " (a summary.csv may follow the sweep.csv, for reference lines)"
                } else {
                    ""
                }
            ),
        ));
    }
    let mut series: Vec<Series> = Vec::new();
    for t in tables {
        // A summary.csv beside a sweep: its algorithms at the last iteration become
        // reference lines (the non-private baselines of a privacy plot).
        if privacy && t.col("iteration").is_ok() {
            fig.references.extend(last_iteration(t, opts)?);
            continue;
        }
        let (groups, flat) = sweep_rows(t, privacy, (x_col, y_col, se_col))?;
        // A non-private algorithm the swept keys do not reach has one value at every
        // point (fbo sweep runs it once): a reference line, as a summary.csv's would be.
        for (label, ys) in flat {
            if ys.iter().all(|&y| y == ys[0]) && !fig.references.iter().any(|r| r.0 == label) {
                fig.references.push((label, ys[0]));
            }
        }
        for (labels, mut points) in groups.into_iter().filter(|g| !g.0.is_empty()) {
            let label = common_words(&labels);
            if !privacy && !keep(opts, &label) {
                continue;
            }
            points.sort_by(|a, b| a.0.0.total_cmp(&b.0.0));
            series.push(Series {
                label,
                points: points.iter().map(|p| p.0).collect(),
                notes: if privacy {
                    points.into_iter().map(|p| p.1).collect()
                } else {
                    Vec::new()
                },
                line: !privacy,
            });
        }
    }
    fig.series = series;
    Ok(())
}

/// A non-private algorithm of a privacy sweep: its label and its value at each point.
type Flat = (String, Vec<f64>);

/// A sweep.csv's rows as series: the k-th algorithm of every point is group k, each point
/// with its (x, y, s.e.) and a note naming its swept values; and, in a privacy sweep, each
/// non-private algorithm's value at every point.
fn sweep_rows(
    t: &Table,
    privacy: bool,
    (x_col, y_col, se_col): (&str, &str, Option<&str>),
) -> Result<(Vec<SweepGroup>, Vec<Flat>)> {
    let (ca, cx, cy) = (t.col("algorithm")?, t.col(x_col)?, t.col(y_col)?);
    let cs = se_col.map(|c| t.col(c)).transpose()?;
    let cp = t.col("point")?;
    // The swept keys sit between `point` and `algorithm`; their values name a point.
    let keys: Vec<(usize, String)> = (cp + 1..ca)
        .map(|c| {
            let short = t.header[c].rsplit('.').next().unwrap_or_default();
            (c, short.to_string())
        })
        .collect();
    // The k-th algorithm of every point is one series (its label changes with the
    // swept values, e.g. "... q=0.35 z=1", so it is named by what all share).
    let mut groups: Vec<SweepGroup> = Vec::new();
    // Non-private algorithms of a privacy sweep: (label, value at each point).
    let mut flat: Vec<Flat> = Vec::new();
    let mut k = 0;
    for (i, r) in t.rows.iter().enumerate() {
        k = if i > 0 && t.rows[i - 1][cp] == r[cp] {
            k + 1
        } else {
            0
        };
        if let (true, None, Some(y)) = (privacy, t.num(r, cx)?, t.num(r, cy)?) {
            match flat.iter_mut().find(|f| f.0 == r[ca]) {
                Some(f) => f.1.push(y),
                None => flat.push((r[ca].clone(), vec![y])),
            }
        }
        let (Some(mut x), Some(y)) = (t.num(r, cx)?, t.num(r, cy)?) else {
            continue; // not private, or no timing: nothing to place
        };
        if !privacy {
            x -= 1.0;
        }
        let se = match cs {
            Some(c) => t.num(r, c)?.unwrap_or(0.0),
            None => 0.0,
        };
        let note = keys
            .iter()
            .map(|(c, name)| {
                // 1.0 -> 1: shorter labels overlap less.
                let v = r[*c]
                    .parse::<f64>()
                    .map_or_else(|_| r[*c].clone(), |v| v.to_string());
                format!("{name}={v}")
            })
            .collect::<Vec<_>>()
            .join(" ");
        if groups.len() <= k {
            groups.resize_with(k + 1, Default::default);
        }
        groups[k].0.push(r[ca].clone());
        groups[k].1.push((with_se(x, y, se), note));
    }
    Ok((groups, flat))
}

/// Leaves out values that are not finite (the best metric of an agent whose every
/// evaluation failed is -inf has no place on an axis), saying so; refuses a figure left empty.
fn leave_out_non_finite(fig: &mut Figure, opts: &PlotOptions) -> Result<()> {
    // A value that is not finite (the best metric of an agent whose every evaluation failed
    // is -inf) has no place on an axis: left out, and said.
    let mut dropped = 0;
    for s in &mut fig.series {
        let keep: Vec<bool> = s
            .points
            .iter()
            .map(|p| p.0.is_finite() && p.1.is_finite())
            .collect();
        dropped += keep.iter().filter(|k| !**k).count();
        if !s.notes.is_empty() {
            let mut k = keep.iter();
            s.notes.retain(|_| *k.next().expect("a note per point"));
        }
        let mut k = keep.iter();
        s.points.retain(|_| *k.next().expect("a flag per point"));
        for p in &mut s.points {
            // An s.e. that overflowed draws no band.
            if !(p.2.is_finite() && p.3.is_finite()) {
                (p.2, p.3) = (p.1, p.1);
            }
        }
    }
    let before = fig.references.len();
    fig.references.retain(|(_, y)| y.is_finite());
    dropped += before - fig.references.len();
    if fig.series.iter().all(|s| s.points.is_empty()) && fig.references.is_empty() {
        return Err(FboError::spec(
            &opts.inputs[0],
            "--input",
            format!(
                "nothing to plot from {}: no rows with the needed columns{}{}",
                opts.inputs
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                if opts.algorithms.is_empty() {
                    ""
                } else {
                    " for the requested --algorithms"
                },
                if dropped > 0 {
                    format!(
                        " and finite values ({dropped} values are missing or not finite: did every evaluation fail?)"
                    )
                } else {
                    String::new()
                }
            ),
        ));
    }
    if dropped > 0 {
        eprintln!(
            "note: {dropped} values that are not finite (an agent whose every evaluation failed has best_metric -inf) are left out of the figure"
        );
    }
    Ok(())
}

/// The words every label shares, in the first label's order.
fn common_words(labels: &[String]) -> String {
    labels[0]
        .split_whitespace()
        .filter(|w| labels.iter().all(|l| l.split_whitespace().any(|x| x == *w)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// (label, mean best metric) of each algorithm of a summary.csv at its last iteration.
fn last_iteration(t: &Table, opts: &PlotOptions) -> Result<Vec<(String, f64)>> {
    let (ca, ci, cm) = (
        t.col("algorithm")?,
        t.col("iteration")?,
        t.col("mean_best_metric")?,
    );
    let mut out: Vec<(String, i64, f64)> = Vec::new();
    for r in &t.rows {
        if !keep(opts, &r[ca]) {
            continue;
        }
        let it: i64 = r[ci].parse().unwrap_or(i64::MIN);
        let Some(y) = t.num(r, cm)? else { continue };
        match out.iter_mut().find(|(l, _, _)| *l == r[ca]) {
            Some(e) if it > e.1 => *e = (r[ca].clone(), it, y),
            Some(_) => {}
            None => out.push((r[ca].clone(), it, y)),
        }
    }
    Ok(out.into_iter().map(|(l, _, y)| (l, y)).collect())
}

const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

enum Marker {
    Line,
    Dot,
    Dashed,
}

fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let font: &'static [u8] = include_bytes!("../../assets/DejaVuSans.ttf");
        plotters::style::register_font("sans-serif", FontStyle::Normal, font)
            .unwrap_or_else(|_| panic!("the bundled font assets/DejaVuSans.ttf is valid"));
    });
}

/// Axis value -> plotted value (log10 on log axes; non-positive values are dropped there).
fn scale(v: f64, log: bool) -> Option<f64> {
    match (log, v.is_finite()) {
        (_, false) => None,
        (true, _) if v <= 0.0 => None,
        (true, _) => Some(v.log10()),
        (false, _) => Some(v),
    }
}

/// A tick label. On a log axis spanning two decades or more only decades are labelled (the
/// ticks between stay as grid lines); on a narrower one every tick is, or it would have none.
/// Whether a log axis over [10^lo, 10^hi] writes its ticks in scientific notation: where any
/// would leave 0.01 .. 9999, all do, so one axis never mixes `0.01` with `1e-3`.
fn sci_axis(lo: f64, hi: f64) -> bool {
    lo < -2.0 - 1e-9 || hi >= 4.0
}

fn tick(v: f64, log: bool, decades_only: bool, sci: bool) -> String {
    if log && !decades_only {
        let x = 10f64.powf(v);
        let digits = (2 - x.log10().floor() as i32).max(0) as usize;
        return if sci {
            format!("{x:.1e}")
        } else {
            format!("{x:.digits$}")
        };
    }
    if log {
        if (v - v.round()).abs() > 1e-9 {
            return String::new();
        }
        let x = 10f64.powf(v.round());
        if sci {
            format!("{x:.0e}")
        } else {
            format!("{}", (x * 1e3).round() / 1e3)
        }
    } else if v.abs() < 1e-12 {
        // Rounding leaves the zero tick of a symmetric axis at +-1e-17 or so.
        "0".into()
    } else if v.abs() >= 1e4 || v.abs() < 1e-3 {
        format!("{v:.1e}")
    } else {
        format!("{}", (v * 1e4).round() / 1e4)
    }
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    fig: &Figure,
) -> std::result::Result<(), String>
where
    DB::ErrorType: 'static,
{
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    root.fill(&WHITE).map_err(e)?;
    // The legend gets its own rows below the plot, so it never hides data, is never cut
    // off, and leaves the plot the figure's whole width.
    let (plot_area, legend_area) = root.split_vertically(PLOT_HEIGHT);
    let mut legend: Vec<(String, RGBColor, Marker)> = Vec::new();
    let (scaled, refs) = scaled_points(fig);
    let [(x0, x1), (y0, y1)] = axis_ranges(&scaled, &refs);
    let (note_places, y1) = note_places(fig, &scaled, (x0, x1), (y0, y1));
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(&fig.title, ("sans-serif", 30))
        .margin(18)
        .x_label_area_size(72)
        .y_label_area_size(104)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(e)?;
    let (log_x, log_y) = (fig.log_x, fig.log_y);
    let (wide_x, wide_y) = (x1.floor() - x0.ceil() >= 1.0, y1.floor() - y0.ceil() >= 1.0);
    // One notation per axis: 0.01 and 1e-3 never side by side.
    let (sci_x, sci_y) = (log_x && sci_axis(x0, x1), log_y && sci_axis(y0, y1));
    let x_fmt = move |v: &f64| tick(*v, log_x, wide_x, sci_x);
    let y_fmt = move |v: &f64| tick(*v, log_y, wide_y, sci_y);
    chart
        .configure_mesh()
        .x_desc(&fig.x_label)
        .y_desc(&fig.y_label)
        .label_style(("sans-serif", 22))
        .axis_desc_style(("sans-serif", 24))
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(e)?;
    for (k, (s, pts)) in fig.series.iter().zip(&scaled).enumerate() {
        let color = PALETTE[k % PALETTE.len()];
        let marker = if s.line {
            draw_line(&mut chart, pts, k, color)?
        } else {
            draw_bars(&mut chart, s, pts, &note_places[k], color)?
        };
        legend.push((s.label.clone(), color, marker));
    }
    for (k, (label, y)) in refs.iter().enumerate() {
        let color = PALETTE[(fig.series.len() + k) % PALETTE.len()];
        let y = *y;
        chart
            .draw_series(DashedLineSeries::new(
                vec![(x0, y), (x1, y)],
                8,
                5,
                color.stroke_width(2),
            ))
            .map_err(e)?;
        legend.push((label.clone(), color, Marker::Dashed));
    }
    draw_legend(&legend_area, fig, &legend)?;
    root.present().map_err(e)?;
    Ok(())
}

/// The chart of a figure: f64 on both axes.
type Chart<'a, DB> = ChartContext<
    'a,
    DB,
    plotters::coord::cartesian::Cartesian2d<
        plotters::coord::types::RangedCoordf64,
        plotters::coord::types::RangedCoordf64,
    >,
>;

/// Series `k` as a line over its band (s.e.), with dots where it has few points; its legend
/// marker.
fn draw_line<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    pts: &[(f64, f64, f64, f64)],
    k: usize,
    color: RGBColor,
) -> std::result::Result<Marker, String>
where
    DB::ErrorType: 'static,
{
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    if pts.len() > 1 {
        let band: Vec<(f64, f64)> = pts
            .iter()
            .map(|p| (p.0, p.3))
            .chain(pts.iter().rev().map(|p| (p.0, p.2)))
            .collect();
        chart
            .draw_series(std::iter::once(Polygon::new(
                band,
                color.mix(0.18).filled(),
            )))
            .map_err(e)?;
    }
    // Past the palette's eight colours a series is dashed, so that no two series of
    // one figure look alike (FTS Fig. 2a has 13).
    let marker = if (k / PALETTE.len()) % 2 == 1 {
        let line = pts.iter().map(|p| (p.0, p.1));
        chart
            .draw_series(DashedLineSeries::new(line, 8, 5, color.stroke_width(2)))
            .map_err(e)?;
        Marker::Dashed
    } else {
        chart
            .draw_series(LineSeries::new(
                pts.iter().map(|p| (p.0, p.1)),
                color.stroke_width(2),
            ))
            .map_err(e)?;
        Marker::Line
    };
    if pts.len() <= 12 {
        chart
            .draw_series(
                pts.iter()
                    .map(|p| Circle::new((p.0, p.1), 3, color.filled())),
            )
            .map_err(e)?;
    }
    Ok(marker)
}

/// A series as error bars with a dot at each centre, and its notes (levels) above the bars at
/// their `places`; its legend marker.
fn draw_bars<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    s: &Series,
    pts: &[(f64, f64, f64, f64)],
    places: &[(usize, i32)],
    color: RGBColor,
) -> std::result::Result<Marker, String>
where
    DB::ErrorType: 'static,
{
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    chart
        .draw_series(
            pts.iter()
                .map(|p| ErrorBar::new_vertical(p.0, p.2, p.1, p.3, color.stroke_width(2), 8)),
        )
        .map_err(e)?;
    chart
        .draw_series(
            pts.iter()
                .map(|p| Circle::new((p.0, p.1), 4, color.filled())),
        )
        .map_err(e)?;
    if s.notes.len() == pts.len() {
        // Level text centred above each bar, at a size read where the figure is
        // shown (about 11 pixels at 440 wide).
        // One band above the series' highest bar, so that rows of labels never meet.
        let top = pts.iter().map(|p| p.3).fold(f64::NEG_INFINITY, f64::max);
        chart
            .draw_series(pts.iter().zip(&s.notes).zip(places).map(|((p, n), place)| {
                let half = (n.chars().count() as f64 * NOTE_CHAR_PX / 2.0) as i32;
                let (row, shift) = *place;
                EmptyElement::at((p.0, top))
                    + Text::new(
                        n.clone(),
                        (shift - half, -30 - NOTE_ROW_PX as i32 * row as i32),
                        ("sans-serif", 22).into_font().color(&color),
                    )
            }))
            .map_err(e)?;
    }
    Ok(Marker::Dot)
}

/// The legend's rows below the plot: each entry's marker and label, in columns.
fn draw_legend<DB: DrawingBackend>(
    legend_area: &DrawingArea<DB, Shift>,
    fig: &Figure,
    legend: &[(String, RGBColor, Marker)],
) -> std::result::Result<(), String>
where
    DB::ErrorType: 'static,
{
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    let columns = legend_columns(fig);
    let column_px = (WIDTH / columns as u32) as i32;
    for (k, (label, color, marker)) in legend.iter().enumerate() {
        let (col, row) = (k % columns, k / columns);
        let (x, y) = (
            LEGEND_LEFT + col as i32 * column_px,
            20 + LEGEND_ROW as i32 * row as i32,
        );
        let style = color.stroke_width(3);
        match marker {
            Marker::Line => legend_area.draw(&PathElement::new(vec![(x, y), (x + 34, y)], style)),
            Marker::Dot => legend_area.draw(&Circle::new((x + 17, y), 6, color.filled())),
            Marker::Dashed => {
                legend_area
                    .draw(&PathElement::new(vec![(x, y), (x + 13, y)], style))
                    .map_err(e)?;
                legend_area.draw(&PathElement::new(vec![(x + 21, y), (x + 34, y)], style))
            }
        }
        .map_err(e)?;
        legend_area
            .draw(&Text::new(
                label.clone(),
                (x + 44, y - 12),
                ("sans-serif", LEGEND_FONT),
            ))
            .map_err(e)?;
    }
    Ok(())
}

/// Per series each point's centre and its band's ends, and the reference lines' values.
type Scaled = (Vec<Vec<(f64, f64, f64, f64)>>, Vec<(String, f64)>);

/// The figure's points on the plot's scales (log where the axis is).
fn scaled_points(fig: &Figure) -> Scaled {
    // Plotted (scaled) points: the centre and the band's ends.
    let scaled: Vec<Vec<(f64, f64, f64, f64)>> = fig
        .series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .filter_map(|&(x, y, lo, hi)| {
                    let x = scale(x, fig.log_x)?;
                    let yc = scale(y, fig.log_y)?;
                    let lo = scale(lo, fig.log_y).unwrap_or(yc);
                    let hi = scale(hi, fig.log_y).unwrap_or(yc);
                    Some((x, yc, lo, hi))
                })
                .collect()
        })
        .collect();
    let refs: Vec<(String, f64)> = fig
        .references
        .iter()
        .filter_map(|(l, y)| scale(*y, fig.log_y).map(|v| (l.clone(), v)))
        .collect();
    (scaled, refs)
}

/// The axes' ranges: every point, band and reference line inside, padded by 5% (a unit range
/// where there is nothing to place).
fn axis_ranges(scaled: &[Vec<(f64, f64, f64, f64)>], refs: &[(String, f64)]) -> [(f64, f64); 2] {
    let xs = scaled.iter().flatten().map(|p| p.0);
    let ys = scaled
        .iter()
        .flatten()
        .flat_map(|p| [p.2, p.3])
        .chain(refs.iter().map(|r| r.1));
    let (mut x0, mut x1) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    let (mut y0, mut y1) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    if !x0.is_finite() {
        (x0, x1) = (0.0, 1.0);
    }
    if !y0.is_finite() {
        (y0, y1) = (0.0, 1.0);
    }
    let pad = |a: f64, b: f64| {
        let w = if b > a { b - a } else { a.abs().max(1.0) };
        (a - 0.05 * w, b + 0.05 * w)
    };
    let (x0, x1) = pad(x0, x1);
    let (y0, y1) = pad(y0, y1);
    [(x0, x1), (y0, y1)]
}

/// Where every point label goes: (row, shift in pixels keeping it inside the plot), rows
/// stacked so that labels a few pixels apart do not print over each other; and the top of the
/// y range raised to leave room for the rows above the bars.
fn note_places(
    fig: &Figure,
    scaled: &[Vec<(f64, f64, f64, f64)>],
    (x0, x1): (f64, f64),
    (y0, y1): (f64, f64),
) -> (Vec<Vec<(usize, i32)>>, f64) {
    let mut y1 = y1;
    // Point labels centred above their bars, in as many rows as keep them apart (points a
    // few pixels apart otherwise print over each other), with room above the bars for them.
    let plot_px = (WIDTH as i32 - 104 - 2 * 18) as f64;
    let to_px = |x: f64| (x - x0) / (x1 - x0) * plot_px;
    // (row, shift in pixels keeping the label inside the plot) of every label.
    let note_places: Vec<Vec<(usize, i32)>> = fig
        .series
        .iter()
        .zip(scaled)
        .map(|(s, pts)| {
            let (spans, shifts): (Vec<(f64, f64)>, Vec<i32>) = pts
                .iter()
                .zip(&s.notes)
                .map(|(p, n)| {
                    let half = n.chars().count() as f64 * NOTE_CHAR_PX / 2.0;
                    let centre = to_px(p.0);
                    let inside = centre.clamp(half, (plot_px - half).max(half));
                    ((inside - half, inside + half), (inside - centre) as i32)
                })
                .unzip();
            label_rows(&spans, NOTE_CHAR_PX)
                .into_iter()
                .zip(shifts)
                .collect()
        })
        .collect();
    if let Some(rows) = note_places.iter().flatten().map(|p| p.0).max() {
        y1 += (y1 - y0) * (40.0 + NOTE_ROW_PX * rows as f64) / 420.0;
    }
    (note_places, y1)
}

/// Figures are drawn 880 pixels wide and shown about half that (440 in docs/figures.md): every
/// text is at least 22 pixels here, 11 where it is read.
const WIDTH: u32 = 880;
/// Height of the plot; the legend's rows go below it.
const PLOT_HEIGHT: u32 = 560;
const LEGEND_FONT: u32 = 22;
const LEGEND_ROW: u32 = 32;
const LEGEND_LEFT: i32 = 24;
/// Pixels per character of 22-pixel DejaVu Sans (measured on its widest common letters).
const NOTE_CHAR_PX: f64 = 12.5;

/// Characters of a 24-pixel axis description that fit beside the plot (about 9.8 pixels each,
/// centred on the plot's 520 pixels of height).
const Y_DESC_CHARS: usize = 52;

/// "best METRIC at the last iteration (lower is better)", or a shorter form of it that fits
/// beside the plot (a long metric name would be cut off at the top).
fn final_label(metric: &str, better: &str) -> String {
    fit_y_label([
        format!("best {metric} at the last iteration{better}"),
        format!("final best {metric}{better}"),
        format!("{metric}{better}"),
        metric.to_string(),
    ])
}

/// The first of `forms` (longest and fullest first) that fits beside the plot, else the last.
fn fit_y_label<const N: usize>(forms: [String; N]) -> String {
    let last = forms[N - 1].clone();
    forms
        .into_iter()
        .find(|l| l.chars().count() <= Y_DESC_CHARS)
        .unwrap_or(last)
}

/// Pixels between two rows of point labels.
const NOTE_ROW_PX: f64 = 26.0;

/// The row of each label given its horizontal span in pixels: the lowest row where it keeps
/// `gap` pixels from every label already there, labels placed from left to right.
fn label_rows(spans: &[(f64, f64)], gap: f64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..spans.len()).collect();
    order.sort_by(|&a, &b| spans[a].0.total_cmp(&spans[b].0));
    let mut ends: Vec<f64> = Vec::new();
    let mut rows = vec![0; spans.len()];
    for i in order {
        let (start, end) = spans[i];
        let row = match ends.iter().position(|&e| e + gap <= start) {
            Some(r) => r,
            None => {
                ends.push(f64::NEG_INFINITY);
                ends.len() - 1
            }
        };
        ends[row] = end;
        rows[i] = row;
    }
    rows
}

/// Legend entries per row: two where the longest label fits half the width, else one.
fn legend_columns(fig: &Figure) -> usize {
    let longest = fig
        .series
        .iter()
        .map(|s| s.label.chars().count())
        .chain(fig.references.iter().map(|r| r.0.chars().count()))
        .max()
        .unwrap_or(0);
    let px = LEGEND_LEFT as f64 + 44.0 + longest as f64 * NOTE_CHAR_PX;
    if px <= (WIDTH / 2) as f64 { 2 } else { 1 }
}

/// Pixels of the legend's rows below the plot.
fn legend_height(fig: &Figure) -> u32 {
    let entries = fig.series.len() + fig.references.len();
    let rows = entries.div_ceil(legend_columns(fig)) as u32;
    16 + LEGEND_ROW * rows.max(1)
}

/// Draws `fig` to `out`: PNG or SVG by extension, 880 pixels wide, 560 high plus the legend.
pub fn render(fig: &Figure, out: &Path) -> Result<()> {
    register_font();
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| FboError::io(dir, e))?;
    }
    // Drawn to a temporary name and renamed, like every other result file.
    let ext = out
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = out.with_file_name(format!(".{name}.tmp.{}.{ext}", std::process::id()));
    // The plot keeps its size; the canvas grows downwards with the legend.
    let size = (WIDTH, PLOT_HEIGHT + legend_height(fig));
    let drawn = match ext.as_str() {
        "png" => draw(BitMapBackend::new(&tmp, size).into_drawing_area(), fig),
        "svg" => draw(SVGBackend::new(&tmp, size).into_drawing_area(), fig),
        _ => {
            return Err(FboError::Run(format!(
                "{}: the output must end in .png or .svg",
                out.display()
            )));
        }
    };
    if let Err(msg) = drawn {
        let _ = std::fs::remove_file(&tmp);
        return Err(FboError::Run(format!("drawing {}: {msg}", out.display())));
    }
    std::fs::rename(&tmp, out).map_err(|e| FboError::io(out, e))
}

/// The metric's name and whether higher is better, from the spec fbo copied beside `input`
/// (a results folder or a CSV in one). A copy whose data cannot be found (an older fbo wrote
/// paths relative to the original spec) is read for its objective alone. None: unknown.
fn metric_label(input: &Path) -> Option<(String, bool)> {
    let dir = if input.is_dir() {
        input
    } else {
        input.parent()?
    };
    let path = dir.join("spec.toml");
    if let Ok(spec) = crate::spec::Spec::load(&path) {
        return Some(spec.objective.metric_label());
    }
    let table: toml::Table = std::fs::read_to_string(&path).ok()?.parse().ok()?;
    let obj = table.get("objective")?.as_table()?;
    match obj.get("kind")?.as_str()? {
        "synthetic-fts" | "synthetic-dp" | "function" => Some(("f(x)".into(), true)),
        "model" => {
            let (name, higher) =
                crate::objective::model::Dataset::parse(obj.get("dataset")?.as_str()?)?
                    .metric_label();
            Some((name.into(), higher))
        }
        _ => None,
    }
}

/// The one input of a plot drawn from one run (`kinds` names them for the message): `file`
/// itself, or `file` in the run's folder.
fn one_run_input(opts: &PlotOptions, kinds: &str, file: &str) -> Result<PathBuf> {
    let [input] = opts.inputs.as_slice() else {
        return Err(FboError::spec(
            "fbo plot",
            "--input",
            format!("{kinds} take one run: a {file} or its folder"),
        ));
    };
    Ok(if input.is_dir() {
        input.join(file)
    } else {
        input.clone()
    })
}

/// `difference` and `ranks`: statistics over the paired units of one run's trace.
fn paired_figure(opts: &PlotOptions, metric_name: &str, higher: Option<bool>) -> Result<Figure> {
    use crate::compare::{self, Metric};
    let trace = one_run_input(opts, "difference and ranks plots", "trace.csv")?;
    let metric = match opts.quantity.unwrap_or(Quantity::BestMetric) {
        Quantity::BestMetric => Metric::BestMetric,
        Quantity::SimpleRegret => Metric::SimpleRegret,
        Quantity::CumulativeRegret => {
            return Err(FboError::spec(
                "fbo plot",
                "--y",
                "difference and ranks plots take best-metric or simple-regret",
            ));
        }
    };
    let (name, up) = match metric {
        Metric::BestMetric => (format!("best {metric_name}"), higher),
        Metric::SimpleRegret => ("simple regret".to_string(), Some(false)),
    };
    let mut fig = Figure {
        title: opts.title.clone().unwrap_or_default(),
        x_label: "iteration".into(),
        y_label: String::new(),
        log_x: false,
        log_y: opts.log_y,
        series: Vec::new(),
        references: Vec::new(),
    };
    let curves = if opts.kind == Kind::Difference {
        let (baseline, curves) = compare::difference_curves(
            &trace,
            opts.baseline.as_deref(),
            metric,
            compare::DEFAULT_RESAMPLES / 5,
        )?;
        let better = match up {
            Some(true) => " (above zero is better)",
            Some(false) => " (below zero is better)",
            None => "",
        };
        fig.y_label = fit_y_label([
            format!("{name}: difference to {baseline}{better}"),
            format!("{name} - {baseline}{better}"),
            format!("difference to {baseline}{better}"),
        ]);
        fig.references.push((baseline, 0.0));
        curves
    } else {
        fig.y_label = format!("mean rank by {name} (1 = best)");
        compare::rank_curves(&trace, metric, &opts.algorithms)?
    };
    for (label, points) in curves {
        if !keep(opts, &label) {
            continue;
        }
        fig.series.push(Series {
            label,
            points: points
                .into_iter()
                .map(|(it, y, lo, hi)| (it as f64, y, lo, hi))
                .collect(),
            notes: Vec::new(),
            line: true,
        });
    }
    fig.series = order(opts, fig.series);
    Ok(fig)
}

/// The length scales of beliefs.csv against iteration: per algorithm and unit coordinate, the
/// geometric mean over (run, agent) with the band exp(mean log +/- s.e. of log), on a log axis
/// (length scales are positive and span decades: a dead axis sits at the cap, a live one low).
fn beliefs_figure(opts: &PlotOptions) -> Result<Figure> {
    let path = one_run_input(opts, "beliefs plots", "beliefs.csv")?;
    let t = Table::read(&path)?;
    let (ci, axes) = (t.col("iteration")?, beliefs_axes(&t));
    if axes.is_empty() {
        return Err(FboError::Run(format!(
            "{}: no length-scale columns (ls_u0, ...): is this a beliefs.csv (output.beliefs = true)?",
            path.display()
        )));
    }
    let groups = by_algorithm(std::slice::from_ref(&t))?;
    let several = groups.iter().filter(|g| keep(opts, &g.0)).count() > 1;
    let mut series = Vec::new();
    for (label, _, rows) in &groups {
        if !keep(opts, label) {
            continue;
        }
        for (name, c) in &axes {
            // iteration -> the logs of every (run, agent)'s length scale there.
            let mut at: BTreeMap<i64, Vec<f64>> = BTreeMap::new();
            for r in rows {
                if let (Some(i), Some(v)) = (t.num(r, ci)?, t.num(r, *c)?) {
                    at.entry(i as i64).or_default().push(v.ln());
                }
            }
            let points = at
                .into_iter()
                .map(|(i, logs)| {
                    let (m, se) = crate::run::output::mean_se(&logs);
                    (i as f64, m.exp(), (m - se).exp(), (m + se).exp())
                })
                .collect();
            series.push(Series {
                label: match several {
                    true => format!("{label}: {name}"),
                    false => name.clone(),
                },
                points,
                notes: Vec::new(),
                line: true,
            });
        }
    }
    Ok(Figure {
        title: opts.title.clone().unwrap_or_default(),
        x_label: "iteration".into(),
        y_label: fit_y_label([
            "length scale on the unit cube (geometric mean, +/- s.e. of log)".to_string(),
            "length scale (geometric mean, +/- s.e. of log)".to_string(),
            "length scale".to_string(),
        ]),
        log_x: false,
        log_y: true,
        series,
        references: Vec::new(),
    })
}

/// beliefs.csv's length-scale columns: (the unit coordinate's name, column index).
fn beliefs_axes(t: &Table) -> Vec<(String, usize)> {
    t.header
        .iter()
        .enumerate()
        .filter_map(|(i, h)| h.strip_prefix("ls_").map(|n| (n.to_string(), i)))
        .collect()
}

pub fn run(opts: &PlotOptions) -> Result<()> {
    check_out(&opts.out)?;
    // Whatever stops the figure from being made comes from the inputs or the arguments:
    // exit 2, like every other invalid input. Only drawing and writing fail with 1.
    let fig = figure(opts).map_err(|e| match e {
        FboError::Spec { .. } | FboError::Interrupted => e,
        FboError::Io { path, source } => {
            FboError::spec(path, "--input", format!("cannot be read: {source}"))
        }
        FboError::Run(msg) => FboError::spec("fbo plot", "--input", msg),
    })?;
    render(&fig, &opts.out)
}

fn check_out(out: &Path) -> Result<()> {
    match out.extension().and_then(|e| e.to_str()) {
        Some("png" | "svg") => Ok(()),
        _ => Err(FboError::spec(
            out,
            "--out",
            "the output must end in .png or .svg",
        )),
    }
}

#[derive(Args)]
pub struct PlotArgs {
    /// What to draw: iterations, time (summary.csv); messages (summary.csv); privacy,
    /// scaling (sweep.csv).
    #[arg(value_enum)]
    kind: Kind,
    /// Input CSV; repeat to overlay several runs' summaries.
    #[arg(long = "input", required = true)]
    inputs: Vec<PathBuf>,
    /// Output image, ending in .png or .svg.
    #[arg(long)]
    out: PathBuf,
    /// The figure's title [default: none].
    #[arg(long)]
    title: Option<String>,
    /// The quantity on the vertical axis of iterations, time, difference and ranks plots
    /// [default: best-metric].
    #[arg(long, value_enum)]
    y: Option<Quantity>,
    /// The clock of a time plot [default: simulated].
    #[arg(long, value_enum)]
    clock: Option<Clock>,
    /// The epsilon column of a privacy plot.
    #[arg(long, default_value = "rdp-int", value_parser = ["rdp-int", "rdp", "pld", "allocation"])]
    accountant: String,
    /// Logarithmic vertical axis.
    #[arg(long)]
    log_y: bool,
    /// Only these algorithm labels, in this order (comma-separated).
    #[arg(long, value_delimiter = ',')]
    algorithms: Vec<String>,
    /// `difference` plots: the algorithm subtracted [default: the first in the trace].
    #[arg(long)]
    baseline: Option<String>,
}

pub fn cmd_plot(a: PlotArgs) -> Result<()> {
    let PlotArgs {
        kind,
        inputs,
        out,
        title,
        y,
        clock,
        accountant,
        log_y,
        algorithms,
        baseline,
    } = a;
    run(&PlotOptions {
        kind,
        inputs,
        out,
        title,
        quantity: y,
        clock,
        accountant,
        log_y,
        algorithms,
        baseline,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_metric_name_shortens_the_axis_label_to_fit() {
        let b = " (lower is better)";
        assert_eq!(
            final_label("AUC", " (higher is better)"),
            "best AUC at the last iteration (higher is better)"
        );
        assert_eq!(
            final_label("validation error", b),
            "final best validation error (lower is better)"
        );
        let long = "x".repeat(30);
        assert_eq!(final_label(&long, b), format!("{long}{b}"));
        assert_eq!(final_label(&"y".repeat(60), b), "y".repeat(60));
    }

    #[test]
    fn every_y_label_form_falls_back_to_one_that_fits() {
        // HAR's metric: the full forms of the iteration and difference axes were cut off.
        let name = "best validation error so far (lower is better)".to_string();
        assert_eq!(
            fit_y_label([format!("{name} (mean +/- s.e.)"), name.clone()]),
            name
        );
        assert_eq!(
            fit_y_label(["short (mean +/- s.e.)".to_string(), "short".to_string()]),
            "short (mean +/- s.e.)"
        );
        let b = " (below zero is better)";
        assert_eq!(
            fit_y_label([
                format!("best validation error: difference to TS{b}"),
                format!("best validation error - TS{b}"),
                format!("difference to TS{b}"),
            ]),
            format!("best validation error - TS{b}")
        );
        assert!(Y_DESC_CHARS < format!("best validation error: difference to TS{b}").len());
    }

    #[test]
    fn labels_that_would_overlap_go_to_rows_above() {
        // Three labels 100 px wide at 0, 50 and 250: the second overlaps the first and goes
        // up one row; the third is clear of both and stays on the first row.
        let spans = [(0.0, 100.0), (50.0, 150.0), (250.0, 350.0)];
        assert_eq!(label_rows(&spans, 10.0), vec![0, 1, 0]);
        // The gap counts: 105 is within 10 px of 100.
        assert_eq!(
            label_rows(&[(0.0, 100.0), (105.0, 200.0)], 10.0),
            vec![0, 1]
        );
        assert_eq!(label_rows(&[(105.0, 200.0), (0.0, 100.0)], 4.0), vec![0, 0]);
        assert_eq!(label_rows(&[], 10.0), Vec::<usize>::new());
    }

    #[test]
    fn ticks_and_scaling() {
        assert_eq!(scale(100.0, true), Some(2.0));
        assert_eq!(scale(0.0, true), None);
        assert_eq!(scale(-3.0, false), Some(-3.0));
        assert_eq!(tick(2.0, true, true, false), "100");
        assert_eq!(tick(-4.0, true, true, true), "1e-4");
        // One notation per axis: an axis reaching 1e-3 writes 1e-2 and 1e0 alike.
        assert!(sci_axis(-3.0, 0.0) && !sci_axis(-2.0, 3.5));
        assert_eq!(tick(-2.0, true, true, true), "1e-2");
        assert_eq!(tick(-2.0, true, true, false), "0.01");
        assert_eq!(tick(2.5f64.log10(), true, true, false), "");
        // Inside one decade every tick is labelled.
        assert_eq!(tick(2.5f64.log10(), true, false, false), "2.50");
        assert_eq!(tick(0.02f64.log10(), true, false, false), "0.0200");
        assert_eq!(tick(0.8123456, false, false, false), "0.8123");
        assert_eq!(tick(6.9e-18, false, false, false), "0");
        assert_eq!(tick(2e-4, false, false, false), "2.0e-4");
    }
}
