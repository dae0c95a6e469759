#!/usr/bin/env bash
# Everything the demo and the tests need, from a fresh machine: the venv, the
# Docker daemon, the offline images and the managed Neo4j. Each step is
# idempotent and skips work already done (cached downloads, hashed images).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { echo "==> $* ($(date +%H:%M:%S))" >&2; }
started=$(date +%s)

step "Python venv (.venv)"
python=${PYTHON:-python3.11}
command -v "$python" >/dev/null || python=python3
[ -x .venv/bin/python ] || "$python" -m venv .venv
stamp=.venv/.installed-$(sha256sum pyproject.toml | cut -c1-12)
if [ ! -e "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e '.[dev]'
  rm -f .venv/.installed-* && touch "$stamp"
fi

step "Docker daemon"
bash scripts/ensure-docker.sh

step "Images (offline: debootstrap base, sandbox, neo4j)"
.venv/bin/cypher-gateway images build >/dev/null

step "Managed Neo4j"
.venv/bin/cypher-gateway neo4j start >/dev/null

echo "==> set-up done in $(( $(date +%s) - started )) s" >&2
