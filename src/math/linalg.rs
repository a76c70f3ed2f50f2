//! The small dense linear algebra of the surrogates, in plain Rust with a fixed order of
//! operations: Cholesky factorisation, triangular solves, products and a rank-one Cholesky
//! update.
//!
//! Why not LAPACK/BLAS: OpenBLAS picks its kernels for the CPU at run time (Haswell, Zen,
//! SkylakeX, ... each sum in their own order, some with FMA), and so does matrixmultiply behind
//! ndarray's matrix products. Thompson sampling turns a last-bit difference into a different
//! query a few iterations later, so the same spec and seed gave TS a final simple regret of
//! 0.0072 under OpenBLAS's Haswell kernels and 0.0055 under its Sandybridge ones (fts-fig1a,
//! measured on one machine with OPENBLAS_CORETYPE). Every function here sums in one order,
//! with separate multiplies and adds, in code compiled once for baseline x86-64, so results do
//! not depend on the CPU the binary runs on. The matrices are at most a few hundred wide
//! (1000 for a synthetic objective's prior, factorised once per spec), where this costs little.

use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis};

/// Dot product of two equal-length slices with four interleaved partial sums, combined as
/// (s0 + s1) + (s2 + s3) and then the tail: a fixed order that still lets the compiler use
/// vector registers.
#[inline]
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    debug_assert_eq!(a.len(), b.len());
    let n4 = a.len() / 4 * 4;
    let mut acc = [0.0f64; 4];
    for (ca, cb) in a[..n4].chunks_exact(4).zip(b[..n4].chunks_exact(4)) {
        for l in 0..4 {
            acc[l] += ca[l] * cb[l];
        }
    }
    let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for k in n4..a.len() {
        s += a[k] * b[k];
    }
    s
}

/// `(dot(a1, b), dot(a2, b))` with the bits of two calls to [`dot`], in one pass over `b`:
/// the two chains of sums interleave, and `b` is loaded once.
#[inline]
pub fn dot2(a1: &[f64], a2: &[f64], b: &[f64]) -> (f64, f64) {
    debug_assert!(a1.len() == b.len() && a2.len() == b.len());
    let n4 = b.len() / 4 * 4;
    let (mut acc1, mut acc2) = ([0.0f64; 4], [0.0f64; 4]);
    for ((c1, c2), cb) in a1[..n4]
        .chunks_exact(4)
        .zip(a2[..n4].chunks_exact(4))
        .zip(b[..n4].chunks_exact(4))
    {
        for l in 0..4 {
            acc1[l] += c1[l] * cb[l];
            acc2[l] += c2[l] * cb[l];
        }
    }
    let mut s1 = (acc1[0] + acc1[1]) + (acc1[2] + acc1[3]);
    let mut s2 = (acc2[0] + acc2[1]) + (acc2[2] + acc2[3]);
    for k in n4..b.len() {
        s1 += a1[k] * b[k];
        s2 += a2[k] * b[k];
    }
    (s1, s2)
}

crate::multiversion! {
    /// Lower Cholesky factor L (A = L L^T) of a symmetric matrix, reading its lower triangle;
    /// None unless positive definite. Each entry is L_ij = (A_ij - dot(L_i,<j, L_j,<j)) / L_jj,
    /// computed column by column: the entries of a column are independent of each other, so
    /// their dot products overlap in the pipeline (row by row, each waits for the one before).
    /// Same entries, same bits, in either order.
    pub fn cholesky(a: &Array2<f64>) -> Option<Array2<f64>> {
        let n = a.nrows();
        let mut l = Array2::<f64>::zeros((n, n));
        let ls = l.as_slice_mut().expect("fresh arrays are contiguous");
        for j in 0..n {
            let row_j = &ls[j * n..j * n + j];
            let s = a[[j, j]] - dot(row_j, row_j);
            // Also refuses NaN.
            if s.is_nan() || s <= 0.0 {
                return None;
            }
            let d = s.sqrt();
            ls[j * n + j] = d;
            let (done, below) = ls.split_at_mut((j + 1) * n);
            let row_j = &done[j * n..j * n + j];
            // Two rows at a time (dot2), then the odd one out.
            let mut pairs = below.chunks_exact_mut(2 * n);
            for (p, pair) in pairs.by_ref().enumerate() {
                let (r1, r2) = pair.split_at_mut(n);
                let (s1, s2) = dot2(&r1[..j], &r2[..j], row_j);
                let i = j + 1 + 2 * p;
                r1[j] = (a[[i, j]] - s1) / d;
                r2[j] = (a[[i + 1, j]] - s2) / d;
            }
            let odd = pairs.into_remainder();
            if !odd.is_empty() {
                let s = a[[n - 1, j]] - dot(&odd[..j], row_j);
                odd[j] = s / d;
            }
        }
        Some(l)
    }
}

/// Lower Cholesky factor of a symmetric positive-definite matrix. When rounding makes the
/// matrix numerically indefinite, retries with growing diagonal jitter (relative to the mean
/// diagonal) and reports the jitter used.
pub fn cholesky_jittered(a: &Array2<f64>) -> Option<(Array2<f64>, f64)> {
    if let Some(l) = cholesky(a) {
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
        if let Some(l) = cholesky(&b) {
            return Some((l, jitter));
        }
        jitter *= 10.0;
    }
    None
}

crate::multiversion! {
    /// X = L^-1 B for lower-triangular L and a matrix B (all columns at once, row by row).
    pub fn solve_lower_mat(l: ArrayView2<f64>, b: ArrayView2<f64>) -> Array2<f64> {
        let n = l.nrows();
        let mut x = b.to_owned();
        for i in 0..n {
            for k in 0..i {
                let lik = l[[i, k]];
                if lik != 0.0 {
                    let (done, rest) = x.view_mut().split_at(Axis(0), i);
                    let mut xi = rest.index_axis_move(Axis(0), 0);
                    xi.scaled_add(-lik, &done.row(k));
                }
            }
            let d = l[[i, i]];
            x.row_mut(i).mapv_inplace(|v| v / d);
        }
        x
    }
}

/// x = (L L^T)^-1 b given the Cholesky factor L.
pub fn cho_solve(l: ArrayView2<f64>, b: ArrayView1<f64>) -> Array1<f64> {
    let z = solve_lower(l, b);
    solve_lower_t(l, z.view())
}

crate::multiversion! {
    /// (L L^T)^-1 given the Cholesky factor L, as L^-T L^-1.
    pub fn cho_inverse(l: ArrayView2<f64>) -> Array2<f64> {
        let linv = lower_inverse(l);
        // gram(L^-1) over its lower triangle, mirrored: row r of L^-1 is zero past column r and
        // those zeros add nothing, and c_ij, c_ji sum the same products (ri rj = rj ri exactly)
        // in the same order, so this gives the bits of the full computation.
        let n = linv.nrows();
        let mut c = Array2::<f64>::zeros((n, n));
        {
            let cs = c.as_slice_mut().expect("fresh arrays are contiguous");
            for (r, row) in linv.rows().into_iter().enumerate() {
                let row = row.as_slice().expect("contiguous rows");
                for i in 0..=r {
                    let ri = row[i];
                    if ri != 0.0 {
                        for (cij, &rj) in cs[i * n..i * n + i + 1].iter_mut().zip(&row[..=i]) {
                            *cij += ri * rj;
                        }
                    }
                }
            }
        }
        for i in 0..n {
            for j in 0..i {
                c[[j, i]] = c[[i, j]];
            }
        }
        c
    }
}

crate::multiversion! {
    /// L^-1 for lower-triangular L, row by row as `solve_lower_mat(l, I)` computes it, touching
    /// only the lower triangle (the rest stays exactly zero there too).
    pub fn lower_inverse(l: ArrayView2<f64>) -> Array2<f64> {
        let n = l.nrows();
        let mut x = Array2::<f64>::eye(n);
        let xs = x.as_slice_mut().expect("fresh arrays are contiguous");
        for i in 0..n {
            for k in 0..i {
                let lik = l[[i, k]];
                if lik != 0.0 {
                    let (done, rest) = xs.split_at_mut(i * n);
                    let xk = &done[k * n..k * n + k + 1];
                    for (v, &u) in rest[..=k].iter_mut().zip(xk) {
                        *v += -lik * u;
                    }
                }
            }
            let d = l[[i, i]];
            for v in &mut xs[i * n..i * n + i + 1] {
                *v /= d;
            }
        }
        x
    }
}

crate::multiversion! {
    /// A^T A, summed over the rows of A in order.
    pub fn gram(a: ArrayView2<f64>) -> Array2<f64> {
        let m = a.ncols();
        let mut c = Array2::<f64>::zeros((m, m));
        for row in a.rows() {
            for i in 0..m {
                let ri = row[i];
                if ri != 0.0 {
                    c.row_mut(i).scaled_add(ri, &row);
                }
            }
        }
        c
    }
}

crate::multiversion! {
    /// A L for lower-triangular L, as `matmul(a, l)` computes it (C[i, :] += A[i, k] L[k, :] in
    /// order of k) but only over L's triangle: row k of L is zero past column k, and those zeros
    /// add nothing, so the bits are the same at about half the work.
    pub fn matmul_lower(a: ArrayView2<f64>, l: ArrayView2<f64>) -> Array2<f64> {
        assert_eq!(
            a.ncols(),
            l.nrows(),
            "matmul_lower: inner dimensions differ"
        );
        let m = l.ncols();
        let l = l.as_standard_layout();
        let ls = l.as_slice().expect("standard layout");
        let mut c = Array2::<f64>::zeros((a.nrows(), m));
        for (arow, mut crow) in a.rows().into_iter().zip(c.rows_mut()) {
            let crow = crow.as_slice_mut().expect("fresh arrays are contiguous");
            for (k, &aik) in arow.iter().enumerate() {
                let top = (k + 1).min(m);
                // Slices of equal length: the loop vectorises without bounds checks.
                for (cj, &lkj) in crow[..top].iter_mut().zip(&ls[k * m..k * m + top]) {
                    *cj += aik * lkj;
                }
            }
        }
        c
    }
}

crate::multiversion! {
    /// A U for upper-triangular U, as `matmul(a, u)` computes it (C[i, :] += A[i, k] U[k, :]
    /// in order of k) but only over U's triangle, where row k is zero before column k.
    pub fn matmul_upper(a: ArrayView2<f64>, u: ArrayView2<f64>) -> Array2<f64> {
        assert_eq!(
            a.ncols(),
            u.nrows(),
            "matmul_upper: inner dimensions differ"
        );
        let m = u.ncols();
        let u = u.as_standard_layout();
        let us = u.as_slice().expect("standard layout");
        let mut c = Array2::<f64>::zeros((a.nrows(), m));
        for (arow, mut crow) in a.rows().into_iter().zip(c.rows_mut()) {
            let crow = crow.as_slice_mut().expect("fresh arrays are contiguous");
            for (k, &aik) in arow.iter().enumerate().take(m) {
                for (cj, &ukj) in crow[k..].iter_mut().zip(&us[k * m + k..(k + 1) * m]) {
                    *cj += aik * ukj;
                }
            }
        }
        c
    }
}

crate::multiversion! {
    /// A B, each entry summed over k in order (C[i, :] += A[i, k] B[k, :]).
    pub fn matmul(a: ArrayView2<f64>, b: ArrayView2<f64>) -> Array2<f64> {
        assert_eq!(a.ncols(), b.nrows(), "matmul: inner dimensions differ");
        let mut c = Array2::<f64>::zeros((a.nrows(), b.ncols()));
        for (arow, mut crow) in a.rows().into_iter().zip(c.rows_mut()) {
            for (k, &aik) in arow.iter().enumerate() {
                crow.scaled_add(aik, &b.row(k));
            }
        }
        c
    }
}

/// In place: L <- chol(L L^T + v v^T). Classic Givens-style update; `v` is consumed.
pub fn chol_rank1_update(l: &mut Array2<f64>, v: &mut Array1<f64>) {
    let n = l.nrows();
    for k in 0..n {
        let lkk = l[[k, k]];
        let r = libm::hypot(lkk, v[k]);
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

/// Solves L x = b for lower-triangular L: x_i = (b_i - sum_j<i L_ij x_j) / L_ii, each sum
/// taken in order j = 0.. .
pub fn solve_lower(l: ArrayView2<f64>, b: ArrayView1<f64>) -> Array1<f64> {
    let n = l.nrows();
    let mut x = b.to_owned();
    let xs = x.as_slice_mut().expect("an owned vector is contiguous");
    let row = |i: usize| {
        l.row(i)
            .to_slice()
            .map(std::borrow::Cow::Borrowed)
            .unwrap_or_else(|| l.row(i).to_vec().into())
    };
    // Four rows at a time: their sums over the solved x_j are four independent chains of
    // subtractions, which the CPU overlaps where one row's chain waits on each subtraction.
    // Each row still subtracts its terms in order j = 0.. and then those of the rows solved
    // within its block, so x is the same bit for bit as row by row.
    let mut i = 0;
    while i + 4 <= n {
        let (r0, r1, r2, r3) = (row(i), row(i + 1), row(i + 2), row(i + 3));
        let mut acc = [xs[i], xs[i + 1], xs[i + 2], xs[i + 3]];
        for (j, &xj) in xs[..i].iter().enumerate() {
            acc[0] -= r0[j] * xj;
            acc[1] -= r1[j] * xj;
            acc[2] -= r2[j] * xj;
            acc[3] -= r3[j] * xj;
        }
        for (k, r) in [&r0, &r1, &r2, &r3].into_iter().enumerate() {
            for j in i..i + k {
                acc[k] -= r[j] * xs[j];
            }
            xs[i + k] = acc[k] / r[i + k];
        }
        i += 4;
    }
    for i in i..n {
        let r = row(i);
        let mut acc = xs[i];
        for j in 0..i {
            acc -= r[j] * xs[j];
        }
        xs[i] = acc / r[i];
    }
    x
}

crate::multiversion! {
    /// Solves L^T x = b for lower-triangular L.
    pub fn solve_lower_t(l: ArrayView2<f64>, b: ArrayView1<f64>) -> Array1<f64> {
        let n = l.nrows();
        let mut x = b.to_owned();
        let xs = x.as_slice_mut().expect("an owned vector is contiguous");
        for i in (0..n).rev() {
            let row = l.row(i);
            let xi = xs[i] / row[i];
            xs[i] = xi;
            // Column i of L is row i of L^T: subtract its contribution from the rows above
            // (independent updates, which vectorise over a contiguous row).
            match row.to_slice() {
                Some(r) => {
                    for (xj, &lij) in xs[..i].iter_mut().zip(&r[..i]) {
                        *xj -= lij * xi;
                    }
                }
                None => {
                    for j in 0..i {
                        xs[j] -= row[j] * xi;
                    }
                }
            }
        }
        x
    }
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

/// Pairwise squared Euclidean distances between the rows of `x`.
pub fn sq_dists(x: ArrayView2<f64>) -> Array2<f64> {
    let n = x.nrows();
    let mut d = Array2::zeros((n, n));
    for i in 0..n {
        for j in 0..i {
            let v = row_sq_dist(x, i, j);
            d[[i, j]] = v;
            d[[j, i]] = v;
        }
    }
    d
}

/// The lower triangle of `sq_dists(x)`, diagonal included, row by row (row i at
/// i (i + 1) / 2): the same numbers in half the memory, without the full matrix.
pub fn sq_dists_lower(x: ArrayView2<f64>) -> Vec<f64> {
    let n = x.nrows();
    let mut d = Vec::with_capacity(n * (n + 1) / 2);
    for i in 0..n {
        d.extend((0..i).map(|j| row_sq_dist(x, i, j)));
        d.push(0.0);
    }
    d
}

/// |x_i - x_j|^2 over the columns of `x`.
fn row_sq_dist(x: ArrayView2<f64>, i: usize, j: usize) -> f64 {
    x.row(i)
        .iter()
        .zip(x.row(j))
        .map(|(a, b)| (a - b) * (a - b))
        .sum()
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
        let mut l = cholesky(&a).unwrap();
        let v = array![0.3, -1.2, 0.7];
        let mut updated = a.clone();
        for i in 0..3 {
            for j in 0..3 {
                updated[[i, j]] += v[i] * v[j];
            }
        }
        chol_rank1_update(&mut l, &mut v.clone());
        let expect = cholesky(&updated).unwrap();
        for (x, y) in l.iter().zip(expect.iter()) {
            assert!((x - y).abs() < 1e-12, "{x} vs {y}");
        }
    }

    #[test]
    fn triangular_solves_invert_their_matrices() {
        let l = cholesky(&spd()).unwrap();
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

    /// sq_dists_lower holds sq_dists's lower triangle, diagonal included, bit for bit.
    #[test]
    fn the_packed_lower_triangle_is_that_of_the_full_matrix() {
        let x = Array2::from_shape_fn((6, 3), |(i, k)| ((i * 3 + k) as f64 * 0.91).sin());
        let (full, packed) = (sq_dists(x.view()), sq_dists_lower(x.view()));
        let lower: Vec<u64> = (0..6)
            .flat_map(|i| (0..=i).map(move |j| (i, j)))
            .map(|(i, j)| full[[i, j]].to_bits())
            .collect();
        assert_eq!(
            packed.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            lower
        );
    }

    /// The blocked forward solve and the slice-wise back solve give the bits of the plain
    /// row-by-row substitutions they replaced, for sizes around the block of four (and on a
    /// non-contiguous view, which takes the fallback paths).
    #[test]
    fn triangular_solves_keep_the_bits_of_plain_substitution() {
        for n in 1..=11 {
            let l = Array2::from_shape_fn((n, n), |(i, j)| {
                if j > i {
                    0.0
                } else if i == j {
                    1.5 + (i as f64 * 0.37).sin().abs()
                } else {
                    ((i * 7 + j * 3) as f64).cos() * 0.9
                }
            });
            let b = Array1::from_shape_fn(n, |i| (i as f64 * 1.3).sin() + 0.1);
            let mut plain = b.clone();
            for i in 0..n {
                let mut acc = plain[i];
                for j in 0..i {
                    acc -= l[[i, j]] * plain[j];
                }
                plain[i] = acc / l[[i, i]];
            }
            let mut plain_t = b.clone();
            for i in (0..n).rev() {
                let xi = plain_t[i] / l[[i, i]];
                plain_t[i] = xi;
                for j in 0..i {
                    plain_t[j] -= l[[i, j]] * xi;
                }
            }
            let bits = |v: &Array1<f64>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            // Row-major, and column-major (rows not contiguous: the fallback paths).
            let mut f = Array2::zeros(ndarray::ShapeBuilder::f((n, n)));
            f.assign(&l);
            for m in [&l, &f] {
                let x = solve_lower(m.view(), b.view());
                assert_eq!(bits(&x), bits(&plain), "n = {n}");
                let y = solve_lower_t(m.view(), b.view());
                assert_eq!(bits(&y), bits(&plain_t), "n = {n}");
            }
        }
    }

    #[test]
    fn cholesky_recovers_a_known_factor_and_refuses_indefinite_matrices() {
        // A = L0 L0^T with an integer L0: the factor must come back to rounding.
        let l0 = array![[2.0, 0.0, 0.0], [1.0, 3.0, 0.0], [-1.0, 0.5, 1.5]];
        let a = l0.dot(&l0.t());
        let l = cholesky(&a).unwrap();
        for (x, y) in l.iter().zip(l0.iter()) {
            assert!((x - y).abs() < 1e-14, "{x} vs {y}");
        }
        assert!(cholesky(&array![[1.0, 2.0], [2.0, 1.0]]).is_none());
        assert!(cholesky(&array![[f64::NAN]]).is_none());
    }

    #[test]
    fn inverse_products_and_matrix_solves_match_their_definitions() {
        let a = spd();
        let l = cholesky(&a).unwrap();
        let inv = cho_inverse(l.view());
        let eye = matmul(a.view(), inv.view());
        for ((i, j), v) in eye.indexed_iter() {
            assert!(
                (v - if i == j { 1.0 } else { 0.0 }).abs() < 1e-14,
                "{i},{j}: {v}"
            );
        }
        let b = array![[1.0, 2.0], [0.5, -1.0], [3.0, 0.0]];
        let x = solve_lower_mat(l.view(), b.view());
        let back = matmul(l.view(), x.view());
        assert!(
            back.iter()
                .zip(b.iter())
                .all(|(p, q)| (p - q).abs() < 1e-14)
        );
        assert_eq!(gram(b.view()), b.t().dot(&b));
        assert_eq!(matmul(b.t(), b.view()), b.t().dot(&b));
        let y = cho_solve(l.view(), array![1.0, -2.0, 0.5].view());
        let back = a.dot(&y);
        assert!((back[1] + 2.0).abs() < 1e-14 && (back[2] - 0.5).abs() < 1e-14);
        assert_eq!(
            dot(&[1.0, 2.0, 3.0, 4.0, 5.0], &[1.0, 1.0, 1.0, 1.0, 2.0]),
            20.0
        );
    }

    #[test]
    fn jitter_rescues_a_singular_matrix() {
        let a = array![[1.0, 1.0], [1.0, 1.0]];
        let (_, jitter) = cholesky_jittered(&a).expect("jitter should rescue");
        assert!(jitter > 0.0);
    }

    #[test]
    fn dot2_gives_the_bits_of_two_dots() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for len in 0..23 {
            let v: Vec<Vec<f64>> = (0..3)
                .map(|_| (0..len).map(|_| rng.random::<f64>() - 0.3).collect())
                .collect();
            let (s1, s2) = dot2(&v[0], &v[1], &v[2]);
            assert_eq!(s1.to_bits(), dot(&v[0], &v[2]).to_bits());
            assert_eq!(s2.to_bits(), dot(&v[1], &v[2]).to_bits());
        }
    }

    #[test]
    fn argmax_prefers_first_of_ties_and_skips_nan() {
        assert_eq!(argmax(array![1.0, 3.0, 3.0].view()), 1);
        assert_eq!(argmax(array![f64::NAN, 0.5, 0.1].view()), 1);
    }

    #[test]
    fn matmul_upper_gives_the_bits_of_matmul() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
        let a = Array2::from_shape_fn((7, 5), |_| rng.random::<f64>() - 0.5);
        let u = Array2::from_shape_fn((5, 5), |(i, j)| {
            if j >= i {
                rng.random::<f64>() - 0.5
            } else {
                0.0
            }
        });
        let (x, y) = (matmul_upper(a.view(), u.view()), matmul(a.view(), u.view()));
        for (p, q) in x.iter().zip(&y) {
            assert_eq!(p.to_bits(), q.to_bits());
        }
    }

    #[test]
    fn matmul_lower_gives_the_bits_of_matmul() {
        let a = Array2::from_shape_fn((7, 5), |(i, j)| ((i * 5 + j) as f64 * 0.37).sin());
        let mut l = Array2::from_shape_fn((5, 5), |(i, j)| ((i + 2 * j) as f64 * 0.91).cos());
        for i in 0..5 {
            for j in i + 1..5 {
                l[[i, j]] = 0.0;
            }
        }
        let (x, y) = (matmul(a.view(), l.view()), matmul_lower(a.view(), l.view()));
        assert!(
            x.iter()
                .zip(y.iter())
                .all(|(p, q)| p.to_bits() == q.to_bits())
        );
    }
}
