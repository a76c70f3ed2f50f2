//! Stationary kernels k(x, x') = s^2 c(h), written as functions of h = r^2 / 2 with
//! r^2 = sum_d (x_d - x'_d)^2 / l_d^2 (one length scale for every axis, or one per axis: ARD).
//! Working in h keeps the squared-exponential path the papers use exactly as it was
//! (c = exp(-h)) and gives every family a derivative that is finite at r = 0.
//!
//! Their spectral densities, for random features (Rahimi & Recht 2007): the SE kernel's is
//! Gaussian, omega ~ N(0, diag(l)^-2); Matern-nu's is a multivariate Student-t with 2 nu
//! degrees of freedom, i.e. omega = z / l * sqrt(2 nu / u) with z ~ N(0, I) and u ~ chi^2(2 nu),
//! one u per feature (Rasmussen & Williams eq. 4.15, as a Gaussian scale mixture).

use rand::Rng;
use rand_distr::{ChiSquared, Distribution};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// Squared exponential (RBF): c = exp(-h). The papers' kernel.
    Se,
    /// Matern, nu = 5/2: c = (1 + a + a^2 / 3) exp(-a), a = sqrt(5) r.
    Matern52,
    /// Matern, nu = 3/2: c = (1 + a) exp(-a), a = sqrt(3) r.
    Matern32,
}

impl Kernel {
    pub const NAMES: &'static str = "\"se\", \"matern52\", \"matern32\"";

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "se" => Some(Kernel::Se),
            "matern52" => Some(Kernel::Matern52),
            "matern32" => Some(Kernel::Matern32),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kernel::Se => "se",
            Kernel::Matern52 => "matern52",
            Kernel::Matern32 => "matern32",
        }
    }

    /// The correlation c(h), its exponential taken by `exp` (the vectorisable one in the
    /// hot loops, libm's where a loop does not vectorise anyway).
    #[inline(always)]
    pub fn corr_with(self, h: f64, exp: impl Fn(f64) -> f64) -> f64 {
        match self {
            Kernel::Se => exp(-h),
            Kernel::Matern52 => {
                // sqrt(5) r = sqrt(10 h), 5 r^2 / 3 = a^2 / 3.
                let a = (10.0 * h).sqrt();
                (1.0 + a + a * a / 3.0) * exp(-a)
            }
            Kernel::Matern32 => {
                let a = (6.0 * h).sqrt();
                (1.0 + a) * exp(-a)
            }
        }
    }

    /// -dc/dh, finite at h = 0: exp(-h) (SE), 5/3 (1 + a) exp(-a) (Matern-5/2),
    /// 3 exp(-a) (Matern-3/2).
    #[inline(always)]
    pub fn neg_dcorr_with(self, h: f64, exp: impl Fn(f64) -> f64) -> f64 {
        match self {
            Kernel::Se => exp(-h),
            Kernel::Matern52 => {
                let a = (10.0 * h).sqrt();
                5.0 / 3.0 * (1.0 + a) * exp(-a)
            }
            Kernel::Matern32 => 3.0 * exp(-(6.0 * h).sqrt()),
        }
    }

    pub fn corr(self, h: f64) -> f64 {
        self.corr_with(h, libm::exp)
    }

    pub fn neg_dcorr(self, h: f64) -> f64 {
        self.neg_dcorr_with(h, libm::exp)
    }

    /// Whether c is a product over axes (only the SE kernel's is), which lets a tensor grid
    /// take exponentials per axis value.
    pub fn separable(self) -> bool {
        self == Kernel::Se
    }

    /// The factor sqrt(2 nu / u), u ~ chi^2(2 nu), that turns a Gaussian frequency into one
    /// of Matern-nu's spectral density; none for the SE kernel, which draws nothing here.
    pub fn spectral_scale<R: Rng + ?Sized>(self, rng: &mut R) -> f64 {
        let two_nu = match self {
            Kernel::Se => return 1.0,
            Kernel::Matern52 => 5.0,
            Kernel::Matern32 => 3.0,
        };
        let u: f64 = ChiSquared::new(two_nu)
            .expect("positive degrees of freedom")
            .sample(rng);
        // u > 0 with probability one; a zero would give an infinite frequency.
        (two_nu / u.max(f64::MIN_POSITIVE)).sqrt()
    }
}

/// The value of axis `d` from per-axis values that may be given once for every axis
/// (length scales, 1 / (2 l^2) factors).
#[inline]
pub fn for_axis(per_axis: &[f64], d: usize) -> f64 {
    if let [v] = per_axis { *v } else { per_axis[d] }
}

/// h = r^2 / 2 between two points for per-axis factors `inv2l2[d]` = 1 / (2 l_d^2) (one
/// factor for all axes when it has one entry).
#[inline]
pub fn half_r2(a: &[f64], b: &[f64], inv2l2: &[f64]) -> f64 {
    if let [c] = inv2l2 {
        let r2: f64 = a.iter().zip(b).map(|(u, v)| (u - v) * (u - v)).sum();
        return r2 * c;
    }
    a.iter()
        .zip(b)
        .zip(inv2l2)
        .map(|((u, v), c)| (u - v) * (u - v) * c)
        .sum()
}

crate::multiversion! {
    /// `half_r2(x, X_i, inv2l2)` for every row X_i of an n x d X at once, from X by column
    /// (`xt`: axis d's n values at d n..). Each
    /// h_i adds its axes' terms in the order `half_r2` does, so the values are the same bit
    /// for bit; the rows are independent sums, which is what vectorises.
    pub fn half_r2_all(hs: &mut [f64], x: &[f64], xt: &[f64], inv2l2: &[f64]) {
        let n = hs.len();
        // -0.0 is the exact identity of addition (and the start of `Iterator::sum`).
        hs.fill(-0.0);
        for (d, &u) in x.iter().enumerate() {
            let col = &xt[d * n..(d + 1) * n];
            if let [_] = inv2l2 {
                for (h, &v) in hs.iter_mut().zip(col) {
                    *h += (u - v) * (u - v);
                }
            } else {
                let c = inv2l2[d];
                for (h, &v) in hs.iter_mut().zip(col) {
                    *h += (u - v) * (u - v) * c;
                }
            }
        }
        if let [c] = inv2l2 {
            for h in hs.iter_mut() {
                *h *= c;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `half_r2_all` gives each row's `half_r2` bit for bit, with one factor and per axis.
    #[test]
    fn half_r2_of_every_row_is_half_r2_of_each() {
        let (n, d) = (7, 5);
        let rows: Vec<Vec<f64>> = (0..n)
            .map(|i| (0..d).map(|k| ((i * d + k) as f64 * 0.77).sin()).collect())
            .collect();
        let xt: Vec<f64> = (0..d)
            .flat_map(|k| rows.iter().map(move |r| r[k]))
            .collect();
        let x: Vec<f64> = (0..d).map(|k| 0.3 * k as f64 - 0.4).collect();
        for inv in [vec![0.8], vec![0.5, 1.5, 2.0, 0.1, 7.0]] {
            let mut hs = vec![0.0; n];
            half_r2_all(&mut hs, &x, &xt, &inv);
            for (h, r) in hs.iter().zip(&rows) {
                assert_eq!(h.to_bits(), half_r2(&x, r, &inv).to_bits());
            }
        }
    }

    /// The closed forms of R&W eq. 4.17 in r, against the h-parametrisation.
    #[test]
    fn correlations_match_the_textbook_forms_and_their_derivatives() {
        for r in [0.0, 0.1, 0.5, 1.0, 2.3, 7.0] {
            let h = r * r / 2.0;
            let s5 = 5f64.sqrt() * r;
            let s3 = 3f64.sqrt() * r;
            let want = [
                (Kernel::Se, (-r * r / 2.0f64).exp()),
                (
                    Kernel::Matern52,
                    (1.0 + s5 + 5.0 * r * r / 3.0) * (-s5).exp(),
                ),
                (Kernel::Matern32, (1.0 + s3) * (-s3).exp()),
            ];
            for (k, w) in want {
                assert!((k.corr(h) - w).abs() < 1e-14, "{k:?} at r = {r}");
                if h > 0.0 {
                    let e = 1e-6 * h;
                    let fd = (k.corr(h + e) - k.corr(h - e)) / (2.0 * e);
                    assert!(
                        (-fd - k.neg_dcorr(h)).abs() < 1e-6 * (1.0 + fd.abs()),
                        "{k:?} derivative at r = {r}"
                    );
                }
            }
        }
    }

    #[test]
    fn names_round_trip() {
        for k in [Kernel::Se, Kernel::Matern52, Kernel::Matern32] {
            assert_eq!(Kernel::parse(k.name()), Some(k));
            assert!(Kernel::NAMES.contains(k.name()));
        }
        assert_eq!(Kernel::parse("rbf"), None);
    }
}
