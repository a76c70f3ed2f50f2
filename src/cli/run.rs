//! `fbo run` and `fbo sweep`: a spec's runs, or its runs once per point of its [sweep]
//! table, through the executor (`crate::run`).
use super::best::best_of_run;
use super::{load, say_finished, work_of};
use crate::error::Result;
use crate::run::runner::{RunOptions, run_spec};
use crate::run::sweep;
use crate::spec::Spec;
use clap::Args;
use std::path::{Path, PathBuf};

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

pub fn cmd_run(a: RunArgs) -> Result<()> {
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

pub fn cmd_sweep(a: RunArgs) -> Result<()> {
    let (spec, quiet) = (a.spec, a.quiet);
    let base = Spec::load(&spec)?;
    let out = a
        .out
        .unwrap_or_else(|| Path::new("results").join(&base.name));
    if a.status {
        return sweep::status(&spec, &out, a.shard);
    }
    let work = work_of(a.shard, a.merge);
    sweep::run(
        &spec,
        &sweep::SweepOptions {
            out: out.clone(),
            threads: a.threads.map(|t| t as usize),
            quiet,
            runs: a.runs.map(|r| r as usize),
            no_timing: a.no_timing,
            overwrite: a.overwrite,
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
