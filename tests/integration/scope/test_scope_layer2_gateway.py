"""Scope layer 2 holds alone: with the rewrite switched off, the sandbox's result check drops
every row that carries a hidden node, relationship or path, counts it in ``redacted`` and the
answer says ``degraded: ["scope:redacted"]``. Through ``gateway.service.Gateway`` with a real
``SandboxRunner`` and the real Neo4j; the controls show the rows really came back from Neo4j
(both layers off) and that layer 1 alone never needs layer 2 (nothing redacted)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gateway.domain import LayerSwitches, Principal, ToolResult
from gateway.policy import load_policy
from gateway.runner import SandboxRunner
from gateway.service import Gateway
from tests.support.graph import labelled_graph, unique_label
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH

POLICY = load_policy(ALL_PROPERTIES_POLICY_PATH)
ALICE = Principal(name="alice", scope=frozenset({"project-a"}))


@pytest.fixture(scope="module")
def label(neo4j_driver: Any, neo4j_connection: Any) -> Iterator[str]:
    """g global ([]), a project-a, b project-b, m malformed (a string); a -> b, g -> a, a SUPERSEDES g."""
    name = unique_label("ScopeL2")
    seed = (
        f"CREATE (g:{name} {{name: 'g', layers: []}}), (a:{name} {{name: 'a', layers: ['project-a']}}), "
        f"(b:{name} {{name: 'b', layers: ['project-b']}}), (:{name} {{name: 'm', layers: 'project-a'}}), "
        "(g)-[:LINK {name: 'g-a', layers: []}]->(a), (a)-[:LINK {name: 'a-b', layers: []}]->(b), "
        "(a)-[:SUPERSEDES {name: 'a-g', layers: []}]->(g)"
    )
    with labelled_graph(neo4j_driver, name, [seed], database=neo4j_connection.database):
        yield name


def gateway(runner: SandboxRunner, **switches: bool) -> Gateway:
    return Gateway(POLICY, runner, layers=LayerSwitches(**switches))


def nodes_named(result: ToolResult) -> list[str]:
    return sorted(row[0]["properties"]["name"] for row in result.rows)


def test_layer2_alone_drops_hidden_nodes_and_says_so(sandbox_runner: SandboxRunner, label: str) -> None:
    cypher = f"MATCH (n:{label}) RETURN n"
    unchecked = gateway(sandbox_runner, scope_rewrite=False, result_check=False).run("analyze", cypher, {}, ALICE)
    assert nodes_named(unchecked) == ["a", "b", "g", "m"]  # Neo4j really returns the hidden ones
    assert unchecked.redacted == 0 and unchecked.degraded == []

    result = gateway(sandbox_runner, scope_rewrite=False).run("analyze", cypher, {}, ALICE)
    assert nodes_named(result) == ["a", "g"]
    assert result.redacted == 2  # b (project-b) and m (malformed layers)
    assert result.rowCount == 2
    assert result.degraded == ["scope:redacted"]


def test_layer2_checks_paths_relationships_and_nested_values(sandbox_runner: SandboxRunner, label: str) -> None:
    switched_off = gateway(sandbox_runner, scope_rewrite=False)
    paths = switched_off.run("analyze", f"MATCH p = (:{label} {{name: 'g'}})-[:LINK*1..2]->() RETURN p", {}, ALICE)
    assert len(paths.rows) == 1 and paths.redacted == 1  # g->a kept, g->a->b dropped
    assert [n["properties"]["name"] for n in paths.rows[0][0]["nodes"]] == ["g", "a"]

    # An untyped traversal from a: a-g is a bookkeeping edge (SUPERSEDES), dropped by its type.
    # a-b is global but ends at the hidden b; only b's id travels with r, so layer 2 cannot judge
    # it and keeps the row: a documented limit (SECURITY.md, layer 5); the rewrite is what stops it.
    rels = switched_off.run("analyze", f"MATCH (:{label} {{name: 'a'}})-[r]->() RETURN r.name, r", {}, ALICE)
    assert [row[0] for row in rels.rows] == ["a-b"]
    assert rels.redacted == 1 and rels.degraded == ["scope:redacted"]
    scoped = gateway(sandbox_runner).run("analyze", f"MATCH (:{label} {{name: 'a'}})-[r]->() RETURN r.name", {}, ALICE)
    assert scoped.rows == [] and scoped.redacted == 0

    nested = switched_off.run(
        "analyze", f"MATCH (n:{label}) RETURN {{inner: [[n]]}} AS wrapped, n.name AS name", {}, ALICE
    )
    assert sorted(row[1] for row in nested.rows) == ["a", "g"]
    assert nested.redacted == 2 and nested.degraded == ["scope:redacted"]


def test_layer1_leaves_nothing_for_layer2(sandbox_runner: SandboxRunner, label: str) -> None:
    both = gateway(sandbox_runner)
    for cypher in (
        f"MATCH (n:{label}) RETURN n",
        f"MATCH p = (:{label})-[*1..2]-() RETURN p",
        f"MATCH (n:{label}) RETURN collect(n) AS ns",
    ):
        result = both.run("analyze", cypher, {}, ALICE)
        assert result.rows, cypher
        assert result.redacted == 0 and result.degraded == [], cypher
