"""A derived rule on both sandbox transports: a visible Task comes back, a hidden one never.

Under policies/mentis.yaml a Task is visible through its Repository (a derived walk). Through
``Gateway``, the real sandbox and Neo4j: the rewrite decides on both transports; the result
check confirms such an element with Neo4j (in the job's transaction on Bolt, in a second READ
request on the Query API), so each layer alone answers the visible task and never the hidden one.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.domain import LayerSwitches, Principal
from gateway.policy import load_policy
from gateway.service import Gateway
from tests.support.graph import labelled_graph

pytestmark = pytest.mark.neo4j2026

POLICIES = Path(__file__).resolve().parents[3] / "policies"

MARKER = f"DerivedQapi{uuid.uuid4().hex[:8]}"
MENTIS = load_policy(POLICIES / "mentis.yaml")
ALICE = Principal(name="derived-qapi-alice", attributes={"repositories": frozenset({"acme/seen"})})


@pytest.fixture(scope="module")
def graph(neo4j_driver: Any, neo4j_connection: Any) -> Iterator[str]:
    seed = [
        f"CREATE (r:{MARKER}:Repository {{name: 'acme/seen'}})-[:HAS_TASK]->(:{MARKER}:Task {{id: 'T-seen'}}), "
        f"(h:{MARKER}:Repository {{name: 'acme/hidden'}})-[:HAS_TASK]->(:{MARKER}:Task {{id: 'T-hidden'}})"
    ]
    with labelled_graph(neo4j_driver, MARKER, seed, database=neo4j_connection.database):
        yield MARKER


@pytest.mark.parametrize("transport", ["bolt", "query-api"])
def test_a_task_visible_through_its_repository_comes_back_on_both_transports(
    request: pytest.FixtureRequest, graph: str, transport: str
) -> None:
    runner = request.getfixturevalue("sandbox_runner" if transport == "bolt" else "query_api_runner")
    result = Gateway(MENTIS, runner).run("analyze", f"MATCH (t:{graph}:Task) RETURN t.id AS id", {}, ALICE)
    assert result.degraded == [], result.degraded
    assert result.rows == [["T-seen"]]


@pytest.mark.parametrize("rewrite", [True, False], ids=["both-layers", "result-check-only"])
@pytest.mark.parametrize("transport", ["bolt", "query-api"])
def test_a_whole_task_visible_through_its_repository_comes_back_on_both_transports(
    request: pytest.FixtureRequest, graph: str, transport: str, rewrite: bool
) -> None:
    # The result check asks Neo4j about each whole Task it meets (the walk to a visible repository):
    # it must confirm the visible one and hide the other, on either transport, with or without the rewrite.
    runner = request.getfixturevalue("sandbox_runner" if transport == "bolt" else "query_api_runner")
    gateway = Gateway(MENTIS, runner, layers=LayerSwitches(scope_rewrite=rewrite))
    result = gateway.run("analyze", f"MATCH (t:{graph}:Task) RETURN t ORDER BY t.id", {}, ALICE)
    assert [row[0]["properties"] for row in result.rows] == [{"id": "T-seen"}]
    assert result.degraded == ([] if rewrite else ["scope:redacted"]), result.degraded
