//! Objectives: a search space (a finite grid of [0,1]^D, or the continuous box of named
//! hyperparameters; `space`) and an evaluator giving every agent's noiseless function on it:
//! values computed in advance on a grid (synthetic draws, response tables) or computed at each
//! query (closed-form functions, live model training), memoised per (agent, point).

pub mod function;
pub mod model;
pub mod space;
pub mod synthetic;
pub mod table;

pub use space::{Domain, Param, Point, Region, Scale, Space};

use crate::error::Result;
use crate::spec::{ObjectiveKind, Spec};
use ndarray::Array1;
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// An evaluator computed at each query.
pub trait Evaluate: Send + Sync {
    /// f_agent at a point (in the maximised orientation) and the seconds the evaluation took;
    /// `raw` holds the point's raw hyperparameter values.
    fn evaluate(&self, agent: usize, point: &Point, raw: &[f64]) -> Result<(f64, f64)>;
}

/// (f, seconds) per (agent, coordinates as bits).
type Memo = Mutex<HashMap<(usize, Vec<u64>), (f64, f64)>>;

enum Values {
    /// Every agent's value (and recorded cost) at every grid point, computed in advance.
    Grid {
        values: Vec<Array1<f64>>,
        cost: Option<Vec<Array1<f64>>>,
    },
    /// Computed when first queried; later queries of the same (agent, point) reuse the result,
    /// so algorithms that share initial points train once.
    Live { eval: Box<dyn Evaluate>, memo: Memo },
}

/// One replicate of an objective: the functions of all agents on a shared search space.
pub struct Landscape {
    pub space: Arc<Space>,
    values: Values,
    agents: usize,
    /// max f per agent where known (the grid's maximum; a closed form's); None for live
    /// models, whose regret cannot be computed.
    optimum: Option<Vec<f64>>,
    noise_sd: f64,
    /// metric = sign * f (tables of a minimised metric store f = -metric).
    metric_sign: f64,
}

impl std::fmt::Debug for Landscape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Landscape")
            .field("space", &self.space)
            .field("agents", &self.agents)
            .finish_non_exhaustive()
    }
}

impl Landscape {
    /// Values computed in advance on a grid.
    pub fn new(space: Arc<Space>, values: Vec<Array1<f64>>, noise_var: f64) -> Self {
        debug_assert!(space.grid().is_some(), "values in advance need a grid");
        let optimum = values
            .iter()
            .map(|v| v.iter().cloned().fold(f64::NEG_INFINITY, f64::max))
            .collect();
        Landscape {
            space,
            agents: values.len(),
            values: Values::Grid { values, cost: None },
            optimum: Some(optimum),
            noise_sd: noise_var.sqrt(),
            metric_sign: 1.0,
        }
    }

    /// Values computed at each query by `eval`.
    pub fn live(
        space: Arc<Space>,
        agents: usize,
        eval: Box<dyn Evaluate>,
        optimum: Option<Vec<f64>>,
        noise_var: f64,
    ) -> Self {
        Landscape {
            space,
            agents,
            values: Values::Live {
                eval,
                memo: Mutex::new(HashMap::new()),
            },
            optimum,
            noise_sd: noise_var.sqrt(),
            metric_sign: 1.0,
        }
    }

    pub fn with_costs(mut self, seconds: Vec<Array1<f64>>) -> Self {
        if let Values::Grid { cost, .. } = &mut self.values {
            *cost = Some(seconds);
        }
        self
    }

    pub fn with_metric_sign(mut self, sign: f64) -> Self {
        self.metric_sign = sign;
        self
    }

    /// The grid of a grid objective.
    pub fn grid(&self) -> Option<&Domain> {
        self.space.grid()
    }

    pub fn dim(&self) -> usize {
        self.space.dim()
    }

    /// f in the metric's own units (AUC, validation error).
    pub fn metric(&self, f: f64) -> f64 {
        self.metric_sign * f
    }

    pub fn agents(&self) -> usize {
        self.agents
    }

    /// f_agent(x), noiseless, and the seconds its evaluation cost (the table's recorded
    /// training time, the live model's measured one; 0 for synthetic functions).
    pub fn evaluate(&self, agent: usize, p: &Point) -> Result<(f64, f64)> {
        match &self.values {
            Values::Grid { values, cost } => {
                let i = p
                    .index
                    .expect("points of a grid objective carry their grid index");
                Ok((values[agent][i], cost.as_ref().map_or(0.0, |c| c[agent][i])))
            }
            Values::Live { eval, memo } => {
                let key = (agent, p.x.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
                if let Some(&hit) = memo.lock().expect("memo lock").get(&key) {
                    return Ok(hit);
                }
                // Evaluated outside the lock so agents train in parallel; a point two threads
                // ask for at once is computed twice with the same result.
                let out = eval.evaluate(agent, p, &self.space.raw(p))?;
                memo.lock().expect("memo lock").insert(key, out);
                Ok(out)
            }
        }
    }

    /// f_agent at grid point i of a grid objective (tests, benchmarks, tables).
    pub fn grid_value(&self, agent: usize, i: usize) -> f64 {
        match &self.values {
            Values::Grid { values, .. } => values[agent][i],
            Values::Live { .. } => {
                let grid = self.grid().expect("grid_value needs a grid");
                self.value(agent, &grid.at(i)).expect("evaluation")
            }
        }
    }

    /// f_agent(x), noiseless.
    pub fn value(&self, agent: usize, p: &Point) -> Result<f64> {
        Ok(self.evaluate(agent, p)?.0)
    }

    /// max f_agent, where known.
    pub fn optimum(&self, agent: usize) -> Option<f64> {
        self.optimum.as_ref().map(|o| o[agent])
    }

    /// y = f_agent(x) + N(0, sigma^2).
    pub fn observe<R: Rng + ?Sized>(&self, agent: usize, p: &Point, rng: &mut R) -> Result<f64> {
        Ok(self.noisy(self.value(agent, p)?, rng))
    }

    /// f + N(0, sigma^2), one normal draw from `rng`.
    pub fn noisy<R: Rng + ?Sized>(&self, f: f64, rng: &mut R) -> f64 {
        let eps: f64 = StandardNormal.sample(rng);
        f + self.noise_sd * eps
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
        ObjectiveKind::Function(f) => Ok(vec![function::landscape(
            *f,
            &spec.objective,
            spec.total_agents(),
        )?]),
        ObjectiveKind::Model { settings, agents } => {
            Ok(vec![model::landscape(settings, agents, &spec.objective)?])
        }
        _ => synthetic::landscapes(&spec.objective, spec.total_agents(), spec.seed),
    }
}
