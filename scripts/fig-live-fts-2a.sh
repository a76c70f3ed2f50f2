#!/usr/bin/env bash
# FTS paper's landmine comparison as the authors ran it: the SVM trained at every query on the
# continuous (C, gamma) box (Platt-calibrated AUC); targets 0..5, 5 runs, M = 100: TS, FTS,
# RGPE and TAF against iteration, and their paired difference to TS.
# Expected run time on 2 cores, from the raw data in data/raw: about 10 min.
source "$(dirname "$0")/lib.sh"
run configs/live-fts-landmine.toml
plot iterations live-fts-landmine --input results/live-fts-landmine/summary.csv \
    --title "Landmine, FTS protocol, live SVM on the box: best AUC"
plot difference live-fts-landmine-difference --input results/live-fts-landmine \
    --title "Landmine, FTS protocol, live SVM: paired difference to TS"
