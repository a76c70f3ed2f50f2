//! A vectorisable cos for the hot loop of every Thompson sample: random-feature evaluation,
//! grid size x M cosines (10^5 per own sample). libm's cos is opaque to the auto-vectoriser
//! and costs about 15 ns here; this is plain arithmetic, accurate to about 1e-14.

use std::f64::consts::{FRAC_PI_2, PI};

/// Adding and subtracting 1.5 * 2^52 rounds to the nearest integer with plain SSE2
/// arithmetic, which keeps loops vectorisable (f64::round is a libm call).
const ROUND_MAGIC: f64 = 6_755_399_441_055_744.0;

// 2 pi = C1 + C2 + C3 with C1, C2 carrying 26 significant bits, so k * C1 and k * C2 are
// exact for |k| < 2^26 (Cody-Waite reduction).
const TWO_PI_C1: f64 = 6.283_185_243_606_567;
const TWO_PI_C2: f64 = 6.357_301_884_918_343e-8;
const TWO_PI_C3: f64 = 2.449_293_598_294_706_4e-16;
const INV_TWO_PI: f64 = 0.159_154_943_091_895_35;

/// cos(x) to about 1e-14 absolute for |x| < 1e6, several times faster than `f64::cos`
/// because it vectorises. Feature evaluation (grid size x M cosines per Thompson sample) is
/// the hot loop of every own-sample iteration.
#[inline(always)]
pub fn fast_cos(x: f64) -> f64 {
    let k = (x * INV_TWO_PI + ROUND_MAGIC) - ROUND_MAGIC;
    let r = ((x - k * TWO_PI_C1) - k * TWO_PI_C2) - k * TWO_PI_C3; // r in [-pi, pi]
    let a = r.abs();
    let flip = a > FRAC_PI_2;
    let a = if flip { PI - a } else { a }; // cos(a) = -cos(pi - a)
    let z = a * a;
    // Taylor series of cos to z^10; truncation error < (pi/2)^22 / 22! < 2e-17.
    let mut p = 1.0 / 2_432_902_008_176_640_000.0; // 1/20!
    p = p * -z + 1.0 / 6_402_373_705_728_000.0; // 1/18!
    p = p * -z + 1.0 / 20_922_789_888_000.0; // 1/16!
    p = p * -z + 1.0 / 87_178_291_200.0; // 1/14!
    p = p * -z + 1.0 / 479_001_600.0; // 1/12!
    p = p * -z + 1.0 / 3_628_800.0; // 1/10!
    p = p * -z + 1.0 / 40_320.0; // 1/8!
    p = p * -z + 1.0 / 720.0; // 1/6!
    p = p * -z + 1.0 / 24.0; // 1/4!
    p = p * -z + 0.5; // 1/2!
    p = p * -z + 1.0;
    if flip { -p } else { p }
}

/// sin(x) = cos(x - pi/2), for the gradients of sampled functions on a box. The shift rounds
/// x - pi/2 once, so the error is about 1e-14 + |x| 2^-53 (1.7e-13 at |x| = 3000).
#[inline(always)]
pub fn fast_sin(x: f64) -> f64 {
    fast_cos(x - FRAC_PI_2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_sin_matches_std() {
        let mut worst: f64 = 0.0;
        for i in 0..200_000 {
            let x = -3000.0 + i as f64 * 0.030_000_7;
            let bound = 1e-14 + x.abs() * f64::EPSILON / 2.0;
            worst = worst.max((fast_sin(x) - x.sin()).abs() / bound);
        }
        assert!(worst < 1.0, "worst error {worst} of the bound");
    }

    #[test]
    fn fast_cos_matches_std() {
        let mut worst: f64 = 0.0;
        for i in 0..200_000 {
            let x = -3000.0 + i as f64 * 0.030_000_7;
            worst = worst.max((fast_cos(x) - x.cos()).abs());
        }
        for x in [0.0, FRAC_PI_2, PI, -PI, 2.0 * PI, 1e5 + 0.3] {
            worst = worst.max((fast_cos(x) - x.cos()).abs());
        }
        assert!(worst < 1e-13, "worst error {worst}");
    }
}
