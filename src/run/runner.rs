//! The executor: runs every (algorithm, run) pair of a spec in parallel, each on its own
//! random streams, writes each finished run to its own part file, and merges the parts into
//! the result files in a fixed order, so the output is the same whatever the thread count.
//!
//! Part files make runs resumable: an interrupted `fbo run` keeps the runs it finished, and
//! rerunning the same spec into the same folder skips them.

use crate::algorithm::agent::SenderCache;
use crate::error::{FboError, Result};
use crate::objective::Landscape;
use crate::objective::journal::{JOURNAL, Journal};
use crate::privacy::{self, Accountant, Mechanism};
use crate::run::outdir::{Claim, Identity, OutDir, PARTS_FINGERPRINT};
use crate::run::output;
pub use crate::run::unit::{RunOutput, run_one, run_one_shared};
use crate::spec::Spec;
use indicatif::ProgressBar;
use rayon::prelude::*;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

#[derive(Clone, Debug)]
pub struct RunOptions {
    pub out: PathBuf,
    pub threads: Option<usize>,
    /// No progress bar or resume messages.
    pub quiet: bool,
    /// Part of a sweep or of another command that says itself what the spec will do: no
    /// notes about the spec (a privacy budget's early stop, a long run). A user's own run
    /// prints them even with --quiet: they are no progress.
    pub nested: bool,
    /// A bar to report runs on (a sweep's); None: run_spec draws its own.
    pub progress: Option<ProgressBar>,
    /// Replace another experiment's results in `out` (only the files fbo wrote).
    pub overwrite: bool,
    /// All the work, one shard of it, or only the merge of finished shards.
    pub work: Work,
    /// Per algorithm: where its runs come from when a configuration equal in everything
    /// that reaches it (a sweep's earlier point, when the swept keys do not) has them. None
    /// or empty: computed here.
    pub reuse: Vec<Option<Reuse>>,
}

/// Where an algorithm's units come from when they are not computed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reuse {
    /// Copied from this finished output folder, whose trace.csv and server.csv hold the
    /// algorithm's results under its label.
    From(PathBuf),
    /// Left to the merge, which copies them from the earlier point once that point is merged:
    /// a shard of a sweep skips them (the shard that owns the earlier point computes them).
    AtMerge,
}

/// Whether algorithm `a`'s units are left to a sweep's merge (`Reuse::AtMerge`).
fn at_merge(reuse: &[Option<Reuse>], a: usize) -> bool {
    matches!(reuse.get(a), Some(Some(Reuse::AtMerge)))
}

/// Which part of a spec's work one invocation does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    /// Every unfinished run, then the merge.
    All,
    /// The unfinished runs of the `index`-th of `count` contiguous blocks of the runs in
    /// (run, algorithm) order, written as parts and not merged; shards share the output
    /// folder.
    Shard { index: usize, count: usize },
    /// Only the merge, refused while any run is missing.
    Merge,
    /// Like a shard, the units lo..hi in (run, algorithm) order (a sweep's shard of this
    /// point).
    Units { lo: usize, hi: usize },
}

/// Shard `i` of `n` of `total` units: the `i`-th of `n` contiguous blocks.
pub fn block(i: usize, n: usize, total: usize) -> (usize, usize) {
    (i * total / n, (i + 1) * total / n)
}

impl Work {
    /// "I/N" with 0 <= I < N.
    pub fn parse_shard(s: &str) -> std::result::Result<Work, String> {
        let bad = || format!("expected I/N with 0 <= I < N (say 0/4), got {s:?}");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (usize, usize) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if count == 0 || index >= count || count > 1_000_000 {
            return Err(bad());
        }
        Ok(Work::Shard { index, count })
    }
}

#[derive(Debug)]
pub struct RunReport {
    pub runs_total: usize,
    pub runs_resumed: usize,
    pub wall_s: f64,
    /// A command objective's evaluations: made by this invocation, their mean seconds, and
    /// how many the journals held before.
    pub evaluations: Option<(usize, Option<f64>, usize)>,
}

/// The journal a shard computing units `lo..hi` appends to: its own file, so that shards
/// running at once never write one file (each reads the others' when it starts; their runs
/// are disjoint, and no evaluation is shared between runs).
pub fn shard_journal((lo, hi): (usize, usize)) -> String {
    format!("evaluations.units-{lo}-{hi}.jsonl")
}

/// The journals in an output folder: the unsharded one and every shard's.
fn journal_files(dir: &OutDir) -> Vec<String> {
    journal_names(&dir.path("."))
}

/// The names of the journals an output folder `folder` may hold: the unsharded one first,
/// then every shard's that is there, sorted.
pub fn journal_names(folder: &Path) -> Vec<String> {
    let mut names = vec![JOURNAL.to_string()];
    if let Ok(list) = fs::read_dir(folder) {
        let mut shards: Vec<String> = list
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with("evaluations.units-") && n.ends_with(".jsonl"))
            .collect();
        shards.sort();
        names.extend(shards);
    }
    names
}

/// "journal" or "journals", as the folder has one or more (shards keep their own).
fn journals(dir: &OutDir) -> &'static str {
    if journal_files(dir).len() > 1 {
        "journals"
    } else {
        "journal"
    }
}

/// The output folder's evaluations journal for `spec`'s objective: the one this process
/// appends to (a shard's own, or the folder's), having replayed every other journal there.
/// With `overwrite`, a journal fbo did not write there, or one of another objective, is set
/// aside (renamed, never deleted) and a new one begun; without, the latter is refused.
fn open_journal(
    spec: &Spec,
    dir: &OutDir,
    overwrite: bool,
    quiet: bool,
    shard: Option<(usize, usize)>,
) -> Result<Arc<Journal>> {
    let origin = spec.journal_origin().expect("a measured objective");
    let files = journal_files(dir);
    for name in &files {
        let path = dir.path(name);
        if overwrite
            && path.exists()
            && (!dir.owns(name) || Journal::origin_of(&path).is_some_and(|o| o != origin))
        {
            let aside = (1..)
                .map(|n| dir.path(&format!("{name}.set-aside-{n}")))
                .find(|p| !p.exists())
                .expect("a free name");
            fs::rename(&path, &aside).map_err(|e| FboError::io(&path, e))?;
            if !quiet {
                eprintln!(
                    "--overwrite: the journal that was there is kept as {}; evaluations start anew",
                    aside.display()
                );
            }
        }
    }
    let own = shard.map_or_else(|| JOURNAL.to_string(), shard_journal);
    let journal = Journal::open(&dir.append_file(&own)?, &origin)?;
    for name in files.iter().filter(|n| **n != own) {
        let path = dir.path(name);
        if path.exists() {
            journal.read_also(&path, &origin)?;
            // Evaluations are kept as long as the folder: a merge does not prune them.
            if dir.owns(name) {
                dir.keep(name);
            }
        }
    }
    Ok(Arc::new(journal))
}

/// Which experiment a run's output folder belongs to (its manifest's identity).
pub fn run_identity(spec: &Spec) -> Identity {
    let canonical = crate::spec::portable::canonical(&spec.source, &spec.path);
    Identity::new("run", &spec.path, &canonical)
}

/// A unit's claim file in parts/, locked while a shard computes the unit.
fn claim_name(alg_index: usize, run: usize) -> String {
    format!("parts/a{alg_index:03}-r{run:05}.claim")
}

/// Which runs of `spec` are done, running (a shard holds their claim) or missing in `out`,
/// by label, and whether the folder is already merged. Reads only.
pub struct Status {
    pub done: Vec<String>,
    pub running: Vec<String>,
    pub missing: Vec<String>,
    /// Not computed here: the merge copies them from a sweep's earlier point.
    pub at_merge: Vec<String>,
    pub merged: bool,
}

pub fn status(spec: &Spec, out: &std::path::Path) -> Status {
    status_of(spec, out, (0, usize::MAX), &[])
}

/// `status` of the units lo..hi (in (run, algorithm) order) only; an unfinished unit of an
/// algorithm whose `reuse` is set is counted as left to the merge, not missing.
pub fn status_of(
    spec: &Spec,
    out: &std::path::Path,
    (lo, hi): (usize, usize),
    reuse: &[Option<Reuse>],
) -> Status {
    let canonical = crate::spec::portable::canonical(&spec.source, &spec.path);
    // Parts count for this spec whichever timing option made them.
    let mut other = spec.clone();
    other.output.timing = !other.output.timing;
    let prints = [
        parts_fingerprint(spec, &canonical),
        parts_fingerprint(&other, &canonical),
    ];
    let current =
        fs::read_to_string(out.join(PARTS_FINGERPRINT)).is_ok_and(|f| prints.contains(&f));
    // Merged results count only if they were merged for this very spec text: an edited spec
    // in the same file has its runs still to do.
    let merged = out.join("trace.csv").exists()
        && !out.join("parts").exists()
        && crate::run::outdir::written_for(out, &run_identity(spec));
    let mut st = Status {
        done: Vec::new(),
        running: Vec::new(),
        missing: Vec::new(),
        at_merge: Vec::new(),
        merged,
    };
    for a in 0..spec.algorithms.len() {
        for r in 0..spec.runs {
            if !(lo..hi).contains(&(r * spec.algorithms.len() + a)) {
                continue;
            }
            let label = format!("{} run {r}", spec.algorithms[a].label);
            let part = (current && !merged && out.join(part_name(a, r)).exists())
                .then(|| check_part(spec, out, a, r, None));
            if merged || matches!(part, Some(Ok(()))) {
                st.done.push(label);
            } else if matches!(reuse.get(a), Some(Some(_))) {
                st.at_merge.push(label);
            } else if crate::run::outdir::is_locked(&out.join(claim_name(a, r))) {
                st.running.push(label);
            } else if let Some(Err(why)) = part {
                st.missing.push(format!(
                    "{label} (its part {why}: the next run or shard moves it aside and redoes it)"
                ));
            } else {
                st.missing.push(label);
            }
        }
    }
    st
}

/// `fbo run SPEC --status`: the counts, then every running and missing run.
/// Prints `status_report`.
pub fn run_status(
    spec: &Spec,
    out: &std::path::Path,
    shard: Option<Work>,
    detail: &dyn Fn(usize, usize) -> Option<String>,
) -> Result<()> {
    let text = status_report(spec, out, shard, detail)?;
    // Written, not printed: `--status | head` ends quietly (SIGPIPE stays ignored in fbo, as
    // its commands' pipes need).
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    Ok(())
}

/// What `fbo run --status` says: units done, running and missing, then for each unit
/// `detail(algorithm, run)` gives a line on (a federation's rounds, from the command layer).
pub fn status_report(
    spec: &Spec,
    out: &std::path::Path,
    shard: Option<Work>,
    detail: &dyn Fn(usize, usize) -> Option<String>,
) -> Result<String> {
    crate::run::outdir::check_owner(out, &run_identity(spec))?;
    if shard.is_some() {
        refuse_measured_shards(spec)?;
    }
    let units = spec.runs * spec.algorithms.len();
    let st = match shard {
        Some(Work::Shard { index, count }) => {
            status_of(spec, out, whole_runs(spec, block(index, count, units)), &[])
        }
        _ => status(spec, out),
    };
    let mut w = format!(
        "{}: {} done, {} running, {} missing{}\n",
        out.display(),
        st.done.len(),
        st.running.len(),
        st.missing.len(),
        if st.merged {
            " (merged)"
        } else if st.missing.is_empty() && st.running.is_empty() {
            " (ready to merge: fbo run SPEC --merge)"
        } else {
            ""
        }
    );
    for (what, list) in [("running", &st.running), ("missing", &st.missing)] {
        for l in list {
            w += &format!("{what}: {l}\n");
        }
    }
    if !st.merged {
        for a in 0..spec.algorithms.len() {
            for r in 0..spec.runs {
                if let Some(line) = detail(a, r) {
                    w += &format!("federation: {} run {r}: {line}\n", spec.algorithms[a].label);
                }
            }
        }
    }
    Ok(w)
}

fn part_name(alg_index: usize, run: usize) -> String {
    format!("parts/a{alg_index:03}-r{run:05}.csv")
}

/// Shards of an external objective are refused: its evaluations are asked and told by hand
/// through one state folder. By the shard itself and by `--status --shard`, which a
/// scheduler script asks first.
pub fn refuse_measured_shards(spec: &Spec) -> Result<()> {
    if let crate::spec::ObjectiveKind::Command(c) = &spec.objective.kind
        && c.argv.is_none()
    {
        return Err(FboError::spec(
            &spec.path,
            "objective.kind",
            "runs of an external objective cannot be sharded: `fbo ask` and `fbo tell` keep its evaluations in one state folder",
        ));
    }
    Ok(())
}

/// The units `lo..hi` (in (run, algorithm) order) a block of a shard may hold: any, or for
/// a command objective whole runs only, since a run's algorithms share evaluations (its
/// initial points, the senders' observations) that one process must make. Both ends move up
/// to the next run boundary, so consecutive blocks still tile the units.
pub fn whole_runs(spec: &Spec, (lo, hi): (usize, usize)) -> (usize, usize) {
    if !matches!(spec.objective.kind, crate::spec::ObjectiveKind::Command(_)) {
        return (lo, hi);
    }
    let a = spec.algorithms.len();
    (lo.div_ceil(a) * a, hi.div_ceil(a) * a)
}

/// Whether a run's part may hold fewer rows (or server rounds) than all of them: a
/// wall-clock budget (`clock.horizon_s`) stops agents early, and an asynchronous server
/// releases on its own period.
fn may_stop_early(spec: &Spec, a: usize) -> bool {
    spec.horizon_s().is_some() || spec.algorithms[a].has_asynchronous_server()
}

/// Whether `rows` trace rows are what one run of algorithm `a` writes: all of them, or with
/// a wall-clock budget any count from the initial points' up.
fn rows_fit(spec: &Spec, a: usize, rows: usize) -> bool {
    let all = rows_per_run(spec, a);
    match spec.horizon_s().is_some() {
        true => {
            rows <= all
                && rows >= all / (spec.initial_points + spec.evaluations()) * spec.initial_points
        }
        false => rows == all,
    }
}

/// How many trace rows (agents x queries) one run of algorithm `a` writes.
fn rows_per_run(spec: &Spec, a: usize) -> usize {
    // Where every agent acts, every agent is traced.
    let agents = match spec.algorithms[a].kind.every_agent_acts() {
        true => spec.total_agents(),
        false => spec.targets().len(),
    };
    agents * (spec.initial_points + spec.evaluations())
}

/// Whether the parts of run `r` of algorithm `a` are whole: the trace part has the trace's
/// header (`header`, where known), the row count a run writes and only rows of this unit;
/// the server part only rows of this unit, one per round where the algorithm has a server.
/// The reason otherwise.
fn check_part(
    spec: &Spec,
    out: &std::path::Path,
    a: usize,
    r: usize,
    header: Option<&str>,
) -> std::result::Result<(), String> {
    let label = &spec.algorithms[a].label;
    let trace = out.join(part_name(a, r));
    let text = fs::read(&trace).map_err(|e| format!("cannot be read ({e})"))?;
    let Some(end) = text.iter().position(|&b| b == b'\n') else {
        return Err(if text.is_empty() {
            "is empty".into()
        } else {
            "has no complete line".into()
        });
    };
    let head = String::from_utf8_lossy(&text[..end]);
    match header {
        Some(h) if head != h => return Err("does not begin with the trace's header".into()),
        None if !head.starts_with("algorithm,run,agent,iteration,") => {
            return Err("does not begin with a trace header".into());
        }
        _ => {}
    }
    if text.last() != Some(&b'\n') {
        return Err("ends in the middle of a line".into());
    }
    let columns = head.split(',').count();
    let rows = unit_rows_checked(&text, true, label, r, Some(columns))?;
    let want = rows_per_run(spec, a);
    if !rows_fit(spec, a, rows) {
        return Err(format!("has {rows} rows where a run writes {want}"));
    }
    let server = out.join(server_part_name(a, r));
    let text = fs::read_to_string(&server)
        .map_err(|e| format!("its server part {} cannot be read ({e})", server.display()))?;
    let prefix = format!("{label},{r},");
    let lines = text.lines().count();
    // One row per round the server released: every iteration, or fewer where a privacy
    // budget (server.max_epsilon) stopped it.
    let want = spec.algorithms[a].server.as_ref().map_or(0, |s| {
        s.dp.map_or(spec.iterations, |d| {
            d.released(spec.iterations as u64) as usize
        })
    });
    let early = may_stop_early(spec, a);
    let count_ok = if early { lines <= want } else { lines == want };
    if !text.is_empty() && !text.ends_with('\n')
        || text.lines().any(|l| !l.starts_with(&prefix))
        || !count_ok
    {
        return Err(format!(
            "its server part {} is not {}{want} rounds of {label} run {r}",
            server.display(),
            if early { "at most " } else { "" },
        ));
    }
    for side in Side::wanted(spec) {
        check_side_part(side, &out.join(side.part_name(a, r)), label, r)?;
    }
    Ok(())
}

/// Whether a side part holds only complete rows of `label` run `r`, all of one width. (How
/// many depends on how many queries a model chose or rounds were secure, so it is not
/// counted.)
fn check_side_part(
    side: Side,
    path: &std::path::Path,
    label: &str,
    r: usize,
) -> std::result::Result<(), String> {
    let bad = |why: String| format!("its {} part {} {why}", side.what(), path.display());
    let text = fs::read(path).map_err(|e| bad(format!("cannot be read ({e})")))?;
    if !text.is_empty() && text.last() != Some(&b'\n') {
        return Err(bad("ends in the middle of a line".into()));
    }
    unit_rows_checked(&text, false, label, r, None).map_err(bad)?;
    Ok(())
}

/// The number of CSV records in `text` (after its header line, if it has one), each a row of
/// `label` run `r` with `columns` fields (None: as many as the first); the first that is not,
/// named by its line.
fn unit_rows_checked(
    text: &[u8],
    has_header: bool,
    label: &str,
    r: usize,
    columns: Option<usize>,
) -> std::result::Result<usize, String> {
    let mut rd = csv::ReaderBuilder::new()
        .has_headers(has_header)
        .flexible(true)
        .from_reader(text);
    let (first_line, run) = (1 + usize::from(has_header), r.to_string());
    let mut width = columns;
    let mut rows = 0;
    for (i, rec) in rd.records().enumerate() {
        let rec = rec.map_err(|e| format!("line {}: {e}", i + first_line))?;
        let columns = *width.get_or_insert(rec.len());
        if rec.len() != columns || rec.get(0) != Some(label) || rec.get(1) != Some(run.as_str()) {
            return Err(format!(
                "line {}: not a row of {label} run {r} with {columns} columns",
                i + first_line
            ));
        }
        rows += 1;
    }
    Ok(rows)
}

/// Where damaged parts are moved, out of parts/ (kept for a look, never merged).
const DAMAGED: &str = "damaged-parts";

/// Moves the parts of a unit aside into DAMAGED (renamed, not deleted); the new names.
fn set_aside(dir: &OutDir, a: usize, r: usize) -> Result<Vec<PathBuf>> {
    let folder = dir.path(DAMAGED);
    fs::create_dir_all(&folder).map_err(|e| FboError::io(&folder, e))?;
    let mut moved = Vec::new();
    let sides = Side::ALL.iter().map(|s| s.part_name(a, r));
    for rel in [part_name(a, r), server_part_name(a, r)]
        .into_iter()
        .chain(sides)
    {
        let from = dir.path(&rel);
        if !from.exists() {
            continue;
        }
        let base = rel.trim_start_matches("parts/");
        let to = (0..)
            .map(|n| {
                folder.join(if n == 0 {
                    base.to_string()
                } else {
                    format!("{base}.{n}")
                })
            })
            .find(|p| !p.exists())
            .expect("a free name");
        fs::rename(&from, &to).map_err(|e| FboError::io(&from, e))?;
        moved.push(to);
    }
    Ok(moved)
}

/// The server's rounds of a run; written before the trace part, whose presence marks the run
/// complete.
fn server_part_name(alg_index: usize, run: usize) -> String {
    format!("parts/a{alg_index:03}-r{run:05}.server")
}

/// An output of a run that the spec may ask for beside the trace and the server's rounds:
/// written, like the server part, before the trace part, and merged into its own CSV.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    /// The models' beliefs (`output.beliefs`): beliefs.csv.
    Beliefs,
    /// What the server saw under secure aggregation (`output.server_view`): server_view.csv.
    ServerView,
}

impl Side {
    const ALL: [Side; 2] = [Side::Beliefs, Side::ServerView];

    /// The side outputs `spec` asks for, in a fixed order.
    pub(crate) fn wanted(spec: &Spec) -> Vec<Side> {
        Self::ALL
            .into_iter()
            .filter(|s| match s {
                Side::Beliefs => spec.output.beliefs,
                Side::ServerView => spec.output.server_view,
            })
            .collect()
    }

    fn what(self) -> &'static str {
        match self {
            Side::Beliefs => "beliefs",
            Side::ServerView => "server view",
        }
    }

    fn part_name(self, alg_index: usize, run: usize) -> String {
        let ext = match self {
            Side::Beliefs => "beliefs",
            Side::ServerView => "view",
        };
        format!("parts/a{alg_index:03}-r{run:05}.{ext}")
    }

    pub(crate) fn file(self) -> &'static str {
        match self {
            Side::Beliefs => "beliefs.csv",
            Side::ServerView => "server_view.csv",
        }
    }

    fn header(self, dim: usize) -> String {
        match self {
            Side::Beliefs => output::beliefs_header(dim),
            Side::ServerView => output::SERVER_VIEW_HEADER.to_string(),
        }
    }

    /// This side's rows (no header) of one finished run.
    fn body(self, label: &str, run: usize, out: &RunOutput, dim: usize) -> Result<Vec<u8>> {
        match self {
            Side::Beliefs => output::beliefs_csv_body(label, run, &out.beliefs, dim),
            Side::ServerView => Ok(output::server_view_csv_body(label, run, &out.server)),
        }
    }
}

/// The parts a unit writes before its trace part: the server's rounds, and the side outputs
/// the spec asks for.
fn side_part_names(spec: &Spec, a: usize, r: usize) -> Vec<String> {
    let mut names = vec![server_part_name(a, r)];
    names.extend(Side::wanted(spec).iter().map(|s| s.part_name(a, r)));
    names
}

/// What makes part files reusable: the spec text, the options that change results, and the
/// trace format (parts written by an fbo with other columns must not be merged).
/// What parts/ were made with (spec, runs, timing, format): parts made otherwise are not resumed.
pub(crate) fn parts_fingerprint(spec: &Spec, canonical: &str) -> String {
    format!(
        "{}\n# runs = {}\n# timing = {}\n# fbo {} trace {}\n",
        canonical,
        spec.runs,
        spec.output.timing,
        env!("CARGO_PKG_VERSION"),
        crate::run::output::trace_header(0, &[]).join(",")
    )
}

/// Runs `work` on a pool of `threads` workers, or on rayon's global pool (one per core).
pub fn with_threads<T: Send>(threads: Option<usize>, work: impl FnOnce() -> T + Send) -> Result<T> {
    match threads {
        Some(n) => Ok(rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .map_err(|e| FboError::Run(format!("cannot start {n} threads: {e}")))?
            .install(work)),
        None => Ok(work()),
    }
}

pub fn progress_bar(total: u64, quiet: bool) -> ProgressBar {
    crate::run::progress::bar(total, quiet, "units")
}

/// Every check a spec's run can fail before it starts, in the order that keeps it safe:
/// the memory estimate first (building the objective may be what cannot fit), then the
/// objective, then what the algorithms refuse on it. `run_spec`, `fbo validate` and the
/// benchmarks share it.
pub fn prepare(
    spec: &Spec,
    threads: usize,
) -> Result<(crate::run::budget::Estimate, Vec<Arc<Landscape>>)> {
    let estimate = crate::run::budget::check(spec, threads)?;
    let landscapes = spec.landscapes()?;
    crate::algorithm::check(spec, &landscapes[0].space)?;
    crate::run::pace::check(spec, &landscapes)?;
    Ok((estimate, landscapes))
}

pub fn run_spec(spec: &Spec, opts: &RunOptions) -> Result<RunReport> {
    let started = Instant::now();
    // Everything that can refuse the input comes before the folder is touched.
    let landscapes = checked_landscapes(spec, opts)?;
    let jobs: Vec<(usize, usize)> = (0..spec.algorithms.len())
        .flat_map(|a| (0..spec.runs).map(move |r| (a, r)))
        .collect();
    let measured = landscapes[0].is_measured();
    // The units (in (run, algorithm) order, so a shard holds whole seeds where it can and
    // a seed's algorithms share the senders' simulations) this invocation computes.
    let shard = shard_of(spec, opts)?;
    let out = &opts.out;
    let (dir, print) = claim_output(spec, opts, &jobs, measured, shard)?;
    // Every evaluation lands in the journal before the algorithm sees it; a rerun replays
    // them. It is opened (and a journal of another objective refused) before parts/ is
    // touched.
    let journal = if measured {
        Some(open_journal(spec, &dir, opts.overwrite, opts.quiet, shard)?)
    } else {
        None
    };
    let (parts, reusable) = dir.parts(&print)?;
    dir.write(
        "spec.toml",
        crate::spec::portable::portable(&spec.source, &spec.path, out).as_bytes(),
    )?;

    if let Some(journal) = &journal {
        replay_from(journal, &landscapes, &dir, opts);
    }
    let dim = landscapes[0].dim();
    let names = landscapes[0].space.names();
    let header = output::trace_header(dim, &names).join(",");
    let (todo, mine) = units_to_compute(spec, opts, &dir, &jobs, shard, reusable, &header, &parts)?;
    let resumed = mine - todo.len();
    // A shard works on a unit only while it holds the unit's claim, so two shards (or a
    // shard and its rerun) never compute one unit at once; the lock dies with its process.
    let (todo, claims) = match shard {
        None => (todo, Vec::new()),
        Some(_) => dir.claim_units(todo, |&(a, r)| claim_name(a, r))?,
    };
    if resumed > 0 && !opts.quiet {
        eprintln!(
            "resuming: {resumed} of {mine} units (seed, algorithm) already complete in {}",
            parts.display()
        );
    }
    // A command objective's progress is its evaluations, except in a merge, which makes none.
    let by_evaluations = journal.is_some() && opts.work != Work::Merge;
    let pb = units_bar(opts, mine, resumed, by_evaluations);
    // A sweep reports for its points itself. A command objective's progress is counted in
    // evaluations, what its user waits for (a run of them can take hours), and an
    // interrupt says how many are kept.
    let _runs_watch = (opts.progress.is_none() && !by_evaluations).then(|| {
        (
            crate::run::progress::Ticker::start(&pb, opts.quiet, "units"),
            crate::run::progress::InterruptNote::set(&pb, "units", parts.clone()),
        )
    });
    let _evaluations_watch = match (&journal, opts.progress.is_none() && by_evaluations) {
        (Some(j), true) => Some(watch_evaluations(spec, j, &jobs, shard, opts)?),
        _ => None,
    };

    let work = || compute(spec, &todo, &landscapes, &dir, &pb, &opts.reuse);
    let results = with_threads(opts.threads, work)?;
    drop(claims);
    if opts.progress.is_none() {
        pb.finish_and_clear();
    }

    let failures = unit_failures(spec, results)?;
    let report = RunReport {
        runs_total: jobs.len(),
        runs_resumed: resumed,
        wall_s: started.elapsed().as_secs_f64(),
        evaluations: journal.as_deref().map(evaluations_made),
    };
    if shard.is_some() {
        if !failures.is_empty() {
            return Err(FboError::Run(format!(
                "{} units (seed, algorithm) of this shard failed (rerun the shard to retry them):\n  {}",
                failures.len(),
                failures.join("\n  ")
            )));
        }
        return Ok(report);
    }
    merge_run(spec, opts, &dir, &jobs, (dim, &names), &failures, &parts)?;
    if let Some(j) = &journal {
        warn_skipped_failures(j, &dir, out);
    }
    Ok(RunReport {
        wall_s: started.elapsed().as_secs_f64(),
        evaluations: journal.as_deref().map(evaluations_made),
        ..report
    })
}

/// Skipped failures finish a run quietly otherwise: say so even with --quiet, as a run of
/// nothing but failures would be all NaN.
fn warn_skipped_failures(j: &Journal, dir: &OutDir, out: &Path) {
    if j.failures() > 0 {
        eprintln!(
            "warning: {} of {} evaluations failed and were skipped (objective.on_failure = \"skip\"): their rows in {} have source = failed, and each error is kept in the evaluations {} in {}",
            j.failures(),
            j.len(),
            out.join("trace.csv").display(),
            journals(dir),
            out.display()
        );
    }
}

/// The units of `jobs` this invocation computes (not complete in `dir`, not left to a
/// sweep's merge; damaged parts reported), and how many units are this invocation's in all
/// (its shard's). A merge that would have to compute one refuses.
#[allow(clippy::too_many_arguments)]
fn units_to_compute(
    spec: &Spec,
    opts: &RunOptions,
    dir: &OutDir,
    jobs: &[Unit],
    shard: Option<(usize, usize)>,
    reusable: bool,
    header: &str,
    parts: &Path,
) -> Result<(Vec<Unit>, usize)> {
    let (mut todo, damaged) = pending(spec, dir, opts, jobs, shard, reusable, header)?;
    // A sweep's shard leaves the units another point's shard computes to the merge.
    todo.retain(|&(a, _)| !at_merge(&opts.reuse, a));
    if opts.work != Work::Merge {
        for note in &damaged {
            eprintln!("damaged part: {note}");
        }
    }
    let mine = match shard {
        Some(b) => jobs
            .iter()
            .filter(|&&(a, r)| in_shard(spec, a, r, b) && !at_merge(&opts.reuse, a))
            .count(),
        None => jobs.len(),
    };
    // A merge computes nothing; it only copies the units a sweep's earlier point holds.
    let missing: Vec<Unit> = todo
        .iter()
        .copied()
        .filter(|&(a, _)| !matches!(opts.reuse.get(a), Some(Some(Reuse::From(_)))))
        .collect();
    if opts.work == Work::Merge && !missing.is_empty() {
        return Err(merge_refusal(spec, &missing, jobs.len(), parts, &damaged));
    }
    Ok((todo, mine))
}

/// The bar counting a run's units (`mine` in all, `resumed` done): the caller's (a sweep's),
/// hidden where a command objective's evaluations are counted instead, or a new one.
fn units_bar(opts: &RunOptions, mine: usize, resumed: usize, by_evaluations: bool) -> ProgressBar {
    let pb = match &opts.progress {
        Some(bar) => {
            bar.set_length(mine as u64);
            bar.clone()
        }
        None if by_evaluations => ProgressBar::hidden(),
        None => progress_bar(mine as u64, opts.quiet),
    };
    pb.set_position(resumed as u64);
    pb
}

/// The units that failed, named by label and run; Err(Interrupted) when the run was stopped
/// on request (the finished units' parts stay for the rerun; nothing is merged).
fn unit_failures(spec: &Spec, results: Vec<(usize, usize, Result<()>)>) -> Result<Vec<String>> {
    if results
        .iter()
        .any(|(_, _, res)| matches!(res, Err(FboError::Interrupted)))
    {
        return Err(FboError::Interrupted);
    }
    Ok(results
        .into_iter()
        .filter_map(|(a, r, res)| {
            res.err()
                .map(|e| format!("{} run {r}: {e}", spec.algorithms[a].label))
        })
        .collect())
}

/// The run's CSVs from its parts, then the parts removed; an error that says what is saved
/// where when the merge fails or some units failed (their parts stay for a rerun).
fn merge_run(
    spec: &Spec,
    opts: &RunOptions,
    dir: &OutDir,
    jobs: &[Unit],
    (dim, names): (usize, &[String]),
    failures: &[String],
    parts: &Path,
) -> Result<()> {
    let out = &opts.out;
    let saved = jobs
        .iter()
        .filter(|&&(a, r)| dir.path(&part_name(a, r)).exists())
        .count();
    // The privacy curves are computed in parallel too: on the same pool, so --threads holds.
    if let Err(e) = with_threads(opts.threads, || merge(spec, dir, jobs, dim, names, true))? {
        let mut msg = format!(
            "{e}\nthe results could not be merged; {saved} of {} units (seed, algorithm) are saved in {} (rerun the same command to merge them and run the rest)",
            jobs.len(),
            parts.display()
        );
        if !failures.is_empty() {
            msg += &format!(
                "; {} units failed:\n  {}",
                failures.len(),
                failures.join("\n  ")
            );
        }
        return Err(FboError::Run(msg));
    }
    if !failures.is_empty() {
        return Err(FboError::Run(format!(
            "{} of {} units (seed, algorithm) failed (the {saved} others are in {}; rerun the same command to retry only the failed ones):\n  {}",
            failures.len(),
            jobs.len(),
            out.join("trace.csv").display(),
            failures.join("\n  ")
        )));
    }
    dir.remove_under("parts/")?;
    dir.prune()
}

/// The spec's landscapes once everything that can refuse it has (a sweep's table, the
/// checks and estimates of `prepare`), with its budget notes and a long run's note said.
fn checked_landscapes(spec: &Spec, opts: &RunOptions) -> Result<Vec<Arc<Landscape>>> {
    if spec.has_sweep {
        return Err(FboError::spec(
            &spec.path,
            "sweep",
            "this spec has a [sweep] table: run it with `fbo sweep`, or remove the table to run the base point",
        ));
    }
    let threads = opts.threads.unwrap_or_else(rayon::current_num_threads);
    let (estimate, landscapes) = prepare(spec, threads)?;
    if !opts.nested {
        for note in spec.budget_notes() {
            eprintln!("{note}");
        }
    }
    if !opts.nested
        && opts.progress.is_none()
        && let Some(note) = crate::run::budget::long_run_note(spec, &estimate, threads)
    {
        eprintln!("{note}");
    }
    Ok(landscapes)
}

/// Every landscape reads finished evaluations from `journal` (and writes new ones to it);
/// said unless quiet.
fn replay_from(
    journal: &Arc<Journal>,
    landscapes: &[Arc<Landscape>],
    dir: &OutDir,
    opts: &RunOptions,
) {
    if !journal.is_empty() && !opts.quiet {
        eprintln!(
            "replaying {} finished evaluations from the {} in {}",
            journal.len(),
            journals(dir),
            opts.out.display()
        );
    }
    for land in landscapes {
        land.attach_journal(journal.clone());
    }
}

/// The output folder claimed for the files a run of `jobs` may write, and the fingerprint
/// its parts are made with. Parts made with other settings are replaced by a plain run; a
/// shard or a merge must not throw away what other shards computed, so it refuses them.
fn claim_output(
    spec: &Spec,
    opts: &RunOptions,
    jobs: &[Unit],
    measured: bool,
    shard: Option<(usize, usize)>,
) -> Result<(OutDir, String)> {
    let mut planned = planned_files(spec, jobs, measured);
    if let (true, Some(units)) = (measured, shard) {
        planned.push(shard_journal(units));
    }
    let out = &opts.out;
    let canonical = crate::spec::portable::canonical(&spec.source, &spec.path);
    let dir = OutDir::claim(
        out,
        Claim {
            identity: run_identity(spec),
            planned: &planned,
            overwrite: opts.overwrite,
            shared: shard.is_some(),
        },
    )?;
    let print = parts_fingerprint(spec, &canonical);
    if (shard.is_some() || opts.work == Work::Merge) && dir.parts_made_otherwise(&print) {
        return Err(FboError::spec(
            out,
            if shard.is_some() {
                "--shard"
            } else {
                "--merge"
            },
            "parts/ here were made with other settings (the spec, --runs or --no-timing differ); every shard and the merge of one experiment need the same options",
        ));
    }
    Ok((dir, print))
}

/// One unit of work: (algorithm index, run).
type Unit = (usize, usize);

/// The files a run of `spec` may write in its folder (the folder's claim lists them, so
/// that fbo never touches a file it did not plan).
pub(crate) fn planned_files(spec: &Spec, jobs: &[(usize, usize)], measured: bool) -> Vec<String> {
    let has_server = spec.algorithms.iter().any(|a| a.server.is_some());
    let private = spec
        .algorithms
        .iter()
        .any(|a| a.mechanism(1, spec.total_agents()).is_some());
    let mut planned: Vec<String> = ["spec.toml", "trace.csv", "summary.csv", PARTS_FINGERPRINT]
        .map(String::from)
        .to_vec();
    if has_server {
        planned.push("server.csv".into());
    }
    if private {
        planned.push("privacy.csv".into());
    }
    planned.extend(Side::wanted(spec).iter().map(|s| s.file().to_string()));
    if measured {
        planned.push(JOURNAL.into());
    }
    for &(a, r) in jobs {
        planned.push(part_name(a, r));
        planned.extend(side_part_names(spec, a, r));
    }
    planned
}

/// What `RunReport::evaluations` says of a journal: evaluations made by this process, their
/// mean seconds, and those it replayed.
fn evaluations_made(j: &Journal) -> (usize, Option<f64>, usize) {
    let (new, mean) = j.new_evaluations();
    (new, mean, j.len() - new)
}

/// A bar of a command objective's evaluations in the runs this invocation computes (counted
/// by `count::per_run`), following the journal, with its log lines and interrupt note.
fn watch_evaluations(
    spec: &Spec,
    journal: &Arc<Journal>,
    jobs: &[(usize, usize)],
    shard: Option<(usize, usize)>,
    opts: &RunOptions,
) -> Result<(
    crate::run::progress::Ticker,
    crate::run::progress::InterruptNote,
    crate::run::progress::Follow,
    ProgressBar,
)> {
    let per_run: usize = crate::run::count::per_run(spec)?
        .iter()
        .map(|(_, n)| n)
        .sum();
    let runs: std::collections::HashSet<usize> = jobs
        .iter()
        .filter(|&&(a, r)| shard.is_none_or(|b| in_shard(spec, a, r, b)))
        .map(|&(_, r)| r)
        .collect();
    let bar = crate::run::progress::bar((per_run * runs.len()) as u64, opts.quiet, "evaluations");
    let j = journal.clone();
    let follow = crate::run::progress::Follow::start(&bar, move || {
        j.finished_in(|r| runs.contains(&r)) as u64
    });
    Ok((
        crate::run::progress::Ticker::start(&bar, opts.quiet, "evaluations"),
        crate::run::progress::InterruptNote::set(&bar, "evaluations", opts.out.clone()),
        follow,
        bar,
    ))
}

/// The units this invocation computes, as a block of (run, algorithm) order (so a shard holds
/// whole seeds where it can, and a seed's algorithms share the senders' simulations); None
/// for all of them. Refuses what a shard cannot do.
fn shard_of(spec: &Spec, opts: &RunOptions) -> Result<Option<(usize, usize)>> {
    let out = &opts.out;
    let units = spec.runs * spec.algorithms.len();
    let shard = match opts.work {
        Work::Shard { index, count } => Some(whole_runs(spec, block(index, count, units))),
        Work::Units { lo, hi } => Some(whole_runs(spec, (lo, hi))),
        _ => None,
    };
    if shard.is_some() {
        refuse_measured_shards(spec)?;
    }
    if shard.is_some() && opts.overwrite {
        return Err(FboError::spec(
            out,
            "--overwrite",
            "does not go with --shard: shards share the folder; clear it with an unsharded run or choose another --out",
        ));
    }
    Ok(shard)
}

/// The units of `jobs` in this invocation's block still to compute, and a note for every
/// damaged part found. A run is done when both its parts are here (the server part is
/// written first) and whole.
fn pending(
    spec: &Spec,
    dir: &OutDir,
    opts: &RunOptions,
    jobs: &[(usize, usize)],
    shard: Option<(usize, usize)>,
    reusable: bool,
    header: &str,
) -> Result<(Vec<Unit>, Vec<String>)> {
    let out = &opts.out;
    // A damaged part is moved aside and its run redone, never merged.
    let damaged = std::sync::Mutex::new(Vec::<String>::new());
    let done = |a: usize, r: usize| -> Result<bool> {
        if !(reusable && dir.owns(&part_name(a, r)) && dir.path(&part_name(a, r)).exists()) {
            return Ok(false);
        }
        if let Err(why) = check_part(spec, out, a, r, Some(header)) {
            let moved = set_aside(dir, a, r)?;
            let note = format!(
                "{} {why}: moved to {}; {} run {r} is computed again{}",
                dir.path(&part_name(a, r)).display(),
                moved
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" and "),
                spec.algorithms[a].label,
                if opts.work == Work::Merge {
                    " by the next run or shard"
                } else {
                    ""
                }
            );
            damaged.lock().expect("damaged").push(note);
            return Ok(false);
        }
        Ok(side_part_names(spec, a, r).iter().all(|p| dir.resume(p))
            && dir.resume(&part_name(a, r)))
    };
    let mut todo: Vec<(usize, usize)> = Vec::new();
    for &(a, r) in jobs
        .iter()
        .filter(|&&(a, r)| shard.is_none_or(|b| in_shard(spec, a, r, b)))
    {
        if !done(a, r)? {
            todo.push((a, r));
        }
    }
    let damaged = damaged.into_inner().expect("damaged");
    Ok((todo, damaged))
}

/// Whether run r of algorithm a lies in the block (lo, hi) of (run, algorithm) order.
fn in_shard(spec: &Spec, a: usize, r: usize, (lo, hi): (usize, usize)) -> bool {
    (lo..hi).contains(&(r * spec.algorithms.len() + a))
}

/// The refusal of a merge while runs are missing, listing (the first 20 of) them.
fn merge_refusal(
    spec: &Spec,
    todo: &[(usize, usize)],
    total: usize,
    parts: &std::path::Path,
    damaged: &[String],
) -> FboError {
    let list: Vec<String> = todo
        .iter()
        .take(20)
        .map(|&(a, r)| format!("{} run {r}", spec.algorithms[a].label))
        .collect();
    FboError::Run(format!(
        "cannot merge: {} of {} units (seed, algorithm) are missing in {}: {}{}{} (run the missing shards, or `fbo run` without --merge to compute them here); nothing was merged or removed",
        todo.len(),
        total,
        parts.display(),
        list.join(", "),
        if todo.len() > 20 { ", ..." } else { "" },
        if damaged.is_empty() {
            String::new()
        } else {
            format!(
                "; {} of them had damaged parts, moved aside:\n  {}\n",
                damaged.len(),
                damaged.join("\n  ")
            )
        }
    ))
}

/// Writes the parts of unit (a, r) from the finished folder `src`, which holds the same
/// algorithm's results under the same label: its trace rows re-written as the part (the
/// csv writer quotes as the merge did, so the bytes are the computed part's) and its
/// server.csv rows. Refused (the unit is then reported failed) unless every row is there.
fn copy_unit(
    spec: &Spec,
    a: usize,
    r: usize,
    src: &std::path::Path,
    dim: usize,
    names: &[String],
    dir: &OutDir,
) -> Result<()> {
    let label = &spec.algorithms[a].label;
    let trace = src.join("trace.csv");
    let bad = |e: String| FboError::spec(&trace, "", e);
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(output::trace_header(dim, names))
        .map_err(|e| bad(e.to_string()))?;
    let run = r.to_string();
    let rows = copy_unit_rows(&trace, label, &run, &mut w)?;
    if !rows_fit(spec, a, rows) {
        return Err(bad(format!(
            "holds {rows} rows of {label} run {r}, not the {} it would compute",
            rows_per_run(spec, a)
        )));
    }
    let prefix = format!("{label},{run},");
    let server: String = fs::read_to_string(src.join("server.csv"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with(&prefix))
        .map(|l| format!("{l}\n"))
        .collect();
    dir.write(&server_part_name(a, r), server.as_bytes())?;
    for side in Side::wanted(spec) {
        let path = src.join(side.file());
        let mut b = csv::Writer::from_writer(Vec::new());
        copy_unit_rows(&path, label, &run, &mut b)?;
        let bytes = b
            .into_inner()
            .map_err(|e| FboError::spec(&path, "", e.to_string()))?;
        dir.write(&side.part_name(a, r), &bytes)?;
    }
    let bytes = w.into_inner().map_err(|e| bad(e.to_string()))?;
    dir.write(&part_name(a, r), &bytes)
}

/// Writes to `w` the records of the CSV at `path` (past its header) that are rows of `label`
/// run `run`, re-quoted as the csv writer does; how many.
fn copy_unit_rows(
    path: &std::path::Path,
    label: &str,
    run: &str,
    w: &mut csv::Writer<Vec<u8>>,
) -> Result<usize> {
    let bad = |e: String| FboError::spec(path, "", e);
    let mut rdr = csv::Reader::from_path(path).map_err(|e| bad(e.to_string()))?;
    let mut rows = 0;
    for rec in rdr.records() {
        let rec = rec.map_err(|e| bad(e.to_string()))?;
        if &rec[0] == label && &rec[1] == run {
            w.write_record(&rec).map_err(|e| bad(e.to_string()))?;
            rows += 1;
        }
    }
    Ok(rows)
}

/// Computes the units `todo` in parallel, each saved as its two parts as soon as it is
/// done (the server part first: the trace part marks the run complete).
fn compute(
    spec: &Spec,
    todo: &[(usize, usize)],
    landscapes: &[Arc<Landscape>],
    dir: &OutDir,
    pb: &ProgressBar,
    reuse: &[Option<Reuse>],
) -> Vec<(usize, usize, Result<()>)> {
    let senders = SenderCache::global();
    let dim = landscapes[0].dim();
    let codec = landscapes[0].space.codec();
    todo.par_iter()
        .map(|&(a, r)| {
            if let Some(Some(Reuse::From(src))) = reuse.get(a) {
                let res = copy_unit(spec, a, r, src, dim, &codec.names, dir);
                pb.inc(1);
                return (a, r, res);
            }
            let land = landscapes[r % landscapes.len()].clone();
            let res = run_one_shared(spec, a, r, land, Some(senders)).and_then(|out| {
                let label = &spec.algorithms[a].label;
                let sides = Side::wanted(spec)
                    .into_iter()
                    .map(|s| Ok((s, s.body(label, r, &out, dim)?)))
                    .collect::<Result<Vec<_>>>()?;
                save_unit(
                    dir,
                    a,
                    r,
                    &output::server_csv_body(label, r, &out.server),
                    &sides,
                    &output::trace_csv(&out.rows, dim, &codec)?,
                )
            });
            pb.inc(1);
            (a, r, res)
        })
        .collect()
}

/// Saves a finished unit: its server part and its side outputs (where asked for) first,
/// then its trace part, whose presence marks the unit complete.
pub(crate) fn save_unit(
    dir: &OutDir,
    a: usize,
    r: usize,
    server: &[u8],
    sides: &[(Side, Vec<u8>)],
    trace: &[u8],
) -> Result<()> {
    dir.write(&server_part_name(a, r), server)?;
    for (side, bytes) in sides {
        dir.write(&side.part_name(a, r), bytes)?;
    }
    dir.write(&part_name(a, r), trace)
}

/// The units of `jobs` whose parts in `dir` are not complete (damaged ones moved aside and
/// reported on stderr), for a caller that computes every unit in one process.
pub(crate) fn pending_units(
    spec: &Spec,
    dir: &OutDir,
    out: &std::path::Path,
    jobs: &[(usize, usize)],
    reusable: bool,
    header: &str,
) -> Result<Vec<(usize, usize)>> {
    let opts = RunOptions {
        out: out.to_path_buf(),
        threads: None,
        quiet: true,
        nested: true,
        progress: None,
        overwrite: false,
        work: Work::All,
        reuse: Vec::new(),
    };
    let (todo, damaged) = pending(spec, dir, &opts, jobs, None, reusable, header)?;
    for note in &damaged {
        eprintln!("damaged part: {note}");
    }
    Ok(todo)
}

/// The merge of a complete set of units, then the clean-up `fbo run` ends with: parts/ (and
/// a federation's journals) removed, stale files of an earlier invocation pruned. Without
/// `values` (a federation whose sites keep their traces) no trace.csv or summary.csv.
pub(crate) fn merge_parts(
    spec: &Spec,
    dir: &OutDir,
    jobs: &[(usize, usize)],
    (dim, names): (usize, &[String]),
    values: bool,
) -> Result<()> {
    merge(spec, dir, jobs, dim, names, values)?;
    dir.remove_under("parts/")?;
    dir.remove_under("federation/")?;
    dir.prune()
}

/// One privacy curve: the epsilon of one algorithm's guarantee (whom it holds against) under
/// one accountant after each iteration t = 1..=T.
pub struct PrivacyCurve {
    pub algorithm: usize,
    pub accountant: Accountant,
    pub against: crate::privacy::Against,
    /// The guarantee after one round (its rate, sampling, relation: what the rows name).
    pub mechanism: Mechanism,
    pub epsilon: Vec<f64>,
}

/// Cumulative epsilon after each iteration t (t rounds released), for every guarantee of every
/// private algorithm (`AlgorithmSpec::guarantees`) and every accountant of the spec that has an
/// analysis of its noise. It does not depend on the run, so each distinct mechanism is
/// accounted once.
pub fn privacy_curves(spec: &Spec) -> Result<Vec<PrivacyCurve>> {
    let n = spec.total_agents();
    // Each distinct (mechanism, accountant) once; each curve its tasks' indices, t = 1..=T.
    let mut tasks: Vec<(Mechanism, Accountant)> = Vec::new();
    let mut out: Vec<PrivacyCurve> = Vec::new();
    let mut wanted: Vec<Vec<usize>> = Vec::new();
    for (i, a) in spec.algorithms.iter().enumerate() {
        for (g, (against, first)) in a.guarantees(1, n).into_iter().enumerate() {
            for &acc in &spec.privacy.accountants {
                if privacy::supports_noise(acc, first.noise).is_err()
                    || !acc.applies_to(first.sampling)
                {
                    continue;
                }
                let steps = (1..=spec.iterations as u64)
                    .map(|t| {
                        let task = (a.guarantees(t, n)[g].1, acc);
                        tasks.iter().position(|x| *x == task).unwrap_or_else(|| {
                            tasks.push(task);
                            tasks.len() - 1
                        })
                    })
                    .collect();
                wanted.push(steps);
                out.push(PrivacyCurve {
                    algorithm: i,
                    accountant: acc,
                    against,
                    mechanism: first,
                    epsilon: Vec::new(),
                });
            }
        }
    }
    let delta = spec.privacy.delta;
    let values: Vec<f64> = tasks
        .par_iter()
        .map(|(m, acc)| {
            privacy::epsilon(*acc, m, delta)
                .map(|g| g.epsilon)
                .map_err(FboError::Run)
        })
        .collect::<Result<_>>()?;
    for (curve, steps) in out.iter_mut().zip(wanted) {
        curve.epsilon = steps.iter().map(|&k| values[k]).collect();
    }
    Ok(out)
}

/// summary.csv's bytes for the trace.csv text `trace` (`path` names it in errors), its
/// algorithms in the spec's order.
pub(crate) fn summary_of(spec: &Spec, trace: &[u8], path: &Path) -> Result<Vec<u8>> {
    let rows = output::read_summary_input(trace, path)?;
    let order: Vec<String> = spec.algorithms.iter().map(|a| a.label.clone()).collect();
    output::summary_csv(&rows, &order)
}

/// trace.csv and summary.csv from every part present, in (algorithm, run) order (with
/// `values`); server.csv and privacy.csv where the spec has a server or private algorithms.
fn merge(
    spec: &Spec,
    dir: &OutDir,
    jobs: &[(usize, usize)],
    dim: usize,
    names: &[String],
    values: bool,
) -> Result<()> {
    let mut trace = Vec::new();
    let header = output::trace_header(dim, names).join(",");
    trace.extend_from_slice(header.as_bytes());
    trace.push(b'\n');
    let mut server = output::SERVER_HEADER.as_bytes().to_vec();
    let sides = Side::wanted(spec);
    let mut side_files: Vec<Vec<u8>> = sides.iter().map(|s| s.header(dim).into_bytes()).collect();
    let mut done = Vec::new();
    for &(a, r) in jobs {
        let p = dir.path(&part_name(a, r));
        if !p.exists() {
            continue;
        }
        done.push((a, r));
        let text = fs::read(&p).map_err(|e| FboError::io(&p, e))?;
        let body_start = text
            .iter()
            .position(|&b| b == b'\n')
            .map_or(text.len(), |i| i + 1);
        trace.extend_from_slice(&text[body_start..]);
        let sp = dir.path(&server_part_name(a, r));
        server.extend(fs::read(&sp).map_err(|e| FboError::io(&sp, e))?);
        for (side, file) in sides.iter().zip(side_files.iter_mut()) {
            let bp = dir.path(&side.part_name(a, r));
            file.extend(fs::read(&bp).map_err(|e| FboError::io(&bp, e))?);
        }
    }
    // trace.csv last: whoever waits for the results (a script, a federation's operator, the
    // tests) can take its appearance to mean every other file is complete. The accountant
    // can take seconds, and privacy.csv once came after a reader had compared it.
    if spec.algorithms.iter().any(|a| a.server.is_some()) {
        dir.write("server.csv", &server)?;
    }
    for (side, file) in sides.iter().zip(&side_files) {
        dir.write(side.file(), file)?;
    }
    let curves = privacy_curves(spec)?;
    if !curves.is_empty() {
        dir.write("privacy.csv", &output::privacy_csv(spec, &curves, &done))?;
    }
    if values {
        let summary = summary_of(spec, &trace, &dir.path("trace.csv"))?;
        dir.write("summary.csv", &summary)?;
        dir.write("trace.csv", &trace)?;
    }
    Ok(())
}
