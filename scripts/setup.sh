#!/usr/bin/env bash
# Installs what fbo needs beyond Rust. Today that is nothing: fbo links no system library (its
# dense linear algebra is plain Rust, so that results do not depend on the CPU: see
# src/linalg.rs). This script stays the one place a system dependency would be installed, and
# stops early with a clear message when Rust itself is missing.
set -euo pipefail
if ! command -v cargo >/dev/null 2>&1; then
    echo "setup: cargo is not on PATH; install Rust first (https://rustup.rs), then rerun" >&2
    exit 1
fi
