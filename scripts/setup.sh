#!/usr/bin/env bash
# Everything the demo and the tests need, from a fresh machine: the venv, the
# Docker daemon, the offline images and the managed Neo4j. Each step is
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

step "Managed Neo4j"
.venv/bin/cypher-gateway neo4j start >/dev/null

echo "==> set-up done in $(( $(date +%s) - started )) s" >&2
