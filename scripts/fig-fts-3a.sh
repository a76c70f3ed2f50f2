#!/usr/bin/env bash
# FTS paper Fig. 3a: landmine, target 0, best AUC against simulated run time (BO overhead + recorded SVM training time), TS, FTS, RGPE, TAF with M = 100, 5 runs.
# Expected run time on 2 cores, with the committed tables: 2 min (measured 100 s).
source "$(dirname "$0")/lib.sh"
run configs/fts-landmine-time.toml
plot time fts-3a --input results/fts-landmine-time/summary.csv --title "FTS paper Fig. 3a (landmine, target 0)"
