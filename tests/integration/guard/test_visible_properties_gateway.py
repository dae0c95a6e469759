"""The allow-list through the real stack: a misspelt deny-list leaks the secret, the allow-list never does.

Through ``Gateway``, the real sandbox and Neo4j (both release lines, both sandbox transports for
whole elements). The graph's repository carries ``apiToken``. Under the deny-list a user wrote
(``hidden_properties: {Repository: [api_token]}``, misspelt) the token comes back; under the
allow-list (``visible_properties`` listing what an agent needs, not ``apiToken``) it never does:
not in a whole node, not by name (refused), not in ``schema``, not found by an MNR text selector.
A key listed for one label only reads as null on another, in the answer and in a pattern map.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.domain import Principal, ToolResult
from gateway.errors import QueryRejected
from gateway.mnr.cases import Selector
from gateway.mnr.match import Matcher
from gateway.policy import HiddenProperties, VisibleProperties, load_policy
from gateway.runner import SandboxRunner
from gateway.service import Gateway
from tests.support.graph import labelled_graph
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH

pytestmark = pytest.mark.neo4j2026

MARKER = f"VisibleProps{uuid.uuid4().hex[:8]}"
# A key no other test data has, sorting first, so the schema tool's 100 rows always reach it.
TOKEN_KEY = f"AAapiToken{uuid.uuid4().hex[:6]}"
TOKEN = "tok-s3cr3t-4be1f09c"
REPO_TITLE = "repository title 51d0e2"  # Repository carries a title the allow-list lists for Task only
BASE = load_policy(ALL_PROPERTIES_POLICY_PATH)
DENY = BASE.model_copy(update={"hidden_properties": HiddenProperties.model_validate({"Repository": ["api_token"]})})
ALLOW = BASE.model_copy(
    update={
        "visible_properties": VisibleProperties.model_validate(
            {
                "nodes": {"Repository": ["uid", "name"], "Task": ["uid", "title"]},
                "relationships": {"HAS_TASK": ["since"]},
                "default": ["uid"],
            }
        )
    }
)
AGENT = Principal(name="visible-props-agent", scope=frozenset({"project-a"}))


@pytest.fixture(scope="module")
def graph(neo4j_driver: Any, neo4j_connection: Any) -> Iterator[str]:
    seed = [
        f"CREATE (r:{MARKER}:Repository {{uid: 'repo-1', layers: ['project-a'], name: 'acme/payments', "
        f"`{TOKEN_KEY}`: $token, title: $repo_title}}), "
        f"(t:{MARKER}:Task {{uid: 'task-1', layers: ['project-a'], title: 'PAY-101', `{TOKEN_KEY}`: $token}}), "
        f"(r)-[:HAS_TASK {{layers: [], since: 2020, `{TOKEN_KEY}`: $token}}]->(t)"
    ]
    with labelled_graph(neo4j_driver, MARKER, seed, database=neo4j_connection.database, token=TOKEN,
                        repo_title=REPO_TITLE):  # fmt: skip
        yield MARKER


def _text(result: ToolResult) -> str:
    return json.dumps(result.rows)


def _text_hits(result: ToolResult, text: str) -> list[Any]:
    return Matcher("uid", {}).find(Selector(text=text), result.columns, result.rows)


@pytest.mark.parametrize("transport", ["bolt", "query-api"])
def test_whole_elements_leak_under_the_misspelt_deny_list_and_never_under_the_allow_list(
    request: pytest.FixtureRequest, graph: str, transport: str
) -> None:
    sandbox_runner = request.getfixturevalue("sandbox_runner" if transport == "bolt" else "query_api_runner")
    query = f"MATCH p = (r:{MARKER}:Repository)-[h:HAS_TASK]->(t) RETURN r, h, t, p"
    leaked = Gateway(DENY, sandbox_runner).run("analyze", query, {}, AGENT)
    assert TOKEN in _text(leaked) and _text_hits(leaked, "s3cr3t"), "the misspelt deny-list should leak (control)"
    shown = Gateway(ALLOW, sandbox_runner).run("analyze", query, {}, AGENT)
    assert shown.rowCount == 1 and shown.degraded == []
    assert TOKEN not in _text(shown) and TOKEN_KEY not in _text(shown) and _text_hits(shown, "s3cr3t") == []
    repo, has_task, task = shown.rows[0][0], shown.rows[0][1], shown.rows[0][2]
    # layers is read by the result check (the rule's property) and withheld after it
    assert repo["properties"] == {"uid": "repo-1", "name": "acme/payments"}
    assert has_task["properties"] == {"since": 2020}
    assert task["properties"] == {"uid": "task-1", "title": "PAY-101"}
    assert shown.withheld == 6  # r, h, t and the path's three: every element counts
    assert shown.bytes == len(json.dumps(shown.rows, ensure_ascii=False, separators=(",", ":")).encode())


def test_the_key_by_name_is_answered_under_the_deny_list_and_refused_under_the_allow_list(
    sandbox_runner: SandboxRunner, graph: str
) -> None:
    query = f"MATCH (r:{MARKER}:Repository) RETURN r.`{TOKEN_KEY}` AS token"
    assert Gateway(DENY, sandbox_runner).run("analyze", query, {}, AGENT).rows == [[TOKEN]]
    with pytest.raises(QueryRejected) as refused:
        Gateway(ALLOW, sandbox_runner).run("analyze", query, {}, AGENT)
    assert refused.value.rule == "property.not_visible"
    assert TOKEN_KEY in refused.value.reason and "visible_properties" in refused.value.reason


def test_a_key_listed_for_another_label_reads_as_null_and_matches_nothing(
    sandbox_runner: SandboxRunner, graph: str
) -> None:
    query = f"MATCH (n:{MARKER}) RETURN n.uid AS uid, n.title ORDER BY uid"
    assert Gateway(DENY, sandbox_runner).run("analyze", query, {}, AGENT).rows == [
        ["repo-1", REPO_TITLE], ["task-1", "PAY-101"],
    ]  # fmt: skip
    shown = Gateway(ALLOW, sandbox_runner).run("analyze", query, {}, AGENT)
    assert shown.columns == ["uid", "n.title"]
    assert shown.rows == [["repo-1", None], ["task-1", "PAY-101"]]
    oracle = f"MATCH (n:{MARKER} {{title: $t}}) RETURN n.uid AS uid"
    assert Gateway(DENY, sandbox_runner).run("analyze", oracle, {"t": REPO_TITLE}, AGENT).rows == [["repo-1"]]
    assert Gateway(ALLOW, sandbox_runner).run("analyze", oracle, {"t": REPO_TITLE}, AGENT).rows == []
    where = f"MATCH (n:{MARKER}) WHERE n.title STARTS WITH 'repository' RETURN n.uid AS uid"
    assert Gateway(ALLOW, sandbox_runner).run("analyze", where, {}, AGENT).rows == []
    # The repository's stored title is not shown: it reads as null, beside a condition that
    # guards the WHERE (size() could raise), so whether a title is stored changes nothing.
    unset = f"MATCH (n:{MARKER}) WHERE n.title IS NULL AND size(n.uid) > 0 RETURN n.uid AS uid"
    assert Gateway(DENY, sandbox_runner).run("analyze", unset, {}, AGENT).rows == []
    assert Gateway(ALLOW, sandbox_runner).run("analyze", unset, {}, AGENT).rows == [["repo-1"]]


def test_two_keys_of_one_relationship_listed_for_different_types_are_read_in_one_where(
    sandbox_runner: SandboxRunner, graph: str
) -> None:
    # since is shown by HAS_TASK only, uid by HAS_TASK and another type: two guards testing a
    # relationship's type against different lists, which Neo4j 5.26 fails to plan when they are
    # literal lists.
    policy = BASE.model_copy(
        update={
            "visible_properties": VisibleProperties.model_validate(
                {"nodes": {}, "relationships": {"HAS_TASK": ["since", "uid"], "ASSIGNED_TO": ["uid"]}, "default": []}
            )
        }
    )
    query = (
        f"MATCH (:{MARKER}:Repository)-[h:HAS_TASK]->() WHERE h.since IN [2020, 2021] AND h.uid IS NULL "
        "RETURN count(*) AS n, collect(h.since) AS since"
    )
    assert Gateway(policy, sandbox_runner).run("analyze", query, {}, AGENT).rows == [[1, [2020]]]


def test_the_schema_tool_lists_the_token_key_only_under_the_deny_list(
    sandbox_runner: SandboxRunner, graph: str
) -> None:
    assert TOKEN_KEY in Gateway(DENY, sandbox_runner).schema(AGENT).propertyKeys
    after = Gateway(ALLOW, sandbox_runner).schema(AGENT)
    assert TOKEN_KEY not in after.propertyKeys and "layers" not in after.propertyKeys
    assert {"uid", "name", "title", "since"} <= set(after.propertyKeys) and after.degraded == []
