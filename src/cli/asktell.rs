//! `fbo ask` and `fbo tell`: experiments whose evaluations are done by hand or elsewhere (a
//! wet-lab assay, a clinical protocol, a training job on another system). The state is the
//! evaluations journal alone: `ask` replays every run of the spec from it, deterministically,
//! until each run needs a result the journal does not have, and prints those queries; `tell`
//! appends results. So ask/tell and a command run given the same results make the same
//! queries, and `fbo run SPEC --out STATE` writes the trace once every result is in.

use crate::error::{FboError, Result};
use crate::objective::journal::JOURNAL;
use crate::objective::journal::{Entry, Journal, Outcome, Request};
use crate::objective::{Codec, Landscape, Point};
use crate::run::outdir::{Claim, OutDir};
use crate::run::runner::{prepare, run_one};
use crate::spec::{ObjectiveKind, Spec};
use clap::Args;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub struct AskOptions {
    pub state: PathBuf,
    /// "csv" or "json".
    pub format: String,
    /// Print queries already handed out and still waiting too.
    pub all: bool,
}

pub struct TellOptions {
    pub state: PathBuf,
    pub agent: Option<usize>,
    pub value: Option<f64>,
    pub run: Option<usize>,
    pub scope: Option<String>,
    pub iteration: Option<i64>,
    pub cost_s: f64,
    /// A CSV of results: the columns `fbo ask` prints plus `metric`.
    pub results: Option<PathBuf>,
}

/// The measured objective of `spec`, checked.
fn measured(spec: &Spec) -> Result<()> {
    match &spec.objective.kind {
        ObjectiveKind::Command(_) => Ok(()),
        _ => Err(FboError::spec(
            &spec.path,
            "objective.kind",
            "ask and tell need kind = \"external\" (results reported by hand) or \"command\"",
        )),
    }
}

/// Locks the state folder (the same folder `fbo run SPEC --out STATE` writes results to)
/// and opens its journal.
fn open_state(spec: &Spec, state: &Path) -> Result<(OutDir, Arc<Journal>)> {
    let dir = OutDir::claim(
        state,
        Claim {
            identity: crate::run::runner::run_identity(spec),
            planned: &[JOURNAL.to_string()],
            overwrite: false,
            shared: false,
        },
    )
    // The folder is given as --state here: say so in the refusal.
    .map_err(|e| match e {
        FboError::Spec { file, key, message } if key == "--out" => FboError::Spec {
            file,
            key: "--state".into(),
            message: message
                .replace("another --out", "another --state")
                .replace("pass --overwrite to replace them", "move them away"),
        },
        other => other,
    })?;
    let origin = spec.journal_origin().expect("a measured objective");
    let journal = Arc::new(Journal::open(&dir.append_file(JOURNAL)?, &origin)?);
    Ok((dir, journal))
}

/// Every query the runs are waiting for, replaying them from the journal; and how many of
/// the spec's (algorithm, run) pairs are complete.
fn frontier(spec: &Spec, journal: &Arc<Journal>) -> Result<(Vec<(Request, Point)>, usize)> {
    prepare(spec, 1)?;
    // Results come from the journal alone: a command spec's queries are handed out, not run
    // (`fbo run` runs the command for those nobody reported).
    let landscapes = vec![spec.measured_landscape(false)];
    for l in &landscapes {
        l.attach_journal(journal.clone());
    }
    let mut waiting: Vec<(Request, Point)> = Vec::new();
    let mut complete = 0;
    for a in 0..spec.algorithms.len() {
        for r in 0..spec.runs {
            let land: Arc<Landscape> = landscapes[r % landscapes.len()].clone();
            let result = run_one(spec, a, r, land.clone());
            let mut pending = land.take_pending();
            // Evaluations of a round or of pending queries wait on threads of their own, in
            // whatever order they started: listed by agent and iteration.
            pending.sort_by_key(|(r, _)| (r.agent, r.iteration));
            match (result, pending.is_empty()) {
                (Ok(_), _) => complete += 1,
                (Err(_), false) => {
                    for p in pending {
                        if !waiting.iter().any(|(q, x)| *q == p.0 && x.x == p.1.x) {
                            waiting.push(p);
                        }
                    }
                }
                (Err(e), true) => return Err(e),
            }
        }
    }
    Ok((waiting, complete))
}

/// A value typed back from a printed query: equal to 15 significant digits (what a
/// spreadsheet keeps of a number it saves).
fn close(given: f64, asked: f64) -> bool {
    given == asked || (given - asked).abs() <= 1e-13 * asked.abs()
}

fn asked(codec: &Codec, req: &Request, p: &Point, raw: &[f64]) -> Entry {
    Entry {
        request: req.clone(),
        x: p.x.clone(),
        params: codec.json(raw),
        status: "asked".into(),
        metric: None,
        cost_s: 0.0,
        error: None,
    }
}

/// What one `ask` hands out: the queries shown (new ones, or all waiting with `all`) and
/// where the spec's runs stand.
pub struct Asked {
    pub shown: Vec<(Request, Vec<f64>)>,
    waiting: Vec<(Request, Point)>,
    outstanding: usize,
    complete: usize,
    codec: Codec,
}

impl Asked {
    /// The queries as JSON objects: scope, run, agent, iteration and the raw params.
    pub fn json(&self) -> serde_json::Value {
        let list: Vec<serde_json::Value> = self
            .shown
            .iter()
            .map(|(req, raw)| {
                serde_json::json!({
                    "scope": req.scope,
                    "run": req.run,
                    "agent": req.agent,
                    "iteration": req.iteration,
                    "params": self.codec.json(raw),
                })
            })
            .collect();
        serde_json::Value::Array(list)
    }
}

/// Replays the spec's runs from the state folder's journal, records the new queries as
/// asked, and returns them (`ask` prints them; the Python package returns them).
pub fn ask_queries(spec: &Spec, opts: &AskOptions) -> Result<Asked> {
    measured(spec)?;
    let (_dir, journal) = open_state(spec, &opts.state)?;
    let (waiting, complete) = frontier(spec, &journal)?;
    let space = Arc::new(spec.objective.space());
    let codec = space.codec();
    let mut shown = Vec::new();
    let mut outstanding = 0;
    for (req, p) in &waiting {
        let raw = space.raw(p);
        if journal.was_asked(req, &raw) {
            outstanding += 1;
            if !opts.all {
                continue;
            }
        } else {
            journal.record(&asked(&codec, req, p, &raw))?;
        }
        shown.push((req.clone(), raw));
    }
    Ok(Asked {
        shown,
        waiting,
        outstanding,
        complete,
        codec,
    })
}

pub fn ask(spec: &Spec, opts: &AskOptions) -> Result<()> {
    let asked = ask_queries(spec, opts)?;
    let total = spec.algorithms.len() * spec.runs;
    if opts.format == "json" {
        println!("{}", asked.json());
    } else {
        let codec = &asked.codec;
        println!("scope,run,agent,iteration,{}", codec.names.join(","));
        for (req, raw) in &asked.shown {
            let vals = codec.show_all(raw);
            println!(
                "{},{},{},{},{}",
                req.scope,
                req.run,
                req.agent,
                req.iteration,
                vals.join(",")
            );
        }
    }
    let Asked {
        waiting,
        outstanding,
        complete,
        ..
    } = asked;
    let new = waiting.len() - outstanding;
    eprintln!(
        "{new} new quer{} ({} still waiting from earlier asks); {complete} of {total} units (seed, algorithm) complete{}",
        if new == 1 { "y" } else { "ies" },
        outstanding,
        if complete == total {
            format!(
                ": write the trace with `fbo run {} --out {}`",
                spec.path.display(),
                opts.state.display()
            )
        } else {
            String::new()
        }
    );
    report_privacy(spec, &waiting, complete == total)?;
    Ok(())
}

/// Privacy spent so far by each private algorithm: the server rounds released before the
/// iterations its agents are waiting on (all rounds once complete).
fn report_privacy(spec: &Spec, waiting: &[(Request, Point)], complete: bool) -> Result<()> {
    let curves = crate::run::runner::privacy_curves(spec)?;
    for c in curves {
        let (i, acc, curve) = (c.algorithm, c.accountant, c.epsilon);
        let label = &spec.algorithms[i].label;
        let reached = if complete {
            spec.iterations
        } else {
            // The server releases one aggregate before each iteration t >= 1, so agents
            // waiting on iteration t have seen t rounds (none while on initial points).
            waiting
                .iter()
                .filter(|(r, _)| r.scope == *label || r.scope.ends_with(&format!(" {label}")))
                .map(|(r, _)| r.iteration.max(0) as usize)
                .min()
                .unwrap_or(spec.iterations)
        };
        let eps = if reached == 0 {
            0.0
        } else {
            curve[reached.min(curve.len()) - 1]
        };
        eprintln!(
            "privacy: {label}: epsilon {} ({acc}, against {}) after {reached} server rounds released, delta {:e}",
            crate::privacy::show_upper(eps, 4),
            c.against.name(),
            spec.privacy.delta
        );
    }
    Ok(())
}

pub fn tell(spec: &Spec, opts: &TellOptions) -> Result<()> {
    measured(spec)?;
    let cli = |key: &str, msg: String| FboError::spec(&spec.path, key, msg);
    // What can be refused is refused before the state folder is touched, by the journal's
    // own check of what it can hold.
    crate::objective::journal::check_values(opts.value, 0.0).map_err(|m| cli("--value", m))?;
    crate::objective::journal::check_values(None, opts.cost_s).map_err(|m| cli("--cost", m))?;
    let (_dir, journal) = open_state(spec, &opts.state)?;
    let waiting = journal.outstanding();
    let codec = spec.objective.space().codec();
    let results: Vec<(Entry, f64, f64)> = match (&opts.results, opts.agent, opts.value) {
        (Some(file), None, None) => {
            let (results, acknowledged) = results_from_file(file, &codec, &journal, &waiting)?;
            if acknowledged > 0 {
                eprintln!(
                    "{acknowledged} result{} already recorded with the same value (an earlier tell) acknowledged and skipped",
                    if acknowledged == 1 { "" } else { "s" }
                );
            }
            results
        }
        (None, Some(agent), Some(value)) => {
            vec![result_from_flags(opts, &waiting, (agent, value), cli)?]
        }
        _ => {
            return Err(cli(
                "--results",
                "give either --agent and --value, or --results FILE.csv".into(),
            ));
        }
    };
    for (e, metric, cost) in &results {
        let done = Entry {
            status: "ok".into(),
            metric: Some(*metric),
            cost_s: *cost,
            ..e.clone()
        };
        journal.record(&done)?;
        let raw = codec
            .from_json(&e.params)
            .unwrap_or_else(|| vec![f64::NAN; codec.len()]);
        eprintln!(
            "recorded {metric} for agent {} at {} ({}, run {}, iteration {})",
            e.request.agent,
            codec.describe(&raw),
            e.request.scope,
            e.request.run,
            e.request.iteration
        );
    }
    Ok(())
}

/// A told result: the query, its metric and its cost in seconds.
type Told = (Entry, f64, f64);

/// A query the journal holds a result of: the query, the result and its journal line.
type Answered = (Entry, Outcome, usize);

/// The results a CSV file reports (`fbo tell --results`): each line matched to the outstanding
/// query it answers, and how many lines repeat a value the journal already holds
/// (acknowledged and skipped).
fn results_from_file(
    file: &Path,
    codec: &Codec,
    journal: &Journal,
    waiting: &[Entry],
) -> Result<(Vec<Told>, usize)> {
    // Queries told before: a results file told again (after a kill cut it short, say) is
    // acknowledged line by line where the journal has the same value.
    let answered = journal.answered();
    let mut acknowledged = 0usize;
    let mut results: Vec<(Entry, f64, f64)> = Vec::new();
    let mut rd = csv::Reader::from_path(file)
        .map_err(|e| FboError::spec(file, "", format!("cannot read results: {e}")))?;
    let (headers, [cs, cr, ca, ci, cm], cc) = results_columns(file, &mut rd)?;
    // Which outstanding query each line answered, so one query told twice is seen.
    let mut told: Vec<(usize, usize, f64)> = Vec::new();
    for (n, rec) in rd.records().enumerate() {
        let rec = rec.map_err(|e| FboError::spec(file, "", e.to_string()))?;
        let line = n + 2;
        let num = |i: usize, what: &str| field_num((file, line), &rec, i, what);
        let int = |i: usize, what: &str, min: i64| field_int((file, line), &rec, i, what, min);
        let req = Request::new(
            rec.get(cs).unwrap_or_default().trim(),
            int(cr, "run", 0)? as usize,
            int(ca, "agent", 0)? as usize,
            int(ci, "iteration", i64::MIN)?,
        );
        check_point_values((file, line), codec, &headers, &rec)?;
        // The hyperparameter columns, where given, must be the query's: to the
        // 15 significant digits a spreadsheet keeps, at least.
        let asked_at = |e: &Entry| codec.from_json(&e.params);
        let same_point =
            |e: &Entry| {
                codec.names.iter().enumerate().all(|(k, n)| {
                    match headers.iter().position(|h| h == n) {
                        None => true,
                        Some(i) => {
                            let given = rec.get(i).and_then(|v| codec.parse(k, v).ok());
                            let asked = asked_at(e).map(|raw| raw[k]);
                            match (given, asked) {
                                (Some(g), Some(a)) => close(g, a),
                                _ => false,
                            }
                        }
                    }
                })
            };
        let point_columns = codec.names.iter().any(|n| headers.iter().any(|h| h == n));
        let Some(idx) = locate(
            (file, line),
            &req,
            &same_point,
            &|| num(cm, "metric"),
            (journal, waiting, &answered),
            point_columns,
        )?
        else {
            acknowledged += 1;
            continue;
        };
        let cost = match cc {
            Some(i) if !rec.get(i).unwrap_or("").trim().is_empty() => num(i, "cost_s")?,
            _ => 0.0,
        };
        let metric = num(cm, "metric")?;
        crate::objective::journal::check_values(Some(metric), cost)
            .map_err(|m| FboError::spec(file, "", format!("line {line}: {m}")))?;
        if let Some(&(first, _, m)) = told.iter().find(|t| t.1 == idx) {
            if m.to_bits() != metric.to_bits() {
                return Err(FboError::spec(
                    file,
                    "",
                    format!(
                        "lines {first} and {line} report one query ({} run {} agent {} iteration {}) with two values, {m} and {metric}; keep one",
                        req.scope, req.run, req.agent, req.iteration
                    ),
                ));
            }
            continue;
        }
        told.push((line, idx, metric));
        results.push((waiting[idx].clone(), metric, cost));
    }
    Ok((results, acknowledged))
}

/// A results file's column names (a spreadsheet's byte-order mark and padding removed), the
/// columns of scope, run, agent, iteration and metric, and of cost_s if it has one.
fn results_columns(
    file: &Path,
    rd: &mut csv::Reader<std::fs::File>,
) -> Result<(csv::StringRecord, [usize; 5], Option<usize>)> {
    // A spreadsheet's byte-order mark and padding are not part of the column names.
    let headers: csv::StringRecord = rd
        .headers()
        .map_err(|e| FboError::spec(file, "", e.to_string()))?
        .iter()
        .map(|h| h.trim_start_matches('\u{feff}').trim())
        .collect();
    let col = |name: &str| -> Result<usize> {
        headers.iter().position(|h| h == name).ok_or_else(|| {
            FboError::spec(
                file,
                name,
                "missing column: results need scope, run, agent, iteration (as `fbo ask` prints them) and metric",
            )
        })
    };
    let required = [
        col("scope")?,
        col("run")?,
        col("agent")?,
        col("iteration")?,
        col("metric")?,
    ];
    let cost = headers.iter().position(|h| h == "cost_s");
    Ok((headers, required, cost))
}

/// Field `i` of a results line as a finite number.
fn field_num(
    (file, line): (&Path, usize),
    rec: &csv::StringRecord,
    i: usize,
    what: &str,
) -> Result<f64> {
    rec.get(i)
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite())
        .ok_or_else(|| {
            FboError::spec(
                file,
                what,
                format!("line {line}: not a finite number: {:?}", rec.get(i)),
            )
        })
}

/// Field `i` of a results line as a whole number >= `min`: counts are whole numbers, and 0.7
/// or -1 is a mistake to report, not to round.
fn field_int(
    (file, line): (&Path, usize),
    rec: &csv::StringRecord,
    i: usize,
    what: &str,
    min: i64,
) -> Result<i64> {
    rec.get(i)
        .and_then(|v| v.trim().parse::<i64>().ok())
        .filter(|&v| v >= min)
        .ok_or_else(|| {
            FboError::spec(
                file,
                what,
                format!(
                    "line {line}: not a whole number >= {min}: {:?}",
                    rec.get(i).unwrap_or_default()
                ),
            )
        })
}

/// A value that is no value of its hyperparameter (a choice not listed, a word in a number's
/// column) is said as such, not as a missing query.
fn check_point_values(
    (file, line): (&Path, usize),
    codec: &Codec,
    headers: &csv::StringRecord,
    rec: &csv::StringRecord,
) -> Result<()> {
    for (k, n) in codec.names.iter().enumerate() {
        if let Some(v) = headers.iter().position(|h| h == n).and_then(|i| rec.get(i)) {
            codec
                .parse(k, v)
                .map_err(|m| FboError::spec(file, n, format!("line {line}: {m}")))?;
        }
    }
    Ok(())
}

/// The outstanding query a results line answers (`req` at the point `same_point` checks):
/// its index in `waiting`; None where the journal already holds the same value for it (a
/// results file told again), an error where it holds another, or where no query or several match.
fn locate(
    (file, line): (&Path, usize),
    req: &Request,
    same_point: &dyn Fn(&Entry) -> bool,
    metric: &dyn Fn() -> Result<f64>,
    (journal, waiting, answered): (&Journal, &[Entry], &[Answered]),
    point_columns: bool,
) -> Result<Option<usize>> {
    let found: Vec<usize> = waiting
        .iter()
        .enumerate()
        .filter(|(_, e)| e.request == *req && same_point(e))
        .map(|(i, _)| i)
        .collect();
    match found.as_slice() {
        [i] => Ok(Some(*i)),
        [] if let Some((_, before, jline)) = answered
            .iter()
            .find(|(e, _, _)| e.request == *req && same_point(e)) =>
        {
            let metric = metric()?;
            if before.agrees(&Outcome::Done(metric, 0.0)) {
                return Ok(None);
            }
            Err(FboError::spec(
                file,
                "metric",
                format!(
                    "line {line} reports {metric} for {} run {} agent {} iteration {}, which the journal {}{} already records as {}: one evaluation with two values (correct this line, or move the state folder away to start anew)",
                    req.scope,
                    req.run,
                    req.agent,
                    req.iteration,
                    journal
                        .path()
                        .map_or(String::new(), |p| p.display().to_string()),
                    if *jline > 0 {
                        format!(" (line {jline})")
                    } else {
                        String::new()
                    },
                    before.describe()
                ),
            ))
        }
        [] => Err(FboError::spec(
            file,
            "",
            format!(
                "line {line}: no outstanding query for {} run {} agent {} iteration {}{} (see `fbo ask --all`)",
                req.scope,
                req.run,
                req.agent,
                req.iteration,
                if point_columns {
                    " at these hyperparameter values"
                } else {
                    ""
                }
            ),
        )),
        _ => Err(FboError::spec(
            file,
            "",
            format!(
                "line {line}: {} outstanding queries match {} run {} agent {} iteration {}; give the hyperparameter columns as `fbo ask` prints them",
                found.len(),
                req.scope,
                req.run,
                req.agent,
                req.iteration
            ),
        )),
    }
}

/// The one result `fbo tell --agent A --value V` reports: the outstanding query of agent A
/// (narrowed by --run, --scope, --iteration), refused when none or several match.
fn result_from_flags(
    opts: &TellOptions,
    waiting: &[Entry],
    (agent, value): (usize, f64),
    cli: impl Fn(&str, String) -> FboError,
) -> Result<(Entry, f64, f64)> {
    let matching: Vec<&Entry> = waiting
        .iter()
        .filter(|e| e.request.agent == agent)
        .filter(|e| opts.run.is_none_or(|r| e.request.run == r))
        .filter(|e| opts.scope.as_ref().is_none_or(|s| e.request.scope == *s))
        .filter(|e| opts.iteration.is_none_or(|i| e.request.iteration == i))
        .collect();
    match matching.as_slice() {
        [e] => Ok(((*e).clone(), value, opts.cost_s)),
        [] => Err(cli(
            "--agent",
            format!(
                "agent {agent} has no outstanding query{}; `fbo ask` hands out the next ones",
                if waiting.is_empty() {
                    String::new()
                } else {
                    format!(
                        " (waiting: agents {})",
                        waiting
                            .iter()
                            .map(|e| e.request.agent.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            ),
        )),
        many => Err(cli(
            "--agent",
            format!(
                "agent {agent} has {} outstanding queries ({}); choose one with --run, --scope and --iteration, or report them all with --results",
                many.len(),
                many.iter()
                    .map(|e| format!(
                        "{} run {} iteration {}",
                        e.request.scope, e.request.run, e.request.iteration
                    ))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        )),
    }
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

pub fn cmd_ask(a: AskArgs) -> Result<()> {
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

pub fn cmd_tell(a: TellArgs) -> Result<()> {
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
