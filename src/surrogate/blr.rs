//! Bayesian linear regression on random features (FTS paper eqs. 2-3):
//! Sigma = Phi^T Phi + lambda I, nu = Sigma^-1 Phi^T y, omega ~ N(nu, lambda Sigma^-1).
//!
//! The Cholesky factor of Sigma is kept and updated by a rank-one update per observation, so
//! an agent that observes every round pays O(M^2) per observation instead of O(M^3).

use crate::math::linalg::{chol_rank1_update, cholesky_jittered, solve_lower, solve_lower_t};
use ndarray::{Array1, Array2, ArrayView1, ArrayView2};
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};

#[derive(Clone, Debug)]
pub struct BlrPosterior {
    /// Lower L with L L^T = Sigma.
    chol: Array2<f64>,
    phi_t_y: Array1<f64>,
    lambda: f64,
    n_obs: usize,
}

impl BlrPosterior {
    /// The prior: no observations, Sigma = lambda I.
    pub fn prior(m: usize, lambda: f64) -> Self {
        let mut chol = Array2::zeros((m, m));
        let s = lambda.sqrt();
        for i in 0..m {
            chol[[i, i]] = s;
        }
        BlrPosterior {
            chol,
            phi_t_y: Array1::zeros(m),
            lambda,
            n_obs: 0,
        }
    }

    /// From scratch, with one O(M^3) factorisation: the reference the incremental path is
    /// tested against, and the cheaper route when features are drawn afresh for every sample.
    pub fn from_data(phi: ArrayView2<f64>, y: ArrayView1<f64>, lambda: f64) -> Option<Self> {
        let m = phi.ncols();
        let mut sigma = crate::math::linalg::gram(phi);
        for i in 0..m {
            sigma[[i, i]] += lambda;
        }
        let (chol, _) = cholesky_jittered(&sigma)?;
        Some(BlrPosterior {
            chol,
            phi_t_y: phi.t().dot(&y),
            lambda,
            n_obs: phi.nrows(),
        })
    }

    pub fn update(&mut self, phi_x: ArrayView1<f64>, y: f64) {
        self.phi_t_y.scaled_add(y, &phi_x);
        let mut v = phi_x.to_owned();
        chol_rank1_update(&mut self.chol, &mut v);
        self.n_obs += 1;
    }

    pub fn n_obs(&self) -> usize {
        self.n_obs
    }

    pub fn lambda(&self) -> f64 {
        self.lambda
    }

    /// nu = Sigma^-1 Phi^T y.
    pub fn mean_weights(&self) -> Array1<f64> {
        let z = solve_lower(self.chol.view(), self.phi_t_y.view());
        solve_lower_t(self.chol.view(), z.view())
    }

    /// omega ~ N(nu, lambda Sigma^-1), using Sigma^-1 = L^-T L^-1.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Array1<f64> {
        let m = self.phi_t_y.len();
        let eps = Array1::from_iter((0..m).map(|_| StandardNormal.sample(rng)));
        let noise = solve_lower_t(self.chol.view(), eps.view());
        let mut w = self.mean_weights();
        w.scaled_add(self.lambda.sqrt(), &noise);
        w
    }

    /// Posterior mean phi^T nu and variance lambda phi^T Sigma^-1 phi at one input.
    pub fn predict(&self, phi_x: ArrayView1<f64>) -> (f64, f64) {
        let mean = phi_x.dot(&self.mean_weights());
        let z = solve_lower(self.chol.view(), phi_x);
        (mean, self.lambda * z.dot(&z))
    }

    /// Sigma^-1, the M^2 numbers RGPE and TAF need from each agent.
    pub fn precision_inverse(&self) -> Array2<f64> {
        let m = self.phi_t_y.len();
        let mut out = Array2::zeros((m, m));
        for j in 0..m {
            let mut e = Array1::zeros(m);
            e[j] = 1.0;
            let z = solve_lower(self.chol.view(), e.view());
            out.column_mut(j)
                .assign(&solve_lower_t(self.chol.view(), z.view()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::rng::{Purpose, stream};
    use crate::surrogate::gp::exact_posterior;
    use crate::surrogate::rff::RandomFeatures;
    use ndarray::{Array, Axis};

    fn data(n: usize) -> (Array2<f64>, Array1<f64>) {
        let mut rng = stream(11, 0, 0, Purpose::AgentData);
        let x = Array::from_iter((0..n).map(|_| rng.random::<f64>())).insert_axis(Axis(1));
        let y = x
            .column(0)
            .mapv(|v| (6.0 * v).sin() + 0.1 * rng.random::<f64>());
        (x, y)
    }

    #[test]
    fn posterior_equals_exact_gp_with_feature_kernel() {
        // FTS paper App. B: the BLR posterior is the GP posterior with k(x,x') = phi(x)^T phi(x').
        let (x, y) = data(25);
        let lambda = 0.05;
        let mut rng = stream(2, 0, 0, Purpose::SharedFeatures);
        let rf = RandomFeatures::draw(
            40,
            1,
            crate::surrogate::kernel::Kernel::Se,
            &[0.2],
            1.0,
            true,
            &mut rng,
        );
        let phi = rf.matrix(x.view());
        let blr = BlrPosterior::from_data(phi.view(), y.view(), lambda).unwrap();
        let test_x = Array::linspace(0.0, 1.0, 17).insert_axis(Axis(1));
        let phi_star = rf.matrix(test_x.view());
        let k_train = phi.dot(&phi.t());
        let k_cross = phi.dot(&phi_star.t());
        let k_diag = phi_star.map_axis(Axis(1), |r| r.dot(&r));
        let (mu, var) = exact_posterior(&k_train, &k_cross, &k_diag, y.view(), lambda).unwrap();
        for i in 0..17 {
            let (m, v) = blr.predict(phi_star.row(i));
            assert!((m - mu[i]).abs() < 1e-8, "mean {m} vs {}", mu[i]);
            assert!((v - var[i]).abs() < 1e-8, "var {v} vs {}", var[i]);
        }
    }

    #[test]
    fn incremental_update_matches_from_scratch() {
        let (x, y) = data(30);
        let mut rng = stream(5, 0, 0, Purpose::SharedFeatures);
        let rf = RandomFeatures::draw(
            20,
            1,
            crate::surrogate::kernel::Kernel::Se,
            &[0.1],
            1.0,
            true,
            &mut rng,
        );
        let phi = rf.matrix(x.view());
        let mut inc = BlrPosterior::prior(20, 1e-3);
        for i in 0..30 {
            inc.update(phi.row(i), y[i]);
        }
        let full = BlrPosterior::from_data(phi.view(), y.view(), 1e-3).unwrap();
        for (a, b) in inc.mean_weights().iter().zip(full.mean_weights().iter()) {
            assert!((a - b).abs() < 1e-8 * (1.0 + b.abs()), "{a} vs {b}");
        }
        let (pa, pb) = (inc.precision_inverse(), full.precision_inverse());
        for (a, b) in pa.iter().zip(pb.iter()) {
            assert!((a - b).abs() < 1e-8 * (1.0 + b.abs()));
        }
        assert_eq!(inc.n_obs(), 30);
    }

    #[test]
    fn samples_have_the_posterior_moments() {
        let (x, y) = data(8);
        let mut rng = stream(4, 0, 0, Purpose::SharedFeatures);
        let rf = RandomFeatures::draw(
            5,
            1,
            crate::surrogate::kernel::Kernel::Se,
            &[0.3],
            1.0,
            true,
            &mut rng,
        );
        let phi = rf.matrix(x.view());
        let blr = BlrPosterior::from_data(phi.view(), y.view(), 0.1).unwrap();
        let probe = rf.feature(ndarray::array![0.37].view());
        let (mean, var) = blr.predict(probe.view());
        let n = 40_000;
        let draws: Vec<f64> = (0..n).map(|_| probe.dot(&blr.sample(&mut rng))).collect();
        let m = draws.iter().sum::<f64>() / n as f64;
        let v = draws.iter().map(|d| (d - m) * (d - m)).sum::<f64>() / (n - 1) as f64;
        // Standard errors: sqrt(var/n) for the mean, var*sqrt(2/n) for the variance.
        assert!(
            (m - mean).abs() < 5.0 * (var / n as f64).sqrt(),
            "{m} vs {mean}"
        );
        assert!(
            (v - var).abs() < 5.0 * var * (2.0 / n as f64).sqrt(),
            "{v} vs {var}"
        );
    }
}
