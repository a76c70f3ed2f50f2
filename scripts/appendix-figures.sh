#!/usr/bin/env bash
# The DP paper's synthetic appendix figures (App. B.1.2: Figs. 4, 5, 6, 7a, 7b) into
# results/figures/. Expected run time on 2 cores: about 15 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
cargo build --release
export FBO_BUILT=1
for f in dp-B4 dp-B5 dp-B6 dp-B7a dp-B7b; do
    start=$SECONDS
    bash "scripts/fig-$f.sh"
    echo "== fig-$f: $((SECONDS - start)) s"
done
