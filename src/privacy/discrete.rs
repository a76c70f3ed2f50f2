//! Distributed discrete Gaussian noise (Kairouz, Liu & Steinke, ICML 2021): under
//! `server.noise = "distributed"` each contributor adds discrete Gaussian shares to its
//! fixed-point vector before masking, so that the sum the server unmasks already carries the
//! mechanism's noise and the server never holds an un-noised sum.
//!
//! The accounting (docs/algorithms.md, "Distributed noise"):
//! - **One round, no sampling.** The sum of n >= 1 shares N_Z(0, s^2) per coordinate, added to
//!   an integer vector of L2 sensitivity D, is (1/2) e^2-zCDP with
//!   e^2 = D^2 / (n s^2) + tau d / 2, tau = 10 sum_{k=1}^{n-1} exp(-2 pi^2 s^2 k / (k + 1))
//!   (KLS Thm. 1, s >= 1/2): Renyi DP alpha (D^2 / (2 n s^2) + tau d / 4) at every order.
//! - **Rounding.** Values are encoded by rounding coef * v * 2^32 to the nearest integer, which
//!   moves a vector by at most sqrt(d) / 2 in L2: D = (sensitivity in the clear) 2^32 +
//!   sqrt(d) / 2. `Distributed::inflation` folds this into the noise multiplier z / inflation.
//! - **Sampling.** The sum is not a Gaussian, so the Gaussian's exact subsampled RDP does not
//!   apply; the bounds for any mechanism with that RDP curve do: Zhu & Wang (2019, Thm. 6's
//!   general form, factor 3 from order 3) for Poisson sampling, Wang, Balle & Kasiviswanathan
//!   (2019, Thm. 9) for fixed-size sampling. Integer orders only.
//! - **Near the Gaussian** (what `pld`, and the RDP accountants where it is tighter, use).
//!   Per coordinate the sum of t shares N_Z(0, s^2) has pmf f_t, and a stand-in mechanism
//!   adds continuous N(0, a^2) noise, a^2 = t s^2 - c^2, then rounds at random to a discrete
//!   Gaussian of parameter c centred on the result: pmf g. By Poisson summation, with
//!   theta(x) = sum_{m>=1} exp(-2 pi^2 x^2 m^2), w = 2 theta(c) and u = 2 theta(s / sqrt 2),
//!   both f_t and g lie within known factors of the continuous density of variance t s^2 at
//!   every integer, so |ln f_t / g| <= (w + (2t - 1) u) / (1 - max(w, u)) everywhere;
//!   `log_ratio_per_coordinate` has the steps. Over d coordinates and T rounds, for every
//!   input, outcome, sample and history, the two mechanisms' probabilities are within a factor
//!   e^G, G = T d Gamma, so for any delta: eps(delta) <= eps_stand-in(delta e^-G) + 2G. The
//!   stand-in is a post-processing of the subsampled Gaussian mechanism with noise multiplier
//!   sqrt(z^2 - (c / Delta)^2) / inflation, which any of the Gaussian's accountants bounds.
//!   At fbo's scales (s ~ 10^9 steps, c = 4) u underflows and d Gamma is d w, about 6e-135
//!   per round at landmine's d = 400.
//! - **Dropouts.** Each member of a cohort of k adds shares of variance sigma^2 / t, t the
//!   secure-aggregation threshold; a round completes only with at least t survivors, whose
//!   shares sum to variance >= sigma^2. Accounting at t contributors is valid for any m >= t:
//!   the sum of m is the sum of t (one of them the agent in question) plus independent noise
//!   and the other agents' fixed vectors, a post-processing.

use super::{Adjacency, Mechanism, Noise, Sampling, log_add};

/// What the accountant needs of a distributed discrete Gaussian beyond (q, z, steps): how far
/// rounding to the fixed-point lattice inflates the sensitivity, and an upper bound on KLS's
/// tau d (the gap between a sum of discrete Gaussians and one discrete Gaussian).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Distributed {
    /// >= 1: the sensitivity on the lattice over the sensitivity in the clear, at its worst.
    pub inflation: f64,
    /// An upper bound on tau d, never below e^-700 (the bound is positive; a value that
    /// underflows to 0 would not be one).
    pub tau_d: f64,
    /// The continuous Gaussian mechanism the sum stands close to (module doc, "Near the
    /// Gaussian"), where the shares are wide enough for one.
    pub near: Option<NearGaussian>,
}

/// How close a round of distributed noise is to its Gaussian stand-in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NearGaussian {
    /// The stand-in's rounding s.d. over the least lattice sensitivity, c / Delta: its noise
    /// multiplier is sqrt(z^2 - smoothing^2) / inflation.
    pub smoothing: f64,
    /// Gamma d: a bound on |ln| of the ratio of the two mechanisms' probabilities of any
    /// outcome of one round, never below e^-700.
    pub log_ratio: f64,
}

/// The stand-in's rounding s.d. in lattice steps: its periodic error 2 theta(4) is below
/// 1e-137, and it takes 16 steps^2 of a total noise variance of ~10^18 at fbo's scales.
pub const SMOOTHING_STEPS: f64 = 4.0;

/// ln of an upper bound on theta(x) = sum_{m>=1} exp(-2 pi^2 x^2 m^2):
/// exp(-2 pi^2 x^2) / (1 - exp(-6 pi^2 x^2)), since m^2 >= 3m - 2 makes the sum geometric.
fn ln_theta_upper(x: f64) -> f64 {
    let a = 2.0 * std::f64::consts::PI.powi(2) * x * x;
    -a - (-(-3.0 * a).exp_m1()).ln()
}

/// ln of a bound on |ln f_t(k) / g(k)| over all integers k, for t shares N_Z(0, s^2) (f_t)
/// against the stand-in of smoothing c (g); None where the bound is not below 1 in each term.
/// It holds for fewer shares and wider ones too (the bound grows with t and falls with s).
///
/// Why, with phi_v the N(0, v) density and theta, w, u as in the module doc:
/// - Poisson summation: sum_j exp(-(j - y)^2 / (2 x^2)) = x sqrt(2 pi) (1 + 2 sum_{m>=1}
///   exp(-2 pi^2 x^2 m^2) cos(2 pi m y)), within x sqrt(2 pi) [1 - 2 theta(x), 1 + 2 theta(x)]
///   for every y, and exactly x sqrt(2 pi) (1 + 2 theta(x)) at y = 0.
/// - So one share's pmf is phi_{s^2}(k) / (1 + 2 theta(s)), and adding one share to a sum of
///   j (f_j within [L_j, U_j] phi_{j s^2}) gives sum_x phi_{j s^2}(x) phi_{s^2}(k - x) =
///   phi_{(j+1) s^2}(k) sum_x phi_{s_j^2}(x - mu), s_j^2 = s^2 j / (j + 1) >= s^2 / 2: the
///   factor is within 1 +- 2 theta(s_j), and 2 theta(s_j) <= u.
/// - g(k) = int phi_{a^2}(y) exp(-(k - y)^2 / (2 c^2)) / N_c(y) dy with N_c within
///   c sqrt(2 pi) (1 +- w): g within [1 / (1 + w), 1 / (1 - w)] phi_{a^2 + c^2}(k).
/// - With a^2 + c^2 = t s^2: ln f_t / g <= w + (t - 1) u and >= -w / (1 - w) - t u
///   - (t - 1) u / (1 - u).
pub fn log_ratio_per_coordinate(s: f64, t: usize, c: f64) -> Option<f64> {
    let ln_w = 2f64.ln() + ln_theta_upper(c);
    let ln_u = 2f64.ln() + ln_theta_upper(s / std::f64::consts::SQRT_2);
    let worst = ln_w.max(ln_u).exp();
    if worst.is_nan() || worst >= 1.0 {
        return None;
    }
    let terms = log_add(ln_w, ((2 * t.max(1) - 1) as f64).ln() + ln_u);
    Some(terms - (-worst).ln_1p())
}

/// Smallest share s.d. KLS's theorem covers, in lattice steps.
pub const MIN_SHARE_SIGMA: f64 = 0.5;

impl Distributed {
    /// The bound for a server of `agents` agents whose vectors have `dim` coordinates in all
    /// (P x M), clipped to S = `clip`, with noise multiplier z, at fixed point 2^`fraction_bits`.
    /// Each round's clear-text sensitivity is phi S / rate >= S / N (the weights of a
    /// sub-region sum to 1 over N agents, so their largest is >= 1/N; rate <= 1), which bounds
    /// both the rounding's share of the sensitivity and, through the total noise z phi S / rate,
    /// the smallest share s.d. (cohort and threshold at most N). Refused where a share's s.d.
    /// could fall below KLS's 1/2 lattice step.
    pub fn bound(
        agents: usize,
        dim: usize,
        clip: f64,
        z: f64,
        fraction_bits: i32,
    ) -> Result<Distributed, String> {
        let n = agents.max(1) as f64;
        let scale = 2f64.powi(fraction_bits);
        let least_sensitivity = clip / n * scale;
        let inflation = 1.0 + (dim as f64).sqrt() / 2.0 / least_sensitivity;
        let least_share = z * least_sensitivity / n.sqrt();
        if least_share.is_nan() || least_share < MIN_SHARE_SIGMA {
            return Err(format!(
                "distributed noise needs each agent's discrete-Gaussian share to have s.d. >= {MIN_SHARE_SIGMA} lattice steps, and z S 2^{fraction_bits} / N^1.5 = {least_share:.3} here; raise z or clip"
            ));
        }
        // tau <= 10 (n - 1) exp(-pi^2 s^2), since k / (k + 1) >= 1/2.
        let ln_tau_d = (10.0 * (n - 1.0).max(1.0) * dim.max(1) as f64).ln()
            - std::f64::consts::PI.powi(2) * least_share * least_share;
        // The stand-in's noise is sqrt(z^2 Delta^2 - c^2) for a round's sensitivity Delta >=
        // the least: its multiplier is least there, and it needs z Delta > c.
        let near = log_ratio_per_coordinate(least_share, agents, SMOOTHING_STEPS)
            .filter(|_| z * least_sensitivity > SMOOTHING_STEPS)
            .map(|ln_gamma| NearGaussian {
                smoothing: SMOOTHING_STEPS / least_sensitivity,
                log_ratio: (ln_gamma + (dim.max(1) as f64).ln()).max(-700.0).exp(),
            });
        Ok(Distributed {
            inflation,
            tau_d: ln_tau_d.max(-700.0).exp(),
            near,
        })
    }

    /// The Gaussian mechanism `m` is within a factor e^G of at every outcome (module doc), and
    /// G; None where it has no stand-in.
    pub fn stand_in(&self, m: &Mechanism) -> Option<(Mechanism, f64)> {
        let near = self.near?;
        let z2 = m.z * m.z - near.smoothing * near.smoothing;
        if z2.is_nan() || z2 <= 0.0 {
            return None;
        }
        let gaussian = Mechanism {
            z: z2.sqrt() / self.inflation,
            noise: Noise::Gaussian,
            ..*m
        };
        Some((gaussian, m.steps as f64 * near.log_ratio))
    }

    /// Renyi DP of one round without sampling at order alpha: alpha (Delta^2 / (2 sigma^2) +
    /// tau d / 4), Delta / sigma = inflation / z for add/remove neighbours and twice that for
    /// replace-one.
    pub fn rdp_unsampled(&self, z: f64, adjacency: Adjacency, alpha: f64) -> f64 {
        let ratio = match adjacency {
            Adjacency::AddRemove => self.inflation / z,
            Adjacency::ReplaceOne => 2.0 * self.inflation / z,
        };
        alpha * (0.5 * ratio * ratio + self.tau_d / 4.0)
    }

    /// Renyi DP of one round at integer order alpha >= 2 with sampling rate q: the general
    /// subsampling bounds (module doc), never above the unsampled round's.
    pub fn rdp(&self, q: f64, z: f64, sampling: Sampling, adjacency: Adjacency, alpha: u64) -> f64 {
        let eps = |j: u64| self.rdp_unsampled(z, adjacency, j as f64);
        let plain = eps(alpha);
        if q >= 1.0 {
            return plain;
        }
        let sampled = match sampling {
            Sampling::Poisson => zhu_wang_general(q, alpha, eps),
            Sampling::Fixed => wbk_general(q, alpha, eps),
            // No amplification claimed: the unsampled round bounds any sampling.
            Sampling::Allocation { .. } => plain,
        };
        sampled.min(plain)
    }
}

/// ln C(a, l).
fn log_binom(a: u64, l: u64) -> f64 {
    (0..l)
        .map(|i| ((a - i) as f64).ln() - ((i + 1) as f64).ln())
        .sum()
}

/// Zhu & Wang (2019), Poisson sampling at rate g of any mechanism with RDP eps(.):
/// ln[(1-g)^(a-1) (a g - g + 1) + C(a,2) g^2 (1-g)^(a-2) e^eps(2)
///     + 3 sum_{l=3}^a C(a,l) (1-g)^(a-l) g^l e^((l-1) eps(l))] / (a - 1).
fn zhu_wang_general(g: f64, a: u64, eps: impl Fn(u64) -> f64) -> f64 {
    let (lg, l1g) = (g.ln(), (-g).ln_1p());
    let mut acc = (a - 1) as f64 * l1g + (a as f64 * g - g + 1.0).ln();
    acc = log_add(
        acc,
        log_binom(a, 2) + 2.0 * lg + (a - 2) as f64 * l1g + eps(2),
    );
    for l in 3..=a {
        let term = 3f64.ln()
            + log_binom(a, l)
            + (a - l) as f64 * l1g
            + l as f64 * lg
            + (l - 1) as f64 * eps(l);
        acc = log_add(acc, term);
    }
    acc / (a - 1) as f64
}

/// Wang, Balle & Kasiviswanathan (2019, Thm. 9), sampling without replacement at rate g of
/// any mechanism with RDP eps(.) (replace-one) and no bound at order infinity:
/// ln[1 + g^2 C(a,2) min(4 (e^eps(2) - 1), 2 e^eps(2)) + sum_{j=3}^a g^j C(a,j) 2 e^((j-1) eps(j))]
/// / (a - 1).
fn wbk_general(g: f64, a: u64, eps: impl Fn(u64) -> f64) -> f64 {
    let lg = g.ln();
    let e2 = eps(2);
    let lmin2 = (4f64.ln() + e2.exp_m1().ln()).min(2f64.ln() + e2);
    let mut acc = log_add(0.0, 2.0 * lg + log_binom(a, 2) + lmin2);
    for j in 3..=a {
        let term = j as f64 * lg + log_binom(a, j) + 2f64.ln() + (j - 1) as f64 * eps(j);
        acc = log_add(acc, term);
    }
    acc / (a - 1) as f64
}

/// One draw of the discrete Gaussian N_Z(0, sigma^2) (P[x] proportional to
/// exp(-x^2 / (2 sigma^2)) on the integers) by Canonne, Kamath & Steinke's (2020) rejection
/// from a discrete Laplace of scale floor(sigma) + 1. In floating point, as TensorFlow
/// Federated samples it: exact in law up to the rounding of exp and ln, which matters for
/// sigma near the lattice step and not at the 10^6-10^12 steps fbo's shares have.
pub fn sample<R: rand::Rng + ?Sized>(sigma: f64, rng: &mut R) -> i64 {
    let t = sigma.floor() + 1.0;
    loop {
        // Discrete Laplace of scale t: the difference of two geometric counts with success
        // probability 1 - e^(-1/t), each by inversion.
        let geometric = |rng: &mut R| -> f64 {
            let u: f64 = 1.0 - rng.random::<f64>(); // (0, 1]
            (-u.ln() * t).floor()
        };
        let y = geometric(rng) - geometric(rng);
        let gap = y.abs() - sigma * sigma / t;
        let accept = (-gap * gap / (2.0 * sigma * sigma)).exp();
        if rng.random::<f64>() < accept {
            return y as i64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::rng::{Purpose, SHARED, stream};
    use std::f64::consts::PI;

    /// The discrete Gaussian's pmf on [-k, k] (the mass beyond is below 1e-30 for the sigmas
    /// used), normalised.
    fn pmf(sigma: f64, k: i64) -> Vec<f64> {
        let raw: Vec<f64> = (-k..=k)
            .map(|x| (-((x * x) as f64) / (2.0 * sigma * sigma)).exp())
            .collect();
        let total: f64 = raw.iter().sum();
        raw.iter().map(|v| v / total).collect()
    }

    #[test]
    fn draws_follow_the_discrete_gaussian() {
        // Chi-square against the pmf at sigma = 1.5 (coarse lattice) over 40,000 draws; cells
        // with expected count below 5 pooled into the tails.
        let sigma = 1.5;
        let mut rng = stream(7, 0, SHARED, Purpose::AgentPrivacy);
        let n = 40_000;
        let k = 12;
        let p = pmf(sigma, k);
        let mut counts = vec![0usize; p.len()];
        for _ in 0..n {
            let x = sample(sigma, &mut rng);
            counts[(x.clamp(-k, k) + k) as usize] += 1;
        }
        let (mut chi, mut cells, mut pooled_e, mut pooled_o) = (0.0, 0, 0.0, 0.0);
        for (&c, &pi) in counts.iter().zip(&p) {
            let e = pi * n as f64;
            if e < 5.0 {
                pooled_e += e;
                pooled_o += c as f64;
            } else {
                chi += (c as f64 - e).powi(2) / e;
                cells += 1;
            }
        }
        if pooled_e > 0.0 {
            chi += (pooled_o - pooled_e).powi(2) / pooled_e;
            cells += 1;
        }
        // 99.9% point of chi-square with <= 11 degrees of freedom is 31.3.
        assert!(cells >= 8 && chi < 31.3, "chi2 {chi} over {cells} cells");
    }

    #[test]
    fn wide_draws_have_the_variance_of_the_continuous_gaussian() {
        // At sigma = 1e9 the discrete Gaussian's variance is sigma^2 to within 1e-300; the
        // sample variance of 20,000 draws is within 4% with probability far above 99.9%.
        let sigma = 1e9;
        let mut rng = stream(8, 0, SHARED, Purpose::AgentPrivacy);
        let n = 20_000;
        let xs: Vec<f64> = (0..n).map(|_| sample(sigma, &mut rng) as f64).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        assert!(
            (var / (sigma * sigma) - 1.0).abs() < 0.04,
            "{}",
            var / sigma / sigma
        );
        assert!(mean.abs() < 4.0 * sigma / (n as f64).sqrt(), "{mean}");
    }

    #[test]
    fn the_bound_at_fbo_scales_is_the_gaussians() {
        // Landmine-sized: N = 29, d = 4 x 100, S = 22, z = 1.
        let b = Distributed::bound(29, 400, 22.0, 1.0, 32).unwrap();
        assert!(b.inflation > 1.0 && b.inflation - 1.0 < 1e-8, "{b:?}");
        assert_eq!(b.tau_d, (-700f64).exp());
        for alpha in [2.0, 7.0, 64.0] {
            // Rounding moves the sensitivity by sqrt(400) / 2 of >= 22 / 29 x 2^32: 3e-9.
            let r = b.rdp_unsampled(1.0, Adjacency::AddRemove, alpha);
            assert!(r >= alpha / 2.0 && r / (alpha / 2.0) - 1.0 < 1e-8, "{r}");
            let r2 = b.rdp_unsampled(1.0, Adjacency::ReplaceOne, alpha);
            assert!(r2 >= 2.0 * alpha && r2 / (2.0 * alpha) - 1.0 < 1e-8, "{r2}");
        }
    }

    /// The stand-in's pmf g at k (module doc): the N(0, a^2) density times the randomised
    /// rounding's chance of k, integrated by the trapezoid rule over +-16 s.d. of their
    /// product (spectrally accurate for this smooth integrand).
    fn stand_in_pmf(a: f64, c: f64, k: f64) -> f64 {
        let b2 = a * a + c * c;
        let (centre, sd) = (k * a * a / b2, a * c / b2.sqrt());
        let h = sd / 80.0;
        let steps = (32.0 * sd / h) as i64;
        let norm = |y: f64| -> f64 {
            let j0 = y.floor() as i64;
            (j0 - 40..=j0 + 40)
                .map(|j| (-(j as f64 - y).powi(2) / (2.0 * c * c)).exp())
                .sum()
        };
        (0..=steps)
            .map(|i| {
                let y = centre - 16.0 * sd + i as f64 * h;
                let weight = if i == 0 || i == steps { 0.5 } else { 1.0 };
                let density = (-y * y / (2.0 * a * a)).exp() / (a * (2.0 * PI).sqrt());
                weight * density * (-(k - y).powi(2) / (2.0 * c * c)).exp() / norm(y)
            })
            .sum::<f64>()
            * h
    }

    #[test]
    fn a_sum_of_narrow_shares_is_within_the_bound_of_its_stand_in() {
        // Shares of 0.5-1 lattice steps, where the gap is measurable: the exact pmf of the sum
        // of t shares (convolution) against the stand-in's (quadrature) at every k within 10
        // s.d. The largest |ln f_t / g| seen is 3-30x below the bound, and at least 1e-4, so
        // the check sees a real gap (computed independently in Python at these settings too).
        for (s, t, c) in [
            (0.5, 2, 0.5),
            (0.6, 2, 0.6),
            (0.6, 3, 0.7),
            (0.55, 3, 0.9),
            (0.75, 4, 0.6),
            (0.6, 6, 1.0),
            (1.0, 2, 0.9),
        ] {
            let one = pmf(s, 60);
            let mut sum = one.clone();
            for _ in 1..t {
                let mut next = vec![0.0; sum.len() + one.len() - 1];
                for (i, x) in sum.iter().enumerate() {
                    for (j, y) in one.iter().enumerate() {
                        next[i + j] += x * y;
                    }
                }
                sum = next;
            }
            let middle = (sum.len() / 2) as i64;
            let b = (t as f64).sqrt() * s;
            let a = (b * b - c * c).sqrt();
            let reach = (10.0 * b) as i64;
            let seen = (-reach..=reach)
                .map(|k| {
                    (sum[(k + middle) as usize] / stand_in_pmf(a, c, k as f64))
                        .ln()
                        .abs()
                })
                .fold(0.0, f64::max);
            let bound = log_ratio_per_coordinate(s, t, c).unwrap().exp();
            assert!(
                seen <= bound && seen > 1e-4,
                "s={s} t={t} c={c}: {seen} vs {bound}"
            );
        }
        // Wider shares: the bound falls with s and grows with t, and is absent where a term
        // reaches 1.
        let at = |s: f64, t: usize| log_ratio_per_coordinate(s, t, 1.0).unwrap();
        assert!(at(2.0, 5) < at(1.0, 5) && at(1.0, 5) < at(1.0, 6));
        assert!(log_ratio_per_coordinate(0.5, 2, 0.2).is_none());
    }

    #[test]
    fn landmine_scales_stand_next_to_the_gaussian() {
        // N = 29, d = 400, S = 22, z = 1: the shares' term underflows, the gap is the
        // rounding's own, 400 x 2 theta(4) = 5.5e-135 a round, and the stand-in's noise
        // multiplier z / inflation, 3.1e-9 below z (rounding: sqrt(400) / 2 of 22 / 29 x 2^32).
        let b = Distributed::bound(29, 400, 22.0, 1.0, 32).unwrap();
        let near = b.near.unwrap();
        let rounding = 400.0 * 2.0 * (-32.0 * PI * PI).exp();
        assert!((near.log_ratio / rounding - 1.0).abs() < 1e-12, "{near:?}");
        let m = Mechanism::server(0.35, 1.0, 60, Sampling::Poisson, Adjacency::AddRemove, 29)
            .distributed(b);
        let (g, gap) = b.stand_in(&m).unwrap();
        assert_eq!(g.noise, Noise::Gaussian);
        assert!(g.z < 1.0 && 1.0 - g.z < 3.2e-9, "{}", g.z);
        assert_eq!((g.q, g.steps), (0.35, 60));
        assert_eq!(gap, 60.0 * near.log_ratio);
        // Total noise at most 4 steps at its least: no stand-in.
        let coarse = Distributed::bound(3, 4, 1.0, 1.0, 2).unwrap();
        assert_eq!(coarse.near, None);
    }

    #[test]
    fn shares_below_half_a_step_are_refused() {
        // z S 2^32 / N^1.5 < 1/2.
        let e = Distributed::bound(10_000, 400, 1e-3, 0.1, 32).unwrap_err();
        assert!(e.contains("raise z or clip"), "{e}");
        // A coarse lattice at small N: the rounding term dominates and tau stays finite.
        let b = Distributed::bound(3, 4, 1.0, 1.0, 2).unwrap();
        assert!((b.inflation - (1.0 + 1.0 / (4.0 / 3.0))).abs() < 1e-12);
        assert!(b.tau_d > 1e-3, "{b:?}");
    }

    #[test]
    fn the_general_bounds_are_above_the_gaussians_exact_one_and_agree_at_order_two_terms() {
        // A Gaussian satisfies every general bound: Zhu & Wang's and WBK's Thm. 9 must lie on
        // or above the Gaussian's exact subsampled RDP (Mironov et al.; WBK Thm. 27).
        let b = Distributed {
            inflation: 1.0,
            tau_d: 0.0,
            near: None,
        };
        for q in [0.01, 0.1, 0.35] {
            for z in [0.7, 1.0, 3.0] {
                for alpha in [2u64, 3, 10, 40] {
                    let p = b.rdp(q, z, Sampling::Poisson, Adjacency::AddRemove, alpha);
                    let exact = super::super::rdp::rdp_poisson(q, z, alpha as f64);
                    assert!(p >= exact - 1e-12, "q={q} z={z} a={alpha}: {p} < {exact}");
                    let f = b.rdp(q, z, Sampling::Fixed, Adjacency::ReplaceOne, alpha);
                    let gauss = super::super::rdp::rdp_fixed(q, z, alpha);
                    assert!(f >= gauss - 1e-12, "q={q} z={z} a={alpha}: {f} < {gauss}");
                }
                // At order 2 Zhu & Wang's bound has no factor-3 term: it is the exact
                // Gaussian value, ln(1 + q^2 (e^(1/z^2) - 1)).
                let two = b.rdp(q, z, Sampling::Poisson, Adjacency::AddRemove, 2);
                let closed = (q * q * (1.0 / (z * z)).exp_m1()).ln_1p();
                assert!((two - closed).abs() < 1e-12, "{two} vs {closed}");
            }
        }
    }
}
