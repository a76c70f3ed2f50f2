//! Federated Thompson sampling (FTS paper, Algorithm 1), for one target agent (agent 0) and
//! N other agents that send omega_n drawn from their posteriors over the shared features.
//!
//! One-shot messages (the paper's main setting): each agent sends one omega before the target
//! starts; once used, the agent is removed from P_N and P_N renormalised. When every message
//! has been used the target falls back to its own sample. Every-iteration messages
//! (App. D.2.1): before each iteration t > 1 every other agent runs one more TS iteration of
//! its own and sends a fresh omega, so t_n grows and no agent is removed.

use super::agent::{Learner, Messenger, SharedFeatures};
use super::{Algorithm, Query, RunContext, Source};
use crate::error::Result;
use crate::objective::Landscape;
use crate::rng::{Purpose, Rng, stream};
use crate::spec::MessageMode;
use crate::spec::schedule::Schedule;
use ndarray::Array1;
use rand::Rng as _;
use rand::seq::index::sample as sample_indices;
use std::sync::Arc;

struct OtherAgent {
    learner: Learner,
    messenger: Messenger,
    data_rng: Rng,
}

enum Mode {
    OneShot(Vec<Option<Array1<f64>>>),
    EveryIteration(Vec<OtherAgent>, Vec<Array1<f64>>),
}

pub struct Fts {
    target: Learner,
    targets: [usize; 1],
    shared: SharedFeatures,
    schedule: Schedule,
    mixing: Rng,
    /// P_N over the other agents; entry i belongs to agent i + 1.
    weights: Vec<f64>,
    mode: Mode,
    landscape: Arc<Landscape>,
}

impl Fts {
    pub fn new(ctx: &RunContext) -> Result<Self> {
        let spec = ctx.spec;
        let alg = ctx.algorithm;
        let domain = ctx.landscape.domain.clone();
        let seed = ctx.seed();
        let sur = &spec.surrogate;
        let shared = SharedFeatures::for_run(ctx);
        let n_others = ctx.landscape.agents() - 1;
        let t_n = spec.federation.observations;
        let mut others = Vec::with_capacity(n_others);
        for agent in 1..=n_others {
            // The other agents' data depend on (run, agent) only, so every algorithm in a spec
            // (and every M) sees the same observations.
            let mut data_rng = stream(seed, ctx.run as u64, agent as u64, Purpose::AgentData);
            let mut messenger = Messenger::new(alg.features, sur.lambda, seed, ctx.run, agent);
            let mut learner = Learner::new(agent, domain.clone(), sur.own.clone(), seed, ctx.run);
            let points: Vec<usize> = if t_n <= domain.len() {
                sample_indices(&mut data_rng, domain.len(), t_n).into_vec()
            } else {
                (0..t_n)
                    .map(|_| data_rng.random_range(0..domain.len()))
                    .collect()
            };
            for idx in points {
                let y = ctx.landscape.observe(agent, idx, &mut data_rng);
                messenger.observe(&shared, idx, y);
                learner.add(idx, y);
            }
            others.push(OtherAgent {
                learner,
                messenger,
                data_rng,
            });
        }
        let mode = match alg.messages {
            MessageMode::OneShot => Mode::OneShot(
                others
                    .into_iter()
                    .map(|mut o| Some(o.messenger.message()))
                    .collect(),
            ),
            MessageMode::EveryIteration => {
                let latest = others.iter_mut().map(|o| o.messenger.message()).collect();
                Mode::EveryIteration(others, latest)
            }
        };
        let target = 0;
        Ok(Fts {
            target: Learner::new(target, domain, sur.own.clone(), seed, ctx.run),
            targets: [target],
            shared,
            schedule: alg.p_t.clone(),
            mixing: stream(seed, ctx.run as u64, target as u64, Purpose::Mixing),
            weights: spec.federation.weights.clone(),
            mode,
            landscape: ctx.landscape.clone(),
        })
    }

    /// Every other agent takes one more TS step and sends a fresh message.
    fn advance_others(&mut self) -> Result<()> {
        if let Mode::EveryIteration(others, latest) = &mut self.mode {
            for (o, msg) in others.iter_mut().zip(latest.iter_mut()) {
                let idx = o.learner.thompson()?;
                let y = self
                    .landscape
                    .observe(o.learner.agent, idx, &mut o.data_rng);
                o.learner.add(idx, y);
                o.messenger.observe(&self.shared, idx, y);
                *msg = o.messenger.message();
            }
        }
        Ok(())
    }

    /// Draws an agent from P_N restricted to agents that still have a message.
    fn pick_agent(&mut self) -> Option<usize> {
        let total: f64 = self.weights.iter().sum();
        if total <= 0.0 {
            return None;
        }
        let mut u = self.mixing.random::<f64>() * total;
        let mut last = None;
        for (i, &w) in self.weights.iter().enumerate() {
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
}

impl Algorithm for Fts {
    fn targets(&self) -> &[usize] {
        &self.targets
    }

    fn propose(&mut self, t: usize) -> Result<Vec<Query>> {
        if t > 1 {
            self.advance_others()?;
        }
        let r: f64 = self.mixing.random();
        let own = r <= self.schedule.p(t);
        let choice = if own { None } else { self.pick_agent() };
        let (index, source) = match choice {
            None => (self.target.thompson()?, Source::Own),
            Some(i) => {
                let omega = match &mut self.mode {
                    Mode::OneShot(msgs) => {
                        self.weights[i] = 0.0;
                        msgs[i]
                            .take()
                            .expect("agents without a message have zero weight")
                    }
                    Mode::EveryIteration(_, latest) => latest[i].clone(),
                };
                (self.shared.argmax(&omega), Source::Agent(i + 1))
            }
        };
        Ok(vec![Query {
            agent: self.targets[0],
            index,
            source,
        }])
    }

    fn observe(&mut self, queries: &[Query], ys: &[f64]) {
        for (q, y) in queries.iter().zip(ys) {
            self.target.add(q.index, *y);
        }
    }
}
