#!/usr/bin/env bash
# FTS paper Fig. 2a: landmine, best AUC after 50 iterations against parameters sent per agent, for TS (dashed), FTS, RGPE and TAF with M in {50, 100, 150, 200} (targets 0..5, 5 runs).
# Expected run time on 2 cores, with the committed tables: 4 min (measured 218 s).
source "$(dirname "$0")/lib.sh"
run configs/fts-landmine.toml
plot messages fts-2a --input results/fts-landmine/summary.csv --title "FTS paper Fig. 2a (landmine)"
plot difference fts-2a-difference --input results/fts-landmine --algorithms "FTS M=100,RGPE M=100,TAF M=100" \
    --title "Landmine, FTS protocol: paired difference to TS"
