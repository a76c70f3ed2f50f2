//! Closed-form test functions (`objective.kind = "function"`): smooth objectives with known
//! maxima, on a box or on a grid of the same box, so the two kinds of search space can be
//! compared on one function and regret is exact on both. Every agent sees the same function.

use super::space::{Domain, Param};
use super::{Evaluate, Landscape, Point, Request, Space};
use crate::error::Result;
use crate::objective::ObjectiveSpec;
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
    /// Hartmann-3 on [0, 1]^3, negated: maximum 3.862779787332655 (the often printed
    /// 3.86278214782076 is not attained with the published constants).
    Hartmann3,
    /// Hartmann-6 on [0, 1]^6, negated: maximum 3.3223680114155125.
    Hartmann6,
    /// The scalable functions, negated, in D dimensions (the definitions of Surjanovic and
    /// Bingham's Virtual Library of Simulation Experiments, on the boxes BoTorch uses).
    /// Ackley (a = 20, b = 0.2, c = 2 pi) on [-32.768, 32.768]^D: maximum 0 at 0.
    Ackley(usize),
    /// Levy on [-10, 10]^D: maximum 0 at (1, ..., 1).
    Levy(usize),
    /// Rosenbrock on [-5, 10]^D (D >= 2): maximum 0 at (1, ..., 1).
    Rosenbrock(usize),
    /// Griewank on [-600, 600]^D: maximum 0 at 0.
    Griewank(usize),
    /// Rastrigin on [-5.12, 5.12]^D: maximum 0 at 0.
    Rastrigin(usize),
    /// Styblinski-Tang on [-5, 5]^D: maximum 39.16616570377142 D at x_i = -2.903534...
    StyblinskiTang(usize),
    /// Michalewicz (m = 10) on [0, pi]^D: separable, so its maximum is the sum of D
    /// one-dimensional maxima, computed to double precision (`maximum`).
    Michalewicz(usize),
    /// Shekel with m = 10 on [0, 10]^4, negated: ten narrow basins, the deepest 10.536443... at
    /// about (4, 4, 4, 4) (maximum and maximiser by Newton's method to a gradient of 1e-13).
    Shekel,
}

/// Shekel's centres and widths (Virtual Library, m = 10).
const SHEKEL_C: [[f64; 4]; 10] = [
    [4.0, 4.0, 4.0, 4.0],
    [1.0, 1.0, 1.0, 1.0],
    [8.0, 8.0, 8.0, 8.0],
    [6.0, 6.0, 6.0, 6.0],
    [3.0, 7.0, 3.0, 7.0],
    [2.0, 9.0, 2.0, 9.0],
    [5.0, 3.0, 5.0, 3.0],
    [8.0, 1.0, 8.0, 1.0],
    [6.0, 2.0, 6.0, 2.0],
    [7.0, 3.6, 7.0, 3.6],
];
const SHEKEL_BETA: [f64; 10] = [0.1, 0.2, 0.2, 0.4, 0.4, 0.6, 0.3, 0.7, 0.5, 0.5];

/// Hartmann's weights, matrices and centres (Hartmann 1973; as in the Virtual Library).
const H_ALPHA: [f64; 4] = [1.0, 1.2, 3.0, 3.2];
const H3_A: [[f64; 3]; 4] = [
    [3.0, 10.0, 30.0],
    [0.1, 10.0, 35.0],
    [3.0, 10.0, 30.0],
    [0.1, 10.0, 35.0],
];
const H3_P: [[f64; 3]; 4] = [
    [0.3689, 0.1170, 0.2673],
    [0.4699, 0.4387, 0.7470],
    [0.1091, 0.8732, 0.5547],
    [0.0381, 0.5743, 0.8828],
];
const H6_A: [[f64; 6]; 4] = [
    [10.0, 3.0, 17.0, 3.5, 1.7, 8.0],
    [0.05, 10.0, 17.0, 0.1, 8.0, 14.0],
    [3.0, 3.5, 1.7, 10.0, 17.0, 8.0],
    [17.0, 8.0, 0.05, 10.0, 0.1, 14.0],
];
const H6_P: [[f64; 6]; 4] = [
    [0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886],
    [0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991],
    [0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650],
    [0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381],
];

fn hartmann<const D: usize>(a: &[[f64; D]; 4], p: &[[f64; D]; 4], x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..4 {
        let q: f64 = (0..D).map(|j| a[i][j] * (x[j] - p[i][j]).powi(2)).sum();
        s += H_ALPHA[i] * libm::exp(-q);
    }
    s
}

/// One Michalewicz term, negated: sin(x) sin(i x^2 / pi)^20 for coordinate i (1-based).
fn michalewicz_term(i: usize, x: f64) -> f64 {
    libm::sin(x) * libm::pow(libm::sin(i as f64 * x * x / PI), 20.0)
}

/// The maximiser and maximum of one Michalewicz term on [0, pi], computed once per
/// coordinate.
fn michalewicz_peak(i: usize) -> (f64, f64) {
    static PEAKS: std::sync::Mutex<Vec<Option<(f64, f64)>>> = std::sync::Mutex::new(Vec::new());
    let mut peaks = PEAKS.lock().expect("peaks");
    if peaks.len() <= i {
        peaks.resize(i + 1, None);
    }
    *peaks[i].get_or_insert_with(|| michalewicz_scan(i))
}

/// A dense scan, then golden section on the bracketing cell (the term is smooth and its
/// peaks are far wider than the scan's step).
fn michalewicz_scan(i: usize) -> (f64, f64) {
    let n = 200_000;
    let h = PI / n as f64;
    let best = (0..=n)
        .map(|k| k as f64 * h)
        .max_by(|a, b| michalewicz_term(i, *a).total_cmp(&michalewicz_term(i, *b)))
        .expect("points");
    let (mut lo, mut hi) = ((best - h).max(0.0), (best + h).min(PI));
    let g = (5f64.sqrt() - 1.0) / 2.0;
    for _ in 0..200 {
        let (c, d) = (hi - g * (hi - lo), lo + g * (hi - lo));
        if michalewicz_term(i, c) > michalewicz_term(i, d) {
            hi = d;
        } else {
            lo = c;
        }
    }
    let x = (lo + hi) / 2.0;
    (x, michalewicz_term(i, x))
}

/// The root of 4x^3 - 32x + 5 = 0 near -2.9: Styblinski-Tang's minimiser per coordinate.
fn styblinski_tang_root() -> f64 {
    let mut x = -2.9f64;
    for _ in 0..50 {
        x -= (4.0 * x * x * x - 32.0 * x + 5.0) / (12.0 * x * x - 32.0);
    }
    x
}

fn styblinski_tang_term(x: f64) -> f64 {
    0.5 * (x.powi(4) - 16.0 * x * x + 5.0 * x)
}

impl Function {
    /// A function by name, `dim` its dimension for the scalable ones (None for the others).
    pub fn parse(s: &str, dim: Option<usize>) -> Option<Self> {
        let d = dim.unwrap_or(0);
        match (s, dim) {
            ("forrester", None) => Some(Function::Forrester),
            ("branin", None) => Some(Function::Branin),
            ("hartmann3", None) => Some(Function::Hartmann3),
            ("hartmann6", None) => Some(Function::Hartmann6),
            ("shekel", None) => Some(Function::Shekel),
            ("ackley", Some(_)) => Some(Function::Ackley(d)),
            ("levy", Some(_)) => Some(Function::Levy(d)),
            ("rosenbrock", Some(_)) => Some(Function::Rosenbrock(d)),
            ("griewank", Some(_)) => Some(Function::Griewank(d)),
            ("rastrigin", Some(_)) => Some(Function::Rastrigin(d)),
            ("styblinski-tang", Some(_)) => Some(Function::StyblinskiTang(d)),
            ("michalewicz", Some(_)) => Some(Function::Michalewicz(d)),
            _ => None,
        }
    }

    /// Whether the named function takes a dimension (`objective.dimension`).
    pub fn scalable(name: &str) -> bool {
        Self::parse(name, Some(2)).is_some()
    }

    pub const NAMES: &'static str = "\"forrester\", \"branin\", \"hartmann3\", \"hartmann6\", \"shekel\", \"ackley\", \"levy\", \"rosenbrock\", \"griewank\", \"rastrigin\", \"styblinski-tang\", \"michalewicz\"";
    pub const SCALABLE: &'static str = "\"ackley\", \"levy\", \"rosenbrock\", \"griewank\", \"rastrigin\", \"styblinski-tang\", \"michalewicz\"";

    pub fn dim(self) -> usize {
        match self {
            Function::Forrester => 1,
            Function::Branin => 2,
            Function::Hartmann3 => 3,
            Function::Hartmann6 => 6,
            Function::Shekel => 4,
            Function::Ackley(d)
            | Function::Levy(d)
            | Function::Rosenbrock(d)
            | Function::Griewank(d)
            | Function::Rastrigin(d)
            | Function::StyblinskiTang(d)
            | Function::Michalewicz(d) => d,
        }
    }

    /// The function's own box on `bounds` (low, high per axis, within its own box and
    /// around its maximiser: `objective.bounds`), as hyperparameters.
    pub fn params_on(self, bounds: &[(f64, f64)]) -> Vec<Param> {
        self.params()
            .iter()
            .zip(bounds)
            .map(|(p, &(lo, hi))| Param::linear(&p.name, lo, hi))
            .collect()
    }

    /// The function's own box (its bounds as the Virtual Library and BoTorch give them).
    pub fn bounds(self) -> Vec<(f64, f64)> {
        self.params().iter().map(|p| (p.low, p.high)).collect()
    }

    /// The function's own box, as hyperparameters.
    pub fn params(self) -> Vec<Param> {
        let cube = |lo: f64, hi: f64| -> Vec<Param> {
            (0..self.dim())
                .map(|i| Param::linear(&format!("x{}", i + 1), lo, hi))
                .collect()
        };
        match self {
            Function::Forrester => vec![Param::linear("x", 0.0, 1.0)],
            Function::Branin => vec![
                Param::linear("x1", -5.0, 10.0),
                Param::linear("x2", 0.0, 15.0),
            ],
            Function::Hartmann3 | Function::Hartmann6 => cube(0.0, 1.0),
            Function::Ackley(_) => cube(-32.768, 32.768),
            Function::Levy(_) => cube(-10.0, 10.0),
            Function::Rosenbrock(_) => cube(-5.0, 10.0),
            Function::Griewank(_) => cube(-600.0, 600.0),
            Function::Rastrigin(_) => cube(-5.12, 5.12),
            Function::StyblinskiTang(_) => cube(-5.0, 5.0),
            Function::Michalewicz(_) => cube(0.0, PI),
            Function::Shekel => cube(0.0, 10.0),
        }
    }

    /// max f over the box: the published optima to double precision, recorded with
    /// scipy.optimize (Forrester: minimize_scalar bounded, xatol 1e-14; Branin: BFGS,
    /// gtol 1e-12; Hartmann: scipy 1.14.1 BFGS from the published minimisers, gtol 1e-12,
    /// which also gave the maximisers below), exact zeros, or computed here
    /// (Styblinski-Tang's root by Newton, Michalewicz's separable peaks).
    pub fn maximum(self) -> f64 {
        match self {
            Function::Forrester => 6.020_740_055_767_082_5,
            Function::Branin => -0.397_887_357_729_738_16,
            Function::Hartmann3 => 3.862_779_787_332_655,
            Function::Hartmann6 => 3.322_368_011_415_512_5,
            Function::Ackley(_)
            | Function::Levy(_)
            | Function::Rosenbrock(_)
            | Function::Griewank(_)
            | Function::Rastrigin(_) => 0.0,
            Function::StyblinskiTang(d) => {
                -(d as f64) * styblinski_tang_term(styblinski_tang_root())
            }
            Function::Michalewicz(d) => (1..=d).map(|i| michalewicz_peak(i).1).sum(),
            Function::Shekel => 10.536_443_153_483_528,
        }
    }

    /// A maximiser, in raw coordinates (one of Branin's three).
    pub fn argmax(self) -> Vec<f64> {
        let d = self.dim();
        match self {
            Function::Forrester => vec![0.757_248_8],
            Function::Branin => vec![PI, 2.275],
            Function::Hartmann3 => vec![
                0.114_588_869_174_815_03,
                0.555_648_886_598_182_1,
                0.852_546_977_013_464_3,
            ],
            Function::Hartmann6 => vec![
                0.201_689_509_234_095_84,
                0.150_010_688_764_179_22,
                0.476_873_972_432_962_2,
                0.275_332_428_312_954,
                0.311_651_611_575_136_7,
                0.657_300_529_380_464_1,
            ],
            Function::Ackley(_) | Function::Griewank(_) | Function::Rastrigin(_) => vec![0.0; d],
            Function::Levy(_) | Function::Rosenbrock(_) => vec![1.0; d],
            Function::StyblinskiTang(_) => vec![styblinski_tang_root(); d],
            Function::Michalewicz(_) => (1..=d).map(|i| michalewicz_peak(i).0).collect(),
            Function::Shekel => vec![
                4.000_746_868_270_634,
                3.999_509_480_085_773_6,
                4.000_746_868_270_634,
                3.999_509_480_085_773_6,
            ],
        }
    }

    /// f at raw coordinates.
    pub fn value(self, x: &[f64]) -> f64 {
        let n = x.len() as f64;
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
            Function::Hartmann3 => hartmann(&H3_A, &H3_P, x),
            Function::Hartmann6 => hartmann(&H6_A, &H6_P, x),
            Function::Ackley(_) => {
                let sq = x.iter().map(|v| v * v).sum::<f64>() / n;
                let cs = x.iter().map(|v| libm::cos(2.0 * PI * v)).sum::<f64>() / n;
                -(-20.0 * libm::exp(-0.2 * sq.sqrt()) - libm::exp(cs) + 20.0 + std::f64::consts::E)
            }
            Function::Levy(_) => {
                let w: Vec<f64> = x.iter().map(|v| 1.0 + (v - 1.0) / 4.0).collect();
                let last = w[w.len() - 1];
                let mut s = libm::sin(PI * w[0]).powi(2);
                for wi in &w[..w.len() - 1] {
                    s += (wi - 1.0).powi(2) * (1.0 + 10.0 * libm::sin(PI * wi + 1.0).powi(2));
                }
                s += (last - 1.0).powi(2) * (1.0 + libm::sin(2.0 * PI * last).powi(2));
                -s
            }
            Function::Rosenbrock(_) => -x
                .windows(2)
                .map(|p| 100.0 * (p[1] - p[0] * p[0]).powi(2) + (p[0] - 1.0).powi(2))
                .sum::<f64>(),
            Function::Griewank(_) => {
                let sum = x.iter().map(|v| v * v).sum::<f64>() / 4000.0;
                let prod: f64 = x
                    .iter()
                    .enumerate()
                    .map(|(i, v)| libm::cos(v / ((i + 1) as f64).sqrt()))
                    .product();
                -(sum - prod + 1.0)
            }
            Function::Rastrigin(_) => {
                -(10.0 * n
                    + x.iter()
                        .map(|v| v * v - 10.0 * libm::cos(2.0 * PI * v))
                        .sum::<f64>())
            }
            Function::StyblinskiTang(_) => -x.iter().map(|&v| styblinski_tang_term(v)).sum::<f64>(),
            Function::Michalewicz(_) => x
                .iter()
                .enumerate()
                .map(|(i, &v)| michalewicz_term(i + 1, v))
                .sum(),
            Function::Shekel => SHEKEL_C
                .iter()
                .zip(SHEKEL_BETA)
                .map(|(c, b)| {
                    let d2: f64 = c.iter().zip(x).map(|(c, v)| (v - c) * (v - c)).sum();
                    1.0 / (d2 + b)
                })
                .sum(),
        }
    }
}

/// How far each agent's version of a function departs from it: `shift` scales the optimum's
/// move (up to shift / 4 of the box's width per coordinate), `rotation` the rotation angles
/// (up to rotation x pi). `objective.heterogeneity = h` sets both to h.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Heterogeneity {
    pub shift: f64,
    pub rotation: f64,
}

impl Heterogeneity {
    /// Both at h.
    pub fn both(h: f64) -> Self {
        Heterogeneity {
            shift: h,
            rotation: h,
        }
    }

    /// Whether agents differ at all.
    pub fn is_some(&self) -> bool {
        self.shift > 0.0 || self.rotation > 0.0
    }
}

/// Each agent's own version of a function: the input shifted and rotated about the optimum,
/// by amounts that `heterogeneity` h in [0, 1] scales (h = 0: every agent sees the function
/// itself). For agent k, from the random stream (spec seed, run 0, agent k, heterogeneity):
/// - shift: u ~ U(-1, 1)^D, the agent's optimum at clamp(x* + h u (hi - lo) / 4) (a quarter
///   of the box at most, kept in the box), s = that point - x*;
/// - rotation: angles theta_ij ~ U(-pi, pi) for i < j in order (0,1), (0,2), ..., (D-2,D-1),
///   Q = G(D-2,D-1) ... G(0,2) G(0,1), each G(i,j) the Givens rotation by h theta_ij in the
///   (i, j) plane, acting on coordinates scaled by the box's half widths w;
/// - f_k(x) = f(clamp(x* + w Q ((x - x* - s) / w))), clamped into the box.
///
/// So f_k(x* + s) = f(x*), f_k only takes values f takes on the box, and max f_k = max f:
/// every agent's optimum is known exactly.
#[derive(Clone, Debug)]
pub struct Transform {
    /// f's maximiser x*, raw.
    star: Vec<f64>,
    shift: Vec<f64>,
    /// Row-major D x D.
    rotation: Vec<f64>,
    /// f's box: (low, high) per coordinate.
    bounds: Vec<(f64, f64)>,
}

impl Transform {
    /// Agent `agent`'s transform of `f` searched on `bounds` (the box the shift and the half
    /// widths are measured on; the function's own box unless `objective.bounds` narrows it).
    pub fn new(
        f: Function,
        bounds: &[(f64, f64)],
        heterogeneity: Heterogeneity,
        seed: u64,
        agent: usize,
    ) -> Transform {
        use rand::Rng;
        let params = f.params_on(bounds);
        let d = params.len();
        let mut rng = crate::math::rng::stream(
            seed,
            0,
            agent as u64,
            crate::math::rng::Purpose::Heterogeneity,
        );
        let star = f.argmax();
        let shift: Vec<f64> = params
            .iter()
            .zip(&star)
            .map(|(p, &x)| {
                let u: f64 = rng.random_range(-1.0..=1.0);
                let moved =
                    (x + heterogeneity.shift * u * (p.high - p.low) / 4.0).clamp(p.low, p.high);
                moved - x
            })
            .collect();
        let mut q = vec![0.0; d * d];
        for i in 0..d {
            q[i * d + i] = 1.0;
        }
        for i in 0..d {
            for j in i + 1..d {
                let theta: f64 = rng.random_range(-PI..PI) * heterogeneity.rotation;
                let (c, s) = (libm::cos(theta), libm::sin(theta));
                // Q <- G(i, j) Q: rows i and j rotate.
                for k in 0..d {
                    let (a, b) = (q[i * d + k], q[j * d + k]);
                    q[i * d + k] = c * a - s * b;
                    q[j * d + k] = s * a + c * b;
                }
            }
        }
        Transform {
            star,
            shift,
            rotation: q,
            bounds: params.iter().map(|p| (p.low, p.high)).collect(),
        }
    }

    /// The agent's maximiser, raw.
    pub fn argmax(&self) -> Vec<f64> {
        self.star
            .iter()
            .zip(&self.shift)
            .map(|(x, s)| x + s)
            .collect()
    }

    /// The point of f's box at which f_k(x) evaluates f.
    pub fn apply(&self, x: &[f64]) -> Vec<f64> {
        let d = x.len();
        let star = &self.star;
        let half = |i: usize| (self.bounds[i].1 - self.bounds[i].0) / 2.0;
        let z: Vec<f64> = (0..d)
            .map(|i| (x[i] - star[i] - self.shift[i]) / half(i))
            .collect();
        (0..d)
            .map(|i| {
                let r: f64 = (0..d).map(|k| self.rotation[i * d + k] * z[k]).sum();
                (star[i] + half(i) * r).clamp(self.bounds[i].0, self.bounds[i].1)
            })
            .collect()
    }
}

/// The hyperparameters of `f` on `bounds` hidden among `inert` more axes: its own, then
/// `inert1`, `inert2`, .. on [0, 1], which its value ignores.
pub fn embedded_params(f: Function, bounds: &[(f64, f64)], inert: usize) -> Vec<Param> {
    let mut params = f.params_on(bounds);
    params.extend((1..=inert).map(|i| Param::linear(&format!("inert{i}"), 0.0, 1.0)));
    params
}

/// A function objective: the function, and each agent's transform where agents differ.
struct Closed {
    f: Function,
    transforms: Option<Vec<Transform>>,
}

impl Closed {
    /// The value at `raw`: the function of its first D coordinates (the others are inert).
    fn value(&self, agent: usize, raw: &[f64]) -> f64 {
        let raw = &raw[..self.f.dim()];
        match &self.transforms {
            None => self.f.value(raw),
            Some(t) => self.f.value(&t[agent].apply(raw)),
        }
    }
}

impl Evaluate for Closed {
    fn evaluate(&self, req: &Request, _point: &Point, raw: &[f64]) -> Result<(f64, f64)> {
        Ok((self.value(req.agent, raw), 0.0))
    }
}

/// The function on the spec's space: a grid of `per_dim` points per axis (values in advance,
/// regret against the grid's maximum, as for every grid) or the box (regret against the
/// function's maximum, which `bounds` contains). With heterogeneity > 0 each agent has its own
/// `Transform`.
pub fn landscape(
    f: Function,
    bounds: &[(f64, f64)],
    heterogeneity: Heterogeneity,
    inert: usize,
    seed: u64,
    spec: &ObjectiveSpec,
    agents: usize,
) -> Result<Arc<Landscape>> {
    let params = embedded_params(f, bounds, inert);
    let closed = Closed {
        f,
        transforms: heterogeneity.is_some().then(|| {
            (0..agents)
                .map(|k| Transform::new(f, bounds, heterogeneity, seed, k))
                .collect()
        }),
    };
    Ok(Arc::new(match spec.per_dim {
        Some(n) => {
            let domain = Domain::tensor(&params, n);
            let space = Arc::new(Space::Grid(domain));
            let g = space.grid().expect("grid");
            let on_grid = |k: usize| {
                Array1::from_iter((0..g.len()).map(|i| closed.value(k, &space.raw(&g.at(i)))))
            };
            // Identical agents share one table of values, computed once.
            let values = match closed.transforms {
                None => vec![on_grid(0); agents],
                Some(_) => (0..agents).map(on_grid).collect(),
            };
            Landscape::new(space.clone(), values, spec.noise_var)
        }
        None => Landscape::live(
            Arc::new(Space::Box(params)),
            agents,
            Box::new(closed),
            Some(vec![f.maximum(); agents]),
            spec.noise_var,
        ),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acquisition::optimize::{BoxSearch, maximise};
    use crate::math::rng::{Purpose, stream};
    use crate::objective::space::Region;

    /// Every function of the suite at small and larger dimensions.
    fn suite() -> Vec<Function> {
        let mut out = vec![
            Function::Forrester,
            Function::Branin,
            Function::Hartmann3,
            Function::Hartmann6,
            Function::Shekel,
        ];
        for d in [2, 3, 5, 10] {
            out.extend([
                Function::Ackley(d),
                Function::Levy(d),
                Function::Rosenbrock(d),
                Function::Griewank(d),
                Function::Rastrigin(d),
                Function::StyblinskiTang(d),
                Function::Michalewicz(d),
            ]);
        }
        out
    }

    #[test]
    fn each_function_attains_its_maximum_at_its_maximiser() {
        for f in suite() {
            let x = f.argmax();
            assert_eq!(x.len(), f.dim());
            assert!(
                f.params()
                    .iter()
                    .zip(&x)
                    .all(|(p, v)| (p.low..=p.high).contains(v)),
                "{f:?}"
            );
            // Published maximisers have 6 digits (Hartmann): the value is within 1e-9 there.
            let gap = f.maximum() - f.value(&x);
            assert!((-1e-12..1e-9).contains(&gap), "{f:?}: gap {gap}");
        }
        // Michalewicz's published minima (Virtual Library): -1.8013 (D = 2), -4.687658
        // (D = 5), -9.66015 (D = 10).
        assert!((Function::Michalewicz(2).maximum() - 1.8013).abs() < 1e-4);
        assert!((Function::Michalewicz(5).maximum() - 4.687658).abs() < 1e-6);
        assert!((Function::Michalewicz(10).maximum() - 9.66015).abs() < 1e-5);
        // Shekel (m = 10): the Virtual Library's and BoTorch's minimum -10.536443 at
        // (4.000747, 3.99951, 4.000747, 3.99951), and BoTorch 0.18.1's values (negated) at two
        // of the other centres (in double precision), which pin the centres' coordinates.
        let shekel = Function::Shekel;
        assert!((shekel.maximum() - 10.536_443).abs() < 1e-6);
        let at_optimum = shekel.value(&[4.000_747, 3.999_51, 4.000_747, 3.999_51]);
        assert!((at_optimum - 10.536_443).abs() < 1e-6);
        for (x, want) in [
            ([5.0, 3.0, 5.0, 3.0], 4.069_719_037_121_970_5),
            ([3.0, 7.0, 3.0, 7.0], 2.790_277_929_689_085),
        ] {
            assert!(
                (shekel.value(&x) - want).abs() < 1e-12,
                "{x:?}: {}",
                shekel.value(&x)
            );
        }
        // Styblinski-Tang: -39.16616570377142 per dimension (Virtual Library: -39.16599 D,
        // to its printed digits).
        assert!((Function::StyblinskiTang(3).maximum() - 3.0 * 39.166_165_703_771_42).abs() < 1e-9);
        // Dimension names and parsing.
        assert_eq!(
            Function::parse("ackley", Some(4)),
            Some(Function::Ackley(4))
        );
        assert_eq!(Function::parse("ackley", None), None);
        assert_eq!(Function::parse("branin", Some(2)), None);
        assert!(Function::scalable("styblinski-tang") && !Function::scalable("branin"));
    }

    #[test]
    fn heterogeneity_moves_each_agents_optimum_and_keeps_its_value() {
        for f in [
            Function::Branin,
            Function::Hartmann6,
            Function::Ackley(4),
            Function::Michalewicz(3),
        ] {
            let params = f.params();
            let d = params.len();
            // h = 0: every agent sees the function itself.
            let t0 = Transform::new(f, &f.bounds(), Heterogeneity::both(0.0), 7, 3);
            let mut rng = stream(2, 0, 0, Purpose::Init);
            // A uniform point of f's box, raw.
            let space = Space::Box(params.clone());
            let mut point = || space.raw(&Point::free(Region::unit(d).sample(&mut rng)));
            for _ in 0..20 {
                let x = point();
                let y = t0.apply(&x);
                assert!(
                    x.iter()
                        .zip(&y)
                        .all(|(a, b)| (a - b).abs() < 1e-12 * (1.0 + a.abs()))
                );
            }
            let t1 = Transform::new(f, &f.bounds(), Heterogeneity::both(1.0), 7, 1);
            let t2 = Transform::new(f, &f.bounds(), Heterogeneity::both(1.0), 7, 2);
            // The rotation is orthogonal.
            for i in 0..d {
                for j in 0..d {
                    let dot: f64 = (0..d)
                        .map(|k| t1.rotation[i * d + k] * t1.rotation[j * d + k])
                        .sum();
                    assert!((dot - if i == j { 1.0 } else { 0.0 }).abs() < 1e-12);
                }
            }
            for t in [&t1, &t2] {
                // The agent's optimum maps onto f's, so it has f's maximum.
                let star = t.argmax();
                assert!(
                    params
                        .iter()
                        .zip(&star)
                        .all(|(p, v)| (p.low..=p.high).contains(v))
                );
                let back = t.apply(&star);
                assert!(
                    back.iter()
                        .zip(f.argmax())
                        .all(|(a, b)| (a - b).abs() < 1e-12)
                );
                // Every point maps into the box, so no value exceeds the maximum.
                for _ in 0..200 {
                    let x = point();
                    let y = t.apply(&x);
                    assert!(
                        params
                            .iter()
                            .zip(&y)
                            .all(|(p, v)| (p.low..=p.high).contains(v))
                    );
                    assert!(f.value(&y) <= f.maximum() + 1e-12);
                }
            }
            assert_ne!(t1.argmax(), t2.argmax(), "{f:?}: agents differ");
        }
    }

    #[test]
    fn on_given_bounds_the_shift_and_the_rotation_are_measured_on_them() {
        // Rosenbrock-4 on [-2.048, 2.048]^4 (width 4.096) rather than its own [-5, 10]^4.
        let f = Function::Rosenbrock(4);
        let bounds = vec![(-2.048, 2.048); 4];
        let params = f.params_on(&bounds);
        assert!(params.iter().all(|p| p.low == -2.048 && p.high == 2.048));
        assert_eq!(params[3].name, "x4");
        for agent in 0..6 {
            let t = Transform::new(f, &bounds, Heterogeneity::both(1.0), 11, agent);
            // The same stream draws u, so the shift is u times a quarter of the given width
            // (1.024), not of the function's own (3.75); from x* = 1 neither box clamps it.
            let own = Transform::new(f, &f.bounds(), Heterogeneity::both(1.0), 11, agent);
            for (s, s_own) in t.shift.iter().zip(&own.shift) {
                assert!(s.abs() <= 1.024 && (s - s_own / 3.75 * 1.024).abs() < 1e-12);
            }
            let star = t.argmax();
            assert!(star.iter().all(|v| (-2.048..=2.048).contains(v)));
            let back = t.apply(&star);
            assert!(back.iter().all(|v| (v - 1.0).abs() < 1e-12), "{back:?}");
            // Every point maps into the given box.
            let x: Vec<f64> = star.iter().map(|v| (v + 1.0).min(2.048)).collect();
            let y = t.apply(&x);
            assert!(y.iter().all(|v| (-2.048..=2.048).contains(v)));
            assert!(f.value(&y) <= 0.0);
        }
    }

    #[test]
    fn published_maxima_are_the_box_maxima() {
        for f in [
            Function::Forrester,
            Function::Branin,
            Function::Hartmann3,
            Function::Levy(2),
            Function::StyblinskiTang(2),
            Function::Michalewicz(2),
            Function::Shekel,
        ] {
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
            let (_, v) =
                maximise(&mut acq, &Region::unit(params.len()), &[], search, &mut rng).unwrap();
            assert!(v <= f.maximum() + 1e-12, "{f:?}: {v}");
            assert!(v > f.maximum() - 1e-9, "{f:?}: {v}");
        }
    }
}
