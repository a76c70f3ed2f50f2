#!/usr/bin/env bash
# DP paper Fig. 3d (landmine): convergence of TS, FTS, FTS-DE and DP-FTS-DE (q = 0.35, z = 1), best metric against iteration, all agents, 10 runs.
# Expected run time on 2 cores, with the committed tables: 6 min (nothing if Fig. 3a already ran).
source "$(dirname "$0")/lib.sh"
run configs/dp-landmine.toml
plot iterations dp-3d --input results/dp-landmine/summary.csv --title "DP paper Fig. 3d (landmine)"
