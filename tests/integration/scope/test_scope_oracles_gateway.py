"""Error oracles through a selector group, through the product path: Gateway -> sandbox -> Neo4j.

The graph: a and d are visible; between them a -> h -> d through a hidden node h whose
``secret`` is 'swordfish', a visible path a -> v -> w -> d, and a hidden edge v -> d (its own
``secret``) between two visible nodes. An agent condition that raises on the hidden value
(``1 / 0`` exactly when ``secret STARTS WITH $p``) would answer differently for a right and a
wrong guess if it ran on h or on the hidden edge before their visibility were known: Neo4j
2026.x evaluated the selector group's WHERE on every candidate path. Each query here must give
the same answer (rows, or error code) for both guesses, and that answer is the one over the
visible graph only.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gateway import managed_neo4j
from gateway.domain import Principal
from gateway.errors import GatewayError
from gateway.service import Gateway
from tests.support.graph import labelled_graph, unique_label

pytestmark = pytest.mark.neo4j2026  # runs on 5.26 and again on 2026.x

# The red team's queries say CYPHER 25; Cypher 5 on 5.26 has the same selectors and groups.
CYPHER = "CYPHER 25 " if managed_neo4j.line_for().name == "2026" else ""

AGENT = Principal(name="oracle-agent", scope=frozenset({"project-a"}))
RIGHT, WRONG = "swo", "zzz"


@pytest.fixture(scope="module")
def graph(neo4j_driver: Any) -> Iterator[str]:
    label = unique_label("Oracle")
    seed = [
        f"CREATE (a:{label} {{uid: 'a', layers: []}}), (d:{label} {{uid: 'd', layers: []}}), "
        f"(h:{label} {{uid: 'h', secret: 'swordfish', x: 0, layers: ['vault']}}), "
        f"(v:{label} {{uid: 'v', x: 1, layers: ['project-a']}}), (w:{label} {{uid: 'w', x: 1, layers: []}}), "
        "(a)-[:R {layers: []}]->(h)-[:R {layers: []}]->(d), "
        "(a)-[:R {layers: []}]->(v)-[:R {layers: []}]->(w)-[:R {layers: []}]->(d), "
        "(v)-[:R {secret: 'swordfish', x: 0, layers: ['vault']}]->(d)"
    ]
    with labelled_graph(neo4j_driver, label, seed, database="neo4j"):
        yield label


def answer(gateway: Gateway, query: str, guess: str) -> tuple[str, Any]:
    """Rows, or the error's type and codes: what the agent can tell apart."""
    try:
        return ("rows", gateway.run("analyze", query, {"p": guess}, AGENT).rows)
    except GatewayError as error:
        return (type(error).__name__, (error.code, getattr(error, "neo4j_code", None)))


def _raises_on(element: str) -> str:
    return f"1 / CASE WHEN {element}.secret STARTS WITH $p THEN 0 ELSE 1 END"


ORACLES = {
    "all over nodes(q)": (
        "MATCH ANY SHORTEST (q = (a:{g} {{uid: 'a'}})-->{{1,5}}(d:{g} {{uid: 'd'}}) "
        f"WHERE all(x IN nodes(q) WHERE {_raises_on('x')} = 1)) RETURN length(q) AS hops"
    ),
    "reduce over nodes(q)": (
        "MATCH ANY SHORTEST (q = (a:{g} {{uid: 'a'}})-->{{1,5}}(d:{g} {{uid: 'd'}}) "
        f"WHERE reduce(s = 0, x IN nodes(q) | s + {_raises_on('x')}) > 0) RETURN length(q) AS hops"
    ),
    "reduce 1 / x.x": (
        "MATCH ANY SHORTEST (q = (a:{g} {{uid: 'a'}})-->{{1,5}}(d:{g} {{uid: 'd'}}) "
        "WHERE reduce(s = 0, x IN nodes(q) | s + CASE WHEN x.secret STARTS WITH $p THEN 1 / x.x ELSE 0 END) = 0) "
        "RETURN length(q) AS hops"
    ),
    "SHORTEST 2 GROUPS": (
        "MATCH SHORTEST 2 GROUPS (q = (a:{g} {{uid: 'a'}})-->{{1,5}}(d:{g} {{uid: 'd'}}) "
        f"WHERE all(x IN nodes(q) WHERE {_raises_on('x')} = 1)) RETURN length(q) AS hops ORDER BY hops"
    ),
    "relationships(q) between visible nodes": (
        "MATCH ANY SHORTEST (q = (a:{g} {{uid: 'a'}})-->{{1,5}}(d:{g} {{uid: 'd'}}) "
        f"WHERE all(r IN relationships(q) WHERE {_raises_on('r')} = 1)) RETURN length(q) AS hops"
    ),
    "an unnamed group": (
        "MATCH p = ANY SHORTEST ((a:{g} {{uid: 'a'}})-->{{1,5}}(d:{g} {{uid: 'd'}}) "
        f"WHERE a.uid = 'a' AND {_raises_on('d')} = 1) RETURN length(p) AS hops"
    ),
}


@pytest.mark.parametrize("oracle", sorted(ORACLES))
def test_a_right_and_a_wrong_guess_about_a_hidden_value_answer_alike(gateway: Gateway, graph: str, oracle: str) -> None:
    query = CYPHER + ORACLES[oracle].format(g=graph)
    right, wrong = answer(gateway, query, RIGHT), answer(gateway, query, WRONG)
    assert right == wrong, f"{oracle}: right guess {right!r}, wrong guess {wrong!r}"
    # And it is the answer over the visible graph: the one path a -> v -> w -> d.
    assert right[0] == "rows" and right[1] and all(row == [3] for row in right[1]), right
