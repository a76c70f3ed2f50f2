"""fbo's server on Flower: for every unit (algorithm, run) of the spec, round after round, one
instruction to every agent's SuperNode, the replies that arrive by the deadline, fbo's
aggregation, noise and privacy accounting; then the same trace.csv, server.csv, privacy.csv and
summary.csv as `fbo run --no-timing`. Resumes from its journals when started again.
"""

import time

from flwr.app import ConfigRecord, Context, Message, RecordDict
from flwr.serverapp import Grid, ServerApp

import fbo

app = ServerApp()


def _ask(grid, instructions, timeout):
    """Sends each node its step instruction (node id -> JSON); the replies that arrived."""
    return _send(grid, {n: {"kind": "step", "instruction": i} for n, i in instructions.items()}, timeout)


def _send(grid, contents, timeout):
    msgs = [
        Message(RecordDict({"fbo": ConfigRecord(c)}), dst_node_id=n, message_type="query")
        for n, c in contents.items()
    ]
    return [r for r in grid.send_and_receive(msgs, timeout=timeout) if not r.has_error()]


def _agents(grid, known, timeout):
    """agent index -> node id for every connected SuperNode (new ones asked who they are)."""
    new = [n for n in grid.get_node_ids() if n not in known.values()]
    if new:
        for r in _send(grid, {n: {"kind": "who"} for n in new}, timeout):
            known[int(r.content["fbo"]["agent"])] = r.metadata.src_node_id
    live = set(grid.get_node_ids())
    return {a: n for a, n in known.items() if n in live}


@app.main()
def main(grid: Grid, context: Context) -> None:
    cfg = context.run_config
    spec, out = str(cfg["spec"]), str(cfg["out"])
    deadline, wait = float(cfg["deadline-s"]), float(cfg["wait-nodes-s"])
    max_failures = int(cfg.get("max-site-failures", 3))
    server = fbo.Server(spec, out)
    known = {}
    for algorithm, run in server.units():
        unit = server.unit(algorithm, run)
        started = time.monotonic()
        while len(_agents(grid, known, deadline)) < len(unit.agents):
            if time.monotonic() - started > wait:
                break
            time.sleep(1.0)
        seen = len(unit.notes)
        while not unit.finished:
            nodes = _agents(grid, known, deadline)
            # Each agent its own instruction: its point where the algorithm sends each its own
            # (consensus), and the earlier rounds whose reply the server lacks from it.
            targets = {nodes[a]: fbo.to_json(unit.instruction(a)) for a in unit.agents if a in nodes}
            replies = _ask(grid, targets, deadline)
            answered = []
            for r in replies:
                content = r.content["fbo"]
                if "error" in content:
                    error = str(content["error"])
                    print(f"fbo: algorithm {algorithm} run {run}: agent {int(content['agent'])}'s site failed: {error}", flush=True)
                    # Raises (and so ends the run as failed) at the max-site-failures-th in a row.
                    unit.site_failed(int(content["agent"]), error, max_failures)
                else:
                    answered.append(str(content["reply"]))
            unit.receive(answered)
            for line in unit.notes[seen:]:
                print(f"fbo: algorithm {algorithm} run {run}: {line}", flush=True)
            seen = len(unit.notes)
            # The operator's view of each round, in the ServerApp's log (`flwr log`).
            print(f"fbo: algorithm {algorithm} run {run}: {unit.progress}", flush=True)
        server.save(unit)
    server.finish()
