"""Building the sandbox job: the one place a job is made.

Limits come from the policy and nowhere else: a job's timeout, row and byte
limits and procedure allow-list are copied from the tool's policy here. The
query, its parameters and the result check come prepared by the scope step.
The runner's own job, which ends the Neo4j transaction of a sandbox it killed,
is made here too (``terminate_job``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.cypher.ast import CypherVersion
from gateway.policy import ToolPolicy
from sandbox.wire import TX_METADATA_QUERY_ID, SandboxJob, ScopeCheck, VisibleKeys


def job_for(
    tool: ToolPolicy,
    *,
    query_id: str,
    cypher: str,
    params: dict[str, Any],
    result_check: ScopeCheck | None,
    database: str | None = None,
    explain_check: bool = True,
    cypher_version: CypherVersion | None = None,
    original_cypher: str | None = None,
    hidden_properties: Mapping[str, list[str]] | None = None,
    visible_properties: VisibleKeys | None = None,
) -> SandboxJob:
    """The sandbox job for one approved query under ``tool``'s policy.

    ``cypher`` and ``params`` are the scoped query and its parameters (the scope parameter
    injected); ``result_check`` is the caller's scope for the sandbox's own result check,
    None when that layer is off. ``explain_check`` is off only in tests of the other layers.
    ``cypher_version`` is the version the guard read the query as: it is prepended, so Neo4j
    reads the text in that language whatever the database's default (a repeated matching
    prefix is accepted; None only when no layer parsed the query).
    ``original_cypher`` is the agent's text when the rewrite changed it: the sandbox EXPLAINs it
    first, so Neo4j's refusal of what the agent wrote is the answer.
    ``hidden_properties`` is the policy's (label or type -> keys, ``HiddenProperties.by_owner``):
    the sandbox removes them from every node and relationship the answer returns whole.
    ``visible_properties`` is the policy's allow-list (``VisibleProperties.wire``): when given, the
    sandbox removes every key it does not list instead.
    """
    limits = tool.limits
    return SandboxJob(
        query_id=query_id,
        cypher=_versioned(cypher, cypher_version),
        original_cypher=(
            _versioned(original_cypher, cypher_version)
            if original_cypher is not None and original_cypher != cypher
            else None
        ),
        params=params,
        database=database,
        timeout_seconds=limits.timeout_seconds,
        max_rows=limits.max_rows,
        max_bytes=limits.max_bytes,
        procedures_allowed=sorted(tool.procedures_allowed),
        explain_check=explain_check,
        scope=result_check,
        hidden_properties=dict(hidden_properties or {}),
        visible_properties=visible_properties,
    )


def _versioned(cypher: str, version: CypherVersion | None) -> str:
    """The text Neo4j reads in the version the guard read it as, whatever the database's default."""
    return f"CYPHER {version} {cypher}" if version else cypher


# Gateway-written, never an agent's: the query id is the only input, as a parameter. Neo4j
# 5.26 plans SHOW/TERMINATE TRANSACTIONS as reads, so it runs in the sandbox's READ
# transaction; the EXPLAIN check (which refuses command operators in agent queries) is off.
TERMINATE_CYPHER = (
    f"SHOW TRANSACTIONS YIELD transactionId AS id, metaData WHERE metaData.{TX_METADATA_QUERY_ID} = $queryId "
    "TERMINATE TRANSACTIONS id YIELD transactionId, message RETURN transactionId, message"
)


def terminate_job(query_id: str, *, own_query_id: str, database: str | None, timeout_seconds: float) -> SandboxJob:
    """The runner's job that ends the Neo4j transaction of ``query_id`` (found by its metadata)."""
    return SandboxJob(
        query_id=own_query_id,
        cypher=TERMINATE_CYPHER,
        params={"queryId": query_id},
        database=database,
        timeout_seconds=timeout_seconds,
        # One row per transaction of that query id: there is at most one.
        max_rows=10,
        max_bytes=10_000,
        explain_check=False,
    )
