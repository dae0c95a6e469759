"""A Neo4j runtime error must not carry a property value out past the scope.

Neo4j does not promise to evaluate the scope predicate before the agent's own
expressions, so a conversion error could quote a hidden element's value.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.domain import Principal
from gateway.errors import Neo4jRefused
from gateway.policy import load_policy
from gateway.runner import SandboxRunner
from gateway.service import Gateway
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH


@pytest.fixture()
def dated(neo4j_driver: Any) -> Iterator[str]:
    label = f"ErrLeak_{uuid.uuid4().hex[:8]}"
    neo4j_driver.execute_query(f"CREATE (:`{label}` {{text: 'value-in-the-error-42', layers: []}})")
    yield label
    neo4j_driver.execute_query(f"MATCH (n:`{label}`) DETACH DELETE n")


def test_a_runtime_error_through_the_real_sandbox_quotes_no_value(sandbox_runner: SandboxRunner, dated: str) -> None:
    gateway = Gateway(load_policy(ALL_PROPERTIES_POLICY_PATH), sandbox_runner)
    with pytest.raises(Neo4jRefused) as refused:
        gateway.run("analyze", f"MATCH (n:`{dated}`) RETURN date(n.text) AS d", {}, Principal(name="t"))
    assert refused.value.message.startswith("Neo4j refused the query: ")
    assert "value-in-the-error-42" not in refused.value.message
    assert refused.value.neo4j_code
