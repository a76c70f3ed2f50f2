#!/usr/bin/env bash
# EI's batch rule (issue 41 item 3): the Kriging believer (EI's default since 2026-11-29)
# against the constant liar (its default before), in one spec per problem so the two share seeds,
# initial points and noise and `fbo compare` pairs them run by run. Single agent, log-EI,
# batch = 4 for 30 rounds (120 evaluations), 5 initial points, noise s.d. 0.1, 10 runs, the
# model of scripts/bench-batch.sh (`ard = "auto"`), whose EI rows these extend. Not part of
# CI: a few minutes on 2 cores.
#
#   scripts/bench-fantasy.sh   # results/bench-fantasy/<problem>/ and <problem>-compare.txt
source "$(dirname "$0")/lib.sh"
source "$ROOT/scripts/suite.sh"
OUT="${FBO_FANTASY_OUT:-$ROOT/results/bench-fantasy}"
mkdir -p "$OUT"
for p in "hartmann6" "ackley 5" "styblinski-tang 5"; do
    read -r fn dim <<<"$p"
    name="fantasy-$fn${dim:+-$dim}"
    spec="$OUT/$name.toml"
    {
        suite_spec bench-fantasy.sh "$name" "$fn" "$dim" 10 30 |
            sed -e 's/^kind = "ts"$/kind = "ei"\nfantasy = "constant-liar"/' -e 's/^iterations = 30$/iterations = 30\nbatch = 4/'
        printf '\n[[algorithm]]\nkind = "ei"\n\n[surrogate.own]\nard = "auto"\n'
    } >"$spec"
    echo "bench-fantasy: $name" >&2
    "$FBO" run "$spec" --out "$OUT/$name" --quiet --no-timing
    "$FBO" compare "$OUT/$name" --baseline "EI liar" --metric simple-regret | tee "$OUT/$name-compare.txt"
done
