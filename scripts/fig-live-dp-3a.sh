#!/usr/bin/env bash
# DP paper Fig. 3a (landmine) as the authors ran it: the SVM trained at every query on the
# continuous (C, gamma) box, Platt-calibrated AUC. Best AUC after 60 iterations against privacy
# loss epsilon (rdp-int) for DP-FTS-DE over the q and z grids (5 runs per point), with TS, FTS
# and FTS-DE (no DP, 10 runs) as dashed lines; then the four algorithms against iteration and
# their paired difference to TS.
# Expected run time on 2 cores, from the raw data in data/raw: about 35 min.
source "$(dirname "$0")/lib.sh"
run configs/live-dp-landmine.toml
sweep configs/live-dp-landmine-sweep.toml
plot privacy live-dp-3a --input results/live-dp-landmine-sweep/sweep.csv --input results/live-dp-landmine/summary.csv \
    --algorithms "TS,FTS,FTS-DE P=4" --title "DP paper Fig. 3a, live SVM on the (C, gamma) box"
plot iterations live-dp-landmine --input results/live-dp-landmine/summary.csv \
    --title "Landmine, DP protocol, live SVM on the box: best AUC"
plot difference live-dp-landmine-difference --input results/live-dp-landmine \
    --title "Landmine, DP protocol, live SVM: paired difference to TS"
