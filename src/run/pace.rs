//! Agents at their own pace (`pace = "asynchronous"`: DP-FTS-DE and the frameworks with a
//! server step, consensus, CGP-UCB, design densities, FMTBO and FedGP): on the simulated clock
//! (`[clock]`) every agent proposes as soon as its last evaluation returns, and the server
//! releases every `clock.period_s` seconds from whatever messages are fresh. Any algorithm
//! split into agent and server steps (`Federated`) runs here unchanged. (The
//! target-and-senders forms at their own pace have no server step: they run in the plain
//! loop of `crate::run::unit`, each target on its own clock; `AlgorithmSpec::waits_in_rounds`.)
//!
//! The events, in simulated time (ties: the server first, then agents by index):
//! - an agent's evaluation returns: it observes the value, sends the message its posterior now
//!   gives (kept by the server, replacing its earlier one), and, with iterations left, chooses
//!   its next query from the server's latest release. A release that is a point to query
//!   (DP-FTS-DE's, consensus's) it uses once: with a release it has used, it chooses on its
//!   own (DP-FTS-DE: its own Thompson sample; a fast agent does not query one released point
//!   twice). A release that is information its model uses (the others' densities, CGP-UCB's
//!   offers, FMTBO's averaged hyperparameters; `Federated::release_reusable`) it keeps using
//!   until a newer one comes;
//! - a release (`[[algorithm]] release`): with "periodic", release k at k * period_s (k = 1 ..=
//!   iterations; period_s by default the slowest site's median cost, so that the releases span
//!   the slowest agent's iterations); with "arrivals", as soon as `release_after` evaluations
//!   (by default one per agent) have returned since the previous release, at most `iterations`
//!   times, the agent whose return completes the count choosing under the new release. The
//!   server aggregates the latest message of every agent sent after release k - staleness,
//!   exactly as a synchronous round aggregates (subsampling, clipping, weights, noise), with
//!   the others as messages that did not arrive. FedGP's release is its solver's communication
//!   rounds among the fresh agents (each answers from its data at the release, at no simulated
//!   cost) and then the federated hyperparameters, which every agent uses until the next.
//!
//! Privacy: the server releases at most `iterations` times, at times fixed in advance
//! (periodic) or set by the agents' evaluation costs (arrivals), and each release is the
//! synchronous round's mechanism, in which an agent whose message is stale or absent takes
//! part with probability 0 instead of q (a dropout: the output is the mechanism without it,
//! which the subsampled Gaussian dominates). Who is fresh depends on earlier releases and on
//! costs (its own, and with arrivals the others'), never on another agent's data, so adaptive composition
//! over the releases gives the same bound as `iterations` synchronous rounds: privacy.csv's
//! curve is a valid upper bound (exact when all `iterations` releases happen). Release times
//! that follow arrivals are part of what the server shows, so they must not depend on the agents'
//! data: they do not when every cost is the cost model's draw (a function of the clock's own
//! streams, never of a query), and `check` refuses a private server releasing on arrivals
//! where the objective records a cost per point (a response table's training seconds, which
//! would let the release times reveal which points agents chose).

use crate::algorithm::{Broadcast, Query};
use crate::error::Result;
use crate::objective::Landscape;
use crate::objective::Request;
use crate::run::unit::{RunOutput, Unit};
use crate::spec::{Release, Spec};
use ndarray::Array1;

/// Refuses what the asynchronous server cannot account for: a private release whose times
/// follow the agents' arrivals when the cost of an evaluation depends on the point evaluated.
pub fn check(spec: &Spec, landscapes: &[std::sync::Arc<Landscape>]) -> Result<()> {
    if !landscapes.iter().any(|l| l.recorded_costs().is_some()) {
        return Ok(());
    }
    let private_on_arrivals = spec.algorithms.iter().position(|a| {
        a.has_asynchronous_server()
            && matches!(a.release, Release::Arrivals { .. })
            && a.server.as_ref().is_some_and(|s| s.dp.is_some())
    });
    match private_on_arrivals {
        Some(i) => Err(crate::error::FboError::spec(
            &spec.path,
            format!("algorithm[{i}].release"),
            format!(
                "{}: a private server releasing on arrivals would let its release times reveal the agents' queries, because this objective records each point's training seconds as its cost; use release = \"periodic\" (times fixed in advance) or dp = false",
                spec.algorithms[i].label
            ),
        )),
        None => Ok(()),
    }
}

/// When the next release happens.
enum Schedule {
    /// Release k at k * period seconds.
    Periodic(f64),
    /// Once `after` evaluations have returned since the previous release (`since` so far).
    Arrivals { after: usize, since: usize },
}

impl Schedule {
    /// The algorithm's rule on this run's clock: the period by default the slowest site's
    /// median cost, the count by default one return per agent.
    fn new(
        release: Release,
        clock: &crate::spec::ClockSpec,
        costs: &crate::run::clock::Costs,
        targets: &[usize],
    ) -> Self {
        match release {
            Release::Periodic => Schedule::Periodic(
                clock
                    .period_s
                    .unwrap_or_else(|| costs.slowest_median(targets)),
            ),
            Release::Arrivals { after } => Schedule::Arrivals {
                after: after.unwrap_or(targets.len()),
                since: 0,
            },
        }
    }

    /// Whether the periodic release `releases + 1` is due before an agent's event at `at`.
    fn due_before(&self, releases: usize, at: f64) -> bool {
        matches!(self, Schedule::Periodic(period) if (releases + 1) as f64 * period <= at)
    }

    /// Counts one returned evaluation; whether it completes an arrivals release's count.
    fn arrived(&mut self) -> bool {
        match self {
            Schedule::Periodic(_) => false,
            Schedule::Arrivals { after, since } => {
                *since += 1;
                if *since >= *after {
                    *since = 0;
                    true
                } else {
                    false
                }
            }
        }
    }
}

/// What the server holds from one agent: its latest message and how many releases had
/// happened when it was sent.
struct Held {
    message: Array1<f64>,
    releases_before: usize,
}

/// One agent's evaluation in flight (it returns at the agent's `free_at`).
struct InFlight {
    query: Query,
    f: f64,
    y: f64,
}

/// What release `k` aggregates: each agent's latest message if it was sent after release
/// k - staleness, otherwise nothing (a message that did not arrive).
fn fresh_messages(held: &[Option<Held>], k: usize, staleness: usize) -> Vec<Option<Array1<f64>>> {
    held.iter()
        .map(|h| {
            h.as_ref()
                .filter(|h| k - 1 - h.releases_before < staleness)
                .map(|h| h.message.clone())
        })
        .collect()
}

/// Release `k` on the messages fresh for it (`fresh_messages`): the server's questions first,
/// each answered at once by every agent whose message is fresh, from its data as it is now
/// (FedGP's solver rounds; the other kinds ask none), then the broadcast, the same steps a
/// synchronous round takes. Answering costs no simulated time: a site answers while its
/// evaluation runs.
fn release(
    fed: &mut dyn crate::algorithm::Federated,
    targets: &[usize],
    held: &[Option<Held>],
    k: usize,
    staleness: usize,
) -> Result<(usize, Broadcast)> {
    let fresh = &fresh_messages(held, k, staleness);
    let mut answers: Vec<Vec<Option<Vec<f64>>>> = Vec::new();
    while let Some(question) = fed.question(k, fresh, &answers)? {
        let round = fresh
            .iter()
            .zip(targets)
            .map(|(m, &agent)| {
                m.as_ref()
                    .map(|_| fed.answer(agent, k, &question))
                    .transpose()
            })
            .collect::<Result<_>>()?;
        answers.push(round);
    }
    Ok((k, fed.broadcast(k, fresh)?))
}

pub(crate) fn run_asynchronous(mut u: Unit) -> Result<RunOutput> {
    let (spec, run) = (u.spec, u.run);
    let clock_spec = spec
        .clock
        .as_ref()
        .expect("an asynchronous algorithm has a [clock] (spec check)");
    let n = u.targets.len();
    // The initial points' costs and finish times from the unit's clock; the iterations' costs
    // continue the same streams (agent a's i-th evaluation costs what it costs in a
    // synchronous algorithm of the spec).
    let (mut costs, mut free_at) = u
        .clock
        .take()
        .expect("a [clock] run keeps a clock")
        .into_parts();
    let mut schedule = Schedule::new(u.algorithm.release, clock_spec, &costs, &u.targets);
    let staleness = clock_spec.staleness;
    let horizon = spec.horizon_s();
    let t_max = spec.iterations;

    let mut held: Vec<Option<Held>> = (0..n).map(|_| None).collect();
    let mut in_flight: Vec<Option<InFlight>> = (0..n).map(|_| None).collect();
    let mut done = vec![0usize; n];
    let mut used = vec![0usize; n];
    let mut latest: (usize, Broadcast) = (0, Broadcast::none());
    let mut beliefs = Vec::new();
    let reusable = u.alg.federated().is_some_and(|f| f.release_reusable());
    loop {
        crate::run::progress::check_stop()?;
        // The next agent event: the earliest free agent with work or an observation left.
        let next = (0..n)
            .filter(|&s| done[s] < t_max || in_flight[s].is_some())
            .min_by(|&a, &b| free_at[a].total_cmp(&free_at[b]).then(a.cmp(&b)));
        let Some(s) = next else { break };
        let releases = latest.0;
        if releases < t_max && schedule.due_before(releases, free_at[s]) {
            let fed = u
                .alg
                .federated()
                .expect("an asynchronous kind is federated");
            latest = release(fed, &u.targets, &held, releases + 1, staleness)?;
            continue;
        }
        let agent = u.targets[s];
        if let Some(f) = in_flight[s].take()
            && !f.f.is_nan()
        {
            u.alg.observe(std::slice::from_ref(&f.query), &[f.y]);
        }
        if done[s] == t_max || horizon.is_some_and(|h| free_at[s] >= h) {
            done[s] = t_max;
            continue;
        }
        let fed = u
            .alg
            .federated()
            .expect("an asynchronous kind is federated");
        held[s] = fed.message(agent, releases + 1)?.map(|message| Held {
            message,
            releases_before: releases,
        });
        if schedule.arrived() && releases < t_max {
            latest = release(fed, &u.targets, &held, releases + 1, staleness)?;
        }
        let t = done[s] + 1;
        let fresh = latest.0 > used[s];
        let broadcast = if fresh || reusable {
            used[s] = latest.0;
            latest.1.clone()
        } else {
            Broadcast::none()
        };
        let query = u
            .alg
            .federated()
            .expect("an asynchronous kind is federated")
            .choose(agent, t, broadcast.for_agent(agent))?;
        // After the choice, as in rounds: the model the query was chosen with.
        beliefs.extend(u.belief(agent, t));
        let request = Request::new(u.label.to_string(), run, agent, t as i64);
        let (f, y, cost) = u.evaluator.evaluate(&[(&query, request)], &mut u.noise)?[0];
        let params = u.alg.params_sent(agent, t);
        let training = u.evaluator.training_s;
        u.tracer
            .record(s, &query, y, t as i64, params, f, cost, training);
        let done_at = free_at[s] + costs.cost(s, &query);
        u.tracer.finished_at(done_at);
        free_at[s] = done_at;
        done[s] = t;
        in_flight[s] = Some(InFlight { query, f, y });
    }
    Ok(u.finish(beliefs))
}
