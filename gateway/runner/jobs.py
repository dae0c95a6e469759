"""Building jobs and settings from the policy and the Neo4j connection facts.

Limits come from the policy and nowhere else: a job's timeout, row and byte
limits and procedure allow-list are copied from the tool's policy here.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from pydantic import SecretStr

from gateway.policy import ToolPolicy
from gateway.runner.settings import RunnerSettings
from sandbox.wire import SandboxJob, ScopeCheck


def job_for(
    tool: ToolPolicy,
    *,
    query_id: str,
    cypher: str,
    params: dict[str, Any] | None = None,
    database: str | None = None,
    scope: ScopeCheck | None = None,
) -> SandboxJob:
    """The sandbox job for one approved, scope-rewritten query under ``tool``'s policy."""
    limits = tool.limits
    return SandboxJob(
        query_id=query_id,
        cypher=cypher,
        params=params or {},
        database=database,
        timeout_seconds=limits.timeout_seconds,
        max_rows=limits.max_rows,
        max_bytes=limits.max_bytes,
        procedures_allowed=sorted(tool.procedures_allowed),
        scope=scope,
    )


def settings_for(
    *, uri: str, user: str, password: str, database: str | None, image: str, pool_size: int, **extra: Any
) -> RunnerSettings:
    """Runner settings from a Bolt URI (``bolt://host:port``) or a Query API URL (``https://host[:port]``)."""
    parsed = urlparse(uri)
    if not parsed.hostname:
        raise ValueError(f"cannot read a host from {uri!r}")
    if parsed.scheme in ("bolt", "bolt+s", "neo4j", "neo4j+s"):
        # Always bolt:// inside the sandbox: routing would reveal the cluster's addresses.
        transport, port, scheme = "bolt", parsed.port or 7687, "https"
    elif parsed.scheme in ("https", "http"):
        transport, port, scheme = "query-api", parsed.port or (443 if parsed.scheme == "https" else 7474), parsed.scheme
    else:
        raise ValueError(f"unsupported Neo4j URI scheme {parsed.scheme!r}")
    return RunnerSettings(
        image=image,
        pool_size=pool_size,
        neo4j_host=parsed.hostname,
        neo4j_port=port,
        neo4j_user=user,
        neo4j_password=SecretStr(password),
        database=database,
        transport=transport,
        query_api_scheme=scheme,
        **extra,
    )
