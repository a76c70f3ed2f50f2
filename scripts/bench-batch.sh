#!/usr/bin/env bash
# Batches per round (issue 41 item 3): single-agent TS and EI (log), and FTS-DE's server form
# with eight agents (on Hartmann-6 and Levy-4), with batch = 1 for 4T
# iterations against batch = 4 for T rounds (4T evaluations), T = 30, on the suite's 3-6-D
# problems (5 initial points, noise s.d. 0.1, 10 runs). One sweep per problem over the two
# points, so both share seeds, initial points and noise. Two paired comparisons per algorithm,
# each by `fbo compare` on a trace made of every run's initial rows (they show the pairing) and
# its row at the compared iteration, renumbered 1:
# - per round: batch = 1 at round T (iteration T) against batch = 4 at round T (iteration 4T);
# - per evaluation: both at evaluation 4T.
# Not part of CI: about 20 minutes on 2 cores. FBO_BATCH_QUICK=1 checks the script.
#
#   scripts/bench-batch.sh   # results/bench-batch/final.csv, compare/*.txt
source "$(dirname "$0")/lib.sh"
source "$ROOT/scripts/suite.sh"
OUT="${FBO_BATCH_OUT:-$ROOT/results/bench-batch}"
mkdir -p "$OUT/specs" "$OUT/compare"
problems=("hartmann3" "hartmann6" "levy 4" "ackley 5" "styblinski-tang 5")
rounds=30 runs=10
if [[ -n "${FBO_BATCH_QUICK:-}" ]]; then
    problems=("hartmann3") rounds=3 runs=3
fi

final="$OUT/final.csv"
echo "problem,algorithm,comparison,k1_mean_regret,k4_mean_regret,diff_k4_minus_k1,p,k4_wins/ties/losses" >"$final"
# TAG:KIND:AGENTS; FTS-DE's server form (DP-FTS-DE with subregions = 1, no DP) with eight
# agents on the suite's first two 6-D and 4-D problems only. FBO_BATCH_ALGS="ftsde" keeps some.
algs=("ts:ts:1" "ei:ei:1" "ftsde:dp-fts-de:8")
for p in "${problems[@]}"; do
    read -r fn dim <<<"$p"
    for a in "${algs[@]}"; do
        IFS=: read -r alg kind agents <<<"$a"
        [[ -n "${FBO_BATCH_ALGS:-}" && ";$FBO_BATCH_ALGS;" != *";$alg;"* ]] && continue
        [[ "$alg" == ftsde && "$fn" != hartmann6 && "$fn" != levy ]] && continue
        name="batch-$alg-$fn${dim:+-$dim}"
        spec="$OUT/specs/$name.toml"
        {
            suite_spec bench-batch.sh "$name" "$fn" "$dim" "$runs" "$((4 * rounds))" |
                sed -e "s/^kind = \"ts\"$/kind = \"$kind\"/" -e "s/^agents = 1$/agents = $agents/"
            [[ "$kind" == dp-fts-de ]] && printf 'server = { subregions = 1 }\n'
            # EI's rows in docs/results.md were measured with the constant liar, its default
            # until 2026-11-29 (scripts/bench-fantasy.sh compares it with the believer).
            [[ "$kind" == ei ]] && printf 'fantasy = "constant-liar"\n'
            cat <<SPEC

# The model as measured in docs/results.md (the default before "loo").
[surrogate.own]
ard = "auto"

[sweep]
points = [
  { batch = 1, iterations = $((4 * rounds)) },
  { batch = 4, iterations = $rounds },
]
SPEC
        } >"$spec"
        echo "bench-batch: $name" >&2
        "$FBO" sweep "$spec" --out "$OUT/$name" --quiet --no-timing
        for cmp in "per round:$rounds" "per evaluation:$((4 * rounds))"; do
            what=${cmp%%:*} k1_at=${cmp##*:} tag=${what// /-}
            # One trace of each run's initial rows and its row at the compared iteration
            # (k = 1 at k1_at, k = 4 at 4T), renumbered iteration 1.
            python3 - "$OUT/$name" "$k1_at" "$((4 * rounds))" >"$OUT/$name/$tag.csv" <<'PY'
import csv, glob, os, sys
root, at1, at4 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
points = sorted(glob.glob(os.path.join(root, "points", "p*")))
w = csv.writer(sys.stdout, lineterminator="\n")
for n, (label, folder, at) in enumerate((("k=1", points[0], at1), ("k=4", points[1], at4))):
    with open(os.path.join(folder, "trace.csv")) as f:
        r = csv.reader(f)
        h = next(r)
        if n == 0:
            w.writerow(h)
        ia, ii = h.index("algorithm"), h.index("iteration")
        for row in r:
            it = int(row[ii])
            if it <= 0 or it == at:
                row[ia], row[ii] = label, str(min(it, 1))
                w.writerow(row)
PY
            "$FBO" compare "$OUT/$name/$tag.csv" --metric simple-regret --at 1 \
                >"$OUT/compare/$name-$tag.txt"
            python3 - "$name" "$what" "$OUT/$name/$tag.csv" "$OUT/$name/compare.csv" >>"$final" <<'PY'
import csv, sys
name, what, trace, cmp = sys.argv[1:]
def mean(v): return sum(v) / len(v)
rows = [r for r in csv.DictReader(open(trace)) if r["iteration"] == "1"]
k1 = mean([float(r["simple_regret"]) for r in rows if r["algorithm"] == "k=1"])
k4 = mean([float(r["simple_regret"]) for r in rows if r["algorithm"] == "k=4"])
c = list(csv.DictReader(open(cmp)))[-1]
alg, problem = name.split("-", 2)[1], name.split("-", 2)[2]
print(",".join([problem, alg, what, str(k1), str(k4), c["mean_diff"], c["p_holm"], f'{c["wins"]}/{c["ties"]}/{c["losses"]}']))
PY
        done
    done
done
column -s, -t "$final"
