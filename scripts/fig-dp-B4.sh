#!/usr/bin/env bash
# DP paper App. B.1.2 Fig. 4: DP-FTS (P = 1, S = 8) against DP-FTS-DE (P = 2, S = 11), z = 1; q = 0.25 (not stated).
# Expected run time on 2 cores, with the committed tables: 2-4 min.
source "$(dirname "$0")/lib.sh"
run configs/dp-figB4.toml
plot iterations dp-B4 --input results/dp-figB4/summary.csv --y simple-regret --log-y --title "DP paper Fig. B4 (synthetic)"
