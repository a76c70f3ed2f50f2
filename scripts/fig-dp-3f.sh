#!/usr/bin/env bash
# DP paper Fig. 3f (EMNIST): convergence of TS, FTS, FTS-DE and DP-FTS-DE (q = 0.35, z = 1), best metric against iteration, all agents, 10 runs.
# Expected run time on 2 cores, with the committed tables: 3 min, measured 171 s (nothing if Fig. 3c already ran).
source "$(dirname "$0")/lib.sh"
run configs/dp-emnist.toml
plot iterations dp-3f --input results/dp-emnist/summary.csv --title "DP paper Fig. 3f (EMNIST)"
