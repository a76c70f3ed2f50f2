//! Each agent alone on its own data (no federation), for every target agent independently:
//! standard GP Thompson sampling (the target of the FTS family, or every agent of the DP
//! family), and the baselines every BO benchmark reports (issue 27 item 1): uniform random
//! search, GP-EI and GP-UCB on the same GP and hyperparameter fitting as TS's own model (the
//! spec's `surrogate.own`). TS may start from a practitioner's reference (`start`, issue 39):
//! the configuration the other agents' measured surfaces point to, evaluated in place of the
//! last random initial point.

use super::agent::Learner;
use super::{Algorithm, Broadcast, Federated, Pending, Query, Received, RunContext, Source};
use crate::error::{FboError, Result};
use crate::math::rng::{Purpose, Rng, stream};
use crate::objective::{Landscape, Point, Space};
use crate::spec::{AlgorithmKind, Fantasy, Start};
use crate::surrogate::gp::GpHyper;
use rand::Rng as _;
use rayon::prelude::*;

pub use super::agent::Rule;

struct Agent {
    learner: Learner,
    rng: Rng,
    /// What EI and UCB take a pending point to have returned (`fantasy`).
    fantasy: Fantasy,
}

pub struct Single {
    agents: Vec<Agent>,
    targets: Vec<usize>,
    rule: Rule,
    /// Each target's reference point (`start`), in target order.
    warm: Vec<Option<Point>>,
    /// Queries per agent per round (`batch`).
    batch: usize,
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
                fantasy: ctx.algorithm.fantasy,
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
            batch: ctx.spec.batch,
        }
    }
}

impl Agent {
    /// The agent's `k` queries of one round. TS: k independent posterior samples' argmaxes
    /// (Kandasamy et al. 2018's parallel TS). EI and UCB: each point chosen is added at a
    /// believed value before the next is chosen, with the round's hyperparameters held: a
    /// constant liar (Ginsbourger, Le Riche and Carraro 2010, CL-min: the worst value observed
    /// so far, so the batch spreads) or the Kriging believer (the posterior mean there).
    /// Random: k draws, on a grid without replacement across the batch.
    fn round(&mut self, rule: Rule, k: usize) -> Result<Vec<Query>> {
        let first = self.next(rule, None)?;
        let mut points = vec![first];
        if k > 1 {
            let hyper = self.learner.hyper().clone();
            for _ in 1..k {
                let point = self.next_beside(rule, &points, &hyper)?;
                points.push(point);
            }
        }
        Ok(points.into_iter().map(|p| self.query(rule, p)).collect())
    }

    fn query(&self, rule: Rule, point: Point) -> Query {
        let source = match rule {
            Rule::Thompson => Source::Own,
            Rule::Random => Source::Random,
            Rule::Ei(_) | Rule::Ucb { .. } => Source::Acquisition,
        };
        Query {
            agent: self.learner.agent,
            point,
            source,
        }
    }

    /// The next point by `rule` with `pending` points being evaluated, on `hyper` held. TS's
    /// samples are independent: the pending points do not enter its model. The others see
    /// each pending point at its `fantasy` value.
    fn next_beside(&mut self, rule: Rule, pending: &[Point], hyper: &GpHyper) -> Result<Point> {
        let pending: Vec<(Point, f64)> = match (rule, self.fantasy) {
            (Rule::Thompson, _) => Vec::new(),
            (_, Fantasy::ConstantLiar) => {
                let (_, ys) = self.learner.observations();
                let lie = ys.iter().cloned().fold(f64::INFINITY, f64::min);
                let lie = if lie.is_finite() { lie } else { 0.0 };
                pending.iter().map(|p| (p.clone(), lie)).collect()
            }
            (_, Fantasy::KrigingBeliever) => self.believed(pending, hyper)?,
        };
        self.with_pending(&pending, |a| a.next(rule, Some(hyper)))
    }

    /// The pending points at the posterior mean under `hyper`, on the observations' own
    /// scale, each conditioned on the observations and the points believed before it.
    fn believed(&mut self, pending: &[Point], hyper: &GpHyper) -> Result<Vec<(Point, f64)>> {
        let mut out: Vec<(Point, f64)> = Vec::with_capacity(pending.len());
        for p in pending {
            let believed = out.clone();
            let mean = self.with_pending(&believed, |a| a.mean_at(p, hyper))?;
            out.push((p.clone(), mean));
        }
        Ok(out)
    }

    /// The posterior mean of the agent's model at `p` under `hyper`, on the scale of its
    /// observations (the model's standardisation undone).
    fn mean_at(&self, p: &Point, hyper: &GpHyper) -> Result<f64> {
        let post = self.learner.posterior(hyper)?;
        let x = ndarray::Array2::from_shape_vec((1, p.x.len()), p.x.clone())
            .expect("one row of the point's coordinates");
        let m = post.predict(x.view()).0[0];
        if !self.learner.settings().normalize_y {
            return Ok(m);
        }
        let (mean, sd) = crate::surrogate::gp::standardization(self.learner.observations().1);
        Ok(mean + sd * m)
    }

    /// The next query with `pending` points still being evaluated (`parallel = k`): the
    /// model refits on what has returned when its schedule says so, then chooses as a
    /// batch's later point does.
    fn next_pending(&mut self, rule: Rule, pending: &[Point]) -> Result<Query> {
        let point = if pending.is_empty() {
            self.next(rule, None)?
        } else {
            let hyper = match rule {
                Rule::Random => self.learner.hyper().clone(),
                _ => self.learner.fitted_hyper(),
            };
            self.next_beside(rule, pending, &hyper)?
        };
        Ok(self.query(rule, point))
    }

    /// `f` on this agent with `pending` among its observations, which are dropped after it.
    fn with_pending<T>(&mut self, pending: &[(Point, f64)], f: impl FnOnce(&mut Self) -> T) -> T {
        let n = self.learner.n_obs();
        for (p, y) in pending {
            self.learner.add(p.clone(), *y);
        }
        let out = f(self);
        self.learner.truncate(n);
        out
    }

    /// The next point by `rule`, on the agent's own fit or, when given, `hyper` held.
    fn next(&mut self, rule: Rule, hyper: Option<&GpHyper>) -> Result<Point> {
        match rule {
            Rule::Random => Ok(self.random()),
            _ => Ok(self.learner.decide(rule, hyper)?.point),
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
        let k = self.batch;
        // Independent agents on their own streams: parallel order cannot change the result.
        let rounds: Vec<Vec<Query>> = self
            .agents
            .par_iter_mut()
            .map(|a| a.round(rule, k))
            .collect::<Result<_>>()?;
        Ok(rounds.into_iter().flatten().collect())
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

    fn pending(&mut self) -> Option<&mut dyn Pending> {
        Some(self)
    }
}

impl Pending for Single {
    fn propose_pending(&mut self, agent: usize, _t: usize, pending: &[Point]) -> Result<Query> {
        let slot = self
            .targets
            .iter()
            .position(|&a| a == agent)
            .expect("a target agent");
        self.agents[slot].next_pending(self.rule, pending)
    }
}

/// Agents alone in a federation: no messages, nothing broadcast; the server only collects
/// their traces.
impl Federated for Single {
    fn message(&mut self, _agent: usize, _t: usize) -> Result<Option<ndarray::Array1<f64>>> {
        Ok(None)
    }

    fn broadcast(
        &mut self,
        _t: usize,
        _messages: &[Option<ndarray::Array1<f64>>],
    ) -> Result<Broadcast> {
        Ok(Broadcast::none())
    }

    fn choose(&mut self, agent: usize, _t: usize, _received: &Received) -> Result<Query> {
        let slot = self
            .targets
            .iter()
            .position(|&a| a == agent)
            .expect("a target agent");
        // One query: an agent at its own pace has one evaluation in flight.
        let mut round = self.agents[slot].round(self.rule, 1)?;
        Ok(round.remove(0))
    }

    fn choose_round(
        &mut self,
        agent: usize,
        _t: usize,
        _received: &Received,
    ) -> Result<Vec<Query>> {
        let slot = self
            .targets
            .iter()
            .position(|&a| a == agent)
            .expect("a target agent");
        self.agents[slot].round(self.rule, self.batch)
    }

    fn message_len(&self) -> usize {
        0
    }
}
