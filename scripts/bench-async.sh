#!/usr/bin/env bash
# Agents at their own pace (issue 41 item 4): configs/async-hartmann6.toml at three levels of
# site heterogeneity (clock.site_spread 0, 0.5, 1: the standard deviation of ln site speed)
# and configs/async-privtuna.toml on PrivTuna's recorded training seconds, and the survey's
# frameworks on the first (configs/async-frameworks.toml), and a server releasing on arrivals
# against one releasing on its period (configs/async-arrivals.toml). Per spec: `fbo
# compare --at-clock` at a quarter, half and all of the wall-clock budget, against the
# synchronous rounds and against TS alone (paired over run x agent), and, from the trace, the
# mean best-so-far simple regret over runs and agents on a grid of 200 times with the first
# time each algorithm reaches the synchronous rounds' regret at the budget.
# Not part of CI: about 16 minutes on 2 cores (configs/async-arrivals.toml alone about 7).
#
#   scripts/bench-async.sh   # results/bench-async/{reach.csv, compare/*.txt, curve-*.csv},
#                            # results/figures/async-*.png
source "$(dirname "$0")/lib.sh"
OUT="${FBO_ASYNC_OUT:-$ROOT/results/bench-async}"
mkdir -p "$OUT/specs" "$OUT/compare"

reach="$OUT/reach.csv"
echo "spec,algorithm,mean_regret_at_budget,reaches_rounds_at_s,budget_s" >"$reach"

# bench NAME SPEC BUDGET ROUNDS_LABEL
bench() {
    local name=$1 spec=$2 budget=$3 rounds=$4
    local dir="$OUT/$name"
    echo "bench-async: $name" >&2
    "$FBO" run "$spec" --out "$dir" --quiet --no-timing --overwrite
    local at
    at=$(python3 -c "b=$budget; print(f'{b/4:g},{b/2:g},{b:g}')")
    "$FBO" compare "$dir" --metric simple-regret --at-clock "$at" --baseline "$rounds" \
        --allow-init-differences >"$OUT/compare/$name-vs-rounds.txt"
    "$FBO" compare "$dir" --metric simple-regret --at-clock "$at" --baseline "TS alone" \
        --allow-init-differences >"$OUT/compare/$name-vs-alone.txt"
    python3 - "$dir/trace.csv" "$budget" "$rounds" "$name" "$OUT/curve-$name.csv" >>"$reach" <<'PY'
import csv, math, sys
from collections import defaultdict
path, budget, rounds, name, curve_path = sys.argv[1:6]
budget = float(budget)
# (algorithm, run, agent) -> [(finish time, best-so-far simple regret)] in trace order.
steps = defaultdict(list)
with open(path, newline="") as fh:
    for r in csv.DictReader(fh):
        steps[(r["algorithm"], r["run"], r["agent"])].append(
            (float(r["sim_clock_s"]), float(r["simple_regret"])))
grid = [budget * (k + 1) / 200 for k in range(200)]
algorithms = list(dict.fromkeys(k[0] for k in steps))
curves = {}
for a in algorithms:
    units = [v for k, v in steps.items() if k[0] == a]
    curve, se = [], []
    for t in grid:
        # An agent that has finished nothing yet counts at its first value (the same
        # initial-point cost in every algorithm).
        vals = [min((reg for c, reg in u if c <= t), default=u[0][1]) for u in units]
        m = sum(vals) / len(vals)
        curve.append(m)
        se.append(math.sqrt(sum((v - m) ** 2 for v in vals) / (len(vals) - 1) / len(vals)))
    curves[a] = (curve, se)
# The curves in summary.csv's columns, for `fbo plot time` (x: the time, as mean_sim_clock_s).
with open(curve_path, "w", newline="") as fh:
    w = csv.writer(fh)
    w.writerow(["algorithm", "iteration", "mean_simple_regret", "se_simple_regret", "mean_sim_clock_s"])
    for a, (curve, se) in curves.items():
        for k, (t, m, e) in enumerate(zip(grid, curve, se)):
            w.writerow([a, k + 1, f"{m:.6g}", f"{e:.6g}", f"{t:g}"])
curves = {a: c for a, (c, _) in curves.items()}
for a in algorithms:
    # "X own pace" is measured against "X rounds" where the spec has both, else `rounds`.
    mine = a[: -len(" own pace")] + " rounds" if a.endswith(" own pace") else rounds
    target = curves[mine if mine in curves else rounds][-1]
    first = next((t for t, v in zip(grid, curves[a]) if v <= target), None)
    print(f"{name},{a},{curves[a][-1]:.6g},{'' if first is None else f'{first:g}'},{budget:g}")
PY
}

for spread in 0 0.5 1; do
    spec="$OUT/specs/async-hartmann6-spread-$spread.toml"
    sed -e "s/^name = .*/name = \"async-hartmann6-spread-$spread\"/" \
        -e "s/^site_spread = .*/site_spread = $spread/" \
        "$ROOT/configs/async-hartmann6.toml" >"$spec"
    bench "hartmann6-spread-$spread" "$spec" 3000 "FTS-DE rounds"
done
bench privtuna "$ROOT/configs/async-privtuna.toml" 400 "FTS rounds"
# The survey's frameworks (configs/async-frameworks.toml, Hartmann-6 at site_spread 1): each
# at its own pace against its own rounds (the reach column too).
bench frameworks "$ROOT/configs/async-frameworks.toml" 3000 "consensus rounds"
for f in consensus CGP-UCB density FMTBO; do
    "$FBO" compare "$OUT/frameworks" --metric simple-regret --at-clock 750,1500,3000 \
        --baseline "$f rounds" --allow-init-differences >"$OUT/compare/frameworks-$f-vs-rounds.txt"
done
bench fedgp "$ROOT/configs/async-fedgp.toml" 3000 "FedGP rounds"
# A server releasing on arrivals against one releasing every period
# (configs/async-arrivals.toml, the Hartmann-6 clock at site_spread 1): each server form's
# arrivals row against its periodic row, and every row against TS alone.
bench arrivals "$ROOT/configs/async-arrivals.toml" 3000 "TS alone"
for f in FTS-DE DP-FTS-DE consensus density FedGP; do
    "$FBO" compare "$OUT/arrivals" --metric simple-regret --at-clock 750,1500,3000 \
        --baseline "$f periodic" --allow-init-differences >"$OUT/compare/arrivals-$f-vs-periodic.txt"
done
column -s, -t "$reach"
for name in hartmann6-spread-1 privtuna; do
    plot time "async-$name" --input "$OUT/curve-$name.csv" --y simple-regret --log-y \
        --title "Agents in rounds and at their own pace ($name)"
done
