#!/usr/bin/env bash
# The Python package (python/, PyO3 + maturin): builds it from source with `pip install
# ./python` into a virtual environment of its own (every Python dependency pinned in
# python/requirements-test.txt, fetched from the Python package registry), then runs its tests
# (python/tests): the same bytes as fbo run by every road, journals that resume, bad messages
# rejected. Installs Debian's python3 and python3-venv first if the machine has no python3
# with venv (saying so). FBO_PY_VENV names the environment (default target/py-venv).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "test-python: installing Debian's python3 and python3-venv (needed to build the package)" >&2
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv >/dev/null
    else
        echo "test-python: skipped: no python3 with venv here, and no root to install Debian's python3-venv" >&2
        exit 0
    fi
fi
VENV="${FBO_PY_VENV:-target/py-venv}"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --disable-pip-version-check -r python/requirements-test.txt
echo "test-python: building the package (pip install ./python; a first build takes 3-5 minutes) ..." >&2
CARGO_TARGET_DIR="$PWD/target/python" "$VENV/bin/pip" install -q --disable-pip-version-check ./python
"$VENV/bin/python" -m pytest -q python/tests
