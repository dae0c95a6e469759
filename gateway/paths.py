"""Where the project keeps downloads (cache) and running state, outside the work tree.

Both are shared by every checkout on a machine, so a second clone (CI's) reuses
the Maven download and the built base image instead of fetching them again.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


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
