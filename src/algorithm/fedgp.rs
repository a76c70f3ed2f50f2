//! Federated GP hyperparameters (survey Sec. III-C1, eq. 9; Yue and Kontar, TPAMI 2024, its
//! ref. [32]): the kernel's hyperparameters are learned jointly on the agents' log marginal
//! likelihoods, by L-BFGS at the server on their sum (each round every agent returns its
//! likelihood and gradient: p + 3 numbers) or by the paper's FedAvg (each agent returns its
//! locally stepped hyperparameters: p + 2 numbers: p length scales, the signal and the noise
//! variance), and every agent then decides on its own data under that shared prior (TS, UCB
//! or EI).
//!
//! Each communication round of a solver is one `Ask` to every agent and their answers, from
//! their own data alone (`answer`); the server combines them (`combine`, `average`). The
//! solvers take the answers from an oracle: in one process the agents answer at once, across
//! machines (`crate::federation`) the server replays the answers it holds and asks the next
//! question when the solver needs one it has not got. Both run the same arithmetic, so a
//! federation writes `fbo run`'s bytes.

use super::agent::{Learner, Rule, observe_all};
use super::consensus::rule_of;
use super::{Algorithm, Broadcast, Federated, Query, Received, RunContext, Source};
use crate::error::{FboError, Result};
use crate::math::optim::{LbfgsOptions, lbfgs_box};
use crate::spec::frameworks::{FedGpSolver, Framework};
use crate::surrogate::gp::{Distances, GpHyper, HyperModel, log_marginal_likelihood};
use ndarray::Array1;
use rayon::prelude::*;

/// One agent's share of eq. 9: its data's distances and its (standardised) targets (its
/// weight p_k = n_k / sum n follows from their number: `Members`).
pub struct Local {
    pub dist: Distances,
    pub y: Array1<f64>,
}

/// What the server asks every agent in one communication round of a solver, in the fit's log
/// coordinates theta (ln l_1..ln l_p, ln s^2, ln s_n^2).
#[derive(Clone, Debug, PartialEq)]
pub enum Ask {
    /// Its log marginal likelihood at theta, with its gradient when `grad` (L-BFGS; FedAvg's
    /// stopping rule asks without).
    Value { theta: Vec<f64>, grad: bool },
    /// FedAvg: its local steps from theta, the prior shared among `k` agents.
    Step { theta: Vec<f64>, k: usize },
}

impl Ask {
    /// On the wire: [0 value, 1 value and gradient, 2 step; k (0 for a value); theta...].
    pub fn to_wire(&self) -> Vec<f64> {
        let (tag, k, theta) = match self {
            Ask::Value { theta, grad } => (f64::from(u8::from(*grad)), 0, theta),
            Ask::Step { theta, k } => (2.0, *k, theta),
        };
        [tag, k as f64]
            .into_iter()
            .chain(theta.iter().copied())
            .collect()
    }

    /// The ask `to_wire` wrote, for a space of `dim` dimensions (theta of 3 or dim + 2
    /// numbers); an error says what is malformed.
    pub fn from_wire(w: &[f64], dim: usize) -> std::result::Result<Ask, String> {
        let (Some(&tag), Some(&k)) = (w.first(), w.get(1)) else {
            return Err(format!("{} numbers, too few for a question", w.len()));
        };
        let theta = w[2..].to_vec();
        if theta.len() != 3 && theta.len() != dim + 2 || theta.iter().any(|v| !v.is_finite()) {
            return Err(format!(
                "hyperparameters of {} numbers (finite, 3 or {} here)",
                theta.len(),
                dim + 2
            ));
        }
        match (tag, k) {
            (0.0, 0.0) | (1.0, 0.0) => Ok(Ask::Value {
                theta,
                grad: tag == 1.0,
            }),
            (2.0, k) if k >= 1.0 && k.fract() == 0.0 && k <= 1e6 => Ok(Ask::Step {
                theta,
                k: k as usize,
            }),
            _ => Err(format!("kind {tag} with {k} agents is no question")),
        }
    }

    fn theta(&self) -> &[f64] {
        match self {
            Ask::Value { theta, .. } | Ask::Step { theta, .. } => theta,
        }
    }

    /// The length of a well-formed answer (a value's may also be empty: no value there).
    fn answer_len(&self) -> usize {
        match self {
            Ask::Value { theta, grad: true } => theta.len() + 1,
            Ask::Value { grad: false, .. } => 1,
            Ask::Step { theta, .. } => theta.len(),
        }
    }
}

/// FedAvg's local work: `steps` gradient-ascent steps of size `eta`.
#[derive(Clone, Copy, Debug)]
pub struct LocalSteps {
    pub steps: usize,
    pub eta: f64,
}

/// An agent's answer to `ask` from its own data: [L_k] or [L_k, gradient...] for a value
/// (empty where its kernel matrix is not positive definite), its stepped theta for a step.
/// FedAvg's local steps ascend L_k = (log p(y_k | theta) + log prior / K) / n_k, clamped to
/// the model's bounds; where its matrix is not positive definite the agent stays put.
pub fn answer(
    local: &Local,
    ask: &Ask,
    model: &HyperModel,
    dim: usize,
    local_steps: LocalSteps,
) -> Vec<f64> {
    match ask {
        Ask::Value { theta, grad } => {
            let h = GpHyper::from_log(model.kernel, model.mean, theta);
            match log_marginal_likelihood(&local.dist, local.y.view(), &h, *grad) {
                Some((lml, g)) if *grad => std::iter::once(lml).chain(g).collect(),
                Some((lml, _)) => vec![lml],
                None => Vec::new(),
            }
        }
        Ask::Step { theta, k } => {
            let bounds = model.bounds.log_box(theta.len() - 2);
            let k = *k as f64;
            let n = local.y.len().max(1) as f64;
            let mut th = theta.clone();
            for _ in 0..local_steps.steps {
                let h = GpHyper::from_log(model.kernel, model.mean, &th);
                let Some((_, g)) = log_marginal_likelihood(&local.dist, local.y.view(), &h, true)
                else {
                    // Not positive definite here: this agent stays where it is.
                    break;
                };
                let prior = model.prior.log_density(&th, dim).1;
                for (i, t) in th.iter_mut().enumerate() {
                    *t = (*t + local_steps.eta * (g[i] + prior[i] / k) / n)
                        .clamp(bounds[i].0, bounds[i].1);
                }
            }
            th
        }
    }
}

/// The agents' answers to an ask, in agent order; None: not all of them are there (across
/// machines: a question not answered yet, or an agent that did not answer), and the solver
/// stops where it is.
pub type Answers = Option<Vec<Vec<f64>>>;

/// Who takes part in a solve: per agent, its number of observations n_k (its weight is
/// n_k / sum n).
#[derive(Clone, Debug)]
pub struct Members {
    counts: Vec<usize>,
}

impl Members {
    pub fn new(counts: Vec<usize>) -> Self {
        Members { counts }
    }

    fn weights(&self) -> Vec<f64> {
        let total: usize = self.counts.iter().sum();
        self.counts
            .iter()
            .map(|&n| n as f64 / total.max(1) as f64)
            .collect()
    }

    fn len(&self) -> usize {
        self.counts.len()
    }
}

/// The federated objective at theta from the agents' value answers: sum_k p_k (log p(y_k |
/// theta) + log prior / K) / n_k, what FedAvg ascends, and with gradients its gradient in
/// the log coordinates. None where some agent has no value (its kernel matrix is not
/// positive definite there) or an answer is malformed. Summed in agent order, so the result
/// does not depend on threads.
pub fn combine(
    theta: &[f64],
    members: &Members,
    answers: &[Vec<f64>],
    model: &HyperModel,
    dim: usize,
    grad: bool,
) -> Option<(f64, Vec<f64>)> {
    let k = members.len() as f64;
    let (prior, prior_grad) = model.prior.log_density(theta, dim);
    let weights = members.weights();
    let total: f64 = weights.iter().sum();
    let mut f = 0.0;
    let mut g = vec![0.0; if grad { theta.len() } else { 0 }];
    let want = if grad { theta.len() + 1 } else { 1 };
    for ((&n, &weight), a) in members.counts.iter().zip(&weights).zip(answers) {
        if a.len() != want {
            return None;
        }
        let w = weight / n.max(1) as f64 / total;
        f += w * (a[0] + prior / k);
        for (i, gi) in g.iter_mut().enumerate() {
            *gi += w * (a[1 + i] + prior_grad[i] / k);
        }
    }
    Some((f, g))
}

/// FedAvg's server step: the agents' stepped thetas averaged with weights p_k.
pub fn average(members: &Members, updates: &[Vec<f64>], len: usize) -> Option<Vec<f64>> {
    if updates.iter().any(|u| u.len() != len) {
        return None;
    }
    let weights = members.weights();
    let total: f64 = weights.iter().sum();
    Some(
        (0..len)
            .map(|i| {
                updates
                    .iter()
                    .zip(&weights)
                    .map(|(u, w)| u[i] * w)
                    .sum::<f64>()
                    / total
            })
            .collect(),
    )
}

/// The agents of one process as an oracle: each answers every ask at once, in parallel (each
/// on its own data: the same answers in any order).
fn in_process<'a>(
    locals: &'a [Local],
    model: &'a HyperModel,
    dim: usize,
    local_steps: LocalSteps,
) -> impl FnMut(Ask) -> Answers + 'a {
    move |ask| {
        Some(
            locals
                .par_iter()
                .map(|l| answer(l, &ask, model, dim, local_steps))
                .collect(),
        )
    }
}

fn members_of(locals: &[Local]) -> Members {
    Members::new(locals.iter().map(|l| l.y.len()).collect())
}

/// The federated objective at theta (None where some agent's kernel matrix is not positive
/// definite), computed by the agents of one process.
pub fn federated_objective(
    theta: &[f64],
    locals: &[Local],
    model: &HyperModel,
    dim: usize,
) -> Option<f64> {
    federated_value(theta, locals, model, dim, false).map(|(f, _)| f)
}

fn federated_value(
    theta: &[f64],
    locals: &[Local],
    model: &HyperModel,
    dim: usize,
    grad: bool,
) -> Option<(f64, Vec<f64>)> {
    let steps = LocalSteps { steps: 0, eta: 0.0 };
    let answers = in_process(locals, model, dim, steps)(Ask::Value {
        theta: theta.to_vec(),
        grad,
    })?;
    combine(theta, &members_of(locals), &answers, model, dim, grad)
}

/// How the server solves eq. 9 and on whose answers.
pub struct Solve<'a> {
    pub members: &'a Members,
    pub model: &'a HyperModel,
    pub dim: usize,
    /// Communication rounds at most.
    pub rounds: usize,
}

/// Eq. 9 solved by L-BFGS at the server, from `theta`, inside the model's bounds: every
/// evaluation is one communication round (each agent returns its L_k and gradient at the
/// server's point), at most `rounds` of them. Returns the shared hyperparameters and the
/// rounds taken. On identical agents this is the centralised fit's ascent from `theta`.
pub fn lbfgs_solve(
    theta: &[f64],
    s: &Solve,
    oracle: &mut dyn FnMut(Ask) -> Answers,
) -> (Vec<f64>, usize) {
    let bounds = s.model.bounds.log_box(theta.len() - 2);
    let (lo, hi): (Vec<f64>, Vec<f64>) = bounds.iter().copied().unzip();
    let start: Vec<f64> = theta
        .iter()
        .zip(&bounds)
        .map(|(t, b)| t.clamp(b.0, b.1))
        .collect();
    let mut taken = 0;
    // Past the budget the server asks no more: the line search sees no value and stops.
    let mut objective = |x: &[f64]| {
        if taken == s.rounds {
            return None;
        }
        taken += 1;
        let answers = oracle(Ask::Value {
            theta: x.to_vec(),
            grad: true,
        })?;
        combine(x, s.members, &answers, s.model, s.dim, true)
            .map(|(f, g)| (-f, g.iter().map(|v| -v).collect()))
    };
    let opts = LbfgsOptions {
        max_iter: s.rounds,
        grad_tol: 1e-5,
        ..Default::default()
    };
    let found = lbfgs_box(&mut objective, &start, &lo, &hi, opts).map(|m| m.x);
    (found.unwrap_or(start), taken)
}

/// FedAvg from `theta` for at most `rounds` rounds: every round each agent starts from the
/// global theta and takes its local steps (`answer`), and the server averages the results
/// with weights p_k. With `tolerance` it stops once a round improves the federated objective
/// by less than it: each such round costs one more value per agent (one number). A round
/// without every agent's answer ends the solve where it is. Returns the shared
/// hyperparameters and the rounds taken. With L_k per observation sum_k p_k L_k is the
/// centralised log posterior over sum n, so one local step per round is gradient ascent on
/// the centralised fit (the test below).
pub fn fedavg_solve(
    theta: &[f64],
    s: &Solve,
    tolerance: Option<f64>,
    oracle: &mut dyn FnMut(Ask) -> Answers,
) -> (Vec<f64>, usize) {
    let mut global = theta.to_vec();
    let value = |oracle: &mut dyn FnMut(Ask) -> Answers, at: &[f64]| {
        let ask = Ask::Value {
            theta: at.to_vec(),
            grad: false,
        };
        oracle(ask).map(|a| combine(at, s.members, &a, s.model, s.dim, false).map(|(f, _)| f))
    };
    let mut last = match tolerance {
        Some(_) => match value(oracle, &global) {
            Some(v) => v,
            None => return (global, 0),
        },
        None => None,
    };
    let k = s.members.len();
    for r in 1..=s.rounds {
        let step = Ask::Step {
            theta: global.clone(),
            k,
        };
        let Some(next) = oracle(step).and_then(|u| average(s.members, &u, global.len())) else {
            return (global, r - 1);
        };
        global = next;
        if let Some(tol) = tolerance {
            let Some(now) = value(oracle, &global) else {
                return (global, r);
            };
            if let (Some(a), Some(b)) = (last, now)
                && b - a < tol
            {
                return (global, r);
            }
            last = now;
        }
    }
    (global, s.rounds)
}

/// `lbfgs_solve` by the agents of one process.
pub fn lbfgs_rounds(
    theta: &[f64],
    locals: &[Local],
    model: &HyperModel,
    dim: usize,
    rounds: usize,
) -> (Vec<f64>, usize) {
    let none = LocalSteps { steps: 0, eta: 0.0 };
    solve_in_process(locals, model, dim, rounds, none, |s, oracle| {
        lbfgs_solve(theta, s, oracle)
    })
}

/// `fedavg_solve` by the agents of one process.
#[allow(clippy::too_many_arguments)]
pub fn fedavg_until(
    theta: &[f64],
    locals: &[Local],
    model: &HyperModel,
    dim: usize,
    rounds: usize,
    steps: usize,
    eta: f64,
    tolerance: Option<f64>,
) -> (Vec<f64>, usize) {
    let local = LocalSteps { steps, eta };
    solve_in_process(locals, model, dim, rounds, local, |s, oracle| {
        fedavg_solve(theta, s, tolerance, oracle)
    })
}

/// A server's solver run with the agents of one process as its oracle (their local steps
/// `local`), at most `rounds` communication rounds.
fn solve_in_process(
    locals: &[Local],
    model: &HyperModel,
    dim: usize,
    rounds: usize,
    local: LocalSteps,
    solver: impl FnOnce(&Solve, &mut dyn FnMut(Ask) -> Answers) -> (Vec<f64>, usize),
) -> (Vec<f64>, usize) {
    let members = members_of(locals);
    let s = Solve {
        members: &members,
        model,
        dim,
        rounds,
    };
    solver(&s, &mut in_process(locals, model, dim, local))
}

/// `rounds` rounds of FedAvg by the agents of one process.
pub fn fedavg(
    theta: &[f64],
    locals: &[Local],
    model: &HyperModel,
    dim: usize,
    rounds: usize,
    steps: usize,
    eta: f64,
) -> Vec<f64> {
    fedavg_until(theta, locals, model, dim, rounds, steps, eta, None).0
}

pub struct FedGp {
    agents: Vec<Learner>,
    targets: Vec<usize>,
    rule: Rule,
    solver: FedGpSolver,
    rounds: usize,
    local_steps: LocalSteps,
    tolerance: Option<f64>,
    /// Communication rounds taken before each iteration so far (what was sent), by iteration
    /// (0 for one an agent across machines did not hear of).
    rounds_taken: Vec<usize>,
    /// The shared hyperparameters of the last iteration (log coordinates), the solver's warm
    /// start for the next.
    global: Vec<f64>,
    /// The shared hyperparameters every agent decided its last query with.
    decided: Option<GpHyper>,
    /// Across machines, at the server: this iteration's solve once its questions are
    /// answered (the shared hyperparameters and the rounds taken), for `broadcast`.
    solved: Option<(Vec<f64>, usize)>,
    /// At their own pace (`crate::run::pace`): the numbers each agent has answered so far.
    /// Releases do not line up with an agent's iterations there, and an agent whose message
    /// is stale answers none of a release's rounds, so what it sent is counted as it answers.
    answered: Option<Vec<u64>>,
}

impl FedGp {
    pub fn new(ctx: &RunContext) -> Self {
        let Framework::FedGp {
            decide,
            solver,
            rounds,
            local_steps,
            step_size,
            tolerance,
        } = ctx.algorithm.framework
        else {
            unreachable!("fedgp specs carry fedgp settings")
        };
        let n = ctx.landscape.agents();
        let agents: Vec<Learner> = (0..n).map(|a| Learner::for_run(ctx, a)).collect();
        let global = ctx.spec.surrogate.own.initial.to_log();
        FedGp {
            agents,
            targets: (0..n).collect(),
            rule: rule_of(decide),
            solver,
            rounds,
            local_steps: LocalSteps {
                steps: local_steps,
                eta: step_size,
            },
            tolerance,
            rounds_taken: Vec::new(),
            global,
            decided: None,
            solved: None,
            answered: (ctx.algorithm.pace == crate::spec::Pace::Asynchronous).then(|| vec![0; n]),
        }
    }

    fn model(&self) -> HyperModel {
        self.agents[0].settings().model
    }

    fn dim(&self) -> usize {
        self.agents[0].space().dim()
    }

    /// The solve's start: the last shared hyperparameters, one length scale becoming one per
    /// axis (their geometric mean) once ARD applies to the fewest observations of any member.
    fn start(&self, n_min: usize) -> Vec<f64> {
        let dim = self.dim();
        let p = if self.model().ard.applies(n_min, dim) {
            dim
        } else {
            1
        };
        let p_now = self.global.len() - 2;
        if p_now == p {
            return self.global.clone();
        }
        let mean = self.global[..p_now].iter().sum::<f64>() / p_now as f64;
        let tail = self.global[p_now..].to_vec();
        std::iter::repeat_n(mean, p).chain(tail).collect()
    }

    /// The solver of the spec from `start` on `members`' answers through `oracle`.
    fn solve(
        &self,
        start: &[f64],
        members: &Members,
        oracle: &mut dyn FnMut(Ask) -> Answers,
    ) -> (Vec<f64>, usize) {
        let model = self.model();
        let s = Solve {
            members,
            model: &model,
            dim: self.dim(),
            rounds: self.rounds,
        };
        match self.solver {
            FedGpSolver::FedAvg => fedavg_solve(start, &s, self.tolerance, oracle),
            FedGpSolver::Lbfgs => lbfgs_solve(start, &s, oracle),
        }
    }

    /// Agent `a`'s share of eq. 9 for hyperparameters of `p` length scales.
    fn local(a: &Learner, p: usize) -> Local {
        Local {
            dist: Distances::new(a.inputs().view(), p > 1),
            y: a.scaled_ys(),
        }
    }

    /// The shared hyperparameters for this iteration, solved by the agents of this process.
    fn learn(&mut self) -> GpHyper {
        let model = self.model();
        let dim = self.dim();
        let n_min = self.agents.iter().map(Learner::n_obs).min().unwrap_or(0);
        self.global = self.start(n_min);
        let p = self.global.len() - 2;
        let locals: Vec<Local> = self.agents.iter().map(|a| Self::local(a, p)).collect();
        let members = members_of(&locals);
        let mut oracle = in_process(&locals, &model, dim, self.local_steps);
        let (global, taken) = self.solve(&self.global, &members, &mut oracle);
        self.global = global;
        self.rounds_taken.push(taken);
        GpHyper::from_log(model.kernel, model.mean, &self.global)
    }
}

/// Agent `a`'s query under `hyper` (its own fit where it received none).
fn decide_with(a: &mut Learner, rule: Rule, hyper: Option<&GpHyper>) -> Result<Query> {
    Ok(Query {
        agent: a.agent,
        point: a.decide(rule, hyper)?.point,
        source: match rule {
            Rule::Thompson => Source::Own,
            _ => Source::Acquisition,
        },
    })
}

/// The members of a round across machines: the agents whose message (n_k) arrived, in agent
/// order, with their counts.
fn members_of_messages(messages: &[Option<Array1<f64>>]) -> (Vec<usize>, Members) {
    let (who, counts): (Vec<usize>, Vec<usize>) = super::senders(messages)
        .into_iter()
        .map(|(a, m)| (a, m[0] as usize))
        .unzip();
    (who, Members::new(counts))
}

/// Across machines a round's solve is a conversation: every agent sends its count n_k with
/// its evaluation (1 number), the server asks the members (`Federated::question`) what its
/// solver needs, one communication round at a time, and broadcasts the shared
/// hyperparameters and the rounds taken (p + 3 numbers); each agent then decides on its own
/// data under them. The server does not keep its solver running between questions: it runs it
/// again from the start on the answers it holds (the solvers are deterministic, and their own
/// work is small beside the agents' likelihoods), so a restarted server that replays its
/// journal asks the same questions.
impl Federated for FedGp {
    fn message(&mut self, agent: usize, _t: usize) -> Result<Option<Array1<f64>>> {
        Ok(Some(Array1::from(vec![self.agents[agent].n_obs() as f64])))
    }

    fn question(
        &mut self,
        _t: usize,
        messages: &[Option<Array1<f64>>],
        answers: &[Vec<Option<Vec<f64>>>],
    ) -> Result<Option<Vec<f64>>> {
        let (who, members) = members_of_messages(messages);
        let n_min = members.counts.iter().copied().min().unwrap_or(0);
        let start = self.start(n_min);
        if who.is_empty() {
            self.solved = Some((start, 0));
            return Ok(None);
        }
        let mut next = None;
        let mut asked = 0;
        let mut replay = |ask: Ask| -> Answers {
            asked += 1;
            match answers.get(asked - 1) {
                Some(round) => who
                    .iter()
                    .map(|&a| {
                        round[a]
                            .clone()
                            .filter(|v| v.len() == ask.answer_len() || v.is_empty())
                    })
                    .collect(),
                None => {
                    if asked == answers.len() + 1 {
                        next = Some(ask);
                    }
                    None
                }
            }
        };
        let solved = self.solve(&start, &members, &mut replay);
        Ok(match next {
            Some(ask) => Some(ask.to_wire()),
            None => {
                self.solved = Some(solved);
                None
            }
        })
    }

    fn answer(&mut self, agent: usize, _t: usize, question: &[f64]) -> Result<Vec<f64>> {
        let dim = self.dim();
        let ask = Ask::from_wire(question, dim)
            .map_err(|why| FboError::Run(format!("agent {agent}: a FedGP question: {why}")))?;
        let local = Self::local(&self.agents[agent], ask.theta().len() - 2);
        let reply = answer(&local, &ask, &self.model(), dim, self.local_steps);
        if let Some(count) = self.answered.as_mut().and_then(|a| a.get_mut(agent)) {
            *count += reply.len() as u64;
        }
        Ok(reply)
    }

    fn broadcast(&mut self, t: usize, messages: &[Option<Array1<f64>>]) -> Result<Broadcast> {
        let Some((global, taken)) = self.solved.take() else {
            return Err(FboError::Run(format!(
                "FedGP's server broadcast round {t} before its questions were answered ({} messages)",
                super::senders(messages).len()
            )));
        };
        self.global = global;
        self.rounds_taken.push(taken);
        let shared = self.global.iter().copied().chain([taken as f64]).collect();
        Ok(Broadcast {
            all: Received {
                point: None,
                shared,
            },
            to_each: Vec::new(),
        })
    }

    fn choose(&mut self, agent: usize, t: usize, received: &Received) -> Result<Query> {
        let model = self.model();
        let hyper = match received.shared.split_last() {
            Some((&taken, theta)) if theta.len() >= 3 => {
                if self.rounds_taken.len() < t {
                    self.rounds_taken.resize(t, 0);
                }
                self.rounds_taken[t - 1] = taken as usize;
                // What params_sent counts per round, as at the server.
                self.global = theta.to_vec();
                Some(GpHyper::from_log(model.kernel, model.mean, theta))
            }
            _ => None,
        };
        self.decided = hyper.clone();
        decide_with(&mut self.agents[agent], self.rule, hyper.as_ref())
    }

    fn message_len(&self) -> usize {
        1
    }

    /// The federated hyperparameters are a prior the agents' models use until newer ones
    /// come.
    fn release_reusable(&self) -> bool {
        true
    }
}

impl Algorithm for FedGp {
    fn belief(&self, agent: usize) -> Option<super::agent::Belief> {
        self.agents
            .get(agent)
            .map(|l| l.belief(self.decided.as_ref()))
    }

    fn targets(&self) -> &[usize] {
        &self.targets
    }

    fn propose(&mut self, _t: usize) -> Result<Vec<Query>> {
        let hyper = self.learn();
        self.decided = Some(hyper.clone());
        let rule = self.rule;
        self.agents
            .par_iter_mut()
            .map(|a| decide_with(a, rule, Some(&hyper)))
            .collect()
    }

    fn observe(&mut self, queries: &[Query], ys: &[f64]) {
        observe_all(&mut self.agents, queries, ys);
    }

    /// Each agent sends its local hyperparameters (p + 2 numbers; FedAvg) or its likelihood
    /// and gradient (p + 3; L-BFGS) in every communication round of every iteration (at their
    /// own pace: of every release it was fresh for).
    fn params_sent(&self, agent: usize, t: usize) -> u64 {
        if let Some(answered) = &self.answered {
            return answered[agent];
        }
        let rounds: usize = self.rounds_taken.iter().take(t).sum();
        // With a tolerance each FedAvg round also returns one likelihood per agent.
        let per_round = self.global.len()
            + usize::from(self.tolerance.is_some() || self.solver == FedGpSolver::Lbfgs);
        (per_round * rounds) as u64
    }

    fn federated(&mut self) -> Option<&mut dyn Federated> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::rng::{Purpose, stream};
    use crate::surrogate::gp::{
        Ard, FitBudget, HyperBounds, HyperPrior, Kernel, MeanFn, fit_hyperparameters,
    };
    use ndarray::Array2;
    use rand::Rng as _;

    /// Four identical agents on 25 noisy points of sin(6x), their model, and the centralised
    /// fit on the same data (20 starts) in log coordinates.
    fn identical_agents() -> (Vec<Local>, HyperModel, Vec<f64>) {
        let mut rng = stream(5, 0, 0, Purpose::AgentData);
        let x = Array2::from_shape_fn((25, 1), |_| rng.random::<f64>());
        let y = crate::surrogate::gp::standardize(
            &x.column(0)
                .iter()
                .map(|v| (6.0 * v).sin() + 0.1 * rng.random::<f64>())
                .collect::<Vec<_>>(),
        );
        let model = HyperModel {
            kernel: Kernel::Se,
            ard: Ard::Off,
            bounds: HyperBounds {
                length_scale: (1e-3, 10.0),
                signal_var: (1e-2, 20.0),
                noise_var: (1e-6, 1.0),
            },
            prior: HyperPrior::None,
            mean: MeanFn::Zero,
        };
        let central = fit_hyperparameters(
            x.view(),
            y.view(),
            &model,
            FitBudget {
                starts: 20,
                restarts: 20,
            },
            None,
            &mut rng,
        )
        .unwrap()
        .to_log();
        let locals: Vec<Local> = (0..4)
            .map(|_| Local {
                dist: Distances::new(x.view(), false),
                y: y.clone(),
            })
            .collect();
        (locals, model, central)
    }

    #[test]
    fn fedavg_on_identical_agents_reaches_the_centralised_fit() {
        let (locals, model, central) = identical_agents();
        let start = GpHyper::isotropic(Kernel::Se, 0.3, 1.0, 0.01).to_log();
        let fed = fedavg(&start, &locals, &model, 1, 3000, 3, 0.05);
        // Stopping once a round gains less than 1e-10 per observation: fewer rounds, the same
        // optimum to the test's precision, and exactly fedavg with that many rounds.
        let (until, taken) = fedavg_until(&start, &locals, &model, 1, 3000, 3, 0.05, Some(1e-10));
        // 1193 rounds here (1e-7 stops after far fewer, short of the optimum on this flat
        // likelihood: the tolerance is per observation and per round).
        assert!(taken < 3000, "{taken}");
        assert_eq!(until, fedavg(&start, &locals, &model, 1, taken, 3, 0.05));
        let before = fedavg(&start, &locals, &model, 1, taken - 1, 3, 0.05);
        let gain = federated_objective(&until, &locals, &model, 1).unwrap()
            - federated_objective(&before, &locals, &model, 1).unwrap();
        assert!(gain < 1e-10, "{gain}");
        for (a, b) in until.iter().zip(&central) {
            assert!((a - b).abs() < 2e-3, "{until:?} vs {central:?}");
        }
        for (a, b) in fed.iter().zip(&central) {
            assert!(
                (a - b).abs() < 2e-3,
                "fedavg {fed:?} vs centralised {central:?}"
            );
        }
    }

    #[test]
    fn lbfgs_on_identical_agents_reaches_the_centralised_fit_in_few_rounds() {
        let (locals, model, central) = identical_agents();
        let start = GpHyper::isotropic(Kernel::Se, 0.3, 1.0, 0.01).to_log();
        let (found, taken) = lbfgs_rounds(&start, &locals, &model, 1, 200);
        // FedAvg took 1193 rounds to the same precision (the test above).
        assert!(taken < 100, "{taken}");
        for (a, b) in found.iter().zip(&central) {
            assert!(
                (a - b).abs() < 2e-3,
                "lbfgs {found:?} vs centralised {central:?}"
            );
        }
        // A budget of rounds is a cap: it stops there, where it has got to.
        let (capped, used) = lbfgs_rounds(&start, &locals, &model, 1, 3);
        assert_eq!(used, 3);
        assert!(
            federated_objective(&capped, &locals, &model, 1).unwrap()
                > federated_objective(&start, &locals, &model, 1).unwrap()
        );
    }

    /// A question crosses the wire as it was asked; a malformed one is named.
    #[test]
    fn questions_cross_the_wire_and_malformed_ones_are_refused() {
        for ask in [
            Ask::Value {
                theta: vec![-1.0, 0.5, -3.0],
                grad: true,
            },
            Ask::Value {
                theta: vec![-1.0, -2.0, 0.5, -3.0],
                grad: false,
            },
            Ask::Step {
                theta: vec![-1.0, 0.5, -3.0],
                k: 4,
            },
        ] {
            assert_eq!(Ask::from_wire(&ask.to_wire(), 2), Ok(ask));
        }
        assert!(Ask::from_wire(&[2.0, 0.0, 1.0, 1.0, 1.0], 2).is_err());
        assert!(Ask::from_wire(&[1.0, 0.0, 1.0, f64::NAN, 1.0], 2).is_err());
        assert!(Ask::from_wire(&[1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0], 2).is_err());
    }

    /// Rerun on the answers it holds, the solver asks exactly the in-process run's questions,
    /// in order, and ends where it did (what the server across machines relies on).
    #[test]
    fn replaying_held_answers_asks_the_same_questions() {
        let (locals, model, _) = identical_agents();
        let members = members_of(&locals);
        let s = Solve {
            members: &members,
            model: &model,
            dim: 1,
            rounds: 40,
        };
        let start = GpHyper::isotropic(Kernel::Se, 0.3, 1.0, 0.01).to_log();
        let steps = LocalSteps {
            steps: 3,
            eta: 0.05,
        };
        let mut asked = Vec::new();
        let mut direct = in_process(&locals, &model, 1, steps);
        let mut record = |ask: Ask| {
            let a = direct(ask.clone());
            asked.push((ask, a.clone().unwrap()));
            a
        };
        let want = lbfgs_solve(&start, &s, &mut record);
        assert!(asked.len() > 3, "{}", asked.len());
        for held in 0..asked.len() {
            let mut next = None;
            let mut i = 0;
            let mut replay = |ask: Ask| {
                i += 1;
                if i <= held {
                    assert_eq!(ask, asked[i - 1].0);
                    return Some(asked[i - 1].1.clone());
                }
                if i == held + 1 {
                    next = Some(ask);
                }
                None
            };
            lbfgs_solve(&start, &s, &mut replay);
            assert_eq!(next.as_ref(), Some(&asked[held].0), "after {held} answers");
        }
        let mut i = 0;
        let mut all = |ask: Ask| {
            i += 1;
            assert_eq!(ask, asked[i - 1].0);
            Some(asked[i - 1].1.clone())
        };
        assert_eq!(lbfgs_solve(&start, &s, &mut all), want);
    }

    #[test]
    fn the_federated_gradient_is_the_objectives_derivative() {
        let (locals, model, _) = identical_agents();
        let theta = [-1.0, 0.2, -3.0];
        let (_, g) = federated_value(&theta, &locals, &model, 1, true).unwrap();
        for i in 0..3 {
            let mut up = theta;
            let mut down = theta;
            up[i] += 1e-6;
            down[i] -= 1e-6;
            let fd = (federated_objective(&up, &locals, &model, 1).unwrap()
                - federated_objective(&down, &locals, &model, 1).unwrap())
                / 2e-6;
            assert!(
                (fd - g[i]).abs() < 1e-6 * (1.0 + fd.abs()),
                "{i}: {fd} vs {}",
                g[i]
            );
        }
    }
}
