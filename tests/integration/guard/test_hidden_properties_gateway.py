"""Hidden properties through the real stack: every path saw the value with the policy off, never with it on.

Through ``Gateway``, the real sandbox and Neo4j (both release lines). The policy hides an
``embedding`` and a secret on ``Attempt`` and a secret on ``KNOWS``. Each way of reaching a value
(projection, WHERE, ORDER BY, map projection, ``properties()``, ``keys()``, dynamic access) first
answers it under the same policy without ``hidden_properties`` (the test can fail), then is refused
as ``property.hidden``; whole nodes, relationships and paths come back without the keys, and the
``schema`` tool stops listing them.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from gateway.domain import Principal, ToolResult
from gateway.errors import QueryRejected
from gateway.policy import HiddenProperties, load_policy
from gateway.runner import SandboxRunner
from gateway.service import Gateway
from tests.support.graph import labelled_graph
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH

pytestmark = pytest.mark.neo4j2026

MARKER = f"HiddenProps{uuid.uuid4().hex[:8]}"
# A key no other test data has, sorting first, so the schema tool's 100 rows always reach it.
SECRET = f"AAsecret{uuid.uuid4().hex[:8]}"
EMBEDDING = [0.918273645, 0.564738291, 0.192837465, 0.746352819]
SECRET_VALUE = "attempt secret 7f3a9c"
REL_SECRET = "relationship secret 91c2be"
OFF = load_policy(ALL_PROPERTIES_POLICY_PATH)
ON = OFF.model_copy(
    update={"hidden_properties": HiddenProperties.model_validate({"Attempt": ["embedding", SECRET], "KNOWS": [SECRET]})}
)
AGENT = Principal(name="hidden-props-agent", scope=frozenset({"project-a"}))


@pytest.fixture(scope="module")
def graph(neo4j_driver: Any, neo4j_connection: Any) -> Iterator[str]:
    seed = [
        f"CREATE (a:{MARKER}:Attempt {{uid: 'att-1', layers: ['project-a'], action: 'ran the tests', "
        f"embedding: $embedding, `{SECRET}`: $secret}}), "
        f"(b:{MARKER}:Attempt {{uid: 'att-2', layers: ['project-a'], action: 'fixed it', embedding: [0.1], "
        f"`{SECRET}`: 'a'}}), "
        f"(f:{MARKER}:Fact {{uid: 'fact-1', layers: [], embedding: 'kept: Fact hides nothing'}}), "
        f"(a)-[:KNOWS {{layers: [], since: 2020, `{SECRET}`: $rel_secret}}]->(f)"
    ]
    params = {"embedding": EMBEDDING, "secret": SECRET_VALUE, "rel_secret": REL_SECRET}
    with labelled_graph(neo4j_driver, MARKER, seed, database=neo4j_connection.database, **params):
        yield MARKER


def _text(result: ToolResult) -> str:
    return json.dumps(result.rows)


def _has_value(result: ToolResult) -> bool:
    text = _text(result)
    return SECRET_VALUE in text or REL_SECRET in text or "0.918273645" in text


# (path, query, params, what the answer shows while nothing is hidden)
PATHS: list[tuple[str, str, dict[str, Any], Callable[[ToolResult], bool]]] = [
    ("projection", f"MATCH (a:{MARKER}:Attempt) RETURN a.embedding, a.`{SECRET}`", {}, _has_value),
    ("projection of a relationship", f"MATCH (:{MARKER})-[k:KNOWS]->() RETURN k.`{SECRET}`", {}, _has_value),
    (
        "WHERE",  # an oracle: which attempt's secret starts with the guess
        f"MATCH (a:{MARKER}:Attempt) WHERE a.`{SECRET}` STARTS WITH 'attempt secret 7' RETURN a.uid",
        {},
        lambda r: r.rows == [["att-1"]],
    ),
    (
        "ORDER BY",  # the order of the uids is the order of the secrets ('a' < 'attempt …')
        f"MATCH (a:{MARKER}:Attempt) RETURN a.uid ORDER BY a.`{SECRET}` DESC",
        {},
        lambda r: r.rows == [["att-1"], ["att-2"]],
    ),
    ("map projection", f"MATCH (a:{MARKER}:Attempt) RETURN a {{.uid, .embedding}}", {}, _has_value),
    ("map projection, all", f"MATCH (a:{MARKER}:Attempt) RETURN a {{.*}}", {}, _has_value),
    ("properties()", f"MATCH (a:{MARKER}:Attempt) RETURN properties(a)", {}, _has_value),
    ("keys()", f"MATCH (a:{MARKER}:Attempt) RETURN keys(a)", {}, lambda r: SECRET in _text(r)),
    ("dynamic access", f"MATCH (a:{MARKER}:Attempt) RETURN a[$k]", {"k": SECRET}, _has_value),
    ("dynamic access, computed", f"MATCH (a:{MARKER}:Attempt) RETURN a['emb' + 'edding']", {}, _has_value),
    (
        "pattern property map",
        f"MATCH (a:{MARKER}:Attempt {{`{SECRET}`: $s}}) RETURN a.uid",
        {"s": SECRET_VALUE},
        lambda r: r.rows == [["att-1"]],
    ),
]


@pytest.mark.parametrize(("path", "query", "params", "saw"), PATHS, ids=[p[0] for p in PATHS])
def test_each_path_saw_the_value_then_is_refused(
    sandbox_runner: SandboxRunner,
    graph: str,
    path: str,
    query: str,
    params: dict[str, Any],
    saw: Callable[[ToolResult], bool],
) -> None:
    before = Gateway(OFF, sandbox_runner).run("analyze", query, params, AGENT)
    assert saw(before), f"{path}: the control did not see the value: {before.rows}"
    with pytest.raises(QueryRejected) as refused:
        Gateway(ON, sandbox_runner).run("analyze", query, params, AGENT)
    assert refused.value.rule == "property.hidden", refused.value.reason


@pytest.mark.parametrize("transport", ["bolt", "query-api"])
def test_whole_nodes_relationships_and_paths_come_back_without_the_hidden_keys(
    request: pytest.FixtureRequest, graph: str, transport: str
) -> None:
    sandbox_runner = request.getfixturevalue("sandbox_runner" if transport == "bolt" else "query_api_runner")
    query = f"MATCH p = (a:{MARKER}:Attempt)-[k:KNOWS]->(f) RETURN a, k, f, p, collect(a) AS all"
    before = Gateway(OFF, sandbox_runner).run("analyze", query, {}, AGENT)
    assert _has_value(before) and before.withheld == 0
    after = Gateway(ON, sandbox_runner).run("analyze", query, {}, AGENT)
    assert after.rowCount == 1 and after.degraded == []
    assert not _has_value(after) and SECRET not in _text(after) and "0.918273645" not in _text(after)
    attempt, knows, fact = after.rows[0][0], after.rows[0][1], after.rows[0][2]
    assert attempt["properties"] == {"uid": "att-1", "layers": ["project-a"], "action": "ran the tests"}
    assert knows["properties"] == {"layers": [], "since": 2020}
    assert fact["properties"]["embedding"] == "kept: Fact hides nothing"  # Fact hides nothing
    # a, k, the path's a and k, the collected a: five elements shown without their hidden keys.
    assert after.withheld == 5
    assert after.bytes == len(json.dumps(after.rows, ensure_ascii=False, separators=(",", ":")).encode())


def test_the_schema_tool_lists_the_keys_only_while_nothing_hides_them(
    sandbox_runner: SandboxRunner, graph: str
) -> None:
    before = Gateway(OFF, sandbox_runner).schema(AGENT)
    assert SECRET in before.propertyKeys and "embedding" in before.propertyKeys
    after = Gateway(ON, sandbox_runner).schema(AGENT)
    assert SECRET not in after.propertyKeys and "embedding" not in after.propertyKeys
    assert "action" in after.propertyKeys and "Attempt" in after.labels and after.degraded == []
