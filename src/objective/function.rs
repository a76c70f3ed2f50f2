//! Closed-form test functions (`objective.kind = "function"`): smooth objectives with known
//! maxima, on a box or on a grid of the same box, so the two kinds of search space can be
//! compared on one function and regret is exact on both. Every agent sees the same function.

use super::space::{Domain, Param};
use super::{Evaluate, Landscape, Point, Request, Space};
use crate::error::Result;
use crate::spec::ObjectiveSpec;
use ndarray::Array1;
use std::f64::consts::PI;
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Function {
    /// Forrester et al. (2008): f(x) = -(6x - 2)^2 sin(12x - 4) on [0, 1] (negated to
    /// maximise); maximum 6.0207400557670825 at x = 0.7572488.
    Forrester,
    /// Branin-Hoo, negated, on [-5, 10] x [0, 15]: maximum -0.397887357729738 at three points.
    Branin,
}

impl Function {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "forrester" => Some(Function::Forrester),
            "branin" => Some(Function::Branin),
            _ => None,
        }
    }

    pub const NAMES: &'static str = "\"forrester\", \"branin\"";

    /// The function's own box, as hyperparameters.
    pub fn params(self) -> Vec<Param> {
        match self {
            Function::Forrester => vec![Param::linear("x", 0.0, 1.0)],
            Function::Branin => vec![
                Param::linear("x1", -5.0, 10.0),
                Param::linear("x2", 0.0, 15.0),
            ],
        }
    }

    /// max f over the box: the published optima to double precision, recorded with
    /// scipy.optimize (minimize_scalar bounded, xatol 1e-14; BFGS, gtol 1e-12).
    pub fn maximum(self) -> f64 {
        match self {
            Function::Forrester => 6.020_740_055_767_082_5,
            Function::Branin => -0.397_887_357_729_738_16,
        }
    }

    /// f at raw coordinates.
    pub fn value(self, x: &[f64]) -> f64 {
        match self {
            Function::Forrester => {
                let a = 6.0 * x[0] - 2.0;
                -(a * a) * libm::sin(12.0 * x[0] - 4.0)
            }
            Function::Branin => {
                let b = 5.1 / (4.0 * PI * PI);
                let c = 5.0 / PI;
                let t = 1.0 / (8.0 * PI);
                let inner = x[1] - b * x[0] * x[0] + c * x[0] - 6.0;
                -(inner * inner + 10.0 * (1.0 - t) * libm::cos(x[0]) + 10.0)
            }
        }
    }
}

struct Closed(Function);

impl Evaluate for Closed {
    fn evaluate(&self, _req: &Request, _point: &Point, raw: &[f64]) -> Result<(f64, f64)> {
        Ok((self.0.value(raw), 0.0))
    }
}

/// The function on the spec's space: a grid of `per_dim` points per axis (values in advance,
/// regret against the grid's maximum, as for every grid) or the box (regret against the
/// function's maximum).
pub fn landscape(f: Function, spec: &ObjectiveSpec, agents: usize) -> Result<Arc<Landscape>> {
    let params = f.params();
    Ok(Arc::new(match spec.per_dim {
        Some(n) => {
            let domain = Domain::tensor(&params, n);
            let space = Arc::new(Space::Grid(domain));
            let g = space.grid().expect("grid");
            let values = Array1::from_iter((0..g.len()).map(|i| f.value(&space.raw(&g.at(i)))));
            Landscape::new(space.clone(), vec![values; agents], spec.noise_var)
        }
        None => Landscape::live(
            Arc::new(Space::Box(params)),
            agents,
            Box::new(Closed(f)),
            Some(vec![f.maximum(); agents]),
            spec.noise_var,
        ),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objective::space::Region;
    use crate::optim::{BoxSearch, maximise};
    use crate::rng::{Purpose, stream};

    #[test]
    fn published_maxima_are_the_box_maxima() {
        for f in [Function::Forrester, Function::Branin] {
            let params = f.params();
            let raw = |u: &[f64]| -> Vec<f64> {
                params.iter().zip(u).map(|(p, &v)| p.value(v)).collect()
            };
            // Central-difference gradients suffice to locate the maximum; the value is what
            // is checked.
            let mut acq = |u: &[f64], g: Option<&mut [f64]>| {
                if let Some(g) = g {
                    for d in 0..u.len() {
                        let (mut a, mut b) = (u.to_vec(), u.to_vec());
                        a[d] += 1e-7;
                        b[d] -= 1e-7;
                        g[d] = (f.value(&raw(&a)) - f.value(&raw(&b))) / 2e-7;
                    }
                }
                f.value(&raw(u))
            };
            let mut rng = stream(1, 0, 0, Purpose::Acquisition);
            let search = BoxSearch {
                candidates: 2000,
                starts: 20,
            };
            let (_, v) = maximise(&mut acq, &Region::unit(params.len()), search, &mut rng).unwrap();
            assert!(v <= f.maximum() + 1e-12, "{f:?}: {v}");
            assert!(v > f.maximum() - 1e-9, "{f:?}: {v}");
        }
    }
}
