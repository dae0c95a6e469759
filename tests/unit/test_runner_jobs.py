"""The runner's pure parts: sandbox errors mapped onto the gateway's taxonomy, jobs and settings
built from the policy and the Neo4j URI (no Docker, no Neo4j)."""

from __future__ import annotations

from typing import Any

from gateway.runner import error_for
from gateway.runner.jobs import TERMINATE_CYPHER, terminate_job
from sandbox.wire import TX_METADATA_QUERY_ID, SandboxError, SandboxResult
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH


def test_error_mapping_uses_the_gateway_taxonomy() -> None:
    def failed(code: Any, neo4j_code: str | None = None) -> SandboxResult:
        return SandboxResult(query_id="q", ok=False, error=SandboxError(code=code, message="m", neo4j_code=neo4j_code))

    refused = error_for(failed("neo4j_refused", "Neo.ClientError.Statement.SyntaxError"))
    assert refused is not None and refused.code == "neo4j_refused"
    assert refused.message == "Neo4j refused the query: m"
    assert getattr(refused, "neo4j_code", None) == "Neo.ClientError.Statement.SyntaxError"
    assert error_for(failed("timeout")).code == "timeout"  # type: ignore[union-attr]
    assert error_for(failed("explain_rejected")).code == "rejected"  # type: ignore[union-attr]
    assert error_for(failed("cancelled")).code == "cancelled"  # type: ignore[union-attr]
    for code in ("unavailable", "sandbox_failed", "internal", "invalid_job"):
        assert error_for(failed(code)).code == "unavailable"  # type: ignore[union-attr]
    assert error_for(SandboxResult(query_id="q", ok=True)) is None


def test_jobs_and_settings_come_from_the_policy_and_the_settings() -> None:
    from gateway.config import load_settings
    from gateway.policy import load_policy
    from gateway.runner import job_for, settings_for

    tool = load_policy(ALL_PROPERTIES_POLICY_PATH).tool("analyze")
    job = job_for(tool, query_id="q", cypher="RETURN 1", params={}, result_check=None)
    assert (job.timeout_seconds, job.max_rows, job.max_bytes) == (
        tool.limits.timeout_seconds, tool.limits.max_rows, tool.limits.max_bytes,
    )  # fmt: skip
    assert job.procedures_allowed == sorted(tool.procedures_allowed) and job.explain_check
    unchecked = job_for(tool, query_id="q", cypher="RETURN 1", params={}, result_check=None, explain_check=False)
    assert not unchecked.explain_check
    bolt = settings_for(load_settings(neo4j_uri="neo4j://db.internal:7690", neo4j_user="u", neo4j_password="p",
                                      neo4j_database=None, sandbox_image="i", pool_size=1))  # fmt: skip
    assert (bolt.transport, bolt.neo4j_host, bolt.neo4j_port, bolt.image, bolt.pool_size) == (
        "bolt", "db.internal", 7690, "i", 1,
    )  # fmt: skip
    hosted = settings_for(load_settings(neo4j_uri="https://abc.databases.neo4j.io", neo4j_transport="query-api",
                                        neo4j_user="u", neo4j_password="p", neo4j_database="neo4j",
                                        sandbox_image="i", pool_size=1))  # fmt: skip
    assert (hosted.transport, hosted.neo4j_port, hosted.query_api_url()) == (
        "query-api", 443, "https://abc.databases.neo4j.io:443",
    )  # fmt: skip
    assert "p" not in repr(hosted.neo4j_password)


def test_the_terminate_job_is_a_constant_command_with_the_query_id_as_its_only_input() -> None:
    job = terminate_job("q-1", own_query_id="own", database="neo4j", timeout_seconds=5)
    assert job.cypher == TERMINATE_CYPHER and job.params == {"queryId": "q-1"} and job.query_id == "own"
    assert f"metaData.{TX_METADATA_QUERY_ID} = $queryId" in job.cypher and "TERMINATE TRANSACTIONS" in job.cypher
    assert job.scope is None and job.procedures_allowed == []
