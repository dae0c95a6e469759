"""The Query API transport (httpx over the forwarder's socket), against the managed Neo4j's
HTTP Query API. A hosted Neo4j would be https on 443; the one-host rule is the same."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.domain import Principal
from gateway.policy import load_policy
from gateway.runner import SandboxRunner
from gateway.service import Gateway
from tests.support.graph import count_label, fingerprint, unique_label
from tests.support.jobs import make_job
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH

pytestmark = pytest.mark.neo4j2026  # runs on 5.26 and again on 2026.x


def test_query_api_reads_through_the_sandbox(query_api_runner: SandboxRunner, seeded: str) -> None:
    result = query_api_runner.run(make_job(f"MATCH (n:{seeded}) WHERE n.i <= 2 RETURN n, n.i AS i ORDER BY i"))
    assert result.ok, result.error
    assert result.columns == ["n", "i"] and [r[1] for r in result.rows] == [1, 2]
    assert result.rows[0][0]["$type"] == "node" and result.rows[0][0]["labels"] == [seeded]


def test_query_api_truncates_and_refuses_writes(query_api_runner: SandboxRunner, neo4j_driver: Any) -> None:
    result = query_api_runner.run(make_job("UNWIND range(1, 1000) AS i RETURN i"))
    assert result.ok and result.truncated and result.truncation == "rows"
    pwned = unique_label("QapiPwned")
    rejected = query_api_runner.run(make_job(f"CREATE (:{pwned})"))
    assert rejected.error is not None and rejected.error.code == "explain_rejected"
    refused = query_api_runner.run(make_job(f"CREATE (:{pwned})", explain_check=False))
    assert refused.error is not None and refused.error.neo4j_code == "Neo.ClientError.Statement.AccessMode"
    assert count_label(neo4j_driver, pwned) == 0


def test_query_api_notifications_carry_codes_and_scope_keeps_the_text_only_ones(
    query_api_runner: SandboxRunner, seeded: str
) -> None:
    # The Query API sends Neo4j codes without GQL statuses: the code decides what a scoped caller sees.
    cypher = f"MATCH (n:Never{seeded}) CALL {{ WITH n RETURN 1 AS x }} RETURN count(x) AS c"
    raw = query_api_runner.run(make_job(cypher))
    assert raw.ok, raw.error
    deprecated, unknown_label = (
        "Neo.ClientNotification.Statement.FeatureDeprecationWarning",
        "Neo.ClientNotification.Statement.UnknownLabelWarning",
    )
    assert {(n.gql_status, n.code) for n in raw.notifications} == {(None, deprecated), (None, unknown_label)}
    scoped = Gateway(load_policy(ALL_PROPERTIES_POLICY_PATH), query_api_runner).run(
        "analyze", cypher, {}, Principal(name="anyone")
    )
    assert [n.code for n in scoped.notifications] == [deprecated]


def test_the_explain_check_alone_refuses_a_locking_merge_on_the_query_api(
    query_api_runner: SandboxRunner, neo4j_driver: Any, seeded: str
) -> None:
    # The guard is off (the job goes straight to the runner) and the Query API of 5.26 reports no
    # query type: the plan's operators are all that stands before READ mode. This MERGE plans a
    # LockingMerge, not a Merge.
    cypher = f"MATCH (a:{seeded} {{i: 1}}), (b:{seeded} {{i: 3}}) MERGE (a)-[:CGW_PWNED]->(b) RETURN a.i AS i"
    before = fingerprint(neo4j_driver, seeded)
    result = query_api_runner.run(make_job(cypher))
    assert not result.ok and not result.rows
    assert result.error is not None and result.error.code == "explain_rejected", result.error
    # 5.26's Query API reports no query type: the operator allow-list refuses it. 2026.x's reports
    # 'rw', and the type check refuses it first.
    assert "LockingMerge" in result.error.message or "type 'rw'" in result.error.message, result.error
    after = fingerprint(neo4j_driver, seeded)
    assert (after["relationships"], after["checksum"]) == (before["relationships"], before["checksum"])
