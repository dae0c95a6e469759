"""Fail closed: an element without the scope property is hidden, not global.

The leak this stops: with the shipped policy on a graph that never carried ``layers`` (a writer
bug, a renamed property, a graph scoped some other way), an agent with an empty scope read
everything. Through ``Gateway`` with a real sandbox and Neo4j, with each layer alone too.
Global is said explicitly, by an empty list.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gateway.domain import LayerSwitches, Principal
from gateway.policy import load_policy
from gateway.runner import SandboxRunner
from gateway.scope.predicates import Predicates
from gateway.service import Gateway
from tests.support.graph import labelled_graph, unique_label
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH

pytestmark = pytest.mark.neo4j2026

POLICY = load_policy(ALL_PROPERTIES_POLICY_PATH)
NOBODY = Principal(name="empty-scope", scope=frozenset())
SCOPED = Principal(name="scoped", scope=frozenset({"secret"}))


@pytest.fixture(scope="module")
def untagged(neo4j_driver: Any, neo4j_connection: Any) -> Iterator[str]:
    """A graph with no scope property anywhere, plus malformed values and one explicit global node."""
    name = unique_label("Untagged")
    seed = (
        f"CREATE (s:{name} {{name: 'secret-task'}}), (a:{name} {{name: 'attempt'}}), "
        f"(:{name} {{name: 'as-string', layers: 'secret'}}), (:{name} {{name: 'ints', layers: [1, 2]}}), "
        f"(g:{name} {{name: 'global', layers: []}}), (s)-[:HAS_ATTEMPT]->(a), (g)-[:LINK]->(s)"
    )
    with labelled_graph(neo4j_driver, name, [seed], database=neo4j_connection.database):
        yield name


@pytest.mark.parametrize("principal", [NOBODY, SCOPED], ids=["empty-scope", "scoped"])
@pytest.mark.parametrize(
    "switches", [{}, {"scope_rewrite": False}, {"result_check": False}], ids=["both", "layer2-only", "layer1-only"]
)
def test_untagged_and_malformed_elements_are_hidden(
    sandbox_runner: SandboxRunner, untagged: str, principal: Principal, switches: dict[str, bool]
) -> None:
    gateway = Gateway(POLICY, sandbox_runner, layers=LayerSwitches(**switches))
    nodes = gateway.run("analyze", f"MATCH (n:{untagged}) RETURN n.name AS name, n", {}, principal)
    assert [row[0] for row in nodes.rows] == ["global"]
    paths = gateway.run("analyze", f"MATCH p = (:{untagged})-[*1..2]->() RETURN p", {}, principal)
    assert paths.rows == []


def test_an_aggregate_counts_only_the_explicit_global_element(sandbox_runner: SandboxRunner, untagged: str) -> None:
    # The reported leak: count(e), collect(e.name) over untagged elements answered everything.
    gateway = Gateway(POLICY, sandbox_runner)
    result = gateway.run("analyze", f"MATCH (e:{untagged}) RETURN count(e), collect(e.name)", {}, NOBODY)
    assert result.rows == [[1, ["global"]]] and result.degraded == []


def test_untagged_global_is_an_explicit_opt_in(sandbox_runner: SandboxRunner, untagged: str) -> None:
    opted_in = POLICY.model_copy(update={"scope": POLICY.scope.model_copy(update={"untagged": "global"})})
    for switches in ({}, {"scope_rewrite": False}):
        gateway = Gateway(opted_in, sandbox_runner, layers=LayerSwitches(**switches))
        result = gateway.run("analyze", f"MATCH (n:{untagged}) RETURN n.name, n ORDER BY n.name", {}, NOBODY)
        # Missing is global again; malformed stays hidden whatever the setting.
        assert [row[0] for row in result.rows] == ["attempt", "global", "secret-task"]


@pytest.mark.parametrize(
    ("layers", "visible"),
    [
        (None, False),  # missing
        ([], True),  # global, explicitly
        (["secret"], True),
        (["other"], False),
        ("secret", False),  # a string, not a list
        ([1], False),  # a list with a non-string
        (["secret", 1], False),
        (["secret", None], False),  # a list holding a null (only a value, never a stored property, can)
        ([None], False),
        ([["secret"]], False),
        (True, False),
    ],
)
def test_the_predicate_on_neo4j(neo4j_driver: Any, layers: Any, visible: bool) -> None:
    for untagged_global in (False, True):
        predicates = Predicates("layers", "__gw_scope", (), untagged_global)
        records, _, _ = neo4j_driver.execute_query(
            f"RETURN {predicates.visible('$element')} AS v", {"element": {"layers": layers}, "__gw_scope": ["secret"]}
        )
        assert records[0]["v"] is (visible or (untagged_global and layers is None)), (layers, untagged_global)
