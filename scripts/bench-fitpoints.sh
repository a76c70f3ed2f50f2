#!/usr/bin/env bash
# A cheaper fit at large N (issue 41 item 5): the hyperparameters fitted on a random subset of
# 200 observations (`surrogate.own.fit_points = 200`) against all of them, the posterior on all
# in both. Single-agent TS and EI (log), fbo's default model, on Hartmann-6, Ackley-5 and
# Levy-10 from 400 Sobol initial points, 40 iterations (n = 400-440), noise s.d. 0.1, 10 runs.
# One sweep per problem over the two (fit_points = 10000 is "all"), so both share seeds, initial
# points and noise; `fbo compare` on one trace of the two pairs the final simple regret over
# runs. Not part of CI: about an hour on 2 cores. FBO_FITPOINTS_QUICK=1 checks the script.
#
#   scripts/bench-fitpoints.sh   # results/bench-fitpoints/{final.csv, compare/*.txt}
source "$(dirname "$0")/lib.sh"
source "$ROOT/scripts/suite.sh"
OUT="${FBO_FITPOINTS_OUT:-$ROOT/results/bench-fitpoints}"
mkdir -p "$OUT/specs" "$OUT/compare"
problems=("hartmann6" "ackley 5" "levy 10")
runs=10 iterations=40 initial=400 subset=200
if [[ -n "${FBO_FITPOINTS_QUICK:-}" ]]; then
    problems=("hartmann6") runs=2 iterations=5 initial=60 subset=30
fi

final="$OUT/final.csv"
echo "problem,algorithm,all_mean_regret,subset_mean_regret,diff_subset_minus_all,p_holm,subset_wins/ties/losses,all_elapsed_s,subset_elapsed_s" >"$final"
for p in "${problems[@]}"; do
    read -r fn dim <<<"$p"
    for kind in ts ei; do
        name="fitpoints-$kind-$fn${dim:+-$dim}"
        spec="$OUT/specs/$name.toml"
        {
            suite_spec bench-fitpoints.sh "$name" "$fn" "$dim" "$runs" "$iterations" "$initial" |
                sed -e "s/^kind = \"ts\"$/kind = \"$kind\"/" \
                    -e "s/^initial_points = .*/&\ninitial_design = \"sobol\"/"
            [[ "$kind" == ei ]] && printf 'ei = "log"\n'
            cat <<SPEC

[sweep]
"surrogate.own.fit_points" = [10000, $subset]
SPEC
        } >"$spec"
        echo "bench-fitpoints: $name" >&2
        "$FBO" sweep "$spec" --out "$OUT/$name" --quiet
        python3 "$ROOT/scripts/label_points.py" "$OUT/$name" all subset >"$OUT/$name/both.csv"
        "$FBO" compare "$OUT/$name/both.csv" --metric simple-regret --at "$iterations" \
            --baseline all >"$OUT/compare/$name.txt"
        python3 - "$fn${dim:+-$dim}" "$kind" "$OUT/$name/both.csv" "$OUT/$name/compare.csv" "$iterations" >>"$final" <<'PY'
import csv, sys
problem, kind, trace, cmp, at = sys.argv[1:]
final = {"all": [], "subset": []}
elapsed = {"all": [], "subset": []}
for r in csv.DictReader(open(trace)):
    if r["iteration"] == at:
        final[r["algorithm"]].append(float(r["simple_regret"]))
        elapsed[r["algorithm"]].append(float(r["elapsed_s"] or "nan"))
c = list(csv.DictReader(open(cmp)))[-1]
mean = lambda v: sum(v) / len(v)
print(",".join([problem, kind, f'{mean(final["all"]):.4g}', f'{mean(final["subset"]):.4g}',
                c["mean_diff"], c["p_holm"], f'{c["wins"]}/{c["ties"]}/{c["losses"]}',
                f'{mean(elapsed["all"]):.1f}', f'{mean(elapsed["subset"]):.1f}']))
PY
    done
done
column -s, -t "$final"
