//! Agents on machines of their own (issue 29). A federated algorithm's round is split into
//! what each agent does on its own data (`AgentNode`: its query, evaluated where its data are,
//! and the message it sends) and what the server does with the messages that arrived
//! (`ServerNode`: select, clip, weight, add noise, and the point it broadcasts). Both journal
//! what they received, so either side can die and resume by replaying it: an agent never
//! redoes an evaluation and the server never redoes a round. The transport is not ours
//! (Flower, through the Python package); what crosses it is `wire`'s plain data.
//!
//! With no faults the nodes take exactly the simulation's steps on the same per-(run, agent,
//! purpose) streams (`Algorithm::propose` of a federated algorithm is the same three steps in
//! one process), so `Federation::finish` writes the bytes `fbo run --no-timing` writes.

pub mod secure;
pub mod wire;

use crate::algorithm::{self, Algorithm, Broadcast, Place, Query, Received, RunContext};
use crate::error::{FboError, Result};
use crate::math::rng::{Purpose, Rng, stream};
use crate::objective::{Landscape, Point, Request, Space};
use crate::run::outdir::{Claim, OutDir};
use crate::run::output;
use crate::run::runner;
use crate::run::unit::{Evaluator, Tracer, initial_queries};
use crate::spec::Spec;
use ndarray::Array1;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
pub use wire::{Instruction, Reply, SecureAsk, SecureReply, WirePoint, WireQuestion};

/// A spec as every node of a federation loads it: timing columns off (they measure one
/// process's clock), so that agents and server agree with `fbo run --no-timing`.
pub fn load_spec(path: &Path) -> Result<Spec> {
    let mut spec = Spec::load(path)?;
    spec.output.timing = false;
    if spec.has_sweep {
        return Err(FboError::spec(
            path,
            "sweep",
            "a federation runs one spec: remove the [sweep] table (or run each point's spec)",
        ));
    }
    Ok(spec)
}

/// The fingerprint of a spec that nodes exchange: the same for the same experiment (the
/// spec's settings as written, runs), whatever the folder each node keeps it in. Paths are
/// taken as written, not resolved: each site's `data` is its own (a hospital's own patients)
/// and the server may hold none.
pub fn fingerprint(spec: &Spec) -> String {
    let canonical = crate::spec::portable::as_written(&spec.source);
    let digest = Sha256::digest(runner::parts_fingerprint(spec, &canonical).as_bytes());
    crate::math::hex::bytes(&digest[..8])
}

/// Refuses an algorithm that cannot run federated, or an agent it does not trace.
fn federated_algorithm(
    spec: &Spec,
    alg_index: usize,
    run: usize,
    landscape: &Arc<Landscape>,
    place: Place,
) -> Result<Box<dyn Algorithm>> {
    let Some(alg_spec) = spec.algorithms.get(alg_index) else {
        return Err(FboError::Run(format!(
            "{}: there is no algorithm {alg_index} (the spec has {})",
            spec.path.display(),
            spec.algorithms.len()
        )));
    };
    if run >= spec.runs {
        return Err(FboError::Run(format!(
            "{}: there is no run {run} (runs = {})",
            spec.path.display(),
            spec.runs
        )));
    }
    let ctx = RunContext {
        spec,
        algorithm: alg_spec,
        run,
        landscape: landscape.clone(),
        senders: None,
        place,
    };
    refuse_secure_forms(spec, alg_index)?;
    if spec.parallel > 1 {
        return Err(FboError::spec(
            &spec.path,
            "parallel",
            "runs only in one process (pending evaluations are proposed as each returns; across machines a site answers a whole round at once): set parallel = 1, or batch = k for k evaluations per site per round",
        ));
    }
    // Across machines time is real: the simulated clock and its asynchronous server belong to
    // one process.
    if spec.clock.is_some() {
        return Err(FboError::spec(
            &spec.path,
            "clock",
            "runs only in one process (a simulated clock; across machines the clock is real and rounds are synchronous): remove [clock] and pace across machines",
        ));
    }
    // An agent's model lives on its own site; its beliefs are not sent to the server.
    if spec.output.beliefs {
        return Err(FboError::spec(
            &spec.path,
            "output.beliefs",
            "runs only in one process (an agent's model stays on its site); set it false across machines",
        ));
    }
    let mut alg = algorithm::build(&ctx)?;
    if alg.federated().is_none() {
        return Err(FboError::spec(
            &spec.path,
            format!("algorithm[{alg_index}].kind"),
            format!(
                "{}: this kind has no federated form (its agent and server steps); it runs only in one process",
                alg_spec.label
            ),
        ));
    }
    Ok(alg)
}

/// Secure aggregation runs across machines (`secure.rs`), with central or distributed noise
/// and the server's sample or self-sampling (each site draws its coin and noise shares from
/// its own per-round streams); the form whose messages carry an agreement's fits is refused
/// by name for now.
fn refuse_secure_forms(spec: &Spec, alg_index: usize) -> Result<()> {
    let Some(server) = spec.algorithms[alg_index].server.as_ref() else {
        return Ok(());
    };
    if server.secure.is_none() {
        return Ok(());
    }
    let why = if spec.algorithms[alg_index].shared == crate::spec::SharedModel::Agreed {
        Some((
            "surrogate.shared",
            "an agreement's fits travel beside the vector, which secure aggregation would have to hide too; not built yet across machines",
        ))
    } else if spec.output.server_view {
        Some((
            "output.server_view",
            "runs only in one process (across machines the server's log is its journal)",
        ))
    } else {
        None
    };
    match why {
        Some((key, why)) => Err(FboError::spec(
            &spec.path,
            key,
            format!("with server.secure: {why}"),
        )),
        None => Ok(()),
    }
}

/// One line of a node's journal: a finished round and what it received.
#[derive(Serialize, Deserialize)]
struct AgentEntry {
    round: usize,
    point: Option<WirePoint>,
    /// What the method shared with the agent this round (`Instruction::shared`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    shared: Vec<f64>,
    /// (f, cost) of each query of the round, as the objective returned them.
    values: Vec<(f64, f64)>,
    /// The queries' unit coordinates, to check a replay takes the same steps.
    queries: Vec<Vec<f64>>,
}

#[derive(Serialize, Deserialize)]
struct ServerEntry {
    round: usize,
    replies: Vec<Reply>,
    /// The step of secure aggregation these replies answer (1-4; `secure.rs`); absent for
    /// an evaluation round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    step: Option<usize>,
    /// The question of the round these replies answer (0, 1, ...; `Federated::question`);
    /// absent for an evaluation round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    asked: Option<usize>,
}

/// Appends one JSON line and makes it durable before the caller acts on it.
fn append_line(path: &Path, value: &impl Serialize) -> Result<()> {
    let mut line = serde_json::to_string(value).map_err(|e| FboError::Run(e.to_string()))?;
    line.push('\n');
    append_text(path, &line)
}

fn append_text(path: &Path, line: &str) -> Result<()> {
    if line.is_empty() {
        return Ok(());
    }
    let mut f = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| FboError::io(path, e))?;
    f.write_all(line.as_bytes())
        .and_then(|_| f.sync_data())
        .map_err(|e| FboError::io(path, e))
}

/// The complete lines of a journal (a last line cut by a crash is dropped, and cut off the
/// file so that the next append starts a line of its own).
fn read_lines<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Vec<T>> {
    let Ok(text) = fs::read_to_string(path) else {
        return Ok(Vec::new());
    };
    let whole = text.rfind('\n').map_or(0, |i| i + 1);
    if whole < text.len() {
        let f = fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| FboError::io(path, e))?;
        f.set_len(whole as u64).map_err(|e| FboError::io(path, e))?;
    }
    text[..whole]
        .lines()
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l)
                .map_err(|e| FboError::Run(format!("{} line {}: {e}", path.display(), i + 1)))
        })
        .collect()
}

/// The point of `space` a broadcast names, checked: a grid index inside the grid, or unit
/// coordinates of the box's dimension inside [0, 1].
fn point_of(space: &Space, w: &WirePoint) -> Result<Point> {
    let bad = |why: String| FboError::Run(format!("the server's point {why}"));
    match space.grid() {
        Some(grid) => {
            let i = w.index.ok_or_else(|| bad("has no grid index".into()))?;
            if i >= grid.len() {
                return Err(bad(format!(
                    "index {i} is outside the grid of {}",
                    grid.len()
                )));
            }
            Ok(grid.at(i))
        }
        None => {
            if w.x.len() != space.dim() || w.x.iter().any(|v| !(0.0..=1.0).contains(v)) {
                return Err(bad(format!(
                    "is not {} unit coordinates in [0, 1]: {:?}",
                    space.dim(),
                    w.x
                )));
            }
            Ok(space.point(w.x.clone()))
        }
    }
}

fn wire_point(p: &Point) -> WirePoint {
    WirePoint {
        x: p.x.clone(),
        index: p.index,
    }
}

/// One agent in one unit (algorithm, run): its own surrogate, streams and evaluations.
pub struct AgentNode {
    spec: Spec,
    print: String,
    alg_index: usize,
    run: usize,
    agent: usize,
    /// Whether the agent queries (a target); an FTS sender only sends.
    queries: bool,
    landscape: Arc<Landscape>,
    alg: Box<dyn Algorithm>,
    evaluator: Evaluator,
    tracer: Tracer,
    noise: Vec<Rng>,
    replies: BTreeMap<usize, Reply>,
    /// The queries of a round asked and not yet told.
    pending: Option<(usize, Vec<(Query, Request)>)>,
    journal: Option<PathBuf>,
    /// Under secure aggregation: the agent's own streams (key material, coin and noise
    /// shares), and its message of each round, held at the site (it leaves only masked).
    secure: Option<(secure::MemberStreams, BTreeMap<usize, Array1<f64>>)>,
}

impl AgentNode {
    /// Agent `agent` of run `run` of algorithm `alg_index`, journaling into `journal` (and
    /// replaying what it holds) when given.
    pub fn open(
        spec: &Spec,
        landscape: Arc<Landscape>,
        alg_index: usize,
        run: usize,
        agent: usize,
        journal: Option<PathBuf>,
    ) -> Result<Self> {
        let mut alg = federated_algorithm(spec, alg_index, run, &landscape, Place::Site(agent))?;
        let targets = alg.targets().to_vec();
        let members = alg
            .federated()
            .expect("a federated algorithm")
            .members(&targets);
        if !members.contains(&agent) {
            return Err(FboError::Run(format!(
                "{}: agent {agent} takes no part in {} (its agents: {members:?})",
                spec.path.display(),
                spec.algorithms[alg_index].label,
            )));
        }
        let queries = targets.contains(&agent);
        let label = spec.algorithms[alg_index].label.clone();
        let mut node = AgentNode {
            print: fingerprint(spec),
            alg_index,
            run,
            agent,
            queries,
            evaluator: Evaluator::new(landscape.clone(), &[agent], false),
            tracer: Tracer::new(spec, &label, run, landscape.clone(), 1),
            noise: vec![stream(spec.seed, run as u64, agent as u64, Purpose::Noise)],
            landscape,
            alg,
            replies: BTreeMap::new(),
            pending: None,
            journal: None,
            secure: spec.algorithms[alg_index]
                .server
                .as_ref()
                .and_then(|s| s.secure)
                .map(|_| {
                    let own = |purpose| stream(spec.seed, run as u64, agent as u64, purpose);
                    let streams = secure::MemberStreams {
                        keys: own(Purpose::SecureAggregation),
                        privacy: own(Purpose::AgentPrivacy),
                    };
                    (streams, BTreeMap::new())
                }),
            spec: spec.clone(),
        };
        if let Some(path) = &journal {
            for e in read_lines::<AgentEntry>(path)? {
                let ins = node.instruction_of(e.round, e.point.clone(), e.shared.clone());
                let queries = node.queries(&ins)?;
                let same = queries.len() == e.queries.len()
                    && queries
                        .iter()
                        .zip(&e.queries)
                        .all(|((q, _), x)| q.point.x == *x);
                if !same || e.values.len() != queries.len() {
                    return Err(FboError::Run(format!(
                        "{}: round {} of the journal is not what this spec asks (another spec or fbo version wrote it); move it away to start this agent afresh",
                        path.display(),
                        e.round
                    )));
                }
                node.tell(&ins, &queries, e.values)?;
            }
        }
        node.journal = journal;
        Ok(node)
    }

    fn instruction_of(
        &self,
        round: usize,
        point: Option<WirePoint>,
        shared: Vec<f64>,
    ) -> Instruction {
        Instruction {
            spec: self.print.clone(),
            algorithm: self.alg_index,
            run: self.run,
            round,
            point,
            shared,
            unanswered: Vec::new(),
            secure: None,
            question: None,
        }
    }

    /// `reply` as it leaves the site: with this agent's replies to the earlier rounds `ins`
    /// names as unanswered (its journal has them: the site paid for them, the transport lost
    /// them), and without trace rows where the site keeps them (`output.site_traces`).
    fn with_late(&self, ins: &Instruction, mut reply: Reply) -> Reply {
        reply.late = ins
            .unanswered_by(self.agent)
            .iter()
            .filter(|&&r| r < ins.round)
            .filter_map(|r| self.replies.get(r).cloned())
            .collect();
        if self.spec.output.site_traces {
            reply.rows.clear();
            for l in &mut reply.late {
                l.rows.clear();
            }
        }
        reply
    }

    /// This agent's trace rows of the rounds it has done, in round order (CSV lines without
    /// header): what the site keeps under `output.site_traces`.
    pub fn trace_rows(&self) -> String {
        self.replies.values().map(|r| r.rows.as_str()).collect()
    }

    /// Rounds this agent has finished.
    pub fn rounds_done(&self) -> usize {
        self.replies.len()
    }

    /// The agent's answer to `ins`: its queries of the round (the initial points at round 0,
    /// otherwise its choice given the server's point), evaluated on its own objective,
    /// observed, traced, and its message for the next round. A round already answered is
    /// answered again from memory (a resent instruction costs no evaluation).
    pub fn step(&mut self, ins: &Instruction) -> Result<Reply> {
        if ins.secure.is_some() {
            return self.secure_step(ins);
        }
        if ins.question.is_some() {
            return self.question_step(ins);
        }
        if let Some(r) = self.replies.get(&ins.round) {
            return Ok(self.with_late(ins, r.clone()));
        }
        let queries = self.queries(ins)?;
        let values = self.evaluator.values(
            &queries
                .iter()
                .map(|(q, r)| (q, r.clone()))
                .collect::<Vec<_>>(),
        )?;
        self.tell(ins, &queries, values)
    }

    /// The queries of round `ins.round` (none if it is answered already), for an objective
    /// the caller evaluates; asked again before `tell`, the same queries.
    pub fn queries(&mut self, ins: &Instruction) -> Result<Vec<(Query, Request)>> {
        if self.replies.contains_key(&ins.round) || ins.secure.is_some() || ins.question.is_some() {
            return Ok(Vec::new());
        }
        if let Some((round, q)) = &self.pending
            && *round == ins.round
        {
            return Ok(q.clone());
        }
        let q = self.draw(ins)?;
        self.pending = Some((ins.round, q.clone()));
        Ok(q)
    }

    /// The queries of round `ins.round`, checked against what this agent has done (the
    /// agent's streams move on: called once per round).
    fn draw(&mut self, ins: &Instruction) -> Result<Vec<(Query, Request)>> {
        self.check_addressed(ins, "an instruction")?;
        let last = self.replies.keys().next_back().copied();
        if last.is_some_and(|l| ins.round < l) || ins.round > self.spec.iterations {
            return Err(FboError::Run(format!(
                "round {} is not next for agent {} (its last round: {last:?}, iterations: {})",
                ins.round, self.agent, self.spec.iterations
            )));
        }
        let label = &self.spec.algorithms[self.alg_index].label;
        if ins.round == 0 || !self.replies.contains_key(&0) {
            // An agent that missed round 0 starts from its initial points when it joins.
            if ins.round != 0 {
                return Err(FboError::Run(format!(
                    "agent {} has not evaluated its initial points: it must answer round 0 first",
                    self.agent
                )));
            }
            let querying: &[usize] = if self.queries { &[self.agent] } else { &[] };
            let init = initial_queries(
                &self.spec,
                self.alg.as_ref(),
                label,
                self.run,
                querying,
                &self.landscape.space,
            );
            crate::run::unit::tell_given(&self.spec, &self.landscape, &init)?;
            return Ok(init);
        }
        if !self.queries {
            return Ok(Vec::new());
        }
        let point = match &ins.point {
            Some(w) => Some(point_of(&self.landscape.space, w)?),
            None => None,
        };
        let fed = self.alg.federated().expect("a federated algorithm");
        // The instruction carries what this agent receives (everyone's, or its own).
        let received = Received {
            point,
            shared: ins.shared.clone(),
        };
        let queries = fed.choose_round(self.agent, ins.round, &received)?;
        // The trace counts evaluations, as the runner does: the j-th query (from 0) of round
        // t is iteration (t - 1) batch + j + 1.
        let first = (ins.round - 1) * self.spec.batch;
        Ok(queries
            .into_iter()
            .enumerate()
            .map(|(j, q)| {
                let it = (first + j + 1) as i64;
                (q, Request::new(label.clone(), self.run, self.agent, it))
            })
            .collect())
    }

    /// Takes the (f, cost) of the queries `ask` gave for `ins`: journals them, observes them
    /// (y from the agent's noise stream), traces them, and draws the next round's message.
    pub fn tell(
        &mut self,
        ins: &Instruction,
        queries: &[(Query, Request)],
        values: Vec<(f64, f64)>,
    ) -> Result<Reply> {
        if ins.secure.is_some() && values.is_empty() {
            return self.secure_step(ins);
        }
        if ins.question.is_some() && values.is_empty() {
            return self.question_step(ins);
        }
        if let Some(r) = self.replies.get(&ins.round) {
            return Ok(self.with_late(ins, r.clone()));
        }
        match self.pending.take() {
            Some((round, q)) if round == ins.round && q.len() == values.len() => {}
            _ => {
                return Err(FboError::Run(format!(
                    "agent {}: {} values told for round {}, which was not asked (or asked {} queries)",
                    self.agent,
                    values.len(),
                    ins.round,
                    queries.len()
                )));
            }
        }
        if let Some(path) = &self.journal {
            append_line(
                path,
                &AgentEntry {
                    round: ins.round,
                    point: ins.point.clone(),
                    shared: ins.shared.clone(),
                    values: values.clone(),
                    queries: queries.iter().map(|(q, _)| q.point.x.clone()).collect(),
                },
            )?;
        }
        let batch: Vec<(&Query, Request)> = queries.iter().map(|(q, r)| (q, r.clone())).collect();
        let observed = self.evaluator.observed(&batch, values, &mut self.noise);
        let t = ins.round;
        let params = if t == 0 {
            0
        } else {
            self.alg.params_sent(self.agent, t)
        };
        let (mut seen, mut ys) = (Vec::new(), Vec::new());
        for ((q, req), (f, y, cost)) in queries.iter().zip(observed) {
            self.tracer
                .record(0, q, y, req.iteration, params, f, cost, 0.0);
            if !f.is_nan() {
                seen.push(q.clone());
                ys.push(y);
            }
        }
        // Observed one by one at round 0, as the runner does (the order is the agent's own).
        for (q, y) in seen.iter().zip(&ys) {
            self.alg.observe(std::slice::from_ref(q), &[*y]);
        }
        let fed = self.alg.federated().expect("a federated algorithm");
        let mut message = match t < self.spec.iterations {
            true => fed.message(self.agent, t + 1)?.map(|m| m.to_vec()),
            false => None,
        };
        // Under secure aggregation the message stays here; the reply says it is held.
        let mut secure = None;
        if let Some((_, held)) = &mut self.secure
            && let Some(m) = message.take()
        {
            held.insert(t, Array1::from(m));
            secure = Some(SecureReply::Ready);
        }
        let codec = self.landscape.space.codec();
        let csv = output::trace_csv(&self.tracer.rows, self.landscape.dim(), &codec)?;
        self.tracer.rows.clear();
        let body = csv
            .iter()
            .position(|&b| b == b'\n')
            .map_or(Vec::new(), |i| csv[i + 1..].to_vec());
        let reply = Reply {
            rows: String::from_utf8(body).expect("CSV is UTF-8"),
            message,
            secure,
            ..self.reply(t)
        };
        self.replies.insert(t, reply.clone());
        Ok(self.with_late(ins, reply))
    }
}

impl AgentNode {
    /// Refuses `what` (an instruction, a secure step) meant for another spec, algorithm or run.
    fn check_addressed(&self, ins: &Instruction, what: &str) -> Result<()> {
        if ins.spec != self.print || ins.algorithm != self.alg_index || ins.run != self.run {
            return Err(FboError::Run(format!(
                "{what} for spec {} algorithm {} run {} reached agent {} of spec {} algorithm {} run {}",
                ins.spec, ins.algorithm, ins.run, self.agent, self.print, self.alg_index, self.run
            )));
        }
        Ok(())
    }

    /// A mask step's privacy settings as this site's own spec has them: its coin at rate q
    /// under self-sampling, and noise shares under distributed noise. The site's epsilon
    /// rests on both, so a server that asks otherwise (by a bug, or to see a vector without
    /// the site's noise or coin) is refused rather than followed.
    fn check_privacy_part(&self, part: &wire::WirePart) -> Result<()> {
        let dp = self.spec.algorithms[self.alg_index]
            .server
            .as_ref()
            .and_then(|s| s.dp);
        let coin = dp.filter(|d| d.self_sampling).map(|d| d.q);
        let shares = dp.is_some_and(|d| matches!(d.noise, crate::privacy::Noise::Distributed(_)));
        if part.coin != coin
            || part.shares.is_some() != shares
            || (dp.is_some() != part.dp.is_some())
        {
            return Err(FboError::Run(format!(
                "agent {}: the server's mask step asks for coin {:?}, noise shares {}, DP {} where this site's spec has coin {coin:?}, noise shares {shares}, DP {}: refused (the site's privacy rests on its own settings)",
                self.agent,
                part.coin,
                part.shares.is_some(),
                part.dp.is_some(),
                dp.is_some()
            )));
        }
        Ok(())
    }

    /// The answer to a step of secure aggregation (`secure::answer`): nothing evaluated,
    /// nothing journaled (the keys are drawn again from the round's stream, the message is
    /// rebuilt by replaying the evaluations).
    fn secure_step(&mut self, ins: &Instruction) -> Result<Reply> {
        self.check_addressed(ins, "a secure-aggregation step")?;
        let ask = ins.secure.as_ref().expect("a secure step");
        if let SecureAsk::Mask { part, .. } = ask {
            self.check_privacy_part(part)?;
        }
        let Some((base, held)) = &self.secure else {
            return Err(FboError::Run(format!(
                "agent {}: a secure-aggregation step for an algorithm without server.secure",
                self.agent
            )));
        };
        let round = match ask {
            SecureAsk::Idle { round }
            | SecureAsk::Advertise { round }
            | SecureAsk::Share { round, .. }
            | SecureAsk::Mask { round, .. }
            | SecureAsk::Reveal { round, .. } => *round,
        };
        let answer = secure::answer(ask, self.agent, base, held.get(&round)).map_err(|e| {
            FboError::Run(format!("agent {}: secure round {round}: {e}", self.agent))
        })?;
        Ok(Reply {
            secure: Some(answer),
            ..self.reply(ins.round)
        })
    }

    /// The answer to the method's question before round `ins.round`'s broadcast, from this
    /// agent's data after its last evaluation: nothing evaluated, nothing journaled (the
    /// data are rebuilt by replaying the evaluations, and the answer from them).
    fn question_step(&mut self, ins: &Instruction) -> Result<Reply> {
        self.check_addressed(ins, "a question")?;
        let q = ins.question.as_ref().expect("a question");
        let answer = if q.ask.is_empty() {
            None
        } else {
            let done = ins.round.checked_sub(1);
            if done.is_none_or(|r| !self.replies.contains_key(&r)) {
                return Err(FboError::Run(format!(
                    "agent {}: a question before round {} for an agent that has not answered round {}",
                    self.agent,
                    ins.round,
                    ins.round.saturating_sub(1)
                )));
            }
            let fed = self.alg.federated().expect("a federated algorithm");
            Some(fed.answer(self.agent, ins.round, &q.ask)?)
        };
        Ok(Reply {
            answer,
            ..self.reply(ins.round)
        })
    }

    /// This site's reply to round `round` that carries nothing yet (no rows, message or
    /// answers): what each step fills in.
    fn reply(&self, round: usize) -> Reply {
        Reply {
            spec: self.print.clone(),
            algorithm: self.alg_index,
            run: self.run,
            round,
            agent: self.agent,
            rows: String::new(),
            message: None,
            late: Vec::new(),
            secure: None,
            answer: None,
        }
    }
}

/// The server of one unit (algorithm, run): the instructions it sends and the replies it
/// keeps, round by round.
pub struct ServerNode {
    spec: Spec,
    print: String,
    alg_index: usize,
    run: usize,
    alg: Box<dyn Algorithm>,
    /// Every agent that answers: the targets, which query, and any that only send.
    agents: Vec<usize>,
    targets: Vec<usize>,
    n: usize,
    columns: usize,
    round: usize,
    current: Option<Instruction>,
    messages: Vec<Option<Array1<f64>>>,
    rows: Vec<(usize, usize, String)>,
    notes: Vec<String>,
    journal: Option<PathBuf>,
    /// Where notes are appended as they happen (they outlive the journals).
    notes_file: Option<PathBuf>,
    /// Per agent: rounds in a row whose evaluation failed at its site.
    failed_in_a_row: Vec<usize>,
    /// Agents whose site reported a failure this round (no reply to wait for).
    failed_now: Vec<usize>,
    /// Agents whose reply the last round kept.
    answered: Vec<usize>,
    /// The server's broadcast of this round (what each agent receives).
    broadcast: Broadcast,
    /// This algorithm's privacy curves, computed when the operator first asks for progress.
    curves: Option<Vec<runner::PrivacyCurve>>,
    /// Under secure aggregation: the round being summed, which agents hold a message of the
    /// last evaluation round, and the broadcast its sum gave.
    phase: Option<secure::SecurePhase>,
    ready: Vec<bool>,
    released: Option<Broadcast>,
    /// Before this round's broadcast: the method's question being asked, and the answers to
    /// the questions asked so far (per question, per agent).
    asking: Option<Vec<f64>>,
    answers: Vec<Vec<Option<Vec<f64>>>>,
}

/// What a federation unit's operator sees after each round (the Flower log and `fbo run
/// --status`): the round kept, of the spec's iterations, who answered, and per guarantee of a
/// private algorithm the epsilon of the aggregates released so far (privacy.csv's row of
/// iteration `round`: the aggregate of round r's messages goes out with round r + 1's
/// instruction; 0 after the initial points).
pub fn progress_line(
    spec: &Spec,
    alg_index: usize,
    round: usize,
    answered: &[usize],
    agents: &[usize],
    curves: &[runner::PrivacyCurve],
) -> String {
    let what = if round == 0 {
        "round 0 (initial points)".to_string()
    } else {
        format!("round {round}")
    };
    let mut line = format!(
        "{what} of {}: {} of {} agents answered",
        spec.iterations,
        answered.len(),
        agents.len()
    );
    let missing: Vec<String> = agents
        .iter()
        .filter(|a| !answered.contains(a))
        .map(|a| a.to_string())
        .collect();
    if !missing.is_empty() {
        line += &format!(" (missing: {})", missing.join(", "));
    }
    for c in curves.iter().filter(|c| c.algorithm == alg_index) {
        let eps = round
            .checked_sub(1)
            .and_then(|i| c.epsilon.get(i))
            .copied()
            .unwrap_or(0.0);
        line += &format!(
            "; epsilon so far {eps:.4} ({}, against {})",
            c.accountant.name(),
            c.against.name()
        );
    }
    line
}

/// `fbo run --status`'s line on each federation unit in `out`: `progress_line` of its last
/// round from its server journal (None without a journal or before its first round). The
/// privacy curves, which do not depend on the unit, are computed once, at the first journal.
pub fn journal_progress(spec: &Spec, out: &Path) -> impl Fn(usize, usize) -> Option<String> {
    let curves = std::cell::OnceCell::new();
    move |alg_index, run| {
        // Read only (the server may be appending): the last complete line.
        let text = fs::read_to_string(out.join(server_journal(alg_index, run))).ok()?;
        let whole = &text[..text.rfind('\n')?];
        // The last round kept: a question's entry belongs to the round it comes before.
        let last: ServerEntry = whole
            .lines()
            .rev()
            .filter_map(|l| serde_json::from_str::<ServerEntry>(l).ok())
            .find(|e| e.asked.is_none())?;
        let answered: Vec<usize> = last.replies.iter().map(|r| r.agent).collect();
        // The agents the unit asks: the acting ones of the spec's algorithm (every agent for
        // the kinds that run across machines).
        let agents: Vec<usize> = (0..spec.total_agents()).collect();
        let curves = curves.get_or_init(|| runner::privacy_curves(spec).unwrap_or_default());
        Some(progress_line(
            spec, alg_index, last.round, &answered, &agents, curves,
        ))
    }
}

impl ServerNode {
    pub fn open(
        spec: &Spec,
        landscape: Arc<Landscape>,
        alg_index: usize,
        run: usize,
        journal: Option<PathBuf>,
    ) -> Result<Self> {
        let mut alg = federated_algorithm(spec, alg_index, run, &landscape, Place::Server)?;
        let names = landscape.space.names();
        let targets = alg.targets().to_vec();
        let agents = alg
            .federated()
            .expect("a federated algorithm")
            .members(&targets);
        let mut node = ServerNode {
            print: fingerprint(spec),
            alg_index,
            run,
            agents,
            targets,
            n: landscape.agents(),
            columns: output::trace_header(landscape.dim(), &names).len(),
            alg,
            round: 0,
            current: None,
            messages: vec![None; landscape.agents()],
            rows: Vec::new(),
            notes: Vec::new(),
            journal: None,
            notes_file: None,
            failed_in_a_row: vec![0; landscape.agents()],
            failed_now: Vec::new(),
            answered: Vec::new(),
            broadcast: Broadcast::none(),
            curves: None,
            phase: None,
            ready: vec![false; landscape.agents()],
            released: None,
            asking: None,
            answers: Vec::new(),
            spec: spec.clone(),
        };
        if let Some(path) = &journal {
            for e in read_lines::<ServerEntry>(path)? {
                let ins = node.instruction()?;
                let step = node.phase.as_ref().and_then(|p| p.step_number());
                let asked = ins.question.as_ref().map(|q| q.step);
                if e.round != ins.round || e.step != step || e.asked != asked {
                    return Err(FboError::Run(format!(
                        "{}: holds round {} (secure step {:?}, question {:?}) where round {} (secure step {step:?}, question {asked:?}) comes next",
                        path.display(),
                        e.round,
                        e.step,
                        e.asked,
                        ins.round
                    )));
                }
                node.apply(e)?;
            }
        }
        node.journal = journal;
        Ok(node)
    }

    /// The agents that answer this unit's instructions.
    pub fn agents(&self) -> &[usize] {
        &self.agents
    }

    /// Whether every round (the initial points and `iterations` iterations) is done.
    pub fn finished(&self) -> bool {
        self.round > self.spec.iterations
    }

    /// `progress_line` of the last round kept (None before the first).
    pub fn progress(&mut self) -> Result<Option<String>> {
        let Some(kept) = self.round.checked_sub(1) else {
            return Ok(None);
        };
        if self.curves.is_none() {
            let mine = runner::privacy_curves(&self.spec)?
                .into_iter()
                .filter(|c| c.algorithm == self.alg_index)
                .collect();
            self.curves = Some(mine);
        }
        let mut line = progress_line(
            &self.spec,
            self.alg_index,
            kept,
            &self.answered,
            &self.agents,
            self.curves.as_deref().unwrap_or_default(),
        );
        if !self.answers.is_empty() {
            line += &format!(
                "; {} questions answered before round {}'s broadcast",
                self.answers.len(),
                self.round
            );
        }
        Ok(Some(line))
    }

    /// The round whose replies are awaited.
    pub fn round(&self) -> usize {
        self.round
    }

    /// What happened that an operator should know: replies that did not arrive, messages
    /// and rows that were rejected (one line each, in order).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Records what an operator should know (a reply the transport could not read).
    pub fn note(&mut self, what: String) {
        self.notes.push(format!("round {}: {what}", self.round));
    }

    /// A site that could not answer this round: its evaluation failed with `error` (its own
    /// objective raised, say). Noted at once in the notes file, naming the agent and the
    /// error; the round goes on without it, as with a reply that did not arrive. The
    /// `max_in_a_row`-th failure in a row of one site stops the run with an error naming it:
    /// a site that fails every call would otherwise finish a federation of nothing. What was
    /// journaled is kept, and a rerun resumes.
    pub fn site_failed(&mut self, agent: usize, error: &str, max_in_a_row: usize) -> Result<()> {
        let round = self.round;
        let label = self.spec.algorithms[self.alg_index].label.clone();
        let Some(count) = self.failed_in_a_row.get_mut(agent) else {
            return Err(FboError::Run(format!(
                "a site failure reported for agent {agent}, which this experiment does not have"
            )));
        };
        *count += 1;
        let count = *count;
        let error: String = error.chars().take(2000).collect();
        let note =
            format!("round {round}: agent {agent}'s site failed ({count} in a row): {error}");
        if let Some(path) = &self.notes_file {
            append_text(path, &format!("{label} run {}: {note}\n", self.run))?;
        }
        self.notes.push(note);
        self.failed_now.push(agent);
        if count >= max_in_a_row.max(1) {
            return Err(FboError::Run(format!(
                "{label} run {}: agent {agent}'s site failed {count} rounds in a row (at most {max_in_a_row} allowed); the federation stops at round {round} (what was journaled is kept: fix the site and start it again to resume). Its last error: {error}",
                self.run
            )));
        }
        Ok(())
    }

    /// What agent `agent` is sent this round: the round's instruction with its own point where
    /// the algorithm sends each agent its own (consensus), and only its own unanswered rounds.
    pub fn instruction_for(&mut self, agent: usize) -> Result<Instruction> {
        let mut ins = self.instruction()?;
        if let Some(phase) = &self.phase {
            ins.secure = Some(phase.ask(agent));
            return Ok(ins);
        }
        if let Some(q) = &mut ins.question {
            // Asked are the agents whose message arrived; the others idle this step.
            if self.messages.get(agent).is_none_or(Option::is_none) {
                q.ask.clear();
            }
            return Ok(ins);
        }
        let own = self.broadcast.for_agent(agent);
        ins.point = own.point.as_ref().map(wire_point);
        ins.shared = own.shared.clone();
        ins.unanswered.retain(|(a, _)| *a == agent);
        Ok(ins)
    }

    /// The instruction of the current round as the server keeps it, every agent's unanswered
    /// rounds in it (the server's round on the last round's messages happens here, once).
    /// What crosses the network to each agent is `instruction_for`.
    pub fn instruction(&mut self) -> Result<Instruction> {
        if let Some(phase) = &self.phase {
            // A step of secure aggregation: what each agent is asked is `instruction_for`.
            return Ok(Instruction {
                secure: Some(SecureAsk::Idle {
                    round: phase.round(),
                }),
                ..self.bare_instruction()
            });
        }
        if let Some(ins) = &self.current {
            return Ok(ins.clone());
        }
        if self.finished() {
            return Err(FboError::Run(format!(
                "{} run {} is finished: there is no round {}",
                self.spec.algorithms[self.alg_index].label, self.run, self.round
            )));
        }
        if self.round > 0 && self.released.is_none() && self.asking.is_none() {
            let fed = self.alg.federated().expect("a federated algorithm");
            self.asking = fed.question(self.round, &self.messages, &self.answers)?;
        }
        if let Some(ask) = &self.asking {
            // The method's question before the broadcast: what each agent is asked is
            // `instruction_for`.
            return Ok(Instruction {
                question: Some(WireQuestion {
                    step: self.answers.len(),
                    ask: ask.clone(),
                }),
                ..self.bare_instruction()
            });
        }
        self.broadcast = if self.round == 0 {
            Broadcast::none()
        } else if let Some(b) = self.released.take() {
            // The secure round already summed the messages and released this.
            b
        } else {
            let fed = self.alg.federated().expect("a federated algorithm");
            fed.broadcast(self.round, &self.messages)?
        };
        self.messages = vec![None; self.n];
        self.answers.clear();
        let ins = Instruction {
            point: self.broadcast.all.point.as_ref().map(wire_point),
            shared: self.broadcast.all.shared.clone(),
            unanswered: self.unanswered(),
            ..self.bare_instruction()
        };
        self.current = Some(ins.clone());
        Ok(ins)
    }

    /// The current round's instruction of this unit with nothing in it yet: no point, no
    /// messages, no rounds asked for again, no step of secure aggregation, no question.
    fn bare_instruction(&self) -> Instruction {
        Instruction {
            spec: self.print.clone(),
            algorithm: self.alg_index,
            run: self.run,
            round: self.round,
            point: None,
            shared: Vec::new(),
            unanswered: Vec::new(),
            secure: None,
            question: None,
        }
    }

    /// Per agent, the earlier rounds whose trace rows the server does not hold (a reply lost
    /// in transit, or a round the site missed): the instruction asks for them again, and a
    /// site whose journal has them re-sends them.
    fn unanswered(&self) -> Vec<(usize, Vec<usize>)> {
        let held: std::collections::HashSet<(usize, usize)> =
            self.rows.iter().map(|(r, a, _)| (*r, *a)).collect();
        self.agents
            .iter()
            .filter_map(|&a| {
                let rounds: Vec<usize> = (0..self.round)
                    .filter(|&t| !held.contains(&(t, a)))
                    .collect();
                (!rounds.is_empty()).then_some((a, rounds))
            })
            .collect()
    }

    /// Keeps from `reply.late` the re-sent replies of rounds `ins` named as unanswered whose
    /// rows check as that round's (their messages dropped: those rounds' aggregates have gone
    /// out), and notes each, kept or rejected.
    fn check_late(&mut self, ins: &Instruction, reply: &mut Reply) {
        let late = std::mem::take(&mut reply.late);
        for mut l in late {
            let then = Instruction {
                round: l.round,
                ..ins.clone()
            };
            let asked = ins.unanswered_by(reply.agent).contains(&l.round)
                && !reply.late.iter().any(|k| k.round == l.round);
            let verdict = if l.agent != reply.agent {
                Err(format!("it is agent {}'s", l.agent))
            } else if !asked {
                Err("the server did not ask for it again".to_string())
            } else {
                self.check(&then, &l, &[])
            };
            match verdict {
                Ok(()) => {
                    self.notes.push(format!(
                        "round {}: agent {}'s reply to round {} arrived late (re-sent from its journal): its trace rows kept, its message not aggregated",
                        ins.round, reply.agent, l.round
                    ));
                    l.message = None;
                    l.late.clear();
                    reply.late.push(l);
                }
                Err(why) => self.notes.push(format!(
                    "round {}: agent {}'s re-sent reply to round {} rejected: {why}",
                    ins.round, reply.agent, l.round
                )),
            }
        }
    }

    /// Takes the replies of the current round that arrived (in any order; an agent's missing
    /// reply is its missing message and rows), journals them, and moves to the next round.
    /// Replies that do not belong to this round, or whose rows or message are malformed, are
    /// rejected (their message left out) and noted; nothing here stops the federation.
    pub fn receive(&mut self, replies: Vec<Reply>) -> Result<()> {
        let ins = self.instruction()?;
        let step = self.phase.as_ref().and_then(|p| p.step_number());
        let asked = ins.question.as_ref().map(|q| q.step);
        let noted = self.notes.len();
        let mut kept: Vec<Reply> = Vec::new();
        for mut r in replies {
            if let Err(why) = self.check(&ins, &r, &kept) {
                self.notes.push(format!(
                    "round {}: a reply from agent {} rejected: {why}",
                    ins.round, r.agent
                ));
                continue;
            }
            if step.is_none() && asked.is_none() {
                self.check_message(&ins, &mut r);
                self.check_late(&ins, &mut r);
            }
            kept.push(r);
        }
        for &a in &self.agents {
            if kept.iter().any(|r| r.agent == a) {
                self.failed_in_a_row[a] = 0;
            } else if !self.failed_now.contains(&a) {
                let during = match (step, asked) {
                    (Some(s), _) => format!(" (secure aggregation, step {s})"),
                    (_, Some(q)) => format!(" (question {q} before the broadcast)"),
                    _ => String::new(),
                };
                self.notes.push(format!(
                    "round {}: agent {a}'s reply did not arrive{during}",
                    ins.round
                ));
            }
        }
        self.failed_now.clear();
        kept.sort_by_key(|r| r.agent);
        let entry = ServerEntry {
            round: ins.round,
            replies: kept,
            step,
            asked,
        };
        if let Some(path) = &self.journal {
            append_line(path, &entry)?;
        }
        self.apply(entry)?;
        if let Some(path) = &self.notes_file {
            let label = &self.spec.algorithms[self.alg_index].label;
            let text: String = self.notes[noted..]
                .iter()
                .map(|n| format!("{label} run {}: {n}\n", self.run))
                .collect();
            append_text(path, &text)?;
        }
        Ok(())
    }

    /// Whether this unit's messages travel only masked (`server.secure`).
    fn is_secure(&self) -> bool {
        self.spec.algorithms[self.alg_index]
            .server
            .as_ref()
            .is_some_and(|s| s.secure.is_some())
    }

    /// Checks an evaluation reply's message: of the algorithm's length and finite, or (under
    /// secure aggregation) held at the site and said so, never in the clear. What fails is
    /// left out and noted.
    fn check_message(&mut self, ins: &Instruction, r: &mut Reply) {
        let fed = self.alg.federated().expect("a federated algorithm");
        let (m, sends) = (fed.message_len(), fed.sends(r.agent, ins.round + 1));
        let wants = m > 0 && ins.round < self.spec.iterations && sends;
        if self.is_secure() {
            if r.message.take().is_some() {
                self.notes.push(format!(
                    "round {}: agent {} sent its vector in the clear under secure aggregation: left out",
                    ins.round, r.agent
                ));
                r.secure = None;
            }
            if wants && r.secure != Some(SecureReply::Ready) {
                self.notes.push(format!(
                    "round {}: agent {} holds no message",
                    ins.round, r.agent
                ));
            }
            return;
        }
        match (&r.message, wants) {
            (Some(msg), true) => {
                if let Some(why) = wire::message_fault(msg, m) {
                    self.notes.push(format!(
                        "round {}: agent {}'s message rejected (left out, as a message that did not arrive): {why}",
                        ins.round, r.agent
                    ));
                    r.message = None;
                }
            }
            (None, true) => self.notes.push(format!(
                "round {}: agent {} sent no message",
                ins.round, r.agent
            )),
            (Some(_), false) => r.message = None,
            (None, false) => {}
        }
    }

    /// Applies a journaled entry: a step of secure aggregation (and, at its end, the
    /// release of its sum), or an evaluation round's replies kept (and, under secure
    /// aggregation, the next sum planned).
    fn apply(&mut self, e: ServerEntry) -> Result<()> {
        if e.asked.is_some() {
            // The answers of the agents asked (an idle agent's is none).
            let mut answers = vec![None; self.n];
            for r in e.replies {
                if self.messages[r.agent].is_some() {
                    answers[r.agent] = r.answer;
                }
            }
            self.answers.push(answers);
            self.asking = None;
            return Ok(());
        }
        if e.step.is_some() {
            let phase = self
                .phase
                .as_mut()
                .expect("a secure step is applied in its phase");
            let answers: Vec<(usize, SecureReply)> = e
                .replies
                .into_iter()
                .filter_map(|r| r.secure.map(|s| (r.agent, s)))
                .collect();
            phase.take(&answers);
            self.notes.append(&mut phase.notes);
            return self.finish_phase();
        }
        let secure = self.is_secure();
        let kept_round = self.round;
        self.ready = vec![false; self.n];
        for r in &e.replies {
            if secure && r.secure == Some(SecureReply::Ready) {
                self.ready[r.agent] = true;
            }
        }
        self.keep(e.replies);
        if secure && kept_round < self.spec.iterations {
            let p = self.spec.algorithms[self.alg_index]
                .server
                .as_ref()
                .map_or(1, |s| s.subregions);
            let round = self.round;
            let fed = self.alg.federated().expect("a federated algorithm");
            // Words per member: P sub-regions of the message's M features.
            let len = p * fed.message_len();
            if let Some((plan, threshold)) = fed.secure_plan(round, &self.ready) {
                self.phase = Some(secure::SecurePhase::new(plan, threshold, len, &self.ready));
                self.finish_phase()?;
            }
        }
        Ok(())
    }

    /// Releases a secure round whose sum is known (or that yielded none).
    fn finish_phase(&mut self) -> Result<()> {
        let Some((sum, missing)) = self.phase.as_ref().and_then(|p| p.outcome()) else {
            return Ok(());
        };
        let sum = sum.map(<[u64]>::to_vec);
        let phase = self.phase.take().expect("a phase");
        let fed = self.alg.federated().expect("a federated algorithm");
        self.released =
            Some(fed.secure_release(self.round, phase.plan(), sum.as_deref(), missing)?);
        Ok(())
    }

    fn check(
        &self,
        ins: &Instruction,
        r: &Reply,
        kept: &[Reply],
    ) -> std::result::Result<(), String> {
        if r.spec != ins.spec || r.algorithm != ins.algorithm || r.run != ins.run {
            return Err(format!(
                "it is for spec {} algorithm {} run {}, not {} {} {}",
                r.spec, r.algorithm, r.run, ins.spec, ins.algorithm, ins.run
            ));
        }
        if r.round != ins.round {
            return Err(format!("it answers round {}", r.round));
        }
        if !self.agents.contains(&r.agent) {
            return Err("no such agent in this algorithm".into());
        }
        if kept.iter().any(|k| k.agent == r.agent) {
            return Err("a second reply this round".into());
        }
        if let Some(q) = &ins.question {
            // A question: an answer from the agents asked, no trace rows, no message.
            let asked = self.messages[r.agent].is_some() && !q.ask.is_empty();
            return match (&r.answer, r.rows.is_empty() && r.message.is_none()) {
                (Some(a), true) if asked && a.iter().all(|v| v.is_finite()) => Ok(()),
                (None, true) if !asked => Ok(()),
                _ => Err("not an answer to the question".into()),
            };
        }
        if ins.secure.is_some() {
            // A step of secure aggregation: an answer, no trace rows, no message.
            return match (&r.secure, r.rows.is_empty() && r.message.is_none()) {
                (Some(_), true) => Ok(()),
                _ => Err("not an answer to the step of secure aggregation".into()),
            };
        }
        if self.spec.output.site_traces {
            // The site keeps its values: a reply carries none, and the server keeps none.
            return match r.rows.is_empty() {
                true => Ok(()),
                false => {
                    Err("trace rows sent where the sites keep them (output.site_traces)".into())
                }
            };
        }
        let want = if !self.targets.contains(&r.agent) {
            0
        } else if ins.round == 0 {
            self.spec.initial_points
        } else {
            self.spec.batch
        };
        let lines: Vec<&str> = r.rows.lines().collect();
        if lines.len() != want || (want > 0 && !r.rows.ends_with('\n')) {
            return Err(format!(
                "{} trace rows where the round has {want}",
                lines.len()
            ));
        }
        let label = &self.spec.algorithms[self.alg_index].label;
        // Round t's rows are iterations (t - 1) batch + 1 ..= t batch, in order.
        let first = ins.round.saturating_sub(1) * self.spec.batch;
        for (j, line) in lines.into_iter().enumerate() {
            let rec = csv_row(line).ok_or("a trace row that is not CSV")?;
            let iteration: Option<i64> = rec.get(3).and_then(|v| v.parse().ok());
            let good_iteration = match iteration {
                Some(i) if ins.round == 0 => i <= 0,
                Some(i) => i == (first + j + 1) as i64,
                None => false,
            };
            if rec.len() != self.columns
                || rec.get(0) != Some(label.as_str())
                || rec.get(1) != Some(&self.run.to_string()[..])
                || rec.get(2) != Some(&r.agent.to_string()[..])
                || !good_iteration
            {
                return Err(format!(
                    "a trace row that is not a row of {label} run {} agent {} round {} with {} columns",
                    self.run, r.agent, ins.round, self.columns
                ));
            }
        }
        Ok(())
    }

    fn keep(&mut self, replies: Vec<Reply>) {
        self.answered = replies.iter().map(|r| r.agent).collect();
        for r in replies {
            if let Some(m) = r.message {
                self.messages[r.agent] = Some(Array1::from(m));
            }
            for l in r.late {
                self.rows.push((l.round, l.agent, l.rows));
            }
            self.rows.push((self.round, r.agent, r.rows));
        }
        self.round += 1;
        self.current = None;
    }

    /// The unit's trace rows in the simulation's order (round, then agent), without header.
    pub fn trace_rows(&self) -> String {
        let mut rows: Vec<&(usize, usize, String)> = self.rows.iter().collect();
        rows.sort_by_key(|(round, agent, _)| (*round, *agent));
        rows.into_iter().map(|(_, _, r)| r.as_str()).collect()
    }

    /// The server's rounds as server.csv rows.
    pub fn server_rows(&self) -> Vec<u8> {
        output::server_csv_body(
            &self.spec.algorithms[self.alg_index].label,
            self.run,
            self.alg.server_records(),
        )
    }
}

/// What a federation's server noted (replies that did not arrive, messages rejected), one
/// line each, kept with the results.
pub const NOTES: &str = "federation-notes.txt";

/// The journal of a unit's server in the output folder.
pub fn server_journal(alg_index: usize, run: usize) -> String {
    format!("federation/a{alg_index:03}-r{run:05}.jsonl")
}

/// The journal of an agent's unit in its own state folder.
pub fn agent_journal(alg_index: usize, run: usize, agent: usize) -> String {
    format!("a{alg_index:03}-r{run:05}-agent{agent:04}.jsonl")
}

/// The server side of a whole experiment: the output folder (claimed as `fbo run` claims it,
/// so the two never write one folder at once), the units still to do, each unit's server,
/// and the merge into the files `fbo run` writes.
pub struct Federation {
    spec: Spec,
    dir: OutDir,
    landscapes: Vec<Arc<Landscape>>,
    jobs: Vec<(usize, usize)>,
    todo: Vec<(usize, usize)>,
}

impl Federation {
    /// Opens (or resumes) the experiment of `spec_path` in `out`.
    pub fn open(spec_path: &Path, out: &Path, overwrite: bool) -> Result<Self> {
        let spec = load_spec(spec_path)?;
        let (_, landscapes) = runner::prepare(&spec, 1)?;
        for (i, a) in spec.algorithms.iter().enumerate() {
            for r in 0..spec.runs.min(1) {
                federated_algorithm(&spec, i, r, &landscapes[0], Place::Server)
                    .map_err(|e| FboError::Run(format!("{e} ({})", a.label)))?;
            }
        }
        let jobs: Vec<(usize, usize)> = (0..spec.algorithms.len())
            .flat_map(|a| (0..spec.runs).map(move |r| (a, r)))
            .collect();
        let mut planned = runner::planned_files(&spec, &jobs, false);
        planned.extend(jobs.iter().map(|&(a, r)| server_journal(a, r)));
        planned.push(NOTES.into());
        let dir = OutDir::claim(
            out,
            Claim {
                identity: runner::run_identity(&spec),
                planned: &planned,
                overwrite,
                shared: false,
            },
        )?;
        let canonical = crate::spec::portable::canonical(&spec.source, &spec.path);
        let (_, reusable) = dir.parts(&runner::parts_fingerprint(&spec, &canonical))?;
        dir.write(
            "spec.toml",
            crate::spec::portable::portable(&spec.source, &spec.path, out).as_bytes(),
        )?;
        let header =
            output::trace_header(landscapes[0].dim(), &landscapes[0].space.names()).join(",");
        if !reusable {
            // Journals of rounds made with other settings cannot be replayed.
            dir.remove_under("federation/")?;
        }
        let todo = runner::pending_units(&spec, &dir, out, &jobs, reusable, &header)?;
        dir.create_dir("federation")?;
        dir.resume(NOTES);
        Ok(Federation {
            spec,
            dir,
            landscapes,
            jobs,
            todo,
        })
    }

    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    /// The units (algorithm, run) not finished yet, in (algorithm, run) order.
    pub fn units(&self) -> &[(usize, usize)] {
        &self.todo
    }

    /// The server of a unit, resumed from its journal.
    pub fn server(&self, (a, r): (usize, usize)) -> Result<ServerNode> {
        let land = self.landscapes[r % self.landscapes.len()].clone();
        let journal = self.dir.append_file(&server_journal(a, r))?;
        let mut node = ServerNode::open(&self.spec, land, a, r, Some(journal))?;
        node.notes_file = Some(self.dir.append_file(NOTES)?);
        Ok(node)
    }

    /// Saves a finished unit as `fbo run` saves one (its parts), so the merge cannot tell
    /// them apart.
    pub fn save(&mut self, node: &ServerNode) -> Result<()> {
        if !node.finished() {
            return Err(FboError::Run(format!(
                "{} run {} is at round {} of {}: not finished",
                self.spec.algorithms[node.alg_index].label,
                node.run,
                node.round,
                self.spec.iterations
            )));
        }
        let land = &self.landscapes[0];
        let header = output::trace_header(land.dim(), &land.space.names()).join(",");
        runner::save_unit(
            &self.dir,
            node.alg_index,
            node.run,
            &node.server_rows(),
            &[],
            format!("{header}\n{}", node.trace_rows()).as_bytes(),
        )?;
        self.todo.retain(|&u| u != (node.alg_index, node.run));
        Ok(())
    }

    /// trace.csv, server.csv, privacy.csv and summary.csv from every unit, as `fbo run`
    /// writes them; refused while a unit is unfinished.
    pub fn finish(self) -> Result<()> {
        if let Some(&(a, r)) = self.todo.first() {
            return Err(FboError::Run(format!(
                "{} of {} units (seed, algorithm) are not finished (the first: {} run {r})",
                self.todo.len(),
                self.jobs.len(),
                self.spec.algorithms[a].label
            )));
        }
        let land = &self.landscapes[0];
        runner::merge_parts(
            &self.spec,
            &self.dir,
            &self.jobs,
            (land.dim(), &land.space.names()),
            !self.spec.output.site_traces,
        )
    }
}

/// One agent across the units of an experiment: a node per unit, each journaled in `state`.
pub struct Site {
    spec: Spec,
    agent: usize,
    landscapes: Vec<Arc<Landscape>>,
    state: Option<PathBuf>,
    nodes: BTreeMap<(usize, usize), AgentNode>,
}

/// The journal of a site's measured evaluations, in its state folder.
pub const SITE_EVALUATIONS: &str = "evaluations.jsonl";

impl Site {
    /// Agent `agent` of the experiment of `spec_path`, journaling into the folder `state`.
    pub fn open(spec_path: &Path, agent: usize, state: Option<&Path>) -> Result<Self> {
        let spec = load_spec(spec_path)?;
        let landscapes = spec.landscapes()?;
        let n = landscapes[0].agents();
        if agent >= n {
            return Err(FboError::Run(format!(
                "{}: there is no agent {agent} (the objective has {n})",
                spec_path.display()
            )));
        }
        if let Some(s) = state {
            fs::create_dir_all(s).map_err(|e| FboError::io(s, e))?;
            // A measured objective's evaluations at this site are kept in its state, so a
            // restarted site replays what it paid for rather than measuring it again (an FTS
            // sender's own TS steps are made outside the agent's journal of rounds).
            if let Some(origin) = spec.journal_origin() {
                let path = s.join(SITE_EVALUATIONS);
                let journal = Arc::new(crate::objective::journal::Journal::open(&path, &origin)?);
                for land in &landscapes {
                    land.attach_journal(journal.clone());
                }
            }
        }
        Ok(Site {
            spec,
            agent,
            landscapes,
            state: state.map(Path::to_path_buf),
            nodes: BTreeMap::new(),
        })
    }

    pub fn agent(&self) -> usize {
        self.agent
    }

    /// The node of an instruction's unit (opened, and resumed from its journal, at the
    /// unit's first instruction).
    fn node(&mut self, ins: &Instruction) -> Result<&mut AgentNode> {
        self.unit(ins.algorithm, ins.run)
    }

    fn unit(&mut self, algorithm: usize, run: usize) -> Result<&mut AgentNode> {
        let key = (algorithm, run);
        if !self.nodes.contains_key(&key) {
            let land = self.landscapes[run % self.landscapes.len().max(1)].clone();
            let journal = self
                .state
                .as_ref()
                .map(|s| s.join(agent_journal(algorithm, run, self.agent)));
            let node = AgentNode::open(&self.spec, land, algorithm, run, self.agent, journal)?;
            self.nodes.insert(key, node);
        }
        Ok(self.nodes.get_mut(&key).expect("opened"))
    }

    /// This site's trace: a header and its rows of every unit, in the order `fbo run` writes
    /// them (from its journals, which a new process replays). Under `output.site_traces` the
    /// only copy of its queries and values; `merge_site_traces` joins the sites' traces.
    pub fn trace(&mut self) -> Result<String> {
        let land = &self.landscapes[0];
        let mut text = output::trace_header(land.dim(), &land.space.names()).join(",");
        text.push('\n');
        for a in 0..self.spec.algorithms.len() {
            for r in 0..self.spec.runs {
                text += &self.unit(a, r)?.trace_rows();
            }
        }
        Ok(text)
    }

    /// The answer to an instruction of any unit, the objective evaluated by fbo.
    pub fn step(&mut self, ins: &Instruction) -> Result<Reply> {
        self.node(ins)?.step(ins)
    }

    /// The queries of an instruction, for an objective the caller evaluates (a site's own
    /// program); none if the round is answered already. Answer with `tell`.
    pub fn ask(&mut self, ins: &Instruction) -> Result<Vec<Point>> {
        let q = self.node(ins)?.queries(ins)?;
        Ok(q.into_iter().map(|(q, _)| q.point).collect())
    }

    /// The objective's values of the queries `ask` gave for `ins`, in order, as the site
    /// measures them (in the spec's direction: a minimised metric as it is); the reply to send.
    pub fn tell(&mut self, ins: &Instruction, values: &[f64]) -> Result<Reply> {
        // Refused as `fbo tell` refuses it: a NaN is no measurement, and recording it as a
        // failure would hide a site's bug.
        for (i, &v) in values.iter().enumerate() {
            crate::objective::journal::check_values(Some(v), 0.0).map_err(|m| {
                FboError::Run(format!(
                    "agent {}: value {i} of round {}: {m}",
                    self.agent(),
                    ins.round
                ))
            })?;
        }
        let land = self.landscapes[ins.run % self.landscapes.len().max(1)].clone();
        let node = self.node(ins)?;
        let queries = node.queries(ins)?;
        let f = values.iter().map(|&v| (land.f_of_metric(v), 0.0)).collect();
        node.tell(ins, &queries, f)
    }

    /// The raw hyperparameter values of a point, by name, as JSON.
    pub fn raw(&self, p: &Point) -> serde_json::Map<String, serde_json::Value> {
        let space = &self.landscapes[0].space;
        space.codec().json(&space.raw(p))
    }
}

/// Runs an experiment as a federation inside one process: one `Site` per agent, every
/// instruction and reply passed through JSON as a network would carry it. The reference the
/// real federation is measured against (byte for byte, and for its overhead per round).
pub fn run_in_process(spec_path: &Path, out: &Path, state: &Path, overwrite: bool) -> Result<()> {
    let mut fed = Federation::open(spec_path, out, overwrite)?;
    let n = fed.landscapes[0].agents();
    let mut sites: Vec<Site> = (0..n)
        .map(|a| Site::open(spec_path, a, Some(&state.join(format!("agent{a}")))))
        .collect::<Result<_>>()?;
    let json = |e: serde_json::Error| FboError::Run(format!("federation message: {e}"));
    for unit in fed.units().to_vec() {
        let mut server = fed.server(unit)?;
        while !server.finished() {
            let mut replies = Vec::new();
            for a in server.agents().to_vec() {
                let ins = serde_json::to_string(&server.instruction_for(a)?).map_err(json)?;
                let ins: Instruction = serde_json::from_str(&ins).map_err(json)?;
                let reply = serde_json::to_string(&sites[a].step(&ins)?).map_err(json)?;
                replies.push(serde_json::from_str(&reply).map_err(json)?);
            }
            server.receive(replies)?;
        }
        fed.save(&server)?;
    }
    fed.finish()
}

/// One trace line read as CSV (a label may hold a comma, and then is quoted).
fn csv_row(line: &str) -> Option<csv::StringRecord> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(line.as_bytes())
        .records()
        .next()
        .and_then(|r| r.ok())
}

/// Joins the traces the sites kept (`output.site_traces`, each `Site::trace`) into the
/// trace.csv and summary.csv `fbo run` would write, in `out` beside the server's files, for the
/// sites that chose to share theirs: rows in fbo run's order ((algorithm, run), then round and
/// agent). Refused, naming the file, for a trace of another spec's columns or algorithms, or an
/// agent's rows in two files.
pub fn merge_site_traces(spec_path: &Path, out: &Path, traces: &[PathBuf]) -> Result<()> {
    let spec = load_spec(spec_path)?;
    let landscapes = spec.landscapes()?;
    let land = &landscapes[0];
    let header = output::trace_header(land.dim(), &land.space.names()).join(",");
    let labels: Vec<&str> = spec.algorithms.iter().map(|a| a.label.as_str()).collect();
    // (algorithm, run, round, agent) -> the row, and which file gave each (algorithm, run, agent).
    // Round t holds iterations (t - 1) batch + 1 ..= t batch (the initial points are round 0).
    let mut rows: Vec<((usize, usize, i64, usize), String)> = Vec::new();
    let mut from: BTreeMap<(usize, usize, usize), usize> = BTreeMap::new();
    for (f, path) in traces.iter().enumerate() {
        let text = fs::read_to_string(path).map_err(|e| FboError::io(path, e))?;
        let mut lines = text.lines();
        if lines.next() != Some(header.as_str()) {
            return Err(FboError::Run(format!(
                "{}: not a trace of {} (its header is not `{header}`)",
                path.display(),
                spec.path.display()
            )));
        }
        for (i, line) in lines.enumerate() {
            let bad =
                |why: &str| FboError::Run(format!("{} line {}: {why}", path.display(), i + 2));
            let rec = csv_row(line).ok_or_else(|| bad("not a CSV row"))?;
            let alg = labels
                .iter()
                .position(|l| rec.get(0) == Some(l))
                .ok_or_else(|| bad("an algorithm this spec does not have"))?;
            let num = |k: usize| rec.get(k).and_then(|v| v.parse::<i64>().ok());
            let (Some(run), Some(agent), Some(it)) = (num(1), num(2), num(3)) else {
                return Err(bad("no run, agent and iteration"));
            };
            let (run, agent) = (run as usize, agent as usize);
            if let Some(&g) = from.get(&(alg, run, agent))
                && g != f
            {
                return Err(bad(&format!(
                    "agent {agent}'s rows of {} run {run} are in {} too",
                    labels[alg],
                    traces[g].display()
                )));
            }
            from.insert((alg, run, agent), f);
            let round = (it.max(0) as usize).div_ceil(spec.batch) as i64;
            rows.push(((alg, run, round, agent), format!("{line}\n")));
        }
    }
    // Stable: an agent's initial points and a round's batch keep their order.
    rows.sort_by_key(|(k, _)| *k);
    let mut trace = format!("{header}\n");
    trace.extend(rows.into_iter().map(|(_, r)| r));
    let summary = runner::summary_of(&spec, trace.as_bytes(), &out.join("trace.csv"))?;
    crate::run::outdir::write_beside(out, "trace.csv", trace.as_bytes())?;
    crate::run::outdir::write_beside(out, "summary.csv", &summary)
}
