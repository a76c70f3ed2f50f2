//! Shared near-optimal designs and the constrained GP (survey Sec. III-B1, eq. 7; Chen,
//! Jiang, Qin, Kontar, Technometrics 2024, its ref. [28]; "CGP-UCB"). Every round each agent
//! k' shares the maximiser x+ of its lower confidence bound mu - eta sigma and that bound's
//! value; agent k borrows the designs whose bound beats its own delta_k = max_x mu_k(x)
//! (eq. 7), presumes f_k(x+) > delta_k at each, conditions its GP on those constraints by
//! rejection sampling (`rejection = "budget"`: a finite budget, discarding a design no draw
//! satisfies; `"pattern"`: `reject_pattern`), and queries the maximiser of the constrained
//! posterior's UCB.

use super::agent::Learner;
use super::{Algorithm, Broadcast, Federated, Query, Received, RunContext, Source};
use crate::error::{FboError, Result};
use crate::math::linalg::cholesky_jittered;
use crate::math::rng::{Purpose, Rng, stream};
use crate::objective::Point;
use crate::objective::space::Domain;
use crate::spec::frameworks::Framework;
use crate::surrogate::gp::{CrossCov, GpPosterior, kernel_matrix};
use ndarray::{Array1, Array2};
use rand_distr::{Distribution, StandardNormal};
use rayon::prelude::*;

/// What rejection sampling kept: the borrowed designs (indices into the offered ones) and
/// the accepted joint draws of f at them (one row per draw, one column per kept design).
#[derive(Debug)]
pub struct Accepted {
    pub kept: Vec<usize>,
    pub draws: Vec<Vec<f64>>,
}

/// Rejection sampling of f(E) ~ N(mean, cov) under f(e_j) > delta for every design j:
/// `samples` joint draws; a design that no draw satisfies is discarded (it contradicts the
/// agent's posterior); the others are taken in decreasing order of their acceptance count,
/// each kept only if some draw satisfies it together with all kept before it, and the draws
/// that satisfy every kept design are the accepted ones.
pub fn reject(
    mean: &Array1<f64>,
    cov: &Array2<f64>,
    delta: f64,
    samples: usize,
    rng: &mut Rng,
) -> Option<Accepted> {
    let m = mean.len();
    let (l, _) = cholesky_jittered(cov)?;
    let draws: Vec<Array1<f64>> = (0..samples).map(|_| draw(mean, &l, rng)).collect();
    Some(greedy(&draws, m, delta))
}

/// One joint draw mean + L z.
fn draw(mean: &Array1<f64>, l: &Array2<f64>, rng: &mut Rng) -> Array1<f64> {
    let z = Array1::from_iter((0..mean.len()).map(|_| StandardNormal.sample(rng)));
    mean + &l.dot(&z)
}

/// `reject`'s choice among `draws` of f at m designs: designs no draw satisfies are
/// discarded; the others in decreasing order of their acceptance count, each kept only if
/// some draw satisfies it with every design kept before it.
fn greedy(draws: &[Array1<f64>], m: usize, delta: f64) -> Accepted {
    let counts: Vec<usize> = (0..m)
        .map(|j| draws.iter().filter(|e| e[j] > delta).count())
        .collect();
    let mut order: Vec<usize> = (0..m).filter(|&j| counts[j] > 0).collect();
    order.sort_by(|a, b| counts[*b].cmp(&counts[*a]).then(a.cmp(b)));
    let mut alive: Vec<usize> = (0..draws.len()).collect();
    let mut kept = Vec::new();
    for j in order {
        let next: Vec<usize> = alive
            .iter()
            .copied()
            .filter(|&s| draws[s][j] > delta)
            .collect();
        if !next.is_empty() {
            alive = next;
            kept.push(j);
        }
    }
    kept.sort_unstable();
    let draws = alive
        .iter()
        .map(|&s| kept.iter().map(|&j| draws[s][j]).collect())
        .collect();
    Accepted { kept, draws }
}

/// The probability below which a design is taken to contradict the agent's posterior, and
/// above one minus which its constraint is taken as certain (the satisfaction-pattern rule).
pub const PATTERN_TAIL: f64 = 1e-4;

/// The satisfaction-pattern rule (GUIDE-FBO's reading of eq. 7, as fbo implements it): a
/// design whose marginal probability P(f(e_j) > delta) = Phi((mu_j - delta) / s_j) is below
/// `PATTERN_TAIL` is discarded; one above 1 - `PATTERN_TAIL` is certain and not conditioned on
/// (it would change nothing); on the rest, joint draws are made in batches of `samples` until
/// `samples` of them satisfy all at once or `samples / PATTERN_TAIL` have been drawn, and
/// `reject`'s greedy choice runs on them. So designs down to ~1e-4 probability are kept,
/// where a fixed budget of 100 draws drops those below ~1e-2.
pub fn reject_pattern(
    mean: &Array1<f64>,
    cov: &Array2<f64>,
    delta: f64,
    samples: usize,
    rng: &mut Rng,
) -> Option<Accepted> {
    let p: Vec<f64> = (0..mean.len())
        .map(|j| crate::acquisition::normal_cdf((mean[j] - delta) / cov[[j, j]].max(1e-300).sqrt()))
        .collect();
    let live: Vec<usize> = (0..mean.len())
        .filter(|&j| p[j] >= PATTERN_TAIL && p[j] <= 1.0 - PATTERN_TAIL)
        .collect();
    if live.is_empty() {
        return Some(Accepted {
            kept: Vec::new(),
            draws: Vec::new(),
        });
    }
    let sub_mean = mean.select(ndarray::Axis(0), &live);
    let sub_cov = cov
        .select(ndarray::Axis(0), &live)
        .select(ndarray::Axis(1), &live);
    let (l, _) = cholesky_jittered(&sub_cov)?;
    let cap = (samples as f64 / PATTERN_TAIL).ceil() as usize;
    let mut draws = Vec::new();
    let mut joint = 0;
    while joint < samples && draws.len() < cap {
        for _ in 0..samples {
            let e = draw(&sub_mean, &l, rng);
            if e.iter().all(|v| *v > delta) {
                joint += 1;
            }
            draws.push(e);
        }
    }
    let acc = greedy(&draws, live.len(), delta);
    Some(Accepted {
        kept: acc.kept.iter().map(|&k| live[k]).collect(),
        draws: acc.draws,
    })
}

/// The posterior constrained by accepted draws of f at designs Z, summarised for the UCB:
/// given f(Z) = e the posterior at x is Gaussian with mean mu(x) + c(x)' C^-1 (e - mu_Z) and
/// variance s^2(x) - c(x)' C^-1 c(x) (c: posterior covariance with Z, C: among Z), so over
/// the accepted draws (a mixture) the mean is mu + c' b_bar and the variance
/// s^2 - c' (C^-1 - S_b) c, with b = C^-1 (e - mu_Z) and S_b its covariance over the draws.
/// These are the Monte-Carlo mean and variance of the constrained posterior, averaged over
/// f(x) | f(Z) in closed form (Rao-Blackwellised), so the UCB is smooth in x.
pub struct Constrained {
    cross: CrossCov,
    b_bar: Vec<f64>,
    q: Array2<f64>,
}

impl Constrained {
    pub fn new(post: &GpPosterior, z: &Array2<f64>, draws: &[Vec<f64>]) -> Option<Self> {
        let kzz = kernel_matrix(z.view(), z.view(), post.hyper());
        let (mu, c) = post.predict_joint(z.view(), &kzz);
        let (l, _) = cholesky_jittered(&c)?;
        let m = mu.len();
        let mut c_inv = Array2::zeros((m, m));
        for j in 0..m {
            let mut e = Array1::zeros(m);
            e[j] = 1.0;
            c_inv
                .column_mut(j)
                .assign(&crate::math::linalg::cho_solve(l.view(), e.view()));
        }
        let bs: Vec<Array1<f64>> = draws
            .iter()
            .map(|e| c_inv.dot(&(Array1::from(e.clone()) - &mu)))
            .collect();
        let n = bs.len() as f64;
        let mut b_bar = Array1::zeros(m);
        for b in &bs {
            b_bar += b;
        }
        b_bar /= n;
        let mut q = c_inv;
        for b in &bs {
            let d = b - &b_bar;
            for i in 0..m {
                for j in 0..m {
                    q[[i, j]] -= d[i] * d[j] / n;
                }
            }
        }
        Some(Constrained {
            cross: post.cross(z.view()),
            b_bar: b_bar.to_vec(),
            q,
        })
    }

    /// Mean and variance of the constrained posterior at x, with their gradients.
    pub fn predict_grad(&self, post: &GpPosterior, x: &[f64]) -> (f64, f64, Vec<f64>, Vec<f64>) {
        let (m, v, mut dm, mut dv) = post.predict_grad(x);
        let (c, dc) = post.cross_at(&self.cross, x);
        let k = c.len();
        let qc: Vec<f64> = (0..k)
            .map(|i| (0..k).map(|j| self.q[[i, j]] * c[j]).sum())
            .collect();
        let mean = m + c.iter().zip(&self.b_bar).map(|(a, b)| a * b).sum::<f64>();
        let raw = v - c.iter().zip(&qc).map(|(a, b)| a * b).sum::<f64>();
        for d in 0..x.len() {
            for j in 0..k {
                dm[d] += dc[j][d] * self.b_bar[j];
                dv[d] -= 2.0 * dc[j][d] * qc[j];
            }
        }
        if raw < 1e-12 {
            dv.fill(0.0);
        }
        (mean, raw.max(1e-12), dm, dv)
    }
}

struct Agent {
    learner: Learner,
    rng: Rng,
}

pub struct Cgp {
    agents: Vec<Agent>,
    targets: Vec<usize>,
    eta: f64,
    samples: usize,
    beta: Option<f64>,
    group: Option<usize>,
    /// The satisfaction-pattern rule (`reject_pattern`) instead of the fixed budget.
    pattern: bool,
    /// Draws each round's sharing groups (`group`).
    group_rng: Rng,
    /// Per agent, the offer it made with its last message (kept for its choice).
    offers: Vec<Option<Offer>>,
}

/// Each agent's group for one round: a seeded shuffle of the n agents cut into consecutive
/// groups of k (the last may be smaller).
pub fn groups(n: usize, k: usize, rng: &mut Rng) -> Vec<usize> {
    use rand::seq::SliceRandom;
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(rng);
    let mut of = vec![0; n];
    for (pos, &a) in order.iter().enumerate() {
        of[a] = pos / k;
    }
    of
}

impl Cgp {
    pub fn new(ctx: &RunContext) -> Self {
        let Framework::Cgp {
            eta,
            samples,
            beta,
            group,
            pattern,
        } = ctx.algorithm.framework
        else {
            unreachable!("cgp specs carry cgp settings")
        };
        let n = ctx.landscape.agents();
        Cgp {
            agents: (0..n)
                .map(|a| Agent {
                    learner: Learner::for_run(ctx, a),
                    rng: stream(ctx.seed(), ctx.run as u64, a as u64, Purpose::Framework),
                })
                .collect(),
            targets: (0..n).collect(),
            eta,
            samples,
            beta,
            group,
            pattern,
            group_rng: stream(ctx.seed(), ctx.run as u64, u64::MAX, Purpose::Framework),
            offers: (0..n).map(|_| None).collect(),
        }
    }
}

/// What an agent shares and keeps for a round: its posterior, delta_k on its own and on the
/// objective's scale, its LCB maximiser and that LCB on the objective's scale.
struct Offer {
    post: GpPosterior,
    delta: f64,
    delta_raw: f64,
    design: Point,
    lcb_raw: f64,
}

fn offer(learner: &mut Learner, eta: f64) -> Result<Offer> {
    let hyper = learner.fitted_hyper();
    let post = learner.posterior(&hyper)?;
    let (shift, scale) = learner.unscale();
    let (_, delta) = learner.best_of(&post, &|m, _| m, &|_, _, dm, _| dm.to_vec())?;
    let (design, lcb_value) = learner.lcb_design(&post, eta)?;
    Ok(Offer {
        post,
        delta,
        delta_raw: shift + scale * delta,
        design,
        lcb_raw: shift + scale * lcb_value,
    })
}

/// The rule each agent applies to what it borrows (the spec's `samples`, `beta`, `rejection`).
#[derive(Clone, Copy)]
struct Borrowing {
    samples: usize,
    beta: Option<f64>,
    pattern: bool,
}

impl Agent {
    /// Agent `k`'s query given its own offer and the others' shared (design, LCB) pairs in
    /// `shared` (`dim` + 1 numbers each): eq. 7's designs whose LCB beats its delta_k, its GP
    /// conditioned on f > delta_k at them, the maximiser of the constrained posterior's UCB.
    fn choose(&mut self, k: usize, own: &Offer, shared: &[f64], rule: Borrowing) -> Result<Query> {
        let dim = self.learner.space().dim();
        let borrowed: Vec<&[f64]> = shared
            .chunks(dim + 1)
            .filter(|pair| pair[dim] > own.delta_raw)
            .map(|pair| &pair[..dim])
            .collect();
        let beta = self.learner.ucb_beta(rule.beta);
        let ucb = move |m: f64, v: f64| m + (beta * v.max(0.0)).sqrt();
        let constrained = if borrowed.is_empty() {
            None
        } else {
            let z = Array2::from_shape_fn((borrowed.len(), dim), |(i, d)| borrowed[i][d]);
            let kzz = kernel_matrix(z.view(), z.view(), own.post.hyper());
            let (mu, cov) = own.post.predict_joint(z.view(), &kzz);
            let reject_by = match rule.pattern {
                true => reject_pattern,
                false => reject,
            };
            let acc =
                reject_by(&mu, &cov, own.delta, rule.samples, &mut self.rng).ok_or_else(|| {
                    FboError::Run(format!(
                        "agent {k}'s posterior at the borrowed designs is singular"
                    ))
                })?;
            if acc.kept.is_empty() {
                None
            } else {
                let zk = z.select(ndarray::Axis(0), &acc.kept);
                Constrained::new(&own.post, &zk, &acc.draws)
            }
        };
        let point = match &constrained {
            None => {
                let ducb = move |m: f64, v: f64, dm: &[f64], dv: &[f64]| {
                    crate::acquisition::ucb_grad(m, v, dm, dv, beta).1
                };
                self.learner.best_of(&own.post, &ucb, &ducb)?.0
            }
            Some(con) => {
                let post = &own.post;
                let grid_scores = |grid: &Domain| {
                    (0..grid.len())
                        .map(|i| {
                            let (m, v, _, _) = con.predict_grad(post, &grid.point(i).to_vec());
                            ucb(m, v)
                        })
                        .collect()
                };
                let mut acq = |x: &[f64], g: Option<&mut [f64]>| {
                    let (m, v, dm, dv) = con.predict_grad(post, x);
                    let (val, grad) = crate::acquisition::ucb_grad(m, v, &dm, &dv, beta);
                    if let Some(g) = g {
                        g.copy_from_slice(&grad);
                    }
                    val
                };
                self.learner.maximise(grid_scores, &mut acq)?
            }
        };
        Ok(Query {
            agent: k,
            point,
            source: if constrained.is_some() {
                Source::Server
            } else {
                Source::Acquisition
            },
        })
    }
}

/// What an agent sends of its offer: its LCB maximiser and that LCB (D + 1 numbers).
fn sent(o: &Offer) -> Array1<f64> {
    let mut m = o.design.x.clone();
    m.push(o.lcb_raw);
    Array1::from(m)
}

impl Cgp {
    fn borrowing(&self) -> Borrowing {
        Borrowing {
            samples: self.samples,
            beta: self.beta,
            pattern: self.pattern,
        }
    }

    /// The server's step: each agent receives the (design, LCB) pairs of the others in its
    /// sharing group (everyone, or this round's random group of `group`) that arrived, in
    /// agent order; whether one beats its own delta_k is the agent's to judge.
    fn relay(&mut self, messages: &[Option<Array1<f64>>]) -> Broadcast {
        let n = messages.len();
        let group_of = match self.group {
            Some(k) => groups(n, k, &mut self.group_rng),
            None => vec![0; n],
        };
        Broadcast::others(messages, |k, j| group_of[j] == group_of[k])
    }
}

impl Federated for Cgp {
    fn message(&mut self, agent: usize, _t: usize) -> Result<Option<Array1<f64>>> {
        // An agent whose posterior fails sends nothing and makes its offer again to choose.
        let Ok(o) = offer(&mut self.agents[agent].learner, self.eta) else {
            return Ok(None);
        };
        let m = sent(&o);
        self.offers[agent] = Some(o);
        Ok(Some(m))
    }

    fn broadcast(&mut self, _t: usize, messages: &[Option<Array1<f64>>]) -> Result<Broadcast> {
        Ok(self.relay(messages))
    }

    fn choose(&mut self, agent: usize, _t: usize, received: &Received) -> Result<Query> {
        let own = match self.offers[agent].take() {
            Some(o) => o,
            None => offer(&mut self.agents[agent].learner, self.eta)?,
        };
        let rule = self.borrowing();
        self.agents[agent].choose(agent, &own, &received.shared, rule)
    }

    fn message_len(&self) -> usize {
        self.agents[0].learner.space().dim() + 1
    }

    fn release_reusable(&self) -> bool {
        true
    }
}

impl Algorithm for Cgp {
    fn belief(&self, agent: usize) -> Option<super::agent::Belief> {
        self.agents.get(agent).map(|a| a.learner.belief(None))
    }

    fn targets(&self) -> &[usize] {
        &self.targets
    }

    fn propose(&mut self, _t: usize) -> Result<Vec<Query>> {
        // The three steps a real federation takes; each agent acts on its own streams, so
        // acting in parallel cannot change the result.
        let eta = self.eta;
        let offers: Vec<Offer> = self
            .agents
            .par_iter_mut()
            .map(|a| offer(&mut a.learner, eta))
            .collect::<Result<_>>()?;
        let messages: Vec<Option<Array1<f64>>> = offers.iter().map(|o| Some(sent(o))).collect();
        let broadcast = self.relay(&messages);
        let rule = self.borrowing();
        self.agents
            .par_iter_mut()
            .zip(offers)
            .enumerate()
            .map(|(k, (a, own))| a.choose(k, &own, &broadcast.for_agent(k).shared, rule))
            .collect()
    }

    fn observe(&mut self, queries: &[Query], ys: &[f64]) {
        for (q, y) in queries.iter().zip(ys) {
            self.agents[q.agent].learner.add(q.point.clone(), *y);
        }
    }

    /// Each agent shares its LCB maximiser and that LCB (D + 1 numbers) every round.
    fn params_sent(&self, _agent: usize, t: usize) -> u64 {
        (self.message_len() * t) as u64
    }

    fn federated(&mut self) -> Option<&mut dyn Federated> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The server relays to each agent the (design, LCB) pairs of the others in its group
    /// that arrived: with groups of 2 among 4 agents, exactly its partner's pair (the
    /// partners those of `groups` on the same stream); agent 3's pair lost, its partner
    /// receives nothing; with one group, all the others' pairs in agent order.
    #[test]
    fn each_agent_receives_its_group_partners_pairs() {
        let cgp = |group| Cgp {
            agents: Vec::new(),
            targets: Vec::new(),
            eta: 1.0,
            samples: 10,
            beta: None,
            group,
            pattern: false,
            group_rng: stream(7, 0, u64::MAX, Purpose::Framework),
            offers: Vec::new(),
        };
        let m = |a: f64| Some(Array1::from(vec![a / 10.0, a]));
        let messages = [m(0.0), m(1.0), m(2.0), None];
        let of = groups(4, 2, &mut stream(7, 0, u64::MAX, Purpose::Framework));
        let b = cgp(Some(2)).relay(&messages);
        for k in 0..4 {
            let partner = (0..4).find(|&j| j != k && of[j] == of[k]).unwrap();
            let want = messages[partner]
                .as_ref()
                .map_or(Vec::new(), |m| m.to_vec());
            assert_eq!(b.for_agent(k).shared, want, "agent {k}, groups {of:?}");
        }
        let all = cgp(None).relay(&messages);
        assert_eq!(all.for_agent(1).shared, vec![0.0, 0.0, 0.2, 2.0]);
        assert_eq!(all.for_agent(3).shared.len(), 6);
    }

    #[test]
    fn sharing_groups_cut_a_shuffle_into_groups_of_k() {
        let mut rng = stream(7, 0, u64::MAX, Purpose::Framework);
        let g = groups(10, 4, &mut rng);
        let mut sizes = [0; 3];
        for &x in &g {
            sizes[x] += 1;
        }
        assert_eq!(sizes, [4, 4, 2]);
        // A new draw every round, the same for the same stream.
        let again = groups(10, 4, &mut stream(7, 0, u64::MAX, Purpose::Framework));
        assert_eq!(g, again);
        assert_ne!(g, groups(10, 4, &mut rng));
    }
    use crate::acquisition::normal_cdf;
    use crate::surrogate::gp::{GpHyper, Kernel};

    #[test]
    fn the_pattern_rule_skips_the_certain_keeps_the_rare_and_drops_the_impossible() {
        // Independent unit-variance f at three designs, delta = 0: P(f > 0) is 1 - 2.9e-7
        // (certain), 1.35e-3 (rare) and 2.9e-7 (below 1e-4).
        let mean = Array1::from(vec![5.0, -3.0, -5.0]);
        let cov = Array2::eye(3);
        let mut rng = stream(3, 0, 0, Purpose::Framework);
        let acc = reject_pattern(&mean, &cov, 0.0, 100, &mut rng).unwrap();
        assert_eq!(acc.kept, vec![1]);
        assert!(acc.draws.len() >= 100, "{}", acc.draws.len());
        assert!(acc.draws.iter().all(|d| d.len() == 1 && d[0] > 0.0));
        // The fixed budget of 100 draws keeps the certain design (it constrains nothing)
        // and sees no draw of the rare one.
        let acc = reject(&mean, &cov, 0.0, 100, &mut rng).unwrap();
        assert_eq!(acc.kept, vec![0]);
        assert_eq!(acc.draws.len(), 100);
        // Nothing left to condition on: no constraint.
        let acc = reject_pattern(
            &Array1::from(vec![6.0]),
            &Array2::eye(1),
            0.0,
            100,
            &mut rng,
        );
        assert!(acc.unwrap().kept.is_empty());
    }

    #[test]
    fn acceptance_rate_matches_the_gaussian_tail_for_one_design() {
        // A 1-D GP posterior at one design: f ~ N(mu, s^2); P(f > delta) = Phi((mu - delta) / s).
        let x = ndarray::array![[0.1], [0.4], [0.8]];
        let y = ndarray::array![0.2, -0.4, 0.9];
        let h = GpHyper::isotropic(Kernel::Se, 0.2, 1.0, 0.01);
        let post = GpPosterior::fit(x.view(), y.view(), &h).unwrap();
        let z = ndarray::array![[0.6]];
        let (mu, cov) = post.predict_joint(z.view(), &kernel_matrix(z.view(), z.view(), &h));
        let delta = 0.5;
        let p = normal_cdf((mu[0] - delta) / cov[[0, 0]].sqrt());
        let n = 40_000;
        let mut rng = stream(3, 0, 0, Purpose::Framework);
        let acc = reject(&mu, &cov, delta, n, &mut rng).unwrap();
        let rate = acc.draws.len() as f64 / n as f64;
        let se = (p * (1.0 - p) / n as f64).sqrt();
        assert!((rate - p).abs() < 4.0 * se, "rate {rate} vs {p}");
        assert!(acc.draws.iter().all(|e| e[0] > delta));
        // A design no draw can satisfy is discarded.
        let acc = reject(&mu, &cov, mu[0] + 50.0 * cov[[0, 0]].sqrt(), 100, &mut rng).unwrap();
        assert!(acc.kept.is_empty());
    }

    #[test]
    fn constrained_moments_match_monte_carlo_and_their_gradients_differences() {
        let x = ndarray::array![[0.1, 0.2], [0.5, 0.9], [0.8, 0.3], [0.3, 0.6]];
        let y = ndarray::array![0.3, -0.5, 1.2, 0.1];
        let h = GpHyper::isotropic(Kernel::Se, 0.4, 1.0, 0.01);
        let post = GpPosterior::fit(x.view(), y.view(), &h).unwrap();
        let z = ndarray::array![[0.6, 0.5], [0.2, 0.9]];
        let (mu, cov) = post.predict_joint(z.view(), &kernel_matrix(z.view(), z.view(), &h));
        let mut rng = stream(4, 0, 0, Purpose::Framework);
        // About 5% of the draws satisfy both constraints; the moments' Monte-Carlo part is
        // estimated from those, so enough of them to be judged at a few per cent.
        let acc = reject(&mu, &cov, 0.3, 400_000, &mut rng).unwrap();
        assert_eq!(acc.kept, vec![0, 1]);
        let con = Constrained::new(&post, &z, &acc.draws).unwrap();
        let at = [0.45, 0.55];
        let (m, v, dm, dv) = con.predict_grad(&post, &at);
        // Monte Carlo: f(at) jointly with f(z), kept where the draw of f(z) was accepted.
        let pts = ndarray::array![[0.45, 0.55], [0.6, 0.5], [0.2, 0.9]];
        let (jm, jc) = post.predict_joint(pts.view(), &kernel_matrix(pts.view(), pts.view(), &h));
        let (l, _) = cholesky_jittered(&jc).unwrap();
        let mut vals = Vec::new();
        for _ in 0..200_000 {
            let zz = Array1::from_iter((0..3).map(|_| StandardNormal.sample(&mut rng)));
            let e = &jm + &l.dot(&zz);
            if e[1] > 0.3 && e[2] > 0.3 {
                vals.push(e[0]);
            }
        }
        let n = vals.len() as f64;
        let mc_m = vals.iter().sum::<f64>() / n;
        let mc_v = vals.iter().map(|u| (u - mc_m) * (u - mc_m)).sum::<f64>() / n;
        assert!((m - mc_m).abs() < 0.02, "mean {m} vs {mc_m}");
        assert!(
            (v - mc_v).abs() < 0.03 * mc_v.max(0.05),
            "var {v} vs {mc_v}"
        );
        for k in 0..2 {
            let (mut a, mut b) = (at, at);
            a[k] += 1e-6;
            b[k] -= 1e-6;
            let (ma, va, _, _) = con.predict_grad(&post, &a);
            let (mb, vb, _, _) = con.predict_grad(&post, &b);
            assert!(((ma - mb) / 2e-6 - dm[k]).abs() < 1e-5, "mean {k}");
            assert!(((va - vb) / 2e-6 - dv[k]).abs() < 1e-5, "var {k}");
        }
    }
}
