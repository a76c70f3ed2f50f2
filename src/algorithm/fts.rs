//! Federated Thompson sampling (FTS paper, Algorithm 1) for each target agent of the spec.
//! Every other agent sends omega_n drawn from its posterior over the shared features; its data
//! are t_n random observations (App. D.1) or the history of t_n iterations of its own TS
//! (App. D.2), and depend on (run, agent) only, so every target, algorithm and M of a spec sees
//! the same agents.
//!
//! One-shot messages (the paper's main setting): each agent sends one omega before the target
//! starts; once used it is removed from the target's P_N, which is renormalised. When every
//! message has been used the target falls back to its own sample. Every-iteration messages
//! (App. D.2.1): before each iteration t > 1 every other agent runs one more TS iteration and
//! sends a fresh omega, so t_n grows and no agent is removed.

use super::agent::{
    Learner, SENDERS, Sender, SharedFeatures, agree_senders, build_senders, own_log_hyper,
    refit_senders,
};
use super::relay::{self, SenderAgreement};
use super::{Algorithm, Broadcast, Federated, Place, Query, Received, RunContext, Source};
use crate::error::{FboError, Result};
use crate::math::rng::{Purpose, Rng, stream, stream_at};
use crate::objective::{Landscape, Request};
use crate::spec::schedule::Schedule;
use crate::spec::{MessageMode, SharedModel};
use crate::surrogate::agreement::SharedHyper;
use ndarray::Array1;
use rand::Rng as _;
use std::sync::Arc;

/// One target's own optimisation and its view of the senders.
struct Target {
    learner: Learner,
    mixing: Rng,
    /// P_N over all agents (zero for the target itself and for used one-shot messages).
    weights: Vec<f64>,
    /// One-shot messages still unused, by agent.
    messages: Vec<Option<Array1<f64>>>,
}

pub struct Fts {
    ids: Vec<usize>,
    targets: Vec<Target>,
    senders: Vec<Option<Sender>>,
    /// Every-iteration mode: the latest message of every sender.
    latest: Vec<Option<Array1<f64>>>,
    mode: MessageMode,
    shared: SharedFeatures,
    /// The senders agree on the shared model before every message (`surrogate.shared`).
    agreed: bool,
    /// Across machines with an agreement: the server's question and the agreement followed.
    agreement: SenderAgreement,
    schedule: Schedule,
    landscape: Arc<Landscape>,
    label: String,
    seed: u64,
    run: usize,
}

/// Sender `s`'s omega_n before iteration t: from its messenger's own stream, or under an
/// agreement from the stream of round t (a site restarted from its journal, which replays
/// its evaluations but not its answers, then draws the same omega).
fn omega(s: &mut Sender, agreed: bool, seed: u64, run: usize, t: usize) -> Array1<f64> {
    if !agreed {
        return s.messenger.message();
    }
    let agent = s.learner.agent as u64;
    let mut rng = stream_at(seed, run as u64, agent, Purpose::Message, t as u64);
    s.messenger.message_from(&mut rng)
}

impl Fts {
    pub fn new(ctx: &RunContext) -> Result<Self> {
        let spec = ctx.spec;
        let alg = ctx.algorithm;
        let land = ctx.landscape.clone();
        let seed = ctx.seed();
        let run = ctx.run;
        let fed = &spec.federation;
        let mut shared = SharedFeatures::for_run(ctx);
        let ids = spec.targets().to_vec();
        let n = land.agents();
        let mut senders = build_senders(ctx, &shared)?;
        let agreed = ctx.algorithm.shared == SharedModel::Agreed;
        // Across machines the agreement is the server's question (`Federated::question`),
        // and a sender's first message its answer.
        let here = ctx.place == Place::Simulation;
        if agreed
            && here
            && let Some(a) = agree_senders(&shared, &land.space, &mut senders)
        {
            shared = a;
            refit_senders(&shared, &mut senders)?;
        }
        let first: Vec<Option<Array1<f64>>> = senders
            .iter_mut()
            .map(|s| match s {
                Some(s) if here || !agreed => Some(omega(s, agreed, seed, run, 1)),
                _ => None,
            })
            .collect();
        let targets = ids
            .iter()
            .map(|&t| {
                // P_N: the spec's weights are over the agents other than the target, in order.
                let mut weights = vec![0.0; n];
                for (k, a) in (0..n).filter(|&a| a != t).enumerate() {
                    weights[a] = fed.weights[k];
                }
                Target {
                    learner: Learner::for_run(ctx, t),
                    mixing: stream(seed, run as u64, t as u64, Purpose::Mixing),
                    weights,
                    messages: match alg.messages {
                        MessageMode::OneShot => first.clone(),
                        MessageMode::EveryIteration => vec![None; n],
                    },
                }
            })
            .collect();
        Ok(Fts {
            ids,
            targets,
            senders,
            latest: first,
            mode: alg.messages,
            shared,
            agreed,
            agreement: SenderAgreement::default(),
            schedule: alg.p_t.clone(),
            landscape: land,
            label: alg.label.clone(),
            seed,
            run,
        })
    }

    /// Every sender takes one more TS step and sends a fresh message.
    fn advance_senders(&mut self, t: usize) -> Result<()> {
        for agent in 0..self.senders.len() {
            self.step_sender(agent, t)?;
        }
        if self.agreed
            && let Some(a) = agree_senders(&self.shared, &self.landscape.space, &mut self.senders)
        {
            self.shared = a;
            refit_senders(&self.shared, &mut self.senders)?;
        }
        for agent in 0..self.senders.len() {
            self.draw_message(agent, t);
        }
        Ok(())
    }

    /// Sender `agent`'s TS step before iteration t (none if this process does not hold it);
    /// its evaluation belongs to this algorithm.
    fn step_sender(&mut self, agent: usize, t: usize) -> Result<()> {
        let Some(s) = self.senders[agent].as_mut() else {
            return Ok(());
        };
        let p = s.learner.thompson()?;
        let req = Request::new(
            format!("{} {SENDERS}", self.label),
            self.run,
            agent,
            t as i64,
        );
        s.observe(&self.landscape, &self.shared, &req, p)
    }

    /// Sender `agent`'s fresh message before iteration t, drawn from its posterior, as its
    /// latest.
    fn draw_message(&mut self, agent: usize, t: usize) {
        if let Some(s) = self.senders[agent].as_mut() {
            self.latest[agent] = Some(omega(s, self.agreed, self.seed, self.run, t));
        }
    }

    /// At a site: the features for the agreed log hyperparameters the server sent, redrawn
    /// when they are not the ones its features have.
    fn follow(&mut self, log: &[f64]) -> Result<()> {
        SenderAgreement::check(log, self.landscape.space.dim())?;
        if self.agreement.is_new(log) {
            self.shared = self
                .shared
                .agreed(&self.landscape.space, &SharedHyper::from_log(log));
        }
        Ok(())
    }

    /// Whether `agent` sends messages: every agent that some target is not.
    fn is_sender(&self, agent: usize) -> bool {
        relay::is_sender(&self.ids, agent)
    }

    /// Target `k`'s query at iteration t: its own Thompson sample with probability p_t,
    /// otherwise the best point of the message of an agent drawn from P_N among those whose
    /// message it holds (in one process, every sender's).
    fn choose_target(&mut self, k: usize, t: usize) -> Result<Query> {
        let p_t = self.schedule.p(t);
        let target = &mut self.targets[k];
        let r: f64 = target.mixing.random();
        let held = |a: usize| match self.mode {
            MessageMode::OneShot => target.messages[a].is_some(),
            MessageMode::EveryIteration => self.latest[a].is_some(),
        };
        let weights: Vec<f64> = (0..target.weights.len())
            .map(|a| if held(a) { target.weights[a] } else { 0.0 })
            .collect();
        let choice = if r <= p_t {
            None
        } else {
            pick_agent(&weights, &mut target.mixing)
        };
        let (point, source) = match choice {
            None => (target.learner.thompson()?, Source::Own),
            Some(a) => {
                let omega = match self.mode {
                    MessageMode::OneShot => {
                        target.weights[a] = 0.0;
                        target.messages[a].take().expect("held")
                    }
                    MessageMode::EveryIteration => self.latest[a].clone().expect("held"),
                };
                (
                    self.shared.best(&omega, &mut target.learner)?,
                    Source::Agent(a),
                )
            }
        };
        Ok(Query {
            agent: target.learner.agent,
            point,
            source,
        })
    }

    /// Target `k` takes the senders' messages the server relayed: (agent, omega) blocks of
    /// 1 + M numbers, all checked before any is taken. A one-shot message replaces none it
    /// has used; an every-iteration one replaces the sender's latest (one that did not arrive
    /// leaves the last it sent).
    fn take_relayed(&mut self, k: usize, shared: &[f64]) -> Result<()> {
        let me = self.targets[k].learner.agent;
        let relayed = relay::parse(shared, self.shared.features.len(), self.senders.len(), me)?;
        for (sender, omega) in relayed {
            match self.mode {
                MessageMode::OneShot if self.targets[k].weights[sender] > 0.0 => {
                    self.targets[k].messages[sender] = Some(omega);
                }
                MessageMode::OneShot => {}
                MessageMode::EveryIteration => self.latest[sender] = Some(omega),
            }
        }
        Ok(())
    }
}

/// Draws an agent from P_N restricted to positive weights.
fn pick_agent(weights: &[f64], rng: &mut Rng) -> Option<usize> {
    let total: f64 = weights.iter().sum();
    if total <= 0.0 {
        return None;
    }
    let mut u = rng.random::<f64>() * total;
    let mut last = None;
    for (i, &w) in weights.iter().enumerate() {
        if w > 0.0 {
            last = Some(i);
            if u < w {
                return Some(i);
            }
            u -= w;
        }
    }
    last // rounding at the top end
}

impl Algorithm for Fts {
    fn belief(&self, agent: usize) -> Option<super::agent::Belief> {
        self.targets
            .iter()
            .find(|t| t.learner.agent == agent)
            .map(|t| t.learner.belief(None))
    }

    fn targets(&self) -> &[usize] {
        &self.ids
    }

    fn propose(&mut self, t: usize) -> Result<Vec<Query>> {
        if t > 1 && self.mode == MessageMode::EveryIteration {
            self.advance_senders(t)?;
        }
        (0..self.targets.len())
            .map(|k| self.choose_target(k, t))
            .collect()
    }

    fn params_sent(&self, _agent: usize, t: usize) -> u64 {
        let m = self.shared.features.len() as u64;
        match self.mode {
            MessageMode::OneShot => m,
            MessageMode::EveryIteration => m * t as u64,
        }
    }

    fn observe(&mut self, queries: &[Query], ys: &[f64]) {
        for (q, y) in queries.iter().zip(ys) {
            if let Some(t) = self.targets.iter_mut().find(|t| t.learner.agent == q.agent) {
                t.learner.add(q.point.clone(), *y);
            }
        }
    }

    fn federated(&mut self) -> Option<&mut dyn Federated> {
        Some(self)
    }
}

/// Across machines (docs/federation.md): every sender's site makes its own history and
/// sends its omega_n (once, or every iteration after one more TS step of its own); the
/// server relays to every target the messages that arrived; each target mixes as in one
/// process. With an agreement the message is the sender's fit, the server's question the
/// agreed log hyperparameters (the median of the fits that arrived), and the omega_n on the
/// agreed features the sender's answer; the targets receive the agreement before the omegas.
impl Federated for Fts {
    fn message(&mut self, agent: usize, t: usize) -> Result<Option<Array1<f64>>> {
        if !self.sends(agent, t) {
            return Ok(None);
        }
        if t > 1 {
            self.step_sender(agent, t)?;
            if !self.agreed {
                self.draw_message(agent, t);
            }
        }
        if self.agreed {
            let fit = self.senders[agent]
                .as_mut()
                .map(|s| Array1::from(own_log_hyper(&mut s.learner)));
            return Ok(fit);
        }
        Ok(self.latest[agent].clone())
    }

    fn question(
        &mut self,
        _t: usize,
        messages: &[Option<Array1<f64>>],
        answers: &[Vec<Option<Vec<f64>>>],
    ) -> Result<Option<Vec<f64>>> {
        let m = self.shared.features.len();
        Ok(match self.agreed {
            true => self.agreement.question(messages, answers, m),
            false => None,
        })
    }

    fn answer(&mut self, agent: usize, t: usize, question: &[f64]) -> Result<Vec<f64>> {
        if self.senders.get(agent).is_none_or(Option::is_none) {
            return Err(FboError::Run(format!(
                "agent {agent}: {} asks only its senders",
                self.label
            )));
        }
        self.follow(question)?;
        let s = self.senders[agent].as_mut().expect("a sender held here");
        s.messenger.refit(&self.shared, &s.learner)?;
        Ok(omega(s, true, self.seed, self.run, t).to_vec())
    }

    fn sends(&self, agent: usize, t: usize) -> bool {
        self.is_sender(agent) && (t == 1 || self.mode == MessageMode::EveryIteration)
    }

    fn members(&self, _targets: &[usize]) -> Vec<usize> {
        relay::members(self.senders.len(), &self.ids)
    }

    fn broadcast(&mut self, _t: usize, messages: &[Option<Array1<f64>>]) -> Result<Broadcast> {
        Ok(match self.agreed {
            true => self.agreement.broadcast(messages.len(), &self.ids),
            false => relay::to_targets(messages, &self.ids),
        })
    }

    fn choose(&mut self, agent: usize, t: usize, received: &Received) -> Result<Query> {
        let k = relay::target_index(&self.ids, agent)?;
        let mut relayed = &received.shared[..];
        if self.agreed {
            // The agreement first, then the omegas drawn on its features.
            let (log, rest) = SenderAgreement::split(relayed, self.landscape.space.dim())?;
            if let Some(log) = log {
                self.follow(log)?;
                // Every round's omegas are drawn on that round's agreement: one held from an
                // earlier round (its sender's answer lost since) would be read on others.
                if self.mode == MessageMode::EveryIteration {
                    self.latest.iter_mut().for_each(|m| *m = None);
                }
            }
            relayed = rest;
        }
        self.take_relayed(k, relayed)?;
        self.choose_target(k, t)
    }

    fn message_len(&self) -> usize {
        match self.agreed {
            true => self.landscape.space.dim() + 2,
            false => self.shared.features.len(),
        }
    }
}
