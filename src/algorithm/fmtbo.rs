//! FMTBO (Zhu, Wang, Jin, "Federated many-task Bayesian optimization", IEEE TEVC 2024),
//! after its public implementation: every agent keeps a local GP and a global one. The
//! global GP is the agent's own data under length scales averaged (FedAvg) over the agents
//! whose models rank a shared set of points most like its own; the agent maximises
//! gamma EI_global + (1 - gamma) EI_local.

use super::agent::{Learner, observe_all};
use super::{Algorithm, Broadcast, Federated, Query, Received, RunContext, Source};
use crate::acquisition::{
    ei_grad, expected_improvement, log_ei_grad, log_expected_improvement, log_mix,
};
use crate::error::Result;
use crate::math::rng::{Purpose, SHARED, stream};
use crate::objective::space::Domain;
use crate::spec::frameworks::Framework;
use crate::surrogate::gp::GpHyper;
use ndarray::{Array1, Array2};
use rand::Rng as _;
use rand::seq::index::sample as sample_indices;
use rayon::prelude::*;

/// Discordant pairs between two rankings of the same points (the implementation's ranking
/// loss): pairs (a, b), a < b, ordered one way by `u` and the other by `v`.
pub fn discordant(u: &[f64], v: &[f64]) -> usize {
    let mut n = 0;
    for a in 0..u.len() {
        for b in a + 1..u.len() {
            if (u[a] < u[b]) != (v[a] < v[b]) {
                n += 1;
            }
        }
    }
    n
}

/// The agents whose rankings are nearest agent k's: the `take` smallest losses, k itself
/// first (its loss is 0), ties by index.
pub fn nearest(losses: &[usize], k: usize, take: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..losses.len()).collect();
    order.sort_by_key(|&j| (losses[j], j != k, j));
    order.truncate(take.max(1));
    order
}

/// FedAvg of length scales (one per axis, or one for all: isotropic) on the implementation's
/// scale theta = 1 / (2 l^2) per axis (an isotropic agent counts on every axis), equal weights.
pub fn average_length_scales(scales: &[&[f64]], dim: usize) -> Vec<f64> {
    (0..dim)
        .map(|d| {
            let theta = scales
                .iter()
                .map(|ls| {
                    let l = ls[if ls.len() == 1 { 0 } else { d }];
                    0.5 / (l * l)
                })
                .sum::<f64>()
                / scales.len() as f64;
            (0.5 / theta).sqrt()
        })
        .collect()
}

/// The agent's own likelihood maximised from `start` alone (one local L-BFGS run, no random
/// starts): the global model's hyperparameters stay near the averaged ones where the agent's
/// data allow. `start` itself where the fit fails.
fn refit_from(a: &Learner, start: GpHyper) -> GpHyper {
    let model = a.settings().model;
    let budget = crate::surrogate::gp::FitBudget {
        starts: 0,
        restarts: 0,
    };
    // No random starts are drawn: the stream is never read.
    let mut unused = stream(0, 0, 0, Purpose::HyperFit);
    crate::surrogate::gp::fit_hyperparameters(
        a.inputs().view(),
        a.scaled_ys().view(),
        &model,
        budget,
        Some(&start),
        &mut unused,
    )
    .unwrap_or(start)
}

pub struct Fmtbo {
    agents: Vec<Learner>,
    targets: Vec<usize>,
    gamma: f64,
    fraction: f64,
    /// The shared ranking set, one row per point (unit coordinates).
    shared: Array2<f64>,
    refit: bool,
    /// The acquisition from log-EI (`ei = "log"`).
    log_ei: bool,
    /// Per agent, the local fit it made with its last message (kept for its choice).
    locals: Vec<Option<GpHyper>>,
}

impl Fmtbo {
    pub fn new(ctx: &RunContext) -> Self {
        let Framework::Fmtbo {
            gamma,
            fraction,
            shared_points,
            refit,
            log_ei,
        } = ctx.algorithm.framework
        else {
            unreachable!("fmtbo specs carry fmtbo settings")
        };
        let n = ctx.landscape.agents();
        let space = &ctx.landscape.space;
        let mut rng = stream(ctx.seed(), ctx.run as u64, SHARED, Purpose::SharedPoints);
        let shared = match space.grid() {
            Some(g) => {
                let idx = sample_indices(&mut rng, g.len(), shared_points.min(g.len()));
                g.points().select(ndarray::Axis(0), &idx.into_vec())
            }
            None => Array2::from_shape_fn((shared_points, space.dim()), |_| rng.random::<f64>()),
        };
        Fmtbo {
            agents: (0..n).map(|a| Learner::for_run(ctx, a)).collect(),
            targets: (0..n).collect(),
            gamma,
            fraction,
            shared,
            refit,
            log_ei,
            locals: vec![None; n],
        }
    }
}

/// Agent `a`'s query: the maximiser of gamma EI under its global model + (1 - gamma) EI
/// under its local one, both on its own data (with `log_ei`, of the log of that sum, formed
/// from log-EI: the same maximiser where the EIs do not underflow).
fn choose_one(
    a: &mut Learner,
    local: &GpHyper,
    global: GpHyper,
    gamma: f64,
    refit: bool,
    log_ei: bool,
) -> Result<Query> {
    let global = if refit { refit_from(a, global) } else { global };
    let pl = a.posterior(local)?;
    let pg = a.posterior(&global)?;
    let y = a.scaled_ys();
    let best = y.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let grid_scores = |grid: &Domain| {
        let (ml, vl) = pl.predict(grid.points());
        let (mg, vg) = pg.predict(grid.points());
        (0..grid.len())
            .map(|i| {
                let (sg, sl) = (vg[i].max(0.0).sqrt(), vl[i].max(0.0).sqrt());
                if log_ei {
                    let eg = log_expected_improvement(mg[i], sg, best);
                    let el = log_expected_improvement(ml[i], sl, best);
                    log_mix(&[(gamma, eg, &[]), (1.0 - gamma, el, &[])]).0
                } else {
                    gamma * expected_improvement(mg[i], sg, best)
                        + (1.0 - gamma) * expected_improvement(ml[i], sl, best)
                }
            })
            .collect()
    };
    let mut acq = |x: &[f64], g: Option<&mut [f64]>| {
        if log_ei {
            let (m, v, dm, dv) = pg.predict_grad(x);
            let (eg, dg) = log_ei_grad(m, v, &dm, &dv, best);
            let (m, v, dm, dv) = pl.predict_grad(x);
            let (el, dl) = log_ei_grad(m, v, &dm, &dv, best);
            let (value, grad) = log_mix(&[(gamma, eg, &dg), (1.0 - gamma, el, &dl)]);
            if let Some(g) = g {
                g.copy_from_slice(&grad);
            }
            return value;
        }
        let (m, v, dm, dv) = pg.predict_grad(x);
        let (eg, dg) = ei_grad(m, v, &dm, &dv, best);
        let (m, v, dm, dv) = pl.predict_grad(x);
        let (el, dl) = ei_grad(m, v, &dm, &dv, best);
        if let Some(g) = g {
            for (gi, (a, b)) in g.iter_mut().zip(dg.iter().zip(&dl)) {
                *gi = gamma * a + (1.0 - gamma) * b;
            }
        }
        gamma * eg + (1.0 - gamma) * el
    };
    let point = a.maximise(grid_scores, &mut acq)?;
    Ok(Query {
        agent: a.agent,
        point,
        source: Source::Acquisition,
    })
}

impl Fmtbo {
    /// Agent `a`'s local fit and what it sends: its length scales on every axis (D numbers)
    /// and its model's ranking of the shared points (their posterior means).
    fn local(a: &mut Learner, shared: &Array2<f64>) -> Result<(GpHyper, Array1<f64>)> {
        let h = a.fitted_hyper();
        let (mean, _) = a.posterior(&h)?.predict(shared.view());
        let dim = shared.ncols();
        let ls = &h.length_scales;
        let axes = (0..dim).map(|d| ls[if ls.len() == 1 { 0 } else { d }]);
        let message = axes.chain(mean.iter().copied()).collect();
        Ok((h, message))
    }

    /// The server's step: per agent whose message arrived, FedAvg of the length scales of
    /// the `fraction` of senders whose rankings are nearest its own (itself first); the
    /// averaged length scales (D numbers) go back to it alone.
    fn relay(&self, messages: &[Option<Array1<f64>>]) -> Broadcast {
        let dim = self.shared.ncols();
        let senders = super::senders(messages);
        let k = senders.len();
        let take = ((k as f64) * self.fraction).floor() as usize;
        let ranking = |i: usize| senders[i].1.slice(ndarray::s![dim..]).to_vec();
        let scales = |i: usize| senders[i].1.slice(ndarray::s![..dim]).to_vec();
        let rankings: Vec<Vec<f64>> = (0..k).map(ranking).collect();
        let all_scales: Vec<Vec<f64>> = (0..k).map(scales).collect();
        let mut to_each = vec![Received::default(); messages.len()];
        for (i, &(a, _)) in senders.iter().enumerate() {
            let losses: Vec<usize> = (0..k)
                .map(|j| discordant(&rankings[i], &rankings[j]))
                .collect();
            let near = nearest(&losses, i, take);
            let ls: Vec<&[f64]> = near.iter().map(|&j| all_scales[j].as_slice()).collect();
            to_each[a].shared = average_length_scales(&ls, dim);
        }
        Broadcast {
            all: Received::default(),
            to_each,
        }
    }
}

impl Federated for Fmtbo {
    fn message(&mut self, agent: usize, _t: usize) -> Result<Option<Array1<f64>>> {
        // A local model that fails sends nothing; the agent fits again to choose.
        let Ok((h, m)) = Self::local(&mut self.agents[agent], &self.shared) else {
            return Ok(None);
        };
        self.locals[agent] = Some(h);
        Ok(Some(m))
    }

    fn broadcast(&mut self, _t: usize, messages: &[Option<Array1<f64>>]) -> Result<Broadcast> {
        Ok(self.relay(messages))
    }

    fn choose(&mut self, agent: usize, _t: usize, received: &Received) -> Result<Query> {
        let local = match self.locals[agent].take() {
            Some(h) => h,
            None => Self::local(&mut self.agents[agent], &self.shared)?.0,
        };
        // No average received (its message was lost): its global model is its local one.
        let global = match received.shared.is_empty() {
            true => local.clone(),
            false => GpHyper {
                length_scales: received.shared.clone(),
                ..local.clone()
            },
        };
        choose_one(
            &mut self.agents[agent],
            &local,
            global,
            self.gamma,
            self.refit,
            self.log_ei,
        )
    }

    fn message_len(&self) -> usize {
        self.shared.ncols() + self.shared.nrows()
    }

    fn release_reusable(&self) -> bool {
        true
    }
}

impl Algorithm for Fmtbo {
    fn belief(&self, agent: usize) -> Option<super::agent::Belief> {
        self.agents.get(agent).map(|l| l.belief(None))
    }

    fn targets(&self) -> &[usize] {
        &self.targets
    }

    fn propose(&mut self, _t: usize) -> Result<Vec<Query>> {
        // The three steps a real federation takes; each agent acts on its own streams, so
        // acting in parallel cannot change the result.
        let shared = &self.shared;
        let locals: Vec<(GpHyper, Array1<f64>)> = self
            .agents
            .par_iter_mut()
            .map(|a| Self::local(a, shared))
            .collect::<Result<_>>()?;
        let messages: Vec<Option<Array1<f64>>> =
            locals.iter().map(|(_, m)| Some(m.clone())).collect();
        let broadcast = self.relay(&messages);
        let (gamma, refit, log_ei) = (self.gamma, self.refit, self.log_ei);
        self.agents
            .par_iter_mut()
            .zip(locals)
            .enumerate()
            .map(|(k, (a, (local, _)))| {
                let global = GpHyper {
                    length_scales: broadcast.for_agent(k).shared.clone(),
                    ..local.clone()
                };
                choose_one(a, &local, global, gamma, refit, log_ei)
            })
            .collect()
    }

    fn observe(&mut self, queries: &[Query], ys: &[f64]) {
        observe_all(&mut self.agents, queries, ys);
    }

    /// Each agent sends its length scales (D numbers) and its ranking of the shared points
    /// every round.
    fn params_sent(&self, _agent: usize, t: usize) -> u64 {
        (self.message_len() * t) as u64
    }

    fn federated(&mut self) -> Option<&mut dyn Federated> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::surrogate::gp::Kernel;

    /// The server's step by hand on 1-D messages (length scale, ranking of two points):
    /// with fraction 1 each sender gets the average of all senders' length scales, agent 1's
    /// message lost leaves it nothing; with fraction 0.5 of 3 senders (1 nearest) each gets
    /// its own back.
    #[test]
    fn each_sender_gets_the_average_over_its_nearest_senders() {
        let fmtbo = |fraction| Fmtbo {
            agents: Vec::new(),
            targets: Vec::new(),
            gamma: 0.5,
            fraction,
            shared: Array2::zeros((2, 1)),
            refit: false,
            log_ei: false,
            locals: Vec::new(),
        };
        let m = |l: f64, r: [f64; 2]| Some(Array1::from(vec![l, r[0], r[1]]));
        let messages = [m(0.5, [0.0, 1.0]), None, m(1.0, [1.0, 0.0])];
        let b = fmtbo(1.0).relay(&messages);
        // theta = (2 + 0.5) / 2 = 1.25, l = sqrt(0.5 / 1.25).
        let l = (0.5f64 / 1.25).sqrt();
        for a in [0, 2] {
            assert_eq!(b.for_agent(a).shared.len(), 1);
            assert!((b.for_agent(a).shared[0] - l).abs() < 1e-15);
        }
        assert!(b.for_agent(1).shared.is_empty());
        let three = [m(0.5, [0.0, 1.0]), m(0.7, [0.0, 1.0]), m(1.0, [1.0, 0.0])];
        let own = fmtbo(0.5).relay(&three);
        for (a, want) in [(0, 0.5), (1, 0.7), (2, 1.0)] {
            assert!((own.for_agent(a).shared[0] - want).abs() < 1e-15);
        }
    }

    #[test]
    fn ranking_loss_nearest_agents_and_the_average() {
        assert_eq!(discordant(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]), 0);
        assert_eq!(discordant(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), 3);
        assert_eq!(discordant(&[1.0, 2.0, 3.0], &[1.0, 3.0, 2.0]), 1);
        // Agent 1 first, then the smallest losses, ties by index.
        assert_eq!(nearest(&[2, 0, 0, 5], 1, 3), vec![1, 2, 0]);
        assert_eq!(nearest(&[2, 0, 0, 5], 1, 0), vec![1]);
        let a = GpHyper::isotropic(Kernel::Se, 0.5, 1.0, 0.01);
        let mut b = GpHyper::isotropic(Kernel::Se, 1.0, 1.0, 0.01);
        b.length_scales = vec![1.0, 0.25];
        let l = average_length_scales(&[&a.length_scales, &b.length_scales], 2);
        // theta: (2 + 0.5) / 2 and (2 + 8) / 2.
        assert!((l[0] - (0.5f64 / 1.25).sqrt()).abs() < 1e-12);
        assert!((l[1] - (0.5f64 / 5.0).sqrt()).abs() < 1e-12);
    }
}
