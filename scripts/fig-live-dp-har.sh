#!/usr/bin/env bash
# Human activity recognition, DP paper protocol as the authors ran it: the logistic regression
# trained at every query on the continuous box of the DP paper's ranges; 21 subjects, 5 runs:
# validation error against iteration, and the paired difference to TS.
# Expected run time on 2 cores, from the raw data in data/raw: about 6 min.
source "$(dirname "$0")/lib.sh"
run configs/live-dp-har.toml
plot iterations live-dp-har --input results/live-dp-har/summary.csv \
    --title "HAR, DP protocol, live logistic regression on the box: best error"
plot difference live-dp-har-difference --input results/live-dp-har \
    --title "HAR, DP protocol, live: paired difference to TS"
