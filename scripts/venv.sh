#!/usr/bin/env bash
# The Python venv (.venv) with the package and its dev extras; reinstalled only when
# pyproject.toml changes. The whole of `make unit`'s set-up, and the first step of setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3.11}
command -v "$python" >/dev/null || python=python3
[ -x .venv/bin/python ] || "$python" -m venv .venv
stamp=.venv/.installed-$(sha256sum pyproject.toml | cut -c1-12)
if [ ! -e "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e '.[dev]'
  rm -f .venv/.installed-* && touch "$stamp"
fi
