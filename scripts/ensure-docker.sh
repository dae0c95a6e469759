#!/usr/bin/env bash
# Make sure a Docker daemon answers. Where none does: install Debian's docker.io
# (and debootstrap, which the offline image builds need) and start dockerd.
set -euo pipefail

log=${DOCKERD_LOG:-/var/log/cypher-gateway-dockerd.log}
say() { echo "[docker] $*" >&2; }

need_pkgs=()
command -v dockerd >/dev/null || need_pkgs+=(docker.io)
command -v debootstrap >/dev/null || need_pkgs+=(debootstrap)
command -v iptables >/dev/null || need_pkgs+=(iptables)
if [ ${#need_pkgs[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || { say "need root to install ${need_pkgs[*]}"; exit 1; }
  say "installing ${need_pkgs[*]} from Debian's archive ..."
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi

if docker info >/dev/null 2>&1; then
  say "daemon answers ($(docker version --format '{{.Server.Version}}'))"
  exit 0
fi

[ "$(id -u)" = 0 ] || { say "no Docker daemon answers and starting one needs root"; exit 1; }
say "starting dockerd (log: $log) ..."
nohup dockerd >"$log" 2>&1 &
for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then
    say "daemon up ($(docker version --format '{{.Server.Version}}'))"
    exit 0
  fi
  sleep 1
done
say "dockerd did not answer within 60 s; last lines of $log:"
tail -n 20 "$log" >&2
exit 1
