#!/usr/bin/env bash
# FTS paper Fig. 1b: FTS paper Fig. 1b (Sec. 5.1, App. D.1): t_n = 100 (large), d_n = 0.02, FTS over M.
# Expected run time on 2 cores, with the committed tables: 10 s.
source "$(dirname "$0")/lib.sh"
run configs/fts-fig1b.toml
plot iterations fts-1b --input results/fts-fig1b/summary.csv --y simple-regret --log-y --title "FTS paper Fig. 1b (synthetic)"
