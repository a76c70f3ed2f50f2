#!/usr/bin/env bash
# FTS paper Fig. 1c: FTS paper Fig. 1c (Sec. 5.1, App. D.1): every agent heterogeneous (d_n = 1.2), FTS with a slow and a fast p_t schedule; t_n = 100, M = 100 (not stated in the paper).
# Expected run time on 2 cores, with the committed tables: 10 s.
source "$(dirname "$0")/lib.sh"
run configs/fts-fig1c.toml
plot iterations fts-1c --input results/fts-fig1c/summary.csv --y simple-regret --log-y --title "FTS paper Fig. 1c (synthetic)"
