//! The evaluations journal: every finished evaluation of a command (or reported with
//! `fbo tell`) as one JSON line, appended and synced before the algorithm sees the value.
//! A run is deterministic given its values, so a rerun replays the journal: each evaluation
//! it asks for again is found here and not started twice. `fbo ask` records the queries it
//! handed out the same way, so it can tell outstanding ones from new ones.

use crate::error::{FboError, Result};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

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

/// Hyperparameter values by name, as JSON: a journal entry's `params`, and what a command
/// reads on stdin.
pub fn params(names: &[String], raw: &[f64]) -> serde_json::Map<String, serde_json::Value> {
    names
        .iter()
        .zip(raw)
        .map(|(n, v)| (n.clone(), serde_json::json!(v)))
        .collect()
}

type Key = (Request, Vec<u64>);

fn key(request: &Request, x: &[f64]) -> Key {
    (request.clone(), x.iter().map(|v| v.to_bits()).collect())
}

/// What the journal knows of one evaluation.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The metric and the seconds it cost.
    Done(f64, f64),
    /// Failed after its retries, recorded and skipped; the message says why.
    Failed(String),
}

struct State {
    done: HashMap<Key, Outcome>,
    asked: HashMap<Key, Entry>,
    file: Option<File>,
}

pub struct Journal {
    path: Option<PathBuf>,
    state: Mutex<State>,
}

impl Journal {
    /// A journal kept in memory only (library use, tests).
    pub fn in_memory() -> Self {
        Journal {
            path: None,
            state: Mutex::new(State {
                done: HashMap::new(),
                asked: HashMap::new(),
                file: None,
            }),
        }
    }

    /// Opens (or creates) the journal at `path` and reads what it holds. A last line cut
    /// short by a kill is an evaluation that never finished: it is dropped from the file so
    /// that appends start on a line of their own.
    pub fn open(path: &Path) -> Result<Self> {
        let io = |e| FboError::io(path, e);
        let mut done = HashMap::new();
        let mut asked = HashMap::new();
        if path.exists() {
            let text = std::fs::read(path).map_err(io)?;
            let complete = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            for (n, line) in BufReader::new(&text[..complete]).lines().enumerate() {
                let line = line.map_err(io)?;
                if line.trim().is_empty() {
                    continue;
                }
                let e: Entry = serde_json::from_str(&line).map_err(|err| {
                    FboError::Run(format!(
                        "{}: line {}: not a journal entry ({err}); the file is fbo's record of finished evaluations and must not be edited",
                        path.display(),
                        n + 1
                    ))
                })?;
                let k = key(&e.request, &e.x);
                match e.status.as_str() {
                    "ok" => {
                        let metric = e.metric.ok_or_else(|| {
                            FboError::Run(format!(
                                "{}: line {}: an \"ok\" entry without a metric",
                                path.display(),
                                n + 1
                            ))
                        })?;
                        done.insert(k, Outcome::Done(metric, e.cost_s));
                    }
                    "failed" => {
                        done.insert(k, Outcome::Failed(e.error.unwrap_or_default()));
                    }
                    _ => {
                        asked.insert(k, e);
                    }
                }
            }
            if complete < text.len() {
                let f = OpenOptions::new().write(true).open(path).map_err(io)?;
                f.set_len(complete as u64).map_err(io)?;
            }
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(io)?;
        Ok(Journal {
            path: Some(path.to_path_buf()),
            state: Mutex::new(State {
                done,
                asked,
                file: Some(file),
            }),
        })
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    pub fn get(&self, request: &Request, x: &[f64]) -> Option<Outcome> {
        let s = self.state.lock().expect("journal lock");
        s.done.get(&key(request, x)).cloned()
    }

    pub fn was_asked(&self, request: &Request, x: &[f64]) -> bool {
        let s = self.state.lock().expect("journal lock");
        s.asked.contains_key(&key(request, x))
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

    /// Number of finished evaluations (done or failed).
    pub fn len(&self) -> usize {
        self.state.lock().expect("journal lock").done.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends `entry` (flushed and synced to disk before this returns) and remembers it.
    /// An evaluation already recorded is not written twice.
    pub fn record(&self, entry: &Entry) -> Result<()> {
        let k = key(&entry.request, &entry.x);
        let mut s = self.state.lock().expect("journal lock");
        let outcome = match (entry.status.as_str(), entry.metric) {
            ("ok", Some(m)) => Some(Outcome::Done(m, entry.cost_s)),
            ("failed", _) => Some(Outcome::Failed(entry.error.clone().unwrap_or_default())),
            _ => None,
        };
        match &outcome {
            Some(_) if s.done.contains_key(&k) => return Ok(()),
            None if s.asked.contains_key(&k) || s.done.contains_key(&k) => return Ok(()),
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
                s.done.insert(k, o);
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

    fn entry(iteration: i64, status: &str, metric: Option<f64>) -> Entry {
        Entry {
            request: Request::new("TS", 0, 1, iteration),
            x: vec![0.1, 1.0 / 3.0],
            params: serde_json::Map::new(),
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
        let j = Journal::open(&path).unwrap();
        j.record(&entry(1, "ok", Some(0.25))).unwrap();
        j.record(&entry(2, "asked", None)).unwrap();
        j.record(&entry(1, "ok", Some(0.99))).unwrap(); // already recorded: ignored
        drop(j);
        // A kill in the middle of a write leaves part of a line.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"scope\":\"TS\",\"ru").unwrap();
        drop(f);
        let j = Journal::open(&path).unwrap();
        let x = [0.1, 1.0 / 3.0];
        assert_eq!(
            j.get(&Request::new("TS", 0, 1, 1), &x),
            Some(Outcome::Done(0.25, 0.5))
        );
        assert!(j.was_asked(&Request::new("TS", 0, 1, 2), &x));
        assert_eq!(j.get(&Request::new("TS", 0, 1, 2), &x), None);
        // Another point of the same request is another evaluation.
        assert_eq!(j.get(&Request::new("TS", 0, 1, 1), &[0.1, 0.3]), None);
        j.record(&entry(2, "ok", Some(0.5))).unwrap();
        drop(j);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 3, "{text}");
        assert!(text.ends_with('\n'));
    }
}
