#!/usr/bin/env bash
# DP paper Fig. 3e (HAR): convergence of TS, FTS, FTS-DE and DP-FTS-DE (q = 0.35, z = 1), best metric against iteration, all agents, 10 runs.
# Expected run time on 2 cores, with the committed tables: 5 min (nothing if Fig. 3b already ran).
source "$(dirname "$0")/lib.sh"
run configs/dp-har.toml
plot iterations dp-3e --input results/dp-har/summary.csv --title "DP paper Fig. 3e (HAR)"
