//! Experiment specs: TOML is deserialised into raw types that reject unknown keys, then
//! checked once into the parameters the rest of fbo uses. No numeric code re-validates user
//! input; every message names the file, the key and what is allowed.

mod algorithm;
mod clock;
mod design;
mod federation;
pub mod frameworks;
mod objective;
pub mod portable;
mod privacy;
pub mod schedule;
mod server;
mod surrogate;

pub use algorithm::*;
pub use clock::{ClockSpec, Pace, Release};
pub use objective::*;
pub use server::*;

use crate::acquisition::optimize::BoxSearch;
use crate::error::{FboError, Result};
use crate::objective::command::{CommandSettings, OnFailure};
use crate::objective::function::Function;
use crate::objective::model::{Dataset, ModelSettings, SvmMetric};
use crate::objective::space::{Param, Scale};
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
    /// Across machines, every site keeps its trace rows (its queries and values): replies
    /// carry only messages, the server writes only server.csv and privacy.csv, and the sites
    /// that choose to share their traces merge them afterwards. In one process (`fbo run`) it
    /// changes nothing: there are no sites.
    pub site_traces: bool,
    /// Write server_view.csv: under secure aggregation (`server.secure`), every message the
    /// server received in each round (public keys, masked inputs, revealed shares) and the
    /// sum it recovered, for inspecting what the server learns. A debug output: the masked
    /// inputs are P M words per member and round.
    pub server_view: bool,
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
    surrogate: Option<surrogate::RawSurrogate>,
    federation: Option<federation::RawFederation>,
    server: Option<RawServer>,
    privacy: Option<privacy::RawPrivacy>,
    output: Option<RawOutput>,
    clock: Option<clock::RawClock>,
    acquisition: Option<RawAcquisition>,
    /// Read by `fbo sweep` (src/sweep.rs); here only noted.
    sweep: Option<toml::Value>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawAcquisition {
    candidates: Option<i64>,
    starts: Option<i64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawOutput {
    timing: Option<bool>,
    beliefs: Option<bool>,
    site_traces: Option<bool>,
    server_view: Option<bool>,
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

    /// Refuses the first of `keys` (of `table`) that is set, with `msg`: keys that belong to
    /// other kinds than the one the table names.
    fn refuse_set(&self, table: &str, keys: &[(&str, bool)], msg: &str) -> Result<()> {
        match keys.iter().find(|(_, set)| *set) {
            Some((k, _)) => Err(self.err(&format!("{table}.{k}"), msg)),
            None => Ok(()),
        }
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
        let name = check_name(&c, raw.name.clone(), path)?;
        let seed = raw.seed.unwrap_or(0);
        if seed < 0 {
            return Err(c.err("seed", format!("must be an integer >= 0, got {seed}")));
        }
        let counts = check_counts(&c, &raw)?;
        let rf = raw.federation.unwrap_or_default();
        let mut objective = checked_objective(&c, raw.objective, counts.parallel)?;
        let (agents, total_agents) = federation::check_agents(&c, &rf, &mut objective)?;
        let (initial_design, initial_points) = design::check_initial_design(
            &c,
            &design::RawDesign {
                kind: raw.initial_design.as_deref(),
                across_agents: raw.initial_design_across_agents,
                file: raw.initial_points_file.as_deref(),
                points_written: raw.initial_points.is_some(),
            },
            &objective,
            total_agents,
            counts.initial_points,
        )?;
        let acquisition = check_acquisition(&c, raw.acquisition)?;
        let (surrogate, features) =
            surrogate::check_surrogate(&c, raw.surrogate, &objective, total_agents)?;
        let (federation, sharing) = federation::check_federation(
            &c,
            rf,
            agents,
            total_agents,
            &objective,
            counts.iterations,
        )?;
        require_algorithms(&c, &raw.algorithm)?;
        let top_server = raw.server.unwrap_or_default();
        let mut algorithms = algorithm::check_algorithms(
            &c,
            raw.algorithm,
            &algorithm::Defaults {
                surrogate: &surrogate,
                features,
                p_t: &sharing.p_t,
                p1: sharing.p1,
                messages: sharing.messages,
                server: &top_server,
                iterations: counts.iterations,
                domain_size: objective.domain_size(),
                total_agents,
                open_objective: objective.kind.is_open(),
            },
        )?;
        check_rounds(&c, &algorithms, &counts, initial_points, &surrogate)?;
        let privacy = privacy::check_privacy(
            &c,
            raw.privacy,
            &mut algorithms,
            &top_server,
            total_agents,
            counts.iterations,
        )?;
        let output = check_output(&c, raw.output, &algorithms)?;
        let clock = clock::check_clock(&c, raw.clock)?;
        refuse_async_without_clock(&c, clock.is_some(), &algorithms)?;
        Ok(Spec {
            name,
            path: path.to_path_buf(),
            source: text.to_string(),
            seed: seed as u64,
            runs: counts.runs,
            iterations: counts.iterations,
            initial_points,
            batch: counts.batch,
            parallel: counts.parallel,
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

    /// The landscapes of this spec's objective for its agents; run r uses
    /// `landscapes[r % len]` (`crate::objective::landscapes`).
    pub fn landscapes(&self) -> Result<Vec<std::sync::Arc<crate::objective::Landscape>>> {
        crate::objective::landscapes(&self.objective, self.seed, self.total_agents())
    }

    /// The landscape of a command or external spec (`crate::objective::measured_landscape`).
    pub fn measured_landscape(
        &self,
        run_command: bool,
    ) -> std::sync::Arc<crate::objective::Landscape> {
        crate::objective::measured_landscape(&self.objective, self.total_agents(), run_command)
    }

    /// The objective a command or external spec's journal belongs to (None for the others).
    pub fn journal_origin(&self) -> Option<crate::objective::journal::Origin> {
        crate::objective::journal_origin(&self.objective)
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

/// `name`: the default output folder results/<name>/, so a plain folder name; the spec
/// file's stem when absent.
fn check_name(c: &Check, name: Option<String>, path: &Path) -> Result<String> {
    Ok(match name {
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
    })
}

/// The spec's counts: runs, iterations, initial points, batch and parallel evaluations.
struct Counts {
    runs: usize,
    iterations: usize,
    initial_points: usize,
    batch: usize,
    parallel: usize,
}

fn check_counts(c: &Check, raw: &RawSpec) -> Result<Counts> {
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
    Ok(Counts {
        runs,
        iterations,
        initial_points,
        batch,
        parallel,
    })
}

fn check_acquisition(c: &Check, raw: Option<RawAcquisition>) -> Result<BoxSearch> {
    let racq = raw.unwrap_or_default();
    Ok(BoxSearch {
        candidates: c.int(
            "acquisition.candidates",
            racq.candidates,
            1000,
            1,
            1_000_000,
        )?,
        starts: c.int("acquisition.starts", racq.starts, 20, 0, 10_000)?,
    })
}

/// What each algorithm's rounds allow: a batch, pending evaluations, and refits that happen.
fn check_rounds(
    c: &Check,
    algorithms: &[AlgorithmSpec],
    counts: &Counts,
    initial_points: usize,
    surrogate: &SurrogateSpec,
) -> Result<()> {
    let (batch, parallel) = (counts.batch, counts.parallel);
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
    Ok(())
}

fn check_output(
    c: &Check,
    raw: Option<RawOutput>,
    algorithms: &[AlgorithmSpec],
) -> Result<OutputSpec> {
    let ro = raw.unwrap_or_default();
    let server_view = ro.server_view.unwrap_or(false);
    let secure = |a: &AlgorithmSpec| a.server.as_ref().is_some_and(|s| s.secure.is_some());
    if server_view && !algorithms.iter().any(secure) {
        return Err(c.err(
            "output.server_view",
            "shows what a server sees under secure aggregation, and no algorithm has one: set server.secure = true on a dp-fts-de algorithm, or leave server_view out",
        ));
    }
    Ok(OutputSpec {
        timing: ro.timing.unwrap_or(true),
        beliefs: ro.beliefs.unwrap_or(false),
        site_traces: ro.site_traces.unwrap_or(false),
        server_view,
    })
}

/// Greatest common divisor (Euclid).
fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// `[objective]`, checked; a command's evaluations at once (over all runs and agents) default
/// to the agent's `parallel` ones, so that parallel = k runs k at once without a second key.
fn checked_objective(
    c: &Check,
    raw: Option<RawObjective>,
    parallel: usize,
) -> Result<ObjectiveSpec> {
    let concurrency_given = raw.as_ref().is_some_and(|o| o.concurrency_given());
    let mut objective = check_objective(c, raw)?;
    if let ObjectiveKind::Command(settings) = &mut objective.kind
        && !concurrency_given
    {
        settings.concurrency = parallel;
    }
    Ok(objective)
}

/// A spec runs at least one algorithm.
fn require_algorithms<T>(c: &Check, list: &[T]) -> Result<()> {
    if list.is_empty() {
        return Err(c.err(
            "algorithm",
            format!(
                "the spec lists no algorithm; add at least one [[algorithm]] table with kind = one of {:?}",
                AlgorithmKind::NAMES
            ),
        ));
    }
    Ok(())
}

/// Asynchronous agents run on the simulated clock, so they need a `[clock]` table.
fn refuse_async_without_clock(
    c: &Check,
    has_clock: bool,
    algorithms: &[AlgorithmSpec],
) -> Result<()> {
    if !has_clock && let Some(i) = algorithms.iter().position(|a| a.pace == Pace::Asynchronous) {
        return Err(c.err(
            &format!("algorithm[{i}].pace"),
            "\"asynchronous\" runs on the simulated clock: add a [clock] table (its keys have defaults)",
        ));
    }
    Ok(())
}
