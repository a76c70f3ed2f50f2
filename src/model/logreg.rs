//! Multinomial logistic regression trained by minibatch SGD, scored by validation error.
//!
//! Loss per batch: mean softmax cross-entropy + (l2 / 2) |W|^2 (weights only, not biases).
//! Weights start at zero (the loss is convex, so no initialisation seed is needed); each epoch
//! visits the training rows in a seeded random order. Choices the papers leave open: the
//! number of epochs (a parameter) and the zero start.

use ndarray::{Array1, Array2, ArrayView1, ArrayView2};
use rand::Rng;
use rand::seq::SliceRandom;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SgdParams {
    pub batch: usize,
    pub l2: f64,
    pub lr: f64,
    pub epochs: usize,
}

pub struct Softmax {
    pub w: Array2<f64>,
    pub b: Array1<f64>,
}

impl Softmax {
    /// Predicted classes. Rows whose scores are not finite (a diverged fit) predict class 0,
    /// as numpy's argmax does over NaN.
    pub fn predict(&self, x: ArrayView2<f64>) -> Vec<usize> {
        let scores = x.dot(&self.w.t()) + &self.b;
        scores
            .rows()
            .into_iter()
            .map(|r| {
                if r.iter().any(|v| !v.is_finite()) {
                    return 0;
                }
                crate::math::linalg::argmax(r)
            })
            .collect()
    }

    pub fn diverged(&self) -> bool {
        self.w.iter().chain(self.b.iter()).any(|v| !v.is_finite())
    }
}

fn softmax_into(scores: ArrayView1<f64>, out: &mut [f64]) {
    let m = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let mut total = 0.0;
    for (o, s) in out.iter_mut().zip(scores) {
        *o = (s - m).exp();
        total += *o;
    }
    for o in out.iter_mut() {
        *o /= total;
    }
}

pub fn train<R: Rng + ?Sized>(
    x: ArrayView2<f64>,
    y: &[usize],
    classes: usize,
    p: &SgdParams,
    rng: &mut R,
) -> Softmax {
    let (n, d) = x.dim();
    let mut w = Array2::<f64>::zeros((classes, d));
    let mut b = Array1::<f64>::zeros(classes);
    let mut order: Vec<usize> = (0..n).collect();
    let batch = p.batch.clamp(1, n.max(1));
    let mut gw = Array2::<f64>::zeros((classes, d));
    let mut gb = Array1::<f64>::zeros(classes);
    let mut prob = vec![0.0; classes];
    for _ in 0..p.epochs {
        order.shuffle(rng);
        for chunk in order.chunks(batch) {
            gw.fill(0.0);
            gb.fill(0.0);
            for &i in chunk {
                let xi = x.row(i);
                let scores = w.dot(&xi) + &b;
                softmax_into(scores.view(), &mut prob);
                prob[y[i]] -= 1.0;
                for (c, &g) in prob.iter().enumerate() {
                    gw.row_mut(c).scaled_add(g, &xi);
                    gb[c] += g;
                }
            }
            let scale = 1.0 / chunk.len() as f64;
            // W <- W - lr (grad + l2 W)
            w.zip_mut_with(&gw, |wv, &g| *wv -= p.lr * (g * scale + p.l2 * *wv));
            b.zip_mut_with(&gb, |bv, &g| *bv -= p.lr * g * scale);
        }
        if w.iter().any(|v| !v.is_finite()) {
            break;
        }
    }
    Softmax { w, b }
}

/// Binary logistic regression by full-batch gradient descent from zero, with per-row weights
/// (class weighting): `steps` times w <- w - lr (grad + l2 w), b <- b - lr grad_b, where grad
/// is that of sum_i weight_i log-loss_i / sum_i weight_i. Deterministic (no sampling), so a
/// point's value does not depend on a seed. Returns (w, b); a diverged fit has non-finite
/// entries.
pub fn train_binary(
    x: ArrayView2<f64>,
    y: &[usize],
    weight: &[f64],
    l2: f64,
    lr: f64,
    steps: usize,
) -> (Array1<f64>, f64) {
    let (n, d) = x.dim();
    let mut w = Array1::<f64>::zeros(d);
    let mut b = 0.0;
    let total: f64 = weight.iter().sum::<f64>().max(f64::MIN_POSITIVE);
    let mut gw = Array1::<f64>::zeros(d);
    for _ in 0..steps {
        gw.fill(0.0);
        let mut gb = 0.0;
        for i in 0..n {
            let xi = x.row(i);
            let z = xi.dot(&w) + b;
            let p = 1.0 / (1.0 + (-z).exp());
            let g = weight[i] * (p - y[i] as f64) / total;
            gw.scaled_add(g, &xi);
            gb += g;
        }
        w.zip_mut_with(&gw, |wv, &g| *wv -= lr * (g + l2 * *wv));
        b -= lr * gb;
        if !(b.is_finite() && w.iter().all(|v| v.is_finite())) {
            break;
        }
    }
    (w, b)
}

/// Fraction of `pred` that differs from `truth`.
pub fn error_rate(pred: &[usize], truth: &[usize]) -> f64 {
    pred.iter().zip(truth).filter(|(a, b)| a != b).count() as f64 / truth.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::rng::{Purpose, stream};
    use rand_distr::{Distribution, StandardNormal};

    /// Three well-separated Gaussian blobs in 4-D.
    fn blobs(n: usize, seed: u64) -> (Array2<f64>, Vec<usize>) {
        let mut rng = stream(seed, 0, 0, Purpose::AgentData);
        let centres = [
            [3.0, 0.0, 0.0, 1.0],
            [0.0, 3.0, 0.0, -1.0],
            [0.0, 0.0, 3.0, 0.0],
        ];
        let y: Vec<usize> = (0..n).map(|i| i % 3).collect();
        let x = Array2::from_shape_fn((n, 4), |(i, j)| {
            let z: f64 = StandardNormal.sample(&mut rng);
            centres[y[i]][j] + 0.5 * z
        });
        (x, y)
    }

    #[test]
    fn learns_separable_classes() {
        let (x, y) = blobs(300, 1);
        let (xv, yv) = blobs(300, 2);
        let p = SgdParams {
            batch: 20,
            l2: 1e-4,
            lr: 0.1,
            epochs: 20,
        };
        let m = train(x.view(), &y, 3, &p, &mut stream(3, 0, 0, Purpose::HyperFit));
        assert!(error_rate(&m.predict(xv.view()), &yv) < 0.02);
        // A huge penalty shrinks the weights towards zero.
        let big = train(
            x.view(),
            &y,
            3,
            &SgdParams { l2: 5.0, ..p },
            &mut stream(3, 0, 0, Purpose::HyperFit),
        );
        assert!(
            big.w.iter().map(|v| v.abs()).sum::<f64>()
                < m.w.iter().map(|v| v.abs()).sum::<f64>() / 5.0
        );
    }

    #[test]
    fn one_full_batch_step_is_the_gradient_step() {
        // From zero, one step: W = -lr * mean((p - onehot) x^T) with p uniform.
        let x = ndarray::array![[1.0, 0.0], [0.0, 2.0]];
        let y = [0, 1];
        let p = SgdParams {
            batch: 2,
            l2: 0.3,
            lr: 0.5,
            epochs: 1,
        };
        let m = train(x.view(), &y, 2, &p, &mut stream(1, 0, 0, Purpose::HyperFit));
        // Row 0 (class 0): grad = mean([(0.5-1)*x0, 0.5*x1]) = [-0.25, 0.5]; W0 = [0.125, -0.25].
        assert!((m.w[[0, 0]] - 0.125).abs() < 1e-12 && (m.w[[0, 1]] + 0.25).abs() < 1e-12);
        assert!((m.w[[1, 0]] + 0.125).abs() < 1e-12 && (m.w[[1, 1]] - 0.25).abs() < 1e-12);
        assert_eq!(m.b[0], 0.0);
    }

    #[test]
    fn binary_step_is_the_weighted_gradient_step() {
        // From zero, p = 1/2 everywhere: grad_w = sum_i w_i (1/2 - y_i) x_i / sum_i w_i.
        let x = ndarray::array![[1.0, 0.0], [0.0, 2.0]];
        let (w, b) = train_binary(x.view(), &[0, 1], &[3.0, 1.0], 0.1, 0.5, 1);
        // grad = [3 * 0.5 * 1, 1 * (-0.5) * 2] / 4 = [0.375, -0.25]; grad_b = (1.5 - 0.5) / 4.
        assert!((w[0] + 0.5 * 0.375).abs() < 1e-12 && (w[1] - 0.5 * 0.25).abs() < 1e-12);
        assert!((b + 0.5 * 0.25).abs() < 1e-12);
        // Separable data: many steps rank the classes apart.
        let (w, b) = train_binary(x.view(), &[0, 1], &[1.0, 1.0], 0.0, 1.0, 200);
        assert!(x.row(1).dot(&w) + b > 2.0 && x.row(0).dot(&w) + b < -2.0);
    }

    #[test]
    fn divergence_is_detected_and_predicts_class_zero() {
        let (x, y) = blobs(60, 4);
        // W <- -9 W - g per step: overflows after about 320 steps.
        let p = SgdParams {
            batch: 60,
            l2: 10.0,
            lr: 1.0,
            epochs: 400,
        };
        let m = train(x.view(), &y, 3, &p, &mut stream(5, 0, 0, Purpose::HyperFit));
        assert!(m.diverged());
        assert!(m.predict(x.view()).iter().all(|&c| c == 0));
    }
}
