//! Exact GP regression with a stationary kernel (SE or Matern, one length scale or one per
//! axis): log marginal likelihood with its gradient, optionally plus a log prior on the
//! hyperparameters (MAP), multi-start maximisation over (length scales, signal variance,
//! noise variance), and the closed-form posterior that acquisition-based algorithms use and
//! that checks the random-feature posterior.

pub use super::kernel::Kernel;
use super::kernel::{for_axis, half_r2, half_r2_all};
use crate::math::fastmath::fast_exp;
pub use crate::math::linalg::sq_dists;
use crate::math::linalg::sq_dists_lower;
use crate::math::optim::{LbfgsOptions, lbfgs};
use ndarray::{Array1, Array2, ArrayView1, ArrayView2};
use rand::Rng;

#[derive(Clone, Debug, PartialEq)]
pub struct GpHyper {
    pub kernel: Kernel,
    /// One length scale for every axis, or one per axis (ARD).
    pub length_scales: Vec<f64>,
    pub signal_var: f64,
    pub noise_var: f64,
    pub mean: MeanFn,
}

/// The GP's prior mean of the (standardised) targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MeanFn {
    /// Zero: far from the data a sample reverts to the data's average (the papers').
    Zero,
    /// A constant c fitted with the kernel, as BoTorch's and GPyTorch's ConstantMean. It is
    /// profiled out rather than searched: at given kernel hyperparameters the likelihood's
    /// maximiser is the generalised least-squares c = 1'K^-1 y / 1'K^-1 1, recomputed on
    /// every use from the current data. When most observations are poor and a few good (a
    /// bowl seen from its rim), c sits below the data's average, and a Thompson sample no
    /// longer finds its maximum wherever nothing has been observed yet.
    Constant,
}

impl MeanFn {
    pub const NAMES: &'static str = "\"zero\", \"constant\"";

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "zero" => Some(MeanFn::Zero),
            "constant" => Some(MeanFn::Constant),
            _ => None,
        }
    }
}

/// The profiled constant mean given the Cholesky factor `l` of K + s_n^2 I and the
/// targets: c = 1'K^-1 y / 1'K^-1 1, and K^-1 1 (alpha moves by -c K^-1 1). Zero and no
/// correction for the zero mean.
pub fn profiled_constant(
    mean: MeanFn,
    l: ArrayView2<f64>,
    y: ArrayView1<f64>,
) -> Option<(f64, Array1<f64>)> {
    if mean == MeanFn::Zero {
        return None;
    }
    let kinv1 = crate::math::linalg::cho_solve(l, Array1::ones(y.len()).view());
    let c = y.dot(&kinv1) / kinv1.sum();
    Some((c, kinv1))
}

/// The profiled constant mean of targets y at inputs x (None for the zero mean, or when
/// K + s_n^2 I is not positive definite even with jitter).
pub fn constant_mean(x: ArrayView2<f64>, y: ArrayView1<f64>, h: &GpHyper) -> Option<f64> {
    if h.mean == MeanFn::Zero {
        return None;
    }
    let mut k = kernel_matrix(x, x, h);
    for i in 0..k.nrows() {
        k[[i, i]] += h.noise_var;
    }
    let (l, _) = crate::math::linalg::cholesky_jittered(&k)?;
    profiled_constant(h.mean, l.view(), y).map(|(c, _)| c)
}

impl GpHyper {
    pub fn isotropic(kernel: Kernel, length_scale: f64, signal_var: f64, noise_var: f64) -> Self {
        GpHyper {
            kernel,
            length_scales: vec![length_scale],
            signal_var,
            noise_var,
            mean: MeanFn::Zero,
        }
    }

    pub fn with_mean(mut self, mean: MeanFn) -> Self {
        self.mean = mean;
        self
    }

    /// 1 / (2 l^2) per length scale: h = r^2 / 2 = sum_d (x_d - x'_d)^2 inv2l2_d.
    pub fn inv2l2(&self) -> Vec<f64> {
        self.length_scales.iter().map(|l| 0.5 / (l * l)).collect()
    }

    /// The geometric mean of the length scales (the length scale itself when isotropic),
    /// for reports.
    pub fn mean_length_scale(&self) -> f64 {
        let n = self.length_scales.len() as f64;
        libm::exp(
            self.length_scales
                .iter()
                .map(|l| libm::log(*l))
                .sum::<f64>()
                / n,
        )
    }

    /// k(a, b).
    pub fn k(&self, a: &[f64], b: &[f64]) -> f64 {
        self.signal_var * self.kernel.corr(half_r2(a, b, &self.inv2l2()))
    }

    /// (ln l_1, .., ln l_p, ln signal_var, ln noise_var): the fit's coordinates.
    pub fn to_log(&self) -> Vec<f64> {
        let mut l: Vec<f64> = self.length_scales.iter().map(|v| libm::log(*v)).collect();
        l.push(libm::log(self.signal_var));
        l.push(libm::log(self.noise_var));
        l
    }

    pub fn from_log(kernel: Kernel, mean: MeanFn, l: &[f64]) -> Self {
        let p = l.len() - 2;
        GpHyper {
            kernel,
            length_scales: l[..p].iter().map(|v| libm::exp(*v)).collect(),
            signal_var: libm::exp(l[p]),
            noise_var: libm::exp(l[p + 1]),
            mean,
        }
    }
}

/// Box for the fit, in natural units. The search runs in log space. The noise variance's
/// lower end is its floor: however well a few points are interpolated, the fit never claims
/// less noise than that.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HyperBounds {
    pub length_scale: (f64, f64),
    pub signal_var: (f64, f64),
    pub noise_var: (f64, f64),
}

impl HyperBounds {
    /// The log box of p length scales, the signal and the noise variance.
    pub fn log_box(&self, p: usize) -> Vec<(f64, f64)> {
        let ln = |(a, b): (f64, f64)| (libm::log(a), libm::log(b));
        let mut b = vec![ln(self.length_scale); p];
        b.push(ln(self.signal_var));
        b.push(ln(self.noise_var));
        b
    }

    pub fn clamp(&self, h: &GpHyper) -> GpHyper {
        GpHyper {
            kernel: h.kernel,
            length_scales: h
                .length_scales
                .iter()
                .map(|l| l.clamp(self.length_scale.0, self.length_scale.1))
                .collect(),
            signal_var: h.signal_var.clamp(self.signal_var.0, self.signal_var.1),
            noise_var: h.noise_var.clamp(self.noise_var.0, self.noise_var.1),
            mean: h.mean,
        }
    }
}

/// A prior over the hyperparameters; the fit then maximises the log marginal likelihood
/// plus the log prior density (MAP), as BoTorch and GPyTorch do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HyperPrior {
    /// Maximum likelihood within the bounds (the authors' GPy fit).
    None,
    /// Hvarfner, Hellsten, Nardi (ICML 2024), BoTorch's default since 0.12: every length
    /// scale LogNormal(sqrt 2 + ln(D) / 2, sqrt 3), so the expected length scale grows like
    /// sqrt(D) with the dimension D of the (unit-cube) input and the model does not take
    /// high-dimensional data for noise; the noise variance LogNormal(-4, 1); the signal
    /// variance Gamma(2, 0.15) (BoTorch's outputscale prior), all on standardised outputs.
    DimensionScaled,
}

impl HyperPrior {
    pub const NAMES: &'static str = "\"none\", \"dimension-scaled\"";

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "none" => Some(HyperPrior::None),
            "dimension-scaled" => Some(HyperPrior::DimensionScaled),
            _ => None,
        }
    }

    /// The log prior density at the fit's coordinates `l` (ln l_1..ln l_p, ln s^2, ln s_n^2)
    /// for inputs of dimension `dim`, and its gradient in those coordinates. Densities are
    /// of the natural parameters (as GPyTorch's priors), not of their logarithms.
    pub fn log_density(self, l: &[f64], dim: usize) -> (f64, Vec<f64>) {
        let mut grad = vec![0.0; l.len()];
        if self == HyperPrior::None {
            return (0.0, grad);
        }
        let p = l.len() - 2;
        let mu = std::f64::consts::SQRT_2 + 0.5 * libm::log(dim.max(1) as f64);
        let sigma = 3f64.sqrt();
        let mut total = 0.0;
        for (u, g) in l[..p].iter().zip(&mut grad[..p]) {
            let (v, d) = log_normal(*u, mu, sigma);
            total += v;
            *g = d;
        }
        let (v, d) = gamma(l[p], 2.0, 0.15);
        total += v;
        grad[p] = d;
        let (v, d) = log_normal(l[p + 1], -4.0, 1.0);
        total += v;
        grad[p + 1] = d;
        (total, grad)
    }
}

/// ln of the LogNormal(mu, sigma) density at x = e^u, and its derivative in u.
pub fn log_normal(u: f64, mu: f64, sigma: f64) -> (f64, f64) {
    let z = (u - mu) / sigma;
    let v = -u - libm::log(sigma * (2.0 * std::f64::consts::PI).sqrt()) - 0.5 * z * z;
    (v, -1.0 - z / sigma)
}

/// ln of the Gamma(shape a, rate b) density at x = e^u, and its derivative in u.
pub fn gamma(u: f64, a: f64, b: f64) -> (f64, f64) {
    let x = libm::exp(u);
    let v = a * libm::log(b) - libm::lgamma(a) + (a - 1.0) * u - b * x;
    (v, (a - 1.0) - b * x)
}

/// One length scale for all axes or one per axis (automatic relevance determination).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Ard {
    Off,
    On,
    /// One per axis once there are at least this many observations per axis, one before:
    /// D + 2 hyperparameters fitted to a handful of points mistake chance for structure
    /// (docs/results.md: in 5 and 6 dimensions after 35 evaluations ARD loses to one length
    /// scale on 6 of 8 problems, by 1.3-12x in regret, and ties on 2; in 2 and 3 it wins).
    PerAxisFrom(usize),
    /// At every fit, both (once there are more than D + 2 observations); one per axis is
    /// kept where its leave-one-out predictive density (`loo_log_predictive`: how well each
    /// predicts points it was not fitted to) beats one length scale's by more than `margin`
    /// standard errors of the difference, so D + 2 hyperparameters win only where the axes
    /// really differ (Rasmussen and Williams 2006, sec. 5.4.2; Vehtari et al. 2017).
    Loo {
        margin: f64,
    },
}

impl Ard {
    /// The observations per axis `auto` waits for.
    pub const AUTO: Ard = Ard::PerAxisFrom(10);

    /// How many standard errors of the summed pointwise difference one length scale per
    /// axis must gain by in `Loo` unless told (docs/results.md "One length scale or one per
    /// axis": at 0, chance gains on 5-D problems took it and lost; at 2, the default until
    /// 2026-12-07, it still cost 1.2-1.7x on 4-6-D federations of 35 evaluations, which 4
    /// recovers while keeping the gains in 20 and 50 dimensions; at 8 those are lost).
    pub const LOO_MARGIN: f64 = 4.0;

    /// `Loo` at its default margin.
    pub const LOO: Ard = Ard::Loo {
        margin: Ard::LOO_MARGIN,
    };

    /// Whether a fit to n observations of a D-dimensional input uses one length scale per
    /// axis without choosing (`Loo` chooses in `fit_hyperparameters`; where one shape must be
    /// fixed in advance, as FedGP's federated fit, it follows `auto`).
    pub fn applies(self, n: usize, dim: usize) -> bool {
        match self {
            Ard::Off => false,
            Ard::On => true,
            Ard::PerAxisFrom(k) => n >= k * dim,
            Ard::Loo { .. } => Ard::AUTO.applies(n, dim),
        }
    }
}

/// What a fit chooses among and how: the kernel family, one length scale or one per axis,
/// the box, the prior and the mean function.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HyperModel {
    pub kernel: Kernel,
    pub ard: Ard,
    pub bounds: HyperBounds,
    pub prior: HyperPrior,
    pub mean: MeanFn,
}

/// The training inputs' squared differences, grouped as the length scales are: all axes
/// summed (one length scale), or one matrix per axis (ARD).
pub struct Distances {
    n: usize,
    /// Per group, the lower triangle with its diagonal, row by row (`tri_row`): what the
    /// kernel's h sums over groups, one vectorised pass per group.
    groups: Vec<Vec<f64>>,
    /// The same numbers pair by pair, each pair's groups side by side: what the gradient's
    /// length-scale terms read, one vectorised pass over the groups per pair.
    pairs: Vec<f64>,
}

/// Where row i of a lower triangle stored row by row starts.
fn tri_row(i: usize) -> usize {
    i * (i + 1) / 2
}

impl Distances {
    pub fn new(x: ArrayView2<f64>, ard: bool) -> Self {
        let groups: Vec<Vec<f64>> = if ard {
            (0..x.ncols())
                .map(|d| sq_dists_lower(x.slice(ndarray::s![.., d..d + 1])))
                .collect()
        } else {
            vec![sq_dists_lower(x)]
        };
        let n = x.nrows();
        let pairs = (0..tri_row(n))
            .flat_map(|t| groups.iter().map(move |g| g[t]))
            .collect();
        Distances { n, groups, pairs }
    }

    /// How many length scales they serve.
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// h = r^2 / 2 for every pair, row-major n x n (lower triangle and diagonal filled).
    fn half_r2(&self, inv2l2: &[f64]) -> Vec<f64> {
        let n = self.n;
        let mut h = vec![0.0; n * n];
        for (g, (ds, &c)) in self.groups.iter().zip(inv2l2).enumerate() {
            for i in 0..n {
                let row = i * n..i * n + i + 1;
                for (hv, &d) in h[row].iter_mut().zip(&ds[tri_row(i)..tri_row(i + 1)]) {
                    // The first group is assigned, not added to 0: the isotropic h is then
                    // d2 c itself, as it always was.
                    *hv = if g == 0 { d * c } else { *hv + d * c };
                }
            }
        }
        h
    }
}

/// The likelihood's factorisation at one set of hyperparameters: what both its value and its
/// gradient need.
struct Factored {
    /// The noise-free kernel matrix.
    kf: Array2<f64>,
    /// -dk/dh (what a length scale's derivative needs), where it is not kf itself (SE).
    dk: Option<Array2<f64>>,
    l: Array2<f64>,
    alpha: Array1<f64>,
    lml: f64,
}

impl Factored {
    /// None if K is not positive definite.
    fn new(dist: &Distances, y: ArrayView1<f64>, h: &GpHyper) -> Option<Self> {
        let n = y.len();
        // K is symmetric: one kernel value per pair, over the lower triangle row by row (a
        // loop that vectorises), then mirrored.
        let hs = dist.half_r2(&h.inv2l2());
        let mut kf = Array2::<f64>::zeros((n, n));
        let ks = kf.as_slice_mut().expect("fresh arrays are contiguous");
        kernel_lower(ks, &hs, n, h.signal_var, h.kernel, false);
        mirror(&mut kf);
        let dk = (h.kernel != Kernel::Se).then(|| {
            let mut dk = Array2::<f64>::zeros((n, n));
            let ds = dk.as_slice_mut().expect("fresh arrays are contiguous");
            kernel_lower(ds, &hs, n, h.signal_var, h.kernel, true);
            mirror(&mut dk);
            dk
        });
        let mut k = kf.clone();
        for i in 0..n {
            k[[i, i]] += h.noise_var;
        }
        let l = crate::math::linalg::cholesky(&k)?;
        let mut alpha = crate::math::linalg::cho_solve(l.view(), y);
        // With a profiled constant the likelihood is that of y - c; its gradient in the
        // kernel's hyperparameters is the formula below with alpha = K^-1 (y - c), as the
        // likelihood is stationary in c there.
        // (y - c)' alpha; the zero mean's y is used as it is, without a copy.
        let data_fit = match profiled_constant(h.mean, l.view(), y) {
            Some((c, kinv1)) => {
                alpha.scaled_add(-c, &kinv1);
                y.mapv(|v| v - c).dot(&alpha)
            }
            None => y.dot(&alpha),
        };
        let log_det: f64 = (0..n).map(|i| libm::log(l[[i, i]])).sum::<f64>() * 2.0;
        let lml = -0.5 * data_fit
            - 0.5 * log_det
            - 0.5 * n as f64 * libm::log(2.0 * std::f64::consts::PI);
        Some(Factored {
            kf,
            dk,
            l,
            alpha,
            lml,
        })
    }

    /// Gradient with respect to (ln l_1, .., ln l_p, ln signal_var, ln noise_var):
    /// 1/2 tr((alpha alpha^T - K^-1) dK/dtheta)  (Rasmussen & Williams 5.9), with
    /// dk/d ln l_g = -dk/dh 2 h_g.
    fn gradient(&self, dist: &Distances, h: &GpHyper) -> Vec<f64> {
        let n = self.alpha.len();
        let inv = h.inv2l2();
        let (alpha, kf) = (&self.alpha, &self.kf);
        let dk = self.dk.as_ref().unwrap_or(kf);
        let kinv = crate::math::linalg::cho_inverse(self.l.view());
        // w_ij dk_ij for every (i, j), then each group's sum over them.
        let mut wdk = vec![0.0; n * n];
        let (mut g_sv, mut g_nv) = (0.0, 0.0);
        for i in 0..n {
            for j in 0..n {
                let w = alpha[i] * alpha[j] - kinv[[i, j]];
                wdk[i * n + j] = w * dk[[i, j]];
                g_sv += w * kf[[i, j]];
            }
            g_nv += (alpha[i] * alpha[i] - kinv[[i, i]]) * h.noise_var;
        }
        let mut g_ls = vec![0.0; dist.len()];
        length_scale_terms(&mut g_ls, &wdk, &dist.pairs, &inv, n);
        let mut g: Vec<f64> = g_ls.into_iter().map(|v| 0.5 * v).collect();
        g.push(0.5 * g_sv);
        g.push(0.5 * g_nv);
        g
    }
}

crate::multiversion! {
    /// Per group g, the sum over every (i, j) of wdk_ij d^g_ij 2 c_g. The pairs are visited in
    /// the order of the full matrix, both (i, j) and (j, i), so each group's sum adds the same
    /// numbers in the same order as a plain double loop (bit for bit); the groups of one pair
    /// are independent sums, which is what vectorises.
    fn length_scale_terms(g_ls: &mut [f64], wdk: &[f64], pairs: &[f64], inv2l2: &[f64], n: usize) {
        let p = inv2l2.len();
        for i in 0..n {
            for j in 0..n {
                let t = if j <= i { tri_row(i) + j } else { tri_row(j) + i };
                let m = wdk[i * n + j];
                for ((gv, &d), &c) in g_ls.iter_mut().zip(&pairs[t * p..t * p + p]).zip(inv2l2) {
                    *gv += m * d * 2.0 * c;
                }
            }
        }
    }
}

fn mirror(m: &mut Array2<f64>) {
    for i in 0..m.nrows() {
        for j in 0..i {
            m[[j, i]] = m[[i, j]];
        }
    }
}

crate::multiversion! {
    /// The lower triangle of signal_var c(h) (or, with `derivative`, of -signal_var dc/dh),
    /// row by row (n x n, row-major).
    fn kernel_lower(ks: &mut [f64], hs: &[f64], n: usize, signal_var: f64, kernel: Kernel, derivative: bool) {
        for i in 0..n {
            let row = i * n..i * n + i + 1;
            let (out, hrow) = (&mut ks[row.clone()], &hs[row]);
            // One loop per family, so each vectorises.
            match (kernel, derivative) {
                (Kernel::Se, _) => {
                    for (k, &h) in out.iter_mut().zip(hrow) {
                        *k = signal_var * fast_exp(-h);
                    }
                }
                (other, false) => {
                    for (k, &h) in out.iter_mut().zip(hrow) {
                        *k = signal_var * other.corr_with(h, fast_exp);
                    }
                }
                (other, true) => {
                    for (k, &h) in out.iter_mut().zip(hrow) {
                        *k = signal_var * other.neg_dcorr_with(h, fast_exp);
                    }
                }
            }
        }
    }
}

/// log p(y | X, h) and, if asked, its gradient with respect to the fit's coordinates
/// (ln l_1, .., ln l_p, ln signal_var, ln noise_var). None if K is not positive definite.
pub fn log_marginal_likelihood(
    dist: &Distances,
    y: ArrayView1<f64>,
    h: &GpHyper,
    with_grad: bool,
) -> Option<(f64, Vec<f64>)> {
    let f = Factored::new(dist, y, h)?;
    let g = if with_grad {
        f.gradient(dist, h)
    } else {
        vec![0.0; dist.len() + 2]
    };
    Some((f.lml, g))
}

/// The negative log posterior (likelihood times prior) in the fit's coordinates u
/// (ln theta = lo + (hi - lo) sigmoid(u)), for L-BFGS. It keeps the last factorisation: a
/// line-search trial asks for the value, and only an accepted one for the gradient, which
/// then reuses the factor (a third of the trials are rejected, and the gradient's K^-1 is
/// most of an evaluation's work).
struct NegLikelihood<'a> {
    dist: &'a Distances,
    y: ArrayView1<'a, f64>,
    kernel: Kernel,
    prior: HyperPrior,
    dim: usize,
    mean: MeanFn,
    lb: Vec<(f64, f64)>,
    last: Option<(Vec<f64>, Option<Factored>)>,
}

impl NegLikelihood<'_> {
    fn theta(&self, u: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let mut t = vec![0.0; u.len()];
        let mut dt = vec![0.0; u.len()];
        for i in 0..u.len() {
            let s = sigmoid(u[i]);
            t[i] = self.lb[i].0 + (self.lb[i].1 - self.lb[i].0) * s;
            dt[i] = (self.lb[i].1 - self.lb[i].0) * s * (1.0 - s);
        }
        (t, dt)
    }

    fn hyper(&self, t: &[f64]) -> GpHyper {
        GpHyper::from_log(self.kernel, self.mean, t)
    }

    fn factored(&mut self, u: &[f64]) -> Option<&Factored> {
        if self.last.as_ref().is_none_or(|(lu, _)| lu.as_slice() != u) {
            let h = self.hyper(&self.theta(u).0);
            self.last = Some((u.to_vec(), Factored::new(self.dist, self.y, &h)));
        }
        self.last.as_ref().and_then(|(_, f)| f.as_ref())
    }

    /// The log posterior up to a constant at u, from a factorisation at u.
    fn log_post(&self, lml: f64, t: &[f64]) -> f64 {
        lml + self.prior.log_density(t, self.dim).0
    }
}

impl crate::math::optim::Objective for NegLikelihood<'_> {
    fn eval(&mut self, u: &[f64]) -> Option<(f64, Vec<f64>)> {
        let v = self.value(u)?;
        Some((v, self.gradient(u)?))
    }

    fn value(&mut self, u: &[f64]) -> Option<f64> {
        let lml = self.factored(u)?.lml;
        Some(-self.log_post(lml, &self.theta(u).0))
    }

    fn gradient(&mut self, u: &[f64]) -> Option<Vec<f64>> {
        let (t, dt) = self.theta(u);
        let h = self.hyper(&t);
        let dist = self.dist;
        let mut g = self.factored(u)?.gradient(dist, &h);
        if self.prior != HyperPrior::None {
            for (gi, pi) in g.iter_mut().zip(self.prior.log_density(&t, self.dim).1) {
                *gi += pi;
            }
        }
        Some((0..u.len()).map(|i| -g[i] * dt[i]).collect())
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

/// The sum over observations of log p(y_i | y_-i) under `h`, each left out in turn
/// (Rasmussen and Williams 2006, eqs. 5.10-5.12: mean y_i - [K^-1 y]_i / [K^-1]_ii, variance
/// 1 / [K^-1]_ii), from one factorisation. A profiled constant mean is held at its value on
/// all the data. None if K is not positive definite.
pub fn loo_log_predictive(dist: &Distances, y: ArrayView1<f64>, h: &GpHyper) -> Option<f64> {
    Some(loo_pointwise(dist, y, h)?.iter().sum())
}

/// log p(y_i | y_-i) for each i (`loo_log_predictive`'s terms).
fn loo_pointwise(dist: &Distances, y: ArrayView1<f64>, h: &GpHyper) -> Option<Vec<f64>> {
    let f = Factored::new(dist, y, h)?;
    let kinv = crate::math::linalg::cho_inverse(f.l.view());
    let ln2pi = libm::log(2.0 * std::f64::consts::PI);
    Some(
        (0..y.len())
            .map(|i| {
                let d = kinv[[i, i]];
                let resid = f.alpha[i] / d;
                0.5 * libm::log(d) - 0.5 * resid * resid * d - 0.5 * ln2pi
            })
            .collect(),
    )
}

/// Whether the terms `b` predict better than `a` by more than `z` standard errors of the
/// summed difference, sqrt(n var(b_i - a_i)) (Vehtari, Gelman and Gabry 2017): a gain the
/// observations agree on, not one a few of them carry by chance.
fn clearly_better(a: &[f64], b: &[f64], z: f64) -> bool {
    let n = a.len() as f64;
    let d: Vec<f64> = a.iter().zip(b).map(|(a, b)| b - a).collect();
    let mean = d.iter().sum::<f64>() / n;
    let var = d.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0);
    n * mean > z * (n * var).sqrt()
}

/// Maximises the log marginal likelihood (plus the log prior) over the box, starting as
/// `budget` says, plus from `warm` (the previous optimum) when given. Each coordinate is
/// searched as ln theta = lo + (hi - lo) sigmoid(u), which keeps every iterate inside the box.
/// With `Ard::Loo` it fits one length scale and one per axis and keeps one per axis only
/// where its leave-one-out predictive density is clearly higher.
pub fn fit_hyperparameters<R: Rng + ?Sized>(
    x: ArrayView2<f64>,
    y: ArrayView1<f64>,
    model: &HyperModel,
    budget: FitBudget,
    warm: Option<&GpHyper>,
    rng: &mut R,
) -> Option<GpHyper> {
    let (n, dim) = (x.nrows(), x.ncols());
    let margin = match model.ard {
        Ard::Loo { margin } if dim >= 2 && n > dim + 2 => margin,
        Ard::Loo { .. } => return fit_shape(x, y, model, false, budget, warm, rng),
        _ => {
            let per_axis = model.ard.applies(n, dim);
            return fit_shape(x, y, model, per_axis, budget, warm, rng);
        }
    };
    let iso = fit_shape(x, y, model, false, budget, warm, rng);
    // The per-axis fit starts from the previous optimum (of either shape, as the last fit
    // chose), or at the first fit from this isotropic one, besides its random starts.
    let start = warm.or(iso.as_ref());
    let ard = fit_shape(x, y, model, true, budget, start, rng);
    let terms = |h: &Option<GpHyper>, per_axis: bool| {
        h.as_ref()
            .and_then(|h| loo_pointwise(&Distances::new(x, per_axis), y, h))
    };
    match (terms(&iso, false), terms(&ard, true)) {
        (Some(a), Some(b)) if clearly_better(&a, &b, margin) => ard,
        (None, Some(_)) => ard,
        _ => iso,
    }
}

/// `fit_hyperparameters` for one shape: one length scale or one per axis.
fn fit_shape<R: Rng + ?Sized>(
    x: ArrayView2<f64>,
    y: ArrayView1<f64>,
    model: &HyperModel,
    per_axis: bool,
    budget: FitBudget,
    warm: Option<&GpHyper>,
    rng: &mut R,
) -> Option<GpHyper> {
    let dist = Distances::new(x, per_axis);
    let p = dist.len();
    let lb = model.bounds.log_box(p);
    let mut objective = NegLikelihood {
        dist: &dist,
        y,
        kernel: model.kernel,
        prior: model.prior,
        dim: x.ncols(),
        mean: model.mean,
        lb: lb.clone(),
        last: None,
    };
    let mut initial: Vec<Vec<f64>> = Vec::with_capacity(budget.restarts + 1);
    if let Some(w) = warm {
        let mut w = model.bounds.clamp(w);
        if w.length_scales.len() != p {
            // A warm start of the other shape (an isotropic first guess for an ARD fit).
            w.length_scales = vec![w.mean_length_scale(); p];
        }
        let l = w.to_log();
        initial.push(
            (0..p + 2)
                .map(|i| {
                    // A fixed coordinate (lo = hi: a known noise) has no position to keep.
                    let width = lb[i].1 - lb[i].0;
                    let q = if width > 0.0 {
                        ((l[i] - lb[i].0) / width).clamp(1e-6, 1.0 - 1e-6)
                    } else {
                        0.5
                    };
                    logit(q)
                })
                .collect(),
        );
    }
    let mut candidates: Vec<(f64, Vec<f64>)> = (0..budget.starts)
        .map(|_| {
            let u: Vec<f64> = (0..p + 2)
                .map(|_| logit(rng.random::<f64>().clamp(1e-6, 1.0 - 1e-6)))
                .collect();
            let t = objective.theta(&u).0;
            let score = Factored::new(&dist, y, &objective.hyper(&t))
                .map_or(f64::NEG_INFINITY, |f| objective.log_post(f.lml, &t));
            (score, u)
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
    best.map(|(_, u)| objective.hyper(&objective.theta(&u).0))
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
    let l = crate::math::linalg::cholesky(&k)?;
    let alpha = crate::math::linalg::cho_solve(l.view(), y);
    let mean = k_cross.t().dot(&alpha);
    let mut var = k_diag.clone();
    for j in 0..k_cross.ncols() {
        let kc = k_cross.column(j);
        let v = crate::math::linalg::cho_solve(l.view(), kc);
        var[j] -= kc.dot(&v);
    }
    Some((mean, var))
}

/// Standardises y to mean 0 and standard deviation 1 (unit scale when y is constant), so
/// that one set of hyperparameter bounds serves objectives of any scale.
pub fn standardize(y: &[f64]) -> Array1<f64> {
    let (mean, sd) = standardization(y);
    Array1::from_iter(y.iter().map(|v| (v - mean) / sd))
}

/// The mean and standard deviation `standardize` uses: y = mean + sd * standardised.
pub fn standardization(y: &[f64]) -> (f64, f64) {
    let n = y.len() as f64;
    let mean = y.iter().sum::<f64>() / n;
    let var = y.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    (mean, if var > 1e-24 { var.sqrt() } else { 1.0 })
}

/// The kernel matrix k(a_i, b_j) between the rows of a and b.
pub fn kernel_matrix(a: ArrayView2<f64>, b: ArrayView2<f64>, h: &GpHyper) -> Array2<f64> {
    let inv = h.inv2l2();
    // h = r^2 / 2 first, then the kernel in a loop of its own (vectorised).
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
            *kij = half_r2(ai, bj, &inv);
        }
    }
    scaled_corr(
        k.as_slice_mut().expect("fresh arrays are contiguous"),
        h.signal_var,
        h.kernel,
    );
    k
}

crate::multiversion! {
    /// v <- scale c(v), element-wise.
    fn scaled_corr(v: &mut [f64], scale: f64, kernel: Kernel) {
        match kernel {
            Kernel::Se => {
                for x in v.iter_mut() {
                    *x = scale * fast_exp(-*x);
                }
            }
            other => {
                for x in v.iter_mut() {
                    *x = scale * other.corr_with(*x, fast_exp);
                }
            }
        }
    }
}

/// Points whose posterior covariance with others is wanted (`GpPosterior::cross`).
pub struct CrossCov {
    z: Array2<f64>,
    w: Array2<f64>,
}

/// An exact GP posterior conditioned on (x, y): the Cholesky factor of K + noise I and
/// alpha = (K + noise I)^-1 y, for the acquisition-based algorithms (RGPE, TAF), which need
/// the posterior mean and variance of f rather than a sample.
pub struct GpPosterior {
    x: Array2<f64>,
    hyper: GpHyper,
    /// hyper.inv2l2(), kept: every pointwise prediction needs it.
    inv: Vec<f64>,
    /// x by column, for `half_r2_all`.
    xt: Vec<f64>,
    chol: Array2<f64>,
    alpha: Array1<f64>,
    /// The profiled constant mean (zero for the zero mean), added to every prediction.
    constant: f64,
}

impl GpPosterior {
    /// The profiled constant mean (0 for the zero mean).
    pub fn constant(&self) -> f64 {
        self.constant
    }

    pub fn fit(x: ArrayView2<f64>, y: ArrayView1<f64>, hyper: &GpHyper) -> Option<Self> {
        let mut k = kernel_matrix(x, x, hyper);
        for i in 0..k.nrows() {
            k[[i, i]] += hyper.noise_var;
        }
        let (chol, _) = crate::math::linalg::cholesky_jittered(&k)?;
        let z = crate::math::linalg::solve_lower(chol.view(), y);
        let mut alpha = crate::math::linalg::solve_lower_t(chol.view(), z.view());
        let mut constant = 0.0;
        if let Some((c, kinv1)) = profiled_constant(hyper.mean, chol.view(), y) {
            alpha.scaled_add(-c, &kinv1);
            constant = c;
        }
        Some(GpPosterior {
            x: x.as_standard_layout().into_owned(),
            hyper: hyper.clone(),
            inv: hyper.inv2l2(),
            xt: x.t().iter().copied().collect(),
            chol,
            alpha,
            constant,
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
    /// dk_x[i] / dx_d = -k_x[i] (x_d - X_id) / l^2 for the SE kernel. A floored variance has
    /// zero gradient.
    pub fn predict_grad(&self, x: &[f64]) -> (f64, f64, Vec<f64>, Vec<f64>) {
        let h = &self.hyper;
        let n = self.x.nrows();
        let inv = &self.inv;
        // half_r2(X_i, x) = half_r2(x, X_i): each term is a square.
        let mut hs = vec![0.0; n];
        half_r2_all(&mut hs, x, &self.xt, inv);
        let kx = Array1::from_iter(hs.iter().map(|&hi| h.signal_var * h.kernel.corr(hi)));
        let v = crate::math::linalg::cho_solve(self.chol.view(), kx.view());
        let mean = self.constant + kx.dot(&self.alpha);
        let raw_var = h.signal_var - kx.dot(&v);
        let d = x.len();
        let (mut dm, mut dv) = (vec![0.0; d], vec![0.0; d]);
        let c: Vec<f64> = (0..d).map(|k| for_axis(inv, k)).collect();
        for (i, xi) in self.x.rows().into_iter().enumerate() {
            let xi = xi.to_slice().expect("standard layout");
            let slope = h.signal_var * h.kernel.neg_dcorr(hs[i]);
            let (ai, vi) = (self.alpha[i], v[i]);
            for k in 0..d {
                // dk/dx_k = dk/dh dh/dx_k = -slope (x_k - X_ik) / l_k^2.
                let dk = -slope * (x[k] - xi[k]) * 2.0 * c[k];
                dm[k] += dk * ai;
                dv[k] -= 2.0 * dk * vi;
            }
        }
        if raw_var < 1e-12 {
            dv.fill(0.0);
        }
        (mean, raw_var.max(1e-12), dm, dv)
    }

    pub fn hyper(&self) -> &GpHyper {
        &self.hyper
    }

    /// What the posterior covariance between any point and the rows of `z` needs:
    /// W = (K + noise I)^-1 K(X, z).
    pub fn cross(&self, z: ArrayView2<f64>) -> CrossCov {
        let kz = kernel_matrix(self.x.view(), z, &self.hyper);
        let mut w = Array2::zeros(kz.dim());
        for (j, col) in kz.columns().into_iter().enumerate() {
            w.column_mut(j)
                .assign(&crate::math::linalg::cho_solve(self.chol.view(), col));
        }
        CrossCov {
            z: z.as_standard_layout().into_owned(),
            w,
        }
    }

    /// The posterior covariances c_j = k(x, z_j) - k_x^T W_j between x and every z_j, and
    /// their gradients in x (dc[j][d]).
    pub fn cross_at(&self, cc: &CrossCov, x: &[f64]) -> (Vec<f64>, Vec<Vec<f64>>) {
        let h = &self.hyper;
        let inv = &self.inv;
        let d = x.len();
        let n = self.x.nrows();
        let m = cc.z.nrows();
        let mut c = vec![0.0; m];
        let mut dc = vec![vec![0.0; d]; m];
        // k(x, p) and its gradient in x for a point p.
        let kgrad = |p: &[f64], out: &mut [f64]| -> f64 {
            let hh = half_r2(p, x, inv);
            let slope = h.signal_var * h.kernel.neg_dcorr(hh);
            for k in 0..d {
                out[k] = -slope * (x[k] - p[k]) * 2.0 * for_axis(inv, k);
            }
            h.signal_var * h.kernel.corr(hh)
        };
        let mut g = vec![0.0; d];
        for j in 0..m {
            let zj = cc.z.row(j);
            c[j] = kgrad(zj.as_slice().expect("standard layout"), &mut dc[j]);
        }
        for i in 0..n {
            let xi = self.x.row(i);
            let ki = kgrad(xi.as_slice().expect("standard layout"), &mut g);
            for j in 0..m {
                let w = cc.w[[i, j]];
                c[j] -= ki * w;
                for k in 0..d {
                    dc[j][k] -= g[k] * w;
                }
            }
        }
        (c, dc)
    }

    /// Joint posterior of the latent f at the rows of `xs`: mean and covariance, given the
    /// prior covariance `k_ss` among them.
    pub fn predict_joint(
        &self,
        xs: ArrayView2<f64>,
        k_ss: &Array2<f64>,
    ) -> (Array1<f64>, Array2<f64>) {
        let (mean, v) = self.mean_and_whitened(xs);
        (mean, k_ss - &crate::math::linalg::gram(v.view()))
    }

    /// The posterior mean at the rows of `xs` and V = L^-1 K(x, xs), whose column inner
    /// products are what conditioning removes from the prior covariance.
    fn mean_and_whitened(&self, xs: ArrayView2<f64>) -> (Array1<f64>, Array2<f64>) {
        let kx = kernel_matrix(self.x.view(), xs, &self.hyper);
        // kx^T alpha, each entry summed over the training points in order, a row of kx at a
        // time (contiguous; the strided column dot products summed in the same order).
        let mut mean = Array1::<f64>::from_elem(kx.ncols(), self.constant);
        for (row, &a) in kx.rows().into_iter().zip(&self.alpha) {
            mean.scaled_add(a, &row);
        }
        let v = crate::math::linalg::solve_lower_mat(self.chol.view(), kx.view());
        (mean, v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::linalg::cholesky_jittered;

    #[test]
    fn pointwise_prediction_and_gradients_match_batch_and_differences() {
        let x = ndarray::array![[0.1, 0.2], [0.5, 0.9], [0.8, 0.3], [0.3, 0.6]];
        let y = ndarray::array![0.3, -0.5, 1.2, 0.1];
        let h = GpHyper::isotropic(Kernel::Se, 0.3, 1.5, 0.01);
        let post = GpPosterior::fit(x.view(), y.view(), &h).unwrap();
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
    use crate::math::rng::{Purpose, stream};
    use ndarray::Axis;
    use rand_distr::{Distribution, StandardNormal};

    #[test]
    fn gp_posterior_matches_the_explicit_formula() {
        let mut rng = stream(21, 0, 0, Purpose::AgentData);
        let x = Array2::from_shape_fn((12, 2), |_| rng.random::<f64>());
        let y = x.column(0).mapv(|v| (5.0 * v).sin()) + x.column(1);
        let xs = Array2::from_shape_fn((30, 2), |_| rng.random::<f64>());
        let h = GpHyper::isotropic(Kernel::Se, 0.3, 1.7, 0.01);
        let post = GpPosterior::fit(x.view(), y.view(), &h).unwrap();
        let (m1, v1) = post.predict(xs.view());
        let kdiag = Array1::from_elem(30, h.signal_var);
        let (m2, v2) = exact_posterior(
            &kernel_matrix(x.view(), x.view(), &h),
            &kernel_matrix(x.view(), xs.view(), &h),
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

    fn model() -> HyperModel {
        HyperModel {
            kernel: Kernel::Se,
            ard: Ard::Off,
            bounds: bounds(),
            prior: HyperPrior::None,
            mean: MeanFn::Zero,
        }
    }

    fn bounds() -> HyperBounds {
        HyperBounds {
            length_scale: (1e-3, 10.0),
            signal_var: (1e-2, 1e2),
            noise_var: (1e-6, 1.0),
        }
    }

    /// The likelihood's gradient (and with a prior, the posterior's) against central
    /// differences, for every kernel, one length scale and one per axis.
    #[test]
    fn gradient_matches_finite_differences() {
        let mut rng = stream(1, 0, 0, Purpose::AgentData);
        let x = Array2::from_shape_fn((12, 3), |_| rng.random::<f64>());
        let y = Array1::from_iter((0..12).map(|i| (i as f64 * 0.7).sin()));
        for (kernel, mean) in [Kernel::Se, Kernel::Matern52, Kernel::Matern32]
            .into_iter()
            .flat_map(|k| [(k, MeanFn::Zero), (k, MeanFn::Constant)])
        {
            for ard in [false, true] {
                let dist = Distances::new(x.view(), ard);
                let mut h = GpHyper::isotropic(kernel, 0.4, 1.3, 0.05).with_mean(mean);
                if ard {
                    h.length_scales = vec![0.3, 0.7, 1.9];
                }
                let (_, g) = log_marginal_likelihood(&dist, y.view(), &h, true).unwrap();
                let l = h.to_log();
                let lml = |l: &[f64]| {
                    log_marginal_likelihood(
                        &dist,
                        y.view(),
                        &GpHyper::from_log(kernel, h.mean, l),
                        false,
                    )
                    .unwrap()
                    .0
                };
                for i in 0..l.len() {
                    let eps = 1e-6;
                    let (mut up, mut dn) = (l.clone(), l.clone());
                    up[i] += eps;
                    dn[i] -= eps;
                    let fdg = (lml(&up) - lml(&dn)) / (2.0 * eps);
                    assert!(
                        (fdg - g[i]).abs() < 1e-5 * (1.0 + fdg.abs()),
                        "{kernel:?} {mean:?} ard {ard} param {i}: {fdg} vs {}",
                        g[i]
                    );
                }
                // And the prior's gradient in the same coordinates.
                let prior = HyperPrior::DimensionScaled;
                let (_, pg) = prior.log_density(&l, 3);
                for i in 0..l.len() {
                    let eps = 1e-6;
                    let (mut up, mut dn) = (l.clone(), l.clone());
                    up[i] += eps;
                    dn[i] -= eps;
                    let fdg =
                        (prior.log_density(&up, 3).0 - prior.log_density(&dn, 3).0) / (2.0 * eps);
                    assert!((fdg - pg[i]).abs() < 1e-6 * (1.0 + fdg.abs()), "prior {i}");
                }
            }
        }
    }

    /// The profiled constant is the likelihood's maximiser over c: the constant-mean
    /// likelihood equals the zero-mean likelihood of y - c* and is not exceeded by any other
    /// shift; and the constant-mean posterior is the zero-mean posterior of y - c* plus c*.
    #[test]
    fn profiled_constant_maximises_the_likelihood() {
        let mut rng = stream(4, 0, 0, Purpose::AgentData);
        let x = Array2::from_shape_fn((15, 2), |_| rng.random::<f64>());
        // Not centred: c* is then not the data's average (GLS weights isolated points more).
        let y =
            Array1::from_iter((0..15).map(|i| if i < 2 { 2.0 } else { -0.4 - 0.05 * i as f64 }));
        for kernel in [Kernel::Se, Kernel::Matern52] {
            let h0 = GpHyper::isotropic(kernel, 0.25, 1.2, 0.01);
            let hc = h0.clone().with_mean(MeanFn::Constant);
            let dist = Distances::new(x.view(), false);
            let lml = |h: &GpHyper, y: &Array1<f64>| {
                log_marginal_likelihood(&dist, y.view(), h, false)
                    .unwrap()
                    .0
            };
            let c = constant_mean(x.view(), y.view(), &hc).unwrap();
            let at = |c: f64| lml(&h0, &y.mapv(|v| v - c));
            assert!((lml(&hc, &y) - at(c)).abs() < 1e-10);
            for d in [-0.3, -0.01, -1e-4, 1e-4, 0.01, 0.3] {
                assert!(at(c + d) < at(c), "{kernel:?}: shift {d} beats c* = {c}");
            }
            let mean_y = y.mean().unwrap();
            assert!(
                (c - mean_y).abs() > 0.1,
                "c* {c} against the average {mean_y}"
            );
            let xs = Array2::from_shape_fn((9, 2), |_| rng.random::<f64>());
            let (m_c, v_c) = GpPosterior::fit(x.view(), y.view(), &hc)
                .unwrap()
                .predict(xs.view());
            let shifted = y.mapv(|v| v - c);
            let (m_0, v_0) = GpPosterior::fit(x.view(), shifted.view(), &h0)
                .unwrap()
                .predict(xs.view());
            for j in 0..9 {
                assert!((m_c[j] - (m_0[j] + c)).abs() < 1e-10);
                assert!((v_c[j] - v_0[j]).abs() < 1e-12);
            }
        }
    }

    /// The priors' densities against closed forms: each integrates to one over its natural
    /// parameter, the log-normal's mode is exp(mu - sigma^2) and the Gamma's (a - 1) / b,
    /// and the dimension-scaled length-scale prior's median is exp(sqrt 2 + ln(D) / 2).
    #[test]
    fn prior_densities_are_the_stated_distributions() {
        // Integrate e^{log p(e^u)} e^u du over u (the density of x, changed to u).
        let integrate = |f: &dyn Fn(f64) -> f64| {
            let (lo, hi, n) = (-40.0, 15.0, 200_000);
            let du = (hi - lo) / n as f64;
            (0..n)
                .map(|i| {
                    let u = lo + (i as f64 + 0.5) * du;
                    libm::exp(f(u) + u) * du
                })
                .sum::<f64>()
        };
        let ln = |u: f64| log_normal(u, 1.2, 0.7).0;
        assert!((integrate(&ln) - 1.0).abs() < 1e-9);
        let g = |u: f64| gamma(u, 2.0, 0.15).0;
        assert!((integrate(&g) - 1.0).abs() < 1e-9);
        // d/du log p_x(e^u) = x p_x'(x) / p_x(x) vanishes at the mode of x.
        let (mu, sigma) = (1.2f64, 0.7f64);
        let mode = mu - sigma * sigma;
        assert!(log_normal(mode, mu, sigma).1.abs() < 1e-12);
        assert!(gamma(libm::log(1.0 / 0.15), 2.0, 0.15).1.abs() < 1e-12);
        // The median of LogNormal(mu, s) is e^mu: half the mass below it.
        for dim in [1usize, 4, 25] {
            let mu = std::f64::consts::SQRT_2 + 0.5 * (dim as f64).ln();
            let mut l = vec![mu, 0.0, -4.0];
            let lower = {
                let (lo, n) = (-40.0, 200_000);
                let du = (mu - lo) / n as f64;
                (0..n)
                    .map(|i| {
                        l[0] = lo + (i as f64 + 0.5) * du;
                        let v = HyperPrior::DimensionScaled.log_density(&l, dim).0
                            - gamma(0.0, 2.0, 0.15).0
                            - log_normal(-4.0, -4.0, 1.0).0;
                        libm::exp(v + l[0]) * du
                    })
                    .sum::<f64>()
            };
            assert!((lower - 0.5).abs() < 1e-9, "D = {dim}: {lower}");
        }
        assert_eq!(HyperPrior::None.log_density(&[0.1, 0.2, 0.3], 2).0, 0.0);
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
                let mut k = sq_dists(x.view()).mapv(|r2| (-r2 / (2.0 * true_ls * true_ls)).exp());
                for i in 0..150 {
                    k[[i, i]] += 1e-3;
                }
                let (l, _) = cholesky_jittered(&k).unwrap();
                let z = Array1::from_iter((0..150).map(|_| StandardNormal.sample(&mut rng)));
                let y = l.dot(&z);
                let h = fit_hyperparameters(x.view(), y.view(), &model(), budget, None, &mut rng)
                    .unwrap();
                recovered.push(h.length_scales[0]);
            }
            for ls in &recovered {
                assert!(
                    (ls / true_ls - 1.0).abs() < 0.25,
                    "{budget:?}: recovered {recovered:?}"
                );
            }
        }
    }

    /// The leave-one-out density from one factorisation equals the brute force: n GP fits,
    /// each without one observation, predicting it (zero mean, where the formula is exact).
    #[test]
    fn leave_one_out_density_is_the_brute_force_one() {
        let mut rng = stream(8, 0, 0, Purpose::AgentData);
        let x = Array2::from_shape_fn((9, 3), |_| rng.random::<f64>());
        let y = x.column(0).mapv(|v| (4.0 * v).cos()) - x.column(2);
        let mut h = GpHyper::isotropic(Kernel::Matern52, 0.4, 1.3, 0.05);
        h.length_scales = vec![0.4, 0.9, 0.2];
        let fast = loo_log_predictive(&Distances::new(x.view(), true), y.view(), &h).unwrap();
        let mut brute = 0.0;
        for i in 0..9 {
            let keep: Vec<usize> = (0..9).filter(|&j| j != i).collect();
            let xi = x.select(Axis(0), &keep);
            let yi = y.select(Axis(0), &keep);
            let post = GpPosterior::fit(xi.view(), yi.view(), &h).unwrap();
            let (m, v) = post.predict(x.slice(ndarray::s![i..i + 1, ..]));
            let var = v[0] + h.noise_var;
            brute += -0.5 * (2.0 * std::f64::consts::PI * var).ln()
                - (y[i] - m[0]).powi(2) / (2.0 * var);
        }
        assert!((fast - brute).abs() < 1e-8, "{fast} vs {brute}");
    }

    /// The margin by hand: differences 1, 2, 1, 2 sum to 6 with sqrt(n var) = sqrt(4 / 3),
    /// a gain of 5.196 standard errors: clearly better at a margin of 5.1, not at 5.3.
    #[test]
    fn clearly_better_counts_standard_errors_of_the_summed_difference() {
        let (a, b) = ([0.0; 4], [1.0, 2.0, 1.0, 2.0]);
        assert!(clearly_better(&a, &b, 5.1));
        assert!(!clearly_better(&a, &b, 5.3));
        assert!(!clearly_better(&b, &a, 0.0));
    }

    /// "loo" keeps one length scale per axis where one axis does nothing and one where the
    /// axes are alike: chosen by the data, not by a count; a margin larger than the data's
    /// gain keeps one length scale even with dead axes.
    #[test]
    fn loo_ard_finds_a_dead_axis_and_keeps_one_scale_on_alike_axes() {
        let m = HyperModel {
            ard: Ard::LOO,
            prior: HyperPrior::DimensionScaled,
            bounds: HyperBounds {
                length_scale: (0.005, 2.0),
                ..bounds()
            },
            ..model()
        };
        let budget = FitBudget {
            starts: 10,
            restarts: 3,
        };
        let mut rng = stream(9, 0, 0, Purpose::AgentData);
        let x = Array2::from_shape_fn((40, 4), |_| rng.random::<f64>());
        // Only the first two axes matter.
        let y = x.map_axis(Axis(1), |r| (6.0 * r[0]).sin() + (5.0 * r[1]).cos());
        let strict = HyperModel {
            ard: Ard::Loo { margin: 100.0 },
            ..m
        };
        let h = fit_hyperparameters(x.view(), y.view(), &strict, budget, None, &mut rng.clone())
            .unwrap();
        assert_eq!(h.length_scales.len(), 1, "{h:?}");
        let h = fit_hyperparameters(x.view(), y.view(), &m, budget, None, &mut rng).unwrap();
        assert_eq!(h.length_scales.len(), 4, "{h:?}");
        // The dead axes flattened to the box's upper end (2), the live ones well inside.
        let l = &h.length_scales;
        assert!(
            l[2] > 1.99 && l[3] > 1.99 && l[0] < 0.5 && l[1] < 0.5,
            "{h:?}"
        );
        // Every axis alike (a radial function): one length scale predicts as well.
        let y = x.map_axis(Axis(1), |r| {
            (3.0 * r.iter().map(|v| (v - 0.5) * (v - 0.5)).sum::<f64>()).cos()
        });
        let h = fit_hyperparameters(x.view(), y.view(), &m, budget, None, &mut rng).unwrap();
        assert_eq!(h.length_scales.len(), 1, "{h:?}");
    }

    /// "auto" fits one length scale until there are 10 observations per axis.
    #[test]
    fn auto_ard_waits_for_ten_observations_per_axis() {
        assert!(!Ard::AUTO.applies(19, 2) && Ard::AUTO.applies(20, 2));
        assert!(!Ard::AUTO.applies(49, 5) && Ard::AUTO.applies(50, 5));
        assert!(Ard::On.applies(1, 9) && !Ard::Off.applies(1000, 1));
        let mut rng = stream(3, 0, 0, Purpose::AgentData);
        let m = HyperModel {
            kernel: Kernel::Se,
            ard: Ard::AUTO,
            bounds: bounds(),
            prior: HyperPrior::DimensionScaled,
            mean: MeanFn::Zero,
        };
        let budget = FitBudget {
            starts: 3,
            restarts: 1,
        };
        for (n, scales) in [(19, 1), (20, 2)] {
            let x = Array2::from_shape_fn((n, 2), |_| rng.random::<f64>());
            let y = x.column(0).mapv(|v| (6.0 * v).sin());
            let h = fit_hyperparameters(x.view(), y.view(), &m, budget, None, &mut rng).unwrap();
            assert_eq!(h.length_scales.len(), scales, "{n} observations");
        }
    }

    #[test]
    fn fit_stays_inside_the_bounds() {
        let x = ndarray::array![[0.1, 0.5], [0.2, 0.3], [0.9, 0.8]];
        let y = ndarray::array![1.0, -1.0, 1.0];
        let mut rng = stream(2, 0, 0, Purpose::HyperFit);
        let b = bounds();
        for kernel in [Kernel::Se, Kernel::Matern52, Kernel::Matern32] {
            for (ard, prior) in [
                (false, HyperPrior::None),
                (true, HyperPrior::DimensionScaled),
            ] {
                let m = HyperModel {
                    kernel,
                    ard: if ard { Ard::On } else { Ard::Off },
                    bounds: b,
                    prior,
                    mean: MeanFn::Constant,
                };
                let budget = FitBudget {
                    starts: 5,
                    restarts: 2,
                };
                let h =
                    fit_hyperparameters(x.view(), y.view(), &m, budget, None, &mut rng).unwrap();
                assert_eq!(h.kernel, kernel);
                assert_eq!(h.length_scales.len(), if ard { 2 } else { 1 });
                for l in &h.length_scales {
                    assert!(*l >= b.length_scale.0 && *l <= b.length_scale.1);
                }
                assert!(h.noise_var >= b.noise_var.0 && h.noise_var <= b.noise_var.1);
            }
        }
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
