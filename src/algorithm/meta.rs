//! RGPE and TAF, the meta-learning baselines the FTS paper adapts to federated BO (Sec. 3.2,
//! algorithms.md section 6). One algorithm with the weighting as a parameter: both decode every
//! other agent's message into a Bayesian-linear-regression surrogate on the shared features
//! and differ only in how they weight those surrogates against the target's own GP and in the
//! acquisition they maximise.
//!
//! Messages: before the target starts, agent n sends nu_n and Sigma_n^-1 (M + M^2 numbers) of
//! its BLR posterior on the shared features, fitted to its observations on its own model's
//! scale (standardised by default, as Feurer et al. standardise every task); TAF also gets the
//! agent's incumbent (its best observation on that scale), M + M^2 + 1 numbers. From them the
//! target evaluates mu_n(x) = phi(x)^T nu_n and s_n^2(x) = lambda phi(x)^T Sigma_n^-1 phi(x).
//! The target's own model is its exact GP posterior (hyperparameters fitted by marginal
//! likelihood on the same schedule as TS), on the standardised observations.
//!
//! Choices the description leaves open, made here:
//! - RGPE (Feurer, Letham, Bakshy 2018): S samples (spec `samples`, default 100) per iteration.
//!   Agent n's loss per sample: discordant ordered pairs (j, k) of the target's observations
//!   between a joint sample of f_n at the target's inputs and the target's y. The target's
//!   loss: leave-one-out, sample s drawing for each j one joint sample of the GP fitted without
//!   observation j at all inputs and comparing f(x_j) with f(x_k). An agent whose median loss
//!   exceeds the 95th percentile (nearest rank) of the target's losses is dropped; weights are
//!   the fraction of samples in which a model has the lowest loss, ties split at random. With
//!   fewer than 2 observations the target alone has weight 1. Acquisition: expected improvement
//!   of N(sum w_i mu_i, sum w_i^2 s_i^2) over the target's best observation.
//! - TAF (Wistuba, Schilling, Schmidt-Thieme 2018, TAF-R): agent weight
//!   0.75 max(0, 1 - (zeta_n / rho)^2) (Epanechnikov kernel) with zeta_n the fraction of the
//!   target's ordered pairs that mu_n orders differently from y, rho = `bandwidth` (default
//!   0.1, the value of the TST-R/TAF reference implementations); the target's weight is
//!   0.75 (the kernel at 0). Acquisition: (0.75 EI_target(x) + sum w_n max(mu_n(x) - y_n^*, 0))
//!   / (0.75 + sum w_n). y_n^* is, by default, the agent's incumbent as the FTS paper sends it
//!   (`incumbent = "agent"`); since a BLR with small lambda nearly interpolates the agent's
//!   data, mu_n rarely exceeds it and TAF then acts almost as the target's EI.
//!   `incumbent = "target"` measures against max mu_n over the target's observed inputs, as
//!   Wistuba et al. do, and sends M + M^2 numbers.
//! - Both maximise the acquisition exactly over a grid. The agents' grid means and variances
//!   are computed once per run (the messages do not change), so an iteration costs
//!   O(N (grid + S n M)) for RGPE and O(N grid) for TAF, growing linearly in N as the paper
//!   says; the one-off decoding costs O(N grid M^2) and runs at the first iteration, inside
//!   the target's measured overhead. On a box the same acquisition is evaluated pointwise
//!   with its analytic gradient (GP and BLR means and variances, expected improvement) and
//!   maximised by the box search.

use super::agent::{Learner, Sender, SharedFeatures, agree_senders, build_senders, own_log_hyper};
use super::relay::{self, SenderAgreement};
use super::{Algorithm, Broadcast, Federated, Place, Query, Received, RunContext, Source};
use crate::acquisition::{ei_grad, expected_improvement};
use crate::error::{FboError, Result};
use crate::math::linalg::{argmax, cholesky_jittered};
use crate::math::rng::{Purpose, Rng, stream};
use crate::objective::Space;
use crate::objective::{Point, Region};
use crate::spec::{SharedModel, TafIncumbent};
use crate::surrogate::agreement::SharedHyper;
use crate::surrogate::gp::{GpHyper, GpPosterior, kernel_matrix};
use ndarray::{Array1, Array2, ArrayView1, Axis};
use rand::Rng as _;
use rand_distr::{Distribution, StandardNormal};
use rayon::prelude::*;
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Weighting {
    Rgpe {
        samples: usize,
    },
    Taf {
        bandwidth: f64,
        incumbent: TafIncumbent,
    },
}

/// One agent's message as the target decodes it.
struct Surrogate {
    agent: usize,
    /// C with C C^T = lambda Sigma^-1, so phi^T C eps samples the BLR posterior (RGPE).
    root: Array2<f64>,
    nu: Array1<f64>,
    /// Means and variances on the grid (None on a box).
    grid_mean: Option<Array1<f64>>,
    grid_var: Option<Array1<f64>>,
    incumbent: f64,
}

impl Surrogate {
    /// mu_n at an observed point.
    fn mean_at(&self, p: &Point, shared: &SharedFeatures) -> f64 {
        match (p.index, &self.grid_mean) {
            (Some(i), Some(g)) => g[i],
            _ => shared.phi(p).dot(&self.nu),
        }
    }

    /// mu_n(x), s_n^2(x) and their gradients from phi(x) and its Jacobian J (shared by all
    /// surrogates): with u = C^T phi, d mu = J^T nu and d s^2 = 2 J^T C u.
    fn predict_grad(&self, phi: &Array1<f64>, jac: &Array2<f64>) -> (f64, f64, Vec<f64>, Vec<f64>) {
        let u = phi.dot(&self.root);
        let cu = self.root.dot(&u);
        let dm = jac.t().dot(&self.nu).to_vec();
        let dv = (jac.t().dot(&cu) * 2.0).to_vec();
        (phi.dot(&self.nu), u.dot(&u), dm, dv)
    }

    /// mu_n(x) and its gradient (TAF needs no variance).
    fn mean_grad(&self, phi: &Array1<f64>, jac: &Array2<f64>) -> (f64, Vec<f64>) {
        (phi.dot(&self.nu), jac.t().dot(&self.nu).to_vec())
    }
}

/// What agent n sends: nu_n, Sigma_n^-1 and (TAF) its incumbent.
struct Message {
    agent: usize,
    nu: Array1<f64>,
    sigma_inv: Array2<f64>,
    incumbent: f64,
}

/// The target's decoding of a message into grid predictions. It is the target's work, so it
/// runs at the first iteration, inside the measured BO overhead.
fn decode(msg: &Message, lambda: f64, grid_phi: Option<&Array2<f64>>) -> Option<Surrogate> {
    let (root, _) = cholesky_jittered(&(&msg.sigma_inv * lambda))?;
    let (grid_mean, grid_var) = match grid_phi {
        Some(grid_phi) => {
            // root is the lower Cholesky factor.
            let spread = crate::math::linalg::matmul_lower(grid_phi.view(), root.view());
            (
                Some(grid_phi.dot(&msg.nu)),
                Some(spread.map_axis(Axis(1), |r| r.dot(&r))),
            )
        }
        None => (None, None),
    };
    Some(Surrogate {
        agent: msg.agent,
        root,
        nu: msg.nu.clone(),
        grid_mean,
        grid_var,
        incumbent: msg.incumbent,
    })
}

/// Ordered pairs (j, k), j != k, that `f` and `y` rank differently.
pub fn discordant_pairs(f: ArrayView1<f64>, y: ArrayView1<f64>) -> usize {
    let (f, y) = (f.to_vec(), y.to_vec());
    (0..y.len()).map(|j| discordant_with(&f, &y, j)).sum()
}

crate::multiversion! {
    /// Points k that `f` and `y` rank differently against point j. The pair (j, j) compares
    /// equal on both sides, so it needs no test: the count runs without branches.
    fn discordant_with(f: &[f64], y: &[f64], j: usize) -> usize {
        let (fj, yj) = (f[j], y[j]);
        f.iter()
            .zip(y)
            .map(|(&fk, &yk)| ((fj < fk) != (yj < yk)) as usize)
            .sum()
    }
}

/// Epanechnikov kernel 0.75 (1 - u^2) on |u| <= 1.
pub fn epanechnikov(u: f64) -> f64 {
    if u.abs() <= 1.0 {
        0.75 * (1.0 - u * u)
    } else {
        0.0
    }
}

/// TAF-R weights: the target's (first) and each agent's from its discordant-pair fraction.
pub fn taf_weights(fractions: &[f64], bandwidth: f64) -> Vec<f64> {
    std::iter::once(epanechnikov(0.0))
        .chain(fractions.iter().map(|z| epanechnikov(z / bandwidth)))
        .collect()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

/// Nearest-rank percentile p in (0, 100].
fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// RGPE weights from per-sample losses: `losses[0]` is the target's, then one row per agent.
/// Agents whose median loss exceeds the 95th percentile of the target's are dropped; each
/// sample votes for its lowest-loss model, ties split uniformly at random.
pub fn rgpe_weights(losses: &[Vec<f64>], rng: &mut Rng) -> Vec<f64> {
    let samples = losses[0].len();
    let threshold = percentile(&mut losses[0].clone(), 95.0);
    let active: Vec<bool> = losses
        .iter()
        .enumerate()
        .map(|(i, l)| i == 0 || median(&mut l.clone()) <= threshold)
        .collect();
    let mut votes = vec![0.0; losses.len()];
    let mut best = Vec::with_capacity(losses.len());
    for s in 0..samples {
        let low = losses
            .iter()
            .zip(&active)
            .filter(|(_, a)| **a)
            .map(|(l, _)| l[s])
            .fold(f64::INFINITY, f64::min);
        best.clear();
        best.extend((0..losses.len()).filter(|&i| active[i] && losses[i][s] == low));
        let pick = best[rng.random_range(0..best.len())];
        votes[pick] += 1.0;
    }
    votes.iter().map(|v| v / samples as f64).collect()
}

/// Per-sample ranking losses of the target's leave-one-out GP models (see the module notes).
fn target_losses(
    x: &Array2<f64>,
    y: &Array1<f64>,
    hyper: &crate::surrogate::gp::GpHyper,
    samples: usize,
    rng: &mut Rng,
) -> Option<Vec<f64>> {
    let n = y.len();
    let kf = kernel_matrix(x.view(), x.view(), hyper);
    let mut losses = vec![0.0; samples];
    for j in 0..n {
        let rest: Vec<usize> = (0..n).filter(|&i| i != j).collect();
        let x_rest = x.select(Axis(0), &rest);
        let post = GpPosterior::fit(x_rest.view(), y.select(Axis(0), &rest).view(), hyper)?;
        let (mean, cov) = post.predict_joint(x.view(), &kf);
        let (root, _) = cholesky_jittered(&cov)?;
        // All samples at once: row s of eps holds sample s's normals, drawn in the order one
        // sample at a time would draw them, and row s of eps root^T is its draw of f - mean.
        let eps = Array2::from_shape_fn((samples, n), |_| StandardNormal.sample(rng));
        let draws = crate::math::linalg::matmul_upper(eps.view(), root.t());
        for (loss, d) in losses.iter_mut().zip(draws.rows()) {
            let f = &mean + &d;
            *loss += discordant_with(
                f.as_slice().expect("fresh arrays are contiguous"),
                y.as_slice().expect("contiguous targets"),
                j,
            ) as f64;
        }
    }
    Some(losses)
}

/// One target's state: its own learner and, per other agent, the rows phi(x_i)^T C of its
/// observed inputs (RGPE's samples at those inputs cost one product per sample).
struct Target {
    learner: Learner,
    rng: Rng,
    rows: Vec<Vec<Array1<f64>>>,
}

pub struct MetaBo {
    ids: Vec<usize>,
    /// Agents in the objective (targets and senders).
    n: usize,
    targets: Vec<Target>,
    /// Received before the first iteration; decoded into `surrogates` at the first.
    messages: Vec<Message>,
    surrogates: Vec<Arc<Surrogate>>,
    shared: SharedFeatures,
    lambda: f64,
    weighting: Weighting,
    /// With `shared = "agreed"`; across machines the senders held here, whose posteriors
    /// wait for the agreement (their answers to the server's question), and the agreement.
    agreed: bool,
    waiting: Vec<Option<Sender>>,
    agreement: SenderAgreement,
    space: Arc<Space>,
}

/// Sender `s`'s message: its BLR posterior on `shared` and its incumbent on its own scale.
fn posterior_message(shared: &SharedFeatures, s: &Sender) -> Result<Message> {
    let agent = s.learner.agent;
    let blr = shared.posterior(&s.learner).ok_or_else(|| {
        FboError::Run(format!(
            "agent {agent}'s posterior is singular; raise surrogate.lambda"
        ))
    })?;
    let scaled = s.learner.scaled_ys();
    Ok(Message {
        agent,
        nu: blr.mean_weights(),
        sigma_inv: blr.precision_inverse(),
        incumbent: scaled.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
    })
}

impl MetaBo {
    pub fn new(ctx: &RunContext, weighting: Weighting) -> Result<Self> {
        let spec = ctx.spec;
        let mut shared = SharedFeatures::for_run(ctx);
        let mut senders = build_senders(ctx, &shared)?;
        let agreed = ctx.algorithm.shared == SharedModel::Agreed;
        // Across machines the agreement is the server's question, and a sender's posterior
        // its answer.
        let here = ctx.place == Place::Simulation;
        if agreed
            && here
            && let Some(a) = agree_senders(&shared, &ctx.landscape.space, &mut senders)
        {
            shared = a;
        }
        let waiting = match agreed && !here {
            true => std::mem::take(&mut senders),
            false => Vec::new(),
        };
        let lambda = shared.lambda;
        let messages: Vec<Message> = senders
            .par_iter()
            .flatten()
            .map(|s| posterior_message(&shared, s))
            .collect::<Result<_>>()?;
        let ids = spec.targets().to_vec();
        let targets = ids
            .iter()
            .map(|&t| Target {
                learner: Learner::for_run(ctx, t),
                rng: stream(ctx.seed(), ctx.run as u64, t as u64, Purpose::Mixing),
                rows: vec![Vec::new(); messages.len()],
            })
            .collect();
        Ok(MetaBo {
            ids,
            n: ctx.landscape.agents(),
            targets,
            messages,
            surrogates: Vec::new(),
            shared,
            lambda,
            weighting,
            agreed,
            waiting,
            agreement: SenderAgreement::default(),
            space: ctx.landscape.space.clone(),
        })
    }
}

impl MetaBo {
    /// Whether `agent` sends a message: every agent some target is not.
    fn is_sender(&self, agent: usize) -> bool {
        relay::is_sender(&self.ids, agent)
    }

    /// Whether TAF measures each agent against the incumbent it sends.
    fn sends_incumbent(&self) -> bool {
        matches!(
            self.weighting,
            Weighting::Taf {
                incumbent: TafIncumbent::Agent,
                ..
            }
        )
    }

    /// A posterior's numbers on the wire (`encode`).
    fn posterior_len(&self) -> usize {
        let m = self.shared.features.len();
        m + m * m + usize::from(self.sends_incumbent())
    }

    /// At a site: the features (and their noise) for the agreed log hyperparameters the
    /// server sent, redrawn when they are not the ones it has; a target then decodes its
    /// posteriors afresh.
    fn follow(&mut self, log: &[f64]) -> Result<()> {
        SenderAgreement::check(log, self.space.dim())?;
        if self.agreement.is_new(log) {
            self.shared = self.shared.agreed(&self.space, &SharedHyper::from_log(log));
            self.lambda = self.shared.lambda;
            self.surrogates.clear();
        }
        Ok(())
    }

    /// A message on the wire: nu_n (M), Sigma_n^-1 row by row (M^2), and TAF's incumbent (1)
    /// where it is measured against it; `params_sent` numbers.
    fn encode(&self, msg: &Message) -> Array1<f64> {
        let mut v: Vec<f64> = msg.nu.iter().copied().collect();
        v.extend(msg.sigma_inv.iter().copied());
        if self.sends_incumbent() {
            v.push(msg.incumbent);
        }
        Array1::from(v)
    }

    /// Agent `agent`'s message read back from `encode`'s numbers (length checked by
    /// `relay::parse`). An incumbent not sent is never read (RGPE; TAF against the target's).
    fn decode_wire(&self, agent: usize, v: &[f64]) -> Message {
        let m = self.shared.features.len();
        Message {
            agent,
            nu: Array1::from(v[..m].to_vec()),
            sigma_inv: Array2::from_shape_vec((m, m), v[m..m + m * m].to_vec())
                .expect("M^2 numbers"),
            incumbent: match self.sends_incumbent() {
                true => v[m + m * m],
                false => f64::NAN,
            },
        }
    }

    /// The relayed messages taken by a target at its site, beside any of its own, in agent
    /// order as one process holds them.
    fn take_relayed(&mut self, me: usize, shared: &[f64]) -> Result<()> {
        let len = self.posterior_len();
        let relayed = relay::parse(shared, len, self.n, me)?;
        for (agent, v) in relayed {
            let msg = self.decode_wire(agent, v.as_slice().expect("contiguous"));
            self.hold(msg);
        }
        Ok(())
    }

    /// Keeps `msg` among the messages (in agent order, as one process holds them) unless
    /// its agent's is held already; the surrogates are then decoded afresh.
    fn hold(&mut self, msg: Message) {
        if self.messages.iter().any(|m| m.agent == msg.agent) {
            return;
        }
        self.messages.push(msg);
        self.messages.sort_by_key(|m| m.agent);
        self.surrogates.clear();
        for t in &mut self.targets {
            t.rows = vec![Vec::new(); self.messages.len()];
        }
    }

    /// Decodes the messages into surrogates once (the target's work at its first iteration).
    fn decode_all(&mut self) -> Result<()> {
        if self.surrogates.len() == self.messages.len() {
            return Ok(());
        }
        let grid_phi = self.shared.grid_phi();
        let lambda = self.lambda;
        self.surrogates = self
            .messages
            .par_iter()
            .map(|m| {
                decode(m, lambda, grid_phi).map(Arc::new).ok_or_else(|| {
                    FboError::Run(format!(
                        "agent {}'s message cannot be decoded (singular Sigma^-1); raise surrogate.lambda",
                        m.agent
                    ))
                })
            })
            .collect::<Result<_>>()?;
        Ok(())
    }
}

/// The target's next query: weights, then the acquisition's argmax over the space.
fn choose(
    target: &mut Target,
    surrogates: &[Arc<Surrogate>],
    shared: &SharedFeatures,
    weighting: Weighting,
) -> Result<Point> {
    let hyper = target.learner.fitted_hyper();
    let x = target.learner.inputs();
    let y = target.learner.scaled_ys();
    let others: Vec<&Arc<Surrogate>> = surrogates
        .iter()
        .filter(|s| s.agent != target.learner.agent)
        .collect();
    let singular = || {
        FboError::Run(format!(
            "agent {}'s GP posterior is singular; raise the noise lower bound",
            target.learner.agent
        ))
    };
    let post = GpPosterior::fit(x.view(), y.view(), &hyper).ok_or_else(singular)?;
    let best = y.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    // The weights of the target (first) and of each other agent; TAF also measures each
    // agent's improvement against its own incumbent.
    let (weights, against) = match weighting {
        Weighting::Rgpe { samples } => (
            rgpe_weights_for(
                target,
                surrogates,
                &others,
                shared,
                samples,
                (&x, &y, &hyper),
            )?,
            None,
        ),
        Weighting::Taf {
            bandwidth,
            incumbent,
        } => {
            let (weights, against) = taf_weights_for(target, &others, shared, bandwidth, incumbent);
            (weights, Some(against))
        }
    };
    let Some(grid) = target.learner.space().grid() else {
        let region = Region::unit(x.ncols());
        let mut acq = |p: &[f64], g: Option<&mut [f64]>| {
            box_acquisition(
                p,
                g,
                &post,
                &others,
                &weights,
                against.as_deref(),
                shared,
                best,
            )
        };
        return target.learner.acquire(&mut acq, &region);
    };
    let acq = grid_acquisition(&post, grid, &others, &weights, against.as_deref(), best);
    Ok(grid.at(argmax(acq.view())))
}

/// RGPE's weights of the target (first) and of each other agent: how often each model's
/// sampled ranking of the target's observations is the least discordant (the target's by
/// leave-one-out); all on the target until it has two observations.
fn rgpe_weights_for(
    target: &mut Target,
    surrogates: &[Arc<Surrogate>],
    others: &[&Arc<Surrogate>],
    shared: &SharedFeatures,
    samples: usize,
    (x, y, hyper): (&Array2<f64>, &Array1<f64>, &GpHyper),
) -> Result<Vec<f64>> {
    let observed = target.learner.observations().0.to_vec();
    let n = y.len();
    let singular = || {
        FboError::Run(format!(
            "agent {}'s GP posterior is singular; raise the noise lower bound",
            target.learner.agent
        ))
    };
    Ok(if n < 2 {
        let mut w = vec![0.0; others.len() + 1];
        w[0] = 1.0;
        w
    } else {
        let mut losses =
            vec![target_losses(x, y, hyper, samples, &mut target.rng).ok_or_else(singular)?];
        for s in others {
            let slot = surrogates
                .iter()
                .position(|o| o.agent == s.agent)
                .expect("listed");
            let rows = &mut target.rows[slot];
            for p in &observed[rows.len()..] {
                rows.push(shared.phi(p).dot(&s.root));
            }
            let mean_x = Array1::from_iter(observed.iter().map(|p| s.mean_at(p, shared)));
            let b = ndarray::stack(Axis(0), &rows.iter().map(|r| r.view()).collect::<Vec<_>>())
                .expect("rows of equal length");
            let eps = Array2::from_shape_fn((s.root.nrows(), samples), |_| {
                StandardNormal.sample(&mut target.rng)
            });
            let draws = crate::math::linalg::matmul(b.view(), eps.view());
            losses.push(
                (0..samples)
                    .map(|k| {
                        let f = &mean_x + &draws.column(k);
                        discordant_pairs(f.view(), y.view()) as f64
                    })
                    .collect(),
            );
        }
        rgpe_weights(&losses, &mut target.rng)
    })
}

/// TAF's weights of the target (first) and of each other agent, from the fraction of the
/// target's observation pairs each other agent's mean ranks the wrong way; and the incumbent
/// each agent's improvement is measured against.
fn taf_weights_for(
    target: &Target,
    others: &[&Arc<Surrogate>],
    shared: &SharedFeatures,
    bandwidth: f64,
    incumbent: TafIncumbent,
) -> (Vec<f64>, Vec<f64>) {
    let y = target.learner.scaled_ys();
    let (observed, _) = target.learner.observations();
    let n = y.len();
    let pairs = (n * n.saturating_sub(1)).max(1) as f64;
    let fractions: Vec<f64> = others
        .iter()
        .map(|s| {
            let mean_x = Array1::from_iter(observed.iter().map(|p| s.mean_at(p, shared)));
            discordant_pairs(mean_x.view(), y.view()) as f64 / pairs
        })
        .collect();
    let weights = taf_weights(&fractions, bandwidth);
    let against: Vec<f64> = others
        .iter()
        .map(|s| match incumbent {
            TafIncumbent::Agent => s.incumbent,
            TafIncumbent::Target => observed
                .iter()
                .map(|p| s.mean_at(p, shared))
                .fold(f64::NEG_INFINITY, f64::max),
        })
        .collect();
    (weights, against)
}

/// The acquisition at every grid point: TAF's (`against` given) weighted target EI plus each
/// agent's predicted improvement, or RGPE's EI of the weighted mixture.
fn grid_acquisition(
    post: &GpPosterior,
    grid: &crate::objective::space::Domain,
    others: &[&Arc<Surrogate>],
    weights: &[f64],
    against: Option<&[f64]>,
    best: f64,
) -> Array1<f64> {
    let (t_mean, t_var) = post.predict(grid.points());
    if let Some(against) = against {
        // TAF: weighted target EI plus each agent's predicted improvement.
        let total: f64 = weights.iter().sum();
        let mut acq = Array1::from_iter(
            t_mean
                .iter()
                .zip(&t_var)
                .map(|(&m, &v)| weights[0] * expected_improvement(m, v.sqrt(), best)),
        );
        for ((s, &w), &a) in others.iter().zip(&weights[1..]).zip(against) {
            if w > 0.0 {
                let gm = s.grid_mean.as_ref().expect("grid means");
                acq.zip_mut_with(gm, |v, &m| *v += w * (m - a).max(0.0));
            }
        }
        acq / total
    } else {
        // RGPE: EI of the weighted mixture.
        let mut mean = &t_mean * weights[0];
        let mut var = &t_var * (weights[0] * weights[0]);
        for (s, &w) in others.iter().zip(&weights[1..]) {
            if w > 0.0 {
                mean.scaled_add(w, s.grid_mean.as_ref().expect("grid means"));
                var.scaled_add(w * w, s.grid_var.as_ref().expect("grid variances"));
            }
        }
        Array1::from_iter(
            mean.iter()
                .zip(&var)
                .map(|(&m, &v)| expected_improvement(m, v.sqrt(), best)),
        )
    }
}

/// The RGPE (`against` None) or TAF acquisition at one point of a box, with its gradient.
#[allow(clippy::too_many_arguments)]
fn box_acquisition(
    x: &[f64],
    grad: Option<&mut [f64]>,
    post: &GpPosterior,
    others: &[&Arc<Surrogate>],
    weights: &[f64],
    against: Option<&[f64]>,
    shared: &SharedFeatures,
    best: f64,
) -> f64 {
    let (tm, tv, tdm, tdv) = post.predict_grad(x);
    let (phi, jac) = shared.features.feature_jacobian(x);
    let d = x.len();
    let (value, g) = if let Some(against) = against {
        let total: f64 = weights.iter().sum();
        let (e, de) = ei_grad(tm, tv, &tdm, &tdv, best);
        let mut value = weights[0] * e;
        let mut g: Vec<f64> = de.iter().map(|a| weights[0] * a).collect();
        for ((s, &w), &a) in others.iter().zip(&weights[1..]).zip(against) {
            if w > 0.0 {
                let (sm, sdm) = s.mean_grad(&phi, &jac);
                if sm > a {
                    value += w * (sm - a);
                    for k in 0..d {
                        g[k] += w * sdm[k];
                    }
                }
            }
        }
        (value / total, g.into_iter().map(|v| v / total).collect())
    } else {
        let w0 = weights[0];
        let (mut m, mut v) = (w0 * tm, w0 * w0 * tv);
        let mut dm: Vec<f64> = tdm.iter().map(|a| w0 * a).collect();
        let mut dv: Vec<f64> = tdv.iter().map(|a| w0 * w0 * a).collect();
        for (s, &w) in others.iter().zip(&weights[1..]) {
            if w > 0.0 {
                let (sm, sv, sdm, sdv) = s.predict_grad(&phi, &jac);
                m += w * sm;
                v += w * w * sv;
                for k in 0..d {
                    dm[k] += w * sdm[k];
                    dv[k] += w * w * sdv[k];
                }
            }
        }
        ei_grad(m, v, &dm, &dv, best)
    };
    if let Some(out) = grad {
        out.copy_from_slice(&g);
    }
    value
}

impl Algorithm for MetaBo {
    fn belief(&self, agent: usize) -> Option<super::agent::Belief> {
        self.targets
            .iter()
            .find(|t| t.learner.agent == agent)
            .map(|t| t.learner.belief(None))
    }

    fn targets(&self) -> &[usize] {
        &self.ids
    }

    fn propose(&mut self, _t: usize) -> Result<Vec<Query>> {
        self.decode_all()?;
        let (surrogates, shared, weighting) = (&self.surrogates, &self.shared, self.weighting);
        // Targets are independent and use their own streams: parallel order cannot matter.
        self.targets
            .par_iter_mut()
            .map(|t| {
                Ok(Query {
                    agent: t.learner.agent,
                    point: choose(t, surrogates, shared, weighting)?,
                    source: Source::Acquisition,
                })
            })
            .collect()
    }

    fn observe(&mut self, queries: &[Query], ys: &[f64]) {
        for (q, y) in queries.iter().zip(ys) {
            if let Some(t) = self.targets.iter_mut().find(|t| t.learner.agent == q.agent) {
                t.learner.add(q.point.clone(), *y);
            }
        }
    }

    fn params_sent(&self, _agent: usize, _t: usize) -> u64 {
        let m = self.shared.features.len() as u64;
        match self.weighting {
            Weighting::Rgpe { .. } => m + m * m,
            Weighting::Taf {
                incumbent: TafIncumbent::Agent,
                ..
            } => m + m * m + 1,
            Weighting::Taf {
                incumbent: TafIncumbent::Target,
                ..
            } => m + m * m,
        }
    }

    fn federated(&mut self) -> Option<&mut dyn Federated> {
        Some(self)
    }
}

/// Across machines (docs/federation.md): every sender's site fits its own BLR posterior and
/// sends it once, before iteration 1; the server relays to every target the others' that
/// arrived; each target weights and decodes them at its site as in one process. The weights
/// rank the senders' models on the target's own observations, so the meta-model is built
/// where those are: a server-side one would need the target's values sent to the server.
impl Federated for MetaBo {
    fn message(&mut self, agent: usize, t: usize) -> Result<Option<Array1<f64>>> {
        if !self.sends(agent, t) {
            return Ok(None);
        }
        if self.agreed {
            // Its fit, for the agreement; its posterior is its answer.
            let fit = self.waiting.get_mut(agent).and_then(Option::as_mut);
            return Ok(fit.map(|s| Array1::from(own_log_hyper(&mut s.learner))));
        }
        Ok(self
            .messages
            .iter()
            .find(|m| m.agent == agent)
            .map(|m| self.encode(m)))
    }

    fn question(
        &mut self,
        _t: usize,
        messages: &[Option<Array1<f64>>],
        answers: &[Vec<Option<Vec<f64>>>],
    ) -> Result<Option<Vec<f64>>> {
        let len = self.posterior_len();
        Ok(match self.agreed {
            true => self.agreement.question(messages, answers, len),
            false => None,
        })
    }

    fn answer(&mut self, agent: usize, _t: usize, question: &[f64]) -> Result<Vec<f64>> {
        if self.waiting.get(agent).is_none_or(Option::is_none) {
            return Err(FboError::Run(format!(
                "agent {agent}: only the senders held here are asked"
            )));
        }
        self.follow(question)?;
        let s = self.waiting[agent].as_ref().expect("a sender held here");
        let msg = posterior_message(&self.shared, s)?;
        // (A target that also sends never weights its own posterior: it is not held.)
        Ok(self.encode(&msg).to_vec())
    }

    fn sends(&self, agent: usize, t: usize) -> bool {
        t == 1 && self.is_sender(agent)
    }

    fn members(&self, _targets: &[usize]) -> Vec<usize> {
        relay::members(self.n, &self.ids)
    }

    fn broadcast(&mut self, _t: usize, messages: &[Option<Array1<f64>>]) -> Result<Broadcast> {
        Ok(match self.agreed {
            true => self.agreement.broadcast(messages.len(), &self.ids),
            false => relay::to_targets(messages, &self.ids),
        })
    }

    fn choose(&mut self, agent: usize, _t: usize, received: &Received) -> Result<Query> {
        let k = relay::target_index(&self.ids, agent)?;
        let mut relayed = &received.shared[..];
        if self.agreed {
            // The agreement first, then the posteriors on its features.
            let (log, rest) = SenderAgreement::split(relayed, self.space.dim())?;
            if let Some(log) = log {
                self.follow(log)?;
            }
            relayed = rest;
        }
        self.take_relayed(agent, relayed)?;
        self.decode_all()?;
        let (surrogates, shared, weighting) = (&self.surrogates, &self.shared, self.weighting);
        Ok(Query {
            agent,
            point: choose(&mut self.targets[k], surrogates, shared, weighting)?,
            source: Source::Acquisition,
        })
    }

    fn message_len(&self) -> usize {
        match self.agreed {
            true => self.space.dim() + 2,
            false => self.posterior_len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn discordant_pairs_counts_ordered_pairs() {
        let y = array![1.0, 2.0, 3.0];
        assert_eq!(
            discordant_pairs(array![10.0, 20.0, 30.0].view(), y.view()),
            0
        );
        // Fully reversed: all 3 x 2 ordered pairs disagree.
        assert_eq!(discordant_pairs(array![3.0, 2.0, 1.0].view(), y.view()), 6);
        // One swap (of the first two): pairs (0,1) and (1,0).
        assert_eq!(discordant_pairs(array![2.0, 1.0, 3.0].view(), y.view()), 2);
    }

    #[test]
    fn taf_weights_follow_the_epanechnikov_kernel() {
        let w = taf_weights(&[0.0, 0.05, 0.1, 0.5], 0.1);
        assert_eq!(w, vec![0.75, 0.75, 0.75 * 0.75, 0.0, 0.0]);
    }

    #[test]
    fn rgpe_weights_vote_for_the_lowest_loss_and_prune() {
        let mut rng = stream(1, 0, 0, Purpose::Mixing);
        // Target losses 4..8; agent 1 always lowest; agent 2 ties the target on every sample;
        // agent 3 has median 100 > the target's 95th percentile and is dropped.
        let losses = vec![
            vec![4.0, 5.0, 6.0, 7.0, 8.0],
            vec![0.0, 0.0, 0.0, 0.0, 0.0],
            vec![4.0, 5.0, 6.0, 7.0, 8.0],
            vec![100.0, 100.0, 100.0, 0.0, 0.0],
        ];
        let w = rgpe_weights(&losses, &mut rng);
        assert_eq!(w, vec![0.0, 1.0, 0.0, 0.0]);
        // Without agent 1, target and agent 2 tie every sample: the 5 votes split between
        // them at random, never to the pruned agent 3 although it wins samples 3 and 4.
        let w = rgpe_weights(
            &[losses[0].clone(), losses[2].clone(), losses[3].clone()],
            &mut rng,
        );
        assert_eq!(w[2], 0.0);
        assert!((w[0] + w[1] - 1.0).abs() < 1e-15);
        assert_eq!(percentile(&mut [4.0, 5.0, 6.0, 7.0, 8.0], 95.0), 8.0);
        assert_eq!(median(&mut [3.0, 1.0, 2.0, 10.0]), 2.5);
    }
}
