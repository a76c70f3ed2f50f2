"""The Python package against fbo's own runs: same bytes by every road, errors as FboError."""

import filecmp
import json
import pathlib

import numpy as np
import pytest

import fbo

ROOT = pathlib.Path(__file__).resolve().parents[2]
SMALL_DP = ROOT / "tests" / "fixtures" / "small-dp.toml"
FRAMEWORKS = ROOT / "tests" / "fixtures" / "frameworks-fed.toml"
FEDGP = ROOT / "tests" / "fixtures" / "fedgp-fed.toml"
FILES = ["trace.csv", "server.csv", "privacy.csv", "summary.csv"]


def tell_all(spec, state, value_of):
    """Asks and tells by hand until the spec is complete, `value_of(query)` giving each value
    (or (value, cost_s)); returns how many were told."""
    told = 0
    while True:
        queries = fbo.ask(spec, state)
        if not queries:
            return told
        for q in queries:
            v = value_of(q)
            value, cost_s = v if isinstance(v, tuple) else (v, 0.0)
            fbo.tell(spec, state, q, value, cost_s=cost_s)
            told += 1


def same_files(a, b):
    """Per output file, whether both folders hold it with the same bytes, or neither does (a
    spec without a server writes no server.csv)."""
    return {
        f: filecmp.cmp(a / f, b / f, shallow=False)
        if (a / f).exists() or (b / f).exists()
        else True
        for f in FILES
    }


def federate(spec, out, state, agents=None, kill_every=None):
    """The server and the agents in this process, every message through JSON text as a
    network would carry it; with `kill_every`, both sides are dropped and reopened from
    their journals every that many rounds."""
    agents = {} if agents is None else agents
    server = fbo.Server(spec, out)
    rounds = 0
    for alg, run in server.units():
        unit = server.unit(alg, run)
        while not unit.finished:
            replies = []
            for a in unit.agents:
                # Each agent its own instruction (its own point under consensus).
                ins = fbo.from_json(fbo.to_json(unit.instruction(a)))
                if a not in agents:
                    agents[a] = fbo.Agent(spec, a, state=state / f"agent{a}")
                replies.append(fbo.to_json(agents[a].step(ins)))
            unit.receive(replies)
            rounds += 1
            if kill_every and rounds % kill_every == 0:
                return False
        server.save(unit)
    server.finish()
    return True


def federate_through_kills(spec, out, state, every):
    """`federate` dropped every `every` rounds and reopened until it finishes: the restarts."""
    restarts = 0
    while not federate(spec, out, state, kill_every=every):
        restarts += 1
    return restarts


def test_run_and_a_federation_write_the_same_bytes(tmp_path):
    fbo.run(SMALL_DP, tmp_path / "sim", no_timing=True)
    assert federate(SMALL_DP, tmp_path / "fed", tmp_path / "state")
    assert all(same_files(tmp_path / "sim", tmp_path / "fed").values())
    fbo.run_in_process(SMALL_DP, tmp_path / "inproc", tmp_path / "state2")
    assert all(same_files(tmp_path / "sim", tmp_path / "inproc").values())


def test_the_frameworks_across_machines_write_fbo_runs_bytes(tmp_path):
    # Consensus, design densities, CGP-UCB and FMTBO: each agent receives its own.
    fbo.run(FRAMEWORKS, tmp_path / "sim", no_timing=True)
    assert federate(FRAMEWORKS, tmp_path / "fed", tmp_path / "state")
    assert all(same_files(tmp_path / "sim", tmp_path / "fed").values())


def test_fedgp_across_machines_killed_between_questions_writes_fbo_runs_bytes(tmp_path):
    # The server's solver asks the sites its questions before each broadcast; killed every
    # seven exchanges (evaluations or questions), both sides resume from their journals.
    fbo.run(FEDGP, tmp_path / "sim", no_timing=True)
    assert federate_through_kills(FEDGP, tmp_path / "fed", tmp_path / "state", 7) >= 5
    assert all(same_files(tmp_path / "sim", tmp_path / "fed").values())


def test_sites_that_keep_their_values_share_them_afterwards(tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text(SMALL_DP.read_text().replace("[privacy]", "[output]\nsite_traces = true\n\n[privacy]"))
    fbo.run(spec, tmp_path / "sim", no_timing=True)
    assert federate(spec, tmp_path / "fed", tmp_path / "state")
    assert not (tmp_path / "fed" / "trace.csv").exists()
    traces = []
    for a in range(12):
        path = tmp_path / f"site{a}.csv"
        path.write_text(fbo.Agent(spec, a, state=tmp_path / "state" / f"agent{a}").trace())
        traces.append(path)
    fbo.merge_site_traces(spec, tmp_path / "fed", traces)
    assert all(same_files(tmp_path / "sim", tmp_path / "fed").values())


def test_a_federation_killed_every_five_rounds_resumes_to_the_same_bytes(tmp_path):
    fbo.run(SMALL_DP, tmp_path / "sim", no_timing=True)
    assert federate_through_kills(SMALL_DP, tmp_path / "fed", tmp_path / "state", 5) >= 8
    assert all(same_files(tmp_path / "sim", tmp_path / "fed").values())


def test_the_operator_sees_each_round_and_who_was_missing(tmp_path):
    server = fbo.Server(SMALL_DP, tmp_path / "out")
    alg, run = server.units()[0]
    unit = server.unit(alg, run)
    assert unit.progress is None
    sites = {a: fbo.Agent(SMALL_DP, a, state=tmp_path / f"agent{a}") for a in unit.agents}
    for _ in range(2):
        ins = unit.instruction()
        # Agent 4's reply is lost in round 1.
        unit.receive([sites[a].step(ins) for a in unit.agents if unit.round != 1 or a != 4])
    n = len(unit.agents)
    line = f"round 1 of 8: {n - 1} of {n} agents answered (missing: 4)"
    assert unit.progress.startswith(line)
    # The status, from the server's journal, as another process would read it.
    assert f"federation: TS run 0: {line}" in fbo.status(SMALL_DP, tmp_path / "out")


def test_messages_cross_as_numpy_arrays_and_bad_ones_are_rejected(tmp_path):
    server = fbo.Server(SMALL_DP, tmp_path / "out")
    alg, run = [u for u in server.units() if u[0] == 1][0]
    unit = server.unit(alg, run)
    ins = unit.instruction()
    agents = [fbo.Agent(SMALL_DP, a) for a in unit.agents]
    replies = [ag.step(ins) for ag in agents]
    assert isinstance(replies[0]["message"], np.ndarray)
    assert replies[0]["message"].shape == (16,)
    replies[1]["message"][3] = np.nan
    replies[2]["message"] = replies[2]["message"][:5]
    unit.receive(replies + ["not json"])
    notes = "\n".join(unit.notes)
    assert "agent 1's message rejected" in notes and "NaN" in notes
    assert "agent 2's message rejected" in notes and "has 5 values" in notes
    assert "not JSON of a reply" in notes
    assert unit.round == 1


def test_an_agent_asked_and_told_by_the_caller_answers_as_the_objective_would(tmp_path):
    server = fbo.Server(SMALL_DP, tmp_path / "out")
    unit = server.unit(1, 0)
    ins = unit.instruction()
    by_fbo = fbo.Agent(SMALL_DP, 4)
    by_hand = fbo.Agent(SMALL_DP, 4)
    want = by_fbo.step(ins)
    queries = by_hand.ask(ins)
    assert len(queries) == 3 and queries == by_hand.ask(ins)
    # The noiseless values fbo's objective gave, read back from its trace rows (column f).
    f_values = [float(line.split(",")[-10]) for line in want["rows"].splitlines()]
    got = by_hand.tell(ins, f_values)
    assert got["rows"] == want["rows"]
    assert np.array_equal(got["message"], want["message"])


def test_bad_input_raises_fbo_error_naming_the_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(SMALL_DP.read_text().replace("q = 0.5", "q = 1.5"))
    with pytest.raises(fbo.FboError, match="bad.toml"):
        fbo.run(bad, tmp_path / "out")
    with pytest.raises(fbo.FboError, match="no agent 99"):
        fbo.Agent(SMALL_DP, 99)


def test_ask_and_tell_by_hand(tmp_path):
    spec = tmp_path / "ext.toml"
    spec.write_text(
        """
name = "ext"
seed = 1
runs = 1
iterations = 2
initial_points = 2

[objective]
kind = "external"
direction = "maximize"

[[objective.hyperparameters]]
name = "lr"
low = 0.0
high = 1.0

[federation]
agents = 1

[[algorithm]]
kind = "ts"
"""
    )
    state = tmp_path / "state"
    told = tell_all(spec, state, lambda q: -((q["params"]["lr"] - 0.3) ** 2))
    assert told == 4
    fbo.run(spec, state)
    rows = (state / "trace.csv").read_text().splitlines()
    assert len(rows) == 1 + 4


EXT = """
name = "ext"
seed = 1
runs = 2
iterations = 3
initial_points = 2

[objective]
kind = "external"
direction = "DIRECTION"

[[objective.hyperparameters]]
name = "lr"
low = 0.0
high = 1.0

[[objective.hyperparameters]]
name = "depth"
low = 1
high = 8
integer = true

[federation]
agents = 2

[[algorithm]]
kind = "ts"

[[algorithm]]
kind = "fts"
"""


def test_a_python_objective_in_process_gives_ask_and_tells_bytes(tmp_path):
    # fbo.maximize calls the function with the hyperparameters by name, per agent where a list
    # is given (and with agent= where the function takes it); its outputs are those of the
    # same values told by hand through ask and tell.
    spec = tmp_path / "ext.toml"
    spec.write_text(EXT.replace("DIRECTION", "maximize"))
    calls = []

    def site0(lr, depth):
        calls.append((0, lr, depth))
        return -((lr - 0.3) ** 2) - 0.01 * depth

    def site1(lr, depth, agent):
        assert agent == 1
        calls.append((1, lr, depth))
        return {"metric": -((lr - 0.6) ** 2) - 0.02 * depth, "cost_s": 2.0}

    out = fbo.maximize(spec, [site0, site1], tmp_path / "py", no_timing=True)
    assert out == tmp_path / "py"
    assert all(isinstance(d, int) for _, _, d in calls)
    by_hand = tmp_path / "hand"

    def by_name(q):
        lr, depth = q["params"]["lr"], q["params"]["depth"]
        if q["agent"] == 0:
            return -((lr - 0.3) ** 2) - 0.01 * depth
        return (-((lr - 0.6) ** 2) - 0.02 * depth, 2.0)

    told = tell_all(spec, by_hand, by_name)
    fbo.run(spec, by_hand, no_timing=True)
    # Every query evaluated once (FTS's senders included), and the same bytes.
    assert len(calls) == told
    for f in ["trace.csv", "summary.csv"]:
        assert filecmp.cmp(out / f, by_hand / f, shallow=False), f


def test_an_interrupted_python_objective_resumes_without_evaluating_twice(tmp_path):
    spec = tmp_path / "ext.toml"
    text = EXT.replace("DIRECTION", "minimize").replace('[[algorithm]]\nkind = "fts"\n', "")
    assert "fts" not in text
    spec.write_text(text)
    seen = []

    def loss(lr, depth):
        if len(seen) == 13:
            raise KeyboardInterrupt  # the user's Ctrl-C mid-study
        seen.append((lr, depth))
        return (lr - 0.3) ** 2 + depth

    with pytest.raises(KeyboardInterrupt):
        fbo.minimize(spec, loss, tmp_path / "o")
    seen.append(None)  # lets the loss through from now on
    fbo.minimize(spec, lambda lr, depth: loss(lr, depth), tmp_path / "o")
    # Two runs x two agents x (2 initial points + 3 iterations), each evaluated once.
    assert len(seen) - 1 == 20, len(seen)
    points = [s for s in seen if s is not None]
    assert len(set(points)) == len(points)
    with pytest.raises(ValueError, match="objective.direction"):
        fbo.maximize(spec, loss, tmp_path / "o2")


def test_a_site_tells_a_minimised_loss_as_it_measures_it(tmp_path):
    spec = tmp_path / "loss.toml"
    spec.write_text(
        """
name = "loss"
seed = 2
runs = 1
iterations = 2
initial_points = 2

[objective]
kind = "external"
direction = "minimize"

[[objective.hyperparameters]]
name = "lr"
low = 0.0
high = 1.0

[federation]
agents = 1

[[algorithm]]
kind = "ts"
"""
    )
    server = fbo.Server(spec, tmp_path / "out")
    site = fbo.Agent(spec, 0)
    for alg, run in server.units():
        unit = server.unit(alg, run)
        while not unit.finished:
            ins = unit.instruction()
            queries = site.ask(ins)
            losses = [(q["params"]["lr"] - 0.3) ** 2 for q in queries]
            reply = site.tell(ins, losses)
            for line, loss in zip(reply["rows"].splitlines(), losses):
                cols = line.split(",")
                assert float(cols[-9]) == loss  # metric: the loss as told
                assert float(cols[-10]) == -loss  # f: what fbo maximises
            unit.receive([reply])
        server.save(unit)
    server.finish()
    assert len((tmp_path / "out" / "trace.csv").read_text().splitlines()) == 1 + 4


def test_ctrl_c_stops_fbo_run_keeping_what_finished(tmp_path):
    """SIGINT during fbo.run raises KeyboardInterrupt within seconds (the run goes on a
    thread of its own; units stop at their next iteration), and a rerun resumes."""
    import signal
    import subprocess
    import sys
    import time

    text = SMALL_DP.read_text()
    text = text.replace("runs = 3\n", "runs = 40\n").replace("iterations = 8\n", "iterations = 60\n")
    assert "runs = 40" in text and "iterations = 60" in text
    spec = tmp_path / "long.toml"
    spec.write_text(text)
    out = tmp_path / "out"
    code = f"import fbo\nfbo.run({str(spec)!r}, {str(out)!r}, threads=2, no_timing=True)\n"
    # SIGINT back to its default in the child: a test run started in the background by a
    # non-interactive shell inherits it ignored, and Python then installs no handler (the run
    # would finish, exit 0 with nothing on stderr, and this test would judge the environment).
    child = subprocess.Popen(
        [sys.executable, "-c", code],
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    # Interrupted once its first unit is saved, so that there is something to keep.
    deadline = time.monotonic() + 120
    while not list((out / "parts").glob("*.csv")) and child.poll() is None:
        assert time.monotonic() < deadline, "no unit finished in 120 s"
        time.sleep(0.05)
    assert child.poll() is None, "the run ended before it could be interrupted"
    child.send_signal(signal.SIGINT)
    sent = time.monotonic()
    _, err = child.communicate(timeout=60)
    waited = time.monotonic() - sent
    assert "KeyboardInterrupt" in err, f"exit {child.returncode}: {err}"
    assert waited < 10, f"{waited:.1f} s from SIGINT to the end"
    parts = list((out / "parts").glob("*.csv"))
    assert parts, "finished units were kept"
    assert not (out / "trace.csv").exists()
    # The rerun finishes from what was kept.
    fbo.run(spec, out, no_timing=True)
    assert (out / "trace.csv").exists()
