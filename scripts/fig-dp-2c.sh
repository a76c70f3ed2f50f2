#!/usr/bin/env bash
# DP paper Fig. 2c: impact of q (DP-FTS-DE, P = 2, S = 11, z = 1); the paper reports privacy losses 5.93, 9.91, 20.12.
# Expected run time on 2 cores, with the committed tables: 2-3 min.
source "$(dirname "$0")/lib.sh"
run configs/dp-fig2c.toml
plot iterations dp-2c --input results/dp-fig2c/summary.csv --y simple-regret --log-y --title "DP paper Fig. 2c (synthetic)"
