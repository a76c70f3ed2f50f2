#!/usr/bin/env bash
# The Python package (python/, PyO3 + maturin): builds it from source with `pip install
# ./python` into a virtual environment of its own (every Python dependency pinned in
# python/requirements-test.txt, fetched from the Python package registry), then runs its tests
# (python/tests): the same bytes as fbo run by every road, journals that resume, bad messages
# rejected. Installs Debian's python3 and python3-venv first if the machine has no python3
# with venv (saying so). FBO_PY_VENV names the environment (default target/py-venv).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
need_venv test-python
VENV="${FBO_PY_VENV:-target/py-venv}"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --disable-pip-version-check -r python/requirements-test.txt
echo "test-python: building the package (pip install ./python; a first build takes 3-5 minutes) ..." >&2
CARGO_TARGET_DIR="$PWD/target/python" "$VENV/bin/pip" install -q --disable-pip-version-check ./python
"$VENV/bin/python" -m pytest -q python/tests
