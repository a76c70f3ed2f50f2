#!/usr/bin/env bash
# FTS paper Fig. 3d: landmine, the target's BO overhead over 50 iterations against the number N of other agents (5..28), FTS, RGPE, TAF with M = 100, 2 runs.
# Expected run time on 2 cores, with the committed tables: 1-2 min (measured 66 s).
source "$(dirname "$0")/lib.sh"
sweep configs/fts-landmine-scaling.toml
plot scaling fts-3d --input results/fts-landmine-scaling/sweep.csv --title "FTS paper Fig. 3d (landmine): run time against N"
