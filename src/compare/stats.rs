//! The paired statistics behind `fbo compare`, as small pure functions: Wilcoxon's signed-rank
//! test, a percentile bootstrap interval for the mean difference, and Holm's step-down
//! adjustment.

use rand::Rng;

/// How a Wilcoxon p-value was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WilcoxonMethod {
    /// The exact null distribution of the signed-rank statistic (no ties, no zeros, at most
    /// `EXACT_MAX_N` differences).
    Exact,
    /// Every sign assignment of the non-zero differences enumerated with their (average) ranks:
    /// exact in the presence of ties or zeros, for at most `ENUMERATE_MAX_N` differences.
    Enumerated,
    /// The normal approximation with the tie-corrected variance.
    Normal,
    /// Every difference is zero: no evidence either way (p = 1).
    AllZero,
}

impl WilcoxonMethod {
    pub fn name(self) -> &'static str {
        match self {
            WilcoxonMethod::Exact => "exact",
            WilcoxonMethod::Enumerated => "enumerated",
            WilcoxonMethod::Normal => "normal",
            WilcoxonMethod::AllZero => "all-zero",
        }
    }
}

/// Up to this many differences (zeros included) without ties or zeros, the exact distribution
/// is used; up to `ENUMERATE_MAX_N` with ties or zeros, all sign assignments are enumerated;
/// otherwise the normal approximation. These are scipy's `wilcoxon(method="auto")` rules
/// (1.13 and later), so a reader who checks a p-value with scipy gets the same number.
pub const EXACT_MAX_N: usize = 50;
pub const ENUMERATE_MAX_N: usize = 13;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Wilcoxon {
    /// T+ : the sum of the ranks of the positive differences.
    pub t_plus: f64,
    /// Non-zero differences used.
    pub n: usize,
    /// Two-sided p-value.
    pub p: f64,
    pub method: WilcoxonMethod,
}

/// Two-sided Wilcoxon signed-rank test of the paired differences `d` against a zero median.
/// Zeros are dropped (Wilcoxon's convention, scipy's `zero_method="wilcox"`), tied |d| share
/// their average rank. The p-value is exact where that is cheap (see `EXACT_MAX_N`,
/// `ENUMERATE_MAX_N`); otherwise the normal approximation z = (T+ - n(n+1)/4) / sd with the
/// tie correction sd^2 = n(n+1)(2n+1)/24 - sum(t^3 - t)/48 over the n non-zero differences,
/// without continuity correction (scipy's defaults).
pub fn wilcoxon(d: &[f64]) -> Wilcoxon {
    let n_total = d.len();
    let mut nz: Vec<f64> = d.iter().copied().filter(|&x| x != 0.0).collect();
    let zeros = n_total - nz.len();
    let n = nz.len();
    if n == 0 {
        return Wilcoxon {
            t_plus: 0.0,
            n: 0,
            p: 1.0,
            method: WilcoxonMethod::AllZero,
        };
    }
    nz.sort_by(|a, b| a.abs().total_cmp(&b.abs()));
    // Average ranks over runs of equal |d|; t^3 - t per tie group for the variance.
    let mut ranks = vec![0.0; n];
    let mut tie_term = 0.0;
    let mut ties = false;
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        while j < n && nz[j].abs() == nz[i].abs() {
            j += 1;
        }
        let avg = (i + 1 + j) as f64 / 2.0; // ranks i+1 ..= j
        for r in ranks.iter_mut().take(j).skip(i) {
            *r = avg;
        }
        let t = (j - i) as f64;
        if j - i > 1 {
            ties = true;
            tie_term += t * t * t - t;
        }
        i = j;
    }
    let t_plus: f64 = nz
        .iter()
        .zip(&ranks)
        .filter(|(x, _)| **x > 0.0)
        .map(|(_, r)| r)
        .sum();
    let nf = n as f64;
    if n_total <= EXACT_MAX_N && !ties && zeros == 0 {
        let p = exact_two_sided(n, t_plus.round() as usize);
        return Wilcoxon {
            t_plus,
            n,
            p,
            method: WilcoxonMethod::Exact,
        };
    }
    if n_total <= ENUMERATE_MAX_N {
        return Wilcoxon {
            t_plus,
            n,
            p: enumerated_two_sided(&ranks, t_plus),
            method: WilcoxonMethod::Enumerated,
        };
    }
    let mean = nf * (nf + 1.0) / 4.0;
    let var = nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0 - tie_term / 48.0;
    let p = if var <= 0.0 {
        1.0
    } else {
        let z = (t_plus - mean) / var.sqrt();
        // 2 P(Z >= |z|) = erfc(|z| / sqrt 2)
        libm::erfc(z.abs() / std::f64::consts::SQRT_2).min(1.0)
    };
    Wilcoxon {
        t_plus,
        n,
        p,
        method: WilcoxonMethod::Normal,
    }
}

/// Two-sided p-value of T+ = t over all 2^n sign assignments of the given (average, so
/// possibly half-integer) ranks: sums are counted in half-rank units, which are integers.
fn enumerated_two_sided(ranks: &[f64], t: f64) -> f64 {
    let doubled: Vec<usize> = ranks.iter().map(|r| (2.0 * r).round() as usize).collect();
    let max: usize = doubled.iter().sum();
    let mut counts = vec![0.0f64; max + 1];
    counts[0] = 1.0;
    for &r in &doubled {
        for s in (r..=max).rev() {
            counts[s] += counts[s - r];
        }
    }
    let obs = ((2.0 * t).round() as usize).min(max);
    let total = 2f64.powi(ranks.len() as i32);
    let lower: f64 = counts[..=obs].iter().sum::<f64>() / total;
    let upper: f64 = counts[obs..].iter().sum::<f64>() / total;
    (2.0 * lower.min(upper)).min(1.0)
}

/// Exact two-sided p-value of T+ = t among n untied ranks: under the null each rank is
/// positive with probability 1/2, so the counts of subsets of {1..n} with each sum give the
/// distribution (a subset-sum table, n(n+1)/2 + 1 entries; counts up to 2^50 fit in f64
/// exactly). p = min(1, 2 min(P(T <= t), P(T >= t))), as scipy computes it.
fn exact_two_sided(n: usize, t: usize) -> f64 {
    let max = n * (n + 1) / 2;
    let mut counts = vec![0.0f64; max + 1];
    counts[0] = 1.0;
    for k in 1..=n {
        for s in (k..=max).rev() {
            counts[s] += counts[s - k];
        }
    }
    let total = 2f64.powi(n as i32);
    let lower: f64 = counts[..=t.min(max)].iter().sum::<f64>() / total;
    let upper: f64 = counts[t.min(max)..].iter().sum::<f64>() / total;
    (2.0 * lower.min(upper)).min(1.0)
}

/// Bootstrap interval for the mean of `d` at confidence `level`: bias-corrected and
/// accelerated (BCa, Efron 1987) from `reps` resamples of size n with replacement. The plain
/// percentile interval undercovers for skewed differences at the sample sizes of a run (about
/// 90% instead of 95% at n = 30 with exponential noise, measured); BCa corrects the
/// percentiles with the bootstrap's median bias z0 and the jackknife acceleration a. The
/// caller seeds `rng`, so the interval is reproducible.
pub fn bootstrap_mean_ci<R: Rng + ?Sized>(
    d: &[f64],
    reps: usize,
    level: f64,
    rng: &mut R,
) -> (f64, f64) {
    use statrs::distribution::{ContinuousCDF, Normal};
    let n = d.len();
    if n == 0 || reps == 0 {
        return (f64::NAN, f64::NAN);
    }
    let mean = d.iter().sum::<f64>() / n as f64;
    let mut means: Vec<f64> = (0..reps)
        .map(|_| (0..n).map(|_| d[rng.random_range(0..n)]).sum::<f64>() / n as f64)
        .collect();
    means.sort_by(f64::total_cmp);
    if means[0] == means[reps - 1] {
        // Every resample has the same mean (all differences equal): nothing to spread.
        return (mean, mean);
    }
    let std_normal = Normal::standard();
    let below = means.iter().filter(|&&m| m < mean).count() as f64;
    let equal = means.iter().filter(|&&m| m == mean).count() as f64;
    let frac =
        ((below + 0.5 * equal) / reps as f64).clamp(0.5 / reps as f64, 1.0 - 0.5 / reps as f64);
    let z0 = std_normal.inverse_cdf(frac);
    // Jackknife of the mean: leave-one-out means m_i, acceleration from their skewness.
    let total: f64 = d.iter().sum();
    let loo: Vec<f64> = d
        .iter()
        .map(|x| (total - x) / (n - 1).max(1) as f64)
        .collect();
    let loo_mean = loo.iter().sum::<f64>() / n as f64;
    let (num, den) = loo.iter().fold((0.0, 0.0), |(a, b), m| {
        let u = loo_mean - m;
        (a + u * u * u, b + u * u)
    });
    let acc = if den > 0.0 {
        num / (6.0 * den.powf(1.5))
    } else {
        0.0
    };
    let adjusted = |p: f64| {
        let z = std_normal.inverse_cdf(p);
        std_normal.cdf(z0 + (z0 + z) / (1.0 - acc * (z0 + z)))
    };
    (
        quantile(&means, adjusted((1.0 - level) / 2.0)),
        quantile(&means, adjusted((1.0 + level) / 2.0)),
    )
}

/// Percentile bootstrap interval of a statistic of `n` paired units: `stat` gets the resampled
/// unit indices (n draws with replacement). Used where the statistic is not a plain mean (the
/// slope of a sweep's utility on epsilon), so BCa's jackknife would need the statistic's own
/// influence values.
pub fn bootstrap_units_ci<R: Rng + ?Sized>(
    n: usize,
    reps: usize,
    level: f64,
    rng: &mut R,
    stat: impl Fn(&[usize]) -> f64,
) -> (f64, f64) {
    if n == 0 || reps == 0 {
        return (f64::NAN, f64::NAN);
    }
    let mut idx = vec![0usize; n];
    let mut values: Vec<f64> = (0..reps)
        .map(|_| {
            for i in idx.iter_mut() {
                *i = rng.random_range(0..n);
            }
            stat(&idx)
        })
        .collect();
    values.sort_by(f64::total_cmp);
    (
        quantile(&values, (1.0 - level) / 2.0),
        quantile(&values, (1.0 + level) / 2.0),
    )
}

/// The p-quantile of sorted, non-empty values, interpolating linearly between order
/// statistics.
fn quantile(sorted: &[f64], p: f64) -> f64 {
    let last = sorted.len() - 1;
    let pos = p.clamp(0.0, 1.0) * last as f64;
    let (lo, f) = (pos.floor() as usize, pos - pos.floor());
    let hi = (lo + 1).min(last);
    sorted[lo] + f * (sorted[hi] - sorted[lo])
}

/// Least-squares slope of y on x; NaN when x does not vary.
pub fn slope(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
    }
    if sxx > 0.0 { sxy / sxx } else { f64::NAN }
}

/// Holm's step-down adjustment of `p` (in the given order): the i-th smallest p becomes
/// max over j <= i of min(1, (m - j + 1) p_(j)).
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]).then(a.cmp(&b)));
    let mut out = vec![0.0; m];
    let mut running = 0.0f64;
    for (j, &i) in order.iter().enumerate() {
        running = running.max(((m - j) as f64 * p[i]).min(1.0));
        out[i] = running;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn exact_p_values_match_scipy() {
        // scipy 1.17.1: wilcoxon(d).pvalue (method "auto": exact without ties or zeros; the
        // third case's zero makes scipy enumerate sign flips), computed in a venv here.
        let cases: [(&[f64], f64); 3] = [
            (&[1.0, 2.0, 3.0, 4.0, 5.0], SCIPY_EXACT_1),
            (&[-1.5, 2.5, 3.5, -0.5, 4.5, 5.5, 6.5], SCIPY_EXACT_2),
            (
                &[0.3, -0.1, 0.2, 0.0, -0.4, 0.6, 0.7, -0.05, 0.8, 0.9],
                SCIPY_EXACT_3,
            ),
        ];
        for (d, want) in cases {
            let w = wilcoxon(d);
            let zero = d.contains(&0.0);
            assert_eq!(
                w.method,
                if zero {
                    WilcoxonMethod::Enumerated
                } else {
                    WilcoxonMethod::Exact
                }
            );
            assert!((w.p - want).abs() < 1e-12, "{d:?}: {} vs {want}", w.p);
        }
    }

    #[test]
    fn tied_large_case_matches_scipys_normal_approximation() {
        // 60 differences with many ties and zeros: d_i = ((i * 7) % 11) - 4 for i in 0..60
        // (scipy: wilcoxon(d, zero_method="wilcox", correction=False, method="approx")).
        let d: Vec<f64> = (0..60).map(|i| ((i * 7) % 11) as f64 - 4.0).collect();
        let w = wilcoxon(&d);
        assert_eq!(w.method, WilcoxonMethod::Normal);
        assert!((w.p - SCIPY_TIED).abs() < 1e-12, "{} vs {SCIPY_TIED}", w.p);
        assert_eq!(wilcoxon(&[0.0, 0.0]).p, 1.0);
    }

    #[test]
    fn ties_and_zeros_follow_scipys_auto_rules() {
        // scipy 1.17.1, wilcoxon(d).pvalue with the defaults, recorded 2026-11-23:
        // n = 10 with ties and a zero -> sign flips enumerated;
        let d = [1.0, 1.0, -2.0, 3.0, 3.0, 3.0, -4.0, 5.0, 0.0, 6.0];
        let w = wilcoxon(&d);
        assert_eq!(w.method, WilcoxonMethod::Enumerated);
        assert!((w.p - 0.16015625).abs() < 1e-12, "{}", w.p);
        // n = 20 with ties and zeros, d_i = ((5 i) mod 7) - 2 -> normal approximation;
        let d: Vec<f64> = (0..20).map(|i| ((i * 5) % 7) as f64 - 2.0).collect();
        let w = wilcoxon(&d);
        assert_eq!(w.method, WilcoxonMethod::Normal);
        assert!((w.p - 0.0409456971929358).abs() < 1e-12, "{}", w.p);
        // n = 20, no ties but two zeros -> normal approximation too (scipy: no exact test
        // once a zero is dropped).
        let d = [
            0.5, -0.25, 1.5, 2.5, 0.0, 3.5, 4.5, 5.5, -6.5, 7.5, 8.5, 9.5, 10.5, 11.5, 12.5, 13.5,
            14.5, 0.0, 15.5, 16.5,
        ];
        let w = wilcoxon(&d);
        assert_eq!(w.method, WilcoxonMethod::Normal);
        assert!((w.p - 0.0008634758631167839).abs() < 1e-12, "{}", w.p);
    }

    #[test]
    fn holm_matches_its_definition() {
        // p = (0.01, 0.04, 0.03, 0.2): sorted 0.01, 0.03, 0.04, 0.2 -> 0.04, 0.09, 0.09, 0.2.
        let adj = holm(&[0.01, 0.04, 0.03, 0.2]);
        let want = [0.04, 0.09, 0.09, 0.2];
        for (a, w) in adj.iter().zip(want) {
            assert!((a - w).abs() < 1e-15, "{adj:?}");
        }
        assert_eq!(holm(&[0.6, 0.5]), vec![1.0, 1.0]);
    }

    /// Coverage of the 95% interval for a known mean of 0.3 over 4000 replicates (binomial
    /// s.e. 0.35%), 4000 resamples each: paired differences 0.3 + noise.
    fn coverage(n: usize, skewed: bool, seed: u64) -> f64 {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let reps = 4000;
        let mut covered = 0;
        for _ in 0..reps {
            let d: Vec<f64> = (0..n)
                .map(|_| {
                    let noise = if skewed {
                        // Exponential(1) minus its mean: skewness 2.
                        -(1.0 - rng.random::<f64>()).ln() - 1.0
                    } else {
                        rand_distr::Distribution::<f64>::sample(
                            &rand_distr::StandardNormal,
                            &mut rng,
                        )
                    };
                    0.3 + noise
                })
                .collect();
            let (lo, hi) = bootstrap_mean_ci(&d, 4000, 0.95, &mut rng);
            if lo <= 0.3 && 0.3 <= hi {
                covered += 1;
            }
        }
        covered as f64 / reps as f64
    }

    #[test]
    fn bootstrap_interval_covers_the_true_mean_about_95_percent_of_the_time() {
        // Symmetric noise at n = 30 (6 targets x 5 runs, the FTS protocol's unit count). Any
        // interval built on the plug-in s.d. covers about 94.4% here (P(|t_29| <= 1.96
        // sqrt(30/29))).
        let c = coverage(30, false, 1);
        assert!(
            (0.93..=0.96).contains(&c),
            "normal noise, n = 30: coverage {c}"
        );
        // Strongly skewed noise at n = 100: BCa measured 0.923 at n = 30 (the plain percentile
        // interval 0.903), the small-sample limit of any bootstrap interval there; by n = 100
        // it should be back near 95%.
        let c = coverage(100, true, 2);
        assert!(
            (0.93..=0.96).contains(&c),
            "skewed noise, n = 100: coverage {c}"
        );
    }

    // scipy 1.17.1, scipy.stats.wilcoxon, 2026-11-23.
    const SCIPY_EXACT_1: f64 = 0.0625;
    const SCIPY_EXACT_2: f64 = 0.078125;
    const SCIPY_EXACT_3: f64 = 0.09765625;
    const SCIPY_TIED: f64 = 0.020689043721346168;
}
