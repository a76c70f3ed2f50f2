//! An agent's own optimisation state, shared by every algorithm: its observations, its GP
//! hyperparameters and its Thompson sampler; and the shared random features through which
//! agents talk.

use super::RunContext;
use crate::error::Result;
use crate::linalg::argmax;
use crate::objective::{Domain, Landscape};
use crate::rng::{Purpose, Rng, SHARED, stream};
use crate::spec::ObservationSource;
use crate::surrogate::blr::BlrPosterior;
use crate::surrogate::gp::GpHyper;
use crate::surrogate::own::{OwnModel, OwnSettings};
use crate::surrogate::rff::RandomFeatures;
use ndarray::{Array1, Array2, ArrayView1};
use rand::Rng as _;
use rand::seq::index::sample as sample_indices;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A single agent running standard GP Thompson sampling on its own data.
#[derive(Clone)]
pub struct Learner {
    pub agent: usize,
    domain: Arc<Domain>,
    indices: Vec<usize>,
    ys: Vec<f64>,
    model: OwnModel,
    sample_rng: Rng,
    fit_rng: Rng,
}

impl Learner {
    pub fn new(
        agent: usize,
        domain: Arc<Domain>,
        settings: OwnSettings,
        seed: u64,
        run: usize,
    ) -> Self {
        Learner {
            agent,
            domain,
            indices: Vec::new(),
            ys: Vec::new(),
            model: OwnModel::new(settings),
            sample_rng: stream(seed, run as u64, agent as u64, Purpose::OwnSample),
            fit_rng: stream(seed, run as u64, agent as u64, Purpose::HyperFit),
        }
    }

    pub fn add(&mut self, index: usize, y: f64) {
        self.indices.push(index);
        self.ys.push(y);
    }

    pub fn n_obs(&self) -> usize {
        self.ys.len()
    }

    /// Observed grid indices and their y, in observation order.
    pub fn observations(&self) -> (&[usize], &[f64]) {
        (&self.indices, &self.ys)
    }

    /// The GP hyperparameters after the refit the schedule asks for at this many
    /// observations (acquisition-based algorithms use the GP itself, not a sample).
    pub fn fitted_hyper(&mut self) -> GpHyper {
        let x = self.inputs();
        self.model
            .maybe_refit(x.view(), &self.ys, &mut self.fit_rng);
        self.model.hyper()
    }

    /// The observations on the scale the agent's own model uses (standardised by default).
    pub fn scaled_ys(&self) -> Array1<f64> {
        self.model.targets(&self.ys)
    }

    pub fn domain(&self) -> &Domain {
        &self.domain
    }

    pub fn inputs(&self) -> Array2<f64> {
        let d = self.domain.dim();
        let mut x = Array2::zeros((self.indices.len(), d));
        for (r, &i) in self.indices.iter().enumerate() {
            x.row_mut(r).assign(&self.domain.point(i));
        }
        x
    }

    /// argmax over the domain of one sample from the agent's own posterior (FTS Alg. 1 line 4).
    pub fn thompson(&mut self) -> Result<usize> {
        let x = self.inputs();
        self.model
            .maybe_refit(x.view(), &self.ys, &mut self.fit_rng);
        let sample = self
            .model
            .sample(x.view(), &self.ys, &mut self.sample_rng)?;
        Ok(sample.argmax(self.domain.points()))
    }
}

/// The random features all agents share, with Phi evaluated once on the whole domain so a
/// message's argmax is one matrix-vector product.
pub struct SharedFeatures {
    pub features: RandomFeatures,
    grid_phi: Array2<f64>,
}

impl SharedFeatures {
    /// Drawn from the stream every agent of a run shares.
    pub fn draw(
        domain: &Domain,
        m: usize,
        length_scale: f64,
        variance: f64,
        normalize: bool,
        seed: u64,
        run: usize,
    ) -> Self {
        let mut rng = stream(seed, run as u64, SHARED, Purpose::SharedFeatures);
        let features =
            RandomFeatures::draw(m, domain.dim(), length_scale, variance, normalize, &mut rng);
        let grid_phi = features.matrix(domain.points());
        SharedFeatures { features, grid_phi }
    }

    /// The features of a run as its spec and algorithm define them (M from the algorithm).
    pub fn for_run(ctx: &RunContext) -> Self {
        let sur = &ctx.spec.surrogate;
        SharedFeatures::draw(
            &ctx.landscape.domain,
            ctx.algorithm.features,
            sur.length_scale,
            sur.kernel_variance,
            sur.normalize_features,
            ctx.seed(),
            ctx.run,
        )
    }

    /// Phi on the whole domain, one row per grid point.
    pub fn grid_phi(&self) -> &Array2<f64> {
        &self.grid_phi
    }

    pub fn phi(&self, index: usize) -> ArrayView1<'_, f64> {
        self.grid_phi.row(index)
    }

    /// phi(x)^T omega at every point of the domain.
    pub fn values(&self, omega: &Array1<f64>) -> Array1<f64> {
        self.grid_phi.dot(omega)
    }

    /// argmax_x phi(x)^T omega over the domain (FTS Alg. 1 line 6).
    pub fn argmax(&self, omega: &Array1<f64>) -> usize {
        argmax(self.values(omega).view())
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

    pub fn observe(&mut self, shared: &SharedFeatures, index: usize, y: f64) {
        self.blr.update(shared.phi(index), y);
    }

    /// omega_n ~ N(nu_n, lambda Sigma_n^-1).
    pub fn message(&mut self) -> Array1<f64> {
        self.blr.sample(&mut self.rng)
    }

    pub fn n_obs(&self) -> usize {
        self.blr.n_obs()
    }
}

/// An agent in its role as a sender of messages (FTS, RGPE, TAF): its own data and the
/// posterior over the shared features it draws messages from.
pub struct Sender {
    pub learner: Learner,
    pub messenger: Messenger,
    data_rng: Rng,
}

impl Sender {
    pub fn observe(&mut self, landscape: &Landscape, shared: &SharedFeatures, idx: usize) {
        let y = landscape.observe(self.learner.agent, idx, &mut self.data_rng);
        self.learner.add(idx, y);
        self.messenger.observe(shared, idx, y);
    }
}

/// The senders' states after their t_n observations, per run: they depend on (run, agent)
/// and the spec's federation and own-model settings only, never on the algorithm, so the
/// algorithms of one spec share them instead of repeating the senders' TS (which dominates
/// FTS-protocol runs: 28 agents x 53 TS iterations for every algorithm and run). Each
/// algorithm takes clones, so continuing a sender (every-iteration messages) cannot leak
/// into another algorithm.
#[derive(Default)]
pub struct SenderCache {
    runs: Mutex<HashMap<usize, SenderStates>>,
}

type SenderStates = Arc<Vec<Option<(Learner, Rng)>>>;

/// The senders of a run, by agent (None for an agent no other agent hears from: the only
/// target). Their data are t_n random observations (FTS App. D.1) or the history of t_n
/// iterations of their own TS (App. D.2), and depend on (run, agent) only, so every target,
/// algorithm and M of a spec sees the same agents. Messages use this algorithm's shared
/// features, so each sender's posterior is rebuilt from its observations.
pub fn build_senders(ctx: &RunContext, shared: &SharedFeatures) -> Result<Vec<Option<Sender>>> {
    let cached = ctx
        .senders
        .and_then(|c| c.runs.lock().ok().and_then(|m| m.get(&ctx.run).cloned()));
    let states = match cached {
        Some(s) => s,
        None => {
            let s = Arc::new(sender_states(ctx)?);
            if let Some(c) = ctx.senders
                && let Ok(mut m) = c.runs.lock()
            {
                m.insert(ctx.run, s.clone());
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
                let mut messenger = Messenger::new(
                    ctx.algorithm.features,
                    ctx.spec.surrogate.lambda,
                    seed,
                    run,
                    agent,
                );
                let (idx, ys) = learner.observations();
                for (&i, &y) in idx.iter().zip(ys) {
                    messenger.observe(shared, i, y);
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
    let domain = &land.domain;
    let (seed, run) = (ctx.seed(), ctx.run);
    let fed = &spec.federation;
    let ids = spec.targets();
    let mut senders = Vec::with_capacity(land.agents());
    for agent in 0..land.agents() {
        if !ids.iter().any(|&t| t != agent) {
            senders.push(None);
            continue;
        }
        let mut learner =
            Learner::new(agent, domain.clone(), spec.surrogate.own.clone(), seed, run);
        let mut data_rng = stream(seed, run as u64, agent as u64, Purpose::AgentData);
        let observe = |learner: &mut Learner, rng: &mut Rng, idx: usize| {
            let y = land.observe(agent, idx, rng);
            learner.add(idx, y);
        };
        let t_n = fed.observations;
        let random_points = match fed.observations_from {
            ObservationSource::Random => t_n,
            ObservationSource::Ts => spec.initial_points.max(1),
        };
        let points: Vec<usize> = if random_points <= domain.len() {
            sample_indices(&mut data_rng, domain.len(), random_points).into_vec()
        } else {
            (0..random_points)
                .map(|_| data_rng.random_range(0..domain.len()))
                .collect()
        };
        for idx in points {
            observe(&mut learner, &mut data_rng, idx);
        }
        if fed.observations_from == ObservationSource::Ts {
            for _ in 0..t_n {
                let idx = learner.thompson()?;
                observe(&mut learner, &mut data_rng, idx);
            }
        }
        senders.push(Some((learner, data_rng)));
    }
    Ok(senders)
}
