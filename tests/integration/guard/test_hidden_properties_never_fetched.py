"""Hidden values never leave Neo4j, and the answer is the one the agent got without the wrapper.

Through ``Gateway``, the real sandbox and Neo4j, on both transports. The policy hides a secret
and an embedding on ``Attempt`` and a secret on ``KNOWS``; ``layers`` (the scope's property) is
hidden too, so the result check reads a key the answer never shows. For every returned shape
(nodes, relationships, paths, lists and maps holding them, ``ORDER BY``, ``DISTINCT``,
``collect``, UNION) two things are checked:

* the answer through the Gateway is the same (as JSON: rows, ``bytes``, ``withheld``; a node's
  keys may be listed in another order) as with the projection wrapper switched off (elements
  fetched whole, hidden keys withheld by the sandbox);
* the rewritten query, run by the bare driver, brings back no hidden value: Neo4j never sent it.

Both forms of the policy's choice: the deny-list above, and an allow-list (``visible_properties``)
that shows the same keys; and the shipped Mentis policy's allow-list, whose Attempt lists no
``embedding``: the 1,024 floats never leave Neo4j.

``RETURN *`` is spelt out as the columns it stands for, so it is wrapped like any RETURN (UNION
branches, CALL subqueries and the rewrite's own variables included; the columns are Neo4j's own).
An element nested deeper than the wrapper rebuilds (four containers deep, ``collect`` of lists of
lists of paths, a ``reduce`` that nests) is refused (``sandbox.too_deep``) and never sent; nested lists and
maps of plain values are not refused. A query ending in a procedure call never runs under scope
(``scope.unsupported``), whichever procedures the policy allows.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from gateway import scope
from gateway.connection import Neo4jConnection
from gateway.domain import Principal, ToolResult
from gateway.errors import QueryRejected
from gateway.guard import parse_query
from gateway.mnr import seed
from gateway.policy import POLICIES_DIR, HiddenProperties, Policy, VisibleProperties, load_policy
from gateway.service import Gateway
from tests.support.graph import labelled_graph
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH

pytestmark = pytest.mark.neo4j2026

MARKER = f"NeverFetched{uuid.uuid4().hex[:8]}"
SECRET = "attempt secret 5d1e0a"
REL_SECRET = "relationship secret 0b77c4"
EMBEDDING = [0.314159265358979] * 64
POLICY = load_policy(ALL_PROPERTIES_POLICY_PATH).model_copy(
    update={
        "hidden_properties": HiddenProperties.model_validate(
            {"Attempt": ["embedding", "secret", "layers"], "KNOWS": ["secret"]}
        )
    }
)
# The same keys shown by an allow-list: every key not listed for an element's labels or type is hidden.
VISIBLE_POLICY = load_policy(ALL_PROPERTIES_POLICY_PATH).model_copy(
    update={
        "visible_properties": VisibleProperties.model_validate(
            {"nodes": {"Attempt": ["uid", "action"], "Fact": ["uid"]}, "relationships": {"KNOWS": ["since", "uid"]}}
            | {"default": ["uid"]}
        )
    }
)
POLICIES = {"deny-list": POLICY, "allow-list": VISIBLE_POLICY}
AGENT = Principal(name="never-fetched-agent", scope=frozenset({"project-a"}))
M = MARKER
# Every shape the wrapper covers: (name, query).
COVERED = [
    ("node", f"MATCH (a:{M}:Attempt) RETURN a ORDER BY a.uid"),
    ("node and a value", f"MATCH (a:{M}:Attempt) RETURN a.uid, a, 1 + 1 ORDER BY a.uid"),
    ("relationship", f"MATCH (:{M})-[k:KNOWS]->() RETURN k ORDER BY k.since"),
    ("path", f"MATCH p = (a:{M}:Attempt)-[:KNOWS]->(:{M}) RETURN p ORDER BY a.uid"),
    ("list of nodes", f"MATCH (a:{M}:Attempt {{uid: 'att-1'}}) RETURN [i IN range(1, 3) | a] AS xs"),
    (
        "map holding nodes",
        f"MATCH (a:{M}:Attempt)-[k:KNOWS]->(f) RETURN {{from: a, via: k, to: f, n: 1}} AS m ORDER BY a.uid",
    ),
    ("ORDER BY a property", f"MATCH (a:{M}:Attempt) RETURN a ORDER BY a.uid DESC"),
    ("ORDER BY, SKIP and LIMIT", f"MATCH (a:{M}) RETURN a ORDER BY a.uid SKIP 1 LIMIT 2"),
    ("DISTINCT", f"MATCH (a:{M}:Attempt)-[:KNOWS]->() RETURN DISTINCT a ORDER BY a.uid"),
    ("DISTINCT over rows", f"MATCH (a:{M}:Attempt), (b:{M}:Attempt) RETURN DISTINCT a ORDER BY a.uid"),
    ("collect", f"MATCH (a:{M}:Attempt) WITH a ORDER BY a.uid RETURN collect(a) AS xs"),
    (
        "collect grouped",
        f"MATCH (a:{M}:Attempt)-[k:KNOWS]->(f) WITH f, k ORDER BY k.since "
        "RETURN f.uid, collect(k) AS ks ORDER BY f.uid",
    ),
    ("count by node", f"MATCH (a:{M}:Attempt)-[:KNOWS]->(f) RETURN a, count(f) AS n ORDER BY n, a.uid"),
    ("UNION", f"MATCH (a:{M}:Attempt {{uid: 'att-1'}}) RETURN a AS x UNION MATCH (f:{M}:Fact) RETURN f AS x"),
    (
        "UNION ALL",
        f"MATCH (a:{M}:Attempt) RETURN a AS x ORDER BY a.uid "
        f"UNION ALL MATCH (a:{M}:Attempt) RETURN a AS x ORDER BY a.uid",
    ),
    ("list of paths", f"MATCH p = (a:{M}:Attempt)-[:KNOWS]->() WITH p ORDER BY a.uid RETURN collect(p) AS ps"),
    (
        "nodes of a path",
        f"MATCH p = (a:{M}:Attempt)-[:KNOWS]->() RETURN nodes(p) AS ns, relationships(p) AS rs ORDER BY a.uid",
    ),
    ("list of lists", f"MATCH (a:{M}:Attempt) RETURN [[a, a.uid], [a]] AS xs ORDER BY a.uid"),
    ("map of lists", f"MATCH (a:{M}:Attempt)-[k:KNOWS]->() RETURN {{xs: [a, k], n: {{deep: a}}}} AS m ORDER BY a.uid"),
    ("nulls", f"MATCH (a:{M}:Attempt) OPTIONAL MATCH (a)-[k:NOPE]->(b) RETURN a.uid, k, b, [b] ORDER BY a.uid"),
    # Every column a value or surely one element: each projected alone, without the container levels.
    (
        "nulls, each column alone",
        f"MATCH (a:{M}:Attempt) OPTIONAL MATCH (a)-[k:NOPE]->(b) RETURN a.uid, k, b ORDER BY a.uid",
    ),
    ("elements and values alone", f"MATCH (a:{M}:Attempt)-[k:KNOWS]->(f) RETURN a AS x, k, f, f.uid ORDER BY x.uid"),
    ("map projection", f"MATCH (a:{M}:Attempt) RETURN a {{.uid, self: a}} AS m ORDER BY m.uid"),
    ("plain values", f"MATCH (a:{M}:Attempt) RETURN a.uid, [1, 2], {{k: 'v'}}, null ORDER BY a.uid"),
    ("three containers deep", f"MATCH (a:{M}:Attempt {{uid: 'att-1'}}) RETURN [[[a]]] AS xs"),
    ("map of lists of lists", f"MATCH (a:{M}:Attempt) RETURN {{deep: [[a]], k: [[1]]}} AS m ORDER BY a.uid"),
    (
        "deep plain values",
        f"MATCH (a:{M}:Attempt) RETURN a.uid, [[[[[1, 'x']]]]] AS xs, [[[{{k: {{v: [1]}}}}]]] AS ms ORDER BY a.uid",
    ),
    ("RETURN *", f"MATCH (a:{M}:Attempt {{uid: 'att-1'}}) RETURN *"),
    ("RETURN * and items", f"MATCH (a:{M}:Attempt)-[k:KNOWS]->(f) RETURN *, a.uid AS u, 1 + 1 ORDER BY u"),
    ("RETURN * naming all", f"MATCH (a:{M}:Attempt) WITH a, a.uid AS u RETURN *, a ORDER BY u"),
    ("RETURN DISTINCT * over generated", f"MATCH (a:{M}:Attempt)-->() RETURN DISTINCT * ORDER BY a.uid"),
    (
        "RETURN * in UNION",
        f"MATCH (x:{M}:Attempt {{uid: 'att-1'}}) WITH x, 0 AS n RETURN * "
        f"UNION MATCH (x:{M}:Fact) WITH x, 1 AS n RETURN *",
    ),
    (
        "RETURN * after CALL",
        f"MATCH (f:{M}:Fact) CALL (f) {{ MATCH (a:{M}:Attempt)-[k:KNOWS]->(f) RETURN a, k }} "
        "WITH * RETURN * ORDER BY a.uid",
    ),
]
# Shapes nested past the wrapper's levels: refused, never sent.
REFUSED = [
    ("four containers deep", f"MATCH (a:{M}:Attempt {{uid: 'att-1'}}) RETURN [[[[a]]]] AS xs"),
    (
        "collect of lists of paths",
        f"MATCH p = (a:{M}:Attempt)-[:KNOWS]->() WITH p ORDER BY a.uid RETURN collect([[p]]) AS x",
    ),
    ("reduce that nests", f"MATCH (a:{M}:Attempt) RETURN reduce(x = [a, 1], i IN range(1, 5) | [x, 1]) AS x"),
    # An element in maps nested past the look-ahead (plain values there are refused alike).
    ("maps past the look-ahead", f"MATCH (a:{M}:Attempt) RETURN [[[{{k: {{v: {{w: {{n: a}}}}}}}}]]] AS x"),
]


@pytest.fixture(scope="module")
def graph(neo4j_driver: Any, neo4j_connection: Any) -> Iterator[str]:
    seed = [
        f"CREATE (a:{M}:Attempt {{uid: 'att-1', layers: ['project-a'], action: 'ran', embedding: $embedding, "
        "secret: $secret}), "
        f"(b:{M}:Attempt {{uid: 'att-2', layers: ['project-a'], action: 'fixed', secret: $secret}}), "
        f"(f:{M}:Fact {{uid: 'fact-1', layers: [], secret: 'a fact hides nothing'}}), "
        "(a)-[:KNOWS {layers: [], since: 2020, secret: $rel_secret}]->(f), "
        "(b)-[:KNOWS {layers: [], since: 2021, secret: $rel_secret}]->(f)"
    ]
    params = {"embedding": EMBEDDING, "secret": SECRET, "rel_secret": REL_SECRET}
    with labelled_graph(neo4j_driver, M, seed, database=neo4j_connection.database, **params):
        yield M


def _unwrapped(monkeypatch: pytest.MonkeyPatch) -> None:
    """Today's path: elements fetched whole, hidden keys withheld by the sandbox."""
    monkeypatch.setattr("gateway.scope.passes.wrap_returns", lambda *_: False)


def _answer(result: ToolResult) -> str:
    return json.dumps(
        [result.columns, result.rows, result.rowCount, result.bytes, result.truncated, result.withheld],
        sort_keys=False,
    )


def _hidden_in(text: str, *, kept: bool = True) -> bool:
    """A hidden value in ``text``; ``kept``: the scope's ``layers`` too, which Neo4j sends for the result check."""
    values = [SECRET, REL_SECRET, "0.314159265358979", *(["project-a"] if kept else [])]
    return any(value in text for value in values)


@pytest.mark.parametrize("form", sorted(POLICIES))
@pytest.mark.parametrize("transport", ["bolt", "query-api"])
def test_every_shape_answers_as_without_the_wrapper(
    request: pytest.FixtureRequest, graph: str, transport: str, form: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = request.getfixturevalue("sandbox_runner" if transport == "bolt" else "query_api_runner")
    gateway = Gateway(POLICIES[form], runner)
    shapes = COVERED
    wrapped = {name: _answer(gateway.run("analyze", query, {}, AGENT)) for name, query in shapes}
    with monkeypatch.context() as patched:
        _unwrapped(patched)
        plain = {name: _answer(gateway.run("analyze", query, {}, AGENT)) for name, query in shapes}
    for name, _ in shapes:
        # Equal as JSON: a node's keys may come in another order (keys() vs the driver's), never other values.
        assert json.loads(wrapped[name]) == json.loads(plain[name]), f"{name}: the wrapper changed the answer"
        assert not _hidden_in(wrapped[name]), f"{name}: a hidden value reached the answer"
    assert json.loads(wrapped["node"])[2] == 2 and json.loads(wrapped["UNION"])[2] == 2  # the shapes answered rows


def _rewritten(query: str, policy: Policy = POLICY, principal: Principal = AGENT) -> tuple[str, dict[str, Any]]:
    parsed = parse_query(query, policy.tool("analyze").limits, "5")
    plan = scope.plan(parsed, policy, "analyze", principal)
    return plan.cypher, plan.params


@pytest.mark.parametrize("form", sorted(POLICIES))
@pytest.mark.parametrize(("name", "query"), COVERED, ids=[name for name, _ in COVERED])
def test_neo4j_never_sends_a_hidden_value(
    neo4j_driver: Any, neo4j_connection: Any, graph: str, name: str, query: str, form: str
) -> None:
    cypher, params = _rewritten(query, POLICIES[form])
    records, _, columns = neo4j_driver.execute_query(cypher, params, database_=neo4j_connection.database)
    sent = repr([record.values() for record in records])
    assert records, f"{name}: no rows"
    _, _, own = neo4j_driver.execute_query(query, database_=neo4j_connection.database)
    assert columns == own, f"{name}: the rewrite changed the columns"
    assert "att-" in sent or "since" in sent, f"{name}: the shown values were not sent"
    assert not _hidden_in(sent, kept=False), f"{name}: Neo4j sent a hidden value"


@pytest.mark.parametrize("form", sorted(POLICIES))
@pytest.mark.parametrize(("name", "query"), REFUSED, ids=[name for name, _ in REFUSED])
def test_shapes_past_the_wrapper_are_never_sent(
    neo4j_driver: Any, neo4j_connection: Any, graph: str, name: str, query: str, form: str
) -> None:
    cypher, params = _rewritten(query, POLICIES[form])
    records, _, _ = neo4j_driver.execute_query(cypher, params, database_=neo4j_connection.database)
    sent = repr([record.values() for record in records])
    assert "'deep': True" in sent, f"{name}: no marker where the wrapper stops"
    assert not _hidden_in(sent, kept=False), f"{name}: Neo4j sent a hidden value"
    # The control: the agent's own query does carry them.
    records, _, _ = neo4j_driver.execute_query(query, database_=neo4j_connection.database)
    assert _hidden_in(repr([record.values() for record in records]), kept=False), name


@pytest.mark.parametrize("form", sorted(POLICIES))
@pytest.mark.parametrize("transport", ["bolt", "query-api"])
def test_shapes_past_the_wrapper_are_refused(
    request: pytest.FixtureRequest, graph: str, transport: str, form: str
) -> None:
    runner = request.getfixturevalue("sandbox_runner" if transport == "bolt" else "query_api_runner")
    gateway = Gateway(POLICIES[form], runner)
    for name, query in REFUSED:
        with pytest.raises(QueryRejected) as refused:
            gateway.run("analyze", query, {}, AGENT)
        assert refused.value.rule == "sandbox.too_deep", name
        assert not _hidden_in(str(refused.value)), name


# Procedures the corpus's test policies allow, index queries yielding nodes among them.
PROCEDURES = ["db.labels", "db.index.fulltext.queryNodes", "db.index.vector.queryNodes"]
PROCEDURE_POLICY = POLICY.model_copy(
    update={
        "tools": {
            **POLICY.tools,
            "analyze": POLICY.tool("analyze").model_copy(update={"procedures_allowed": frozenset(PROCEDURES)}),
        }
    }
)
ENDING_IN_A_CALL = [
    "CALL db.labels()",
    "CALL db.index.fulltext.queryNodes('attempts', 'ran') YIELD node",
    f"MATCH (a:{M}:Attempt) CALL db.index.vector.queryNodes('embeddings', 1, a.uid) YIELD node, score",
    "CALL db.index.fulltext.queryNodes('attempts', 'ran') YIELD node RETURN node",
]


def test_a_query_ending_in_a_procedure_call_never_runs(sandbox_runner: Any, graph: str) -> None:
    gateway = Gateway(PROCEDURE_POLICY, sandbox_runner)
    for query in ENDING_IN_A_CALL:
        # Past the guard (the policy allows the procedure), refused by the rewrite before anything runs.
        assert gateway.check("analyze", query, {}, AGENT).rule == "scope.unsupported", query
        with pytest.raises(QueryRejected) as refused:
            gateway.run("analyze", query, {}, AGENT)
        assert refused.value.rule == "scope.unsupported", (query, refused.value)
    # FINISH, the other way to end without RETURN, sends no row at all.
    finished = gateway.run("analyze", f"MATCH (a:{M}:Attempt) FINISH", {}, AGENT)
    assert finished.columns == [] and finished.rows == [] and finished.withheld == 0


MENTIS = load_policy(POLICIES_DIR / "mentis.yaml")
PAYMENTS = Principal(name="payments", attributes={"repositories": frozenset({"acme/payments"})})
MENTIS_ATTEMPTS = "MATCH (a:MentisFixture:Attempt) RETURN a, [a] AS xs ORDER BY a.id"


def _mentis_sent(driver: Any, connection: Neo4jConnection) -> tuple[list[Any], str]:
    cypher, params = _rewritten(MENTIS_ATTEMPTS, MENTIS, PAYMENTS)
    records, _, _ = driver.execute_query(cypher, params, database_=connection.database)
    return records, repr([record.values() for record in records])


def test_mentis_embeddings_are_never_sent(
    neo4j_driver: Any, neo4j_connection: Neo4jConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert seed.seed_builtin(neo4j_connection, "mentis") >= 5
    records, sent = _mentis_sent(neo4j_driver, neo4j_connection)
    assert len(records) >= 3 and "'action'" in sent, "the payments attempts and their listed keys were not sent"
    assert "embedding" not in sent, "Neo4j sent the unlisted embedding"
    with monkeypatch.context() as patched:
        _unwrapped(patched)
        _, fetched = _mentis_sent(neo4j_driver, neo4j_connection)
    # The control: without the wrapper the same rows carry every embedding.
    assert "embedding" in fetched
