//! The target's own Thompson sample (algorithms.md section 2): an RFF approximation of its GP
//! posterior with M_target features drawn afresh for every sample, using GP hyperparameters
//! that are refitted by marginal likelihood whenever the number of observations reaches a
//! multiple of the refit period. Or, beyond the papers, the same features' prior sample
//! corrected through the exact kernel (pathwise conditioning, `pathwise.rs`).

use super::blr::BlrPosterior;
use super::gp::{FitBudget, GpHyper, HyperModel, constant_mean, fit_hyperparameters, standardize};
use super::pathwise::KernelUpdate;
use super::rff::RandomFeatures;
use crate::error::{FboError, Result};
use crate::objective::space::Domain;
use ndarray::{Array1, Array2, ArrayView2};
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};

/// How the own posterior sample is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnSampler {
    /// The papers': weights from the Bayesian linear-regression posterior on M_target
    /// random features.
    Rff,
    /// A prior sample on M_target random features plus the exact kernel update at the data
    /// (Wilson et al. 2020).
    Pathwise,
}

impl OwnSampler {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "rff" => Some(OwnSampler::Rff),
            "pathwise" => Some(OwnSampler::Pathwise),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            OwnSampler::Rff => "rff",
            OwnSampler::Pathwise => "pathwise",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct OwnSettings {
    /// M_target: features per sample.
    pub features: usize,
    pub normalize_features: bool,
    /// Refit when the number of observations is a positive multiple of this; None: never.
    pub refit_every: Option<usize>,
    pub fit: FitBudget,
    /// The kernel, one length scale or one per axis, the bounds and the prior of every fit.
    pub model: HyperModel,
    /// Used before the first fit, and throughout when fitting is off (its kernel is the
    /// model's).
    pub initial: GpHyper,
    /// Standardise observations before fitting and sampling (argmax is unaffected by the
    /// positive affine map, so the choice only changes what the zero-mean prior means).
    pub normalize_y: bool,
    pub sampler: OwnSampler,
    /// The observations' noise variance on the objective's scale when the user knows it
    /// (`surrogate.own.noise_variance_known`): one value for every agent, or one per agent;
    /// empty: the noise is fitted. Fixed in every fit, rescaled as the outputs are.
    pub known_noise: Vec<f64>,
    /// Fit the hyperparameters on at most this many observations, a uniformly random subset
    /// drawn afresh at each refit (the posterior still conditions on all of them); None: all.
    /// A fit costs O(n^3) per likelihood evaluation, the posterior once: at large n the fit
    /// is the bottleneck (docs/results.md, "Cost per iteration").
    pub fit_points: Option<usize>,
}

/// A sampled function f(x) = phi(x)^T w with its own features, plus the kernel update of a
/// pathwise sample.
pub struct OwnSample {
    pub features: RandomFeatures,
    pub weights: Array1<f64>,
    pub update: Option<KernelUpdate>,
}

impl OwnSample {
    /// The grid index maximising the sample; by axis on a tensor-product grid.
    pub fn argmax(&self, grid: &Domain) -> usize {
        let offset = self.update.as_ref().map(|u| u.on_grid(grid));
        let offset = offset.as_deref();
        match grid.axes() {
            Some(axes) => self.features.argmax_tensor(
                axes,
                self.weights.as_slice().expect("contiguous weights"),
                offset,
            ),
            None => self
                .features
                .argmax(grid.points(), self.weights.view(), offset),
        }
    }

    /// The sample at one point of the unit box and, when `grad` is given, its gradient.
    pub fn value_grad(&self, x: &[f64], mut grad: Option<&mut [f64]>) -> f64 {
        let w = self.weights.as_slice().expect("contiguous weights");
        let v = self.features.value_grad(x, w, grad.as_deref_mut());
        match &self.update {
            Some(u) => v + u.value_grad(x, grad),
            None => v,
        }
    }
}

#[derive(Clone, Debug)]
pub struct OwnModel {
    settings: OwnSettings,
    hyper: GpHyper,
    fitted_at: usize,
    /// This agent's known noise variance (objective scale), if any.
    known_noise: Option<f64>,
}

impl OwnModel {
    pub fn new(settings: OwnSettings) -> Self {
        let hyper = settings.initial.clone();
        OwnModel {
            settings,
            hyper,
            fitted_at: 0,
            known_noise: None,
        }
    }

    /// The model of agent `agent`: its known noise variance, if the settings give one.
    pub fn for_agent(settings: OwnSettings, agent: usize) -> Self {
        let known = match settings.known_noise.len() {
            0 => None,
            1 => Some(settings.known_noise[0]),
            _ => settings.known_noise.get(agent).copied(),
        };
        OwnModel {
            known_noise: known,
            ..OwnModel::new(settings)
        }
    }

    /// A known noise variance on the scale the model fits (the outputs standardised by their
    /// s.d. when normalize_y is on), kept inside (1e-9, 1e6).
    fn known_on_model_scale(&self, y: &[f64]) -> Option<f64> {
        let v = self.known_noise?;
        let scale = if self.settings.normalize_y && !y.is_empty() {
            crate::surrogate::gp::standardization(y).1
        } else {
            1.0
        };
        Some((v / (scale * scale)).clamp(1e-9, 1e6))
    }

    pub fn hyper(&self) -> &GpHyper {
        &self.hyper
    }

    pub fn settings(&self) -> &OwnSettings {
        &self.settings
    }

    /// The same model with hyperparameters set from outside (federated hyperparameters),
    /// which no refit of this copy replaces before it is dropped.
    pub fn with_hyper(&self, hyper: GpHyper) -> Self {
        OwnModel {
            settings: self.settings.clone(),
            hyper,
            fitted_at: self.fitted_at,
            known_noise: self.known_noise,
        }
    }

    /// Refits if the schedule says so; returns whether it did.
    pub fn maybe_refit<R: Rng + ?Sized>(
        &mut self,
        x: ArrayView2<f64>,
        y: &[f64],
        rng: &mut R,
    ) -> bool {
        let n = y.len();
        let due = match self.settings.refit_every {
            Some(k) => n > 0 && n.is_multiple_of(k) && n != self.fitted_at,
            None => false,
        };
        if !due {
            return false;
        }
        let yv = self.targets(y);
        let (x, yv) = match self.settings.fit_points {
            Some(m) if n > m => {
                let mut keep = rand::seq::index::sample(rng, n, m).into_vec();
                keep.sort_unstable();
                (
                    x.select(ndarray::Axis(0), &keep),
                    yv.select(ndarray::Axis(0), &keep),
                )
            }
            _ => (x.to_owned(), yv),
        };
        let x = x.view();
        let warm = (self.fitted_at > 0).then_some(&self.hyper);
        // A known noise is one point of the noise's range: the fit finds the rest around it.
        let known = self.known_on_model_scale(y);
        let mut model = self.settings.model;
        if let Some(v) = known {
            model.bounds.noise_var = (v, v);
        }
        if let Some(h) = fit_hyperparameters(x, yv.view(), &model, self.settings.fit, warm, rng) {
            self.hyper = h;
        }
        if let Some(v) = known {
            self.hyper.noise_var = v;
        }
        self.fitted_at = n;
        true
    }

    /// The observations as the model sees them (standardised when normalize_y is on).
    pub fn targets(&self, y: &[f64]) -> Array1<f64> {
        if self.settings.normalize_y {
            standardize(y)
        } else {
            Array1::from(y.to_vec())
        }
    }

    /// One posterior sample given the observations (x rows, y). With no observations it is a
    /// prior sample.
    pub fn sample<R: Rng + ?Sized>(
        &self,
        x: ArrayView2<f64>,
        y: &[f64],
        rng: &mut R,
    ) -> Result<OwnSample> {
        let h = &self.hyper;
        let features = RandomFeatures::draw(
            self.settings.features,
            x.ncols(),
            h.kernel,
            &h.length_scales,
            h.signal_var,
            self.settings.normalize_features,
            rng,
        );
        if self.settings.sampler == OwnSampler::Pathwise {
            return self.pathwise(features, x, y, rng);
        }
        let blr = if y.is_empty() {
            BlrPosterior::prior(self.settings.features, h.noise_var)
        } else {
            let phi: Array2<f64> = features.matrix(x);
            let mut yv = self.targets(y);
            // The weights then describe f - c: a constant shift, which no argmax sees.
            if let Some(c) = constant_mean(x, yv.view(), h) {
                yv -= c;
            }
            BlrPosterior::from_data(phi.view(), yv.view(), h.noise_var).ok_or_else(|| {
                FboError::Run(format!(
                    "own posterior is singular (noise variance {:.3e}); raise the noise lower bound",
                    h.noise_var
                ))
            })?
        };
        let weights = blr.sample(rng);
        Ok(OwnSample {
            features,
            weights,
            update: None,
        })
    }

    /// A prior sample phi(x)^T w, w ~ N(0, I), conditioned on the data through the kernel.
    fn pathwise<R: Rng + ?Sized>(
        &self,
        features: RandomFeatures,
        x: ArrayView2<f64>,
        y: &[f64],
        rng: &mut R,
    ) -> Result<OwnSample> {
        let h = &self.hyper;
        let m = features.len();
        let weights = Array1::from_iter((0..m).map(|_| StandardNormal.sample(rng)));
        let update = if y.is_empty() {
            None
        } else {
            let sd = h.noise_var.sqrt();
            let prior_at_data = features.matrix(x).dot(&weights);
            let targets = self.targets(y);
            let residual = Array1::from_iter(targets.iter().zip(&prior_at_data).map(|(yi, fi)| {
                let eps: f64 = StandardNormal.sample(rng);
                yi - fi - sd * eps
            }));
            Some(KernelUpdate::new(x, targets.view(), residual, h).ok_or_else(|| {
                FboError::Run(format!(
                    "own kernel matrix is singular (noise variance {:.3e}); raise the noise lower bound",
                    h.noise_var
                ))
            })?)
        };
        Ok(OwnSample {
            features,
            weights,
            update,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objective::space::Domain;
    use crate::surrogate::gp::{GpPosterior, HyperBounds, HyperPrior, Kernel, MeanFn};
    use ndarray::ArrayView2;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn model(sampler: OwnSampler, noise_var: f64, features: usize, kernel: Kernel) -> OwnModel {
        let h = GpHyper::isotropic(kernel, 0.15, 1.0, noise_var);
        OwnModel::new(OwnSettings {
            features,
            normalize_features: true,
            refit_every: None,
            fit: FitBudget {
                starts: 1,
                restarts: 1,
            },
            model: HyperModel {
                kernel,
                ard: crate::surrogate::gp::Ard::Off,
                bounds: HyperBounds {
                    length_scale: (0.01, 1.0),
                    signal_var: (0.1, 10.0),
                    noise_var: (1e-8, 1.0),
                },
                prior: HyperPrior::None,
                mean: MeanFn::Zero,
            },
            initial: h,
            normalize_y: false,
            sampler,
            known_noise: Vec::new(),
            fit_points: None,
        })
    }

    fn data() -> (Array2<f64>, Vec<f64>) {
        let x = ndarray::array![[0.1], [0.35], [0.5], [0.8]];
        (x, vec![0.4, -0.9, 0.2, 1.3])
    }

    /// `fit_points = m` fits on m observations drawn uniformly without replacement from the
    /// fit's own stream, exactly the fit of all settings on that subset; at m >= n it is the
    /// fit on all, with the same draws.
    #[test]
    fn a_fit_on_fit_points_is_the_fit_on_a_random_subset_of_that_many() {
        let n = 40;
        let x = Array2::from_shape_fn((n, 1), |(i, _)| (i as f64 * 0.618) % 1.0);
        let y: Vec<f64> = x.column(0).iter().map(|v| (6.0 * v).sin()).collect();
        let mut base = model(OwnSampler::Rff, 0.01, 50, Kernel::Se)
            .settings()
            .clone();
        base.refit_every = Some(1);
        base.fit = FitBudget {
            starts: 4,
            restarts: 2,
        };
        let fit = |points: Option<usize>, x: ArrayView2<f64>, y: &[f64], rng: &mut ChaCha8Rng| {
            let mut m = OwnModel::new(OwnSettings {
                fit_points: points,
                ..base.clone()
            });
            assert!(m.maybe_refit(x, y, rng));
            m.hyper().clone()
        };
        let rng = || ChaCha8Rng::seed_from_u64(9);
        let all = fit(None, x.view(), &y, &mut rng());
        assert_eq!(fit(Some(n), x.view(), &y, &mut rng()), all);
        let sub = fit(Some(15), x.view(), &y, &mut rng());
        let mut r = rng();
        let mut keep = rand::seq::index::sample(&mut r, n, 15).into_vec();
        keep.sort_unstable();
        let xs = x.select(ndarray::Axis(0), &keep);
        let ys: Vec<f64> = keep.iter().map(|&i| y[i]).collect();
        assert_eq!(fit(None, xs.view(), &ys, &mut r), sub);
        assert_ne!(sub, all);
    }

    /// A known noise variance is the fit's noise, on the standardised scale: v / var(y); the
    /// other hyperparameters are fitted around it. Per agent where a list gives it.
    #[test]
    fn a_known_noise_is_fixed_in_every_fit() {
        let (x, y) = data();
        let mean = y.iter().sum::<f64>() / 4.0;
        let var = y.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / 4.0;
        for (known, agent, want) in [
            (vec![0.3], 2, 0.3 / var),
            (vec![0.1, 0.2, 0.05], 1, 0.2 / var),
        ] {
            let mut settings = model(OwnSampler::Rff, 0.01, 50, Kernel::Se)
                .settings()
                .clone();
            settings.normalize_y = true;
            settings.refit_every = Some(1);
            settings.known_noise = known;
            let mut m = OwnModel::for_agent(settings, agent);
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
            assert!(m.maybe_refit(x.view(), &y, &mut rng));
            assert!(
                (m.hyper().noise_var - want).abs() < 1e-12,
                "{}",
                m.hyper().noise_var
            );
            assert!(m.hyper().length_scales.iter().all(|l| l.is_finite()));
        }
    }

    /// With almost no noise a pathwise sample passes through the data whatever its features
    /// (here with the roughest kernel).
    #[test]
    fn pathwise_samples_interpolate_the_data() {
        let (x, y) = data();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for _ in 0..20 {
            // Noise sd 1e-5: the sample at a datum is y - eps up to rounding.
            let s = model(OwnSampler::Pathwise, 1e-10, 200, Kernel::Matern32)
                .sample(x.view(), &y, &mut rng)
                .unwrap();
            for (xi, yi) in x.rows().into_iter().zip(&y) {
                let v = s.value_grad(xi.as_slice().unwrap(), None);
                assert!((v - yi).abs() < 1e-4, "sample {v} at data {yi}");
            }
        }
    }

    /// Averaged over draws, the pathwise sample's mean is the exact GP posterior mean (the
    /// prior sample and the noise have mean zero and the update is linear in them) however
    /// few the features; the RFF posterior's mean is the approximate model's, which a few
    /// features get wrong. Also: the grid argmax is the pointwise maximum of the sample.
    #[test]
    fn pathwise_samples_average_to_the_gp_posterior_mean() {
        let (x, y) = data();
        let grid = Domain::grid_1d(41);
        let draws = 4000;
        let worst_z = |sampler: OwnSampler, kernel: Kernel, mean: MeanFn| -> f64 {
            let mut m = model(sampler, 0.01, 10, kernel);
            m.hyper.mean = mean;
            m.settings.model.mean = mean;
            let gp =
                GpPosterior::fit(x.view(), ndarray::ArrayView1::from(&y[..]), m.hyper()).unwrap();
            let (mean, _) = gp.predict(grid.points());
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
            let (mut sum, mut sq) = (vec![0.0; grid.len()], vec![0.0; grid.len()]);
            for k in 0..draws {
                let s = m.sample(x.view(), &y, &mut rng).unwrap();
                let values: Vec<f64> = grid
                    .points()
                    .rows()
                    .into_iter()
                    .map(|p| s.value_grad(p.as_slice().unwrap(), None))
                    .collect();
                for ((a, q), v) in sum.iter_mut().zip(sq.iter_mut()).zip(&values) {
                    *a += v;
                    *q += v * v;
                }
                if k < 20 {
                    let best = crate::math::linalg::argmax(ndarray::ArrayView1::from(&values[..]));
                    assert_eq!(s.argmax(&grid), best);
                }
            }
            let n = draws as f64;
            sum.iter()
                .zip(&sq)
                .zip(&mean)
                .map(|((a, q), mu)| {
                    let avg = a / n;
                    let se = ((q / n - avg * avg).max(1e-12) / n).sqrt();
                    (avg - mu).abs() / se
                })
                .fold(0.0, f64::max)
        };
        for kernel in [Kernel::Se, Kernel::Matern52, Kernel::Matern32] {
            for mean in [MeanFn::Zero, MeanFn::Constant] {
                let pathwise = worst_z(OwnSampler::Pathwise, kernel, mean);
                assert!(
                    pathwise < 4.5,
                    "{kernel:?} {mean:?}: pathwise mean off by {pathwise} standard errors"
                );
            }
            let rff = worst_z(OwnSampler::Rff, kernel, MeanFn::Zero);
            assert!(
                rff > 10.0,
                "{kernel:?}: RFF mean off by only {rff} standard errors"
            );
        }
    }
}
