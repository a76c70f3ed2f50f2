//! Synthetic objectives (algorithms.md section 1): functions drawn from a GP with an SE
//! kernel on an evenly spaced 1-D grid, rescaled to [0, 1], and per-agent perturbations.

use super::{Domain, Landscape, Space};
use crate::error::{FboError, Result};
use crate::math::linalg::cholesky_jittered;
use crate::math::rng::{Purpose, SHARED, stream};
use crate::objective::{ObjectiveKind, ObjectiveSpec};
use ndarray::{Array1, Array2};
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};
use std::sync::Arc;

/// Draws GP sample paths on a fixed domain. The kernel factor is computed once and shared by
/// every draw.
pub struct GpSampler {
    chol: Array2<f64>,
}

impl GpSampler {
    pub fn new(domain: &Domain, length_scale: f64) -> Result<Self> {
        let d2 = crate::math::linalg::sq_dists(domain.points());
        let k = d2.mapv(|r2| libm::exp(-r2 / (2.0 * length_scale * length_scale)));
        // A dense grid makes K numerically singular; the jitter only smooths below 1e-5.
        let (chol, _) = cholesky_jittered(&k).ok_or_else(|| {
            FboError::Run("cannot factorise the GP prior covariance on the grid".into())
        })?;
        Ok(GpSampler { chol })
    }

    /// One draw rescaled to [0, 1].
    pub fn draw<R: Rng + ?Sized>(&self, rng: &mut R) -> Array1<f64> {
        let n = self.chol.nrows();
        let z = Array1::from_iter((0..n).map(|_| StandardNormal.sample(rng)));
        rescale_unit(self.chol.dot(&z))
    }
}

fn rescale_unit(f: Array1<f64>) -> Array1<f64> {
    let lo = f.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = f.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let span = if hi > lo { hi - lo } else { 1.0 };
    f.mapv(|v| (v - lo) / span)
}

/// f(x) + d or f(x) - d, the sign drawn independently per point with probability 1/2, so that
/// max |f - g| = d exactly (FTS paper App. D.1).
pub fn perturb<R: Rng + ?Sized>(f: &Array1<f64>, d: f64, rng: &mut R) -> Array1<f64> {
    f.mapv(|v| if rng.random::<bool>() { v + d } else { v - d })
}

/// Builds the landscapes of `spec.functions` independent function draws; run r uses
/// `landscapes[r % functions]`.
pub fn landscapes(spec: &ObjectiveSpec, agents: usize, seed: u64) -> Result<Vec<Arc<Landscape>>> {
    let space = Arc::new(Space::Grid(Domain::grid_1d(spec.grid)));
    let sampler = GpSampler::new(space.grid().expect("grid"), spec.length_scale)?;
    let mut out = Vec::with_capacity(spec.functions);
    for fi in 0..spec.functions as u64 {
        let mut rng = stream(seed, fi, SHARED, Purpose::Objective);
        let values = match spec.kind {
            ObjectiveKind::SyntheticFts => {
                // Agent 0 is the target f; agents 1..=N see f +/- d.
                let f = sampler.draw(&mut rng);
                let mut v = Vec::with_capacity(agents);
                for a in 1..agents {
                    let mut r = stream(seed, fi, a as u64, Purpose::Objective);
                    v.push(perturb(&f, spec.d, &mut r));
                }
                v.insert(0, f);
                v
            }
            ObjectiveKind::SyntheticDp {
                heterogeneous: None,
            } => {
                let f = sampler.draw(&mut rng);
                (0..agents)
                    .map(|a| {
                        perturb(
                            &f,
                            spec.d,
                            &mut stream(seed, fi, a as u64, Purpose::Objective),
                        )
                    })
                    .collect()
            }
            ObjectiveKind::SyntheticDp {
                heterogeneous: Some(alpha),
            } => {
                // DP paper App. B.1.1, Fig. 7: f^i = alpha f_i + (1 - alpha) f_base.
                let base = sampler.draw(&mut rng);
                (0..agents)
                    .map(|a| {
                        let own = sampler.draw(&mut stream(seed, fi, a as u64, Purpose::Objective));
                        &own * alpha + &base * (1.0 - alpha)
                    })
                    .collect()
            }
            _ => unreachable!("only synthetic objectives are drawn here"),
        };
        out.push(Arc::new(Landscape::new(
            space.clone(),
            values,
            spec.noise_var,
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(kind: ObjectiveKind) -> ObjectiveSpec {
        ObjectiveSpec {
            targets: vec![0],
            kind,
            grid: 200,
            length_scale: 0.03,
            noise_var: 0.01,
            functions: 2,
            d: 0.02,
            params: Vec::new(),
            per_dim: None,
        }
    }

    #[test]
    fn fts_family_offsets_every_point_by_exactly_d() {
        let ls = landscapes(&spec(ObjectiveKind::SyntheticFts), 4, 9).unwrap();
        let l = &ls[0];
        assert_eq!(l.agents(), 4);
        let (lo, hi) = (0..200).fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), i| {
            (lo.min(l.grid_value(0, i)), hi.max(l.grid_value(0, i)))
        });
        assert!(
            lo.abs() < 1e-12 && (hi - 1.0).abs() < 1e-12,
            "target rescaled to [0,1]"
        );
        let mut plus = 0;
        for a in 1..4 {
            for i in 0..200 {
                let diff = l.grid_value(a, i) - l.grid_value(0, i);
                assert!((diff.abs() - 0.02).abs() < 1e-12);
                plus += (diff > 0.0) as usize;
            }
        }
        // 600 fair coin flips: 300 +/- 5 sd(12.2).
        assert!((240..=360).contains(&plus), "{plus}");
        // Different function draws differ.
        assert!((0..200).any(|i| (ls[0].grid_value(0, i) - ls[1].grid_value(0, i)).abs() > 1e-3));
    }

    #[test]
    fn heterogeneous_dp_family_mixes_draws() {
        let ls = landscapes(
            &spec(ObjectiveKind::SyntheticDp {
                heterogeneous: Some(1.0),
            }),
            3,
            1,
        )
        .unwrap();
        // alpha = 1: every agent has its own independent draw.
        let l = &ls[0];
        assert!((0..200).any(|i| (l.grid_value(0, i) - l.grid_value(1, i)).abs() > 0.05));
        let same = landscapes(
            &spec(ObjectiveKind::SyntheticDp {
                heterogeneous: Some(0.0),
            }),
            3,
            1,
        )
        .unwrap();
        for i in 0..200 {
            assert!((same[0].grid_value(0, i) - same[0].grid_value(2, i)).abs() < 1e-12);
        }
    }

    #[test]
    fn same_seed_same_functions() {
        let a = landscapes(&spec(ObjectiveKind::SyntheticFts), 3, 5).unwrap();
        let b = landscapes(&spec(ObjectiveKind::SyntheticFts), 3, 5).unwrap();
        for i in 0..200 {
            assert_eq!(a[1].grid_value(2, i), b[1].grid_value(2, i));
        }
    }
}
