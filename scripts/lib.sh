#!/usr/bin/env bash
# Sourced by every figure script: checks the set-up, builds fbo once, and offers
#   run CONFIG [fbo run options]     run a spec into results/<name>/ unless that folder
#                                    already holds a finished run of the same spec, made
#                                    after its response table was last written
#   sweep CONFIG [fbo sweep options] run a sweep into results/<name>/ (finished points are
#                                    kept, so a rerun only does what is missing)
#   plot KIND OUT_NAME [fbo plot options]   draw results/figures/OUT_NAME.png and .svg
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
if [[ -z "${FBO_BUILT:-}" ]]; then
    bash scripts/setup.sh >/dev/null
    cargo build --release --quiet
    export FBO_BUILT=1
fi
FBO="$ROOT/target/release/fbo"
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

run() {
    local config="$1"
    shift
    local out="results/$(spec_name "$config")"
    local table
    table=$(spec_table "$config")
    # A finished run counts only if its table has not been rebuilt since.
    if cmp -s "$config" "$out/spec.toml" && [[ -f "$out/summary.csv" ]] &&
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
