#!/usr/bin/env bash
# The whole test suite: checks the set-up, then runs every unit and integration test
# (release mode: the statistical and end-to-end tests run real experiments).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo test --release "$@"
