//! The central server of DP-FTS-DE (DP paper, Algorithm 1): sub-regions, per-sub-region agent
//! weights, subsampling, clipping, weighted aggregation and Gaussian noise. It sees vectors and
//! agent ids only; nothing here knows about GPs or objectives.

pub mod secagg;

use crate::math::rng::Rng;
use crate::objective::Region;
use crate::privacy::Sampling;
use crate::spec::{ServerSpec, WeightMode};
use ndarray::{Array1, Array2, ArrayView1};
use rand::seq::index::sample as sample_indices;
use rand::{Rng as _, RngCore as _};
use rand_distr::{Distribution, StandardNormal};

/// P disjoint boxes of equal volume covering [0,1]^D (algorithms.md section 4): P = 4 with
/// D >= 2 halves the first two dimensions, ordered (x1 low, x2 low), (x1 low, x2 high),
/// (x1 high, x2 low), (x1 high, x2 high) (App. B.2.1); every other case splits the first
/// dimension into P equal intervals. A point on a shared boundary belongs to the lower index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partition {
    pub parts: usize,
    quadrants: bool,
}

impl Partition {
    pub fn new(parts: usize, dim: usize) -> Self {
        Partition {
            parts,
            quadrants: parts == 4 && dim >= 2,
        }
    }

    fn cell(v: f64, k: usize) -> usize {
        // ceil(v k) - 1 puts a boundary value k' / k into cell k' - 1 (the lower one).
        ((v * k as f64).ceil() as i64 - 1).clamp(0, k as i64 - 1) as usize
    }

    /// Sub-region i as a box of [0,1]^dim (closed: neighbours share their boundary, which
    /// `region` gives to the lower index).
    pub fn bounds(&self, i: usize, dim: usize) -> Region {
        let mut r = Region::unit(dim);
        let mut cut = |d: usize, cell: usize, k: usize| {
            r.lo[d] = cell as f64 / k as f64;
            r.hi[d] = (cell + 1) as f64 / k as f64;
        };
        if self.quadrants {
            cut(0, i / 2, 2);
            cut(1, i % 2, 2);
        } else {
            cut(0, i, self.parts);
        }
        r
    }

    pub fn region(&self, x: ArrayView1<f64>) -> usize {
        if self.quadrants {
            2 * Self::cell(x[0], 2) + Self::cell(x[1], 2)
        } else {
            Self::cell(x[0], self.parts)
        }
    }
}

/// a_t of the softmax weights at server round t (DP paper App. B): a + 1 for t <= t_const,
/// then linear to 1 over t_decay rounds (a + 1 at t_const + 1, 1 at t_const + t_decay), then 1.
pub fn a_t(s: &ServerSpec, round: usize) -> f64 {
    let top = s.a + 1.0;
    match s.weights {
        WeightMode::Equal => 1.0,
        WeightMode::Fixed => top,
        WeightMode::Adaptive => {
            if round <= s.t_const {
                top
            } else if s.t_decay >= 2 && round <= s.t_const + s.t_decay {
                let k = (round - s.t_const - 1) as f64;
                top - s.a * k / (s.t_decay - 1) as f64
            } else {
                1.0
            }
        }
    }
}

/// phi_n^(i): row i holds sub-region i's weights over the N agents, summing to 1. An agent
/// assigned to i weighs exp(a_t - 1) against 1 for the others (the paper's softmax with
/// temperature a / (a_t - 1)).
pub fn weights(a_t: f64, assignment: &[usize], parts: usize) -> Array2<f64> {
    let n = assignment.len();
    let boost = libm::exp(a_t - 1.0);
    let mut w = Array2::from_elem((parts, n), 1.0);
    for (agent, &r) in assignment.iter().enumerate() {
        w[[r, agent]] = boost;
    }
    for mut row in w.rows_mut() {
        let total = row.sum();
        row /= total;
    }
    w
}

/// What the server did in one round (server.csv).
#[derive(Clone, Debug, PartialEq)]
pub struct RoundRecord {
    pub round: usize,
    pub selected: usize,
    /// Selected vectors that were clipped; None under secure aggregation, where each agent
    /// clips its own vector and the server never learns whether it did.
    pub clipped: Option<usize>,
    pub a_t: f64,
    pub phi_max: f64,
    /// Standard deviation of the noise added to each coordinate (0 without DP). Messages that
    /// do not arrive leave it unchanged.
    pub noise_sd: f64,
    /// Selected agents whose messages arrived (and were aggregated).
    pub arrived: usize,
    /// The agents selected, in order; None: every agent (no subsampling).
    pub selected_agents: Option<Vec<usize>>,
    /// Selected agents whose messages did not arrive.
    pub missing_agents: Vec<usize>,
    /// Under secure aggregation with `output.server_view`: what the server received this
    /// round and the sum it recovered (None otherwise).
    pub view: Option<secagg::ServerView>,
}

pub struct Server {
    spec: ServerSpec,
    assignment: Vec<usize>,
    rng: Rng,
    /// Arrivals have their own stream, so that a participation model leaves selection and
    /// noise draws where they were.
    arrivals: Rng,
    /// Under secure aggregation, each agent's stream for its keys, self-mask seeds and
    /// shares (in a simulation seeded, so runs reproduce; a deployment draws them from the
    /// operating system).
    secure_rngs: Vec<Rng>,
    /// Under secure aggregation, each agent's stream for its own privacy draws: its
    /// self-sampling coin and its distributed-noise shares.
    agent_rngs: Vec<Rng>,
    /// Keep each secure round's `ServerView` in its record (`output.server_view`).
    keep_views: bool,
    /// Random allocation: the current period's first round and each agent's round in it,
    /// drawn at the period's first round.
    allocated: Option<(u64, Vec<u64>)>,
}

impl Server {
    /// `assignment[n]` is the sub-region agent n explores.
    pub fn new(spec: ServerSpec, assignment: Vec<usize>, rng: Rng, arrivals: Rng) -> Self {
        Server {
            spec,
            assignment,
            rng,
            arrivals,
            secure_rngs: Vec::new(),
            agent_rngs: Vec::new(),
            keep_views: false,
            allocated: None,
        }
    }

    /// The settings this server runs with.
    pub fn spec(&self) -> &ServerSpec {
        &self.spec
    }

    /// Keeps what the server sees in each secure round in the round's record (a debug
    /// output: it changes no draw and no result).
    pub fn keeping_views(mut self, keep: bool) -> Self {
        self.keep_views = keep;
        self
    }

    /// The agents' secure-aggregation streams, one per agent in order (used only with
    /// `server.secure`): `keys` for the protocol's key material, `own` for each agent's
    /// self-sampling coin and noise shares.
    pub fn with_secure_streams(mut self, keys: Vec<Rng>, own: Vec<Rng>) -> Self {
        self.secure_rngs = keys;
        self.agent_rngs = own;
        self
    }

    /// Whether each of `n` agents' messages reaches the server this round. Drawn for every
    /// agent in every round, before and whatever the selection, from draws that never see the
    /// data.
    fn arrivals(&mut self, n: usize) -> Vec<bool> {
        let part = &self.spec.participation;
        let mut arrived = vec![true; n];
        if part.is_full() {
            return arrived;
        }
        if let Some((p, block)) = part.outage
            && self.arrivals.random::<f64>() < p
        {
            let start = self.arrivals.random_range(0..n);
            for k in 0..block.min(n) {
                arrived[(start + k) % n] = false;
            }
        }
        for (agent, ok) in arrived.iter_mut().enumerate() {
            if let Some(&d) = part.drop.get(agent)
                && self.arrivals.random::<f64>() < d
            {
                *ok = false;
            }
            if let Some((mean, deadline)) = part.latency {
                let u: f64 = self.arrivals.random();
                // Exponential latency by inversion: -mean ln(1 - u) > deadline.
                if -mean * (-u).ln_1p() > deadline {
                    *ok = false;
                }
            }
        }
        arrived
    }

    /// One round: the P vectors omega^(i) from every agent's omega_n (Algorithm 1 lines 5-11).
    pub fn aggregate(
        &mut self,
        round: usize,
        omegas: &[Array1<f64>],
    ) -> (Vec<Array1<f64>>, RoundRecord) {
        let m = omegas.first().map_or(0, |o| o.len());
        let all: Vec<Option<&Array1<f64>>> = omegas.iter().map(Some).collect();
        self.aggregate_arrived(round, m, &all)
            .expect("contributions inside the fixed-point range")
    }

    /// `aggregate` of the M-vectors that reached the server (`None`: did not, as on a real
    /// network). A message that did not arrive is treated as one the participation model
    /// dropped: left out, with the weights, the scaling and the noise unchanged. Fails only
    /// under secure aggregation, for a contribution outside the fixed-point range. The round's
    /// three steps, as a real federation takes them: the server's plan, each member's
    /// contribution, the server's sum and release.
    pub fn aggregate_arrived(
        &mut self,
        round: usize,
        m: usize,
        omegas: &[Option<&Array1<f64>>],
    ) -> Result<(Vec<Array1<f64>>, RoundRecord), String> {
        let present: Vec<bool> = omegas.iter().map(Option::is_some).collect();
        let plan = self.plan(round, &present);
        let cohort: Vec<Contribution> = plan
            .members
            .iter()
            .map(|&agent| {
                let omega = omegas[agent].filter(|_| plan.arrived[agent]);
                let part = plan.member_part(agent);
                let part = match self.agent_rngs.get(agent) {
                    Some(own) => part.decide(own, round),
                    None => part,
                };
                let (coef, clipped) = coefficients(omega, &part);
                Contribution {
                    agent,
                    coef,
                    omega,
                    clipped,
                }
            })
            .collect();
        let sum = self.sum(m, &plan, &cohort)?;
        let clipped = cohort.iter().filter(|c| c.clipped).count();
        let known = self.spec.secure.is_none().then_some(clipped);
        Ok(self.release(&plan, sum, known))
    }

    /// The round's plan, drawn before any vector is seen: the weights, which messages
    /// arrived (`present` and the participation model), the selection and the cohort, and
    /// under secure aggregation who masks with whom.
    pub fn plan(&mut self, round: usize, present: &[bool]) -> RoundPlan {
        let mut plan = self.selection(round, present);
        if let Some(secure) = self.spec.secure {
            // SecAgg+'s cycle is shuffled with a seed from the server's own stream.
            let rng = &mut self.rng;
            plan.around = Some(secagg::Neighbourhoods::of_round(
                &secure,
                &plan.members,
                || {
                    let mut seed = [0u8; 32];
                    rng.fill_bytes(&mut seed);
                    seed
                },
            ));
        }
        plan
    }

    /// The weights, arrivals, selection and cohort of round `round`.
    fn selection(&mut self, round: usize, present: &[bool]) -> RoundPlan {
        let p = self.spec.subregions;
        let n = present.len();
        let a = a_t(&self.spec, round);
        let w = if self.spec.weights == WeightMode::Equal {
            Array2::from_elem((p, n), 1.0 / n as f64)
        } else {
            weights(a, &self.assignment, p)
        };
        let phi_max = w.iter().cloned().fold(0.0, f64::max);
        let mut arrived = self.arrivals(n);
        for (ok, &here) in arrived.iter_mut().zip(present) {
            *ok &= here;
        }
        let mut plan = RoundPlan {
            round,
            a,
            w,
            phi_max,
            arrived,
            selected: None,
            // Every agent takes part; what did not arrive is left out, the weights stay those
            // of all N agents.
            members: (0..n).collect(),
            dp: None,
            noise_sd: 0.0,
            shares: None,
            coin: None,
            around: None,
        };
        let Some(dp) = self.spec.dp else {
            return plan;
        };
        // One rate for selection, the 1/rate scaling and the noise, and the same one the
        // accountant is given (`Mechanism::server`): for fixed-size sampling it is m / N.
        let rate = crate::privacy::round_rate(dp.sampling, dp.q, n, round as u64 + 1);
        let selected = self.select(&dp, n, round as u64 + 1);
        plan.coin = dp.self_sampling.then_some(dp.q);
        // A selected message that does not arrive is left out, with the weights, the 1/rate
        // scaling and the noise unchanged: rescaling by what arrived would tie the output's
        // scale to who was included, which the accountant does not see. Each agent's clip and
        // weights are public functions of its own vector, so under secure aggregation the
        // agent applies them itself.
        // Under self-sampling the server asks every agent, and each uploads its vector or,
        // by its own coin, a (masked) zero: the server never learns who took part.
        plan.members = selected.clone();
        plan.selected = Some(selected);
        plan.dp = Some((rate, dp.clip / (p as f64).sqrt()));
        plan.noise_sd = dp.z * plan.phi_max * dp.clip / rate;
        plan.shares = match dp.noise {
            crate::privacy::Noise::Distributed(_) => Some(plan.noise_sd),
            crate::privacy::Noise::Gaussian => None,
        };
        plan
    }

    /// The round's release from its sum: the noise the server adds (unless the members'
    /// shares carry it) and its record; `clipped` selected vectors were clipped (None: the
    /// server cannot know, under secure aggregation).
    pub fn release(
        &mut self,
        plan: &RoundPlan,
        sum: RoundSum,
        clipped: Option<usize>,
    ) -> (Vec<Array1<f64>>, RoundRecord) {
        let RoundSum {
            sums: mut out,
            missing,
            noised,
            view,
        } = sum;
        let Some(selected) = plan.selected.clone() else {
            let rec = RoundRecord {
                round: plan.round,
                selected: plan.arrived.len(),
                clipped: self.spec.secure.is_none().then_some(0),
                a_t: plan.a,
                phi_max: plan.phi_max,
                noise_sd: 0.0,
                arrived: plan.arrived.len() - missing.len(),
                selected_agents: None,
                missing_agents: missing,
                view,
            };
            return (out, rec);
        };
        // An empty subset still releases noise (algorithms.md section 4); so does a
        // distributed round that yielded no sum, from the server, its output then independent
        // of every agent's data. Where the members' shares carried the noise the server still
        // draws the central server's and drops it: its stream, and with it every later
        // selection, is then the central server's round for round, so the two are compared on
        // the same cohorts.
        if noised {
            let mut unused: Vec<Array1<f64>> = out.iter().map(|o| Array1::zeros(o.len())).collect();
            self.add_noise(&mut unused, plan.noise_sd);
        } else {
            self.add_noise(&mut out, plan.noise_sd);
        }
        let missing_agents: Vec<usize> = missing
            .into_iter()
            .filter(|a| selected.binary_search(a).is_ok())
            .collect();
        let rec = RoundRecord {
            round: plan.round,
            selected: selected.len(),
            clipped,
            a_t: plan.a,
            phi_max: plan.phi_max,
            noise_sd: plan.noise_sd,
            arrived: selected.len() - missing_agents.len(),
            selected_agents: Some(selected),
            missing_agents,
            view,
        };
        (out, rec)
    }

    /// Gaussian noise of s.d. `sd` on every coordinate, drawn by the server.
    fn add_noise(&mut self, out: &mut [Array1<f64>], sd: f64) {
        for o in out.iter_mut() {
            for v in o.iter_mut() {
                let e: f64 = StandardNormal.sample(&mut self.rng);
                *v += sd * e;
            }
        }
    }

    /// The agents the server asks to take part in round `round` (1-based), in increasing
    /// order (callers search it): every agent under self-sampling (each then decides by its
    /// own coin, `MemberPart::decide`), else drawn by the server: Poisson, fixed-size, or by
    /// random allocation, each agent's round of a period drawn at the period's first round.
    fn select(&mut self, dp: &crate::spec::DpSpec, n: usize, round: u64) -> Vec<usize> {
        match dp.sampling {
            Sampling::Allocation { per_agent, rounds } => {
                let (first, len) = crate::privacy::allocation::period_of(rounds, per_agent, round);
                if self.allocated.as_ref().is_none_or(|(f, _)| *f != first) {
                    let rng = &mut self.rng;
                    let chosen = (0..n).map(|_| first + rng.random_range(0..len)).collect();
                    self.allocated = Some((first, chosen));
                }
                let (_, chosen) = self.allocated.as_ref().expect("drawn above");
                (0..n).filter(|&a| chosen[a] == round).collect()
            }
            Sampling::Poisson if dp.self_sampling => (0..n).collect(),
            Sampling::Poisson => (0..n).filter(|_| self.rng.random::<f64>() < dp.q).collect(),
            Sampling::Fixed => {
                let k = crate::privacy::fixed_sample_size(dp.q, n);
                let mut s = sample_indices(&mut self.rng, n, k).into_vec();
                s.sort_unstable();
                s
            }
        }
    }

    /// The P sums over the cohort of coef[i] omega, the members whose vector is missing from
    /// them, and whether the sum carries the agents' noise shares: in the clear, each added in
    /// agent order; under secure aggregation through `secagg::round`, where a round whose
    /// survivors fall below the threshold loses every vector. Under distributed noise each
    /// member whose vector goes in adds its discrete Gaussian shares (`member_input`).
    fn sum(
        &mut self,
        m: usize,
        plan: &RoundPlan,
        cohort: &[Contribution],
    ) -> Result<RoundSum, String> {
        let p = self.spec.subregions;
        let mut out = vec![Array1::zeros(m); p];
        let missing = |c: &[Contribution]| -> Vec<usize> {
            c.iter()
                .filter(|c| c.omega.is_none())
                .map(|c| c.agent)
                .collect()
        };
        let Some(secure) = self.spec.secure else {
            for c in cohort {
                if let Some(omega) = c.omega {
                    for (o, &coef) in out.iter_mut().zip(&c.coef) {
                        o.scaled_add(coef, omega);
                    }
                }
            }
            return Ok(RoundSum {
                sums: out,
                missing: missing(cohort),
                noised: false,
                view: None,
            });
        };
        let k = cohort.len();
        let threshold = secure.threshold(k);
        let mut inputs: Vec<Option<Vec<u64>>> = Vec::with_capacity(k);
        for c in cohort {
            let part = plan.member_part(c.agent);
            let mut rng = privacy_stream(&self.agent_rngs[c.agent], plan.round, Draw::Shares);
            let input = c
                .omega
                .map(|omega| member_input(c.agent, &c.coef, omega, &part, threshold, &mut rng))
                .transpose()?;
            inputs.push(input);
        }
        // Each member's key material from its own stream, the round's part of it (so that a
        // site can draw it again after a restart; cohorts are in agent order).
        let mut members: Vec<(usize, Rng)> = cohort
            .iter()
            .map(|c| {
                let base = &self.secure_rngs[c.agent];
                (
                    c.agent,
                    crate::server::secagg::round_stream(base, plan.round),
                )
            })
            .collect();
        let around = plan
            .around
            .as_ref()
            .expect("a secure server's plan has its neighbourhoods (`plan`)");
        let (total, view) = secagg::round_among(&mut members, &inputs, p * m, threshold, around);
        let view = self.keep_views.then_some(view);
        let Some(total) = total else {
            return Ok(RoundSum {
                sums: out,
                missing: cohort.iter().map(|c| c.agent).collect(),
                noised: false,
                view,
            });
        };
        Ok(RoundSum {
            sums: decode_sums(&total, p, m),
            missing: missing(cohort),
            noised: plan.shares_in_sum(true),
            view,
        })
    }
}

/// A round as the server plans it before it sees any vector: the sub-regions' weights,
/// which messages arrived, who is selected and who contributes (the cohort), and the
/// scaling, clip bound and noise. All of it is public: each cohort member computes its own
/// contribution from its `MemberPart`, in one process or at its own site.
#[derive(Clone, Debug)]
pub struct RoundPlan {
    pub round: usize,
    a: f64,
    w: Array2<f64>,
    phi_max: f64,
    /// Whether each agent's message reached the server (presence and participation model).
    arrived: Vec<bool>,
    /// Under DP, the selected agents, sorted; None: no DP, every agent takes part.
    selected: Option<Vec<usize>>,
    /// Who adds to the sum, in agent order: every agent without DP, the selected ones under
    /// DP, every agent under self-sampling (the unselected a zero).
    pub members: Vec<usize>,
    /// Under DP: the sampling rate of the 1/rate scaling, and the clip bound S / sqrt(P).
    dp: Option<(f64, f64)>,
    noise_sd: f64,
    /// Under distributed noise: the total s.d. the members' shares add up to.
    shares: Option<f64>,
    /// Under self-sampling: the rate q at which each member's own coin takes it part.
    coin: Option<f64>,
    /// Under secure aggregation: who masks with whom among the members, and the threshold
    /// of each neighbourhood.
    pub around: Option<secagg::Neighbourhoods>,
}

impl RoundPlan {
    /// What cohort member `agent` needs to compute its contribution.
    pub fn member_part(&self, agent: usize) -> MemberPart {
        let p = self.w.nrows();
        MemberPart {
            weights: (0..p).map(|i| self.w[[i, agent]]).collect(),
            dp: self.dp,
            selected: self
                .selected
                .as_ref()
                .is_none_or(|s| s.binary_search(&agent).is_ok()),
            cohort: self.members.len(),
            share_sd: self.shares,
            coin: self.coin,
        }
    }

    /// Whether a recovered sum (`recovered`: the round yielded one) carries the members'
    /// distributed-noise shares, so that the server adds none: an empty cohort's zero sum
    /// carries none.
    pub fn shares_in_sum(&self, recovered: bool) -> bool {
        self.shares.is_some() && recovered && !self.members.is_empty()
    }

    /// Whether agent `agent`'s message counts as arrived this round.
    pub fn arrived(&self, agent: usize) -> bool {
        self.arrived[agent]
    }
}

/// One cohort member's view of a round's plan.
#[derive(Clone, Debug, PartialEq)]
pub struct MemberPart {
    /// Its weight phi_i in each sub-region.
    pub weights: Vec<f64>,
    /// Under DP: (rate, bound): its vector is clipped to `bound` and scaled by 1 / rate.
    pub dp: Option<(f64, f64)>,
    /// Whether it was selected (under self-sampling an unselected member uploads a zero).
    pub selected: bool,
    /// How many members add to the sum (the fixed-point range depends on it).
    pub cohort: usize,
    /// Under distributed noise: the total s.d. the members' shares add up to.
    pub share_sd: Option<f64>,
    /// Under self-sampling: the rate q of the member's own coin (`decide`).
    pub coin: Option<f64>,
}

impl MemberPart {
    /// The part once the member has tossed its own coin for round `round` (self-sampling:
    /// selected with probability q, from its privacy stream `own`, which only it holds in a
    /// federation); unchanged without self-sampling.
    pub fn decide(mut self, own: &Rng, round: usize) -> Self {
        if let Some(q) = self.coin.take() {
            let u: f64 = privacy_stream(own, round, Draw::Coin).random();
            self.selected &= u < q;
        }
        self
    }
}

/// What a member draws from its own privacy stream in a round.
#[derive(Clone, Copy)]
pub enum Draw {
    /// Its self-sampling coin.
    Coin,
    /// Its distributed-noise shares.
    Shares,
}

/// Member's stream for `draw` in round `round`: a ChaCha stream of its own privacy stream
/// `own` fixed by the round and the draw (not a position in one long stream), so a site
/// restarted mid-run, or asked for a round out of order, draws the same coin and shares as
/// the simulation.
pub fn privacy_stream(own: &Rng, round: usize, draw: Draw) -> Rng {
    let id = 2 * round as u64 + matches!(draw, Draw::Shares) as u64;
    secagg::round_stream(own, id as usize)
}

/// The factor a member's vector enters each sub-region's sum with: phi_i (no DP); under DP
/// phi_i scale / rate, scale = min(1, bound / |omega|), in that order of operations (0 for
/// an unselected member); and whether the vector was clipped.
pub fn coefficients(omega: Option<&Array1<f64>>, part: &MemberPart) -> (Vec<f64>, bool) {
    if !part.selected {
        return (vec![0.0; part.weights.len()], false);
    }
    let Some((rate, bound)) = part.dp else {
        return (part.weights.clone(), false);
    };
    let mut clipped = false;
    let scale = omega.map_or(1.0, |o| {
        let norm = o.dot(o).sqrt();
        if norm > bound {
            clipped = true;
            bound / norm
        } else {
            1.0
        }
    });
    let coef = part.weights.iter().map(|&w| w * scale / rate).collect();
    (coef, clipped)
}

/// What member `agent` adds to a secure round's sum: coef[i] omega for every sub-region i in
/// fixed point, sub-region after sub-region, plus (distributed noise) a discrete Gaussian
/// share of variance total^2 / threshold per word, drawn from `rng`, the member's own stream.
pub fn member_input<R: rand::RngCore + ?Sized>(
    agent: usize,
    coef: &[f64],
    omega: &Array1<f64>,
    part: &MemberPart,
    threshold: usize,
    rng: &mut R,
) -> Result<Vec<u64>, String> {
    let mut out = Vec::with_capacity(coef.len() * omega.len());
    for &c in coef {
        for &v in omega {
            out.push(crate::math::fixed::encode(c * v, part.cohort).ok_or_else(|| {
                format!(
                    "agent {agent}'s weighted vector has a coordinate {} outside secure aggregation's fixed-point range (|v| < 2^31 / cohort); clip it (dp = true, clip) or leave server.secure off",
                    c * v
                )
            })?);
        }
    }
    if let Some(total) = part.share_sd {
        let share =
            total * 2f64.powi(crate::math::fixed::FRACTION_BITS) / (threshold as f64).sqrt();
        for v in out.iter_mut() {
            // Two's complement: a negative share wraps as the fixed point expects.
            *v = v.wrapping_add(crate::privacy::discrete::sample(share, rng) as u64);
        }
    }
    Ok(out)
}

/// The P sums of M values from a secure round's fixed-point total.
pub fn decode_sums(total: &[u64], p: usize, m: usize) -> Vec<Array1<f64>> {
    (0..p)
        .map(|i| {
            Array1::from_iter(
                total[i * m..(i + 1) * m]
                    .iter()
                    .map(|&v| crate::math::fixed::decode(v)),
            )
        })
        .collect()
}

/// A round's P sums, the cohort members whose vector is missing from them, and whether the
/// sums carry the agents' noise shares.
pub struct RoundSum {
    sums: Vec<Array1<f64>>,
    missing: Vec<usize>,
    noised: bool,
    /// What the server saw, kept with `keep_views` under secure aggregation.
    view: Option<secagg::ServerView>,
}

impl RoundSum {
    /// A secure round's sums as the server decoded them (zeros when the round yielded
    /// none, with every member `missing`); `noised`: the members' distributed-noise shares
    /// are in them (`RoundPlan::shares_in_sum`), else the server adds the noise.
    pub fn secure(sums: Vec<Array1<f64>>, missing: Vec<usize>, noised: bool) -> Self {
        RoundSum {
            sums,
            missing,
            noised,
            view: None,
        }
    }
}

/// One cohort member's share of a round: its vector (None: did not arrive), the factor it
/// enters each sub-region's sum with, and whether it was clipped.
struct Contribution<'a> {
    agent: usize,
    coef: Vec<f64>,
    omega: Option<&'a Array1<f64>>,
    clipped: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::rng::{Purpose, SHARED, stream};
    use crate::spec::{DpSpec, InitRegion, Participation, SecureSpec};
    use ndarray::array;

    fn spec(p: usize, dp: Option<DpSpec>, weights: WeightMode) -> ServerSpec {
        ServerSpec {
            subregions: p,
            dp,
            weights,
            a: 15.0,
            t_const: 5,
            t_decay: 5,
            init: InitRegion::Subregion,
            participation: Participation::default(),
            secure: None,
        }
    }

    /// Poisson sampling at (q, z) with clipping bound S, add/remove adjacency, no budget.
    fn poisson(q: f64, z: f64, clip: f64) -> DpSpec {
        DpSpec {
            q,
            z,
            clip,
            sampling: Sampling::Poisson,
            adjacency: crate::privacy::Adjacency::AddRemove,
            budget: None,
            agreement: None,
            noise: crate::privacy::Noise::Gaussian,
            self_sampling: false,
            follow: crate::spec::Follow::Schedule,
        }
    }

    /// A server whose selection/noise and arrival streams both come from `seed`.
    fn server(s: ServerSpec, assignment: Vec<usize>, seed: u64) -> Server {
        Server::new(
            s,
            assignment,
            stream(seed, 0, SHARED, Purpose::Server),
            stream(seed, 0, SHARED, Purpose::Participation),
        )
    }

    #[test]
    fn a_t_follows_the_papers_synthetic_schedule() {
        let s = spec(2, None, WeightMode::Adaptive);
        let got: Vec<f64> = (0..=12).map(|t| a_t(&s, t)).collect();
        let want = [
            16.0, 16.0, 16.0, 16.0, 16.0, 16.0, 16.0, 12.25, 8.5, 4.75, 1.0, 1.0, 1.0,
        ];
        assert_eq!(got, want);
        assert_eq!(a_t(&spec(2, None, WeightMode::Fixed), 100), 16.0);
        // Real-world: 16 up to round 10, 1 from round 40.
        let rw = ServerSpec {
            t_const: 10,
            t_decay: 30,
            ..s
        };
        assert_eq!(a_t(&rw, 10), 16.0);
        assert_eq!(a_t(&rw, 11), 16.0);
        assert!((a_t(&rw, 40) - 1.0).abs() < 1e-12);
        assert!(a_t(&rw, 25) > 1.0 && a_t(&rw, 25) < 16.0);
    }

    #[test]
    fn weights_are_the_papers_softmax() {
        // phi ∝ exp((a I + 1) / T) with T = a / (a_t - 1).
        let assignment = [0, 1, 0, 1, 1];
        let (a, at) = (15.0, 8.5);
        let w = weights(at, &assignment, 2);
        let temp = a / (at - 1.0);
        for i in 0..2 {
            let raw: Vec<f64> = assignment
                .iter()
                .map(|&r| ((a * (r == i) as u8 as f64 + 1.0) / temp).exp())
                .collect();
            let total: f64 = raw.iter().sum();
            for n in 0..5 {
                assert!((w[[i, n]] - raw[n] / total).abs() < 1e-12);
            }
        }
        // a_t = 1: uniform.
        assert!(
            weights(1.0, &assignment, 2)
                .iter()
                .all(|&v| (v - 0.2).abs() < 1e-15)
        );
    }

    #[test]
    fn partition_matches_the_papers_boxes() {
        let p = Partition::new(3, 1);
        assert_eq!(p.region(array![0.0].view()), 0);
        assert_eq!(
            p.region(array![1.0 / 3.0].view()),
            0,
            "boundary goes to the lower index"
        );
        assert_eq!(p.region(array![0.34].view()), 1);
        assert_eq!(p.region(array![1.0].view()), 2);
        let q = Partition::new(4, 2);
        assert_eq!(q.region(array![0.2, 0.2].view()), 0);
        assert_eq!(q.region(array![0.2, 0.7].view()), 1);
        assert_eq!(q.region(array![0.7, 0.2].view()), 2);
        assert_eq!(q.region(array![0.7, 0.7].view()), 3);
    }

    #[test]
    fn non_private_aggregate_is_the_weighted_sum() {
        let s = spec(2, None, WeightMode::Adaptive);
        let mut srv = server(s, vec![0, 1], 1);
        let omegas = [array![1.0, 0.0], array![0.0, 1.0]];
        let (out, rec) = srv.aggregate(0, &omegas);
        let b = 15f64.exp();
        assert!(
            (out[0][0] - b / (b + 1.0)).abs() < 1e-12
                && (out[0][1] - 1.0 / (b + 1.0)).abs() < 1e-12
        );
        assert!((out[1][1] - b / (b + 1.0)).abs() < 1e-12);
        assert_eq!((rec.selected, rec.clipped, rec.noise_sd), (2, Some(0), 0.0));
    }

    #[test]
    fn private_aggregate_clips_subsamples_and_adds_the_right_noise() {
        let dp = poisson(0.5, 1.0, 2.0);
        let s = spec(1, Some(dp), WeightMode::Equal);
        let n = 400;
        let omegas: Vec<Array1<f64>> = (0..n)
            .map(|i| array![if i % 2 == 0 { 10.0 } else { 0.5 }])
            .collect();
        let mut srv = server(s, vec![0; n], 2);
        let mut selected = 0;
        let mut clipped = 0;
        let mut noise = Vec::new();
        for round in 0..200 {
            let (_, rec) = srv.aggregate(round, &omegas);
            selected += rec.selected;
            clipped += rec.clipped.expect("a plain server counts its clips");
            assert!((rec.noise_sd - 1.0 * (1.0 / n as f64) * 2.0 / 0.5).abs() < 1e-12);
            noise.push(rec.noise_sd);
        }
        // Poisson(q = 0.5) over 400 agents x 200 rounds; half the vectors exceed the bound 2.
        let rate = selected as f64 / (n * 200) as f64;
        assert!((rate - 0.5).abs() < 0.01, "{rate}");
        let frac = clipped as f64 / selected as f64;
        assert!((frac - 0.5).abs() < 0.02, "{frac}");
        // Fixed-size sampling selects exactly round(N q).
        let fixed = ServerSpec {
            dp: Some(DpSpec {
                sampling: Sampling::Fixed,
                adjacency: crate::privacy::Adjacency::ReplaceOne,
                ..dp
            }),
            ..spec(1, None, WeightMode::Equal)
        };
        let mut srv = server(fixed, vec![0; n], 3);
        assert_eq!(srv.aggregate(0, &omegas).1.selected, 200);
        // N = 30, q = 0.35: 11 agents, so the rate behind the scaling and the noise is 11/30.
        let fixed = ServerSpec {
            dp: Some(DpSpec {
                q: 0.35,
                sampling: Sampling::Fixed,
                adjacency: crate::privacy::Adjacency::ReplaceOne,
                ..dp
            }),
            ..spec(1, None, WeightMode::Equal)
        };
        let mut srv = server(fixed, vec![0; 30], 3);
        let rec = srv.aggregate(0, &omegas[..30]).1;
        assert_eq!(rec.selected, 11);
        assert!((rec.noise_sd - (1.0 / 30.0) * 2.0 / (11.0 / 30.0)).abs() < 1e-12);
    }

    #[test]
    fn private_mean_is_unbiased() {
        // E[omega^(i)] = sum_n phi_n omega_n when nothing is clipped.
        let dp = poisson(0.25, 0.5, 100.0);
        let s = spec(1, Some(dp), WeightMode::Equal);
        let n = 50;
        let omegas: Vec<Array1<f64>> = (0..n).map(|i| array![i as f64 / 10.0]).collect();
        let exact = omegas.iter().map(|o| o[0]).sum::<f64>() / n as f64;
        let mut srv = server(s, vec![0; n], 4);
        let reps = 20_000;
        let mean = (0..reps)
            .map(|r| srv.aggregate(r, &omegas).0[0][0])
            .sum::<f64>()
            / reps as f64;
        // Var per draw: sampling (~1.6) + noise (z phi S / q)^2 = 16 -> s.e. ~ 0.03.
        assert!((mean - exact).abs() < 0.15, "{mean} vs {exact}");
    }

    #[test]
    fn messages_that_do_not_arrive_are_left_out_with_weights_and_noise_unchanged() {
        // Poisson q = 0.5, every agent dropped with probability 0.4, N = 200, 400 rounds: an
        // agent's message enters the aggregate with probability 0.5 x 0.6 = 0.3 <= q, and the
        // noise is what it is without dropouts, so each round is the subsampled Gaussian at
        // rate 0.3 with the same z, which the accountant at q = 0.5 bounds from above.
        let dp = poisson(0.5, 1.0, 2.0);
        let n = 200;
        let omegas: Vec<Array1<f64>> = (0..n).map(|_| array![1.0]).collect();
        let full = spec(1, Some(dp), WeightMode::Equal);
        let lossy = ServerSpec {
            participation: Participation {
                drop: vec![0.4; n],
                ..Participation::default()
            },
            ..full.clone()
        };
        let mut a = server(full, vec![0; n], 5);
        let mut b = server(lossy, vec![0; n], 5);
        let (mut included, mut missing) = (0usize, 0usize);
        for round in 0..400 {
            let (ra, rb) = (a.aggregate(round, &omegas).1, b.aggregate(round, &omegas).1);
            // The same selection (arrivals have their own stream) and the same noise.
            assert_eq!(ra.selected_agents, rb.selected_agents);
            assert_eq!(ra.noise_sd, rb.noise_sd);
            assert!(ra.missing_agents.is_empty() && ra.arrived == ra.selected);
            assert_eq!(rb.arrived + rb.missing_agents.len(), rb.selected);
            included += rb.arrived;
            missing += rb.missing_agents.len();
        }
        let rate = included as f64 / (n * 400) as f64;
        assert!((rate - 0.3).abs() < 0.01, "{rate}");
        let lost = missing as f64 / (included + missing) as f64;
        assert!((lost - 0.4).abs() < 0.01, "{lost}");

        // What arrived is all that is aggregated: with z tiny and every vector 1, the output is
        // (arrived / N) / q.
        let exact = ServerSpec {
            dp: Some(DpSpec {
                z: 1e-12,
                clip: 10.0,
                ..dp
            }),
            participation: Participation {
                drop: vec![0.4; n],
                latency: Some((1.0, 2.0)),
                outage: Some((0.5, 50)),
            },
            ..spec(1, None, WeightMode::Equal)
        };
        let mut c = server(exact, vec![0; n], 6);
        let (mut arrived, mut selected) = (0, 0);
        for round in 0..200 {
            let (out, rec) = c.aggregate(round, &omegas);
            let want = rec.arrived as f64 / n as f64 / 0.5;
            assert!((out[0][0] - want).abs() < 1e-9, "{} vs {want}", out[0][0]);
            arrived += rec.arrived;
            selected += rec.selected;
        }
        // Arrival: not dropped (0.6), latency within the deadline (1 - e^-2), and not in the
        // quarter of the agents an outage takes in half the rounds (1 - 0.5 x 0.25).
        let want = 0.6 * (1.0 - (-2.0f64).exp()) * (1.0 - 0.5 * 0.25);
        let got = arrived as f64 / selected as f64;
        assert!((got - want).abs() < 0.02, "{got} vs {want}");
    }

    fn secure_server(s: ServerSpec, n: usize, seed: u64) -> Server {
        server(s, (0..n).map(|a| a % 4).collect(), seed).with_secure_streams(
            (0..n as u64)
                .map(|a| stream(seed, 0, a, Purpose::SecureAggregation))
                .collect(),
            (0..n as u64)
                .map(|a| stream(seed, 0, a, Purpose::AgentPrivacy))
                .collect(),
        )
    }

    #[test]
    fn secure_aggregation_gives_the_plain_sums_to_fixed_point_precision() {
        // 12 agents, 4 sub-regions, M = 6; DP with Poisson sampling and a 30% drop rate, and
        // without DP: the same selection, clipping, noise and missing agents as in the clear,
        // and every sum within cohort x 2^-33 of the plain one.
        let n = 12;
        let omegas: Vec<Array1<f64>> = (0..n)
            .map(|a| Array1::from_iter((0..6).map(|k| ((a * 7 + k) as f64).sin() * 3.0)))
            .collect();
        let lossy = Participation {
            drop: vec![0.3; n],
            ..Participation::default()
        };
        for dp in [None, Some(poisson(0.6, 0.5, 4.0))] {
            let plain = ServerSpec {
                participation: lossy.clone(),
                ..spec(4, dp, WeightMode::Adaptive)
            };
            let secure = ServerSpec {
                secure: Some(SecureSpec::plain(0.49)),
                ..plain.clone()
            };
            let mut a = secure_server(plain, n, 8);
            let mut b = secure_server(secure, n, 8);
            let (mut lost_rounds, mut dropped) = (0, 0);
            for round in 0..40 {
                let (va, ra) = a.aggregate(round, &omegas);
                let (vb, rb) = b.aggregate(round, &omegas);
                // The secure server cannot know who clipped; the plain one counts them.
                assert!(ra.clipped.is_some() && rb.clipped.is_none());
                assert_eq!(
                    (&ra.selected_agents, ra.noise_sd),
                    (&rb.selected_agents, rb.noise_sd)
                );
                dropped += ra.missing_agents.len();
                if ra.arrived < (SecureSpec::plain(0.49)).threshold(ra.selected) {
                    // Below the threshold the secure round loses every vector.
                    assert_eq!(rb.arrived, 0, "round {round}");
                    lost_rounds += 1;
                    continue;
                }
                let known = RoundRecord {
                    clipped: ra.clipped,
                    ..rb.clone()
                };
                assert_eq!(ra, known, "round {round}: the same record, clips aside");
                let tol = rb.selected as f64 * 2f64.powi(-33) + 1e-15;
                for (x, y) in va.iter().zip(&vb) {
                    for (u, v) in x.iter().zip(y) {
                        assert!((u - v).abs() <= tol, "round {round}: {u} vs {v}");
                    }
                }
            }
            assert!(dropped > 0 && lost_rounds < 40, "{dropped} {lost_rounds}");
        }
    }

    #[test]
    fn distributed_shares_sum_to_the_central_noise() {
        // Zero vectors, dropout 0 (threshold = cohort): every completed round's output is the
        // agents' shares alone, of total variance noise_sd^2 per coordinate. 40 rounds x 4 x 25
        // coordinates: the sample variance is within 10% with probability above 99.9%.
        let n = 10;
        let omegas = vec![Array1::zeros(25); n];
        let dp = DpSpec {
            noise: crate::privacy::Noise::Distributed(
                crate::privacy::discrete::Distributed::bound(n, 100, 4.0, 0.5, 32).unwrap(),
            ),
            ..poisson(0.6, 0.5, 4.0)
        };
        let s = ServerSpec {
            secure: Some(SecureSpec::plain(0.0)),
            ..spec(4, Some(dp), WeightMode::Adaptive)
        };
        let mut srv = secure_server(s, n, 11);
        let (mut sum_sq, mut count) = (0.0, 0);
        for round in 0..40 {
            let (out, rec) = srv.aggregate(round, &omegas);
            for o in &out {
                for v in o {
                    sum_sq += (v / rec.noise_sd).powi(2);
                    count += 1;
                }
            }
        }
        let ratio = sum_sq / count as f64;
        assert!((ratio - 1.0).abs() < 0.1, "{ratio}");
    }

    /// Under self-sampling the server asks every agent (its record says so and nothing
    /// more) and each decides by its own coin, the one a site tosses from its own privacy
    /// stream: agent a's vector 2^(a-10) makes the sum name who took part, and two servers
    /// whose own streams differ sum the same agents, about q N of them each round.
    #[test]
    fn self_sampling_takes_the_members_own_coins_and_the_server_learns_none() {
        let n: usize = 16;
        let omegas: Vec<Array1<f64>> = (0..n).map(|a| array![2f64.powi(a as i32 - 10)]).collect();
        let q = 0.25;
        let dp = DpSpec {
            self_sampling: true,
            ..poisson(q, 1e-12, 100.0)
        };
        let s = ServerSpec {
            secure: Some(SecureSpec::plain(0.3)),
            ..spec(1, Some(dp), WeightMode::Equal)
        };
        let streams = |seed: u64, purpose: Purpose| -> Vec<Rng> {
            (0..n as u64).map(|a| stream(seed, 0, a, purpose)).collect()
        };
        let (keys, own) = (Purpose::SecureAggregation, Purpose::AgentPrivacy);
        let mut a =
            server(s.clone(), vec![0; n], 1).with_secure_streams(streams(1, keys), streams(5, own));
        let mut b = server(s, vec![0; n], 2).with_secure_streams(streams(2, keys), streams(5, own));
        let sites = streams(5, own);
        let mut taken = 0;
        for round in 0..100 {
            let (va, ra) = a.aggregate(round, &omegas);
            let (vb, _) = b.aggregate(round, &omegas);
            // Each weighted 1/N, scaled by 1/q: the sum is 2^-10 (sum of 2^a over takers).
            let who = |v: &[Array1<f64>]| (v[0][0] * q * n as f64 * 1024.0).round() as u64;
            let coins: u64 = (0..n)
                .filter(|&k| privacy_stream(&sites[k], round, Draw::Coin).random::<f64>() < q)
                .map(|k| 1u64 << k)
                .sum();
            assert_eq!(who(&va), coins, "round {round}");
            assert_eq!(who(&vb), coins, "round {round}");
            assert_eq!(ra.selected, n);
            assert_eq!(ra.selected_agents, Some((0..n).collect()));
            taken += coins.count_ones();
        }
        let rate = taken as f64 / (100 * n) as f64;
        assert!((rate - q).abs() < 0.04, "{rate}");
    }

    #[test]
    fn a_secure_round_below_its_threshold_loses_every_vector() {
        // Dropout 0: every member must survive; with drops some rounds lose all, and then the
        // output is the noise alone (z tiny: zero) while the selection and noise stay the
        // plain server's.
        let n = 6;
        let omegas = vec![array![1.0]; n];
        let dp = DpSpec {
            z: 1e-12,
            ..poisson(1.0, 1.0, 10.0)
        };
        let s = ServerSpec {
            participation: Participation {
                drop: vec![0.2; n],
                ..Participation::default()
            },
            secure: Some(SecureSpec::plain(0.0)),
            ..spec(1, Some(dp), WeightMode::Equal)
        };
        let mut srv = secure_server(s, n, 3);
        let (mut whole, mut lost) = (0, 0);
        for round in 0..60 {
            let (out, rec) = srv.aggregate(round, &omegas);
            if rec.arrived == n {
                whole += 1;
                assert!((out[0][0] - 1.0).abs() < 1e-9);
            } else {
                lost += 1;
                assert_eq!(rec.arrived, 0, "all or nothing at threshold = cohort");
                assert_eq!(rec.missing_agents, (0..n).collect::<Vec<_>>());
                assert!(out[0][0].abs() < 1e-9);
            }
        }
        assert!(whole > 5 && lost > 5, "{whole} {lost}");
        assert_eq!(SecureSpec::plain(0.3).threshold(10), 7);
        assert_eq!(SecureSpec::plain(0.49).threshold(1), 1);
    }
}
