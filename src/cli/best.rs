//! `fbo best RUN`: the answer a tuning run was for. Per algorithm and agent, the best
//! configuration any of its runs observed (the highest observation on fbo's maximised scale,
//! the first of equals), in raw hyperparameter values, with its value as observed, how many
//! of that run's evaluations it took to find it, and, where the objective knows it, the
//! noiseless value.

use crate::error::{FboError, Result};
use crate::objective::{Codec, Landscape};
use crate::spec::Spec;
use clap::Args;
use std::path::Path;
use std::path::PathBuf;

/// One line of the answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Best {
    pub algorithm: String,
    pub agent: usize,
    pub run: usize,
    /// The evaluation of its run that found it (1 = the first initial point).
    pub evaluation: usize,
    /// Evaluations of that run for this agent.
    pub of: usize,
    /// The hyperparameters' raw values (the unit coordinates where the space names none).
    pub point: Vec<f64>,
    /// What was observed there, in the objective's own direction.
    pub observed: f64,
    /// The noiseless value there, where the objective knows it (not for a user's command).
    pub noiseless: Option<f64>,
}

/// The columns of `point` in a trace: the raw hyperparameter columns `names` that follow the
/// unit columns x0, x1, .. (a function's x1.. may repeat a unit column's name), or the unit
/// columns where there are no names.
pub fn point_columns(
    header: &[String],
    names: &[String],
) -> std::result::Result<Vec<usize>, String> {
    let c_x = header
        .iter()
        .position(|h| h == "x_index")
        .ok_or("no column `x_index`: not a trace.csv")?;
    let unit = crate::run::output::unit_column_of(|n| header.iter().any(|h| h == n));
    let mut c_unit = Vec::new();
    while header.get(c_x + 1 + c_unit.len()) == Some(&unit(c_unit.len())) {
        c_unit.push(c_x + 1 + c_unit.len());
    }
    if names.is_empty() {
        return Ok(c_unit);
    }
    // The raw columns come right after the unit ones.
    let after = c_x + c_unit.len();
    names
        .iter()
        .enumerate()
        .map(|(k, n)| match header.get(after + 1 + k) {
            Some(h) if h == n => Ok(after + 1 + k),
            _ => Err(format!(
                "no column `{n}` after the unit columns: this trace is not of this spec's objective (hyperparameters {})",
                names.join(", ")
            )),
        })
        .collect()
}

/// A trace's reader and header; errors name the file.
pub fn open_trace(trace: &Path) -> Result<(csv::Reader<std::fs::File>, Vec<String>)> {
    let bad = |msg: String| FboError::spec(trace, "", msg);
    let mut rdr = csv::Reader::from_path(trace).map_err(|e| bad(e.to_string()))?;
    let header = rdr
        .headers()
        .map_err(|e| bad(e.to_string()))?
        .iter()
        .map(String::from)
        .collect();
    Ok((rdr, header))
}

/// An (algorithm, agent) whose every evaluation failed, with their number.
pub type AllFailed = (String, usize, usize);

/// The best of every (algorithm, agent) in the trace at `trace`, made by `spec` (whose
/// objective names the columns and says whether values are noiseless); and the (algorithm,
/// agent, evaluations) whose every evaluation failed, which have no best. A trace with no
/// row is refused: there is nothing to answer with.
pub fn best(spec: &Spec, land: &Landscape, trace: &Path) -> Result<(Vec<Best>, Vec<AllFailed>)> {
    let bad = |msg: String| FboError::spec(trace, "", msg);
    let (mut rdr, header) = open_trace(trace)?;
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| bad(format!("no column `{name}`: not a trace.csv of fbo run")))
    };
    let (c_alg, c_run, c_agent, c_it, c_src, c_y, c_metric) = (
        col("algorithm")?,
        col("run")?,
        col("agent")?,
        col("iteration")?,
        col("source")?,
        col("y")?,
        col("metric")?,
    );
    let codec = land.space.codec();
    let c_point = point_columns(&header, &codec.names).map_err(bad)?;
    let sign = land.metric(1.0);
    let noiseless = !land.is_measured();
    let mut out: Vec<Best> = Vec::new();
    // (algorithm, run, agent) -> evaluations, for "n of N".
    let mut counts: std::collections::HashMap<(String, usize, usize), usize> = Default::default();
    for (line, rec) in rdr.records().enumerate() {
        let rec = rec.map_err(|e| bad(e.to_string()))?;
        let num = |c: usize| -> Result<f64> {
            rec[c]
                .trim()
                .parse::<f64>()
                .map_err(|_| bad(format!("row {}: `{}` is not a number", line + 2, &rec[c])))
        };
        let (alg, run, agent) = (
            rec[c_alg].to_string(),
            num(c_run)? as usize,
            num(c_agent)? as usize,
        );
        *counts.entry((alg.clone(), run, agent)).or_default() += 1;
        let y = num(c_y)?;
        if &rec[c_src] == "failed" || y.is_nan() {
            continue;
        }
        let candidate = Best {
            algorithm: alg.clone(),
            agent,
            run,
            // Iterations count 1 - n_init .. 0 for the initial points, then 1, 2, ..
            evaluation: (num(c_it)? as i64 + spec.initial_points as i64) as usize,
            of: 0,
            point: if codec.is_empty() {
                c_point.iter().map(|&c| num(c)).collect::<Result<_>>()?
            } else {
                c_point
                    .iter()
                    .enumerate()
                    .map(|(k, &c)| {
                        codec
                            .parse(k, &rec[c])
                            .map_err(|m| bad(format!("row {}: {m}", line + 2)))
                    })
                    .collect::<Result<_>>()?
            },
            observed: sign * y,
            noiseless: if noiseless {
                Some(num(c_metric)?)
            } else {
                None
            },
        };
        match out
            .iter_mut()
            .find(|b| b.algorithm == alg && b.agent == agent)
        {
            Some(b) if sign * b.observed >= y => {}
            Some(b) => *b = candidate,
            None => out.push(candidate),
        }
    }
    if counts.is_empty() {
        return Err(bad(
            "has no rows: nothing was evaluated yet (a run that was stopped before its first unit finished?)".into(),
        ));
    }
    for b in &mut out {
        b.of = counts[&(b.algorithm.clone(), b.run, b.agent)];
    }
    let mut failed: Vec<AllFailed> = Vec::new();
    for ((alg, _, agent), n) in &counts {
        if !out.iter().any(|b| b.algorithm == *alg && b.agent == *agent) {
            match failed.iter_mut().find(|f| f.0 == *alg && f.1 == *agent) {
                Some(f) => f.2 += n,
                None => failed.push((alg.clone(), *agent, *n)),
            }
        }
    }
    failed.sort();
    Ok((out, failed))
}

/// The answer as CSV: algorithm, agent, run, evaluation, evaluations, the point's columns,
/// observed, noiseless.
pub fn to_csv(best: &[Best], codec: &Codec, dim: usize) -> String {
    let mut s = String::from("algorithm,agent,run,evaluation,evaluations");
    for n in point_names(codec, dim) {
        s += &format!(",{n}");
    }
    s += ",observed,noiseless\n";
    for b in best {
        s += &format!(
            "{},{},{},{},{}",
            crate::run::sweep::csv_escape(&b.algorithm),
            b.agent,
            b.run,
            b.evaluation,
            b.of
        );
        for v in show_point(codec, &b.point) {
            s += &format!(",{v}");
        }
        s += &format!(
            ",{},{}\n",
            b.observed,
            b.noiseless.map(|v| v.to_string()).unwrap_or_default()
        );
    }
    s
}

fn point_names(codec: &Codec, dim: usize) -> Vec<String> {
    if codec.is_empty() {
        (0..dim).map(crate::run::output::unit_column).collect()
    } else {
        codec.names.clone()
    }
}

/// A point's values as text: choices by name, numbers as given (`sig` shortens them).
fn point_text(codec: &Codec, point: &[f64], sig: impl Fn(f64) -> String) -> Vec<String> {
    point
        .iter()
        .enumerate()
        .map(|(k, &v)| match codec.choices.get(k) {
            Some(c) if !c.is_empty() => codec.show(k, v),
            _ => sig(v),
        })
        .collect()
}

fn show_point(codec: &Codec, point: &[f64]) -> Vec<String> {
    point_text(codec, point, |v| v.to_string())
}

/// The answer as an aligned table for a terminal (values to 6 significant digits).
pub fn to_table(best: &[Best], codec: &Codec, dim: usize) -> String {
    let mut rows: Vec<Vec<String>> = vec![
        ["algorithm", "agent", "found at"]
            .iter()
            .map(|s| s.to_string())
            .chain(point_names(codec, dim))
            .chain(["observed".to_string(), "noiseless".to_string()])
            .collect(),
    ];
    let g = sig6;
    for b in best {
        let mut r = vec![
            b.algorithm.clone(),
            b.agent.to_string(),
            format!("run {} eval {}/{}", b.run, b.evaluation, b.of),
        ];
        r.extend(point_text(codec, &b.point, sig6));
        r.push(g(b.observed));
        r.push(b.noiseless.map(g).unwrap_or_else(|| "-".into()));
        rows.push(r);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    rows.iter()
        .map(|r| {
            r.iter()
                .zip(&widths)
                .map(|(v, w)| format!("{v:<w$}"))
                .collect::<Vec<_>>()
                .join("  ")
                .trim_end()
                .to_string()
                + "\n"
        })
        .collect()
}

/// Six significant digits, plainly where that is short (1e-3 <= |v| < 1e6), else in
/// scientific notation.
fn sig6(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 || !a.is_finite() {
        return format!("{v}");
    }
    if (1e-3..1e6).contains(&a) {
        let decimals = (5 - a.log10().floor() as i32).max(0) as usize;
        let s = format!("{v:.decimals$}");
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    } else {
        format!("{v:.5e}")
    }
}

/// `fbo best RUN`: the run folder's own spec names the trace's columns.
pub(crate) fn best_of_run(run: &Path, csv: bool) -> Result<String> {
    // A sweep's folder holds one run folder per point.
    let points = run.join("points");
    if !run.join("trace.csv").exists() && points.is_dir() {
        let mut names: Vec<String> = std::fs::read_dir(&points)
            .map_err(|e| FboError::io(&points, e))?
            .filter_map(|e| e.ok())
            .filter(|e| e.path().join("trace.csv").exists())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let shown = names.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
        return Err(FboError::spec(
            run,
            "",
            format!(
                "a sweep's folder: its points are run folders of their own; ask for one, e.g. `fbo best {}` ({} finished point{}{}{})",
                points
                    .join(names.first().map_or("POINT", |n| n.as_str()))
                    .display(),
                names.len(),
                if names.len() == 1 { "" } else { "s" },
                if names.is_empty() { "" } else { ": " },
                if names.len() > 5 {
                    format!("{shown}, ...")
                } else {
                    shown
                }
            ),
        ));
    }
    let spec = Spec::load(&run.join("spec.toml"))?;
    let land = spec.landscapes()?.swap_remove(0);
    let (best, failed) = crate::cli::best::best(&spec, &land, &run.join("trace.csv"))?;
    for (alg, agent, n) in failed {
        eprintln!(
            "note: {alg}, agent {agent}: all {n} of its evaluations failed; it has no best configuration (evaluations.jsonl records why)"
        );
    }
    let codec = land.space.codec();
    Ok(if csv {
        crate::cli::best::to_csv(&best, &codec, land.dim())
    } else {
        crate::cli::best::to_table(&best, &codec, land.dim())
    })
}

#[derive(Args)]
pub struct BestArgs {
    /// A run's output folder (with trace.csv and spec.toml).
    run: PathBuf,
    /// Print CSV instead of a table.
    #[arg(long)]
    csv: bool,
}

pub fn cmd_best(a: BestArgs) -> Result<()> {
    let BestArgs { run, csv } = a;
    print!("{}", best_of_run(&run, csv)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn six_significant_digits() {
        assert_eq!(sig6(3.625063581923513), "3.62506");
        assert_eq!(sig6(-0.45193205378191253), "-0.451932");
        assert_eq!(sig6(1234.5678), "1234.57");
        assert_eq!(sig6(0.5), "0.5");
        assert_eq!(sig6(2.0e-7), "2.00000e-7");
        assert_eq!(sig6(0.0), "0");
    }

    #[test]
    fn point_columns_skip_the_unit_columns_whatever_their_number() {
        // A trace from before the unit columns were named u0, u1, ..
        let h: Vec<String> = "algorithm,run,agent,iteration,x_index,x0,x1,x1,x2,source"
            .split(',')
            .map(String::from)
            .collect();
        let names = vec!["x1".to_string(), "x2".to_string()];
        assert_eq!(point_columns(&h, &names).unwrap(), vec![7, 8]);
        assert_eq!(point_columns(&h, &[]).unwrap(), vec![5, 6]);
        let wrong = vec!["C".to_string(), "gamma".to_string()];
        assert!(point_columns(&h, &wrong).is_err());
        // Today's, with a categorical parameter's three one-hot columns before its name.
        let h: Vec<String> = "algorithm,run,agent,iteration,x_index,u0,u1,u2,u3,lr,kernel,source"
            .split(',')
            .map(String::from)
            .collect();
        let names = vec!["lr".to_string(), "kernel".to_string()];
        assert_eq!(point_columns(&h, &names).unwrap(), vec![9, 10]);
        assert_eq!(point_columns(&h, &[]).unwrap(), vec![5, 6, 7, 8]);
    }
}
