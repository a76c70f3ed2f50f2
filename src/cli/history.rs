//! `fbo history`: the evaluations an output folder's journals hold, as a CSV that
//! `initial_points_file` reads. A later study of the same program starts from them (warm
//! start): each row carries its measured `value`, which is told, not run again.

use crate::error::{FboError, Result};
use crate::objective::journal::{Journal, Outcome};
use crate::run::runner::journal_names;
use clap::Args;
use std::path::{Path, PathBuf};

/// Which evaluations to write: those of the scopes named (all when empty) and of one run.
#[derive(Clone, Debug, Default)]
pub struct Select {
    pub scopes: Vec<String>,
    pub run: Option<usize>,
}

/// The journals `input` names: a journal file itself, or every journal of an output folder
/// (the unsharded one and each shard's).
fn journals(input: &Path) -> Result<Vec<PathBuf>> {
    if !input.exists() {
        return Err(FboError::spec(
            input,
            "",
            "does not exist: give a run's output folder or its evaluations.jsonl",
        ));
    }
    if !input.is_dir() {
        return Ok(vec![input.to_path_buf()]);
    }
    let found: Vec<PathBuf> = journal_names(input)
        .into_iter()
        .map(|n| input.join(n))
        .filter(|p| p.exists())
        .collect();
    if found.is_empty() {
        return Err(FboError::spec(
            input,
            "",
            "holds no evaluations journal (evaluations.jsonl): only runs of a command or external objective keep one",
        ));
    }
    Ok(found)
}

/// The CSV: `scope`, `run`, `agent`, `iteration`, one column per hyperparameter (raw values,
/// a categorical one by its choice's name), `value` (the metric as the program printed it;
/// empty for an evaluation that failed, which a warm start runs again).
pub fn history(input: &Path, select: &Select) -> Result<String> {
    let paths = journals(input)?;
    let origin = Journal::origin_of(&paths[0]).ok_or_else(|| {
        FboError::spec(
            &paths[0],
            "",
            "is not an fbo evaluations journal (its first line does not name the objective)",
        )
    })?;
    let codec = origin.codec();
    let journal = Journal::in_memory(codec.clone());
    for p in &paths {
        // Refused, named, if a shard's journal belongs to another objective.
        journal.read_also(p, &origin)?;
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec!["scope", "run", "agent", "iteration"];
    header.extend(codec.names.iter().map(String::as_str));
    header.push("value");
    let bad = |e: csv::Error| FboError::Run(format!("writing the history: {e}"));
    w.write_record(&header).map_err(bad)?;
    let mut written = 0;
    for (req, raw, outcome) in journal.finished() {
        if !select.scopes.is_empty() && !select.scopes.contains(&req.scope) {
            continue;
        }
        if select.run.is_some_and(|r| r != req.run) {
            continue;
        }
        let mut row = vec![
            req.scope,
            req.run.to_string(),
            req.agent.to_string(),
            req.iteration.to_string(),
        ];
        row.extend(codec.show_all(&raw));
        row.push(match outcome {
            Outcome::Done(metric, _) => metric.to_string(),
            Outcome::Failed(_) => String::new(),
        });
        w.write_record(&row).map_err(bad)?;
        written += 1;
    }
    if written == 0 && !(select.scopes.is_empty() && select.run.is_none()) {
        return Err(FboError::spec(
            input,
            "",
            format!(
                "holds no finished evaluation of scope {:?}{} (scopes there: {})",
                select.scopes,
                select.run.map(|r| format!(", run {r}")).unwrap_or_default(),
                scopes(&journal).join(", ")
            ),
        ));
    }
    let bytes = w.into_inner().map_err(|e| FboError::Run(e.to_string()))?;
    Ok(String::from_utf8(bytes).expect("CSV of UTF-8 fields"))
}

/// The scopes a journal's finished evaluations belong to, for a message.
fn scopes(journal: &Journal) -> Vec<String> {
    let mut s: Vec<String> = journal.finished().into_iter().map(|f| f.0.scope).collect();
    s.dedup();
    s
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

pub fn cmd_history(a: HistoryArgs) -> Result<()> {
    let HistoryArgs { input, scope, run } = a;
    let select = crate::cli::history::Select { scopes: scope, run };
    print!("{}", crate::cli::history::history(&input, &select)?);
    Ok(())
}
