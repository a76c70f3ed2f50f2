//! Consensus (survey Sec. III-A, eq. 4-6 and Algorithm 1; Yue et al. 2023, its ref. [24]):
//! every agent finds its candidate x^c_k by its own acquisition, sends it to the server, and
//! queries x^new_k = [(W(t) kron I_d) x^c]_k, a convex combination of all candidates by a
//! symmetric doubly stochastic W(t). Only designs are shared, never outcomes.

use super::agent::{Decision, Learner, Rule, observe_all};
use super::{Algorithm, Broadcast, Federated, Query, Received, RunContext, Source};
use crate::error::Result;
use crate::math::rng::{Purpose, Rng, stream};
use crate::objective::{Point, Space};
use crate::spec::frameworks::{ConsensusSchedule, Decide, Framework};
use ndarray::Array1;
use rand_distr::{Distribution, StandardNormal};
use rayon::prelude::*;
use std::sync::Arc;

/// The agent's rule for a framework's `acquisition` key.
pub fn rule_of(decide: Decide) -> Rule {
    match decide {
        Decide::Ts => Rule::Thompson,
        Decide::Ei(form) => Rule::Ei(form),
        Decide::Ucb { beta } => Rule::Ucb { beta },
    }
}

/// Eq. 6 from W(0) = w0 I + (1 - w0) J/K (w0 = 0: the uniform average, as the survey
/// writes it): W(t) = a_t I + (1 - a_t) J/K with a_t = w0 + (1 - w0) t/T, moving linearly to
/// the identity, which it reaches at the last iteration t = T.
pub fn linear_w(k: usize, t: usize, t_max: usize, w0: f64) -> Vec<Vec<f64>> {
    // With w0 = 0 this is t/T to the bit.
    let a = w0 + (1.0 - w0) * ((t.min(t_max) as f64) / t_max as f64);
    (0..k)
        .map(|i| {
            (0..k)
                .map(|j| (1.0 - a) / k as f64 + if i == j { a } else { 0.0 })
                .collect()
        })
        .collect()
}

/// The leader scheme of [24]'s public code: from the linear W of the previous step
/// (W((t-1)) here, whose off-diagonal entries are at least (1 - w0)/(TK) until the end), move one
/// step of eq. 6's size s = (1 - w0)/(TK) towards the leader l: every entry loses s, l's row
/// and column gain (K-1) s instead, and l's own weight loses (K-1)^2 s, so that every agent leans
/// on the leader while the leader explores away from its own candidate. When l's weight
/// cannot pay that, the star W (l's row and column 1/(K-1), l's own 0, the others
/// (K-2)/(K-1)^2). Both keep W symmetric, doubly stochastic and non-negative.
pub fn leader_w(k: usize, t: usize, t_max: usize, w0: f64, leader: usize) -> Vec<Vec<f64>> {
    if k == 1 {
        return vec![vec![1.0]];
    }
    let base = linear_w(k, t.saturating_sub(1), t_max, w0);
    let (kf, tf) = (k as f64, t_max as f64);
    // Eq. 6's step, (1 - w0) / (TK) from a start with own weight w0 (the same bits at 0).
    let step = (1.0 - w0) / (tf * kf);
    let cost = (kf - 1.0) * (kf - 1.0) * step;
    if base[leader][leader] > cost {
        let mut w: Vec<Vec<f64>> = base
            .iter()
            .map(|row| row.iter().map(|v| v - step).collect())
            .collect();
        for j in 0..k {
            w[j][leader] = base[j][leader] + (kf - 1.0) * step;
            w[leader][j] = base[leader][j] + (kf - 1.0) * step;
        }
        w[leader][leader] = base[leader][leader] - cost;
        w
    } else {
        let other = (kf - 2.0) / ((kf - 1.0) * (kf - 1.0));
        let star = |i: usize, j: usize| match (i == leader, j == leader) {
            (true, true) => 0.0,
            (true, false) | (false, true) => 1.0 / (kf - 1.0),
            (false, false) => other,
        };
        (0..k)
            .map(|i| (0..k).map(|j| star(i, j)).collect())
            .collect()
    }
}

/// The grid point nearest to `x` (unit coordinates), or `x` itself on a box: a convex
/// combination of grid points is rarely one. On a box `x` is held to [0, 1]: a convex
/// combination of points of the unit cube lies in it, but W's rounding can leave a coordinate
/// an ulp outside (-3e-18 seen with the leader schedule), which a site rightly refuses.
pub fn to_space(space: &Space, x: Vec<f64>) -> Point {
    match space.grid() {
        None => space.point(x.into_iter().map(|v| v.clamp(0.0, 1.0)).collect()),
        Some(grid) => {
            let pts = grid.points();
            let mut best = (f64::INFINITY, 0);
            for (i, row) in pts.rows().into_iter().enumerate() {
                let d: f64 = row.iter().zip(&x).map(|(a, b)| (a - b) * (a - b)).sum();
                if d < best.0 {
                    best = (d, i);
                }
            }
            grid.at(best.1)
        }
    }
}

pub struct Consensus {
    agents: Vec<Learner>,
    targets: Vec<usize>,
    rule: Rule,
    schedule: ConsensusSchedule,
    /// W(0)'s own share (`Framework::Consensus`).
    own_weight: f64,
    iterations: usize,
    space: Arc<Space>,
    /// The noise's s.d. on each coordinate of a shared candidate, and each agent's stream
    /// for it; None: candidates are shared as they are.
    noise: Option<(f64, Vec<Rng>)>,
    /// Per agent, its last candidate and the iteration it was decided for: an agent the
    /// server leaves alone queries it exactly.
    candidates: Vec<Option<(usize, Point)>>,
}

impl Consensus {
    pub fn new(ctx: &RunContext) -> Self {
        let Framework::Consensus {
            decide,
            schedule,
            own_weight,
            noise,
        } = ctx.algorithm.framework
        else {
            unreachable!("consensus specs carry consensus settings")
        };
        let n = ctx.landscape.agents();
        let dim = ctx.landscape.space.dim();
        let noise = noise.map(|z| {
            let streams = (0..n)
                .map(|a| stream(ctx.seed(), ctx.run as u64, a as u64, Purpose::Framework))
                .collect();
            // z times the candidate's norm bound S = sqrt(D) / 2 about the box's centre
            // (`Framework::mechanism`).
            (z * (dim as f64).sqrt() / 2.0, streams)
        });
        Consensus {
            noise,
            agents: (0..n).map(|a| Learner::for_run(ctx, a)).collect(),
            targets: (0..n).collect(),
            candidates: vec![None; n],
            rule: rule_of(decide),
            schedule,
            own_weight,
            iterations: ctx.spec.iterations,
            space: ctx.landscape.space.clone(),
        }
    }
}

impl Consensus {
    /// Agent `agent`'s candidate for iteration t (Algorithm 1, line 3, on its own streams),
    /// kept for its own query, and what it sends: the candidate (plus noise when the spec
    /// says, clamped to the box: post-processing) and, with the leader schedule, its
    /// acquisition value, which elects the leader.
    fn send(&mut self, agent: usize, t: usize) -> Result<Vec<f64>> {
        let d = self.agents[agent].decide(self.rule, None)?;
        Ok(self.sent(agent, t, d))
    }

    /// What agent `agent` sends of its decision `d` for iteration t (see `send`).
    fn sent(&mut self, agent: usize, t: usize, d: Decision) -> Vec<f64> {
        let mut sent: Vec<f64> = d.point.x.clone();
        if let Some((sd, streams)) = &mut self.noise {
            let rng = &mut streams[agent];
            for v in sent.iter_mut() {
                let e: f64 = StandardNormal.sample(rng);
                *v = (*v + *sd * e).clamp(0.0, 1.0);
            }
        }
        if self.schedule == ConsensusSchedule::Leader {
            // A finite stand-in for an infinite value elects the same leader (the first best).
            sent.push(d.value.clamp(f64::MIN, f64::MAX));
        }
        self.candidates[agent] = Some((t, d.point));
        sent
    }

    /// Line 4, the server's consensus step on the candidates that arrived (all of them in one
    /// process): each sender's row of W(t) over the K senders applied to their candidates.
    /// A sender whose row is its own (W = I at t = T) gets nothing: it queries its exact
    /// candidate, which it never needed to send.
    fn combine(&self, t: usize, messages: &[Option<Array1<f64>>]) -> Broadcast {
        let dim = self.space.dim();
        let senders = super::senders(messages);
        let k = senders.len();
        let mut to_each = vec![Received::default(); messages.len()];
        if k == 0 {
            return Broadcast::none();
        }
        let w = match self.schedule {
            ConsensusSchedule::Linear => linear_w(k, t, self.iterations, self.own_weight),
            ConsensusSchedule::Leader => {
                // The first best, as argmax everywhere in fbo.
                let mut leader = 0;
                for (i, (_, m)) in senders.iter().enumerate() {
                    if m[dim] > senders[leader].1[dim] {
                        leader = i;
                    }
                }
                leader_w(k, t, self.iterations, self.own_weight, leader)
            }
        };
        for (i, &(a, _)) in senders.iter().enumerate() {
            let alone = (0..k).all(|j| (w[i][j] == 0.0) || i == j) && w[i][i] == 1.0;
            if alone {
                continue;
            }
            let mut x = vec![0.0; dim];
            for (j, (_, m)) in senders.iter().enumerate() {
                for (xc, v) in x.iter_mut().zip(m.iter()) {
                    *xc += w[i][j] * v;
                }
            }
            to_each[a].point = Some(to_space(&self.space, x));
        }
        Broadcast {
            all: Received::default(),
            to_each,
        }
    }

    /// Agent `agent`'s query at t: the server's point for it, or its own candidate (decided
    /// afresh if it sent none for t: a site that missed the round).
    fn query(&mut self, agent: usize, t: usize, received: &Received) -> Result<Query> {
        if let Some(p) = &received.point {
            return Ok(Query {
                agent,
                point: p.clone(),
                source: Source::Server,
            });
        }
        let own = match self.candidates[agent].take() {
            Some((at, p)) if at == t => p,
            _ => self.agents[agent].decide(self.rule, None)?.point,
        };
        Ok(Query {
            agent,
            point: own,
            source: match self.rule {
                Rule::Thompson => Source::Own,
                _ => Source::Acquisition,
            },
        })
    }
}

impl Federated for Consensus {
    fn message(&mut self, agent: usize, t: usize) -> Result<Option<Array1<f64>>> {
        // An agent whose decision fails (a singular model) sends nothing this round and
        // decides again when it chooses.
        Ok(self.send(agent, t).ok().map(Array1::from))
    }

    fn broadcast(&mut self, t: usize, messages: &[Option<Array1<f64>>]) -> Result<Broadcast> {
        Ok(self.combine(t, messages))
    }

    fn choose(&mut self, agent: usize, t: usize, received: &Received) -> Result<Query> {
        self.query(agent, t, received)
    }

    fn message_len(&self) -> usize {
        self.space.dim() + usize::from(self.schedule == ConsensusSchedule::Leader)
    }
}

impl Algorithm for Consensus {
    fn belief(&self, agent: usize) -> Option<super::agent::Belief> {
        self.agents.get(agent).map(|l| l.belief(None))
    }

    fn targets(&self) -> &[usize] {
        &self.targets
    }

    fn propose(&mut self, t: usize) -> Result<Vec<Query>> {
        // The three steps a real federation takes. Each agent decides on its own streams, so
        // deciding in parallel cannot change the result.
        let rule = self.rule;
        let decisions = self
            .agents
            .par_iter_mut()
            .map(|l| l.decide(rule, None))
            .collect::<Result<Vec<_>>>()?;
        let mut messages = Vec::with_capacity(decisions.len());
        for (a, d) in decisions.into_iter().enumerate() {
            messages.push(Some(Array1::from(self.sent(a, t, d))));
        }
        let broadcast = self.combine(t, &messages);
        (0..self.agents.len())
            .map(|a| self.query(a, t, broadcast.for_agent(a)))
            .collect()
    }

    fn observe(&mut self, queries: &[Query], ys: &[f64]) {
        observe_all(&mut self.agents, queries, ys);
    }

    /// Each agent sends its candidate (D numbers) every round, and with the leader schedule
    /// the acquisition value that elects the leader.
    fn params_sent(&self, _agent: usize, t: usize) -> u64 {
        self.message_len() as u64 * t as u64
    }

    fn federated(&mut self) -> Option<&mut dyn Federated> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_doubly_stochastic(w: &[Vec<f64>]) {
        let k = w.len();
        for i in 0..k {
            let row: f64 = w[i].iter().sum();
            let col: f64 = (0..k).map(|j| w[j][i]).sum();
            assert!(
                (row - 1.0).abs() < 1e-12 && (col - 1.0).abs() < 1e-12,
                "{w:?}"
            );
            for j in 0..k {
                assert!((w[i][j] - w[j][i]).abs() < 1e-15, "symmetric");
                assert!(w[i][j] >= -1e-15 && w[i][j] <= 1.0 + 1e-15, "{w:?}");
            }
        }
    }

    #[test]
    fn a_start_with_own_weight_is_worked_by_hand() {
        // K = 4, w0 = 0.5: W(0) = 0.5 I + 0.5 J/4, diagonal 0.625, off-diagonal 0.125; at
        // t = 15 of 30, a = 0.5 + 0.5 x 0.5 = 0.75: diagonal 0.8125, off-diagonal 0.0625.
        let w = linear_w(4, 0, 30, 0.5);
        assert!((w[0][0] - 0.625).abs() < 1e-15 && (w[2][1] - 0.125).abs() < 1e-15);
        let w = linear_w(4, 15, 30, 0.5);
        assert!((w[3][3] - 0.8125).abs() < 1e-15 && (w[0][3] - 0.0625).abs() < 1e-15);
        for t in 0..=30 {
            check_doubly_stochastic(&linear_w(4, t, 30, 0.5));
            for l in 0..4 {
                check_doubly_stochastic(&leader_w(4, t, 30, 0.5, l));
            }
        }
    }

    #[test]
    fn linear_w_is_doubly_stochastic_and_reaches_the_identity_at_t_max() {
        for k in [1, 2, 5, 8] {
            for t in 0..=30 {
                check_doubly_stochastic(&linear_w(k, t, 30, 0.0));
            }
            for (i, row) in linear_w(k, 30, 30, 0.0).iter().enumerate() {
                for (j, v) in row.iter().enumerate() {
                    assert_eq!(*v, if i == j { 1.0 } else { 0.0 });
                }
            }
            // Eq. 6's step: diagonal + (K-1)/(TK), off-diagonal - 1/(TK).
            if k > 1 {
                let (a, b) = (linear_w(k, 7, 30, 0.0), linear_w(k, 8, 30, 0.0));
                let tk = 30.0 * k as f64;
                assert!((b[0][0] - a[0][0] - (k as f64 - 1.0) / tk).abs() < 1e-14);
                assert!((b[0][1] - a[0][1] + 1.0 / tk).abs() < 1e-14);
            }
            // t = 0 is the uniform average.
            let start = linear_w(k, 0, 30, 0.0);
            assert!(
                start
                    .iter()
                    .flatten()
                    .all(|&v| (v - 1.0 / k as f64).abs() < 1e-15)
            );
        }
    }

    #[test]
    fn leader_w_stays_doubly_stochastic_and_leans_on_the_leader() {
        for k in [2, 3, 5, 8] {
            for t in 1..=30 {
                for l in [0, k - 1] {
                    let w = leader_w(k, t, 30, 0.0, l);
                    check_doubly_stochastic(&w);
                    if k > 2 {
                        // A follower weighs the leader more than any other agent.
                        let f = (l + 1) % k;
                        for j in 0..k {
                            if j != l {
                                assert!(w[f][l] > w[f][j] || (j == f && w[f][l] >= 0.0));
                            }
                        }
                    }
                }
            }
        }
        // Early on the leader's own weight is reduced below the linear schedule's.
        let (lin, lead) = (linear_w(5, 0, 30, 0.0), leader_w(5, 1, 30, 0.0, 2));
        assert!(lead[2][2] < lin[2][2]);
    }

    /// The server's step on the candidates that arrived, worked by hand: 4 agents, agent 2's
    /// message lost, t = 0 of T = 10 (W = J/3 over the three senders): each sender gets the
    /// average of the three candidates, agent 2 nothing (it keeps its own choice). At t = T,
    /// W = I: every sender keeps its exact candidate.
    #[test]
    fn the_consensus_step_averages_the_candidates_that_arrived() {
        let space = Arc::new(Space::Box(vec![
            crate::objective::Param::linear("a", 0.0, 1.0),
            crate::objective::Param::linear("b", 0.0, 1.0),
        ]));
        let c = Consensus {
            agents: Vec::new(),
            targets: Vec::new(),
            rule: Rule::Thompson,
            schedule: ConsensusSchedule::Linear,
            own_weight: 0.0,
            iterations: 10,
            space,
            noise: None,
            candidates: Vec::new(),
        };
        let m = |x: f64, y: f64| Some(Array1::from(vec![x, y]));
        let messages = [m(0.0, 0.3), m(0.6, 0.0), None, m(0.3, 0.9)];
        let b = c.combine(0, &messages);
        assert!(b.all.point.is_none() && b.to_each.len() == 4);
        for a in [0, 1, 3] {
            let p = b
                .for_agent(a)
                .point
                .as_ref()
                .expect("a sender gets a point");
            assert!(
                (p.x[0] - 0.3).abs() < 1e-15 && (p.x[1] - 0.4).abs() < 1e-15,
                "{p:?}"
            );
        }
        assert!(b.for_agent(2).point.is_none());
        let end = c.combine(10, &messages);
        assert!((0..4).all(|a| end.for_agent(a).point.is_none()));
    }

    #[test]
    fn consensus_points_are_snapped_to_the_nearest_grid_point() {
        let space = Space::Grid(crate::objective::space::Domain::new(ndarray::array![
            [0.0],
            [0.5],
            [1.0]
        ]));
        let p = to_space(&space, vec![0.3]);
        assert_eq!(p.index, Some(1));
    }

    /// On a box a coordinate W's rounding left an ulp outside the unit cube is held to it
    /// (the leader schedule's -3.3e-18, which a site across machines refused), the others
    /// kept to the bit.
    #[test]
    fn consensus_points_stay_in_the_unit_cube() {
        let space = Space::Box(vec![
            crate::objective::Param::linear("a", 0.0, 1.0),
            crate::objective::Param::linear("b", 0.0, 1.0),
        ]);
        let p = to_space(&space, vec![0.4609803302280342, -3.3357692862868763e-18]);
        assert_eq!(p.x, vec![0.4609803302280342, 0.0]);
        assert_eq!(to_space(&space, vec![1.0 + 1e-16, 0.5]).x, vec![1.0, 0.5]);
    }
}
