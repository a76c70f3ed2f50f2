//! A vectorisable cos for the hot loop of every Thompson sample: random-feature evaluation,
//! grid size x M cosines (10^5 per own sample), and a vectorisable exp for the kernel matrix
//! of every GP likelihood evaluation (n^2 / 2 per evaluation, 150 evaluations per refit).
//! libm's cos and exp are opaque to the auto-vectoriser and cost about 15 ns here; these are
//! plain arithmetic, in a fixed order, so their results do not depend on the CPU either.

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

// ln 2 = LN2_HI + LN2_LO with LN2_HI carrying 32 significant bits, so k * LN2_HI is exact
// for |k| < 2^20 (Cody-Waite reduction).
const LN2_HI: f64 = 0.693_147_180_369_123_8;
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;

/// exp(x) to within 2 ulp for x <= 709 (measured against libm in the tests), 0 below -708
/// (where exp(x) < 3.4e-308 would be subnormal), inf above 709.78, NaN for NaN.
#[inline(always)]
pub fn fast_exp(x: f64) -> f64 {
    // k = round(x / ln 2): the sum's low bits hold k (|k| < 2^51), read back as an integer.
    let t = x * std::f64::consts::LOG2_E + ROUND_MAGIC;
    let k = t - ROUND_MAGIC;
    let ki = t.to_bits().wrapping_sub(ROUND_MAGIC.to_bits()) as i64;
    let r = (x - k * LN2_HI) - k * LN2_LO; // |r| <= ln 2 / 2 + rounding
    // Taylor series of exp to r^13; truncation error < 0.35^14 / 14! < 5e-18.
    let mut p = 1.0 / 6_227_020_800.0; // 1/13!
    p = p * r + 1.0 / 479_001_600.0; // 1/12!
    p = p * r + 1.0 / 39_916_800.0; // 1/11!
    p = p * r + 1.0 / 3_628_800.0; // 1/10!
    p = p * r + 1.0 / 362_880.0; // 1/9!
    p = p * r + 1.0 / 40_320.0; // 1/8!
    p = p * r + 1.0 / 5_040.0; // 1/7!
    p = p * r + 1.0 / 720.0; // 1/6!
    p = p * r + 1.0 / 120.0; // 1/5!
    p = p * r + 1.0 / 24.0; // 1/4!
    p = p * r + 1.0 / 6.0; // 1/3!
    p = p * r + 0.5; // 1/2!
    p = p * r + 1.0;
    p = p * r + 1.0;
    // 2^k from its exponent bits; k + 1023 stays in 1..2046 on the range kept below.
    let two_k = f64::from_bits((ki.wrapping_add(1023) as u64) << 52);
    let v = p * two_k;
    if x < -708.0 {
        0.0
    } else if x > 709.78 {
        f64::INFINITY
    } else {
        v
    }
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

    #[test]
    fn fast_exp_matches_libm_to_2_ulp() {
        let mut worst: f64 = 0.0;
        for i in 0..400_000 {
            let x = -708.0 + i as f64 * 0.001_773_1;
            let (a, b) = (fast_exp(x), libm::exp(x));
            worst = worst.max((a - b).abs() / (b * f64::EPSILON));
        }
        for x in [
            0.0, -1e-300, 1e-300, -0.5, 0.346, -0.347, 1.0, -1.0, 700.0, -707.9,
        ] {
            let (a, b) = (fast_exp(x), libm::exp(x));
            worst = worst.max((a - b).abs() / (b * f64::EPSILON));
        }
        assert!(worst <= 2.0, "worst error {worst} ulp");
        assert_eq!(fast_exp(0.0), 1.0);
        assert_eq!(fast_exp(-800.0), 0.0);
        assert_eq!(fast_exp(-f64::INFINITY), 0.0);
        assert_eq!(fast_exp(710.0), f64::INFINITY);
        assert!(fast_exp(f64::NAN).is_nan());
    }
}
