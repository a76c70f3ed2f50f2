//! Experiment specs: TOML is deserialised into raw types that reject unknown keys, then
//! checked once into the parameters the rest of fbo uses. No numeric code re-validates user
//! input; every message names the file, the key and what is allowed.

mod algorithm;
mod clock;
pub mod frameworks;
mod objective;
pub mod portable;
pub mod schedule;
mod server;

pub use algorithm::*;
pub use clock::{ClockSpec, Pace};
pub use objective::*;
pub use server::*;

use crate::acquisition::optimize::BoxSearch;
use crate::error::{FboError, Result};
use crate::objective::command::{CommandSettings, OnFailure};
use crate::objective::function::Function;
use crate::objective::model::{Dataset, ModelSettings, SvmMetric};
use crate::objective::space::{Domain, Param, Scale, Space};
use crate::objective::table::TableMeta;
use crate::privacy::{Accountant, Sampling};
use crate::surrogate::gp::{
    Ard, FitBudget, GpHyper, HyperBounds, HyperModel, HyperPrior, Kernel, MeanFn,
};
use crate::surrogate::own::{OwnSampler, OwnSettings};
use schedule::{Form, Schedule};
use serde::Deserialize;
use std::path::{Path, PathBuf};

// ---------------------------------------------------------------------------------------
// Checked parameters

#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    pub name: String,
    pub path: PathBuf,
    /// The TOML as read, copied next to the results.
    pub source: String,
    pub seed: u64,
    pub runs: usize,
    pub iterations: usize,
    pub initial_points: usize,
    /// Evaluations per agent per round (`batch`): round t's are the trace's iterations
    /// (t - 1) batch + 1 ..= t batch.
    pub batch: usize,
    /// Evaluations each agent keeps running at once (`parallel`): its next query is chosen
    /// as soon as its oldest returns, with the others pending (`crate::run::pending`).
    pub parallel: usize,
    /// Where the initial points come from (random, a design, a file).
    pub initial_design: crate::design::InitialDesign,
    pub algorithms: Vec<AlgorithmSpec>,
    pub objective: ObjectiveSpec,
    pub surrogate: SurrogateSpec,
    pub federation: FederationSpec,
    pub privacy: PrivacySpec,
    pub output: OutputSpec,
    /// The simulated clock (`[clock]`): evaluation costs, and an asynchronous server's pace.
    pub clock: Option<ClockSpec>,
    /// How a continuous box is searched ([acquisition]); unused on grids.
    pub acquisition: BoxSearch,
    /// The file has a [sweep] table (only `fbo sweep` runs it).
    pub has_sweep: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PrivacySpec {
    pub delta: f64,
    pub accountants: Vec<Accountant>,
}

/// Where FTS's other agents get their t_n observations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObservationSource {
    /// t_n distinct random points (FTS paper App. D.1).
    Random,
    /// initial_points random points, then t_n iterations of their own TS (App. D.2).
    Ts,
}

/// The model behind the messages (`surrogate.shared`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SharedModel {
    /// The papers' construction as pinned: features of `length_scale` and `kernel_variance`,
    /// BLR noise `lambda`, on the raw outputs.
    Fixed,
    /// Fitted: on standardised outputs, with hyperparameters the agents agree on each round
    /// (`surrogate::agreement`).
    Agreed,
}

impl SharedModel {
    pub const NAMES: &'static str = "\"fixed\", \"agreed\"";

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "fixed" => Some(SharedModel::Fixed),
            "agreed" => Some(SharedModel::Agreed),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct SurrogateSpec {
    /// The kernel of the shared random features and of every agent's own GP.
    pub kernel: Kernel,
    /// The spec's default for algorithms that do not choose (`AlgorithmSpec::shared`).
    pub shared: SharedModel,
    /// Whether `surrogate.shared` was written (a private algorithm takes it only then).
    pub shared_written: bool,
    pub length_scale: f64,
    pub lambda: f64,
    pub kernel_variance: f64,
    pub normalize_features: bool,
    pub own: OwnSettings,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FederationSpec {
    /// N: agents other than the target (FTS family) or all agents (DP family).
    pub agents: usize,
    /// t_n: observations each other agent holds when it sends its first message.
    pub observations: usize,
    pub observations_from: ObservationSource,
    /// P_N, normalised; one weight per agent other than the target (agent 0).
    pub weights: Vec<f64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct OutputSpec {
    /// Record measured seconds in `elapsed_s`; off gives byte-identical traces across reruns.
    pub timing: bool,
    /// Write beliefs.csv: the hyperparameters of the model behind every model-based query
    /// (length scales, signal and noise variance, mean), per agent and iteration.
    pub beliefs: bool,
}

/// `surrogate.own.noise_variance_known`: a variance > 0, a list of one per agent, or
/// "objective" (the simulated noise `objective.noise_var`, which must then be > 0).
fn known_noise(
    c: &Check,
    v: Option<&toml::Value>,
    objective: &ObjectiveSpec,
    agents: usize,
) -> Result<Vec<f64>> {
    let key = "surrogate.own.noise_variance_known";
    let one = |x: &toml::Value| -> Result<f64> {
        match x.as_float().or_else(|| x.as_integer().map(|i| i as f64)) {
            Some(f) if f.is_finite() && f > 0.0 => Ok(f),
            _ => Err(c.err(
                key,
                format!("must be a variance > 0 on the objective's scale, got {x}"),
            )),
        }
    };
    Ok(match v {
        None => Vec::new(),
        Some(toml::Value::String(s)) if s == "objective" => {
            if objective.noise_var <= 0.0 {
                return Err(c.err(
                    key,
                    "\"objective\" takes objective.noise_var, which is 0 here (a noiseless or measured objective): give the variance",
                ));
            }
            vec![objective.noise_var]
        }
        Some(toml::Value::Array(list)) => {
            if list.len() != agents {
                return Err(c.err(
                    key,
                    format!(
                        "a list needs one variance per agent ({agents}), got {}",
                        list.len()
                    ),
                ));
            }
            list.iter().map(one).collect::<Result<_>>()?
        }
        Some(x) => vec![one(x)?],
    })
}

// ---------------------------------------------------------------------------------------
// Raw TOML

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    name: Option<String>,
    seed: Option<i64>,
    runs: Option<i64>,
    iterations: Option<i64>,
    initial_points: Option<i64>,
    batch: Option<i64>,
    parallel: Option<i64>,
    initial_design: Option<String>,
    initial_design_across_agents: Option<bool>,
    initial_points_file: Option<String>,
    #[serde(default)]
    algorithm: Vec<RawAlgorithm>,
    objective: Option<RawObjective>,
    surrogate: Option<RawSurrogate>,
    federation: Option<RawFederation>,
    server: Option<RawServer>,
    privacy: Option<RawPrivacy>,
    output: Option<RawOutput>,
    clock: Option<clock::RawClock>,
    acquisition: Option<RawAcquisition>,
    /// Read by `fbo sweep` (src/sweep.rs); here only noted.
    sweep: Option<toml::Value>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawPrivacy {
    delta: Option<f64>,
    accountants: Option<Vec<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawAcquisition {
    candidates: Option<i64>,
    starts: Option<i64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawSurrogate {
    kernel: Option<String>,
    shared: Option<String>,
    features: Option<i64>,
    length_scale: Option<f64>,
    lambda: Option<f64>,
    kernel_variance: Option<f64>,
    normalize_features: Option<bool>,
    own: Option<RawOwn>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawOwn {
    features: Option<i64>,
    ard: Option<toml::Value>,
    prior: Option<String>,
    mean: Option<String>,
    fit: Option<bool>,
    refit_every: Option<i64>,
    fit_starts: Option<i64>,
    fit_restarts: Option<i64>,
    fit_points: Option<i64>,
    normalize_y: Option<bool>,
    sample: Option<String>,
    length_scale: Option<f64>,
    signal_variance: Option<f64>,
    noise_variance: Option<f64>,
    length_scale_bounds: Option<Vec<f64>>,
    signal_variance_bounds: Option<Vec<f64>>,
    noise_variance_bounds: Option<Vec<f64>>,
    noise_variance_known: Option<toml::Value>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawFederation {
    agents: Option<i64>,
    observations: Option<i64>,
    observations_from: Option<String>,
    p_t: Option<toml::Value>,
    p1_equals_p2: Option<bool>,
    agent_weights: Option<toml::Value>,
    messages: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawOutput {
    timing: Option<bool>,
    beliefs: Option<bool>,
}

// ---------------------------------------------------------------------------------------
// Checking

/// Builds errors that name the spec file.
struct Check<'a> {
    file: &'a Path,
}

impl Check<'_> {
    fn err(&self, key: &str, msg: impl Into<String>) -> FboError {
        FboError::spec(self.file, key, msg)
    }

    fn int(&self, key: &str, v: Option<i64>, default: i64, min: i64, max: i64) -> Result<usize> {
        let v = v.unwrap_or(default);
        if v < min || v > max {
            return Err(self.err(
                key,
                format!("must be an integer in [{min}, {max}], got {v}"),
            ));
        }
        Ok(v as usize)
    }

    fn positive(&self, key: &str, v: Option<f64>, default: f64) -> Result<f64> {
        let v = v.unwrap_or(default);
        if !(v.is_finite() && v > 0.0) {
            return Err(self.err(key, format!("must be a finite number > 0, got {v}")));
        }
        Ok(v)
    }

    /// `positive` for a key without a default: None stays None.
    fn positive_or_none(&self, key: &str, v: Option<f64>) -> Result<Option<f64>> {
        v.map(|v| self.positive(key, Some(v), v)).transpose()
    }

    fn non_negative(&self, key: &str, v: Option<f64>, default: f64) -> Result<f64> {
        let v = v.unwrap_or(default);
        if !(v.is_finite() && v >= 0.0) {
            return Err(self.err(key, format!("must be a finite number >= 0, got {v}")));
        }
        Ok(v)
    }

    fn bounds(&self, key: &str, v: Option<Vec<f64>>, default: (f64, f64)) -> Result<(f64, f64)> {
        let Some(v) = v else { return Ok(default) };
        match v.as_slice() {
            [lo, hi] if lo.is_finite() && hi.is_finite() && *lo > 0.0 && lo < hi => Ok((*lo, *hi)),
            _ => Err(self.err(
                key,
                format!("must be [low, high] with 0 < low < high, got {v:?}"),
            )),
        }
    }

    fn probability(&self, key: &str, p: f64) -> Result<f64> {
        if p.is_finite() && p > 0.0 && p <= 1.0 {
            Ok(p)
        } else {
            Err(self.err(key, format!("must be a probability in (0, 1], got {p}")))
        }
    }

    fn schedule(
        &self,
        key: &str,
        v: Option<&toml::Value>,
        p1_equals_p2: bool,
        iterations: usize,
    ) -> Result<Schedule> {
        let allowed = "a name (\"1-1/t^2\", \"1-1/sqrt(t)\", \"1-1/t\"), a constant in (0, 1], or a list of probabilities";
        let form = match v {
            None => Form::InvSqrt,
            Some(toml::Value::String(s)) => Schedule::parse_name(s).ok_or_else(|| {
                self.err(key, format!("unknown schedule \"{s}\"; allowed: {allowed}"))
            })?,
            Some(toml::Value::Float(p)) => Form::Constant(self.probability(key, *p)?),
            Some(toml::Value::Integer(p)) => Form::Constant(self.probability(key, *p as f64)?),
            Some(toml::Value::Array(items)) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, it) in items.iter().enumerate() {
                    let p = match it {
                        toml::Value::Float(p) => *p,
                        toml::Value::Integer(p) => *p as f64,
                        other => {
                            return Err(self.err(
                                &format!("{key}[{i}]"),
                                format!("must be a number, got {}", other.type_str()),
                            ));
                        }
                    };
                    out.push(self.probability(&format!("{key}[{i}]"), p)?);
                }
                // A longer list would be cut silently: most likely a different experiment.
                if out.len() != iterations {
                    return Err(self.err(
                        key,
                        format!(
                            "lists {} probabilities but the spec runs {iterations} iterations; give exactly one per iteration",
                            out.len()
                        ),
                    ));
                }
                Form::List(out)
            }
            Some(other) => {
                return Err(self.err(
                    key,
                    format!("must be {allowed}, got a {}", other.type_str()),
                ));
            }
        };
        Ok(Schedule { form, p1_equals_p2 })
    }

    fn messages(&self, key: &str, v: Option<&str>, default: MessageMode) -> Result<MessageMode> {
        match v {
            None => Ok(default),
            Some("one-shot") => Ok(MessageMode::OneShot),
            Some("every-iteration") => Ok(MessageMode::EveryIteration),
            Some(other) => Err(self.err(
                key,
                format!(
                    "unknown message mode \"{other}\"; allowed: \"one-shot\", \"every-iteration\""
                ),
            )),
        }
    }

    /// A name from a closed list, parsed by `parse`; unknown names are refused with the list.
    fn choice<T>(
        &self,
        key: &str,
        v: Option<&str>,
        default: T,
        what: &str,
        allowed: &str,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Result<T> {
        match v {
            None => Ok(default),
            Some(s) => parse(s).ok_or_else(|| {
                self.err(key, format!("unknown {what} \"{s}\"; allowed: {allowed}"))
            }),
        }
    }

    fn sampler(&self, key: &str, v: Option<&str>, default: OwnSampler) -> Result<OwnSampler> {
        self.choice(
            key,
            v,
            default,
            "own sample",
            "\"rff\", \"pathwise\"",
            OwnSampler::parse,
        )
    }
}

/// The largest count a spec (or `--runs`) may give for runs, iterations and the like.
pub const MAX_COUNT: i64 = 1_000_000;
/// Observations per agent (iterations, initial points, senders' t_n): each agent's exact GP
/// holds an n x n matrix, so n = 10^4 is already 0.8 GB per agent.
const MAX_OBS: i64 = 10_000;
/// Random features M: BLR posteriors hold M x M matrices (M = 10^4: 0.8 GB each).
const MAX_FEATURES: i64 = 10_000;

impl Spec {
    /// Reads and checks a spec file.
    pub fn load(path: &Path) -> Result<Spec> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| FboError::spec(path, "", format!("cannot read the spec: {e}")))?;
        Spec::parse(&text, path)
    }

    /// Checks spec text; `path` is used in messages and for the default name.
    pub fn parse(text: &str, path: &Path) -> Result<Spec> {
        let raw: RawSpec = toml::from_str(text).map_err(|e| {
            FboError::spec(
                path,
                "",
                format!("invalid spec: {}", e.to_string().trim_end()),
            )
        })?;
        let c = Check { file: path };

        let name = match raw.name {
            // The name is the default output folder results/<name>/: a plain folder name.
            Some(n)
                if n.is_empty()
                    || n.len() > 100
                    || n.starts_with('.')
                    || !n
                        .chars()
                        .all(|ch| ch.is_ascii_alphanumeric() || "._-+=,".contains(ch)) =>
            {
                return Err(c.err(
                    "name",
                    format!(
                        "must be 1-100 characters from A-Z a-z 0-9 . _ - + = , not starting with '.' (it names the folder results/<name>/), got \"{n}\""
                    ),
                ));
            }
            Some(n) => n,
            None => path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "experiment".into()),
        };
        let seed = raw.seed.unwrap_or(0);
        if seed < 0 {
            return Err(c.err("seed", format!("must be an integer >= 0, got {seed}")));
        }
        let runs = c.int("runs", raw.runs, 10, 1, MAX_COUNT)?;
        let iterations = c.int("iterations", raw.iterations, 50, 1, MAX_OBS)?;
        let initial_points = c.int("initial_points", raw.initial_points, 1, 0, MAX_OBS)?;
        let batch = c.int("batch", raw.batch, 1, 1, 1000)?;
        if batch > 1 && iterations.saturating_mul(batch) > MAX_OBS as usize {
            return Err(c.err(
                "batch",
                format!("iterations x batch must be at most {MAX_OBS}, got {iterations} x {batch}"),
            ));
        }

        let parallel = c.int("parallel", raw.parallel, 1, 1, 64)?;
        if parallel > 1 && batch > 1 {
            return Err(c.err(
                "parallel",
                format!("and batch are two ways to run several evaluations per agent: a batch waits for all of a round's, parallel = {parallel} proposes as each returns; set one of them to 1"),
            ));
        }
        // A command's evaluations at once (over all runs and agents) default to the agent's
        // parallel ones, so that parallel = k runs k at once without a second key.
        let concurrency_given = raw
            .objective
            .as_ref()
            .is_some_and(|o| o.concurrency_given());
        let rf = raw.federation.unwrap_or_default();
        let mut objective = check_objective(&c, raw.objective)?;
        if let ObjectiveKind::Command(settings) = &mut objective.kind
            && !concurrency_given
        {
            settings.concurrency = parallel;
        }
        let agents = match &objective.kind {
            ObjectiveKind::Table { agents, .. } => {
                if rf.agents.is_some() {
                    return Err(c.err(
                        "federation.agents",
                        "is set by the table: choose participants with objective.agents",
                    ));
                }
                agents.len()
            }
            ObjectiveKind::Model { agents, .. } => {
                if rf.agents.is_some() {
                    return Err(c.err(
                        "federation.agents",
                        "is set by the data: choose participants with objective.agents",
                    ));
                }
                agents.len()
            }
            ObjectiveKind::Command(_) => {
                if rf.agents.is_none() {
                    return Err(c.err(
                        "federation.agents",
                        "missing: how many agents evaluate the command (each gets its FBO_AGENT, 0..N-1)",
                    ));
                }
                c.int("federation.agents", rf.agents, 1, 1, 10_000)?
            }
            _ => c.int("federation.agents", rf.agents, 50, 1, 100_000)?,
        };
        let total_agents = match objective.kind {
            ObjectiveKind::SyntheticFts => agents + 1,
            _ => agents,
        };
        objective.targets = match objective.targets.is_empty() {
            false => {
                if let Some(&t) = objective.targets.iter().find(|&&t| t >= total_agents) {
                    return Err(c.err(
                        "objective.targets",
                        format!(
                            "target {t} is not one of the {total_agents} agents (0..{})",
                            total_agents - 1
                        ),
                    ));
                }
                objective.targets.clone()
            }
            true => match objective.kind {
                ObjectiveKind::SyntheticFts => vec![0],
                _ => (0..total_agents).collect(),
            },
        };
        // The initial design: a file of points fixes their number; a design kind how they
        // are drawn.
        let mut initial_points = initial_points;
        let given = match raw.initial_points_file.as_deref() {
            None => None,
            Some(rel) => {
                let file = path.parent().unwrap_or(Path::new(".")).join(rel);
                let (g, n) = crate::design::GivenPoints::read(&file, total_agents)
                    .map_err(|e| c.err("initial_points_file", e.to_string()))?;
                if raw.initial_points.is_some() && n != initial_points {
                    return Err(c.err(
                        "initial_points",
                        format!(
                            "is {initial_points} but {} gives {n} points per agent; leave it out or make them agree",
                            file.display()
                        ),
                    ));
                }
                if g.tells() && !matches!(objective.kind, ObjectiveKind::Command(_)) {
                    return Err(c.err(
                        "initial_points_file",
                        format!(
                            "{} has a `value` column: told values are measurements, for command and external objectives; this objective computes its own values (remove the column)",
                            file.display()
                        ),
                    ));
                }
                initial_points = n;
                Some(std::sync::Arc::new(g))
            }
        };
        let kind = match raw.initial_design.as_deref() {
            None => crate::design::DesignKind::Random,
            Some(_) if given.is_some() => {
                return Err(c.err(
                    "initial_design",
                    "does not go with initial_points_file: the file gives the points",
                ));
            }
            v => c.choice(
                "initial_design",
                v,
                crate::design::DesignKind::Random,
                "design",
                "\"random\", \"lhs\", \"sobol\"",
                crate::design::DesignKind::parse,
            )?,
        };
        if raw.initial_design_across_agents == Some(true)
            && kind == crate::design::DesignKind::Random
        {
            return Err(c.err(
                "initial_design_across_agents",
                "applies to initial_design = \"lhs\" or \"sobol\" (random points have no design to share out)",
            ));
        }
        let initial_design = crate::design::InitialDesign {
            kind,
            across_agents: raw.initial_design_across_agents.unwrap_or(false),
            given,
        };
        // Initial points are drawn without replacement.
        if let Some(size) = objective.domain_size()
            && initial_points > size
        {
            return Err(c.err(
                "initial_points",
                format!("must be at most the domain size {size}, got {initial_points}"),
            ));
        }
        let racq = raw.acquisition.unwrap_or_default();
        let acquisition = BoxSearch {
            candidates: c.int(
                "acquisition.candidates",
                racq.candidates,
                1000,
                1,
                1_000_000,
            )?,
            starts: c.int("acquisition.starts", racq.starts, 20, 0, 10_000)?,
        };

        let rs = raw.surrogate.unwrap_or_default();
        let kernel = c.choice(
            "surrogate.kernel",
            rs.kernel.as_deref(),
            Kernel::Se,
            "kernel",
            Kernel::NAMES,
            Kernel::parse,
        )?;
        let synthetic_ls = objective.length_scale;
        let features = c.int("surrogate.features", rs.features, 100, 1, MAX_FEATURES)?;
        let length_scale = c.positive("surrogate.length_scale", rs.length_scale, synthetic_ls)?;
        let lambda = c.positive("surrogate.lambda", rs.lambda, objective.noise_var.max(1e-6))?;
        let kernel_variance = c.positive("surrogate.kernel_variance", rs.kernel_variance, 1.0)?;
        let normalize_features = rs.normalize_features.unwrap_or(true);
        let ro = rs.own.unwrap_or_default();
        let bounds = HyperBounds {
            length_scale: c.bounds(
                "surrogate.own.length_scale_bounds",
                ro.length_scale_bounds,
                (0.005, 2.0),
            )?,
            signal_var: c.bounds(
                "surrogate.own.signal_variance_bounds",
                ro.signal_variance_bounds,
                (0.05, 20.0),
            )?,
            noise_var: c.bounds(
                "surrogate.own.noise_variance_bounds",
                ro.noise_variance_bounds,
                (1e-6, 1.0),
            )?,
        };
        let fit = ro.fit.unwrap_or(true);
        let mean = c.choice(
            "surrogate.own.mean",
            ro.mean.as_deref(),
            MeanFn::Constant,
            "mean",
            MeanFn::NAMES,
            MeanFn::parse,
        )?;
        let initial = GpHyper::isotropic(
            kernel,
            c.positive("surrogate.own.length_scale", ro.length_scale, length_scale)?,
            c.positive("surrogate.own.signal_variance", ro.signal_variance, 1.0)?,
            c.positive("surrogate.own.noise_variance", ro.noise_variance, 0.01)?,
        )
        .with_mean(mean);
        let model = HyperModel {
            kernel,
            ard: match &ro.ard {
                // Chosen by measurement (docs/results.md, "One length scale or one per
                // axis"): 2-8x lower regret where few axes matter, level elsewhere but for one
                // problem of fourteen.
                None => Ard::Loo,
                Some(toml::Value::Boolean(false)) => Ard::Off,
                Some(toml::Value::Boolean(true)) => Ard::On,
                Some(toml::Value::String(s)) if s == "auto" => Ard::AUTO,
                Some(toml::Value::String(s)) if s == "loo" => Ard::Loo,
                Some(toml::Value::Integer(k)) if (1..=1000).contains(k) => {
                    Ard::PerAxisFrom(*k as usize)
                }
                Some(other) => {
                    return Err(c.err(
                        "surrogate.own.ard",
                        format!(
                            "must be true, false, \"auto\", \"loo\" or a number of observations per axis in [1, 1000], got {other}"
                        ),
                    ));
                }
            },
            bounds,
            prior: c.choice(
                "surrogate.own.prior",
                ro.prior.as_deref(),
                HyperPrior::DimensionScaled,
                "prior",
                HyperPrior::NAMES,
                HyperPrior::parse,
            )?,
            mean,
        };
        let own = OwnSettings {
            features: c.int("surrogate.own.features", ro.features, 100, 1, MAX_FEATURES)?,
            normalize_features,
            refit_every: if fit {
                Some(c.int("surrogate.own.refit_every", ro.refit_every, 5, 1, MAX_COUNT)?)
            } else {
                None
            },
            fit: {
                let starts = c.int("surrogate.own.fit_starts", ro.fit_starts, 10, 1, 1000)?;
                let restarts = c.int(
                    "surrogate.own.fit_restarts",
                    ro.fit_restarts,
                    3.min(starts as i64),
                    1,
                    starts as i64,
                )?;
                FitBudget { starts, restarts }
            },
            fit_points: ro
                .fit_points
                .map(|m| c.int("surrogate.own.fit_points", Some(m), m, 20, MAX_OBS))
                .transpose()?,
            model,
            initial,
            normalize_y: ro.normalize_y.unwrap_or(true),
            sampler: c.sampler(
                "surrogate.own.sample",
                ro.sample.as_deref(),
                OwnSampler::Pathwise,
            )?,
            known_noise: known_noise(
                &c,
                ro.noise_variance_known.as_ref(),
                &objective,
                total_agents,
            )?,
        };
        // Unwritten: agreed where nothing pins the features and the outputs' scale is the
        // user's (a function, a command, results told by hand), measured better there than
        // the pinned settings (docs/results.md, "Agreed shared models"); the papers' own
        // objectives keep their settings and bytes. Only non-private dp-fts-de takes this
        // default unless the key is written (spec/algorithm.rs).
        let pinned =
            rs.length_scale.is_some() || rs.lambda.is_some() || rs.kernel_variance.is_some();
        let open = matches!(
            objective.kind,
            ObjectiveKind::Function { .. } | ObjectiveKind::Command(_)
        );
        let shared = c.choice(
            "surrogate.shared",
            rs.shared.as_deref(),
            if open && !pinned {
                SharedModel::Agreed
            } else {
                SharedModel::Fixed
            },
            "shared model",
            SharedModel::NAMES,
            SharedModel::parse,
        )?;
        let surrogate = SurrogateSpec {
            kernel,
            shared,
            shared_written: rs.shared.is_some(),
            length_scale,
            lambda,
            kernel_variance,
            normalize_features,
            own,
        };

        let observations = c.int("federation.observations", rf.observations, 40, 0, MAX_OBS)?;
        let p1 = rf.p1_equals_p2.unwrap_or(true);
        let fed_pt = c.schedule("federation.p_t", rf.p_t.as_ref(), p1, iterations)?;
        let fed_messages = c.messages(
            "federation.messages",
            rf.messages.as_deref(),
            MessageMode::OneShot,
        )?;
        // P_N ranges over the agents other than the target.
        let others = total_agents - 1;
        if rf.agent_weights.as_ref().is_some_and(|w| w.is_array()) && objective.targets.len() > 1 {
            return Err(c.err(
                "federation.agent_weights",
                "a list of weights needs a single target (objective.targets); with several use \"uniform\"",
            ));
        }
        let uniform = vec![1.0 / others.max(1) as f64; others];
        let weights = match rf.agent_weights {
            None => uniform,
            Some(toml::Value::String(s)) if s == "uniform" => uniform,
            Some(toml::Value::Array(items)) => {
                if items.len() != others {
                    return Err(c.err(
                        "federation.agent_weights",
                        format!(
                            "must list one weight per agent other than the target ({others}), got {}",
                            items.len()
                        ),
                    ));
                }
                let mut w = Vec::with_capacity(others);
                for (i, it) in items.iter().enumerate() {
                    let v = it.as_float().or_else(|| it.as_integer().map(|x| x as f64));
                    match v {
                        Some(v) if v.is_finite() && v >= 0.0 => w.push(v),
                        _ => {
                            return Err(c.err(
                                &format!("federation.agent_weights[{i}]"),
                                "must be a finite number >= 0",
                            ));
                        }
                    }
                }
                let total: f64 = w.iter().sum();
                if total <= 0.0 {
                    return Err(c.err("federation.agent_weights", "must not all be zero"));
                }
                w.iter().map(|v| v / total).collect()
            }
            Some(other) => {
                return Err(c.err(
                    "federation.agent_weights",
                    format!(
                        "must be \"uniform\" or a list of weights, got {}",
                        other.type_str()
                    ),
                ));
            }
        };
        let observations_from = match rf.observations_from.as_deref() {
            None | Some("random") => ObservationSource::Random,
            Some("ts") => ObservationSource::Ts,
            Some(o) => {
                return Err(c.err(
                    "federation.observations_from",
                    format!("unknown source \"{o}\"; allowed: \"random\", \"ts\""),
                ));
            }
        };
        let federation = FederationSpec {
            agents,
            observations,
            observations_from,
            weights,
        };

        if raw.algorithm.is_empty() {
            return Err(c.err(
                "algorithm",
                format!(
                    "the spec lists no algorithm; add at least one [[algorithm]] table with kind = one of {:?}",
                    AlgorithmKind::NAMES
                ),
            ));
        }
        let top_server = raw.server.clone().unwrap_or_default();
        let mut algorithms = algorithm::check_algorithms(
            &c,
            raw.algorithm,
            &algorithm::Defaults {
                surrogate: &surrogate,
                features,
                p_t: &fed_pt,
                p1,
                messages: fed_messages,
                server: &raw.server.unwrap_or_default(),
                iterations,
                domain_size: objective.domain_size(),
                total_agents,
            },
        )?;
        // A batch per round is defined for agents alone and for DP-FTS-DE's synchronous
        // rounds (one message per agent, k queries); the other federated kinds' rounds (one
        // message, one broadcast, one query) have no batch form yet, and an agent at its own
        // pace has one evaluation in flight.
        if let Some((i, a)) = algorithms.iter().enumerate().find(|(_, a)| {
            batch > 1
                && !(a.kind.is_single_agent()
                    || a.kind == AlgorithmKind::DpFtsDe && a.pace == Pace::Synchronous)
        }) {
            return Err(c.err(
                "batch",
                format!(
                    "applies to kinds ts, random, ei, ucb and dp-fts-de in rounds; algorithm[{i}] ({}) evaluates one point per agent per round (set batch = 1)",
                    a.label
                ),
            ));
        }
        // Pending evaluations are defined for agents alone, each on its own model; a federated
        // round waits for every agent's one query.
        if let Some((i, a)) = algorithms
            .iter()
            .enumerate()
            .find(|(_, a)| parallel > 1 && !a.kind.is_single_agent())
        {
            return Err(c.err(
                "parallel",
                format!(
                    "applies to kinds ts, random, ei and ucb; algorithm[{i}] ({}) waits for every agent's query each round (set parallel = 1)",
                    a.label
                ),
            ));
        }
        // A model refits when its observation count, initial_points + batch t, is a multiple
        // of refit_every: never, unless gcd(batch, refit_every) divides initial_points.
        if let Some(r) = surrogate.own.refit_every {
            let g = gcd(batch, r);
            if batch > 1 && !initial_points.is_multiple_of(g) {
                return Err(c.err(
                    "batch",
                    format!(
                        "with initial_points = {initial_points} and surrogate.own.refit_every = {r}, the observation count {initial_points} + {batch} t is never a multiple of {r}, so the model would never refit: choose a batch, refit_every or initial_points where gcd(batch, refit_every) = {g} divides initial_points"
                    ),
                ));
            }
        }
        let rp = raw.privacy.unwrap_or_default();
        let delta = rp.delta.unwrap_or((total_agents as f64).powf(-1.1));
        let private = algorithms
            .iter()
            .any(|a| a.server.as_ref().is_some_and(|s| s.dp.is_some()));
        // [server]'s privacy keys are defaults for private algorithms; with none in the spec
        // they would change nothing, which is never what their author meant.
        if !private {
            for key in server::DP_KEYS {
                if top_server.sets(key) {
                    return Err(c.err(
                        &format!("server.{key}"),
                        "applies only with dp = true, and no algorithm of this spec is private (set server.dp = true, or remove the key)",
                    ));
                }
            }
        }
        if rp.delta.is_none() && private && !(delta > 0.0 && delta < 1.0) {
            return Err(c.err(
                "privacy.delta",
                format!(
                    "the default N^-1.1 is {delta} for N = {total_agents} agent(s), not a valid delta; set privacy.delta in (0, 1), e.g. 1e-5"
                ),
            ));
        }
        if rp.delta.is_some() && !(delta > 0.0 && delta < 1.0) {
            return Err(c.err("privacy.delta", format!("must be in (0, 1), got {delta}")));
        }
        let accountants_written = rp.accountants.is_some();
        let accountants = match rp.accountants {
            None => Accountant::ALL.to_vec(),
            Some(list) => {
                let mut out = Vec::new();
                for (i, a) in list.iter().enumerate() {
                    let acc: Accountant = a
                        .parse()
                        .map_err(|e: String| c.err(&format!("privacy.accountants[{i}]"), e))?;
                    if !out.contains(&acc) {
                        out.push(acc);
                    }
                }
                out
            }
        };
        for (i, a) in algorithms.iter().enumerate() {
            if let Some(dp) = a.server.as_ref().and_then(|s| s.dp) {
                for (j, &acc) in accountants.iter().enumerate() {
                    crate::privacy::supports(acc, dp.sampling, dp.adjacency).map_err(|e| {
                        c.err(
                            &a.server_key(i, "adjacency"),
                            format!("{e} (privacy.accountants[{j}] = \"{acc}\")"),
                        )
                    })?;
                    // Unwritten, the list is every accountant, and each algorithm is
                    // accounted by those that have an analysis of its noise.
                    if accountants_written {
                        crate::privacy::supports_noise(acc, dp.noise).map_err(|e| {
                            c.err(
                                &a.server_key(i, "noise"),
                                format!("{e} (privacy.accountants[{j}] = \"{acc}\")"),
                            )
                        })?;
                    }
                }
            }
            if let Some(dp) = a.server.as_ref().and_then(|s| s.dp)
                && dp.sampling == Sampling::Fixed
            {
                crate::privacy::checked_fixed_sample_size(dp.q, total_agents)
                    .map_err(|e| c.err(&a.server_key(i, "q"), e))?;
            }
        }
        // The agreement is released (and accounted) only when the shared model is agreed.
        for (i, a) in algorithms.iter_mut().enumerate() {
            let Some(dp) = a.server.as_mut().and_then(|s| s.dp.as_mut()) else {
                continue;
            };
            if a.shared == SharedModel::Agreed
                && matches!(dp.noise, crate::privacy::Noise::Distributed(_))
            {
                return Err(c.err(
                    &a.server_key(i, "noise"),
                    "distributed noise covers the message vectors only, and shared = \"agreed\" releases an agreement beside them through the server's own noise; use shared = \"fixed\" or noise = \"central\"",
                ));
            }
            match (a.shared, dp.agreement) {
                (SharedModel::Agreed, None) => {
                    dp.agreement = Some(server::AgreementDp {
                        z: dp.z,
                        clip: server::AgreementDp::DEFAULT_CLIP,
                    })
                }
                (SharedModel::Fixed, Some(_)) => {
                    return Err(c.err(
                        &a.server_key(i, "agreement_z"),
                        "agreement_z and agreement_clip apply only with shared = \"agreed\" (surrogate.shared or the algorithm's own)",
                    ));
                }
                _ => {}
            }
        }
        for (i, a) in algorithms.iter_mut().enumerate() {
            let key = a.server_key(i, "max_epsilon");
            if let Some(dp) = a.server.as_mut().and_then(|s| s.dp.as_mut())
                && let Some(b) = dp.budget.as_mut()
            {
                let unlimited = DpSpec {
                    budget: None,
                    ..*dp
                };
                b.rounds = budget_rounds(&unlimited, b, iterations as u64, total_agents, delta)
                    .map_err(|e| c.err(&key, e))?;
            }
        }
        let privacy = PrivacySpec { delta, accountants };

        let ro = raw.output.unwrap_or_default();
        let output = OutputSpec {
            timing: ro.timing.unwrap_or(true),
            beliefs: ro.beliefs.unwrap_or(false),
        };
        let clock = clock::check_clock(&c, raw.clock)?;
        if clock.is_none()
            && let Some(i) = algorithms.iter().position(|a| a.pace == Pace::Asynchronous)
        {
            return Err(c.err(
                &format!("algorithm[{i}].pace"),
                "\"asynchronous\" runs on the simulated clock: add a [clock] table (its keys have defaults)",
            ));
        }

        Ok(Spec {
            name,
            path: path.to_path_buf(),
            source: text.to_string(),
            seed: seed as u64,
            runs,
            iterations,
            initial_points,
            batch,
            parallel,
            initial_design,
            algorithms,
            objective,
            surrogate,
            federation,
            privacy,
            output,
            clock,
            acquisition,
            has_sweep: raw.sweep.is_some(),
        })
    }

    /// Evaluations per acting agent after its initial points: the trace's last iteration.
    pub fn evaluations(&self) -> usize {
        self.iterations * self.batch
    }

    /// The wall-clock budget (`clock.horizon_s`), if any: no evaluation starts past it.
    pub fn horizon_s(&self) -> Option<f64> {
        self.clock.as_ref().and_then(|c| c.horizon_s)
    }

    /// Agents whose own optimisation TS and FTS trace.
    pub fn targets(&self) -> &[usize] {
        &self.objective.targets
    }

    /// Number of agents the objective defines (target included).
    /// One line per private algorithm whose privacy budget stops its server early.
    pub fn budget_notes(&self) -> Vec<String> {
        self.algorithms
            .iter()
            .filter_map(|a| {
                let b = a.server.as_ref()?.dp?.budget?;
                (b.rounds < self.iterations as u64).then(|| {
                    format!(
                        "note: {}: the privacy budget epsilon <= {} ({}, delta {}) allows {} of {} rounds; its server stops after round {} and its agents go on with their own samples",
                        a.label,
                        b.max_epsilon,
                        b.accountant,
                        self.privacy.delta,
                        b.rounds,
                        self.iterations,
                        b.rounds
                    )
                })
            })
            .collect()
    }

    pub fn total_agents(&self) -> usize {
        match self.objective.kind {
            ObjectiveKind::SyntheticFts => self.federation.agents + 1,
            _ => self.federation.agents,
        }
    }
}

/// Greatest common divisor (Euclid).
fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}
