"""The rewrite is invisible to the agent, through the product path: Gateway -> real sandbox -> real Neo4j.

Each query runs twice on a graph whose elements are all visible: straight into Neo4j as the
agent wrote it, and through the Gateway. The answers must be the same: the columns (names and
order), the rows, and for a query Neo4j refuses, Neo4j's error for the agent's own text (the
sandbox EXPLAINs it before the rewritten query, so a refused shape is never answered as
rewritten).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from neo4j.exceptions import Neo4jError

from gateway.domain import Principal
from gateway.errors import Neo4jRefused
from gateway.service import Gateway
from sandbox.serialize import to_json
from tests.support.graph import labelled_graph, unique_label

GLOBAL_ONLY = Principal(name="invisible")  # the graph below is global (layers: []): all of it is visible


@pytest.fixture(scope="module")
def label(neo4j_driver: Any) -> Iterator[str]:
    label = unique_label("Invisible")
    seed = [
        f"CREATE (a:{label}:A {{id: 1, layers: []}})-[:R {{layers: []}}]->(b:{label}:B {{id: 2, layers: []}}),"
        f" (a)-[:R {{layers: []}}]->(b), (b)-[:R {{layers: []}}]->(x:{label}:X {{id: 3, layers: []}}),"
        f" (a)-[:R {{layers: []}}]->(x), (:{label}:Z {{id: 4, layers: []}})",
    ]  # fmt: skip
    with labelled_graph(neo4j_driver, label, seed):
        yield label


def _direct(driver: Any, cypher: str) -> tuple[list[str], list[str]] | Neo4jError:
    try:
        records, _, keys = driver.execute_query(cypher, routing_="r")
    except Neo4jError as exc:
        return exc
    rows = [[to_json(v) for v in record.values()] for record in records]
    return list(keys), sorted(json.dumps(_without_ids(row), sort_keys=True) for row in rows)


def _through(gateway: Gateway, cypher: str) -> tuple[list[str], list[str]] | Neo4jRefused:
    try:
        result = gateway.run("analyze", cypher, {}, GLOBAL_ONLY)
    except Neo4jRefused as exc:
        return exc
    assert result.degraded == [], result.degraded
    return result.columns, sorted(json.dumps(_without_ids(row), sort_keys=True) for row in result.rows)


_ID_KEYS = frozenset({"elementId", "startElementId", "endElementId"})


def _without_ids(value: Any) -> Any:
    # The gateway answers with answer-local element tokens, Neo4j with its own ids; every
    # element of this graph carries a unique `id` property, which is compared instead.
    if isinstance(value, list):
        return [_without_ids(item) for item in value]
    if isinstance(value, dict):
        return {key: _without_ids(item) for key, item in value.items() if key not in _ID_KEYS}
    return value


ANSWERED = [
    # RETURN * / WITH * never gain the generated path variables.
    "MATCH (n:{L}) RETURN * ORDER BY n.id",
    "MATCH (n:{L}:A) WITH n LIMIT 1 MATCH (m:{L}:B), (n)-->(x:{L}:X) RETURN *",
    "MATCH (a:{L}:A)-->(b) WITH DISTINCT * RETURN count(*) AS pairs",  # two parallel a->b edges: 2 pairs, not 3
    "MATCH (a:{L}:A) RETURN * UNION MATCH (a:{L}:B) RETURN *",
    # Unaliased columns keep the name Neo4j gives the agent's own expression.
    "MATCH (a:{L}) RETURN a.id, COUNT {{ (a)-[]->(b) }}",
    "MATCH (a:{L}) RETURN DISTINCT COUNT {{ (a)-->() }} ORDER BY COUNT {{ (a)-->() }}",
    "MATCH (a:{L}) RETURN a {{.id, out: [(a)-->(x) | x.id]}}",
    # Functions the rewrite once refused as unsafe.
    "MATCH (n:{L}) WHERE exists((n)-->()) RETURN count(*) AS c, timestamp() > 0 AS now",
]
REFUSED = [
    ("MATCH (n:{L}) WHERE (n)-[r]->(a) RETURN n", "PatternExpressions are not allowed to introduce new variables"),
    ("MATCH (n:{L}) RETURN (n)-[]->()", "A pattern expression should only be used"),
    ("MATCH (n:{L}) WHERE (n) RETURN n", "Type mismatch: expected Boolean but was Node"),
    ("MATCH () RETURN *", "RETURN * is not allowed when there are no variables in scope"),
]


@pytest.mark.parametrize("query", ANSWERED)
def test_the_gateway_answers_as_neo4j_answers_the_agents_query(
    neo4j_driver: Any, gateway: Gateway, label: str, query: str
) -> None:
    cypher = query.format(L=label)
    neo4j = _direct(neo4j_driver, cypher)
    assert not isinstance(neo4j, Neo4jError), neo4j
    assert _through(gateway, cypher) == neo4j


@pytest.mark.parametrize(("query", "message"), REFUSED)
def test_a_query_neo4j_refuses_is_refused_with_neo4js_error_for_it(
    neo4j_driver: Any, gateway: Gateway, label: str, query: str, message: str
) -> None:
    cypher = query.format(L=label)
    neo4j = _direct(neo4j_driver, cypher)
    assert isinstance(neo4j, Neo4jError) and message in str(neo4j.message), neo4j
    answer = _through(gateway, cypher)
    assert isinstance(answer, Neo4jRefused), f"answered as rewritten: {answer}"
    # Neo4j's code, and its whole message: it read the agent's text only, no element.
    assert answer.neo4j_code == neo4j.code and message in answer.message


def test_a_condition_that_could_raise_runs_on_complete_matches_only(
    neo4j_driver: Any, gateway: Gateway, label: str
) -> None:
    # The one deliberate difference. Neo4j may evaluate the condition on a candidate before the
    # pattern is bound (here the lone :Z node, id 4, which completes no match) and raise; the
    # rewrite evaluates it only on complete, visible matches, so no hidden candidate can make it
    # raise.
    cypher = f"MATCH (n:{label})-->(m) WHERE (n.id - 4) / (n.id - 4) = 1 RETURN count(*) AS c"
    neo4j = _direct(neo4j_driver, cypher)
    answer = _through(gateway, cypher)
    assert answer == (["c"], ["[4]"])
    assert neo4j == answer or (isinstance(neo4j, Neo4jError) and "ArithmeticError" in str(neo4j.code))
