//! The target's own Thompson sample (algorithms.md section 2): an RFF approximation of its GP
//! posterior with M_target features drawn afresh for every sample, using GP hyperparameters
//! that are refitted by marginal likelihood whenever the number of observations reaches a
//! multiple of the refit period.

use super::blr::BlrPosterior;
use super::gp::{FitBudget, GpHyper, HyperBounds, fit_hyperparameters, standardize};
use super::rff::RandomFeatures;
use crate::error::{FboError, Result};
use crate::objective::space::Domain;
use ndarray::{Array1, Array2, ArrayView2};
use rand::Rng;

#[derive(Clone, Debug, PartialEq)]
pub struct OwnSettings {
    /// M_target: features per sample.
    pub features: usize,
    pub normalize_features: bool,
    /// Refit when the number of observations is a positive multiple of this; None: never.
    pub refit_every: Option<usize>,
    pub fit: FitBudget,
    pub bounds: HyperBounds,
    /// Used before the first fit, and throughout when fitting is off.
    pub initial: GpHyper,
    /// Standardise observations before fitting and sampling (argmax is unaffected by the
    /// positive affine map, so the choice only changes what the zero-mean prior means).
    pub normalize_y: bool,
}

/// A sampled function f(x) = phi(x)^T w with its own features.
pub struct FeatureSample {
    pub features: RandomFeatures,
    pub weights: Array1<f64>,
}

impl FeatureSample {
    /// The grid index maximising the sample; by axis on a tensor-product grid.
    pub fn argmax(&self, grid: &Domain) -> usize {
        match grid.axes() {
            Some(axes) => self
                .features
                .argmax_tensor(axes, self.weights.as_slice().expect("contiguous weights")),
            None => self.features.argmax(grid.points(), self.weights.view()),
        }
    }
}

#[derive(Clone, Debug)]
pub struct OwnModel {
    settings: OwnSettings,
    hyper: GpHyper,
    fitted_at: usize,
}

impl OwnModel {
    pub fn new(settings: OwnSettings) -> Self {
        let hyper = settings.initial;
        OwnModel {
            settings,
            hyper,
            fitted_at: 0,
        }
    }

    pub fn hyper(&self) -> GpHyper {
        self.hyper
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
        let warm = (self.fitted_at > 0).then_some(self.hyper);
        if let Some(h) = fit_hyperparameters(
            x,
            yv.view(),
            &self.settings.bounds,
            self.settings.fit,
            warm,
            rng,
        ) {
            self.hyper = h;
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
    ) -> Result<FeatureSample> {
        let h = self.hyper;
        let features = RandomFeatures::draw(
            self.settings.features,
            x.ncols(),
            h.length_scale,
            h.signal_var,
            self.settings.normalize_features,
            rng,
        );
        let blr = if y.is_empty() {
            BlrPosterior::prior(self.settings.features, h.noise_var)
        } else {
            let phi: Array2<f64> = features.matrix(x);
            let yv = self.targets(y);
            BlrPosterior::from_data(phi.view(), yv.view(), h.noise_var).ok_or_else(|| {
                FboError::Run(format!(
                    "own posterior is singular (noise variance {:.3e}); raise the noise lower bound",
                    h.noise_var
                ))
            })?
        };
        let weights = blr.sample(rng);
        Ok(FeatureSample { features, weights })
    }
}
