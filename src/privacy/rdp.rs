//! Renyi DP of the subsampled Gaussian mechanism and its conversion to (epsilon, delta).

use super::{Mechanism, Noise, Sampling, log_add, log_erfc, log_sub};

/// ln C(n, k) for real n >= 0 and integer k, with the sign of C(n, k).
fn log_binom_signed(n: f64, k: u64) -> (f64, f64) {
    let mut log = 0.0;
    let mut sign = 1.0;
    for i in 0..k {
        let num = n - i as f64;
        if num == 0.0 {
            return (f64::NEG_INFINITY, 0.0);
        }
        if num < 0.0 {
            sign = -sign;
        }
        log += num.abs().ln() - ((i + 1) as f64).ln();
    }
    (log, sign)
}

/// ln A_alpha for integer alpha (Mironov, Talwar & Zhang 2019, Sec. 3.3):
/// A = sum_k C(a, k) (1-q)^(a-k) q^k exp((k^2 - k) / (2 z^2)), summed in log space.
fn log_a_int(q: f64, z: f64, alpha: u64) -> f64 {
    let mut acc = f64::NEG_INFINITY;
    let (lq, l1q) = (q.ln(), (1.0 - q).ln());
    let mut lbinom = 0.0;
    for k in 0..=alpha {
        if k > 0 {
            lbinom += ((alpha - k + 1) as f64).ln() - (k as f64).ln();
        }
        let lpow = if k == alpha {
            0.0
        } else {
            (alpha - k) as f64 * l1q
        };
        // k = 0, 1 contribute no exponent; written out so that z^2 underflowing to 0 gives
        // +inf for k >= 2 (no guarantee), never 0/0.
        let expo = if k >= 2 {
            (k * k - k) as f64 * (0.5 / (z * z))
        } else {
            0.0
        };
        let term = lbinom + k as f64 * lq + lpow + expo;
        acc = log_add(acc, term);
    }
    acc
}

/// Terms the fractional series may take before it is declared unusable (`None`). Near
/// alpha = 1 with small q it needs up to a few hundred thousand.
const MAX_FRAC_TERMS: u64 = 2_000_000;

/// Below this noise multiplier the fractional series is not evaluated: its terms are sums of
/// quantities of size 1/z^2 that cancel, so double precision loses the result (at z = 1e-10
/// the terms are 1e20 apart), and at z around 1e-160 z^2 underflows and the terms turn NaN.
const MIN_FRAC_Z: f64 = 0.05;

/// ln A_alpha for fractional alpha (same reference): two infinite series split at
/// z0 = z^2 ln(1/q - 1) + 1/2, each term weighted by a Gaussian tail. Beyond i = alpha the
/// binomial coefficients alternate in sign and the second series decays only like
/// i^-(alpha+2), so near alpha = 1 thousands of terms are needed. The loop stops once every
/// term is below e^-30; because the tail alternates, the omitted remainder is bounded by the
/// first omitted term, i.e. a relative error below 1e-13 (A_alpha >= 1). `None` when the series
/// cannot be evaluated reliably (z < MIN_FRAC_Z, a non-finite term, or more than
/// MAX_FRAC_TERMS terms): the caller then falls back to a valid bound.
fn log_a_frac(q: f64, z: f64, alpha: f64) -> Option<f64> {
    if z.is_nan() || z < MIN_FRAC_Z {
        return None;
    }
    let (mut a0, mut a1) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    let z0 = z * z * (1.0 / q - 1.0).ln() + 0.5;
    let (lq, l1q) = (q.ln(), (1.0 - q).ln());
    let s2 = std::f64::consts::SQRT_2 * z;
    let mut i: u64 = 0;
    let (mut lbinom, mut sign) = (0.0, 1.0);
    loop {
        if i > 0 {
            let num = alpha - (i - 1) as f64;
            if num < 0.0 {
                sign = -sign;
            }
            lbinom += num.abs().ln() - (i as f64).ln();
        }
        let fi = i as f64;
        let j = alpha - fi;
        let t0 = lbinom + fi * lq + j * l1q;
        let t1 = lbinom + j * lq + fi * l1q;
        let e0 = 0.5f64.ln() + log_erfc((fi - z0) / s2);
        let e1 = 0.5f64.ln() + log_erfc((z0 - j) / s2);
        let s0 = t0 + (fi * fi - fi) / (2.0 * z * z) + e0;
        let s1 = t1 + (j * j - j) / (2.0 * z * z) + e1;
        if s0.is_nan() || s1.is_nan() || s0 == f64::INFINITY || s1 == f64::INFINITY {
            return None;
        }
        if sign > 0.0 {
            a0 = log_add(a0, s0);
            a1 = log_add(a1, s1);
        } else {
            a0 = log_sub(a0, s0);
            a1 = log_sub(a1, s1);
        }
        i += 1;
        if s0.max(s1) < -30.0 && fi > alpha + 1.0 {
            break;
        }
        if i > MAX_FRAC_TERMS {
            return None;
        }
    }
    let la = log_add(a0, a1);
    la.is_finite().then_some(la)
}

/// RDP of one step of the Poisson-subsampled Gaussian at order alpha > 1: an upper bound that
/// is exact wherever the series can be evaluated, and +inf where nothing finite is valid.
/// At a fractional order whose series is unusable (see `log_a_frac`) it is the RDP at
/// ceil(alpha), computed exactly by the finite integer sum: Renyi divergence does not decrease
/// with the order, so that is a valid, slightly looser bound at alpha.
pub fn rdp_poisson(q: f64, z: f64, alpha: f64) -> f64 {
    if q == 1.0 {
        return alpha * (0.5 / (z * z));
    }
    let (la, order) = if alpha.fract() == 0.0 {
        (log_a_int(q, z, alpha as u64), alpha)
    } else {
        match log_a_frac(q, z, alpha) {
            Some(la) => (la, alpha),
            None => (log_a_int(q, z, alpha.ceil() as u64), alpha.ceil()),
        }
    };
    let r = la / (order - 1.0);
    // NaN can only come from infinities meeting; no finite bound is then known.
    if r.is_nan() {
        f64::INFINITY
    } else {
        r.max(0.0)
    }
}

/// ln of an upper bound on the forward difference Delta^l a(0) of a_i = exp(c i (i - 1)),
/// l = 0..=n. The alternating sum cancels badly when c is small (at c = 1e-3 and l = 32 the
/// terms are 1e9 times the result), so the rounding error of the sum is bounded (8 ulps per
/// term and per unit of the largest exponent, far above what log-space sums lose) and added:
/// an upper bound whatever the cancellation, which is all the bound below needs.
fn log_forward_differences_upper(c: f64, n: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(n + 1);
    for l in 0..=n {
        let (mut pos, mut neg) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
        let mut largest: f64 = 0.0;
        let mut lbinom = 0.0;
        for i in 0..=l {
            if i > 0 {
                lbinom += ((l - i + 1) as f64).ln() - (i as f64).ln();
            }
            let expo = c * (i * i.saturating_sub(1)) as f64;
            let t = lbinom + expo;
            largest = largest.max(t.abs());
            if (l - i) % 2 == 0 {
                pos = log_add(pos, t);
            } else {
                neg = log_add(neg, t);
            }
        }
        let computed = if pos > neg {
            log_sub(pos, neg)
        } else {
            f64::NEG_INFINITY
        };
        let eta = 8.0 * f64::EPSILON * (l as f64 + 2.0 + largest);
        let err = log_add(pos, neg) + eta.ln();
        out.push(log_add(computed, err));
    }
    out
}

/// RDP of one step with fixed-size sampling without replacement (replace-one neighbours),
/// integer alpha >= 2: Wang, Balle & Kasiviswanathan (2019), Thm. 27 (the subsampled-Gaussian
/// strengthening of their Thm. 9, as dp_accounting implements it): the Gaussian's
/// eps(j) = j Delta^2 / (2 z^2) with Delta = 2 (replacing an agent moves the clipped sum by up
/// to 2S), and each term j >= 3 the smaller of Thm. 9's 2 e^((j-1) eps(j)) and
/// 4 sqrt(D(2 floor(j/2)) D(2 ceil(j/2))), D(l) the l-th forward difference of
/// e^((i-1) eps(i)) at 0.
pub fn rdp_fixed(q: f64, z: f64, alpha: u64) -> f64 {
    let eps = |j: u64| 2.0 * j as f64 / (z * z);
    if q == 1.0 {
        return eps(alpha);
    }
    let lq = q.ln();
    let e2 = eps(2);
    // Differences up to order 2 ceil(alpha / 2), kept per z for the process: a privacy curve
    // asks for every order at every step count.
    let need = (2 * alpha.div_ceil(2)) as usize;
    let diffs = forward_differences(2.0 / (z * z), need);
    // j = 2 term: q^2 C(a,2) min(4 (e^eps2 - 1), 2 e^eps2)
    let lmin2 = (4.0f64.ln() + e2.exp_m1().ln()).min(2f64.ln() + e2);
    let mut acc = log_add(0.0, 2.0 * lq + log_binom_signed(alpha as f64, 2).0 + lmin2);
    for j in 3..=alpha {
        let (lo, hi) = (2 * (j / 2) as usize, 2 * j.div_ceil(2) as usize);
        let thm27 = 4f64.ln() + 0.5 * (diffs[lo] + diffs[hi]);
        let thm9 = 2f64.ln() + (j - 1) as f64 * eps(j);
        let term = j as f64 * lq + log_binom_signed(alpha as f64, j).0 + thm27.min(thm9);
        acc = log_add(acc, term);
    }
    acc / (alpha - 1) as f64
}

/// `log_forward_differences_upper(c, n)`, cached per c (and grown to the largest n asked).
fn forward_differences(c: f64, n: usize) -> std::sync::Arc<Vec<f64>> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};
    static CACHE: OnceLock<Mutex<HashMap<u64, Arc<Vec<f64>>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let key = c.to_bits();
    if let Some(v) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key)
        && v.len() > n
    {
        return v.clone();
    }
    // Computed outside the lock; at least to order 258 so one entry serves every order.
    let v = Arc::new(log_forward_differences_upper(c, n.max(258)));
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, v.clone());
    v
}

/// One step's RDP at each order; fixed-size sampling supports integer orders only.
pub fn rdp_curve(m: &Mechanism, orders: &[f64]) -> Result<Vec<f64>, String> {
    if let Noise::Distributed(d) = m.noise {
        return orders
            .iter()
            .map(|&a| {
                if a.fract() == 0.0 && a >= 2.0 {
                    Ok(d.rdp(m.q, m.z, m.sampling, m.adjacency, a as u64) * m.steps as f64)
                } else {
                    Err(format!(
                        "distributed noise has an RDP bound at integer orders only, not {a}"
                    ))
                }
            })
            .collect();
    }
    orders
        .iter()
        .map(|&a| match m.sampling {
            Sampling::Poisson => Ok(rdp_poisson(m.q, m.z, a) * m.steps as f64),
            Sampling::Fixed if a.fract() == 0.0 && a >= 2.0 => {
                Ok(rdp_fixed(m.q, m.z, a as u64) * m.steps as f64)
            }
            Sampling::Fixed => Err(format!(
                "fixed-size sampling has an RDP bound at integer orders only, not {a}"
            )),
            // No amplification claimed (the allocation accountant is random allocation's):
            // every round at most the unsampled Gaussian mechanism.
            Sampling::Allocation { .. } => Ok(rdp_poisson(1.0, m.z, a) * m.steps as f64),
        })
        .collect()
}

/// The `rdp` accountant's orders: fractional near 1, where small epsilons are found, and
/// integers up to 256; integers only for fixed-size sampling and distributed noise.
pub fn fine_orders(m: &Mechanism) -> Vec<f64> {
    let mut v: Vec<f64> = Vec::new();
    if m.sampling == Sampling::Poisson && m.noise == Noise::Gaussian {
        v.extend((1..=19).map(|k| 1.0 + k as f64 / 20.0)); // 1.05 .. 1.95
        v.extend(
            (0..100)
                .map(|k| 2.0 + k as f64 / 10.0)
                .filter(|a| a.fract() != 0.0),
        ); // 2.1 .. 11.9
    }
    v.extend((2..=256).map(f64::from));
    v
}

/// Classic conversion (Mironov 2017, Prop. 3): eps = min_a [RDP(a) + ln(1/delta) / (a - 1)].
pub fn to_dp_classic(orders: &[f64], rdp: &[f64], delta: f64) -> (f64, f64) {
    best(orders, rdp, |a, r| r + (1.0 / delta).ln() / (a - 1.0))
}

/// Improved conversion (Canonne, Kamath & Steinke 2020; Asoodeh et al. 2021):
/// eps = RDP(a) + ln((a - 1)/a) - (ln delta + ln a) / (a - 1).
pub fn to_dp_improved(orders: &[f64], rdp: &[f64], delta: f64) -> (f64, f64) {
    best(orders, rdp, |a, r| {
        r + ((a - 1.0) / a).ln() - (delta.ln() + a.ln()) / (a - 1.0)
    })
}

fn best(orders: &[f64], rdp: &[f64], f: impl Fn(f64, f64) -> f64) -> (f64, f64) {
    let mut out = (f64::INFINITY, orders[0]);
    for (&a, &r) in orders.iter().zip(rdp) {
        let e = f(a, r);
        if e < out.0 {
            out = (e, a);
        }
    }
    (out.0.max(0.0), out.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q_one_is_the_plain_gaussian_at_every_order() {
        for a in [1.5, 2.0, 3.7, 10.0, 32.0] {
            assert!((rdp_poisson(1.0, 1.3, a) - a / (2.0 * 1.69)).abs() < 1e-12);
        }
        // And the general integer path agrees with it as q -> 1.
        let near = log_a_int(1.0 - 1e-12, 1.3, 5) / 4.0;
        assert!((near - 5.0 / (2.0 * 1.69)).abs() < 1e-6, "{near}");
    }

    #[test]
    fn fractional_series_is_continuous_with_the_integer_sum() {
        // Down to MIN_FRAC_Z, where the terms' cancellation is largest.
        for (q, z) in [
            (0.25, 1.0),
            (0.01, 0.8),
            (0.5, 2.0),
            (0.3, MIN_FRAC_Z),
            (1e-6, MIN_FRAC_Z),
            (0.9, 0.1),
        ] {
            for a in [2u64, 3, 8] {
                let int = rdp_poisson(q, z, a as f64);
                let frac = rdp_poisson(q, z, a as f64 + 1e-7);
                assert!(
                    (int - frac).abs() < 1e-5 * int.max(1e-3),
                    "q={q} z={z} a={a}: {int} vs {frac}"
                );
            }
        }
    }

    #[test]
    fn fractional_orders_near_one_need_and_get_many_terms() {
        // q = 0.01, alpha = 1.01: the terms decay like 0.99^i, so a cap of a few hundred terms
        // would stop with most of the mass unsummed. RDP must be small, positive and finite.
        let r = rdp_poisson(0.01, 1.0, 1.01);
        assert!(r.is_finite() && r > 0.0 && r < 1e-3, "{r}");
        // RDP is non-decreasing in the order.
        let mut prev = 0.0;
        for a in [1.01, 1.1, 1.5, 2.0, 2.5, 4.0] {
            let v = rdp_poisson(0.05, 1.0, a);
            assert!(v >= prev - 1e-12, "alpha {a}: {v} < {prev}");
            prev = v;
        }
    }

    #[test]
    fn improved_conversion_is_never_looser() {
        let m = Mechanism {
            q: 0.2,
            z: 1.1,
            steps: 100,
            sampling: Sampling::Poisson,
            adjacency: super::super::Adjacency::AddRemove,
            noise: Noise::Gaussian,
        };
        let orders = fine_orders(&m);
        let curve = rdp_curve(&m, &orders).unwrap();
        let (c, _) = to_dp_classic(&orders, &curve, 1e-5);
        let (i, _) = to_dp_improved(&orders, &curve, 1e-5);
        assert!(i < c, "{i} vs {c}");
    }

    #[test]
    fn forward_differences_are_upper_bounds_that_are_tight_without_cancellation() {
        // a = 1, 1, e^2c, e^6c, e^12c: Delta^2 = e^2c - 1, Delta^4 = e^12c - 4 e^6c + 6 e^2c - 3.
        for c in [1e-3, 0.1, 2.0] {
            let d = log_forward_differences_upper(c, 4);
            let d2 = (2.0 * c).exp_m1();
            let d4 = (12.0 * c).exp() - 4.0 * (6.0 * c).exp() + 6.0 * (2.0 * c).exp() - 3.0;
            assert!(
                d[2] >= d2.ln() && d[2] - d2.ln() < 1e-9,
                "c={c}: {} {}",
                d[2],
                d2.ln()
            );
            assert!(d[4] >= d4.ln() - 1e-9, "c={c}: {} {}", d[4], d4.ln());
            if c >= 0.1 {
                assert!(d[4] - d4.ln() < 1e-9, "c={c}");
            }
        }
        // Heavy cancellation: still a finite upper bound, never NaN.
        let d = log_forward_differences_upper(1e-6, 256);
        assert!(d.iter().all(|v| v.is_finite() || *v == f64::NEG_INFINITY));
    }

    #[test]
    fn theorem_27_is_never_looser_than_theorem_9() {
        // Theorem 9 is Theorem 27 with every j >= 3 term at 2 e^((j-1) eps(j)).
        let thm9 = |q: f64, z: f64, alpha: u64| {
            let eps = |j: u64| 2.0 * j as f64 / (z * z);
            let e2 = eps(2);
            let lmin2 = (4.0f64.ln() + e2.exp_m1().ln()).min(2f64.ln() + e2);
            let mut acc = log_add(
                0.0,
                2.0 * q.ln() + log_binom_signed(alpha as f64, 2).0 + lmin2,
            );
            for j in 3..=alpha {
                acc = log_add(
                    acc,
                    j as f64 * q.ln()
                        + log_binom_signed(alpha as f64, j).0
                        + (j - 1) as f64 * eps(j)
                        + 2f64.ln(),
                );
            }
            acc / (alpha - 1) as f64
        };
        let mut tighter = 0;
        for q in [0.01, 0.1, 0.37] {
            for z in [0.8, 2.0, 5.0] {
                for alpha in [2, 3, 8, 32, 128] {
                    let (a, b) = (rdp_fixed(q, z, alpha), thm9(q, z, alpha));
                    assert!(a <= b + 1e-12, "q={q} z={z} a={alpha}: {a} > {b}");
                    if a < b * 0.999 {
                        tighter += 1;
                    }
                }
            }
        }
        assert!(tighter >= 5, "{tighter}");
    }
}
