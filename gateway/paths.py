"""Where the project's files are: the ones it ships, its downloads (cache) and its running state.

Shipped files (the default policy, the image definitions and build scripts, the Neo4j pom)
are package data under ``gateway/resources/``, read with :mod:`importlib.resources`, so an
installed wheel finds them exactly as a checkout does. In a checkout ``gateway/resources/``
holds symlinks to the repository's own ``policies/`` and ``docker/`` (the copies a reader
audits); building the wheel copies those same files into the package.

The cache and the state directory are outside the work tree and shared by every checkout
and installation on a machine, so a second clone (CI's) or an installed wheel reuses the
Maven download and the built base image instead of fetching them again.
"""

from __future__ import annotations

import os
from importlib.resources import files
from pathlib import Path

from gateway.errors import SetupError


def _installed_path(package: str, *parts: str) -> Path:
    found = files(package).joinpath(*parts)
    # pip, pipx and uv unpack wheels onto the file system; a zip import could not hand
    # these files to docker, bash or Maven.
    if not isinstance(found, Path):
        raise SetupError(f"{package} is not installed on the file system ({found}); reinstall it with pip or pipx")
    return found


def resource(*parts: str) -> Path:
    """A file or folder shipped under ``gateway/resources/`` (``resource("policies", "default.yaml")``)."""
    return _installed_path("gateway", "resources", *parts)


def sandbox_package() -> Path:
    """The ``sandbox`` package's folder: the program copied into the sandbox image."""
    return _installed_path("sandbox")


def cache_dir() -> Path:
    base = (
        os.environ.get("CYPHER_GATEWAY_CACHE")
        or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cypher-gateway"
    )
    path = Path(base)
    path.mkdir(parents=True, exist_ok=True)
    return path


def state_dir() -> Path:
    base = (
        os.environ.get("CYPHER_GATEWAY_STATE")
        or Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "cypher-gateway"
    )
    path = Path(base)
    path.mkdir(parents=True, exist_ok=True)
    return path
