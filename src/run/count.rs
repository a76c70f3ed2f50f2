//! How many evaluations of a command objective a spec makes: the number a user pays for in
//! training runs. Counted, not derived: one run of every algorithm is played on a stand-in
//! objective, and every distinct request (scope, agent, iteration) at its point is one
//! evaluation, as the journal counts them (initial points and senders' histories shared by
//! algorithms count once). Every run of a spec asks the same requests, so one run is counted.

use crate::error::Result;
use crate::objective::journal::{Key, Request};
use crate::objective::{Evaluate, Landscape, Point};
use crate::spec::Spec;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

/// A cheap smooth function standing in for the user's program, remembering what it was asked.
struct StandIn {
    asked: Arc<Mutex<HashSet<Key>>>,
}

impl Evaluate for StandIn {
    fn evaluate(&self, req: &Request, point: &Point, raw: &[f64]) -> Result<(f64, f64)> {
        self.asked
            .lock()
            .expect("stand-in")
            .insert(crate::objective::journal::key(req, raw));
        let f = -point.x.iter().map(|u| (u - 0.3).powi(2)).sum::<f64>();
        Ok((f, 0.0))
    }
}

/// Evaluations per run of `spec` by who asks for them: `init` (initial points shared by the
/// algorithms that draw from the whole space), `senders` (other agents' histories), or an
/// algorithm's label (its own initial area and its iterations); in that order, the
/// algorithms as the spec lists them, those that ask for nothing left out.
pub fn per_run(spec: &Spec) -> Result<Vec<(String, usize)>> {
    let asked = Arc::new(Mutex::new(HashSet::new()));
    let space = Arc::new(spec.objective.space());
    let land = Arc::new(Landscape::unmemoised(
        space,
        spec.total_agents(),
        Box::new(StandIn {
            asked: asked.clone(),
        }),
    ));
    for a in 0..spec.algorithms.len() {
        crate::run::unit::run_one(spec, a, 0, land.clone())?;
    }
    let mut by_scope: HashMap<String, usize> = HashMap::new();
    for (req, _) in asked.lock().expect("stand-in").iter() {
        let who = match req.scope.as_str() {
            s if s.starts_with("init ") => s["init ".len()..].to_string(),
            s => s.trim_end_matches(" senders").to_string(),
        };
        let who = if who == crate::algorithm::agent::SENDERS {
            "senders".to_string()
        } else {
            who
        };
        *by_scope.entry(who).or_insert(0) += 1;
    }
    let order = ["init".to_string(), "senders".to_string()]
        .into_iter()
        .chain(spec.algorithms.iter().map(|a| a.label.clone()));
    let mut out: Vec<(String, usize)> = order
        .filter_map(|k| by_scope.remove(&k).map(|n| (k, n)))
        .collect();
    // Anything else (none is expected) still counts.
    let mut rest: Vec<(String, usize)> = by_scope.into_iter().collect();
    rest.sort();
    out.extend(rest);
    Ok(out)
}

/// "144 per run: init 9, senders 24, TS 45, FTS 66" for messages.
pub fn describe(by_scope: &[(String, usize)]) -> String {
    let total: usize = by_scope.iter().map(|(_, n)| n).sum();
    let parts: Vec<String> = by_scope.iter().map(|(k, n)| format!("{k} {n}")).collect();
    format!("{total} per run ({})", parts.join(", "))
}
