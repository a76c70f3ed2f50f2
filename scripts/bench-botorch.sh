#!/usr/bin/env bash
# fbo and BoTorch side by side on the closed-form suite (issue 24 item 4). Not part of CI.
#
# Every problem: one agent, 5 initial points, 30 iterations, observation noise s.d. 0.1, 10
# seeds. fbo runs each engine configuration below as its own spec (same seed, so the same
# initial points and noise); BoTorch (installed by this script into a virtual environment,
# pinned; never a dependency of fbo) starts every run from fbo's initial points and runs
# SingleTaskGP with Thompson sampling and with qLogEI (scripts/bench_botorch.py). Then paired
# differences of the final simple regret, Wilcoxon signed-rank, Holm over all comparisons,
# and CPU seconds per iteration.
#
#   scripts/bench-botorch.sh                       # results/bench-botorch/{paired,cpu}.csv
#   FBO_SUITE_PROBLEMS="branin;levy 5" scripts/bench-botorch.sh
#   FBO_BENCH_METHODS=ts scripts/bench-botorch.sh  # BoTorch TS only (qLogEI is the slow one)
#   FBO_BENCH_RUNS=3 FBO_BENCH_ITERATIONS=10 ...     # fewer runs and iterations (a CPU timing)
#   FBO_SUITE_PROBLEMS="hartmann6 - 20;levy 4" FBO_BENCH_CONFIGS="default;loo" \
#       FBO_BOTORCH_OUT=results/bench-heldout scripts/bench-botorch.sh   # issue 41's held-out set
#
# A problem "FUNCTION [DIMENSION] [EMBED]" with EMBED hides the function among inert axes
# (DIMENSION "-" for a function of fixed dimension): 2 EMBED + 1 Sobol initial points and 60
# iterations, as issue 41 measured it; the others 5 random points and 30 iterations.
#
# A rerun keeps what is done: fbo folders of the same spec and BoTorch runs already written.
# About 2-3 CPU hours for the whole suite, almost all of it BoTorch's.
source "$(dirname "$0")/lib.sh"
OUT="${FBO_BOTORCH_OUT:-$ROOT/results/bench-botorch}"
VENV="${FBO_BOTORCH_VENV:-$ROOT/.venv-botorch}"
mkdir -p "$OUT"

if [[ ! -x "$VENV/bin/python" ]] || ! "$VENV/bin/python" -c "import botorch" 2>/dev/null; then
    echo "bench-botorch: installing BoTorch into $VENV (about 4 GB with torch's CUDA libraries) ..." >&2
    python3 -m venv "$VENV"
    # BoTorch's release of 2026-06 and what pip resolved for it then.
    "$VENV/bin/pip" install -q torch==2.15.0 botorch==0.18.1 gpytorch==1.15.2 \
        linear-operator==0.6.1 scipy==1.17.1 numpy==2.4.6
fi
PY="$VENV/bin/python"

runs=${FBO_BENCH_RUNS:-10}
iterations=${FBO_BENCH_ITERATIONS:-30}
source "$ROOT/scripts/suite.sh"
problems=("${suite_problems[@]}")
methods="${FBO_BENCH_METHODS:-ts,logei}"

# fbo's engine configurations: label, then the [surrogate] lines of its spec, every choice
# explicit so that the comparison does not move with the defaults. "papers" is the papers' own
# sample (SE, one length scale, maximum likelihood, zero mean, RFF posterior on 100 features);
# "default" fbo's default for new specs (the exact posterior by pathwise conditioning, Hvarfner
# et al.'s priors, one length scale per axis from 10 observations per axis on, a constant mean).
configs=(
    "papers|kernel = \"se\"
[surrogate.own]
sample = \"rff\"
ard = false
prior = \"none\"
mean = \"zero\""
    "default|kernel = \"se\"
[surrogate.own]
sample = \"pathwise\"
ard = \"auto\"
prior = \"dimension-scaled\"
mean = \"constant\""
    # The default model with one length scale per axis where leave-one-out says so, for TS
    # and for log-EI (the candidates for a new default, issue 41 items 1-2).
    "loo|kernel = \"se\"
[surrogate.own]
sample = \"pathwise\"
ard = \"loo\"
prior = \"dimension-scaled\"
mean = \"constant\"

[[algorithm]]
kind = \"ei\"
ei = \"log\""
)
if [[ -n "${FBO_BENCH_CONFIGS:-}" ]]; then
    keep=()
    for c in "${configs[@]}"; do
        [[ ";$FBO_BENCH_CONFIGS;" == *";${c%%|*};"* ]] && keep+=("$c")
    done
    configs=("${keep[@]}")
fi

folders=()
for p in "${problems[@]}"; do
    read -r fn dim embed <<<"$p"
    [[ "$dim" == "-" ]] && dim=""
    name="$fn${dim:+-$dim}${embed:+-in-$embed}"
    its=$iterations initial=5
    [[ -n "$embed" ]] && its=60 initial=$((2 * embed + 1))
    folders+=("$OUT/$name")
    mkdir -p "$OUT/$name"
    for c in "${configs[@]}"; do
        label="${c%%|*}"
        spec="$OUT/$name/fbo-$label.toml"
        {
            suite_spec bench-botorch.sh "$name-$label" "$fn" "$dim" "$runs" "$its" "$initial" "$embed"
            printf '\n[surrogate]\n%s\n' "${c#*|}"
        } >"$spec"
        dir="$OUT/$name/fbo-$label"
        if [[ ! -f "$dir/cpu_s.txt" ]] || ! cmp -s "$spec" "$dir/spec.toml"; then
            echo "bench-botorch: fbo $name $label" >&2
            # bash's own `time`: user and system seconds of fbo (its only output, --quiet).
            TIMEFORMAT='%U %S'
            { time "$FBO" run "$spec" --out "$dir" --quiet --no-timing --overwrite --threads 1; } 2>"$dir.time"
            awk '{print $1 + $2}' "$dir.time" >"$dir/cpu_s.txt"
            rm -f "$dir.time"
        fi
    done
    echo "bench-botorch: BoTorch $name" >&2
    "$PY" "$ROOT/scripts/bench_botorch.py" run "$OUT/$name" --function "$fn" \
        ${dim:+--dimension "$dim"} ${embed:+--embed "$embed"} --noise-sd 0.1 --methods "$methods"
done
"$PY" "$ROOT/scripts/bench_botorch.py" compare "${folders[@]}" >"$OUT/paired.csv"
"$PY" "$ROOT/scripts/bench_botorch.py" cpu "${folders[@]}" >"$OUT/cpu.csv"
column -s, -t "$OUT/paired.csv"
column -s, -t "$OUT/cpu.csv"
