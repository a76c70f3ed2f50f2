//! Each agent alone on its own data (no federation), for every target agent independently:
//! standard GP Thompson sampling (the target of the FTS family, or every agent of the DP
//! family), and the baselines every BO benchmark reports (issue 27 item 1): uniform random
//! search, GP-EI and GP-UCB on the same GP and hyperparameter fitting as TS's own model (the
//! spec's `surrogate.own`).

use super::agent::Learner;
use super::{Algorithm, Query, RunContext, Source};
use crate::acquisition::{ei_grad, expected_improvement, ucb_beta, ucb_grad};
use crate::error::{FboError, Result};
use crate::objective::{Point, Region};
use crate::rng::{Purpose, Rng, stream};
use crate::surrogate::gp::GpPosterior;
use rand::Rng as _;
use rayon::prelude::*;

/// GP-UCB's delta in Srinivas et al.'s beta_t (`crate::acquisition::ucb_beta`).
const UCB_DELTA: f64 = 0.1;

/// How an agent chooses its next query.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rule {
    /// The argmax of a sample from its own GP posterior (TS).
    Thompson,
    /// Uniform: on a grid without replacement (until every point was queried), on a box
    /// uniform on [0, 1]^D.
    Random,
    /// Expected improvement over the best observation, on the GP posterior of the
    /// standardised observations (BoTorch's best_f = Y.max()).
    Ei,
    /// Upper confidence bound mean + sqrt(beta_t) sd: a fixed beta, or None for Srinivas et
    /// al.'s schedule at t = the number of observations.
    Ucb { beta: Option<f64> },
}

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
    fn next(&mut self, rule: Rule) -> Result<Point> {
        match rule {
            Rule::Thompson => return self.learner.thompson(),
            Rule::Random => return Ok(self.random()),
            Rule::Ei | Rule::Ucb { .. } => {}
        }
        let hyper = self.learner.fitted_hyper();
        let x = self.learner.inputs();
        let y = self.learner.scaled_ys();
        let post = GpPosterior::fit(x.view(), y.view(), &hyper).ok_or_else(|| {
            FboError::Run(format!(
                "agent {}'s GP posterior is singular; raise the noise lower bound",
                self.learner.agent
            ))
        })?;
        let best = y.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let space = self.learner.space();
        let domain = match space.grid() {
            Some(g) => g.len(),
            None => self.learner.search().candidates,
        };
        let beta = match rule {
            Rule::Ucb { beta: Some(b) } => b,
            _ => ucb_beta(y.len(), domain, UCB_DELTA),
        };
        if let Some(grid) = space.grid() {
            let (mean, var) = post.predict(grid.points());
            let score = |m: f64, v: f64| match rule {
                Rule::Ei => expected_improvement(m, v.max(0.0).sqrt(), best),
                _ => m + (beta * v.max(0.0)).sqrt(),
            };
            // The first maximiser, as argmax everywhere in fbo.
            let mut arg = 0;
            let mut top = f64::NEG_INFINITY;
            for (i, (&m, &v)) in mean.iter().zip(&var).enumerate() {
                let s = score(m, v);
                if s > top {
                    top = s;
                    arg = i;
                }
            }
            return Ok(grid.at(arg));
        }
        let region = Region::unit(x.ncols());
        let mut acq = |p: &[f64], g: Option<&mut [f64]>| {
            let (m, v, dm, dv) = post.predict_grad(p);
            let (value, grad) = match rule {
                Rule::Ei => ei_grad(m, v, &dm, &dv, best),
                _ => ucb_grad(m, v, &dm, &dv, beta),
            };
            if let Some(g) = g {
                g.copy_from_slice(&grad);
            }
            value
        };
        self.learner.acquire(&mut acq, &region)
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
            None => Point::free((0..space.dim()).map(|_| self.rng.random::<f64>()).collect()),
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
        self.agents
            .par_iter_mut()
            .map(|a| {
                Ok(Query {
                    agent: a.learner.agent,
                    point: a.next(rule)?,
                    source: match rule {
                        Rule::Thompson => Source::Own,
                        Rule::Random => Source::Random,
                        Rule::Ei | Rule::Ucb { .. } => Source::Acquisition,
                    },
                })
            })
            .collect()
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
}
