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

The shapes the wrapper does not reach (an element three containers deep, ``RETURN *``) are run
too: their hidden values are still sent (SECURITY.md names them) and still withheld.
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
    ("map projection", f"MATCH (a:{M}:Attempt) RETURN a {{.uid, self: a}} AS m ORDER BY m.uid"),
    ("plain values", f"MATCH (a:{M}:Attempt) RETURN a.uid, [1, 2], {{k: 'v'}}, null ORDER BY a.uid"),
]
# Shapes the wrapper leaves as they are: hidden values are fetched, then withheld by the sandbox.
FETCHED = [
    ("three containers deep", f"MATCH (a:{M}:Attempt {{uid: 'att-1'}}) RETURN [[[a]]] AS xs"),
    ("RETURN *", f"MATCH (a:{M}:Attempt {{uid: 'att-1'}}) RETURN *"),
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
    shapes = COVERED + FETCHED
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
    records, _, _ = neo4j_driver.execute_query(cypher, params, database_=neo4j_connection.database)
    sent = repr([record.values() for record in records])
    assert records, f"{name}: no rows"
    assert "att-" in sent or "since" in sent, f"{name}: the shown values were not sent"
    assert not _hidden_in(sent, kept=False), f"{name}: Neo4j sent a hidden value"


@pytest.mark.parametrize("form", sorted(POLICIES))
@pytest.mark.parametrize(("name", "query"), FETCHED, ids=[name for name, _ in FETCHED])
def test_shapes_past_the_wrapper_are_still_fetched(
    neo4j_driver: Any, neo4j_connection: Any, graph: str, name: str, query: str, form: str
) -> None:
    # What SECURITY.md states: these shapes' hidden values leave Neo4j (the sandbox withholds them).
    cypher, params = _rewritten(query, POLICIES[form])
    records, _, _ = neo4j_driver.execute_query(cypher, params, database_=neo4j_connection.database)
    assert _hidden_in(repr([record.values() for record in records]), kept=False), name


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
