//! Acquisition functions (EI, UCB; RGPE's and TAF's EI), kept apart from the surrogates that
//! feed them and the algorithms that maximise them (BoTorch's split).

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
}
