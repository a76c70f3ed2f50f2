#!/bin/sh
# A small training program for fbo to tune (docs/commands.md): logistic regression trained
# by SGD on one agent's own data. Each agent (a hospital, say) holds its own patients, drawn
# here from a model that differs a little between agents; the data never leave this
# program, only the validation loss does.
#
# fbo runs it once per evaluation with the hyperparameters in FBO_PARAM_LEARNING_RATE,
# FBO_PARAM_L2, FBO_PARAM_EPOCHS and FBO_PARAM_SCHEDULE (a categorical one: "constant" or
# "decay", by name) and the agent in FBO_AGENT (the same request also
# arrives as JSON on stdin, unused here). Its last line of stdout is the result:
#   {"metric": <validation log-loss>}
# Plain POSIX sh and awk, so it runs wherever fbo does.
set -eu
: "${FBO_AGENT:?run me through fbo (FBO_AGENT is not set)}"
exec awk -v agent="$FBO_AGENT" -v lr="$FBO_PARAM_LEARNING_RATE" -v l2="$FBO_PARAM_L2" \
    -v epochs="$FBO_PARAM_EPOCHS" -v schedule="$FBO_PARAM_SCHEDULE" '
function uniform() { state = (16807 * state) % 2147483647; return state / 2147483647 }
function normal(   u, v) {
    u = uniform(); v = uniform()
    return sqrt(-2 * log(u + 1e-300)) * cos(6.283185307179586 * v)
}
function draw(n, off,   i, j, z) {
    for (i = 0; i < n; i++) {
        z = bias
        for (j = 0; j < d; j++) { x[off + i, j] = normal(); z += truth[j] * x[off + i, j] }
        y[off + i] = (uniform() < 1 / (1 + exp(-z))) ? 1 : 0
    }
}
BEGIN {
    if (schedule != "constant" && schedule != "decay") {
        print "unknown schedule " schedule > "/dev/stderr"; exit 2
    }
    d = 6; ntrain = 120; nval = 200
    # The agent-specific model: shared weights plus a small per-agent shift.
    state = 12345
    for (j = 0; j < d; j++) base[j] = 1.5 * normal()
    state = 1000 + 7919 * agent
    for (j = 0; j < d; j++) truth[j] = base[j] + 0.4 * normal()
    bias = 0.3 * normal()
    draw(ntrain, 0); draw(nval, ntrain)
    # SGD with L2, in a fixed order so one setting always gives one result.
    for (j = 0; j <= d; j++) w[j] = 0
    for (e = 0; e < epochs; e++) {
        # "decay": the step shrinks as 1 / (1 + epoch).
        rate = schedule == "decay" ? lr / (1 + e) : lr
        for (i = 0; i < ntrain; i++) {
            z = w[d]
            for (j = 0; j < d; j++) z += w[j] * x[i, j]
            g = 1 / (1 + exp(-z)) - y[i]
            for (j = 0; j < d; j++) w[j] -= rate * (g * x[i, j] + l2 * w[j])
            w[d] -= rate * g
        }
    }
    loss = 0
    for (i = ntrain; i < ntrain + nval; i++) {
        z = w[d]
        for (j = 0; j < d; j++) z += w[j] * x[i, j]
        p = 1 / (1 + exp(-z))
        if (p < 1e-12) p = 1e-12
        if (p > 1 - 1e-12) p = 1 - 1e-12
        loss -= y[i] ? log(p) : log(1 - p)
    }
    printf "trained %d epochs (%s step) on %d examples\n", epochs, schedule, ntrain
    printf "{\"metric\": %.10g}\n", loss / nval
}'
