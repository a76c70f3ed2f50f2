//! What a spec will cost, estimated before anything runs: memory, to refuse (exit 2) what
//! cannot fit in this machine's memory instead of aborting at an allocation; and compute
//! time, to warn before a typo (`runs = 1000000`) keeps the machine busy for days.
//!
//! The estimates count the few allocations and loops that grow with the spec's sizes, with
//! constants measured on the development machine (docs/reference.md, "Resource checks"). They
//! are orders of magnitude, not promises: the memory check refuses only past the machine's
//! available memory, and the time note is a note.

use crate::error::{FboError, Result};
use crate::objective::model::Dataset;
use crate::spec::{AlgorithmKind, ObjectiveKind, ObservationSource, Spec};

/// Bytes of one f64.
const F: f64 = 8.0;
/// Seconds per (point, feature) of a sampled function evaluated on a grid or a candidate.
const FEATURE_S: f64 = 1.1e-8;
/// Seconds per flop of the dense linear algebra (Cholesky, solves) in plain Rust.
const FLOP_S: f64 = 1.0e-9;
/// Marginal-likelihood evaluations per GP fit start (L-BFGS iterations x line search).
const FIT_EVALS: f64 = 60.0;
/// Seconds of one marginal-likelihood gradient call beyond its flops (allocation, kernel
/// matrix, hyperparameter set-up).
const LML_CALL_S: f64 = 2e-6;
/// Bytes of one traced row in memory and in trace.csv.
const ROW_BYTES: f64 = 400.0;

/// Seconds of bookkeeping per (run, algorithm) unit whatever its compute: its part files
/// written and synced, read back and merged (about 5 ms measured; doubled to err long).
const UNIT_S: f64 = 0.01;
/// Seconds of bookkeeping per sweep point: its folder claimed, its spec, parts, trace,
/// summary and point.csv written and synced (19 ms measured on a 300-point sweep of
/// one-run points; doubled to err long).
pub const POINT_S: f64 = 0.04;

/// Note a long run past this many seconds of estimated wall time.
pub const LONG_S: f64 = 3600.0;

#[derive(Debug)]
pub struct Estimate {
    /// (spec key to change, bytes it accounts for), largest first.
    pub memory: Vec<(String, f64)>,
    /// Single-threaded compute seconds, excluding the user's own model training where it is
    /// not one of fbo's datasets.
    pub cpu_s: f64,
    /// Work items that can run in parallel (runs x algorithms).
    pub jobs: usize,
}

impl Estimate {
    pub fn bytes(&self) -> f64 {
        self.memory.iter().map(|(_, b)| b).sum()
    }

    /// Wall seconds on `threads` workers.
    pub fn wall_s(&self, threads: usize) -> f64 {
        self.cpu_s / threads.clamp(1, self.jobs.max(1)) as f64
    }
}

/// Seconds one evaluation of a live model costs, single-threaded (docs/speed.md).
fn model_eval_s(d: Dataset) -> f64 {
    match d {
        Dataset::Landmine => 0.016,
        Dataset::Har => 0.02,
        Dataset::Emnist => 1.0,
        Dataset::Heart => 0.002,
    }
}

pub fn estimate(spec: &Spec, threads: usize) -> Estimate {
    let o = &spec.objective;
    let n_total = spec.total_agents() as f64;
    let dim = match &o.kind {
        ObjectiveKind::Table { meta, .. } => meta.dims.len() as f64,
        ObjectiveKind::Function { .. }
        | ObjectiveKind::Model { .. }
        | ObjectiveKind::Command(_) => o.params.len() as f64,
        _ => 1.0,
    };
    // Points searched per acquisition: the grid, or the box's candidates plus L-BFGS steps.
    let grid = o.domain_size().map(|g| g as f64);
    let search_points =
        grid.unwrap_or((spec.acquisition.candidates + 30 * spec.acquisition.starts) as f64);
    let n_obs = (spec.initial_points + spec.iterations) as f64;
    let (mut memory, mut cpu) = objective_cost(spec, dim, grid);
    let jobs = spec.algorithms.len() * spec.runs;
    let concurrent = threads.clamp(1, jobs.max(1)) as f64;
    let own_m = spec.surrogate.own.features as f64;
    let refit = spec
        .surrogate
        .own
        .refit_every
        .map_or(0.0, |k| 1.0 / k as f64);
    let fit_s = |n: f64| {
        spec.surrogate.own.fit.starts.max(1) as f64 * FIT_EVALS * (n.powi(3) / 3.0) * FLOP_S
    };
    // One agent-iteration of TS: its own sample (a BLR on M_target features, evaluated over
    // the search points) and its share of the GP refits.
    let ts_step = |n: f64| {
        own_m.powi(3) / 3.0 * FLOP_S
            + search_points * own_m * FEATURE_S
            + n * own_m * own_m * FLOP_S
            + refit * fit_s(n)
    };
    let (mut state_max, mut gp_max): (f64, f64) = (0.0, 0.0);
    for alg in &spec.algorithms {
        let m = alg.features as f64;
        let (acting, state_bytes) = acting_and_state(spec, alg.kind, m, n_obs, dim);
        state_max = state_max.max(state_bytes + 3.0 * own_m * own_m * F + search_points * dim * F);
        gp_max = gp_max.max(acting * 4.0 * n_obs * n_obs * F);
        let mut run_s = acting * spec.iterations as f64 * ts_step(n_obs);
        if !alg.kind.is_single_agent() && !alg.kind.is_framework() {
            // The shared sample over the search points, and the message preparation.
            run_s += acting * spec.iterations as f64 * (search_points * m * FEATURE_S);
            run_s += n_total * spec.iterations as f64 * m.powi(3) / 3.0 * FLOP_S;
        }
        if spec.federation.observations_from == ObservationSource::Ts
            && matches!(
                alg.kind,
                AlgorithmKind::Fts | AlgorithmKind::Rgpe | AlgorithmKind::Taf
            )
        {
            // The senders' own TS runs (shared across the algorithms of a spec, so counted
            // once per algorithm here: an upper estimate).
            let t_n = spec.federation.observations as f64;
            run_s += n_total * t_n * ts_step(t_n);
        }
        run_s += fedgp_fit_s(spec, &alg.framework, n_obs, dim);
        if let ObjectiveKind::Model { settings, .. } = &o.kind {
            run_s += acting * n_obs * model_eval_s(settings.dataset);
        }
        cpu += run_s * spec.runs as f64;
    }
    let rows = jobs as f64 * o.targets.len().max(1) as f64 * n_obs;
    // DP-FTS-DE traces every agent.
    let rows = if spec.algorithms.iter().any(|a| a.kind.every_agent_acts()) {
        rows * n_total / o.targets.len().max(1) as f64
    } else {
        rows
    };
    // Many agents each holding state: the number of agents is the key to change.
    let many = n_total > 200.0;
    let key = |k: &str| {
        if many {
            "federation.agents".to_string()
        } else {
            k.to_string()
        }
    };
    memory.push((key("surrogate.features"), state_max * concurrent));
    // Each acting agent's GP over its observations (n x n kernel, factor and workspace).
    memory.push((key("iterations"), gp_max * concurrent));
    memory.push(("runs".into(), rows * ROW_BYTES * 2.0));
    memory.sort_by(|a, b| b.1.total_cmp(&a.1));
    Estimate {
        memory,
        cpu_s: cpu + jobs as f64 * UNIT_S,
        jobs,
    }
}

/// The objective's memory (named by key) and set-up CPU seconds, held once per spec.
fn objective_cost(spec: &Spec, dim: f64, grid: Option<f64>) -> (Vec<(String, f64)>, f64) {
    let o = &spec.objective;
    let n_total = spec.total_agents() as f64;
    let mut memory: Vec<(String, f64)> = Vec::new();
    let mut cpu = 0.0;
    match &o.kind {
        ObjectiveKind::SyntheticFts | ObjectiveKind::SyntheticDp { .. } => {
            let g = o.grid as f64;
            // Functions are GP draws on the grid: a G x G kernel and its Cholesky factor.
            memory.push(("objective.grid".into(), 2.0 * g * g * F));
            memory.push((
                "objective.functions".into(),
                o.functions as f64 * n_total * g * F,
            ));
            cpu += g.powi(3) / 3.0 * FLOP_S + o.functions as f64 * g * g * FLOP_S;
        }
        ObjectiveKind::Table { meta, agents } => {
            let cells = meta.points as f64 * meta.agents.max(agents.len()) as f64;
            // Parsed text and two numbers per cell (metric and training seconds).
            memory.push((
                "objective.table".into(),
                cells * (2.0 * F + 60.0 + dim * 24.0),
            ));
            cpu += cells * 2e-7;
        }
        ObjectiveKind::Function { .. }
        | ObjectiveKind::Model { .. }
        | ObjectiveKind::Command(_) => {
            if let Some(g) = grid {
                memory.push(("objective.grid".into(), g * dim * 2.0 * F));
            }
        }
    }
    (memory, cpu)
}

/// How many agents of an algorithm act each round, and the bytes of state all its agents
/// hold (M features, n observations in `dim` dimensions).
fn acting_and_state(spec: &Spec, kind: AlgorithmKind, m: f64, n_obs: f64, dim: f64) -> (f64, f64) {
    let n_total = spec.total_agents() as f64;
    let targets = spec.objective.targets.len() as f64;
    match kind {
        AlgorithmKind::DpFtsDe => {
            // Every agent acts every round, and keeps a BLR posterior (M x M).
            (n_total, n_total * (3.0 * m * m * F + n_obs * (m + dim) * F))
        }
        AlgorithmKind::Fts => (targets, n_total * m * F + 3.0 * m * m * F),
        AlgorithmKind::Rgpe | AlgorithmKind::Taf => {
            let t_n = spec.federation.observations as f64;
            (targets, n_total * (t_n * t_n + t_n * dim) * F)
        }
        AlgorithmKind::Ts | AlgorithmKind::Random | AlgorithmKind::Ei | AlgorithmKind::Ucb => {
            (targets, 0.0)
        }
        // Every agent acts, on its own GP; what they share is small.
        AlgorithmKind::Consensus
        | AlgorithmKind::Cgp
        | AlgorithmKind::DesignDensity
        | AlgorithmKind::FedGp
        | AlgorithmKind::Fmtbo => (n_total, n_total * n_obs * dim * F),
    }
}

/// FedGP's hyperparameter fit before every iteration over a run, in CPU seconds (0 for the
/// other kinds): rounds x local_steps marginal-likelihood gradients per agent under FedAvg,
/// at most one per round under L-BFGS, each a Cholesky factor and the gradient's traces on
/// up to n_obs observations (10^4 x 10^4 was "about 1 s").
fn fedgp_fit_s(
    spec: &Spec,
    framework: &crate::spec::frameworks::Framework,
    n_obs: f64,
    dim: f64,
) -> f64 {
    let crate::spec::frameworks::Framework::FedGp {
        solver,
        rounds,
        local_steps,
        ..
    } = *framework
    else {
        return 0.0;
    };
    let gradients = match solver {
        crate::spec::frameworks::FedGpSolver::FedAvg => rounds * local_steps,
        crate::spec::frameworks::FedGpSolver::Lbfgs => rounds,
    };
    let gradient_s = (n_obs.powi(3) / 3.0 + (dim + 2.0) * n_obs * n_obs) * FLOP_S + LML_CALL_S;
    spec.iterations as f64 * gradients as f64 * spec.total_agents() as f64 * gradient_s
}

/// Bytes of memory this machine can give (MemAvailable), where it can be read.
pub fn available_memory() -> Option<f64> {
    proc_kb("/proc/meminfo", "MemAvailable:").map(|kb| kb * 1024.0)
}

/// The kB value of `key` in a Linux /proc status file (None elsewhere).
pub fn proc_kb(path: &str, key: &str) -> Option<f64> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

pub fn human_bytes(b: f64) -> String {
    const U: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut v = b;
    let mut i = 0;
    while v >= 1000.0 && i + 1 < U.len() {
        v /= 1000.0;
        i += 1;
    }
    if i == 0 {
        format!("{v:.0} {}", U[i])
    } else {
        format!("{v:.1} {}", U[i])
    }
}

pub fn human_seconds(s: f64) -> String {
    if s < 90.0 {
        format!("{s:.0} s")
    } else if s < 5400.0 {
        format!("{:.0} min", s / 60.0)
    } else if s < 3.0 * 86400.0 {
        format!("{:.1} h", s / 3600.0)
    } else {
        format!("{:.0} days", s / 86400.0)
    }
}

/// Refuses a spec whose estimated memory exceeds what the machine has, naming the key that
/// accounts for most of it; returns the estimate otherwise.
pub fn check(spec: &Spec, threads: usize) -> Result<Estimate> {
    let e = estimate(spec, threads);
    if let Some(avail) = available_memory() {
        let need = e.bytes();
        if need > avail {
            let (key, top) = &e.memory[0];
            return Err(FboError::spec(
                &spec.path,
                key.as_str(),
                format!(
                    "this spec needs about {} of memory ({} of it from `{key}`), more than the {} this machine has available; {}",
                    human_bytes(need),
                    human_bytes(*top),
                    human_bytes(avail),
                    match key.as_str() {
                        "objective.table" => match &spec.objective.kind {
                            ObjectiveKind::Table { meta, .. } => format!(
                                "its {} claims {} points for each of {} agents: is it the table you meant?",
                                meta.path.display(),
                                meta.points,
                                meta.agents
                            ),
                            _ => String::new(),
                        },
                        "surrogate.features" => format!(
                            "lower `{key}` (or surrogate.own.features, or run fewer runs at once with --threads)"
                        ),
                        "federation.agents" | "iterations" =>
                            format!("lower `{key}` (or run fewer runs at once with --threads)"),
                        _ => format!("lower `{key}`"),
                    }
                ),
            ));
        }
    }
    Ok(e)
}

/// Wall seconds of a whole sweep on `threads` workers: every point's estimate (each checked
/// against the machine's memory, as `check` does) and its bookkeeping.
pub fn sweep_wall_s<'a>(points: impl IntoIterator<Item = &'a Spec>, threads: usize) -> Result<f64> {
    let mut wall = 0.0;
    for p in points {
        wall += check(p, threads)?.wall_s(threads) + POINT_S;
    }
    Ok(wall)
}

/// The note printed before a long run.
pub fn long_run_note(spec: &Spec, e: &Estimate, threads: usize) -> Option<String> {
    let wall = e.wall_s(threads);
    (wall > LONG_S).then(|| {
        format!(
            "note: {} is estimated at about {} on {threads} threads ({} runs x {} algorithms x {} iterations, {} agents); finished runs are saved as they complete, so Ctrl-C and a rerun resume",
            spec.path.display(),
            human_seconds(wall),
            spec.runs,
            spec.algorithms.len(),
            spec.iterations,
            spec.total_agents()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(text: &str) -> Spec {
        Spec::parse(text, std::path::Path::new("t.toml")).unwrap()
    }

    const BASE: &str = "name = \"t\"\nruns = 2\niterations = 10\n[objective]\nkind = \"synthetic-fts\"\ngrid = 100\n[federation]\nagents = 3\nobservations = 5\n[[algorithm]]\nkind = \"ts\"\n[[algorithm]]\nkind = \"fts\"\n";

    #[test]
    fn memory_grows_with_the_keys_that_allocate() {
        let small = estimate(&spec(BASE), 2);
        assert!(small.bytes() < 50e6, "{small:?}");
        // Past the spec's ranges (which this check backs up), as a later change of ranges
        // could allow.
        let mut s = spec(BASE);
        s.objective.grid = 1_000_000;
        let big_grid = estimate(&s, 2);
        assert_eq!(big_grid.memory[0].0, "objective.grid");
        assert!(big_grid.memory[0].1 >= 1.6e13);
        let mut s = spec(BASE);
        for a in &mut s.algorithms {
            a.features = 100_000;
        }
        let big_m = estimate(&s, 2);
        assert_eq!(big_m.memory[0].0, "surrogate.features");
        assert!(big_m.memory[0].1 >= 8e10);
        // At the top of the ranges the estimate is gigabytes: the check matters there too.
        let s = spec(&BASE.replace("grid = 100", "grid = 20000"));
        assert!(estimate(&s, 2).bytes() > 6e9);
    }

    #[test]
    fn time_grows_with_runs_and_iterations() {
        let a = estimate(&spec(BASE), 1).cpu_s;
        let b = estimate(&spec(&BASE.replace("runs = 2", "runs = 20")), 1).cpu_s;
        let c = estimate(
            &spec(&BASE.replace("iterations = 10", "iterations = 100")),
            1,
        )
        .cpu_s;
        assert!(b > 5.0 * a && c > 5.0 * a, "{a} {b} {c}");
        assert_eq!(human_seconds(7200.0), "2.0 h");
        assert_eq!(human_bytes(8e10), "80.0 GB");
    }
}
