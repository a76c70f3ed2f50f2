#!/usr/bin/env bash
# Integration test of scripts/slurm-sweep.sh on a real single-node Slurm
# (scripts/slurm-local.sh installs and starts it: Debian, root). Submits a small
# sweep as 3 shards, cancels one array task on purpose, checks that the merge job was
# cancelled and nothing merged, resubmits (only the missing shard may go), waits, and
# compares sweep.csv with an unsharded sweep; then shards a command objective's sweep. Every step
# checks that it did something.
# Skips, saying why, where there is no root or no apt-get.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
fail() { echo "test-slurm: FAILED: $*" >&2; exit 1; }

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "test-slurm: skipped: a local Slurm needs root and apt-get (Debian)"
    exit 0
fi
slurm_local=$root/scripts/slurm-local.sh
# Started here only if it is not already up, and then stopped again on the way out: the test
# leaves no daemon of its own running.
started_slurm=
if ! scontrol ping >/dev/null 2>&1; then
    started_slurm=1
fi
# Said before it happens: what the test installs and starts on this machine.
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null || ! command -v sbatch >/dev/null; then
    echo "test-slurm: installing Debian packages for a local Slurm (munge, slurmctld, slurmd, slurm-client and their libraries, about 13 MB) with apt-get; they stay installed" >&2
fi
if [ -n "$started_slurm" ]; then
    echo "test-slurm: starting munged, slurmctld and slurmd for this test; all three are stopped when it ends" >&2
fi
bash "$slurm_local" >/tmp/fbo-slurm-local.log 2>&1 || { tail -20 /tmp/fbo-slurm-local.log; fail "slurm-local.sh could not start Slurm"; }
scontrol ping >/dev/null || fail "Slurm started but scontrol ping fails"

fbo=$root/target/release/fbo
[ -x "$fbo" ] || cargo build --release --quiet
work=$(mktemp -d /tmp/fbo-slurm-test.XXXXXX)
jobs=()
# On the way out, whatever happened: no job of this test left queued, no folder left.
cleanup() {
    [ ${#jobs[@]} -eq 0 ] || scancel "${jobs[@]}" 2>/dev/null || true
    [ -n "${KEEP:-}" ] || rm -rf "$work"
    [ -z "$started_slurm" ] || bash "$slurm_local" stop >/dev/null 2>&1 || true
}
trap cleanup EXIT
# SMALL_DP of tests/common (tests/fixtures/small-dp.toml) with 2 runs of 30 iterations and a
# 2 x 2 sweep: 4 points x 2 runs x 2 algorithms.
sed -e 's/^name = "small-dp"$/name = "slurm-test"/' -e 's/^runs = 3$/runs = 2/' \
    -e 's/^iterations = 8$/iterations = 30/' tests/fixtures/small-dp.toml >"$work/sw.toml"
for want in 'name = "slurm-test"' 'runs = 2' 'iterations = 30'; do
    grep -qx "$want" "$work/sw.toml" || {
        echo "test-slurm: tests/fixtures/small-dp.toml changed; '$want' not set" >&2
        exit 1
    }
done
cat >>"$work/sw.toml" <<'EOF'
[sweep]
"server.q" = [0.25, 0.5]
"server.z" = [1.0, 2.0]
EOF
"$fbo" sweep "$work/sw.toml" --out "$work/full" --quiet --no-timing

wait_gone() { # job ids (comma-separated), seconds
    local t=0
    while squeue -h -j "$1" 2>/dev/null | grep -q .; do
        sleep 0.5
        t=$((t + 1))
        [ $t -lt $(($2 * 2)) ] || fail "jobs $1 still queued after $2 s"
    done
}
state() { scontrol -o show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | sort -u | tr '\n' ' '; }

# 1. Submit, then cancel task 1 before it can finish.
out=$work/out
sub=$(scripts/slurm-sweep.sh "$work/sw.toml" --out "$out" --shards 3 --no-timing -- --hold)
echo "$sub"
array=$(sed -n 's/.*as job array \([0-9]*\)$/\1/p' <<<"$sub" | head -1)
merge=$(sed -n 's/.*merge as job \([0-9]*\).*/\1/p' <<<"$sub")
[ -n "$array" ] && [ -n "$merge" ] || fail "slurm-sweep.sh submitted no array and merge: $sub"
jobs+=("$array" "$merge")
grep -q "submitted shards 0,1,2 of 3" <<<"$sub" || fail "the first submission is not all 3 shards"
scancel "${array}_1"
scontrol release "$array" "$merge" 2>/dev/null || true
wait_gone "$array,$merge" 300
[ ! -f "$out/sweep.csv" ] || fail "sweep.csv was merged although a task was cancelled"
grep -q CANCELLED <<<"$(state "$merge")" || fail "the merge job was not cancelled: $(state "$merge")"
left=$("$fbo" sweep "$work/sw.toml" --out "$out" --status --no-timing | head -1)
grep -q " 0 running, [1-9][0-9]* missing" <<<"$left" || fail "nothing is missing after the cancelled task: $left"
echo "after the cancelled task: $left"

# 2. Resubmit: only shard 1 is missing, then the merge.
sub=$(scripts/slurm-sweep.sh "$work/sw.toml" --out "$out" --shards 3 --no-timing)
echo "$sub"
grep -q "submitted shards 1 of 3" <<<"$sub" || fail "the resubmission is not shard 1 alone: $sub"
array=$(sed -n 's/.*as job array \([0-9]*\)$/\1/p' <<<"$sub" | head -1)
merge=$(sed -n 's/.*merge as job \([0-9]*\).*/\1/p' <<<"$sub")
jobs+=("$array" "$merge")
wait_gone "$array,$merge" 300
[ -f "$out/sweep.csv" ] || fail "no sweep.csv after the resubmission (see $out/slurm/merge.out)"
cmp -s "$out/sweep.csv" "$work/full/sweep.csv" || fail "the merged sweep.csv differs from the unsharded sweep's"

# 3. A third submission has nothing to do.
sub=$(scripts/slurm-sweep.sh "$work/sw.toml" --out "$out" --shards 3 --no-timing)
grep -q "nothing to submit" <<<"$sub" || fail "a finished sweep was submitted again: $sub"

# 4. A command objective (the federated-tuning example, a categorical parameter among its
# hyperparameters) swept in 2 shards: the same sweep.csv as unsharded, and every training
# run exactly as often as unsharded (each shard keeps a journal of its own).
mkdir -p "$work/cmd"
cp examples/federated-tuning/train.sh "$work/cmd/"
sed -e 's/^iterations = 15$/iterations = 6/' examples/federated-tuning/spec.toml >"$work/cmd/spec.toml"
grep -qx 'iterations = 6' "$work/cmd/spec.toml" || fail "examples/federated-tuning/spec.toml changed: iterations not set"
printf '\n[sweep]\n"initial_points" = [2, 3]\n' >>"$work/cmd/spec.toml"
"$fbo" sweep "$work/cmd/spec.toml" --out "$work/cmd-full" --quiet --no-timing
entries() { cat "$1"/points/*/evaluations*.jsonl | grep -vc '"fbo_journal"'; }
sub=$(scripts/slurm-sweep.sh "$work/cmd/spec.toml" --out "$work/cmd-out" --shards 2 --no-timing)
echo "$sub"
array=$(sed -n 's/.*as job array \([0-9]*\)$/\1/p' <<<"$sub" | head -1)
merge=$(sed -n 's/.*merge as job \([0-9]*\).*/\1/p' <<<"$sub")
[ -n "$array" ] && [ -n "$merge" ] || fail "slurm-sweep.sh submitted no array and merge for the command sweep: $sub"
jobs+=("$array" "$merge")
wait_gone "$array,$merge" 300
[ -f "$work/cmd-out/sweep.csv" ] || fail "no sweep.csv for the command sweep (see $work/cmd-out/slurm/merge.out)"
cmp -s "$work/cmd-out/sweep.csv" "$work/cmd-full/sweep.csv" || fail "the command sweep's merged sweep.csv differs from the unsharded one"
n_full=$(entries "$work/cmd-full")
n_sharded=$(entries "$work/cmd-out")
[ "$n_full" -gt 0 ] && [ "$n_full" -eq "$n_sharded" ] || fail "the sharded command sweep journaled $n_sharded evaluations, the unsharded $n_full"
ls "$work"/cmd-out/points/*/evaluations.units-*.jsonl >/dev/null 2>&1 || fail "the command sweep's shards kept no journals of their own"
echo "test-slurm: ok: submit, cancelled task, cancelled merge, resubmission of the missing shard, merge equal to the unsharded sweep, nothing left to submit; a command objective's sweep in 2 shards equal to unsharded, $n_sharded evaluations each made once"
