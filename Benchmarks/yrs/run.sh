#!/usr/bin/env bash
# The Yrs side of converge-bench's map workloads: makes its own virtual environment with
# pycrdt (Python bindings for Yrs) from PyPI, at the pinned version, and runs run.py in it.
# A development tool only: nothing of it is a dependency of the Converge package.
#
#   bash Benchmarks/yrs/run.sh [--repetitions N] [--only b1,b2,b3.1,b3.3,b3.4]
#
# Prints one JSON object on standard output (see run.py); progress and errors go to
# standard error. The environment lives in .build/yrs-venv (CONVERGE_YRS_VENV overrides).
set -euo pipefail
PYCRDT_VERSION=0.14.13
here="$(cd "$(dirname "$0")" && pwd)"
venv="${CONVERGE_YRS_VENV:-$here/../../.build/yrs-venv}"
python="${PYTHON:-python3}"

command -v "$python" >/dev/null || { echo "run.sh: $python not found: install Python 3 to run the Yrs side" >&2; exit 3; }
if [ ! -x "$venv/bin/python" ]; then
  echo "run.sh: making a virtual environment in $venv" >&2
  "$python" -m venv "$venv" >&2 || { echo "run.sh: could not make a virtual environment (on Debian: apt-get install python3-venv)" >&2; exit 3; }
fi
if [ "$("$venv/bin/python" -c 'import pycrdt; print(pycrdt.__version__)' 2>/dev/null || true)" != "$PYCRDT_VERSION" ]; then
  echo "run.sh: installing pycrdt==$PYCRDT_VERSION" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "pycrdt==$PYCRDT_VERSION" >&2 \
    || { echo "run.sh: could not install pycrdt==$PYCRDT_VERSION from PyPI" >&2; exit 3; }
fi
exec "$venv/bin/python" "$here/run.py" "$@"
