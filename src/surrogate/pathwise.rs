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

use super::gp::{GpHyper, kernel_matrix, profiled_constant};
use super::kernel::{for_axis, half_r2, half_r2_all};
use crate::math::linalg::{cho_solve, cholesky_jittered, dot};
use crate::objective::space::Domain;
use ndarray::{Array1, Array2, ArrayView1, ArrayView2};

/// The kernel term c + k(x, X) v of a pathwise sample, v = (K + s_n^2 I)^-1 (y - c - f(X) -
/// eps), with c the profiled constant mean (zero for the zero mean).
#[derive(Clone, Debug)]
pub struct KernelUpdate {
    x: Array2<f64>,
    /// x by column (axis d's n values at d n..), for `half_r2_all`.
    xt: Vec<f64>,
    v: Array1<f64>,
    constant: f64,
    hyper: GpHyper,
    /// hyper.inv2l2(), kept: every evaluation of the sample needs it.
    inv: Vec<f64>,
}

impl KernelUpdate {
    /// The update for observations `y` at the rows of `x`, given the residual y - f(X) - eps
    /// (the constant, if any, is estimated from y and taken off here). None when
    /// K + s_n^2 I is not positive definite even with jitter.
    pub fn new(
        x: ArrayView2<f64>,
        y: ArrayView1<f64>,
        residual: Array1<f64>,
        hyper: &GpHyper,
    ) -> Option<Self> {
        let mut k = kernel_matrix(x, x, hyper);
        for i in 0..k.nrows() {
            k[[i, i]] += hyper.noise_var;
        }
        let (l, _) = cholesky_jittered(&k)?;
        let mut v = cho_solve(l.view(), residual.view());
        let mut constant = 0.0;
        if let Some((c, kinv1)) = profiled_constant(hyper.mean, l.view(), y) {
            v.scaled_add(-c, &kinv1);
            constant = c;
        }
        Some(KernelUpdate {
            x: x.as_standard_layout().into_owned(),
            xt: x.t().iter().copied().collect(),
            v,
            constant,
            hyper: hyper.clone(),
            inv: hyper.inv2l2(),
        })
    }

    /// The update at every point of a grid. On a tensor-product grid h = r^2 / 2 is a sum
    /// over axes: the per-axis terms are tabulated once (n (n_1 + ... + n_D) of them instead
    /// of n n_1 ... n_D) and, for the SE kernel, whose exponential is then a product over
    /// axes, so are the exponentials.
    pub fn on_grid(&self, grid: &Domain) -> Vec<f64> {
        let n = self.x.nrows();
        let inv = &self.inv;
        let s2 = self.hyper.signal_var;
        let kernel = self.hyper.kernel;
        let Some(axes) = grid.axes() else {
            return grid
                .points()
                .rows()
                .into_iter()
                .map(|p| {
                    let p = p.as_slice().expect("standard layout");
                    let mut sum = 0.0;
                    for (xi, vi) in self.x.rows().into_iter().zip(&self.v) {
                        let h = half_r2(p, xi.as_slice().expect("standard layout"), inv);
                        sum += vi * kernel.corr(h);
                    }
                    self.constant + s2 * sum
                })
                .collect();
        };
        let c = |k: usize| for_axis(inv, k);
        // table[k][a * n + i]: exp(-(axes[k][a] - X[i, k])^2 c_k) for the SE kernel, the
        // term (axes[k][a] - X[i, k])^2 c_k itself otherwise. Observations contiguous, so the
        // combinations and the final sums run over contiguous slices.
        let separable = kernel.separable();
        let table: Vec<Vec<f64>> = axes
            .iter()
            .enumerate()
            .map(|(k, axis)| {
                let ck = c(k);
                let mut t = Vec::with_capacity(axis.len() * n);
                for &a in axis {
                    t.extend(self.x.column(k).iter().map(|&xi| {
                        let d = a - xi;
                        if separable {
                            libm::exp(-d * d * ck)
                        } else {
                            d * d * ck
                        }
                    }));
                }
                t
            })
            .collect();
        // Combined over all axes but the last (products of exponentials weighted by v, or
        // sums of terms): one row of n per point of the leading axes.
        let d = axes.len();
        let mut prefix: Vec<f64> = Vec::with_capacity(axes[0].len() * n);
        for a in 0..axes[0].len() {
            let row = &table[0][a * n..(a + 1) * n];
            if separable {
                prefix.extend(row.iter().zip(&self.v).map(|(e, v)| e * v));
            } else {
                prefix.extend_from_slice(row);
            }
        }
        for k in 1..d - 1 {
            let rows = prefix.len() / n;
            let mut next = Vec::with_capacity(rows * axes[k].len() * n);
            for r in 0..rows {
                let row = &prefix[r * n..(r + 1) * n];
                for a in 0..axes[k].len() {
                    let t = row.iter().zip(&table[k][a * n..(a + 1) * n]);
                    if separable {
                        next.extend(t.map(|(p, e)| p * e));
                    } else {
                        next.extend(t.map(|(p, e)| p + e));
                    }
                }
            }
            prefix = next;
        }
        let last = &table[d - 1];
        let mut out = Vec::with_capacity(grid.len());
        let mut hs = vec![0.0; n];
        for r in 0..prefix.len() / n {
            let row = &prefix[r * n..(r + 1) * n];
            for a in 0..axes[d - 1].len() {
                let t = &last[a * n..(a + 1) * n];
                if separable {
                    out.push(self.constant + s2 * dot(row, t));
                } else {
                    for ((h, p), e) in hs.iter_mut().zip(row).zip(t) {
                        *h = p + e;
                    }
                    let sum: f64 = hs
                        .iter()
                        .zip(&self.v)
                        .map(|(&h, v)| v * kernel.corr_with(h, crate::math::fastmath::fast_exp))
                        .sum();
                    out.push(self.constant + s2 * sum);
                }
            }
        }
        out
    }

    /// The update at one point, and its gradient added into `grad` when given:
    /// d/dx_d k(x, X_i) = -s^2 (-dc/dh) (x_d - X_id) / l_d^2.
    pub fn value_grad(&self, x: &[f64], grad: Option<&mut [f64]>) -> f64 {
        let inv = &self.inv;
        let c = |k: usize| for_axis(inv, k);
        let s2 = self.hyper.signal_var;
        let kernel = self.hyper.kernel;
        let mut value = self.constant;
        let mut g = grad;
        let mut hs = vec![0.0; self.v.len()];
        half_r2_all(&mut hs, x, &self.xt, inv);
        for ((xi, &vi), &h) in self.x.rows().into_iter().zip(&self.v).zip(&hs) {
            let xi = xi.as_slice().expect("standard layout");
            value += s2 * kernel.corr(h) * vi;
            if let Some(g) = g.as_deref_mut() {
                let slope = s2 * kernel.neg_dcorr(h) * vi;
                for (d, (gd, (a, b))) in g.iter_mut().zip(x.iter().zip(xi)).enumerate() {
                    *gd -= slope * (a - b) * 2.0 * c(d);
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
    use crate::surrogate::kernel::Kernel;
    use ndarray::Array2;

    /// Every kernel, with one length scale and with one per axis.
    fn hypers() -> Vec<GpHyper> {
        let mut all = Vec::new();
        for kernel in [Kernel::Se, Kernel::Matern52, Kernel::Matern32] {
            let iso = GpHyper::isotropic(kernel, 0.2, 1.7, 0.05);
            let mut ard = iso.clone();
            ard.length_scales = vec![0.15, 0.4];
            all.push(iso);
            all.push(ard);
        }
        all
    }

    /// The update on a grid, per axis or pointwise, equals k(grid, X) v formed directly.
    #[test]
    fn grid_update_equals_the_kernel_columns() {
        for hyper in hypers() {
            let x = ndarray::array![[0.1, 0.7], [0.4, 0.4], [0.95, 0.05]];
            let y = ndarray::array![0.3, -1.2, 0.8];
            let residual = &y - &ndarray::array![0.1, 0.2, -0.4];
            let upd = KernelUpdate::new(x.view(), y.view(), residual, &hyper).unwrap();
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
            let direct = kernel_matrix(pts.view(), x.view(), &hyper.clone()).dot(&upd.v);
            let tensor = Domain::new(pts.clone());
            assert!(tensor.axes().is_some());
            for (got, want) in upd.on_grid(&tensor).iter().zip(&direct) {
                assert!((got - want).abs() < 1e-13, "{got} vs {want}");
            }
            // A grid that is not a product takes the pointwise path.
            let scattered = Domain::new(ndarray::array![[0.2, 0.9], [0.5, 0.1], [0.8, 0.8]]);
            assert!(scattered.axes().is_none());
            let want = kernel_matrix(scattered.points(), x.view(), &hyper.clone()).dot(&upd.v);
            for (got, want) in upd.on_grid(&scattered).iter().zip(&want) {
                assert!((got - want).abs() < 1e-13);
            }
            // And one point with its gradient, against central differences.
            let p = [0.33, 0.61];
            let mut g = vec![0.0; 2];
            let v = upd.value_grad(&p, Some(&mut g));
            let at = ndarray::array![[p[0], p[1]]];
            assert!(
                (v - kernel_matrix(at.view(), x.view(), &hyper.clone()).dot(&upd.v)[0]).abs()
                    < 1e-13
            );
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
}
