#!/usr/bin/env bash
# Build a minimal Debian bookworm root filesystem as a tarball for `docker import`.
# Nothing is pulled from a container registry: debootstrap fetches .deb files
# from the same Debian archive apt uses on this machine.
#   usage: rootfs.sh python|java|java21 OUT.tar
set -euo pipefail
variant=${1:?variant: python, java or java21}
out=${2:?output tarball}
suite=bookworm

case "$variant" in
  python) include="python3,python3-pip,ca-certificates" ;;
  # Neo4j as a container: Java 17 for the server, bash for the entrypoint.
  java) include="openjdk-17-jre-headless,ca-certificates,bash,procps" ;;
  # Neo4j 2026.x needs Java 21+, which bookworm does not package; trixie (same archive) does.
  java21) include="openjdk-21-jre-headless,ca-certificates,bash,procps"; suite=trixie ;;
  *) echo "rootfs.sh: unknown variant $variant" >&2; exit 2 ;;
esac

command -v debootstrap >/dev/null || { echo "rootfs.sh: debootstrap missing (apt-get install debootstrap)" >&2; exit 1; }

# The archive apt already uses here (deb822 or one-line sources).
mirror=$(grep -hE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | grep -v security | head -n1 || true)
[ -n "$mirror" ] || mirror=$(grep -hE '^deb ' /etc/apt/sources.list 2>/dev/null | awk '{print $2}' | head -n1 || true)
[ -n "$mirror" ] || { echo "rootfs.sh: cannot find a Debian mirror in /etc/apt/sources*" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/cgw-rootfs.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "[image] debootstrap --variant=minbase $suite ($variant: $include) from $mirror ..." >&2
started=$(date +%s)
# Some openjdk postinst steps need /proc; debootstrap mounts it itself.
debootstrap --variant=minbase --include="$include" "$suite" "$work/root" "$mirror" \
  > "$work/debootstrap.log" 2>&1 || { tail -n 40 "$work/debootstrap.log" >&2; exit 1; }
# Smaller image, nothing left that could fetch packages at run time.
chroot "$work/root" apt-get clean
rm -rf "$work/root"/var/lib/apt/lists/* "$work/root"/var/cache/apt/*.bin \
       "$work/root"/usr/share/doc/* "$work/root"/usr/share/man/* "$work/root"/usr/share/locale/*
tar --numeric-owner -C "$work/root" -cf "$out.partial" .
mv "$out.partial" "$out"
echo "[image] rootfs $variant: $(du -h "$out" | cut -f1) in $(( $(date +%s) - started )) s" >&2
