//! Fixed point for exact sums: values as two's complement integers mod 2^64 with
//! `FRACTION_BITS` fraction bits, so that a sum is an integer sum, independent of the order of
//! addition (secure aggregation's masked sums, distributed noise's discrete shares).

/// Fraction bits of the fixed-point encoding.
pub const FRACTION_BITS: i32 = 32;

/// `v` in fixed point, two's complement mod 2^64, or None when `cohort` such values could
/// overflow the sum (|v| 2^32 must stay below 2^63 / cohort).
pub fn encode(v: f64, cohort: usize) -> Option<u64> {
    let scaled = (v * 2f64.powi(FRACTION_BITS)).round();
    let limit = 2f64.powi(63) / cohort.max(1) as f64;
    (scaled.is_finite() && scaled.abs() < limit).then_some(scaled as i64 as u64)
}

/// The value of a fixed-point sum.
pub fn decode(v: u64) -> f64 {
    v as i64 as f64 / 2f64.powi(FRACTION_BITS)
}
