"""GQL path selectors and the Cypher 5 families through the product path: Gateway -> sandbox -> Neo4j.

The graph: a -> h -> b is the shortest path, but h is in project-b; a -> v1 -> v2 -> b is longer
and visible to project-a. A selector chooses among the paths its pattern matches before the
MATCH's WHERE filters them, so a filter there would leave nothing (and the empty answer would
tell the agent that a hidden shorter path exists). The scope predicate inside the selector's
parenthesised pattern makes the selector choose among visible paths only.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gateway.domain import Principal
from gateway.service import Gateway
from tests.support.graph import labelled_graph, unique_label

pytestmark = pytest.mark.neo4j2026  # runs on 5.26 and again on 2026.x

AGENT_A = Principal(name="agent-a", scope=frozenset({"project-a"}))
AGENT_B = Principal(name="agent-b", scope=frozenset({"project-b"}))


@pytest.fixture(scope="module")
def graph(neo4j_driver: Any) -> Iterator[str]:
    label = unique_label("Selector")
    seed = [
        f"CREATE (a:{label} {{name: 'a', layers: []}}), (h:{label} {{name: 'h', layers: ['project-b']}}), "
        f"(b:{label} {{name: 'b', layers: []}}), (v1:{label} {{name: 'v1', layers: ['project-a']}}), "
        f"(v2:{label} {{name: 'v2', layers: []}}), "
        "(a)-[:R {layers: []}]->(h)-[:R {layers: []}]->(b), "
        "(a)-[:R {layers: []}]->(v1)-[:R {layers: []}]->(v2)-[:R {layers: []}]->(b)"
    ]
    with labelled_graph(neo4j_driver, label, seed, database="neo4j"):
        yield label


@pytest.mark.parametrize(
    "selector", ["ANY SHORTEST", "SHORTEST 1", "ALL SHORTEST", "SHORTEST 1 GROUP", "ANY", "ANY 1 PATHS"]
)
def test_a_selector_chooses_among_visible_paths_only(gateway: Gateway, graph: str, selector: str) -> None:
    query = (
        f"MATCH p = {selector} (x:{graph} {{name: 'a'}})-[:R]->{{1,4}}(y:{graph} {{name: 'b'}}) "
        "RETURN [n IN nodes(p) | n.name] AS names"
    )
    result = gateway.run("analyze", query, {}, AGENT_A)
    # ANY may pick any visible path; here only one exists, and never one through h.
    assert result.rows == [[["a", "v1", "v2", "b"]]], result.rows
    other = gateway.run("analyze", query, {}, AGENT_B)
    assert other.rows == [[["a", "h", "b"]]], other.rows


def test_a_named_group_after_a_selector_is_scoped_in_its_own_where(gateway: Gateway, graph: str) -> None:
    query = (
        f"MATCH ALL SHORTEST (q = (x:{graph} {{name: 'a'}})-[:R]->{{1,4}}(y:{graph} {{name: 'b'}}) "
        "WHERE length(q) > 1) RETURN length(q) AS hops"
    )
    assert gateway.run("analyze", query, {}, AGENT_A).rows == [[3]]


def test_the_cypher_5_families_run_through_the_gateway(gateway: Gateway, graph: str) -> None:
    rows = gateway.run(
        "analyze",
        f"MATCH (n:{graph}) ORDER BY n.name SKIP 1 LIMIT 2 "
        "RETURN n.name AS name, n.name IS NFC NORMALIZED AS nfc, trim(BOTH 'v' FROM n.name) AS t, "
        "CASE n.name WHEN 'a', 'b' THEN 'end' WHEN IS NULL THEN 'none' WHEN STARTS WITH 'v' THEN 'via' END AS kind",
        {},
        AGENT_A,
    ).rows
    assert rows == [["b", True, "b", "end"], ["v1", True, "1", "via"]]
    assert gateway.run("analyze", f"MATCH (n:{graph}) RETURN count(ALL n) AS c", {}, AGENT_A).rows == [[4]]
    finished = gateway.run("analyze", f"MATCH (n:{graph}) FINISH", {}, AGENT_A)
    assert finished.columns == [] and finished.rows == []
    options = gateway.run("analyze", f"CYPHER runtime=slotted MATCH (n:{graph}) RETURN count(*) AS c", {}, AGENT_A)
    assert options.rows == [[4]]
