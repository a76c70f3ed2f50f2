#!/usr/bin/env bash
# The whole test suite, in four parts that each run even when an earlier one failed: the Rust
# unit and integration tests (release mode: the statistical and end-to-end tests run real
# experiments), the Python package's tests (scripts/test-python.sh), a real five-SuperNode
# Flower federation with its fault cases (scripts/test-flower.sh), and the cluster cycle on a
# real local Slurm (scripts/test-slurm.sh, which installs and starts it with
# scripts/slurm-local.sh; skipped, saying so, without root or apt-get); every Rust test binary
# runs even when an earlier one failed (--no-fail-fast). One line per part at
# the end; the exit status is non-zero if any part failed. Arguments go to cargo test.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
if [ -x target/release/fbo ]; then
    echo "building and running the tests ..." >&2
else
    echo "building and running the tests (a first build takes about 3 minutes; the whole suite about 15) ..." >&2
fi
names=()
codes=()
times=()
part() {
    local name=$1 t0 rc
    shift
    t0=$(date +%s)
    echo "test.sh: === $name ===" >&2
    "$@"
    rc=$?
    names+=("$name")
    codes+=("$rc")
    times+=("$(($(date +%s) - t0))")
}
part rust cargo test --release --no-fail-fast "$@"
part python bash scripts/test-python.sh
part flower bash scripts/test-flower.sh
part slurm bash scripts/test-slurm.sh
failed=0
for i in "${!names[@]}"; do
    if [ "${codes[$i]}" = 0 ]; then
        verdict=passed
    else
        verdict="FAILED (exit ${codes[$i]})"
        failed=$((failed + 1))
    fi
    printf 'test.sh: %-7s %s in %s s\n' "${names[$i]}" "$verdict" "${times[$i]}"
done
echo "parts: $((${#names[@]} - failed)) passed, $failed failed"
[ "$failed" = 0 ]
