"""Which answer columns surely hold no element: those the hidden-property projection may skip.

A column wrongly called plain would let Neo4j send a hidden value (then withheld by the sandbox,
but measured first), so every shape that can carry a node, relationship, path or map must read
as not plain; the plain shapes are the ones agents return most (properties, counts, types).
"""

from __future__ import annotations

import pytest

from bench.rewrite_plans import reading_the_representative_keys, rewritten
from gateway.cypher import ast, parse
from gateway.policy import POLICIES_DIR, load_policy
from gateway.scope.plain import Plainness
from gateway.scope.projection import final_queries
from gateway.scope.visible_props import Kinds
from sandbox.rebuild import TAG_PARAMETER


def _columns(text: str) -> list[bool]:
    parsed = parse(text, max_chars=10_000, max_depth=50)
    nodes = list(parsed.walk())
    plainness = Plainness(nodes, Kinds(nodes).of)
    final = final_queries(parsed.statements[0].body)[-1].clauses[-1]
    assert isinstance(final, ast.Return)
    return [plainness.plain(item.expression) for item in final.projection.items]


@pytest.mark.parametrize(
    "text",
    [
        "MATCH (t:Task) RETURN t.id",
        "MATCH (t:Task)-[r:HAS_ATTEMPT]->(a) RETURN t.id, count(a), type(r), r.since, count(*)",
        "MATCH p = (a)-[*1..3]-(b) RETURN length(p), size(nodes(p)), [x IN nodes(p) | x.name]",
        "MATCH (t:Task) RETURN t.id, [(t)-[:HAS_ATTEMPT]->(a) | a.check] AS checks",
        "MATCH (t:Task) RETURN COUNT { (t)-->() } AS c, EXISTS { (t)-->() } AS e, t:Task AS l",
        "MATCH (t:Task) WITH t, count(*) AS c RETURN t.id, c, c + 1, toString(c)",
        "UNWIND [1, 2] AS x RETURN x, collect(x), min(x), coalesce(x, 0)",
        "WITH date() AS d RETURN d.year, $p, $p.key, [1, 2][0]",
        "MATCH (n) RETURN CASE WHEN n.a > 1 THEN 'big' ELSE n.b END, n.a IS NULL, NOT n.c",
        "MATCH (n) RETURN all(x IN n.list WHERE x > 1), labels(n), elementId(n)",
    ],
)
def test_plain_columns(text: str) -> None:
    assert all(_columns(text)), _columns(text)


@pytest.mark.parametrize(
    "text",
    [
        "MATCH (n) RETURN n",
        "MATCH ()-[r]->() RETURN r",
        "MATCH p = ()-->() RETURN p",
        "MATCH (n) RETURN [n]",
        "MATCH (n) RETURN collect(n)",
        "MATCH (n) RETURN min(n)",
        "MATCH (n) RETURN head(collect(n))",
        "MATCH (n) RETURN coalesce(n, 1)",
        "MATCH (n) RETURN {a: n.name}",
        "MATCH (n) RETURN n {.name}",
        "MATCH (n) WITH {a: n} AS m RETURN m.a",
        "MATCH (n) WITH n AS m RETURN m",
        "MATCH (n) WITH collect(n) AS ns UNWIND ns AS x RETURN x",
        "MATCH (n) RETURN CASE WHEN true THEN n ELSE 1 END",
        "MATCH (n) RETURN COLLECT { MATCH (m) RETURN m.name } AS names",
        "MATCH p = ()-->() RETURN nodes(p), relationships(p), startNode(last(relationships(p)))",
        "MATCH (n) RETURN [x IN [n] | x]",
        "MATCH (n) RETURN [x IN [n]]",
        "MATCH (n) RETURN reduce(acc = [], x IN [n] | acc + [x])",
        "MATCH (n) RETURN [n] + [1]",
        "MATCH (n) RETURN properties(n)",
        "MATCH (n) RETURN apoc.unknown(n)",
        "WITH 1 AS x RETURN x UNION MATCH (x) RETURN x",
        "MATCH (a) WITH a AS x MATCH (b) WITH 1 AS x, b RETURN x",
    ],
)
def test_columns_that_may_hold_an_element_are_not_plain(text: str) -> None:
    assert not all(_columns(text)), text


MENTIS = reading_the_representative_keys(load_policy(POLICIES_DIR / "mentis.yaml"))


def test_a_return_of_plain_columns_is_left_as_written_and_one_holding_a_node_is_wrapped() -> None:
    plain_text, plain_params = rewritten("MATCH (t:Task) RETURN t.id, count(*) AS n", MENTIS)
    node_text, node_params = rewritten("MATCH (t:Task) RETURN t.id, t", MENTIS)
    assert TAG_PARAMETER not in plain_params and TAG_PARAMETER not in plain_text
    assert TAG_PARAMETER in node_params and TAG_PARAMETER in node_text
    list_text, _ = rewritten("MATCH (t:Task) RETURN t.id, [t] AS ts", MENTIS)
    # A column of unknown shape takes the container levels' text, which Neo4j would plan.
    assert len(list_text) - len(plain_text) > 2_000


@pytest.mark.parametrize(
    ("query", "columns"),
    [
        ("MATCH (t:Task) RETURN t", ["t"]),
        ("MATCH (t:Task)-[h:HAS_ATTEMPT]->(a) RETURN t.id, h, a AS attempt", ["h", "attempt"]),
        ("MATCH (t:Task) OPTIONAL MATCH (t)-[h:HAS_ATTEMPT]->(a) RETURN DISTINCT a ORDER BY a.id", ["a"]),
        ("MATCH (t:Task) WITH t AS x RETURN x, count(*) AS n", ["x"]),
        ("MATCH (t:Task) RETURN *", ["t"]),
    ],
)
def test_a_column_surely_one_element_is_projected_alone_without_the_container_levels(
    query: str, columns: list[str]
) -> None:
    text, params = rewritten(query, MENTIS)
    assert TAG_PARAMETER in params and "__gw_row" not in text and "valueType" not in text, text
    for column in columns:
        assert f"RETURN CASE WHEN {column} IS NULL" in text or f", CASE WHEN {column} IS NULL" in text, text
    assert text.count(f"${TAG_PARAMETER}") == len(columns)  # one element map each


@pytest.mark.parametrize(
    "query",
    [
        "MATCH p = (t:Task)-->() RETURN p",  # a path
        "MATCH (t:Task)-[h*1..2]->() RETURN h",  # a list of relationships
        "MATCH (t:Task) RETURN collect(t) AS ts",  # a list
        "MATCH (t:Task) WITH collect(t) AS t UNWIND t AS x RETURN x, t",  # a name bound twice, once a list
        "MATCH (t:Task) RETURN t UNION UNWIND [1] AS t RETURN t",  # a node in one branch, a number in the other
        "MATCH (t:Task) RETURN coalesce(t, 1) AS x",  # a function passing its arguments on
    ],
)
def test_a_column_that_may_hold_anything_else_keeps_the_container_levels(query: str) -> None:
    text, params = rewritten(query, MENTIS)
    assert TAG_PARAMETER in params and "__gw_row" in text, text


def test_a_union_is_wrapped_when_one_branch_returns_an_element() -> None:
    text, params = rewritten("MATCH (t:Task) RETURN t.id AS x UNION MATCH (t:Task) RETURN t AS x", MENTIS)
    assert TAG_PARAMETER in params and text.count(f"${TAG_PARAMETER}") >= 1
