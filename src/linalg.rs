//! Small dense kernels the surrogates need beyond what LAPACK offers directly: a rank-one
//! Cholesky update (so a new observation costs O(M^2), not a fresh O(M^3) factorisation) and
//! triangular solves against one vector.

use ndarray::{Array1, Array2, ArrayView1, ArrayView2};
use ndarray_linalg::{UPLO, cholesky::Cholesky};

unsafe extern "C" {
    fn openblas_set_num_threads(n: i32);
}

/// Pins OpenBLAS to one thread, once per process, before the first LAPACK call. fbo's matrices
/// are at most a few hundred wide and its runs are already parallel; OpenBLAS threads on top
/// of them only spin against busy cores (measured: one GP-fit test went from 1 s to 145 s with
/// the other core loaded). Every function here that calls LAPACK calls this first.
pub fn single_threaded_blas() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: a plain setter of OpenBLAS's thread count, called once before any other BLAS use
    // from fbo.
    ONCE.call_once(|| unsafe { openblas_set_num_threads(1) });
}

/// Lower Cholesky factor of a symmetric positive-definite matrix. When rounding makes the
/// matrix numerically indefinite, retries with growing diagonal jitter (relative to the mean
/// diagonal) and reports the jitter used.
pub fn cholesky_jittered(a: &Array2<f64>) -> Option<(Array2<f64>, f64)> {
    single_threaded_blas();
    if let Ok(l) = a.cholesky(UPLO::Lower) {
        return Some((l, 0.0));
    }
    let n = a.nrows();
    let scale = (0..n).map(|i| a[[i, i]]).sum::<f64>() / n.max(1) as f64;
    let mut jitter = 1e-10 * scale.max(f64::MIN_POSITIVE);
    for _ in 0..8 {
        let mut b = a.clone();
        for i in 0..n {
            b[[i, i]] += jitter;
        }
        if let Ok(l) = b.cholesky(UPLO::Lower) {
            return Some((l, jitter));
        }
        jitter *= 10.0;
    }
    None
}

/// In place: L <- chol(L L^T + v v^T). Classic Givens-style update; `v` is consumed.
pub fn chol_rank1_update(l: &mut Array2<f64>, v: &mut Array1<f64>) {
    let n = l.nrows();
    for k in 0..n {
        let lkk = l[[k, k]];
        let r = lkk.hypot(v[k]);
        let c = r / lkk;
        let s = v[k] / lkk;
        l[[k, k]] = r;
        for i in (k + 1)..n {
            let lik = (l[[i, k]] + s * v[i]) / c;
            v[i] = c * v[i] - s * lik;
            l[[i, k]] = lik;
        }
    }
}

/// Solves L x = b for lower-triangular L.
pub fn solve_lower(l: ArrayView2<f64>, b: ArrayView1<f64>) -> Array1<f64> {
    let n = l.nrows();
    let mut x = b.to_owned();
    for i in 0..n {
        let row = l.row(i);
        let mut acc = x[i];
        for j in 0..i {
            acc -= row[j] * x[j];
        }
        x[i] = acc / row[i];
    }
    x
}

/// Solves L^T x = b for lower-triangular L.
pub fn solve_lower_t(l: ArrayView2<f64>, b: ArrayView1<f64>) -> Array1<f64> {
    let n = l.nrows();
    let mut x = b.to_owned();
    for i in (0..n).rev() {
        let xi = x[i] / l[[i, i]];
        x[i] = xi;
        // Column i of L is row i of L^T: subtract its contribution from the rows above.
        for j in 0..i {
            x[j] -= l[[i, j]] * xi;
        }
    }
    x
}

/// Index of the largest value; ties go to the lowest index, NaN never wins.
pub fn argmax(values: ArrayView1<f64>) -> usize {
    let mut best = 0;
    let mut best_v = f64::NEG_INFINITY;
    for (i, &v) in values.iter().enumerate() {
        if v > best_v {
            best_v = v;
            best = i;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    fn spd() -> Array2<f64> {
        array![[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]]
    }

    #[test]
    fn rank1_update_matches_refactorisation() {
        let a = spd();
        let mut l = a.cholesky(UPLO::Lower).unwrap();
        let v = array![0.3, -1.2, 0.7];
        let mut updated = a.clone();
        for i in 0..3 {
            for j in 0..3 {
                updated[[i, j]] += v[i] * v[j];
            }
        }
        chol_rank1_update(&mut l, &mut v.clone());
        let expect = updated.cholesky(UPLO::Lower).unwrap();
        for (x, y) in l.iter().zip(expect.iter()) {
            assert!((x - y).abs() < 1e-12, "{x} vs {y}");
        }
    }

    #[test]
    fn triangular_solves_invert_their_matrices() {
        let l = spd().cholesky(UPLO::Lower).unwrap();
        let b = array![1.0, 2.0, -3.0];
        let x = solve_lower(l.view(), b.view());
        let back = l.dot(&x);
        let y = solve_lower_t(l.view(), b.view());
        let back_t = l.t().dot(&y);
        for i in 0..3 {
            assert!((back[i] - b[i]).abs() < 1e-12);
            assert!((back_t[i] - b[i]).abs() < 1e-12);
        }
    }

    #[test]
    fn jitter_rescues_a_singular_matrix() {
        let a = array![[1.0, 1.0], [1.0, 1.0]];
        let (_, jitter) = cholesky_jittered(&a).expect("jitter should rescue");
        assert!(jitter > 0.0);
    }

    #[test]
    fn argmax_prefers_first_of_ties_and_skips_nan() {
        assert_eq!(argmax(array![1.0, 3.0, 3.0].view()), 1);
        assert_eq!(argmax(array![f64::NAN, 0.5, 0.1].view()), 1);
    }
}
