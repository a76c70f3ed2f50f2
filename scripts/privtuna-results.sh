#!/usr/bin/env bash
# Issue 39: every fbo algorithm on real clients. Runs configs/privtuna.toml on every
# federation table under TABLES (default data/privtuna; any folder `fbo import privtuna`
# wrote, e.g. quantity-skew federations not in the repository), changing only its table line,
# then writes the paired verdicts per skew type and level (scripts/privtuna_report.py).
#
#   bash scripts/privtuna-results.sh [TABLES] [OUT]
#
# OUT (default results/privtuna) holds one run folder per federation; a rerun keeps finished
# runs (fbo resumes) and only redoes the report. The report goes to OUT/report.md; with the
# default TABLES it also replaces the PrivTuna block of docs/results.md.
# About 15 minutes on 2 cores for the 40 federations; needs python3 (standard library only)
# for the report, not for the runs.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TABLES="$(cd "${1:-$ROOT/data/privtuna}" && pwd)"
OUT="${2:-$ROOT/results/privtuna}"
mkdir -p "$OUT/specs"
OUT="$(cd "$OUT" && pwd)"
cd "$ROOT"
cargo build --release --quiet
FBO="$ROOT/target/release/fbo"
CONFIG="$ROOT/configs/privtuna.toml"

shopt -s nullglob
tables=("$TABLES"/*/table.toml)
[[ ${#tables[@]} -gt 0 ]] || { echo "privtuna-results: no */table.toml under $TABLES (make them with fbo import privtuna)" >&2; exit 2; }
for t in "${tables[@]}"; do
    name="$(basename "$(dirname "$t")")"
    spec="$OUT/specs/$name.toml"
    # The config with its name and table changed, nothing else.
    sed -e "s|^name = .*|name = \"privtuna-$name\"|" -e "s|^table = .*|table = \"$t\"|" "$CONFIG" > "$spec.new"
    if [[ -f "$spec" ]] && cmp -s "$spec" "$spec.new"; then rm "$spec.new"; else mv "$spec.new" "$spec"; fi
    if [[ -f "$OUT/runs/$name/trace.csv" && "$OUT/runs/$name/trace.csv" -nt "$spec" && "$OUT/runs/$name/trace.csv" -nt "$t" ]]; then
        continue
    fi
    echo "privtuna-results: $name" >&2
    "$FBO" run "$spec" --out "$OUT/runs/$name" --quiet --no-timing
done

python3 "$ROOT/scripts/privtuna_report.py" --fbo "$FBO" --tables "$TABLES" --runs "$OUT/runs" > "$OUT/report.md"
echo "privtuna-results: report -> $OUT/report.md" >&2
if [[ "$TABLES" == "$ROOT/data/privtuna" ]]; then
    python3 - "$ROOT/docs/results.md" "$OUT/report.md" <<'EOF'
import sys
doc, rep = sys.argv[1], open(sys.argv[2]).read()
text = open(doc).read()
begin, end = "<!-- privtuna:begin (scripts/privtuna-results.sh) -->", "<!-- privtuna:end -->"
if begin in text:
    head, rest = text.split(begin, 1)
    tail = rest.split(end, 1)[1]
else:
    head, tail = text.rstrip("\n") + "\n\n", "\n"
open(doc, "w").write(head + begin + "\n" + rep + end + tail)
EOF
    echo "privtuna-results: docs/results.md updated" >&2
fi
