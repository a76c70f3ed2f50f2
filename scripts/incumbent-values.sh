#!/usr/bin/env bash
# The value of each final incumbent under another objective (issue 26): for every
# (algorithm, run, agent) of a run folder's trace.csv, the queried point with the best observed
# metric up to ITERATION (the first such point on ties), evaluated by `fbo evaluate` on SPEC,
# which names the reference objective (e.g. the converged SVM on the same split).
#
#   scripts/incumbent-values.sh RUN_DIR SPEC ITERATION > incumbents.csv
#
# Columns: algorithm,run,agent,<the spec's hyperparameters>,observed,reference. Works on the
# traces of live model objectives (raw hyperparameter columns after the unit ones).
source "$(dirname "$0")/lib.sh"
dir=$1 spec=$2 at=$3
trace="$dir/trace.csv"
[[ -f $trace ]] || { echo "incumbent-values: $trace does not exist" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Raw hyperparameter columns: between the last unit column x<d> and "source".
awk -F, -v at="$at" '
NR == 1 {
    for (i = 1; i <= NF; i++) c[$i] = i
    lo = c["x_index"] + 1
    while ($lo ~ /^x[0-9]+$/) lo++
    hi = c["source"] - 1
    h = "agent"; for (i = lo; i <= hi; i++) h = h "," $i
    print h ",key" > "'"$tmp"'/points.csv"
    next
}
$c["iteration"] + 0 <= at {
    k = $c["algorithm"] SUBSEP $c["run"] SUBSEP $c["agent"]
    m = $c["metric"] + 0
    if (!(k in best) || m > best[k]) {
        best[k] = m
        text[k] = $c["metric"]
        p = $c["agent"]; for (i = lo; i <= hi; i++) p = p "," $i
        pt[k] = p
    }
}
END {
    for (k in best) {
        split(k, f, SUBSEP)
        print pt[k] "," f[1] "|" f[2] "|" f[3] "|" text[k] >> "'"$tmp"'/points.csv"
    }
}' "$trace"
"$FBO" evaluate "$spec" --points "$tmp/points.csv" >"$tmp/values.csv"
head -1 "$tmp/values.csv" | awk -F, '{
    printf "algorithm,run,agent"; for (i = 2; i <= NF - 2; i++) printf ",%s", $i; print ",observed,reference"
}'
tail -n +2 "$tmp/values.csv" | awk -F, '{
    n = NF
    split($(n - 1), k, "|")
    printf "%s,%s,%s", k[1], k[2], k[3]; for (i = 2; i <= n - 2; i++) printf ",%s", $i
    print "," k[4] "," $n
}' | sort -t, -k1,1 -k2,2n -k3,3n
