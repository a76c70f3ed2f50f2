//! Small L-BFGS minimisers for smooth, low-dimensional problems: unconstrained (GP
//! hyperparameters, bounded by reparametrisation) and box-constrained (acquisition on a
//! continuous search space, where the optimum often sits on a face of the box). The multi-start
//! maximiser built on them is `acquisition::optimize`.

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
    let mut x = x0.to_vec();
    let (mut f, mut g) = obj.eval(&x)?;
    let mut evals = 1;
    let mut pairs = Pairs::new(opts.memory);
    for _ in 0..opts.max_iter {
        if dot(&g, &g).sqrt() < opts.grad_tol {
            break;
        }
        let mut d = pairs.direction(&g);
        let mut slope = dot(&g, &d);
        if slope >= 0.0 {
            // Not a descent direction (curvature information went stale): steepest descent.
            d = g.iter().map(|v| -v).collect();
            slope = -dot(&g, &g);
            pairs.clear();
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
        let converged = stalled(f, fn_, opts);
        pairs.remember(&x, &xn, &g, &gn, |sy, _, _| sy > 1e-12);
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

/// Whether a step from value `f` to `fn_` changed it by less than `f_rel_tol` relative.
fn stalled(f: f64, fn_: f64, opts: LbfgsOptions) -> bool {
    (f - fn_).abs() <= opts.f_rel_tol * f.abs().max(1.0)
}

/// The curvature pairs (s, y) of the last `memory` accepted steps, oldest first.
struct Pairs {
    s: Vec<Vec<f64>>,
    y: Vec<Vec<f64>>,
    memory: usize,
}

impl Pairs {
    fn new(memory: usize) -> Self {
        Pairs {
            s: Vec::new(),
            y: Vec::new(),
            memory,
        }
    }

    fn clear(&mut self) {
        self.s.clear();
        self.y.clear();
    }

    fn direction(&self, g: &[f64]) -> Vec<f64> {
        two_loop(g, &self.s, &self.y)
    }

    /// Stores the step from (x, g) to (xn, gn) when `curved(s.y, s.s, y.y)` holds (the two
    /// minimisers ask different things of the curvature), dropping the oldest pair when full.
    fn remember(
        &mut self,
        x: &[f64],
        xn: &[f64],
        g: &[f64],
        gn: &[f64],
        curved: impl Fn(f64, f64, f64) -> bool,
    ) {
        let s: Vec<f64> = xn.iter().zip(x).map(|(a, b)| a - b).collect();
        let y: Vec<f64> = gn.iter().zip(g).map(|(a, b)| a - b).collect();
        if curved(dot(&s, &y), dot(&s, &s), dot(&y, &y)) {
            if self.s.len() == self.memory {
                self.s.remove(0);
                self.y.remove(0);
            }
            self.s.push(s);
            self.y.push(y);
        }
    }
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
        // First step: move at most unit length.
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
    lo: &[f64],
    hi: &[f64],
    opts: LbfgsOptions,
) -> Option<Minimum> {
    let project = |x: &mut Vec<f64>| {
        for ((v, l), h) in x.iter_mut().zip(lo).zip(hi) {
            *v = v.clamp(*l, *h);
        }
    };
    let mut x = x0.to_vec();
    project(&mut x);
    let (mut f, mut g) = obj.eval(&x)?;
    let mut evals = 1;
    let mut pairs = Pairs::new(opts.memory);
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
        let mut d = pairs.direction(&g_free);
        for (dk, a) in d.iter_mut().zip(&active) {
            if *a {
                *dk = 0.0;
            }
        }
        if dot(&g_free, &d) >= 0.0 {
            d = g_free.iter().map(|v| -v).collect();
            pairs.clear();
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
        let converged = stalled(f, fn_, opts);
        pairs.remember(&x, &xn, &g, &gn, |sy, ss, yy| {
            sy > 1e-16 * ss.sqrt() * yy.sqrt()
        });
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
        let m = lbfgs_box(
            &mut quad,
            &[0.1, 0.9],
            &[0.0; 2],
            &[1.0; 2],
            LbfgsOptions::default(),
        )
        .unwrap();
        assert_eq!(m.x[0], 1.0);
        assert!((m.x[1] - 0.3).abs() < 1e-8, "{:?}", m.x);
    }
}
