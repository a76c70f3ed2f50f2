#!/usr/bin/env bash
# FTS paper Fig. 2c: human activity (UCI HAR), best validation error after 50 iterations against parameters sent per agent (targets 0..5, 5 runs). Fig. 2b (Google glasses) has no public data and is not reproduced.
# Expected run time on 2 cores, with the committed tables: 5 min.
source "$(dirname "$0")/lib.sh"
run configs/fts-har.toml
plot messages fts-2c --input results/fts-har/summary.csv --title "FTS paper Fig. 2c (human activity; error, lower is better)"
