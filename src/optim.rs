//! Small L-BFGS minimisers for smooth, low-dimensional problems: unconstrained (GP
//! hyperparameters, bounded by reparametrisation) and box-constrained (acquisition on a
//! continuous search space, where the optimum often sits on a face of the box), plus the
//! multi-start maximiser the algorithms use on a box.

use crate::error::Result;
use crate::objective::space::{Region, halton, one_hot};
use std::ops::Range;

/// Objective: returns (value, gradient) or None where it cannot be evaluated (treated as +inf).
pub trait Objective {
    fn eval(&mut self, x: &[f64]) -> Option<(f64, Vec<f64>)>;

    /// The value alone. `lbfgs` asks this of line-search trials and then `gradient` of the
    /// accepted one: objectives whose gradient costs much more than their value override
    /// both (sharing the work between them); these defaults evaluate both every time.
    fn value(&mut self, x: &[f64]) -> Option<f64> {
        self.eval(x).map(|(v, _)| v)
    }

    fn gradient(&mut self, x: &[f64]) -> Option<Vec<f64>> {
        self.eval(x).map(|(_, g)| g)
    }
}

impl<F: FnMut(&[f64]) -> Option<(f64, Vec<f64>)>> Objective for F {
    fn eval(&mut self, x: &[f64]) -> Option<(f64, Vec<f64>)> {
        self(x)
    }
}

#[derive(Clone, Copy, Debug)]
pub struct LbfgsOptions {
    pub max_iter: usize,
    pub memory: usize,
    pub grad_tol: f64,
    pub f_rel_tol: f64,
}

impl Default for LbfgsOptions {
    fn default() -> Self {
        LbfgsOptions {
            max_iter: 60,
            memory: 6,
            grad_tol: 1e-6,
            f_rel_tol: 1e-10,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Minimum {
    pub x: Vec<f64>,
    pub value: f64,
    pub evaluations: usize,
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Minimises from `x0`. Returns None only if the objective cannot be evaluated at `x0`.
pub fn lbfgs(obj: &mut impl Objective, x0: &[f64], opts: LbfgsOptions) -> Option<Minimum> {
    let n = x0.len();
    let mut x = x0.to_vec();
    let (mut f, mut g) = obj.eval(&x)?;
    let mut evals = 1;
    let mut s_hist: Vec<Vec<f64>> = Vec::new();
    let mut y_hist: Vec<Vec<f64>> = Vec::new();
    for _ in 0..opts.max_iter {
        if dot(&g, &g).sqrt() < opts.grad_tol {
            break;
        }
        // Two-loop recursion for d = -H g.
        let mut q = g.clone();
        let k = s_hist.len();
        let mut alpha = vec![0.0; k];
        for i in (0..k).rev() {
            let rho = 1.0 / dot(&y_hist[i], &s_hist[i]);
            alpha[i] = rho * dot(&s_hist[i], &q);
            for j in 0..n {
                q[j] -= alpha[i] * y_hist[i][j];
            }
        }
        let gamma = if k > 0 {
            dot(&s_hist[k - 1], &y_hist[k - 1]) / dot(&y_hist[k - 1], &y_hist[k - 1])
        } else {
            // First step: move at most unit length.
            1.0 / dot(&g, &g).sqrt().max(1.0)
        };
        for v in q.iter_mut() {
            *v *= gamma;
        }
        for i in 0..k {
            let rho = 1.0 / dot(&y_hist[i], &s_hist[i]);
            let beta = rho * dot(&y_hist[i], &q);
            for j in 0..n {
                q[j] += s_hist[i][j] * (alpha[i] - beta);
            }
        }
        let mut d: Vec<f64> = q.iter().map(|v| -v).collect();
        let mut slope = dot(&g, &d);
        if slope >= 0.0 {
            // Not a descent direction (curvature information went stale): steepest descent.
            d = g.iter().map(|v| -v).collect();
            slope = -dot(&g, &g);
            s_hist.clear();
            y_hist.clear();
        }
        // Backtracking line search with the Armijo condition.
        let mut step = 1.0;
        let mut accepted = None;
        for _ in 0..30 {
            let xn: Vec<f64> = x.iter().zip(&d).map(|(a, b)| a + step * b).collect();
            evals += 1;
            if let Some(fn_) = obj.value(&xn)
                && fn_.is_finite()
                && fn_ <= f + 1e-4 * step * slope
            {
                if let Some(gn) = obj.gradient(&xn) {
                    accepted = Some((xn, fn_, gn));
                }
                break;
            }
            step *= 0.5;
        }
        let Some((xn, fn_, gn)) = accepted else {
            break;
        };
        let s: Vec<f64> = xn.iter().zip(&x).map(|(a, b)| a - b).collect();
        let yv: Vec<f64> = gn.iter().zip(&g).map(|(a, b)| a - b).collect();
        let converged = (f - fn_).abs() <= opts.f_rel_tol * f.abs().max(1.0);
        if dot(&s, &yv) > 1e-12 {
            if s_hist.len() == opts.memory {
                s_hist.remove(0);
                y_hist.remove(0);
            }
            s_hist.push(s);
            y_hist.push(yv);
        }
        x = xn;
        f = fn_;
        g = gn;
        if converged {
            break;
        }
    }
    Some(Minimum {
        x,
        value: f,
        evaluations: evals,
    })
}

/// Two-loop recursion: d = -H g from the stored pairs, with the pairs' own scaling.
fn two_loop(g: &[f64], s_hist: &[Vec<f64>], y_hist: &[Vec<f64>]) -> Vec<f64> {
    let k = s_hist.len();
    let mut q = g.to_vec();
    let mut alpha = vec![0.0; k];
    for i in (0..k).rev() {
        let rho = 1.0 / dot(&y_hist[i], &s_hist[i]);
        alpha[i] = rho * dot(&s_hist[i], &q);
        for (qj, yj) in q.iter_mut().zip(&y_hist[i]) {
            *qj -= alpha[i] * yj;
        }
    }
    let gamma = if k > 0 {
        dot(&s_hist[k - 1], &y_hist[k - 1]) / dot(&y_hist[k - 1], &y_hist[k - 1])
    } else {
        1.0 / dot(g, g).sqrt().max(1.0)
    };
    for v in q.iter_mut() {
        *v *= gamma;
    }
    for i in 0..k {
        let rho = 1.0 / dot(&y_hist[i], &s_hist[i]);
        let beta = rho * dot(&y_hist[i], &q);
        for (qj, sj) in q.iter_mut().zip(&s_hist[i]) {
            *qj += sj * (alpha[i] - beta);
        }
    }
    q.iter().map(|v| -v).collect()
}

/// Minimises over `region` from `x0` (moved into the region first) by projected L-BFGS: the
/// coordinates held at a bound by their gradient are fixed, the quasi-Newton step is taken in
/// the others, and the line search follows the projection of the step onto the box, so every
/// evaluated point lies inside. Stops when the projected gradient vanishes (`grad_tol`), the
/// value stalls (`f_rel_tol`) or after `max_iter` steps.
pub fn lbfgs_box(
    obj: &mut impl Objective,
    x0: &[f64],
    region: &Region,
    opts: LbfgsOptions,
) -> Option<Minimum> {
    let (lo, hi) = (&region.lo, &region.hi);
    let project = |x: &mut Vec<f64>| {
        for ((v, l), h) in x.iter_mut().zip(lo).zip(hi) {
            *v = v.clamp(*l, *h);
        }
    };
    let mut x = x0.to_vec();
    project(&mut x);
    let (mut f, mut g) = obj.eval(&x)?;
    let mut evals = 1;
    let mut s_hist: Vec<Vec<f64>> = Vec::new();
    let mut y_hist: Vec<Vec<f64>> = Vec::new();
    for _ in 0..opts.max_iter {
        // Projected gradient: the step steepest descent would take inside the box.
        let pg: Vec<f64> = (0..x.len())
            .map(|k| (x[k] - g[k]).clamp(lo[k], hi[k]) - x[k])
            .collect();
        if dot(&pg, &pg).sqrt() < opts.grad_tol {
            break;
        }
        let active: Vec<bool> = (0..x.len())
            .map(|k| (x[k] <= lo[k] && g[k] > 0.0) || (x[k] >= hi[k] && g[k] < 0.0))
            .collect();
        let g_free: Vec<f64> = g
            .iter()
            .zip(&active)
            .map(|(v, a)| if *a { 0.0 } else { *v })
            .collect();
        let mut d = two_loop(&g_free, &s_hist, &y_hist);
        for (dk, a) in d.iter_mut().zip(&active) {
            if *a {
                *dk = 0.0;
            }
        }
        if dot(&g_free, &d) >= 0.0 {
            d = g_free.iter().map(|v| -v).collect();
            s_hist.clear();
            y_hist.clear();
        }
        let mut step = 1.0;
        let mut accepted = None;
        for _ in 0..40 {
            let mut xn: Vec<f64> = x.iter().zip(&d).map(|(a, b)| a + step * b).collect();
            project(&mut xn);
            let moved: Vec<f64> = xn.iter().zip(&x).map(|(a, b)| a - b).collect();
            let decrease = dot(&g, &moved);
            if decrease >= 0.0 {
                step *= 0.5;
                continue;
            }
            evals += 1;
            if let Some((fn_, gn)) = obj.eval(&xn)
                && fn_.is_finite()
                && fn_ <= f + 1e-4 * decrease
            {
                accepted = Some((xn, fn_, gn));
                break;
            }
            step *= 0.5;
        }
        let Some((xn, fn_, gn)) = accepted else {
            break;
        };
        let s: Vec<f64> = xn.iter().zip(&x).map(|(a, b)| a - b).collect();
        let yv: Vec<f64> = gn.iter().zip(&g).map(|(a, b)| a - b).collect();
        let converged = (f - fn_).abs() <= opts.f_rel_tol * f.abs().max(1.0);
        if dot(&s, &yv) > 1e-16 * dot(&s, &s).sqrt() * dot(&yv, &yv).sqrt() {
            if s_hist.len() == opts.memory {
                s_hist.remove(0);
                y_hist.remove(0);
            }
            s_hist.push(s);
            y_hist.push(yv);
        }
        x = xn;
        f = fn_;
        g = gn;
        if converged {
            break;
        }
    }
    Some(Minimum {
        x,
        value: f,
        evaluations: evals,
    })
}

/// How a continuous box is searched: `candidates` quasi-random points, then box-constrained
/// L-BFGS from the best `starts` of them (the authors' acq_max: random points, then L-BFGS-B
/// from the best).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoxSearch {
    pub candidates: usize,
    pub starts: usize,
}

/// A function to maximise with its gradient: `f(x, Some(grad))` fills the gradient,
/// `f(x, None)` only returns the value.
pub trait Acquisition {
    fn value(&mut self, x: &[f64], grad: Option<&mut [f64]>) -> f64;
}

impl<F: FnMut(&[f64], Option<&mut [f64]>) -> f64> Acquisition for F {
    fn value(&mut self, x: &[f64], grad: Option<&mut [f64]>) -> f64 {
        self(x, grad)
    }
}

/// argmax over `region` of `acq`: the best of the candidates and of the local searches
/// started from the best candidates (ties to the earlier). Never leaves the region.
///
/// `groups` are one-hot blocks of categorical parameters: every candidate has each block
/// made one-hot (a uniformly random choice, since the candidate's coordinates are), and a
/// local search moves only the other coordinates, so `acq` is only ever asked about valid
/// configurations and the choice is made by the candidates.
pub fn maximise<R: rand::Rng + ?Sized>(
    acq: &mut impl Acquisition,
    region: &Region,
    groups: &[Range<usize>],
    search: BoxSearch,
    rng: &mut R,
) -> Result<(Vec<f64>, f64)> {
    let mut cands = halton(search.candidates.max(1), region, rng)?;
    for c in &mut cands {
        for g in groups {
            let bounds = (&region.lo[g.clone()], &region.hi[g.clone()]);
            if !one_hot(&mut c[g.clone()], Some(bounds)) {
                return Err(crate::error::FboError::Run(format!(
                    "the search region [{:?}, {:?}] holds no choice of a categorical parameter",
                    region.lo, region.hi
                )));
            }
        }
    }
    let mut scored: Vec<(f64, usize)> = cands
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let v = acq.value(c, None);
            (if v.is_nan() { f64::NEG_INFINITY } else { v }, i)
        })
        .collect();
    // Best first; equal values keep candidate order so the result is deterministic.
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut best = (cands[scored[0].1].clone(), scored[0].0);
    let mut neg = |x: &[f64]| {
        let mut g = vec![0.0; x.len()];
        let v = acq.value(x, Some(&mut g));
        if !v.is_finite() {
            return None;
        }
        Some((-v, g.into_iter().map(|v| -v).collect()))
    };
    let opts = LbfgsOptions {
        max_iter: 100,
        memory: 6,
        grad_tol: 1e-10,
        f_rel_tol: 1e-13,
    };
    for &(_, i) in scored.iter().take(search.starts) {
        // The choices stay as the candidate has them: a box of zero width on their block.
        let mut local = region.clone();
        for g in groups {
            for j in g.clone() {
                local.lo[j] = cands[i][j];
                local.hi[j] = cands[i][j];
            }
        }
        if let Some(m) = lbfgs_box(&mut neg, &cands[i], &local, opts)
            && -m.value > best.1
        {
            best = (m.x, -m.value);
        }
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_minimum_of_rosenbrock() {
        let mut rosen = |x: &[f64]| {
            let (a, b) = (x[0], x[1]);
            let f = (1.0 - a).powi(2) + 100.0 * (b - a * a).powi(2);
            let g = vec![
                -2.0 * (1.0 - a) - 400.0 * a * (b - a * a),
                200.0 * (b - a * a),
            ];
            Some((f, g))
        };
        let opts = LbfgsOptions {
            max_iter: 500,
            ..Default::default()
        };
        let m = lbfgs(&mut rosen, &[-1.2, 1.0], opts).unwrap();
        assert!(
            (m.x[0] - 1.0).abs() < 1e-4 && (m.x[1] - 1.0).abs() < 1e-4,
            "{:?}",
            m.x
        );
    }

    #[test]
    fn minimises_a_quadratic_exactly() {
        let mut quad = |x: &[f64]| {
            let f = 3.0 * (x[0] - 2.0).powi(2) + 0.5 * (x[1] + 1.0).powi(2);
            Some((f, vec![6.0 * (x[0] - 2.0), x[1] + 1.0]))
        };
        let m = lbfgs(&mut quad, &[0.0, 0.0], LbfgsOptions::default()).unwrap();
        assert!((m.x[0] - 2.0).abs() < 1e-6 && (m.x[1] + 1.0).abs() < 1e-6);
    }

    #[test]
    fn box_search_stops_on_the_face_the_gradient_points_through() {
        // Unconstrained minimum at (2, 0.3); in the unit box the minimum is (1, 0.3).
        let mut quad = |x: &[f64]| {
            let f = (x[0] - 2.0).powi(2) + 4.0 * (x[1] - 0.3).powi(2);
            Some((f, vec![2.0 * (x[0] - 2.0), 8.0 * (x[1] - 0.3)]))
        };
        let r = Region::unit(2);
        let m = lbfgs_box(&mut quad, &[0.1, 0.9], &r, LbfgsOptions::default()).unwrap();
        assert_eq!(m.x[0], 1.0);
        assert!((m.x[1] - 0.3).abs() < 1e-8, "{:?}", m.x);
    }

    #[test]
    fn multi_start_finds_the_global_maximum_of_closed_forms_inside_the_box() {
        use crate::math::rng::{Purpose, stream};
        let search = BoxSearch {
            candidates: 200,
            starts: 10,
        };
        // Negated Branin on [-5, 10] x [0, 15] mapped to the unit square: three global maxima
        // of -0.397887357729738 (Branin & Hoo; Surjanovic & Bingham's table).
        let mut branin = |u: &[f64], g: Option<&mut [f64]>| {
            let (x, y) = (15.0 * u[0] - 5.0, 15.0 * u[1]);
            let b = 5.1 / (4.0 * std::f64::consts::PI.powi(2));
            let c = 5.0 / std::f64::consts::PI;
            let t = 1.0 / (8.0 * std::f64::consts::PI);
            let inner = y - b * x * x + c * x - 6.0;
            let f = inner * inner + 10.0 * (1.0 - t) * x.cos() + 10.0;
            if let Some(g) = g {
                g[0] = -15.0 * (2.0 * inner * (-2.0 * b * x + c) - 10.0 * (1.0 - t) * x.sin());
                g[1] = -15.0 * 2.0 * inner;
            }
            -f
        };
        let mut rng = stream(5, 0, 0, Purpose::Acquisition);
        let r = Region::unit(2);
        let (x, v) = maximise(&mut branin, &r, &[], search, &mut rng).unwrap();
        assert!((v + 0.397_887_357_729_738).abs() < 1e-9, "{v} at {x:?}");
        let maxima = [
            (-std::f64::consts::PI, 12.275),
            (std::f64::consts::PI, 2.275),
            (9.42478, 2.475),
        ];
        let near = maxima
            .iter()
            .map(|(a, b)| ((15.0 * x[0] - 5.0 - a).abs()).max((15.0 * x[1] - b).abs()))
            .fold(f64::INFINITY, f64::min);
        assert!(near < 1e-5, "{x:?}");
        // A maximum on a corner: f = x0 + x1 on a sub-box.
        let mut lin = |u: &[f64], g: Option<&mut [f64]>| {
            if let Some(g) = g {
                g.fill(1.0);
            }
            u[0] + u[1]
        };
        let sub = Region {
            lo: vec![0.0, 0.5],
            hi: vec![0.5, 1.0],
        };
        let (x, _) = maximise(&mut lin, &sub, &[], search, &mut rng).unwrap();
        assert_eq!(x, vec![0.5, 1.0]);
        // An interior maximum: f = -(x0 - 0.123456)^2 - (x1 - 0.654321)^2 to 1e-6.
        let mut bowl = |u: &[f64], g: Option<&mut [f64]>| {
            let (a, b) = (u[0] - 0.123_456, u[1] - 0.654_321);
            if let Some(g) = g {
                g[0] = -2.0 * a;
                g[1] = -2.0 * b;
            }
            -(a * a + b * b)
        };
        let (x, _) = maximise(&mut bowl, &r, &[], search, &mut rng).unwrap();
        assert!(
            (x[0] - 0.123_456).abs() < 1e-6 && (x[1] - 0.654_321).abs() < 1e-6,
            "{x:?}"
        );
    }

    #[test]
    fn categorical_blocks_are_searched_as_choices_and_never_relaxed() {
        // f = -(x0 - 0.3)^2 + bonus of the choice in coordinates 1..4; a relaxed search would
        // climb to a mixture of choices (its linear part is largest at the corner of the best
        // one, but every candidate must already be one-hot).
        let bonus = [0.0, 1.0, 0.5];
        let mut seen_invalid = false;
        let mut f = |x: &[f64], g: Option<&mut [f64]>| {
            let block = &x[1..4];
            let ones = block.iter().filter(|&&v| v == 1.0).count();
            let zeros = block.iter().filter(|&&v| v == 0.0).count();
            seen_invalid |= ones != 1 || zeros != 2;
            let v =
                -(x[0] - 0.3).powi(2) + block.iter().zip(&bonus).map(|(a, b)| a * b).sum::<f64>();
            if let Some(g) = g {
                g[0] = -2.0 * (x[0] - 0.3);
                g[1..4].copy_from_slice(&bonus);
            }
            v
        };
        use crate::math::rng::{Purpose, stream};
        let mut rng = stream(3, 0, 0, Purpose::Acquisition);
        let search = BoxSearch {
            candidates: 64,
            starts: 4,
        };
        let block: std::ops::Range<usize> = 1..4;
        let groups = [block];
        let (x, v) = maximise(&mut f, &Region::unit(4), &groups, search, &mut rng).unwrap();
        assert!(
            !seen_invalid,
            "the acquisition was asked about a point between choices"
        );
        assert_eq!(&x[1..4], &[0.0, 1.0, 0.0]);
        assert!(
            (x[0] - 0.3).abs() < 1e-6 && (v - 1.0).abs() < 1e-10,
            "{x:?} {v}"
        );
    }
}
