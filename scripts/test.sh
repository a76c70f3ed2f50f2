#!/usr/bin/env bash
# The whole test suite: checks the set-up, then runs every unit and integration test
# (release mode: the statistical and end-to-end tests run real experiments), then the
# Python package's tests (scripts/test-python.sh), then a real five-SuperNode Flower
# federation with its fault cases (scripts/test-flower.sh), then the
# cluster test on a real local Slurm (installed and started by ../shared/docs/slurm-local.sh;
# skipped, saying so, without root or apt-get).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ -x target/release/fbo ]; then
    echo "building and running the tests ..." >&2
else
    echo "building and running the tests (a first build takes about 3 minutes; the whole suite about 14) ..." >&2
fi
cargo test --release "$@"
bash scripts/test-python.sh
bash scripts/test-flower.sh
bash scripts/test-slurm.sh
