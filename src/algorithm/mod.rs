//! Algorithms behind one interface: propose the next queries, take their observations.
//! The runner drives the loop (argmin's executor/solver split), so an algorithm never sees
//! files, progress bars or clocks.

pub mod agent;
pub mod cgp;
pub mod consensus;
pub mod density;
pub mod dp_fts_de;
pub mod fedgp;
pub mod fmtbo;
pub mod fts;
pub mod meta;
pub mod relay;
pub mod single;

use crate::error::Result;
use crate::objective::{Landscape, Point, Region};
use crate::server::RoundRecord;
use crate::spec::{AlgorithmKind, AlgorithmSpec, Spec};
use std::fmt;
use std::sync::Arc;

/// Where a query came from, as written to the trace's `source` column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Init,
    /// The agent's own Thompson sample.
    Own,
    /// Another agent's message omega_n.
    Agent(usize),
    /// The server's aggregated vector (DP-FTS-DE).
    Server,
    /// The maximiser of an acquisition function (RGPE, TAF, EI, UCB).
    Acquisition,
    /// A uniform draw (random search).
    Random,
    /// A reference's start (`start` on TS): the configuration other agents point to.
    Reference,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Init => write!(f, "init"),
            Source::Own => write!(f, "own"),
            Source::Agent(a) => write!(f, "{a}"),
            Source::Server => write!(f, "server"),
            Source::Acquisition => write!(f, "acquisition"),
            Source::Random => write!(f, "random"),
            Source::Reference => write!(f, "reference"),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    pub agent: usize,
    pub point: Point,
    pub source: Source,
}

/// Where an agent's initial points are drawn from, when not the whole space.
pub enum InitArea<'a> {
    /// Grid points (by index), drawn without replacement.
    Points(&'a [usize]),
    /// A box inside [0,1]^D, drawn uniformly.
    Region(&'a Region),
}

/// Everything an algorithm may read about its run.
pub struct RunContext<'a> {
    pub spec: &'a Spec,
    pub algorithm: &'a AlgorithmSpec,
    pub run: usize,
    pub landscape: Arc<Landscape>,
    /// Senders' states shared by the algorithms of a spec (None: compute them here).
    pub senders: Option<&'a agent::SenderCache>,
    /// Whose data this algorithm object may touch.
    pub place: Place,
}

/// Where an algorithm object runs, which decides whose objective it may evaluate: every
/// agent's in one process, one agent's at its site of a federation, or none at a
/// federation's server (an FTS sender's history is made where the sender is).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    Simulation,
    Site(usize),
    Server,
}

impl Place {
    pub fn holds(self, agent: usize) -> bool {
        match self {
            Place::Simulation => true,
            Place::Site(a) => a == agent,
            Place::Server => false,
        }
    }
}

impl RunContext<'_> {
    pub fn seed(&self) -> u64 {
        self.spec.seed
    }
}

pub trait Algorithm {
    /// Agents whose queries are traced, in the order `propose` returns them.
    fn targets(&self) -> &[usize];

    /// The next query of every target at BO iteration t >= 1.
    fn propose(&mut self, t: usize) -> Result<Vec<Query>>;

    /// Observations (noisy y) of `queries`, initial points included.
    fn observe(&mut self, queries: &[Query], ys: &[f64]);

    /// Where an agent's initial points are drawn from; None: the whole space.
    fn init_area(&self, _agent: usize) -> Option<InitArea<'_>> {
        None
    }

    /// A point evaluated among agent `agent`'s initial points in place of the last random
    /// one (a reference's start); None: all are random.
    fn warm_start(&self, _agent: usize) -> Option<Point> {
        None
    }

    /// Parameters each other agent has sent to the target (or server) by agent `agent`'s
    /// iteration t: the communication cost the FTS paper's Fig. 2 puts on its horizontal axis.
    /// In rounds every agent has sent alike; at their own pace (`crate::run::pace`) what an
    /// agent sent depends on the releases it took part in, so the count is per agent.
    fn params_sent(&self, _agent: usize, _t: usize) -> u64 {
        0
    }

    /// What the central server did in each round, for algorithms that have one.
    fn server_records(&self) -> &[RoundRecord] {
        &[]
    }

    /// What agent `agent`'s model believed when it chose its last query (`output.beliefs`);
    /// None where no model chose it (random search) or the algorithm keeps none.
    fn belief(&self, _agent: usize) -> Option<agent::Belief> {
        None
    }

    /// The algorithm split into what each agent does on its own data and what the server does
    /// with their messages, for agents on machines of their own (`crate::federation`); None:
    /// the algorithm runs only in one process.
    fn federated(&mut self) -> Option<&mut dyn Federated> {
        None
    }

    /// The algorithm as agents that choose a query while earlier ones are still being
    /// evaluated (`parallel = k`, `crate::run::pending`); None: every query waits for the last.
    fn pending(&mut self) -> Option<&mut dyn Pending> {
        None
    }
}

/// Agents that keep several evaluations running: each chooses its next query from what has
/// returned, knowing which points are still being evaluated.
pub trait Pending {
    /// Agent `agent`'s query t (its t-th after the initial points), with `pending` its
    /// queries still being evaluated, oldest first.
    fn propose_pending(&mut self, agent: usize, t: usize, pending: &[Point]) -> Result<Query>;
}

/// The messages that arrived, each with its sender, in agent order.
pub fn senders(messages: &[Option<ndarray::Array1<f64>>]) -> Vec<(usize, &ndarray::Array1<f64>)> {
    messages
        .iter()
        .enumerate()
        .filter_map(|(a, m)| m.as_ref().map(|m| (a, m)))
        .collect()
}

/// What one agent receives from the server before iteration t.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Received {
    /// A point it may query (DP-FTS-DE: the aggregated vectors' argmax; consensus: its row of
    /// W(t) applied to the candidates); None: it goes on with its own choice.
    pub point: Option<Point>,
    /// Numbers the method shares with it (design densities: the others' centres); empty: none.
    pub shared: Vec<f64>,
}

/// What the server sends the agents before iteration t: the same to all (DP-FTS-DE), each
/// its own (consensus, design densities), or nothing (agents alone, a privacy budget spent).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Broadcast {
    /// Everyone's, when `to_each` is empty.
    pub all: Received,
    /// Per agent, what it alone receives.
    pub to_each: Vec<Received>,
}

impl Broadcast {
    /// Nothing: every agent goes on alone.
    pub fn none() -> Self {
        Broadcast::default()
    }

    /// `point` for every agent.
    pub fn to_all(point: Point) -> Self {
        Broadcast {
            all: Received {
                point: Some(point),
                shared: Vec::new(),
            },
            to_each: Vec::new(),
        }
    }

    /// Each agent its own: the messages that arrived from the other agents `with(k, j)`
    /// admits for agent k, one after the other in agent order (design densities: every other;
    /// CGP-UCB: those of k's sharing group).
    pub fn others(
        messages: &[Option<ndarray::Array1<f64>>],
        with: impl Fn(usize, usize) -> bool,
    ) -> Self {
        let to_each = (0..messages.len())
            .map(|k| Received {
                point: None,
                shared: messages
                    .iter()
                    .enumerate()
                    .filter(|&(j, _)| j != k && with(k, j))
                    .filter_map(|(_, m)| m.as_ref())
                    .flat_map(|m| m.iter().copied())
                    .collect(),
            })
            .collect();
        Broadcast {
            all: Received::default(),
            to_each,
        }
    }

    /// What agent `agent` receives (nothing if the server sends it nothing).
    pub fn for_agent(&self, agent: usize) -> &Received {
        static NOTHING: Received = Received {
            point: None,
            shared: Vec::new(),
        };
        if self.to_each.is_empty() {
            &self.all
        } else {
            self.to_each.get(agent).unwrap_or(&NOTHING)
        }
    }
}

/// One round of a federated algorithm in three steps that may run on different machines:
/// every agent's `message`, the server's `broadcast` of what arrived, every agent's `choose`.
/// `Algorithm::propose` of such an algorithm is exactly these three steps in one process, so
/// a real federation gives the simulation's numbers.
pub trait Federated: Send {
    /// The message agent `agent` sends before iteration t (the server round t - 1), drawn
    /// from its own data and streams; None: it sends nothing this round. An error is the
    /// agent's own evaluation failing (an FTS sender's step): its site reports it.
    fn message(&mut self, agent: usize, t: usize) -> Result<Option<ndarray::Array1<f64>>>;

    /// Whether agent `agent` is to send a message before iteration t (the server notes one
    /// that does not); every agent every round unless the method says otherwise.
    fn sends(&self, _agent: usize, _t: usize) -> bool {
        true
    }

    /// The agents that take part across machines: those that query (`Algorithm::targets`)
    /// and those that only send (FTS's senders).
    fn members(&self, targets: &[usize]) -> Vec<usize> {
        targets.to_vec()
    }

    /// The server's round t - 1 on the messages that arrived (`None`: did not, whatever the
    /// reason; a dropped message is accounted as the participation model's).
    fn broadcast(
        &mut self,
        t: usize,
        messages: &[Option<ndarray::Array1<f64>>],
    ) -> Result<Broadcast>;

    /// Agent `agent`'s query at iteration t, given what it received of the server's
    /// broadcast (`Broadcast::for_agent`).
    fn choose(&mut self, agent: usize, t: usize, received: &Received) -> Result<Query>;

    /// Agent `agent`'s queries of iteration t across machines, in the order the trace numbers
    /// them: `choose`'s one, or with `batch = k` the round's k where the kind has a batch
    /// (the single-agent kinds, DP-FTS-DE), the same k `Algorithm::propose` gives the agent.
    fn choose_round(&mut self, agent: usize, t: usize, received: &Received) -> Result<Vec<Query>> {
        Ok(vec![self.choose(agent, t, received)?])
    }

    /// The length of every message (validated by the server before it aggregates).
    fn message_len(&self) -> usize;

    /// Before the broadcast of round t - 1, a question the server asks every agent whose
    /// message arrived, and whose answers it needs to broadcast (FedGP: one communication
    /// round of its solver), given their answers to this round's questions so far
    /// (`answers[i][agent]`, None: no answer); None: it has what it needs. Asked again after
    /// each answered question, so the same answers give the same questions.
    fn question(
        &mut self,
        _t: usize,
        _messages: &[Option<ndarray::Array1<f64>>],
        _answers: &[Vec<Option<Vec<f64>>>],
    ) -> Result<Option<Vec<f64>>> {
        Ok(None)
    }

    /// Agent `agent`'s answer to the server's `question` of round t - 1, from its own data.
    fn answer(&mut self, agent: usize, _t: usize, _question: &[f64]) -> Result<Vec<f64>> {
        Err(crate::error::FboError::Run(format!(
            "agent {agent}: this algorithm asks no questions"
        )))
    }

    /// At their own pace (`crate::run::pace`): whether an agent keeps choosing with the
    /// server's latest release until a newer one comes (what it carries is information the
    /// agent's model uses: densities, offers, hyperparameters), rather than using it once and
    /// then choosing on its own (a point to query, which a fast agent must not query twice).
    fn release_reusable(&self) -> bool {
        false
    }

    /// Under secure aggregation (`server.secure`), the plan of the server round before
    /// iteration t from which agents' messages are present, and the round's threshold; None
    /// for an algorithm without it (its messages travel in the clear, to `broadcast`).
    fn secure_plan(
        &mut self,
        _t: usize,
        _present: &[bool],
    ) -> Option<(crate::server::RoundPlan, usize)> {
        None
    }

    /// Iteration t's broadcast from the secure round `plan` planned: the survivors' sum in
    /// fixed point (None: the round yielded none) and the cohort members whose vector is not
    /// in it.
    fn secure_release(
        &mut self,
        _t: usize,
        _plan: &crate::server::RoundPlan,
        _sum: Option<&[u64]>,
        _missing: Vec<usize>,
    ) -> Result<Broadcast> {
        Err(crate::error::FboError::Run(
            "this algorithm has no secure aggregation".into(),
        ))
    }
}

/// What `build` would refuse for this objective, found before anything runs or is written
/// (and by `fbo validate`).
pub fn check(spec: &crate::spec::Spec, space: &crate::objective::Space) -> Result<()> {
    single::check(spec, space)?;
    check_design(spec, space)?;
    for alg in &spec.algorithms {
        if alg.kind == AlgorithmKind::DpFtsDe {
            dp_fts_de::check(spec, alg, space)?;
        }
    }
    Ok(())
}

pub fn build(ctx: &RunContext) -> Result<Box<dyn Algorithm>> {
    Ok(match ctx.algorithm.kind {
        AlgorithmKind::Ts => Box::new(single::Single::new(ctx, single::Rule::Thompson)),
        AlgorithmKind::Random => Box::new(single::Single::new(ctx, single::Rule::Random)),
        AlgorithmKind::Ei => Box::new(single::Single::new(ctx, single::Rule::Ei(ctx.algorithm.ei))),
        AlgorithmKind::Ucb => Box::new(single::Single::new(
            ctx,
            single::Rule::Ucb {
                beta: ctx.algorithm.beta,
            },
        )),
        AlgorithmKind::Fts => Box::new(fts::Fts::new(ctx)?),
        AlgorithmKind::DpFtsDe => {
            let server = ctx
                .algorithm
                .server
                .as_ref()
                .expect("dp-fts-de specs carry server settings");
            Box::new(dp_fts_de::DpFtsDe::new(ctx, server)?)
        }
        AlgorithmKind::Rgpe => Box::new(meta::MetaBo::new(
            ctx,
            meta::Weighting::Rgpe {
                samples: ctx.algorithm.samples,
            },
        )?),
        AlgorithmKind::Taf => Box::new(meta::MetaBo::new(
            ctx,
            meta::Weighting::Taf {
                bandwidth: ctx.algorithm.bandwidth,
                incumbent: ctx.algorithm.incumbent,
            },
        )?),
        AlgorithmKind::Consensus => Box::new(consensus::Consensus::new(ctx)),
        AlgorithmKind::Cgp => Box::new(cgp::Cgp::new(ctx)),
        AlgorithmKind::DesignDensity => Box::new(density::DesignDensity::new(ctx)),
        AlgorithmKind::FedGp => Box::new(fedgp::FedGp::new(ctx)),
        AlgorithmKind::Fmtbo => Box::new(fmtbo::Fmtbo::new(ctx)),
    })
}

/// The initial design fits the objective: given points name its hyperparameters, lie in its
/// space (on its grid) and cover every agent that acts in every run; a Sobol design fits the
/// sequence's dimensions and length.
fn check_design(spec: &crate::spec::Spec, space: &crate::objective::Space) -> Result<()> {
    use crate::design::DesignKind;
    let design = &spec.initial_design;
    if let Some(given) = &design.given {
        let every = spec.algorithms.iter().any(|a| a.kind.every_agent_acts());
        let agents: Vec<usize> = if every {
            (0..spec.total_agents()).collect()
        } else {
            spec.targets().to_vec()
        };
        for run in 0..spec.runs {
            for &a in &agents {
                given.points(space, run, a)?;
            }
        }
    }
    if design.kind == DesignKind::Sobol {
        let count = if design.across_agents {
            spec.total_agents()
        } else {
            1
        };
        let (d, n) = (space.dim(), spec.initial_points * count);
        if d > 256 || n > 1 << 16 {
            return Err(crate::error::FboError::spec(
                &spec.path,
                "initial_design",
                format!(
                    "a Sobol design supports up to 256 dimensions and 65536 points, here {d} dimensions and {n} points; use \"lhs\""
                ),
            ));
        }
    }
    Ok(())
}
