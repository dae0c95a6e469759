# ruff: noqa: E501  (a table of queries reads better one per line)
"""The rewrite against the real Neo4j: each query runs unscoped (it must leak, or the case
proves nothing) and rewritten (the hidden elements must be gone, the visible ones kept)."""

from __future__ import annotations

from typing import Any

import pytest

from sandbox.scope_check import filter_rows
from sandbox.wire import ScopeCheck
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH
from tests.support.rows import RunScoped, ids, leaked_secrets

A: list[str] = ["project-a"]
B: list[str] = ["project-b"]
GLOBAL: list[str] = []

# (case id, query, scope, ids that must vanish, ids that must stay)
CASES: list[tuple[str, str, list[str], set[str], set[str]]] = [
    (
        "other-project-layer",
        "MATCH (f:Fact:ScopeFixture) RETURN f",
        A,
        {"fact-b1", "fact-b2"},
        {"fact-a1", "fact-a2", "fact-ab", "fact-g1", "fact-g2"},
    ),
    (
        "forgotten-scope-is-global-only",
        "MATCH (f:Fact:ScopeFixture) RETURN f",
        GLOBAL,
        {"fact-a1", "fact-b1", "fact-ab"},
        {"fact-g1", "fact-g2"},
    ),
    ("malformed-layers-hidden", "MATCH (f:Fact:ScopeFixture) RETURN f.id", A, {"fact-bad"}, {"fact-a1"}),
    (
        "visible-edge-to-hidden-node",
        "MATCH (:Task {id: 'task-a1'})-[:HAS_ATTEMPT]->(a) RETURN a.id",
        A,
        {"att-a1-h"},
        {"att-a1-1", "att-a1-2", "att-a1-4"},
    ),
    (
        "hidden-intermediate-var-length",
        "MATCH (:Attempt {id: 'att-a1-2'})-[:NEXT*1..3]->(b) RETURN b.id",
        A,
        {"att-a1-h", "att-a1-4"},
        set(),
    ),
    (
        "hidden-intermediate-named-path",
        "MATCH p = (:Attempt {id: 'att-a1-1'})-[:NEXT*1..3]->() RETURN p",
        A,
        {"att-a1-h", "att-a1-4"},
        {"att-a1-2"},
    ),
    (
        "hidden-intermediate-quantified",
        "MATCH (:Attempt {id: 'att-a1-1'}) ((x)-[:NEXT]->(y)){1,3} (e) RETURN e.id, [n IN x | n.id]",
        A,
        {"att-a1-h", "att-a1-4"},
        {"att-a1-2"},
    ),
    (
        "shortest-path-avoids-hidden",
        "MATCH p = allShortestPaths((a:Fact {id: 'fact-a1'})-[*..4]-(b:Fact {id: 'fact-a2'})) RETURN [n IN nodes(p) | n.id]",
        A,
        {"fact-b1"},
        {"fact-ab"},
    ),
    (
        "hidden-edge-between-visible-nodes",
        "MATCH (:Fact {id: 'fact-g1'})-[r]->(b) RETURN r, b.id",
        GLOBAL,
        {"e-fg1-fg2", "fact-g2", "fact-a1"},
        set(),
    ),
    ("correction-edge-anonymous", "MATCH (d:Decision {id: 'dec-a1'})-->(o) RETURN o.id", A, {"dec-a0"}, set()),
    (
        "correction-edge-into-other-layer",
        "MATCH (d:Decision:ScopeFixture)-[r]-(o) RETURN d.id, type(r), o.id",
        GLOBAL,
        {"dec-gb", "SUPERSEDES"},
        set(),
    ),
    (
        "contradicts-never-traversed",
        "MATCH (c:Claim {id: 'claim-g1'})-[r]->(x) RETURN type(r), x.id",
        B,
        {"CONTRADICTS"},
        {"dec-a1"} - {"dec-a1"},
    ),
    (
        "optional-match-yields-null",
        "MATCH (t:Task {id: 'task-a1'}) OPTIONAL MATCH (t)-[:ABOUT]->(f) RETURN t.id, collect(f.id)",
        A,
        {"fact-b2"},
        {"task-a1", "fact-a1"},
    ),
    (
        "union-branches",
        "MATCH (f:Fact:ScopeFixture) RETURN f.id AS id UNION MATCH (s:Secret:ScopeFixture) RETURN s.id AS id",
        A,
        {"fact-b1", "secret-b1", "secret-b2"},
        {"fact-a1", "secret-a", "secret-g"},
    ),
    ("call-subquery", "CALL { MATCH (s:Secret:ScopeFixture) RETURN s } RETURN s.id", A, {"secret-b1"}, {"secret-a"}),
    (
        "exists-subquery",
        "MATCH (d:Decision:ScopeFixture) WHERE EXISTS { (d)<-[:DISAGREES]-(:Claim) } RETURN d.id",
        A,
        {"dec-a1"},
        set(),
    ),
    (
        "pattern-predicate",
        "MATCH (d:Decision:ScopeFixture) WHERE (d)<-[:DISAGREES]-() RETURN d.id",
        A,
        {"dec-a1"},
        set(),
    ),
    (
        "collect-subquery",
        "MATCH (d:Decision {id: 'dec-a1'}) RETURN COLLECT { MATCH (d)<--(c:Claim) RETURN c.id } AS claims",
        A,
        {"claim-b1"},
        {"claim-a1", "claim-g1"},
    ),
    (
        "pattern-comprehension",
        "MATCH (t:Task {id: 'task-a1'}) RETURN [(t)-->(x) | coalesce(x.text, x.action)] AS texts",
        A,
        {"SECRET-B use prod token"},
        {"rerun test", "repo-a uses pnpm"},
    ),
    (
        "start-end-node",
        "MATCH (:ScopeFixture)-[r:HAS_ATTEMPT]->() RETURN startNode(r).id, endNode(r).id",
        A,
        {"att-a1-h", "att-b1-1"},
        {"att-a1-1"},
    ),
    # The parser's spans exclude an operand's parentheses: wrapping them naively gave `x OR (y AND scope)`.
    (
        "parenthesized-or-operands",
        "MATCH (f:Fact:ScopeFixture) WHERE (f.id = 'fact-b1') OR (false) RETURN f.id",
        A,
        {"fact-b1"},
        set(),
    ),
    (
        "double-parenthesized-or",
        "MATCH (f:Fact:ScopeFixture) WHERE ((f.id = 'fact-b1')) OR ((f.id = 'x')) RETURN f.id",
        A,
        {"fact-b1"},
        set(),
    ),
    (
        "parenthesized-or-in-optional",
        "MATCH (t:Task {id: 'task-a1'}) OPTIONAL MATCH (t)-->(x) WHERE (x.id = 'att-a1-h') OR (false) RETURN x.id",
        A,
        {"att-a1-h"},
        set(),
    ),
    (
        "parenthesized-or-in-comprehension",
        "MATCH (t:Task {id: 'task-a1'}) RETURN [(t)-->(x) WHERE (x.id = 'att-a1-h') OR (false) | x.id] AS xs",
        A,
        {"att-a1-h"},
        set(),
    ),
    (
        "parenthesized-or-in-exists",
        "MATCH (t:Task {id: 'task-a1'}) WHERE EXISTS { (t)-->(x) WHERE (x.id = 'att-a1-h') OR (false) } RETURN t.id",
        A,
        {"task-a1"},
        set(),
    ),
    (
        "aggregate-text",
        "MATCH (f:Fact:ScopeFixture) RETURN collect(f.text) AS texts",
        A,
        {"SECRET-B vault path /kv/billing"},
        {"repo-a uses pnpm"},
    ),
]


@pytest.mark.parametrize("case_id, cypher, layers, hidden, visible", CASES, ids=[c[0] for c in CASES])
def test_rewritten_query_never_returns_hidden_elements(
    run_scoped: RunScoped, case_id: str, cypher: str, layers: list[str], hidden: set[str], visible: set[str]
) -> None:
    unscoped = ids(run_scoped(cypher, layers, rewrite=False).rows)
    assert hidden & unscoped, f"{case_id}: the unscoped query does not reach {hidden}: the case proves nothing"
    scoped = run_scoped(cypher, layers)
    got = ids(scoped.rows)
    assert not hidden & got, f"{case_id}: LEAK {sorted(hidden & got)}\n{scoped.cypher}"
    assert visible <= got, f"{case_id}: lost visible {sorted(visible - got)}\n{scoped.cypher}"


@pytest.mark.parametrize("layers, expected", [(GLOBAL, 1), (A, 2), (B, 3), (["project-a", "project-b"], 4)])
def test_count_counts_only_visible_nodes(run_scoped: RunScoped, layers: list[str], expected: int) -> None:
    assert run_scoped("MATCH (n:Secret:ScopeFixture) RETURN count(n)", layers, rewrite=False).rows == [[4]]
    assert run_scoped("MATCH (n:Secret:ScopeFixture) RETURN count(n)", layers).rows == [[expected]]


def test_count_subquery_side_channel_is_closed(run_scoped: RunScoped) -> None:
    query = "MATCH (d:Decision {id: 'dec-a1'}) RETURN COUNT { (d)<-[:DISAGREES]-() } AS against"
    assert run_scoped(query, A, rewrite=False).rows == [[1]]
    assert run_scoped(query, A).rows == [[0]]


def test_optional_match_keeps_the_row_with_null(run_scoped: RunScoped) -> None:
    query = "MATCH (c:Claim {id: 'claim-g1'}) OPTIONAL MATCH (c)-->(x:Claim) RETURN c.id, x.id"
    assert run_scoped(query, B, rewrite=False).rows == [["claim-g1", "claim-b1"]]
    assert run_scoped(query, B).rows == [["claim-g1", None]]


@pytest.mark.parametrize("layers, marker", [(A, "SECRET-B"), (B, "SECRET-A"), (GLOBAL, "SECRET-")])
def test_a_sweep_of_every_element_and_property_leaks_no_secret(
    run_scoped: RunScoped, layers: list[str], marker: str
) -> None:
    query = "MATCH (n:ScopeFixture) OPTIONAL MATCH (n)-[r]-(m) RETURN n, r, m, properties(n), keys(r)"
    assert leaked_secrets(run_scoped(query, layers, rewrite=False).rows, marker)
    assert leaked_secrets(run_scoped(query, layers).rows, marker) == []


def _check(layers: list[str]) -> ScopeCheck:
    return ScopeCheck(layers_property="layers", layers=layers, hidden_relationship_types=["CONTRADICTS", "SUPERSEDES"])


@pytest.mark.parametrize(
    "cypher",
    [
        "MATCH (f:Fact:ScopeFixture) RETURN f, f.text",
        "MATCH p = (:Task {id: 'task-a1'})-[:HAS_ATTEMPT]->() RETURN p",
        "MATCH (d:Decision:ScopeFixture)-[r]->(o) RETURN d, r, o",
        "MATCH (s:Secret:ScopeFixture) RETURN collect(s) AS all",
    ],
)
def test_layer_two_alone_catches_what_layer_one_is_switched_off_for(run_scoped: RunScoped, cypher: str) -> None:
    raw = run_scoped(cypher, A, rewrite=False)
    assert leaked_secrets(raw.rows, "SECRET-B") or ids(raw.rows) & {"dec-a0"}, "the unscoped query leaks nothing"
    rows, redacted = filter_rows(raw.columns, raw.rows, _check(A))
    assert redacted > 0
    assert leaked_secrets(rows, "SECRET-B") == [] and "e-d1-d0" not in ids(rows)
    # With layer 1 on, layer 2 finds nothing to drop.
    scoped = run_scoped(cypher, A)
    assert filter_rows(scoped.columns, scoped.rows, _check(A))[1] == 0


def test_rewritten_query_is_still_a_read_with_the_same_columns(run_scoped: RunScoped) -> None:
    query = "MATCH (t:Task:ScopeFixture)-[:HAS_ATTEMPT]->(a) RETURN t.id AS task, count(a) AS attempts ORDER BY task"
    scoped = run_scoped(query, A)
    assert scoped.columns == ["task", "attempts"]
    assert scoped.rows == [["task-a1", 3], ["task-g1", 1]]


def test_recall_shape_with_required_parameters(run_scoped: RunScoped) -> None:
    query = (
        "MATCH (t:Task {repository: $repository, id: $taskId})-[:HAS_ATTEMPT]->(a) RETURN a.id, a.check ORDER BY a.seq"
    )
    params: dict[str, Any] = {"repository": "repo-a", "taskId": "task-a1"}
    scoped = run_scoped(query, A, tool="recall", params=params)
    assert [r[0] for r in scoped.rows] == ["att-a1-1", "att-a1-2", "att-a1-4"]


def test_every_adversarial_shape_rewrites_to_cypher_neo4j_plans_as_a_read(scope_graph: Any) -> None:
    from gateway import guard, scope
    from gateway.domain import Principal
    from gateway.policy import load_policy
    from tests.support.shapes import ADVERSARIAL_WHERE

    policy = load_policy(ALL_PROPERTIES_POLICY_PATH)
    for query in ADVERSARIAL_WHERE:
        decision = guard.check(query, {}, "analyze", policy)
        assert decision.allowed and decision.parsed is not None, query
        rewritten = scope.plan(decision.parsed, policy, "analyze", Principal(name="scope")).cypher
        _, summary, _ = scope_graph.execute_query(
            "EXPLAIN " + rewritten, {"__gw_scope": ["project-a"]}, database_="neo4j"
        )
        assert summary.query_type == "r", rewritten
