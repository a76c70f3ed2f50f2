//! The server's settings (DP-FTS-DE and its special cases): sub-regions, weights,
//! differential privacy and its budget, and the participation model of a real network.

use super::*;

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

/// How an agent weighs the server's point against its own sample (`server.follow`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Follow {
    /// The papers' rule: the server's point with probability 1 - p_t.
    Schedule,
    /// With probability (1 - p_t) rho_t, rho_t the share of the released vectors' energy
    /// that is not noise, estimated from the release and the public noise s.d.
    /// (`algorithm::dp_fts_de::signal_share`): where the noise drowns the vectors the agents
    /// keep to their own samples.
    Signal,
}

impl Follow {
    pub const NAMES: &'static str = "\"schedule\" (the papers' 1 - p_t), \"signal\" ((1 - p_t) times the release's signal share)";

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "schedule" => Some(Follow::Schedule),
            "signal" => Some(Follow::Signal),
            _ => None,
        }
    }
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
    /// With `surrogate.shared = "agreed"`: how the agreement on the shared model's
    /// hyperparameters is released beside the messages (`surrogate::agreement`).
    pub agreement: Option<AgreementDp>,
    /// Who adds the noise: the server (the papers' trusted server), or the agents' discrete
    /// Gaussian shares (`server.noise = "distributed"`, with `server.secure`).
    pub noise: crate::privacy::Noise,
    /// `server.self_sampling`: each agent draws its own participation and every agent
    /// uploads, so the server does not learn who took part.
    pub self_sampling: bool,
    /// `server.follow`: how the agents use the noised release's point.
    pub follow: Follow,
}

/// The agreement's own release: log-hyperparameter vectors clipped to L2 norm `clip` about
/// the prior, Gaussian noise of multiplier `z`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AgreementDp {
    pub z: f64,
    pub clip: f64,
}

impl AgreementDp {
    /// C: a deviation of e^3 (x20) in one hyperparameter from the prior, or of e^1.5 in
    /// four, passes unclipped.
    pub const DEFAULT_CLIP: f64 = 3.0;
    /// z_h = 3 z unless written: the pair then costs the Gaussian mechanism at z 3 / sqrt(10)
    /// = 0.949 z. Measured at 32 agents (docs/results.md, "Agreed shared models under DP"):
    /// z_h = 3.28 against z_h = z at about the same regret (paired differences against the
    /// pinned model -272 and -283 with identical agents, -346 and -391 under mild
    /// heterogeneity), at a far smaller epsilon than z_h = z (multiplier 0.707 z).
    pub const DEFAULT_Z_FACTOR: f64 = 3.0;

    /// The agreement's release when it is not written: its clip and z_h by default.
    pub fn default_for(z: f64) -> Self {
        AgreementDp {
            z: Self::DEFAULT_Z_FACTOR * z,
            clip: Self::DEFAULT_CLIP,
        }
    }
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
    /// The noise multiplier every round is accounted with: z, or with an agreement riding on
    /// the same selection, the pair's effective multiplier (smaller: the agreement costs).
    pub fn noise_multiplier(&self) -> f64 {
        match self.agreement {
            None => self.z,
            Some(a) => crate::surrogate::agreement::effective_z(self.z, a.z),
        }
    }

    /// Rounds the server releases by iteration t: t, or fewer once a budget is spent.
    pub fn released(&self, t: u64) -> u64 {
        self.budget.map_or(t, |b| t.min(b.rounds))
    }

    /// The mechanism released after `steps` iterations by a server of `agents` agents, at the
    /// rate it realises (the one every epsilon fbo writes is computed for); a spent budget
    /// stops the rounds, and with them epsilon.
    pub fn mechanism(&self, steps: u64, agents: usize) -> crate::privacy::Mechanism {
        let steps = self.released(steps);
        let m = crate::privacy::Mechanism::server(
            self.q,
            self.noise_multiplier(),
            steps,
            self.sampling,
            self.adjacency,
            agents,
        );
        match self.noise {
            crate::privacy::Noise::Gaussian => m,
            crate::privacy::Noise::Distributed(d) => m.distributed(d),
        }
    }

    /// The guarantee against the server itself where it differs from `mechanism`'s: under
    /// distributed noise with the server drawing the sample, it knows who was selected, so
    /// no amplification holds against it. Under Poisson or fixed-size sampling an agent may
    /// be selected every round, so each released round counts in full (rate 1); under random
    /// allocation it takes part in one round of each period, so each period begun counts as
    /// one unsampled round (add-remove, as allocation's own relation). None where the server
    /// holds no guarantee of its own (central noise: it sees the un-noised sum) or
    /// `mechanism`'s holds against it too (self-sampling).
    pub fn server_view(&self, steps: u64, agents: usize) -> Option<crate::privacy::Mechanism> {
        if !matches!(self.noise, crate::privacy::Noise::Distributed(_)) || self.self_sampling {
            return None;
        }
        let m = self.mechanism(steps, agents);
        Some(match self.sampling {
            Sampling::Allocation { per_agent, rounds } => crate::privacy::Mechanism {
                q: 1.0,
                steps: crate::privacy::allocation::periods_begun(
                    rounds,
                    per_agent,
                    self.released(steps),
                ),
                sampling: Sampling::Poisson,
                adjacency: crate::privacy::Adjacency::AddRemove,
                ..m
            },
            _ => crate::privacy::Mechanism { q: 1.0, ..m },
        })
    }

    /// Whether `mechanism`'s epsilon holds against the server too, not only against those who
    /// see the released aggregates.
    pub fn holds_against_server(&self) -> bool {
        matches!(self.noise, crate::privacy::Noise::Distributed(_)) && self.self_sampling
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
    /// `server.secure`: the selected agents clip and weight their own vectors and the server
    /// learns only their sum (`crate::server::secagg`); None: vectors reach the server in the clear.
    pub secure: Option<SecureSpec>,
}

/// Secure aggregation's settings: the fraction of a round's cohort that may drop out after
/// masking with the round still completing (the Shamir threshold is the cohort minus that
/// many, always more than half the cohort), and how many neighbours each member masks with
/// (SecAgg+, `crate::server::secagg::graph`; None: every other member).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SecureSpec {
    pub dropout: f64,
    pub neighbours: Option<usize>,
}

impl SecureSpec {
    pub const DEFAULT_DROPOUT: f64 = 1.0 / 3.0;

    /// Whether `k` neighbours make a cycle's neighbourhoods: k/2 on either side, so an even
    /// number >= 2.
    pub fn neighbours_ok(k: usize) -> bool {
        k >= 2 && k.is_multiple_of(2)
    }

    /// Plain secure aggregation (every member masks with every other) at `dropout`.
    pub fn plain(dropout: f64) -> Self {
        SecureSpec {
            dropout,
            neighbours: None,
        }
    }

    /// The threshold for a cohort of `n`: n - floor(dropout n), at least 1.
    pub fn threshold(&self, n: usize) -> usize {
        (n - (self.dropout * n as f64).floor() as usize).max(1)
    }
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

/// Server settings: the top-level [server] table, overridden key by key by an algorithm's
/// inline `server = { ... }`.
#[derive(Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
pub(super) struct RawServer {
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
    agreement_z: Option<f64>,
    agreement_clip: Option<f64>,
    secure: Option<bool>,
    secure_dropout: Option<f64>,
    secure_neighbours: Option<i64>,
    noise: Option<String>,
    self_sampling: Option<bool>,
    rounds_per_agent: Option<i64>,
    follow: Option<String>,
}

/// `drop = 0.1` (every agent) or `drop = [0.1, 0.0, ...]` (one per agent).
#[derive(Deserialize, Clone)]
#[serde(untagged)]
pub(super) enum RawDrop {
    All(f64),
    PerAgent(Vec<f64>),
}

impl RawServer {
    /// The keys this table sets.
    pub(super) fn set_keys(&self) -> Vec<String> {
        Self::KEYS
            .iter()
            .filter(|k| self.sets(k))
            .map(|k| k.to_string())
            .collect()
    }

    const KEYS: [&'static str; 28] = [
        "subregions",
        "dp",
        "q",
        "z",
        "clip",
        "sampling",
        "adjacency",
        "weights",
        "a",
        "t_const",
        "t_decay",
        "init",
        "drop",
        "latency",
        "deadline",
        "outage",
        "outage_agents",
        "max_epsilon",
        "budget_accountant",
        "agreement_z",
        "agreement_clip",
        "secure",
        "secure_dropout",
        "secure_neighbours",
        "noise",
        "self_sampling",
        "rounds_per_agent",
        "follow",
    ];

    /// Whether this table sets the key `f`.
    pub(super) fn sets(&self, f: &str) -> bool {
        match f {
            "subregions" => self.subregions.is_some(),
            "dp" => self.dp.is_some(),
            "q" => self.q.is_some(),
            "z" => self.z.is_some(),
            "clip" => self.clip.is_some(),
            "sampling" => self.sampling.is_some(),
            "adjacency" => self.adjacency.is_some(),
            "weights" => self.weights.is_some(),
            "a" => self.a.is_some(),
            "t_const" => self.t_const.is_some(),
            "t_decay" => self.t_decay.is_some(),
            "init" => self.init.is_some(),
            "drop" => self.drop.is_some(),
            "latency" => self.latency.is_some(),
            "deadline" => self.deadline.is_some(),
            "outage" => self.outage.is_some(),
            "outage_agents" => self.outage_agents.is_some(),
            "max_epsilon" => self.max_epsilon.is_some(),
            "budget_accountant" => self.budget_accountant.is_some(),
            "agreement_z" => self.agreement_z.is_some(),
            "agreement_clip" => self.agreement_clip.is_some(),
            "secure" => self.secure.is_some(),
            "secure_dropout" => self.secure_dropout.is_some(),
            "secure_neighbours" => self.secure_neighbours.is_some(),
            "noise" => self.noise.is_some(),
            "self_sampling" => self.self_sampling.is_some(),
            "rounds_per_agent" => self.rounds_per_agent.is_some(),
            "follow" => self.follow.is_some(),
            _ => false,
        }
    }

    pub(super) fn or(self, base: &RawServer) -> RawServer {
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
            agreement_z: self.agreement_z.or(b.agreement_z),
            agreement_clip: self.agreement_clip.or(b.agreement_clip),
            secure: self.secure.or(b.secure),
            secure_dropout: self.secure_dropout.or(b.secure_dropout),
            secure_neighbours: self.secure_neighbours.or(b.secure_neighbours),
            noise: self.noise.or(b.noise),
            self_sampling: self.self_sampling.or(b.self_sampling),
            rounds_per_agent: self.rounds_per_agent.or(b.rounds_per_agent),
            follow: self.follow.or(b.follow),
        }
    }
}

/// Default label: FTS (server form, P = 1), FTS-DE, DP-FTS or DP-FTS-DE, with the parameters
/// that distinguish one curve of the paper's figures from another.
pub(super) fn server_label(s: &ServerSpec) -> String {
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
        let sampled = match dp.sampling {
            Sampling::Allocation { per_agent, .. } => format!("allocated k={per_agent}"),
            _ => format!("q={}", short_number(dp.q)),
        };
        l += &format!(
            " {sampled} z={} S={}",
            short_number(dp.z),
            short_number(dp.clip)
        );
        if dp.follow == Follow::Signal {
            l += " follow=signal";
        }
    }
    l
}

/// A number for a label: as written for ordinary values (0.35, 22), in scientific notation
/// when tiny or huge, so that z = 1e-200 does not become 200 digits.
pub(super) fn short_number(v: f64) -> String {
    if v != 0.0 && !(1e-4..1e6).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// The keys that mean something only with dp = true.
pub(super) const DP_KEYS: [&str; 13] = [
    "q",
    "z",
    "clip",
    "sampling",
    "adjacency",
    "max_epsilon",
    "budget_accountant",
    "agreement_z",
    "agreement_clip",
    "noise",
    "self_sampling",
    "rounds_per_agent",
    "follow",
];

/// What the server's settings are checked against: the grid's size (None: a box), the
/// agents, the features per message, and whether the objective is a function or a command
/// (`ObjectiveKind::is_open`: some defaults differ there).
pub(super) struct ServerContext {
    pub grid: Option<usize>,
    pub agents: usize,
    pub features: usize,
    pub open_objective: bool,
}

/// `r` is the algorithm's settings merged over the top-level [server] table; `own` the
/// algorithm's own overrides. Top-level DP values are defaults that non-private algorithms
/// leave unused; an algorithm that sets them itself without dp = true is a mistake.
pub(super) fn check_server(
    c: &Check,
    key: &str,
    r: RawServer,
    own: Option<&RawServer>,
    cx: &ServerContext,
) -> Result<ServerSpec> {
    // A bad value is named where it was written: the algorithm's own `server = { .. }`, or
    // the top-level [server] table it fell back on.
    let k = |f: &str| match own.is_some_and(|o| o.sets(f)) {
        true => format!("{key}.{f}"),
        false => format!("server.{f}"),
    };
    // A box can be cut into any number of sub-regions; a grid into at most its points.
    let most = cx.grid.map_or(10_000, |g| g.min(10_000)) as i64;
    let subregions = c.int(&k("subregions"), r.subregions, 1, 1, most)?;
    let dp = check_dp(c, &k, &r, own, subregions, cx)?;
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
    let participation = check_participation(c, key, &r, own, cx.agents)?;
    let secure = check_secure(c, &k, &r, own)?;
    Ok(ServerSpec {
        subregions,
        dp,
        weights,
        a: c.non_negative(&k("a"), r.a, 15.0)?,
        t_const: c.int(&k("t_const"), r.t_const, 5, 0, MAX_COUNT)?,
        t_decay: c.int(&k("t_decay"), r.t_decay, 5, 0, MAX_COUNT)?,
        init,
        participation,
        secure,
    })
}

/// The server's privacy settings (`dp = true` and the keys that need it), or None; refuses a
/// key that applies only with dp = true where the algorithm's own table sets it without.
fn check_dp(
    c: &Check,
    k: &dyn Fn(&str) -> String,
    r: &RawServer,
    own: Option<&RawServer>,
    subregions: usize,
    cx: &ServerContext,
) -> Result<Option<DpSpec>> {
    if !r.dp.unwrap_or(false) {
        refuse_dp_keys(c, k, own)?;
        return Ok(None);
    }
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
    let sampling = check_allocation(c, k, r, sampling)?;
    let adjacency = match r.adjacency.as_deref() {
        None => crate::privacy::Adjacency::default_for(sampling),
        Some(s) => s.parse().map_err(|e: String| c.err(&k("adjacency"), e))?,
    };
    crate::privacy::check_relation(sampling, adjacency).map_err(|e| c.err(&k("adjacency"), e))?;
    let z = c.positive(&k("z"), r.z, 1.0)?;
    // Set here only when written: whether an agreement is released at all is the
    // surrogate's choice (`surrogate.shared`), settled once the whole spec is read.
    let agreement = match (r.agreement_z, r.agreement_clip) {
        (None, None) => None,
        (zh, ch) => {
            let default = AgreementDp::default_for(z);
            Some(AgreementDp {
                z: c.positive(&k("agreement_z"), zh, default.z)?,
                clip: c.positive(&k("agreement_clip"), ch, default.clip)?,
            })
        }
    };
    let clip = c.positive(&k("clip"), r.clip, 11.0)?;
    let noise = check_noise(c, k, r, subregions * cx.features, cx.agents, clip, z)?;
    let self_sampling = r.self_sampling.unwrap_or(false);
    if self_sampling && sampling != Sampling::Poisson {
        return Err(c.err(
            &k("self_sampling"),
            "needs sampling = \"poisson\": an agent can flip its own coin, but no agent alone can draw a fixed-size sample",
        ));
    }
    // Unwritten: "signal" on a function or command objective, where the papers' rule was
    // measured behind TS alone and this one level with it (docs/results.md, "Following a
    // noised release"); the papers' objectives keep their rule and bytes.
    let follow = c.choice(
        &k("follow"),
        r.follow.as_deref(),
        if cx.open_objective {
            Follow::Signal
        } else {
            Follow::Schedule
        },
        "follow rule",
        Follow::NAMES,
        Follow::parse,
    )?;
    Ok(Some(DpSpec {
        q,
        z,
        clip,
        sampling,
        adjacency,
        budget: check_budget(c, k, r, sampling, adjacency, noise)?,
        agreement,
        noise,
        self_sampling,
        follow,
    }))
}

/// Random allocation's own key (`rounds_per_agent`, refused for the other schemes) and the
/// keys it has no use for (`q`: no rate). Its rounds are the spec's iterations, set once the
/// whole spec is read (`spec::privacy`).
fn check_allocation(
    c: &Check,
    k: &dyn Fn(&str) -> String,
    r: &RawServer,
    sampling: Sampling,
) -> Result<Sampling> {
    let Sampling::Allocation { .. } = sampling else {
        if r.rounds_per_agent.is_some() {
            return Err(c.err(
                &k("rounds_per_agent"),
                "applies only with sampling = \"allocation\"",
            ));
        }
        return Ok(sampling);
    };
    if r.q.is_some() {
        return Err(c.err(
            &k("q"),
            "does not apply with sampling = \"allocation\": each agent takes part in rounds_per_agent rounds, one in each of that many periods, so the rate of a round is one over its period's length",
        ));
    }
    let per_agent = c.int(
        &k("rounds_per_agent"),
        r.rounds_per_agent,
        1,
        1,
        crate::privacy::allocation::MAX_PER_AGENT as i64,
    )? as u64;
    Ok(Sampling::Allocation {
        per_agent,
        rounds: 0,
    })
}

/// Who adds the noise (`noise`), with what bound for distributed shares on `dim` coordinates;
/// distributed noise and self-sampling need secure aggregation.
fn check_noise(
    c: &Check,
    k: &dyn Fn(&str) -> String,
    r: &RawServer,
    dim: usize,
    agents: usize,
    clip: f64,
    z: f64,
) -> Result<crate::privacy::Noise> {
    let distributed = match r.noise.as_deref() {
        None | Some("central") => false,
        Some("distributed") => true,
        Some(other) => {
            return Err(c.err(
                &k("noise"),
                format!("unknown noise \"{other}\"; allowed: \"central\" (the server adds it), \"distributed\" (the agents add discrete Gaussian shares; needs secure = true)"),
            ));
        }
    };
    if (distributed || r.self_sampling.is_some()) && !r.secure.unwrap_or(false) {
        let key = if distributed {
            "noise"
        } else {
            "self_sampling"
        };
        return Err(c.err(
            &k(key),
            "needs secure = true: the agents' shares and uploads are hidden from the server only by secure aggregation",
        ));
    }
    if !distributed {
        return Ok(crate::privacy::Noise::Gaussian);
    }
    let bits = crate::math::fixed::FRACTION_BITS;
    let d = crate::privacy::discrete::Distributed::bound(agents, dim, clip, z, bits)
        .map_err(|e| c.err(&k("noise"), e))?;
    Ok(crate::privacy::Noise::Distributed(d))
}

/// `max_epsilon` and the accountant it is kept with (pld by default; rdp for distributed
/// noise whose shares are too narrow for pld's Gaussian stand-in), or None.
fn check_budget(
    c: &Check,
    k: &dyn Fn(&str) -> String,
    r: &RawServer,
    sampling: Sampling,
    adjacency: crate::privacy::Adjacency,
    noise: crate::privacy::Noise,
) -> Result<Option<Budget>> {
    let Some(e) = r.max_epsilon else {
        if r.budget_accountant.is_some() {
            return Err(c.err(&k("budget_accountant"), "applies only with max_epsilon"));
        }
        return Ok(None);
    };
    let max_epsilon = c.positive(&k("max_epsilon"), Some(e), 1.0)?;
    let accountant = match r.budget_accountant.as_deref() {
        Some(a) => a
            .parse()
            .map_err(|e: String| c.err(&k("budget_accountant"), e))?,
        None if crate::privacy::supports_noise(Accountant::Pld, noise).is_err() => Accountant::Rdp,
        None if matches!(sampling, Sampling::Allocation { .. }) => Accountant::Allocation,
        None => Accountant::Pld,
    };
    crate::privacy::supports(accountant, sampling, adjacency)
        .map_err(|e| c.err(&k("budget_accountant"), e))?;
    crate::privacy::supports_noise(accountant, noise)
        .map_err(|e| c.err(&k("budget_accountant"), e))?;
    // The rounds it allows need N, T and delta: `budget_rounds` fills them in.
    Ok(Some(Budget {
        max_epsilon,
        accountant,
        rounds: u64::MAX,
    }))
}

/// Refuses the privacy keys an algorithm's own table sets without dp = true.
fn refuse_dp_keys(c: &Check, k: &dyn Fn(&str) -> String, own: Option<&RawServer>) -> Result<()> {
    let own = own.cloned().unwrap_or_default();
    for name in DP_KEYS {
        if own.sets(name) {
            return Err(c.err(&k(name), "applies only with dp = true"));
        }
    }
    Ok(())
}

/// Secure aggregation's settings (`secure = true`, `secure_dropout`), or None.
fn check_secure(
    c: &Check,
    k: &dyn Fn(&str) -> String,
    r: &RawServer,
    own: Option<&RawServer>,
) -> Result<Option<SecureSpec>> {
    Ok(if r.secure.unwrap_or(false) {
        let dropout = r.secure_dropout.unwrap_or(SecureSpec::DEFAULT_DROPOUT);
        if !(0.0..0.5).contains(&dropout) {
            return Err(c.err(
                &k("secure_dropout"),
                format!(
                    "must be a fraction in [0, 0.5) (the share of a round's cohort that may drop out after masking; the threshold stays above half the cohort), got {dropout}"
                ),
            ));
        }
        let neighbours = match r.secure_neighbours {
            None => None,
            Some(n) if usize::try_from(n).is_ok_and(SecureSpec::neighbours_ok) => Some(n as usize),
            Some(n) => {
                return Err(c.err(
                    &k("secure_neighbours"),
                    format!(
                        "must be an even number >= 2 (each member masks with the k/2 members on either side of it on a random cycle; leave it out to mask with every other member), got {n}"
                    ),
                ));
            }
        };
        Some(SecureSpec {
            dropout,
            neighbours,
        })
    } else {
        for key in ["secure_dropout", "secure_neighbours"] {
            if own.is_some_and(|o| o.sets(key)) {
                return Err(c.err(&k(key), "applies only with secure = true"));
            }
        }
        None
    })
}

/// The most rounds t <= `iterations` whose epsilon (the budget's accountant, at `delta`) stays
/// within the budget. Epsilon grows with t, so a bisection needs about log2(T) accountings.
pub(super) fn budget_rounds(
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

pub(super) fn check_participation(
    c: &Check,
    key: &str,
    r: &RawServer,
    own: Option<&RawServer>,
    agents: usize,
) -> Result<Participation> {
    // A bad value is named where it was written: the algorithm's own `server = { .. }`, or
    // the top-level [server] table it fell back on.
    let k = |f: &str| match own.is_some_and(|o| o.sets(f)) {
        true => format!("{key}.{f}"),
        false => format!("server.{f}"),
    };
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
