//! The command line: arguments parsed in one place (`dispatch`), and the commands that are not
//! the executor's own, one module each: ask/tell, best, evaluate, bench, tabulate, plot, import,
//! history.

pub mod asktell;
pub mod bench;
pub mod best;
pub mod evaluate;
pub mod history;
pub mod import;
pub mod plot;
pub mod tabulate;

use crate::cli::bench::BenchOptions;
use crate::error::{FboError, Result};
use crate::privacy::{self, Accountant, Mechanism, Sampling};
use crate::run::runner::{RunOptions, run_spec};
use crate::run::sweep;
use crate::spec::Spec;
use clap::{Args, Parser, Subcommand};
use std::path::{Path, PathBuf};

#[derive(Parser)]
#[command(
    name = "fbo",
    version,
    about = "Federated Bayesian optimisation experiments: TS, FTS and friends"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// What `run` and `sweep` share.
#[derive(Args)]
pub struct RunArgs {
    /// The experiment spec (TOML).
    pub spec: PathBuf,
    /// Output folder [default: results/<spec name>/].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Override the spec's number of runs (seeds), 1..=1000000 as the spec's `runs`.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=crate::spec::MAX_COUNT))]
    pub runs: Option<u32>,
    /// Worker threads [default: one per core]. Results do not depend on it.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,
    /// No progress bar or resume messages on stderr (notes and warnings still show).
    #[arg(long)]
    pub quiet: bool,
    /// Leave elapsed_s (and a sweep's wall_s) empty, so reruns give byte-identical output.
    #[arg(long)]
    pub no_timing: bool,
    /// Replace the results of another experiment found in the output folder. fbo removes
    /// only files it wrote there (listed in its .fbo-manifest), never a file of yours.
    #[arg(long)]
    pub overwrite: bool,
    /// Compute only shard I of N (0 <= I < N): the I-th of N equal blocks of the runs in
    /// (sweep point, seed, algorithm) order, saved in parts/ folders without merging. Shards may
    /// run at once, on any machines sharing the folder; `--merge` assembles them.
    #[arg(long, value_parser = crate::run::runner::Work::parse_shard, conflicts_with = "merge")]
    pub shard: Option<crate::run::runner::Work>,
    /// Only merge the runs saved by shards (into trace.csv and summary.csv, or a sweep's
    /// points and sweep.csv); refused, with the list, while any run is missing.
    #[arg(long, conflicts_with = "status")]
    pub merge: bool,
    /// Print which runs are done, running (held by a shard) or missing, and change nothing;
    /// with --shard, only that shard's runs.
    #[arg(long)]
    pub status: bool,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run every algorithm of a spec over its seeds and write trace.csv and summary.csv.
    Run(RunArgs),
    /// Run a spec once per point of its [sweep] table and write sweep.csv; rerunning into
    /// the same folder skips finished points.
    Sweep(RunArgs),
    /// Build a hyperparameter-response table from a raw dataset (resumable).
    Tabulate(TabulateArgs),
    /// Import response tables measured elsewhere as fbo tables. `fbo import privtuna FOLDER`
    /// turns every PrivTuna federation under FOLDER (any folder of its layout, from
    /// non-IID_res/ down to one individual/<level>/) into OUT/<dataset>-<skew>-<level>-<N>/
    /// (table.toml, table.csv.gz, fedavg.csv.gz); files that are not a client's grid are
    /// listed as skipped with the reason (docs/privtuna.md).
    Import(ImportArgs),
    /// Print the queries waiting for results of a spec whose evaluations are done by hand
    /// (objective.kind = "external"): every query the runs wait on that was not handed out
    /// before (an agent starting from initial points waits on all of them at once), with
    /// scope, run, agent and iteration, which together name it for `fbo tell`, and raw
    /// hyperparameter values. The state folder holds the journal of
    /// results; `fbo run SPEC --out STATE` writes the trace once every run is complete.
    Ask(AskArgs),
    /// Record results of queries handed out by `fbo ask`: one with --agent and --value, or
    /// many with --results FILE.csv (the columns `fbo ask` prints plus metric, and
    /// optionally cost_s).
    Tell(TellArgs),
    /// The objective of listed agents at given raw hyperparameter values: reads a CSV with a
    /// column `agent` and one per hyperparameter (e.g. C,gamma), writes it to stdout with a
    /// column `value` (the metric as the objective reports it) added.
    Evaluate(EvaluateArgs),
    /// What each incumbent is worth under a reference objective: for every row of a trace,
    /// the best point observed so far by its (algorithm, run, agent) valued by SPEC's
    /// objective (e.g. the converged SVM where the run's objective stopped early or was noisy).
    /// Writes to stdout a trace that `fbo compare` reads: best_f and best_metric hold the
    /// incumbent's reference value, observed_best_metric the run's own.
    Incumbents(IncumbentsArgs),
    /// The best configuration each algorithm's agents found, over all runs of a run's folder:
    /// raw hyperparameter values, the value observed there (in the objective's direction),
    /// the run and evaluation that found it, and the noiseless value where the objective
    /// knows it (not for a command). A table, or CSV with --csv.
    Best(BestArgs),
    /// Every evaluation a run's journals hold (command and external objectives), as CSV on
    /// stdout: scope, run, agent, iteration, the raw hyperparameters and the measured value.
    /// A later spec of the same program reads it as `initial_points_file` and starts from
    /// those measurements without running them again (warm start; docs/commands.md).
    History(HistoryArgs),
    /// Check a spec (or a tabulation config) and print what it would run; exit 2 if invalid.
    Validate(ValidateArgs),
    /// Privacy loss (epsilon at delta) of `steps` rounds of the subsampled Gaussian mechanism.
    Privacy(PrivacyArgs),
    /// Paired comparison of a run's algorithms against a baseline (same seeds, objectives and
    /// initial points): mean difference, bootstrap 95% interval, Wilcoxon signed-rank p-value,
    /// win/tie/loss and Holm-adjusted p-values. Writes compare.csv beside the trace.
    Compare(CompareArgs),
    /// Draw a figure (PNG or SVG, by the output's extension) from fbo's CSVs.
    Plot(PlotArgs),
    /// Measure per-iteration cost and, optionally, whole specs' wall time.
    Bench(BenchArgs),
}

#[derive(Args)]
pub struct TabulateArgs {
    /// The tabulation config (TOML), e.g. configs/tabulate-landmine.toml.
    config: PathBuf,
    /// The raw data: the landmine CSV file (data/raw/landmine/landmine.csv.gz), the HAR folder (data/raw/har) or the EMNIST folder (data/raw/emnist).
    #[arg(long)]
    data: PathBuf,
    /// Output folder [default: data/<name>/, name from the config, else the dataset].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Worker threads [default: one per core]. The table does not depend on it.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    threads: Option<u32>,
    /// No progress bar or resume messages on stderr (notes and warnings still show).
    #[arg(long)]
    quiet: bool,
    /// Replace another table's files in the output folder (only files fbo wrote).
    #[arg(long)]
    overwrite: bool,
    /// Tabulate only shard I of N (0 <= I < N): the I-th of N blocks of the agents,
    /// saved in parts/ without building the table; shards may run at once.
    #[arg(long, value_parser = crate::run::runner::Work::parse_shard, conflicts_with = "merge")]
    shard: Option<crate::run::runner::Work>,
    /// Only build the table from the agents saved by shards; refused while any is missing.
    #[arg(long)]
    merge: bool,
}

#[derive(Args)]
pub struct ImportArgs {
    /// The format of the source.
    #[arg(value_parser = ["privtuna"])]
    format: String,
    /// The source folder.
    source: PathBuf,
    /// Where the table folders go.
    #[arg(long, default_value = "data/privtuna")]
    out: PathBuf,
    /// The table's metric: validation accuracy (maximised) or validation loss (minimised).
    #[arg(long, default_value = "val_accuracy", value_parser = ["val_accuracy", "val_loss"])]
    metric: String,
    /// Replace files fbo did not write in the output folders.
    #[arg(long)]
    overwrite: bool,
    /// Do not list the skipped files (the summary still shows).
    #[arg(long)]
    quiet: bool,
}

#[derive(Args)]
pub struct AskArgs {
    /// The experiment spec (TOML).
    spec: PathBuf,
    /// The state folder (created on first use).
    #[arg(long)]
    state: PathBuf,
    /// Output format.
    #[arg(long, default_value = "csv", value_parser = ["csv", "json"])]
    format: String,
    /// Also print queries handed out before and still waiting for a result.
    #[arg(long)]
    all: bool,
}

#[derive(Args)]
pub struct TellArgs {
    /// The experiment spec (TOML).
    spec: PathBuf,
    /// The state folder given to `fbo ask`.
    #[arg(long)]
    state: PathBuf,
    /// The agent whose outstanding query the value answers.
    #[arg(long)]
    agent: Option<usize>,
    /// The measured metric (in the spec's direction: higher is better with "maximize").
    #[arg(long, allow_negative_numbers = true)]
    value: Option<f64>,
    /// The run, where the agent has outstanding queries in several.
    #[arg(long)]
    run: Option<usize>,
    /// The scope (as `fbo ask` prints it), where the agent has several outstanding.
    #[arg(long)]
    scope: Option<String>,
    /// The iteration (as `fbo ask` prints it), where the agent has several outstanding
    /// in one run and scope (its initial points).
    #[arg(long, allow_negative_numbers = true)]
    iteration: Option<i64>,
    /// What the evaluation cost, in seconds >= 0 (recorded as the trace's train_s).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    cost: f64,
    /// A CSV of results: scope, run, agent, iteration, metric [, cost_s].
    #[arg(long)]
    results: Option<PathBuf>,
}

#[derive(Args)]
pub struct EvaluateArgs {
    /// The spec whose objective is evaluated.
    spec: PathBuf,
    /// The points, CSV.
    #[arg(long)]
    points: PathBuf,
    /// The run whose objective is used (synthetic objectives differ per run).
    #[arg(long, default_value_t = 0)]
    run: usize,
}

#[derive(Args)]
pub struct IncumbentsArgs {
    /// A run's folder (holding trace.csv) or a trace.csv.
    input: PathBuf,
    /// The spec whose objective values the incumbents; its hyperparameters must be the
    /// trace's columns.
    #[arg(long)]
    reference: PathBuf,
}

#[derive(Args)]
pub struct BestArgs {
    /// A run's output folder (with trace.csv and spec.toml).
    run: PathBuf,
    /// Print CSV instead of a table.
    #[arg(long)]
    csv: bool,
}

#[derive(Args)]
pub struct HistoryArgs {
    /// A run's output folder (its evaluations.jsonl and shards' journals), or one journal.
    input: PathBuf,
    /// Only this scope: "init" (initial points) or an algorithm's label; repeatable.
    #[arg(long)]
    scope: Vec<String>,
    /// Only this run.
    #[arg(long)]
    run: Option<usize>,
}

#[derive(Args)]
pub struct ValidateArgs {
    /// The spec or tabulation config (TOML) to check.
    spec: PathBuf,
}

#[derive(Args)]
pub struct PrivacyArgs {
    /// Sampling rate q in (0, 1] (poisson and fixed).
    #[arg(long)]
    q: Option<f64>,
    /// Noise multiplier z > 0.
    #[arg(long)]
    z: f64,
    /// Number of rounds composed.
    #[arg(long)]
    steps: u64,
    /// Target delta in (0, 1).
    #[arg(long)]
    delta: f64,
    /// Accountant [default: all three].
    #[arg(long, value_parser = ["rdp-int", "rdp", "pld"])]
    accountant: Option<String>,
    /// poisson: each agent independently with probability q; fixed: exactly round(N q)
    /// of the N = --agents agents, accounted at the realised rate round(N q) / N;
    /// allocation: each agent in --per-agent of the --steps rounds, one in each of that
    /// many consecutive periods, chosen uniformly and hidden (no q).
    #[arg(long, default_value = "poisson", value_parser = ["poisson", "fixed", "allocation"])]
    sampling: String,
    /// Rounds each agent takes part in (--sampling allocation) [default: 1].
    #[arg(long)]
    per_agent: Option<u64>,
    /// Number of agents N (required with --sampling fixed).
    #[arg(long)]
    agents: Option<usize>,
    /// Neighbouring relation [default: add-remove for poisson, replace-one for fixed].
    #[arg(long, value_parser = ["add-remove", "replace-one"])]
    adjacency: Option<String>,
}

#[derive(Args)]
pub struct CompareArgs {
    /// A run's output folder (with trace.csv), or a trace.csv.
    input: PathBuf,
    /// Pool more runs of the same spec's algorithms (other objectives, e.g. the
    /// federations of one skew type) with INPUT: units become (input, run, agent), each
    /// run checked for pairing on its own. Repeat for each.
    #[arg(long = "pool")]
    pool: Vec<PathBuf>,
    /// Only the (input, agent) units listed in this CSV (`input,agent`, the input written
    /// as on this command line), e.g. a federation's tail clients.
    #[arg(long)]
    units: Option<PathBuf>,
    /// Print the comparison as CSV (compare.csv's columns) instead of a table.
    #[arg(long, conflicts_with = "markdown")]
    csv: bool,
    /// The algorithm label to compare against [default: the first in the trace].
    #[arg(long)]
    baseline: Option<String>,
    /// Iterations to compare at, comma-separated [default: the last].
    #[arg(long, value_delimiter = ',')]
    at: Vec<i64>,
    /// Simulated times in seconds to compare at instead, comma-separated: each agent's
    /// value after its last evaluation finished by then (trace column sim_clock_s; runs
    /// with a [clock], e.g. synchronous against asynchronous agents).
    #[arg(long, value_delimiter = ',', conflicts_with = "at")]
    at_clock: Vec<f64>,
    /// What to compare.
    #[arg(long, default_value = "best-metric", value_parser = ["best-metric", "simple-regret"])]
    metric: String,
    /// Bootstrap resamples for the interval.
    #[arg(long, default_value_t = crate::compare::DEFAULT_RESAMPLES as u64, value_parser = clap::value_parser!(u64).range(100..=10_000_000))]
    resamples: u64,
    /// Print the table as Markdown.
    #[arg(long)]
    markdown: bool,
    /// Compare algorithms whose initial points differ by design (DP-FTS-DE's sub-region
    /// initialisation); units stay paired by seed and objective.
    #[arg(long)]
    allow_init_differences: bool,
    /// Sweeps: the accountant whose epsilon the trend is taken on.
    #[arg(long, default_value = "rdp-int", value_parser = ["rdp-int", "rdp", "pld"])]
    accountant: String,
}

#[derive(Args)]
pub struct PlotArgs {
    /// What to draw: iterations, time (summary.csv); messages (summary.csv); privacy,
    /// scaling (sweep.csv).
    #[arg(value_enum)]
    kind: plot::Kind,
    /// Input CSV; repeat to overlay several runs' summaries.
    #[arg(long = "input", required = true)]
    inputs: Vec<PathBuf>,
    /// Output image, ending in .png or .svg.
    #[arg(long)]
    out: PathBuf,
    /// The figure's title [default: none].
    #[arg(long)]
    title: Option<String>,
    /// The quantity on the vertical axis of iterations, time, difference and ranks plots
    /// [default: best-metric].
    #[arg(long, value_enum)]
    y: Option<plot::Quantity>,
    /// The clock of a time plot [default: simulated].
    #[arg(long, value_enum)]
    clock: Option<plot::Clock>,
    /// The epsilon column of a privacy plot.
    #[arg(long, default_value = "rdp-int", value_parser = ["rdp-int", "rdp", "pld"])]
    accountant: String,
    /// Logarithmic vertical axis.
    #[arg(long)]
    log_y: bool,
    /// Only these algorithm labels, in this order (comma-separated).
    #[arg(long, value_delimiter = ',')]
    algorithms: Vec<String>,
    /// `difference` plots: the algorithm subtracted [default: the first in the trace].
    #[arg(long)]
    baseline: Option<String>,
}

#[derive(Args)]
pub struct BenchArgs {
    /// Values of M (= M_target) to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "50,100,200")]
    features: Vec<usize>,
    /// Points of the 1-D grid the synthetic per-iteration benchmark searches.
    #[arg(long, default_value_t = 1000)]
    grid: usize,
    /// Observations to grow each agent to.
    #[arg(long, default_value_t = 60)]
    observations: usize,
    /// Independent functions per M.
    #[arg(long, default_value_t = 5)]
    repeats: usize,
    /// Specs to time end to end.
    #[arg(long = "config")]
    configs: Vec<PathBuf>,
    /// Tables (table.toml) whose loading to time.
    #[arg(long = "table")]
    tables: Vec<PathBuf>,
    /// Time live landmine SVM evaluations (decision-value and Platt AUC, one thread) at
    /// the points of this CSV (columns agent, C, gamma, ...; e.g.
    /// tests/fixtures/landmine_platt_reference.csv) on the data of --landmine-data.
    #[arg(long = "landmine-points", requires = "landmine_data")]
    landmine_points: Option<PathBuf>,
    /// The landmine data (landmine.csv) for --landmine-points.
    #[arg(long = "landmine-data")]
    landmine_data: Option<PathBuf>,
    /// Measure only the BO overhead per agent-iteration of every algorithm of these specs
    /// (one thread; e.g. configs/bench-landmine-dp.toml, configs/bench-landmine-fts.toml).
    #[arg(long = "iteration-cost")]
    iteration_cost: Vec<PathBuf>,
    /// Measure only how much marginal likelihood a cheaper GP fit (one refinement instead
    /// of the spec's) gives up on the refits of these specs' TS agents.
    #[arg(long = "fit-quality")]
    fit_quality: Vec<PathBuf>,
    /// Measure only the cost of N command evaluations of a `true`-like command (echo of a
    /// metric) through fbo's protocol and journal, against starting it bare.
    #[arg(long = "command-overhead", value_parser = clap::value_parser!(u32).range(1..=100000))]
    command_overhead: Option<u32>,
    /// Measure only one round of secure aggregation (server.secure) among N members
    /// masking W words each, D of them dropping out after masking: N,W,D (e.g. 100,400,30);
    /// N,W,D,K with each member masking with K neighbours (server.secure_neighbours).
    #[arg(long = "secure-round", value_delimiter = ',')]
    secure_round: Option<Vec<usize>>,
}

/// Runs saved as parts in a run's output folder.
fn count_saved(out: &Path) -> usize {
    std::fs::read_dir(out.join("parts")).map_or(0, |d| {
        d.filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "csv"))
        })
        .count()
    })
}

/// `fbo best RUN`: the run folder's own spec names the trace's columns.
fn best_of_run(run: &Path, csv: bool) -> Result<String> {
    // A sweep's folder holds one run folder per point.
    let points = run.join("points");
    if !run.join("trace.csv").exists() && points.is_dir() {
        let mut names: Vec<String> = std::fs::read_dir(&points)
            .map_err(|e| FboError::io(&points, e))?
            .filter_map(|e| e.ok())
            .filter(|e| e.path().join("trace.csv").exists())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let shown = names.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
        return Err(FboError::spec(
            run,
            "",
            format!(
                "a sweep's folder: its points are run folders of their own; ask for one, e.g. `fbo best {}` ({} finished point{}{}{})",
                points
                    .join(names.first().map_or("POINT", |n| n.as_str()))
                    .display(),
                names.len(),
                if names.len() == 1 { "" } else { "s" },
                if names.is_empty() { "" } else { ": " },
                if names.len() > 5 {
                    format!("{shown}, ...")
                } else {
                    shown
                }
            ),
        ));
    }
    let spec = Spec::load(&run.join("spec.toml"))?;
    let land = spec.landscapes()?.swap_remove(0);
    let (best, failed) = crate::cli::best::best(&spec, &land, &run.join("trace.csv"))?;
    for (alg, agent, n) in failed {
        eprintln!(
            "note: {alg}, agent {agent}: all {n} of its evaluations failed; it has no best configuration (evaluations.jsonl records why)"
        );
    }
    let codec = land.space.codec();
    Ok(if csv {
        crate::cli::best::to_csv(&best, &codec, land.dim())
    } else {
        crate::cli::best::to_table(&best, &codec, land.dim())
    })
}

fn load(path: &Path, runs: Option<u32>, no_timing: bool) -> Result<Spec> {
    let mut spec = Spec::load(path)?;
    if let Some(r) = runs {
        spec.runs = r as usize;
    }
    if no_timing {
        spec.output.timing = false;
    }
    Ok(spec)
}

pub fn dispatch(cli: Cli) -> Result<()> {
    if matches!(
        cli.command,
        Command::Run(_) | Command::Sweep(_) | Command::Tabulate(_)
    ) {
        crate::run::progress::install_interrupt_handler();
    }
    match cli.command {
        Command::Run(a) => cmd_run(a),
        Command::Sweep(a) => cmd_sweep(a),
        Command::Compare(a) => cmd_compare(a),
        Command::Plot(a) => cmd_plot(a),
        Command::Tabulate(a) => cmd_tabulate(a),
        Command::Import(a) => cmd_import(a),
        Command::Ask(a) => cmd_ask(a),
        Command::Tell(a) => cmd_tell(a),
        Command::Evaluate(a) => cmd_evaluate(a),
        Command::Incumbents(a) => cmd_incumbents(a),
        Command::Best(a) => cmd_best(a),
        Command::History(a) => cmd_history(a),
        Command::Validate(a) => cmd_validate(a),
        Command::Privacy(a) => cmd_privacy(a),
        Command::Bench(a) => cmd_bench(a),
    }
}

/// What `--shard I/N` and `--merge` ask of a run, sweep or tabulation: one shard, the merge,
/// or all of it.
fn work_of(shard: Option<crate::run::runner::Work>, merge: bool) -> crate::run::runner::Work {
    match (shard, merge) {
        (Some(w), _) => w,
        (None, true) => crate::run::runner::Work::Merge,
        (None, false) => crate::run::runner::Work::All,
    }
}

fn cmd_run(a: RunArgs) -> Result<()> {
    let RunArgs {
        spec,
        out,
        runs,
        threads,
        quiet,
        no_timing,
        overwrite,
        shard,
        merge,
        status,
    } = a;
    let spec = load(&spec, runs, no_timing)?;
    let out = out.unwrap_or_else(|| Path::new("results").join(&spec.name));
    if status {
        return crate::run::runner::run_status(
            &spec,
            &out,
            shard,
            &crate::federation::journal_progress(&spec, &out),
        );
    }
    let work = work_of(shard, merge);
    let report = run_spec(
        &spec,
        &RunOptions {
            out: out.clone(),
            threads: threads.map(|t| t as usize),
            quiet,
            nested: false,
            progress: None,
            overwrite,
            work,
            reuse: Vec::new(),
        },
    )?;
    // What a command objective cost: the evaluations made now and their mean time.
    let evaluations = report.evaluations.map(|(new, mean, before)| {
        format!(
            "; {new} evaluations of the objective made now{}, {before} replayed from the journal",
            mean.map(|m| format!(" (mean {m:.3} s each)"))
                .unwrap_or_default()
        )
    });
    let evaluations = evaluations.unwrap_or_default();
    if let crate::run::runner::Work::Shard { index, count } = work {
        if !quiet {
            eprintln!(
                "shard {index}/{count} done in {:.1} s ({} of {} units now saved in {}){evaluations}; merge with --merge once every shard is done",
                report.wall_s,
                count_saved(&out),
                report.runs_total,
                out.join("parts").display()
            );
        }
        return Ok(());
    }
    if !quiet {
        eprintln!(
            "{} units ({} seeds x {} algorithms; {} resumed) in {:.1} s -> {}{evaluations}",
            report.runs_total,
            spec.runs,
            spec.algorithms.len(),
            report.runs_resumed,
            report.wall_s,
            out.display()
        );
        if let Ok(text) = std::fs::read(out.join("server.csv")) {
            for w in crate::run::output::clipping_warnings(&spec, &text) {
                eprintln!("{w}");
            }
        }
        // The answer itself, where it fits on a screen.
        if spec.algorithms.len() * spec.total_agents() <= 12 {
            match best_of_run(&out, false) {
                Ok(table) => eprint!("best configurations:\n{table}"),
                Err(e) => eprintln!("(fbo best {}: {e})", out.display()),
            }
        } else {
            eprintln!(
                "best configurations per algorithm and agent: fbo best {}",
                out.display()
            );
        }
    }
    Ok(())
}

fn cmd_sweep(a: RunArgs) -> Result<()> {
    let RunArgs {
        spec,
        out,
        runs,
        threads,
        quiet,
        no_timing,
        overwrite,
        shard,
        merge,
        status,
    } = a;
    let base = Spec::load(&spec)?;
    let out = out.unwrap_or_else(|| Path::new("results").join(&base.name));
    if status {
        return sweep::status(&spec, &out, shard);
    }
    let work = work_of(shard, merge);
    sweep::run(
        &spec,
        &sweep::SweepOptions {
            out: out.clone(),
            threads: threads.map(|t| t as usize),
            quiet,
            runs: runs.map(|r| r as usize),
            no_timing,
            overwrite,
            work,
        },
    )?;
    say_finished(
        quiet,
        work,
        |index, count| {
            format!(
                "shard {index}/{count} of the sweep done; `fbo sweep SPEC --status` shows what is left, `--merge` assembles sweep.csv"
            )
        },
        || format!("sweep done -> {}", out.join("sweep.csv").display()),
    );
    Ok(())
}

fn cmd_tabulate(a: TabulateArgs) -> Result<()> {
    let TabulateArgs {
        config,
        data,
        out,
        threads,
        quiet,
        overwrite,
        shard,
        merge,
    } = a;
    let cfg = tabulate::TabulateConfig::load(&config)?;
    let work = work_of(shard, merge);
    let out = out.unwrap_or_else(|| Path::new("data").join(&cfg.name));
    tabulate::run(
        &config,
        &tabulate::TabulateOptions {
            data,
            out: out.clone(),
            threads: threads.map(|t| t as usize),
            quiet,
            overwrite,
            work,
        },
    )?;
    say_finished(
        quiet,
        work,
        |index, count| {
            format!(
                "shard {index}/{count} tabulated; build the table with --merge once every shard is done"
            )
        },
        || format!("table -> {}", out.join("table.csv").display()),
    );
    Ok(())
}

/// The closing line on stderr (none with --quiet) of a command that may run as a shard: the
/// shard's, which says what is left to do, or the whole job's, which says where its result is.
fn say_finished(
    quiet: bool,
    work: crate::run::runner::Work,
    shard: impl FnOnce(usize, usize) -> String,
    whole: impl FnOnce() -> String,
) {
    if quiet {
        return;
    }
    match work {
        crate::run::runner::Work::Shard { index, count } => eprintln!("{}", shard(index, count)),
        _ => eprintln!("{}", whole()),
    }
}

fn cmd_import(a: ImportArgs) -> Result<()> {
    let ImportArgs {
        format: _,
        source,
        out,
        metric,
        overwrite,
        quiet,
    } = a;
    crate::cli::import::privtuna(&crate::cli::import::ImportOptions {
        source,
        out,
        metric: crate::cli::import::Metric::parse(&metric).expect("clap checked the metric"),
        overwrite,
        quiet,
    })
}

fn cmd_ask(a: AskArgs) -> Result<()> {
    let AskArgs {
        spec,
        state,
        format,
        all,
    } = a;
    crate::cli::asktell::ask(
        &Spec::load(&spec)?,
        &crate::cli::asktell::AskOptions { state, format, all },
    )
}

fn cmd_tell(a: TellArgs) -> Result<()> {
    let TellArgs {
        spec,
        state,
        agent,
        value,
        run,
        scope,
        iteration,
        cost,
        results,
    } = a;
    crate::cli::asktell::tell(
        &Spec::load(&spec)?,
        &crate::cli::asktell::TellOptions {
            state,
            agent,
            value,
            run,
            scope,
            iteration,
            cost_s: cost,
            results,
        },
    )
}

fn cmd_evaluate(a: EvaluateArgs) -> Result<()> {
    let EvaluateArgs { spec, points, run } = a;
    let s = load(&spec, None, false)?;
    let csv = crate::cli::evaluate::evaluate(&s, &spec, &points, run)?;
    print!("{csv}");
    Ok(())
}

fn cmd_incumbents(a: IncumbentsArgs) -> Result<()> {
    let IncumbentsArgs { input, reference } = a;
    let s = load(&reference, None, false)?;
    let trace = if input.is_dir() {
        input.join("trace.csv")
    } else {
        input
    };
    let csv = crate::cli::evaluate::incumbents(&s, &reference, &trace)?;
    print!("{csv}");
    Ok(())
}

fn cmd_best(a: BestArgs) -> Result<()> {
    let BestArgs { run, csv } = a;
    print!("{}", best_of_run(&run, csv)?);
    Ok(())
}

fn cmd_history(a: HistoryArgs) -> Result<()> {
    let HistoryArgs { input, scope, run } = a;
    let select = crate::cli::history::Select { scopes: scope, run };
    print!("{}", crate::cli::history::history(&input, &select)?);
    Ok(())
}

fn cmd_validate(a: ValidateArgs) -> Result<()> {
    let ValidateArgs { spec } = a;
    // A tabulation config is recognised by its `dataset` key.
    let is_table_config = std::fs::read_to_string(&spec)
        .ok()
        .and_then(|t| t.parse::<toml::Table>().ok())
        .is_some_and(|t| t.contains_key("dataset"));
    if is_table_config {
        let cfg = tabulate::TabulateConfig::load(&spec)?;
        println!(
            "{}: ok: tabulation of {} on {} grid points ({} per dimension) -> data/{}/",
            spec.display(),
            cfg.dataset.name(),
            cfg.points(),
            cfg.grid,
            cfg.name
        );
        return Ok(());
    }
    let s = load(&spec, None, false)?;
    let threads = rayon::current_num_threads();
    let mut whole = None;
    if s.has_sweep {
        let sw = sweep::load(&spec)?;
        for p in &sw.points {
            crate::run::runner::prepare(&p.spec, threads)?;
        }
        println!(
            "{}: ok: sweep of {} points over {}",
            spec.display(),
            sw.points.len(),
            sw.keys.join(", ")
        );
        whole = Some((
            sw.points.len(),
            crate::run::budget::sweep_wall_s(sw.points.iter().map(|p| &p.spec), threads)?,
        ));
    }
    // The base point of a sweep is not run itself: only its estimate is shown.
    let e = if s.has_sweep {
        crate::run::budget::check(&s, threads)?
    } else {
        crate::run::runner::prepare(&s, threads)?.0
    };
    println!(
        "{}: ok: {} runs (seeds) x {} iterations, {} agents, algorithms: {}",
        spec.display(),
        s.runs,
        s.iterations,
        s.total_agents(),
        s.algorithms
            .iter()
            .map(|a| a.label.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    for note in s.budget_notes() {
        println!("{}: {note}", spec.display());
    }
    // What the user pays for in their own program's runs, which no estimate knows.
    let measured = matches!(s.objective.kind, crate::spec::ObjectiveKind::Command(_));
    if measured && !s.has_sweep {
        let per_run = crate::run::count::per_run(&s)?;
        let total: usize = per_run.iter().map(|(_, n)| n).sum::<usize>() * s.runs;
        println!(
            "{}: evaluations of the objective: {}, {total} for {} runs; the time below leaves them out (`fbo run` reports the mean seconds of one)",
            spec.display(),
            crate::run::count::describe(&per_run),
            s.runs
        );
    }
    match whole {
        None => println!(
            "{}: estimated: about {} of memory, about {} on {threads} threads",
            spec.display(),
            crate::run::budget::human_bytes(e.bytes()),
            crate::run::budget::human_seconds(e.wall_s(threads)),
        ),
        Some((n, wall)) => println!(
            "{}: estimated: about {} of memory per point, about {} on {threads} threads for the whole sweep of {n} points",
            spec.display(),
            crate::run::budget::human_bytes(e.bytes()),
            crate::run::budget::human_seconds(wall),
        ),
    }
    Ok(())
}

fn cmd_privacy(a: PrivacyArgs) -> Result<()> {
    let bad = |key: &str, msg: String| FboError::spec("fbo privacy", key, msg);
    if a.sampling == "allocation" {
        return privacy_allocation(a);
    }
    if a.per_agent.is_some() {
        return Err(bad(
            "--per-agent",
            "applies only to --sampling allocation".into(),
        ));
    }
    let PrivacyArgs {
        q,
        z,
        steps,
        delta,
        accountant,
        sampling,
        agents,
        adjacency,
        per_agent: _,
    } = a;
    let q = q.ok_or_else(|| {
        bad(
            "--q",
            format!("--sampling {sampling} needs the sampling rate --q in (0, 1]"),
        )
    })?;
    let sampling: Sampling = sampling.parse().map_err(|e: String| bad("--sampling", e))?;
    let adjacency: privacy::Adjacency = match adjacency {
        Some(a) => a.parse().map_err(|e: String| bad("--adjacency", e))?,
        None => privacy::Adjacency::default_for(sampling),
    };
    let nominal = Mechanism {
        q,
        z,
        steps,
        sampling,
        adjacency,
        noise: privacy::Noise::Gaussian,
    };
    privacy::check(&nominal, delta).map_err(|e| bad("--adjacency", e))?;
    // Every refusal comes before the first line of output.
    // The mechanism accounted, and for fixed-size sampling (selected, of N agents).
    let (m, fixed) = match (sampling, agents) {
        (Sampling::Fixed, None) => {
            return Err(bad(
                "--agents",
                "--sampling fixed needs --agents N: the server selects round(N q) of N agents, and epsilon depends on that realised rate".into(),
            ));
        }
        (_, Some(0)) => return Err(bad("--agents", "must be >= 1, got 0".into())),
        (Sampling::Fixed, Some(n)) => {
            let k = privacy::checked_fixed_sample_size(q, n).map_err(|e| bad("--q", e))?;
            (
                Mechanism::server(q, z, steps, sampling, adjacency, n),
                Some((k, n)),
            )
        }
        (Sampling::Poisson, _) => (nominal, None),
    };
    let which: Vec<Accountant> = match accountant {
        Some(a) => vec![a.parse().map_err(|e: String| bad("--accountant", e))?],
        None => Accountant::ALL
            .into_iter()
            .filter(|&a| privacy::supports(a, sampling, adjacency).is_ok())
            .collect(),
    };
    for &acc in &which {
        privacy::supports(acc, sampling, adjacency).map_err(|e| bad("--accountant", e))?;
    }
    match fixed {
        Some((k, n)) => println!(
            "sampling fixed: {k} of {n} agents per round, accounted at q = {}; adjacency {}",
            m.q,
            adjacency.name()
        ),
        None => println!(
            "sampling poisson: accounted at q = {}; adjacency {}",
            m.q,
            adjacency.name()
        ),
    }
    // Every printed upper end is rounded up and every lower end down, so what is read
    // off the screen brackets the true epsilon as the full values do.
    let show = |e: f64| {
        if e.is_finite() {
            privacy::show_upper(e, 6)
        } else {
            "inf (no finite epsilon can be certified at this delta)".into()
        }
    };
    for acc in which {
        if acc == Accountant::Pld {
            let b = privacy::pld::epsilon_bounds(&m, delta, privacy::pld::DEFAULT_INTERVAL)
                .map_err(|e| bad("--steps", e))?;
            println!(
                "pld      epsilon {}  (true epsilon in [{}, {}]; loss grid {:.2e})",
                show(b.upper),
                privacy::show_lower(b.lower, 6),
                privacy::show_upper(b.upper, 6),
                b.interval
            );
        } else {
            let g = privacy::epsilon(acc, &m, delta).map_err(|e| bad("", e))?;
            println!(
                "{:<8} epsilon {}  (optimal order {})",
                acc.name(),
                show(g.epsilon),
                g.order.map_or("-".into(), |o| format!("{o}"))
            );
        }
    }
    Ok(())
}

/// `fbo privacy --sampling allocation`: each agent in `--per-agent` of `--steps` rounds, one
/// in each of that many consecutive periods (`privacy::allocation`). Its own accountant, under
/// add-remove adjacency; the keys of the rate-based schemes are refused, not ignored.
fn privacy_allocation(a: PrivacyArgs) -> Result<()> {
    let bad = |key: &str, msg: String| FboError::spec("fbo privacy", key, msg);
    let refused = [
        ("--q", a.q.is_some()),
        ("--agents", a.agents.is_some()),
        ("--accountant", a.accountant.is_some()),
        (
            "--adjacency",
            a.adjacency.as_deref().is_some_and(|s| s != "add-remove"),
        ),
    ];
    if let Some((key, _)) = refused.iter().find(|(_, set)| *set) {
        return Err(bad(
            key,
            "does not apply to --sampling allocation: each agent takes part in --per-agent of --steps rounds (no rate), accounted by random allocation's own accountant under add-remove adjacency".into(),
        ));
    }
    let k = a.per_agent.unwrap_or(1);
    let eps = privacy::allocation::epsilon(a.z, a.steps, k, a.delta).map_err(|r| {
        use privacy::allocation::Input;
        let key = match r.input {
            Input::Sigma => "--z",
            Input::Rounds => "--steps",
            Input::PerAgent => "--per-agent",
            Input::Delta => "--delta",
        };
        bad(key, r.message)
    })?;
    let sizes = privacy::allocation::periods(a.steps, k);
    let shown: Vec<String> = sizes.iter().map(|s| s.to_string()).collect();
    println!(
        "sampling allocation: each agent in one round of each of {k} period(s) of {} rounds, chosen uniformly and hidden; adjacency add-remove",
        shown.join(", ")
    );
    println!(
        "allocation epsilon {}",
        if eps.is_finite() {
            privacy::show_upper(eps, 6)
        } else {
            "inf (no finite epsilon can be certified at this delta)".into()
        }
    );
    Ok(())
}

fn cmd_compare(a: CompareArgs) -> Result<()> {
    let CompareArgs {
        input,
        pool,
        units,
        csv,
        baseline,
        at,
        at_clock,
        metric,
        resamples,
        markdown,
        allow_init_differences,
        accountant,
    } = a;
    crate::compare::run(&crate::compare::CompareOptions {
        input,
        pool,
        units,
        csv,
        baseline,
        at,
        at_clock,
        metric: crate::compare::Metric::parse(&metric).expect("clap checked the value"),
        resamples: resamples as usize,
        markdown,
        allow_init_differences,
        accountant: accountant.parse().expect("clap checked the value"),
    })
}

fn cmd_plot(a: PlotArgs) -> Result<()> {
    let PlotArgs {
        kind,
        inputs,
        out,
        title,
        y,
        clock,
        accountant,
        log_y,
        algorithms,
        baseline,
    } = a;
    plot::run(&plot::PlotOptions {
        kind,
        inputs,
        out,
        title,
        quantity: y,
        clock,
        accountant,
        log_y,
        algorithms,
        baseline,
    })
}

fn cmd_bench(a: BenchArgs) -> Result<()> {
    let BenchArgs {
        features,
        grid,
        observations,
        repeats,
        configs,
        tables,
        landmine_points,
        landmine_data,
        iteration_cost,
        fit_quality,
        command_overhead,
        secure_round,
    } = a;
    if let Some(n) = command_overhead {
        return bench::command_overhead(n as usize);
    }
    if let Some(v) = secure_round {
        let (n, words, dropped, neighbours) = match v[..] {
            [n, w, d] => (n, w, d, None),
            [n, w, d, k] => (n, w, d, Some(k)),
            _ => {
                return Err(FboError::spec(
                    "fbo bench",
                    "--secure-round",
                    format!("takes three numbers N,W,D or four N,W,D,K, got {}", v.len()),
                ));
            }
        };
        return bench::secure_round(n, words, dropped, neighbours, repeats.max(5));
    }
    if features.contains(&0) || grid < 2 || observations < 2 || repeats < 1 {
        return Err(FboError::spec(
            "fbo bench",
            "",
            "--features must be >= 1, --grid >= 2, --observations >= 2, --repeats >= 1",
        ));
    }
    bench::run(&BenchOptions {
        features,
        grid,
        observations,
        repeats,
        configs,
        tables,
        landmine: landmine_points.zip(landmine_data),
        iteration_cost,
        fit_quality,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn every_command_and_argument_says_what_it_is() {
        let cli = Cli::command();
        for sub in cli.get_subcommands() {
            assert!(
                sub.get_about().is_some(),
                "`fbo {}` has no help",
                sub.get_name()
            );
            for arg in sub.get_arguments() {
                let id = arg.get_id().as_str();
                if id == "help" || id == "version" {
                    continue;
                }
                assert!(
                    arg.get_help()
                        .is_some_and(|h| !h.to_string().trim().is_empty()),
                    "`fbo {} --{id}` has an empty help text",
                    sub.get_name()
                );
            }
        }
    }

    #[test]
    fn bench_features_parse_as_their_help_shows() {
        let cli = Cli::try_parse_from(["fbo", "bench", "--features", "50,100,200"]).unwrap();
        let Command::Bench(BenchArgs { features, .. }) = cli.command else {
            panic!("not bench");
        };
        assert_eq!(features, vec![50, 100, 200]);
    }
}
