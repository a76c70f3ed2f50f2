#!/usr/bin/env bash
# Regenerates every main-text figure of both papers that the data allow, into
# results/figures/ (PNG and SVG), from the committed tables: FTS paper Figs. 1a-c, 2a, 2c,
# 3a, 3c, 3d; DP paper Figs. 2a-d, 3a-f. (FTS Figs. 2b and 3b use the Google-glasses data,
# of which no public copy exists.) Each step reuses a finished run of the same spec, so an
# interrupted call can simply be repeated. Appendix figures: scripts/appendix-figures.sh.
# Then the live versions on the continuous box (fig-live-*.sh: the models trained at every
# query from the raw data in data/raw).
# FBO_PLOT_ONLY=1 redraws the figures from the results already in results/ without running.
# Expected run time on 2 cores: about 50 minutes for the table-based figures plus about 50 for
# the live ones (the sum of the scripts' measured times; not timed end to end).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
[ -x target/release/fbo ] || echo "building fbo (a first build takes 3-5 minutes) ..." >&2
cargo build --release
export FBO_BUILT=1
for f in fts-1a fts-1b fts-1c fts-2a fts-2c fts-3a fts-3c fts-3d \
    dp-2a dp-2b dp-2c dp-2d dp-3a dp-3b dp-3c dp-3d dp-3e dp-3f \
    live-dp-3a live-fts-2a live-dp-har; do
    start=$SECONDS
    bash "scripts/fig-$f.sh"
    echo "== fig-$f: $((SECONDS - start)) s"
done
