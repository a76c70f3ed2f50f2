#!/usr/bin/env bash
# DP paper Fig. 2d: impact of z (DP-FTS-DE, P = 2, S = 11, q = 0.25); the paper reports privacy losses 9.91, 7.39, 5.22.
# Expected run time on 2 cores, with the committed tables: 2-3 min.
source "$(dirname "$0")/lib.sh"
run configs/dp-fig2d.toml
plot iterations dp-2d --input results/dp-fig2d/summary.csv --y simple-regret --log-y --title "DP paper Fig. 2d (synthetic)"
