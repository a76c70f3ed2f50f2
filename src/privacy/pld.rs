//! Privacy-loss-distribution (PLD) accountant for the subsampled Gaussian mechanism
//! (Koskela, Jalko & Honkela 2020; Meiser & Mohammadi 2018), discretised by "connecting the
//! dots" (Doroshenko, Ghazi, Kamath, Kumar & Manurangsi 2022).
//!
//! Each step is described by a pair of one-dimensional output distributions (P, Q) whose privacy
//! loss L = ln(P(x)/Q(x)) is increasing or decreasing in x, so every event {L > l} is a half-line
//! and both its P- and Q-probabilities are Gaussian tails (`Pair::tails`).
//!
//! Upper bound (what a guarantee quotes): within each grid cell (k-1) h < L <= k h the cell's
//! P-mass is split between the two grid points so that both its P-mass and its Q-mass
//! (E_P[e^-L]) are kept. delta(eps) = E_P[(1 - e^(eps - L))_+] is convex in e^-L, so this
//! mean-preserving spread can only raise delta at every eps: the discrete pair dominates the true
//! one, and it is tight at every grid point. Rounding every loss up (the earlier scheme) shifts the
//! mean loss by about h/2 a step, an error that grows like T h; the split keeps the mean to O(h^2)
//! a step, so long horizons stay tight (T = 1e5 at z = 1000: 1.20, where rounding up gave 26.4).
//! Lower bound: every loss rounded down and the tails dropped, which can only lower delta.
//! The mass above the grid (<= 1e-15) goes to +infinity on the upper side.
//!
//! T-fold composition is one FFT power on a circular grid wide enough for the composed loss.
//! The mass that wraps around the circle is bounded by Chernoff bounds from the one-step
//! moment generating function and added to delta (pessimistic side).

use super::norm_cdf;
use rustfft::FftPlanner;
use rustfft::num_complex::Complex;

/// Grid spacing h of the loss.
pub const DEFAULT_INTERVAL: f64 = 1e-4;
const TAIL: f64 = 1e-15;
/// Largest circular grid for the composition (2^17 cells: about 5 ms per FFT here). The
/// spacing is widened to fit it, which widens the reported [lower, upper] interval rather than
/// the time.
const MAX_FFT: usize = 1 << 17;
/// Largest one-step grid; a wider loss range coarsens the spacing instead.
const MAX_ONE_STEP: usize = 1 << 20;
/// One-step losses are represented on [-LOSS_CAP, LOSS_CAP]. Beyond it the pessimistic pmf
/// puts the upper tail at +infinity (so its mass counts fully against delta) and moves the
/// lower tail up to -LOSS_CAP; both only raise epsilon, so the bound stays valid. A loss of
/// 1e4 in one step already means no meaningful privacy; the cap keeps tiny noise multipliers
/// (whose losses reach 1/(2 z^2)) from asking for unbounded grids.
const LOSS_CAP: f64 = 1e4;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EpsilonBounds {
    pub upper: f64,
    pub lower: f64,
    pub interval: f64,
}

/// One step's discretised loss: pmf[k] is the mass at loss (offset + k) h.
struct Pmf {
    offset: i64,
    mass: Vec<f64>,
    infinity: f64,
}

/// One step's pair of output distributions, in units of the clipping bound S (noise s.d. z).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pair {
    /// Poisson sampling, one agent removed: P = (1-q) N(0, z^2) + q N(1, z^2), Q = N(0, z^2);
    /// L increasing in x.
    Remove { q: f64, z: f64 },
    /// Poisson sampling, one agent added: P = N(0, z^2), Q = the mixture above; L decreasing.
    Add { q: f64, z: f64 },
    /// The symmetrisation of `Remove` (Zhu, Dong & Wang 2022): for l >= 0 its losses are
    /// Remove's, and each loss -l < 0 carries e^-l times the mass Remove puts at l (an atom at
    /// 0 holds the rest), so its hockey-stick curve is Remove's for eps >= 0 and, by duality,
    /// the mirror image below. A single pair that dominates, at every order, a mechanism whose
    /// ordered neighbours are each dominated by Remove for eps >= 0 (replace-one adjacency).
    Symmetric { q: f64, z: f64 },
    /// One agent's vector replaced by its opposite, selected with probability q:
    /// P = q N(1, z^2) + (1-q) N(0, z^2), Q = q N(-1, z^2) + (1-q) N(0, z^2); L increasing.
    /// Two datasets the mechanism really meets, so its epsilon is a lower bound on the true
    /// one under replace-one adjacency.
    Swap { q: f64, z: f64 },
}

/// P(L <= l), P(L > l), Q(L <= l), Q(L > l) for one step, each tail computed directly so that
/// neither is lost to cancellation.
#[derive(Clone, Copy, Debug)]
struct Tails {
    p_le: f64,
    p_gt: f64,
    q_le: f64,
    q_gt: f64,
}

impl Pair {
    /// Written in standardised arguments. Remove/Add: with v(x) = ln(1 - q + q exp((2x - 1) /
    /// (2 z^2))), v(x) <= l iff x <= z^2 u(l) + 1/2 with u(l) = ln(e^l - (1 - q)) - ln q, so
    /// x / z = z u + 1/(2z); neither e^l nor z^2 is formed, so no loss overflows and no z
    /// underflows. Swap: with t = e^(x/z^2) and c = e^(-1/(2 z^2)), L = l solves a quadratic in
    /// t whose root is ln t = l/2 + asinh((1-q) sinh(l/2) / (q c)).
    fn tails(self, l: f64) -> Tails {
        let all_above = Tails {
            p_le: 0.0,
            p_gt: 1.0,
            q_le: 0.0,
            q_gt: 1.0,
        };
        let all_below = Tails {
            p_le: 1.0,
            p_gt: 0.0,
            q_le: 1.0,
            q_gt: 0.0,
        };
        match self {
            Pair::Remove { q, z } | Pair::Add { q, z } => {
                let l1q = (1.0 - q).ln(); // -inf when q = 1
                let u = |v: f64| super::log_sub(v, l1q) - q.ln();
                let half = 0.5 / z;
                if let Pair::Remove { .. } = self {
                    if l <= l1q {
                        return all_above;
                    }
                    let a = z * u(l);
                    Tails {
                        p_le: (1.0 - q) * norm_cdf(a + half) + q * norm_cdf(a - half),
                        p_gt: (1.0 - q) * norm_cdf(-(a + half)) + q * norm_cdf(-(a - half)),
                        q_le: norm_cdf(a + half),
                        q_gt: norm_cdf(-(a + half)),
                    }
                } else {
                    // L = -v(x) <= l  <=>  x / z >= b = z u(-l) + 1/(2z).
                    if -l <= l1q {
                        return all_below;
                    }
                    let b = z * u(-l) + half;
                    let inv = 1.0 / z;
                    Tails {
                        p_le: norm_cdf(-b),
                        p_gt: norm_cdf(b),
                        q_le: (1.0 - q) * norm_cdf(-b) + q * norm_cdf(inv - b),
                        q_gt: (1.0 - q) * norm_cdf(b) + q * norm_cdf(b - inv),
                    }
                }
            }
            Pair::Symmetric { q, z } => {
                let remove = Pair::Remove { q, z };
                if l >= 0.0 {
                    remove.tails(l)
                } else {
                    // P(L <= l) = Q_remove(L > -l), Q(L <= l) = P_remove(L > -l).
                    let t = remove.tails(-l);
                    Tails {
                        p_le: t.q_gt,
                        p_gt: t.q_le,
                        q_le: t.p_gt,
                        q_gt: t.p_le,
                    }
                }
            }
            Pair::Swap { q, z } => {
                // ln|y| = ln(1-q) - ln q + 1/(2 z^2) + ln sinh(|l|/2), in logs so nothing
                // overflows for tiny z or large l.
                let a = 0.5 * l.abs();
                let asinh_y = if a == 0.0 || q == 1.0 {
                    0.0
                } else {
                    let ln_sinh = a + (-(-2.0 * a).exp_m1()).ln() - std::f64::consts::LN_2;
                    let ln_y = (1.0 - q).ln() - q.ln() + 0.5 / (z * z) + ln_sinh;
                    let mag = if ln_y > 30.0 {
                        std::f64::consts::LN_2 + ln_y
                    } else {
                        ln_y.exp().asinh()
                    };
                    mag.copysign(l)
                };
                let s = z * (0.5 * l + asinh_y); // x* / z
                let inv = 1.0 / z;
                Tails {
                    p_le: q * norm_cdf(s - inv) + (1.0 - q) * norm_cdf(s),
                    p_gt: q * norm_cdf(inv - s) + (1.0 - q) * norm_cdf(-s),
                    q_le: q * norm_cdf(s + inv) + (1.0 - q) * norm_cdf(s),
                    q_gt: q * norm_cdf(-s - inv) + (1.0 - q) * norm_cdf(-s),
                }
            }
        }
    }
}

/// The loss range [lo, hi] holding all but TAIL of the P-mass at each end, clipped to
/// [-LOSS_CAP, LOSS_CAP], found to within 3%: a loose range would make the window of the
/// composition, and with it the grid spacing, needlessly wide (at z = 1000 one step's losses
/// lie within +-0.006).
fn loss_range(pair: Pair) -> (f64, f64) {
    // Smallest magnitude x in [1e-12, LOSS_CAP] (up to 3%) with tail(x) <= TAIL.
    let edge = |tail: &dyn Fn(f64) -> f64| {
        let mut x = 1.0;
        if tail(x) <= TAIL {
            while x > 1e-12 && tail(0.5 * x) <= TAIL {
                x *= 0.5;
            }
        } else {
            while x < LOSS_CAP && tail(x) > TAIL {
                x *= 2.0;
            }
            if x >= LOSS_CAP {
                return LOSS_CAP;
            }
        }
        // tail(x) <= TAIL < tail(x / 2) (or x at the floor): bisect the octave.
        let (mut a, mut b) = (0.5 * x, x);
        while b - a > 0.03 * b {
            let m = 0.5 * (a + b);
            if tail(m) <= TAIL { b = m } else { a = m }
        }
        b
    };
    let lo = edge(&|x: f64| pair.tails(-x).p_le);
    let hi = edge(&|x: f64| pair.tails(x).p_gt);
    (-lo, hi)
}

/// Mass between two thresholds from whichever tail is smaller, so it keeps its relative
/// accuracy far out in either tail.
fn cell(le0: f64, gt0: f64, le1: f64, gt1: f64) -> f64 {
    if le1 < 0.5 { le1 - le0 } else { gt0 - gt1 }.max(0.0)
}

/// The upper (connect-the-dots) or lower (merged-cells) discretisation at spacing h.
///
/// Lower: a post-processing of the output can only lower delta, and a randomised merge of
/// x-intervals is one. Cell k (losses in (l_{k-1}, l_k]) has an excess P_k - e^(l_{k-1}) Q_k over
/// its lower grid point and a deficit e^(l_k) Q_k - P_k under its upper one; part of cell k
/// merged with part of cell k+1 in the right proportion has loss exactly l_k. Bottom-up, each
/// cell's remainder is matched with the next cell's excess; what cannot be matched keeps a
/// loss above its lower grid point and is rounded down to it, the tails are dropped. Rounding
/// every loss down (the earlier scheme) loses about h/2 a step, T h / 2 in all; the merge
/// loses only the unmatched remainders.
fn discretise(pair: Pair, h: f64, (lo, hi): (f64, f64), bound: Bound) -> Pmf {
    let (klo, khi) = ((lo / h).floor() as i64, (hi / h).ceil() as i64);
    let n = (khi - klo + 1) as usize;
    let first = pair.tails(klo as f64 * h);
    // cells[k] = (P_k, ln r_k) for the cell (l_{k-1}, l_k], k >= 1, with
    // r_k = e^(l_{k-1}) Q_k / P_k in [e^-h, 1].
    let mut cells: Vec<(f64, f64)> = vec![(0.0, 0.0); n];
    let mut prev = first;
    for (k, c) in cells.iter_mut().enumerate().skip(1) {
        let lk = (klo + k as i64) as f64 * h;
        let t = pair.tails(lk);
        let pk = cell(prev.p_le, prev.p_gt, t.p_le, t.p_gt);
        if pk > 0.0 {
            let qk = cell(prev.q_le, prev.q_gt, t.q_le, t.q_gt);
            *c = (pk, lk - h + qk.ln() - pk.ln());
        }
        prev = t;
    }
    let last = prev;
    // Floating-point error of a split is about 1e-16 relative in each cell mass, divided by the
    // relative width of the cell; every split is moved by far more than that towards the safe
    // side (more mass up for the upper bound, more excess for the lower).
    let slack = (1e-10 / h).max(1e-9);
    let mut mass = vec![0.0; n];
    match bound {
        Bound::Upper => {
            // Everything below the grid rounded up to its first point.
            mass[0] += first.p_le;
            // 1 - e^-h, the width of a cell in e^-L relative to its top.
            let width = -(-h).exp_m1();
            for k in 1..n {
                let (pk, ln_r) = cells[k];
                if pk > 0.0 {
                    // The share b that goes up keeps Q_k: (1-b) e^-l_{k-1} + b e^-l_k = Q_k/P_k.
                    let b = ((-ln_r.exp_m1()) / width + slack).clamp(0.0, 1.0);
                    mass[k] += b * pk;
                    mass[k - 1] += (1.0 - b) * pk;
                }
            }
        }
        Bound::Lower => {
            let excess = |(pk, ln_r): (f64, f64)| (pk * -ln_r.exp_m1()).max(0.0);
            let deficit = |(pk, ln_r): (f64, f64)| (pk * (ln_r + h).exp_m1()).max(0.0);
            // a: the share of the current cell already merged into the output below it.
            let mut a = 0.0;
            for k in 1..n {
                let pk = cells[k].0;
                let rest = 1.0 - a;
                if pk == 0.0 || rest <= 0.0 {
                    a = 0.0;
                    continue;
                }
                if k + 1 == n {
                    mass[k - 1] += rest * pk;
                    break;
                }
                let (d, x) = (rest * deficit(cells[k]), excess(cells[k + 1]));
                let next_pk = cells[k + 1].0;
                if d * (1.0 + slack) <= x {
                    // Part of the next cell balances all of this remainder at l_k.
                    let share = (d * (1.0 + slack) / x).min(1.0);
                    mass[k] += rest * pk + share * next_pk;
                    a = share;
                } else {
                    // All of the next cell balances part s of the remainder; the rest of it
                    // goes down to l_{k-1}.
                    let s = if d > 0.0 {
                        (x / d) * (1.0 - slack)
                    } else {
                        0.0
                    };
                    mass[k] += s * rest * pk + next_pk;
                    mass[k - 1] += (1.0 - s) * rest * pk;
                    a = 1.0;
                }
            }
        }
    }
    Pmf {
        offset: klo,
        mass,
        infinity: match bound {
            Bound::Upper => last.p_gt.clamp(0.0, 1.0),
            Bound::Lower => 0.0,
        },
    }
}

/// Centre T E[L], half-width w around it outside which the composed loss has mass below
/// 1e-14 (Chernoff: P(S >= c + w) <= min_lambda exp(T ln M(lambda) - lambda (c + w)), and
/// the mirror image for the lower tail), and that bound. The moment generating function is
/// taken on the pmf coarsened to about 4000 cells with every loss moved outwards (up for
/// lambda > 0, down for lambda < 0), which can only increase M, so the bound stays valid.
fn window(p: &Pmf, h: f64, steps: u64) -> (f64, f64, f64) {
    let t = steps as f64;
    let loss = |k: usize| (p.offset + k as i64) as f64 * h;
    let total: f64 = p.mass.iter().sum();
    let mean: f64 = if total > 0.0 {
        p.mass
            .iter()
            .enumerate()
            .map(|(k, m)| m * loss(k))
            .sum::<f64>()
            / total
    } else {
        0.0
    };
    let var: f64 = if total > 0.0 {
        p.mass
            .iter()
            .enumerate()
            .map(|(k, m)| m * (loss(k) - mean).powi(2))
            .sum::<f64>()
            / total
    } else {
        0.0
    };
    let stride = p.mass.len().div_ceil(4000).max(1);
    let mut cells: Vec<(f64, f64, f64)> = Vec::new(); // (mass, lowest loss, highest loss)
    for (c, chunk) in p.mass.chunks(stride).enumerate() {
        let k0 = c * stride;
        cells.push((chunk.iter().sum(), loss(k0), loss(k0 + chunk.len() - 1)));
    }
    let log_mgf = |lambda: f64| {
        let mut acc = f64::NEG_INFINITY;
        for &(m, lo, hi) in &cells {
            if m > 0.0 {
                let l = if lambda > 0.0 { hi } else { lo };
                acc = super::log_add(acc, m.ln() + lambda * l);
            }
        }
        acc
    };
    let lambdas: Vec<f64> = (-4..=12).map(|e| 2f64.powi(e)).collect();
    let (lm_up, lm_down): (Vec<f64>, Vec<f64>) =
        lambdas.iter().map(|&l| (log_mgf(l), log_mgf(-l))).unzip();
    let centre = t * mean;
    let bound = |w: f64| {
        let up = lambdas
            .iter()
            .zip(&lm_up)
            .map(|(l, m)| t * m - l * (centre + w))
            .fold(f64::INFINITY, f64::min);
        let down = lambdas
            .iter()
            .zip(&lm_down)
            .map(|(l, m)| t * m + l * (centre - w))
            .fold(f64::INFINITY, f64::min);
        (up.exp() + down.exp()).min(1.0)
    };
    let mut w = (4.0 * (t * var).sqrt()).max(16.0 * h);
    while bound(w) > 1e-14 && w < 1e6 {
        w *= 1.25;
    }
    (centre, w, bound(w))
}

/// The T-fold composition on a circular grid of `n` cells.
fn compose(p: &Pmf, h: f64, steps: u64, centre: f64, w: f64) -> Composed {
    let n = ((2.0 * w / h) as usize + p.mass.len()).next_power_of_two();
    let base = ((centre - w) / h).floor() as i64; // composed index of circular slot 0
    let mut buf: Vec<Complex<f64>> = vec![Complex::new(0.0, 0.0); n];
    for (k, &m) in p.mass.iter().enumerate() {
        let idx = (p.offset + k as i64).rem_euclid(n as i64) as usize;
        buf[idx].re += m;
    }
    // Plans (twiddle tables) are kept for the process: both directions, the upper and lower
    // bounds and every t of a privacy curve reuse them.
    static PLANNER: std::sync::OnceLock<std::sync::Mutex<FftPlanner<f64>>> =
        std::sync::OnceLock::new();
    let (fwd, inv) = {
        let mut p = PLANNER
            .get_or_init(|| std::sync::Mutex::new(FftPlanner::new()))
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        (p.plan_fft_forward(n), p.plan_fft_inverse(n))
    };
    fwd.process(&mut buf);
    for v in buf.iter_mut() {
        *v = v.powu(steps as u32);
    }
    inv.process(&mut buf);
    let scale = 1.0 / n as f64;
    // Slot j holds every composed index K = j (mod n); keep the one in [base, base + n).
    let shift = base.rem_euclid(n as i64) as usize;
    // Rounding noise of the FFT can make tiny masses negative; they are dropped (which only
    // adds mass: the upper bound stays one). The most negative one measures the noise.
    let mut noise = 0.0f64;
    let mass: Vec<f64> = (0..n)
        .map(|i| {
            let v = buf[(shift + i) % n].re * scale;
            noise = noise.max(-v);
            v.max(0.0)
        })
        .collect();
    // 1 - (1 - p)^T without cancellation for tiny p.
    let infinity = -((steps as f64) * (-p.infinity).ln_1p()).exp_m1();
    Composed {
        offset: base,
        mass,
        infinity,
        noise,
    }
}

/// A composed loss distribution on its grid, and the largest rounding error of one cell's
/// mass as the FFT left it (0 when nothing was composed).
struct Composed {
    offset: i64,
    mass: Vec<f64>,
    infinity: f64,
    noise: f64,
}

/// Smallest epsilon >= 0 with delta(epsilon) <= delta, where
/// delta(eps) = p_inf + wrap + sum_{l_k > eps} p_k (1 - exp(eps - l_k)).
/// For eps in [l_{k-1}, l_k) the sum is S1[k] - exp(eps - l_k) R[k], with suffix sums
/// S1[k] = sum_{j >= k} p_j and R[k] = sum_{j >= k} p_j exp(l_k - l_j) = p_k + e^-h R[k+1]:
/// every exponent is <= 0, so nothing overflows however large the losses are.
fn epsilon_for(offset: i64, mass: &[f64], infinity: f64, wrap: f64, h: f64, delta: f64) -> f64 {
    let base = infinity + wrap;
    if base.is_nan() || base > delta {
        // Even an infinite epsilon leaves delta(eps) >= base: no finite guarantee.
        return f64::INFINITY;
    }
    let loss = |k: usize| (offset + k as i64) as f64 * h;
    let first_pos = (0..mass.len())
        .find(|&k| loss(k) > 0.0)
        .unwrap_or(mass.len());
    let m = mass.len() - first_pos;
    let (mut s1, mut r) = (vec![0.0; m + 1], vec![0.0; m + 1]);
    let decay = (-h).exp();
    for i in (0..m).rev() {
        s1[i] = s1[i + 1] + mass[first_pos + i];
        r[i] = mass[first_pos + i] + decay * r[i + 1];
    }
    let delta_at = |eps: f64| {
        let k = (((eps / h).floor() as i64 + 1 - offset).max(first_pos as i64) as usize)
            .min(mass.len());
        let i = k - first_pos;
        if i == m {
            return base;
        }
        base + (s1[i] - (eps - loss(k)).exp() * r[i]).max(0.0)
    };
    if delta_at(0.0) <= delta {
        return 0.0;
    }
    let top = loss(mass.len());
    let (mut a, mut b) = (0.0, top);
    for _ in 0..200 {
        let mid = 0.5 * (a + b);
        if delta_at(mid) > delta {
            a = mid
        } else {
            b = mid
        }
        if b - a < 1e-12 * b.max(1.0) {
            break;
        }
    }
    b
}

/// Which discretisation to compose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// Rounds losses up: epsilon is a valid upper bound (what a guarantee should quote).
    Upper,
    /// Rounds losses down: a lower bound, to measure the discretisation error.
    Lower,
}

/// The pairs whose composed epsilons bound the mechanism's: the largest over the pairs is the
/// answer.
///
/// Add/remove adjacency (Poisson): both directions, each a tight dominating pair for its
/// ordered neighbours (Zhu, Dong & Wang 2022); upper and lower bound compose the same pairs.
///
/// Replace-one: replacing one agent moves the clipped sum by up to 2S, so the base Gaussian has
/// noise z/2 relative to its sensitivity. Every ordered pair of neighbours is then dominated for
/// eps >= 0 by the Poisson remove pair at (q, z/2) (sampling without replacement at q = m/N:
/// Zhu, Dong & Wang 2022; Poisson: Balle, Barthe & Gaboardi's advanced joint convexity), but
/// not below 0, so the upper bound composes that pair's symmetrisation, once. Composing the
/// remove and add pairs separately and taking the larger epsilon (what dp_accounting does) is
/// not an upper bound here: under fixed-size sampling it is attained by real datasets (agent i
/// holds S e, every other agent -S e, against i replaced by -S e: the output is
/// q N(2S) + (1-q) N(0) against N(0)), so it is the lower bound. At N = 30, m = 11, z = 1,
/// T = 60, delta = 1e-5 the bracket is [72.1, 77.3]. Poisson under replace-one: the lower bound
/// is the concrete pair `Swap` (the other agents' vectors zero).
pub fn pairs(m: &super::Mechanism, bound: Bound) -> Vec<Pair> {
    use super::{Adjacency, Sampling};
    let (q, z) = (m.q, m.z);
    let half = 0.5 * z;
    match (m.adjacency, bound, m.sampling) {
        // `epsilon` refuses random allocation (its accountant is its own); were these pairs
        // composed for it, the unsampled Gaussian mechanism is what they would bound.
        (_, _, Sampling::Allocation { .. }) => {
            vec![Pair::Remove { q: 1.0, z }, Pair::Add { q: 1.0, z }]
        }
        (Adjacency::AddRemove, _, _) => vec![Pair::Remove { q, z }, Pair::Add { q, z }],
        (Adjacency::ReplaceOne, Bound::Upper, _) => vec![Pair::Symmetric { q, z: half }],
        (Adjacency::ReplaceOne, Bound::Lower, Sampling::Fixed) => {
            vec![Pair::Remove { q, z: half }, Pair::Add { q, z: half }]
        }
        (Adjacency::ReplaceOne, Bound::Lower, Sampling::Poisson) => vec![Pair::Swap { q, z }],
    }
}

/// epsilon at `delta` after `steps` rounds of `pair`, on a loss grid of spacing `interval`,
/// widened if needed so that one step fits in MAX_ONE_STEP cells and the composition in
/// MAX_FFT cells (the spacing used is returned). The upper bound may be +inf: then no finite
/// epsilon is certified at this delta (the mass at infinity, or outside the composed window,
/// exceeds delta), which is the honest answer for tiny noise multipliers.
fn epsilon_of(pair: Pair, steps: u64, delta: f64, interval: f64, bound: Bound) -> (f64, f64) {
    let range = loss_range(pair);
    let mut h = interval.max((range.1 - range.0) / MAX_ONE_STEP as f64);
    // The composed window hardly depends on the spacing: size it once on a coarse grid, so the
    // fine grid is discretised once at a spacing that fits, not pass after pass.
    let coarse = ((range.1 - range.0) / 4096.0).max(h);
    let cp = discretise(pair, coarse, range, Bound::Upper);
    let (_, w0, _) = window(&cp, coarse, steps);
    h = h.max(1.1 * (2.0 * w0 + (range.1 - range.0)) / MAX_FFT as f64);
    // Each pass grows h by at least 1.25, and w grows far slower, so this ends within a few
    // passes; the cap only guards against the unforeseen.
    for _ in 0..64 {
        let p = discretise(pair, h, range, bound);
        let (centre, w, wrap) = window(&p, h, steps);
        if (2.0 * w / h) as usize + p.mass.len() > MAX_FFT {
            // Coarsen so the composed loss fits; epsilon stays an upper (lower) bound.
            h = (1.25 * h).max(2.0 * w / (MAX_FFT / 2) as f64);
            continue;
        }
        let e = match bound {
            Bound::Upper => {
                let c = compose(&p, h, steps, centre, w);
                epsilon_for(c.offset, &c.mass, c.infinity, wrap, h, delta)
            }
            // The lower bound ignores what it cannot see; 0 is always a lower bound. One step
            // needs no composition: its masses are exact, where the FFT's rounding noise
            // (about 1e-18 a cell, summed over thousands of cells) raised delta(eps) enough
            // at delta = 1e-10 to put the lower end above the exact epsilon. After several
            // steps that noise, bounded by four times the most negative cell it left in every
            // cell, is taken off delta(eps), which can only lower epsilon.
            Bound::Lower if steps == 1 => epsilon_for(p.offset, &p.mass, 0.0, 0.0, h, delta),
            Bound::Lower => {
                let c = compose(&p, h, steps, centre, w);
                let allowance = 4.0 * c.noise.max(f64::EPSILON * 1e-3) * c.mass.len() as f64;
                epsilon_for(c.offset, &c.mass, -allowance, 0.0, h, delta)
            }
        };
        let e = if e.is_nan() {
            match bound {
                Bound::Upper => f64::INFINITY,
                Bound::Lower => 0.0,
            }
        } else {
            e
        };
        return (e, h);
    }
    match bound {
        Bound::Upper => (f64::INFINITY, h),
        Bound::Lower => (0.0, h),
    }
}

/// epsilon at `delta` of the mechanism `m` (its rate, noise, steps and adjacency) on a loss
/// grid of spacing `interval` (see `epsilon_of`): an upper bound or a lower bound on the true
/// epsilon, with the largest spacing used.
pub fn epsilon(
    m: &super::Mechanism,
    delta: f64,
    interval: f64,
    bound: Bound,
) -> Result<(f64, f64), String> {
    if m.steps > u32::MAX as u64 {
        return Err("pld: at most 2^32 - 1 steps".into());
    }
    // The pairs below are the continuous Gaussian's: they say nothing of a sum of discrete
    // ones, which `privacy::epsilon` accounts through its Gaussian stand-in.
    if let super::Noise::Distributed(_) = m.noise {
        return Err("pld's pairs are the continuous Gaussian's; distributed noise is accounted through its Gaussian stand-in (privacy::epsilon)".into());
    }
    if let super::Sampling::Allocation { .. } = m.sampling {
        return Err("the pld accountant has no analysis of random allocation; use accountant \"allocation\"".into());
    }
    // The pairs are independent: compose them in parallel.
    // An epsilon of a few grid cells is resolved again on a grid 500 times finer than itself:
    // at q = 1e-3, z = 5, T = 40 the spacing 1e-4 left the upper end 2% above 0.0027.
    let refined = |p: Pair| {
        let (e, h) = epsilon_of(p, m.steps, delta, interval, bound);
        let finer = (e / 500.0).max(1e-8);
        if e.is_finite() && e > 0.0 && e < 50.0 * h && finer < h {
            epsilon_of(p, m.steps, delta, finer, bound)
        } else {
            (e, h)
        }
    };
    let results: Vec<(f64, f64)> = {
        use rayon::prelude::*;
        pairs(m, bound).into_par_iter().map(refined).collect()
    };
    let e = results.iter().map(|r| r.0).fold(0.0, f64::max);
    let h = results.iter().map(|r| r.1).fold(0.0, f64::max);
    Ok((e, h))
}

pub fn epsilon_bounds(
    m: &super::Mechanism,
    delta: f64,
    interval: f64,
) -> Result<EpsilonBounds, String> {
    let (upper, h) = epsilon(m, delta, interval, Bound::Upper)?;
    let (lower, _) = epsilon(m, delta, interval, Bound::Lower)?;
    Ok(EpsilonBounds {
        upper,
        lower,
        interval: h,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::gaussian::epsilon as gaussian_epsilon;

    fn poisson(q: f64, z: f64, steps: u64) -> crate::privacy::Mechanism {
        crate::privacy::Mechanism {
            q,
            z,
            steps,
            sampling: crate::privacy::Sampling::Poisson,
            adjacency: crate::privacy::Adjacency::AddRemove,
            noise: crate::privacy::Noise::Gaussian,
        }
    }

    #[test]
    fn q_one_brackets_the_exact_gaussian_curve_at_every_horizon() {
        // T compositions of the Gaussian mechanism with noise z equal one with noise z / sqrt(T).
        // Rounding every loss up gave 26.4 at z = 1000, T = 1e5 (exact 1.20): its error grew
        // like T h. The split keeps the upper end within 0.5% at every horizon, and the merged
        // lower end within 1%.
        for (z, steps, delta) in [
            (1.0, 1, 1e-5),
            (2.0, 10, 1e-6),
            (4.0, 100, 1e-3),
            (10.0, 1_000, 1e-5),
            (100.0, 10_000, 1e-5),
            (1000.0, 100_000, 1e-5),
            (300.0, 100_000, 1e-8),
            // Tiny delta, where the FFT's rounding noise is a visible part of delta(eps).
            (0.5, 4, 1e-10),
            (2.0, 50, 1e-10),
            (20.0, 3_000, 1e-10),
        ] {
            let exact = gaussian_epsilon(delta, z / (steps as f64).sqrt());
            let b = epsilon_bounds(&poisson(1.0, z, steps), delta, 1e-4).unwrap();
            assert!(
                b.lower <= exact + 1e-9 && exact <= b.upper + 1e-9,
                "z={z} T={steps}: {b:?} vs {exact}"
            );
            assert!(
                b.upper <= 1.005 * exact + 1e-4,
                "z={z} T={steps}: {b:?} vs {exact}"
            );
            assert!(
                b.lower >= 0.99 * exact - 1e-4,
                "z={z} T={steps}: {b:?} vs {exact}"
            );
        }
    }

    /// One round's exact epsilon from the tails (delta(eps) = P(L > eps) - e^eps Q(L > eps)
    /// for each direction, the larger root), against the printed bracket, down to the
    /// smallest delta: the lower end was above the exact value in 10 of these 12 settings at
    /// delta = 1e-10, and once above its own upper end (q = 1e-4, z = 0.5).
    #[test]
    fn one_round_bracket_holds_the_exact_epsilon_at_tiny_delta() {
        let exact = |q: f64, z: f64, delta: f64| {
            [Pair::Remove { q, z }, Pair::Add { q, z }]
                .into_iter()
                .map(|p| {
                    let d = |eps: f64| {
                        let t = p.tails(eps);
                        t.p_gt - eps.exp() * t.q_gt
                    };
                    let (mut a, mut b) = (0.0, 200.0);
                    if d(0.0) <= delta {
                        return 0.0;
                    }
                    for _ in 0..200 {
                        let m = 0.5 * (a + b);
                        if d(m) > delta { a = m } else { b = m }
                    }
                    0.5 * (a + b)
                })
                .fold(0.0, f64::max)
        };
        for delta in [1e-10, 1e-6] {
            for q in [1e-4, 1e-2, 0.1, 0.3, 0.6, 1.0] {
                for z in [0.5, 2.0] {
                    let want = exact(q, z, delta);
                    let b = epsilon_bounds(&poisson(q, z, 1), delta, DEFAULT_INTERVAL).unwrap();
                    // The bisection's own error is below 1e-12.
                    assert!(
                        b.lower <= want + 1e-9 && want <= b.upper + 1e-9,
                        "q {q} z {z} delta {delta}: [{}, {}] against exact {want}",
                        b.lower,
                        b.upper
                    );
                }
            }
        }
    }

    #[test]
    fn remove_dominates_add_above_zero() {
        // The symmetrised pair keeps Remove's curve for eps >= 0, so it dominates the add
        // direction too only if delta_add(eps) <= delta_remove(eps) there. delta(eps) =
        // P(L > eps) - e^eps Q(L > eps) for each pair, from the same tails the PLD uses.
        let delta = |p: Pair, eps: f64| {
            let t = p.tails(eps);
            t.p_gt - eps.exp() * t.q_gt
        };
        for q in [1e-3, 0.01, 0.1, 0.3, 0.37, 0.5, 0.9, 0.999] {
            for z in [0.1, 0.3, 0.5, 1.0, 2.0, 5.0] {
                for k in 1..=500 {
                    let eps = k as f64 * 0.01;
                    let (r, a) = (
                        delta(Pair::Remove { q, z }, eps),
                        delta(Pair::Add { q, z }, eps),
                    );
                    assert!(
                        a <= r * (1.0 + 1e-9) + 1e-15,
                        "q={q} z={z} eps={eps}: {a} > {r}"
                    );
                }
            }
        }
    }

    #[test]
    fn symmetric_pair_mirrors_remove() {
        // Its delta curve equals Remove's for eps >= 0 and obeys the duality
        // delta(-eps) = 1 - e^-eps + e^-eps delta(eps) below.
        let (q, z) = (0.37, 0.5);
        let delta = |p: Pair, eps: f64| {
            let t = p.tails(eps);
            t.p_gt - eps.exp() * t.q_gt
        };
        let (s, r) = (Pair::Symmetric { q, z }, Pair::Remove { q, z });
        for k in 0..200 {
            let eps = k as f64 * 0.05;
            let d = delta(s, eps);
            assert!((d - delta(r, eps)).abs() < 1e-14, "{eps}");
            let dual = 1.0 - (-eps).exp() + (-eps).exp() * d;
            assert!((delta(s, -eps) - dual).abs() < 1e-12, "{eps}");
        }
    }

    #[test]
    fn swap_loss_solves_its_quadratic() {
        // tails() inverts L(x) in closed form; check it against L evaluated directly.
        let (q, z) = (0.3, 0.8);
        let loss = |x: f64| {
            let p = q * (-(x - 1.0).powi(2) / (2.0 * z * z)).exp()
                + (1.0 - q) * (-x * x / (2.0 * z * z)).exp();
            let qq = q * (-(x + 1.0).powi(2) / (2.0 * z * z)).exp()
                + (1.0 - q) * (-x * x / (2.0 * z * z)).exp();
            (p / qq).ln()
        };
        for l in [-3.0, -0.5, -1e-3, 0.0, 1e-3, 0.7, 2.5] {
            // The threshold x* = z s from Q(L > l) = q Phi(-s - 1/z) + (1-q) Phi(-s).
            let t = Pair::Swap { q, z }.tails(l);
            let (mut a, mut b) = (-50.0, 50.0);
            for _ in 0..200 {
                let m = 0.5 * (a + b);
                if loss(m) > l { b = m } else { a = m }
            }
            let x = 0.5 * (a + b);
            let sf = q * norm_cdf(-(x - 1.0) / z) + (1.0 - q) * norm_cdf(-x / z);
            assert!((t.p_gt - sf).abs() < 1e-9, "l={l}: {} vs {sf}", t.p_gt);
        }
    }

    #[test]
    fn pmfs_keep_their_masses() {
        for pair in [
            Pair::Remove { q: 0.3, z: 1.0 },
            Pair::Add { q: 0.3, z: 1.0 },
            Pair::Symmetric { q: 0.3, z: 0.5 },
            Pair::Swap { q: 0.3, z: 1.0 },
        ] {
            let h = 1e-3;
            let range = loss_range(pair);
            let up = discretise(pair, h, range, Bound::Upper);
            let loss = |k: usize| (up.offset + k as i64) as f64 * h;
            let total: f64 = up.mass.iter().sum::<f64>() + up.infinity;
            assert!((total - 1.0).abs() < 1e-12, "{pair:?}: {total}");
            // The split keeps each cell's Q-mass: E_P[e^-L] over the finite part is the
            // Q-mass of the grid's range, 1 up to the tails.
            let q_mass: f64 = up
                .mass
                .iter()
                .enumerate()
                .map(|(k, m)| m * (-loss(k)).exp())
                .sum();
            assert!(
                q_mass <= 1.0 + 1e-6 && q_mass > 1.0 - 1e-6,
                "{pair:?}: {q_mass}"
            );
            // The lower pmf drops at most the two tails.
            let down = discretise(pair, h, range, Bound::Lower);
            let kept: f64 = down.mass.iter().sum();
            assert!(
                kept <= 1.0 + 1e-12 && kept > 1.0 - 2.0 * TAIL - 1e-13,
                "{pair:?}: {kept}"
            );
        }
    }
}
