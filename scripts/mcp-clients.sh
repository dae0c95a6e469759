#!/usr/bin/env bash
# The MCP clients the client check (tests/integration/clients) drives, from the npm registry:
# the MCP Inspector CLI at the versions in tests/clients/inspector-*/, pinned down to every
# dependency by their package-lock.json. Each is installed once per lock file into the cache
# (~/.cache/cypher-gateway/mcp-clients/<name>-<lock hash>); `make test` runs this. Python's
# fastmcp client is a dev dependency of the venv instead.
set -euo pipefail
cd "$(dirname "$0")/.."

cache=${CYPHER_GATEWAY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cypher-gateway}/mcp-clients
if ! command -v npm >/dev/null; then
  [ "$(id -u)" = 0 ] || { echo "[clients] npm is required for the MCP client check (Debian: apt-get install npm)" >&2; exit 1; }
  echo "[clients] installing nodejs and npm from Debian's archive ..." >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
for dir in tests/clients/inspector-*/; do
  name=$(basename "$dir")
  target="$cache/$name-$(sha256sum "$dir/package-lock.json" | cut -c1-12)"
  [ -e "$target/.installed" ] && continue
  echo "[clients] installing $name (npm ci)" >&2
  rm -rf "$target" && mkdir -p "$target"
  cp "$dir/package.json" "$dir/package-lock.json" "$target/"
  # --ignore-scripts: nothing runs at install time; the CLIs are plain JavaScript.
  (cd "$target" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error 2>&1 | grep -v EBADENGINE >&2 || true)
  [ -d "$target/node_modules/@modelcontextprotocol/inspector" ] || { echo "[clients] npm ci of $name failed" >&2; exit 1; }
  touch "$target/.installed"
done
