//! Exact GP regression with an isotropic SE kernel: log marginal likelihood with its gradient,
//! multi-start maximisation over (length scale, signal variance, noise variance), and the
//! closed-form posterior used to check the random-feature posterior.

use crate::fastmath::fast_exp;
use crate::optim::{LbfgsOptions, lbfgs};
use ndarray::{Array1, Array2, ArrayView1, ArrayView2};
use rand::Rng;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GpHyper {
    pub length_scale: f64,
    pub signal_var: f64,
    pub noise_var: f64,
}

impl GpHyper {
    fn to_log(self) -> [f64; 3] {
        [
            libm::log(self.length_scale),
            libm::log(self.signal_var),
            libm::log(self.noise_var),
        ]
    }

    fn from_log(l: &[f64]) -> Self {
        GpHyper {
            length_scale: libm::exp(l[0]),
            signal_var: libm::exp(l[1]),
            noise_var: libm::exp(l[2]),
        }
    }
}

/// Box for the fit, in natural units. The search runs in log space.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HyperBounds {
    pub length_scale: (f64, f64),
    pub signal_var: (f64, f64),
    pub noise_var: (f64, f64),
}

impl HyperBounds {
    fn log_box(&self) -> [(f64, f64); 3] {
        [
            (
                libm::log(self.length_scale.0),
                libm::log(self.length_scale.1),
            ),
            (libm::log(self.signal_var.0), libm::log(self.signal_var.1)),
            (libm::log(self.noise_var.0), libm::log(self.noise_var.1)),
        ]
    }

    pub fn clamp(&self, h: GpHyper) -> GpHyper {
        GpHyper {
            length_scale: h
                .length_scale
                .clamp(self.length_scale.0, self.length_scale.1),
            signal_var: h.signal_var.clamp(self.signal_var.0, self.signal_var.1),
            noise_var: h.noise_var.clamp(self.noise_var.0, self.noise_var.1),
        }
    }
}

/// Pairwise squared Euclidean distances between the rows of `x`.
pub fn sq_dists(x: ArrayView2<f64>) -> Array2<f64> {
    let n = x.nrows();
    let mut d = Array2::zeros((n, n));
    for i in 0..n {
        for j in 0..i {
            let v: f64 = x
                .row(i)
                .iter()
                .zip(x.row(j))
                .map(|(a, b)| (a - b) * (a - b))
                .sum();
            d[[i, j]] = v;
            d[[j, i]] = v;
        }
    }
    d
}

/// The likelihood's factorisation at one set of hyperparameters: what both its value and its
/// gradient need.
struct Factored {
    /// The noise-free kernel matrix.
    kf: Array2<f64>,
    l: Array2<f64>,
    alpha: Array1<f64>,
    lml: f64,
}

impl Factored {
    /// None if K is not positive definite.
    fn new(d2: &Array2<f64>, y: ArrayView1<f64>, h: &GpHyper) -> Option<Self> {
        let n = y.len();
        let inv2l2 = 0.5 / (h.length_scale * h.length_scale);
        // K is symmetric: one exp per pair, over the lower triangle row by row (a loop that
        // vectorises), then mirrored.
        let mut kf = Array2::<f64>::zeros((n, n));
        kernel_lower(
            kf.as_slice_mut().expect("fresh arrays are contiguous"),
            d2.as_standard_layout().as_slice().expect("standard layout"),
            n,
            h.signal_var,
            inv2l2,
        );
        for i in 0..n {
            for j in 0..i {
                kf[[j, i]] = kf[[i, j]];
            }
        }
        let mut k = kf.clone();
        for i in 0..n {
            k[[i, i]] += h.noise_var;
        }
        let l = crate::linalg::cholesky(&k)?;
        let alpha = crate::linalg::cho_solve(l.view(), y);
        let log_det: f64 = (0..n).map(|i| libm::log(l[[i, i]])).sum::<f64>() * 2.0;
        let lml = -0.5 * y.dot(&alpha)
            - 0.5 * log_det
            - 0.5 * n as f64 * libm::log(2.0 * std::f64::consts::PI);
        Some(Factored { kf, l, alpha, lml })
    }

    /// Gradient with respect to (ln length_scale, ln signal_var, ln noise_var):
    /// 1/2 tr((alpha alpha^T - K^-1) dK/dtheta)  (Rasmussen & Williams 5.9).
    fn gradient(&self, d2: &Array2<f64>, h: &GpHyper) -> [f64; 3] {
        let n = self.alpha.len();
        let inv2l2 = 0.5 / (h.length_scale * h.length_scale);
        let (alpha, kf) = (&self.alpha, &self.kf);
        let kinv = crate::linalg::cho_inverse(self.l.view());
        let (mut g_ls, mut g_sv, mut g_nv) = (0.0, 0.0, 0.0);
        for i in 0..n {
            for j in 0..n {
                let w = alpha[i] * alpha[j] - kinv[[i, j]];
                let kij = kf[[i, j]];
                g_ls += w * kij * d2[[i, j]] * 2.0 * inv2l2;
                g_sv += w * kij;
            }
            g_nv += (alpha[i] * alpha[i] - kinv[[i, i]]) * h.noise_var;
        }
        [0.5 * g_ls, 0.5 * g_sv, 0.5 * g_nv]
    }
}

crate::multiversion! {
    /// The lower triangle of signal_var exp(-d2 inv2l2), row by row (n x n, row-major).
    fn kernel_lower(ks: &mut [f64], ds: &[f64], n: usize, signal_var: f64, inv2l2: f64) {
        for i in 0..n {
            let row = i * n..i * n + i + 1;
            for (k, &d) in ks[row.clone()].iter_mut().zip(&ds[row]) {
                *k = signal_var * fast_exp(-d * inv2l2);
            }
        }
    }
}

/// log p(y | X, h) and, if asked, its gradient with respect to
/// (ln length_scale, ln signal_var, ln noise_var). None if K is not positive definite.
pub fn log_marginal_likelihood(
    d2: &Array2<f64>,
    y: ArrayView1<f64>,
    h: &GpHyper,
    with_grad: bool,
) -> Option<(f64, [f64; 3])> {
    let f = Factored::new(d2, y, h)?;
    let g = if with_grad {
        f.gradient(d2, h)
    } else {
        [0.0; 3]
    };
    Some((f.lml, g))
}

/// The negative log likelihood in the fit's coordinates u (ln theta = lo + (hi - lo)
/// sigmoid(u)), for L-BFGS. It keeps the last factorisation: a line-search trial asks for the
/// value, and only an accepted one for the gradient, which then reuses the factor (a third of
/// the trials are rejected, and the gradient's K^-1 is most of an evaluation's work).
struct NegLikelihood<'a> {
    d2: &'a Array2<f64>,
    y: ArrayView1<'a, f64>,
    lb: [(f64, f64); 3],
    last: Option<(Vec<f64>, Option<Factored>)>,
}

impl NegLikelihood<'_> {
    fn theta(&self, u: &[f64]) -> ([f64; 3], [f64; 3]) {
        let mut t = [0.0; 3];
        let mut dt = [0.0; 3];
        for i in 0..3 {
            let s = sigmoid(u[i]);
            t[i] = self.lb[i].0 + (self.lb[i].1 - self.lb[i].0) * s;
            dt[i] = (self.lb[i].1 - self.lb[i].0) * s * (1.0 - s);
        }
        (t, dt)
    }

    fn factored(&mut self, u: &[f64]) -> Option<&Factored> {
        if self.last.as_ref().is_none_or(|(lu, _)| lu.as_slice() != u) {
            let h = GpHyper::from_log(&self.theta(u).0);
            self.last = Some((u.to_vec(), Factored::new(self.d2, self.y, &h)));
        }
        self.last.as_ref().and_then(|(_, f)| f.as_ref())
    }
}

impl crate::optim::Objective for NegLikelihood<'_> {
    fn eval(&mut self, u: &[f64]) -> Option<(f64, Vec<f64>)> {
        let v = self.value(u)?;
        Some((v, self.gradient(u)?))
    }

    fn value(&mut self, u: &[f64]) -> Option<f64> {
        self.factored(u).map(|f| -f.lml)
    }

    fn gradient(&mut self, u: &[f64]) -> Option<Vec<f64>> {
        let (t, dt) = self.theta(u);
        let h = GpHyper::from_log(&t);
        let d2 = self.d2;
        let g = self.factored(u)?.gradient(d2, &h);
        Some((0..3).map(|i| -g[i] * dt[i]).collect())
    }
}

fn sigmoid(u: f64) -> f64 {
    1.0 / (1.0 + libm::exp(-u))
}

fn logit(p: f64) -> f64 {
    libm::log(p / (1.0 - p))
}

/// How a fit searches: `starts` random points in the box are scored by the likelihood alone
/// (one factorisation each), and L-BFGS runs from the best `restarts` of them plus the previous
/// optimum. `restarts = starts` is plain multi-start (the authors' GPy fit with 10 restarts);
/// fewer restarts cost proportionally less and, on a 3-parameter likelihood, rarely change
/// the optimum found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FitBudget {
    pub starts: usize,
    pub restarts: usize,
}

/// Maximises the log marginal likelihood over the box, starting as `budget` says, plus from
/// `warm` (the previous optimum) when given. Each coordinate is searched as
/// ln theta = lo + (hi - lo) sigmoid(u), which keeps every iterate inside the box.
pub fn fit_hyperparameters<R: Rng + ?Sized>(
    x: ArrayView2<f64>,
    y: ArrayView1<f64>,
    bounds: &HyperBounds,
    budget: FitBudget,
    warm: Option<GpHyper>,
    rng: &mut R,
) -> Option<GpHyper> {
    let d2 = sq_dists(x);
    let lb = bounds.log_box();
    let mut objective = NegLikelihood {
        d2: &d2,
        y,
        lb,
        last: None,
    };
    let mut initial: Vec<Vec<f64>> = Vec::with_capacity(budget.restarts + 1);
    if let Some(w) = warm {
        let l = bounds.clamp(w).to_log();
        initial.push(
            (0..3)
                .map(|i| {
                    let p = ((l[i] - lb[i].0) / (lb[i].1 - lb[i].0)).clamp(1e-6, 1.0 - 1e-6);
                    logit(p)
                })
                .collect(),
        );
    }
    let mut candidates: Vec<(f64, Vec<f64>)> = (0..budget.starts)
        .map(|_| {
            let u: Vec<f64> = (0..3)
                .map(|_| logit(rng.random::<f64>().clamp(1e-6, 1.0 - 1e-6)))
                .collect();
            let lml = Factored::new(&d2, y, &GpHyper::from_log(&objective.theta(&u).0))
                .map_or(f64::NEG_INFINITY, |f| f.lml);
            (lml, u)
        })
        .collect();
    if budget.restarts < budget.starts {
        // Stable sort: equal scores keep their draw order, so results do not depend on ties.
        candidates.sort_by(|a, b| b.0.total_cmp(&a.0));
        candidates.truncate(budget.restarts);
    }
    initial.extend(candidates.into_iter().map(|(_, u)| u));
    let opts = LbfgsOptions {
        max_iter: 50,
        grad_tol: 1e-5,
        ..Default::default()
    };
    let mut best: Option<(f64, Vec<f64>)> = None;
    for u0 in initial {
        if let Some(m) = lbfgs(&mut objective, &u0, opts)
            && m.value.is_finite()
            && best.as_ref().is_none_or(|b| m.value < b.0)
        {
            best = Some((m.value, m.x));
        }
    }
    best.map(|(_, u)| GpHyper::from_log(&objective.theta(&u).0))
}

/// GP posterior mean and variance at test points from explicit kernel blocks:
/// K (n x n) on the training inputs, K_* (n x m) between training and test inputs, and the
/// test inputs' prior variances.
pub fn exact_posterior(
    k_train: &Array2<f64>,
    k_cross: &Array2<f64>,
    k_diag: &Array1<f64>,
    y: ArrayView1<f64>,
    noise_var: f64,
) -> Option<(Array1<f64>, Array1<f64>)> {
    let n = k_train.nrows();
    let mut k = k_train.clone();
    for i in 0..n {
        k[[i, i]] += noise_var;
    }
    let l = crate::linalg::cholesky(&k)?;
    let alpha = crate::linalg::cho_solve(l.view(), y);
    let mean = k_cross.t().dot(&alpha);
    let mut var = k_diag.clone();
    for j in 0..k_cross.ncols() {
        let kc = k_cross.column(j);
        let v = crate::linalg::cho_solve(l.view(), kc);
        var[j] -= kc.dot(&v);
    }
    Some((mean, var))
}

/// Standardises y to mean 0 and standard deviation 1 (unit scale when y is constant), so
/// that one set of hyperparameter bounds serves objectives of any scale.
pub fn standardize(y: &[f64]) -> Array1<f64> {
    let n = y.len() as f64;
    let mean = y.iter().sum::<f64>() / n;
    let var = y.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    let sd = if var > 1e-24 { var.sqrt() } else { 1.0 };
    Array1::from_iter(y.iter().map(|v| (v - mean) / sd))
}

/// SE kernel k(a_i, b_j) = s^2 exp(-|a_i - b_j|^2 / (2 l^2)) between the rows of a and b.
pub fn se_kernel(a: ArrayView2<f64>, b: ArrayView2<f64>, h: &GpHyper) -> Array2<f64> {
    let inv2l2 = 0.5 / (h.length_scale * h.length_scale);
    // Squared distances first, then the exponentials in a loop of their own (vectorised).
    let (a, b) = (a.as_standard_layout(), b.as_standard_layout());
    let (ad, bd) = (
        a.as_slice().expect("standard layout"),
        b.as_slice().expect("standard layout"),
    );
    let d = a.ncols();
    let mut k = Array2::<f64>::zeros((a.nrows(), b.nrows()));
    for (krow, ai) in k
        .as_slice_mut()
        .expect("fresh arrays are contiguous")
        .chunks_exact_mut(b.nrows().max(1))
        .zip(ad.chunks_exact(d.max(1)))
    {
        for (kij, bj) in krow.iter_mut().zip(bd.chunks_exact(d.max(1))) {
            let mut r2 = 0.0;
            for (u, v) in ai.iter().zip(bj) {
                r2 += (u - v) * (u - v);
            }
            *kij = r2;
        }
    }
    scaled_exp(
        k.as_slice_mut().expect("fresh arrays are contiguous"),
        h.signal_var,
        inv2l2,
    );
    k
}

crate::multiversion! {
    /// v <- scale exp(-v c), element-wise.
    fn scaled_exp(v: &mut [f64], scale: f64, c: f64) {
        for x in v.iter_mut() {
            *x = scale * fast_exp(-*x * c);
        }
    }
}

/// An exact GP posterior conditioned on (x, y): the Cholesky factor of K + noise I and
/// alpha = (K + noise I)^-1 y, for the acquisition-based algorithms (RGPE, TAF), which need
/// the posterior mean and variance of f rather than a sample.
pub struct GpPosterior {
    x: Array2<f64>,
    hyper: GpHyper,
    chol: Array2<f64>,
    alpha: Array1<f64>,
}

impl GpPosterior {
    pub fn fit(x: ArrayView2<f64>, y: ArrayView1<f64>, hyper: GpHyper) -> Option<Self> {
        let mut k = se_kernel(x, x, &hyper);
        for i in 0..k.nrows() {
            k[[i, i]] += hyper.noise_var;
        }
        let (chol, _) = crate::linalg::cholesky_jittered(&k)?;
        let z = crate::linalg::solve_lower(chol.view(), y);
        let alpha = crate::linalg::solve_lower_t(chol.view(), z.view());
        Some(GpPosterior {
            x: x.to_owned(),
            hyper,
            chol,
            alpha,
        })
    }

    /// Mean and variance of the latent f at each row of `xs` (variances floored at 1e-12).
    pub fn predict(&self, xs: ArrayView2<f64>) -> (Array1<f64>, Array1<f64>) {
        let (mean, v) = self.mean_and_whitened(xs);
        // Each column's sum of squares, summed over rows in order (as a column dot product
        // sums), a row at a time so the loop runs along contiguous memory.
        let mut sumsq = Array1::<f64>::zeros(v.ncols());
        for row in v.rows() {
            sumsq.zip_mut_with(&row, |s, &x| *s += x * x);
        }
        let var = sumsq.mapv(|s| (self.hyper.signal_var - s).max(1e-12));
        (mean, var)
    }

    /// Mean and variance of the latent f at one point with their gradients in x (for
    /// acquisition on a box): with k_x = K(X, x) and v = (K + noise I)^-1 k_x,
    /// d mean = dk_x^T alpha and d var = -2 dk_x^T v, where
    /// dk_x[i] / dx_d = -k_x[i] (x_d - X_id) / l^2. A floored variance has zero gradient.
    pub fn predict_grad(&self, x: &[f64]) -> (f64, f64, Vec<f64>, Vec<f64>) {
        let h = &self.hyper;
        let n = self.x.nrows();
        let inv_l2 = 1.0 / (h.length_scale * h.length_scale);
        let kx = Array1::from_iter((0..n).map(|i| {
            let r2: f64 = self
                .x
                .row(i)
                .iter()
                .zip(x)
                .map(|(u, v)| (u - v) * (u - v))
                .sum();
            h.signal_var * libm::exp(-0.5 * r2 * inv_l2)
        }));
        let v = crate::linalg::cho_solve(self.chol.view(), kx.view());
        let mean = kx.dot(&self.alpha);
        let raw_var = h.signal_var - kx.dot(&v);
        let d = x.len();
        let (mut dm, mut dv) = (vec![0.0; d], vec![0.0; d]);
        for i in 0..n {
            for k in 0..d {
                let dk = -kx[i] * (x[k] - self.x[[i, k]]) * inv_l2;
                dm[k] += dk * self.alpha[i];
                dv[k] -= 2.0 * dk * v[i];
            }
        }
        if raw_var < 1e-12 {
            dv.fill(0.0);
        }
        (mean, raw_var.max(1e-12), dm, dv)
    }

    /// Joint posterior of the latent f at the rows of `xs`: mean and covariance, given the
    /// prior covariance `k_ss` among them.
    pub fn predict_joint(
        &self,
        xs: ArrayView2<f64>,
        k_ss: &Array2<f64>,
    ) -> (Array1<f64>, Array2<f64>) {
        let (mean, v) = self.mean_and_whitened(xs);
        (mean, k_ss - &crate::linalg::gram(v.view()))
    }

    /// The posterior mean at the rows of `xs` and V = L^-1 K(x, xs), whose column inner
    /// products are what conditioning removes from the prior covariance.
    fn mean_and_whitened(&self, xs: ArrayView2<f64>) -> (Array1<f64>, Array2<f64>) {
        let kx = se_kernel(self.x.view(), xs, &self.hyper);
        // kx^T alpha, each entry summed over the training points in order, a row of kx at a
        // time (contiguous; the strided column dot products summed in the same order).
        let mut mean = Array1::<f64>::zeros(kx.ncols());
        for (row, &a) in kx.rows().into_iter().zip(&self.alpha) {
            mean.scaled_add(a, &row);
        }
        let v = crate::linalg::solve_lower_mat(self.chol.view(), kx.view());
        (mean, v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::cholesky_jittered;

    #[test]
    fn pointwise_prediction_and_gradients_match_batch_and_differences() {
        let x = ndarray::array![[0.1, 0.2], [0.5, 0.9], [0.8, 0.3], [0.3, 0.6]];
        let y = ndarray::array![0.3, -0.5, 1.2, 0.1];
        let h = GpHyper {
            length_scale: 0.3,
            signal_var: 1.5,
            noise_var: 0.01,
        };
        let post = GpPosterior::fit(x.view(), y.view(), h).unwrap();
        let at = [0.42, 0.37];
        let (m, v, dm, dv) = post.predict_grad(&at);
        let (bm, bv) = post.predict(ndarray::array![[0.42, 0.37]].view());
        assert!((m - bm[0]).abs() < 1e-12 && (v - bv[0]).abs() < 1e-12);
        for k in 0..2 {
            let (mut a, mut b) = (at, at);
            a[k] += 1e-6;
            b[k] -= 1e-6;
            let (ma, va, _, _) = post.predict_grad(&a);
            let (mb, vb, _, _) = post.predict_grad(&b);
            assert!(((ma - mb) / 2e-6 - dm[k]).abs() < 1e-6, "mean {k}");
            assert!(((va - vb) / 2e-6 - dv[k]).abs() < 1e-6, "var {k}");
        }
    }
    use crate::rng::{Purpose, stream};
    use ndarray::Axis;
    use rand_distr::{Distribution, StandardNormal};

    #[test]
    fn gp_posterior_matches_the_explicit_formula() {
        let mut rng = stream(21, 0, 0, Purpose::AgentData);
        let x = Array2::from_shape_fn((12, 2), |_| rng.random::<f64>());
        let y = x.column(0).mapv(|v| (5.0 * v).sin()) + x.column(1);
        let xs = Array2::from_shape_fn((30, 2), |_| rng.random::<f64>());
        let h = GpHyper {
            length_scale: 0.3,
            signal_var: 1.7,
            noise_var: 0.01,
        };
        let post = GpPosterior::fit(x.view(), y.view(), h).unwrap();
        let (m1, v1) = post.predict(xs.view());
        let kdiag = Array1::from_elem(30, h.signal_var);
        let (m2, v2) = exact_posterior(
            &se_kernel(x.view(), x.view(), &h),
            &se_kernel(x.view(), xs.view(), &h),
            &kdiag,
            y.view(),
            h.noise_var,
        )
        .unwrap();
        for j in 0..30 {
            assert!((m1[j] - m2[j]).abs() < 1e-9, "{j}");
            assert!((v1[j] - v2[j].max(1e-12)).abs() < 1e-9, "{j}");
        }
        // At a training input with tiny noise the posterior pins f to y.
        let (m0, v0) = post.predict(x.slice(ndarray::s![0..1, ..]));
        assert!((m0[0] - y[0]).abs() < 0.02 && v0[0] < 0.02);
    }

    fn bounds() -> HyperBounds {
        HyperBounds {
            length_scale: (1e-3, 10.0),
            signal_var: (1e-2, 1e2),
            noise_var: (1e-6, 1.0),
        }
    }

    #[test]
    fn gradient_matches_finite_differences() {
        let mut rng = stream(1, 0, 0, Purpose::AgentData);
        let x = Array2::from_shape_fn((12, 2), |_| rng.random::<f64>());
        let y = Array1::from_iter((0..12).map(|i| (i as f64 * 0.7).sin()));
        let d2 = sq_dists(x.view());
        let h = GpHyper {
            length_scale: 0.4,
            signal_var: 1.3,
            noise_var: 0.05,
        };
        let (_, g) = log_marginal_likelihood(&d2, y.view(), &h, true).unwrap();
        let l = h.to_log();
        for i in 0..3 {
            let eps = 1e-6;
            let mut up = l;
            up[i] += eps;
            let mut dn = l;
            dn[i] -= eps;
            let fu = log_marginal_likelihood(&d2, y.view(), &GpHyper::from_log(&up), false)
                .unwrap()
                .0;
            let fd = log_marginal_likelihood(&d2, y.view(), &GpHyper::from_log(&dn), false)
                .unwrap()
                .0;
            let fdg = (fu - fd) / (2.0 * eps);
            assert!(
                (fdg - g[i]).abs() < 1e-5 * (1.0 + fdg.abs()),
                "param {i}: {fdg} vs {}",
                g[i]
            );
        }
    }

    #[test]
    fn fit_recovers_a_known_length_scale() {
        // Draw y from a GP with length scale 0.1 on 150 random inputs and fit.
        let true_ls = 0.1;
        for budget in [
            FitBudget {
                starts: 10,
                restarts: 10,
            },
            FitBudget {
                starts: 10,
                restarts: 3,
            },
        ] {
            let mut recovered = Vec::new();
            for rep in 0..3 {
                let mut rng = stream(21, rep, 0, Purpose::AgentData);
                let x =
                    Array1::from_iter((0..150).map(|_| rng.random::<f64>())).insert_axis(Axis(1));
                let d2 = sq_dists(x.view());
                let mut k = d2.mapv(|r2| (-r2 / (2.0 * true_ls * true_ls)).exp());
                for i in 0..150 {
                    k[[i, i]] += 1e-3;
                }
                let (l, _) = cholesky_jittered(&k).unwrap();
                let z = Array1::from_iter((0..150).map(|_| StandardNormal.sample(&mut rng)));
                let y = l.dot(&z);
                let h = fit_hyperparameters(x.view(), y.view(), &bounds(), budget, None, &mut rng)
                    .unwrap();
                recovered.push(h.length_scale);
            }
            for ls in &recovered {
                assert!(
                    (ls / true_ls - 1.0).abs() < 0.25,
                    "{budget:?}: recovered {recovered:?}"
                );
            }
        }
    }

    #[test]
    fn fit_stays_inside_the_bounds() {
        let x = ndarray::array![[0.1], [0.2], [0.9]];
        let y = ndarray::array![1.0, -1.0, 1.0];
        let mut rng = stream(2, 0, 0, Purpose::HyperFit);
        let b = bounds();
        let h = fit_hyperparameters(
            x.view(),
            y.view(),
            &b,
            FitBudget {
                starts: 5,
                restarts: 2,
            },
            None,
            &mut rng,
        )
        .unwrap();
        assert!(h.length_scale >= b.length_scale.0 && h.length_scale <= b.length_scale.1);
        assert!(h.noise_var >= b.noise_var.0 && h.noise_var <= b.noise_var.1);
    }

    #[test]
    fn exact_posterior_interpolates_noiseless_data() {
        let x = ndarray::array![[0.0], [0.5], [1.0]];
        let d2 = sq_dists(x.view());
        let k = d2.mapv(|r| (-r / 0.08).exp());
        let y = ndarray::array![0.3, -0.2, 0.9];
        let (mu, var) = exact_posterior(&k, &k, &Array1::ones(3), y.view(), 1e-10).unwrap();
        for i in 0..3 {
            assert!((mu[i] - y[i]).abs() < 1e-6);
            assert!(var[i].abs() < 1e-6);
        }
    }
}
