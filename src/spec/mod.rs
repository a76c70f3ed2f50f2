//! Experiment specs: TOML is deserialised into raw types that reject unknown keys, then
//! checked once into the parameters the rest of fbo uses. No numeric code re-validates user
//! input; every message names the file, the key and what is allowed.

pub mod schedule;

use crate::error::{FboError, Result};
use crate::surrogate::gp::{FitBudget, GpHyper, HyperBounds};
use crate::surrogate::own::OwnSettings;
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
    pub algorithms: Vec<AlgorithmSpec>,
    pub objective: ObjectiveSpec,
    pub surrogate: SurrogateSpec,
    pub federation: FederationSpec,
    pub output: OutputSpec,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AlgorithmKind {
    Ts,
    Fts,
}

impl AlgorithmKind {
    pub const NAMES: &'static [&'static str] = &["ts", "fts"];

    fn parse(s: &str) -> Option<Self> {
        match s {
            "ts" => Some(AlgorithmKind::Ts),
            "fts" => Some(AlgorithmKind::Fts),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageMode {
    /// Each agent sends one omega before the target starts; a used message is removed from P_N.
    OneShot,
    /// Every agent runs one more TS iteration and sends a fresh omega before each target
    /// iteration (FTS paper App. D.2.1), so t_n grows.
    EveryIteration,
}

/// One algorithm to run, with the federation and surrogate settings it overrides resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct AlgorithmSpec {
    pub kind: AlgorithmKind,
    pub label: String,
    /// M, the shared random features (message length).
    pub features: usize,
    pub p_t: Schedule,
    pub messages: MessageMode,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ObjectiveKind {
    /// FTS paper App. D.1: target f, N other agents g_n = f +/- d per point.
    SyntheticFts,
    /// DP paper App. B.1.1: N agents f +/- d, or alpha-mixtures of independent draws.
    SyntheticDp { heterogeneous: Option<f64> },
}

#[derive(Clone, Debug, PartialEq)]
pub struct ObjectiveSpec {
    pub kind: ObjectiveKind,
    pub grid: usize,
    pub length_scale: f64,
    pub noise_var: f64,
    pub functions: usize,
    pub d: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SurrogateSpec {
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
    /// P_N, normalised; one weight per agent other than the target (agent 0).
    pub weights: Vec<f64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct OutputSpec {
    /// Record measured seconds in `elapsed_s`; off gives byte-identical traces across reruns.
    pub timing: bool,
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
    #[serde(default)]
    algorithm: Vec<RawAlgorithm>,
    objective: Option<RawObjective>,
    surrogate: Option<RawSurrogate>,
    federation: Option<RawFederation>,
    output: Option<RawOutput>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAlgorithm {
    kind: String,
    label: Option<String>,
    features: Option<i64>,
    p_t: Option<toml::Value>,
    p1_equals_p2: Option<bool>,
    messages: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawObjective {
    kind: String,
    grid: Option<i64>,
    length_scale: Option<f64>,
    noise_var: Option<f64>,
    functions: Option<i64>,
    d: Option<f64>,
    heterogeneous: Option<bool>,
    alpha: Option<f64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawSurrogate {
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
    fit: Option<bool>,
    refit_every: Option<i64>,
    fit_starts: Option<i64>,
    fit_restarts: Option<i64>,
    normalize_y: Option<bool>,
    length_scale: Option<f64>,
    signal_variance: Option<f64>,
    noise_variance: Option<f64>,
    length_scale_bounds: Option<Vec<f64>>,
    signal_variance_bounds: Option<Vec<f64>>,
    noise_variance_bounds: Option<Vec<f64>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawFederation {
    agents: Option<i64>,
    observations: Option<i64>,
    p_t: Option<toml::Value>,
    p1_equals_p2: Option<bool>,
    agent_weights: Option<toml::Value>,
    messages: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawOutput {
    timing: Option<bool>,
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
                if out.len() < iterations {
                    return Err(self.err(
                        key,
                        format!(
                            "lists {} probabilities but the spec runs {iterations} iterations; give one per iteration",
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
}

const MAX_COUNT: i64 = 1_000_000;

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
            Some(n) if n.is_empty() || n.contains(['/', '\\']) => {
                return Err(c.err("name", "must be non-empty and contain no path separators"));
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
        let iterations = c.int("iterations", raw.iterations, 50, 1, MAX_COUNT)?;
        let initial_points = c.int("initial_points", raw.initial_points, 1, 0, MAX_COUNT)?;

        let objective = check_objective(&c, raw.objective)?;
        // Initial points are drawn without replacement.
        if initial_points > objective.grid {
            return Err(c.err(
                "initial_points",
                format!(
                    "must be at most the domain size {}, got {initial_points}",
                    objective.grid
                ),
            ));
        }

        let rs = raw.surrogate.unwrap_or_default();
        let synthetic_ls = objective.length_scale;
        let features = c.int("surrogate.features", rs.features, 100, 1, 100_000)?;
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
        let initial = GpHyper {
            length_scale: c.positive(
                "surrogate.own.length_scale",
                ro.length_scale,
                length_scale,
            )?,
            signal_var: c.positive("surrogate.own.signal_variance", ro.signal_variance, 1.0)?,
            noise_var: c.positive("surrogate.own.noise_variance", ro.noise_variance, 0.01)?,
        };
        let own = OwnSettings {
            features: c.int("surrogate.own.features", ro.features, 100, 1, 100_000)?,
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
            bounds,
            initial,
            normalize_y: ro.normalize_y.unwrap_or(true),
        };
        let surrogate = SurrogateSpec {
            length_scale,
            lambda,
            kernel_variance,
            normalize_features,
            own,
        };

        let rf = raw.federation.unwrap_or_default();
        let agents = c.int("federation.agents", rf.agents, 50, 1, 100_000)?;
        let observations = c.int("federation.observations", rf.observations, 40, 0, MAX_COUNT)?;
        let p1 = rf.p1_equals_p2.unwrap_or(true);
        let fed_pt = c.schedule("federation.p_t", rf.p_t.as_ref(), p1, iterations)?;
        let fed_messages = c.messages(
            "federation.messages",
            rf.messages.as_deref(),
            MessageMode::OneShot,
        )?;
        // P_N ranges over the agents other than the target (agent 0).
        let others = match objective.kind {
            ObjectiveKind::SyntheticFts => agents,
            ObjectiveKind::SyntheticDp { .. } => agents - 1,
        };
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
        let federation = FederationSpec {
            agents,
            observations,
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
        let mut algorithms: Vec<AlgorithmSpec> = Vec::new();
        for (i, ra) in raw.algorithm.into_iter().enumerate() {
            let key = |k: &str| format!("algorithm[{i}].{k}");
            let kind = AlgorithmKind::parse(&ra.kind).ok_or_else(|| {
                c.err(
                    &key("kind"),
                    format!(
                        "unknown algorithm \"{}\"; allowed: {:?}",
                        ra.kind,
                        AlgorithmKind::NAMES
                    ),
                )
            })?;
            if kind == AlgorithmKind::Ts
                && (ra.features.is_some()
                    || ra.p_t.is_some()
                    || ra.messages.is_some()
                    || ra.p1_equals_p2.is_some())
            {
                return Err(c.err(
                    &key("kind"),
                    "TS uses no federation: features, p_t, p1_equals_p2 and messages do not apply to it",
                ));
            }
            let m = c.int(&key("features"), ra.features, features as i64, 1, 100_000)?;
            let p_t = match ra.p_t {
                Some(ref v) => c.schedule(
                    &key("p_t"),
                    Some(v),
                    ra.p1_equals_p2.unwrap_or(p1),
                    iterations,
                )?,
                None => Schedule {
                    p1_equals_p2: ra.p1_equals_p2.unwrap_or(p1),
                    ..fed_pt.clone()
                },
            };
            let messages = c.messages(&key("messages"), ra.messages.as_deref(), fed_messages)?;
            let label = match ra.label {
                Some(l) if l.is_empty() || l.contains([',', '"', '\n']) => {
                    return Err(c.err(
                        &key("label"),
                        "must be non-empty without commas, quotes or newlines",
                    ));
                }
                Some(l) => l,
                None => match kind {
                    AlgorithmKind::Ts => "TS".to_string(),
                    AlgorithmKind::Fts => format!("FTS M={m}"),
                },
            };
            if algorithms.iter().any(|a| a.label == label) {
                return Err(c.err(
                    &key("label"),
                    format!(
                        "label \"{label}\" is used twice; give each algorithm a distinct label"
                    ),
                ));
            }
            algorithms.push(AlgorithmSpec {
                kind,
                label,
                features: m,
                p_t,
                messages,
            });
        }

        let output = OutputSpec {
            timing: raw.output.unwrap_or_default().timing.unwrap_or(true),
        };

        Ok(Spec {
            name,
            path: path.to_path_buf(),
            source: text.to_string(),
            seed: seed as u64,
            runs,
            iterations,
            initial_points,
            algorithms,
            objective,
            surrogate,
            federation,
            output,
        })
    }

    /// Number of agents the objective defines (target included).
    pub fn total_agents(&self) -> usize {
        match self.objective.kind {
            ObjectiveKind::SyntheticFts => self.federation.agents + 1,
            ObjectiveKind::SyntheticDp { .. } => self.federation.agents,
        }
    }
}

fn check_objective(c: &Check, raw: Option<RawObjective>) -> Result<ObjectiveSpec> {
    let Some(o) = raw else {
        return Err(c.err(
            "objective",
            "missing [objective] table (kind = \"synthetic-fts\" or \"synthetic-dp\")",
        ));
    };
    let kind = match o.kind.as_str() {
        "synthetic-fts" => {
            if o.heterogeneous.is_some() || o.alpha.is_some() {
                return Err(c.err(
                    "objective.alpha",
                    "heterogeneous and alpha apply only to kind = \"synthetic-dp\"",
                ));
            }
            ObjectiveKind::SyntheticFts
        }
        "synthetic-dp" => {
            let het = o.heterogeneous.unwrap_or(false);
            if !het && o.alpha.is_some() {
                return Err(c.err("objective.alpha", "applies only with heterogeneous = true"));
            }
            let alpha = if het {
                let a = o.alpha.unwrap_or(0.7);
                if !(a.is_finite() && (0.0..=1.0).contains(&a)) {
                    return Err(c.err("objective.alpha", format!("must be in [0, 1], got {a}")));
                }
                Some(a)
            } else {
                None
            };
            ObjectiveKind::SyntheticDp {
                heterogeneous: alpha,
            }
        }
        other => {
            return Err(c.err(
                "objective.kind",
                format!(
                    "unknown objective \"{other}\"; allowed: \"synthetic-fts\", \"synthetic-dp\""
                ),
            ));
        }
    };
    Ok(ObjectiveSpec {
        kind,
        grid: c.int("objective.grid", o.grid, 1000, 2, 1_000_000)?,
        length_scale: c.positive("objective.length_scale", o.length_scale, 0.03)?,
        noise_var: c.non_negative("objective.noise_var", o.noise_var, 0.01)?,
        functions: c.int("objective.functions", o.functions, 5, 1, MAX_COUNT)?,
        d: c.non_negative("objective.d", o.d, 0.02)?,
    })
}
