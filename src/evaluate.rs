//! `fbo evaluate SPEC --points FILE.csv`: the objective of listed agents at given raw
//! hyperparameter values, to check a recommended configuration or a paper's reported point.

use crate::error::{FboError, Result};
use crate::journal::Request;
use crate::spec::ObjectiveKind;
use crate::spec::Spec;
use std::path::Path;

/// The points file's rows with `value` appended, as CSV text (header included). `run` picks
/// the landscape of run `run` (synthetic objectives differ per run).
pub fn evaluate(spec: &Spec, spec_path: &Path, points: &Path, run: usize) -> Result<String> {
    if matches!(spec.objective.kind, ObjectiveKind::Command(_)) {
        return Err(FboError::spec(
            spec_path,
            "objective.kind",
            "fbo evaluate evaluates tables, functions and live models; a command objective is the user's own program, run it directly",
        ));
    }
    let landscapes = crate::objective::landscapes(spec)?;
    let land = &landscapes[run % landscapes.len()];
    let names = land.space.names();
    if names.is_empty() {
        return Err(FboError::spec(
            spec_path,
            "objective",
            "this objective has no named hyperparameters to evaluate at",
        ));
    }
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
