//! An agent's own optimisation state, shared by every algorithm: its observations, its GP
//! hyperparameters and its Thompson sampler; and the shared random features through which
//! agents talk.

use super::RunContext;
use crate::acquisition::{
    ei_grad, expected_improvement, log_ei_grad, log_expected_improvement, ucb_beta, ucb_grad,
};
use crate::error::{FboError, Result};
use crate::math::linalg::argmax;
use crate::objective::space::Domain;
use crate::objective::{Landscape, Point, Region, Request, Space};

/// The journal scope of the senders' own histories (shared by a spec's algorithms).
pub const SENDERS: &str = "senders";
use crate::acquisition::optimize::{Acquisition, BoxSearch, maximise};
use crate::math::rng::{Purpose, Rng, SHARED, stream};
use crate::spec::EiForm;
use crate::spec::ObservationSource;
use crate::spec::SharedModel;
use crate::surrogate::agreement::{SharedHyper, median};
use crate::surrogate::blr::BlrPosterior;
use crate::surrogate::gp::{GpHyper, GpPosterior, Kernel};
use crate::surrogate::own::{OwnModel, OwnSettings};
use crate::surrogate::rff::RandomFeatures;
use ndarray::{Array1, Array2};
use rand::Rng as _;
use rand::seq::index::sample as sample_indices;
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The maximiser of `acq` on `region` as a point of the box space `space`.
pub fn maximise_point<R: rand::Rng + ?Sized>(
    acq: &mut impl Acquisition,
    space: &Space,
    region: &Region,
    search: BoxSearch,
    rng: &mut R,
) -> Result<Point> {
    let (x, _) = maximise(acq, region, &space.groups(), search, rng)?;
    Ok(space.point(x))
}

/// A model's hyperparameters as an agent used them for a query (beliefs.csv's row): on the
/// unit cube and the agent's standardised observations.
#[derive(Clone, Debug, PartialEq)]
pub struct Belief {
    pub hyper: GpHyper,
    /// The constant prior mean on the standardised scale (profiled; 0 for the zero mean).
    pub constant: f64,
}

/// A single agent running standard GP Thompson sampling on its own data.
#[derive(Clone)]
pub struct Learner {
    pub agent: usize,
    space: Arc<Space>,
    search: BoxSearch,
    points: Vec<Point>,
    ys: Vec<f64>,
    model: OwnModel,
    sample_rng: Rng,
    fit_rng: Rng,
    /// Candidate sets of searches on a box (untouched on grids).
    acq_rng: Rng,
}

impl Learner {
    pub fn new(
        agent: usize,
        space: Arc<Space>,
        search: BoxSearch,
        settings: OwnSettings,
        seed: u64,
        run: usize,
    ) -> Self {
        Learner {
            agent,
            space,
            search,
            points: Vec::new(),
            ys: Vec::new(),
            model: OwnModel::for_agent(settings, agent),
            sample_rng: stream(seed, run as u64, agent as u64, Purpose::OwnSample),
            fit_rng: stream(seed, run as u64, agent as u64, Purpose::HyperFit),
            acq_rng: stream(seed, run as u64, agent as u64, Purpose::Acquisition),
        }
    }

    /// Agent `agent` of a run acting for the run's algorithm: the spec's own-model and
    /// box-search settings, with the algorithm's choice of own sample.
    pub fn for_run(ctx: &RunContext, agent: usize) -> Self {
        let settings = OwnSettings {
            sampler: ctx.algorithm.own_sample,
            ..ctx.spec.surrogate.own.clone()
        };
        Learner::new(
            agent,
            ctx.landscape.space.clone(),
            ctx.spec.acquisition,
            settings,
            ctx.seed(),
            ctx.run,
        )
    }

    /// Agent `agent` of a run as a sender: the spec's settings only, so that every
    /// algorithm of the spec hears the same senders (and may share them, `SenderCache`).
    pub fn sender_for_run(ctx: &RunContext, agent: usize) -> Self {
        Learner::new(
            agent,
            ctx.landscape.space.clone(),
            ctx.spec.acquisition,
            ctx.spec.surrogate.own.clone(),
            ctx.seed(),
            ctx.run,
        )
    }

    pub fn add(&mut self, point: Point, y: f64) {
        self.points.push(point);
        self.ys.push(y);
    }

    /// Forgets every observation after the first `n` (a batch's pending points, added to
    /// choose the batch's next point).
    pub fn truncate(&mut self, n: usize) {
        self.points.truncate(n);
        self.ys.truncate(n);
    }

    /// The hyperparameters of the agent's own model as last fitted.
    pub fn hyper(&self) -> &GpHyper {
        self.model.hyper()
    }

    pub fn n_obs(&self) -> usize {
        self.ys.len()
    }

    /// Observed points and their y, in observation order.
    pub fn observations(&self) -> (&[Point], &[f64]) {
        (&self.points, &self.ys)
    }

    /// The GP hyperparameters after the refit the schedule asks for at this many
    /// observations (acquisition-based algorithms use the GP itself, not a sample).
    pub fn fitted_hyper(&mut self) -> GpHyper {
        let x = self.inputs();
        self.model
            .maybe_refit(x.view(), &self.ys, &mut self.fit_rng);
        self.model.hyper().clone()
    }

    /// (shift, scale) with y = shift + scale * scaled_ys(): how the model's scale maps back
    /// to the objective's.
    pub fn unscale(&self) -> (f64, f64) {
        if self.settings().normalize_y && !self.ys.is_empty() {
            crate::surrogate::gp::standardization(&self.ys)
        } else {
            (0.0, 1.0)
        }
    }

    /// The settings of the agent's own model.
    pub fn settings(&self) -> &OwnSettings {
        self.model.settings()
    }

    /// The observations on the scale the agent's own model uses (standardised by default).
    pub fn scaled_ys(&self) -> Array1<f64> {
        self.model.targets(&self.ys)
    }

    pub fn space(&self) -> &Space {
        &self.space
    }

    /// How this agent searches a box.
    pub fn search(&self) -> BoxSearch {
        self.search
    }

    pub fn inputs(&self) -> Array2<f64> {
        let d = self.space.dim();
        let mut x = Array2::zeros((self.points.len(), d));
        for (r, p) in self.points.iter().enumerate() {
            x.row_mut(r).assign(&p.view());
        }
        x
    }

    /// The maximiser of an acquisition over the agent's space: on a grid the first maximiser
    /// of `grid_scores` (one score per grid point, in order: exact); on a box the search
    /// with `acq` (value and gradient) on this agent's candidate stream.
    pub fn maximise(
        &mut self,
        grid_scores: impl FnOnce(&Domain) -> Vec<f64>,
        acq: &mut impl Acquisition,
    ) -> Result<Point> {
        match self.space.grid() {
            Some(grid) => Ok(grid.at(argmax(ndarray::ArrayView1::from(&grid_scores(grid)[..])))),
            None => {
                let region = Region::unit(self.space.dim());
                self.acquire(acq, &region)
            }
        }
    }

    /// The maximiser of `acq` over `region` of a box space, searched with this agent's
    /// candidate stream.
    pub fn acquire(&mut self, acq: &mut impl Acquisition, region: &Region) -> Result<Point> {
        maximise_point(acq, &self.space, region, self.search, &mut self.acq_rng)
    }

    /// argmax over the space of one sample from the agent's own posterior (FTS Alg. 1 line 4).
    pub fn thompson(&mut self) -> Result<Point> {
        Ok(self.decide(Rule::Thompson, None)?.point)
    }

    /// The agent's next query by `rule` on its own data, with its own fitted hyperparameters
    /// or, when given, `hyper` (shared ones: the federated frameworks). Random search has no
    /// model and is not decided here.
    pub fn decide(&mut self, rule: Rule, hyper: Option<&GpHyper>) -> Result<Decision> {
        let x = self.inputs();
        if hyper.is_none() {
            self.model
                .maybe_refit(x.view(), &self.ys, &mut self.fit_rng);
        }
        match rule {
            Rule::Thompson => {
                let model = hyper.map(|h| self.model.with_hyper(h.clone()));
                let sample = model.as_ref().unwrap_or(&self.model).sample(
                    x.view(),
                    &self.ys,
                    &mut self.sample_rng,
                )?;
                let point = match self.space.grid() {
                    Some(grid) => grid.at(sample.argmax(grid)),
                    None => {
                        let mut acq = |x: &[f64], g: Option<&mut [f64]>| sample.value_grad(x, g);
                        let region = Region::unit(self.space.dim());
                        maximise_point(
                            &mut acq,
                            &self.space,
                            &region,
                            self.search,
                            &mut self.acq_rng,
                        )?
                    }
                };
                let value = sample.value_grad(point.view().as_slice().expect("contiguous"), None);
                Ok(Decision { point, value })
            }
            Rule::Random => unreachable!("random search is decided by its algorithm"),
            Rule::Ei(_) | Rule::Ucb { .. } => {
                let hyper = hyper.cloned().unwrap_or_else(|| self.model.hyper().clone());
                let post = self.posterior(&hyper)?;
                let best = match rule {
                    // The plug-in incumbent: the best the model believes of a queried point.
                    Rule::Ei(EiForm::LogNoisy) => post.predict(x.view()).0,
                    _ => self.scaled_ys(),
                }
                .iter()
                .cloned()
                .fold(f64::NEG_INFINITY, f64::max);
                let beta = match rule {
                    Rule::Ucb { beta } => self.ucb_beta(beta),
                    _ => 0.0,
                };
                let score = |m: f64, v: f64| match rule {
                    Rule::Ei(EiForm::Plain) => expected_improvement(m, v.max(0.0).sqrt(), best),
                    Rule::Ei(_) => log_expected_improvement(m, v.max(0.0).sqrt(), best),
                    _ => m + (beta * v.max(0.0)).sqrt(),
                };
                let grid_scores = |grid: &Domain| {
                    let (mean, var) = post.predict(grid.points());
                    mean.iter().zip(&var).map(|(&m, &v)| score(m, v)).collect()
                };
                let mut acq = |p: &[f64], g: Option<&mut [f64]>| {
                    let (m, v, dm, dv) = post.predict_grad(p);
                    let (value, grad) = match rule {
                        Rule::Ei(EiForm::Plain) => ei_grad(m, v, &dm, &dv, best),
                        Rule::Ei(_) => log_ei_grad(m, v, &dm, &dv, best),
                        _ => ucb_grad(m, v, &dm, &dv, beta),
                    };
                    if let Some(g) = g {
                        g.copy_from_slice(&grad);
                    }
                    value
                };
                let point = self.maximise(grid_scores, &mut acq)?;
                let (m, v, _, _) = post.predict_grad(point.view().as_slice().expect("contiguous"));
                Ok(Decision {
                    point,
                    value: score(m, v),
                })
            }
        }
    }

    /// What the agent's model believes now (`output.beliefs`): its own hyperparameters or,
    /// when given, those it decides with (shared ones), and the constant mean they imply on
    /// its data (0 for the zero mean or with no data; NaN if the posterior is singular).
    pub fn belief(&self, hyper: Option<&GpHyper>) -> Belief {
        let hyper = hyper.unwrap_or_else(|| self.model.hyper()).clone();
        let constant = match self.ys.is_empty() {
            true => 0.0,
            false => self.posterior(&hyper).map_or(f64::NAN, |p| p.constant()),
        };
        Belief { hyper, constant }
    }

    /// The exact GP posterior of the agent's (scaled) observations under `hyper`.
    pub fn posterior(&self, hyper: &GpHyper) -> Result<GpPosterior> {
        let x = self.inputs();
        let y = self.scaled_ys();
        GpPosterior::fit(x.view(), y.view(), hyper).ok_or_else(|| {
            FboError::Run(format!(
                "agent {}'s GP posterior is singular; raise the noise lower bound",
                self.agent
            ))
        })
    }

    /// The maximiser over the agent's space of `f(mean, var)` under `post`, with its value.
    pub fn best_of(
        &mut self,
        post: &GpPosterior,
        f: &(dyn Fn(f64, f64) -> f64 + Sync),
        df: ScoreGrad,
    ) -> Result<(Point, f64)> {
        let grid_scores = |grid: &Domain| {
            let (mean, var) = post.predict(grid.points());
            mean.iter().zip(&var).map(|(&m, &v)| f(m, v)).collect()
        };
        let mut acq = |x: &[f64], g: Option<&mut [f64]>| {
            let (m, v, dm, dv) = post.predict_grad(x);
            if let Some(g) = g {
                g.copy_from_slice(&df(m, v, &dm, &dv));
            }
            f(m, v)
        };
        let p = self.maximise(grid_scores, &mut acq)?;
        let (m, v, _, _) = post.predict_grad(&p.x);
        Ok((p, f(m, v)))
    }

    /// The maximiser of the LCB mu - eta sigma under `post` and that LCB (survey eq. 7's
    /// shared design: where the agent is confident it is good).
    pub fn lcb_design(&mut self, post: &GpPosterior, eta: f64) -> Result<(Point, f64)> {
        let lcb = |m: f64, v: f64| m - eta * v.max(0.0).sqrt();
        let dlcb = |_: f64, v: f64, dm: &[f64], dv: &[f64]| -> Vec<f64> {
            let s = v.max(1e-12).sqrt();
            dm.iter()
                .zip(dv)
                .map(|(a, b)| a - eta * b / (2.0 * s))
                .collect()
        };
        self.best_of(post, &lcb, &dlcb)
    }

    /// GP-UCB's beta: `fixed` when set, else Srinivas et al.'s beta_t at the number of
    /// observations, with |D| = `domain_size`.
    pub fn ucb_beta(&self, fixed: Option<f64>) -> f64 {
        fixed.unwrap_or_else(|| ucb_beta(self.n_obs(), self.domain_size(), UCB_DELTA))
    }

    /// |D| in GP-UCB's beta_t: the grid's size, or the box search's candidate count.
    pub fn domain_size(&self) -> usize {
        match self.space.grid() {
            Some(g) => g.len(),
            None => self.search.candidates,
        }
    }
}

/// The gradient in x of a score of (mean, variance) from theirs.
pub type ScoreGrad<'a> = &'a (dyn Fn(f64, f64, &[f64], &[f64]) -> Vec<f64> + Sync);

/// Every query's observation to the agent that made it (agents indexed by their id).
pub fn observe_all(agents: &mut [Learner], queries: &[super::Query], ys: &[f64]) {
    for (q, y) in queries.iter().zip(ys) {
        agents[q.agent].add(q.point.clone(), *y);
    }
}

/// GP-UCB's delta in Srinivas et al.'s beta_t (`crate::acquisition::ucb_beta`).
const UCB_DELTA: f64 = 0.1;

/// How an agent chooses its next query on its own model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rule {
    /// The argmax of a sample from its own GP posterior (TS).
    Thompson,
    /// Uniform: on a grid without replacement (until every point was queried), on a box
    /// uniform on [0, 1]^D.
    Random,
    /// Expected improvement on the GP posterior of the standardised observations, in the
    /// form given (plain or log; over the best observation or the best posterior mean).
    Ei(EiForm),
    /// Upper confidence bound mean + sqrt(beta_t) sd: a fixed beta, or None for Srinivas et
    /// al.'s schedule at t = the number of observations.
    Ucb { beta: Option<f64> },
}

/// A chosen query and the value of what chose it there (the sample's value for TS, the
/// acquisition's for EI and UCB), on the agent's standardised scale.
#[derive(Clone, Debug)]
pub struct Decision {
    pub point: Point,
    pub value: f64,
}

/// The random features all agents share, with the BLR noise their posteriors use; on a grid
/// Phi is evaluated once on the whole domain so a message's argmax is one matrix-vector
/// product.
pub struct SharedFeatures {
    pub features: RandomFeatures,
    /// The BLR's noise variance lambda (FTS eq. 2).
    pub lambda: f64,
    grid_phi: Option<Array2<f64>>,
    kernel: Kernel,
    normalize: bool,
    seed: u64,
    run: usize,
}

impl SharedFeatures {
    /// Drawn from the stream every agent of a run shares.
    #[allow(clippy::too_many_arguments)]
    pub fn draw(
        space: &Space,
        m: usize,
        kernel: Kernel,
        length_scales: &[f64],
        variance: f64,
        lambda: f64,
        normalize: bool,
        seed: u64,
        run: usize,
    ) -> Self {
        let mut rng = stream(seed, run as u64, SHARED, Purpose::SharedFeatures);
        let features = RandomFeatures::draw(
            m,
            space.dim(),
            kernel,
            length_scales,
            variance,
            normalize,
            &mut rng,
        );
        let grid_phi = space.grid().map(|g| features.matrix(g.points()));
        SharedFeatures {
            features,
            lambda,
            grid_phi,
            kernel,
            normalize,
            seed,
            run,
        }
    }

    /// The features of a run as its spec and algorithm define them (M from the algorithm):
    /// the pinned settings, or with an agreed model the prior's hyperparameters until the
    /// agents first agree.
    pub fn for_run(ctx: &RunContext) -> Self {
        let sur = &ctx.spec.surrogate;
        let space = &ctx.landscape.space;
        let (ls, var, lambda) = match ctx.algorithm.shared {
            SharedModel::Fixed => (vec![sur.length_scale], sur.kernel_variance, sur.lambda),
            SharedModel::Agreed => {
                let h = SharedHyper::from_own(&sur.own.initial, space.dim());
                (h.length_scales, h.signal_var, h.noise_var)
            }
        };
        SharedFeatures::draw(
            space,
            ctx.algorithm.features,
            sur.kernel,
            &ls,
            var,
            lambda,
            sur.normalize_features,
            ctx.seed(),
            ctx.run,
        )
    }

    /// The same features for agreed hyperparameters: the shared stream from its start, so
    /// every agent draws the same standard normals and phases, scaled by the new length
    /// scales.
    pub fn agreed(&self, space: &Space, h: &SharedHyper) -> Self {
        SharedFeatures::draw(
            space,
            self.features.len(),
            self.kernel,
            &h.length_scales,
            h.signal_var,
            h.noise_var,
            self.normalize,
            self.seed,
            self.run,
        )
    }

    /// The BLR posterior on these features of a learner's observations on its own model's
    /// (standardised) scale, with this model's noise; None if singular.
    pub fn posterior(&self, learner: &Learner) -> Option<BlrPosterior> {
        let (points, _) = learner.observations();
        let mut phi = Array2::zeros((points.len(), self.features.len()));
        for (mut row, p) in phi.rows_mut().into_iter().zip(points) {
            row.assign(&self.phi(p));
        }
        BlrPosterior::from_data(phi.view(), learner.scaled_ys().view(), self.lambda)
    }

    /// Phi on the whole domain, one row per grid point (None on a box).
    pub fn grid_phi(&self) -> Option<&Array2<f64>> {
        self.grid_phi.as_ref()
    }

    /// phi(x) of a point: the precomputed row on a grid.
    pub fn phi(&self, p: &Point) -> Array1<f64> {
        match (p.index, &self.grid_phi) {
            (Some(i), Some(g)) => g.row(i).to_owned(),
            _ => self.features.feature(p.view()),
        }
    }

    /// phi(x)^T omega at every point of a grid domain.
    pub fn values(&self, omega: &Array1<f64>) -> Array1<f64> {
        self.grid_phi
            .as_ref()
            .expect("grid values need a grid")
            .dot(omega)
    }

    /// The grid index maximising phi(x)^T omega (grids only).
    pub fn argmax(&self, omega: &Array1<f64>) -> usize {
        argmax(self.values(omega).view())
    }

    /// argmax_x phi(x)^T omega over the space (FTS Alg. 1 line 6): exact on a grid, by the
    /// box search on the learner's candidate stream otherwise.
    pub fn best(&self, omega: &Array1<f64>, learner: &mut Learner) -> Result<Point> {
        if let (Some(g), Some(grid)) = (&self.grid_phi, learner.space.grid()) {
            return Ok(grid.at(argmax(g.dot(omega).view())));
        }
        let w = omega.as_slice().expect("contiguous weights");
        let mut acq = |x: &[f64], g: Option<&mut [f64]>| self.features.value_grad(x, w, g);
        let region = Region::unit(learner.space.dim());
        learner.acquire(&mut acq, &region)
    }
}

/// An agent's posterior over the shared-feature weights, from which its messages are drawn.
pub struct Messenger {
    blr: BlrPosterior,
    rng: Rng,
}

impl Messenger {
    pub fn new(m: usize, lambda: f64, seed: u64, run: usize, agent: usize) -> Self {
        Messenger {
            blr: BlrPosterior::prior(m, lambda),
            rng: stream(seed, run as u64, agent as u64, Purpose::Message),
        }
    }

    pub fn observe(&mut self, shared: &SharedFeatures, p: &Point, y: f64) {
        match (p.index, &shared.grid_phi) {
            (Some(i), Some(g)) => self.blr.update(g.row(i), y),
            _ => self.blr.update(shared.features.feature(p.view()).view(), y),
        }
    }

    /// omega_n ~ N(nu_n, lambda Sigma_n^-1).
    pub fn message(&mut self) -> Array1<f64> {
        self.blr.sample(&mut self.rng)
    }

    /// omega_n drawn from `rng` instead of the messenger's own stream.
    pub fn message_from(&self, rng: &mut Rng) -> Array1<f64> {
        self.blr.sample(rng)
    }

    pub fn n_obs(&self) -> usize {
        self.blr.n_obs()
    }

    /// The posterior afresh on `shared` from a learner's observations on its own model's
    /// (standardised) scale: an agreed model's features and noise change between rounds, and
    /// so does the standardisation.
    pub fn refit(&mut self, shared: &SharedFeatures, learner: &Learner) -> Result<()> {
        if learner.n_obs() == 0 {
            self.blr = BlrPosterior::prior(shared.features.len(), shared.lambda);
            return Ok(());
        }
        self.blr = shared.posterior(learner).ok_or_else(|| {
            FboError::Run(format!(
                "agent {}'s posterior on the shared features is singular",
                learner.agent
            ))
        })?;
        Ok(())
    }
}

/// An agent's contribution to the agreement: the log of its own fitted hyperparameters
/// (refitting first if its schedule says so).
pub fn own_log_hyper(learner: &mut Learner) -> Vec<f64> {
    let dim = learner.space().dim();
    SharedHyper::from_own(&learner.fitted_hyper(), dim).to_log()
}

/// The senders' agreement without DP (FTS, RGPE, TAF: no server adds noise): the median of
/// their fits and the features redrawn for it; None when there are no senders (nothing to
/// agree on). Senders that go on sending refit their posteriors on it (`refit_senders`).
pub fn agree_senders(
    shared: &SharedFeatures,
    space: &Space,
    senders: &mut [Option<Sender>],
) -> Option<SharedFeatures> {
    let logs: Vec<Vec<f64>> = senders
        .iter_mut()
        .flatten()
        .map(|s| own_log_hyper(&mut s.learner))
        .collect();
    (!logs.is_empty()).then(|| shared.agreed(space, &SharedHyper::from_log(&median(&logs))))
}

/// Every sender's message posterior rebuilt on `shared` (`Messenger::refit`).
pub fn refit_senders(shared: &SharedFeatures, senders: &mut [Option<Sender>]) -> Result<()> {
    for s in senders.iter_mut().flatten() {
        s.messenger.refit(shared, &s.learner)?;
    }
    Ok(())
}

/// An agent in its role as a sender of messages (FTS, RGPE, TAF): its own data and the
/// posterior over the shared features it draws messages from.
pub struct Sender {
    pub learner: Learner,
    pub messenger: Messenger,
    data_rng: Rng,
}

impl Sender {
    /// Evaluates and observes `p`; `req` names the evaluation (a skipped failure is not
    /// observed).
    pub fn observe(
        &mut self,
        landscape: &Landscape,
        shared: &SharedFeatures,
        req: &Request,
        p: Point,
    ) -> Result<()> {
        let y = landscape.observe(req, &p, &mut self.data_rng)?;
        if !y.is_nan() {
            self.messenger.observe(shared, &p, y);
            self.learner.add(p, y);
        }
        Ok(())
    }
}

/// The senders' states after their t_n observations, per run: they depend on (run, agent)
/// and the spec's federation and own-model settings only, never on the algorithm, so the
/// algorithms of one spec share them instead of repeating the senders' TS (which dominates
/// FTS-protocol runs: 28 agents x 53 TS iterations for every algorithm and run). Each
/// algorithm takes clones, so continuing a sender (every-iteration messages) cannot leak
/// into another algorithm.
///
/// Keyed by everything the states depend on, the cache also serves the points of a sweep
/// (which differ in server or privacy settings, not in the senders): `SenderCache::global()`.
#[derive(Default)]
pub struct SenderCache {
    runs: Mutex<HashMap<(String, usize), SenderStates>>,
}

impl SenderCache {
    /// The process's cache, shared by every spec and sweep point it runs.
    pub fn global() -> &'static SenderCache {
        static CACHE: std::sync::OnceLock<SenderCache> = std::sync::OnceLock::new();
        CACHE.get_or_init(SenderCache::default)
    }
}

/// What the senders' states depend on: the objective (and so the landscape of a run), the
/// seed, who the targets are, how many observations they gather and how, and the own model
/// and search that pick them. Not the algorithm or its M: messages are rebuilt per algorithm.
fn sender_key(ctx: &RunContext) -> String {
    let spec = ctx.spec;
    format!(
        "{:?}|{}|{:?}|{}|{:?}|{}|{:?}|{:?}",
        spec.objective,
        ctx.seed(),
        spec.targets(),
        spec.federation.observations,
        spec.federation.observations_from,
        spec.initial_points,
        spec.surrogate.own,
        spec.acquisition,
    )
}

type SenderStates = Arc<Vec<Option<(Learner, Rng)>>>;

/// The senders of a run, by agent (None for an agent no other agent hears from: the only
/// target). Their data are t_n random observations (FTS App. D.1) or the history of t_n
/// iterations of their own TS (App. D.2), and depend on (run, agent) only, so every target,
/// algorithm and M of a spec sees the same agents. Messages use this algorithm's shared
/// features, so each sender's posterior is rebuilt from its observations.
pub fn build_senders(ctx: &RunContext, shared: &SharedFeatures) -> Result<Vec<Option<Sender>>> {
    // Computed outside the lock: the computation runs rayon tasks, and a worker waiting on
    // them may pick up another job that needs this cache.
    let key = (sender_key(ctx), ctx.run);
    // The cache holds every sender's history: only a simulation's.
    let cache = ctx
        .senders
        .filter(|_| ctx.place == super::Place::Simulation);
    let cached = cache.and_then(|c| c.runs.lock().ok().and_then(|m| m.get(&key).cloned()));
    let states = match cached {
        Some(s) => s,
        None => {
            let s = Arc::new(sender_states(ctx)?);
            if let Some(c) = cache
                && let Ok(mut m) = c.runs.lock()
            {
                m.entry(key).or_insert_with(|| s.clone());
            }
            s
        }
    };
    let (seed, run) = (ctx.seed(), ctx.run);
    Ok(states
        .iter()
        .map(|st| {
            st.as_ref().map(|(learner, data_rng)| {
                let agent = learner.agent;
                let mut messenger =
                    Messenger::new(ctx.algorithm.features, shared.lambda, seed, run, agent);
                let (points, ys) = learner.observations();
                for (p, &y) in points.iter().zip(ys) {
                    messenger.observe(shared, p, y);
                }
                Sender {
                    learner: learner.clone(),
                    messenger,
                    data_rng: data_rng.clone(),
                }
            })
        })
        .collect())
}

/// Each sender's learner and data stream after its t_n observations.
fn sender_states(ctx: &RunContext) -> Result<Vec<Option<(Learner, Rng)>>> {
    let spec = ctx.spec;
    let land = &ctx.landscape;
    let space = &land.space;
    let (seed, run) = (ctx.seed(), ctx.run);
    let fed = &spec.federation;
    let ids = spec.targets();
    // Each sender's TS runs on its own streams: in parallel, with the same result.
    (0..land.agents())
        .into_par_iter()
        .map(|agent| -> Result<Option<(Learner, Rng)>> {
            // A sender is an agent some target is not; its history is made where it is.
            if !super::relay::is_sender(ids, agent) || !ctx.place.holds(agent) {
                return Ok(None);
            }
            let mut learner = Learner::sender_for_run(ctx, agent);
            let mut data_rng = stream(seed, run as u64, agent as u64, Purpose::AgentData);
            // A sender's history is the same for every algorithm: one journal scope. Its
            // evaluations are numbered in the order it makes them.
            let mut made = 0i64;
            let mut observe = |learner: &mut Learner, rng: &mut Rng, p: Point| -> Result<()> {
                made += 1;
                let y = land.observe(&Request::new(SENDERS, run, agent, made), &p, rng)?;
                // A failed evaluation that is skipped is not observed.
                if !y.is_nan() {
                    learner.add(p, y);
                }
                Ok(())
            };
            let t_n = fed.observations;
            let random_points = match fed.observations_from {
                ObservationSource::Random => t_n,
                ObservationSource::Ts => spec.initial_points.max(1),
            };
            let points: Vec<Point> = match space.grid() {
                Some(grid) if random_points <= grid.len() => {
                    sample_indices(&mut data_rng, grid.len(), random_points)
                        .into_iter()
                        .map(|i| grid.at(i))
                        .collect()
                }
                Some(grid) => (0..random_points)
                    .map(|_| grid.at(data_rng.random_range(0..grid.len())))
                    .collect(),
                None => {
                    let unit = Region::unit(space.dim());
                    (0..random_points)
                        .map(|_| space.point(unit.sample(&mut data_rng)))
                        .collect()
                }
            };
            for p in points {
                observe(&mut learner, &mut data_rng, p)?;
            }
            if fed.observations_from == ObservationSource::Ts {
                for _ in 0..t_n {
                    let p = learner.thompson()?;
                    observe(&mut learner, &mut data_rng, p)?;
                }
            }
            Ok(Some((learner, data_rng)))
        })
        // Every sender finishes (or stops) before an error is returned: a sender's
        // evaluations are never abandoned half-way because another failed, and `fbo ask`
        // sees every sender's next query at once.
        .collect::<Vec<_>>()
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acquisition::optimize::BoxSearch;
    use crate::objective::space::Param;

    fn settings() -> OwnSettings {
        let text = "name = \"t\"\niterations = 1\n[objective]\nkind = \"synthetic-fts\"\n[[algorithm]]\nkind = \"ts\"\n";
        crate::spec::Spec::parse(text, std::path::Path::new("t.toml"))
            .unwrap()
            .surrogate
            .own
    }

    /// Agent `agent` of a 2-D box holding the same ten observations as every other.
    fn learner(agent: usize) -> Learner {
        let space = Arc::new(Space::Box(vec![
            Param::linear("a", 0.0, 1.0),
            Param::linear("b", 0.0, 1.0),
        ]));
        let search = BoxSearch {
            candidates: 100,
            starts: 2,
        };
        let mut l = Learner::new(agent, space.clone(), search, settings(), 3, 0);
        for i in 0..10 {
            let x = vec![(i as f64 * 0.37) % 1.0, (i as f64 * 0.61) % 1.0];
            let y = (3.0 * x[0]).sin() + (2.0 * x[1]).cos();
            l.add(space.point(x), y);
        }
        l
    }

    /// ln is monotone, so log-EI climbs to plain EI's maximiser where EI does not underflow:
    /// the same candidates and starts end at the same point (to the local search's tolerance)
    /// with ln of the same value.
    #[test]
    fn log_ei_finds_plain_ei_maximiser() {
        let (mut plain, mut log) = (learner(0), learner(0));
        let p = plain.decide(Rule::Ei(EiForm::Plain), None).unwrap();
        let l = log.decide(Rule::Ei(EiForm::Log), None).unwrap();
        let (a, b) = (p.point.view(), l.point.view());
        let gap = a
            .iter()
            .zip(b.iter())
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(gap < 1e-4, "{a} vs {b}");
        assert!(p.value > 0.0);
        assert!(
            (l.value - p.value.ln()).abs() < 1e-6,
            "{} vs {}",
            l.value,
            p.value.ln()
        );
    }

    /// log-noisy measures improvement against the best posterior mean at the queried inputs,
    /// not the best noisy observation: its value is ln EI over that incumbent, recomputed here.
    #[test]
    fn log_noisy_ei_measures_against_the_best_posterior_mean() {
        let mut l = learner(0);
        let d = l.decide(Rule::Ei(EiForm::LogNoisy), None).unwrap();
        let post = l.posterior(l.model.hyper()).unwrap();
        let x = l.inputs();
        let best_mean = post
            .predict(x.view())
            .0
            .iter()
            .cloned()
            .fold(f64::MIN, f64::max);
        let best_y = l.scaled_ys().iter().cloned().fold(f64::MIN, f64::max);
        assert!((best_mean - best_y).abs() > 1e-6, "{best_mean} vs {best_y}");
        let (m, v, _, _) = post.predict_grad(d.point.view().as_slice().unwrap());
        assert_eq!(
            d.value,
            log_expected_improvement(m, v.max(0.0).sqrt(), best_mean)
        );
    }

    #[test]
    fn identical_agents_agree_on_the_centralised_fit() {
        // Five agents with the same data fit from their own random restarts; their median is
        // the fit of one model on those data (the centralised fit), to the fit's precision.
        let logs: Vec<Vec<f64>> = (0..5).map(|a| own_log_hyper(&mut learner(a))).collect();
        let central = own_log_hyper(&mut learner(99));
        let agreed = median(&logs);
        assert_eq!(agreed.len(), 4);
        for (a, c) in agreed.iter().zip(&central) {
            assert!((a - c).abs() < 1e-3, "{agreed:?} vs {central:?}");
        }
    }

    #[test]
    fn agreed_features_are_the_shared_draws_rescaled() {
        // The same standard normals and phases for every agreement: a frequency on axis d
        // scales as 1 / l_d, the phases do not move, and the features' variance and the BLR
        // noise are the agreed ones.
        let l = learner(0);
        let space = l.space();
        let base = SharedFeatures::draw(space, 30, Kernel::Se, &[1.0], 1.0, 1e-6, true, 3, 0);
        let h = SharedHyper {
            length_scales: vec![0.5, 0.25],
            signal_var: 2.0,
            noise_var: 0.1,
        };
        let agreed = base.agreed(space, &h);
        assert_eq!(agreed.lambda, 0.1);
        let x = [0.3, 0.0];
        let y = [0.0, 0.7];
        let w = vec![1.0; 30];
        // Along axis 0 alone, the agreed features at x equal the base features at x / 0.5
        // (sqrt(2) times: variance 2 against 1, both normalised).
        let (fa, fb) = (
            agreed.features.value_grad(&x, &w, None),
            base.features.value_grad(&[0.6, 0.0], &w, None),
        );
        assert!((fa - 2f64.sqrt() * fb).abs() < 1e-9, "{fa} {fb}");
        let (fa, fb) = (
            agreed.features.value_grad(&y, &w, None),
            base.features.value_grad(&[0.0, 2.8], &w, None),
        );
        assert!((fa - 2f64.sqrt() * fb).abs() < 1e-9, "{fa} {fb}");
    }

    #[test]
    fn a_refitted_messenger_is_the_blr_of_the_standardised_observations() {
        let l = learner(0);
        let shared = SharedFeatures::draw(l.space(), 20, Kernel::Se, &[0.3], 1.0, 0.05, true, 3, 0);
        let mut m = Messenger::new(20, 1.0, 3, 0, 0);
        m.refit(&shared, &l).unwrap();
        let mut phi = Array2::zeros((10, 20));
        for (mut row, p) in phi.rows_mut().into_iter().zip(l.observations().0) {
            row.assign(&shared.features.feature(p.view()));
        }
        let y = l.scaled_ys();
        assert!((y.sum()).abs() < 1e-12);
        let direct = BlrPosterior::from_data(phi.view(), y.view(), 0.05).unwrap();
        assert_eq!(m.blr.lambda(), 0.05);
        let (a, b) = (m.blr.mean_weights(), direct.mean_weights());
        assert!(a.iter().zip(&b).all(|(p, q)| (p - q).abs() < 1e-12));
    }
}
