//! Hyperparameter-response tables (made by `fbo tabulate`) as objectives: each table agent's
//! metric on a grid over the normalised hyperparameter box. BO maximises f; a metric that is
//! minimised (validation error) enters as f = -metric and is reported back in its own units.

use super::{Domain, Landscape, Space};
use crate::error::{FboError, Result};
use ndarray::{Array1, Array2};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What table.toml says about its table.
#[derive(Clone, Debug, PartialEq)]
pub struct TableMeta {
    pub path: PathBuf,
    pub dataset: String,
    pub metric: String,
    /// +1 if the metric is maximised, -1 if minimised.
    pub sign: f64,
    pub agents: usize,
    pub points: usize,
    pub dims: Vec<String>,
}

#[derive(Deserialize)]
struct RawMeta {
    dataset: String,
    metric: String,
    direction: String,
    agents: usize,
    points_per_agent: usize,
    hyperparameters: Vec<RawHyper>,
}

#[derive(Deserialize)]
struct RawHyper {
    name: String,
}

pub fn read_meta(path: &Path) -> Result<TableMeta> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        FboError::spec(
            path,
            "",
            format!("cannot read the table description: {e} (build it with `fbo tabulate`)"),
        )
    })?;
    // Tables carry provenance keys fbo does not read; only the ones below matter here.
    let raw: RawMeta = toml::from_str(&text).map_err(|e| {
        FboError::spec(
            path,
            "",
            format!("invalid table description: {}", e.to_string().trim_end()),
        )
    })?;
    let sign = match raw.direction.as_str() {
        "maximize" => 1.0,
        "minimize" => -1.0,
        other => {
            return Err(FboError::spec(
                path,
                "direction",
                format!("must be \"maximize\" or \"minimize\", got \"{other}\""),
            ));
        }
    };
    Ok(TableMeta {
        path: path.to_path_buf(),
        dataset: raw.dataset,
        metric: raw.metric,
        sign,
        agents: raw.agents,
        points: raw.points_per_agent,
        dims: raw.hyperparameters.into_iter().map(|h| h.name).collect(),
    })
}

/// The table's rows for the chosen agents: domain, each agent's metric, each agent's training
/// seconds per point. Every value is checked: a missing point, a NaN or a stray row is an
/// error naming the file and line.
pub struct Table {
    pub domain: Domain,
    pub metric: Vec<Array1<f64>>,
    pub train_seconds: Vec<Array1<f64>>,
}

pub fn load(meta: &TableMeta, agents: &[usize]) -> Result<Table> {
    let csv_path = meta.path.with_file_name("table.csv");
    // Imported tables are committed compressed (table.csv.gz): read_checked takes either.
    let (bytes, _) = crate::data::read_checked(&csv_path, None, "table")?;
    let text = crate::data::as_text(&csv_path, &bytes)?.to_string();
    let d = meta.dims.len();
    let err = |line: usize, msg: String| FboError::spec(&csv_path, format!("line {line}"), msg);
    let (header, lines) = crate::data::csv_header(&text);
    let want = 2 + 2 * d + 2;
    check_header(&header, d).map_err(|m| err(1, m))?;
    let slot: Vec<Option<usize>> = (0..meta.agents)
        .map(|a| agents.iter().position(|&b| b == a))
        .collect();
    let n = meta.points;
    check_size(meta, &csv_path, text.len(), want)?;
    let mut points = Array2::from_elem((n, d), f64::NAN);
    let mut raw = Array2::from_elem((n, d), f64::NAN);
    let mut metric = vec![Array1::from_elem(n, f64::NAN); agents.len()];
    let mut secs = vec![Array1::zeros(n); agents.len()];
    let mut seen = vec![vec![false; n]; agents.len()];
    for (k, line) in lines.enumerate() {
        let ln = k + 2;
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        if f.len() != want {
            return Err(err(ln, format!("has {} fields, expected {want}", f.len())));
        }
        let a: usize = f[0]
            .parse()
            .map_err(|_| err(ln, format!("column agent: {:?} is not an integer", f[0])))?;
        let p: usize = f[1]
            .parse()
            .map_err(|_| err(ln, format!("column point: {:?} is not an integer", f[1])))?;
        if a >= meta.agents || p >= n {
            return Err(err(
                ln,
                format!(
                    "agent {a} or point {p} outside the table's {} agents x {n} points",
                    meta.agents
                ),
            ));
        }
        // Errors name the column as the header does.
        let num = |c: usize| -> Result<f64> {
            match f[c].parse::<f64>() {
                Ok(v) if v.is_finite() => Ok(v),
                _ => Err(err(
                    ln,
                    format!("column {}: {:?} is not a finite number", header[c], f[c]),
                )),
            }
        };
        let Some(i) = slot[a] else { continue };
        if seen[i][p] {
            return Err(err(ln, format!("agent {a} point {p} appears twice")));
        }
        seen[i][p] = true;
        for k in 0..d {
            let x = num(2 + k)?;
            place_coordinate(&mut points, (p, k), x).map_err(|m| err(ln, m))?;
        }
        for k in 0..d {
            raw[[p, k]] = num(2 + d + k)?;
        }
        metric[i][p] = num(want - 2)?;
        secs[i][p] = num(want - 1)?;
        if secs[i][p] < 0.0 {
            return Err(err(ln, format!("train_seconds {} is negative", secs[i][p])));
        }
    }
    for (i, s) in seen.iter().enumerate() {
        if let Some(p) = s.iter().position(|v| !v) {
            return Err(FboError::spec(
                &csv_path,
                "",
                format!("agent {} has no row for point {p}", agents[i]),
            ));
        }
    }
    Ok(Table {
        domain: Domain::with_raw(points, raw, meta.dims.clone()),
        metric,
        train_seconds: secs,
    })
}

/// A table.csv's header: agent, point, the d unit coordinates, the d hyperparameters, metric
/// and train_seconds.
fn check_header(header: &[&str], d: usize) -> std::result::Result<(), String> {
    let want = 2 + 2 * d + 2;
    if header.len() != want
        || header[0] != "agent"
        || header[1] != "point"
        || header[want - 2] != "metric"
    {
        return Err(format!(
            "header must be agent,point,x0..x{},<hyperparameters>,metric,train_seconds",
            d - 1
        ));
    }
    Ok(())
}

/// Every row holds at least `want` fields and their commas: a table.toml that claims more
/// cells than table.csv (`len` bytes) can hold is refused before anything is allocated for them.
fn check_size(meta: &TableMeta, csv_path: &Path, len: usize, want: usize) -> Result<()> {
    let n = meta.points;
    let min_row = 2 * want;
    let rows_possible = len / min_row;
    if n.saturating_mul(meta.agents) > rows_possible {
        return Err(FboError::spec(
            &meta.path,
            "points_per_agent",
            format!(
                "{} agents x {n} points per agent claimed, but {} ({len} bytes) can hold at most {rows_possible} rows; the two files do not belong together (rebuild with `fbo tabulate`)",
                meta.agents,
                csv_path.display(),
            ),
        ));
    }
    Ok(())
}

/// Coordinate `k` of point `p`, `x`: in the unit cube (algorithms search it: a coordinate
/// outside is a point no proposal can reach and no sub-region holds), and the same in every
/// agent's row of the point.
fn place_coordinate(
    points: &mut Array2<f64>,
    (p, k): (usize, usize),
    x: f64,
) -> std::result::Result<(), String> {
    if !(0.0..=1.0).contains(&x) {
        return Err(format!(
            "coordinate x{k} = {x} is outside [0, 1] (unit coordinates)"
        ));
    }
    if points[[p, k]].is_nan() {
        points[[p, k]] = x;
    } else if points[[p, k]] != x {
        return Err(format!(
            "point {p} has coordinate {x}, another agent has {}",
            points[[p, k]]
        ));
    }
    Ok(())
}

/// The landscape of a table: f = sign * metric per participating agent.
pub fn landscape(meta: &TableMeta, agents: &[usize], noise_var: f64) -> Result<Arc<Landscape>> {
    let t = load(meta, agents)?;
    let values = t.metric.iter().map(|m| m * meta.sign).collect();
    Ok(Arc::new(
        Landscape::new(Arc::new(Space::Grid(t.domain)), values, noise_var)
            .with_metric_sign(meta.sign)
            .with_costs(t.train_seconds),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_table(dir: &Path, rows: &str, direction: &str) -> PathBuf {
        let meta = dir.join("table.toml");
        std::fs::write(
            &meta,
            format!(
                "dataset = \"toy\"\nmetric = \"error\"\ndirection = \"{direction}\"\nagents = 2\npoints_per_agent = 2\nextra = 1\n\
                 [[hyperparameters]]\nname = \"lr\"\nlow = 1\nhigh = 2\n"
            ),
        )
        .unwrap();
        std::fs::write(
            dir.join("table.csv"),
            format!("agent,point,x0,lr,metric,train_seconds\n{rows}"),
        )
        .unwrap();
        meta
    }

    #[test]
    fn padded_values_are_read_and_bad_ones_name_their_column() {
        let dir = tempfile::tempdir().unwrap();
        let meta = write_table(
            dir.path(),
            "0,0,0,1 ,0.3,0.1\n0,1,1,2,0.1 ,0.1\n1,0,0,1,0.5,0.2\n1,1,1,2,0.2,0.2\n",
            "minimize",
        );
        let m = read_meta(&meta).unwrap();
        assert_eq!(landscape(&m, &[0], 0.0).unwrap().grid_value(0, 1), -0.1);
        let meta = write_table(
            dir.path(),
            "0,0,0,1,0.3,0.1\n0,1,1,two,0.1,0.1\n1,0,0,1,0.5,0.2\n1,1,1,2,0.2,0.2\n",
            "minimize",
        );
        let m = read_meta(&meta).unwrap();
        let e = landscape(&m, &[0], 0.0).err().unwrap().to_string();
        assert!(
            e.contains("line 3") && e.contains("column lr: \"two\" is not a finite number"),
            "{e}"
        );
    }

    #[test]
    fn loads_and_negates_minimised_metrics() {
        let dir = tempfile::tempdir().unwrap();
        let meta = write_table(
            dir.path(),
            "0,0,0,1,0.3,0.1\n0,1,1,2,0.1,0.1\n1,0,0,1,0.5,0.2\n1,1,1,2,0.2,0.2\n",
            "minimize",
        );
        let m = read_meta(&meta).unwrap();
        let l = landscape(&m, &[1], 0.0).unwrap();
        assert_eq!(l.agents(), 1);
        assert_eq!(l.grid_value(0, 1), -0.2);
        assert_eq!(l.metric(-0.2), 0.2);
        assert_eq!(l.grid().unwrap().point(1)[0], 1.0);
    }

    #[test]
    fn bad_rows_are_named() {
        let dir = tempfile::tempdir().unwrap();
        for (rows, expect) in [
            ("0,0,0,1,NaN,0.1\n0,1,1,2,0.1,0.1\n", "line 2"),
            ("0,0,0,1,0.3,0.1\n", "agent 0 has no row for point 1"),
            ("0,0,0,1,0.3,0.1\n0,0,0,1,0.3,0.1\n", "appears twice"),
            ("0,0,0,1,0.3\n", "has 5 fields"),
            ("0,0,1.5,1,0.3,0.1\n0,1,1,2,0.1,0.1\n", "outside [0, 1]"),
            ("0,0,0,1,0.3,0.1\n0,1,-0.25,2,0.1,0.1\n", "line 3"),
        ] {
            let meta = write_table(dir.path(), rows, "minimize");
            let m = read_meta(&meta).unwrap();
            let e = load(&m, &[0]).err().expect(expect).to_string();
            assert!(e.contains(expect) && e.contains("table.csv"), "{e}");
        }
    }
}
