#!/usr/bin/env bash
# DP paper Fig. 3c (EMNIST): best validation-error after 60 iterations against privacy loss epsilon (rdp-int, delta = N^-1.1) for DP-FTS-DE over the paper's q and z grids, with TS, FTS and FTS-DE (no DP) as dashed lines. The sweep uses 5 of the paper's 10 runs per point so that all-figures.sh stays under an hour; drop --runs 5 for the full protocol.
# Expected run time on 2 cores, with the committed tables: 9 min (measured: 171 s run, 375 s sweep).
source "$(dirname "$0")/lib.sh"
run configs/dp-emnist.toml
sweep configs/dp-emnist-sweep.toml --runs 5
plot privacy dp-3c --input results/dp-emnist-sweep/sweep.csv --input results/dp-emnist/summary.csv \
    --algorithms "TS,FTS,FTS-DE P=4" --title "DP paper Fig. 3c (EMNIST)"
