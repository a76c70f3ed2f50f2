//! Experiment specs: TOML is deserialised into raw types that reject unknown keys, then
//! checked once into the parameters the rest of fbo uses. No numeric code re-validates user
//! input; every message names the file, the key and what is allowed.

pub mod frameworks;
pub mod portable;
pub mod schedule;

use crate::error::{FboError, Result};
use crate::objective::command::{CommandSettings, OnFailure};
use crate::objective::function::Function;
use crate::objective::model::{Dataset, ModelSettings, SvmMetric};
use crate::objective::space::{Domain, Param, Scale, Space};
use crate::objective::table::TableMeta;
use crate::optim::BoxSearch;
use crate::privacy::{Accountant, Sampling};
use crate::surrogate::gp::{
    Ard, FitBudget, GpHyper, HyperBounds, HyperModel, HyperPrior, Kernel, MeanFn,
};
use crate::surrogate::own::{OwnSampler, OwnSettings};
use schedule::{Form, Schedule};
use serde::Deserialize;
use std::path::{Path, PathBuf};

// ---------------------------------------------------------------------------------------
// Checked parameters

#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    pub name: String,
    pub path: PathBuf,
    /// The TOML as read, copied next to the results.
    pub source: String,
    pub seed: u64,
    pub runs: usize,
    pub iterations: usize,
    pub initial_points: usize,
    pub algorithms: Vec<AlgorithmSpec>,
    pub objective: ObjectiveSpec,
    pub surrogate: SurrogateSpec,
    pub federation: FederationSpec,
    pub privacy: PrivacySpec,
    pub output: OutputSpec,
    /// How a continuous box is searched ([acquisition]); unused on grids.
    pub acquisition: BoxSearch,
    /// The file has a [sweep] table (only `fbo sweep` runs it).
    pub has_sweep: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AlgorithmKind {
    Ts,
    /// Single-agent baselines (issue 27): uniform random search, GP-EI and GP-UCB.
    Random,
    Ei,
    Ucb,
    Fts,
    /// DP-FTS-DE and its special cases (FTS with a server, FTS-DE, DP-FTS) as parameters.
    DpFtsDe,
    /// Meta-learning baselines adapted to FBO (FTS paper Sec. 3.2): ranking-weighted GP
    /// ensemble and transfer acquisition function.
    Rgpe,
    Taf,
    /// The survey's frameworks (issue 27; spec/frameworks.rs has their settings).
    Consensus,
    Cgp,
    DesignDensity,
    FedGp,
    Fmtbo,
}

impl AlgorithmKind {
    pub const NAMES: &'static [&'static str] = &[
        "ts",
        "random",
        "ei",
        "ucb",
        "fts",
        "dp-fts-de",
        "rgpe",
        "taf",
        "consensus",
        "cgp",
        "design-density",
        "fedgp",
        "fmtbo",
    ];

    /// Every agent of the objective acts in every round and is traced (DP-FTS-DE and the
    /// survey's frameworks); the others act for the objective's targets only.
    pub fn every_agent_acts(self) -> bool {
        matches!(
            self,
            AlgorithmKind::DpFtsDe
                | AlgorithmKind::Consensus
                | AlgorithmKind::Cgp
                | AlgorithmKind::DesignDensity
                | AlgorithmKind::FedGp
                | AlgorithmKind::Fmtbo
        )
    }

    /// One of the survey's frameworks (spec/frameworks.rs).
    pub fn is_framework(self) -> bool {
        self.every_agent_acts() && self != AlgorithmKind::DpFtsDe
    }

    /// Each agent alone on its own data (no messages, no server).
    pub fn is_single_agent(self) -> bool {
        matches!(
            self,
            AlgorithmKind::Ts | AlgorithmKind::Random | AlgorithmKind::Ei | AlgorithmKind::Ucb
        )
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "ts" => Some(AlgorithmKind::Ts),
            "random" => Some(AlgorithmKind::Random),
            "ei" => Some(AlgorithmKind::Ei),
            "ucb" => Some(AlgorithmKind::Ucb),
            "fts" => Some(AlgorithmKind::Fts),
            "dp-fts-de" => Some(AlgorithmKind::DpFtsDe),
            "rgpe" => Some(AlgorithmKind::Rgpe),
            "taf" => Some(AlgorithmKind::Taf),
            "consensus" => Some(AlgorithmKind::Consensus),
            "cgp" => Some(AlgorithmKind::Cgp),
            "design-density" => Some(AlgorithmKind::DesignDensity),
            "fedgp" => Some(AlgorithmKind::FedGp),
            "fmtbo" => Some(AlgorithmKind::Fmtbo),
            _ => None,
        }
    }
}

/// How the server weights agents for each sub-region (DP paper App. B).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeightMode {
    /// a_t = a + 1 for t <= t_const, linear decay to 1 over t_decay rounds, then 1 (uniform).
    Adaptive,
    /// a_t = a + 1 throughout (App. B.2.5's non-adaptive ablation).
    Fixed,
    /// Equal weights 1/N for every sub-region (App. B.1.2 Fig. 5 ablation).
    Equal,
}

/// Where round 0's initial points come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InitRegion {
    /// Each agent's own sub-region (distributed exploration).
    Subregion,
    /// The whole domain (App. B.1.2 Fig. 5 ablation).
    Domain,
}

/// Differential privacy at the server: subsampling, clipping, noise.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DpSpec {
    pub q: f64,
    pub z: f64,
    /// S: vectors are clipped to norm S / sqrt(P).
    pub clip: f64,
    pub sampling: Sampling,
    /// The neighbouring relation every epsilon of this algorithm is stated for.
    pub adjacency: crate::privacy::Adjacency,
    /// `server.max_epsilon`: the server releases no round that would take epsilon past it.
    pub budget: Option<Budget>,
}

/// A privacy budget and what it allows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Budget {
    pub max_epsilon: f64,
    /// The accountant the budget is kept with (at `privacy.delta`).
    pub accountant: Accountant,
    /// How many rounds fit in it, found when the spec is checked (epsilon depends on q, z, N
    /// and the round count only, so this is known before anything runs).
    pub rounds: u64,
}

impl DpSpec {
    /// Rounds the server releases by iteration t: t, or fewer once a budget is spent.
    pub fn released(&self, t: u64) -> u64 {
        self.budget.map_or(t, |b| t.min(b.rounds))
    }

    /// The mechanism released after `steps` iterations by a server of `agents` agents, at the
    /// rate it realises (the one every epsilon fbo writes is computed for); a spent budget
    /// stops the rounds, and with them epsilon.
    pub fn mechanism(&self, steps: u64, agents: usize) -> crate::privacy::Mechanism {
        let steps = self.released(steps);
        crate::privacy::Mechanism::server(
            self.q,
            self.z,
            steps,
            self.sampling,
            self.adjacency,
            agents,
        )
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ServerSpec {
    /// P, the number of sub-regions.
    pub subregions: usize,
    /// None: the non-private variants (all agents, no clipping, no noise).
    pub dp: Option<DpSpec>,
    pub weights: WeightMode,
    pub a: f64,
    pub t_const: usize,
    pub t_decay: usize,
    pub init: InitRegion,
    /// Which agents' messages reach the server in a round.
    pub participation: Participation,
}

/// Messages that do not arrive (issue 25): each round, agent n's message reaches the server
/// only if it is not dropped (probability `drop[n]`), its latency (exponential, mean
/// `latency`) is within `deadline`, and it is not in an outage (with probability `outage` a
/// round loses a block of `outage_agents` consecutive agents at a random start, wrapping).
/// The server aggregates what arrived with unchanged weights and noise. Every draw is
/// independent of the data, which is what keeps the accountant's epsilon at the nominal rate an
/// upper bound (docs/algorithms.md).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Participation {
    /// One probability per agent, or empty: nobody drops.
    pub drop: Vec<f64>,
    /// (mean latency, deadline), in the same arbitrary unit.
    pub latency: Option<(f64, f64)>,
    /// (probability per round, agents lost).
    pub outage: Option<(f64, usize)>,
}

impl Participation {
    pub fn is_full(&self) -> bool {
        self.drop.iter().all(|&d| d == 0.0) && self.latency.is_none() && self.outage.is_none()
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct PrivacySpec {
    pub delta: f64,
    pub accountants: Vec<Accountant>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageMode {
    /// Each agent sends one omega before the target starts; a used message is removed from P_N.
    OneShot,
    /// Every agent runs one more TS iteration and sends a fresh omega before each target
    /// iteration (FTS paper App. D.2.1), so t_n grows.
    EveryIteration,
}

/// One algorithm to run, with the federation and surrogate settings it overrides resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct AlgorithmSpec {
    pub kind: AlgorithmKind,
    pub label: String,
    /// M, the shared random features (message length).
    pub features: usize,
    pub p_t: Schedule,
    pub messages: MessageMode,
    /// Set for `dp-fts-de`.
    pub server: Option<ServerSpec>,
    /// RGPE: posterior samples for the ranking-loss weights (Feurer et al.: 100).
    pub samples: usize,
    /// TAF: bandwidth rho of the Epanechnikov kernel on the discordant-pair fraction.
    pub bandwidth: f64,
    /// TAF: what an agent's predicted improvement is measured against.
    pub incumbent: TafIncumbent,
    /// How this algorithm's own agents draw their own Thompson samples (TS, FTS, DP-FTS-DE;
    /// senders keep `surrogate.own.sample`, so the algorithms of a spec hear the same
    /// agents).
    pub own_sample: OwnSampler,
    /// UCB: a fixed beta; None: Srinivas et al.'s schedule.
    pub beta: Option<f64>,
    /// The survey's frameworks' settings (`Framework::None` for the other kinds).
    pub framework: frameworks::Framework,
}

impl AlgorithmSpec {
    /// The differentially private mechanism this algorithm has released after `steps`
    /// iterations in a federation of `agents` agents (the rate is the one a server realises),
    /// or None if it releases nothing noisy: every epsilon fbo writes is computed from this.
    pub fn mechanism(&self, steps: u64, agents: usize) -> Option<crate::privacy::Mechanism> {
        match self.server.as_ref().and_then(|s| s.dp) {
            Some(dp) => Some(dp.mechanism(steps, agents)),
            None => self.framework.mechanism(steps),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TafIncumbent {
    /// The agent's best observation, sent with its message (FTS paper Sec. 3.2: M + M^2 + 1
    /// parameters).
    Agent,
    /// The agent's surrogate's best prediction over the target's observed inputs (Wistuba et
    /// al. 2018; nothing extra is sent).
    Target,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ObjectiveKind {
    /// FTS paper App. D.1: target f, N other agents g_n = f +/- d per point.
    SyntheticFts,
    /// DP paper App. B.1.1: N agents f +/- d, or alpha-mixtures of independent draws.
    SyntheticDp { heterogeneous: Option<f64> },
    /// A hyperparameter-response table; `agents` are the table's agent ids taking part, in
    /// the order fbo numbers them 0, 1, ...
    Table { meta: TableMeta, agents: Vec<usize> },
    /// A closed-form test function; with heterogeneity > 0 each agent sees its own shifted
    /// and rotated version (`objective::function::Transform`).
    Function {
        function: Function,
        heterogeneity: f64,
    },
    /// A dataset's model trained at every query; `agents` are the data's agents taking part.
    Model {
        settings: ModelSettings,
        agents: Vec<usize>,
    },
    /// The user's command run at every query (`kind = "command"`), or results reported by
    /// hand with `fbo tell` (`kind = "external"`, no argv).
    Command(CommandSettings),
}

/// Where FTS's other agents get their t_n observations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObservationSource {
    /// t_n distinct random points (FTS paper App. D.1).
    Random,
    /// initial_points random points, then t_n iterations of their own TS (App. D.2).
    Ts,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ObjectiveSpec {
    pub kind: ObjectiveKind,
    /// Agents (fbo's numbering) whose optimisation TS and FTS trace.
    pub targets: Vec<usize>,
    pub grid: usize,
    pub length_scale: f64,
    pub noise_var: f64,
    pub functions: usize,
    pub d: f64,
    /// Named hyperparameters of function and model objectives (empty otherwise).
    pub params: Vec<Param>,
    /// Function and model objectives: points per hyperparameter of a grid; None: the box.
    pub per_dim: Option<usize>,
}

impl ObjectiveSpec {
    /// The space of a function or model objective: the tensor grid of `per_dim` points per
    /// hyperparameter, or the continuous box.
    pub fn space(&self) -> Space {
        match self.per_dim {
            Some(n) => Space::Grid(Domain::tensor(&self.params, n)),
            None => Space::Box(self.params.clone()),
        }
    }

    /// What the trace's `metric` column measures, for axis labels: its name and whether
    /// higher is better.
    pub fn metric_label(&self) -> (String, bool) {
        match &self.kind {
            ObjectiveKind::SyntheticFts
            | ObjectiveKind::SyntheticDp { .. }
            | ObjectiveKind::Function { .. } => ("f(x)".into(), true),
            ObjectiveKind::Table { meta, .. } => {
                let name = match meta.metric.as_str() {
                    "auc" | "platt-auc" => "AUC".to_string(),
                    "error" => "validation error".to_string(),
                    // fbo tabulate writes validation_error: a label reads it with a space.
                    other => other.replace('_', " "),
                };
                (name, meta.sign > 0.0)
            }
            ObjectiveKind::Model { settings, .. } => {
                let (name, higher) = settings.dataset.metric_label();
                (name.into(), higher)
            }
            ObjectiveKind::Command(c) => (c.metric_name.clone(), c.sign > 0.0),
        }
    }

    /// Points of the search space; None for a box.
    pub fn domain_size(&self) -> Option<usize> {
        match &self.kind {
            ObjectiveKind::SyntheticFts | ObjectiveKind::SyntheticDp { .. } => Some(self.grid),
            ObjectiveKind::Table { meta, .. } => Some(meta.points),
            ObjectiveKind::Function { .. }
            | ObjectiveKind::Model { .. }
            | ObjectiveKind::Command(_) => self
                .per_dim
                .map(|n| n.saturating_pow(self.params.len() as u32)),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct SurrogateSpec {
    /// The kernel of the shared random features and of every agent's own GP.
    pub kernel: Kernel,
    pub length_scale: f64,
    pub lambda: f64,
    pub kernel_variance: f64,
    pub normalize_features: bool,
    pub own: OwnSettings,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FederationSpec {
    /// N: agents other than the target (FTS family) or all agents (DP family).
    pub agents: usize,
    /// t_n: observations each other agent holds when it sends its first message.
    pub observations: usize,
    pub observations_from: ObservationSource,
    /// P_N, normalised; one weight per agent other than the target (agent 0).
    pub weights: Vec<f64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct OutputSpec {
    /// Record measured seconds in `elapsed_s`; off gives byte-identical traces across reruns.
    pub timing: bool,
}

// ---------------------------------------------------------------------------------------
// Raw TOML

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    name: Option<String>,
    seed: Option<i64>,
    runs: Option<i64>,
    iterations: Option<i64>,
    initial_points: Option<i64>,
    #[serde(default)]
    algorithm: Vec<RawAlgorithm>,
    objective: Option<RawObjective>,
    surrogate: Option<RawSurrogate>,
    federation: Option<RawFederation>,
    server: Option<RawServer>,
    privacy: Option<RawPrivacy>,
    output: Option<RawOutput>,
    acquisition: Option<RawAcquisition>,
    /// Read by `fbo sweep` (src/sweep.rs); here only noted.
    sweep: Option<toml::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAlgorithm {
    kind: String,
    label: Option<String>,
    features: Option<i64>,
    p_t: Option<toml::Value>,
    p1_equals_p2: Option<bool>,
    messages: Option<String>,
    server: Option<RawServer>,
    samples: Option<i64>,
    bandwidth: Option<f64>,
    incumbent: Option<String>,
    own_sample: Option<String>,
    beta: Option<f64>,
    // The survey's frameworks' keys (spec/frameworks.rs).
    acquisition: Option<String>,
    schedule: Option<String>,
    noise: Option<f64>,
    eta: Option<f64>,
    density: Option<String>,
    width: Option<f64>,
    rounds: Option<i64>,
    local_steps: Option<i64>,
    step_size: Option<f64>,
    gamma: Option<f64>,
    fraction: Option<f64>,
    shared_points: Option<i64>,
}

/// Server settings: the top-level [server] table, overridden key by key by an algorithm's
/// inline `server = { ... }`.
#[derive(Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
struct RawServer {
    subregions: Option<i64>,
    dp: Option<bool>,
    q: Option<f64>,
    z: Option<f64>,
    clip: Option<f64>,
    sampling: Option<String>,
    adjacency: Option<String>,
    weights: Option<String>,
    a: Option<f64>,
    t_const: Option<i64>,
    t_decay: Option<i64>,
    init: Option<String>,
    drop: Option<RawDrop>,
    latency: Option<f64>,
    deadline: Option<f64>,
    outage: Option<f64>,
    outage_agents: Option<i64>,
    max_epsilon: Option<f64>,
    budget_accountant: Option<String>,
}

/// `drop = 0.1` (every agent) or `drop = [0.1, 0.0, ...]` (one per agent).
#[derive(Deserialize, Clone)]
#[serde(untagged)]
enum RawDrop {
    All(f64),
    PerAgent(Vec<f64>),
}

impl RawServer {
    fn or(self, base: &RawServer) -> RawServer {
        let b = base.clone();
        RawServer {
            subregions: self.subregions.or(b.subregions),
            dp: self.dp.or(b.dp),
            q: self.q.or(b.q),
            z: self.z.or(b.z),
            clip: self.clip.or(b.clip),
            sampling: self.sampling.or(b.sampling),
            adjacency: self.adjacency.or(b.adjacency),
            weights: self.weights.or(b.weights),
            a: self.a.or(b.a),
            t_const: self.t_const.or(b.t_const),
            t_decay: self.t_decay.or(b.t_decay),
            init: self.init.or(b.init),
            drop: self.drop.or(b.drop),
            latency: self.latency.or(b.latency),
            deadline: self.deadline.or(b.deadline),
            outage: self.outage.or(b.outage),
            outage_agents: self.outage_agents.or(b.outage_agents),
            max_epsilon: self.max_epsilon.or(b.max_epsilon),
            budget_accountant: self.budget_accountant.or(b.budget_accountant),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawPrivacy {
    delta: Option<f64>,
    accountants: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawObjective {
    kind: String,
    grid: Option<i64>,
    length_scale: Option<f64>,
    noise_var: Option<f64>,
    functions: Option<i64>,
    d: Option<f64>,
    heterogeneous: Option<bool>,
    alpha: Option<f64>,
    table: Option<String>,
    agents: Option<Vec<i64>>,
    targets: Option<Vec<i64>>,
    function: Option<String>,
    dimension: Option<i64>,
    heterogeneity: Option<f64>,
    dataset: Option<String>,
    data: Option<String>,
    split: Option<String>,
    split_seed: Option<i64>,
    svm_stopping: Option<String>,
    epochs: Option<i64>,
    batch_size: Option<i64>,
    metric: Option<String>,
    hyperparameters: Option<Vec<RawParam>>,
    command: Option<Vec<String>>,
    workdir: Option<String>,
    direction: Option<String>,
    metric_name: Option<String>,
    timeout_s: Option<f64>,
    retries: Option<i64>,
    concurrency: Option<i64>,
    on_failure: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawParam {
    name: String,
    low: f64,
    high: f64,
    scale: Option<String>,
    integer: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawAcquisition {
    candidates: Option<i64>,
    starts: Option<i64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawSurrogate {
    kernel: Option<String>,
    features: Option<i64>,
    length_scale: Option<f64>,
    lambda: Option<f64>,
    kernel_variance: Option<f64>,
    normalize_features: Option<bool>,
    own: Option<RawOwn>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawOwn {
    features: Option<i64>,
    ard: Option<toml::Value>,
    prior: Option<String>,
    mean: Option<String>,
    fit: Option<bool>,
    refit_every: Option<i64>,
    fit_starts: Option<i64>,
    fit_restarts: Option<i64>,
    normalize_y: Option<bool>,
    sample: Option<String>,
    length_scale: Option<f64>,
    signal_variance: Option<f64>,
    noise_variance: Option<f64>,
    length_scale_bounds: Option<Vec<f64>>,
    signal_variance_bounds: Option<Vec<f64>>,
    noise_variance_bounds: Option<Vec<f64>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawFederation {
    agents: Option<i64>,
    observations: Option<i64>,
    observations_from: Option<String>,
    p_t: Option<toml::Value>,
    p1_equals_p2: Option<bool>,
    agent_weights: Option<toml::Value>,
    messages: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawOutput {
    timing: Option<bool>,
}

// ---------------------------------------------------------------------------------------
// Checking

/// Builds errors that name the spec file.
struct Check<'a> {
    file: &'a Path,
}

impl Check<'_> {
    fn err(&self, key: &str, msg: impl Into<String>) -> FboError {
        FboError::spec(self.file, key, msg)
    }

    fn int(&self, key: &str, v: Option<i64>, default: i64, min: i64, max: i64) -> Result<usize> {
        let v = v.unwrap_or(default);
        if v < min || v > max {
            return Err(self.err(
                key,
                format!("must be an integer in [{min}, {max}], got {v}"),
            ));
        }
        Ok(v as usize)
    }

    fn positive(&self, key: &str, v: Option<f64>, default: f64) -> Result<f64> {
        let v = v.unwrap_or(default);
        if !(v.is_finite() && v > 0.0) {
            return Err(self.err(key, format!("must be a finite number > 0, got {v}")));
        }
        Ok(v)
    }

    fn non_negative(&self, key: &str, v: Option<f64>, default: f64) -> Result<f64> {
        let v = v.unwrap_or(default);
        if !(v.is_finite() && v >= 0.0) {
            return Err(self.err(key, format!("must be a finite number >= 0, got {v}")));
        }
        Ok(v)
    }

    fn bounds(&self, key: &str, v: Option<Vec<f64>>, default: (f64, f64)) -> Result<(f64, f64)> {
        let Some(v) = v else { return Ok(default) };
        match v.as_slice() {
            [lo, hi] if lo.is_finite() && hi.is_finite() && *lo > 0.0 && lo < hi => Ok((*lo, *hi)),
            _ => Err(self.err(
                key,
                format!("must be [low, high] with 0 < low < high, got {v:?}"),
            )),
        }
    }

    fn probability(&self, key: &str, p: f64) -> Result<f64> {
        if p.is_finite() && p > 0.0 && p <= 1.0 {
            Ok(p)
        } else {
            Err(self.err(key, format!("must be a probability in (0, 1], got {p}")))
        }
    }

    fn schedule(
        &self,
        key: &str,
        v: Option<&toml::Value>,
        p1_equals_p2: bool,
        iterations: usize,
    ) -> Result<Schedule> {
        let allowed = "a name (\"1-1/t^2\", \"1-1/sqrt(t)\", \"1-1/t\"), a constant in (0, 1], or a list of probabilities";
        let form = match v {
            None => Form::InvSqrt,
            Some(toml::Value::String(s)) => Schedule::parse_name(s).ok_or_else(|| {
                self.err(key, format!("unknown schedule \"{s}\"; allowed: {allowed}"))
            })?,
            Some(toml::Value::Float(p)) => Form::Constant(self.probability(key, *p)?),
            Some(toml::Value::Integer(p)) => Form::Constant(self.probability(key, *p as f64)?),
            Some(toml::Value::Array(items)) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, it) in items.iter().enumerate() {
                    let p = match it {
                        toml::Value::Float(p) => *p,
                        toml::Value::Integer(p) => *p as f64,
                        other => {
                            return Err(self.err(
                                &format!("{key}[{i}]"),
                                format!("must be a number, got {}", other.type_str()),
                            ));
                        }
                    };
                    out.push(self.probability(&format!("{key}[{i}]"), p)?);
                }
                // A longer list would be cut silently: most likely a different experiment.
                if out.len() != iterations {
                    return Err(self.err(
                        key,
                        format!(
                            "lists {} probabilities but the spec runs {iterations} iterations; give exactly one per iteration",
                            out.len()
                        ),
                    ));
                }
                Form::List(out)
            }
            Some(other) => {
                return Err(self.err(
                    key,
                    format!("must be {allowed}, got a {}", other.type_str()),
                ));
            }
        };
        Ok(Schedule { form, p1_equals_p2 })
    }

    fn messages(&self, key: &str, v: Option<&str>, default: MessageMode) -> Result<MessageMode> {
        match v {
            None => Ok(default),
            Some("one-shot") => Ok(MessageMode::OneShot),
            Some("every-iteration") => Ok(MessageMode::EveryIteration),
            Some(other) => Err(self.err(
                key,
                format!(
                    "unknown message mode \"{other}\"; allowed: \"one-shot\", \"every-iteration\""
                ),
            )),
        }
    }

    /// A name from a closed list, parsed by `parse`; unknown names are refused with the list.
    fn choice<T>(
        &self,
        key: &str,
        v: Option<&str>,
        default: T,
        what: &str,
        allowed: &str,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Result<T> {
        match v {
            None => Ok(default),
            Some(s) => parse(s).ok_or_else(|| {
                self.err(key, format!("unknown {what} \"{s}\"; allowed: {allowed}"))
            }),
        }
    }

    fn sampler(&self, key: &str, v: Option<&str>, default: OwnSampler) -> Result<OwnSampler> {
        self.choice(
            key,
            v,
            default,
            "own sample",
            "\"rff\", \"pathwise\"",
            OwnSampler::parse,
        )
    }
}

/// The largest count a spec (or `--runs`) may give for runs, iterations and the like.
pub const MAX_COUNT: i64 = 1_000_000;
/// Observations per agent (iterations, initial points, senders' t_n): each agent's exact GP
/// holds an n x n matrix, so n = 10^4 is already 0.8 GB per agent.
const MAX_OBS: i64 = 10_000;
/// Random features M: BLR posteriors hold M x M matrices (M = 10^4: 0.8 GB each).
const MAX_FEATURES: i64 = 10_000;

impl Spec {
    /// Reads and checks a spec file.
    pub fn load(path: &Path) -> Result<Spec> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| FboError::spec(path, "", format!("cannot read the spec: {e}")))?;
        Spec::parse(&text, path)
    }

    /// Checks spec text; `path` is used in messages and for the default name.
    pub fn parse(text: &str, path: &Path) -> Result<Spec> {
        let raw: RawSpec = toml::from_str(text).map_err(|e| {
            FboError::spec(
                path,
                "",
                format!("invalid spec: {}", e.to_string().trim_end()),
            )
        })?;
        let c = Check { file: path };

        let name = match raw.name {
            // The name is the default output folder results/<name>/: a plain folder name.
            Some(n)
                if n.is_empty()
                    || n.len() > 100
                    || n.starts_with('.')
                    || !n
                        .chars()
                        .all(|ch| ch.is_ascii_alphanumeric() || "._-+=,".contains(ch)) =>
            {
                return Err(c.err(
                    "name",
                    format!(
                        "must be 1-100 characters from A-Z a-z 0-9 . _ - + = , not starting with '.' (it names the folder results/<name>/), got \"{n}\""
                    ),
                ));
            }
            Some(n) => n,
            None => path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "experiment".into()),
        };
        let seed = raw.seed.unwrap_or(0);
        if seed < 0 {
            return Err(c.err("seed", format!("must be an integer >= 0, got {seed}")));
        }
        let runs = c.int("runs", raw.runs, 10, 1, MAX_COUNT)?;
        let iterations = c.int("iterations", raw.iterations, 50, 1, MAX_OBS)?;
        let initial_points = c.int("initial_points", raw.initial_points, 1, 0, MAX_OBS)?;

        let rf = raw.federation.unwrap_or_default();
        let mut objective = check_objective(&c, raw.objective)?;
        let agents = match &objective.kind {
            ObjectiveKind::Table { agents, .. } => {
                if rf.agents.is_some() {
                    return Err(c.err(
                        "federation.agents",
                        "is set by the table: choose participants with objective.agents",
                    ));
                }
                agents.len()
            }
            ObjectiveKind::Model { agents, .. } => {
                if rf.agents.is_some() {
                    return Err(c.err(
                        "federation.agents",
                        "is set by the data: choose participants with objective.agents",
                    ));
                }
                agents.len()
            }
            ObjectiveKind::Command(_) => {
                if rf.agents.is_none() {
                    return Err(c.err(
                        "federation.agents",
                        "missing: how many agents evaluate the command (each gets its FBO_AGENT, 0..N-1)",
                    ));
                }
                c.int("federation.agents", rf.agents, 1, 1, 10_000)?
            }
            _ => c.int("federation.agents", rf.agents, 50, 1, 100_000)?,
        };
        let total_agents = match objective.kind {
            ObjectiveKind::SyntheticFts => agents + 1,
            _ => agents,
        };
        objective.targets = match objective.targets.is_empty() {
            false => {
                if let Some(&t) = objective.targets.iter().find(|&&t| t >= total_agents) {
                    return Err(c.err(
                        "objective.targets",
                        format!(
                            "target {t} is not one of the {total_agents} agents (0..{})",
                            total_agents - 1
                        ),
                    ));
                }
                objective.targets.clone()
            }
            true => match objective.kind {
                ObjectiveKind::SyntheticFts => vec![0],
                _ => (0..total_agents).collect(),
            },
        };
        // Initial points are drawn without replacement.
        if let Some(size) = objective.domain_size()
            && initial_points > size
        {
            return Err(c.err(
                "initial_points",
                format!("must be at most the domain size {size}, got {initial_points}"),
            ));
        }
        let racq = raw.acquisition.unwrap_or_default();
        let acquisition = BoxSearch {
            candidates: c.int(
                "acquisition.candidates",
                racq.candidates,
                1000,
                1,
                1_000_000,
            )?,
            starts: c.int("acquisition.starts", racq.starts, 20, 0, 10_000)?,
        };

        let rs = raw.surrogate.unwrap_or_default();
        let kernel = c.choice(
            "surrogate.kernel",
            rs.kernel.as_deref(),
            Kernel::Se,
            "kernel",
            Kernel::NAMES,
            Kernel::parse,
        )?;
        let synthetic_ls = objective.length_scale;
        let features = c.int("surrogate.features", rs.features, 100, 1, MAX_FEATURES)?;
        let length_scale = c.positive("surrogate.length_scale", rs.length_scale, synthetic_ls)?;
        let lambda = c.positive("surrogate.lambda", rs.lambda, objective.noise_var.max(1e-6))?;
        let kernel_variance = c.positive("surrogate.kernel_variance", rs.kernel_variance, 1.0)?;
        let normalize_features = rs.normalize_features.unwrap_or(true);
        let ro = rs.own.unwrap_or_default();
        let bounds = HyperBounds {
            length_scale: c.bounds(
                "surrogate.own.length_scale_bounds",
                ro.length_scale_bounds,
                (0.005, 2.0),
            )?,
            signal_var: c.bounds(
                "surrogate.own.signal_variance_bounds",
                ro.signal_variance_bounds,
                (0.05, 20.0),
            )?,
            noise_var: c.bounds(
                "surrogate.own.noise_variance_bounds",
                ro.noise_variance_bounds,
                (1e-6, 1.0),
            )?,
        };
        let fit = ro.fit.unwrap_or(true);
        let mean = c.choice(
            "surrogate.own.mean",
            ro.mean.as_deref(),
            MeanFn::Constant,
            "mean",
            MeanFn::NAMES,
            MeanFn::parse,
        )?;
        let initial = GpHyper::isotropic(
            kernel,
            c.positive("surrogate.own.length_scale", ro.length_scale, length_scale)?,
            c.positive("surrogate.own.signal_variance", ro.signal_variance, 1.0)?,
            c.positive("surrogate.own.noise_variance", ro.noise_variance, 0.01)?,
        )
        .with_mean(mean);
        let model = HyperModel {
            kernel,
            ard: match &ro.ard {
                None => Ard::AUTO,
                Some(toml::Value::Boolean(false)) => Ard::Off,
                Some(toml::Value::Boolean(true)) => Ard::On,
                Some(toml::Value::String(s)) if s == "auto" => Ard::AUTO,
                Some(toml::Value::Integer(k)) if (1..=1000).contains(k) => {
                    Ard::PerAxisFrom(*k as usize)
                }
                Some(other) => {
                    return Err(c.err(
                        "surrogate.own.ard",
                        format!(
                            "must be true, false, \"auto\" or a number of observations per axis in [1, 1000], got {other}"
                        ),
                    ));
                }
            },
            bounds,
            prior: c.choice(
                "surrogate.own.prior",
                ro.prior.as_deref(),
                HyperPrior::DimensionScaled,
                "prior",
                HyperPrior::NAMES,
                HyperPrior::parse,
            )?,
            mean,
        };
        let own = OwnSettings {
            features: c.int("surrogate.own.features", ro.features, 100, 1, MAX_FEATURES)?,
            normalize_features,
            refit_every: if fit {
                Some(c.int("surrogate.own.refit_every", ro.refit_every, 5, 1, MAX_COUNT)?)
            } else {
                None
            },
            fit: {
                let starts = c.int("surrogate.own.fit_starts", ro.fit_starts, 10, 1, 1000)?;
                let restarts = c.int(
                    "surrogate.own.fit_restarts",
                    ro.fit_restarts,
                    3.min(starts as i64),
                    1,
                    starts as i64,
                )?;
                FitBudget { starts, restarts }
            },
            model,
            initial,
            normalize_y: ro.normalize_y.unwrap_or(true),
            sampler: c.sampler(
                "surrogate.own.sample",
                ro.sample.as_deref(),
                OwnSampler::Pathwise,
            )?,
        };
        let surrogate = SurrogateSpec {
            kernel,
            length_scale,
            lambda,
            kernel_variance,
            normalize_features,
            own,
        };

        let observations = c.int("federation.observations", rf.observations, 40, 0, MAX_OBS)?;
        let p1 = rf.p1_equals_p2.unwrap_or(true);
        let fed_pt = c.schedule("federation.p_t", rf.p_t.as_ref(), p1, iterations)?;
        let fed_messages = c.messages(
            "federation.messages",
            rf.messages.as_deref(),
            MessageMode::OneShot,
        )?;
        // P_N ranges over the agents other than the target.
        let others = total_agents - 1;
        if rf.agent_weights.as_ref().is_some_and(|w| w.is_array()) && objective.targets.len() > 1 {
            return Err(c.err(
                "federation.agent_weights",
                "a list of weights needs a single target (objective.targets); with several use \"uniform\"",
            ));
        }
        let uniform = vec![1.0 / others.max(1) as f64; others];
        let weights = match rf.agent_weights {
            None => uniform,
            Some(toml::Value::String(s)) if s == "uniform" => uniform,
            Some(toml::Value::Array(items)) => {
                if items.len() != others {
                    return Err(c.err(
                        "federation.agent_weights",
                        format!(
                            "must list one weight per agent other than the target ({others}), got {}",
                            items.len()
                        ),
                    ));
                }
                let mut w = Vec::with_capacity(others);
                for (i, it) in items.iter().enumerate() {
                    let v = it.as_float().or_else(|| it.as_integer().map(|x| x as f64));
                    match v {
                        Some(v) if v.is_finite() && v >= 0.0 => w.push(v),
                        _ => {
                            return Err(c.err(
                                &format!("federation.agent_weights[{i}]"),
                                "must be a finite number >= 0",
                            ));
                        }
                    }
                }
                let total: f64 = w.iter().sum();
                if total <= 0.0 {
                    return Err(c.err("federation.agent_weights", "must not all be zero"));
                }
                w.iter().map(|v| v / total).collect()
            }
            Some(other) => {
                return Err(c.err(
                    "federation.agent_weights",
                    format!(
                        "must be \"uniform\" or a list of weights, got {}",
                        other.type_str()
                    ),
                ));
            }
        };
        let observations_from = match rf.observations_from.as_deref() {
            None | Some("random") => ObservationSource::Random,
            Some("ts") => ObservationSource::Ts,
            Some(o) => {
                return Err(c.err(
                    "federation.observations_from",
                    format!("unknown source \"{o}\"; allowed: \"random\", \"ts\""),
                ));
            }
        };
        let federation = FederationSpec {
            agents,
            observations,
            observations_from,
            weights,
        };

        if raw.algorithm.is_empty() {
            return Err(c.err(
                "algorithm",
                format!(
                    "the spec lists no algorithm; add at least one [[algorithm]] table with kind = one of {:?}",
                    AlgorithmKind::NAMES
                ),
            ));
        }
        let raw_server = raw.server.unwrap_or_default();
        let mut algorithms: Vec<AlgorithmSpec> = Vec::new();
        for (i, ra) in raw.algorithm.into_iter().enumerate() {
            let key = |k: &str| format!("algorithm[{i}].{k}");
            let kind = AlgorithmKind::parse(&ra.kind).ok_or_else(|| {
                c.err(
                    &key("kind"),
                    format!(
                        "unknown algorithm \"{}\"; allowed: {:?}",
                        ra.kind,
                        AlgorithmKind::NAMES
                    ),
                )
            })?;
            if kind.is_framework()
                && (ra.features.is_some()
                    || ra.p_t.is_some()
                    || ra.messages.is_some()
                    || ra.p1_equals_p2.is_some()
                    || ra.server.is_some())
            {
                return Err(c.err(
                    &key("kind"),
                    format!(
                        "{} shares no random-feature messages: features, p_t, p1_equals_p2, messages and server do not apply to it",
                        ra.kind
                    ),
                ));
            }
            if kind.is_single_agent()
                && (ra.features.is_some()
                    || ra.p_t.is_some()
                    || ra.messages.is_some()
                    || ra.p1_equals_p2.is_some()
                    || ra.server.is_some())
            {
                return Err(c.err(
                    &key("kind"),
                    format!(
                        "{} uses no federation: features, p_t, p1_equals_p2, messages and server do not apply to it",
                        match kind {
                            AlgorithmKind::Random => "Random search",
                            AlgorithmKind::Ei => "EI",
                            AlgorithmKind::Ucb => "UCB",
                            _ => "TS",
                        }
                    ),
                ));
            }
            let framework = frameworks::parse(
                &c,
                &ra.kind,
                &frameworks::RawFramework {
                    acquisition: ra.acquisition.clone(),
                    schedule: ra.schedule.clone(),
                    noise: ra.noise,
                    eta: ra.eta,
                    samples: ra.samples.filter(|_| kind.is_framework()),
                    beta: ra.beta.filter(|_| kind.is_framework()),
                    density: ra.density.clone(),
                    width: ra.width,
                    rounds: ra.rounds,
                    local_steps: ra.local_steps,
                    step_size: ra.step_size,
                    gamma: ra.gamma,
                    fraction: ra.fraction,
                    shared_points: ra.shared_points,
                },
                &key,
            )?;
            if ra.beta.is_some()
                && !matches!(kind, AlgorithmKind::Ucb)
                && !frameworks::keys_of(&ra.kind).contains(&"beta")
            {
                return Err(c.err(
                    &key("beta"),
                    "applies only to kind = ucb, consensus, cgp, design-density or fedgp",
                ));
            }
            let beta = match ra.beta {
                Some(b) if !(b.is_finite() && b > 0.0 && b <= 1e6) => {
                    return Err(c.err(&key("beta"), format!("must be in (0, 1e6], got {b}")));
                }
                b => b,
            };
            if matches!(
                kind,
                AlgorithmKind::Random | AlgorithmKind::Ei | AlgorithmKind::Ucb
            ) && ra.own_sample.is_some()
            {
                return Err(c.err(
                    &key("own_sample"),
                    "random, ei and ucb draw no Thompson sample; own_sample applies to ts, fts and dp-fts-de",
                ));
            }
            if kind != AlgorithmKind::Fts && ra.messages.is_some() {
                return Err(c.err(&key("messages"), "applies only to kind = \"fts\""));
            }
            let meta = matches!(kind, AlgorithmKind::Rgpe | AlgorithmKind::Taf);
            if meta && (ra.p_t.is_some() || ra.p1_equals_p2.is_some()) {
                return Err(c.err(
                    &key("p_t"),
                    "RGPE and TAF choose every query by their acquisition function; p_t and p1_equals_p2 do not apply",
                ));
            }
            if meta && fed_messages != MessageMode::OneShot {
                return Err(c.err(
                    "federation.messages",
                    "RGPE and TAF receive one message per agent before the target starts; every-iteration messages are an FTS option (set messages on the fts algorithm instead)",
                ));
            }
            if !matches!(
                kind,
                AlgorithmKind::Rgpe | AlgorithmKind::Cgp | AlgorithmKind::DesignDensity
            ) && ra.samples.is_some()
            {
                return Err(c.err(
                    &key("samples"),
                    "applies only to kind = rgpe, cgp or design-density",
                ));
            }
            if kind != AlgorithmKind::Taf && ra.bandwidth.is_some() {
                return Err(c.err(&key("bandwidth"), "applies only to kind = \"taf\""));
            }
            if meta && ra.own_sample.is_some() {
                return Err(c.err(
                    &key("own_sample"),
                    "RGPE and TAF use the exact GP posterior, not a sample; own_sample applies to ts, fts and dp-fts-de",
                ));
            }
            let own_sample = c.sampler(
                &key("own_sample"),
                ra.own_sample.as_deref(),
                surrogate.own.sampler,
            )?;
            if kind != AlgorithmKind::Taf && ra.incumbent.is_some() {
                return Err(c.err(&key("incumbent"), "applies only to kind = \"taf\""));
            }
            let incumbent = match ra.incumbent.as_deref() {
                None | Some("agent") => TafIncumbent::Agent,
                Some("target") => TafIncumbent::Target,
                Some(o) => {
                    return Err(c.err(
                        &key("incumbent"),
                        format!("unknown incumbent \"{o}\"; allowed: \"agent\", \"target\""),
                    ));
                }
            };
            let samples = c.int(&key("samples"), ra.samples, 100, 1, 100_000)?;
            let bandwidth = ra.bandwidth.unwrap_or(0.1);
            if !(bandwidth > 0.0 && bandwidth <= 10.0) {
                return Err(c.err(
                    &key("bandwidth"),
                    format!("must be in (0, 10], got {bandwidth}"),
                ));
            }
            if kind != AlgorithmKind::DpFtsDe && ra.server.is_some() {
                return Err(c.err(&key("server"), "applies only to kind = \"dp-fts-de\""));
            }
            let server = match kind {
                AlgorithmKind::DpFtsDe => Some(check_server(
                    &c,
                    &key("server"),
                    ra.server.clone().unwrap_or_default().or(&raw_server),
                    ra.server.as_ref(),
                    objective.domain_size(),
                    total_agents,
                )?),
                _ => None,
            };
            let m = c.int(
                &key("features"),
                ra.features,
                features as i64,
                1,
                MAX_FEATURES,
            )?;
            let p_t = match ra.p_t {
                Some(ref v) => c.schedule(
                    &key("p_t"),
                    Some(v),
                    ra.p1_equals_p2.unwrap_or(p1),
                    iterations,
                )?,
                None => Schedule {
                    p1_equals_p2: ra.p1_equals_p2.unwrap_or(p1),
                    ..fed_pt.clone()
                },
            };
            let messages = c.messages(&key("messages"), ra.messages.as_deref(), fed_messages)?;
            let label = match ra.label {
                // A label names CSV rows and a command's FBO_SCOPE: control characters (a
                // NUL cannot be passed in the environment) are refused with the others.
                Some(l)
                    if l.is_empty()
                        || l.contains([',', '"'])
                        || l.chars().any(|ch| ch.is_control()) =>
                {
                    return Err(c.err(
                        &key("label"),
                        format!(
                            "must be non-empty without commas, quotes, newlines or other control characters, got {l:?}"
                        ),
                    ));
                }
                Some(l) => l,
                None => {
                    let base = match (kind, &server) {
                        (AlgorithmKind::DpFtsDe, Some(sv)) => server_label(sv),
                        (AlgorithmKind::Fts, _) => format!("FTS M={m}"),
                        (AlgorithmKind::Rgpe, _) => format!("RGPE M={m}"),
                        (AlgorithmKind::Taf, _) => format!("TAF M={m}"),
                        (AlgorithmKind::Random, _) => "Random".to_string(),
                        (kind, _) if kind.is_framework() => framework.label(),
                        (AlgorithmKind::Ei, _) => "EI".to_string(),
                        (AlgorithmKind::Ucb, _) => match beta {
                            Some(b) if b < 1e-3 => format!("UCB beta={b:e}"),
                            Some(b) => format!("UCB beta={b}"),
                            None => "UCB".to_string(),
                        },
                        _ => "TS".to_string(),
                    };
                    // Named only where it departs from the spec's, so that the algorithms of a
                    // spec that sets no own sample keep their plain names.
                    if own_sample == surrogate.own.sampler {
                        base
                    } else {
                        format!("{base} {}", own_sample.name())
                    }
                }
            };
            if algorithms.iter().any(|a| a.label == label) {
                return Err(c.err(
                    &key("label"),
                    format!(
                        "label \"{label}\" is used twice; give each algorithm a distinct label"
                    ),
                ));
            }
            algorithms.push(AlgorithmSpec {
                kind,
                label,
                features: m,
                p_t,
                messages,
                server,
                samples,
                bandwidth,
                incumbent,
                own_sample,
                beta,
                framework,
            });
        }

        let rp = raw.privacy.unwrap_or_default();
        let delta = rp.delta.unwrap_or((total_agents as f64).powf(-1.1));
        let private = algorithms
            .iter()
            .any(|a| a.server.as_ref().is_some_and(|s| s.dp.is_some()));
        if rp.delta.is_none() && private && !(delta > 0.0 && delta < 1.0) {
            return Err(c.err(
                "privacy.delta",
                format!(
                    "the default N^-1.1 is {delta} for N = {total_agents} agent(s), not a valid delta; set privacy.delta in (0, 1), e.g. 1e-5"
                ),
            ));
        }
        if rp.delta.is_some() && !(delta > 0.0 && delta < 1.0) {
            return Err(c.err("privacy.delta", format!("must be in (0, 1), got {delta}")));
        }
        let accountants = match rp.accountants {
            None => Accountant::ALL.to_vec(),
            Some(list) => {
                let mut out = Vec::new();
                for (i, a) in list.iter().enumerate() {
                    let acc: Accountant = a
                        .parse()
                        .map_err(|e: String| c.err(&format!("privacy.accountants[{i}]"), e))?;
                    if !out.contains(&acc) {
                        out.push(acc);
                    }
                }
                out
            }
        };
        for (i, a) in algorithms.iter().enumerate() {
            if let Some(dp) = a.server.as_ref().and_then(|s| s.dp) {
                for (j, &acc) in accountants.iter().enumerate() {
                    crate::privacy::supports(acc, dp.sampling, dp.adjacency).map_err(|e| {
                        c.err(
                            &format!("algorithm[{i}].server.adjacency"),
                            format!("{e} (privacy.accountants[{j}] = \"{acc}\")"),
                        )
                    })?;
                }
            }
            if let Some(dp) = a.server.as_ref().and_then(|s| s.dp)
                && dp.sampling == Sampling::Fixed
            {
                crate::privacy::checked_fixed_sample_size(dp.q, total_agents)
                    .map_err(|e| c.err(&format!("algorithm[{i}].server.q"), e))?;
            }
        }
        for (i, a) in algorithms.iter_mut().enumerate() {
            if let Some(dp) = a.server.as_mut().and_then(|s| s.dp.as_mut())
                && let Some(b) = dp.budget.as_mut()
            {
                let unlimited = DpSpec {
                    budget: None,
                    ..*dp
                };
                b.rounds = budget_rounds(&unlimited, b, iterations as u64, total_agents, delta)
                    .map_err(|e| c.err(&format!("algorithm[{i}].server.max_epsilon"), e))?;
            }
        }
        let privacy = PrivacySpec { delta, accountants };

        let output = OutputSpec {
            timing: raw.output.unwrap_or_default().timing.unwrap_or(true),
        };

        Ok(Spec {
            name,
            path: path.to_path_buf(),
            source: text.to_string(),
            seed: seed as u64,
            runs,
            iterations,
            initial_points,
            algorithms,
            objective,
            surrogate,
            federation,
            privacy,
            output,
            acquisition,
            has_sweep: raw.sweep.is_some(),
        })
    }

    /// Agents whose own optimisation TS and FTS trace.
    pub fn targets(&self) -> &[usize] {
        &self.objective.targets
    }

    /// Number of agents the objective defines (target included).
    /// One line per private algorithm whose privacy budget stops its server early.
    pub fn budget_notes(&self) -> Vec<String> {
        self.algorithms
            .iter()
            .filter_map(|a| {
                let b = a.server.as_ref()?.dp?.budget?;
                (b.rounds < self.iterations as u64).then(|| {
                    format!(
                        "note: {}: the privacy budget epsilon <= {} ({}, delta {}) allows {} of {} rounds; its server stops after round {} and its agents go on with their own samples",
                        a.label,
                        b.max_epsilon,
                        b.accountant,
                        self.privacy.delta,
                        b.rounds,
                        self.iterations,
                        b.rounds
                    )
                })
            })
            .collect()
    }

    pub fn total_agents(&self) -> usize {
        match self.objective.kind {
            ObjectiveKind::SyntheticFts => self.federation.agents + 1,
            _ => self.federation.agents,
        }
    }
}

/// Default label: FTS (server form, P = 1), FTS-DE, DP-FTS or DP-FTS-DE, with the parameters
/// that distinguish one curve of the paper's figures from another.
fn server_label(s: &ServerSpec) -> String {
    let mut l = match (s.subregions > 1, s.dp.is_some()) {
        (false, false) => "FTS-server".to_string(),
        (true, false) => "FTS-DE".to_string(),
        (false, true) => "DP-FTS".to_string(),
        (true, true) => "DP-FTS-DE".to_string(),
    };
    if s.subregions > 1 {
        l += &format!(" P={}", s.subregions);
    }
    if let Some(dp) = s.dp {
        l += &format!(
            " q={} z={} S={}",
            short_number(dp.q),
            short_number(dp.z),
            short_number(dp.clip)
        );
    }
    l
}

/// A number for a label: as written for ordinary values (0.35, 22), in scientific notation
/// when tiny or huge, so that z = 1e-200 does not become 200 digits.
fn short_number(v: f64) -> String {
    if v != 0.0 && !(1e-4..1e6).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// `r` is the algorithm's settings merged over the top-level [server] table; `own` the
/// algorithm's own overrides. Top-level DP values are defaults that non-private algorithms
/// leave unused; an algorithm that sets them itself without dp = true is a mistake.
fn check_server(
    c: &Check,
    key: &str,
    r: RawServer,
    own: Option<&RawServer>,
    grid: Option<usize>,
    agents: usize,
) -> Result<ServerSpec> {
    let k = |f: &str| format!("{key}.{f}");
    // A box can be cut into any number of sub-regions; a grid into at most its points.
    let most = grid.map_or(10_000, |g| g.min(10_000)) as i64;
    let subregions = c.int(&k("subregions"), r.subregions, 1, 1, most)?;
    let dp = if r.dp.unwrap_or(false) {
        let q = r.q.unwrap_or(0.25);
        if !(q.is_finite() && q > 0.0 && q <= 1.0) {
            return Err(c.err(
                &k("q"),
                format!("must be a sampling rate in (0, 1], got {q}"),
            ));
        }
        let sampling = match r.sampling.as_deref() {
            None => Sampling::Poisson,
            Some(s) => s.parse().map_err(|e: String| c.err(&k("sampling"), e))?,
        };
        let adjacency = match r.adjacency.as_deref() {
            None => crate::privacy::Adjacency::default_for(sampling),
            Some(s) => s.parse().map_err(|e: String| c.err(&k("adjacency"), e))?,
        };
        crate::privacy::check_relation(sampling, adjacency)
            .map_err(|e| c.err(&k("adjacency"), e))?;
        let budget = match r.max_epsilon {
            None => {
                if r.budget_accountant.is_some() {
                    return Err(c.err(&k("budget_accountant"), "applies only with max_epsilon"));
                }
                None
            }
            Some(e) => {
                let max_epsilon = c.positive(&k("max_epsilon"), Some(e), 1.0)?;
                let accountant = match r.budget_accountant.as_deref() {
                    Some(a) => a
                        .parse()
                        .map_err(|e: String| c.err(&k("budget_accountant"), e))?,
                    None => Accountant::Pld,
                };
                crate::privacy::supports(accountant, sampling, adjacency)
                    .map_err(|e| c.err(&k("budget_accountant"), e))?;
                // The rounds it allows need N, T and delta: `budget_rounds` fills them in.
                Some(Budget {
                    max_epsilon,
                    accountant,
                    rounds: u64::MAX,
                })
            }
        };
        Some(DpSpec {
            q,
            z: c.positive(&k("z"), r.z, 1.0)?,
            clip: c.positive(&k("clip"), r.clip, 11.0)?,
            sampling,
            adjacency,
            budget,
        })
    } else {
        let own = own.cloned().unwrap_or_default();
        for (name, set) in [
            ("q", own.q.is_some()),
            ("z", own.z.is_some()),
            ("clip", own.clip.is_some()),
            ("sampling", own.sampling.is_some()),
            ("adjacency", own.adjacency.is_some()),
            ("max_epsilon", own.max_epsilon.is_some()),
            ("budget_accountant", own.budget_accountant.is_some()),
        ] {
            if set {
                return Err(c.err(&k(name), "applies only with dp = true"));
            }
        }
        None
    };
    let weights = match r.weights.as_deref() {
        None | Some("adaptive") => WeightMode::Adaptive,
        Some("fixed") => WeightMode::Fixed,
        Some("equal") => WeightMode::Equal,
        Some(other) => {
            return Err(c.err(
                &k("weights"),
                format!("unknown weights \"{other}\"; allowed: \"adaptive\", \"fixed\", \"equal\""),
            ));
        }
    };
    let init = match r.init.as_deref() {
        None | Some("subregion") => InitRegion::Subregion,
        Some("domain") => InitRegion::Domain,
        Some(other) => {
            return Err(c.err(
                &k("init"),
                format!("unknown init \"{other}\"; allowed: \"subregion\", \"domain\""),
            ));
        }
    };
    let participation = check_participation(c, key, &r, agents)?;
    Ok(ServerSpec {
        subregions,
        dp,
        weights,
        a: c.non_negative(&k("a"), r.a, 15.0)?,
        t_const: c.int(&k("t_const"), r.t_const, 5, 0, MAX_COUNT)?,
        t_decay: c.int(&k("t_decay"), r.t_decay, 5, 0, MAX_COUNT)?,
        init,
        participation,
    })
}

/// The most rounds t <= `iterations` whose epsilon (the budget's accountant, at `delta`) stays
/// within the budget. Epsilon grows with t, so a bisection needs about log2(T) accountings.
fn budget_rounds(
    dp: &DpSpec,
    b: &Budget,
    iterations: u64,
    agents: usize,
    delta: f64,
) -> std::result::Result<u64, String> {
    let fits = |t: u64| -> std::result::Result<bool, String> {
        let g = crate::privacy::epsilon(b.accountant, &dp.mechanism(t, agents), delta)?;
        Ok(g.epsilon <= b.max_epsilon)
    };
    if fits(iterations)? {
        return Ok(iterations);
    }
    let (mut lo, mut hi) = (0, iterations); // fits(lo), !fits(hi)
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid)? { lo = mid } else { hi = mid }
    }
    Ok(lo)
}

fn check_participation(
    c: &Check,
    key: &str,
    r: &RawServer,
    agents: usize,
) -> Result<Participation> {
    let k = |f: &str| format!("{key}.{f}");
    let probability = |name: &str, v: f64| -> Result<f64> {
        if v.is_finite() && (0.0..1.0).contains(&v) {
            Ok(v)
        } else {
            Err(c.err(name, format!("must be a probability in [0, 1), got {v}")))
        }
    };
    let drop = match &r.drop {
        None => Vec::new(),
        Some(RawDrop::All(d)) => vec![probability(&k("drop"), *d)?; agents],
        Some(RawDrop::PerAgent(list)) => {
            if list.len() != agents {
                return Err(c.err(
                    &k("drop"),
                    format!(
                        "has {} entries; give one drop probability per agent ({agents}) or a single number",
                        list.len()
                    ),
                ));
            }
            list.iter()
                .enumerate()
                .map(|(i, &d)| probability(&format!("{key}.drop[{i}]"), d))
                .collect::<Result<Vec<f64>>>()?
        }
    };
    let latency = match (r.latency, r.deadline) {
        (None, None) => None,
        (Some(_), None) | (None, Some(_)) => {
            return Err(c.err(
                &k(if r.latency.is_some() {
                    "deadline"
                } else {
                    "latency"
                }),
                "latency (the mean of an exponential delay) and deadline go together",
            ));
        }
        (Some(l), Some(d)) => Some((
            c.positive(&k("latency"), Some(l), 1.0)?,
            c.positive(&k("deadline"), Some(d), 1.0)?,
        )),
    };
    let outage = match r.outage {
        None => {
            if r.outage_agents.is_some() {
                return Err(c.err(&k("outage_agents"), "applies only with outage"));
            }
            None
        }
        Some(p) => Some((
            probability(&k("outage"), p)?,
            c.int(
                &k("outage_agents"),
                r.outage_agents,
                1,
                1,
                agents.max(1) as i64,
            )?,
        )),
    };
    Ok(Participation {
        drop,
        latency,
        outage,
    })
}

fn check_objective(c: &Check, raw: Option<RawObjective>) -> Result<ObjectiveSpec> {
    let Some(mut o) = raw else {
        return Err(c.err(
            "objective",
            "missing [objective] table (kind = \"synthetic-fts\" or \"synthetic-dp\")",
        ));
    };
    let ids = |key: &str, v: Option<Vec<i64>>| -> Result<Option<Vec<usize>>> {
        let Some(v) = v else { return Ok(None) };
        if v.is_empty() {
            return Err(c.err(key, "must list at least one agent"));
        }
        let mut out: Vec<usize> = Vec::new();
        for (i, a) in v.iter().enumerate() {
            if *a < 0 || out.contains(&(*a as usize)) {
                return Err(c.err(
                    &format!("{key}[{i}]"),
                    format!("must be a distinct agent id >= 0, got {a}"),
                ));
            }
            out.push(*a as usize);
        }
        Ok(Some(out))
    };
    let targets = ids("objective.targets", o.targets.take())?;
    if o.kind != "table" && o.table.is_some() {
        return Err(c.err("objective.table", "applies only to kind = \"table\""));
    }
    if o.kind != "table" && o.kind != "model" && o.agents.is_some() {
        return Err(c.err(
            "objective.agents",
            "applies only to kind = \"table\" or \"model\"",
        ));
    }
    for (k, set) in [
        ("function", o.function.is_some()),
        ("dimension", o.dimension.is_some()),
        ("heterogeneity", o.heterogeneity.is_some()),
    ] {
        if o.kind != "function" && set {
            return Err(c.err(
                &format!("objective.{k}"),
                "applies only to kind = \"function\"",
            ));
        }
    }
    let measured = o.kind == "command" || o.kind == "external";
    if !measured {
        for (k, set) in [
            ("command", o.command.is_some()),
            ("workdir", o.workdir.is_some()),
            ("direction", o.direction.is_some()),
            ("metric_name", o.metric_name.is_some()),
            ("timeout_s", o.timeout_s.is_some()),
            ("retries", o.retries.is_some()),
            ("concurrency", o.concurrency.is_some()),
            ("on_failure", o.on_failure.is_some()),
        ] {
            if set {
                return Err(c.err(
                    &format!("objective.{k}"),
                    "applies only to kind = \"command\" (and \"external\")",
                ));
            }
        }
    }
    if o.kind != "model" {
        for (k, set) in [
            ("dataset", o.dataset.is_some()),
            ("data", o.data.is_some()),
            ("split", o.split.is_some()),
            ("split_seed", o.split_seed.is_some()),
            ("svm_stopping", o.svm_stopping.is_some()),
            ("epochs", o.epochs.is_some()),
            ("batch_size", o.batch_size.is_some()),
            ("metric", o.metric.is_some()),
            ("hyperparameters", o.hyperparameters.is_some() && !measured),
        ] {
            if set {
                return Err(c.err(
                    &format!("objective.{k}"),
                    "applies only to kind = \"model\"",
                ));
            }
        }
    }
    if o.kind == "function" || o.kind == "model" || measured {
        for (k, set) in [
            ("functions", o.functions.is_some()),
            ("d", o.d.is_some()),
            ("alpha", o.alpha.is_some()),
            ("heterogeneous", o.heterogeneous.is_some()),
            ("length_scale", o.length_scale.is_some()),
        ] {
            if set {
                return Err(c.err(
                    &format!("objective.{k}"),
                    format!(
                        "does not apply to kind = \"{}\" (no functions are drawn; the surrogate's length scale is surrogate.length_scale)",
                        o.kind
                    ),
                ));
            }
        }
        // grid = n: a grid of n points per hyperparameter; absent: the continuous box.
        let per_dim = match o.grid {
            None => None,
            Some(_) => Some(c.int("objective.grid", o.grid, 2, 2, 100_000)?),
        };
        let (kind, params) = if o.kind == "function" {
            let name = o.function.take().ok_or_else(|| {
                c.err(
                    "objective.function",
                    format!("missing: one of {}", Function::NAMES),
                )
            })?;
            // Rosenbrock's sum runs over neighbouring coordinates: it needs two.
            let lo = if name == "rosenbrock" { 2 } else { 1 };
            let dim = match (Function::scalable(&name), o.dimension) {
                (true, None) => {
                    return Err(c.err(
                        "objective.dimension",
                        format!(
                            "missing: \"{name}\" is defined in any dimension; say how many ({lo} to 50)"
                        ),
                    ));
                }
                (true, Some(_)) => Some(c.int("objective.dimension", o.dimension, lo, lo, 50)?),
                (false, Some(_)) => {
                    return Err(c.err(
                        "objective.dimension",
                        format!(
                            "applies only to the functions defined in any dimension ({}); \"{name}\" has its own",
                            Function::SCALABLE
                        ),
                    ));
                }
                (false, None) => None,
            };
            let f = Function::parse(&name, dim).ok_or_else(|| {
                c.err(
                    "objective.function",
                    format!("unknown function \"{name}\"; allowed: {}", Function::NAMES),
                )
            })?;
            let heterogeneity = match o.heterogeneity {
                None => 0.0,
                Some(h) if (0.0..=1.0).contains(&h) => h,
                Some(h) => {
                    return Err(c.err(
                        "objective.heterogeneity",
                        format!(
                            "must be in [0, 1] (0: every agent sees the same function), got {h}"
                        ),
                    ));
                }
            };
            (
                ObjectiveKind::Function {
                    function: f,
                    heterogeneity,
                },
                f.params(),
            )
        } else if measured {
            check_command(c, &mut o)?
        } else {
            check_model(c, &mut o, &ids)?
        };
        if let Some(n) = per_dim {
            let points = (n as u128).saturating_pow(params.len() as u32);
            if points > 1_000_000 {
                return Err(c.err(
                    "objective.grid",
                    format!(
                        "{n} points per hyperparameter make {points} grid points over {} hyperparameters; at most 1000000 (leave grid out to search the continuous box)",
                        params.len()
                    ),
                ));
            }
        }
        return Ok(ObjectiveSpec {
            kind,
            targets: targets.unwrap_or_default(),
            grid: 0,
            // Only the default of surrogate.length_scale here, in unit coordinates.
            length_scale: 0.1,
            noise_var: if measured {
                if o.noise_var.is_some() {
                    return Err(c.err(
                        "objective.noise_var",
                        "does not apply to a measured objective: the metric it reports is the observation",
                    ));
                }
                0.0
            } else {
                c.non_negative("objective.noise_var", o.noise_var, 0.0)?
            },
            functions: 1,
            d: 0.0,
            params,
            per_dim,
        });
    }
    let kind = match o.kind.as_str() {
        "table" => {
            for (k, set) in [
                ("grid", o.grid.is_some()),
                ("functions", o.functions.is_some()),
                ("d", o.d.is_some()),
                ("alpha", o.alpha.is_some()),
            ] {
                if set {
                    return Err(c.err(
                        &format!("objective.{k}"),
                        "does not apply to kind = \"table\" (the table fixes the domain)",
                    ));
                }
            }
            let rel = o.table.take().ok_or_else(|| {
                c.err(
                    "objective.table",
                    "missing: the table.toml written by `fbo tabulate`, relative to this spec",
                )
            })?;
            let base = c.file.parent().unwrap_or(Path::new("."));
            let meta = crate::objective::table::read_meta(&base.join(&rel))?;
            let agents = match ids("objective.agents", o.agents.take())? {
                Some(list) => {
                    if let Some(a) = list.iter().find(|&&a| a >= meta.agents) {
                        return Err(c.err(
                            "objective.agents",
                            format!("agent {a} is not in the table (0..{})", meta.agents - 1),
                        ));
                    }
                    list
                }
                None => (0..meta.agents).collect(),
            };
            let points = meta.points;
            let spec = ObjectiveSpec {
                kind: ObjectiveKind::Table { meta, agents },
                targets: targets.unwrap_or_default(),
                grid: points,
                length_scale: c.positive("objective.length_scale", o.length_scale, 0.01)?,
                noise_var: c.non_negative("objective.noise_var", o.noise_var, 0.0)?,
                functions: 1,
                d: 0.0,
                params: Vec::new(),
                per_dim: None,
            };
            return Ok(spec);
        }
        "synthetic-fts" => {
            if o.heterogeneous.is_some() || o.alpha.is_some() {
                return Err(c.err(
                    "objective.alpha",
                    "heterogeneous and alpha apply only to kind = \"synthetic-dp\"",
                ));
            }
            ObjectiveKind::SyntheticFts
        }
        "synthetic-dp" => {
            let het = o.heterogeneous.unwrap_or(false);
            if !het && o.alpha.is_some() {
                return Err(c.err("objective.alpha", "applies only with heterogeneous = true"));
            }
            let alpha = if het {
                let a = o.alpha.unwrap_or(0.7);
                if !(a.is_finite() && (0.0..=1.0).contains(&a)) {
                    return Err(c.err("objective.alpha", format!("must be in [0, 1], got {a}")));
                }
                Some(a)
            } else {
                None
            };
            ObjectiveKind::SyntheticDp {
                heterogeneous: alpha,
            }
        }
        other => {
            return Err(c.err(
                "objective.kind",
                format!(
                    "unknown objective \"{other}\"; allowed: \"synthetic-fts\", \"synthetic-dp\", \"table\", \"function\", \"model\", \"command\", \"external\""
                ),
            ));
        }
    };
    Ok(ObjectiveSpec {
        kind,
        targets: targets.unwrap_or_default(),
        // The functions are exact GP draws on the grid: a G x G Cholesky factor.
        grid: c.int("objective.grid", o.grid, 1000, 2, 20_000)?,
        length_scale: c.positive("objective.length_scale", o.length_scale, 0.03)?,
        noise_var: c.non_negative("objective.noise_var", o.noise_var, 0.01)?,
        functions: c.int("objective.functions", o.functions, 5, 1, MAX_COUNT)?,
        d: c.non_negative("objective.d", o.d, 0.02)?,
        params: Vec::new(),
        per_dim: None,
    })
}

/// The program a command's argv[0] names, as it will be started: a path with a slash
/// relative to `workdir`, a bare name found on PATH. Why not, otherwise.
pub fn find_program(name: &str, workdir: &Path) -> std::result::Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let p = crate::objective::command::program_path(name, workdir);
    if name.contains('/') {
        return if executable(&p) {
            Ok(p)
        } else if p.exists() {
            Err(format!(
                "{} is not an executable file (chmod +x it, or run it through its interpreter: [\"python3\", \"{name}\"])",
                p.display()
            ))
        } else {
            Err(format!(
                "the program {} does not exist (a path with a slash is taken from objective.workdir, {})",
                p.display(),
                workdir.display()
            ))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| executable(p))
        .ok_or_else(|| {
            format!(
                "the program \"{name}\" is not on PATH (give its path, say [\"./{name}\"] for one in objective.workdir)"
            )
        })
}

/// kind = "command" or "external": the argv (command only), where it runs, the metric's
/// direction and name, the searched hyperparameters (named by the user), and how failures
/// and concurrency are handled.
fn check_command(c: &Check, o: &mut RawObjective) -> Result<(ObjectiveKind, Vec<Param>)> {
    let external = o.kind == "external";
    let argv = match (o.command.take(), external) {
        (Some(_), true) => {
            return Err(c.err(
                "objective.command",
                "kind = \"external\" has no command: its results are reported with `fbo tell` (use kind = \"command\" to run one)",
            ));
        }
        (None, true) => None,
        (None, false) => {
            return Err(c.err(
                "objective.command",
                "missing: the program to run, as a list (command = [\"python3\", \"train.py\"]); it is executed directly, not through a shell",
            ));
        }
        (Some(v), false) => {
            if v.is_empty() || v[0].is_empty() {
                return Err(c.err(
                    "objective.command",
                    "must name a program: a non-empty list whose first item is the program",
                ));
            }
            Some(v)
        }
    };
    let base = c.file.parent().unwrap_or(Path::new("."));
    let workdir = base.join(o.workdir.take().unwrap_or_else(|| ".".into()));
    if !external && !workdir.is_dir() {
        return Err(c.err(
            "objective.workdir",
            format!(
                "{} is not a folder (the command runs there; relative to this spec)",
                workdir.display()
            ),
        ));
    }
    // Absolute, so that neither fbo's own folder nor the command's changes what it means.
    let workdir = workdir.canonicalize().unwrap_or(workdir);
    if let Some(argv) = &argv {
        if let Some(bad) = argv.iter().find(|a| a.contains('\0')) {
            return Err(c.err(
                "objective.command",
                format!("{bad:?} holds a NUL character, which no program can be given"),
            ));
        }
        // A program that cannot start fails every evaluation: said now, not after a run of
        // skipped failures.
        find_program(&argv[0], &workdir).map_err(|m| c.err("objective.command", m))?;
    }
    let sign = match o.direction.take().as_deref() {
        Some("maximize") => 1.0,
        Some("minimize") => -1.0,
        Some(other) => {
            return Err(c.err(
                "objective.direction",
                format!("unknown direction \"{other}\"; allowed: \"maximize\", \"minimize\""),
            ));
        }
        None => {
            return Err(c.err(
                "objective.direction",
                "missing: \"maximize\" or \"minimize\" (whether a higher metric is better)",
            ));
        }
    };
    let metric_name = o.metric_name.take().unwrap_or_else(|| "metric".into());
    if metric_name.is_empty() || metric_name.contains(['\n', '"']) {
        return Err(c.err(
            "objective.metric_name",
            "must be a non-empty name without quotes or newlines",
        ));
    }
    let timeout_s = o.timeout_s.unwrap_or(3600.0);
    if !(timeout_s > 0.0 && timeout_s <= 1e7) {
        return Err(c.err(
            "objective.timeout_s",
            format!("must be in (0, 1e7] seconds, got {timeout_s}"),
        ));
    }
    let retries = c.int("objective.retries", o.retries, 0, 0, 100)?;
    let concurrency = c.int("objective.concurrency", o.concurrency, 1, 1, 1024)?;
    let on_failure = match o.on_failure.take().as_deref() {
        None | Some("stop") => OnFailure::Stop,
        Some("skip") => OnFailure::Skip,
        Some(other) => {
            return Err(c.err(
                "objective.on_failure",
                format!("unknown choice \"{other}\"; allowed: \"stop\", \"skip\""),
            ));
        }
    };
    let list = o.hyperparameters.take().ok_or_else(|| {
        c.err(
            "objective.hyperparameters",
            "missing: at least one [[objective.hyperparameters]] with name, low and high",
        )
    })?;
    if list.is_empty() || list.len() > 20 {
        return Err(c.err(
            "objective.hyperparameters",
            format!("must list 1 to 20 hyperparameters, got {}", list.len()),
        ));
    }
    let mut params: Vec<Param> = Vec::with_capacity(list.len());
    for (i, h) in list.into_iter().enumerate() {
        let key = |f: &str| format!("objective.hyperparameters[{i}].{f}");
        let ok = !h.name.is_empty()
            && h.name.len() <= 64
            && h.name
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || ch == '_');
        if !ok {
            return Err(c.err(
                &key("name"),
                format!(
                    "must be 1-64 characters from A-Z a-z 0-9 _ (it names the variable FBO_PARAM_<NAME>), got \"{}\"",
                    h.name
                ),
            ));
        }
        if params.iter().any(|p| p.name.eq_ignore_ascii_case(&h.name)) {
            return Err(c.err(
                &key("name"),
                format!(
                    "\"{}\" is used twice (names are compared without case)",
                    h.name
                ),
            ));
        }
        params.push(check_param(c, &key, h, false)?);
    }
    let settings = CommandSettings {
        argv,
        workdir,
        sign,
        metric_name,
        timeout_s,
        retries,
        concurrency,
        on_failure,
    };
    Ok((ObjectiveKind::Command(settings), params))
}

type IdList<'a> = dyn Fn(&str, Option<Vec<i64>>) -> Result<Option<Vec<usize>>> + 'a;

/// kind = "model": the dataset, its raw data (read here, to count its agents), the model's
/// fixed settings and the searched hyperparameters (the dataset's, in its order; ranges and
/// scales may change).
fn check_model(
    c: &Check,
    o: &mut RawObjective,
    ids: &IdList,
) -> Result<(ObjectiveKind, Vec<Param>)> {
    let name = o.dataset.take().ok_or_else(|| {
        c.err(
            "objective.dataset",
            "missing: \"landmine\", \"har\" or \"emnist\"",
        )
    })?;
    let dataset = Dataset::parse(&name).ok_or_else(|| {
        c.err(
            "objective.dataset",
            format!("unknown dataset \"{name}\"; allowed: \"landmine\", \"har\", \"emnist\""),
        )
    })?;
    let rel = o.data.take().ok_or_else(|| {
        c.err(
            "objective.data",
            format!(
                "missing: the raw data, relative to this spec: {}",
                match dataset {
                    Dataset::Landmine =>
                        "the landmine CSV transcription (shared/data/landmine/landmine.csv)",
                    Dataset::Har => "the UCI HAR folder of .txt.gz files (shared/data/har)",
                    Dataset::Emnist => "the FEMNIST digits folder (shared/data/emnist)",
                }
            ),
        )
    })?;
    let base = c.file.parent().unwrap_or(Path::new("."));
    let data = base.join(&rel);
    if !data.exists() {
        return Err(c.err(
            "objective.data",
            format!("{} does not exist", data.display()),
        ));
    }
    let split_seed = c.int("objective.split_seed", o.split_seed, 0, 0, i64::MAX)? as u64;
    let split_file = dataset
        .split_file(base, o.split.take().as_deref())
        .map_err(|m| c.err("objective.split", m))?;
    let svm_stopping = dataset
        .svm_stopping(o.svm_stopping.take().as_deref())
        .map_err(|m| c.err("objective.svm_stopping", m))?;
    let epochs = c.int("objective.epochs", o.epochs, 20, 1, 100_000)?;
    let batch_size = match dataset {
        Dataset::Emnist => c.int("objective.batch_size", o.batch_size, 20, 1, 100_000)?,
        _ if o.batch_size.is_some() => {
            return Err(c.err(
                "objective.batch_size",
                "only the emnist dataset has a fixed batch size (har tunes it as a hyperparameter)",
            ));
        }
        _ => 0,
    };
    if dataset == Dataset::Landmine && o.epochs.is_some() {
        return Err(c.err("objective.epochs", "the landmine SVM has no epochs"));
    }
    // Platt-calibrated AUC by default: it is what the authors' SVC(probability=True) scored,
    // so live levels are comparable with their published traces.
    let metric = match (dataset, o.metric.take().as_deref()) {
        (Dataset::Landmine, None | Some("platt-auc")) => SvmMetric::PlattAuc,
        (Dataset::Landmine, Some("auc")) => SvmMetric::Auc,
        (Dataset::Landmine, Some(other)) => {
            return Err(c.err(
                "objective.metric",
                format!("unknown metric \"{other}\"; allowed: \"platt-auc\" (default), \"auc\""),
            ));
        }
        (_, Some(_)) => {
            return Err(c.err(
                "objective.metric",
                "applies only to dataset = \"landmine\" (har and emnist score validation error)",
            ));
        }
        (_, None) => SvmMetric::Auc,
    };
    let defaults = dataset.defaults();
    let params = match o.hyperparameters.take() {
        None => defaults,
        Some(list) => {
            if list.len() != defaults.len() {
                return Err(c.err(
                    "objective.hyperparameters",
                    format!(
                        "\"{name}\" has {} hyperparameters ({}), got {}",
                        defaults.len(),
                        defaults
                            .iter()
                            .map(|d| d.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                        list.len()
                    ),
                ));
            }
            let mut out = Vec::with_capacity(list.len());
            for (i, (h, d)) in list.into_iter().zip(&defaults).enumerate() {
                let key = |f: &str| format!("objective.hyperparameters[{i}].{f}");
                if h.name != d.name {
                    return Err(c.err(
                        &key("name"),
                        format!(
                            "must be \"{}\" (the order is fixed), got \"{}\"",
                            d.name, h.name
                        ),
                    ));
                }
                out.push(check_param(c, &key, h, true)?);
            }
            out
        }
    };
    let settings = ModelSettings {
        dataset,
        data,
        split_seed,
        split_file,
        svm_stopping,
        epochs,
        batch_size,
        metric,
    };
    let available = crate::objective::model::count_agents(&settings)?;
    let agents = match ids("objective.agents", o.agents.take())? {
        Some(list) => {
            if let Some(a) = list.iter().find(|&&a| a >= available) {
                return Err(c.err(
                    "objective.agents",
                    format!("agent {a} is not in the data (0..{})", available - 1),
                ));
            }
            list
        }
        None => (0..available).collect(),
    };
    let mut params = params;
    if dataset == Dataset::Har {
        // The batch size is a count: trained, traced and memoised as an integer.
        params[0].integer = true;
    }
    Ok((ObjectiveKind::Model { settings, agents }, params))
}

/// One hyperparameter's range: finite, low < high, positive on a log scale (and for the
/// datasets' models, whose hyperparameters are all positive).
fn check_param(
    c: &Check,
    key: &dyn Fn(&str) -> String,
    h: RawParam,
    positive: bool,
) -> Result<Param> {
    let scale = match h.scale.as_deref() {
        None | Some("linear") => Scale::Linear,
        Some("log") => Scale::Log,
        Some(other) => {
            return Err(c.err(
                &key("scale"),
                format!("unknown scale \"{other}\"; allowed: \"linear\", \"log\""),
            ));
        }
    };
    if !(h.low.is_finite() && h.high.is_finite() && h.low < h.high) {
        return Err(c.err(
            &key("low"),
            format!("need finite low < high, got [{}, {}]", h.low, h.high),
        ));
    }
    if (positive || scale == Scale::Log) && h.low <= 0.0 {
        return Err(c.err(
            &key("low"),
            format!(
                "must be > 0 ({}), got {}",
                if scale == Scale::Log {
                    "log scale"
                } else {
                    "the model needs a positive value"
                },
                h.low
            ),
        ));
    }
    let integer = h.integer.unwrap_or(false);
    if integer && h.high.floor() < h.low.ceil() {
        return Err(c.err(
            &key("integer"),
            format!("[{}, {}] holds no integer", h.low, h.high),
        ));
    }
    Ok(Param {
        name: h.name,
        low: h.low,
        high: h.high,
        scale,
        integer,
    })
}
