# Sourced by the scripts that make a Python virtual environment (test-python.sh,
# test-flower.sh). need_venv WHO: returns once python3 can make one, installing Debian's
# python3 and python3-venv first when run as root with apt-get (saying so); without root it
# says that WHO is skipped and exits 0, since the Python layer is optional.
need_venv() {
    python3 -c 'import venv, ensurepip' >/dev/null 2>&1 && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "$1: installing Debian's python3 and python3-venv (needed to build the package)" >&2
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv >/dev/null
    else
        echo "$1: skipped: no python3 with venv here, and no root to install Debian's python3-venv" >&2
        exit 0
    fi
}
