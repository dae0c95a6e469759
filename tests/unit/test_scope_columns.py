"""The rewrite does not show in the agent's columns: no generated variable in ``*``, no rewritten text as a name.

Neo4j 5.26 gives ``RETURN *`` the query part's own variables sorted by name, before the listed
items, and names an unaliased column by the expression's source text; the invariant test on
Neo4j (tests/integration/scope/test_scope_invariant_neo4j.py) checks the answers themselves.
"""

from __future__ import annotations

import pytest

from gateway import guard, scope
from gateway.domain import Principal
from gateway.policy import load_policy
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH

POLICY = load_policy(ALL_PROPERTIES_POLICY_PATH)
ANYONE = Principal(name="columns")


def rewritten(cypher: str) -> str:
    decision = guard.check(cypher, {}, "analyze", POLICY)
    assert decision.allowed and decision.parsed is not None, decision.reason
    return scope.plan(decision.parsed, POLICY, "analyze", ANYONE).cypher


@pytest.mark.parametrize(
    ("query", "projection"),
    [
        ("MATCH (n)-->() RETURN * ORDER BY n.id", " RETURN n ORDER BY n.id"),
        ("MATCH (n:A) WITH n LIMIT 1 MATCH (m:B), (n)-->(x:X) RETURN *", " RETURN m, n, x"),
        ("MATCH (b)--(), (a) RETURN *, 1 AS z", " RETURN a, b, 1 AS z"),
        ("MATCH (a)-->(b) WITH DISTINCT * RETURN *", " WITH DISTINCT a, b RETURN *"),
        ("MATCH (`a b`)-->(B) RETURN *", " RETURN B, `a b`"),
        ("MATCH (a)-[r*1..2]->(b), ((c)-->(d)){1,2} RETURN *", " RETURN a, b, c, d, r"),
        ("UNWIND [1] AS x MATCH (n)<--() WITH * WHERE x > 0 RETURN *", " WITH n, x WHERE x > 0 RETURN *"),
        ("MATCH (a)-[*1..2]->(b) RETURN *", " RETURN a, b"),  # a generated path
        ("MATCH (a) ((:X)-->()){1,2} (b) RETURN *", " RETURN a, b"),  # generated group variables
        (
            "MATCH (a)-->() RETURN * UNION MATCH (a)<--() RETURN *",
            " RETURN a UNION MATCH (a)<-[__gw_r2]-(__gw_n2) WHERE",
        ),
        ("MATCH (a) WHERE EXISTS { MATCH (a)-->(b) RETURN DISTINCT * } RETURN a", " RETURN DISTINCT a, b }"),
        ("UNWIND [1] AS x CALL (x) { MATCH (n:A)-[:R]->(:B) RETURN * } RETURN *", "RETURN n } RETURN *"),
        ("CALL { MATCH (n)--() RETURN * } RETURN *", "RETURN n } RETURN *"),
        # A listed name is not repeated by the `*` (Neo4j: one column, after the others).
        ("MATCH (a)-->(b) RETURN *, a", " RETURN b, a"),
        ("MATCH (a)-->() RETURN *, a ORDER BY a.x", " RETURN  a ORDER BY a.x"),
    ],
)
def test_a_star_that_would_see_generated_variables_is_the_agents_variables(query: str, projection: str) -> None:
    out = rewritten(query)
    assert projection in out, out


@pytest.mark.parametrize(
    "query",
    [
        "MATCH p = (a)-[r]->(b) RETURN *",  # the agent named every element: nothing generated to hide
        "MATCH (a) RETURN *",  # one element checked per element: no path name generated
        "UNWIND [1, 2] AS x RETURN *",
        "MATCH () RETURN *",  # Neo4j refuses it for the agent's own text (the sandbox EXPLAINs that first)
    ],
)
def test_a_star_with_nothing_generated_to_hide_stays(query: str) -> None:
    out = rewritten(query)
    assert out.endswith(" RETURN *"), out


@pytest.mark.parametrize(
    ("query", "alias"),
    [
        ("MATCH (a) RETURN COUNT { (a)-[]->(b) }", " AS `COUNT { (a)-[]->(b) }`"),
        ("MATCH (a) RETURN [(a)-->(b) | b.x] ,  EXISTS {\n (a)-->() }", " AS `EXISTS {\n (a)-->() }`"),
        ("MATCH (`x`) RETURN EXISTS { (`x`)-->() } ORDER BY 1", " AS `EXISTS { (``x``)-->() }` ORDER BY 1"),
        ("MATCH (a) RETURN (a)-->() AS known, 1 + size([(a)-->(b) | b])", " AS `1 + size([(a)-->(b) | b])`"),
        ("MATCH (a) RETURN a {.i, out: [(a)-->(x) | x.i]}", " | x.i]} AS `a`"),  # a map projection: its variable
    ],
)
def test_a_rewritten_unaliased_column_keeps_the_name_neo4j_gives_it(query: str, alias: str) -> None:
    out = rewritten(query)
    assert alias in out, out
    assert " AS known" in out or "known" not in query  # an alias the agent wrote stays the only one
    assert " AS `(a)-->()`" not in out


def test_equal_expressions_stay_equal_so_neo4j_can_match_them() -> None:
    # DISTINCT and aggregation make Neo4j match an ORDER BY or a grouping key to a projected
    # expression by its text: the generated names inside each must be the same.
    out = rewritten("MATCH (a) RETURN DISTINCT COUNT { (a)-->() } ORDER BY COUNT { (a)-->() }")
    projected, ordered = out.split(" RETURN DISTINCT ")[1].split(" ORDER BY ")
    assert projected.split(" AS ")[0] == ordered
    nested = rewritten("MATCH (a) RETURN COUNT { MATCH (a)-->(b) WHERE EXISTS { (b)-->() } RETURN b } AS c")
    assert "(a)-[__gw_r1_1]->(b)" in nested and "(b)-[__gw_r2_1]->(__gw_n2_1)" in nested
