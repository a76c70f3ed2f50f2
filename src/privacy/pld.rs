//! Privacy-loss-distribution (PLD) accountant for the Poisson-subsampled Gaussian mechanism
//! (Koskela, Jalko & Honkela 2020; Meiser & Mohammadi 2018; the "connect by rounding" scheme of
//! Google's dp_accounting).
//!
//! For one step and each direction of add/remove adjacency, the privacy loss
//! L = ln(P(x)/Q(x)), x ~ P, is discretised on the grid k h. The pessimistic discretisation
//! rounds every loss up to the grid and puts the upper tail beyond the grid (mass <= 1e-15)
//! at +infinity; its epsilon is an upper bound on the true epsilon. The optimistic one rounds
//! down and drops the tails; its epsilon is a lower bound. Both are reported, so the
//! discretisation error is measured, not assumed.
//!
//! T-fold composition is one FFT power on a circular grid wide enough for the composed loss.
//! The mass that wraps around the circle is bounded by Chernoff bounds from the one-step
//! moment generating function and added to delta (pessimistic side).

use super::norm_cdf;
use rustfft::FftPlanner;
use rustfft::num_complex::Complex;

/// Grid spacing h of the loss. T h bounds how far the pessimistic epsilon can sit above the
/// true one; the measured gap (upper - lower) is usually far smaller.
pub const DEFAULT_INTERVAL: f64 = 1e-4;
const TAIL: f64 = 1e-15;
/// Largest circular grid for the composition (2^17 cells: about 5 ms per FFT here). The
/// spacing is widened to fit it, which widens the reported [lower, upper] interval (at most
/// T h) rather than the time.
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

#[derive(Clone, Copy)]
enum Direction {
    /// P = (1-q) N(0, z^2) + q N(1, z^2), Q = N(0, z^2); L increasing in x.
    Remove,
    /// P = N(0, z^2), Q = the mixture; L decreasing in x.
    Add,
}

/// (P(L <= l), P(L > l)) for one step, each computed directly so that neither tail is lost to
/// cancellation. Written in standardised arguments: with v(x) = ln(1 - q + q exp((2x - 1) /
/// (2 z^2))), v(x) <= l iff x <= z^2 u(l) + 1/2 with u(l) = ln(e^l - (1 - q)) - ln q, so
/// x / z = z u + 1/(2z). Neither e^l nor z^2 is ever formed, so no loss overflows (an earlier
/// version saturated at ln(f64::MAX) = 709.78) and no z underflows.
fn loss_cdf_sf(dir: Direction, q: f64, z: f64, l: f64) -> (f64, f64) {
    let l1q = (1.0 - q).ln(); // -inf when q = 1
    let u = |v: f64| super::log_sub(v, l1q) - q.ln();
    let half = 0.5 / z;
    match dir {
        Direction::Remove => {
            if l <= l1q {
                return (0.0, 1.0);
            }
            let a = z * u(l);
            let cdf = (1.0 - q) * norm_cdf(a + half) + q * norm_cdf(a - half);
            let sf = (1.0 - q) * norm_cdf(-(a + half)) + q * norm_cdf(-(a - half));
            (cdf, sf)
        }
        Direction::Add => {
            // L = -v(x) <= l  <=>  v(x) >= -l  <=>  x >= z^2 u(-l) + 1/2, x ~ N(0, z^2).
            if -l <= l1q {
                return (1.0, 0.0);
            }
            let b = z * u(-l) + half;
            (norm_cdf(-b), norm_cdf(b))
        }
    }
}

/// The loss range [lo, hi] holding all but TAIL of the mass at each end, clipped to
/// [-LOSS_CAP, LOSS_CAP].
fn loss_range(dir: Direction, q: f64, z: f64) -> (f64, f64) {
    let mut lo = -1.0;
    while lo > -LOSS_CAP && loss_cdf_sf(dir, q, z, lo).0 > TAIL {
        lo *= 2.0;
    }
    let mut hi = 1.0;
    while hi < LOSS_CAP && loss_cdf_sf(dir, q, z, hi).1 > TAIL {
        hi *= 2.0;
    }
    (lo.max(-LOSS_CAP), hi.min(LOSS_CAP))
}

/// The pessimistic and optimistic discretisations at spacing h from one pass over the loss
/// distribution. Mass in ((k-1) h, k h] is rounded up to k (pessimistic) or down to k - 1
/// (optimistic); mass below the grid moves up to its first point (pessimistic) or is dropped;
/// mass above the grid goes to +infinity (pessimistic) or is dropped.
fn discretise(dir: Direction, q: f64, z: f64, h: f64, (lo, hi): (f64, f64)) -> (Pmf, Pmf) {
    let (klo, khi) = ((lo / h).floor() as i64, (hi / h).ceil() as i64);
    let n = (khi - klo + 1) as usize;
    let (mut up, mut down) = (vec![0.0; n], vec![0.0; n]);
    let (mut cdf, mut sf) = loss_cdf_sf(dir, q, z, klo as f64 * h);
    up[0] += cdf;
    for k in 1..n {
        let (c, s) = loss_cdf_sf(dir, q, z, (klo + k as i64) as f64 * h);
        // Differences of whichever tail is smaller keep their relative accuracy.
        let m = if c < 0.5 { c - cdf } else { sf - s }.max(0.0);
        up[k] += m;
        down[k - 1] += m;
        (cdf, sf) = (c, s);
    }
    let pessimistic = Pmf {
        offset: klo,
        mass: up,
        infinity: sf.clamp(0.0, 1.0),
    };
    let optimistic = Pmf {
        offset: klo,
        mass: down,
        infinity: 0.0,
    };
    (pessimistic, optimistic)
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

/// The T-fold composition on a circular grid of `n` cells: (offset, masses, mass at
/// infinity).
fn compose(p: &Pmf, h: f64, steps: u64, centre: f64, w: f64) -> (i64, Vec<f64>, f64) {
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
    // Rounding noise of the FFT can make tiny masses negative; they are dropped.
    let mass: Vec<f64> = (0..n)
        .map(|i| (buf[(shift + i) % n].re * scale).max(0.0))
        .collect();
    // 1 - (1 - p)^T without cancellation for tiny p.
    let infinity = -((steps as f64) * (-p.infinity).ln_1p()).exp_m1();
    (base, mass, infinity)
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

/// epsilon at `delta` after `steps` rounds, on a loss grid of spacing `interval`, widened if
/// needed so that one step fits in MAX_ONE_STEP cells and the composition in MAX_FFT cells
/// (the spacing used is returned). The upper bound may be +inf: then no finite epsilon is
/// certified at this delta (the mass at infinity, or outside the composed window, exceeds
/// delta), which is the honest answer for tiny noise multipliers.
pub fn epsilon(
    q: f64,
    z: f64,
    steps: u64,
    delta: f64,
    interval: f64,
    bound: Bound,
) -> Result<(f64, f64), String> {
    if steps > u32::MAX as u64 {
        return Err("pld: at most 2^32 - 1 steps".into());
    }
    // The two directions of add/remove adjacency are independent: compose them in parallel.
    let one = |dir: Direction| -> (f64, f64) {
        let range = loss_range(dir, q, z);
        let mut h = interval.max((range.1 - range.0) / MAX_ONE_STEP as f64);
        // The composed window hardly depends on the spacing: size it once on a coarse grid,
        // so the fine grid is discretised once at a spacing that fits, not pass after pass.
        let coarse = ((range.1 - range.0) / 4096.0).max(h);
        let (cp, _) = discretise(dir, q, z, coarse, range);
        let (_, w0, _) = window(&cp, coarse, steps);
        h = h.max(1.1 * (2.0 * w0 + (range.1 - range.0)) / MAX_FFT as f64);
        // Each pass grows h by at least 1.25, and w grows far slower, so this ends within a few
        // passes; the cap only guards against the unforeseen.
        for _ in 0..64 {
            let (up, down) = discretise(dir, q, z, h, range);
            let p = if bound == Bound::Upper { up } else { down };
            let (centre, w, wrap) = window(&p, h, steps);
            if (2.0 * w / h) as usize + p.mass.len() > MAX_FFT {
                // Coarsen so the composed loss fits; epsilon stays an upper (lower) bound.
                h = (1.25 * h).max(2.0 * w / (MAX_FFT / 2) as f64);
                continue;
            }
            let (offset, mass, inf) = compose(&p, h, steps, centre, w);
            let e = match bound {
                Bound::Upper => epsilon_for(offset, &mass, inf, wrap, h, delta),
                // The lower bound ignores what it cannot see; 0 is always a lower bound.
                Bound::Lower => epsilon_for(offset, &mass, 0.0, 0.0, h, delta),
            };
            return (e, h);
        }
        match bound {
            Bound::Upper => (f64::INFINITY, h),
            Bound::Lower => (0.0, h),
        }
    };
    let ((e_remove, h_remove), (e_add, h_add)) =
        rayon::join(|| one(Direction::Remove), || one(Direction::Add));
    let e = e_remove.max(e_add);
    let e = if e.is_nan() {
        match bound {
            Bound::Upper => f64::INFINITY,
            Bound::Lower => 0.0,
        }
    } else {
        e
    };
    Ok((e, h_remove.max(h_add)))
}

pub fn epsilon_bounds(
    q: f64,
    z: f64,
    steps: u64,
    delta: f64,
    interval: f64,
) -> Result<EpsilonBounds, String> {
    let (upper, h) = epsilon(q, z, steps, delta, interval, Bound::Upper)?;
    let (lower, _) = epsilon(q, z, steps, delta, interval, Bound::Lower)?;
    Ok(EpsilonBounds {
        upper,
        lower,
        interval: h,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Exact delta(eps) of the Gaussian mechanism with sensitivity 1 and noise sigma
    /// (Balle & Wang 2018, Thm. 8).
    fn gaussian_delta(eps: f64, sigma: f64) -> f64 {
        norm_cdf(-eps * sigma + 0.5 / sigma) - eps.exp() * norm_cdf(-eps * sigma - 0.5 / sigma)
    }

    fn gaussian_epsilon(delta: f64, sigma: f64) -> f64 {
        let (mut a, mut b) = (0.0, 100.0);
        for _ in 0..200 {
            let m = 0.5 * (a + b);
            if gaussian_delta(m, sigma) > delta {
                a = m
            } else {
                b = m
            }
        }
        b
    }

    #[test]
    fn q_one_brackets_the_exact_gaussian_curve() {
        // T compositions of the Gaussian mechanism with noise z equal one with noise z / sqrt(T).
        for (z, steps, delta) in [(1.0, 1, 1e-5), (2.0, 10, 1e-6), (4.0, 100, 1e-3)] {
            let exact = gaussian_epsilon(delta, z / (steps as f64).sqrt());
            let b = epsilon_bounds(1.0, z, steps, delta, 1e-4).unwrap();
            assert!(
                b.lower <= exact + 1e-9 && exact <= b.upper + 1e-9,
                "z={z} T={steps}: {b:?} vs {exact}"
            );
            assert!(b.upper - b.lower < 0.01 * exact + 1e-3, "{b:?}");
        }
    }

    #[test]
    fn pmf_is_a_distribution() {
        for dir in [Direction::Remove, Direction::Add] {
            let (up, down) = discretise(dir, 0.3, 1.0, 1e-3, loss_range(dir, 0.3, 1.0));
            let total: f64 = up.mass.iter().sum::<f64>() + up.infinity;
            assert!((total - 1.0).abs() < 1e-12, "{total}");
            // The optimistic pmf drops at most the two tails.
            let kept: f64 = down.mass.iter().sum();
            assert!(kept <= 1.0 && kept > 1.0 - 3.0 * TAIL, "{kept}");
        }
    }
}
