//! Objectives: a finite domain (points in [0,1]^D) and one noiseless function per agent on it.
//! Every acquisition is an exact argmax over the domain (algorithms.md section 1).

pub mod synthetic;
pub mod table;

use crate::error::Result;
use crate::spec::{ObjectiveKind, Spec};
use ndarray::{Array1, Array2, ArrayView1, ArrayView2};
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};
use std::sync::Arc;

#[derive(Debug)]
pub struct Domain {
    points: Array2<f64>,
}

impl Domain {
    pub fn new(points: Array2<f64>) -> Self {
        Domain { points }
    }

    /// n evenly spaced points on [0, 1], endpoints included.
    pub fn grid_1d(n: usize) -> Self {
        let pts = Array1::linspace(0.0, 1.0, n).insert_axis(ndarray::Axis(1));
        Domain { points: pts }
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
}

/// One replicate of an objective: the functions of all agents on a shared domain.
#[derive(Debug)]
pub struct Landscape {
    pub domain: Arc<Domain>,
    values: Vec<Array1<f64>>,
    optimum: Vec<f64>,
    noise_sd: f64,
    /// metric = sign * f (tables of a minimised metric store f = -metric).
    metric_sign: f64,
    /// Seconds one evaluation took when the table was built, per agent and point; None for
    /// synthetic objectives, whose evaluations are free.
    cost: Option<Vec<Array1<f64>>>,
}

impl Landscape {
    pub fn new(domain: Arc<Domain>, values: Vec<Array1<f64>>, noise_var: f64) -> Self {
        let optimum = values
            .iter()
            .map(|v| v.iter().cloned().fold(f64::NEG_INFINITY, f64::max))
            .collect();
        Landscape {
            domain,
            values,
            optimum,
            noise_sd: noise_var.sqrt(),
            metric_sign: 1.0,
            cost: None,
        }
    }

    pub fn with_costs(mut self, seconds: Vec<Array1<f64>>) -> Self {
        self.cost = Some(seconds);
        self
    }

    /// Seconds an evaluation of f_agent(x_index) costs (the table's training time; 0 when the
    /// objective records none).
    pub fn cost(&self, agent: usize, index: usize) -> f64 {
        self.cost.as_ref().map_or(0.0, |c| c[agent][index])
    }

    pub fn with_metric_sign(mut self, sign: f64) -> Self {
        self.metric_sign = sign;
        self
    }

    /// f in the metric's own units (AUC, validation error).
    pub fn metric(&self, f: f64) -> f64 {
        self.metric_sign * f
    }

    pub fn agents(&self) -> usize {
        self.values.len()
    }

    /// f_agent(x_index), noiseless.
    pub fn value(&self, agent: usize, index: usize) -> f64 {
        self.values[agent][index]
    }

    pub fn optimum(&self, agent: usize) -> f64 {
        self.optimum[agent]
    }

    /// y = f_agent(x) + N(0, sigma^2).
    pub fn observe<R: Rng + ?Sized>(&self, agent: usize, index: usize, rng: &mut R) -> f64 {
        let eps: f64 = StandardNormal.sample(rng);
        self.value(agent, index) + self.noise_sd * eps
    }
}

/// The landscapes of a spec; run r uses `landscapes[r % len]`.
pub fn landscapes(spec: &Spec) -> Result<Vec<Arc<Landscape>>> {
    match &spec.objective.kind {
        ObjectiveKind::Table { meta, agents } => Ok(vec![table::landscape(
            meta,
            agents,
            spec.objective.noise_var,
        )?]),
        _ => synthetic::landscapes(&spec.objective, spec.total_agents(), spec.seed),
    }
}
