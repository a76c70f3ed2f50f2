#!/usr/bin/env bash
# Which acquisition for the single-agent baselines (issue 41 item 2): TS against EI in its
# three forms (plain; log, Ament et al. 2023; log over the best posterior mean, the plug-in
# incumbent for noise) and random search, one spec per problem so that all share seeds,
# initial points and noise and `fbo compare` pairs them run by run. Problems: the smooth and
# multimodal low-dimensional suite (5 initial points, 30 iterations, noise s.d. 0.1) with
# Shekel-10's narrow basins, and Hartmann-6 hidden in 20 dimensions (41 Sobol points, 60
# iterations). Every form and label is written out, so the comparison does not move with the
# defaults. Not part of CI: about 45 minutes on 2 cores. FBO_ACQ_QUICK=1 checks the script;
# FBO_ACQ_PROBLEMS="branin;hartmann6 - 20" runs a subset ("function [dimension] [embed]"),
# FBO_ACQ_RUNS the low-dimensional problems on more seeds, FBO_ACQ_OUT elsewhere.
#
#   scripts/bench-acq.sh   # results/bench-acq/final.csv, compare/*-vs-{ts,ei}.txt
source "$(dirname "$0")/lib.sh"
source "$ROOT/scripts/suite.sh"
OUT="${FBO_ACQ_OUT:-$ROOT/results/bench-acq}"
mkdir -p "$OUT/specs" "$OUT/compare"
problems=("branin" "hartmann3" "hartmann6" "shekel" "levy 4" "ackley 5" "rosenbrock 5"
    "michalewicz 5" "styblinski-tang 5" "hartmann6 - 20")
quick=${FBO_ACQ_QUICK:-}
suite_narrow "${FBO_ACQ_PROBLEMS:-}" "$quick"

final="$OUT/final.csv"
echo "problem,algorithm,runs,mean_simple_regret,diff_vs_ts,holm_vs_ts,wtl_vs_ts,diff_vs_ei_plain,holm_vs_ei_plain,wtl_vs_ei_plain" >"$final"
for p in "${problems[@]}"; do
    suite_problem acq "$p" ${FBO_ACQ_RUNS:-10} "$quick"
    spec="$OUT/specs/$name.toml"
    {
        suite_spec bench-acq.sh "$name" "$fn" "$dim" "$runs" "$iterations" "$initial" "$embed"
        for form in plain log log-noisy; do
            printf '\n[[algorithm]]\nkind = "ei"\nei = "%s"\nlabel = "EI %s"\n' "$form" "$form"
        done
        printf '\n[[algorithm]]\nkind = "random"\n'
        # The model as measured in docs/results.md (the default before "loo").
        printf '\n[surrogate.own]\nard = "auto"\n'
    } >"$spec"
    echo "bench-acq: $name" >&2
    "$FBO" run "$spec" --out "$OUT/$name" --quiet --no-timing
    for base in TS "EI plain"; do
        tag=$([[ "$base" == TS ]] && echo ts || echo ei)
        "$FBO" compare "$OUT/$name" --baseline "$base" --metric simple-regret \
            >"$OUT/compare/$name-vs-$tag.txt"
        cp "$OUT/$name/compare.csv" "$OUT/compare/$name-vs-$tag.csv"
    done
    # One row per algorithm: its final mean simple regret and its paired differences.
    python3 - "$name" "$OUT/$name/summary.csv" "$OUT/compare/$name-vs-ts.csv" \
        "$OUT/compare/$name-vs-ei.csv" >>"$final" <<'PY'
import csv, sys
name, summary, vs_ts, vs_ei = sys.argv[1:]
last = {}
for r in csv.DictReader(open(summary)):
    last[r["algorithm"]] = r
def diffs(path):
    return {r["algorithm"]: r for r in csv.DictReader(open(path))}
ts, ei = diffs(vs_ts), diffs(vs_ei)
def cells(r):
    if r is None:
        return ["", "", ""]
    return [r["mean_diff"], r["p_holm"], f'{r["wins"]}/{r["ties"]}/{r["losses"]}']
for a, r in last.items():
    print(",".join([name, a, r["n"], r["mean_simple_regret"]] + cells(ts.get(a)) + cells(ei.get(a))))
PY
done
column -s, -t "$final"
