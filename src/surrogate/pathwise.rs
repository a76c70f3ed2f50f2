//! Pathwise conditioning (Wilson et al. 2020, "Efficiently sampling functions from Gaussian
//! process posteriors"): a posterior sample is a prior sample plus a kernel update,
//!
//!   f*(x) = f(x) + k(x, X) (K + s_n^2 I)^-1 (y - f(X) - eps),  eps ~ N(0, s_n^2 I),
//!
//! with f a random-feature prior sample. The update goes through the exact kernel, so the
//! sample is right where the data are (it interpolates them as s_n^2 -> 0 whatever the number
//! of features) and the features only have to describe the prior away from the data, where
//! a random-feature posterior (Bayesian linear regression on M features) is known to
//! misstate the variance. The cost is an n x n Cholesky plus n kernel columns over the
//! domain, against the M x M posterior of the feature weights.

use super::gp::{GpHyper, se_kernel};
use crate::linalg::{cho_solve, cholesky_jittered, dot};
use crate::objective::space::Domain;
use ndarray::{Array1, Array2, ArrayView2};

/// The kernel term k(x, X) v of a pathwise sample, v = (K + s_n^2 I)^-1 (y - f(X) - eps).
#[derive(Clone, Debug)]
pub struct KernelUpdate {
    x: Array2<f64>,
    v: Array1<f64>,
    hyper: GpHyper,
}

impl KernelUpdate {
    /// The update for observations at the rows of `x` given the residual y - f(X) - eps.
    /// None when K + s_n^2 I is not positive definite even with jitter.
    pub fn new(x: ArrayView2<f64>, residual: Array1<f64>, hyper: GpHyper) -> Option<Self> {
        let mut k = se_kernel(x, x, &hyper);
        for i in 0..k.nrows() {
            k[[i, i]] += hyper.noise_var;
        }
        let (l, _) = cholesky_jittered(&k)?;
        let v = cho_solve(l.view(), residual.view());
        Some(KernelUpdate {
            x: x.to_owned(),
            v,
            hyper,
        })
    }

    fn inv_2l2(&self) -> f64 {
        0.5 / (self.hyper.length_scale * self.hyper.length_scale)
    }

    /// The update at every point of a grid. On a tensor-product grid the SE kernel is a
    /// product over axes, so the exponentials are taken per axis value (n (n_1 + ... + n_D)
    /// of them instead of n n_1 ... n_D) and multiplied out.
    pub fn on_grid(&self, grid: &Domain) -> Vec<f64> {
        let n = self.x.nrows();
        let c = self.inv_2l2();
        let s2 = self.hyper.signal_var;
        let Some(axes) = grid.axes() else {
            return grid
                .points()
                .rows()
                .into_iter()
                .map(|p| {
                    let mut sum = 0.0;
                    for (xi, vi) in self.x.rows().into_iter().zip(&self.v) {
                        let r2: f64 = p.iter().zip(xi).map(|(a, b)| (a - b) * (a - b)).sum();
                        sum += vi * libm::exp(-r2 * c);
                    }
                    s2 * sum
                })
                .collect();
        };
        // table[k][a * n + i] = exp(-(axes[k][a] - X[i, k])^2 / (2 l^2)): observations
        // contiguous, so the products and the final sums run over contiguous slices.
        let table: Vec<Vec<f64>> = axes
            .iter()
            .enumerate()
            .map(|(k, axis)| {
                let mut t = Vec::with_capacity(axis.len() * n);
                for &a in axis {
                    t.extend(self.x.column(k).iter().map(|&xi| {
                        let d = a - xi;
                        libm::exp(-d * d * c)
                    }));
                }
                t
            })
            .collect();
        // Prefix products over all axes but the last, weighted by v: one row of n per point
        // of the leading axes.
        let d = axes.len();
        let mut prefix: Vec<f64> = Vec::with_capacity(axes[0].len() * n);
        for a in 0..axes[0].len() {
            prefix.extend(
                table[0][a * n..(a + 1) * n]
                    .iter()
                    .zip(&self.v)
                    .map(|(e, v)| e * v),
            );
        }
        for k in 1..d - 1 {
            let rows = prefix.len() / n;
            let mut next = Vec::with_capacity(rows * axes[k].len() * n);
            for r in 0..rows {
                let row = &prefix[r * n..(r + 1) * n];
                for a in 0..axes[k].len() {
                    next.extend(
                        row.iter()
                            .zip(&table[k][a * n..(a + 1) * n])
                            .map(|(p, e)| p * e),
                    );
                }
            }
            prefix = next;
        }
        let last = &table[d - 1];
        let mut out = Vec::with_capacity(grid.len());
        for r in 0..prefix.len() / n {
            let row = &prefix[r * n..(r + 1) * n];
            for a in 0..axes[d - 1].len() {
                out.push(s2 * dot(row, &last[a * n..(a + 1) * n]));
            }
        }
        out
    }

    /// The update at one point, and its gradient added into `grad` when given:
    /// d/dx_d k(x, X_i) = -k(x, X_i) (x_d - X_id) / l^2.
    pub fn value_grad(&self, x: &[f64], grad: Option<&mut [f64]>) -> f64 {
        let c = self.inv_2l2();
        let s2 = self.hyper.signal_var;
        let mut value = 0.0;
        let mut g = grad;
        for (xi, &vi) in self.x.rows().into_iter().zip(&self.v) {
            let r2: f64 = x.iter().zip(xi).map(|(a, b)| (a - b) * (a - b)).sum();
            let kv = s2 * libm::exp(-r2 * c) * vi;
            value += kv;
            if let Some(g) = g.as_deref_mut() {
                for (gd, (a, b)) in g.iter_mut().zip(x.iter().zip(xi)) {
                    *gd -= kv * (a - b) * 2.0 * c;
                }
            }
        }
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objective::space::Domain;
    use ndarray::Array2;

    fn hyper() -> GpHyper {
        GpHyper {
            length_scale: 0.2,
            signal_var: 1.7,
            noise_var: 0.05,
        }
    }

    /// The update on a grid, per axis or pointwise, equals k(grid, X) v formed directly.
    #[test]
    fn grid_update_equals_the_kernel_columns() {
        let x = ndarray::array![[0.1, 0.7], [0.4, 0.4], [0.95, 0.05]];
        let upd = KernelUpdate::new(x.view(), ndarray::array![0.3, -1.2, 0.8], hyper()).unwrap();
        let axis0 = [0.0, 0.3, 0.6, 1.0];
        let axis1 = [0.0, 0.5, 1.0];
        let mut pts = Array2::zeros((12, 2));
        for (p, (a, b)) in axis0
            .iter()
            .flat_map(|a| axis1.iter().map(move |b| (*a, *b)))
            .enumerate()
        {
            pts[[p, 0]] = a;
            pts[[p, 1]] = b;
        }
        let direct = se_kernel(pts.view(), x.view(), &hyper()).dot(&upd.v);
        let tensor = Domain::new(pts.clone());
        assert!(tensor.axes().is_some());
        for (got, want) in upd.on_grid(&tensor).iter().zip(&direct) {
            assert!((got - want).abs() < 1e-13, "{got} vs {want}");
        }
        // A grid that is not a product takes the pointwise path.
        let scattered = Domain::new(ndarray::array![[0.2, 0.9], [0.5, 0.1], [0.8, 0.8]]);
        assert!(scattered.axes().is_none());
        let want = se_kernel(scattered.points(), x.view(), &hyper()).dot(&upd.v);
        for (got, want) in upd.on_grid(&scattered).iter().zip(&want) {
            assert!((got - want).abs() < 1e-13);
        }
        // And one point with its gradient, against central differences.
        let p = [0.33, 0.61];
        let mut g = vec![0.0; 2];
        let v = upd.value_grad(&p, Some(&mut g));
        let at = ndarray::array![[p[0], p[1]]];
        assert!((v - se_kernel(at.view(), x.view(), &hyper()).dot(&upd.v)[0]).abs() < 1e-13);
        for d in 0..2 {
            let h = 1e-6;
            let (mut a, mut b) = (p, p);
            a[d] += h;
            b[d] -= h;
            let fd = (upd.value_grad(&a, None) - upd.value_grad(&b, None)) / (2.0 * h);
            assert!((g[d] - fd).abs() < 1e-7, "dim {d}: {} vs {fd}", g[d]);
        }
    }
}
