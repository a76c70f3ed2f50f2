//! The command line: `Cli` and `dispatch` here, with the helpers several commands share; each
//! command in a module of its own, its arguments beside its entry point `cmd_*` (run and
//! sweep, tabulate, import, ask and tell, evaluate and incumbents, best, history, validate,
//! privacy, compare, plot, bench).

pub mod asktell;
pub mod bench;
pub mod best;
pub mod compare;
pub mod evaluate;
pub mod history;
pub mod import;
pub mod plot;
pub mod privacy;
pub mod run;
pub mod tabulate;
pub mod validate;

use crate::error::Result;
use crate::spec::Spec;
use clap::{Parser, Subcommand};
use std::path::Path;

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

#[derive(Subcommand)]
pub enum Command {
    /// Run every algorithm of a spec over its seeds and write trace.csv and summary.csv.
    Run(run::RunArgs),
    /// Run a spec once per point of its [sweep] table and write sweep.csv; rerunning into
    /// the same folder skips finished points.
    Sweep(run::RunArgs),
    /// Build a hyperparameter-response table from a raw dataset (resumable).
    Tabulate(tabulate::TabulateArgs),
    /// Import response tables measured elsewhere as fbo tables. `fbo import privtuna FOLDER`
    /// turns every PrivTuna federation under FOLDER (any folder of its layout, from
    /// non-IID_res/ down to one individual/<level>/) into OUT/<dataset>-<skew>-<level>-<N>/
    /// (table.toml, table.csv.gz, fedavg.csv.gz); files that are not a client's grid are
    /// listed as skipped with the reason (docs/privtuna.md).
    Import(import::ImportArgs),
    /// Print the queries waiting for results of a spec whose evaluations are done by hand
    /// (objective.kind = "external"): every query the runs wait on that was not handed out
    /// before (an agent starting from initial points waits on all of them at once), with
    /// scope, run, agent and iteration, which together name it for `fbo tell`, and raw
    /// hyperparameter values. The state folder holds the journal of
    /// results; `fbo run SPEC --out STATE` writes the trace once every run is complete.
    Ask(asktell::AskArgs),
    /// Record results of queries handed out by `fbo ask`: one with --agent and --value, or
    /// many with --results FILE.csv (the columns `fbo ask` prints plus metric, and
    /// optionally cost_s).
    Tell(asktell::TellArgs),
    /// The objective of listed agents at given raw hyperparameter values: reads a CSV with a
    /// column `agent` and one per hyperparameter (e.g. C,gamma), writes it to stdout with a
    /// column `value` (the metric as the objective reports it) added.
    Evaluate(evaluate::EvaluateArgs),
    /// What each incumbent is worth under a reference objective: for every row of a trace,
    /// the best point observed so far by its (algorithm, run, agent) valued by SPEC's
    /// objective (e.g. the converged SVM where the run's objective stopped early or was noisy).
    /// Writes to stdout a trace that `fbo compare` reads: best_f and best_metric hold the
    /// incumbent's reference value, observed_best_metric the run's own.
    Incumbents(evaluate::IncumbentsArgs),
    /// The best configuration each algorithm's agents found, over all runs of a run's folder:
    /// raw hyperparameter values, the value observed there (in the objective's direction),
    /// the run and evaluation that found it, and the noiseless value where the objective
    /// knows it (not for a command). A table, or CSV with --csv.
    Best(best::BestArgs),
    /// Every evaluation a run's journals hold (command and external objectives), as CSV on
    /// stdout: scope, run, agent, iteration, the raw hyperparameters and the measured value.
    /// A later spec of the same program reads it as `initial_points_file` and starts from
    /// those measurements without running them again (warm start; docs/commands.md).
    History(history::HistoryArgs),
    /// Check a spec (or a tabulation config) and print what it would run; exit 2 if invalid.
    Validate(validate::ValidateArgs),
    /// Privacy loss (epsilon at delta) of `steps` rounds of the subsampled Gaussian mechanism.
    Privacy(privacy::PrivacyArgs),
    /// Paired comparison of a run's algorithms against a baseline (same seeds, objectives and
    /// initial points): mean difference, bootstrap 95% interval, Wilcoxon signed-rank p-value,
    /// win/tie/loss and Holm-adjusted p-values. Writes compare.csv beside the trace.
    Compare(compare::CompareArgs),
    /// Draw a figure (PNG or SVG, by the output's extension) from fbo's CSVs.
    Plot(plot::PlotArgs),
    /// Measure per-iteration cost and, optionally, whole specs' wall time.
    Bench(bench::BenchArgs),
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
        Command::Run(a) => run::cmd_run(a),
        Command::Sweep(a) => run::cmd_sweep(a),
        Command::Compare(a) => compare::cmd_compare(a),
        Command::Plot(a) => plot::cmd_plot(a),
        Command::Tabulate(a) => tabulate::cmd_tabulate(a),
        Command::Import(a) => import::cmd_import(a),
        Command::Ask(a) => asktell::cmd_ask(a),
        Command::Tell(a) => asktell::cmd_tell(a),
        Command::Evaluate(a) => evaluate::cmd_evaluate(a),
        Command::Incumbents(a) => evaluate::cmd_incumbents(a),
        Command::Best(a) => best::cmd_best(a),
        Command::History(a) => history::cmd_history(a),
        Command::Validate(a) => validate::cmd_validate(a),
        Command::Privacy(a) => privacy::cmd_privacy(a),
        Command::Bench(a) => bench::cmd_bench(a),
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
}
