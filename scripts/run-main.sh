#!/usr/bin/env bash
# The main job: checks the set-up, builds fbo, runs the synthetic FTS-vs-TS
# experiment (configs/synthetic.toml) and prints the final-iteration summary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Said only when there is no binary yet: a rebuild after a change takes seconds.
[ -x target/release/fbo ] || echo "building fbo (the first build compiles 117 crates: about 4 minutes on 2 cores) ..." >&2
cargo build --release
./target/release/fbo run configs/synthetic.toml "$@"
echo "final iteration (mean simple regret +/- s.e. over runs):"
awk -F, 'NR == 1 { next } { last[$1] = $0; order[$1] = NR } END {
    for (a in last) { split(last[a], f, ","); printf "  %-12s iteration %s: %.4f +/- %.4f\n", a, f[2], f[4], f[5] } }' \
    results/synthetic/summary.csv | sort
