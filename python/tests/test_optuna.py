"""fbo.optuna: sites' Optuna studies as the agents of one fbo federation."""

import pathlib

import pytest

optuna = pytest.importorskip("optuna")
import fbo  # noqa: E402
import fbo.optuna  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.WARNING)

SPACE = {
    "lr": optuna.distributions.FloatDistribution(1e-4, 1e-1, log=True),
    "depth": optuna.distributions.IntDistribution(1, 8),
    "opt": optuna.distributions.CategoricalDistribution(["sgd", "adam"]),
}


def loss(lr, depth, opt, agent):
    """A site's validation loss: each site has its own optimum."""
    import math

    return (math.log10(lr) + 2.0 + 0.3 * agent) ** 2 + 0.1 * (depth - 3 - agent) ** 2 + (
        0.5 if opt == "sgd" else 0.0
    )


def objective_of(agent):
    def objective(trial):
        return loss(
            trial.suggest_float("lr", 1e-4, 1e-1, log=True),
            trial.suggest_int("depth", 1, 8),
            trial.suggest_categorical("opt", ["sgd", "adam"]),
            agent,
        )

    return objective


def spec(tmp_path, algorithm):
    return fbo.optuna.spec_from_search_space(
        tmp_path / "spec.toml",
        SPACE,
        agents=3,
        direction="minimize",
        algorithm=algorithm,
        iterations=4,
        initial_points=2,
        seed=5,
    )


@pytest.mark.parametrize(
    "algorithm",
    ["ts", {"kind": "dp-fts-de", "server": {"subregions": 2, "dp": True, "q": 1.0, "z": 1.0}}],
)
def test_optuna_studies_reproduce_the_run_of_the_same_spec(tmp_path, algorithm):
    path = spec(tmp_path, algorithm)
    # fbo evaluating the same function itself (the reference: fbo run's bytes for these values).
    fbo.minimize(path, loss, tmp_path / "reference", no_timing=True)
    fed = fbo.optuna.Federation(path, tmp_path / "optuna")
    studies = [
        optuna.create_study(sampler=fed.sampler(a), direction="minimize") for a in range(3)
    ]
    fbo.optuna.optimize(fed, studies, [objective_of(a) for a in range(3)])
    for name in ("trace.csv", "summary.csv"):
        assert (tmp_path / "optuna" / name).read_bytes() == (
            tmp_path / "reference" / name
        ).read_bytes(), name
    # Every site ran its initial points and one query per iteration, nothing more.
    for s in studies:
        done = [t for t in s.trials if t.state == optuna.trial.TrialState.COMPLETE]
        assert len(done) == 2 + 4
        assert all(1 <= t.params["depth"] <= 8 and t.params["opt"] in ("sgd", "adam") for t in done)
    # The study's best is the trace's best of that agent.
    trace = (tmp_path / "optuna" / "trace.csv").read_text().splitlines()
    assert len(trace) == 1 + 3 * 6


def test_a_batch_runs_as_trials_at_once(tmp_path):
    path = spec(tmp_path, "ts")
    path.write_text(path.read_text().replace("initial_points = 2", "initial_points = 2\nbatch = 2"))
    fbo.minimize(path, loss, tmp_path / "reference", no_timing=True)
    fed = fbo.optuna.Federation(path, tmp_path / "optuna")
    studies = [
        optuna.create_study(sampler=fed.sampler(a), direction="minimize") for a in range(3)
    ]
    fbo.optuna.optimize(fed, studies, [objective_of(a) for a in range(3)], n_jobs=2)
    assert all(len(s.trials) == 2 + 4 * 2 for s in studies)
    for name in ("trace.csv", "summary.csv"):
        assert (tmp_path / "optuna" / name).read_bytes() == (
            tmp_path / "reference" / name
        ).read_bytes(), name


def test_a_failed_trial_gives_its_query_back(tmp_path):
    path = spec(tmp_path, "ts")
    fbo.minimize(path, loss, tmp_path / "reference", no_timing=True)
    fed = fbo.optuna.Federation(path, tmp_path / "optuna")
    studies = [
        optuna.create_study(sampler=fed.sampler(a), direction="minimize") for a in range(3)
    ]
    failed = []

    def flaky(trial):
        # Site 1's third trial fails once; its query is evaluated by the next trial instead.
        if trial.number == 2 and not failed:
            failed.append(trial.number)
            raise RuntimeError("the GPU fell over")
        return objective_of(1)(trial)

    objectives = [objective_of(0), flaky, objective_of(2)]
    fbo.optuna.optimize(fed, studies, objectives, catch=(RuntimeError,))
    assert failed == [2]
    states = [t.state for t in studies[1].trials]
    assert states.count(optuna.trial.TrialState.FAIL) == 1
    assert states.count(optuna.trial.TrialState.COMPLETE) == 6
    assert (tmp_path / "optuna" / "trace.csv").read_bytes() == (
        tmp_path / "reference" / "trace.csv"
    ).read_bytes()


def test_mismatches_are_named(tmp_path):
    path = spec(tmp_path, "ts")
    fed = fbo.optuna.Federation(path, tmp_path / "optuna")
    maximising = optuna.create_study(sampler=fed.sampler(0), direction="maximize")
    with pytest.raises(ValueError, match="objective.direction"):
        maximising.optimize(objective_of(0), n_trials=1)
    with pytest.raises(ValueError, match="not one of the 3 agents"):
        fed.sampler(3)
    study = optuna.create_study(sampler=fed.sampler(0), direction="minimize")
    with pytest.raises(ValueError, match="'width'"):
        study.optimize(lambda t: t.suggest_float("width", 0.0, 1.0), n_trials=1)
    bad = pathlib.Path(tmp_path / "two.toml")
    for text in (path.read_text().replace("runs = 1", "runs = 2"), path.read_text().replace("runs = 1\n", "")):
        # Unwritten, runs is fbo's default of 10.
        bad.write_text(text)
        with pytest.raises(ValueError, match="runs = 1"):
            fbo.optuna.Federation(bad, tmp_path / "other")


ROOT = pathlib.Path(__file__).resolve().parents[2]


def landmine_spec(tmp_path):
    """Three iterations of DP-FTS-DE on the landmine table (29 fields)."""
    table = ROOT / "data" / "landmine" / "table.toml"
    path = tmp_path / "spec.toml"
    path.write_text(
        f"""name = "optuna-landmine"
seed = 3
runs = 1
iterations = 3
initial_points = 1

[objective]
kind = "table"
table = "{table}"

[[algorithm]]
kind = "dp-fts-de"
server = {{ subregions = 2, dp = true, q = 0.5, z = 1.0 }}
"""
    )
    return path


def landmine_objective_of(agent):
    """Field `agent`'s Optuna objective: its AUC looked up in the table."""
    import csv

    auc = []
    with open(ROOT / "data" / "landmine" / "table.csv") as f:
        for r in csv.DictReader(f):
            if int(r["agent"]) == agent:
                auc.append((float(r["C"]), float(r["gamma"]), float(r["metric"])))

    def objective(trial):
        c = trial.suggest_float("C", 1e-4, 10.0)
        g = trial.suggest_float("gamma", 0.01, 10.0)
        return min(auc, key=lambda r: abs(r[0] - c) + abs(r[1] - g))[2]

    return objective


def test_studies_on_a_response_table_reproduce_fbo_run(tmp_path):
    """29 landmine fields, each an Optuna study whose objective looks its AUC up in the table:
    the federation writes fbo run's bytes (trace, summary, privacy)."""
    import csv

    path = landmine_spec(tmp_path)
    fbo.run(path, tmp_path / "reference", no_timing=True)
    objective_of = landmine_objective_of

    fed = fbo.optuna.Federation(path, tmp_path / "optuna")
    assert fed.agents == 29 and fed.direction == "maximize"
    studies = [
        optuna.create_study(sampler=fed.sampler(a), direction="maximize") for a in range(29)
    ]
    fbo.optuna.optimize(fed, studies, [objective_of(a) for a in range(29)])
    for name in ("summary.csv", "privacy.csv", "server.csv"):
        assert (tmp_path / "optuna" / name).read_bytes() == (
            tmp_path / "reference" / name
        ).read_bytes(), name

    # The trace too, but for train_s: the table records each point's training seconds, which
    # fbo run reports, and an Optuna trial returns a value only (its cost is told as 0).
    def rows(folder):
        with open(tmp_path / folder / "trace.csv") as f:
            return list(csv.DictReader(f))

    ours, reference = rows("optuna"), rows("reference")
    assert len(ours) == len(reference) == 29 * 4
    for a, b in zip(ours, reference):
        assert float(a.pop("train_s")) == 0.0 and float(b.pop("train_s")) > 0.0
        assert a == b


def test_studies_take_a_batch_per_round_through_the_federation_roles(tmp_path):
    """With batch = 2 on the landmine table (five fields) each site's study gets its round's
    two trials at once (n_jobs = 2), chosen at the site as fbo run chooses them: the same
    summary, server and privacy bytes, and two trials per study per round."""
    text = landmine_spec(tmp_path).read_text()
    path = tmp_path / "batch.toml"
    path.write_text(
        text.replace("initial_points = 1\n", "initial_points = 2\nbatch = 2\n").replace(
            'table = "', 'agents = [0, 1, 2, 3, 4]\ntable = "'
        )
    )
    assert "batch = 2" in path.read_text() and "agents = [0, 1, 2, 3, 4]" in path.read_text()
    fbo.run(path, tmp_path / "reference", no_timing=True)
    fed = fbo.optuna.Federation(path, tmp_path / "optuna")
    assert fed.agents == 5
    studies = [
        optuna.create_study(sampler=fed.sampler(a), direction="maximize") for a in range(5)
    ]
    fbo.optuna.optimize(fed, studies, [landmine_objective_of(a) for a in range(5)], n_jobs=2)
    for name in ("summary.csv", "privacy.csv", "server.csv"):
        assert (tmp_path / "optuna" / name).read_bytes() == (
            tmp_path / "reference" / name
        ).read_bytes(), name
    for study in studies:
        # 2 initial points, then 3 rounds of 2.
        assert len(study.trials) == 2 + 3 * 2
        assert all(t.state == optuna.trial.TrialState.COMPLETE for t in study.trials)


def test_a_sites_study_across_machines_records_the_federations_trials(tmp_path):
    """Across machines (the Flower SuperNode's objective hook, here called as the ClientApp
    calls it) each site's own study, kept in its storage, gets one trial per fbo query: the
    federation writes fbo run's summary, server and privacy bytes, and every site's study
    holds exactly its trace rows' parameters and values."""
    import csv

    path = landmine_spec(tmp_path)
    fbo.run(path, tmp_path / "reference", no_timing=True)
    storage = f"sqlite:///{tmp_path / 'sites.db'}"
    hooks = {
        a: fbo.optuna.site_objective(
            landmine_objective_of(a), study_name=f"field{a}", storage=storage, direction="maximize"
        )
        for a in range(29)
    }
    server = fbo.Server(path, tmp_path / "fed")
    ints = fbo.integer_names(path)
    for alg, run in server.units():
        unit = server.unit(alg, run)
        sites = {a: fbo.Agent(path, a, state=tmp_path / "state" / f"a{a}") for a in unit.agents}
        while not unit.finished:
            replies = []
            for a in unit.agents:
                ins = unit.instruction(a)
                queries = sites[a].ask(ins)
                values = [fbo.call_objective(hooks[a], q["params"], a, ints)[0] for q in queries]
                replies.append(sites[a].tell(ins, values))
            unit.receive(replies)
        server.save(unit)
    server.finish()
    for name in ("summary.csv", "privacy.csv", "server.csv"):
        assert (tmp_path / "fed" / name).read_bytes() == (
            tmp_path / "reference" / name
        ).read_bytes(), name
    with open(tmp_path / "fed" / "trace.csv") as f:
        trace = list(csv.DictReader(f))
    for a in (0, 13, 28):
        study = optuna.load_study(study_name=f"field{a}", storage=storage)
        done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
        rows = [r for r in trace if int(r["agent"]) == a]
        assert len(done) == len(rows) == 4
        for t, r in zip(done, rows):
            assert t.params == {"C": float(r["C"]), "gamma": float(r["gamma"])}
            assert t.value == float(r["metric"])
    # An objective suggesting a name fbo's space lacks is refused, naming it.
    def extra(trial):
        trial.suggest_float("C", 1e-4, 10.0)
        return trial.suggest_float("momentum", 0.0, 1.0)

    hook = fbo.optuna.site_objective(extra, study_name="x", storage=storage, direction="maximize")
    with pytest.raises(ValueError, match="'momentum'"):
        hook(C=1.0, gamma=0.5)
