//! `fbo evaluate SPEC --points FILE.csv`: the objective of listed agents at given raw
//! hyperparameter values, to check a recommended configuration or a paper's reported point;
//! and `fbo incumbents RUN --reference SPEC`: every incumbent of a run valued that way.

use super::load;
use crate::error::{FboError, Result};
use crate::objective::Landscape;
use crate::objective::journal::Request;
use crate::spec::ObjectiveKind;
use crate::spec::Spec;
use clap::Args;
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;

/// The spec's landscapes and hyperparameter names, if fbo can evaluate its objective at given
/// raw values itself: a table, a function or a live model, with named hyperparameters.
fn evaluable(spec: &Spec, spec_path: &Path) -> Result<(Vec<Arc<Landscape>>, Vec<String>)> {
    if matches!(spec.objective.kind, ObjectiveKind::Command(_)) {
        return Err(FboError::spec(
            spec_path,
            "objective.kind",
            "fbo evaluates tables, functions and live models at given points; a command objective is the user's own program, run it directly",
        ));
    }
    let landscapes = spec.landscapes()?;
    let names = landscapes[0].space.names();
    if names.is_empty() {
        return Err(FboError::spec(
            spec_path,
            "objective",
            "this objective has no named hyperparameters to evaluate at",
        ));
    }
    Ok((landscapes, names))
}

/// The points file's rows with `value` appended, as CSV text (header included). `run` picks
/// the landscape of run `run` (synthetic objectives differ per run).
pub fn evaluate(spec: &Spec, spec_path: &Path, points: &Path, run: usize) -> Result<String> {
    let (landscapes, names) = evaluable(spec, spec_path)?;
    let land = &landscapes[run % landscapes.len()];
    let bad = |key: &str, msg: String| FboError::spec(points, key, msg);
    let mut rdr = csv::Reader::from_path(points).map_err(|e| bad("", e.to_string()))?;
    let header: Vec<String> = rdr
        .headers()
        .map_err(|e| bad("", e.to_string()))?
        .iter()
        .map(String::from)
        .collect();
    let col = |name: &str| header.iter().position(|h| h == name);
    let agent_col = col("agent").ok_or_else(|| {
        bad(
            "agent",
            format!(
                "the points file needs a column `agent` and one per hyperparameter ({})",
                names.join(", ")
            ),
        )
    })?;
    let cols: Vec<usize> = names
        .iter()
        .map(|n| {
            col(n).ok_or_else(|| {
                bad(
                    n,
                    format!(
                        "missing column; the spec's hyperparameters are {}",
                        names.join(", ")
                    ),
                )
            })
        })
        .collect::<Result<_>>()?;
    let agents = land.agents();
    let mut rows = Vec::new();
    for (line, rec) in rdr.records().enumerate() {
        let rec = rec.map_err(|e| bad("", e.to_string()))?;
        let row = line + 2; // 1-based, after the header
        let agent: usize = rec[agent_col]
            .trim()
            .parse()
            .ok()
            .filter(|&a| a < agents)
            .ok_or_else(|| {
                bad(
                    &format!("row {row}, agent"),
                    format!(
                        "must be an agent 0..{}, got {:?}",
                        agents - 1,
                        &rec[agent_col]
                    ),
                )
            })?;
        let raw: Vec<f64> = cols
            .iter()
            .zip(&names)
            .map(|(&c, n)| {
                rec[c].trim().parse::<f64>().map_err(|_| {
                    bad(
                        &format!("row {row}, {n}"),
                        format!("not a number: {:?}", &rec[c]),
                    )
                })
            })
            .collect::<Result<_>>()?;
        let point = land
            .space
            .point_at_raw(&raw)
            .map_err(|e| bad(&format!("row {row}"), e))?;
        rows.push((rec, agent, point));
    }
    // Every row is checked before the first evaluation: nothing is printed for bad input.
    let mut out = csv::Writer::from_writer(Vec::new());
    let mut head = header.clone();
    head.push("value".into());
    let err = |e: csv::Error| FboError::Run(format!("writing CSV: {e}"));
    out.write_record(&head).map_err(err)?;
    for (rec, agent, point) in rows {
        let f = land.value(&Request::new("evaluate", run, agent, 0), &point)?;
        let mut fields: Vec<String> = rec.iter().map(String::from).collect();
        fields.push(format!("{}", land.metric(f)));
        out.write_record(&fields).map_err(err)?;
    }
    let bytes = out
        .into_inner()
        .map_err(|e| FboError::Run(format!("writing CSV: {e}")))?;
    Ok(String::from_utf8(bytes).expect("CSV of UTF-8 fields"))
}

/// (landscape, agent, the point's raw bits) -> (f, metric): each evaluated once.
type Memo = std::collections::HashMap<(usize, usize, Vec<u64>), (f64, f64)>;

/// One trace's rows with each (algorithm, run, agent)'s incumbent so far (the row with the
/// highest observation y, the first on ties) valued by `spec`'s objective, as CSV text: the
/// trace's identifying columns (algorithm, run, agent, iteration, x_index, u0..: the query, so
/// that `fbo compare` checks initial points as on the trace), the incumbent's raw values as
/// `incumbent_<name>`, the run's own `observed_best_metric`, and `best_f` / `best_metric`, the
/// incumbent's value under the reference (best_f in fbo's maximised orientation). Each
/// distinct (run's landscape, agent, point) is evaluated once.
pub fn incumbents(spec: &Spec, spec_path: &Path, trace: &Path) -> Result<String> {
    let (landscapes, names) = evaluable(spec, spec_path)?;
    let bad = |msg: String| FboError::spec(trace, "", msg);
    let (mut rdr, header) = crate::cli::best::open_trace(trace)?;
    let col = |name: &str| {
        header.iter().position(|h| h == name).ok_or_else(|| {
            bad(format!(
                "no column `{name}` (a trace.csv of a run whose hyperparameters are the reference's: {})",
                names.join(", ")
            ))
        })
    };
    let (c_alg, c_run, c_agent, c_it, c_x, c_y, c_best) = (
        col("algorithm")?,
        col("run")?,
        col("agent")?,
        col("iteration")?,
        col("x_index")?,
        col("y")?,
        col("best_metric")?,
    );
    // The unit columns u0, u1, .. directly after x_index, then the raw ones.
    let c_unit = crate::cli::best::point_columns(&header, &[]).map_err(bad)?;
    debug_assert!(c_unit.first().is_none_or(|&c| c == c_x + 1));
    let c_raw = crate::cli::best::point_columns(&header, &names).map_err(bad)?;
    let mut rows: Vec<csv::StringRecord> = Vec::new();
    for rec in rdr.records() {
        rows.push(rec.map_err(|e| bad(e.to_string()))?);
    }
    let num = |line: usize, rec: &csv::StringRecord, c: usize| -> Result<f64> {
        rec[c]
            .trim()
            .parse::<f64>()
            .map_err(|_| bad(format!("row {}: `{}` is not a number", line + 2, &rec[c])))
    };
    // Rows of one unit in iteration order (stable: equal iterations keep the file's order).
    let mut order: Vec<usize> = (0..rows.len()).collect();
    let mut keys = Vec::with_capacity(rows.len());
    for (i, r) in rows.iter().enumerate() {
        keys.push((
            r[c_alg].to_string(),
            num(i, r, c_run)? as u64,
            num(i, r, c_agent)? as u64,
            num(i, r, c_it)? as i64,
        ));
    }
    order.sort_by(|&a, &b| keys[a].cmp(&keys[b]));
    let mut memo: Memo = Default::default();
    let mut out = csv::Writer::from_writer(Vec::new());
    let err = |e: csv::Error| FboError::Run(format!("writing CSV: {e}"));
    out.write_record(incumbents_header(c_unit.len(), &names))
        .map_err(err)?;
    // (unit, its best observation so far, that point's raw values)
    type Incumbent = ((String, u64, u64), f64, Vec<f64>);
    let mut current: Option<Incumbent> = None;
    for &i in &order {
        let rec = &rows[i];
        let (alg, run, agent, _) = &keys[i];
        let unit = (alg.clone(), *run, *agent);
        let y = num(i, rec, c_y)?;
        let raw: Vec<f64> = c_raw
            .iter()
            .map(|&c| num(i, rec, c))
            .collect::<Result<_>>()?;
        let better = match &current {
            Some((u, best, _)) if *u == unit => y > *best,
            _ => true,
        };
        if better {
            current = Some((unit, y, raw));
        }
        let (_, _, inc) = current.as_ref().expect("set above");
        let (f, metric) = value_of_incumbent(
            &landscapes,
            &mut memo,
            (*run, *agent as usize),
            inc,
            i,
            &bad,
        )?;
        let mut fields: Vec<String> = [c_alg, c_run, c_agent, c_it, c_x]
            .iter()
            .map(|&c| rec[c].to_string())
            .collect();
        fields.extend(c_unit.iter().map(|&c| rec[c].to_string()));
        fields.extend(inc.iter().map(|v| format!("{v}")));
        fields.push(rec[c_best].to_string());
        fields.push(format!("{f}"));
        fields.push(format!("{metric}"));
        out.write_record(&fields).map_err(err)?;
    }
    let bytes = out
        .into_inner()
        .map_err(|e| FboError::Run(format!("writing CSV: {e}")))?;
    Ok(String::from_utf8(bytes).expect("CSV of UTF-8 fields"))
}

/// The value and metric of an incumbent `inc` (raw values) for (run, agent) under the
/// reference objective: the run's landscape (`run` modulo their number), each distinct
/// (landscape, agent, point) evaluated once (`memo`); errors name trace row `i` (0-based).
fn value_of_incumbent(
    landscapes: &[Arc<Landscape>],
    memo: &mut Memo,
    (run, agent): (u64, usize),
    inc: &[f64],
    i: usize,
    bad: &dyn Fn(String) -> FboError,
) -> Result<(f64, f64)> {
    let land_idx = run as usize % landscapes.len();
    let land = &landscapes[land_idx];
    if agent >= land.agents() {
        return Err(bad(format!(
            "row {}: agent {agent}, but the reference objective has agents 0..{}",
            i + 2,
            land.agents() - 1
        )));
    }
    let key = (land_idx, agent, inc.iter().map(|v| v.to_bits()).collect());
    Ok(match memo.get(&key) {
        Some(v) => *v,
        None => {
            let point = land
                .space
                .point_at_raw(inc)
                .map_err(|e| bad(format!("row {}: {e}", i + 2)))?;
            let f = land.value(&Request::new("incumbents", run as usize, agent, 0), &point)?;
            let v = (f, land.metric(f));
            memo.insert(key, v);
            v
        }
    })
}

/// The incumbents CSV's columns: the trace's identifying ones with its `units` unit
/// coordinates, the incumbent's raw values by name, and the three values.
fn incumbents_header(units: usize, names: &[String]) -> Vec<String> {
    let mut head: Vec<String> = ["algorithm", "run", "agent", "iteration", "x_index"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    head.extend((0..units).map(crate::run::output::unit_column));
    head.extend(names.iter().map(|n| format!("incumbent_{n}")));
    head.extend(["observed_best_metric", "best_f", "best_metric"].map(String::from));
    head
}

#[derive(Args)]
pub struct EvaluateArgs {
    /// The spec whose objective is evaluated.
    spec: PathBuf,
    /// The points, CSV.
    #[arg(long)]
    points: PathBuf,
    /// The run whose objective is used (synthetic objectives differ per run).
    #[arg(long, default_value_t = 0)]
    run: usize,
}

#[derive(Args)]
pub struct IncumbentsArgs {
    /// A run's folder (holding trace.csv) or a trace.csv.
    input: PathBuf,
    /// The spec whose objective values the incumbents; its hyperparameters must be the
    /// trace's columns.
    #[arg(long)]
    reference: PathBuf,
}

pub fn cmd_evaluate(a: EvaluateArgs) -> Result<()> {
    let EvaluateArgs { spec, points, run } = a;
    let s = load(&spec, None, false)?;
    let csv = crate::cli::evaluate::evaluate(&s, &spec, &points, run)?;
    print!("{csv}");
    Ok(())
}

pub fn cmd_incumbents(a: IncumbentsArgs) -> Result<()> {
    let IncumbentsArgs { input, reference } = a;
    let s = load(&reference, None, false)?;
    let trace = if input.is_dir() {
        input.join("trace.csv")
    } else {
        input
    };
    let csv = crate::cli::evaluate::incumbents(&s, &reference, &trace)?;
    print!("{csv}");
    Ok(())
}
