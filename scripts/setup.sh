#!/usr/bin/env bash
# Installs what fbo needs beyond Rust: the system OpenBLAS (with LAPACK) that ndarray-linalg
# links against. Safe to run repeatedly: it does nothing when the library is already there.
set -euo pipefail

have_openblas() {
    # The linker needs the unversioned libopenblas.so that the -dev package provides.
    ldconfig -p 2>/dev/null | grep -q 'libopenblas\.so ' ||
        ls /usr/lib/*/libopenblas.so /usr/lib/libopenblas.so >/dev/null 2>&1
}

if have_openblas; then
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    cat >&2 <<'MSG'
setup: OpenBLAS is missing and this is not a Debian-like system (no apt-get), so this script
cannot install it. Install the OpenBLAS development package yourself (for example
`dnf install openblas-devel` on Fedora, `pacman -S openblas` on Arch, `brew install openblas`
on macOS), then run the command again.
MSG
    exit 1
fi

if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO="sudo -n"
else
    cat >&2 <<'MSG'
setup: OpenBLAS is missing and this script needs root to install it, which it does not have
(not root, and no password-less sudo). Run, as root:
    apt-get update && apt-get install -y libopenblas-dev pkg-config
then run the command again.
MSG
    exit 1
fi

echo "setup: installing libopenblas-dev and pkg-config with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq libopenblas-dev pkg-config >/dev/null
have_openblas || { echo "setup: apt-get finished but libopenblas.so is still not found" >&2; exit 1; }
