//! Initial designs (issue 40 item 3): where each agent's initial points come from. Uniform
//! random draws (the papers' and the default), a Latin hypercube, an Owen-scrambled Sobol
//! sequence, either per agent or one design shared out across the agents (each takes its own
//! block, so together they cover the space as one design does), or points the user gives in a
//! CSV (a peer's own starting points, so that a comparison can be paired on them).
//!
//! Designs are made in unit coordinates; `unit::initial_queries` maps them into an
//! algorithm's area (a sub-region, a list of grid points) and onto the nearest free grid point
//! of a table.

use crate::error::{FboError, Result};
use crate::objective::{Point, Space};
use rand::Rng;
use rand::seq::SliceRandom;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DesignKind {
    Random,
    Lhs,
    Sobol,
}

impl DesignKind {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "random" => Some(DesignKind::Random),
            "lhs" => Some(DesignKind::Lhs),
            "sobol" => Some(DesignKind::Sobol),
            _ => None,
        }
    }
}

/// How the initial points of every agent are chosen.
#[derive(Clone, Debug, PartialEq)]
pub struct InitialDesign {
    pub kind: DesignKind,
    /// One design of n x agents points, agent a taking block a (n points).
    pub across_agents: bool,
    /// Points given by the user (`initial_points_file`): used as they are.
    pub given: Option<Arc<GivenPoints>>,
}

impl Default for InitialDesign {
    fn default() -> Self {
        InitialDesign {
            kind: DesignKind::Random,
            across_agents: false,
            given: None,
        }
    }
}

/// A Latin hypercube of n points in [0, 1]^d: in every coordinate each of the n strata holds
/// one point, at a uniform position inside it; strata are matched by independent shuffles.
pub fn lhs<R: Rng + ?Sized>(n: usize, d: usize, rng: &mut R) -> Vec<Vec<f64>> {
    let mut pts = vec![vec![0.0; d]; n];
    for k in 0..d {
        let mut strata: Vec<usize> = (0..n).collect();
        strata.shuffle(rng);
        for (p, s) in pts.iter_mut().zip(strata) {
            p[k] = (s as f64 + rng.random::<f64>()) / n as f64;
        }
    }
    pts
}

/// Points `from..from + n` of an Owen-scrambled Sobol sequence in [0, 1]^d (Burley's
/// hash-based scrambling, `sobol_burley`: integer arithmetic, so the same on every CPU),
/// scrambled by `seed`. At most 256 dimensions and 2^16 points.
pub fn sobol(from: usize, n: usize, d: usize, seed: u32) -> Result<Vec<Vec<f64>>> {
    if d > sobol_burley::NUM_DIMENSIONS as usize || from + n > 1 << 16 {
        return Err(FboError::Run(format!(
            "a Sobol design supports up to {} dimensions and 65536 points, got {d} dimensions and {} points",
            sobol_burley::NUM_DIMENSIONS,
            from + n
        )));
    }
    Ok((from..from + n)
        .map(|i| {
            (0..d)
                .map(|k| f64::from(sobol_burley::sample(i as u32, k as u32, seed)))
                .collect()
        })
        .collect())
}

/// n design points of `kind` (not `Random`) in [0, 1]^d; `block` = (index, count) takes the
/// index-th of count consecutive blocks of one design of n x count points.
pub fn unit_design<R: Rng + ?Sized>(
    kind: DesignKind,
    n: usize,
    d: usize,
    block: (usize, usize),
    rng: &mut R,
) -> Result<Vec<Vec<f64>>> {
    let (index, count) = block;
    match kind {
        DesignKind::Random => unreachable!("random designs are drawn point by point"),
        DesignKind::Lhs => {
            let all = lhs(n * count, d, rng);
            Ok(all[index * n..(index + 1) * n].to_vec())
        }
        DesignKind::Sobol => sobol(index * n, n, d, rng.random::<u32>()),
    }
}

/// For each unit point, in order, the nearest of `candidates` (by squared distance in unit
/// coordinates; ties to the first) not taken by an earlier one. Returns indices into
/// `candidates`; needs as many candidates as points.
pub fn snap(points: &[Vec<f64>], candidates: &[Vec<f64>]) -> Vec<usize> {
    let mut taken = vec![false; candidates.len()];
    points
        .iter()
        .map(|p| {
            let mut best: Option<(usize, f64)> = None;
            for (i, c) in candidates.iter().enumerate() {
                if taken[i] {
                    continue;
                }
                let d2: f64 = c.iter().zip(p).map(|(a, b)| (a - b) * (a - b)).sum();
                if best.is_none_or(|(_, b)| d2 < b) {
                    best = Some((i, d2));
                }
            }
            let (i, _) = best.expect("as many candidates as points");
            taken[i] = true;
            i
        })
        .collect()
}

/// The points of `initial_points_file`: a CSV with a column `agent`, one column per
/// hyperparameter (raw values, as `fbo evaluate` reads them; a categorical one by its choice's
/// name), optionally `run` (rows without it serve every run) and optionally `value`: the
/// metric already measured there, as the program prints it, which is told instead of run
/// again (measured objectives only; an empty cell is run).
#[derive(Clone, Debug, PartialEq)]
pub struct GivenPoints {
    pub path: PathBuf,
    pub header: Vec<String>,
    /// (line, run, agent, fields as written).
    pub rows: Vec<(usize, Option<usize>, usize, Vec<String>)>,
    /// Column `value`, if the file has one.
    value_col: Option<usize>,
}

impl GivenPoints {
    /// Reads the file; `agents` is the objective's number of agents. Returns the points and
    /// the number each (run, agent) has (the same for all of them, or an error).
    pub fn read(path: &Path, agents: usize) -> Result<(Self, usize)> {
        let bad = |line: usize, msg: String| FboError::spec(path, format!("line {line}"), msg);
        let mut rdr = csv::Reader::from_path(path)
            .map_err(|e| FboError::spec(path, "", format!("cannot read the points: {e}")))?;
        let header: Vec<String> = rdr
            .headers()
            .map_err(|e| FboError::spec(path, "", e.to_string()))?
            .iter()
            .map(|h| h.trim().to_string())
            .collect();
        let col = |n: &str| header.iter().position(|h| h == n);
        let agent_col = col("agent").ok_or_else(|| bad(1, "needs a column `agent`".into()))?;
        let run_col = col("run");
        let value_col = col("value");
        let mut rows = Vec::new();
        for (k, rec) in rdr.records().enumerate() {
            let line = k + 2;
            let rec = rec.map_err(|e| bad(line, e.to_string()))?;
            let agent = rec[agent_col]
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|&a| a < agents)
                .ok_or_else(|| {
                    bad(
                        line,
                        format!(
                            "agent must be one of the objective's agents 0..{}, got {:?}",
                            agents - 1,
                            &rec[agent_col]
                        ),
                    )
                })?;
            let run = match run_col {
                None => None,
                Some(c) => Some(rec[c].trim().parse::<usize>().map_err(|_| {
                    bad(
                        line,
                        format!("run must be a whole number, got {:?}", &rec[c]),
                    )
                })?),
            };
            if let Some(c) = value_col {
                let v = rec[c].trim();
                if !v.is_empty() && !v.parse::<f64>().is_ok_and(f64::is_finite) {
                    return Err(bad(
                        line,
                        format!(
                            "value must be a finite number (or empty: not measured), got {v:?}"
                        ),
                    ));
                }
            }
            rows.push((
                line,
                run,
                agent,
                rec.iter().map(|s| s.trim().to_string()).collect(),
            ));
        }
        // Every (run, agent) listed has the same number of points.
        let mut counts = std::collections::BTreeMap::new();
        for (_, run, agent, _) in &rows {
            *counts.entry((*run, *agent)).or_insert(0usize) += 1;
        }
        let n =
            counts.values().copied().next().ok_or_else(|| {
                FboError::spec(path, "", "holds no points (a header and no rows)")
            })?;
        if let Some(((run, agent), m)) = counts.iter().find(|(_, m)| **m != n) {
            return Err(FboError::spec(
                path,
                "",
                format!(
                    "agent {agent}{} has {m} points, another {n}: every agent starts from the same number",
                    run.map(|r| format!(" run {r}")).unwrap_or_default()
                ),
            ));
        }
        Ok((
            GivenPoints {
                path: path.to_path_buf(),
                header,
                rows,
                value_col,
            },
            n,
        ))
    }

    /// Whether the file tells measured values (a `value` column).
    pub fn tells(&self) -> bool {
        self.value_col.is_some()
    }

    /// Agent `agent`'s rows for run `run`: the rows of that run, else the rows without one.
    fn rows_for(
        &self,
        run: usize,
        agent: usize,
    ) -> Vec<&(usize, Option<usize>, usize, Vec<String>)> {
        let of_run: Vec<_> = self
            .rows
            .iter()
            .filter(|r| r.2 == agent && r.1 == Some(run))
            .collect();
        if of_run.is_empty() {
            self.rows
                .iter()
                .filter(|r| r.2 == agent && r.1.is_none())
                .collect()
        } else {
            of_run
        }
    }

    /// The told value of each of agent `agent`'s points for run `run`, in `points`' order
    /// (None: not measured, or no `value` column). Checked finite when read.
    pub fn values(&self, run: usize, agent: usize) -> Vec<Option<f64>> {
        self.rows_for(run, agent)
            .iter()
            .map(|(_, _, _, fields)| self.value_col.and_then(|c| fields[c].parse::<f64>().ok()))
            .collect()
    }

    /// Agent `agent`'s points for run `run` (rows of that run, else rows without a run), in
    /// the file's order, as points of `space`; an error names the line.
    pub fn points(&self, space: &Space, run: usize, agent: usize) -> Result<Vec<Point>> {
        let names = space.names();
        let codec = space.codec();
        let cols: Vec<usize> = names
            .iter()
            .map(|n| {
                self.header.iter().position(|h| h == n).ok_or_else(|| {
                    FboError::spec(
                        &self.path,
                        n,
                        format!(
                            "missing column; the objective's hyperparameters are {}",
                            names.join(", ")
                        ),
                    )
                })
            })
            .collect::<Result<_>>()?;
        let rows = self.rows_for(run, agent);
        if rows.is_empty() {
            return Err(FboError::spec(
                &self.path,
                "",
                format!("no points for agent {agent} in run {run}"),
            ));
        }
        rows.iter()
            .map(|(line, _, _, fields)| {
                let raw: Vec<f64> = cols
                    .iter()
                    .enumerate()
                    .map(|(k, &c)| {
                        codec
                            .parse(k, &fields[c])
                            .map_err(|e| FboError::spec(&self.path, format!("line {line}"), e))
                    })
                    .collect::<Result<_>>()?;
                space
                    .point_at_raw(&raw)
                    .map_err(|e| FboError::spec(&self.path, format!("line {line}"), e))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::rng::{Purpose, stream};

    #[test]
    fn a_latin_hypercube_has_one_point_per_stratum_in_every_coordinate() {
        let mut rng = stream(1, 0, 0, Purpose::Init);
        let pts = lhs(7, 3, &mut rng);
        for k in 0..3 {
            let mut strata: Vec<usize> = pts.iter().map(|p| (p[k] * 7.0) as usize).collect();
            strata.sort();
            assert_eq!(strata, (0..7).collect::<Vec<_>>());
        }
    }

    #[test]
    fn sobol_blocks_of_two_to_the_k_are_stratified() {
        // The first 8 points of a scrambled Sobol sequence put one point in each eighth of
        // every coordinate (a (0, 3, d)-net), and so does the next block of 8.
        for from in [0, 8] {
            let pts = sobol(from, 8, 4, 12345).unwrap();
            for k in 0..4 {
                let mut cells: Vec<usize> = pts.iter().map(|p| (p[k] * 8.0) as usize).collect();
                cells.sort();
                assert_eq!(
                    cells,
                    (0..8).collect::<Vec<_>>(),
                    "from {from}, coordinate {k}"
                );
            }
        }
        assert_ne!(sobol(0, 4, 2, 1).unwrap(), sobol(0, 4, 2, 2).unwrap());
    }

    #[test]
    fn snapping_takes_the_nearest_free_candidate() {
        let cands = vec![vec![0.0], vec![0.5], vec![1.0]];
        assert_eq!(
            snap(&[vec![0.45], vec![0.5], vec![0.9]], &cands),
            vec![1, 0, 2]
        );
    }
}
