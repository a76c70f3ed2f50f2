"""One fbo agent per SuperNode. The site's administrator starts its SuperNode with

    flower-supernode ... --node-config 'agent=3 spec="/site/spec.toml" state="/site/fbo-state"'

`agent` is this site's agent index in the spec, `spec` the site's own copy of the experiment
(the same text as the server's: a different one is refused), `state` the folder where the agent
journals every round, so that a SuperNode that dies and returns evaluates nothing twice.
Optionally `objective="module:function"`: the site's own Python objective (importable at the
site), called with each query's hyperparameters by name and returning its value in the spec's
direction; otherwise fbo evaluates the spec's objective here.
"""

import importlib

from flwr.app import ConfigRecord, Context, Message, RecordDict
from flwr.clientapp import ClientApp

import fbo

app = ClientApp()

# The agent lives as long as this process; a new process resumes it from its journal.
_agents = {}


def _agent(context):
    cfg = context.node_config
    key = (str(cfg["spec"]), int(cfg["agent"]), str(cfg["state"]))
    if key not in _agents:
        _agents[key] = fbo.Agent(key[0], key[1], state=key[2])
    return _agents[key], key[1]


@app.query()
def query(msg: Message, context: Context) -> Message:
    """`who`: the agent index of this site; `step`: the reply to an fbo instruction."""
    agent, index = _agent(context)
    cfg = msg.content["fbo"]
    if cfg["kind"] == "who":
        out = {"agent": index}
    else:
        try:
            out = {"agent": index, "reply": fbo.to_json(_step(agent, context, cfg))}
        except Exception as e:  # noqa: BLE001 - any failure of the site is the server's to know
            # Sent as an answer, not left to time out: the server notes the site and its error
            # and stops the run once one site has failed max-site-failures rounds in a row.
            out = {"agent": index, "error": f"{type(e).__name__}: {e}"[:2000]}
    return Message(RecordDict({"fbo": ConfigRecord(out)}), reply_to=msg)


def _step(agent, context, cfg):
    """This site's reply to one instruction."""
    ins = fbo.from_json(cfg["instruction"])
    ref = context.node_config.get("objective")
    fault = context.node_config.get("fault")
    if fault == "error":
        # A site whose objective fails on every call, for the tests.
        raise RuntimeError("the site's objective failed (fault=error)")
    if ref:
        module, _, name = str(ref).partition(":")
        objective = getattr(importlib.import_module(module), name)
        queries = agent.ask(ins)
        # As documented: the hyperparameters by name (fbo.call_objective, as fbo.optimize).
        ints = fbo.integer_names(str(context.node_config["spec"]))
        values = [fbo.call_objective(objective, q["params"], agent.agent, ints)[0] for q in queries]
        reply = agent.tell(ins, values)
    else:
        reply = agent.step(ins)
    if fault == "nan" and reply.get("message") is not None:
        # A faulty or hostile site, for the tests: its vector is all NaN.
        reply["message"] = reply["message"] * float("nan")
    return reply
