//! Search spaces. Every algorithm works in unit coordinates [0,1]^D; a space says which points
//! of that cube exist (a finite grid, or the whole box) and how a unit coordinate maps to the
//! raw hyperparameter a model is trained with.

use crate::error::Result;
use ndarray::{Array1, Array2, ArrayView1, ArrayView2};
use rand::Rng;
use std::ops::Range;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    Linear,
    Log,
}

/// One hyperparameter: its name and range, and how [0, 1] maps onto the range.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: String,
    pub low: f64,
    pub high: f64,
    pub scale: Scale,
    /// Raw values are rounded to the nearest integer (batch sizes, layer widths).
    pub integer: bool,
    /// A categorical parameter's choices (empty for a number). Its raw value is the index of
    /// the choice, shown and handed to programs as the choice's name; it takes one unit
    /// coordinate per choice (one-hot; see `Space::point`).
    pub choices: Vec<String>,
}

impl Param {
    pub fn linear(name: &str, low: f64, high: f64) -> Self {
        Param {
            name: name.into(),
            low,
            high,
            scale: Scale::Linear,
            integer: false,
            choices: Vec::new(),
        }
    }

    pub fn log(name: &str, low: f64, high: f64) -> Self {
        Param {
            scale: Scale::Log,
            ..Param::linear(name, low, high)
        }
    }

    /// A categorical parameter over `choices` (at least two, distinct).
    pub fn categorical(name: &str, choices: Vec<String>) -> Self {
        Param {
            name: name.into(),
            low: 0.0,
            high: choices.len().saturating_sub(1) as f64,
            scale: Scale::Linear,
            integer: true,
            choices,
        }
    }

    pub fn is_categorical(&self) -> bool {
        !self.choices.is_empty()
    }

    /// How many unit coordinates the parameter takes: one, or one per choice.
    pub fn width(&self) -> usize {
        self.choices.len().max(1)
    }

    /// The raw value at unit coordinate u (clamped to [0, 1]); rounded for integer
    /// parameters. The ends map exactly onto low and high.
    pub fn value(&self, u: f64) -> f64 {
        let u = u.clamp(0.0, 1.0);
        let v = match self.scale {
            Scale::Linear => self.low + (self.high - self.low) * u,
            Scale::Log => {
                let (a, b) = (libm::log(self.low), libm::log(self.high));
                libm::exp(a + (b - a) * u)
            }
        };
        let v = if u == 0.0 {
            self.low
        } else if u == 1.0 {
            self.high
        } else {
            v
        };
        if self.integer {
            // The nearest integer inside the range: [0.5, 3.5] holds 1, 2 and 3, never 4.
            v.round().clamp(self.low.ceil(), self.high.floor())
        } else {
            v
        }
    }
}

/// A finite set of points of [0,1]^D: the synthetic grids and the response tables, with the
/// raw hyperparameter values of every point where the objective has named hyperparameters.
#[derive(Debug)]
pub struct Domain {
    points: Array2<f64>,
    raw: Option<Array2<f64>>,
    names: Vec<String>,
    /// The per-axis values when the points are their tensor product in row-major order (last
    /// axis fastest) and D >= 2: then a sampled function separates by axis.
    axes: Option<Vec<Vec<f64>>>,
}

/// The axes of a row-major tensor-product grid, found from the points themselves (tables
/// list their points; nothing but the points says they form a product).
fn tensor_axes(points: &Array2<f64>) -> Option<Vec<Vec<f64>>> {
    let (n, d) = points.dim();
    if d < 2 || n == 0 {
        return None;
    }
    // Axis k's length: how far its first value repeats before it changes, from the inside
    // out (the last axis varies fastest).
    let mut axes: Vec<Vec<f64>> = vec![Vec::new(); d];
    let mut stride = 1usize;
    for k in (0..d).rev() {
        let mut vals = Vec::new();
        let mut i = 0;
        while i < n {
            let v = points[[i, k]];
            if vals.contains(&v) {
                break;
            }
            vals.push(v);
            i += stride;
        }
        stride = stride.checked_mul(vals.len())?;
        axes[k] = vals;
    }
    if stride != n {
        return None;
    }
    // Every point must be exactly its product coordinates.
    let mut strides = vec![1usize; d];
    for k in (0..d - 1).rev() {
        strides[k] = strides[k + 1] * axes[k + 1].len();
    }
    for i in 0..n {
        for k in 0..d {
            if points[[i, k]] != axes[k][(i / strides[k]) % axes[k].len()] {
                return None;
            }
        }
    }
    Some(axes)
}

impl Domain {
    pub fn new(points: Array2<f64>) -> Self {
        let axes = tensor_axes(&points);
        Domain {
            points,
            raw: None,
            names: Vec::new(),
            axes,
        }
    }

    /// A grid whose points carry raw hyperparameter values (`names[k]` is column k of `raw`).
    pub fn with_raw(points: Array2<f64>, raw: Array2<f64>, names: Vec<String>) -> Self {
        debug_assert_eq!(points.dim(), raw.dim());
        debug_assert_eq!(names.len(), raw.ncols());
        let axes = tensor_axes(&points);
        Domain {
            points,
            raw: Some(raw),
            names,
            axes,
        }
    }

    /// The per-axis values of a tensor-product grid (D >= 2, row-major), if it is one.
    pub fn axes(&self) -> Option<&[Vec<f64>]> {
        self.axes.as_deref()
    }

    /// n evenly spaced points on [0, 1], endpoints included.
    pub fn grid_1d(n: usize) -> Self {
        let pts = Array1::linspace(0.0, 1.0, n).insert_axis(ndarray::Axis(1));
        Domain::new(pts)
    }

    /// The tensor-product grid of `per_dim` points per parameter (row-major: the last
    /// dimension varies fastest, as `fbo tabulate` numbers its points).
    pub fn tensor(params: &[Param], per_dim: usize) -> Self {
        let d = params.len();
        let n = per_dim.pow(d as u32);
        let mut points = Array2::zeros((n, d));
        let mut raw = Array2::zeros((n, d));
        for p in 0..n {
            let mut rest = p;
            for k in (0..d).rev() {
                let u = (rest % per_dim) as f64 / (per_dim - 1) as f64;
                rest /= per_dim;
                points[[p, k]] = u;
                raw[[p, k]] = params[k].value(u);
            }
        }
        let names = params.iter().map(|p| p.name.clone()).collect();
        Domain::with_raw(points, raw, names)
    }

    pub fn len(&self) -> usize {
        self.points.nrows()
    }

    pub fn is_empty(&self) -> bool {
        self.points.nrows() == 0
    }

    pub fn dim(&self) -> usize {
        self.points.ncols()
    }

    pub fn points(&self) -> ArrayView2<'_, f64> {
        self.points.view()
    }

    pub fn point(&self, i: usize) -> ArrayView1<'_, f64> {
        self.points.row(i)
    }

    /// The point with index i as a query point.
    pub fn at(&self, i: usize) -> Point {
        Point {
            x: self.points.row(i).to_vec(),
            index: Some(i),
            given: None,
        }
    }
}

/// A point of a search space in unit coordinates; `index` is its row when the space is a grid
/// (tables are looked up by it, and grid-only caches are indexed by it). `given` holds the
/// raw values a user named (`fbo evaluate`, a trace's incumbents): mapping them to the unit
/// cube and back can move them by an ulp (on a log scale not every raw value is the image of
/// a unit coordinate), and a loosely stopped solver such as libsvm's can take another path
/// from a C one ulp away, so the objective is handed exactly what was named.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub x: Vec<f64>,
    pub index: Option<usize>,
    pub given: Option<Vec<f64>>,
}

impl Point {
    pub fn free(x: Vec<f64>) -> Self {
        Point {
            x,
            index: None,
            given: None,
        }
    }

    pub fn view(&self) -> ArrayView1<'_, f64> {
        ArrayView1::from(&self.x[..])
    }
}

/// An axis-aligned box inside [0,1]^D: `lo[k] <= x[k] <= hi[k]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Region {
    pub lo: Vec<f64>,
    pub hi: Vec<f64>,
}

impl Region {
    pub fn unit(dim: usize) -> Self {
        Region {
            lo: vec![0.0; dim],
            hi: vec![1.0; dim],
        }
    }

    pub fn dim(&self) -> usize {
        self.lo.len()
    }

    pub fn contains(&self, x: &[f64]) -> bool {
        x.iter()
            .zip(self.lo.iter().zip(&self.hi))
            .all(|(v, (l, h))| *l <= *v && *v <= *h)
    }

    /// A uniformly random point of the region.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Vec<f64> {
        self.lo
            .iter()
            .zip(&self.hi)
            .map(|(l, h)| l + (h - l) * rng.random::<f64>())
            .collect()
    }
}

/// Where the algorithms search: a finite grid (exact argmax) or the continuous box [0,1]^D
/// of named hyperparameters (candidates plus L-BFGS-B; src/optim.rs).
#[derive(Debug)]
pub enum Space {
    Grid(Domain),
    Box(Vec<Param>),
}

impl Space {
    pub fn dim(&self) -> usize {
        match self {
            Space::Grid(d) => d.dim(),
            Space::Box(p) => p.iter().map(Param::width).sum(),
        }
    }

    /// Each hyperparameter of a box with its unit coordinates (one, or a categorical one's
    /// one-hot block), in order; none on a grid.
    pub fn blocks(&self) -> Vec<(&Param, Range<usize>)> {
        let Space::Box(params) = self else {
            return Vec::new();
        };
        let mut at = 0;
        params
            .iter()
            .map(|p| {
                at += p.width();
                (p, at - p.width()..at)
            })
            .collect()
    }

    /// The unit coordinates of each categorical parameter of a box (its one-hot block).
    pub fn groups(&self) -> Vec<Range<usize>> {
        self.blocks()
            .into_iter()
            .filter(|(p, _)| p.is_categorical())
            .map(|(_, r)| r)
            .collect()
    }

    /// The point of this space at unit coordinates `x`. On a box, each categorical
    /// parameter's block becomes the one-hot vector of its largest coordinate (the first of
    /// equals): the surrogates only ever see valid configurations, every choice at the same
    /// distance from every other (Garrido-Merchan and Hernandez-Lobato, 2020).
    pub fn point(&self, mut x: Vec<f64>) -> Point {
        for g in self.groups() {
            one_hot(&mut x[g], None);
        }
        Point::free(x)
    }

    pub fn grid(&self) -> Option<&Domain> {
        match self {
            Space::Grid(d) => Some(d),
            Space::Box(_) => None,
        }
    }

    /// Names of the raw hyperparameters, as trace columns (empty for synthetic grids).
    pub fn names(&self) -> Vec<String> {
        match self {
            Space::Grid(d) => d.names.clone(),
            Space::Box(p) => p.iter().map(|p| p.name.clone()).collect(),
        }
    }

    /// How this space's raw values are named and written.
    pub fn codec(&self) -> Codec {
        match self {
            Space::Box(params) => Codec {
                names: params.iter().map(|p| p.name.clone()).collect(),
                choices: params.iter().map(|p| p.choices.clone()).collect(),
            },
            Space::Grid(d) => Codec {
                names: d.names.clone(),
                choices: vec![Vec::new(); d.names.len()],
            },
        }
    }

    /// The raw hyperparameter values of a point (empty where the space has none).
    pub fn raw(&self, p: &Point) -> Vec<f64> {
        if let Some(given) = &p.given {
            return given.clone();
        }
        match self {
            Space::Grid(d) => match (&d.raw, p.index) {
                (Some(raw), Some(i)) => raw.row(i).to_vec(),
                _ => Vec::new(),
            },
            Space::Box(_) => self
                .blocks()
                .into_iter()
                .map(|(h, r)| {
                    let block = &p.x[r];
                    if h.is_categorical() {
                        first_max(block) as f64
                    } else {
                        h.value(block[0])
                    }
                })
                .collect(),
        }
    }

    /// The point with raw hyperparameter values `raw` (in `names()` order): on a box the unit
    /// coordinates that map onto them, refused outside the range; on a grid the row that holds
    /// exactly those values (relative 1e-9), refused with the nearest row named otherwise.
    pub fn point_at_raw(&self, raw: &[f64]) -> std::result::Result<Point, String> {
        match self {
            Space::Box(params) => {
                let mut x = Vec::with_capacity(self.dim());
                let mut given = Vec::with_capacity(raw.len());
                for (p, &v) in params.iter().zip(raw) {
                    if p.is_categorical() {
                        given.push(v);
                        let k = p.choices.len();
                        if !(v >= 0.0 && v.fract() == 0.0 && (v as usize) < k) {
                            return Err(format!(
                                "{} = {v} is not the index of one of its {k} choices",
                                p.name
                            ));
                        }
                        x.extend((0..k).map(|i| if i == v as usize { 1.0 } else { 0.0 }));
                        continue;
                    }
                    let slack = 1e-12 * (p.high - p.low).abs().max(p.high.abs());
                    if !(v.is_finite() && v >= p.low - slack && v <= p.high + slack) {
                        return Err(format!(
                            "{} = {v} is outside its range [{}, {}]",
                            p.name, p.low, p.high
                        ));
                    }
                    let u = match p.scale {
                        Scale::Linear => (v - p.low) / (p.high - p.low),
                        Scale::Log => (v.ln() - p.low.ln()) / (p.high.ln() - p.low.ln()),
                    };
                    let u = u.clamp(0.0, 1.0);
                    x.push(u);
                    // The value itself, inside the range; an integer's as the space rounds it.
                    given.push(if p.integer {
                        p.value(u)
                    } else {
                        v.clamp(p.low, p.high)
                    });
                }
                Ok(Point {
                    given: Some(given),
                    ..Point::free(x)
                })
            }
            Space::Grid(d) => {
                let Some(table) = &d.raw else {
                    return Err("this objective's grid has no named hyperparameters".into());
                };
                let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0);
                let mut nearest = (f64::INFINITY, 0);
                for (i, row) in table.rows().into_iter().enumerate() {
                    if row.iter().zip(raw).all(|(&a, &b)| close(a, b)) {
                        return Ok(d.at(i));
                    }
                    // Distance in log space where every value is positive (C, gamma), else
                    // plain: only to name the nearest row in the message.
                    let dist: f64 = row
                        .iter()
                        .zip(raw)
                        .map(|(&a, &b)| {
                            if a > 0.0 && b > 0.0 {
                                (a.ln() - b.ln()).powi(2)
                            } else {
                                (a - b).powi(2)
                            }
                        })
                        .sum();
                    if dist < nearest.0 {
                        nearest = (dist, i);
                    }
                }
                let row: Vec<String> = d
                    .names
                    .iter()
                    .zip(table.row(nearest.1))
                    .map(|(n, v)| format!("{n} = {v}"))
                    .collect();
                Err(format!(
                    "no grid point has these values; the nearest is {}",
                    row.join(", ")
                ))
            }
        }
    }

    /// The number of distinct points, None for a box.
    pub fn size(&self) -> Option<usize> {
        self.grid().map(Domain::len)
    }
}

/// How raw hyperparameter values are named and written wherever people and programs read
/// them (traces, journals, a command's variables and stdin, `ask`, `tell`, `best`): each
/// hyperparameter's name and, for a categorical one, its choices (a raw value is then the
/// choice's index, written as its name).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Codec {
    pub names: Vec<String>,
    /// Per hyperparameter: its choices, empty for a number.
    pub choices: Vec<Vec<String>>,
}

impl Codec {
    /// Numbers only.
    pub fn numeric(names: Vec<String>) -> Self {
        let choices = vec![Vec::new(); names.len()];
        Codec { names, choices }
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Raw value k as text: its choice's name, or the number in shortest round-trip form.
    pub fn show(&self, k: usize, v: f64) -> String {
        match self.choices[k].get(v as usize) {
            Some(name) if v >= 0.0 => name.clone(),
            _ => v.to_string(),
        }
    }

    /// Every raw value as text.
    pub fn show_all(&self, raw: &[f64]) -> Vec<String> {
        raw.iter()
            .enumerate()
            .map(|(k, &v)| self.show(k, v))
            .collect()
    }

    /// Raw value k from the text `show` writes.
    pub fn parse(&self, k: usize, text: &str) -> std::result::Result<f64, String> {
        let text = text.trim();
        let name = &self.names[k];
        let choices = &self.choices[k];
        if choices.is_empty() {
            return text
                .parse::<f64>()
                .map_err(|_| format!("{name} = \"{text}\" is not a number"));
        }
        choices
            .iter()
            .position(|c| c == text)
            .map(|i| i as f64)
            .ok_or_else(|| {
                format!(
                    "{name} = \"{text}\" is not one of its choices ({})",
                    choices.join(", ")
                )
            })
    }

    /// "C = 0.5, kernel = rbf": a point for messages.
    pub fn describe(&self, raw: &[f64]) -> String {
        self.names
            .iter()
            .zip(self.show_all(raw))
            .map(|(n, v)| format!("{n} = {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Values by name, as JSON (choices as strings): a journal entry's `params` and what a
    /// command reads on stdin.
    pub fn json(&self, raw: &[f64]) -> serde_json::Map<String, serde_json::Value> {
        self.names
            .iter()
            .zip(raw)
            .enumerate()
            .map(|(k, (n, &v))| {
                let value = if self.choices[k].is_empty() {
                    serde_json::json!(v)
                } else {
                    serde_json::json!(self.show(k, v))
                };
                (n.clone(), value)
            })
            .collect()
    }

    /// The raw values in a JSON map `json` writes; None where one is missing or not valid.
    pub fn from_json(&self, map: &serde_json::Map<String, serde_json::Value>) -> Option<Vec<f64>> {
        self.names
            .iter()
            .enumerate()
            .map(|(k, n)| match map.get(n)? {
                serde_json::Value::String(s) if !self.choices[k].is_empty() => {
                    self.parse(k, s).ok()
                }
                v if self.choices[k].is_empty() => v.as_f64(),
                _ => None,
            })
            .collect()
    }
}

/// The index of the largest value (the first of equals).
fn first_max(v: &[f64]) -> usize {
    let mut best = 0;
    for (i, &x) in v.iter().enumerate() {
        if x > v[best] {
            best = i;
        }
    }
    best
}

/// Makes a categorical block one-hot at its largest coordinate among the choices whose one-hot
/// vector lies inside `bounds` (lo, hi of the block; None: all choices). False when no
/// choice does, leaving the block as it was.
pub fn one_hot(block: &mut [f64], bounds: Option<(&[f64], &[f64])>) -> bool {
    let allowed = |c: usize| match bounds {
        None => true,
        Some((lo, hi)) => (0..block.len()).all(|j| {
            let v = if j == c { 1.0 } else { 0.0 };
            lo[j] <= v && v <= hi[j]
        }),
    };
    let mut best: Option<usize> = None;
    for c in 0..block.len() {
        if allowed(c) && best.is_none_or(|b| block[c] > block[b]) {
            best = Some(c);
        }
    }
    let Some(c) = best else {
        return false;
    };
    for (j, v) in block.iter_mut().enumerate() {
        *v = if j == c { 1.0 } else { 0.0 };
    }
    true
}

/// Halton's bases: one per unit coordinate, so a box has at most 64 (a categorical parameter
/// takes one per choice).
pub const PRIMES: [u32; 64] = [
    2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97,
    101, 103, 107, 109, 113, 127, 131, 137, 139, 149, 151, 157, 163, 167, 173, 179, 181, 191, 193,
    197, 199, 211, 223, 227, 229, 233, 239, 241, 251, 257, 263, 269, 271, 277, 281, 283, 293, 307,
    311,
];

/// The radical inverse of i in base b (the van der Corput sequence).
fn radical_inverse(mut i: u64, b: u32) -> f64 {
    let inv = 1.0 / b as f64;
    let mut f = inv;
    let mut r = 0.0;
    while i > 0 {
        r += f * (i % b as u64) as f64;
        i /= b as u64;
        f *= inv;
    }
    r
}

/// n points of a randomly shifted Halton sequence in `region` (Cranley-Patterson rotation:
/// every coordinate shifted by one uniform draw modulo 1). Low discrepancy fills a box more
/// evenly than independent draws, and the shift keeps the set random across iterations, so
/// the multi-start search is not always seeded at the same places.
pub fn halton<R: Rng + ?Sized>(n: usize, region: &Region, rng: &mut R) -> Result<Vec<Vec<f64>>> {
    let d = region.dim();
    if d > PRIMES.len() {
        return Err(crate::error::FboError::Run(format!(
            "quasi-random candidates support up to {} dimensions, got {d}",
            PRIMES.len()
        )));
    }
    let shift: Vec<f64> = (0..d).map(|_| rng.random::<f64>()).collect();
    Ok((0..n)
        .map(|i| {
            (0..d)
                .map(|k| {
                    let u = (radical_inverse(i as u64 + 1, PRIMES[k]) + shift[k]).fract();
                    region.lo[k] + (region.hi[k] - region.lo[k]) * u
                })
                .collect()
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::rng::{Purpose, stream};

    #[test]
    fn parameters_map_ends_exactly_and_log_scales_geometrically() {
        let c = Param {
            scale: Scale::Log,
            ..Param::linear("C", 1e-4, 10.0)
        };
        assert_eq!(c.value(0.0), 1e-4);
        assert_eq!(c.value(1.0), 10.0);
        assert!((c.value(0.5) - (1e-4f64 * 10.0).sqrt()).abs() < 1e-15);
        let b = Param {
            integer: true,
            ..Param::linear("batch", 20.0, 60.0)
        };
        assert_eq!(b.value(0.51), 40.0);
        assert_eq!(b.value(-3.0), 20.0);
        // Bounds between integers: rounding never leaves them.
        let h = Param {
            integer: true,
            ..Param::linear("h", 0.5, 3.5)
        };
        let values: Vec<f64> = (0..=100).map(|i| h.value(i as f64 / 100.0)).collect();
        assert!(values.iter().all(|v| (1.0..=3.0).contains(v)), "{values:?}");
        assert_eq!((h.value(0.0), h.value(1.0)), (1.0, 3.0));
    }

    #[test]
    fn tensor_grid_numbers_points_as_tabulate_does() {
        let ps = [Param::linear("a", 0.0, 1.0), Param::linear("b", 10.0, 20.0)];
        let d = Domain::tensor(&ps, 3);
        assert_eq!(d.len(), 9);
        assert_eq!(d.point(1).to_vec(), vec![0.0, 0.5]);
        assert_eq!(d.point(3).to_vec(), vec![0.5, 0.0]);
        let s = Space::Grid(d);
        assert_eq!(s.raw(&s.grid().unwrap().at(5)), vec![0.5, 20.0]);
    }

    #[test]
    fn halton_points_fill_the_region_evenly() {
        let mut rng = stream(1, 0, 0, Purpose::Init);
        let region = Region {
            lo: vec![0.5, 0.0],
            hi: vec![1.0, 0.5],
        };
        let pts = halton(1024, &region, &mut rng).unwrap();
        assert!(pts.iter().all(|p| region.contains(p)));
        // Every one of the 16 equal cells gets 64 +/- 8 points (independent draws would
        // typically miss by about 8 in several cells).
        let mut counts = [0usize; 16];
        for p in &pts {
            let i = (((p[0] - 0.5) * 8.0) as usize).min(3);
            let j = ((p[1] * 8.0) as usize).min(3);
            counts[4 * i + j] += 1;
        }
        assert!(counts.iter().all(|&c| c.abs_diff(64) <= 8), "{counts:?}");
    }

    fn kernel_space() -> Space {
        let choices = ["rbf", "poly", "linear"].map(String::from).to_vec();
        Space::Box(vec![
            Param {
                scale: Scale::Log,
                ..Param::linear("C", 0.01, 100.0)
            },
            Param::categorical("kernel", choices),
            Param::linear("tol", 0.0, 1.0),
        ])
    }

    #[test]
    fn a_categorical_parameter_takes_one_hot_coordinates_and_round_trips() {
        let s = kernel_space();
        assert_eq!(s.dim(), 5);
        assert_eq!(s.groups(), vec![1..4]);
        // Any point of the cube becomes valid: the block's largest coordinate wins (the first
        // of equals); the numbers are left alone.
        let p = s.point(vec![0.5, 0.2, 0.7, 0.7, 0.25]);
        assert_eq!(p.x, vec![0.5, 0.0, 1.0, 0.0, 0.25]);
        assert_eq!(s.raw(&p), vec![1.0, 1.0, 0.25]);
        let back = s.point_at_raw(&[1.0, 1.0, 0.25]).unwrap();
        assert_eq!(&back.x[1..], &p.x[1..]);
        assert!((back.x[0] - 0.5).abs() < 1e-15);
        assert!(s.point_at_raw(&[1.0, 3.0, 0.25]).is_err());
        assert!(s.point_at_raw(&[1.0, 0.5, 0.25]).is_err());
        // The codec writes and reads choices by name, numbers in shortest form.
        let c = s.codec();
        assert_eq!(c.show_all(&[1.0, 2.0, 0.25]), vec!["1", "linear", "0.25"]);
        assert_eq!(c.parse(1, " poly "), Ok(1.0));
        assert!(c.parse(1, "1").unwrap_err().contains("rbf, poly, linear"));
        assert!(c.parse(0, "rbf").is_err());
        let json = c.json(&[1.0, 2.0, 0.25]);
        assert_eq!(json["kernel"], serde_json::json!("linear"));
        assert_eq!(json["C"], serde_json::json!(1.0));
        assert_eq!(c.from_json(&json), Some(vec![1.0, 2.0, 0.25]));
        assert_eq!(
            c.describe(&[1.0, 0.0, 0.5]),
            "C = 1, kernel = rbf, tol = 0.5"
        );
        // A choice given as a number, or a number as a name, is no value.
        let mut bad = json.clone();
        bad.insert("kernel".into(), serde_json::json!(2));
        assert_eq!(c.from_json(&bad), None);
    }

    #[test]
    fn a_named_raw_value_reaches_the_objective_exactly() {
        let s = Space::Box(vec![
            // The landmine SVM's box.
            Param::linear("C", 1e-4, 10.0),
            Param::linear("gamma", 0.01, 10.0),
            Param {
                integer: true,
                ..Param::linear("width", 1.0, 9.0)
            },
        ]);
        let named = [5.3110153144091115, 0.016718441129178616, 4.0];
        let p = s.point_at_raw(&named).unwrap();
        // Through the unit cube this C comes back one ulp off: not every raw value is the
        // image of a unit coordinate.
        let through_cube = s.raw(&Point::free(p.x.clone()));
        assert_ne!(through_cube[0], named[0]);
        assert_eq!(s.raw(&p), named.to_vec());
        // Inside the range, and an integer as the space rounds it.
        let edge = s.point_at_raw(&[10.0 + 1e-12, 0.5, 4.4]).unwrap();
        assert_eq!(s.raw(&edge), vec![10.0, 0.5, 4.0]);
    }

    #[test]
    fn uniform_cube_points_give_every_choice_equally_often() {
        // The initial points and random search draw the cube uniformly: argmax of k uniform
        // coordinates is each choice with probability 1/k.
        let s = kernel_space();
        let mut rng = stream(7, 0, 0, Purpose::Init);
        let mut counts = [0usize; 3];
        let n = 30_000;
        for _ in 0..n {
            let p = s.point(Region::unit(5).sample(&mut rng));
            counts[s.raw(&p)[1] as usize] += 1;
        }
        // Binomial s.d. sqrt(n p (1 - p)) = 82: 4 s.d.
        for c in counts {
            assert!(c.abs_diff(n / 3) < 330, "{counts:?}");
        }
    }

    #[test]
    fn one_hot_keeps_to_the_choices_a_region_allows() {
        let mut b = [0.9, 0.5, 0.1];
        // The region rules out choice 0 (its coordinate must stay <= 0.5).
        assert!(one_hot(&mut b, Some((&[0.0; 3], &[0.5, 1.0, 1.0]))));
        assert_eq!(b, [0.0, 1.0, 0.0]);
        let mut b = [0.9, 0.5, 0.1];
        assert!(!one_hot(&mut b, Some((&[0.5; 3], &[1.0; 3]))));
        assert_eq!(b, [0.9, 0.5, 0.1]);
    }
}
