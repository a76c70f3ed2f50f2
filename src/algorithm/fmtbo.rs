//! FMTBO (Zhu, Wang, Jin, "Federated many-task Bayesian optimization", IEEE TEVC 2024),
//! after its public implementation: every agent keeps a local GP and a global one. The
//! global GP is the agent's own data under length scales averaged (FedAvg) over the agents
//! whose models rank a shared set of points most like its own; the agent maximises
//! gamma EI_global + (1 - gamma) EI_local.

use super::agent::{Learner, observe_all};
use super::{Algorithm, Query, RunContext, Source};
use crate::acquisition::{ei_grad, expected_improvement};
use crate::error::Result;
use crate::math::rng::{Purpose, SHARED, stream};
use crate::objective::space::Domain;
use crate::spec::frameworks::Framework;
use crate::surrogate::gp::GpHyper;
use ndarray::Array2;
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

/// FedAvg of length scales on the implementation's scale theta = 1 / (2 l^2) per axis (an
/// isotropic agent counts on every axis), equal weights.
pub fn average_length_scales(hypers: &[&GpHyper], dim: usize) -> Vec<f64> {
    (0..dim)
        .map(|d| {
            let theta = hypers
                .iter()
                .map(|h| {
                    let l = h.length_scales[if h.length_scales.len() == 1 { 0 } else { d }];
                    0.5 / (l * l)
                })
                .sum::<f64>()
                / hypers.len() as f64;
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
}

impl Fmtbo {
    pub fn new(ctx: &RunContext) -> Self {
        let Framework::Fmtbo {
            gamma,
            fraction,
            shared_points,
            refit,
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
        }
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
        let shared = &self.shared;
        // Each agent: its local fit and its model's ranking of the shared points.
        let locals: Vec<(GpHyper, Vec<f64>)> = self
            .agents
            .par_iter_mut()
            .map(|a| {
                let h = a.fitted_hyper();
                let (mean, _) = a.posterior(&h)?.predict(shared.view());
                Ok((h, mean.to_vec()))
            })
            .collect::<Result<_>>()?;
        let k = locals.len();
        let take = ((k as f64) * self.fraction).floor() as usize;
        let dim = self.shared.ncols();
        // The server: per agent, FedAvg over its nearest rankings.
        let globals: Vec<GpHyper> = (0..k)
            .map(|i| {
                let losses: Vec<usize> = (0..k)
                    .map(|j| discordant(&locals[i].1, &locals[j].1))
                    .collect();
                let near = nearest(&losses, i, take);
                let hs: Vec<&GpHyper> = near.iter().map(|&j| &locals[j].0).collect();
                GpHyper {
                    length_scales: average_length_scales(&hs, dim),
                    ..locals[i].0.clone()
                }
            })
            .collect();
        let (gamma, refit) = (self.gamma, self.refit);
        self.agents
            .par_iter_mut()
            .zip(locals)
            .zip(globals)
            .map(|((a, (local, _)), global)| {
                let global = if refit { refit_from(a, global) } else { global };
                let pl = a.posterior(&local)?;
                let pg = a.posterior(&global)?;
                let y = a.scaled_ys();
                let best = y.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let grid_scores = |grid: &Domain| {
                    let (ml, vl) = pl.predict(grid.points());
                    let (mg, vg) = pg.predict(grid.points());
                    (0..grid.len())
                        .map(|i| {
                            gamma * expected_improvement(mg[i], vg[i].max(0.0).sqrt(), best)
                                + (1.0 - gamma)
                                    * expected_improvement(ml[i], vl[i].max(0.0).sqrt(), best)
                        })
                        .collect()
                };
                let mut acq = |x: &[f64], g: Option<&mut [f64]>| {
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
            })
            .collect()
    }

    fn observe(&mut self, queries: &[Query], ys: &[f64]) {
        observe_all(&mut self.agents, queries, ys);
    }

    /// Each agent sends its length scales (D numbers, the implementation's theta) and its
    /// ranking of the shared points every round.
    fn params_sent(&self, t: usize) -> u64 {
        ((self.shared.ncols() + self.shared.nrows()) * t) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::surrogate::gp::Kernel;

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
        let l = average_length_scales(&[&a, &b], 2);
        // theta: (2 + 0.5) / 2 and (2 + 8) / 2.
        assert!((l[0] - (0.5f64 / 1.25).sqrt()).abs() < 1e-12);
        assert!((l[1] - (0.5f64 / 5.0).sqrt()).abs() < 1e-12);
    }
}
