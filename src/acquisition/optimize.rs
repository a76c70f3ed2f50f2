//! The acquisition optimiser (BoTorch's optimize_acqf, in small): quasi-random candidates over
//! a box of the search space, then box-constrained L-BFGS (`math::optim`) from the best.

use crate::error::Result;
use crate::math::optim::{LbfgsOptions, lbfgs_box};
use crate::objective::space::{Region, halton, one_hot};
use std::ops::Range;

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
        if let Some(m) = lbfgs_box(&mut neg, &cands[i], &local.lo, &local.hi, opts)
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
