//! DP-FTS-DE (DP paper, Algorithms 1-2) and its special cases, which are parameters of the
//! server: FTS in the server form (P = 1, no DP), FTS-DE (P > 1, no DP), DP-FTS (P = 1, DP).
//!
//! All N agents optimise concurrently in synchronous rounds and every agent is a target.
//! Round 0: each agent queries its initial points inside its own sub-region (or the whole
//! domain, for the App. B.1.2 ablation). Before iteration t >= 1 every agent sends omega_n from
//! its posterior over the shared features (all its data), the server aggregates them into P
//! vectors, and each agent then uses its own Thompson sample with probability p_t and otherwise
//! argmax_x phi(x)^T omega^(i(x)) over the whole domain. That argmax is the same for every
//! agent of a round, so it is computed once. Under DP with `server.follow = "signal"` the
//! server's point is taken with probability (1 - p_t) times the release's signal share.

use super::agent::{Learner, Messenger, SharedFeatures, maximise_point, own_log_hyper};
use super::{Algorithm, Broadcast, Federated, InitArea, Query, Received, RunContext, Source};
use crate::acquisition::optimize::BoxSearch;
use crate::error::{FboError, Result};
use crate::math::linalg::argmax;
use crate::math::rng::{Purpose, Rng, SHARED, stream};
use crate::objective::space::Domain;
use crate::objective::{Point, Region, Space};
use crate::server::{Partition, RoundPlan, RoundRecord, RoundSum, Server};
use crate::spec::schedule::Schedule;
use crate::spec::{AgreementDp, AlgorithmSpec, Follow, InitRegion, ServerSpec, SharedModel, Spec};
use crate::surrogate::agreement::{SharedHyper, median, private_mean};
use ndarray::Array1;
use rand::Rng as _;
use rayon::prelude::*;
use std::sync::Arc;

struct Peer {
    learner: Learner,
    messenger: Messenger,
    mixing: Rng,
}

impl Peer {
    /// The agent's `k` queries of one round: the first as `choose`, the others its own
    /// independent Thompson samples (parallel TS, Kandasamy et al. 2018), so the server's
    /// point is queried at most once a round.
    fn choose_batch(&mut self, p_own: f64, received: &Received, k: usize) -> Result<Vec<Query>> {
        let mut queries = vec![self.choose(p_own, received)?];
        for _ in 1..k {
            queries.push(Query {
                agent: self.learner.agent,
                point: self.learner.thompson()?,
                source: Source::Own,
            });
        }
        Ok(queries)
    }

    /// The agent's query: its own Thompson sample with probability `p_own` (p_t, or
    /// `own_probability`'s under `follow = "signal"`), otherwise the server's point; only its
    /// own sample, with no draw, once the server releases nothing (a spent privacy budget:
    /// what the DP paper recommends once p_t is near 1).
    fn choose(&mut self, p_own: f64, received: &Received) -> Result<Query> {
        let (point, source) = match &received.point {
            None => (self.learner.thompson()?, Source::Own),
            Some(server_x) => {
                let r: f64 = self.mixing.random();
                if r <= p_own {
                    (self.learner.thompson()?, Source::Own)
                } else {
                    (server_x.clone(), Source::Server)
                }
            }
        };
        Ok(Query {
            agent: self.learner.agent,
            point,
            source,
        })
    }
}

/// The agreement on the shared model (`surrogate.shared = "agreed"`): each round's messages
/// carry the senders' log hyperparameters after omega_n, which the server agrees on for the
/// next round and broadcasts with its point.
struct Agreement {
    /// The vectors sent with this round's messages, by agent.
    sent: Vec<Option<Vec<f64>>>,
    /// The last agreed log hyperparameters: at the server, the ones it broadcasts; at an
    /// agent, the ones its features are drawn for (the features are a pure function of them,
    /// so an agent that missed a round catches up from the next broadcast).
    agreed: Option<Vec<f64>>,
    /// The prior's log hyperparameters: the public centre the private release clips about.
    centre: Vec<f64>,
    /// With DP: the release's settings and the server's realised sampling rate.
    private: Option<(AgreementDp, f64)>,
    /// The own model's hyperparameter box: a private agreement is clamped into it (post-
    /// processing of a released value, so the guarantee stands).
    bounds: crate::surrogate::gp::HyperBounds,
    rng: Rng,
}

pub struct DpFtsDe {
    peers: Vec<Peer>,
    agreement: Option<Agreement>,
    targets: Vec<usize>,
    shared: SharedFeatures,
    space: Arc<Space>,
    /// Sub-region of every grid point (empty on a box).
    grid_region: Vec<usize>,
    /// Grid points of every sub-region (initial-point candidates on a grid).
    region_points: Vec<Vec<usize>>,
    /// Every sub-region as a box (initial points and the server's search on a box).
    region_bounds: Vec<Region>,
    search: BoxSearch,
    /// Candidate sets of the server-vector search on a box; one per run, since the search
    /// serves every agent of a round.
    acq_rng: Rng,
    assignment: Vec<usize>,
    init: InitRegion,
    server: Server,
    schedule: Schedule,
    records: Vec<RoundRecord>,
    /// Rounds the privacy budget allows (`server.max_epsilon`); unlimited without one.
    budget_rounds: u64,
    /// Queries per agent per round (`batch`; one message per round whatever it is).
    batch: usize,
}

/// Each grid point's sub-region, and each sub-region's points; refuses a partition that
/// leaves a sub-region without points (or with fewer than the initial points it must hold).
fn grid_regions(
    spec: &Spec,
    alg: &AlgorithmSpec,
    server_spec: &ServerSpec,
    domain: &Domain,
    partition: &Partition,
) -> Result<(Vec<usize>, Vec<Vec<usize>>)> {
    let p = partition.parts;
    let grid_region: Vec<usize> = (0..domain.len())
        .map(|i| partition.region(domain.point(i)))
        .collect();
    let mut region_points = vec![Vec::new(); p];
    for (i, &r) in grid_region.iter().enumerate() {
        region_points[r].push(i);
    }
    let need = if server_spec.init == InitRegion::Subregion {
        spec.initial_points.max(1)
    } else {
        1
    };
    let smallest = region_points.iter().map(Vec::len).min().unwrap_or(0);
    if smallest < need {
        return Err(FboError::spec(
            &spec.path,
            "server.subregions",
            format!(
                "{2}: {p} sub-regions of this grid leave one with {smallest} grid points (cut along the first coordinate{0}), fewer than {need}{1}; use fewer sub-regions",
                if partition.parts == 4 && domain.dim() >= 2 {
                    " and the second"
                } else {
                    ""
                },
                if need > 1 {
                    " (initial_points, drawn inside each agent's sub-region)"
                } else {
                    ""
                },
                alg.label
            ),
        ));
    }
    Ok((grid_region, region_points))
}

/// The checks of `DpFtsDe::new` that depend on the objective's space (a box's categorical
/// blocks, a grid's sub-regions), for `fbo validate` and before a run starts.
pub fn check(spec: &Spec, alg: &AlgorithmSpec, space: &Space) -> Result<()> {
    let Some(server_spec) = alg.server.as_ref() else {
        return Ok(());
    };
    let partition = Partition::new(server_spec.subregions, space.dim());
    // The sub-regions cut the first coordinate (and the second for quadrants): a cut through
    // a categorical parameter's one-hot block leaves regions with no valid choice.
    let cut = match partition.parts {
        1 => 0,
        4 if space.dim() >= 2 => 2,
        _ => 1,
    };
    for (p, block) in space.blocks() {
        if p.is_categorical() && block.start < cut {
            let i = spec
                .algorithms
                .iter()
                .position(|a| a.label == alg.label)
                .unwrap_or(0);
            return Err(FboError::spec(
                &spec.path,
                alg.server_key(i, "subregions"),
                format!(
                    "{}: {} sub-regions are cut along the first {}, and \"{}\" is categorical; list numeric hyperparameters first, or use subregions = 1",
                    alg.label,
                    partition.parts,
                    if cut == 2 {
                        "two unit coordinates"
                    } else {
                        "unit coordinate"
                    },
                    p.name
                ),
            ));
        }
    }
    let Some(domain) = space.grid() else {
        return Ok(());
    };
    grid_regions(spec, alg, server_spec, domain, &partition).map(|_| ())
}

impl DpFtsDe {
    pub fn new(ctx: &RunContext, server_spec: &ServerSpec) -> Result<Self> {
        let spec = ctx.spec;
        let alg = ctx.algorithm;
        let seed = ctx.seed();
        let sur = &spec.surrogate;
        let space = ctx.landscape.space.clone();
        let p = server_spec.subregions;
        let partition = Partition::new(p, space.dim());
        let region_bounds: Vec<Region> = (0..p).map(|i| partition.bounds(i, space.dim())).collect();
        let (grid_region, region_points) = match space.grid() {
            Some(domain) => grid_regions(spec, alg, server_spec, domain, &partition)?,
            None => (Vec::new(), Vec::new()),
        };
        let shared = SharedFeatures::for_run(ctx);
        let n = ctx.landscape.agents();
        let assignment: Vec<usize> = (0..n).map(|a| a % p).collect();
        let peers = (0..n)
            .map(|a| Peer {
                learner: Learner::for_run(ctx, a),
                messenger: Messenger::new(alg.features, shared.lambda, seed, ctx.run, a),
                mixing: stream(seed, ctx.run as u64, a as u64, Purpose::Mixing),
            })
            .collect();
        let agreement = (alg.shared == SharedModel::Agreed).then(|| Agreement {
            sent: vec![None; n],
            agreed: None,
            centre: SharedHyper::from_own(&sur.own.initial, space.dim()).to_log(),
            private: server_spec.dp.and_then(|d| {
                let rate = crate::privacy::realised_rate(d.sampling, d.q, n);
                d.agreement.map(|a| (a, rate))
            }),
            bounds: sur.own.model.bounds,
            rng: stream(seed, ctx.run as u64, SHARED, Purpose::Agreement),
        });
        Ok(DpFtsDe {
            peers,
            agreement,
            targets: (0..n).collect(),
            shared,
            space,
            grid_region,
            region_points,
            region_bounds,
            search: spec.acquisition,
            acq_rng: stream(seed, ctx.run as u64, SHARED, Purpose::Acquisition),
            assignment: assignment.clone(),
            init: server_spec.init,
            server: Server::new(
                server_spec.clone(),
                assignment,
                stream(seed, ctx.run as u64, SHARED, Purpose::Server),
                stream(seed, ctx.run as u64, SHARED, Purpose::Participation),
            )
            .with_secure_streams(
                secure_streams(server_spec, seed, ctx.run, n, Purpose::SecureAggregation),
                secure_streams(server_spec, seed, ctx.run, n, Purpose::AgentPrivacy),
            )
            .keeping_views(spec.output.server_view),
            schedule: alg.p_t.clone(),
            records: Vec::new(),
            budget_rounds: server_spec
                .dp
                .and_then(|d| d.budget)
                .map_or(u64::MAX, |b| b.rounds),
            batch: spec.batch,
        })
    }

    /// argmax over the space of phi(x)^T omega^(i(x)): exact on a grid; on a box the best
    /// of the per-sub-region maxima of phi(x)^T omega^(i).
    fn server_best(&mut self, vectors: &[Array1<f64>]) -> Result<Point> {
        if let Some(grid) = self.space.grid() {
            let values: Vec<Array1<f64>> = vectors.iter().map(|v| self.shared.values(v)).collect();
            let combined = Array1::from_iter(
                self.grid_region
                    .iter()
                    .enumerate()
                    .map(|(x, &r)| values[r][x]),
            );
            return Ok(grid.at(argmax(combined.view())));
        }
        let mut best: Option<(Point, f64)> = None;
        for (v, region) in vectors.iter().zip(&self.region_bounds) {
            let w = v.as_slice().expect("contiguous vector");
            let features = &self.shared.features;
            let mut acq = |x: &[f64], g: Option<&mut [f64]>| features.value_grad(x, w, g);
            let p = maximise_point(
                &mut acq,
                &self.space,
                region,
                self.search,
                &mut self.acq_rng,
            )?;
            let value = features.value_grad(&p.x, w, None);
            if best.as_ref().is_none_or(|(_, b)| value > *b) {
                best = Some((p, value));
            }
        }
        Ok(best.expect("at least one sub-region").0)
    }
}

impl DpFtsDe {
    /// The server's agreement from what this round's selected agents sent with the messages
    /// that arrived (`surrogate::agreement`), and the features redrawn for it.
    fn agree(&mut self, record: &RoundRecord) {
        let Some(ag) = self.agreement.as_mut() else {
            return;
        };
        let n = ag.sent.len();
        let counted: Vec<Vec<f64>> = (0..n)
            .filter(|a| {
                record
                    .selected_agents
                    .as_ref()
                    .is_none_or(|s| s.contains(a))
                    && !record.missing_agents.contains(a)
            })
            .filter_map(|a| ag.sent[a].take())
            .collect();
        let log = match ag.private {
            Some((a, rate)) => {
                private_mean(&counted, &ag.centre, a.clip, a.z, rate, n, &mut ag.rng)
            }
            None if counted.is_empty() => return,
            None => median(&counted),
        };
        ag.sent.iter_mut().for_each(|s| *s = None);
        // Only the private release can leave the box (its noise); a median of fits cannot,
        // except a known noise the user set outside it, which stands.
        let log: Vec<f64> = match ag.private {
            None => log,
            Some(_) => log
                .iter()
                .zip(ag.bounds.log_box(log.len() - 2))
                .map(|(v, (lo, hi))| v.clamp(lo, hi))
                .collect(),
        };
        self.shared = self
            .shared
            .agreed(&self.space, &SharedHyper::from_log(&log));
        ag.agreed = Some(log);
    }

    /// At an agent: the features for the agreed log hyperparameters the server broadcast,
    /// redrawn when they are not the ones its features have.
    fn follow(&mut self, log: &[f64]) {
        let Some(ag) = self.agreement.as_mut() else {
            return;
        };
        if log.is_empty() || ag.agreed.as_deref() == Some(log) {
            return;
        }
        self.shared = self.shared.agreed(&self.space, &SharedHyper::from_log(log));
        ag.agreed = Some(log.to_vec());
    }

    /// Whether the agents weigh the server's point by the release's signal share.
    fn follows_signal(&self) -> bool {
        self.server
            .spec()
            .dp
            .is_some_and(|dp| dp.follow == Follow::Signal)
    }

    /// What a broadcast shares, split into the agreed log hyperparameters and, under
    /// `follow = "signal"`, the release's signal share (its last number).
    fn split_shared<'a>(&self, shared: &'a [f64]) -> (&'a [f64], Option<f64>) {
        match shared.split_last() {
            Some((rho, log)) if self.follows_signal() => (log, Some(*rho)),
            _ => (shared, None),
        }
    }

    /// What an agent makes of a broadcast before it chooses at iteration t: the agreed model
    /// the broadcast carries (across machines; in one process the server's agreement already
    /// set it, and following the same hyperparameters again changes nothing), and the
    /// probability of its own sample.
    fn receive(&mut self, t: usize, received: &Received) -> f64 {
        let (log, rho) = self.split_shared(&received.shared);
        self.follow(log);
        own_probability(self.schedule.p(t), rho)
    }

    /// The broadcast of a released point, with the release's signal share after anything
    /// else it carries when the agents weigh the point by it.
    fn point_broadcast(&self, point: Point, vectors: &[Array1<f64>], noise_sd: f64) -> Broadcast {
        let mut b = Broadcast::to_all(point);
        if let Some(log) = self.agreement.as_ref().and_then(|ag| ag.agreed.clone()) {
            b.all.shared = log;
        }
        if self.follows_signal() {
            b.all.shared.push(signal_share(vectors, noise_sd));
        }
        b
    }

    /// Numbers an agreement adds after omega_n: the log hyperparameters (D length scales,
    /// signal and noise variance).
    fn agreement_len(&self) -> usize {
        match self.agreement {
            Some(_) => self.space.dim() + 2,
            None => 0,
        }
    }
}

impl DpFtsDe {
    /// Agent `agent`'s omega_n before iteration t (and its fit, under an agreement).
    fn omega_message(&mut self, agent: usize, t: usize) -> Option<Array1<f64>> {
        if t as u64 > self.budget_rounds {
            return None;
        }
        let peer = &mut self.peers[agent];
        if self.agreement.is_some() {
            // The posterior afresh on this round's features and standardisation; a singular
            // one sends nothing this round (the server treats it as a message that did not
            // arrive, and server.csv names the agent). Its fit travels after omega_n.
            peer.messenger.refit(&self.shared, &peer.learner).ok()?;
            let omega = peer.messenger.message();
            let log = own_log_hyper(&mut peer.learner);
            return Some(omega.iter().copied().chain(log).collect());
        }
        Some(peer.messenger.message())
    }
}

impl Federated for DpFtsDe {
    fn message(&mut self, agent: usize, t: usize) -> Result<Option<Array1<f64>>> {
        Ok(self.omega_message(agent, t))
    }

    fn broadcast(&mut self, t: usize, messages: &[Option<Array1<f64>>]) -> Result<Broadcast> {
        if t as u64 > self.budget_rounds {
            return Ok(Broadcast::none());
        }
        let m = self.shared.features.len();
        // With an agreement, each message's fit (after omega_n) goes to the agreement and its
        // omega_n to the server; without, the messages are the omegas as they are.
        let split: Option<Vec<Option<Array1<f64>>>> = self.agreement.as_mut().map(|ag| {
            messages
                .iter()
                .enumerate()
                .map(|(a, msg)| {
                    msg.as_ref().map(|msg| {
                        ag.sent[a] = Some(msg.iter().skip(m).copied().collect());
                        msg.iter().take(m).copied().collect()
                    })
                })
                .collect()
        });
        let omegas = split.as_deref().unwrap_or(messages);
        let arrived: Vec<Option<&Array1<f64>>> = omegas.iter().map(Option::as_ref).collect();
        let (vectors, record) = self
            .server
            .aggregate_arrived(t - 1, m, &arrived)
            .map_err(FboError::Run)?;
        let point = self.server_best(&vectors)?;
        // The argmax above is on this round's features; the agreement sets the next round's,
        // and travels with the point.
        self.agree(&record);
        let b = self.point_broadcast(point, &vectors, record.noise_sd);
        self.records.push(record);
        Ok(b)
    }

    fn choose(&mut self, agent: usize, t: usize, received: &Received) -> Result<Query> {
        let p_own = self.receive(t, received);
        self.peers[agent].choose(p_own, received)
    }

    fn choose_round(&mut self, agent: usize, t: usize, received: &Received) -> Result<Vec<Query>> {
        let p_own = self.receive(t, received);
        self.peers[agent].choose_batch(p_own, received, self.batch)
    }

    fn message_len(&self) -> usize {
        self.shared.features.len() + self.agreement_len()
    }

    fn secure_plan(&mut self, t: usize, present: &[bool]) -> Option<(RoundPlan, usize)> {
        let secure = self.server.spec().secure?;
        if t as u64 > self.budget_rounds {
            return None;
        }
        let plan = self.server.plan(t - 1, present);
        let k = plan.members.len();
        // As `secagg::round` clamps it in one process.
        Some((plan, secure.threshold(k).clamp(1, k.max(1))))
    }

    fn secure_release(
        &mut self,
        _t: usize,
        plan: &RoundPlan,
        sum: Option<&[u64]>,
        missing: Vec<usize>,
    ) -> Result<Broadcast> {
        let m = self.shared.features.len();
        let p = self.server.spec().subregions;
        let sums = match sum {
            Some(total) => crate::server::decode_sums(total, p, m),
            None => vec![Array1::zeros(m); p],
        };
        let noised = plan.shares_in_sum(sum.is_some());
        let (vectors, record) =
            self.server
                .release(plan, RoundSum::secure(sums, missing, noised), None);
        let point = self.server_best(&vectors)?;
        self.agree(&record);
        let b = self.point_broadcast(point, &vectors, record.noise_sd);
        self.records.push(record);
        Ok(b)
    }
}

impl Algorithm for DpFtsDe {
    fn belief(&self, agent: usize) -> Option<super::agent::Belief> {
        self.peers.get(agent).map(|p| p.learner.belief(None))
    }

    fn targets(&self) -> &[usize] {
        &self.targets
    }

    fn init_area(&self, agent: usize) -> Option<InitArea<'_>> {
        // One sub-region is the whole space: its initial points are every algorithm's (the
        // same draws from the same stream), measured once and shared.
        if self.region_bounds.len() == 1 {
            return None;
        }
        let r = self.assignment[agent];
        match (self.init, self.space.grid()) {
            (InitRegion::Subregion, Some(_)) => Some(InitArea::Points(&self.region_points[r])),
            (InitRegion::Subregion, None) => Some(InitArea::Region(&self.region_bounds[r])),
            (InitRegion::Domain, _) => None,
        }
    }

    fn propose(&mut self, t: usize) -> Result<Vec<Query>> {
        // Round t - 1 of Algorithm 1 (lines 3-12): every agent's omega_n, the server's
        // aggregation, every agent's choice, in the same three steps a real federation takes.
        let messages: Vec<Option<Array1<f64>>> = (0..self.peers.len())
            .map(|a| self.omega_message(a, t))
            .collect();
        let broadcast = self.broadcast(t, &messages)?;
        let p_own = self.receive(t, &broadcast.all);
        let k = self.batch;
        // Agents act independently on their own streams, so running them in parallel cannot
        // change the result.
        let rounds: Vec<Vec<Query>> = self
            .peers
            .par_iter_mut()
            .map(|peer| peer.choose_batch(p_own, &broadcast.all, k))
            .collect::<Result<_>>()?;
        Ok(rounds.into_iter().flatten().collect())
    }

    fn observe(&mut self, queries: &[Query], ys: &[f64]) {
        for (q, y) in queries.iter().zip(ys) {
            let peer = &mut self.peers[q.agent];
            // An agreed model's posterior is rebuilt before every message instead.
            if self.agreement.is_none() {
                peer.messenger.observe(&self.shared, &q.point, *y);
            }
            peer.learner.add(q.point.clone(), *y);
        }
    }

    /// Every agent sends its M-vector to the server in every round (the server, not the
    /// agent, subsamples), so t rounds cost M t; none once the privacy budget is spent.
    fn params_sent(&self, _agent: usize, t: usize) -> u64 {
        self.shared.features.len() as u64 * (t as u64).min(self.budget_rounds)
    }

    fn server_records(&self) -> &[RoundRecord] {
        &self.records
    }

    fn federated(&mut self) -> Option<&mut dyn Federated> {
        Some(self)
    }
}

/// The share of the released vectors' energy that is not noise, rho = 1 - P M sigma^2 /
/// sum_p |v_p|^2 clamped to [0, 1] (sigma the noise s.d. per coordinate): the noise adds P M
/// sigma^2 to the energy's expectation, so this is the usual moment estimate of the signal's
/// share. 1 without noise. A function of the release and of public settings only, so acting on
/// it is post-processing and the privacy guarantee stands.
pub fn signal_share(vectors: &[Array1<f64>], noise_sd: f64) -> f64 {
    if noise_sd == 0.0 {
        return 1.0;
    }
    let energy: f64 = vectors.iter().map(|v| v.dot(v)).sum();
    let coordinates: usize = vectors.iter().map(|v| v.len()).sum();
    let noise = coordinates as f64 * noise_sd * noise_sd;
    if energy <= noise {
        return 0.0;
    }
    1.0 - noise / energy
}

/// The probability of an agent's own sample: p_t (the papers'), or with the release's signal
/// share rho, 1 - (1 - p_t) rho: the server's point is followed in proportion to how much of
/// the release is not noise. rho = 1 (no noise) gives p_t itself, bit for bit.
fn own_probability(p_t: f64, rho: Option<f64>) -> f64 {
    match rho {
        Some(rho) if rho < 1.0 => 1.0 - (1.0 - p_t) * rho,
        _ => p_t,
    }
}

/// Each agent's stream for `purpose` under secure aggregation (keys; self-sampling coins and
/// noise shares), none without it: a plain unit draws nothing more than it always did.
fn secure_streams(
    spec: &ServerSpec,
    seed: u64,
    run: usize,
    n: usize,
    purpose: Purpose,
) -> Vec<crate::math::rng::Rng> {
    if spec.secure.is_none() {
        return Vec::new();
    }
    (0..n as u64)
        .map(|a| stream(seed, run as u64, a, purpose))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// By hand: vectors (3, 4) and (0, 0) have energy 25; at noise s.d. 1 the noise's share
    /// of it is 4 coordinates x 1 / 25, so rho = 0.84. Without noise 1; energy at or below
    /// the noise's expectation, 0.
    #[test]
    fn the_signal_share_is_the_energy_not_explained_by_the_noise() {
        let v = [Array1::from(vec![3.0, 4.0]), Array1::from(vec![0.0, 0.0])];
        assert!((signal_share(&v, 1.0) - 0.84).abs() < 1e-15);
        assert_eq!(signal_share(&v, 0.0), 1.0);
        assert_eq!(signal_share(&v, 2.5), 0.0);
        assert_eq!(signal_share(&v, 3.0), 0.0);
    }

    /// Averaged over noise draws, rho times the release's energy (energy minus the noise's
    /// expectation) is the signal's energy: the moment estimate behind rho is unbiased where
    /// it is not clamped. |s|^2 = 25 under s.d. 0.2 on 50 coordinates (noise energy 2, so no
    /// draw is clamped), 4000 draws, within 3 standard errors.
    #[test]
    fn the_signal_energy_estimate_is_unbiased() {
        use rand::SeedableRng;
        use rand_distr::{Distribution, StandardNormal};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let mut s = vec![0.0; 50];
        s[0] = 3.0;
        s[1] = 4.0;
        let (sd, draws) = (0.2, 4000);
        let estimates: Vec<f64> = (0..draws)
            .map(|_| {
                let v: Array1<f64> = s
                    .iter()
                    .map(|x| {
                        let e: f64 = StandardNormal.sample(&mut rng);
                        x + sd * e
                    })
                    .collect();
                let rho = signal_share(std::slice::from_ref(&v), sd);
                assert!(rho > 0.0 && rho < 1.0);
                rho * v.dot(&v)
            })
            .collect();
        let mean = estimates.iter().sum::<f64>() / draws as f64;
        let var = estimates.iter().map(|e| (e - mean).powi(2)).sum::<f64>() / (draws - 1) as f64;
        let se = (var / draws as f64).sqrt();
        assert!((mean - 25.0).abs() < 3.0 * se, "{mean} +- {se}");
    }

    /// The papers' rule is p_t bit for bit, with rho = 1 too; rho = 0 keeps every agent to
    /// its own sample; rho = 0.5 at p_t = 0.2 follows the server with probability 0.4.
    #[test]
    fn the_own_probability_scales_the_servers_share_by_rho() {
        let p = 1.0 - 1.0 / 7f64.sqrt();
        assert_eq!(own_probability(p, None).to_bits(), p.to_bits());
        assert_eq!(own_probability(p, Some(1.0)).to_bits(), p.to_bits());
        assert_eq!(own_probability(p, Some(0.0)), 1.0);
        assert!((own_probability(0.2, Some(0.5)) - 0.6).abs() < 1e-15);
    }
}
