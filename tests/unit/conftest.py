"""The unit tests: no Docker, no Neo4j, no server process. They run in seconds (`make unit`).

The service fixtures live in tests/integration/conftest.py, out of reach from here; a test
that needs a service belongs under tests/integration/. A unit test marked ``integration``
is an error rather than a test `make unit` would quietly run against nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    misplaced = [i.nodeid for i in items if i.path.is_relative_to(HERE) and i.get_closest_marker("integration")]
    if misplaced:
        raise pytest.UsageError(f"integration tests under tests/unit/ (move them to tests/integration/): {misplaced}")
