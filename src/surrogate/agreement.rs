//! Agreeing on the shared model's kernel hyperparameters (issue 40 item 1).
//!
//! Every agent's messages are weights on the same random features, so all agents must draw
//! the same frequencies, and with them the same length scales. With `surrogate.shared =
//! "agreed"` each agent sends, beside its message, the log of its own fitted hyperparameters
//! on its standardised outputs, h = (ln l_1, .., ln l_D, ln sigma_f^2, ln sigma_n^2); the
//! server's agreement takes effect from the next round:
//! - without DP, the coordinate-wise median of the vectors that arrived (robust to one
//!   agent's degenerate fit, as a mean on log scale is not);
//! - with DP, the vectors of the round's selected agents, each clipped to L2 norm C about the
//!   public centre (the prior's hyperparameters), summed, given Gaussian noise of s.d. z_h C,
//!   scaled by 1 / (rate N) exactly as the messages are, and added to the centre. Riding on
//!   the same selection, the round's two releases are one Gaussian mechanism of whitened
//!   sensitivity sqrt(z^-2 + z_h^-2): the accountant is given the effective multiplier
//!   `effective_z` (docs/algorithms.md, "Agreed shared models").

use super::gp::GpHyper;
use super::kernel::for_axis;
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};

/// What the agents agree on: the shared features' length scales (one per axis), their
/// variance, and the BLR's noise variance, all on the standardised output scale.
#[derive(Clone, Debug, PartialEq)]
pub struct SharedHyper {
    pub length_scales: Vec<f64>,
    pub signal_var: f64,
    pub noise_var: f64,
}

impl SharedHyper {
    /// The log vector h of an agent's own fit, its length scales spread over `dim` axes.
    pub fn from_own(h: &GpHyper, dim: usize) -> Self {
        let length_scales = (0..dim).map(|d| for_axis(&h.length_scales, d)).collect();
        SharedHyper {
            length_scales,
            signal_var: h.signal_var,
            noise_var: h.noise_var,
        }
    }

    pub fn to_log(&self) -> Vec<f64> {
        let mut v: Vec<f64> = self.length_scales.iter().map(|l| l.ln()).collect();
        v.push(self.signal_var.ln());
        v.push(self.noise_var.ln());
        v
    }

    pub fn from_log(v: &[f64]) -> Self {
        let d = v.len() - 2;
        SharedHyper {
            length_scales: v[..d].iter().map(|x| x.exp()).collect(),
            signal_var: v[d].exp(),
            noise_var: v[d + 1].exp(),
        }
    }
}

/// The coordinate-wise median of log vectors (the mean of the middle two for an even count).
pub fn median(vectors: &[Vec<f64>]) -> Vec<f64> {
    let k = vectors[0].len();
    (0..k)
        .map(|j| {
            let mut c: Vec<f64> = vectors.iter().map(|v| v[j]).collect();
            c.sort_by(f64::total_cmp);
            let n = c.len();
            if n % 2 == 1 {
                c[n / 2]
            } else {
                0.5 * (c[n / 2 - 1] + c[n / 2])
            }
        })
        .collect()
}

/// `v - centre` scaled down to L2 norm at most `clip`.
pub fn clip_about(v: &[f64], centre: &[f64], clip: f64) -> Vec<f64> {
    let d: Vec<f64> = v.iter().zip(centre).map(|(a, c)| a - c).collect();
    let norm = d.iter().map(|x| x * x).sum::<f64>().sqrt();
    let s = if norm > clip { clip / norm } else { 1.0 };
    d.into_iter().map(|x| x * s).collect()
}

/// The private agreement: centre + (sum of the clipped deviations + N(0, (z C)^2 I)) /
/// (rate n), where `vectors` are the selected agents' that arrived, `rate` the realised
/// sampling rate and `n` all agents. The noise does not depend on who arrived.
pub fn private_mean<R: Rng + ?Sized>(
    vectors: &[Vec<f64>],
    centre: &[f64],
    clip: f64,
    z: f64,
    rate: f64,
    n: usize,
    rng: &mut R,
) -> Vec<f64> {
    let mut sum = vec![0.0; centre.len()];
    for v in vectors {
        for (s, d) in sum.iter_mut().zip(clip_about(v, centre, clip)) {
            *s += d;
        }
    }
    let scale = 1.0 / (rate * n as f64);
    sum.iter()
        .zip(centre)
        .map(|(s, c)| {
            let e: f64 = StandardNormal.sample(rng);
            c + (s + z * clip * e) * scale
        })
        .collect()
}

/// The noise multiplier of one round whose messages (multiplier z) and agreement (z_h) go
/// out on the same selection: the pair is a Gaussian mechanism whose sensitivity, in units of
/// each part's noise, is at most sqrt(z^-2 + z_h^-2), so it is accounted as one of multiplier
/// 1 / sqrt(z^-2 + z_h^-2).
pub fn effective_z(z: f64, z_h: f64) -> f64 {
    1.0 / (z.powi(-2) + z_h.powi(-2)).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::surrogate::gp::Kernel;

    #[test]
    fn the_log_vector_round_trips_and_spreads_one_length_scale() {
        let h = GpHyper::isotropic(Kernel::Se, 0.3, 2.0, 0.01);
        let s = SharedHyper::from_own(&h, 3);
        assert_eq!(s.length_scales, vec![0.3; 3]);
        let back = SharedHyper::from_log(&s.to_log());
        for (a, b) in back.length_scales.iter().zip(&s.length_scales) {
            assert!((a - b).abs() < 1e-15);
        }
        assert!((back.signal_var - 2.0).abs() < 1e-14);
        assert!((back.noise_var - 0.01).abs() < 1e-16);
    }

    #[test]
    fn the_median_ignores_one_wild_fit() {
        let v = vec![
            vec![0.0, 1.0],
            vec![0.2, 1.2],
            vec![9.0, -40.0],
            vec![0.1, 1.1],
        ];
        // Middle two of each coordinate: (0.1, 0.2) and (1.0, 1.1).
        let m = median(&v);
        assert!((m[0] - 0.15).abs() < 1e-15 && (m[1] - 1.05).abs() < 1e-15);
        assert_eq!(median(&v[..3]), vec![0.2, 1.0]);
    }

    #[test]
    fn identical_fits_agree_on_themselves() {
        let v = vec![0.3f64.ln(), 0.7f64.ln(), 1.5f64.ln(), 0.02f64.ln()];
        assert_eq!(median(&vec![v.clone(); 5]), v);
    }

    #[test]
    fn clipping_keeps_the_direction_and_bounds_the_norm() {
        let c = clip_about(&[4.0, 5.0], &[1.0, 1.0], 2.5);
        // (3, 4) has norm 5: halved.
        assert!((c[0] - 1.5).abs() < 1e-15 && (c[1] - 2.0).abs() < 1e-15);
        assert_eq!(clip_about(&[1.5, 1.0], &[1.0, 1.0], 2.5), vec![0.5, 0.0]);
    }

    #[test]
    fn the_private_mean_is_unbiased_for_unclipped_vectors_and_has_the_stated_noise() {
        // Every one of n = 4 agents at rate 1, deviations inside the clip: the mean of many
        // releases is the plain mean; their s.d. is z C / n.
        let centre = vec![0.0, 0.0];
        let v = vec![
            vec![0.2, -0.4],
            vec![0.4, 0.0],
            vec![0.0, 0.2],
            vec![0.2, 0.2],
        ];
        let mut rng = crate::math::rng::stream(1, 0, 0, crate::math::rng::Purpose::Server);
        let k = 40_000;
        let (mut s, mut s2) = (0.0, 0.0);
        for _ in 0..k {
            let m = private_mean(&v, &centre, 1.0, 2.0, 1.0, 4, &mut rng);
            s += m[0];
            s2 += m[0] * m[0];
        }
        let mean = s / k as f64;
        let sd = (s2 / k as f64 - mean * mean).sqrt();
        assert!((mean - 0.2).abs() < 0.01, "{mean}");
        assert!((sd - 0.5).abs() < 0.01, "{sd}");
    }

    #[test]
    fn the_effective_multiplier_combines_the_two_releases() {
        assert!((effective_z(1.0, 1.0) - 1.0 / 2f64.sqrt()).abs() < 1e-15);
        // A very noisy agreement costs almost nothing more.
        assert!((effective_z(1.0, 1e6) - 1.0).abs() < 1e-9);
        assert!((effective_z(3.0, 4.0) - 12.0 / 5.0).abs() < 1e-14);
    }
}
