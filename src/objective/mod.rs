//! Objectives: a search space (a finite grid of [0,1]^D, or the continuous box of named
//! hyperparameters; `space`) and an evaluator giving every agent's noiseless function on it:
//! values computed in advance on a grid (synthetic draws, response tables), computed at each
//! query (closed-form functions, live model training), memoised per (agent, point), or
//! measured by the user's command (or reported by hand), journaled per request and point.

pub mod columns;
pub mod command;
pub mod function;
pub mod journal;
pub mod model;
pub mod settings;
pub mod space;
pub mod synthetic;
pub mod table;

pub use space::{Codec, Domain, Param, Point, Region, Scale, Space};

use crate::error::{FboError, Result};
pub use crate::objective::journal::Request;
use crate::objective::journal::{Entry, Journal, Outcome};
use command::{CommandRunner, OnFailure};
use ndarray::Array1;
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};
pub use settings::{ObjectiveKind, ObjectiveSpec};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Condvar, Mutex};

/// An evaluator computed at each query.
pub trait Evaluate: Send + Sync {
    /// f of the request's agent at a point (in the maximised orientation) and the seconds
    /// the evaluation took; `raw` holds the point's raw hyperparameter values.
    fn evaluate(&self, req: &Request, point: &Point, raw: &[f64]) -> Result<(f64, f64)>;
}

/// The evaluations of a command objective, or of one evaluated by hand: every result goes
/// through the journal, and one request at one point is evaluated at most once, even when
/// two threads ask for it together.
pub struct Measured {
    /// None: results come only from the journal (`fbo tell`); a miss is pending.
    runner: Option<CommandRunner>,
    codec: Codec,
    on_failure: OnFailure,
    journal: Mutex<Arc<Journal>>,
    in_flight: Mutex<HashSet<crate::objective::journal::Key>>,
    landed: Condvar,
    /// Requests a journal-only objective could not answer, in the order asked.
    pending: Mutex<Vec<(Request, Point)>>,
}

/// How the error of a journal-only objective without a result begins.
pub const PENDING: &str = "no result has been reported yet";

/// (f, seconds) per (agent, coordinates as bits).
type Memo = Mutex<HashMap<(usize, Vec<u64>), (f64, f64)>>;

enum Values {
    /// Every agent's value (and recorded cost) at every grid point, computed in advance.
    Grid {
        values: Vec<Array1<f64>>,
        cost: Option<Vec<Array1<f64>>>,
    },
    /// Computed when first queried; later queries of the same (agent, point) reuse the result,
    /// so algorithms that share initial points train once (without a memo: every query is
    /// computed, as a stand-in that counts them needs).
    Live {
        eval: Box<dyn Evaluate>,
        memo: Option<Memo>,
    },
    /// Measured by a command or reported by hand, through the journal.
    Measured(Box<Measured>),
}

/// One replicate of an objective: the functions of all agents on a shared search space.
pub struct Landscape {
    pub space: Arc<Space>,
    values: Values,
    agents: usize,
    /// max f per agent where known (the grid's maximum; a closed form's); None for live
    /// models, whose regret cannot be computed.
    optimum: Option<Vec<f64>>,
    noise_sd: f64,
    /// metric = sign * f (tables of a minimised metric store f = -metric).
    metric_sign: f64,
}

impl std::fmt::Debug for Landscape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Landscape")
            .field("space", &self.space)
            .field("agents", &self.agents)
            .finish_non_exhaustive()
    }
}

impl Landscape {
    /// Values computed in advance on a grid.
    pub fn new(space: Arc<Space>, values: Vec<Array1<f64>>, noise_var: f64) -> Self {
        debug_assert!(space.grid().is_some(), "values in advance need a grid");
        let optimum = values
            .iter()
            .map(|v| v.iter().cloned().fold(f64::NEG_INFINITY, f64::max))
            .collect();
        Landscape {
            space,
            agents: values.len(),
            values: Values::Grid { values, cost: None },
            optimum: Some(optimum),
            noise_sd: noise_var.sqrt(),
            metric_sign: 1.0,
        }
    }

    /// Values computed at each query by `eval`.
    pub fn live(
        space: Arc<Space>,
        agents: usize,
        eval: Box<dyn Evaluate>,
        optimum: Option<Vec<f64>>,
        noise_var: f64,
    ) -> Self {
        Landscape {
            space,
            agents,
            values: Values::Live {
                eval,
                memo: Some(Mutex::new(HashMap::new())),
            },
            optimum,
            noise_sd: noise_var.sqrt(),
            metric_sign: 1.0,
        }
    }

    /// Every query computed by `eval`, none remembered (a stand-in that counts them).
    pub fn unmemoised(space: Arc<Space>, agents: usize, eval: Box<dyn Evaluate>) -> Self {
        Landscape {
            space,
            agents,
            values: Values::Live { eval, memo: None },
            optimum: None,
            noise_sd: 0.0,
            metric_sign: 1.0,
        }
    }

    pub fn with_costs(mut self, seconds: Vec<Array1<f64>>) -> Self {
        if let Values::Grid { cost, .. } = &mut self.values {
            *cost = Some(seconds);
        }
        self
    }

    pub fn with_metric_sign(mut self, sign: f64) -> Self {
        self.metric_sign = sign;
        self
    }

    /// The grid of a grid objective.
    pub fn grid(&self) -> Option<&Domain> {
        self.space.grid()
    }

    pub fn dim(&self) -> usize {
        self.space.dim()
    }

    /// f in the metric's own units (AUC, validation error).
    pub fn metric(&self, f: f64) -> f64 {
        self.metric_sign * f
    }

    /// f (maximised) of a value on the objective's own scale and direction.
    pub fn f_of_metric(&self, metric: f64) -> f64 {
        self.metric_sign * metric
    }

    pub fn agents(&self) -> usize {
        self.agents
    }

    /// Values measured by a command (`runner`) or reported by hand (None).
    pub fn measured(
        space: Arc<Space>,
        agents: usize,
        runner: Option<CommandRunner>,
        codec: Codec,
        on_failure: OnFailure,
    ) -> Self {
        Landscape {
            space,
            agents,
            values: Values::Measured(Box::new(Measured {
                runner,
                journal: Mutex::new(Arc::new(Journal::in_memory(codec.clone()))),
                codec,
                on_failure,
                in_flight: Mutex::new(HashSet::new()),
                landed: Condvar::new(),
                pending: Mutex::new(Vec::new()),
            })),
            optimum: None,
            noise_sd: 0.0,
            metric_sign: 1.0,
        }
    }

    /// Whether values are measured through a journal (command and hand-evaluated
    /// objectives).
    /// The training seconds the objective records for each grid point (a response table's
    /// `train_seconds`), by agent; None where it records none.
    pub fn recorded_costs(&self) -> Option<&[Array1<f64>]> {
        match &self.values {
            Values::Grid {
                cost: Some(cost), ..
            } => Some(cost),
            _ => None,
        }
    }

    pub fn is_measured(&self) -> bool {
        matches!(self.values, Values::Measured(_))
    }

    /// Makes `journal` the record of this objective's evaluations (a measured objective's;
    /// others keep none).
    pub fn attach_journal(&self, journal: Arc<Journal>) {
        if let Values::Measured(m) = &self.values {
            *m.journal.lock().expect("journal slot") = journal;
        }
    }

    /// The journal of a measured objective.
    pub fn journal(&self) -> Option<Arc<Journal>> {
        match &self.values {
            Values::Measured(m) => Some(m.journal.lock().expect("journal slot").clone()),
            _ => None,
        }
    }

    /// Records a measurement made before the run (`initial_points_file`'s `value`: the
    /// metric as the program prints it) as the result of `req` at `p`, unless the journal
    /// has one already: the evaluation is then never run. Measured objectives only (the spec
    /// refuses told values for the others).
    pub fn tell(&self, req: &Request, p: &Point, metric: f64) -> Result<()> {
        let Values::Measured(m) = &self.values else {
            return Err(FboError::Run(
                "told values are for measured (command and external) objectives".into(),
            ));
        };
        let raw = self.space.raw(p);
        let journal = m.journal.lock().expect("journal slot").clone();
        if journal.get(req, &raw).is_some() {
            return Ok(());
        }
        journal.record(&Entry {
            request: req.clone(),
            x: p.x.clone(),
            params: m.codec.json(&raw),
            status: "ok".into(),
            metric: Some(metric),
            cost_s: 0.0,
            error: None,
        })
    }

    /// The requests a journal-only objective could not answer, taken out.
    pub fn take_pending(&self) -> Vec<(Request, Point)> {
        match &self.values {
            Values::Measured(m) => std::mem::take(&mut *m.pending.lock().expect("pending")),
            _ => Vec::new(),
        }
    }

    /// f of the request's agent at x, noiseless, and the seconds its evaluation cost (the
    /// table's recorded training time, the live model's or command's measured one; 0 for
    /// synthetic functions). f is NaN for a command evaluation that failed and is skipped
    /// (`on_failure = "skip"`): the caller records it and does not observe it.
    pub fn evaluate(&self, req: &Request, p: &Point) -> Result<(f64, f64)> {
        let agent = req.agent;
        match &self.values {
            Values::Grid { values, cost } => {
                let i = p
                    .index
                    .expect("points of a grid objective carry their grid index");
                Ok((values[agent][i], cost.as_ref().map_or(0.0, |c| c[agent][i])))
            }
            Values::Live { eval, memo: None } => eval.evaluate(req, p, &self.space.raw(p)),
            Values::Live {
                eval,
                memo: Some(memo),
            } => {
                let key = (agent, p.x.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
                if let Some(&hit) = memo.lock().expect("memo lock").get(&key) {
                    return Ok(hit);
                }
                // Evaluated outside the lock so agents train in parallel; a point two threads
                // ask for at once is computed twice with the same result.
                let out = eval.evaluate(req, p, &self.space.raw(p))?;
                memo.lock().expect("memo lock").insert(key, out);
                Ok(out)
            }
            Values::Measured(m) => self.measure(m, req, p),
        }
    }

    fn measure(&self, m: &Measured, req: &Request, p: &Point) -> Result<(f64, f64)> {
        // The journal knows evaluations by their raw values (what the program was given).
        let raw = self.space.raw(p);
        let key = crate::objective::journal::key(req, &raw);
        let journal = m.journal.lock().expect("journal slot").clone();
        let as_f = |o: Outcome| match o {
            Outcome::Done(metric, cost) => (self.metric_sign * metric, cost),
            Outcome::Failed(_) => (f64::NAN, 0.0),
        };
        // One evaluation per request and point: wait while another thread runs it.
        {
            let mut flying = m.in_flight.lock().expect("in flight");
            loop {
                if let Some(o) = journal.get(req, &raw) {
                    return Ok(as_f(o));
                }
                if !flying.contains(&key) {
                    flying.insert(key.clone());
                    break;
                }
                flying = m.landed.wait(flying).expect("in flight");
            }
        }
        let result = match &m.runner {
            None => {
                m.pending
                    .lock()
                    .expect("pending")
                    .push((req.clone(), p.clone()));
                Err(FboError::Run(format!(
                    "{PENDING}: agent {} at {} ({}, run {}, iteration {}); `fbo ask` lists the queries waiting for results and `fbo tell` reports them",
                    req.agent,
                    m.codec.describe(&raw),
                    req.scope,
                    req.run,
                    req.iteration
                )))
            }
            Some(runner) => {
                let params = m.codec.json(&raw);
                let mut entry = Entry {
                    request: req.clone(),
                    x: p.x.clone(),
                    params,
                    status: "ok".into(),
                    metric: None,
                    cost_s: 0.0,
                    error: None,
                };
                match runner.evaluate(req, p, &raw) {
                    Ok((metric, cost)) => {
                        entry.metric = Some(metric);
                        entry.cost_s = cost;
                        journal
                            .record(&entry)
                            .map(|_| as_f(Outcome::Done(metric, cost)))
                    }
                    Err(command::Failure::CannotStart(why)) => Err(FboError::Run(
                        command::failure_message(&m.codec, req, &raw, &why),
                    )),
                    Err(command::Failure::Failed(why)) => {
                        let msg = command::failure_message(&m.codec, req, &raw, &why);
                        match m.on_failure {
                            OnFailure::Stop => Err(FboError::Run(msg)),
                            OnFailure::Skip => {
                                entry.status = "failed".into();
                                entry.error = Some(msg);
                                journal.record(&entry).map(|_| (f64::NAN, 0.0))
                            }
                        }
                    }
                }
            }
        };
        m.in_flight.lock().expect("in flight").remove(&key);
        m.landed.notify_all();
        result
    }

    /// f_agent at grid point i of a grid objective (tests, benchmarks, tables).
    pub fn grid_value(&self, agent: usize, i: usize) -> f64 {
        match &self.values {
            Values::Grid { values, .. } => values[agent][i],
            Values::Live { .. } | Values::Measured(_) => {
                let grid = self.grid().expect("grid_value needs a grid");
                self.value(&Request::new("grid", 0, agent, 0), &grid.at(i))
                    .expect("evaluation")
            }
        }
    }

    /// f of the request's agent at x, noiseless.
    pub fn value(&self, req: &Request, p: &Point) -> Result<f64> {
        Ok(self.evaluate(req, p)?.0)
    }

    /// max f_agent, where known.
    pub fn optimum(&self, agent: usize) -> Option<f64> {
        self.optimum.as_ref().map(|o| o[agent])
    }

    /// y = f(x) + N(0, sigma^2) for the request's agent (NaN for a skipped failure).
    pub fn observe<R: Rng + ?Sized>(&self, req: &Request, p: &Point, rng: &mut R) -> Result<f64> {
        Ok(self.noisy(self.value(req, p)?, rng))
    }

    /// f + N(0, sigma^2), one normal draw from `rng`.
    pub fn noisy<R: Rng + ?Sized>(&self, f: f64, rng: &mut R) -> f64 {
        let eps: f64 = StandardNormal.sample(rng);
        f + self.noise_sd * eps
    }
}

/// The objective a command or external spec's journal belongs to (None for the others).
pub fn journal_origin(objective: &ObjectiveSpec) -> Option<crate::objective::journal::Origin> {
    let ObjectiveKind::Command(settings) = &objective.kind else {
        return None;
    };
    Some(crate::objective::journal::Origin {
        command: settings.argv.clone(),
        metric: settings.metric_name.clone(),
        direction: if settings.sign > 0.0 {
            "maximize"
        } else {
            "minimize"
        }
        .into(),
        params: objective.params.iter().map(|p| p.name.clone()).collect(),
        // Only where some are categorical: numeric journals keep the header they had.
        choices: if objective.params.iter().any(Param::is_categorical) {
            objective.params.iter().map(|p| p.choices.clone()).collect()
        } else {
            Vec::new()
        },
    })
}

/// The landscapes of an objective for `total_agents` agents (functions and synthetic draws
/// seeded by the spec's `seed`); run r uses `landscapes[r % len]`.
pub fn landscapes(
    objective: &ObjectiveSpec,
    seed: u64,
    total_agents: usize,
) -> Result<Vec<Arc<Landscape>>> {
    match &objective.kind {
        ObjectiveKind::Table { meta, agents } => {
            Ok(vec![table::landscape(meta, agents, objective.noise_var)?])
        }
        ObjectiveKind::Function {
            function: f,
            bounds,
            heterogeneity,
            inert,
        } => Ok(vec![function::landscape(
            *f,
            bounds,
            *heterogeneity,
            *inert,
            seed,
            objective,
            total_agents,
        )?]),
        ObjectiveKind::Model { settings, agents } => {
            Ok(vec![model::landscape(settings, agents, objective)?])
        }
        ObjectiveKind::Command(_) => Ok(vec![measured_landscape(objective, total_agents, true)]),
        _ => synthetic::landscapes(objective, total_agents, seed),
    }
}

/// The landscape of a command or external spec whose values come from its journal alone
/// (`fbo ask`: a query without a result is pending, never run), or, with `run_command`,
/// from the command where the journal has none.
pub fn measured_landscape(
    objective: &ObjectiveSpec,
    total_agents: usize,
    run_command: bool,
) -> Arc<Landscape> {
    match &objective.kind {
        ObjectiveKind::Command(settings) => {
            let space = objective.space();
            let codec = space.codec();
            let runner = (run_command && settings.argv.is_some())
                .then(|| CommandRunner::new(settings.clone(), codec.clone()));
            Arc::new(
                Landscape::measured(
                    Arc::new(space),
                    total_agents,
                    runner,
                    codec,
                    settings.on_failure,
                )
                .with_metric_sign(settings.sign),
            )
        }
        _ => panic!("measured_landscape of an objective that is not measured"),
    }
}
