//! Random Fourier features for the isotropic SE kernel (FTS paper App. A; Rahimi & Recht).
//!
//! phi(x) = sqrt(2/M) cos(S x + b), s_j ~ N(0, l^-2 I), b_j ~ U[0, 2 pi). The paper then
//! rescales every phi(x) to squared norm sigma_0^2 (`normalize = true`), which makes
//! phi(x)^T phi(x) equal the kernel's variance exactly; without it the kernel estimate is
//! unbiased instead.

use crate::fastmath::fast_cos;
use ndarray::{Array1, Array2, ArrayView1, ArrayView2};
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};
use std::f64::consts::PI;

#[derive(Clone, Debug)]
pub struct RandomFeatures {
    /// Frequencies stored by input dimension: `freq[d][j]` is s_{j,d}. Laid out so the inner
    /// loop over features is contiguous and vectorises.
    freq: Vec<Vec<f64>>,
    phase: Vec<f64>,
    variance: f64,
    normalize: bool,
}

impl RandomFeatures {
    pub fn draw<R: Rng + ?Sized>(
        m: usize,
        dim: usize,
        length_scale: f64,
        variance: f64,
        normalize: bool,
        rng: &mut R,
    ) -> Self {
        // Draw feature by feature (s_j then b_j) so that the first k features of a draw with
        // M > k are not the same as those of a draw with M = k only by accident of layout.
        let mut freq = vec![vec![0.0; m]; dim];
        let mut phase = vec![0.0; m];
        for j in 0..m {
            for f in freq.iter_mut() {
                let z: f64 = StandardNormal.sample(rng);
                f[j] = z / length_scale;
            }
            phase[j] = rng.random::<f64>() * 2.0 * PI;
        }
        RandomFeatures {
            freq,
            phase,
            variance,
            normalize,
        }
    }

    pub fn len(&self) -> usize {
        self.phase.len()
    }

    pub fn is_empty(&self) -> bool {
        self.phase.is_empty()
    }

    pub fn dim(&self) -> usize {
        self.freq.len()
    }

    /// cos(S x + b) into `buf` and returns the factor that turns it into phi(x).
    fn raw_into(&self, x: ArrayView1<f64>, buf: &mut [f64]) -> f64 {
        buf.copy_from_slice(&self.phase);
        for (d, f) in self.freq.iter().enumerate() {
            let xd = x[d];
            for (o, s) in buf.iter_mut().zip(f) {
                *o += s * xd;
            }
        }
        let mut sumsq = 0.0;
        for o in buf.iter_mut() {
            let c = fast_cos(*o);
            *o = c;
            sumsq += c * c;
        }
        if self.normalize {
            if sumsq > 0.0 {
                (self.variance / sumsq).sqrt()
            } else {
                0.0
            }
        } else {
            (2.0 * self.variance / self.len() as f64).sqrt()
        }
    }

    /// phi(x) for one input.
    pub fn feature(&self, x: ArrayView1<f64>) -> Array1<f64> {
        let mut buf = vec![0.0; self.len()];
        let scale = self.raw_into(x, &mut buf);
        Array1::from_iter(buf.into_iter().map(|v| v * scale))
    }

    /// Phi(X): one row of features per row of `xs`.
    pub fn matrix(&self, xs: ArrayView2<f64>) -> Array2<f64> {
        let m = self.len();
        let mut out = Array2::zeros((xs.nrows(), m));
        let mut buf = vec![0.0; m];
        for (i, x) in xs.rows().into_iter().enumerate() {
            let scale = self.raw_into(x, &mut buf);
            for (o, v) in out.row_mut(i).iter_mut().zip(&buf) {
                *o = v * scale;
            }
        }
        out
    }

    /// argmax over the rows of `xs` of phi(x)^T w, without materialising Phi(X). Ties go to
    /// the lowest index.
    pub fn argmax(&self, xs: ArrayView2<f64>, w: ArrayView1<f64>) -> usize {
        let m = self.len();
        let w: Vec<f64> = w.to_vec();
        let mut buf = vec![0.0; m];
        let mut best = (0, f64::NEG_INFINITY);
        for (i, x) in xs.rows().into_iter().enumerate() {
            let scale = self.raw_into(x, &mut buf);
            let dot: f64 = buf.iter().zip(&w).map(|(a, b)| a * b).sum();
            let v = dot * scale;
            if v > best.1 {
                best = (i, v);
            }
        }
        best.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Purpose, stream};
    use ndarray::Array;

    fn se_kernel(a: f64, b: f64, l: f64) -> f64 {
        libm::exp(-(a - b) * (a - b) / (2.0 * l * l))
    }

    /// Max |k(x,x') - phi(x)^T phi(x')| over a grid, averaged over a few feature draws.
    fn approx_error(m: usize, normalize: bool) -> f64 {
        let xs = Array::linspace(0.0, 1.0, 60).insert_axis(ndarray::Axis(1));
        let mut total = 0.0;
        for rep in 0..5 {
            let mut rng = stream(7, rep, 0, Purpose::SharedFeatures);
            let rf = RandomFeatures::draw(m, 1, 0.2, 1.0, normalize, &mut rng);
            let phi = rf.matrix(xs.view());
            let k = phi.dot(&phi.t());
            let mut worst: f64 = 0.0;
            for i in 0..60 {
                for j in 0..60 {
                    let exact = se_kernel(xs[[i, 0]], xs[[j, 0]], 0.2);
                    worst = worst.max((k[[i, j]] - exact).abs());
                }
            }
            total += worst;
        }
        total / 5.0
    }

    #[test]
    fn kernel_approximation_error_shrinks_with_m() {
        for normalize in [true, false] {
            let e50 = approx_error(50, normalize);
            let e500 = approx_error(500, normalize);
            let e5000 = approx_error(5000, normalize);
            assert!(e500 < e50 && e5000 < e500, "{e50} {e500} {e5000}");
            // O(M^-1/2): 100x more features should cut the error by roughly 10x.
            assert!(e5000 < e50 / 4.0, "{e50} -> {e5000}");
        }
    }

    #[test]
    fn normalised_features_have_the_kernel_variance_as_squared_norm() {
        let mut rng = stream(1, 0, 0, Purpose::SharedFeatures);
        let rf = RandomFeatures::draw(30, 2, 0.1, 2.5, true, &mut rng);
        let xs = ndarray::array![[0.1, 0.9], [0.5, 0.5], [1.0, 0.0]];
        for row in rf.matrix(xs.view()).rows() {
            assert!((row.dot(&row) - 2.5).abs() < 1e-12);
        }
    }

    #[test]
    fn streaming_argmax_agrees_with_matrix_product() {
        let mut rng = stream(3, 0, 0, Purpose::SharedFeatures);
        let rf = RandomFeatures::draw(40, 1, 0.05, 1.0, true, &mut rng);
        let xs = Array::linspace(0.0, 1.0, 500).insert_axis(ndarray::Axis(1));
        let w = Array::from_iter((0..40).map(|j| ((j * 7 % 11) as f64 - 5.0) / 3.0));
        let vals = rf.matrix(xs.view()).dot(&w);
        assert_eq!(
            rf.argmax(xs.view(), w.view()),
            crate::linalg::argmax(vals.view())
        );
    }
}
