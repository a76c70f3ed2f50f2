#!/usr/bin/env bash
# DP paper Fig. 2b: impact of the clipping threshold S (DP-FTS-DE, P = 2, q = 0.25, z = 1). S values chosen around the paper's best S = 11.
# Expected run time on 2 cores, with the committed tables: 2-3 min.
source "$(dirname "$0")/lib.sh"
run configs/dp-fig2b.toml
plot iterations dp-2b --input results/dp-fig2b/summary.csv --y simple-regret --log-y --title "DP paper Fig. 2b (synthetic)"
