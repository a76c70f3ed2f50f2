//! Acquisition functions (EI, UCB; RGPE's and TAF's EI), kept apart from the surrogates that
//! feed them and the algorithms that maximise them (BoTorch's split); `optimize` maximises one
//! over a box of the search space.

pub mod optimize;

use std::f64::consts::{FRAC_1_SQRT_2, PI};

pub fn normal_pdf(z: f64) -> f64 {
    libm::exp(-0.5 * z * z) / (2.0 * PI).sqrt()
}

pub fn normal_cdf(z: f64) -> f64 {
    0.5 * libm::erfc(-z * FRAC_1_SQRT_2)
}

/// Expected improvement over `best` of a Gaussian N(mean, sd^2), for maximisation, with no
/// exploration offset: E[max(f - best, 0)]. With sd = 0 it is the plain improvement.
pub fn expected_improvement(mean: f64, sd: f64, best: f64) -> f64 {
    let gap = mean - best;
    if sd <= 0.0 {
        return gap.max(0.0);
    }
    let z = gap / sd;
    (gap * normal_cdf(z) + sd * normal_pdf(z)).max(0.0)
}

/// Expected improvement of N(m, v) over `best` with its gradient from those of m and v:
/// dEI = Phi(z) dm + phi(z) ds, ds = dv / (2 s).
pub fn ei_grad(m: f64, v: f64, dm: &[f64], dv: &[f64], best: f64) -> (f64, Vec<f64>) {
    let s = v.max(0.0).sqrt();
    let value = expected_improvement(m, s, best);
    if s <= 0.0 {
        let on = if m > best { 1.0 } else { 0.0 };
        return (value, dm.iter().map(|d| on * d).collect());
    }
    let z = (m - best) / s;
    let (cdf, pdf) = (normal_cdf(z), normal_pdf(z));
    let grad = dm
        .iter()
        .zip(dv)
        .map(|(a, b)| cdf * a + pdf * b / (2.0 * s))
        .collect();
    (value, grad)
}

/// ln h(z) and its slope d ln h / dz = Phi(z) / h(z), where h(z) = phi(z) + z Phi(z) is the
/// expected improvement of N(z, 1) over 0: the log-EI of Ament, Daulton, Eriksson, Balandat
/// and Bakshy (NeurIPS 2023), accurate where EI itself underflows to 0 (from z ~ -38 on) and
/// so leaves the maximiser a flat, gradient-free plateau.
///
/// For z > -5 the direct sum loses at most a factor 1/h(z) / phi(z) ~ 30 of precision. Below,
/// with u = -z, the Mills ratio R(u) = Phi(-u) / phi(u) is Laplace's continued fraction
/// 1 / (u + K(u)), K(u) = 1 / (u + 2 / (u + 3 / (u + ...))), and h = phi(u) (1 - u R) =
/// phi(u) K R exactly, so neither the cancellation in 1 - u R nor an underflow of phi(u)
/// enters: ln h = -u^2/2 - ln(2 pi)/2 + ln K - ln(u + K), and the slope is R / (K R) = 1 / K.
pub fn log_h(z: f64) -> (f64, f64) {
    if z > -5.0 {
        let (cdf, pdf) = (normal_cdf(z), normal_pdf(z));
        let h = pdf + z * cdf;
        return (libm::log(h), cdf / h);
    }
    let u = -z;
    // From the bottom: 60 levels reach double precision from u = 5 on (the tests check the
    // seam against the direct sum), and the fraction converges faster as u grows.
    let mut k = 0.0;
    for n in (2..=60).rev() {
        k = n as f64 / (u + k);
    }
    let k = 1.0 / (u + k);
    let ln = -0.5 * u * u - 0.5 * libm::log(2.0 * PI) + libm::log(k) - libm::log(u + k);
    (ln, 1.0 / k)
}

/// ln EI of N(m, v) over `best` (for maximisation) with its gradient from those of m and v:
/// ln EI = ln s + ln h(z), z = (m - best) / s, so d ln EI = ds / s + (Phi/h)(z) (dm - z ds) / s
/// with ds = dv / (2 s). With no spread it is the log of the plain improvement (-inf at none).
pub fn log_ei_grad(m: f64, v: f64, dm: &[f64], dv: &[f64], best: f64) -> (f64, Vec<f64>) {
    let s = v.max(0.0).sqrt();
    if s <= 0.0 {
        let gap = m - best;
        let value = libm::log(gap.max(0.0));
        return (value, dm.iter().map(|d| d / gap.max(0.0)).collect());
    }
    let z = (m - best) / s;
    let (lh, slope) = log_h(z);
    let grad = dm
        .iter()
        .zip(dv)
        .map(|(a, b)| {
            let ds = b / (2.0 * s);
            ds / s + slope * (a - z * ds) / s
        })
        .collect();
    (libm::log(s) + lh, grad)
}

/// ln EI of N(mean, sd^2) over `best`, the value of `log_ei_grad`.
pub fn log_expected_improvement(mean: f64, sd: f64, best: f64) -> f64 {
    if sd <= 0.0 {
        return libm::log((mean - best).max(0.0));
    }
    libm::log(sd) + log_h((mean - best) / sd).0
}

/// ln(sum_k w_k e^(a_k)) and its gradient sum_k s_k da_k, s the softmax of ln w_k + a_k, over
/// the terms (w_k, a_k, da_k) with w_k > 0: a weighted sum of EIs formed from their logs, so
/// that it stays finite (with a gradient) where every EI underflows. -inf with a zero
/// gradient when no term is finite. `da_k` may be empty where only the value is wanted.
pub fn log_mix(terms: &[(f64, f64, &[f64])]) -> (f64, Vec<f64>) {
    let dim = terms.iter().map(|t| t.2.len()).max().unwrap_or(0);
    let logs: Vec<f64> = terms
        .iter()
        .map(|&(w, a, _)| {
            if w > 0.0 {
                libm::log(w) + a
            } else {
                f64::NEG_INFINITY
            }
        })
        .collect();
    let top = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !top.is_finite() {
        return (top, vec![0.0; dim]);
    }
    let shares: Vec<f64> = logs.iter().map(|l| libm::exp(l - top)).collect();
    let sum: f64 = shares.iter().sum();
    let mut grad = vec![0.0; dim];
    // A term of weight 0 or EI 0 has share 0 and adds nothing, even where its log's gradient
    // is infinite (EI 0 with no spread: ln 0).
    for (s, t) in shares.iter().zip(terms).filter(|(s, _)| **s > 0.0) {
        for (g, d) in grad.iter_mut().zip(t.2) {
            *g += s / sum * d;
        }
    }
    (top + libm::log(sum), grad)
}

/// GP-UCB of N(m, v), m + sqrt(beta v), with its gradient from those of m and v.
pub fn ucb_grad(m: f64, v: f64, dm: &[f64], dv: &[f64], beta: f64) -> (f64, Vec<f64>) {
    let s = v.max(0.0).sqrt();
    let rb = beta.sqrt();
    let grad = dm
        .iter()
        .zip(dv)
        .map(|(a, b)| if s > 0.0 { a + rb * b / (2.0 * s) } else { *a })
        .collect();
    (m + rb * s, grad)
}

/// Srinivas, Krause, Kakade and Seeger (ICML 2010), Theorem 1: beta_t =
/// 2 ln(|D| t^2 pi^2 / (6 delta)) for a finite domain D, with which GP-UCB's regret bound holds
/// with probability 1 - delta. fbo takes delta = 0.1 and |D| the grid's size, or on a box the
/// number of candidates its search scores (the finite set the maximiser starts from).
pub fn ucb_beta(t: usize, domain: usize, delta: f64) -> f64 {
    let t = t.max(1) as f64;
    2.0 * libm::log(domain.max(1) as f64 * t * t * PI * PI / (6.0 * delta))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// log_mix is ln of the weighted sum, its gradient that sum's derivative over the sum,
    /// a zero weight drops its term, and it stays finite where the plain sum underflows.
    #[test]
    fn log_mix_is_the_log_of_the_weighted_sum() {
        let (a, da) = (libm::log(0.3), [0.5, -1.0]);
        let (b, db) = (libm::log(0.05), [2.0, 4.0]);
        let (v, g) = log_mix(&[(0.25, a, &da), (0.75, b, &db)]);
        let sum = 0.25 * 0.3 + 0.75 * 0.05;
        assert!((v - libm::log(sum)).abs() < 1e-15);
        // d ln(sum w e^a) = sum w e^a da / sum w e^a.
        for k in 0..2 {
            let want = (0.25 * 0.3 * da[k] + 0.75 * 0.05 * db[k]) / sum;
            assert!((g[k] - want).abs() < 1e-14, "{} vs {want}", g[k]);
        }
        let (v0, g0) = log_mix(&[(0.0, a, &da), (1.0, b, &db)]);
        assert_eq!((v0, g0), (b, db.to_vec()));
        // Two EIs of e^-800 each: the plain sum is 0, the log mixture -800 + ln 1.
        let (v, _) = log_mix(&[(0.5, -800.0, &[]), (0.5, -800.0, &[])]);
        assert!((v + 800.0).abs() < 1e-12);
        assert_eq!(
            log_mix(&[(0.0, 1.0, &[1.0])]),
            (f64::NEG_INFINITY, vec![0.0])
        );
        // A term at ln 0 with an infinite gradient beside a finite one: the finite one's.
        let inf = [f64::INFINITY, f64::NAN];
        assert_eq!(
            log_mix(&[(0.5, f64::NEG_INFINITY, &inf), (0.5, b, &db)]),
            (libm::log(0.5) + b, db.to_vec())
        );
    }

    #[test]
    fn normal_cdf_known_values() {
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-15);
        assert!((normal_cdf(1.959963984540054) - 0.975).abs() < 1e-12);
        assert!((normal_cdf(-1.0) - 0.15865525393145707).abs() < 1e-12);
    }

    #[test]
    fn expected_improvement_closed_forms() {
        // At mean = best: EI = sd phi(0) = sd / sqrt(2 pi).
        assert!((expected_improvement(1.0, 2.0, 1.0) - 2.0 / (2.0 * PI).sqrt()).abs() < 1e-15);
        // No uncertainty: the improvement itself.
        assert_eq!(expected_improvement(3.0, 0.0, 1.0), 2.0);
        assert_eq!(expected_improvement(0.0, 0.0, 1.0), 0.0);
        // Against a Monte-Carlo-free identity: EI(m, s, b) - EI(-m, s, -b) = m - b.
        let (m, s, b) = (0.3, 0.7, 0.5);
        let lhs = expected_improvement(m, s, b) - expected_improvement(-m, s, -b);
        assert!((lhs - (m - b)).abs() < 1e-12);
        // Far below the incumbent with little spread: vanishing.
        assert!(expected_improvement(-10.0, 0.1, 0.0) < 1e-300);
    }

    /// Both gradients against central differences along a path m(x), v(x).
    #[test]
    fn acquisition_gradients_match_differences() {
        let (m, v) = (|x: f64| 0.3 * x.sin(), |x: f64| 0.2 + 0.1 * x * x);
        let (dm, dv) = (|x: f64| 0.3 * x.cos(), |x: f64| 0.2 * x);
        for x in [-1.3, 0.2, 0.9] {
            let h = 1e-6;
            let ei = |x: f64| ei_grad(m(x), v(x), &[dm(x)], &[dv(x)], 0.1).0;
            let ucb = |x: f64| ucb_grad(m(x), v(x), &[dm(x)], &[dv(x)], 4.0).0;
            let (_, ge) = ei_grad(m(x), v(x), &[dm(x)], &[dv(x)], 0.1);
            let (_, gu) = ucb_grad(m(x), v(x), &[dm(x)], &[dv(x)], 4.0);
            assert!((ge[0] - (ei(x + h) - ei(x - h)) / (2.0 * h)).abs() < 1e-7);
            assert!((gu[0] - (ucb(x + h) - ucb(x - h)) / (2.0 * h)).abs() < 1e-7);
        }
        // beta_1 on 1000 points at delta = 0.1: 2 ln(1000 pi^2 / 0.6).
        assert!((ucb_beta(1, 1000, 0.1) - 2.0 * (1000.0 * PI * PI / 0.6f64).ln()).abs() < 1e-12);
        assert!(ucb_beta(10, 1000, 0.1) > ucb_beta(9, 1000, 0.1));
    }

    /// ln h against the direct sum where that is exact to ~1e-14, across the seam at z = -5
    /// and on both sides; against the asymptotic series h / phi = u^-2 - 3 u^-4 + 15 u^-6 -
    /// 105 u^-8 + 945 u^-10 - ... far out (truncation < 1e-15 relative at u = 100); its slope
    /// against differences everywhere.
    #[test]
    fn log_h_matches_direct_sum_series_and_differences() {
        for &z in &[3.0, 0.7, 0.0, -1.0, -3.2, -4.999, -5.0, -5.001, -6.0, -8.0] {
            let direct = normal_pdf(z) + z * normal_cdf(z);
            let (lh, _) = log_h(z);
            // The direct sum loses ~u^2 eps to cancellation: 1e-13 absolute on ln h at u = 8.
            assert!(
                (lh - direct.ln()).abs() < 1e-12,
                "z = {z}: {lh} vs {}",
                direct.ln()
            );
        }
        for &u in &[100.0f64, 1e3, 1e5, 1e8] {
            let r = 1.0 / (u * u);
            let series = r * (1.0 - 3.0 * r * (1.0 - 5.0 * r * (1.0 - 7.0 * r * (1.0 - 9.0 * r))));
            let expect = -0.5 * u * u - 0.5 * (2.0 * PI).ln() + series.ln();
            let (lh, slope) = log_h(-u);
            assert!(
                ((lh - expect) / expect).abs() < 1e-15,
                "u = {u}: {lh} vs {expect}"
            );
            // d ln h/dz -> u as u grows (h ~ phi(u)/u^2): within a few u^-1.
            assert!((slope - u).abs() < 3.0 / u, "u = {u}: slope {slope}");
        }
        for &z in &[2.0f64, -0.5, -4.9, -5.2, -20.0, -300.0] {
            let h = 1e-6 * z.abs().max(1.0);
            let fd = (log_h(z + h).0 - log_h(z - h).0) / (2.0 * h);
            let slope = log_h(z).1;
            assert!(
                (slope - fd).abs() < 1e-6 * slope.abs().max(1.0),
                "z = {z}: {slope} vs {fd}"
            );
        }
        // EI underflows long before ln EI does.
        assert_eq!(expected_improvement(-40.0, 1.0, 0.0), 0.0);
        assert!(log_expected_improvement(-40.0, 1.0, 0.0).is_finite());
    }

    /// ln EI is the log of EI wherever EI is representable, and its gradient matches central
    /// differences along a path deep in the region where EI itself is 0.
    #[test]
    fn log_ei_is_the_log_of_ei_with_its_gradient() {
        for &(m, s, b) in &[
            (0.3, 0.7, 0.5),
            (-2.0, 0.3, 1.0),
            (5.0, 2.0, 0.0),
            (0.0, 1e-3, 0.01),
        ] {
            let lei = log_expected_improvement(m, s, b);
            let ei = expected_improvement(m, s, b);
            assert!(
                (lei - ei.ln()).abs() < 1e-11 * ei.ln().abs().max(1.0),
                "{m} {s} {b}"
            );
        }
        let (m, v) = (
            |x: f64| -5.0 + 0.5 * x.sin(),
            |x: f64| 0.004 + 0.001 * x * x,
        );
        let (dm, dv) = (|x: f64| 0.5 * x.cos(), |x: f64| 0.002 * x);
        for x in [-1.3, 0.2, 0.9] {
            assert_eq!(expected_improvement(m(x), v(x).sqrt(), 0.0), 0.0);
            let f = |x: f64| log_ei_grad(m(x), v(x), &[dm(x)], &[dv(x)], 0.0).0;
            let (value, g) = log_ei_grad(m(x), v(x), &[dm(x)], &[dv(x)], 0.0);
            assert_eq!(value, log_expected_improvement(m(x), v(x).sqrt(), 0.0));
            let h = 1e-6;
            let fd = (f(x + h) - f(x - h)) / (2.0 * h);
            assert!(
                (g[0] - fd).abs() < 1e-5 * fd.abs(),
                "x = {x}: {} vs {fd}",
                g[0]
            );
        }
    }
}
