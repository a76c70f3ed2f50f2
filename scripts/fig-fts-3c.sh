#!/usr/bin/env bash
# FTS paper Fig. 3c: human activity, target 0, best validation error against simulated run time, M = 100, 5 runs. Fig. 3b (Google glasses) has no data and is not reproduced.
# Expected run time on 2 cores, with the committed tables: 2 min.
source "$(dirname "$0")/lib.sh"
run configs/fts-har-time.toml
plot time fts-3c --input results/fts-har-time/summary.csv --title "FTS paper Fig. 3c (human activity, target 0)"
