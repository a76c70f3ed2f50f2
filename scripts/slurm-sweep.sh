#!/usr/bin/env bash
# Submit a sweep (or, with --run, a run) to Slurm: a job array of N shards, each running
# `fbo sweep SPEC --shard I/N`, and a merge job that starts once every task succeeded
# (afterok, and cancelled instead of waiting forever if one fails). Rerunning the same
# command submits only the shards that still have runs missing (and none running), then
# the merge; it submits nothing once the results are merged.
#
#   scripts/slurm-sweep.sh SPEC --out DIR [--shards N] [--run] [--no-timing] [-- SBATCH_OPTIONS...]
#
# DIR must be on storage every node sees. Each task uses the threads Slurm gives it
# (--cpus-per-task, passed on as fbo --threads). Logs: DIR/slurm/shard-<I>.out, merge.out.
# FBO (default: target/release/fbo of this repository) is the binary the jobs run.
set -euo pipefail

usage() {
    sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
}

[ $# -ge 1 ] || usage
spec=$1
shift
out="" shards=4 cmd=sweep fbo_args=()
sbatch_args=()
# An option that takes a value, given without one, is a usage error (not "unbound variable").
need_value() {
    [ $# -ge 2 ] && [ -n "$2" ] || { echo "slurm-sweep.sh: $1 needs a value" >&2; exit 2; }
}
while [ $# -gt 0 ]; do
    case $1 in
        --out) need_value "$@"; out=$2; shift 2 ;;
        --shards) need_value "$@"; shards=$2; shift 2 ;;
        --run) cmd=run; shift ;;
        --no-timing) fbo_args+=(--no-timing); shift ;;
        --) shift; sbatch_args=("$@"); break ;;
        -h|--help) usage ;;
        *) echo "slurm-sweep.sh: unknown option $1 (options after -- go to sbatch)" >&2; exit 2 ;;
    esac
done
[ -n "$out" ] || { echo "slurm-sweep.sh: --out DIR is required (on storage every node sees)" >&2; exit 2; }
case $shards in ''|*[!0-9]*|0) echo "slurm-sweep.sh: --shards must be a positive integer" >&2; exit 2 ;; esac
command -v sbatch >/dev/null || { echo "slurm-sweep.sh: sbatch not found: run this on a Slurm login node" >&2; exit 2; }

here=$(cd "$(dirname "$0")/.." && pwd)
fbo=${FBO:-$here/target/release/fbo}
[ -x "$fbo" ] || { echo "slurm-sweep.sh: $fbo is not built (cargo build --release)" >&2; exit 2; }
fbo=$(cd "$(dirname "$fbo")" && pwd)/$(basename "$fbo")
spec=$(cd "$(dirname "$spec")" && pwd)/$(basename "$spec")
# Absolute, without creating it: a refused submission leaves nothing behind.
out=$(realpath -m "$out")

# Checks the spec (exit 2 with the reason) before anything is submitted.
"$fbo" validate "$spec" >/dev/null

status=$("$fbo" "$cmd" "$spec" --out "$out" --status "${fbo_args[@]}" | head -1)
if grep -q " 0 running, 0 missing" <<<"$status" &&
    { grep -q "(merged)" <<<"$status" || [ -f "$out/sweep.csv" ]; }; then
    echo "$out: every run is done and merged; nothing to submit"
    exit 0
fi

# The shards with runs missing and none running.
todo=()
for ((i = 0; i < shards; i++)); do
    line=$("$fbo" "$cmd" "$spec" --out "$out" --status --shard "$i/$shards" "${fbo_args[@]}" | head -1)
    if grep -q " 0 running, [1-9][0-9]* missing" <<<"$line"; then
        todo+=("$i")
    fi
done

mkdir -p "$out/slurm"
q() { printf '%q ' "$@"; }
dep=()
if [ ${#todo[@]} -gt 0 ]; then
    list=$(IFS=,; echo "${todo[*]}")
    array=$(sbatch --parsable --job-name=fbo-shard --array="$list" \
        --output="$out/slurm/shard-%a.out" "${sbatch_args[@]}" \
        --wrap "exec $(q "$fbo" "$cmd" "$spec" --out "$out" --quiet "${fbo_args[@]}") --threads \${SLURM_CPUS_PER_TASK:-1} --shard \${SLURM_ARRAY_TASK_ID}/$shards")
    array=${array%%;*}
    dep=(--dependency="afterok:$array" --kill-on-invalid-dep=yes)
    echo "submitted shards $list of $shards as job array $array"
fi
merge=$(sbatch --parsable --job-name=fbo-merge "${dep[@]}" \
    --output="$out/slurm/merge.out" "${sbatch_args[@]}" \
    --wrap "exec $(q "$fbo" "$cmd" "$spec" --out "$out" --quiet "${fbo_args[@]}") --threads \${SLURM_CPUS_PER_TASK:-1} --merge")
merge=${merge%%;*}
echo "submitted the merge as job $merge${array:+ (after job array $array succeeds)}"
