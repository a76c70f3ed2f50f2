//! The privacy cost of tuning: run a private algorithm a random number K of times (each with
//! a setting drawn from the candidates) and keep the best run, releasing only it. Papernot
//! and Steinke (ICLR 2022, "Hyperparameter tuning with Renyi differential privacy", Thm. 2):
//! with K from a truncated negative binomial of shape eta >= 0 and halting probability gamma,
//! P[K = k] proportional to C(k + eta - 1, k) (1 - gamma)^k for k >= 1 (eta = 0 the
//! logarithmic distribution, eta = 1 the geometric), and every run (lambda, eps(lambda))-RDP,
//! the selection is (lambda, eps')-RDP for every lambda > 1 and every lambda-hat >= 1:
//!
//!   eps'(lambda) = eps(lambda) + (1 + eta) (1 - 1/lambda-hat) eps(lambda-hat)
//!                  + (1 + eta) ln(1/gamma) / lambda-hat + ln E[K] / (lambda - 1).
//!
//! A fixed number of candidates has no such bound beyond composition: the randomness of K is
//! what makes the cost a constant factor (2 + eta in the pure-DP limit) instead of K.

/// The mean of the truncated negative binomial with halting probability `gamma` in (0, 1].
pub fn tnb_mean(gamma: f64, shape: f64) -> f64 {
    if gamma >= 1.0 {
        return 1.0;
    }
    if shape == 1.0 {
        1.0 / gamma
    } else if shape == 0.0 {
        // (1 - gamma) / (gamma ln(1 / gamma)), the logarithmic distribution's mean.
        (1.0 - gamma) / (gamma * -gamma.ln())
    } else {
        shape * (1.0 / gamma - 1.0) / (1.0 - gamma.powf(shape))
    }
}

/// The halting probability whose distribution has mean `mean` (>= 1), by bisection on the
/// mean, which falls as gamma grows; the smaller end of the final bracket, whose mean is at
/// least `mean` (a larger mean is the conservative side: ln(1/gamma) grows).
pub fn tnb_gamma(shape: f64, mean: f64) -> f64 {
    if shape == 1.0 {
        return 1.0 / mean;
    }
    let (mut lo, mut hi) = (0.0f64, (2.0 * (shape + 1.0) / mean).min(1.0));
    while hi > lo * (1.0 + 1e-12) && hi - lo > f64::MIN_POSITIVE {
        let mid = 0.5 * (lo + hi);
        if tnb_mean(mid, shape) < mean {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    lo
}

/// The RDP curve of repeat-and-select over `orders` (all > 1) from one run's curve `rdp`,
/// K with shape `shape` and mean `mean`: Thm. 2 with lambda-hat the best of the orders, then
/// made non-decreasing in the order (a valid RDP curve is, so each order takes the least bound
/// of any order at or above it).
pub fn repeat_and_select(
    orders: &[f64],
    rdp: &[f64],
    mean: f64,
    shape: f64,
) -> Result<Vec<f64>, String> {
    if !(shape >= 0.0 && shape.is_finite()) {
        return Err(format!(
            "the shape of the number of candidates must be finite and >= 0, got {shape}"
        ));
    }
    if !(mean >= 1.0 && mean.is_finite()) {
        return Err(format!(
            "the mean number of candidates must be finite and >= 1, got {mean}"
        ));
    }
    if orders.len() != rdp.len() || orders.iter().any(|&a| a.is_nan() || a <= 1.0) {
        return Err("repeat-and-select needs RDP orders above 1, one value each".into());
    }
    let gamma = tnb_gamma(shape, mean);
    let constant = (1.0 + shape)
        * orders
            .iter()
            .zip(rdp)
            .map(|(&a, &e)| (1.0 - 1.0 / a) * e - gamma.ln() / a)
            .fold(f64::INFINITY, f64::min);
    let mut out: Vec<f64> = orders
        .iter()
        .zip(rdp)
        .map(|(&a, &e)| e + mean.ln() / (a - 1.0) + constant)
        .collect();
    // Suffix minima in order of the orders (they need not be sorted).
    let mut idx: Vec<usize> = (0..orders.len()).collect();
    idx.sort_by(|&i, &j| orders[i].total_cmp(&orders[j]));
    let mut least = f64::INFINITY;
    for &i in idx.iter().rev() {
        least = least.min(out[i]);
        out[i] = least;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::rdp::to_dp_improved;

    /// The Gaussian mechanism's RDP, alpha / (2 z^2), composed t times.
    fn gaussian(orders: &[f64], z: f64, t: f64) -> Vec<f64> {
        orders.iter().map(|a| t * a / (2.0 * z * z)).collect()
    }

    fn orders() -> Vec<f64> {
        let mut v: Vec<f64> = (11..=99).map(|i| i as f64 / 10.0).collect();
        v.extend((10..=256).map(f64::from));
        v
    }

    #[test]
    fn the_halting_probability_gives_the_mean() {
        for shape in [0.0, 0.5, 1.0, 2.0, 7.5] {
            for mean in [1.5, 3.0, 10.0, 100.0] {
                let g = tnb_gamma(shape, mean);
                let m = tnb_mean(g, shape);
                assert!(m >= mean && (m - mean) / mean < 1e-9, "{shape} {mean}: {m}");
            }
        }
        // Closed forms: geometric 1/gamma; the logarithmic distribution at gamma = 1/e has
        // mean (1 - 1/e) e = e - 1.
        assert_eq!(tnb_mean(0.25, 1.0), 4.0);
        let e = std::f64::consts::E;
        assert!((tnb_mean(1.0 / e, 0.0) - (e - 1.0)).abs() < 1e-12);
    }

    /// Golden values from dp-accounting 0.6.0 (pip install dp-accounting==0.6.0;
    /// RdpAccountant(orders) composing RepeatAndSelectDpEvent(GaussianDpEvent(z) x t, mean,
    /// shape), get_epsilon(delta)) on the same orders.
    #[test]
    fn repeat_and_select_matches_dp_accounting() {
        let o = orders();
        for (z, t, mean, shape, delta, want) in GOLDEN {
            let rdp = repeat_and_select(&o, &gaussian(&o, *z, *t), *mean, *shape).unwrap();
            let (eps, _) = to_dp_improved(&o, &rdp, *delta);
            assert!(
                (eps - want).abs() <= 1e-6 * want.max(1.0),
                "z {z} t {t} mean {mean} shape {shape}: {eps} against {want}"
            );
        }
    }

    /// A mechanism that is eps-DP is (lambda, eps)-RDP at every order; as the orders grow the
    /// selection's bound tends to (2 + eta) eps (Papernot and Steinke, Cor. 3).
    #[test]
    fn the_pure_dp_limit_is_two_plus_shape_times_epsilon() {
        let eps = 0.5;
        let o: Vec<f64> = (1..=60).map(|i| 1.5f64.powi(i)).collect();
        for shape in [0.0, 1.0, 3.0] {
            let rdp = repeat_and_select(&o, &vec![eps; o.len()], 10.0, shape).unwrap();
            let at_top = *rdp.last().unwrap();
            let want = (2.0 + shape) * eps;
            assert!(
                (at_top - want).abs() < 1e-3,
                "shape {shape}: {at_top} against {want}"
            );
            assert!(at_top >= want);
        }
    }

    #[test]
    fn one_candidate_at_a_time_costs_no_less_than_one_run() {
        let o = orders();
        let one = gaussian(&o, 2.0, 10.0);
        let sel = repeat_and_select(&o, &one, 1.0 + 1e-9, 1.0).unwrap();
        assert!(sel.iter().zip(&one).all(|(s, r)| s >= r));
        assert!(repeat_and_select(&o, &one, 0.5, 1.0).is_err());
        assert!(repeat_and_select(&o, &one, 3.0, -1.0).is_err());
    }

    /// (z, t, mean, shape, delta, epsilon).
    const GOLDEN: &[(f64, f64, f64, f64, f64, f64)] = &[
        (1.0, 1.0, 10.0, 1.0, 1e-5, 8.514477814958271),
        (2.0, 100.0, 10.0, 1.0, 1e-5, 44.11573454774265),
        (1.0, 1.0, 5.0, 0.0, 1e-6, 7.346265956878996),
        (4.0, 50.0, 20.0, 2.0, 1e-5, 17.2442596322032),
        (0.8, 10.0, 3.0, 0.5, 1e-3, 25.30734960805748),
        (1.5, 30.0, 100.0, 1.0, 1e-5, 35.99674769075331),
    ];
}
