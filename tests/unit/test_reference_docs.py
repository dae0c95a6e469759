"""The reference a reviewer reads matches the code: every module in docs/architecture.md's table,
every exception class of the tree in gateway/errors.py's docstring."""

from __future__ import annotations

import importlib
import pkgutil

import gateway
import sandbox
from gateway.cypher import CypherSyntaxError
from gateway.errors import GatewayError, SetupError
from tests.support.paths import REPO

ARCHITECTURE = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")


def _listed(path: str) -> bool:
    """Named whole, or by file name on a line that names its folder (`gateway/scope/` ... `calls.py`)."""
    folder, _, name = path.rpartition("/")
    if f"`{path}`" in ARCHITECTURE:
        return True
    lines = [line for line in ARCHITECTURE.splitlines() if line.startswith("|") and f"{folder}/" in line]
    return any((name == "__init__.py" and f"`{folder}/`" in line) or f"`{name}`" in line for line in lines)


def test_every_module_is_in_the_architecture_table() -> None:
    modules = sorted(
        p.relative_to(REPO).as_posix() for root in ("gateway", "sandbox") for p in (REPO / root).rglob("*.py")
    )
    assert len(modules) > 60
    missing = [m for m in modules if not _listed(m) and m not in ("gateway/__init__.py", "sandbox/__init__.py")]
    assert missing == []


def _subclasses(base: type) -> set[type]:
    found: set[type] = set(base.__subclasses__())
    for sub in list(found):
        found |= _subclasses(sub)
    return found


def test_the_error_tree_names_every_caller_and_setup_error() -> None:
    for package in (gateway, sandbox):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            importlib.import_module(info.name)
    tree = gateway.errors.__doc__ or ""
    classes = _subclasses(GatewayError) | _subclasses(SetupError) | _subclasses(CypherSyntaxError)
    assert len(classes) >= 15
    assert sorted(c.__name__ for c in classes if f"── {c.__name__} " not in tree) == []
