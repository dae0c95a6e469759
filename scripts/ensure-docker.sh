#!/usr/bin/env bash
# Make sure a Docker daemon answers. Where none does: install Debian's docker.io
# (and debootstrap, which the offline image builds need) and start dockerd.
# Also register crun as an extra runtime (the default stays runc): the sandboxes run
# under it when the daemon has it, and under runc, with a warning, when not.
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

# crun: optional, so nothing here stops the script; what is missing is said.
crun_changed=no
setup_crun() {
  if ! command -v crun >/dev/null; then
    if [ "$(id -u)" != 0 ]; then say "crun is missing and installing it needs root: sandboxes will run under runc"; return; fi
    say "installing crun from Debian's archive ..."
    apt-get update -qq || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq crun >/dev/null \
      || { say "crun could not be installed: sandboxes will run under runc"; return; }
  fi
  [ "$(id -u)" = 0 ] || { say "registering crun needs root: sandboxes will run under runc"; return; }
  # A hybrid cgroup host (v1 controllers plus /sys/fs/cgroup/unified): crun refuses to start
  # containers while any controller sits on the v2 side. Mount each such controller (hugetlb,
  # on the VMs here) as a v1 hierarchy; a pure v2 host has no unified/ directory and needs nothing.
  if [ -f /sys/fs/cgroup/unified/cgroup.controllers ]; then
    for controller in $(cat /sys/fs/cgroup/unified/cgroup.controllers); do
      [ -d "/sys/fs/cgroup/$controller" ] && mountpoint -q "/sys/fs/cgroup/$controller" && continue
      mkdir -p "/sys/fs/cgroup/$controller"
      mount -t cgroup -o "$controller" cgroup "/sys/fs/cgroup/$controller" \
        && say "mounted the $controller cgroup controller as v1 (crun needs no controller on the v2 side)" \
        || say "could not mount the $controller cgroup controller as v1: crun may not start containers (runc then)"
    done
  fi
  # Register it in /etc/docker/daemon.json, keeping whatever else the file holds.
  crun_changed=$(python3 - "$(command -v crun)" <<'PY'
import json, os, sys
path = "/etc/docker/daemon.json"
config = json.load(open(path)) if os.path.exists(path) else {}
runtimes = config.setdefault("runtimes", {})
if runtimes.get("crun", {}).get("path") == sys.argv[1]:
    print("no")
else:
    runtimes["crun"] = {"path": sys.argv[1]}
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w") as fh:
        json.dump(config, fh, indent=2)
    os.replace(path + ".tmp", path)
    print("yes")
PY
) || { say "could not register crun in /etc/docker/daemon.json: sandboxes will run under runc"; crun_changed=no; }
}
setup_crun

if docker info >/dev/null 2>&1; then
  say "daemon answers ($(docker version --format '{{.Server.Version}}'))"
  if [ "$crun_changed" = yes ]; then
    # A running daemon reads its runtimes again on SIGHUP (no restart: containers keep running).
    kill -HUP "$(cat /var/run/docker.pid)" 2>/dev/null || say "could not signal dockerd to reload"
    for _ in $(seq 1 10); do
      docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"crun"' && break
      sleep 1
    done
  fi
  docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"crun"' \
    && say "crun is registered (sandboxes use it)" \
    || say "crun is not registered with the daemon: sandboxes run under runc"
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
