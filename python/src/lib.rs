//! fbo's engine for Python (`fbo._fbo`; the package `fbo` wraps it in plain dicts and numpy
//! arrays). Instructions and replies cross as JSON text, the form they take on the network:
//! numbers survive it exactly (shortest round-trip floats on both sides).

use fbo::error::FboError as Error;
use fbo::federation::{self, Instruction, Reply};
use fbo::run::runner::{RunOptions, Work};
use fbo::spec::Spec;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use std::path::{Path, PathBuf};

create_exception!(
    _fbo,
    FboError,
    PyException,
    "An input fbo refuses or a run that failed; the message says which file, key and range."
);

fn err(e: Error) -> PyErr {
    FboError::new_err(e.to_string())
}

fn parse<T: for<'de> serde::Deserialize<'de>>(what: &str, text: &str) -> PyResult<T> {
    serde_json::from_str(text).map_err(|e| FboError::new_err(format!("{what}: {e}")))
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("plain data serialises")
}

fn load(spec: &str, no_timing: bool) -> PyResult<Spec> {
    let mut s = Spec::load(Path::new(spec)).map_err(err)?;
    if no_timing {
        s.output.timing = false;
    }
    Ok(s)
}

/// Runs a spec into `out`, as `fbo run SPEC --out OUT --quiet` does.
#[pyfunction]
#[pyo3(signature = (spec, out, threads=None, overwrite=false, no_timing=false))]
fn run(
    py: Python<'_>,
    spec: String,
    out: String,
    threads: Option<usize>,
    overwrite: bool,
    no_timing: bool,
) -> PyResult<()> {
    let s = load(&spec, no_timing)?;
    let opts = RunOptions {
        out: PathBuf::from(out),
        threads,
        quiet: true,
        nested: false,
        progress: None,
        overwrite,
        work: Work::All,
        reuse: Vec::new(),
    };
    // The run goes on a thread of its own so that this one can look for Ctrl-C: Python
    // only raises KeyboardInterrupt when its own thread checks its signals. On one, the
    // units stop at their next iteration (finished ones are saved, as the CLI keeps them),
    // the user's running programs are stopped, and KeyboardInterrupt is raised here.
    let worker = std::thread::spawn(move || fbo::run::runner::run_spec(&s, &opts));
    while !worker.is_finished() {
        py.detach(|| std::thread::sleep(std::time::Duration::from_millis(50)));
        if let Err(interrupt) = py.check_signals() {
            fbo::run::progress::request_stop(true);
            fbo::objective::command::kill_running();
            let _ = py.detach(|| worker.join());
            fbo::run::progress::request_stop(false);
            return Err(interrupt);
        }
    }
    match worker.join() {
        Ok(result) => result.map(|_| ()).map_err(err),
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// The queries an external or command spec waits for, as a JSON list (`fbo ask --format
/// json`); new ones are recorded as asked in `state`.
#[pyfunction]
#[pyo3(signature = (spec, state, all=false))]
fn ask(spec: String, state: String, all: bool) -> PyResult<String> {
    let s = load(&spec, false)?;
    let opts = fbo::cli::asktell::AskOptions {
        state: PathBuf::from(state),
        format: "json".into(),
        all,
    };
    let asked = fbo::cli::asktell::ask_queries(&s, &opts).map_err(err)?;
    Ok(asked.json().to_string())
}

/// Records one result in `state` (`fbo tell`).
#[pyfunction]
#[pyo3(signature = (spec, state, scope, run, agent, iteration, value, cost_s=0.0))]
#[allow(clippy::too_many_arguments)]
fn tell(
    spec: String,
    state: String,
    scope: String,
    run: usize,
    agent: usize,
    iteration: i64,
    value: f64,
    cost_s: f64,
) -> PyResult<()> {
    let s = load(&spec, false)?;
    let opts = fbo::cli::asktell::TellOptions {
        state: PathBuf::from(state),
        agent: Some(agent),
        value: Some(value),
        run: Some(run),
        scope: Some(scope),
        iteration: Some(iteration),
        cost_s,
        results: None,
    };
    fbo::cli::asktell::tell(&s, &opts).map_err(err)
}

/// What `fbo run SPEC --status --out OUT` prints: units done, running and missing, and each
/// federation unit's last round (who answered, epsilon so far).
#[pyfunction]
fn status(spec: String, out: String) -> PyResult<String> {
    let s = load(&spec, false)?;
    let out = PathBuf::from(out);
    fbo::run::runner::status_report(&s, &out, None, &federation::journal_progress(&s, &out))
        .map_err(err)
}

/// A whole federation in this process, every message through JSON: the reference a real
/// one is compared with.
#[pyfunction]
#[pyo3(signature = (spec, out, state, overwrite=false))]
fn run_in_process(
    py: Python<'_>,
    spec: String,
    out: String,
    state: String,
    overwrite: bool,
) -> PyResult<()> {
    py.detach(|| {
        federation::run_in_process(
            Path::new(&spec),
            Path::new(&out),
            Path::new(&state),
            overwrite,
        )
    })
    .map_err(err)
}

/// One agent of a federation (a site): its own data, surrogate and streams, journaled in
/// `state` so that a restarted site evaluates nothing twice.
#[pyclass(unsendable)]
struct Site {
    inner: federation::Site,
}

#[pymethods]
impl Site {
    #[new]
    #[pyo3(signature = (spec, agent, state=None))]
    fn new(spec: String, agent: usize, state: Option<String>) -> PyResult<Self> {
        let state = state.map(PathBuf::from);
        federation::Site::open(Path::new(&spec), agent, state.as_deref())
            .map(|inner| Site { inner })
            .map_err(err)
    }

    #[getter]
    fn agent(&self) -> usize {
        self.inner.agent()
    }

    /// The reply (JSON) to an instruction (JSON), the spec's objective evaluated here.
    fn step(&mut self, instruction: &str) -> PyResult<String> {
        let ins: Instruction = parse("instruction", instruction)?;
        self.inner.step(&ins).map(|r| json(&r)).map_err(err)
    }

    /// The queries of an instruction for an objective the caller evaluates: a JSON list of
    /// {"x": unit coordinates, "index": grid index or null, "params": raw values by name}.
    fn ask(&mut self, instruction: &str) -> PyResult<String> {
        let ins: Instruction = parse("instruction", instruction)?;
        let points = self.inner.ask(&ins).map_err(err)?;
        let list: Vec<serde_json::Value> = points
            .iter()
            .map(|p| {
                serde_json::json!({
                    "x": p.x,
                    "index": p.index,
                    "params": self.inner.raw(p),
                })
            })
            .collect();
        Ok(serde_json::Value::Array(list).to_string())
    }

    /// The reply (JSON) once the asked queries' values are known (in the spec's direction).
    fn tell(&mut self, instruction: &str, values: Vec<f64>) -> PyResult<String> {
        let ins: Instruction = parse("instruction", instruction)?;
        self.inner
            .tell(&ins, &values)
            .map(|r| json(&r))
            .map_err(err)
    }

    /// This site's trace (CSV text with header), from its journals.
    fn trace(&mut self) -> PyResult<String> {
        self.inner.trace().map_err(err)
    }
}

/// The sites' traces (`output.site_traces`) joined into trace.csv and summary.csv in `out`.
#[pyfunction]
fn merge_site_traces(spec: String, out: String, traces: Vec<String>) -> PyResult<()> {
    let traces: Vec<PathBuf> = traces.into_iter().map(PathBuf::from).collect();
    federation::merge_site_traces(Path::new(&spec), Path::new(&out), &traces).map_err(err)
}

/// The server of one unit (algorithm, run).
#[pyclass(unsendable)]
struct UnitServer {
    inner: Option<federation::ServerNode>,
}

impl UnitServer {
    fn node(&mut self) -> PyResult<&mut federation::ServerNode> {
        self.inner
            .as_mut()
            .ok_or_else(|| FboError::new_err("this unit is saved: open the next one"))
    }
}

#[pymethods]
impl UnitServer {
    /// The instruction (JSON) agent `agent` gets this round (its own point where the
    /// algorithm sends each agent its own, and only its own unanswered rounds); without an
    /// agent, the round's instruction as the server keeps it.
    #[pyo3(signature = (agent=None))]
    fn instruction(&mut self, agent: Option<usize>) -> PyResult<String> {
        let node = self.node()?;
        match agent {
            Some(a) => node.instruction_for(a),
            None => node.instruction(),
        }
        .map(|i| json(&i))
        .map_err(err)
    }

    /// The replies (JSON each) that arrived this round; the round moves on.
    fn receive(&mut self, replies: Vec<String>) -> PyResult<()> {
        let mut parsed: Vec<Reply> = Vec::new();
        let node = self.node()?;
        for r in &replies {
            match serde_json::from_str::<Reply>(r) {
                Ok(reply) => parsed.push(reply),
                // A reply that is not even a reply is one that did not arrive.
                Err(e) => node.note(format!("a reply that is not JSON of a reply ({e}) ignored")),
            }
        }
        node.receive(parsed).map_err(err)
    }

    /// A site whose evaluation failed this round (`error`: what it raised). Noted at once;
    /// the `max_in_a_row`-th failure in a row of one site raises FboError, stopping the run.
    #[pyo3(signature = (agent, error, max_in_a_row=3))]
    fn site_failed(&mut self, agent: usize, error: &str, max_in_a_row: usize) -> PyResult<()> {
        self.node()?
            .site_failed(agent, error, max_in_a_row)
            .map_err(err)
    }

    #[getter]
    fn finished(&mut self) -> PyResult<bool> {
        Ok(self.node()?.finished())
    }

    #[getter]
    fn round(&mut self) -> PyResult<usize> {
        Ok(self.node()?.round())
    }

    #[getter]
    fn agents(&mut self) -> PyResult<Vec<usize>> {
        Ok(self.node()?.agents().to_vec())
    }

    /// Replies that did not arrive, messages rejected: one line each, in order.
    #[getter]
    fn notes(&mut self) -> PyResult<Vec<String>> {
        Ok(self.node()?.notes().to_vec())
    }

    /// The last round kept, for the operator: round n of T, who answered, epsilon so far.
    #[getter]
    fn progress(&mut self) -> PyResult<Option<String>> {
        self.node()?.progress().map_err(err)
    }
}

/// The server of a whole experiment: the output folder, the units still to do, the merge.
#[pyclass(unsendable)]
struct Federation {
    inner: Option<federation::Federation>,
}

impl Federation {
    fn fed(&mut self) -> PyResult<&mut federation::Federation> {
        self.inner
            .as_mut()
            .ok_or_else(|| FboError::new_err("this federation is finished"))
    }
}

#[pymethods]
impl Federation {
    #[new]
    #[pyo3(signature = (spec, out, overwrite=false))]
    fn new(spec: String, out: String, overwrite: bool) -> PyResult<Self> {
        federation::Federation::open(Path::new(&spec), Path::new(&out), overwrite)
            .map(|f| Federation { inner: Some(f) })
            .map_err(err)
    }

    /// The units (algorithm, run) not finished yet.
    fn units(&mut self) -> PyResult<Vec<(usize, usize)>> {
        Ok(self.fed()?.units().to_vec())
    }

    /// The server of a unit, resumed from its journal.
    fn unit(&mut self, algorithm: usize, run: usize) -> PyResult<UnitServer> {
        let node = self.fed()?.server((algorithm, run)).map_err(err)?;
        Ok(UnitServer { inner: Some(node) })
    }

    /// Saves a finished unit (its parts, as `fbo run` saves them).
    fn save(&mut self, unit: &mut UnitServer) -> PyResult<()> {
        let node = unit.node()?;
        self.fed()?.save(node).map_err(err)?;
        unit.inner = None;
        Ok(())
    }

    /// Writes trace.csv, server.csv, privacy.csv and summary.csv.
    fn finish(&mut self) -> PyResult<()> {
        let fed = self
            .inner
            .take()
            .ok_or_else(|| FboError::new_err("this federation is finished"))?;
        fed.finish().map_err(err)
    }
}

#[pymodule]
fn _fbo(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("FboError", m.py().get_type::<FboError>())?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(ask, m)?)?;
    m.add_function(wrap_pyfunction!(tell, m)?)?;
    m.add_function(wrap_pyfunction!(run_in_process, m)?)?;
    m.add_function(wrap_pyfunction!(merge_site_traces, m)?)?;
    m.add_function(wrap_pyfunction!(status, m)?)?;
    m.add_class::<Site>()?;
    m.add_class::<UnitServer>()?;
    m.add_class::<Federation>()?;
    Ok(())
}
