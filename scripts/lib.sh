#!/usr/bin/env bash
# Sourced by every figure script: checks the set-up, builds fbo once, and offers
#   run CONFIG [fbo run options]     run a spec into results/<name>/ unless that folder
#                                    already holds a finished run of the same spec, made
#                                    after its response table was last written
#   sweep CONFIG [fbo sweep options] run a sweep into results/<name>/ (finished points are
#                                    kept, so a rerun only does what is missing)
#   plot KIND OUT_NAME [fbo plot options]   draw results/figures/OUT_NAME.png and .svg
# With FBO_PLOT_ONLY=1, run and sweep do nothing: the figures are redrawn from results/.
# FBO_BUILT=1 FBO_BIN=path runs a binary built elsewhere (a benchmark beside another's build).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
if [[ -z "${FBO_BUILT:-}" ]]; then
    bash scripts/setup.sh >/dev/null
    [ -x target/release/fbo ] || echo "building fbo (a first build takes 3-5 minutes) ..." >&2
    cargo build --release
    export FBO_BUILT=1
fi
FBO="${FBO_BIN:-$ROOT/target/release/fbo}"
FIGURES="$ROOT/results/figures"
mkdir -p "$FIGURES"

# The name a spec writes under results/.
spec_name() { sed -n 's/^name *= *"\(.*\)".*/\1/p' "$1" | head -n 1; }

# The table.csv a spec reads (objective.table is relative to the spec), or nothing.
spec_table() {
    local t
    t=$(sed -n 's/^table *= *"\(.*\)".*/\1/p' "$1" | head -n 1)
    if [[ -n "$t" ]]; then
        echo "$(dirname "$1")/$(dirname "$t")/table.csv"
    fi
}

# Whether two specs are the same but for their table or data paths.
same_spec() {
    [[ -f "$2" ]] && cmp -s <(grep -v '^\(table\|data\) *=' "$1") <(grep -v '^\(table\|data\) *=' "$2")
}

run() {
    local config="$1"
    shift
    local out="results/$(spec_name "$config")"
    local table
    table=$(spec_table "$config")
    if [[ -n "${FBO_PLOT_ONLY:-}" ]]; then
        return
    fi
    # A finished run counts only if its table has not been rebuilt since. fbo's copy of the
    # spec has its table or data path rewritten relative to the results folder.
    if same_spec "$config" "$out/spec.toml" && [[ -f "$out/summary.csv" ]] &&
        head -n 1 "$out/trace.csv" | grep -q sim_clock_s &&
        { [[ -z "$table" ]] || [[ "$out/summary.csv" -nt "$table" ]]; }; then
        echo "reusing $out (finished run of the same spec)"
        return
    fi
    echo "running $config"
    "$FBO" run "$config" --quiet "$@"
}

sweep() {
    local config="$1"
    shift
    if [[ -n "${FBO_PLOT_ONLY:-}" ]]; then
        return
    fi
    echo "sweeping $config"
    "$FBO" sweep "$config" --quiet "$@"
}

plot() {
    local kind="$1" name="$2"
    shift 2
    for ext in png svg; do
        "$FBO" plot "$kind" --out "$FIGURES/$name.$ext" "$@"
    done
    echo "figure: results/figures/$name.png (and .svg)"
}
