//! Each agent alone on its own data (no federation), for every target agent independently:
//! standard GP Thompson sampling (the target of the FTS family, or every agent of the DP
//! family), and the baselines every BO benchmark reports (issue 27 item 1): uniform random
//! search, GP-EI and GP-UCB on the same GP and hyperparameter fitting as TS's own model (the
//! spec's `surrogate.own`).

use super::agent::Learner;
use super::{Algorithm, Broadcast, Federated, Query, RunContext, Source};
use crate::error::Result;
use crate::objective::Point;
use crate::rng::{Purpose, Rng, stream};
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
        Single {
            agents,
            targets,
            rule,
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
                Rule::Ei | Rule::Ucb { .. } => Source::Acquisition,
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
