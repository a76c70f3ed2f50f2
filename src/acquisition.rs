//! Acquisition functions of the meta-learning baselines (RGPE, TAF), kept apart from the
//! surrogates that feed them and the algorithms that maximise them (BoTorch's split).

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
}
