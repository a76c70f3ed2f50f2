"""fbo inside Optuna: each site's own Optuna study is one agent of an fbo federation.

    import optuna, fbo.optuna

    fed = fbo.optuna.Federation("spec.toml", "results/fed")   # objective.kind = "external"
    studies = [optuna.create_study(sampler=fed.sampler(a), direction="maximize") for a in range(3)]
    fbo.optuna.optimize(fed, studies, [objective_of_site_0, objective_of_site_1, objective_of_site_2])

Every trial of site a's study evaluates the query fbo's algorithm chose for agent a; the value
is told back (journaled), and when the federation has finished its outputs are written into
``out`` exactly as `fbo run` writes them for the same spec and told values. An external spec
runs any algorithm kind (through fbo's ask/tell journal); any other spec, a response table say,
runs through fbo's federation roles in this process (the kinds that run across machines). The
agents and the server are fbo's own. The search space is the spec's (``[[objective.hyperparameters]]``), or
built from Optuna distributions by `spec_from_search_space`; an objective suggests each
hyperparameter by its name, with any Optuna distribution that contains fbo's value.

Rounds are synchronous: a site has a query only once every site has answered the round
before. `optimize` drives the studies round by round; a study driven by hand
(``study.optimize``) runs as many trials as its site has queries now (`Federation.available`).
Trials that run at the same time in one study (``n_jobs``, or trials asked and left RUNNING)
take the site's queries of the round in order: with ``batch = k`` or ``parallel = k`` in the
spec (single-agent kinds, and ``batch`` for ``dp-fts-de``), fbo chooses k points per round
with the running ones held as pending (believed or lied about, or independent samples,
docs/reference.md).
A FAIL or PRUNED trial gives its query back, and the next trial evaluates it again.
"""

import concurrent.futures
import pathlib
import threading
import tomllib

from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.samplers import BaseSampler
from optuna.trial import TrialState

from . import ask, run, tell

__all__ = ["Federation", "FboSampler", "optimize", "site_objective", "spec_from_search_space"]


def spec_from_search_space(
    path,
    search_space,
    *,
    agents,
    direction,
    algorithm="dp-fts-de",
    iterations=20,
    initial_points=2,
    seed=0,
    name="optuna",
):
    """Write an fbo spec at `path` for a federation of `agents` sites whose studies search
    `search_space` (a dict of Optuna distributions by name): FloatDistribution (log or not),
    IntDistribution (step 1) and CategoricalDistribution map onto fbo's box and choices. One
    run of one algorithm (`algorithm` is its kind; a dict gives the whole [[algorithm]] table).
    Returns the path."""
    if direction not in ("minimize", "maximize"):
        raise ValueError(f"direction must be \"minimize\" or \"maximize\", got {direction!r}")
    lines = [
        f'name = "{name}"',
        f"seed = {int(seed)}",
        "runs = 1",
        f"iterations = {int(iterations)}",
        f"initial_points = {int(initial_points)}",
        "",
        "[objective]",
        'kind = "external"',
        f'direction = "{direction}"',
    ]
    for key, d in search_space.items():
        lines += ["", "[[objective.hyperparameters]]", f'name = "{key}"']
        if isinstance(d, CategoricalDistribution):
            lines.append("choices = [" + ", ".join(f'"{_choice_name(c)}"' for c in d.choices) + "]")
            continue
        if isinstance(d, IntDistribution):
            if d.step != 1:
                raise ValueError(f"{key}: fbo searches integers with step 1, got step {d.step}")
            lines += [f"low = {d.low}", f"high = {d.high}", "integer = true"]
        elif isinstance(d, FloatDistribution):
            if d.step is not None:
                raise ValueError(
                    f"{key}: fbo has no stepped floats (step {d.step}); use a CategoricalDistribution"
                )
            lines += [f"low = {float(d.low)!r}", f"high = {float(d.high)!r}"]
        else:
            raise ValueError(f"{key}: no fbo hyperparameter for {type(d).__name__}")
        if d.log:
            lines.append('scale = "log"')
    table = algorithm if isinstance(algorithm, dict) else {"kind": algorithm}
    lines += ["", "[federation]", f"agents = {int(agents)}", "", "[[algorithm]]"]
    lines += [f"{k} = {_toml_value(v)}" for k, v in table.items()]
    path = pathlib.Path(path)
    path.write_text("\n".join(lines) + "\n")
    return path


def _toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    return f'"{v}"'


def _choice_name(c):
    """fbo's name of an Optuna choice (fbo's choices are names; Optuna's may be numbers)."""
    return c if isinstance(c, str) else repr(c)


class _Journal:
    """An external spec's queries through fbo's ask/tell journal in `out` (any algorithm kind;
    `fbo run`'s outputs written when the last value is told)."""

    def __init__(self, spec, out):
        self.spec, self.out = spec, out

    def outstanding(self):
        qs = ask(self.spec, self.out, all=True)
        for q in qs:
            q["key"] = (q["scope"], int(q["run"]), int(q["agent"]), int(q["iteration"]))
        return qs

    def tell(self, q, value):
        tell(self.spec, self.out, q, value)

    def finish(self):
        run(self.spec, self.out, no_timing=True)


class _Sites:
    """Any other spec (a response table, a function, ...) through fbo's federation roles in
    this process: a Server writing `out` and one Agent per site journaled in `state` (every
    algorithm kind; what does not run across machines is refused by key).

    The roles are the package's Rust objects, each bound to the thread that made it, while
    Optuna runs a study's trials (``n_jobs > 1``) on threads of its own: every call into them
    is made on one thread kept for them here."""

    def __init__(self, spec, out, state, agents):
        self._thread = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="fbo-roles"
        )
        self._call(self._open, spec, out, state, agents)

    def _call(self, f, *args):
        return self._thread.submit(f, *args).result()

    def _open(self, spec, out, state, agents):
        from . import Agent, Server

        self.server = Server(spec, out)
        units = self.server.units()
        self.unit = self.server.unit(*units[0]) if units else None
        self.sites = [Agent(spec, a, state=state / f"agent{a}") for a in range(agents)]
        self.ins = None

    def outstanding(self):
        return self._call(self._outstanding)

    def tell(self, q, value):
        self._call(self._tell, q, value)

    def finish(self):
        self._call(self._finish)
        self._thread.shutdown()

    def _outstanding(self):
        if self.unit is None or self.unit.finished:
            return []
        if self.ins is None:
            self.ins = {a: self.unit.instruction(a) for a in self.unit.agents}
            self.queries, self.values, self.replies = {}, {}, {}
            for a in self.unit.agents:
                qs = self.sites[a].ask(self.ins[a])
                self.queries[a] = qs
                self.values[a] = [None] * len(qs)
                if not qs:
                    self.replies[a] = self.sites[a].tell(self.ins[a], [])
        r = self.unit.instruction()["round"]
        return [
            {"key": (r, a, i), "agent": a, "index": i, "params": q["params"]}
            for a, qs in self.queries.items()
            for i, q in enumerate(qs)
            if self.values[a][i] is None
        ]

    def _tell(self, q, value):
        a = q["agent"]
        self.values[a][q["index"]] = value
        if all(v is not None for v in self.values[a]):
            self.replies[a] = self.sites[a].tell(self.ins[a], self.values[a])
        if len(self.replies) == len(self.unit.agents):
            self.unit.receive([self.replies[a] for a in self.unit.agents])
            self.ins = None

    def _finish(self):
        if self.unit is not None:
            self.server.save(self.unit)
        self.server.finish()
        # Dropped here, on the thread they belong to.
        self.server = self.unit = self.sites = None


class Federation:
    """The fbo side of a federation of Optuna studies: the spec at `spec` (one run of one
    algorithm) and its outputs in the folder `out`. An external spec (``objective.kind =
    "external"``) runs any algorithm kind through fbo's ask/tell journal in `out`; any other
    spec (a response table, say) through fbo's federation roles, the sites journaled in
    `state` (default: the folder ``<out>.sites`` beside `out`). Either resumes where it was
    left: values told before are not asked again."""

    def __init__(self, spec, out, *, state=None):
        self.spec = pathlib.Path(spec)
        self.out = pathlib.Path(out)
        with open(self.spec, "rb") as f:
            raw = tomllib.load(f)
        objective = raw.get("objective", {})
        # fbo's own default is 10 runs.
        units = int(raw.get("runs", 10)) * len(raw.get("algorithm", []))
        if units != 1:
            raise ValueError(
                f"{self.spec}: an Optuna study is one agent of one run of one algorithm, and "
                f"keys `runs` x [[algorithm]] give {units}: set runs = 1 and keep one [[algorithm]]"
            )
        self._integers = {
            h["name"] for h in objective.get("hyperparameters", []) if h.get("integer")
        }
        if objective.get("kind") == "external":
            self.direction = objective["direction"]
            self.agents = int(raw.get("federation", {}).get("agents", 1))
            self._backend = _Journal(self.spec, self.out)
        else:
            table = objective.get("table")
            meta = {}
            if table is not None:
                with open(self.spec.parent / table, "rb") as f:
                    meta = tomllib.load(f)
            self.direction = objective.get("direction", meta.get("direction"))
            # A table's agents, or those of them `objective.agents` lets take part.
            taking_part = objective.get("agents")
            self.agents = (
                len(taking_part)
                if isinstance(taking_part, list)
                else int(raw.get("federation", {}).get("agents", meta.get("agents", 1)))
            )
            state = pathlib.Path(state) if state is not None else self.out.with_name(self.out.name + ".sites")
            self._backend = _Sites(self.spec, self.out, state, self.agents)
        self._lock = threading.RLock()
        # trial id -> the query its trial evaluates (until it is told or given back)
        self._assigned = {}
        self.finished = False
        self._refresh()

    def _refresh(self):
        """The queries waiting for a value (asked before or new), and the end when none are."""
        self._outstanding = self._backend.outstanding()
        if not self._outstanding and not self.finished:
            self._backend.finish()
            self.finished = True

    def _free(self, agent):
        taken = {q["key"] for q in self._assigned.values()}
        return [
            q for q in self._outstanding if int(q["agent"]) == agent and q["key"] not in taken
        ]

    def available(self, agent):
        """How many trials site `agent` can run now (its queries not yet taken by a trial)."""
        with self._lock:
            return len(self._free(agent))

    def sampler(self, agent):
        """The Optuna sampler of site `agent` (0-based), for that site's study."""
        if not 0 <= agent < self.agents:
            raise ValueError(f"{self.spec}: agent {agent} is not one of the {self.agents} agents")
        return FboSampler(self, agent)

    def _take(self, study, trial_id, agent):
        with self._lock:
            if self.direction and study.direction.name.lower() != self.direction:
                raise ValueError(
                    f"{self.spec}: key `objective.direction` is \"{self.direction}\" but site "
                    f"{agent}'s study is created with direction {study.direction.name.lower()}"
                )
            if self.finished:
                raise RuntimeError(
                    f"{self.spec}: the federation has finished; its outputs are in {self.out}"
                )
            free = self._free(agent)
            if not free:
                raise RuntimeError(
                    f"site {agent} has no query now: rounds are synchronous, so it waits for the "
                    "other sites' values (drive the studies with fbo.optuna.optimize, or run "
                    "Federation.available(agent) trials per study in turn)"
                )
            self._assigned[trial_id] = free[0]

    def _query(self, trial_id):
        with self._lock:
            return self._assigned.get(trial_id)

    def _done(self, trial_id, state, values):
        with self._lock:
            q = self._assigned.pop(trial_id, None)
            if q is None or state != TrialState.COMPLETE:
                return  # a failed or pruned trial's query is free again
            self._backend.tell(q, float(values[0]))
            self._refresh()

    def value(self, query, name, distribution):
        """fbo's value of hyperparameter `name` in `query` as `distribution` holds it."""
        params = query["params"]
        if name not in params:
            raise ValueError(
                f"{self.spec}: the objective suggests {name!r}, which is not one of the spec's "
                f"hyperparameters ({', '.join(params)})"
            )
        v = params[name]
        if isinstance(distribution, CategoricalDistribution):
            for c in distribution.choices:
                if _choice_name(c) == v or c == v:
                    return c
            raise ValueError(f"{name}: fbo chose {v!r}, not one of {distribution.choices}")
        if isinstance(distribution, IntDistribution) or name in self._integers:
            v = int(round(v))
        if isinstance(distribution, (FloatDistribution, IntDistribution)):
            lo, hi = distribution.low, distribution.high
            # fbo's raw values are mapped from the unit cube: a bound may come back a rounding
            # off; anything further out is a different space.
            tol = 1e-9 * max(1.0, abs(lo), abs(hi))
            if not (lo - tol <= v <= hi + tol):
                raise ValueError(f"{name}: fbo chose {v}, outside the study's [{lo}, {hi}]")
            v = min(max(v, lo), hi)
            if isinstance(distribution, FloatDistribution):
                v = float(v)
        return v


class FboSampler(BaseSampler):
    """Site `agent`'s sampler: every trial evaluates fbo's query for that agent."""

    def __init__(self, federation, agent):
        self._fed = federation
        self._agent = agent

    def infer_relative_search_space(self, study, trial):
        return {}

    def sample_relative(self, study, trial, search_space):
        return {}

    def before_trial(self, study, trial):
        self._fed._take(study, trial._trial_id, self._agent)

    def sample_independent(self, study, trial, param_name, param_distribution):
        return self._fed.value(self._fed._query(trial._trial_id), param_name, param_distribution)

    def after_trial(self, study, trial, state, values):
        self._fed._done(trial._trial_id, state, values)


def optimize(federation, studies, objectives, *, n_jobs=1, catch=()):
    """Run the sites' studies round by round until the federation finishes: `studies[a]` is
    site a's study (its sampler `federation.sampler(a)`), `objectives[a]` its objective (one
    callable serves every site); `n_jobs` and `catch` as Optuna's ``study.optimize`` takes
    them (n_jobs > 1 runs a round's batch of trials at once). Returns the output folder."""
    if len(studies) != federation.agents:
        raise ValueError(f"{federation.spec}: {federation.agents} agents, {len(studies)} studies")
    objectives = (
        [objectives] * federation.agents if callable(objectives) else list(objectives)
    )
    for a, s in enumerate(studies):
        if not (isinstance(s.sampler, FboSampler) and s.sampler._fed is federation and s.sampler._agent == a):
            raise ValueError(f"study {a}'s sampler is not federation.sampler({a})")
    while not federation.finished:
        moved = False
        for a, study in enumerate(studies):
            n = federation.available(a)
            if n and not federation.finished:
                study.optimize(objectives[a], n_trials=n, n_jobs=n_jobs, catch=catch)
                moved = True
        if not moved:
            raise RuntimeError(f"{federation.spec}: no site has a query and the run has not ended")
    return federation.out



def site_objective(objective, *, study_name, storage, direction):
    """A site's Optuna objective as the function its Flower SuperNode calls (node config
    ``objective="module:name"``, docs/federation.md): each query fbo's algorithm chooses for
    this site becomes one trial of the site's own study, named `study_name` in `storage`
    (e.g. ``"sqlite:////site/optuna.db"``, so that it outlives each ClientApp process), with
    fbo's values as its parameters; the trial's value goes back to the server. The site keeps
    its study's history, dashboard and best trial as with any sampler.

        # mysite.py, importable at the site
        train = fbo.optuna.site_objective(objective, study_name="va", storage="sqlite:///va.db",
                                          direction="maximize")

    A parameter the objective suggests that fbo's space lacks, or a value outside its
    distribution, is an error naming both (Optuna would sample it on its own); a trial that
    raises or is pruned is recorded so (FAIL, PRUNED) and the site's failure reaches the
    server, which notes it and goes on without this site's reply that round."""
    import optuna

    def evaluate(**params):
        study = optuna.create_study(
            study_name=study_name, storage=storage, direction=direction, load_if_exists=True
        )
        study.enqueue_trial(params, skip_if_exists=False)
        trial = study.ask()
        try:
            value = objective(trial)
        except optuna.TrialPruned:
            study.tell(trial, state=TrialState.PRUNED)
            raise
        except Exception:
            study.tell(trial, state=TrialState.FAIL)
            raise
        for name, v in trial.params.items():
            if name not in params:
                study.tell(trial, state=TrialState.FAIL)
                raise ValueError(
                    f"the objective suggests {name!r}, which the fbo spec's space does not "
                    f"have (it has {sorted(params)})"
                )
            if v != params[name]:
                study.tell(trial, state=TrialState.FAIL)
                raise ValueError(
                    f"fbo's value {params[name]!r} of {name!r} is outside the distribution the "
                    f"objective suggests it with (the trial took {v!r})"
                )
        study.tell(trial, value)
        return value

    return evaluate
