"""A hidden property weighs nothing: its size changes neither rows, truncation nor counters.

Through ``Gateway``, the real sandbox and Neo4j, on both transports. Two Attempts alike in every
visible key (uids of one length), one with a hidden 1,024-float embedding, one with none; the
scope's ``layers`` is hidden too, so the result check reads a key the answer never shows. The
query repeats the node ``k`` times (``[i IN range(1, $k) | a]``): were the hidden values sized,
the 512,000-byte limit would cut the answer with the embedding near k = 490 and not without it,
and a search over ``k`` would read the hidden list's length. Every ``k`` answers alike for both,
whole (the shown node is about 100 bytes: 1,500 of them fit), on the Query API transport too:
the rewrite's projection keeps the hidden values out of Neo4j's response, and the streaming
reader's cap counts only what it keeps.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.domain import Principal, ToolResult
from gateway.policy import HiddenProperties, load_policy
from gateway.service import Gateway
from tests.support.graph import labelled_graph
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH

MARKER = f"Weightless{uuid.uuid4().hex[:8]}"
EMBEDDING = [0.123456789012345] * 1024
POLICY = load_policy(ALL_PROPERTIES_POLICY_PATH).model_copy(
    update={"hidden_properties": HiddenProperties.model_validate({"Attempt": ["embedding", "layers"]})}
)
AGENT = Principal(name="weightless-agent", scope=frozenset({"project-a"}))
QUERY = f"MATCH (a:{MARKER}:Attempt {{uid: $u}}) RETURN [i IN range(1, $k) | a] AS xs"
# One repetition, the cut the embedding would cause, and well past it.
REPEATS = {"bolt": (1, 490, 1500), "query-api": (1, 490, 1500)}


@pytest.fixture(scope="module")
def graph(neo4j_driver: Any, neo4j_connection: Any) -> Iterator[str]:
    seed = [
        f"CREATE (:{MARKER}:Attempt {{uid: 'heavy', layers: ['project-a'], action: 'ran', embedding: $embedding}}), "
        f"(:{MARKER}:Attempt {{uid: 'empty', layers: ['project-a'], action: 'ran'}})"
    ]
    with labelled_graph(neo4j_driver, MARKER, seed, database=neo4j_connection.database, embedding=EMBEDDING):
        yield MARKER


def _seen(result: ToolResult) -> tuple[str, int, int, bool, str | None, int, int]:
    rows = json.dumps(result.rows).replace("heavy", "empty")
    return rows, result.rowCount, result.bytes, result.truncated, result.truncation, result.withheld, result.redacted


@pytest.mark.parametrize("transport", ["bolt", "query-api"])
def test_a_hidden_embedding_changes_nothing_an_answer_says(
    request: pytest.FixtureRequest, graph: str, transport: str
) -> None:
    runner = request.getfixturevalue("sandbox_runner" if transport == "bolt" else "query_api_runner")
    gateway = Gateway(POLICY, runner)
    for k in REPEATS[transport]:
        heavy = gateway.run("analyze", QUERY, {"u": "heavy", "k": k}, AGENT)
        empty = gateway.run("analyze", QUERY, {"u": "empty", "k": k}, AGENT)
        assert _seen(heavy) == _seen(empty), f"k={k}: the hidden embedding showed in the answer's shape"
        assert "0.123456789012345" not in json.dumps(heavy.rows) and "layers" not in json.dumps(heavy.rows)
        assert heavy.rowCount == 1 and not heavy.truncated and heavy.withheld == k
