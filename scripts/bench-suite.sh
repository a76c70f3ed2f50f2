#!/usr/bin/env bash
# The closed-form benchmark suite (issue 24), fbo's side: single-agent TS with the papers' own
# sample (SE kernel, one length scale, maximum likelihood, zero mean, RFF posterior on
# M_target = 100 features) against fbo's defaults for new specs (pathwise conditioning,
# Hvarfner et al.'s priors, one length scale per axis from 10 observations per axis on, a
# constant mean), on every problem, the
# same seeds, initial points and noise (s.d. 0.1); then the final simple regret per problem and
# setting, and fbo compare's paired differences. Not part of CI: about 15 minutes on 2 cores;
# FBO_SUITE_QUICK=1 runs two problems on 3 seeds to check the script, and FBO_SUITE_PROBLEMS
# (see below) a subset.
#
#   scripts/bench-suite.sh            # writes results/bench-suite/final.csv and compare/*.txt
#
# BoTorch side by side: scripts/bench-botorch.sh.
source "$(dirname "$0")/lib.sh"
OUT="$ROOT/results/bench-suite"
mkdir -p "$OUT/specs" "$OUT/compare"

runs=20
iterations=30
source "$ROOT/scripts/suite.sh"
problems=("${suite_problems[@]}")
if [[ -n "${FBO_SUITE_QUICK:-}" ]]; then
    runs=3
    iterations=8
    problems=("branin" "ackley 3")
fi

final="$OUT/final.csv"
echo "problem,algorithm,n,mean_simple_regret,se_simple_regret" >"$final"
for p in "${problems[@]}"; do
    read -r fn dim <<<"$p"
    name="suite-$fn${dim:+-$dim}"
    spec="$OUT/specs/$name.toml"
    {
        suite_spec bench-suite.sh "$name" "$fn" "$dim" "$runs" "$iterations"
        cat <<EOF

# The papers' own sample against the defaults (set explicitly, so that this comparison does not
# move if the defaults do): the same seeds and initial points at both.
[sweep]
points = [
  { "surrogate.own.sample" = "rff", "surrogate.own.ard" = false, "surrogate.own.prior" = "none", "surrogate.own.mean" = "zero" },
  { "surrogate.own.sample" = "pathwise", "surrogate.own.ard" = "auto", "surrogate.own.prior" = "dimension-scaled", "surrogate.own.mean" = "constant" },
]
EOF
    } >"$spec"
    echo "bench-suite: $name" >&2
    "$FBO" sweep "$spec" --out "$OUT/$name" --quiet --no-timing
    # point, the three keys, algorithm, runs, ..., mean and s.e. of the final simple regret.
    awk -F, -v p="$name" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        { print p "," ($c["surrogate.own.sample"] == "rff" ? "papers" : "default") "," $c["runs"] "," $c["mean_simple_regret"] "," $c["se_simple_regret"] }' \
        "$OUT/$name/sweep.csv" >>"$final"
    # Paired: the defaults against the papers' sample, run by run.
    "$FBO" compare "$OUT/$name" >"$OUT/compare/$name.txt"
done
column -s, -t "$final"
