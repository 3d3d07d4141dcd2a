#!/bin/sh
# wh bundle bootstrap (Linux/macOS): needs only Python, never the network.
#   sh install.sh [VENV] [--trust KEY.pub | --allow-unsigned]
#       install the bundle's lock into VENV (created if missing; default ./venv); the options
#       after VENV go to `wh install`: a bundle installs only when a trusted key signed it,
#       or with --allow-unsigned.
# Environment: PYTHON (interpreter to create venvs with, default python3),
#              WH_VENV (where wh itself is installed, default <bundle>/.wh-venv).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
# the bundle's target Python (python-version=3.X in bundle.txt), else python3
PY_VERSION=$(sed -n 's/^python-version=//p' "$HERE/bundle.txt")
if [ -z "${PYTHON:-}" ] && [ -n "$PY_VERSION" ] && command -v "python$PY_VERSION" >/dev/null 2>&1; then
    PYTHON="python$PY_VERSION"
fi
PYTHON=${PYTHON:-python3}
TARGET=${1:-$HERE/venv}
if [ "$#" -gt 0 ]; then shift; fi
WH_VENV=${WH_VENV:-$HERE/.wh-venv}
WH_VERSION=$(sed -n 's/^wh-version=//p' "$HERE/bundle.txt")

# No configured index, proxy or constraint may interfere: everything comes from the bundle.
export PIP_CONFIG_FILE=/dev/null PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1
unset PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_FIND_LINKS PIP_CONSTRAINT || true

if [ ! -x "$WH_VENV/bin/wh" ]; then
    echo "installing wh $WH_VERSION into $WH_VENV (from the bundle, offline)"
    "$PYTHON" -m venv "$WH_VENV"
    "$WH_VENV/bin/python" -m pip install --quiet --isolated --no-index \
        --find-links "$HERE/wh" "wh==$WH_VERSION"
fi
if [ ! -x "$TARGET/bin/python" ]; then
    echo "creating the target environment $TARGET"
    "$PYTHON" -m venv "$TARGET"
fi
exec "$WH_VENV/bin/wh" install --locked --bundle "$HERE" --python "$TARGET/bin/python" "$@"
