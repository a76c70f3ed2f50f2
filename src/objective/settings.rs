//! An objective's settings as the spec gives them, checked (`crate::spec::objective` parses
//! and checks them): its kind and parameters and its search space. They live here, beside the
//! objectives they configure, so that the objectives never import the spec.

use crate::objective::command::CommandSettings;
use crate::objective::function::{Function, Heterogeneity};
use crate::objective::model::ModelSettings;
use crate::objective::space::{Domain, Param, Space};
use crate::objective::table::TableMeta;

#[derive(Clone, Debug, PartialEq)]
pub enum ObjectiveKind {
    /// FTS paper App. D.1: target f, N other agents g_n = f +/- d per point.
    SyntheticFts,
    /// DP paper App. B.1.1: N agents f +/- d, or alpha-mixtures of independent draws.
    SyntheticDp { heterogeneous: Option<f64> },
    /// A hyperparameter-response table; `agents` are the table's agent ids taking part, in
    /// the order fbo numbers them 0, 1, ...
    Table { meta: TableMeta, agents: Vec<usize> },
    /// A closed-form test function; with heterogeneity each agent sees its own shifted
    /// and rotated version (`objective::function::Transform`).
    Function {
        function: Function,
        /// The box of the function's own axes, (low, high) each: its own box unless
        /// `objective.bounds` narrows it (always around its maximiser, so regret stays exact).
        bounds: Vec<(f64, f64)>,
        heterogeneity: Heterogeneity,
        /// Inert axes after the function's own (`objective.embed` minus its dimension): the
        /// function hidden in a higher-dimensional box, as problems with few axes that matter.
        inert: usize,
    },
    /// A dataset's model trained at every query; `agents` are the data's agents taking part.
    Model {
        settings: ModelSettings,
        agents: Vec<usize>,
    },
    /// The user's command run at every query (`kind = "command"`), or results reported by
    /// hand with `fbo tell` (`kind = "external"`, no argv).
    Command(CommandSettings),
}

impl ObjectiveKind {
    /// A closed-form function or the user's own command: outputs on the user's scale, with
    /// nothing of a paper's protocol to keep, so the defaults measured beyond the papers apply
    /// (the agreed shared model, the signal-weighted following of a noised release).
    pub fn is_open(&self) -> bool {
        matches!(
            self,
            ObjectiveKind::Function { .. } | ObjectiveKind::Command(_)
        )
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ObjectiveSpec {
    pub kind: ObjectiveKind,
    /// Agents (fbo's numbering) whose optimisation TS and FTS trace.
    pub targets: Vec<usize>,
    pub grid: usize,
    pub length_scale: f64,
    pub noise_var: f64,
    pub functions: usize,
    pub d: f64,
    /// Named hyperparameters of function and model objectives (empty otherwise).
    pub params: Vec<Param>,
    /// Function and model objectives: points per hyperparameter of a grid; None: the box.
    pub per_dim: Option<usize>,
}

impl ObjectiveSpec {
    /// The space of a function or model objective: the tensor grid of `per_dim` points per
    /// hyperparameter, or the continuous box.
    pub fn space(&self) -> Space {
        match self.per_dim {
            Some(n) => Space::Grid(Domain::tensor(&self.params, n)),
            None => Space::Box(self.params.clone()),
        }
    }

    /// What the trace's `metric` column measures, for axis labels: its name and whether
    /// higher is better.
    pub fn metric_label(&self) -> (String, bool) {
        match &self.kind {
            ObjectiveKind::SyntheticFts
            | ObjectiveKind::SyntheticDp { .. }
            | ObjectiveKind::Function { .. } => ("f(x)".into(), true),
            ObjectiveKind::Table { meta, .. } => {
                let name = match meta.metric.as_str() {
                    "auc" | "platt-auc" => "AUC".to_string(),
                    "error" => "validation error".to_string(),
                    // fbo tabulate writes validation_error: a label reads it with a space.
                    other => other.replace('_', " "),
                };
                (name, meta.sign > 0.0)
            }
            ObjectiveKind::Model { settings, .. } => {
                let (name, higher) = settings.dataset.metric_label();
                (name.into(), higher)
            }
            ObjectiveKind::Command(c) => (c.metric_name.clone(), c.sign > 0.0),
        }
    }

    /// Points of the search space; None for a box.
    pub fn domain_size(&self) -> Option<usize> {
        match &self.kind {
            ObjectiveKind::SyntheticFts | ObjectiveKind::SyntheticDp { .. } => Some(self.grid),
            ObjectiveKind::Table { meta, .. } => Some(meta.points),
            ObjectiveKind::Function { .. }
            | ObjectiveKind::Model { .. }
            | ObjectiveKind::Command(_) => self
                .per_dim
                .map(|n| n.saturating_pow(self.params.len() as u32)),
        }
    }
}
