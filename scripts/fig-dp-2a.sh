#!/usr/bin/env bash
# DP paper Fig. 2a (Sec. 5.1, App. B.1.1): benefit of distributed exploration.
# Expected run time on 2 cores, with the committed tables: 2-3 min.
source "$(dirname "$0")/lib.sh"
run configs/dp-fig2a.toml
plot iterations dp-2a --input results/dp-fig2a/summary.csv --y simple-regret --log-y --title "DP paper Fig. 2a (synthetic)"
