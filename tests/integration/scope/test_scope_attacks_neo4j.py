"""Scope layer 1 against the real Neo4j, on a small graph of its own (marker label ``ScopeT``).

Each test runs the agent's query twice with the direct (write) driver: as written,
to prove the fixture really contains what must stay hidden (so the assertion can
fail), and rewritten by ``gateway.scope.plan`` with the reserved scope
parameter. Complements tests/test_scope_neo4j.py (the shared memory fixture) with
edge cases: malformed ``layers`` values, hidden relationships between visible
nodes, counts, NOT pattern predicates, bookkeeping edges under both policies, GQL
selectors.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from gateway import guard, scope
from gateway.domain import Principal
from gateway.errors import QueryRejected
from gateway.policy import Policy, ToolName, load_policy
from tests.support.graph import labelled_graph
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH

POLICY = load_policy(ALL_PROPERTIES_POLICY_PATH)
SCOPE_PARAM = POLICY.scope.scope_parameter
A = ["project-a"]
B = ["project-b"]
GLOBAL: list[str] = []
ANYONE = Principal(name="scope-attacks")

# g1, g2 global (both an explicit empty list); a1 project-a; b1 project-b; ab both;
# m1..m4 malformed layers values (a string naming project-a, '', an integer, a boolean).
# Paths g1 -> x -> g2 via a1 and via b1; a direct g1 -> g2 edge that is itself project-b;
# a1 SUPERSEDES g1; g1 -> b1 is a global edge to a hidden node; g2 -> ab has malformed layers.
SEED = """
CREATE (g1:ScopeT:Fact {name: 'g1', layers: []})
CREATE (g2:ScopeT:Fact:Secret {name: 'g2', layers: []})
CREATE (a1:ScopeT:Fact:Secret {name: 'a1', layers: ['project-a']})
CREATE (b1:ScopeT:Fact:Secret {name: 'b1', layers: ['project-b']})
CREATE (ab:ScopeT:Fact {name: 'ab', layers: ['project-b', 'project-a']})
CREATE (:ScopeT:Fact {name: 'm1', layers: 'project-a'})
CREATE (:ScopeT:Fact {name: 'm2', layers: ''})
CREATE (:ScopeT:Fact {name: 'm3', layers: 7})
CREATE (:ScopeT:Fact {name: 'm4', layers: true})
CREATE (g1)-[:LINK {name: 'g1-a1', layers: []}]->(a1)-[:LINK {name: 'a1-g2', layers: []}]->(g2)
CREATE (g1)-[:LINK {name: 'g1-b1', layers: []}]->(b1)-[:LINK {name: 'b1-g2', layers: []}]->(g2)
CREATE (g1)-[:LINK {name: 'g1-g2', layers: ['project-b']}]->(g2)
CREATE (a1)-[:SUPERSEDES {name: 'a1-sup-g1', layers: []}]->(g1)
CREATE (g2)-[:LINK {name: 'g2-bad', layers: 'project-a'}]->(ab)
"""


@pytest.fixture(scope="module")
def session(neo4j_driver: Any, neo4j_connection: Any) -> Iterator[Any]:
    database = neo4j_connection.database
    with labelled_graph(neo4j_driver, "ScopeT", [SEED], database), neo4j_driver.session(database=database) as s:
        yield s


def rewritten(cypher: str, tool: ToolName = "analyze", policy: Policy = POLICY) -> str:
    """The scope rewrite of ``cypher`` (layer 2 alone: the guard's rules, size limits included, are not applied)."""
    parsed = guard.parse_query(cypher, policy.tool(tool).limits, policy.cypher.default_version)
    return scope.plan(parsed, policy, tool, ANYONE).cypher


def run(session: Any, cypher: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return [r.data() for r in session.run(cypher, params or {})]


def both(
    session: Any, cypher: str, layers: list[str], tool: ToolName = "analyze", policy: Policy = POLICY
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(rows of the query as written, rows of the rewritten query under ``layers``)."""
    original = run(session, cypher)
    scoped = run(session, rewritten(cypher, tool, policy), {SCOPE_PARAM: layers})
    return original, scoped


def names(rows: list[dict[str, Any]], key: str = "name") -> set[Any]:
    return {row[key] for row in rows}


ALL_NODES = "MATCH (n:ScopeT) RETURN n.name AS name"


@pytest.mark.parametrize(
    ("layers", "expected"),
    [
        (A, {"g1", "g2", "a1", "ab"}),
        (B, {"g1", "g2", "b1", "ab"}),
        (GLOBAL, {"g1", "g2"}),  # an empty scope is global-only, never everything
        (["project-a", "project-b"], {"g1", "g2", "a1", "b1", "ab"}),
    ],
)
def test_only_visible_nodes_come_back(session: Any, layers: list[str], expected: set[str]) -> None:
    original, scoped = both(session, ALL_NODES, layers)
    assert {"a1", "b1", "m1", "m2", "m3", "m4"} <= names(original)
    assert names(scoped) == expected


def test_malformed_layers_are_hidden_even_when_they_name_the_scope(session: Any) -> None:
    # m1 has layers = 'project-a' (a string, not a list): malformed, so hidden, and no type error.
    _, scoped = both(session, ALL_NODES, ["project-a", "", "7", "true"])
    assert not names(scoped) & {"m1", "m2", "m3", "m4"}


def test_missing_scope_parameter_fails_rather_than_showing_everything(session: Any) -> None:
    with pytest.raises(Exception, match=r"(?i)param"):
        run(session, rewritten(ALL_NODES))


def test_count_counts_only_visible_nodes(session: Any) -> None:
    original, scoped = both(session, "MATCH (n:ScopeT:Secret) RETURN count(n) AS c", A)
    assert original == [{"c": 3}]
    assert scoped == [{"c": 2}]  # g2 and a1, not b1
    _, global_only = both(session, "MATCH (n:ScopeT:Secret) RETURN count(*) AS c", GLOBAL)
    assert global_only == [{"c": 1}]


def test_collect_then_unwind_sees_only_visible_nodes(session: Any) -> None:
    cypher = "MATCH (n:ScopeT:Fact) WITH collect(n) AS ns UNWIND ns AS m RETURN m.name AS name"
    original, scoped = both(session, cypher, GLOBAL)
    assert "b1" in names(original)
    assert names(scoped) == {"g1", "g2"}


def test_path_through_a_hidden_node_is_not_returned(session: Any) -> None:
    cypher = (
        "MATCH p = (x:ScopeT {name: 'g1'})-[:LINK*1..2]->(y:ScopeT {name: 'g2'}) "
        "RETURN [n IN nodes(p) | n.name] AS name"
    )
    original, scoped = both(session, cypher, A)
    assert ["g1", "b1", "g2"] in [row["name"] for row in original]
    assert [row["name"] for row in scoped] == [["g1", "a1", "g2"]]


def test_anonymous_intermediate_nodes_are_scoped(session: Any) -> None:
    cypher = "MATCH (x:ScopeT {name: 'g1'})-->()-->(y:ScopeT {name: 'g2'}) RETURN count(*) AS c"
    original, scoped = both(session, cypher, GLOBAL)
    assert original == [{"c": 2}]
    assert scoped == [{"c": 0}]


def test_quantified_path_pattern_is_scoped(session: Any) -> None:
    cypher = "MATCH (x:ScopeT {name: 'g1'}) ((u)-[:LINK]->(v)){1,2} (y:ScopeT {name: 'g2'}) RETURN count(*) AS c"
    original, scoped = both(session, cypher, A)
    assert original == [{"c": 3}]  # direct, via a1, via b1
    assert scoped == [{"c": 1}]  # via a1 only: the direct edge is project-b


def test_visible_edge_to_a_hidden_node_is_not_returned(session: Any) -> None:
    cypher = "MATCH (:ScopeT {name: 'g1'})-[r:LINK]->(y) RETURN r.name AS name, y.name AS y"
    original, scoped = both(session, cypher, GLOBAL)
    assert "g1-b1" in names(original)
    assert scoped == []
    _, for_a = both(session, cypher, A)
    assert names(for_a) == {"g1-a1"}


def test_hidden_relationship_between_visible_nodes_is_not_returned(session: Any) -> None:
    cypher = "MATCH (:ScopeT {name: 'g1'})-[r]->(:ScopeT {name: 'g2'}) RETURN r.name AS name"
    original, scoped = both(session, cypher, A)
    assert names(original) == {"g1-g2"}
    assert scoped == []


def test_relationship_with_malformed_layers_is_hidden(session: Any) -> None:
    cypher = "MATCH (:ScopeT {name: 'g2'})-[r]->(x) RETURN r.name AS name"
    original, scoped = both(session, cypher, ["project-a", "project-b"])
    assert names(original) == {"g2-bad"}
    assert scoped == []


def test_start_and_end_node_of_a_scoped_relationship_are_visible(session: Any) -> None:
    cypher = "MATCH ()-[r:LINK]->() RETURN startNode(r).name AS s, endNode(r).name AS name"
    original, scoped = both(session, cypher, A)
    assert "b1" in names(original) | names(original, "s")
    assert names(scoped) | names(scoped, "s") <= {"g1", "g2", "a1", "ab"}
    assert "a1" in names(scoped)


def test_bookkeeping_edges_are_never_traversed_untyped(session: Any) -> None:
    cypher = "MATCH (:ScopeT {name: 'a1'})-[r]-(x) RETURN type(r) AS name"
    original, scoped = both(session, cypher, A)
    assert "SUPERSEDES" in names(original)
    assert names(scoped) == {"LINK"}
    var_length = "MATCH (:ScopeT {name: 'a1'})-[*1..2]->(x) RETURN x.name AS name"
    original, scoped = both(session, var_length, A)
    assert "g1" in names(original)  # reachable from a1 only over SUPERSEDES
    assert "g1" not in names(scoped)


def test_bookkeeping_edges_visible_when_the_policy_allows_them(session: Any) -> None:
    settings = POLICY.scope.model_copy(update={"allow_bookkeeping": {"recall": False, "analyze": True}})
    tools = {
        name: tool.model_copy(update={"denied_relationship_types": frozenset()}) for name, tool in POLICY.tools.items()
    }
    allowing = POLICY.model_copy(update={"scope": settings, "tools": tools})
    cypher = "MATCH (:ScopeT {name: 'a1'})-[r]-(x) RETURN type(r) AS name"
    _, scoped = both(session, cypher, A, policy=allowing)
    assert names(scoped) == {"LINK", "SUPERSEDES"}


def test_optional_match_gives_null_for_hidden_matches(session: Any) -> None:
    cypher = (
        "MATCH (x:ScopeT {name: 'g1'}) OPTIONAL MATCH (x)-[:LINK]->(y:ScopeT {name: 'b1'}) "
        "RETURN x.name AS name, y.name AS y"
    )
    original, scoped = both(session, cypher, A)
    assert original == [{"name": "g1", "y": "b1"}]
    assert scoped == [{"name": "g1", "y": None}]


def test_union_branches_are_scoped(session: Any) -> None:
    cypher = (
        "MATCH (n:ScopeT {name: 'b1'}) RETURN n.name AS name "
        "UNION MATCH (n:ScopeT {name: 'a1'}) RETURN n.name AS name "
        "UNION MATCH (n:ScopeT {name: 'g1'}) RETURN n.name AS name"
    )
    original, scoped = both(session, cypher, GLOBAL)
    assert names(original) == {"a1", "b1", "g1"}
    assert names(scoped) == {"g1"}


def test_call_subquery_is_scoped(session: Any) -> None:
    cypher = "CALL { MATCH (n:ScopeT:Secret) RETURN n } RETURN count(n) AS c"
    original, scoped = both(session, cypher, B)
    assert original == [{"c": 3}]
    assert scoped == [{"c": 2}]  # g2, b1


def test_exists_count_collect_subqueries_are_scoped(session: Any) -> None:
    cypher = (
        "MATCH (x:ScopeT {name: 'g1'}) RETURN COUNT { (x)-->() } AS c, "
        "EXISTS { (x)-->(:ScopeT {name: 'b1'}) } AS e, "
        "COLLECT { MATCH (x)-->(y) RETURN y.name } AS ys, "
        "EXISTS { MATCH (x)-[:LINK]->(z) WHERE z.name = 'b1' } AS e2"
    )
    original, scoped = both(session, cypher, GLOBAL)
    assert original[0]["c"] == 3 and original[0]["e"] is True and original[0]["e2"] is True
    assert scoped == [{"c": 0, "e": False, "ys": [], "e2": False}]


def test_pattern_comprehension_and_pattern_predicates_are_scoped(session: Any) -> None:
    comprehension = "MATCH (x:ScopeT {name: 'g1'}) RETURN [(x)-[:LINK]->(y) | y.name] AS name"
    original, scoped = both(session, comprehension, A)
    assert set(original[0]["name"]) == {"a1", "b1", "g2"}
    assert scoped[0]["name"] == ["a1"]
    predicate = "MATCH (x:ScopeT) WHERE (x)-[:LINK]->(:ScopeT {name: 'b1'}) RETURN x.name AS name"
    original, scoped = both(session, predicate, GLOBAL)
    assert names(original) == {"g1"}
    assert scoped == []
    negated = "MATCH (x:ScopeT {name: 'g1'}) WHERE NOT (x)-->(:ScopeT {name: 'b1'}) RETURN x.name AS name"
    original, scoped = both(session, negated, GLOBAL)
    assert original == []
    assert names(scoped) == {"g1"}  # no *visible* such path, so NOT holds


def test_shortest_path_avoids_hidden_elements(session: Any) -> None:
    cypher = (
        "MATCH p = shortestPath((x:ScopeT {name: 'g1'})-[:LINK*..3]->(y:ScopeT {name: 'g2'})) "
        "RETURN [n IN nodes(p) | n.name] AS name"
    )
    original, scoped = both(session, cypher, A)
    assert original == [{"name": ["g1", "g2"]}]  # over the project-b edge
    assert scoped == [{"name": ["g1", "a1", "g2"]}]


@pytest.mark.parametrize("selector", ["ANY SHORTEST", "SHORTEST 1", "SHORTEST 1 GROUPS", "ANY", "ALL SHORTEST"])
def test_gql_selectors_choose_among_visible_paths_though_neo4j_filters_after_selecting(
    session: Any, selector: str
) -> None:
    cypher = (
        f"MATCH p = {selector} (x:ScopeT {{name: 'g1'}})-[:LINK]->{{1,3}}(y:ScopeT {{name: 'g2'}}) "
        "RETURN [n IN nodes(p) | n.name] AS name"
    )
    # The selector picks the (hidden) direct path first; a MATCH WHERE added after it leaves
    # nothing, and the empty answer would reveal that a hidden shorter path exists. So the rewrite
    # puts the predicate inside the selector's parenthesised pattern, applied before selecting.
    parsed = guard.check(cypher, {}, "analyze", POLICY).parsed
    assert parsed is not None
    original = run(session, cypher)
    assert ["g1", "g2"] in [row["name"] for row in original]
    selected_then_filtered = run(
        session,
        cypher.replace(
            "RETURN",
            "WHERE all(n IN nodes(p) WHERE n.name <> 'x') AND all(r IN relationships(p) WHERE r.layers IS NULL) RETURN",
        ),
    )
    assert ["g1", "g2"] not in [row["name"] for row in selected_then_filtered]
    _, scoped = both(session, cypher, A)
    assert scoped, "the scoped selector found no visible path"
    assert ["g1", "g2"] not in [row["name"] for row in scoped]
    if "SHORTEST" in selector:
        assert [row["name"] for row in scoped] == [["g1", "a1", "g2"]]


def test_returned_paths_hold_only_visible_elements(session: Any) -> None:
    cypher = "MATCH p = (:ScopeT)-[*0..2]-(:ScopeT) RETURN p"
    seen: set[str] = set()
    for record in session.run(rewritten(cypher), {SCOPE_PARAM: A}):
        path = record["p"]
        seen.update(node["name"] for node in path.nodes)
        for rel in path.relationships:
            assert rel.type != "SUPERSEDES"
            assert rel.get("layers") in (None, [], ["project-a"]), rel.get("name")
    assert seen == {"g1", "g2", "a1", "ab"}


@pytest.mark.parametrize(
    "cypher",
    [
        "MATCH (n:ScopeT) WHERE 1 / (CASE n.name WHEN 'b1' THEN 0 ELSE 1 END) = 1 RETURN n.name AS name",
        "MATCH (:ScopeT {name: 'g1'})-[:LINK]->(y) WHERE 1 / (CASE y.name WHEN 'b1' THEN 0 ELSE 1 END) = 1 "
        "RETURN y.name AS name",
        "MATCH (:ScopeT {name: 'g1'})-[:LINK*1..2]->(y) WHERE 1 / (CASE y.name WHEN 'b1' THEN 0 ELSE 1 END) = 1 "
        "RETURN y.name AS name",
        "MATCH (:ScopeT {name: 'g1'})-[:LINK]->(y) RETURN 1 / (CASE y.name WHEN 'b1' THEN 0 ELSE 1 END) AS name",
        # Conditions on an element inside a pattern: each is put behind that element's visibility.
        "MATCH (:ScopeT {name: 'g1'})-[:LINK]->(y WHERE 1 / (CASE y.name WHEN 'b1' THEN 0 ELSE 1 END) = 1)"
        "-[:LINK]->(z) RETURN y.name AS name",
        "MATCH (:ScopeT {name: 'g1'})-[:LINK]->(y)-[:LINK]->(z {name: "
        "CASE WHEN 1 / (CASE y.name WHEN 'b1' THEN 0 ELSE 1 END) = 1 THEN 'g2' END}) RETURN y.name AS name",
        "MATCH (:ScopeT {name: 'g1'}) ((u)-[:LINK]->(v) WHERE 1 / (CASE v.name WHEN 'b1' THEN 0 ELSE 1 END) = 1)"
        "{1,2} (y) RETURN y.name AS name",
        "MATCH (g:ScopeT {name: 'g1'}) UNWIND [(g)-[:LINK]->(y)-[:LINK]->() "
        "WHERE 1 / (CASE y.name WHEN 'b1' THEN 0 ELSE 1 END) = 1 | y.name] AS name RETURN name",
        "MATCH (g:ScopeT {name: 'g1'}) WITH g, COUNT { (g) ((u)-[:LINK]->(v) WHERE 1 / "
        "(CASE v.name WHEN 'b1' THEN 0 ELSE 1 END) = 1){1,2} (y) } AS c RETURN g.name AS name",
    ],
)
def test_error_oracle_on_a_hidden_value_stays_closed(session: Any, cypher: str) -> None:
    """An agent predicate that fails only on a hidden element would tell the agent it exists.

    Neo4j does not promise the order in which it evaluates ``AND`` operands, and evaluates a
    condition on an element inside a pattern as soon as it is bound. The rewrite puts each
    condition that could raise behind ``CASE WHEN <visible> THEN … ELSE false END``, so the hidden
    b1 never reaches the division (SECURITY.md layer 2, the error oracle).
    """
    with pytest.raises(Exception, match="by zero"):
        run(session, cypher)  # the oracle works on the unscoped query
    scoped = run(session, rewritten(cypher), {SCOPE_PARAM: A})
    assert scoped, "the visible rows must still come back"
    assert "b1" not in names(scoped)


def test_denied_relationship_types_are_not_traversed_untyped(session: Any) -> None:
    # The guard refuses queries that name a denied type; an untyped pattern must not reach it
    # either, or layer 2 (which hides the same types) would have to redact what layer 1 let through.
    tools = {
        name: tool.model_copy(update={"denied_relationship_types": frozenset({"LINK"})})
        for name, tool in POLICY.tools.items()
    }
    denying = POLICY.model_copy(update={"tools": tools})
    cypher = "MATCH (:ScopeT {name: 'g1'})-[r]-(x) RETURN type(r) AS name"
    original, scoped = both(session, cypher, A, policy=denying)
    assert "LINK" in names(original)
    assert scoped == []


# --- a sweep: many query shapes, global-only scope, no hidden name may appear anywhere ---

HIDDEN_NAMES = ("a1", "b1", "ab", "m1", "m2", "m3", "m4", "SUPERSEDES", "g2-bad", "g1-g2", "g1-a1", "g1-b1")
SWEEP = [
    "MATCH (n:ScopeT) RETURN n",
    "MATCH (n:ScopeT) RETURN [(n)--(m) | m.name] AS x",
    "MATCH (n:ScopeT {name:'g1'}) RETURN COLLECT { MATCH (n)-[*1..3]-(m) RETURN m.name } AS x",
    "MATCH (n:ScopeT) WITH collect(n) AS ns UNWIND ns AS m MATCH (m)-[r]-(o) RETURN o.name, r.name",
    "MATCH (n:ScopeT {name:'g1'}) CALL (n) { MATCH (n)-->(m) RETURN m } RETURN m.name",
    "MATCH (n:ScopeT {name:'g1'}) RETURN n, COUNT { (n)--() } AS deg",
    "MATCH (n:ScopeT {name:'g1'}) RETURN CASE WHEN (n)-->(:ScopeT {name:'b1'}) THEN 'yes' ELSE 'no' END AS x",
    "MATCH (n:ScopeT {name:'g1'}) RETURN EXISTS { MATCH (n)-->(m) WHERE m.name = 'b1' } AS x",
    "MATCH (n:ScopeT {name:'g1'}) OPTIONAL MATCH (n)-[r]->(m) RETURN r.name, m.name",
    "MATCH p = allShortestPaths((a:ScopeT {name:'g1'})-[*..3]-(b:ScopeT {name:'g2'})) RETURN p",
    "MATCH (a:ScopeT {name:'g1'}) MATCH (b:ScopeT) WHERE b <> a RETURN b.name",
    "MATCH (a:ScopeT) RETURN a.name AS n UNION ALL MATCH (b:ScopeT)-->(c) RETURN c.name AS n",
    "MATCH (n:ScopeT {name:'g1'}) RETURN [x IN [(n)-->(m) | m] | x.name] AS x",
    "MATCH (n:ScopeT) WHERE COUNT { (n)-->(:Secret) } > 0 RETURN n.name",
    "MATCH (n:ScopeT {name:'g1'}) RETURN COUNT { MATCH (n)-->(m) RETURN m UNION MATCH (n)<--(m) RETURN m } AS c",
    "MATCH (n:ScopeT {name:'g1'})-[r*1..2]-(m) RETURN [x IN r | x.name], m.name",
    "MATCH (n:ScopeT {name:'g1'}) RETURN [p = (n)-->() | nodes(p)] AS x",
    "MATCH (n:ScopeT {name:'g1'}) RETURN size([(n)-->(m) WHERE m.name STARTS WITH 'b' | 1]) AS x",
    "MATCH (n:ScopeT WHERE (n)-->(:ScopeT {name:'b1'})) RETURN n.name",
    "MATCH (x:ScopeT {name:'g1'}) ((u)-[r]->(v) WHERE v.name <> 'zz'){1,2} (y) RETURN y.name",
    "MATCH (x:ScopeT {name:'g1'}) RETURN x {.*, friends: [(x)-->(f) | f.name]} AS m",
    "MATCH (x:ScopeT {name:'g1'}) RETURN reduce(s = '', m IN [(x)-->(y) | y.name] | s + m) AS s",
    "MATCH (x:ScopeT {name: 'g1'}) OPTIONAL MATCH (x)-->(y) RETURN count(y) AS c",
    "MATCH (n:ScopeT) WHERE n.name IN ['a1','b1'] OR true RETURN n.name",
    "MATCH (x:ScopeT {name:'g1'}) RETURN [(x)-[r]->(y WHERE y.name = 'b1') | r.name] AS x",
    "MATCH (x:ScopeT {name:'g1'})-[r]->(y) WITH x, count(r) AS c RETURN c",
    "MATCH (x:ScopeT {name:'g1'}) WITH x MATCH (x)-[r]->(y) RETURN count(*) AS c",
    "MATCH (x:ScopeT), (y:ScopeT) WHERE (x)-->(y) RETURN x.name, y.name",
    "MATCH (x:ScopeT {name: 'g1'}) RETURN EXISTS { (x)-->() } AS e, COUNT { (x)-[*1..2]->() } AS c",
    "CALL { MATCH (n:ScopeT) RETURN n UNION MATCH (n:ScopeT)-->() RETURN n } RETURN count(n) AS c",
    "MATCH (n:ScopeT) RETURN n.name AS name ORDER BY name SKIP 0 LIMIT 50",
    "MATCH (n:ScopeT) WITH n.name AS nm WHERE nm STARTS WITH 'b' RETURN nm",
    "UNWIND [1] AS i MATCH (n:ScopeT) RETURN collect(n.name) AS x",
    "MATCH (:ScopeT {name:'g1'})-[r]->(m) RETURN startNode(r).name, endNode(r).name, properties(r)",
    "MATCH p = (:ScopeT {name:'g1'})-[:LINK]->{1,2}(m) RETURN [n IN nodes(p) | n.name] AS ns",
]


def _as_text(rows: list[list[Any]]) -> str:
    def default(value: Any) -> Any:
        return dict(value) if hasattr(value, "keys") else str(value)

    return json.dumps(rows, default=default)


def _leaks(text: str) -> list[str]:
    return [h for h in HIDDEN_NAMES if f'"{h}"' in text]


def test_sweep_of_query_shapes_leaks_nothing_under_global_scope(session: Any) -> None:
    leaked_unscoped = 0
    for cypher in SWEEP:
        unscoped = _as_text([r.values() for r in session.run(cypher)])
        leaked_unscoped += bool(_leaks(unscoped)) or '"c": 0' not in unscoped
        scoped = _as_text([r.values() for r in session.run(rewritten(cypher), {SCOPE_PARAM: GLOBAL})])
        assert not _leaks(scoped), (cypher, scoped[:300])
    assert leaked_unscoped >= len(SWEEP) * 3 // 4, "the sweep must mostly consist of queries that leak unscoped"


@pytest.mark.parametrize(
    "cypher",
    [
        "MATCH (n:ScopeT) WITH n AS __gw_p2 MATCH (m:ScopeT) RETURN m.name AS name",
        "MATCH (n:ScopeT) RETURN n AS `__GW_x`",
        "UNWIND [1] AS __gw_l MATCH (m:ScopeT) RETURN m.name AS name",
    ],
)
def test_names_in_the_generated_namespace_are_refused(cypher: str) -> None:
    # Without the refusal, WITH n AS __gw_p2 collides with a generated path variable (Neo4j then
    # refuses the whole query); a clear scope.unsupported is the honest answer.
    parsed = guard.check(cypher, {}, "analyze", POLICY).parsed
    assert parsed is not None
    with pytest.raises(QueryRejected, match=r"scope\.unsupported: .*reserved"):
        scope.plan(parsed, POLICY, "analyze", ANYONE)
