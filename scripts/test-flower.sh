#!/usr/bin/env bash
# A real Flower federation on this machine (issue 29), set up as docs/federation.md says, with
# `fbo-flower server-init` (CA, certificate, Flower configuration, SuperLink command),
# `site-init` (each site's key and SuperNode command) and `register`: a SuperLink with TLS and
# SuperNode authentication, five SuperNodes (one fbo agent each) on 127.0.0.1, and
# integrations/flower's app running a DP-FTS-DE spec. Checks:
#   1. no faults: trace.csv, server.csv, privacy.csv, summary.csv byte-identical to fbo's own run
#      (timing columns off); `flwr log` shows every round's progress line; 1b. the same under
#      secure aggregation (the vectors travel only masked, in four steps per round) with each
#      site's own noise shares and self-sampling coin; 1c. FedGP, its solver's questions over
#      Flower; 1d. FTS's target-and-senders form (senders' messages relayed to the targets);
#      1e. RGPE and TAF (the senders' posteriors relayed once);
#   2. kill -9 of one SuperNode mid-run, restarted later: the run completes, that agent evaluated
#      no round twice, its missing rounds are in federation-notes.txt and server.csv, privacy.csv
#      is fbo's (the bound holds with messages missing);
#   3. kill -9 of the SuperLink and its ServerApp mid-run, both restarted: no round is redone;
#      `fbo-flower status` showed the last round kept meanwhile;
#   4. a SuperNode whose key is not registered is refused; a SuperNode sending NaN vectors is
#      rejected round after round without stopping the run; a site whose objective fails on
#      every call is noted with its error, and its third failure in a row stops the run;
#   5. each site's own Optuna study as its objective (fbo.optuna.site_objective, the site's
#      module on PYTHONPATH): fbo run's bytes, and every study's trials equal its trace rows.
#   6. three sites and the server on network namespaces of their own (a bridge between them),
#      set up with the defaults docs/federation.md gives for real sites: fbo run's bytes.
# Builds the fbo package (scripts/test-python.sh's environment) and installs flwr, pinned, into
# a virtual environment of its own. FBO_FLOWER_KEEP=1 keeps the work folder.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
source scripts/venv.sh
need_venv test-flower
VENV="${FBO_FLOWER_VENV:-target/flower-venv}"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
VENV="$(cd "$VENV" && pwd)"
"$VENV/bin/pip" install -q --disable-pip-version-check -r integrations/flower/requirements.txt
# Optuna for check 5, at the pins the package's tests use (their block from "# fbo.optuna" on;
# packaging, pinned above it for the package's build, stays at flwr's pin, which Optuna takes).
grep -A99 '^# fbo.optuna' python/requirements-test.txt |
    "$VENV/bin/pip" install -q --disable-pip-version-check -r /dev/stdin
echo "test-flower: building the fbo package into $VENV (a first build takes 3-5 minutes) ..." >&2
CARGO_TARGET_DIR="$ROOT/target/python" "$VENV/bin/pip" install -q --disable-pip-version-check ./python
"$VENV/bin/pip" install -q --disable-pip-version-check --no-deps ./integrations/flower
export PATH="$VENV/bin:$PATH"

W="$(mktemp -d /tmp/fbo-flower.XXXXXX)"
PORT=$((20000 + RANDOM % 20000))
PIDS=()
NETNS=()
R=""
cleanup() {
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    # The walk-through's SuperLink and SuperNodes, if it stopped before its own last step.
    if [ -n "$R" ]; then pkill -9 -f "$R/" 2>/dev/null || true; fi
    # The apps' processes run from this test's environment (a ClientApp outlives a SuperNode
    # killed under it).
    pkill -9 -f "$VENV/bin/flwr-serverapp" 2>/dev/null || true
    pkill -9 -f "$VENV/bin/flwr-clientapp" 2>/dev/null || true
    for n in "${NETNS[@]}"; do ip netns del "$n" 2>/dev/null || true; done
    if [ -z "${FBO_FLOWER_KEEP:-}" ]; then rm -rf "$W" $R; else echo "test-flower: kept $W $R" >&2; fi
}
trap cleanup EXIT
fail() {
    echo "test-flower: FAILED: $*" >&2
    echo "--- last lines of the SuperLink's log:" >&2
    tail -n 30 "$W"/link*.log >&2 || true
    exit 1
}

# 0. docs/federation.md's walk-through, exactly as written: its sh blocks, in order, from a
# folder that has the clone's configs/, data/ and integrations/ (as the clone's root has), so
# that it writes nothing into the clone. Its own last blocks check the federation's four CSVs
# against fbo's one-process run and stop its processes.
echo "test-flower: 0. docs/federation.md's walk-through (four heart-disease sites)" >&2
R="$(mktemp -d /tmp/fbo-rehearsal.XXXXXX)"
ln -s "$ROOT/configs" "$ROOT/data" "$ROOT/integrations" "$R/"
python3 - "$ROOT/docs/federation.md" >"$R/walk-through.sh" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
part = text.split("<!-- walk-through: begin")[1].split("<!-- walk-through: end -->")[0]
blocks = re.findall(r"^```sh\n(.*?)^```$", part, re.MULTILINE | re.DOTALL)
assert len(blocks) == 5, f"{len(blocks)} sh blocks in the walk-through"
print("set -euo pipefail")
print("\n".join(blocks))
PY
t0=$SECONDS
(cd "$R" && timeout 900 bash walk-through.sh) >"$R/walk-through.log" 2>&1 ||
    fail "the walk-through stopped: $(tail -n 20 "$R/walk-through.log")"
grep -q "round 6 of 6: 4 of 4 agents answered; epsilon so far" "$R/walk-through.log" ||
    fail "flwr run --stream showed no progress line for the last round: $(tail -n 10 "$R/walk-through.log")"
grep -q "1 done, 0 running, 0 missing" "$R/walk-through.log" || fail "fbo-flower status did not report the unit done"
echo "test-flower: 0. ok: as written, byte-identical to fbo run ($((SECONDS - t0)) s)" >&2

# The experiment: five agents, DP-FTS-DE with DP (two sub-regions, Poisson q = 0.6), 6 rounds.
cp tests/fixtures/flower/dp.toml "$W/spec.toml"
"$VENV/bin/python" -c "import fbo; fbo.run('$W/spec.toml', '$W/sim', no_timing=True)"

# The walk-through of docs/federation.md: the server's folder (CA, certificate for the names
# sites dial, the experimenter's Flower configuration, superlink.sh), then one folder per site
# (its key and supernode.sh). "stranger" is a site the server never registers.
fbo-flower server-init "$W/server" --name 127.0.0.1 --name localhost --host 127.0.0.1 --port "$PORT" \
    >"$W/server-init.log" || fail "fbo-flower server-init: $(cat "$W/server-init.log")"
export FLWR_HOME="$W/server/flwr-home"
for k in 0 1 2 3 4 stranger; do
    agent=$k
    [ "$k" = stranger ] && agent=9
    fbo-flower site-init "$W/site-$k" --agent "$agent" --superlink "127.0.0.1:$PORT" \
        --ca "$W/server/ca.crt" --spec "$W/spec.toml" --state "$W/state/agent$agent" \
        --port $((PORT + 10 + agent)) >"$W/site-init-$k.log" || fail "fbo-flower site-init $k"
done

start_link() { # $1: log suffix
    bash "$W/server/superlink.sh" >"$W/link$1.log" 2>&1 &
    LINK=$!
    # Out of the job table: the kills below are on purpose, and bash would report each.
    disown "$LINK"
    PIDS+=("$LINK")
    for _ in $(seq 60); do
        grep -q "Uvicorn running\|Application startup complete" "$W/link$1.log" 2>/dev/null && return 0
        sleep 1
    done
    fail "the SuperLink did not start"
}
# start_node AGENT KEY [extra node config]: one SuperNode holding agent AGENT, by the site's
# supernode.sh as site-init wrote it, or with a fault to inject, by the same command with it.
start_node() {
    if [ -z "${3:-}" ]; then
        bash "$W/site-$2/supernode.sh" >>"$W/node$1.log" 2>&1 &
    else
        flower-supernode --root-certificates "$W/server/ca.crt" --superlink "127.0.0.1:$PORT" \
            --auth-supernode-private-key "$W/site-$2/site.key" --port $((PORT + 10 + $1)) \
            --node-config "agent=$1 spec=\"$W/spec.toml\" state=\"$W/state/agent$1\" $3" \
            >>"$W/node$1.log" 2>&1 &
    fi
    NODE[$1]=$!
    disown "${NODE[$1]}"
    PIDS+=("${NODE[$1]}")
}
# restart_node AGENT KEY [extra node config]: a SuperNode back after a crash. The SuperLink refuses its key until it
# has noticed the dead one gone (two missed heartbeats, 60-90 s), so it is retried, as a
# service manager would.
restart_node() {
    for _ in $(seq 20); do
        local before
        before=$(grep -c "SuperNode ID" "$W/node$1.log" || true)
        start_node "$1" "$2" "${3:-}"
        # In once it logs a new SuperNode ID; a refused one exits (code 305).
        for _ in $(seq 30); do
            [ "$(grep -c "SuperNode ID" "$W/node$1.log" || true)" -gt "$before" ] && return 0
            kill -0 "${NODE[$1]}" 2>/dev/null || break
            sleep 1
        done
        kill -9 "${NODE[$1]}" 2>/dev/null || true
        sleep 5
    done
    fail "agent $1's SuperNode could not rejoin in about 12 minutes"
}
# run_app OUT DEADLINE: submits the app; the ServerApp writes OUT.
run_app() {
    flwr run "$ROOT/integrations/flower" fbo \
        --run-config "spec=\"$W/spec.toml\" out=\"$1\" deadline-s=$2 wait-nodes-s=120.0" >>"$W/flwr-run.log" 2>&1 ||
        fail "flwr run refused the app: $(tail -n 5 "$W/flwr-run.log")"
}
wait_for() { # FILE SECONDS: until FILE exists
    for _ in $(seq "$2"); do [ -e "$1" ] && return 0; sleep 1; done
    return 1
}
rounds_in() { # the server's journal lines (rounds kept) of the only unit
    cat "$1"/federation/*.jsonl 2>/dev/null | wc -l
}
same_as_fbo() { # OUT [files...]
    local out=$1
    shift
    for f in "$@"; do
        cmp -s "$W/sim/$f" "$out/$f" || fail "$out/$f differs from fbo run's"
    done
}

# federate NAME WHAT FILES...: the spec on stdin becomes every site's spec.toml, fbo runs it in
# one process ($W/sim-NAME) and the federation over Flower ($W/out-NAME, from fresh site
# states); FILES must be byte-identical. The plain DP-FTS-DE spec is put back afterwards.
federate() {
    local name=$1 what=$2
    shift 2
    rm -rf "$W/state"
    cat >"$W/spec.toml"
    "$VENV/bin/python" -c "import fbo; fbo.run('$W/spec.toml', '$W/sim-$name', no_timing=True)"
    t0=$SECONDS
    run_app "$W/out-$name" 60.0
    wait_for "$W/out-$name/trace.csv" 600 || fail "the $what federation did not finish in 600 s"
    for f in "$@"; do
        cmp -s "$W/sim-$name/$f" "$W/out-$name/$f" || fail "$f of the $what federation differs from fbo run's"
    done
    cp "$W/spec-plain.toml" "$W/spec.toml"
}

declare -a NODE
start_link ""
for a in 0 1 2 3 4; do
    fbo-flower register "$W/server" "$W/site-$a/site.key.pub" >>"$W/register.log" 2>&1 ||
        fail "registering node $a: $(tail -n 3 "$W/register.log")"
    start_node "$a" "$a" ""
done

echo "test-flower: 1. five SuperNodes over TLS, no faults" >&2
t0=$SECONDS
run_app "$W/out1" 60.0
wait_for "$W/out1/trace.csv" 600 || fail "the federation did not finish in 600 s"
wall=$((SECONDS - t0))
same_as_fbo "$W/out1" trace.csv server.csv privacy.csv summary.csv
# The operator follows the rounds in the ServerApp's log, as `flwr log` shows it.
run_id=$(grep -oiE "run(_id|-id| id)?[^0-9]{0,12}[0-9]{4,}" "$W/flwr-run.log" | grep -oE "[0-9]{4,}" | tail -n 1)
flwr log "$run_id" fbo --show >"$W/serverapp.log" 2>&1 || true
grep -q "round 5 of 5: 5 of 5 agents answered; epsilon so far" "$W/serverapp.log" ||
    fail "flwr log $run_id has no progress line for round 5: $(tail -n 5 "$W/serverapp.log"; tail -n 5 "$W/flwr-run.log")"
echo "test-flower: 1. ok: byte-identical to fbo run ($wall s for 6 rounds); flwr log: $(grep -o "round 5 of 5: .*" "$W/serverapp.log" | head -n 1)" >&2

echo "test-flower: 1b. the same federation under secure aggregation (server.secure), with each site's own noise shares and coin" >&2
# Every site reads the spec afresh for each message, so the new text reaches them all; the
# vectors then travel only masked, in the protocol's four steps per round, each site adding
# its discrete Gaussian noise share and deciding by its own coin whether its vector or a zero
# goes in (the server never holds an un-noised sum nor learns who took part).
cp "$W/spec.toml" "$W/spec-plain.toml"
sed 's/^clip = 3.0$/clip = 3.0\nsecure = true\nnoise = "distributed"\nself_sampling = true/' "$W/spec-plain.toml" >"$W/spec-secure.toml"
grep -q "^secure = true" "$W/spec-secure.toml" || fail "the secure spec was not written"
federate secure "secure" trace.csv server.csv privacy.csv summary.csv <"$W/spec-secure.toml"
cut -d, -f5,6 "$W/out-secure/server.csv" | sed -n 2p | grep -qx "," ||
    fail "the secure server.csv names clipped vectors it cannot know"
echo "test-flower: 1b. ok: secure aggregation with distributed noise and self-sampling over Flower byte-identical to fbo run" >&2

echo "test-flower: 1c. FedGP on the same sites: the server's solver asks its questions before each broadcast" >&2
# FedAvg with two communication rounds per iteration: every iteration is an evaluation and
# two questions (each site's local steps from the server's hyperparameters), all over Flower.
federate fedgp "FedGP" trace.csv summary.csv <tests/fixtures/flower/fedgp.toml
echo "test-flower: 1c. ok: FedGP over Flower byte-identical to fbo run ($((SECONDS - t0)) s for 6 rounds and 10 questions)" >&2

echo "test-flower: 1d. FTS's target-and-senders form: senders step their own TS at their sites, the server relays" >&2
# Two targets among five agents; every agent sends a fresh omega_n before each iteration
# after one more TS step of its own, and each target mixes the others' relayed messages.
federate fts "FTS" trace.csv summary.csv <tests/fixtures/flower/fts.toml
echo "test-flower: 1d. ok: FTS target-and-senders over Flower byte-identical to fbo run ($((SECONDS - t0)) s for 6 rounds)" >&2

echo "test-flower: 1e. RGPE and TAF: each sender's posterior sent once, relayed to the targets" >&2
federate meta "RGPE and TAF" trace.csv summary.csv <tests/fixtures/flower/meta.toml
echo "test-flower: 1e. ok: RGPE and TAF over Flower byte-identical to fbo run ($((SECONDS - t0)) s for 2 x 5 rounds)" >&2

echo "test-flower: 1f. private DP-FTS-DE on a function's box with its defaults there (the agreed shared model, follow = \"signal\")" >&2
# The agreed hyperparameters and the release's signal share travel after the point; little
# noise (z = 0.05), so that some sites follow the server's point and some do not.
federate signal "signal-following" trace.csv server.csv privacy.csv summary.csv <tests/fixtures/flower/signal.toml
grep -q ",server," "$W/out-signal/trace.csv" || fail "no site followed the server's point in the signal-following federation"
echo "test-flower: 1f. ok: signal-following DP-FTS-DE over Flower byte-identical to fbo run ($((SECONDS - t0)) s for 6 rounds)" >&2

echo "test-flower: 4a. a SuperNode with an unregistered key is refused" >&2
start_node 9 stranger ""
stranger=${NODE[9]}
for _ in $(seq 60); do kill -0 "$stranger" 2>/dev/null || break; sleep 1; done
if kill -0 "$stranger" 2>/dev/null; then
    fail "the stranger's SuperNode is still running after 60 s"
fi
grep -q "Failed to activate SuperNode" "$W/node9.log" ||
    fail "the stranger's SuperNode ended without saying it was refused: $(tail -n 5 "$W/node9.log")"
echo "test-flower: 4a. ok: refused ($(grep -o "Exit Code: [0-9]*" "$W/node9.log" | head -n 1), Failed to activate SuperNode)" >&2

echo "test-flower: 3. kill -9 of the SuperLink and its ServerApp after 3 rounds, restarted" >&2
rm -rf "$W/state"
run_app "$W/out3" 60.0
for _ in $(seq 300); do [ "$(rounds_in "$W/out3")" -ge 3 ] && break; sleep 1; done
kept=$(rounds_in "$W/out3")
kill -9 "$LINK"
pkill -9 -f "$VENV/bin/flwr-serverapp" 2>/dev/null || true
sleep 2
# The operator's view while the server is down: the last round its journal kept.
last=$(($(rounds_in "$W/out3") - 1))
fbo-flower status "$W/spec.toml" "$W/out3" >"$W/status.txt" 2>&1 || fail "fbo-flower status: $(cat "$W/status.txt")"
grep -q "federation: DP-FTS-DE.* run 0: round $last of 5: 5 of 5 agents answered" "$W/status.txt" ||
    fail "fbo-flower status does not show round $last: $(cat "$W/status.txt")"
start_link "-2"
run_app "$W/out3" 60.0
wait_for "$W/out3/trace.csv" 600 || fail "the federation did not resume"
same_as_fbo "$W/out3" trace.csv server.csv privacy.csv summary.csv
for a in 0 1 2 3 4; do
    l=$(wc -l <"$W/state/agent$a/a000-r00000-agent000$a.jsonl")
    [ "$l" -eq 6 ] || fail "agent $a journaled $l rounds where the run has 6"
done
echo "test-flower: 3. ok: resumed after round $kept, no round redone, byte-identical" >&2

echo "test-flower: 4b. agent 1's SuperNode sends NaN vectors" >&2
rm -rf "$W/state"
kill -9 "${NODE[1]}"
restart_node 1 1 'fault="nan"'
run_app "$W/out4" 60.0
wait_for "$W/out4/trace.csv" 600 || fail "a NaN sender stopped the federation"
nan=$(grep -c "agent 1's message rejected.*not finite" "$W/out4/federation-notes.txt" || true)
[ "$nan" -ge 5 ] || fail "agent 1's NaN messages were not rejected ($nan notes)"
echo "test-flower: 4b. ok: $nan NaN messages rejected and noted, the run finished" >&2
echo "test-flower: 2. kill -9 of agent 3's SuperNode after 2 rounds, restarted" >&2
rm -rf "$W/state"
# A longer run (15 rounds), so that the SuperNode is back before it ends (the SuperLink lets
# its key in again once it has missed two heartbeats, 60-90 s). Every site reads the spec
# afresh for each message, so the new text reaches them all.
sed -i 's/^iterations = 5/iterations = 14/' "$W/spec.toml"
"$VENV/bin/python" -c "import fbo; fbo.run('$W/spec.toml', '$W/sim-long', no_timing=True)"
run_app "$W/out2" 40.0
for _ in $(seq 300); do [ "$(rounds_in "$W/out2")" -ge 2 ] && break; sleep 1; done
kill -9 "${NODE[3]}"
restart_node 3 3
wait_for "$W/out2/trace.csv" 600 || fail "the federation did not finish after the SuperNode's return"
cmp -s "$W/sim-long/privacy.csv" "$W/out2/privacy.csv" || fail "privacy.csv differs from fbo run's"
grep -q "agent 3's reply did not arrive" "$W/out2/federation-notes.txt" ||
    fail "agent 3's missing rounds are not in federation-notes.txt"
missing=$(grep -c "agent 3's reply did not arrive" "$W/out2/federation-notes.txt")
late=$(grep -c "agent 3's reply to round [0-9]* arrived late" "$W/out2/federation-notes.txt" || true)
rows=$(awk -F, 'NR > 1 && $3 == 3' "$W/out2/trace.csv" | wc -l)
# Every round agent 3 evaluated is journaled once and traced once: a round evaluated as it was
# killed may have missed the deadline (journaled, noted as missing), and is then re-sent from
# the journal with the agent's next reply (noted as late).
journaled=$("$VENV/bin/python" - "$W/state/agent3/a000-r00000-agent0003.jsonl" "$missing" "$late" <<'PY'
import json, sys
rounds = [json.loads(l)["round"] for l in open(sys.argv[1])]
missing, late = int(sys.argv[2]), int(sys.argv[3])
assert len(rounds) == len(set(rounds)), f"a round evaluated twice: {rounds}"
assert len(rounds) == 15 - missing + late, (rounds, missing, late)
print(len(rounds))
PY
) || fail "agent 3's journal"
[ "$rows" -eq $((3 + journaled - 1)) ] || fail "agent 3 has $rows trace rows for $journaled journaled rounds"
awk -F, 'NR > 1 && $3 == 3 && $4 == 14' "$W/out2/trace.csv" | grep -q . ||
    fail "agent 3 did not take part in the last round after its return"
echo "test-flower: 2. ok: agent 3 missed $missing rounds (noted; $late re-sent late), came back, evaluated and traced each other round once" >&2

echo "test-flower: 4c. agent 2's site fails on every call" >&2
rm -rf "$W/state"
kill -9 "${NODE[2]}"
restart_node 2 2 'fault="error"'
run_app "$W/out5" 60.0
failures() { # agent 2's failures noted so far (0 before the notes file exists)
    local n
    n=$(grep -c "agent 2's site failed" "$W/out5/federation-notes.txt" 2>/dev/null) || true
    echo "${n:-0}"
}
for _ in $(seq 300); do [ "$(failures)" -ge 3 ] && break; sleep 1; done
[ "$(failures)" -eq 3 ] || fail "agent 2's failures were not noted 3 times ($(failures))"
grep -q "agent 2's site failed (3 in a row): RuntimeError: the site's objective failed" "$W/out5/federation-notes.txt" ||
    fail "the notes do not name agent 2's error: $(tail -n 3 "$W/out5/federation-notes.txt")"
# The run stops there (max-site-failures = 3): no merge, the journals kept for a rerun.
sleep 15
[ ! -e "$W/out5/trace.csv" ] || fail "the run finished though agent 2's site failed every round"
[ "$(failures)" -eq 3 ] || fail "rounds went on after the third failure in a row"
ls "$W/out5/federation/"*.jsonl >/dev/null 2>&1 || fail "the server's journal was not kept"
echo "test-flower: 4c. ok: 3 failures of agent 2 noted with its error, the run stopped unmerged" >&2

echo "test-flower: 5. each site's own Optuna study chooses nothing but records every trial (fbo.optuna.site_objective)" >&2
# Five landmine fields (the repository's table, agents 0-4; its training seconds zeroed, since
# a study's trial reports a value only). Each site's SuperNode calls its Optuna objective
# through site_objective, so every query becomes a trial of that site's own SQLite study.
mkdir -p "$W/fields" "$W/optuna"
awk -F, -v OFS=, 'NR == 1 {print; next} $1 < 5 {$NF = 0; print}' data/landmine/table.csv >"$W/fields/table.csv"
sed 's/^agents = 29$/agents = 5/' data/landmine/table.toml >"$W/fields/table.toml"
grep -q "^agents = 5$" "$W/fields/table.toml" || fail "the five-field table.toml was not written"
for a in 0 1 2 3 4; do
    cat >"$W/optuna/field$a.py" <<PY
import csv

import fbo.optuna

with open("$W/fields/table.csv") as f:
    AUC = {(float(r["C"]), float(r["gamma"])): float(r["metric"]) for r in csv.DictReader(f) if r["agent"] == "$a"}


def objective(trial):
    c = trial.suggest_float("C", 1e-4, 10.0)
    g = trial.suggest_float("gamma", 0.01, 10.0)
    return AUC[(c, g)]


train = fbo.optuna.site_objective(
    objective, study_name="field$a", storage="sqlite:///$W/optuna/field$a.db", direction="maximize"
)
PY
done
# The sites' SuperNodes again, each with its objective (importable from PYTHONPATH, which
# the SuperNode passes on to its ClientApp processes).
for a in 0 1 2 3 4; do kill -9 "${NODE[$a]}" 2>/dev/null || true; done
for a in 0 1 2 3 4; do PYTHONPATH="$W/optuna" restart_node "$a" "$a" "objective=\"field$a:train\""; done
federate optuna "Optuna sites'" trace.csv server.csv privacy.csv summary.csv <<SPEC
name = "flower-optuna"
seed = 14
runs = 1
iterations = 4
initial_points = 2

[objective]
kind = "table"
table = "$W/fields/table.toml"

[[algorithm]]
kind = "dp-fts-de"
server = { subregions = 2, dp = true, q = 0.6, z = 1.0 }
SPEC
"$VENV/bin/python" - "$W" <<'PY' || fail "the sites' Optuna studies do not hold their trace rows"
import csv, sys
import optuna
w = sys.argv[1]
with open(f"{w}/out-optuna/trace.csv") as f:
    trace = list(csv.DictReader(f))
for a in range(5):
    study = optuna.load_study(study_name=f"field{a}", storage=f"sqlite:///{w}/optuna/field{a}.db")
    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    rows = [r for r in trace if int(r["agent"]) == a]
    assert len(done) == len(rows) == len(study.trials) == 6, (a, len(done), len(rows), len(study.trials))
    for t, r in zip(done, rows):
        assert t.params == {"C": float(r["C"]), "gamma": float(r["gamma"])}, (a, t.params, r)
        assert t.value == float(r["metric"]), (a, t.value, r)
PY
echo "test-flower: 5. ok: five sites' Optuna studies over Flower byte-identical to fbo run ($((SECONDS - t0)) s for 6 rounds), each study 6 trials, its trace rows" >&2

echo "test-flower: 6. three sites on network namespaces of their own, set up as docs/federation.md says for three hospitals" >&2
# The server and each site in a network namespace of its own, joined by a bridge in the
# server's (a LAN where the server is 10.77.0.1): sites reach the server only at the address
# its certificate names, and the server no site's loopback. As the docs' "From the rehearsal
# to four hospitals" says: server-init names the address sites dial and leaves --host (the
# SuperLink listens on every interface) and --port (8000) at their defaults, and every
# SuperNode keeps the default port. Skipped where namespaces cannot be made (not root).
NS="fbo$PORT"
if ! command -v ip >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "test-flower: 6. installing Debian's iproute2 (ip netns)" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iproute2 >/dev/null; } || true
fi
# The namespaces and the bridge; false (and the check skipped) where they cannot be made.
ns_up() {
    ip netns add "$NS-srv" || return 1
    NETNS+=("$NS-srv")
    ip -n "$NS-srv" link add br0 type bridge || return 1
    ip -n "$NS-srv" addr add 10.77.0.1/24 dev br0 || return 1
    ip -n "$NS-srv" link set br0 up || return 1
    ip -n "$NS-srv" link set lo up || return 1
    local k
    for k in 0 1 2; do
        ip netns add "$NS-s$k" || return 1
        NETNS+=("$NS-s$k")
        ip link add "${NS}v$k" type veth peer name "${NS}p$k" || return 1
        ip link set "${NS}v$k" netns "$NS-s$k" || return 1
        ip link set "${NS}p$k" netns "$NS-srv" || return 1
        ip -n "$NS-srv" link set "${NS}p$k" master br0 || return 1
        ip -n "$NS-srv" link set "${NS}p$k" up || return 1
        ip -n "$NS-s$k" addr add "10.77.0.$((10 + k))/24" dev "${NS}v$k" || return 1
        ip -n "$NS-s$k" link set "${NS}v$k" up || return 1
        ip -n "$NS-s$k" link set lo up || return 1
    done
}
if command -v ip >/dev/null 2>&1 && ns_up 2>"$W/netns.log"; then
    N="$W/ns"
    mkdir -p "$N"
    sed -e 's/^agents = 5$/agents = 3/' -e 's/^iterations = 5$/iterations = 4/' "$W/spec-plain.toml" >"$N/spec.toml"
    grep -q "^agents = 3$" "$N/spec.toml" || fail "the three-site spec was not written"
    "$VENV/bin/python" -c "import fbo; fbo.run('$N/spec.toml', '$N/sim', no_timing=True)"
    fbo-flower server-init "$N/server" --name 10.77.0.1 >"$N/server-init.log" ||
        fail "fbo-flower server-init (namespaces): $(cat "$N/server-init.log")"
    for k in 0 1 2; do
        # Each site its own copy of the spec, in its own folder.
        mkdir -p "$N/site-$k"
        cp "$N/spec.toml" "$N/site-$k/spec.toml"
        fbo-flower site-init "$N/site-$k/fbo" --agent "$k" --superlink 10.77.0.1:8000 \
            --ca "$N/server/ca.crt" --spec "$N/site-$k/spec.toml" >"$N/site-init-$k.log" ||
            fail "fbo-flower site-init $k (namespaces): $(cat "$N/site-init-$k.log")"
    done
    ip netns exec "$NS-srv" bash "$N/server/superlink.sh" >"$N/link.log" 2>&1 &
    PIDS+=("$!")
    disown "$!"
    for _ in $(seq 60); do
        grep -q "Uvicorn running\|Application startup complete" "$N/link.log" 2>/dev/null && break
        sleep 1
    done
    for k in 0 1 2; do
        ip netns exec "$NS-srv" env FLWR_HOME="$N/server/flwr-home" \
            fbo-flower register "$N/server" "$N/site-$k/fbo/site.key.pub" >>"$N/register.log" 2>&1 ||
            fail "registering site $k (namespaces): $(tail -n 3 "$N/register.log")"
        ip netns exec "$NS-s$k" bash "$N/site-$k/fbo/supernode.sh" >"$N/node$k.log" 2>&1 &
        PIDS+=("$!")
        disown "$!"
    done
    t0=$SECONDS
    ip netns exec "$NS-srv" env FLWR_HOME="$N/server/flwr-home" flwr run "$ROOT/integrations/flower" fbo \
        --run-config "spec=\"$N/spec.toml\" out=\"$N/out\" deadline-s=60.0 wait-nodes-s=120.0" >"$N/flwr-run.log" 2>&1 ||
        fail "flwr run refused the app (namespaces): $(tail -n 5 "$N/flwr-run.log")"
    wait_for "$N/out/trace.csv" 600 ||
        fail "the federation on namespaces did not finish in 600 s: $(tail -n 5 "$N"/node0.log)"
    for f in trace.csv server.csv privacy.csv summary.csv; do
        cmp -s "$N/sim/$f" "$N/out/$f" || fail "$f of the federation on namespaces differs from fbo run's"
    done
    # No site could have reached the server but through the bridge.
    ip netns exec "$NS-s0" "$VENV/bin/python" -c "
import socket
try:
    socket.create_connection(('127.0.0.1', 8000), timeout=2)
except OSError:
    pass
else:
    raise SystemExit('site 0 reaches a SuperLink on its own loopback')" || fail "the namespaces are not apart"
    echo "test-flower: 6. ok: three sites on namespaces of their own, byte-identical to fbo run ($((SECONDS - t0)) s for 5 rounds)" >&2
else
    echo "test-flower: 6. skipped: no network namespaces and bridge here (needs root): $(tail -n 1 "$W/netns.log" 2>/dev/null)" >&2
fi

echo "test-flower: all Flower checks passed" >&2
