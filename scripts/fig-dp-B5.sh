#!/usr/bin/env bash
# DP paper App. B.1.2 Fig. 5: both parts of distributed exploration matter. FTS-DE (P = 2) against equal weights and against initial points from the whole domain.
# Expected run time on 2 cores, with the committed tables: 2-4 min.
source "$(dirname "$0")/lib.sh"
run configs/dp-figB5.toml
plot iterations dp-B5 --input results/dp-figB5/summary.csv --y simple-regret --log-y --title "DP paper Fig. B5 (synthetic)"
