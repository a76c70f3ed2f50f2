//! Pending evaluations (`parallel = k`, agents alone): each agent keeps k evaluations running
//! and chooses its next query as soon as its oldest returns, with the k - 1 still running as
//! pending points (TS: an independent sample, Kandasamy et al. 2018's asynchronous parallel
//! TS; EI and UCB: the pending points at their `fantasy` value, by default EI's Kriging
//! believer and UCB's constant liar; random: no repeat on a grid).
//!
//! Evaluations are observed in the order they were issued, whatever order they finish in: the
//! i-th query is chosen from the first i - k results, always, so a spec gives the same queries
//! and the same bytes whether its program's evaluations race or not, and a rerun replays its
//! journal exactly. The price: an evaluation that finishes before an older one waits for it
//! (its worker idles) until the older returns. A command's evaluations run on threads of their
//! own (its `objective.concurrency` defaults to `parallel`); other objectives are evaluated
//! when issued and observed in the same order. With a `[clock]`, query i starts when query
//! i - k has been observed (the initial points first, one after another) and finishes its cost
//! later; `sim_clock_s` is when it finished.

use crate::algorithm::Query;
use crate::error::Result;
use crate::objective::{Landscape, Point, Request};
use crate::run::unit::{RunOutput, Unit};
use crate::spec::Spec;
use std::collections::VecDeque;
use std::sync::Arc;
use std::thread::{Scope, ScopedJoinHandle};

/// An evaluation issued and not yet observed.
struct Flight<'scope> {
    t: usize,
    query: Query,
    request: Request,
    value: Value<'scope>,
    /// With a clock: when the evaluation finishes.
    finish_s: Option<f64>,
}

enum Value<'scope> {
    /// Evaluated when issued (cheap or deterministic objectives).
    Ready((f64, f64)),
    /// A measured objective's evaluation on a thread of its own.
    Running(ScopedJoinHandle<'scope, Result<(f64, f64)>>),
}

impl Value<'_> {
    fn wait(self) -> Result<(f64, f64)> {
        match self {
            Value::Ready(v) => Ok(v),
            Value::Running(h) => h.join().expect("evaluation thread"),
        }
    }
}

pub(crate) fn run_pending(mut u: Unit, landscape: &Arc<Landscape>) -> Result<RunOutput> {
    let spec = u.spec;
    let n = u.targets.len();
    // The initial points' finish times start each agent's clock; its iterations' costs
    // continue the same streams (agent a's i-th evaluation costs what it costs elsewhere).
    let (costs, observed_at) = match u.clock.take().map(|c| c.into_parts()) {
        Some((c, free_at)) => (Some(c), free_at),
        None => (None, vec![0.0; n]),
    };
    let mut beliefs = Vec::new();
    std::thread::scope(|scope| -> Result<()> {
        let mut lanes = Lanes {
            spec,
            scope,
            landscape,
            queues: (0..n).map(|_| VecDeque::new()).collect(),
            next_t: vec![1; n],
            observed_at,
            costs,
        };
        for slot in 0..n {
            lanes.fill(&mut u, slot, &mut beliefs)?;
        }
        // Waves: each agent's oldest evaluation observed, in agent order, then its free
        // workers refilled, so the trace's row order is fixed too.
        while lanes.queues.iter().any(|q| !q.is_empty()) {
            crate::run::progress::check_stop()?;
            for slot in 0..n {
                let Some(flight) = lanes.queues[slot].pop_front() else {
                    continue;
                };
                let value = flight.value.wait()?;
                let batch = [(&flight.query, flight.request.clone())];
                let (f, y, cost) = u.evaluator.observed(&batch, vec![value], &mut u.noise)[0];
                let training = u.evaluator.training_s;
                let params = u.alg.params_sent(flight.query.agent, flight.t);
                u.tracer.record(
                    slot,
                    &flight.query,
                    y,
                    flight.t as i64,
                    params,
                    f,
                    cost,
                    training,
                );
                if let Some(done) = flight.finish_s {
                    u.tracer.finished_at(done);
                    lanes.observed_at[slot] = lanes.observed_at[slot].max(done);
                }
                if !f.is_nan() {
                    u.alg.observe(std::slice::from_ref(&flight.query), &[y]);
                }
                lanes.fill(&mut u, slot, &mut beliefs)?;
            }
        }
        Ok(())
    })?;
    Ok(u.finish(beliefs))
}

/// Every agent's evaluations in flight, oldest first, and where its clock stands.
struct Lanes<'scope, 'env> {
    spec: &'env Spec,
    scope: &'scope Scope<'scope, 'env>,
    landscape: &'env Arc<Landscape>,
    queues: Vec<VecDeque<Flight<'scope>>>,
    /// Each agent's next iteration.
    next_t: Vec<usize>,
    /// When each agent last observed a result (its next query starts then).
    observed_at: Vec<f64>,
    costs: Option<crate::run::clock::Costs>,
}

impl<'scope, 'env> Lanes<'scope, 'env> {
    /// Agent `slot`'s free workers given queries, while it has iterations left (and, with
    /// a wall-clock budget, time: a query starting past it is not issued).
    fn fill(
        &mut self,
        u: &mut Unit,
        slot: usize,
        beliefs: &mut Vec<crate::run::output::BeliefRow>,
    ) -> Result<()> {
        let start_s = self.observed_at[slot];
        while self.queues[slot].len() < self.spec.parallel
            && self.next_t[slot] <= self.spec.iterations
            && self.spec.horizon_s().is_none_or(|h| start_s < h)
        {
            let t = self.next_t[slot];
            let flight = self.issue(u, slot, t, start_s)?;
            beliefs.extend(u.belief(flight.query.agent, t));
            self.queues[slot].push_back(flight);
            self.next_t[slot] += 1;
        }
        Ok(())
    }

    /// Agent `slot`'s query t chosen beside its pending ones and set running from `start_s`.
    fn issue(
        &mut self,
        u: &mut Unit,
        slot: usize,
        t: usize,
        start_s: f64,
    ) -> Result<Flight<'scope>> {
        let agent = u.targets[slot];
        let pending: Vec<Point> = self.queues[slot]
            .iter()
            .map(|f| f.query.point.clone())
            .collect();
        let query = u
            .alg
            .pending()
            .expect("parallel > 1 is checked to be for agents alone")
            .propose_pending(agent, t, &pending)?;
        let request = Request::new(u.label.to_string(), u.run, agent, t as i64);
        let value = if self.landscape.is_measured() {
            let landscape = self.landscape.clone();
            let (p, r) = (query.point.clone(), request.clone());
            Value::Running(self.scope.spawn(move || landscape.evaluate(&r, &p)))
        } else {
            Value::Ready(u.evaluator.values(&[(&query, request.clone())])?[0])
        };
        let finish_s = self.costs.as_mut().map(|c| start_s + c.cost(slot, &query));
        Ok(Flight {
            t,
            query,
            request,
            value,
            finish_s,
        })
    }
}
