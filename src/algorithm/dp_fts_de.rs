//! DP-FTS-DE (DP paper, Algorithms 1-2) and its special cases, which are parameters of the
//! server: FTS in the server form (P = 1, no DP), FTS-DE (P > 1, no DP), DP-FTS (P = 1, DP).
//!
//! All N agents optimise concurrently in synchronous rounds and every agent is a target.
//! Round 0: each agent queries its initial points inside its own sub-region (or the whole
//! domain, for the App. B.1.2 ablation). Before iteration t >= 1 every agent sends omega_n from
//! its posterior over the shared features (all its data), the server aggregates them into P
//! vectors, and each agent then uses its own Thompson sample with probability p_t and otherwise
//! argmax_x phi(x)^T omega^(i(x)) over the whole domain. That argmax is the same for every
//! agent of a round, so it is computed once.

use super::agent::{Learner, Messenger, SharedFeatures};
use super::{Algorithm, Query, RunContext, Source};
use crate::error::{FboError, Result};
use crate::linalg::argmax;
use crate::rng::{Purpose, Rng, SHARED, stream};
use crate::server::{Partition, RoundRecord, Server};
use crate::spec::schedule::Schedule;
use crate::spec::{InitRegion, ServerSpec};
use ndarray::Array1;
use rand::Rng as _;
use rayon::prelude::*;

struct Peer {
    learner: Learner,
    messenger: Messenger,
    mixing: Rng,
}

pub struct DpFtsDe {
    peers: Vec<Peer>,
    targets: Vec<usize>,
    shared: SharedFeatures,
    /// Sub-region of every grid point.
    grid_region: Vec<usize>,
    /// Grid points of every sub-region (initial-point candidates).
    region_points: Vec<Vec<usize>>,
    assignment: Vec<usize>,
    init: InitRegion,
    server: Server,
    schedule: Schedule,
    records: Vec<RoundRecord>,
}

impl DpFtsDe {
    pub fn new(ctx: &RunContext, server_spec: &ServerSpec) -> Result<Self> {
        let spec = ctx.spec;
        let alg = ctx.algorithm;
        let domain = ctx.landscape.domain.clone();
        let seed = ctx.seed();
        let sur = &spec.surrogate;
        let p = server_spec.subregions;
        let partition = Partition::new(p, domain.dim());
        let grid_region: Vec<usize> = (0..domain.len())
            .map(|i| partition.region(domain.point(i)))
            .collect();
        let mut region_points = vec![Vec::new(); p];
        for (i, &r) in grid_region.iter().enumerate() {
            region_points[r].push(i);
        }
        if server_spec.init == InitRegion::Subregion {
            let smallest = region_points.iter().map(Vec::len).min().unwrap_or(0);
            if smallest < spec.initial_points {
                return Err(FboError::spec(
                    &spec.path,
                    format!("{}.server.subregions", alg.label),
                    format!(
                        "{p} sub-regions leave one with {smallest} grid points, fewer than initial_points = {}",
                        spec.initial_points
                    ),
                ));
            }
        }
        let shared = SharedFeatures::for_run(ctx);
        let n = ctx.landscape.agents();
        let assignment: Vec<usize> = (0..n).map(|a| a % p).collect();
        let peers = (0..n)
            .map(|a| Peer {
                learner: Learner::new(a, domain.clone(), sur.own.clone(), seed, ctx.run),
                messenger: Messenger::new(alg.features, sur.lambda, seed, ctx.run, a),
                mixing: stream(seed, ctx.run as u64, a as u64, Purpose::Mixing),
            })
            .collect();
        Ok(DpFtsDe {
            peers,
            targets: (0..n).collect(),
            shared,
            grid_region,
            region_points,
            assignment: assignment.clone(),
            init: server_spec.init,
            server: Server::new(
                server_spec.clone(),
                assignment,
                stream(seed, ctx.run as u64, SHARED, Purpose::Server),
            ),
            schedule: alg.p_t.clone(),
            records: Vec::new(),
        })
    }

    /// argmax over the domain of phi(x)^T omega^(i(x)).
    fn server_argmax(&self, vectors: &[Array1<f64>]) -> usize {
        let values: Vec<Array1<f64>> = vectors.iter().map(|v| self.shared.values(v)).collect();
        let combined = Array1::from_iter(
            self.grid_region
                .iter()
                .enumerate()
                .map(|(x, &r)| values[r][x]),
        );
        argmax(combined.view())
    }
}

impl Algorithm for DpFtsDe {
    fn targets(&self) -> &[usize] {
        &self.targets
    }

    fn init_candidates(&self, agent: usize) -> Option<&[usize]> {
        match self.init {
            InitRegion::Subregion => Some(&self.region_points[self.assignment[agent]]),
            InitRegion::Domain => None,
        }
    }

    fn propose(&mut self, t: usize) -> Result<Vec<Query>> {
        // Round t - 1: every agent's omega_n goes to the server (Algorithm 1 lines 3-12).
        let omegas: Vec<Array1<f64>> = self
            .peers
            .iter_mut()
            .map(|p| p.messenger.message())
            .collect();
        let (vectors, record) = self.server.aggregate(t - 1, &omegas);
        self.records.push(record);
        let server_x = self.server_argmax(&vectors);
        let p_t = self.schedule.p(t);
        // Agents act independently on their own streams, so running them in parallel cannot
        // change the result.
        self.peers
            .par_iter_mut()
            .map(|peer| {
                let r: f64 = peer.mixing.random();
                let (index, source) = if r <= p_t {
                    (peer.learner.thompson()?, Source::Own)
                } else {
                    (server_x, Source::Server)
                };
                Ok(Query {
                    agent: peer.learner.agent,
                    index,
                    source,
                })
            })
            .collect()
    }

    fn observe(&mut self, queries: &[Query], ys: &[f64]) {
        for (q, y) in queries.iter().zip(ys) {
            let peer = &mut self.peers[q.agent];
            peer.learner.add(q.index, *y);
            peer.messenger.observe(&self.shared, q.index, *y);
        }
    }

    /// Every agent sends its M-vector to the server in every round (the server, not the
    /// agent, subsamples), so t rounds cost M t.
    fn params_sent(&self, t: usize) -> u64 {
        (self.shared.features.len() * t) as u64
    }

    fn server_records(&self) -> &[RoundRecord] {
        &self.records
    }
}
