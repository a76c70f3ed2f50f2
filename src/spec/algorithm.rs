//! The algorithms of a spec: their kinds, the keys each takes, and the check of every
//! `[[algorithm]]` table against the spec's federation, surrogate and server defaults.

use super::*;

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

    /// The target-and-senders forms (the FTS paper's, RGPE, TAF): other agents' messages
    /// reach the objective's targets, which exchange nothing with each other.
    pub fn has_senders(self) -> bool {
        matches!(
            self,
            AlgorithmKind::Fts | AlgorithmKind::Rgpe | AlgorithmKind::Taf
        )
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
    /// EI (kind = "ei"): how it is scored; the frameworks carry theirs in `Decide::Ei`.
    pub ei: EiForm,
    /// EI and UCB with a batch or pending evaluations (`fantasy`): what value a point being
    /// evaluated is believed to have while the next is chosen.
    pub fantasy: Fantasy,
    /// How its agents keep time with each other on the simulated clock (`pace`; only
    /// DP-FTS-DE has an asynchronous form).
    pub pace: super::Pace,
    /// At its own pace with a server step: when the server releases (`release`).
    pub release: super::Release,
    /// The survey's frameworks' settings (`Framework::None` for the other kinds).
    pub framework: frameworks::Framework,
    /// The server keys this algorithm's own `server = { .. }` sets (the others come from the
    /// top-level [server] table), so that a message names the key where it was written.
    pub server_inline: Vec<String>,
    /// TS only: a reference's first query (None: plain TS).
    pub start: Option<Start>,
    /// The model behind this algorithm's messages: `surrogate.shared`, or its own `shared`.
    pub shared: crate::spec::SharedModel,
}

impl AlgorithmSpec {
    /// On the simulated clock, whether its agents start each round together (when the
    /// slowest is done): federated kinds in rounds; not agents alone, and not the targets of
    /// a target-and-senders form at their own pace.
    pub fn waits_in_rounds(&self) -> bool {
        !(self.kind.is_single_agent()
            || self.kind.has_senders() && self.pace == super::Pace::Asynchronous)
    }

    /// Whether it runs on the event-driven asynchronous server (`crate::run::pace`): at its
    /// own pace with a server step; the target-and-senders forms at their own pace have none
    /// and run in rounds in which no target waits (`waits_in_rounds`).
    pub fn has_asynchronous_server(&self) -> bool {
        asynchronous_server(self.pace, self.kind)
    }

    /// The spec key of server setting `f` for the algorithm at index `i`: its own inline
    /// table's where it sets `f`, the top-level [server] table's otherwise.
    pub fn server_key(&self, i: usize, f: &str) -> String {
        if self.server_inline.iter().any(|k| k == f) {
            format!("algorithm[{i}].server.{f}")
        } else {
            format!("server.{f}")
        }
    }

    /// The differentially private mechanism this algorithm has released after `steps`
    /// iterations in a federation of `agents` agents (the rate is the one a server realises),
    /// or None if it releases nothing noisy: every epsilon fbo writes is computed from this.
    pub fn mechanism(&self, steps: u64, agents: usize) -> Option<crate::privacy::Mechanism> {
        match self.server.as_ref().and_then(|s| s.dp) {
            Some(dp) => Some(dp.mechanism(steps, agents)),
            None => self.framework.mechanism(steps),
        }
    }

    /// Every guarantee this algorithm's epsilons are written for, with whom each holds
    /// against: `mechanism`'s (against those who see the released aggregates, and against
    /// the server too where `DpSpec::holds_against_server`), and the server's own view where
    /// it differs (`DpSpec::server_view`).
    pub fn guarantees(
        &self,
        steps: u64,
        agents: usize,
    ) -> Vec<(crate::privacy::Against, crate::privacy::Mechanism)> {
        use crate::privacy::Against;
        let Some(release) = self.mechanism(steps, agents) else {
            return Vec::new();
        };
        let dp = self.server.as_ref().and_then(|s| s.dp);
        let against = match dp {
            Some(dp) if dp.holds_against_server() => Against::Server,
            _ => Against::Outsiders,
        };
        let mut out = vec![(against, release)];
        if let Some(view) = dp.and_then(|d| d.server_view(steps, agents)) {
            out.push((Against::Server, view));
        }
        out
    }
}

/// A practitioner's reference (issue 39): TS whose first query is a configuration the other
/// agents' measured surfaces point to (`start` on kind = "ts"; algorithm/single.rs). Both
/// assume every other agent has already measured its whole grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// The grid point best on average over the other agents' surfaces ("copy the
    /// federation's best"): every other agent discloses its whole surface.
    FederationBest,
    /// The grid point nearest the mean, in unit coordinates, of the other agents' own best
    /// points (PrivTuna's one-shot averaging): each discloses its best point, into an exact
    /// (noise-free) average.
    MeanOfBests,
}

impl Start {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "federation-best" => Some(Start::FederationBest),
            "mean-of-bests" => Some(Start::MeanOfBests),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Start::FederationBest => "federation-best",
            Start::MeanOfBests => "mean-of-bests",
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

/// What an acquisition-based agent (kinds ei and ucb) takes a point still being evaluated to
/// have returned, while it chooses the next point of a batch or beside pending evaluations
/// (Ginsbourger, Le Riche and Carraro 2010).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fantasy {
    /// The worst value observed so far (CL-min): the batch spreads away from the point.
    ConstantLiar,
    /// The model's posterior mean there, each believed point conditioning the next
    /// (Kriging believer): the model stays where it was, its variance shrinks at the point.
    KrigingBeliever,
}

impl Fantasy {
    pub const NAMES: &'static str = "\"constant-liar\", \"kriging-believer\"";

    /// EI believes the model, UCB lies: measured in docs/results.md ("Batches per round" and
    /// "Pending evaluations"), EI's believer was lower than its liar in all nine cells,
    /// significantly in five (Styblinski-Tang-5's batches, p 0.002; four of the six pending
    /// cells after Holm), while UCB's batches need the liar's push to spread (its believer
    /// behind on Hartmann-6, p 0.020). The other kinds never fantasise.
    pub fn default_for(kind: AlgorithmKind) -> Self {
        match kind {
            AlgorithmKind::Ei => Fantasy::KrigingBeliever,
            _ => Fantasy::ConstantLiar,
        }
    }

    /// The word a label gains where this fantasy is not its kind's default.
    fn name(self) -> &'static str {
        match self {
            Fantasy::ConstantLiar => "liar",
            Fantasy::KrigingBeliever => "believer",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "constant-liar" => Some(Fantasy::ConstantLiar),
            "kriging-believer" => Some(Fantasy::KrigingBeliever),
            _ => None,
        }
    }
}

/// How EI is scored where an agent maximises it (`ei` key: kind = "ei", and consensus and
/// fedgp with acquisition = "ei"). The three share the maximiser's candidates and starts;
/// they differ in what the search climbs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EiForm {
    /// EI over the best standardised observation (BoTorch's ExpectedImprovement, best_f =
    /// Y.max()). Where EI underflows to 0 the search has neither order nor gradient.
    Plain,
    /// ln EI over the same incumbent (Ament et al., NeurIPS 2023): the same maximiser in
    /// exact arithmetic, with a finite value and gradient everywhere.
    Log,
    /// ln EI over the best posterior mean at the observed inputs, the plug-in incumbent for
    /// noisy observations (Vazquez, Villemonteix, Sidorkiewicz and Walter 2008; Picheny,
    /// Wagner and Ginsbourger 2013's review), which a lucky noisy draw does not raise.
    /// Not BoTorch's Monte-Carlo qLogNEI.
    LogNoisy,
}

impl EiForm {
    /// Unwritten: the form measured best for the single-agent baselines (docs/results.md,
    /// "Log-EI").
    pub const DEFAULT: EiForm = EiForm::Log;
    pub const NAMES: &'static str = "\"log\", \"log-noisy\", \"plain\"";

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "plain" => Some(EiForm::Plain),
            "log" => Some(EiForm::Log),
            "log-noisy" => Some(EiForm::LogNoisy),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            EiForm::Plain => "plain",
            EiForm::Log => "log",
            EiForm::LogNoisy => "log-noisy",
        }
    }

    /// "EI", with the form's name where it is not the default (kind ei's label, and the
    /// frameworks' with acquisition = "ei").
    pub fn label(self) -> String {
        match self {
            EiForm::DEFAULT => "EI".to_string(),
            form => format!("EI {}", form.name()),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAlgorithm {
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
    ei: Option<String>,
    fantasy: Option<String>,
    start: Option<String>,
    shared: Option<String>,
    // The survey's frameworks' keys (spec/frameworks.rs).
    acquisition: Option<String>,
    schedule: Option<String>,
    noise: Option<f64>,
    eta: Option<f64>,
    density: Option<String>,
    width: Option<f64>,
    rounds: Option<i64>,
    tolerance: Option<f64>,
    global: Option<String>,
    power: Option<String>,
    local_steps: Option<i64>,
    step_size: Option<f64>,
    gamma: Option<f64>,
    fraction: Option<f64>,
    shared_points: Option<i64>,
    group: Option<i64>,
    own_weight: Option<f64>,
    rejection: Option<String>,
    solver: Option<String>,
    pace: Option<String>,
    release: Option<String>,
    release_after: Option<i64>,
}

/// What an algorithm's table falls back on: the spec's own settings.
pub(super) struct Defaults<'a> {
    pub surrogate: &'a SurrogateSpec,
    pub features: usize,
    pub p_t: &'a Schedule,
    pub p1: bool,
    pub messages: MessageMode,
    pub server: &'a RawServer,
    pub iterations: usize,
    pub domain_size: Option<usize>,
    pub total_agents: usize,
    /// A function or a command objective: the outputs' scale is the user's, not a paper's
    /// (`ObjectiveKind::is_open`).
    pub open_objective: bool,
}

/// Every `[[algorithm]]` table checked, in order; labels unique.
pub(super) fn check_algorithms(
    c: &Check,
    raw: Vec<RawAlgorithm>,
    d: &Defaults,
) -> Result<Vec<AlgorithmSpec>> {
    let mut algorithms: Vec<AlgorithmSpec> = Vec::new();
    for (i, ra) in raw.into_iter().enumerate() {
        let a = check_algorithm(c, i, ra, d)?;
        if algorithms.iter().any(|b| b.label == a.label) {
            return Err(c.err(
                &format!("algorithm[{i}].label"),
                format!(
                    "label \"{}\" is used twice; give each algorithm a distinct label",
                    a.label
                ),
            ));
        }
        algorithms.push(a);
    }
    Ok(algorithms)
}

/// `algorithm[i]`: its kind, its keys (each refused where its kind does not read it) and the
/// spec's defaults for the rest.
fn check_algorithm(c: &Check, i: usize, ra: RawAlgorithm, d: &Defaults) -> Result<AlgorithmSpec> {
    let (surrogate, features, fed_messages) = (d.surrogate, d.features, d.messages);
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
    refuse_foreign_keys(c, i, kind, &ra, fed_messages)?;
    let ei = c.choice(
        &key("ei"),
        ra.ei.as_deref(),
        EiForm::DEFAULT,
        "EI form",
        EiForm::NAMES,
        EiForm::parse,
    )?;
    let framework = frameworks::parse(c, &ra.kind, &framework_keys(&ra, kind, ei), &key)?;
    let fantasy = c.choice(
        &key("fantasy"),
        ra.fantasy.as_deref(),
        Fantasy::default_for(kind),
        "fantasy",
        Fantasy::NAMES,
        Fantasy::parse,
    )?;
    let beta = match ra.beta {
        Some(b) if !(b.is_finite() && b > 0.0 && b <= 1e6) => {
            return Err(c.err(&key("beta"), format!("must be in (0, 1e6], got {b}")));
        }
        b => b,
    };
    let own_sample = c.sampler(
        &key("own_sample"),
        ra.own_sample.as_deref(),
        surrogate.own.sampler,
    )?;
    let MetaKeys {
        incumbent,
        start,
        samples,
        bandwidth,
    } = meta_keys(c, &key, &ra)?;
    let m = c.int(
        &key("features"),
        ra.features,
        features as i64,
        1,
        MAX_FEATURES,
    )?;
    let server = algorithm_server(c, &key("server"), kind, &ra, d, m)?;
    let shared = shared_model(
        c,
        &key("shared"),
        ra.shared.as_deref(),
        kind,
        server.as_ref(),
        surrogate,
    )?;
    let p_t = checked_p_t(c, &key("p_t"), &ra, d)?;
    let messages = c.messages(&key("messages"), ra.messages.as_deref(), fed_messages)?;
    let label = ra
        .label
        .clone()
        .map(|l| checked_label(c, &key("label"), l))
        .transpose()?;
    let pace = checked_pace(c, &key("pace"), &ra, kind)?;
    let release = checked_release(c, &key, &ra, kind, pace)?;
    let mut spec = AlgorithmSpec {
        kind,
        label: String::new(),
        features: m,
        p_t,
        messages,
        server,
        samples,
        bandwidth,
        incumbent,
        own_sample,
        beta,
        ei,
        fantasy,
        pace,
        release,
        framework,
        server_inline: ra
            .server
            .as_ref()
            .map(RawServer::set_keys)
            .unwrap_or_default(),
        start,
        shared,
    };
    spec.label = label.unwrap_or_else(|| default_label(d, &spec));
    Ok(spec)
}

/// DP-FTS-DE's server: its own `server = { .. }` keys over `[server]`'s; no other kind has one.
fn algorithm_server(
    c: &Check,
    key: &str,
    kind: AlgorithmKind,
    ra: &RawAlgorithm,
    d: &Defaults,
    features: usize,
) -> Result<Option<ServerSpec>> {
    Ok(match kind {
        AlgorithmKind::DpFtsDe => Some(check_server(
            c,
            key,
            ra.server.clone().unwrap_or_default().or(d.server),
            ra.server.as_ref(),
            &ServerContext {
                grid: d.domain_size,
                agents: d.total_agents,
                features,
                open_objective: d.open_objective,
            },
        )?),
        _ => None,
    })
}

/// The algorithm's own p_t schedule (`p_t`, `p1_equals_p2`), each defaulting to
/// `[federation]`'s.
fn checked_p_t(c: &Check, key: &str, ra: &RawAlgorithm, d: &Defaults) -> Result<Schedule> {
    let p1_equals_p2 = ra.p1_equals_p2.unwrap_or(d.p1);
    Ok(match ra.p_t {
        Some(ref v) => c.schedule(key, Some(v), p1_equals_p2, d.iterations)?,
        None => Schedule {
            p1_equals_p2,
            ..d.p_t.clone()
        },
    })
}

/// The keys of the meta-learners and the FTS family's start, checked.
struct MetaKeys {
    incumbent: TafIncumbent,
    start: Option<Start>,
    samples: usize,
    bandwidth: f64,
}

fn meta_keys(c: &Check, key: &dyn Fn(&str) -> String, ra: &RawAlgorithm) -> Result<MetaKeys> {
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
    let start = c.choice(
        &key("start"),
        ra.start.as_deref(),
        None,
        "start",
        "\"federation-best\", \"mean-of-bests\"",
        |s| Start::parse(s).map(Some),
    )?;
    let samples = c.int(&key("samples"), ra.samples, 100, 1, 100_000)?;
    let bandwidth = ra.bandwidth.unwrap_or(0.1);
    if !(bandwidth > 0.0 && bandwidth <= 10.0) {
        return Err(c.err(
            &key("bandwidth"),
            format!("must be in (0, 10], got {bandwidth}"),
        ));
    }
    Ok(MetaKeys {
        incumbent,
        start,
        samples,
        bandwidth,
    })
}

/// Whether `kind` at `pace` runs on the asynchronous server (`has_asynchronous_server`).
fn asynchronous_server(pace: super::Pace, kind: AlgorithmKind) -> bool {
    pace == super::Pace::Asynchronous && !kind.has_senders()
}

/// The kinds with a server step that takes whatever messages are fresh, as messages name them.
const ASYNCHRONOUS_SERVER_KINDS: &str =
    "\"dp-fts-de\", \"consensus\", \"cgp\", \"design-density\", \"fmtbo\", \"fedgp\"";

/// `pace`: the asynchronous form needs a server step that takes whatever has arrived
/// (DP-FTS-DE's and the frameworks' that have one) or targets that wait for nobody (the
/// target-and-senders forms: a target's messages come from senders, never from another
/// target, so each target keeps its own clock); the single-agent kinds have no rounds to wait
/// for.
fn checked_pace(
    c: &Check,
    key: &str,
    ra: &RawAlgorithm,
    kind: AlgorithmKind,
) -> Result<super::Pace> {
    let pace = c.choice(
        key,
        ra.pace.as_deref(),
        super::Pace::Synchronous,
        "pace",
        super::Pace::NAMES,
        super::Pace::parse,
    )?;
    if pace == super::Pace::Asynchronous && kind.is_single_agent() {
        return Err(c.err(
            key,
            format!(
                "\"asynchronous\" applies to kinds whose server takes whatever messages are fresh ({ASYNCHRONOUS_SERVER_KINDS}) and to the target-and-senders forms (\"fts\", \"rgpe\", \"taf\"); {} keeps synchronous rounds",
                ra.kind
            ),
        ));
    }
    Ok(pace)
}

/// `release` and `release_after`: an asynchronous server's rule, so only at `pace =
/// "asynchronous"` on a kind with a server step; `release_after` only for "arrivals".
fn checked_release(
    c: &Check,
    key: &dyn Fn(&str) -> String,
    ra: &RawAlgorithm,
    kind: AlgorithmKind,
    pace: super::Pace,
) -> Result<super::Release> {
    let arrivals = c.choice(
        &key("release"),
        ra.release.as_deref(),
        false,
        "release rule",
        super::Release::NAMES,
        |s| match s {
            "periodic" => Some(false),
            "arrivals" => Some(true),
            _ => None,
        },
    )?;
    let server_step = asynchronous_server(pace, kind);
    for (k, set) in [
        ("release", ra.release.is_some()),
        ("release_after", ra.release_after.is_some()),
    ] {
        if set && !server_step {
            return Err(c.err(
                &key(k),
                format!(
                    "applies to an asynchronous server: pace = \"asynchronous\" on one of {ASYNCHRONOUS_SERVER_KINDS}"
                ),
            ));
        }
    }
    if !arrivals {
        if ra.release_after.is_some() {
            return Err(c.err(
                &key("release_after"),
                "counts returned evaluations for release = \"arrivals\"; a periodic server releases every clock.period_s",
            ));
        }
        return Ok(super::Release::Periodic);
    }
    let after = ra
        .release_after
        .map(|m| c.int(&key("release_after"), Some(m), m, 1, 1_000_000))
        .transpose()?;
    Ok(super::Release::Arrivals { after })
}

/// The framework keys of `ra` for `frameworks::parse` (samples, beta and ei only for the
/// frameworks: the other kinds that read them check them here).
fn framework_keys(ra: &RawAlgorithm, kind: AlgorithmKind, ei: EiForm) -> frameworks::RawFramework {
    frameworks::RawFramework {
        acquisition: ra.acquisition.clone(),
        schedule: ra.schedule.clone(),
        noise: ra.noise,
        eta: ra.eta,
        samples: ra.samples.filter(|_| kind.is_framework()),
        beta: ra.beta.filter(|_| kind.is_framework()),
        ei: ra.ei.as_ref().map(|_| ei).filter(|_| kind.is_framework()),
        density: ra.density.clone(),
        width: ra.width,
        rounds: ra.rounds,
        tolerance: ra.tolerance,
        global: ra.global.clone(),
        power: ra.power.clone(),
        local_steps: ra.local_steps,
        step_size: ra.step_size,
        gamma: ra.gamma,
        fraction: ra.fraction,
        shared_points: ra.shared_points,
        group: ra.group,
        own_weight: ra.own_weight,
        solver: ra.solver.clone(),
        rejection: ra.rejection.clone(),
    }
}

/// A written label: it names CSV rows and a command's FBO_SCOPE, so control characters (a NUL
/// cannot be passed in the environment), commas and quotes are refused.
fn checked_label(c: &Check, key: &str, l: String) -> Result<String> {
    if l.is_empty() || l.contains([',', '"']) || l.chars().any(|ch| ch.is_control()) {
        return Err(c.err(
            key,
            format!(
                "must be non-empty without commas, quotes, newlines or other control characters, got {l:?}"
            ),
        ));
    }
    Ok(l)
}

/// `shared`: the model behind the random-feature messages, agreed or pinned.
fn shared_model(
    c: &Check,
    key: &str,
    written: Option<&str>,
    kind: AlgorithmKind,
    server: Option<&ServerSpec>,
    surrogate: &SurrogateSpec,
) -> Result<crate::spec::SharedModel> {
    // Unwritten, the spec's default holds for the server form (FTS, FTS-DE, DP-FTS-DE),
    // where it was measured (docs/results.md, "Agreed shared models" and "... under DP");
    // fts, rgpe and taf keep the pinned model. It agrees only where the agreement is built
    // in one process and across machines alike: without secure aggregation (whose fits would
    // travel beside the masked vector) and, if private, with one rate for every round (not
    // random allocation, which refuses it).
    let agreement_built = server.is_none_or(|s| {
        s.secure.is_none()
            && s.dp.as_ref().is_none_or(|dp| {
                !matches!(dp.sampling, crate::privacy::Sampling::Allocation { .. })
            })
    });
    let measured_form = kind == AlgorithmKind::DpFtsDe && agreement_built;
    let default_shared = if surrogate.shared_written || measured_form {
        surrogate.shared
    } else {
        crate::spec::SharedModel::Fixed
    };
    c.choice(
        key,
        written,
        default_shared,
        "shared model",
        crate::spec::SharedModel::NAMES,
        crate::spec::SharedModel::parse,
    )
}

/// A key of `algorithm[i]` that its kind does not read is refused, naming the kinds that do.
fn refuse_foreign_keys(
    c: &Check,
    i: usize,
    kind: AlgorithmKind,
    ra: &RawAlgorithm,
    fed_messages: MessageMode,
) -> Result<()> {
    refuse_federation_keys(c, i, kind, ra, fed_messages)?;
    refuse_acquisition_keys(c, i, kind, ra)
}

/// The keys of the random-feature messages and the server (features, p_t, messages,
/// p1_equals_p2, server, shared), on kinds that send no such messages or no such server.
fn refuse_federation_keys(
    c: &Check,
    i: usize,
    kind: AlgorithmKind,
    ra: &RawAlgorithm,
    fed_messages: MessageMode,
) -> Result<()> {
    let key = |k: &str| format!("algorithm[{i}].{k}");
    if (kind.is_single_agent() || kind.is_framework())
        && (ra.features.is_some()
            || ra.p_t.is_some()
            || ra.messages.is_some()
            || ra.p1_equals_p2.is_some()
            || ra.server.is_some())
    {
        let why = match kind {
            AlgorithmKind::Random => "Random search uses no federation".to_string(),
            AlgorithmKind::Ei => "EI uses no federation".to_string(),
            AlgorithmKind::Ucb => "UCB uses no federation".to_string(),
            AlgorithmKind::Ts => "TS uses no federation".to_string(),
            _ => format!("{} shares no random-feature messages", ra.kind),
        };
        return Err(c.err(
            &key("kind"),
            format!("{why}: features, p_t, p1_equals_p2, messages and server do not apply to it"),
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
    if kind != AlgorithmKind::DpFtsDe && ra.server.is_some() {
        return Err(c.err(&key("server"), "applies only to kind = \"dp-fts-de\""));
    }
    let messages_on_features = matches!(
        kind,
        AlgorithmKind::Fts | AlgorithmKind::DpFtsDe | AlgorithmKind::Rgpe | AlgorithmKind::Taf
    );
    if ra.shared.is_some() && !messages_on_features {
        return Err(c.err(
            &key("shared"),
            "applies only to kinds whose messages are random-feature weights: \"fts\", \"dp-fts-de\", \"rgpe\", \"taf\"",
        ));
    }
    Ok(())
}

/// The keys of one kind's acquisition (ei, beta, own_sample, samples, bandwidth,
/// incumbent, start), on kinds that do not read them.
fn refuse_acquisition_keys(
    c: &Check,
    i: usize,
    kind: AlgorithmKind,
    ra: &RawAlgorithm,
) -> Result<()> {
    let key = |k: &str| format!("algorithm[{i}].{k}");
    if ra.ei.is_some()
        && kind != AlgorithmKind::Ei
        && !frameworks::keys_of(&ra.kind).contains(&"ei")
    {
        return Err(c.err(
            &key("ei"),
            "applies only to kind = ei, consensus, fedgp, fmtbo or design-density",
        ));
    }
    if ra.fantasy.is_some() && !matches!(kind, AlgorithmKind::Ei | AlgorithmKind::Ucb) {
        return Err(c.err(
            &key("fantasy"),
            "applies only to kind = ei or ucb (a TS batch draws independent samples; the other kinds have no batch)",
        ));
    }
    if ra.beta.is_some()
        && !matches!(kind, AlgorithmKind::Ucb)
        && !frameworks::keys_of(&ra.kind).contains(&"beta")
    {
        return Err(c.err(
            &key("beta"),
            "applies only to kind = ucb, consensus, cgp, design-density or fedgp",
        ));
    }
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
    if matches!(kind, AlgorithmKind::Rgpe | AlgorithmKind::Taf) && ra.own_sample.is_some() {
        return Err(c.err(
            &key("own_sample"),
            "RGPE and TAF use the exact GP posterior, not a sample; own_sample applies to ts, fts and dp-fts-de",
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
    if kind != AlgorithmKind::Taf && ra.incumbent.is_some() {
        return Err(c.err(&key("incumbent"), "applies only to kind = \"taf\""));
    }
    if ra.start.is_some() && kind != AlgorithmKind::Ts {
        return Err(c.err(&key("start"), "applies only to kind = \"ts\""));
    }
    Ok(())
}

/// An algorithm's name when `label` is unwritten: its kind and what departs from the
/// defaults, so that the algorithms of a spec that sets nothing keep their plain names.
fn default_label(d: &Defaults, a: &AlgorithmSpec) -> String {
    let base = match (a.kind, a.server.as_ref()) {
        (AlgorithmKind::DpFtsDe, Some(sv)) => server_label(sv),
        (AlgorithmKind::Fts, _) => format!("FTS M={}", a.features),
        (AlgorithmKind::Rgpe, _) => format!("RGPE M={}", a.features),
        (AlgorithmKind::Taf, _) => format!("TAF M={}", a.features),
        (AlgorithmKind::Random, _) => "Random".to_string(),
        (kind, _) if kind.is_framework() => a.framework.label(),
        (AlgorithmKind::Ei, _) => a.ei.label(),
        (AlgorithmKind::Ucb, _) => match a.beta {
            Some(b) if b < 1e-3 => format!("UCB beta={b:e}"),
            Some(b) => format!("UCB beta={b}"),
            None => "UCB".to_string(),
        },
        _ => match a.start {
            Some(Start::FederationBest) => "TS from federation best".to_string(),
            Some(Start::MeanOfBests) => "TS from mean of bests".to_string(),
            None => "TS".to_string(),
        },
    };
    let own = (a.own_sample != d.surrogate.own.sampler).then(|| a.own_sample.name());
    let fantasy = (a.fantasy != Fantasy::default_for(a.kind)).then(|| a.fantasy.name());
    [Some(base.as_str()), own, fantasy]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ")
}
