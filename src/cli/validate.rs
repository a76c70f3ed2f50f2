//! `fbo validate`: a spec (or a tabulation config) checked, and what it would run.
use super::load;
use crate::cli::tabulate;
use crate::error::Result;
use crate::run::sweep;
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct ValidateArgs {
    /// The spec or tabulation config (TOML) to check.
    spec: PathBuf,
}

pub fn cmd_validate(a: ValidateArgs) -> Result<()> {
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
