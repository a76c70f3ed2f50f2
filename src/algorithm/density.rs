//! Shared optimal-design densities (survey Sec. III-B2, eq. 8, in the spirit of piBO, its
//! ref. [30]): every agent shares a density pi_k over where its optimum lies, and each agent
//! maximises its own EI times the product of the others' densities raised to beta / t, so
//! that the others' beliefs steer early queries and fade as its own data grow.

use super::agent::{Learner, observe_all};
use super::{Algorithm, Broadcast, Federated, Query, Received, RunContext, Source};
use crate::acquisition::{ei_grad, expected_improvement, log_ei_grad, log_expected_improvement};
use crate::error::Result;
use crate::objective::space::Domain;
use crate::spec::frameworks::{Density, Framework};
use ndarray::Array1;
use rayon::prelude::*;

/// ln pi(x) up to a constant for a mixture of equal-weight isotropic Gaussians of standard
/// deviation `width` at `centres`, and its gradient: logsumexp_s(-|x - c_s|^2 / (2 w^2)).
/// Constants do not move an argmax, so they are left out.
pub fn log_mixture(x: &[f64], centres: &[Vec<f64>], width: f64) -> (f64, Vec<f64>) {
    let inv = 1.0 / (width * width);
    let e: Vec<f64> = centres
        .iter()
        .map(|c| -0.5 * inv * c.iter().zip(x).map(|(a, b)| (a - b) * (a - b)).sum::<f64>())
        .collect();
    let top = e.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let weights: Vec<f64> = e.iter().map(|v| libm::exp(v - top)).collect();
    let total: f64 = weights.iter().sum();
    let mut grad = vec![0.0; x.len()];
    for (c, w) in centres.iter().zip(&weights) {
        for (g, (xi, ci)) in grad.iter_mut().zip(x.iter().zip(c)) {
            *g += -(xi - ci) * inv * w / total;
        }
    }
    (top + libm::log(total), grad)
}

/// ln of plain EI (and its gradient) as eq. 8's product in logs takes it: EI below 1e-300 is
/// floored there, where the score has no gradient.
fn ln_plain_ei((e, de): (f64, Vec<f64>)) -> (f64, Vec<f64>) {
    if e <= 1e-300 {
        return (libm::log(e.max(1e-300)), vec![0.0; de.len()]);
    }
    (libm::log(e), de.iter().map(|d| d / e).collect())
}

/// ln EI (`ln_ei`: plain EI's log or log-EI, with its gradient) plus `power` times the sum of
/// the others' log densities, and its gradient: the log of eq. 8's product (the same argmax,
/// without its underflow).
fn score(
    ln_ei: (f64, Vec<f64>),
    x: &[f64],
    others: &[&Vec<Vec<f64>>],
    width: f64,
    power: f64,
) -> (f64, Vec<f64>) {
    let (mut v, mut g) = ln_ei;
    for centres in others {
        let (lp, dlp) = log_mixture(x, centres, width);
        v += power * lp;
        for (gi, d) in g.iter_mut().zip(dlp) {
            *gi += power * d;
        }
    }
    (v, g)
}

pub struct DesignDensity {
    agents: Vec<Learner>,
    targets: Vec<usize>,
    density: Density,
    width: f64,
    beta: f64,
    constant_power: bool,
    /// The score's EI term from log-EI (`ei = "log"`).
    log_ei: bool,
    iterations: usize,
}

impl DesignDensity {
    pub fn new(ctx: &RunContext) -> Self {
        let Framework::DesignDensity {
            density,
            width,
            beta,
            constant_power,
            log_ei,
        } = ctx.algorithm.framework
        else {
            unreachable!("design-density specs carry its settings")
        };
        let n = ctx.landscape.agents();
        DesignDensity {
            agents: (0..n).map(|a| Learner::for_run(ctx, a)).collect(),
            targets: (0..n).collect(),
            density,
            width,
            // piBO's recommendation: beta = budget / 10.
            beta: beta.unwrap_or(ctx.spec.iterations as f64 / 10.0),
            constant_power,
            log_ei,
            iterations: ctx.spec.iterations,
        }
    }
}

/// The centres of agent `a`'s shared density.
fn centres(a: &mut Learner, density: Density) -> Result<Vec<Vec<f64>>> {
    Ok(match density {
        Density::Incumbent => {
            let (points, ys) = a.observations();
            let mut best = 0;
            for (i, y) in ys.iter().enumerate() {
                if *y > ys[best] {
                    best = i;
                }
            }
            vec![points[best].x.clone()]
        }
        Density::Thompson { samples } => (0..samples)
            .map(|_| Ok(a.thompson()?.x))
            .collect::<Result<Vec<_>>>()?,
        Density::Lcb { eta } => {
            let hyper = a.fitted_hyper();
            let post = a.posterior(&hyper)?;
            vec![a.lcb_design(&post, eta)?.0.x]
        }
    })
}

/// Agent `k`'s query: the maximiser of its EI times the others' densities (`others`: each
/// other agent's centres) raised to `power` (eq. 8, in logs).
fn choose_one(
    a: &mut Learner,
    k: usize,
    others: &[Vec<Vec<f64>>],
    width: f64,
    power: f64,
    log_ei: bool,
) -> Result<Query> {
    let others: Vec<&Vec<Vec<f64>>> = others.iter().collect();
    let hyper = a.fitted_hyper();
    let post = a.posterior(&hyper)?;
    let y = a.scaled_ys();
    let best = y.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let grid_scores = |grid: &Domain| {
        let (mean, var) = post.predict(grid.points());
        (0..grid.len())
            .map(|i| {
                let x = grid.point(i).to_vec();
                let sd = var[i].max(0.0).sqrt();
                let ln_ei = if log_ei {
                    (
                        log_expected_improvement(mean[i], sd, best),
                        vec![0.0; x.len()],
                    )
                } else {
                    ln_plain_ei((expected_improvement(mean[i], sd, best), vec![0.0; x.len()]))
                };
                score(ln_ei, &x, &others, width, power).0
            })
            .collect()
    };
    let mut acq = |x: &[f64], g: Option<&mut [f64]>| {
        let (m, v, dm, dv) = post.predict_grad(x);
        let ln_ei = if log_ei {
            log_ei_grad(m, v, &dm, &dv, best)
        } else {
            ln_plain_ei(ei_grad(m, v, &dm, &dv, best))
        };
        let (s, ds) = score(ln_ei, x, &others, width, power);
        if let Some(g) = g {
            g.copy_from_slice(&ds);
        }
        s
    };
    let point = a.maximise(grid_scores, &mut acq)?;
    Ok(Query {
        agent: k,
        point,
        source: Source::Acquisition,
    })
}

impl DesignDensity {
    /// Centres per agent's density.
    fn per(&self) -> usize {
        match self.density {
            Density::Incumbent | Density::Lcb { .. } => 1,
            Density::Thompson { samples } => samples,
        }
    }

    /// The others' densities' power at iteration t: beta / t (piBO), or beta / T throughout.
    fn power(&self, t: usize) -> f64 {
        let over = if self.constant_power {
            self.iterations
        } else {
            t
        };
        self.beta / over as f64
    }

    /// The server's step: every agent receives the centres of the others' densities that
    /// arrived, in agent order, one after the other.
    fn relay(messages: &[Option<Array1<f64>>]) -> Broadcast {
        Broadcast::others(messages, |_, _| true)
    }

    /// The others' densities in `shared`.
    fn densities(&self, shared: &[f64]) -> Vec<Vec<Vec<f64>>> {
        densities(shared, self.per(), self.agents[0].space().dim())
    }
}

/// The densities in `shared`, one after the other, each `per` centres of `dim` numbers.
fn densities(shared: &[f64], per: usize, dim: usize) -> Vec<Vec<Vec<f64>>> {
    shared
        .chunks(per * dim)
        .map(|one| one.chunks(dim).map(<[f64]>::to_vec).collect())
        .collect()
}

impl Federated for DesignDensity {
    fn message(&mut self, agent: usize, _t: usize) -> Result<Option<Array1<f64>>> {
        // A density that cannot be formed (a singular model) is not sent this round.
        Ok(centres(&mut self.agents[agent], self.density)
            .ok()
            .map(|c| Array1::from(c.concat())))
    }

    fn broadcast(&mut self, _t: usize, messages: &[Option<Array1<f64>>]) -> Result<Broadcast> {
        Ok(Self::relay(messages))
    }

    fn choose(&mut self, agent: usize, t: usize, received: &Received) -> Result<Query> {
        let others = self.densities(&received.shared);
        let (width, power) = (self.width, self.power(t));
        choose_one(
            &mut self.agents[agent],
            agent,
            &others,
            width,
            power,
            self.log_ei,
        )
    }

    fn message_len(&self) -> usize {
        self.per() * self.agents[0].space().dim()
    }

    fn release_reusable(&self) -> bool {
        true
    }
}

impl Algorithm for DesignDensity {
    fn belief(&self, agent: usize) -> Option<super::agent::Belief> {
        self.agents.get(agent).map(|l| l.belief(None))
    }

    fn targets(&self) -> &[usize] {
        &self.targets
    }

    fn propose(&mut self, t: usize) -> Result<Vec<Query>> {
        // The three steps a real federation takes; each agent acts on its own streams, so
        // acting in parallel cannot change the result.
        let density = self.density;
        let messages: Vec<Option<Array1<f64>>> = self
            .agents
            .par_iter_mut()
            .map(|a| centres(a, density).map(|c| Some(Array1::from(c.concat()))))
            .collect::<Result<_>>()?;
        let broadcast = Self::relay(&messages);
        let others: Vec<Vec<Vec<Vec<f64>>>> = (0..self.agents.len())
            .map(|k| self.densities(&broadcast.for_agent(k).shared))
            .collect();
        let (width, power, log_ei) = (self.width, self.power(t), self.log_ei);
        self.agents
            .par_iter_mut()
            .zip(others)
            .enumerate()
            .map(|(k, (a, others))| choose_one(a, k, &others, width, power, log_ei))
            .collect()
    }

    fn observe(&mut self, queries: &[Query], ys: &[f64]) {
        observe_all(&mut self.agents, queries, ys);
    }

    /// Each agent shares its density's centres (D numbers each) every round; the width is
    /// the spec's.
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

    /// The server relays to each agent the centres of the others that arrived, in agent
    /// order: agent 1's density lost, agent 0 receives agent 2's, agent 2 agent 0's, agent 1
    /// both; two centres per density in 2-D read back as two densities of two centres.
    #[test]
    fn each_agent_receives_the_others_densities_that_arrived() {
        let m = |v: &[f64]| Some(Array1::from(v.to_vec()));
        let messages = [m(&[0.1, 0.2, 0.3, 0.4]), None, m(&[0.5, 0.6, 0.7, 0.8])];
        let b = DesignDensity::relay(&messages);
        assert_eq!(b.for_agent(0).shared, vec![0.5, 0.6, 0.7, 0.8]);
        assert_eq!(b.for_agent(2).shared, vec![0.1, 0.2, 0.3, 0.4]);
        assert_eq!(b.for_agent(1).shared.len(), 8);
        assert!(b.for_agent(1).point.is_none());
        let others = densities(&b.for_agent(1).shared, 2, 2);
        assert_eq!(
            others,
            vec![
                vec![vec![0.1, 0.2], vec![0.3, 0.4]],
                vec![vec![0.5, 0.6], vec![0.7, 0.8]]
            ]
        );
        assert_eq!(densities(&b.for_agent(0).shared, 1, 2).len(), 2);
    }

    #[test]
    fn one_centre_is_a_gaussian_log_density_and_gradients_match_differences() {
        let c = vec![vec![0.2, 0.7]];
        let (v, g) = log_mixture(&[0.5, 0.5], &c, 0.1);
        // -(0.09 + 0.04) / (2 * 0.01)
        assert!((v + 6.5).abs() < 1e-12);
        assert!((g[0] + 30.0).abs() < 1e-9 && (g[1] - 20.0).abs() < 1e-9);
        let cs = vec![vec![0.2, 0.7], vec![0.6, 0.1], vec![0.9, 0.9]];
        let x = [0.4, 0.45];
        let (_, g) = log_mixture(&x, &cs, 0.3);
        for k in 0..2 {
            let (mut a, mut b) = (x, x);
            a[k] += 1e-6;
            b[k] -= 1e-6;
            let fd = (log_mixture(&a, &cs, 0.3).0 - log_mixture(&b, &cs, 0.3).0) / 2e-6;
            assert!((fd - g[k]).abs() < 1e-6, "{k}");
        }
        // Two equal centres: ln 2 above one.
        let two = log_mixture(&[0.5, 0.5], &[c[0].clone(), c[0].clone()], 0.1).0;
        assert!((two - v - std::f64::consts::LN_2).abs() < 1e-12);
    }
}

#[cfg(test)]
mod centre_tests {
    use super::*;
    use crate::acquisition::optimize::BoxSearch;
    use crate::objective::space::{Domain, Space};
    use std::sync::Arc;

    /// A learner on a 101-point grid of [0, 1] that saw a plateau of good values around 0.3
    /// and one slightly better value at 0.9 between poor ones (a spike no smooth fit of the
    /// plateau believes).
    fn learner() -> Learner {
        // Hyperparameters held (no fit): length scale 0.1, noise variance 0.05.
        let text = "name = \"t\"\niterations = 1\n[objective]\nkind = \"synthetic-fts\"\n[surrogate.own]\nfit = false\nlength_scale = 0.1\nnoise_variance = 0.05\n[[algorithm]]\nkind = \"ts\"\n";
        let own = crate::spec::Spec::parse(text, std::path::Path::new("t.toml"))
            .unwrap()
            .surrogate
            .own;
        let space = Arc::new(Space::Grid(Domain::grid_1d(101)));
        let search = BoxSearch {
            candidates: 100,
            starts: 2,
        };
        let mut l = Learner::new(0, space.clone(), search, own, 3, 0);
        let grid = space.grid().unwrap();
        // The plateau's values scatter (0.8 to 1.1); at length scale 0.1 the spike's single
        // value between poor ones is worth less than the plateau's many.
        for (i, y) in [
            (0, -1.0),
            (20, 0.8),
            (22, 1.1),
            (24, 0.85),
            (26, 1.05),
            (28, 0.8),
            (30, 1.1),
            (32, 0.9),
            (34, 1.0),
            (36, 0.95),
            (60, -1.0),
            (86, -1.0),
            (90, 1.15),
            (94, -1.0),
            (100, -1.0),
        ] {
            l.add(grid.at(i), y);
        }
        l
    }

    #[test]
    fn the_lcb_centre_is_the_lcb_maximiser_and_not_the_noisy_incumbent() {
        let mut l = learner();
        let incumbent = centres(&mut l, Density::Incumbent).unwrap();
        assert_eq!(incumbent, vec![vec![0.9]]);
        let eta = 2.0;
        let lcb = centres(&mut l, Density::Lcb { eta }).unwrap();
        // By hand from the same posterior: argmax over the grid of mu - eta sigma.
        let hyper = l.fitted_hyper();
        let post = l.posterior(&hyper).unwrap();
        let grid = l.space().grid().unwrap();
        let (mean, var) = post.predict(grid.points());
        let mut best = 0;
        for i in 0..grid.len() {
            if mean[i] - eta * var[i].sqrt() > mean[best] - eta * var[best].sqrt() {
                best = i;
            }
        }
        assert_eq!(lcb, vec![grid.point(best).to_vec()]);
        assert!((0.2..=0.4).contains(&lcb[0][0]), "{lcb:?}");
    }
}
