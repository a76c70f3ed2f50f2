//! Random Fourier features (FTS paper App. A; Rahimi & Recht) for the SE and Matern kernels.
//!
//! phi(x) = sqrt(2/M) cos(S x + b), s_j from the kernel's spectral density (N(0, l^-2 I) for
//! the SE kernel, `kernel.rs`), b_j ~ U[0, 2 pi). The paper then
//! rescales every phi(x) to squared norm sigma_0^2 (`normalize = true`), which makes
//! phi(x)^T phi(x) equal the kernel's variance exactly; without it the kernel estimate is
//! unbiased instead.

use super::kernel::{Kernel, for_axis};
use crate::math::fastmath::{fast_cos, fast_sin};
use ndarray::{Array1, Array2, ArrayView1, ArrayView2};
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};
use std::f64::consts::PI;

/// Grid points per block of the tensor-grid sample: 8 sums of each kind fit the 16 vector
/// registers of baseline x86-64 beside the operands.
const LANES: usize = 8;

/// For the LANES last-axis points i0.. of one prefix row: (sum_j c_j w_j, sum_j c_j^2) with
/// c_j = rc_j tc[j][i] - rs_j ts[j][i] (the cosine of a sum by angle addition), each summed
/// over j in order. `tc`/`ts` are the last axis's tables, feature-major with row length `last`.
#[inline(always)]
fn combine_block(
    rc: &[f64],
    rs: &[f64],
    tc: &[f64],
    ts: &[f64],
    w: &[f64],
    last: usize,
    i0: usize,
) -> ([f64; LANES], [f64; LANES]) {
    let (mut d, mut q) = ([0.0f64; LANES], [0.0f64; LANES]);
    for j in 0..rc.len() {
        let (c, s, wj) = (rc[j], rs[j], w[j]);
        let bc: &[f64; LANES] = tc[j * last + i0..j * last + i0 + LANES]
            .try_into()
            .expect("a block of LANES");
        let bs: &[f64; LANES] = ts[j * last + i0..j * last + i0 + LANES]
            .try_into()
            .expect("a block of LANES");
        for l in 0..LANES {
            let v = c * bc[l] - s * bs[l];
            d[l] += v * wj;
            q[l] += v * v;
        }
    }
    (d, q)
}

crate::multiversion! {
    /// angle <- sin(angle) and cos <- cos(angle), element-wise.
    fn cos_sin_in_place(angle: &mut [f64], cos: &mut [f64]) {
        for (c, a) in cos.iter_mut().zip(angle.iter()) {
            *c = fast_cos(*a);
        }
        for a in angle.iter_mut() {
            *a = fast_sin(*a);
        }
    }
}

crate::multiversion! {
    /// For every prefix row r (of `pc`/`ps`, M values each) and last-axis point i (of the
    /// feature-major `tc`/`ts`): dots[r last + i] = sum_j c_j w_j and sumsqs[..] = sum_j c_j^2,
    /// with c_j = pc_rj tc_ji - ps_rj ts_ji, each summed over j in order.
    #[allow(clippy::too_many_arguments)]
    fn tensor_sums(
        pc: &[f64],
        ps: &[f64],
        tc: &[f64],
        ts: &[f64],
        w: &[f64],
        last: usize,
        dots: &mut [f64],
        sumsqs: &mut [f64],
    ) {
        let m = w.len();
        for r in 0..pc.len() / m {
            let (rc, rs) = (&pc[r * m..(r + 1) * m], &ps[r * m..(r + 1) * m]);
            let mut i0 = 0;
            while i0 + LANES <= last {
                let (d, q) = combine_block(rc, rs, tc, ts, w, last, i0);
                dots[r * last + i0..r * last + i0 + LANES].copy_from_slice(&d);
                sumsqs[r * last + i0..r * last + i0 + LANES].copy_from_slice(&q);
                i0 += LANES;
            }
            for i in i0..last {
                let (mut dot, mut sumsq) = (0.0, 0.0);
                for j in 0..m {
                    let v = rc[j] * tc[j * last + i] - rs[j] * ts[j * last + i];
                    dot += v * w[j];
                    sumsq += v * v;
                }
                dots[r * last + i] = dot;
                sumsqs[r * last + i] = sumsq;
            }
        }
    }
}

#[derive(Clone, Debug)]
pub struct RandomFeatures {
    /// Frequencies stored by input dimension: `freq[d][j]` is s_{j,d}. Laid out so the inner
    /// loop over features is contiguous and vectorises.
    freq: Vec<Vec<f64>>,
    /// The same frequencies feature by feature (s_j at j dim..), for `gradient_sums`.
    by_feature: Vec<f64>,
    phase: Vec<f64>,
    variance: f64,
    normalize: bool,
}

impl RandomFeatures {
    /// M features of `kernel` with one length scale for every axis, or one per axis:
    /// s_j = z_j / l * kernel.spectral_scale() with z_j ~ N(0, I).
    pub fn draw<R: Rng + ?Sized>(
        m: usize,
        dim: usize,
        kernel: Kernel,
        length_scales: &[f64],
        variance: f64,
        normalize: bool,
        rng: &mut R,
    ) -> Self {
        // Draw feature by feature (its Student-t scale, s_j, then b_j) so that the first k
        // features of a draw with M > k are not the same as those of a draw with M = k only
        // by accident of layout. The SE kernel draws no scale (and multiplying by 1 changes
        // no bit): its features are the ones it always drew.
        let mut freq = vec![vec![0.0; m]; dim];
        let mut phase = vec![0.0; m];
        for j in 0..m {
            let t = kernel.spectral_scale(rng);
            for (d, f) in freq.iter_mut().enumerate() {
                let z: f64 = StandardNormal.sample(rng);
                f[j] = z * t / for_axis(length_scales, d);
            }
            phase[j] = rng.random::<f64>() * 2.0 * PI;
        }
        RandomFeatures {
            by_feature: (0..m)
                .flat_map(|j| freq.iter().map(move |f| f[j]))
                .collect(),
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

    /// The factor that turns cos(S x + b) into phi(x), given the sum of the squared cosines:
    /// the paper's rescaling to squared norm sigma_0^2, or the unbiased sqrt(2 sigma_0^2 / M).
    fn scale(&self, sumsq: f64) -> f64 {
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

    /// cos(S x + b) into `buf` and returns the factor that turns it into phi(x).
    fn raw_into(&self, x: ArrayView1<f64>, buf: &mut [f64]) -> f64 {
        buf.copy_from_slice(&self.phase);
        for (d, f) in self.freq.iter().enumerate() {
            let xd = x[d];
            for (o, s) in buf.iter_mut().zip(f) {
                *o += s * xd;
            }
        }
        // Two loops, not one: the cosines alone vectorise, and the sum of squares keeps its
        // sequential order (the same bits as a fused loop).
        for o in buf.iter_mut() {
            *o = fast_cos(*o);
        }
        let mut sumsq = 0.0;
        for c in buf.iter() {
            sumsq += c * c;
        }
        self.scale(sumsq)
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

    /// phi(x)^T w at one point and, when `grad` is given, its gradient in x, the per-point
    /// normalisation included: with c_j = cos(s_j x + b_j), g = sum w_j c_j and
    /// Q = sum c_j^2, the normalised value is sqrt(v / Q) g, whose gradient is
    /// sqrt(v / Q) (dg - g dQ / (2 Q)).
    pub fn value_grad(&self, x: &[f64], w: &[f64], grad: Option<&mut [f64]>) -> f64 {
        let mut arg = self.phase.clone();
        for (f, &xd) in self.freq.iter().zip(x) {
            for (o, s) in arg.iter_mut().zip(f) {
                *o += s * xd;
            }
        }
        // Separate passes over contiguous buffers keep each loop vectorisable.
        let cos: Vec<f64> = arg.iter().map(|&a| fast_cos(a)).collect();
        let g: f64 = cos.iter().zip(w).map(|(c, wj)| c * wj).sum();
        let q: f64 = cos.iter().map(|c| c * c).sum();
        let scale = self.scale(q);
        if let Some(grad) = grad {
            // d/dx_d of c_j is -sin(a_j) s_jd.
            let sin: Vec<f64> = arg.iter().map(|&a| fast_sin(a)).collect();
            let wsin: Vec<f64> = sin.iter().zip(w).map(|(s, wj)| s * wj).collect();
            let csin: Vec<f64> = sin.iter().zip(&cos).map(|(s, c)| s * c).collect();
            let with_q = self.normalize && q > 0.0;
            let (mut sw, mut sc) = (vec![-0.0; self.dim()], vec![-0.0; self.dim()]);
            gradient_sums(&mut sw, &mut sc, &wsin, &csin, &self.by_feature, with_q);
            for (d, gd) in grad.iter_mut().enumerate() {
                let dg = -sw[d];
                *gd = if with_q {
                    let dq = -2.0 * sc[d];
                    scale * (dg - g * dq / (2.0 * q))
                } else {
                    scale * dg
                };
            }
        }
        g * scale
    }

    /// phi(x) and its Jacobian J[j][d] = d phi_j / d x_d (normalisation included:
    /// phi_j = c cos(a_j) with c = sqrt(v / Q), dc = -c dQ / (2 Q)).
    pub fn feature_jacobian(&self, x: &[f64]) -> (Array1<f64>, Array2<f64>) {
        let (m, dim) = (self.len(), self.dim());
        let mut arg = self.phase.clone();
        for (f, &xd) in self.freq.iter().zip(x) {
            for (o, s) in arg.iter_mut().zip(f) {
                *o += s * xd;
            }
        }
        let cos: Vec<f64> = arg.iter().map(|&a| fast_cos(a)).collect();
        let sin: Vec<f64> = arg.iter().map(|&a| fast_sin(a)).collect();
        let q: f64 = cos.iter().map(|c| c * c).sum();
        let scale = self.scale(q);
        let mut dq = vec![0.0; dim];
        if self.normalize {
            for j in 0..m {
                for (d, f) in self.freq.iter().enumerate() {
                    dq[d] -= 2.0 * cos[j] * sin[j] * f[j];
                }
            }
        }
        let phi = Array1::from_iter(cos.iter().map(|c| c * scale));
        let jac = Array2::from_shape_fn((m, dim), |(j, d)| {
            let dc = if self.normalize && q > 0.0 {
                -scale * dq[d] / (2.0 * q)
            } else {
                0.0
            };
            -scale * sin[j] * self.freq[d][j] + cos[j] * dc
        });
        (phi, jac)
    }

    /// argmax of phi(x)^T w (plus `offset[i]` at grid point i, when given) over the
    /// tensor-product grid of `axes` (row-major, last axis fastest; the index is the grid's),
    /// ties to the lowest index. cos(sum_d s_d x_d + b)
    /// is built by angle addition from per-axis cosines and sines, so a grid of n_1 x ... x
    /// n_D points costs (n_1 + ... + n_D) M transcendental evaluations instead of
    /// n_1 ... n_D M, and blocks of grid points share each feature's loads (`tensor_sums`,
    /// each point's sums over the features in order). The values differ from `argmax`'s in
    /// the last bits (about 1e-14), so the two agree except on near-exact ties.
    pub fn argmax_tensor(&self, axes: &[Vec<f64>], w: &[f64], offset: Option<&[f64]>) -> usize {
        let m = self.len();
        let d = axes.len();
        assert!(d >= 2 && d == self.dim(), "a tensor grid of 2 or more axes");
        // Per-axis tables of cos and sin of s_k x (plus b on axis 0), one row of M per axis
        // point. Angles first, then the cosines and sines in loops of their own, which
        // vectorise (the same values as computing them one at a time).
        let axis_cs = |k: usize| -> (Vec<f64>, Vec<f64>) {
            let mut angle = Vec::with_capacity(axes[k].len() * m);
            for &x in &axes[k] {
                if k == 0 {
                    angle.extend(self.freq[k].iter().zip(&self.phase).map(|(s, b)| s * x + b));
                } else {
                    angle.extend(self.freq[k].iter().map(|s| s * x));
                }
            }
            let mut c = vec![0.0; angle.len()];
            cos_sin_in_place(&mut angle, &mut c);
            (c, angle)
        };
        // Prefix over axes 0..d-1: cos and sin of s_0 x_0 + ... + s_{d-2} x_{d-2} + b.
        let (mut pc, mut ps) = axis_cs(0);
        for (k, axis) in axes.iter().enumerate().take(d - 1).skip(1) {
            let (ac, as_) = axis_cs(k);
            let rows = pc.len() / m;
            let (mut nc, mut ns) = (
                Vec::with_capacity(rows * axis.len() * m),
                Vec::with_capacity(rows * axis.len() * m),
            );
            for r in 0..rows {
                let (rc, rs) = (&pc[r * m..(r + 1) * m], &ps[r * m..(r + 1) * m]);
                for i in 0..axis.len() {
                    let (bc, bs) = (&ac[i * m..(i + 1) * m], &as_[i * m..(i + 1) * m]);
                    for j in 0..m {
                        nc.push(rc[j] * bc[j] - rs[j] * bs[j]);
                        ns.push(rs[j] * bc[j] + rc[j] * bs[j]);
                    }
                }
            }
            (pc, ps) = (nc, ns);
        }
        let (lc, ls) = axis_cs(d - 1);
        let last = axes[d - 1].len();
        // The last axis's table transposed (feature-major), so a block of LANES grid points
        // shares each feature's prefix cosine and sine, loaded once: the block's sums stay in
        // registers while the features stream past.
        let transpose = |t: &[f64]| -> Vec<f64> {
            let mut o = vec![0.0; t.len()];
            for i in 0..last {
                for j in 0..m {
                    o[j * last + i] = t[i * m + j];
                }
            }
            o
        };
        let (tc, ts) = (transpose(&lc), transpose(&ls));
        let points = pc.len() / m * last;
        let (mut dots, mut sumsqs) = (vec![0.0; points], vec![0.0; points]);
        tensor_sums(&pc, &ps, &tc, &ts, w, last, &mut dots, &mut sumsqs);
        let mut best = (0usize, f64::NEG_INFINITY);
        for (idx, (&dot, &sumsq)) in dots.iter().zip(&sumsqs).enumerate() {
            let v = dot * self.scale(sumsq) + offset.map_or(0.0, |o| o[idx]);
            if v > best.1 {
                best = (idx, v);
            }
        }
        best.0
    }

    /// argmax over the rows of `xs` of phi(x)^T w (plus `offset[i]` at row i, when given),
    /// without materialising Phi(X). Ties go to the lowest index.
    pub fn argmax(&self, xs: ArrayView2<f64>, w: ArrayView1<f64>, offset: Option<&[f64]>) -> usize {
        let m = self.len();
        let w: Vec<f64> = w.to_vec();
        let mut buf = vec![0.0; m];
        let mut best = (0, f64::NEG_INFINITY);
        for (i, x) in xs.rows().into_iter().enumerate() {
            let scale = self.raw_into(x, &mut buf);
            let dot: f64 = buf.iter().zip(&w).map(|(a, b)| a * b).sum();
            let v = dot * scale + offset.map_or(0.0, |o| o[i]);
            if v > best.1 {
                best = (i, v);
            }
        }
        best.0
    }
}

crate::multiversion! {
    /// sw_d = sum_j wsin_j s_jd and (with `with_q`) sc_d = sum_j csin_j s_jd, from the
    /// frequencies feature by feature. Each sum adds its features in order j = 0.. from -0.0,
    /// as `Iterator::sum` over one axis's frequencies does, so the values are the same bit for
    /// bit; the axes are independent sums, which is what vectorises.
    fn gradient_sums(sw: &mut [f64], sc: &mut [f64], wsin: &[f64], csin: &[f64], by_feature: &[f64], with_q: bool) {
        let dim = sw.len();
        for (j, s) in by_feature.chunks_exact(dim).enumerate() {
            let a = wsin[j];
            for (t, &sd) in sw.iter_mut().zip(s) {
                *t += a * sd;
            }
            if with_q {
                let b = csin[j];
                for (t, &sd) in sc.iter_mut().zip(s) {
                    *t += b * sd;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn tensor_argmax_equals_the_pointwise_argmax() {
        use crate::objective::space::Domain;
        use rand::SeedableRng;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        for (dims, n, normalize) in [(2usize, 37usize, true), (2, 64, false), (3, 9, true)] {
            let m = 60 + dims;
            let axis: Vec<f64> = (0..n).map(|i| i as f64 / (n - 1) as f64).collect();
            let total = n.pow(dims as u32);
            let mut pts = ndarray::Array2::zeros((total, dims));
            for p in 0..total {
                let mut rest = p;
                for k in (0..dims).rev() {
                    pts[[p, k]] = axis[rest % n];
                    rest /= n;
                }
            }
            let domain = Domain::new(pts.clone());
            let axes = domain.axes().expect("a tensor grid");
            assert_eq!(axes.len(), dims);
            for _ in 0..20 {
                let rf =
                    RandomFeatures::draw(m, dims, Kernel::Se, &[0.1], 1.3, normalize, &mut rng);
                let w: Vec<f64> = (0..m).map(|_| StandardNormal.sample(&mut rng)).collect();
                let a = rf.argmax(pts.view(), ndarray::ArrayView1::from(&w[..]), None);
                let b = rf.argmax_tensor(axes, &w, None);
                assert_eq!(a, b, "dims {dims}, n {n}");
            }
        }
        // Points not in row-major product order are not a tensor grid.
        let mut pts = ndarray::Array2::zeros((4, 2));
        for (p, (a, b)) in [(0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (1.0, 1.0)]
            .iter()
            .enumerate()
        {
            pts[[p, 0]] = *a;
            pts[[p, 1]] = *b;
        }
        assert!(Domain::new(pts).axes().is_none());
    }

    use super::*;
    use crate::math::rng::{Purpose, stream};
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
            let rf = RandomFeatures::draw(m, 1, Kernel::Se, &[0.2], 1.0, normalize, &mut rng);
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

    /// For every kernel, with one length scale per axis, unnormalised features estimate
    /// k(x, x') without bias and with the variance theory gives: phi_j(x) phi_j(x') =
    /// cos(s_j tau) + cos(s_j (x + x') + 2 b_j), so the mean over M features has variance
    /// (1 + k(2 tau) / 2 - k(tau)^2) / M. M times the mean squared error over pairs must match
    /// the mean of that bracket at every M: a wrong spectral density leaves a bias that does
    /// not shrink, and M MSE then grows with M.
    #[test]
    fn every_kernel_s_features_converge_at_the_rate_theory_gives() {
        use crate::surrogate::gp::GpHyper;
        let ls = [0.2, 0.5];
        let pts: Vec<[f64; 2]> = (0..36)
            .map(|i| [(i % 6) as f64 / 5.0, (i / 6) as f64 / 5.0])
            .collect();
        for kernel in [Kernel::Se, Kernel::Matern52, Kernel::Matern32] {
            let mut h = GpHyper::isotropic(kernel, 1.0, 1.0, 0.0);
            h.length_scales = ls.to_vec();
            let k = |a: &[f64], b: &[f64]| h.k(a, b);
            let theory: f64 = pts
                .iter()
                .flat_map(|a| pts.iter().map(move |b| (a, b)))
                .map(|(a, b)| {
                    let twice = [a[0] + (a[0] - b[0]), a[1] + (a[1] - b[1])];
                    1.0 + k(&twice, b) / 2.0 - k(a, b).powi(2)
                })
                .sum::<f64>()
                / (pts.len() * pts.len()) as f64;
            for m in [64usize, 1024, 16384] {
                let draws = 160usize;
                let (mut sq, mut bias) = (0.0, 0.0);
                for rep in 0..draws {
                    let mut rng = stream(9, rep as u64, m as u64, Purpose::SharedFeatures);
                    let rf = RandomFeatures::draw(m, 2, kernel, &ls, 1.0, false, &mut rng);
                    let x = Array2::from_shape_fn((pts.len(), 2), |(i, d)| pts[i][d]);
                    let phi = rf.matrix(x.view());
                    let approx = phi.dot(&phi.t());
                    for (i, a) in pts.iter().enumerate() {
                        for (j, b) in pts.iter().enumerate() {
                            let e = approx[[i, j]] - k(a, b);
                            sq += e * e;
                            bias += e;
                        }
                    }
                }
                let n = (draws * pts.len() * pts.len()) as f64;
                let scaled = m as f64 * sq / n;
                assert!(
                    (scaled / theory - 1.0).abs() < 0.12,
                    "{kernel:?} M = {m}: M MSE {scaled} vs theory {theory}"
                );
                // The mean error is noise of s.d. about sqrt(theory / (M draws)) or less.
                assert!(
                    (bias / n).abs() < 4.0 * (theory / (m * draws) as f64).sqrt(),
                    "{kernel:?} M = {m}: bias {}",
                    bias / n
                );
            }
        }
    }

    #[test]
    fn normalised_features_have_the_kernel_variance_as_squared_norm() {
        let mut rng = stream(1, 0, 0, Purpose::SharedFeatures);
        let rf = RandomFeatures::draw(30, 2, Kernel::Se, &[0.1], 2.5, true, &mut rng);
        let xs = ndarray::array![[0.1, 0.9], [0.5, 0.5], [1.0, 0.0]];
        for row in rf.matrix(xs.view()).rows() {
            assert!((row.dot(&row) - 2.5).abs() < 1e-12);
        }
    }

    #[test]
    fn value_gradient_matches_central_differences() {
        for normalize in [true, false] {
            let mut rng = stream(9, 0, 0, Purpose::SharedFeatures);
            let rf = RandomFeatures::draw(50, 3, Kernel::Se, &[0.3], 1.7, normalize, &mut rng);
            let w: Vec<f64> = (0..50).map(|j| ((j * 5 % 13) as f64 - 6.0) / 4.0).collect();
            let x = [0.2, 0.7, 0.45];
            let mut g = [0.0; 3];
            let v = rf.value_grad(&x, &w, Some(&mut g));
            let phi = rf.feature(ndarray::ArrayView1::from(&x[..]));
            assert!((v - phi.dot(&ndarray::Array1::from(w.clone()))).abs() < 1e-12);
            for d in 0..3 {
                let h = 1e-6;
                let (mut a, mut b) = (x, x);
                a[d] += h;
                b[d] -= h;
                let fd = (rf.value_grad(&a, &w, None) - rf.value_grad(&b, &w, None)) / (2.0 * h);
                assert!(
                    (fd - g[d]).abs() < 1e-6 * (1.0 + g[d].abs()),
                    "{normalize} {d}: {fd} vs {}",
                    g[d]
                );
            }
        }
    }

    #[test]
    fn feature_jacobian_matches_central_differences() {
        let mut rng = stream(4, 0, 0, Purpose::SharedFeatures);
        let rf = RandomFeatures::draw(20, 2, Kernel::Se, &[0.2], 1.0, true, &mut rng);
        let x = [0.3, 0.8];
        let (phi, jac) = rf.feature_jacobian(&x);
        assert!(
            (&phi - &rf.feature(ndarray::ArrayView1::from(&x[..])))
                .iter()
                .all(|v| v.abs() < 1e-14)
        );
        for d in 0..2 {
            let (mut a, mut b) = (x, x);
            a[d] += 1e-6;
            b[d] -= 1e-6;
            let fd = (rf.feature(ndarray::ArrayView1::from(&a[..]))
                - rf.feature(ndarray::ArrayView1::from(&b[..])))
                / 2e-6;
            for j in 0..20 {
                assert!((fd[j] - jac[[j, d]]).abs() < 1e-6, "{j} {d}");
            }
        }
    }

    #[test]
    fn streaming_argmax_agrees_with_matrix_product() {
        let mut rng = stream(3, 0, 0, Purpose::SharedFeatures);
        let rf = RandomFeatures::draw(40, 1, Kernel::Se, &[0.05], 1.0, true, &mut rng);
        let xs = Array::linspace(0.0, 1.0, 500).insert_axis(ndarray::Axis(1));
        let w = Array::from_iter((0..40).map(|j| ((j * 7 % 11) as f64 - 5.0) / 3.0));
        let vals = rf.matrix(xs.view()).dot(&w);
        assert_eq!(
            rf.argmax(xs.view(), w.view(), None),
            crate::math::linalg::argmax(vals.view())
        );
    }
}
