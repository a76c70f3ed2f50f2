#!/usr/bin/env bash
# Pending evaluations (issue 41 item 3): a site with four workers, on the simulated clock.
# Single-agent TS and EI (log) on Hartmann-6, Levy-4 and Ackley-5 (5 initial points, noise
# s.d. 0.1, four independent agents, 10 runs), each evaluation costing 60 s x exp(0.5 z), within
# a wall-clock budget of 2400 s, three ways: one evaluation at a time, batches of 4 (a round
# waits for its slowest), and parallel = 4 (the next query as soon as the oldest returns, the
# other three pending). One sweep per problem over the three, so all share seeds, initial
# points, noise and each agent's i-th cost; `fbo compare --at-clock` on one trace of the three
# pairs them over run x agent (n = 40) at 600, 1200 and 2400 s (the five initial points take about
# 300 s, one after another), against batches of 4.
# Not part of CI: about 30 minutes on 2 cores. FBO_PENDING_QUICK=1 checks the script.
#
#   scripts/bench-pending.sh   # results/bench-pending/{final.csv, compare/*.txt}
source "$(dirname "$0")/lib.sh"
source "$ROOT/scripts/suite.sh"
OUT="${FBO_PENDING_OUT:-$ROOT/results/bench-pending}"
mkdir -p "$OUT/specs" "$OUT/compare"
problems=("hartmann6" "levy 4" "ackley 5")
runs=10 budget=2400
if [[ -n "${FBO_PENDING_QUICK:-}" ]]; then
    problems=("hartmann6") runs=2 budget=600
fi
at="$((budget / 4)),$((budget / 2)),$budget"
[[ -n "${FBO_PENDING_QUICK:-}" ]] || at="600,1200,$budget"

final="$OUT/final.csv"
echo "problem,algorithm,at_s,way,mean_regret,mean_evaluations,diff_vs_batch,p_holm,wins/ties/losses" >"$final"
for p in "${problems[@]}"; do
    read -r fn dim <<<"$p"
    for kind in ts ei; do
        name="pending-$kind-$fn${dim:+-$dim}"
        spec="$OUT/specs/$name.toml"
        {
            # At most 4 x 2400 / 60 / e^(-0.5 x 3) evaluations would fit; the budget stops first.
            suite_spec bench-pending.sh "$name" "$fn" "$dim" "$runs" 160 |
                sed -e "s/^kind = \"ts\"$/kind = \"$kind\"/" -e "s/^agents = 1$/agents = 4/"
            # EI's tables in docs/results.md were measured with the constant liar, its
            # default until 2026-11-29 ("Pending evaluations" compares it with the believer).
            [[ "$kind" == ei ]] && printf 'ei = "log"\nfantasy = "constant-liar"\n'
            cat <<SPEC

[clock]
median_s = 60
spread = 0.5
site_spread = 0
horizon_s = $budget

[sweep]
points = [
  { parallel = 1 },
  { batch = 4, iterations = 40 },
  { parallel = 4 },
]
SPEC
        } >"$spec"
        echo "bench-pending: $name" >&2
        "$FBO" sweep "$spec" --out "$OUT/$name" --quiet --no-timing
        # One trace of the three, labelled by way.
        python3 "$ROOT/scripts/label_points.py" "$OUT/$name" "one at a time" "batch 4" "parallel 4" >"$OUT/$name/ways.csv"
        "$FBO" compare "$OUT/$name/ways.csv" --metric simple-regret --at-clock "$at" \
            --baseline "batch 4" >"$OUT/compare/$name.txt"
        python3 - "$fn${dim:+-$dim}" "$kind" "$OUT/$name/ways.csv" "$at" "$OUT/$name/compare.csv" >>"$final" <<'PY'
import csv, sys
from collections import defaultdict
problem, kind, trace, at, cmp = sys.argv[1:]
# (way, run, agent) -> [(finish time, best-so-far regret, iteration)]
steps = defaultdict(list)
for r in csv.DictReader(open(trace)):
    steps[(r["algorithm"], r["run"], r["agent"])].append(
        (float(r["sim_clock_s"]), float(r["simple_regret"]), int(r["iteration"])))
paired = {(r["clock_s"], r["algorithm"]): r for r in csv.DictReader(open(cmp))}
for t in at.split(","):
    for way in ("one at a time", "batch 4", "parallel 4"):
        regrets, evals = [], []
        for (w, _, _), s in steps.items():
            done = [x for x in s if x[0] <= float(t)]
            if w == way and done:
                regrets.append(min(x[1] for x in done))
                evals.append(sum(1 for x in done if x[2] > 0))
        c = paired.get((t, way))
        cells = [c["mean_diff"], c["p_holm"], f'{c["wins"]}/{c["ties"]}/{c["losses"]}'] if c else ["", "", ""]
        print(",".join([problem, kind, t, way, f"{sum(regrets)/len(regrets):.4g}",
                        f"{sum(evals)/len(evals):.1f}", *cells]))
PY
    done
done
column -s, -t "$final"
