#!/usr/bin/env bash
# DP paper App. B.1.2 Fig. 7a: heterogeneous agents, f_i = alpha g_i + (1 - alpha) f_base with alpha = 0.7, 50 agents. TS against FTS-DE (P = 2) with 1 - p_t = 1/sqrt(t) and a faster-decaying 1 - p_t = 1/t^2.
# Expected run time on 2 cores, with the committed tables: 2-4 min.
source "$(dirname "$0")/lib.sh"
run configs/dp-figB7a.toml
plot iterations dp-B7a --input results/dp-figB7a/summary.csv --y simple-regret --log-y --title "DP paper Fig. B7a (synthetic)"
