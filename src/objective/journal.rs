//! The evaluations journal: every finished evaluation of a command (or reported with
//! `fbo tell`) as one JSON line, appended and synced before the algorithm sees the value.
//! A run is deterministic given its values, so a rerun replays the journal: each evaluation
//! it asks for again is found here and not started twice. `fbo ask` records the queries it
//! handed out the same way, so it can tell outstanding ones from new ones.

use crate::error::{FboError, Result};
use crate::objective::space::Codec;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The evaluations journal of a measured objective, in the output folder.
pub const JOURNAL: &str = "evaluations.jsonl";

/// The journal scope of initial points drawn from the whole space: the algorithms of a spec
/// that start from them share their evaluations.
pub const INIT: &str = "init";

/// Who asks for an evaluation, and when: what a command is told, and with the point what
/// identifies the evaluation. `scope` is "init" for initial points (shared by the
/// algorithms of a spec that start from the same points), "senders" for the other agents'
/// histories (shared likewise), an algorithm's label for its own iterations, and
/// "<label> senders" for senders continuing inside that algorithm.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Request {
    pub scope: String,
    pub run: usize,
    pub agent: usize,
    /// The trace's iteration: initial points count up to 0, BO iterations from 1.
    pub iteration: i64,
}

impl Request {
    pub fn new(scope: impl Into<String>, run: usize, agent: usize, iteration: i64) -> Self {
        Request {
            scope: scope.into(),
            run,
            agent,
            iteration,
        }
    }
}

/// One journal line.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Entry {
    #[serde(flatten)]
    pub request: Request,
    /// Unit coordinates of the point, exactly (JSON numbers round-trip f64).
    pub x: Vec<f64>,
    /// The hyperparameters' raw values, by name, for people reading the file.
    pub params: serde_json::Map<String, serde_json::Value>,
    /// "ok", "failed" (recorded and skipped, `on_failure = "skip"`) or "asked" (handed out
    /// by `fbo ask`, no result yet).
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<f64>,
    #[serde(default)]
    pub cost_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

pub type Key = (Request, Vec<u64>);

/// An evaluation is identified by who asked (the request) and the raw hyperparameter values
/// it was measured at: unit coordinates mean other raw values once a range changes.
pub fn key(request: &Request, raw: &[f64]) -> Key {
    (request.clone(), raw.iter().map(|v| v.to_bits()).collect())
}

/// How the first line of a journal begins: the objective its values were measured with.
const HEADER_TAG: &str = "fbo_journal";

/// The objective a journal's values belong to: its entries may be replayed only for the
/// same program (or hand evaluation), the same metric and the same hyperparameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Origin {
    /// argv of the command; None for results reported by hand.
    pub command: Option<Vec<String>>,
    pub metric: String,
    /// "maximize" or "minimize".
    pub direction: String,
    /// The hyperparameters' names, in the spec's order.
    pub params: Vec<String>,
    /// Each hyperparameter's choices (empty for a number); left out when every one is a
    /// number, so that journals from before categorical parameters read as they were.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<Vec<String>>,
}

impl Origin {
    /// How the journal writes and reads its entries' values.
    pub fn codec(&self) -> Codec {
        if self.choices.is_empty() {
            Codec::numeric(self.params.clone())
        } else {
            Codec {
                names: self.params.clone(),
                choices: self.choices.clone(),
            }
        }
    }

    /// What differs from `other`, for a refusal ("the command was [..], is now [..]").
    fn changes(&self, now: &Origin) -> Vec<String> {
        let mut out = Vec::new();
        let show = |c: &Option<Vec<String>>| match c {
            None => "evaluation by hand (external)".to_string(),
            Some(a) => format!("{a:?}"),
        };
        if self.command != now.command {
            out.push(format!(
                "the command was {}, is now {}",
                show(&self.command),
                show(&now.command)
            ));
        }
        if self.metric != now.metric || self.direction != now.direction {
            out.push(format!(
                "the metric was {:?} ({}), is now {:?} ({})",
                self.metric, self.direction, now.metric, now.direction
            ));
        }
        if self.params != now.params {
            out.push(format!(
                "the hyperparameters were {:?}, are now {:?}",
                self.params, now.params
            ));
        } else if self.choices != now.choices {
            out.push(format!(
                "the categorical choices were {:?}, are now {:?}",
                self.choices, now.choices
            ));
        }
        out
    }
}

#[derive(Serialize, Deserialize)]
struct Header {
    fbo_journal: u32,
    objective: Origin,
}

/// What the journal knows of one evaluation.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The metric and the seconds it cost.
    Done(f64, f64),
    /// Failed after its retries, recorded and skipped; the message says why.
    Failed(String),
}

impl Outcome {
    /// The same evaluation told twice: the same value (bit for bit) or the same failure.
    pub fn agrees(&self, other: &Outcome) -> bool {
        match (self, other) {
            (Outcome::Done(a, _), Outcome::Done(b, _)) => a.to_bits() == b.to_bits(),
            (Outcome::Failed(_), Outcome::Failed(_)) => true,
            _ => false,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Outcome::Done(m, _) => format!("metric {m}"),
            Outcome::Failed(_) => "a failure".into(),
        }
    }
}

/// Checks what an entry would record before it is written: a value that JSON cannot hold, or
/// a cost that is not a duration, would make the journal unreadable or wrong.
pub fn check_values(metric: Option<f64>, cost_s: f64) -> std::result::Result<(), String> {
    if let Some(m) = metric
        && !m.is_finite()
    {
        return Err(format!("the metric must be a finite number, got {m}"));
    }
    if !(cost_s.is_finite() && cost_s >= 0.0) {
        return Err(format!(
            "the cost must be a finite number of seconds >= 0, got {cost_s}"
        ));
    }
    Ok(())
}

/// Finished evaluations held by the journals this process opened (what they held, and what
/// it recorded since): what an interrupt can say is safe.
static KEPT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many finished evaluations the journals of this process hold.
pub fn kept() -> usize {
    KEPT.load(std::sync::atomic::Ordering::Relaxed)
}

struct State {
    /// Each finished evaluation and the journal line it came from (0: this process).
    done: HashMap<Key, (Outcome, usize)>,
    asked: HashMap<Key, Entry>,
    file: Option<File>,
    /// Evaluations this process recorded as done, and the seconds they cost.
    new: (usize, f64),
}

pub struct Journal {
    path: Option<PathBuf>,
    codec: Codec,
    state: Mutex<State>,
}

/// What an entry records: a finished evaluation's outcome, or None for a query handed out
/// by `fbo ask` ("asked"); why it is no entry otherwise.
fn outcome_of(e: &Entry) -> std::result::Result<Option<Outcome>, String> {
    match (e.status.as_str(), e.metric) {
        ("ok", Some(m)) => Ok(Some(Outcome::Done(m, e.cost_s))),
        ("ok", None) => Err("an \"ok\" entry without a metric".into()),
        ("failed", _) => Ok(Some(Outcome::Failed(e.error.clone().unwrap_or_default()))),
        ("asked", None) => Ok(None),
        ("asked", Some(_)) => Err("an \"asked\" entry with a metric".into()),
        (other, _) => Err(format!("unknown status {other:?}")),
    }
}

/// The raw values of an entry, in the codec's order, from its `params`.
fn raw_of(e: &Entry, codec: &Codec) -> Option<Vec<f64>> {
    codec.from_json(&e.params)
}

/// What reading a journal file found: whether it has its header, how many bytes are whole
/// lines (an entry cut short by a kill follows), and whether the last entry lacks its newline.
struct Read {
    header_seen: bool,
    complete: usize,
    needs_newline: bool,
}

/// How many bytes of `text` are whole lines, and whether the last of them lacks its
/// newline: a last line without one counts if it parses as an entry (a write cut short
/// leaves a fragment that does not).
fn complete_prefix(text: &[u8]) -> (usize, bool) {
    let complete = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    if complete < text.len() {
        let tail = String::from_utf8_lossy(&text[complete..]);
        if serde_json::from_str::<Entry>(tail.trim()).is_ok() {
            return (text.len(), true);
        }
    }
    (complete, false)
}

/// Whether `line` is a journal header; refused if it names another objective than `origin`.
fn is_header_of(path: &Path, line: &str, origin: &Origin) -> Result<bool> {
    if !line.contains(HEADER_TAG) {
        return Ok(false);
    }
    let Ok(h) = serde_json::from_str::<Header>(line) else {
        return Ok(false);
    };
    if h.objective != *origin {
        return Err(FboError::spec(
            path,
            "",
            format!(
                "holds evaluations of another objective ({}); its values cannot be replayed for this spec: move the file away or choose another folder (`fbo run --overwrite` sets it aside)",
                h.objective.changes(origin).join("; ")
            ),
        ));
    }
    Ok(true)
}

/// Reads the journal text of `path` into `done` and `asked`: refused if it holds another
/// objective's values or an evaluation with two outcomes (also against what `done` held).
fn read_entries(
    path: &Path,
    origin: &Origin,
    codec: &Codec,
    text: &[u8],
    done: &mut HashMap<Key, (Outcome, usize)>,
    asked: &mut HashMap<Key, Entry>,
) -> Result<Read> {
    let io = |e| FboError::io(path, e);
    let mut header_seen = false;
    let bad = |n: usize, msg: String| {
        FboError::spec(
            path,
            "",
            format!(
                "line {n}: {msg}; the file is fbo's record of finished evaluations (move it away, or choose another folder, to start anew)"
            ),
        )
    };
    let (complete, needs_newline) = complete_prefix(text);
    for (i, line) in BufReader::new(&text[..complete]).lines().enumerate() {
        let n = i + 1;
        let line = line.map_err(io)?;
        if line.trim().is_empty() {
            continue;
        }
        if is_header_of(path, &line, origin)? {
            header_seen = true;
            continue;
        }
        // Values are replayed only with the header that says whose they are: a journal whose
        // first line was removed (or another file of JSON lines) could belong to anything.
        if !header_seen {
            return Err(bad(
                n,
                "an entry before the journal's header (its first line, naming the objective the values were measured with, is missing or was removed)".into(),
            ));
        }
        let e: Entry = serde_json::from_str(&line)
            .map_err(|err| bad(n, format!("not a journal entry ({err})")))?;
        let raw = raw_of(&e, codec).ok_or_else(|| {
            bad(
                n,
                format!(
                    "its params do not give every hyperparameter of this spec ({})",
                    codec.names.join(", ")
                ),
            )
        })?;
        let k = key(&e.request, &raw);
        let Some(outcome) = outcome_of(&e).map_err(|m| bad(n, m))? else {
            asked.insert(k, e);
            continue;
        };
        if let Outcome::Done(metric, cost) = outcome {
            check_values(Some(metric), cost).map_err(|m| bad(n, m))?;
        }
        match done.get(&k) {
            Some((old, line)) if !old.agrees(&outcome) => {
                return Err(bad(
                    n,
                    format!(
                        "records {} for agent {} ({}, run {}, iteration {}), which line {line} recorded as {}: one evaluation with two outcomes",
                        outcome.describe(),
                        e.request.agent,
                        e.request.scope,
                        e.request.run,
                        e.request.iteration,
                        old.describe()
                    ),
                ));
            }
            Some(_) => {}
            None => {
                done.insert(k, (outcome, n));
            }
        }
    }
    Ok(Read {
        header_seen,
        complete,
        needs_newline,
    })
}

impl Journal {
    /// A journal kept in memory only (library use, tests).
    pub fn in_memory(codec: Codec) -> Self {
        Journal {
            path: None,
            codec,
            state: Mutex::new(State {
                done: HashMap::new(),
                asked: HashMap::new(),
                file: None,
                new: (0, 0.0),
            }),
        }
    }

    /// Opens (or creates) the journal at `path` for the objective `origin` and reads what it
    /// holds. A journal written for another objective is refused, saying what changed; so is
    /// one that records two different outcomes of one evaluation. A last line cut short by a
    /// kill is an evaluation that never finished: it is dropped from the file so that appends
    /// start on a line of their own; a complete last line that only lacks its newline is kept.
    pub fn open(path: &Path, origin: &Origin) -> Result<Self> {
        let io = |e| FboError::io(path, e);
        let codec = origin.codec();
        let mut done: HashMap<Key, (Outcome, usize)> = HashMap::new();
        let mut asked = HashMap::new();
        let (mut header_seen, mut needs_newline) = (false, false);
        if path.exists() {
            let text = std::fs::read(path).map_err(io)?;
            let read = read_entries(path, origin, &codec, &text, &mut done, &mut asked)?;
            header_seen = read.header_seen;
            needs_newline = read.needs_newline;
            let complete = read.complete;
            if complete < text.len() {
                let f = OpenOptions::new().write(true).open(path).map_err(io)?;
                f.set_len(complete as u64).map_err(io)?;
            }
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(io)?;
        let mut prefix = String::new();
        if needs_newline {
            prefix.push('\n');
        }
        // A new journal says whose values it holds (one with entries has its header: see
        // read_entries).
        if !header_seen {
            let h = Header {
                fbo_journal: 1,
                objective: origin.clone(),
            };
            prefix += &serde_json::to_string(&h)
                .map_err(|e| FboError::Run(format!("journal header: {e}")))?;
            prefix.push('\n');
        }
        if !prefix.is_empty() {
            file.write_all(prefix.as_bytes())
                .and_then(|_| file.sync_data())
                .map_err(io)?;
        }
        KEPT.fetch_add(done.len(), std::sync::atomic::Ordering::Relaxed);
        Ok(Journal {
            path: Some(path.to_path_buf()),
            codec,
            state: Mutex::new(State {
                done,
                asked,
                file: Some(file),
                new: (0, 0.0),
            }),
        })
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Finished evaluations (done or failed) of the runs `runs` selects.
    pub fn finished_in(&self, runs: impl Fn(usize) -> bool) -> usize {
        let s = self.state.lock().expect("journal lock");
        s.done.keys().filter(|(req, _)| runs(req.run)).count()
    }

    /// Evaluations this process recorded as done, and their mean seconds (None before one).
    pub fn new_evaluations(&self) -> (usize, Option<f64>) {
        let (n, cost) = self.state.lock().expect("journal lock").new;
        (n, (n > 0).then(|| cost / n as f64))
    }

    /// Also replays the journal another process writes at `path` (a shard's), without
    /// writing to it: its whole lines, refused as `open` refuses. Returns how many finished
    /// evaluations it added.
    pub fn read_also(&self, path: &Path, origin: &Origin) -> Result<usize> {
        let text = std::fs::read(path).map_err(|e| FboError::io(path, e))?;
        let mut s = self.state.lock().expect("journal lock");
        let before = s.done.len();
        let State { done, asked, .. } = &mut *s;
        read_entries(path, origin, &self.codec, &text, done, asked)?;
        let added = s.done.len() - before;
        KEPT.fetch_add(added, std::sync::atomic::Ordering::Relaxed);
        Ok(added)
    }

    /// The objective named by the header of the journal at `path` (None without one).
    pub fn origin_of(path: &Path) -> Option<Origin> {
        // The header is the first line: the rest of a long journal is not read.
        let first = BufReader::new(File::open(path).ok()?)
            .lines()
            .map_while(|l| l.ok())
            .find(|l| !l.trim().is_empty())?;
        serde_json::from_str::<Header>(&first)
            .ok()
            .map(|h| h.objective)
    }

    /// The outcome of the request's evaluation at the raw values `raw`, if it finished.
    pub fn get(&self, request: &Request, raw: &[f64]) -> Option<Outcome> {
        let s = self.state.lock().expect("journal lock");
        s.done.get(&key(request, raw)).map(|(o, _)| o.clone())
    }

    pub fn was_asked(&self, request: &Request, raw: &[f64]) -> bool {
        let s = self.state.lock().expect("journal lock");
        s.asked.contains_key(&key(request, raw))
    }

    /// Queries handed out by `fbo ask` with no result yet, in (scope, run, agent,
    /// iteration) order.
    pub fn outstanding(&self) -> Vec<Entry> {
        let s = self.state.lock().expect("journal lock");
        let mut out: Vec<Entry> = s
            .asked
            .iter()
            .filter(|(k, _)| !s.done.contains_key(*k))
            .map(|(_, e)| e.clone())
            .collect();
        out.sort_by(|a, b| {
            let ka = (
                &a.request.scope,
                a.request.run,
                a.request.agent,
                a.request.iteration,
            );
            let kb = (
                &b.request.scope,
                b.request.run,
                b.request.agent,
                b.request.iteration,
            );
            ka.cmp(&kb)
        });
        out
    }

    /// Queries handed out by `fbo ask` that have an outcome already, with that outcome and
    /// the journal line that recorded it (0: this process): what a repeated `fbo tell`
    /// finds told before.
    pub fn answered(&self) -> Vec<(Entry, Outcome, usize)> {
        let s = self.state.lock().expect("journal lock");
        s.asked
            .iter()
            .filter_map(|(k, e)| s.done.get(k).map(|(o, l)| (e.clone(), o.clone(), *l)))
            .collect()
    }

    /// Every finished evaluation: who asked, the raw values and the outcome, in the order
    /// (scope, run, agent, iteration), then the journal line that recorded it (then the
    /// values, for lines of two shards' journals).
    pub fn finished(&self) -> Vec<(Request, Vec<f64>, Outcome)> {
        let s = self.state.lock().expect("journal lock");
        let mut out: Vec<_> = s
            .done
            .iter()
            .map(|((req, bits), (o, line))| (req, *line, bits, o))
            .collect();
        out.sort_by(|a, b| {
            let (x, y) = (a.0, b.0);
            (x.scope.as_str(), x.run, x.agent, x.iteration)
                .cmp(&(y.scope.as_str(), y.run, y.agent, y.iteration))
                .then(a.1.cmp(&b.1))
                .then(a.2.cmp(b.2))
        });
        out.into_iter()
            .map(|(req, _, bits, o)| {
                let raw = bits.iter().map(|b| f64::from_bits(*b)).collect();
                (req.clone(), raw, o.clone())
            })
            .collect()
    }

    /// Number of evaluations recorded as failed (skipped).
    pub fn failures(&self) -> usize {
        let s = self.state.lock().expect("journal lock");
        s.done
            .values()
            .filter(|(o, _)| matches!(o, Outcome::Failed(_)))
            .count()
    }

    /// Number of finished evaluations (done or failed).
    pub fn len(&self) -> usize {
        self.state.lock().expect("journal lock").done.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends `entry` (flushed and synced to disk before this returns) and remembers it.
    /// An evaluation already recorded with the same outcome is not written twice; one
    /// recorded with another outcome is refused, as are values the journal cannot hold.
    pub fn record(&self, entry: &Entry) -> Result<()> {
        let fail = |msg: String| {
            FboError::Run(format!(
                "{}: {msg}",
                self.path
                    .as_deref()
                    .map_or("evaluations journal".into(), |p| p.display().to_string())
            ))
        };
        check_values(entry.metric, entry.cost_s).map_err(|m| fail(format!("not recorded: {m}")))?;
        let raw = raw_of(entry, &self.codec)
            .ok_or_else(|| fail("an entry without every hyperparameter".into()))?;
        let k = key(&entry.request, &raw);
        let outcome = outcome_of(entry).map_err(fail)?;
        let mut s = self.state.lock().expect("journal lock");
        match (&outcome, s.done.get(&k)) {
            (Some(new), Some((old, line))) if !old.agrees(new) => {
                return Err(fail(format!(
                    "agent {} ({}, run {}, iteration {}) already has {}{}; {} was not recorded",
                    entry.request.agent,
                    entry.request.scope,
                    entry.request.run,
                    entry.request.iteration,
                    old.describe(),
                    if *line > 0 {
                        format!(" (line {line})")
                    } else {
                        String::new()
                    },
                    new.describe()
                )));
            }
            (Some(_), Some(_)) => return Ok(()),
            (None, _) if s.asked.contains_key(&k) || s.done.contains_key(&k) => return Ok(()),
            _ => {}
        }
        if let Some(f) = s.file.as_mut() {
            let mut line = serde_json::to_string(entry)
                .map_err(|e| FboError::Run(format!("journal entry: {e}")))?;
            line.push('\n');
            let path = self.path.clone().unwrap_or_default();
            f.write_all(line.as_bytes())
                .and_then(|_| f.flush())
                .and_then(|_| f.sync_data())
                .map_err(|e| FboError::io(&path, e))?;
        }
        match outcome {
            Some(o) => {
                if let Outcome::Done(_, cost) = o {
                    s.new.0 += 1;
                    s.new.1 += cost;
                }
                s.done.insert(k, (o, 0));
                if s.file.is_some() {
                    KEPT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
            None => {
                s.asked.insert(k, entry.clone());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin() -> Origin {
        Origin {
            command: Some(vec!["./train".into()]),
            metric: "accuracy".into(),
            direction: "maximize".into(),
            params: vec!["a".into(), "b".into()],
            choices: Vec::new(),
        }
    }

    const RAW: [f64; 2] = [0.1, 1.0 / 3.0];

    fn entry(iteration: i64, status: &str, metric: Option<f64>) -> Entry {
        Entry {
            request: Request::new("TS", 0, 1, iteration),
            x: vec![0.5, 0.25],
            params: origin().codec().json(&RAW),
            status: status.into(),
            metric,
            cost_s: 0.5,
            error: None,
        }
    }

    #[test]
    fn entries_survive_reopening_and_a_torn_last_line_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("evaluations.jsonl");
        let j = Journal::open(&path, &origin()).unwrap();
        j.record(&entry(1, "ok", Some(0.25))).unwrap();
        j.record(&entry(2, "asked", None)).unwrap();
        j.record(&entry(1, "ok", Some(0.25))).unwrap(); // already recorded: not written again
        drop(j);
        // A kill in the middle of a write leaves part of a line.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"scope\":\"TS\",\"ru").unwrap();
        drop(f);
        let j = Journal::open(&path, &origin()).unwrap();
        let x = RAW;
        assert_eq!(
            j.get(&Request::new("TS", 0, 1, 1), &x),
            Some(Outcome::Done(0.25, 0.5))
        );
        assert!(j.was_asked(&Request::new("TS", 0, 1, 2), &x));
        assert_eq!(j.get(&Request::new("TS", 0, 1, 2), &x), None);
        // Other raw values of the same request are another evaluation.
        assert_eq!(j.get(&Request::new("TS", 0, 1, 1), &[0.1, 0.3]), None);
        j.record(&entry(2, "ok", Some(0.5))).unwrap();
        drop(j);
        let text = std::fs::read_to_string(&path).unwrap();
        // The header and three entries.
        assert_eq!(text.lines().count(), 4, "{text}");
        assert!(text.ends_with('\n'));
    }

    /// A journal holding its header and one entry: (its folder, its path, its text).
    fn one_entry() -> (tempfile::TempDir, PathBuf, String) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("evaluations.jsonl");
        let j = Journal::open(&path, &origin()).unwrap();
        j.record(&entry(1, "ok", Some(0.25))).unwrap();
        drop(j);
        let text = std::fs::read_to_string(&path).unwrap();
        (dir, path, text)
    }

    #[test]
    fn a_journal_without_its_header_is_refused_not_replayed() {
        let (_dir, path, text) = one_entry();
        let headless: String = text.lines().skip(1).map(|l| format!("{l}\n")).collect();
        std::fs::write(&path, &headless).unwrap();
        let e = Journal::open(&path, &origin())
            .err()
            .expect("refused")
            .to_string();
        assert!(
            e.contains("line 1: an entry before the journal's header"),
            "{e}"
        );
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            headless,
            "left as it was"
        );
    }

    #[test]
    fn a_complete_last_line_without_its_newline_is_kept() {
        let (_dir, path, text) = one_entry();
        std::fs::write(&path, text.trim_end_matches('\n')).unwrap();
        let j = Journal::open(&path, &origin()).unwrap();
        assert_eq!(
            j.get(&Request::new("TS", 0, 1, 1), &RAW),
            Some(Outcome::Done(0.25, 0.5))
        );
        j.record(&entry(2, "ok", Some(0.5))).unwrap();
        drop(j);
        let j = Journal::open(&path, &origin()).unwrap();
        assert_eq!(j.len(), 2);
    }

    #[test]
    fn values_a_journal_cannot_hold_are_refused_before_they_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("evaluations.jsonl");
        let j = Journal::open(&path, &origin()).unwrap();
        let before = std::fs::read(&path).unwrap();
        let mut e = entry(1, "ok", Some(0.25));
        e.cost_s = f64::NAN;
        assert!(j.record(&e).is_err());
        e.cost_s = -1.0;
        assert!(j.record(&e).is_err());
        e.cost_s = 1.0;
        e.metric = Some(f64::INFINITY);
        assert!(j.record(&e).is_err());
        assert_eq!(std::fs::read(&path).unwrap(), before);
        assert!(j.is_empty());
    }

    #[test]
    fn two_outcomes_of_one_evaluation_are_refused_naming_the_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("evaluations.jsonl");
        let j = Journal::open(&path, &origin()).unwrap();
        j.record(&entry(1, "ok", Some(0.25))).unwrap();
        let e = j
            .record(&entry(1, "ok", Some(0.75)))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("already has metric 0.25") && e.contains("0.75"),
            "{e}"
        );
        drop(j);
        // Appended by hand: the journal no longer says one thing.
        let line = serde_json::to_string(&entry(1, "ok", Some(0.75))).unwrap();
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        writeln!(f, "{line}").unwrap();
        drop(f);
        let e = Journal::open(&path, &origin()).err().unwrap();
        assert_eq!(e.exit_code(), 2);
        let e = e.to_string();
        assert!(
            e.contains("line 3") && e.contains("line 2 recorded as metric 0.25"),
            "{e}"
        );
    }

    #[test]
    fn a_journal_of_another_objective_is_refused_saying_what_changed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("evaluations.jsonl");
        Journal::open(&path, &origin())
            .unwrap()
            .record(&entry(1, "ok", Some(0.25)))
            .unwrap();
        let mut other = origin();
        other.command = Some(vec!["./other".into()]);
        other.params.push("c".into());
        let e = Journal::open(&path, &other).err().unwrap().to_string();
        assert!(
            e.contains("the command was [\"./train\"], is now [\"./other\"]"),
            "{e}"
        );
        assert!(e.contains("hyperparameters were"), "{e}");
    }
}
