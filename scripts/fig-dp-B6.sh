#!/usr/bin/env bash
# DP paper App. B.1.2 Fig. 6: the trade-off in P at q = 0.25, z = 1, S = 11. P values chosen here.
# Expected run time on 2 cores, with the committed tables: 2-4 min.
source "$(dirname "$0")/lib.sh"
run configs/dp-figB6.toml
plot iterations dp-B6 --input results/dp-figB6/summary.csv --y simple-regret --log-y --title "DP paper Fig. B6 (synthetic)"
