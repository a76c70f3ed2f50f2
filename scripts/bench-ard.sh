#!/usr/bin/env bash
# One length scale, one per axis, or the choice between them (issue 41 item 1): single-agent
# TS with surrogate.own.ard = "auto" (one per axis from 10 observations per axis), "loo" (both
# fitted at every refit, the one with the higher leave-one-out predictive density kept) and
# true (always one per axis), on
# - the low-dimensional suite where one per axis was measured to lose in 5-D and win in 2-3-D
#   (scripts/suite.sh's settings: 5 initial points, 30 iterations, noise s.d. 0.1, 20 runs);
# - functions hidden in 20 and 50 dimensions (objective.embed: the other axes do nothing),
#   2D + 1 Sobol initial points and 60 iterations, 10 runs, as issue 41 measured them.
# Every point of a problem's sweep shares seeds, initial points and noise, so `fbo compare`
# pairs them run by run. Not part of CI: about an hour on 2 cores. FBO_ARD_QUICK=1 checks the
# script (2 problems, 3 runs, few iterations); FBO_ARD_PROBLEMS="branin;hartmann6 6 20" a subset
# ("function [dimension] [embed]"; dimension "-" for a function of fixed dimension).
#
#   scripts/bench-ard.sh   # results/bench-ard/final.csv and compare/*.txt
source "$(dirname "$0")/lib.sh"
source "$ROOT/scripts/suite.sh"
OUT="$ROOT/results/bench-ard"
mkdir -p "$OUT/specs" "$OUT/compare"
problems=("branin" "hartmann3" "michalewicz 2" "levy 2" "levy 5" "griewank 5"
    "styblinski-tang 5" "rosenbrock 5" "ackley 5" "hartmann6"
    "hartmann6 - 20" "branin - 20" "levy 4 20" "hartmann6 - 50")
quick=${FBO_ARD_QUICK:-}
suite_narrow "${FBO_ARD_PROBLEMS:-}" "$quick"

final="$OUT/final.csv"
echo "problem,ard,runs,mean_simple_regret,se_simple_regret" >"$final"
for p in "${problems[@]}"; do
    suite_problem ard "$p" 20 "$quick"
    spec="$OUT/specs/$name.toml"
    {
        suite_spec bench-ard.sh "$name" "$fn" "$dim" "$runs" "$iterations" "$initial" "$embed"
        cat <<SPEC

[sweep]
points = [
  { "surrogate.own.ard" = "auto" },
  { "surrogate.own.ard" = "loo" },
  { "surrogate.own.ard" = true },
]
SPEC
    } >"$spec"
    echo "bench-ard: $name" >&2
    "$FBO" sweep "$spec" --out "$OUT/$name" --quiet --no-timing
    awk -F, -v p="$name" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        { print p "," $c["surrogate.own.ard"] "," $c["runs"] "," $c["mean_simple_regret"] "," $c["se_simple_regret"] }' \
        "$OUT/$name/sweep.csv" >>"$final"
    "$FBO" compare "$OUT/$name" >"$OUT/compare/$name.txt"
done
column -s, -t "$final"
