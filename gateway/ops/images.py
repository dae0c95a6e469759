"""Offline image builds: a debootstrap base, the sandbox image and a Neo4j image.

No registry is reachable, so nothing is pulled. A base root filesystem is made
with ``debootstrap --variant=minbase`` and ``docker import``-ed; the Dockerfiles
on top only COPY and RUN offline (the sandbox installs from a wheelhouse).
Every tag is a content hash of what went into the image (the sandbox's and the
bases' in :mod:`gateway.image_tag`, which ``serve`` reads without this module).

``cypher-gateway images build`` builds what is missing; ``images list`` shows tags.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from gateway import managed_neo4j
from gateway.errors import SetupError
from gateway.image_tag import (
    IMAGE_PREFIX,
    Input,
    Variant,
    base_image_tag,
    digest,
    docker_file,
    file_parts,
    sandbox_image_tag,
)
from gateway.ops import neo4j_local
from gateway.paths import cache_dir, resource, sandbox_package


class ImageBuildError(SetupError):
    """An image could not be built; the message carries the failing step's output."""


def _say(message: str) -> None:
    print(f"[image] {message}", file=sys.stderr, flush=True)


def _neo4j_inputs() -> list[Input]:
    return [
        docker_file("neo4j", "Dockerfile"),
        docker_file("neo4j", "entrypoint.sh"),
        ("docker/neo4j/pom.xml", managed_neo4j.pom_path()),
        # render_conf() writes the image's neo4j.conf, with its release line's extra lines
        ("gateway/ops/neo4j_local.py", Path(neo4j_local.__file__)),
        ("gateway/managed_neo4j.py", Path(managed_neo4j.__file__)),
    ]


def neo4j_image_tag(line: managed_neo4j.ServerLine | None = None) -> str:
    """The tag of the Neo4j image of ``line`` (default: the selected line); each line has its own repository."""
    line = line or managed_neo4j.line_for()
    parts = [base_image_tag(line.image_base).encode(), managed_neo4j.neo4j_version(line).encode()]
    return f"{IMAGE_PREFIX}/{line.image_repository}:{digest([*parts, *file_parts(_neo4j_inputs())])}"


# --- docker helpers ----------------------------------------------------------------------------------


def _docker(*args: str, input_path: Path | None = None, quiet: bool = False) -> str:
    if shutil.which("docker") is None:
        raise ImageBuildError("the `docker` CLI is not on PATH; run scripts/ensure-docker.sh")
    stdin = input_path.open("rb") if input_path else None
    try:
        result = subprocess.run(["docker", *args], stdin=stdin, capture_output=True, text=True, check=False)
    finally:
        if stdin:
            stdin.close()
    if result.returncode != 0:
        if quiet:
            return ""
        raise ImageBuildError(f"docker {' '.join(args[:2])} failed: {result.stderr.strip()[-2000:]}")
    return result.stdout


def image_exists(tag: str) -> bool:
    result = subprocess.run(["docker", "image", "inspect", tag], capture_output=True, check=False)
    return result.returncode == 0


def _build(tag: str, context: Path, build_args: dict[str, str]) -> None:
    command = ["docker", "build", "--network", "none", "-t", tag]
    for key, value in build_args.items():
        command += ["--build-arg", f"{key}={value}"]
    command.append(str(context))
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    tail: list[str] = []
    assert process.stdout is not None
    for line in process.stdout:
        tail = [*tail[-40:], line.rstrip()]
        if line.startswith("Step "):
            _say(f"  {line.strip()[:120]}")
    if process.wait() != 0:
        raise ImageBuildError(f"docker build of {tag} failed:\n" + "\n".join(tail))
    _say(f"built {tag} in {time.monotonic() - started:.0f} s ({image_size_mb(tag):.0f} MB)")
    _prune_older(tag)


# Several checkouts on one host share Docker's image store, each building its own content-hash tag:
# pruning every other tag at build time would delete an image another checkout is using right now.
# Only tags unused for this long are removed.
PRUNE_AFTER = timedelta(days=7)


def _prune_older(tag: str) -> None:
    """Remove earlier content-hash tags of the same image created over PRUNE_AFTER ago."""
    repository = tag.rsplit(":", 1)[0]
    listed = _docker("images", "--format", "{{.Repository}}:{{.Tag}}", repository, quiet=True).split()
    now = datetime.now(UTC)
    for other in (line for line in listed if line != tag):
        created = _docker("image", "inspect", "--format", "{{.Created}}", other, quiet=True).strip()
        if is_stale(created, now):
            _docker("rmi", other, quiet=True)


def is_stale(created: str, now: datetime) -> bool:
    """Whether an image created at `created` (Docker's RFC 3339 with nanoseconds) may be pruned."""
    try:
        when = datetime.fromisoformat(re.sub(r"(\.\d{6})\d*", r"\1", created).replace("Z", "+00:00"))
    except ValueError:
        return False
    return now - when > PRUNE_AFTER


def image_size_mb(tag: str) -> float:
    out = _docker("image", "inspect", "--format", "{{.Size}}", tag, quiet=True).strip()
    return int(out) / 1e6 if out.isdigit() else 0.0


# --- builds ------------------------------------------------------------------------------------------


def ensure_base(variant: Variant) -> str:
    tag = base_image_tag(variant)
    if image_exists(tag):
        return tag
    tarball = cache_dir() / "rootfs" / f"{tag.split('/')[-1].replace(':', '-')}.tar"
    tarball.parent.mkdir(parents=True, exist_ok=True)
    if not tarball.exists():
        result = subprocess.run(["bash", str(resource("docker", "base", "rootfs.sh")), variant, str(tarball)],
                                check=False)  # fmt: skip
        if result.returncode != 0:
            raise ImageBuildError(f"debootstrap of the {variant} base failed (see the output above)")
    _say(f"docker import {tarball.name} as {tag}")
    _docker("import", "--change", 'CMD ["/bin/bash"]', "-", tag, input_path=tarball)
    return tag


def _pip() -> list[str]:
    """A pip to download with: this interpreter's, else one on PATH (a uv tool environment has none)."""
    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip"]
    for name in ("pip3", "pip"):
        found = shutil.which(name)
        if found:
            return [found]
    raise ImageBuildError(
        "downloading the sandbox's wheels needs pip, and this environment has none: "
        "install pip (Debian: apt-get install python3-pip), or install cypher-gateway with pipx or pip"
    )


def _wheelhouse() -> Path:
    requirements = resource("docker", "sandbox", "requirements.txt")
    target = cache_dir() / f"wheelhouse-{digest([requirements.read_bytes()])}"
    if (target / ".complete").exists():
        return target
    _say("downloading the sandbox's wheels (neo4j, httpx, ijson) from PyPI ...")
    shutil.rmtree(target, ignore_errors=True)
    result = subprocess.run(
        [*_pip(), "download", "-q", "--only-binary=:all:", "--python-version", "3.11",
         "--implementation", "cp", "--platform", "manylinux2014_x86_64", "--platform", "manylinux_2_17_x86_64",
         "-d", str(target), "-r", str(requirements)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if result.returncode != 0:
        raise ImageBuildError(f"pip download of the sandbox wheels failed: {result.stderr.strip()[-2000:]}")
    (target / ".complete").write_text("ok\n", encoding="utf-8")
    return target


def ensure_sandbox_image() -> str:
    tag = sandbox_image_tag()
    if image_exists(tag):
        return tag
    base = ensure_base("python")
    with tempfile.TemporaryDirectory(prefix="cgw-sandbox-ctx-") as tmp:
        context = Path(tmp)
        shutil.copy(resource("docker", "sandbox", "Dockerfile"), context / "Dockerfile")
        shutil.copy(resource("docker", "sandbox", "requirements.txt"), context / "requirements.txt")
        shutil.copytree(_wheelhouse(), context / "wheels", ignore=shutil.ignore_patterns(".complete"))
        shutil.copytree(sandbox_package(), context / "sandbox", ignore=shutil.ignore_patterns("__pycache__"))
        _say(f"building {tag} on {base}")
        _build(tag, context, {"BASE": base})
    return tag


def ensure_neo4j_image(line: managed_neo4j.ServerLine | None = None) -> str:
    line = line or managed_neo4j.line_for()
    tag = neo4j_image_tag(line)
    if image_exists(tag):
        return tag
    base = ensure_base(line.image_base)
    lib = neo4j_local.fetch_neo4j(line)
    with tempfile.TemporaryDirectory(prefix="cgw-neo4j-ctx-") as tmp:
        context = Path(tmp)
        shutil.copy(resource("docker", "neo4j", "Dockerfile"), context / "Dockerfile")
        shutil.copy(resource("docker", "neo4j", "entrypoint.sh"), context / "entrypoint.sh")
        # The image's ENTRYPOINT: executable whatever mode the installer gave the shipped copy.
        (context / "entrypoint.sh").chmod(0o755)
        shutil.copytree(lib, context / "lib", ignore=shutil.ignore_patterns(".complete"))
        (context / "neo4j.conf").write_text(
            neo4j_local.render_conf(listen="0.0.0.0", bolt=7687, http=7474, line=line), encoding="utf-8"
        )
        _say(f"building {tag} on {base}")
        _build(tag, context, {"BASE": base})
    return tag


def ensure_images(which: Iterable[str] = ("sandbox", "neo4j")) -> dict[str, str]:
    """Build every missing image; returns name -> tag."""
    builders = {"sandbox": ensure_sandbox_image, "neo4j": ensure_neo4j_image}
    return {name: builders[name]() for name in which}


# --- CLI ---------------------------------------------------------------------------------------------


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("images", help="build the sandbox and Neo4j images offline")
    actions = parser.add_subparsers(dest="images_action", required=True, metavar="ACTION")
    build = actions.add_parser("build", help="build every missing image (skips unchanged ones)")
    build.add_argument("names", nargs="*", metavar="NAME", help="sandbox and/or neo4j (default: both)")
    actions.add_parser("list", help="print the content-hash tags and whether each is built")
    parser.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    try:
        if args.images_action == "build":
            unknown = sorted(set(args.names) - {"sandbox", "neo4j"})
            if unknown:
                print(f"cypher-gateway images build: unknown image {', '.join(unknown)}", file=sys.stderr)
                return 2
            print(json.dumps(ensure_images(args.names or ["sandbox", "neo4j"])))
            return 0
        tags = {"sandbox": sandbox_image_tag(), "neo4j": neo4j_image_tag()}
        for name, tag in tags.items():
            print(f"{name:8} {tag:40} {'built' if image_exists(tag) else 'missing'}")
        return 0
    except ImageBuildError as exc:
        print(f"cypher-gateway images: {exc}", file=sys.stderr)
        return 1
