"""fbo in Python: run experiment specs, ask/tell by hand, and the two roles of a real federation.

The engine is fbo's Rust core, built into this package (no ``fbo`` binary is needed). Instructions
and replies of a federation are plain dicts (messages as numpy arrays); they cross the network as
the JSON text `to_json` gives, which keeps every number exactly.

    import fbo
    fbo.run("configs/landmine.toml", "results/landmine")

    # A Python objective, called in this process with the hyperparameters by name.
    fbo.maximize("spec.toml", lambda lr, depth: train(lr, depth), "results/mine")

    # A federation: one Agent per site, one Server.
    server = fbo.Server("spec.toml", "results/run")
    agents = [fbo.Agent("spec.toml", a, state=f"state/{a}") for a in range(n)]
    for algorithm, run in server.units():
        unit = server.unit(algorithm, run)
        while not unit.finished:
            unit.receive([agents[a].step(unit.instruction(a)) for a in unit.agents])
        server.save(unit)
    server.finish()
"""

import inspect
import json
import pathlib
import tomllib

import numpy as np

from . import _fbo
from ._fbo import FboError

__all__ = [
    "Agent",
    "FboError",
    "Server",
    "UnitServer",
    "ask",
    "call_objective",
    "from_json",
    "integer_names",
    "maximize",
    "merge_site_traces",
    "minimize",
    "optimize",
    "run",
    "run_in_process",
    "status",
    "tell",
    "to_json",
]


def run(spec, out, *, threads=None, overwrite=False, no_timing=False):
    """Run the spec at path `spec` into the folder `out`, as `fbo run SPEC --out OUT` does."""
    _fbo.run(str(spec), str(out), threads, overwrite, no_timing)


def merge_site_traces(spec, out, traces):
    """Joins the traces the sites kept (spec `[output] site_traces = true`; each site's
    `Agent.trace()` written to a file) into `out`'s trace.csv and summary.csv, as `fbo run`
    writes them, for the sites that chose to share theirs. `fbo compare` then reads them."""
    _fbo.merge_site_traces(str(spec), str(out), [str(t) for t in traces])


def status(spec, out):
    """What ``fbo run SPEC --status --out OUT`` prints, as text: the units done, running and
    missing, and the last round of each unit a federation has started (who answered, epsilon
    so far), read from its journal without writing anything."""
    return _fbo.status(str(spec), str(out))


def ask(spec, state, *, all=False):
    """The queries an external or command spec waits for: a list of dicts with scope, run,
    agent, iteration and params (raw hyperparameter values by name). New ones are recorded as
    asked in the folder `state`; `all=True` lists those asked before too."""
    return json.loads(_fbo.ask(str(spec), str(state), all))


def tell(spec, state, query, value, *, cost_s=0.0):
    """Record `value` (the objective's value, in the spec's direction) for `query`, a dict
    as `ask` returns it."""
    _fbo.tell(
        str(spec),
        str(state),
        query["scope"],
        int(query["run"]),
        int(query["agent"]),
        int(query["iteration"]),
        float(value),
        float(cost_s),
    )


def integer_names(spec):
    """The names of the spec's integer hyperparameters (``integer = true``), whose values a
    Python objective receives as ints."""
    with open(spec, "rb") as f:
        hps = tomllib.load(f).get("objective", {}).get("hyperparameters", [])
    return {h["name"] for h in hps if h.get("integer")}


def call_objective(objective, params, agent=None, integers=()):
    """`objective` at one query: called with the query's hyperparameters as keyword arguments
    (a choice by its name; those named in `integers` as ints, see `integer_names`), and with
    ``agent=`` too where the callable takes a parameter of that name (no hyperparameter can be
    called ``agent``). It returns the value in the spec's direction (a loss to minimise as it
    is), or a dict ``{"metric": value, "cost_s": seconds}`` as a command prints. Returns
    (value, cost_s)."""
    kwargs = {k: int(round(v)) if k in integers else v for k, v in params.items()}
    if agent is not None and "agent" in _parameter_names(objective):
        kwargs["agent"] = int(agent)
    out = objective(**kwargs)
    if isinstance(out, dict):
        if "metric" not in out:
            raise ValueError(f"the objective returned a dict without \"metric\": {out!r}")
        return float(out["metric"]), float(out.get("cost_s", 0.0))
    return float(out), 0.0


def _parameter_names(f):
    try:
        return set(inspect.signature(f).parameters)
    except (TypeError, ValueError):  # a builtin without a signature
        return set()


def optimize(spec, objective, out, *, no_timing=False):
    """Run the spec (``objective.kind = "external"``) with a Python objective in this process:
    the spec's algorithms ask, ``objective`` is called at each query (`call_objective`:
    hyperparameters as keyword arguments), and the result is told, every evaluation journaled
    in ``out/evaluations.jsonl`` as a command objective's is. Interrupted, the same call resumes
    without evaluating anything twice. `objective` is one callable for every agent, or a list or
    dict of callables by agent. Writes trace.csv, summary.csv (and server.csv, privacy.csv) into
    `out` as ``fbo run`` does, and returns `out` as a path."""
    out = pathlib.Path(out)
    pick = _per_agent(objective)
    integers = integer_names(spec)
    while True:
        queries = ask(spec, out, all=True)
        if not queries:
            break
        for q in queries:
            value, cost_s = call_objective(pick(q["agent"]), q["params"], q["agent"], integers)
            tell(spec, out, q, value, cost_s=cost_s)
    run(spec, out, no_timing=no_timing)
    return out


def minimize(spec, objective, out, **kwargs):
    """`optimize` for a spec whose ``objective.direction`` is ``"minimize"`` (the objective
    returns a loss, as measured); refused otherwise, naming the file and key."""
    _check_direction(spec, "minimize")
    return optimize(spec, objective, out, **kwargs)


def maximize(spec, objective, out, **kwargs):
    """`optimize` for a spec whose ``objective.direction`` is ``"maximize"``."""
    _check_direction(spec, "maximize")
    return optimize(spec, objective, out, **kwargs)


def _check_direction(spec, want):
    with open(spec, "rb") as f:
        direction = tomllib.load(f).get("objective", {}).get("direction")
    if direction != want:
        other = "maximize" if want == "minimize" else "minimize"
        raise ValueError(
            f"{spec}: key `objective.direction` is {direction!r}, and fbo.{want} needs "
            f"\"{want}\" (use fbo.{other} or fbo.optimize, or change the spec)"
        )


def _per_agent(objective):
    if callable(objective):
        return lambda agent: objective
    if isinstance(objective, dict):
        return lambda agent: objective[agent]
    table = list(objective)
    return lambda agent: table[agent]


def run_in_process(spec, out, state, *, overwrite=False):
    """A whole federation inside this process, every message through JSON: the same files
    as `run(spec, out, no_timing=True)`, and the reference for a real federation."""
    _fbo.run_in_process(str(spec), str(out), str(state), overwrite)


def _plain(d):
    """`d` with its message, and those of the earlier replies it re-sends (`late`), as lists."""
    d = dict(d)
    if d.get("message") is not None:
        m = np.asarray(d["message"], dtype=np.float64)
        d["message"] = [float(v) if np.isfinite(v) else None for v in m]
    if d.get("late"):
        d["late"] = [_plain(r) for r in d["late"]]
    return d


def _arrays(d):
    if d.get("message") is not None:
        d["message"] = np.array([np.nan if v is None else v for v in d["message"]], dtype=np.float64)
    for r in d.get("late") or []:
        _arrays(r)
    return d


def to_json(d):
    """The JSON text of an instruction or reply dict (numpy messages as lists; a value that
    is not finite as null, since JSON has none: the server rejects such a message)."""
    return json.dumps(_plain(d), allow_nan=False)


def from_json(text):
    """An instruction or reply dict from its JSON text (a message as a numpy array)."""
    return _arrays(json.loads(text))


class Agent:
    """One agent of a federation, at its own site: its data, surrogate and random streams.

    `step(instruction)` evaluates the spec's objective here; for an objective of the site's own
    (a Python callable), `ask(instruction)` gives the queries and `tell(instruction, values)`
    the reply. Everything is journaled in the folder `state`: a site that dies and returns
    resumes there without evaluating anything twice.
    """

    def __init__(self, spec, agent, *, state=None):
        self._site = _fbo.Site(str(spec), int(agent), None if state is None else str(state))

    @property
    def agent(self):
        return self._site.agent

    def step(self, instruction):
        return from_json(self._site.step(to_json(instruction)))

    def ask(self, instruction):
        """The round's queries: dicts with x (unit coordinates, numpy), index (grid index or
        None) and params (raw values by name). Empty if the round is answered already."""
        out = json.loads(self._site.ask(to_json(instruction)))
        for q in out:
            q["x"] = np.asarray(q["x"], dtype=np.float64)
        return out

    def tell(self, instruction, values):
        """The reply, given the values of the queries `ask` gave, as the site measures them
        (in the spec's direction: a loss to minimise as it is)."""
        vals = [float(v) for v in np.atleast_1d(np.asarray(values, dtype=np.float64))]
        return from_json(self._site.tell(to_json(instruction), vals))

    def trace(self):
        """This site's trace as CSV text (header and its rows of every unit, from its journal).
        With `[output] site_traces = true` the only copy of its queries and values: the site
        decides whether to share it (`fbo.merge_site_traces`)."""
        return self._site.trace()


class UnitServer:
    """The server of one unit (algorithm, run): an instruction per round, the replies that
    arrived, the server's aggregation, noise and privacy accounting in between."""

    def __init__(self, inner):
        self._inner = inner

    def instruction(self, agent=None):
        """What `agent` is sent this round (its own point where the algorithm sends each
        agent its own, as consensus does; its own unanswered rounds). Without an agent, the
        round's instruction as the server keeps it, which is not for sending."""
        return from_json(self._inner.instruction(None if agent is None else int(agent)))

    def receive(self, replies):
        """The replies (dicts) that arrived by the round's deadline; the round moves on.
        Malformed ones are rejected and noted, never fatal."""
        self._inner.receive([r if isinstance(r, str) else to_json(r) for r in replies])

    def site_failed(self, agent, error, max_in_a_row=3):
        """A site whose evaluation failed this round, with what it raised: noted at once in
        federation-notes.txt; the max_in_a_row-th failure in a row of one site raises
        FboError, which stops the run (what was journaled is kept; a rerun resumes)."""
        self._inner.site_failed(int(agent), str(error), int(max_in_a_row))

    @property
    def finished(self):
        return self._inner.finished

    @property
    def round(self):
        return self._inner.round

    @property
    def agents(self):
        return self._inner.agents

    @property
    def notes(self):
        return self._inner.notes

    @property
    def progress(self):
        """The last round kept, one line for the operator ("round 3 of 20: 4 of 5 agents
        answered (missing: 2); epsilon so far ..."), or None before the first."""
        return self._inner.progress


class Server:
    """The server of an experiment: the output folder (claimed as `fbo run` claims it), the
    units still to do, each unit's server (resumed from its journal), and the merge into
    trace.csv, server.csv, privacy.csv and summary.csv."""

    def __init__(self, spec, out, *, overwrite=False):
        self._fed = _fbo.Federation(str(spec), str(out), overwrite)

    def units(self):
        return [tuple(u) for u in self._fed.units()]

    def unit(self, algorithm, run):
        return UnitServer(self._fed.unit(int(algorithm), int(run)))

    def save(self, unit):
        self._fed.save(unit._inner)

    def finish(self):
        self._fed.finish()
