#!/usr/bin/env bash
# FTS paper Fig. 1a: FTS paper Fig. 1a (Sec. 5.1, App. D.1): t_n = 40 (small), d_n = 0.02, FTS over M.
# Expected run time on 2 cores, with the committed tables: 10 s.
source "$(dirname "$0")/lib.sh"
run configs/fts-fig1a.toml
plot iterations fts-1a --input results/fts-fig1a/summary.csv --y simple-regret --log-y --title "FTS paper Fig. 1a (synthetic)"
