//! Each agent alone on its own data (no federation), for every target agent independently:
//! standard GP Thompson sampling (the target of the FTS family, or every agent of the DP
//! family), and the baselines every BO benchmark reports (issue 27 item 1): uniform random
//! search, GP-EI and GP-UCB on the same GP and hyperparameter fitting as TS's own model (the
//! spec's `surrogate.own`). TS may start from a practitioner's reference (`start`, issue 39):
//! the configuration the other agents' measured surfaces point to, evaluated in place of the
//! last random initial point.

use super::agent::Learner;
use super::{Algorithm, Broadcast, Federated, Query, RunContext, Source};
use crate::error::{FboError, Result};
use crate::objective::{Landscape, Point, Space};
use crate::rng::{Purpose, Rng, stream};
use crate::spec::{AlgorithmKind, Start};
use rand::Rng as _;
use rayon::prelude::*;

pub use super::agent::Rule;

struct Agent {
    learner: Learner,
    rng: Rng,
}

pub struct Single {
    agents: Vec<Agent>,
    targets: Vec<usize>,
    rule: Rule,
    /// Each target's reference point (`start`), in target order.
    warm: Vec<Option<Point>>,
}

/// The grid point a reference starts agent `agent` from, computed from the noiseless
/// surfaces of every other agent of the landscape (each is assumed to have measured its
/// whole grid already): the point of the highest mean f (`FederationBest`), or the point
/// nearest the mean of their argmax points in unit coordinates (`MeanOfBests`). Ties go to
/// the lowest index. None without a grid or without another agent.
pub fn reference_point(land: &Landscape, agent: usize, start: Start) -> Option<usize> {
    let grid = land.grid()?;
    let others: Vec<usize> = (0..land.agents()).filter(|&b| b != agent).collect();
    if others.is_empty() {
        return None;
    }
    let argmax = |f: &dyn Fn(usize) -> f64| {
        (0..grid.len()).fold(0, |best, i| if f(i) > f(best) { i } else { best })
    };
    Some(match start {
        Start::FederationBest => argmax(&|i| others.iter().map(|&b| land.grid_value(b, i)).sum()),
        Start::MeanOfBests => {
            let d = grid.point(0).len();
            let mut mean = vec![0.0; d];
            for &b in &others {
                let best = argmax(&|i| land.grid_value(b, i));
                for (m, x) in mean.iter_mut().zip(grid.point(best)) {
                    *m += x / others.len() as f64;
                }
            }
            let dist = |i: usize| -> f64 {
                grid.point(i)
                    .iter()
                    .zip(&mean)
                    .map(|(x, m)| (x - m) * (x - m))
                    .sum()
            };
            argmax(&|i| -dist(i))
        }
    })
}

/// What `start` needs of the objective, checked before anything runs.
pub fn check(spec: &crate::spec::Spec, space: &Space) -> Result<()> {
    for (i, alg) in spec.algorithms.iter().enumerate() {
        let Some(start) = alg.start else { continue };
        debug_assert_eq!(alg.kind, AlgorithmKind::Ts);
        let why = if space.grid().is_none() {
            Some("needs a grid objective (a table) on which every agent has measured every point")
        } else if spec.total_agents() < 2 {
            Some("needs another agent whose surface points to the start")
        } else if spec.initial_points == 0 {
            Some("replaces one initial point: set initial_points >= 1")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(FboError::spec(
                &spec.path,
                format!("algorithm[{i}].start"),
                format!("start = \"{}\" {why}", start.name()),
            ));
        }
    }
    Ok(())
}

impl Single {
    pub fn new(ctx: &RunContext, rule: Rule) -> Self {
        let targets = ctx.spec.targets().to_vec();
        let agents = targets
            .iter()
            .map(|&a| Agent {
                learner: Learner::for_run(ctx, a),
                rng: stream(ctx.seed(), ctx.run as u64, a as u64, Purpose::Random),
            })
            .collect();
        let warm = match ctx.algorithm.start {
            Some(start) => targets
                .iter()
                .map(|&a| {
                    reference_point(&ctx.landscape, a, start)
                        .and_then(|i| ctx.landscape.grid().map(|g| g.at(i)))
                })
                .collect(),
            None => vec![None; targets.len()],
        };
        Single {
            agents,
            targets,
            rule,
            warm,
        }
    }
}

impl Agent {
    fn query(&mut self, rule: Rule) -> Result<Query> {
        Ok(Query {
            agent: self.learner.agent,
            point: self.next(rule)?,
            source: match rule {
                Rule::Thompson => Source::Own,
                Rule::Random => Source::Random,
                Rule::Ei(_) | Rule::Ucb { .. } => Source::Acquisition,
            },
        })
    }

    fn next(&mut self, rule: Rule) -> Result<Point> {
        match rule {
            Rule::Random => Ok(self.random()),
            _ => Ok(self.learner.decide(rule, None)?.point),
        }
    }

    fn random(&mut self) -> Point {
        let space = self.learner.space();
        match space.grid() {
            Some(grid) => {
                let (seen, _) = self.learner.observations();
                let mut taken = vec![false; grid.len()];
                for p in seen {
                    if let Some(i) = p.index {
                        taken[i] = true;
                    }
                }
                let free: Vec<usize> = (0..grid.len()).filter(|&i| !taken[i]).collect();
                let i = if free.is_empty() {
                    self.rng.random_range(0..grid.len())
                } else {
                    free[self.rng.random_range(0..free.len())]
                };
                grid.at(i)
            }
            None => space.point((0..space.dim()).map(|_| self.rng.random::<f64>()).collect()),
        }
    }
}

impl Algorithm for Single {
    fn belief(&self, agent: usize) -> Option<super::agent::Belief> {
        let slot = self.targets.iter().position(|&a| a == agent)?;
        (self.rule != Rule::Random).then(|| self.agents[slot].learner.belief(None))
    }

    fn targets(&self) -> &[usize] {
        &self.targets
    }

    fn propose(&mut self, _t: usize) -> Result<Vec<Query>> {
        let rule = self.rule;
        // Independent agents on their own streams: parallel order cannot change the result.
        self.agents.par_iter_mut().map(|a| a.query(rule)).collect()
    }

    fn observe(&mut self, queries: &[Query], ys: &[f64]) {
        for (q, y) in queries.iter().zip(ys) {
            let slot = self
                .targets
                .iter()
                .position(|&a| a == q.agent)
                .expect("query for a target");
            self.agents[slot].learner.add(q.point.clone(), *y);
        }
    }

    fn warm_start(&self, agent: usize) -> Option<Point> {
        let slot = self.targets.iter().position(|&a| a == agent)?;
        self.warm[slot].clone()
    }

    fn federated(&mut self) -> Option<&mut dyn Federated> {
        Some(self)
    }
}

/// Agents alone in a federation: no messages, nothing broadcast; the server only collects
/// their traces.
impl Federated for Single {
    fn message(&mut self, _agent: usize, _t: usize) -> Option<ndarray::Array1<f64>> {
        None
    }

    fn broadcast(
        &mut self,
        _t: usize,
        _messages: &[Option<ndarray::Array1<f64>>],
    ) -> Result<Broadcast> {
        Ok(Broadcast { point: None })
    }

    fn choose(&mut self, agent: usize, _t: usize, _broadcast: &Broadcast) -> Result<Query> {
        let slot = self
            .targets
            .iter()
            .position(|&a| a == agent)
            .expect("a target agent");
        self.agents[slot].query(self.rule)
    }

    fn message_len(&self) -> usize {
        0
    }
}
