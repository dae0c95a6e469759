"""The sandbox modules ``sandbox/main.py`` loads at start-up import only the standard library
and each other: the result check, the removal of hidden properties (with the projection's rebuilt
elements it asks about) and the tagged-JSON walker run in the first process, which never loads
the driver."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

STANDARD = {"__future__", "collections.abc", "datetime", "re", "typing"}
LIGHT = (
    "sandbox.wire", "sandbox.tagged", "sandbox.scope_check", "sandbox.rule_checks", "sandbox.withhold",
    "sandbox.rebuild",
)  # fmt: skip


@pytest.mark.parametrize("name", LIGHT[1:])
def test_a_light_sandbox_module_imports_only_the_standard_library_and_its_light_siblings(name: str) -> None:
    module = importlib.import_module(name)
    tree = ast.parse(Path(str(module.__file__)).read_text(encoding="utf-8"))
    imported = {
        (n.module or "") if isinstance(n, ast.ImportFrom) else a.name
        for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)
        for a in n.names
    }  # fmt: skip
    assert imported <= STANDARD | set(LIGHT), imported
