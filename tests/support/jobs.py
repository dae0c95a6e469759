"""Sandbox jobs as the gateway builds them, with the default policy's limits, and runner settings."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from gateway.policy import Limits, load_policy
from gateway.runner import RunnerSettings
from sandbox.wire import SandboxJob

LIMITS: Limits = load_policy().tool("analyze").limits
ALLOWED_PROCEDURES = sorted(load_policy().tool("analyze").procedures_allowed)


def make_job(cypher: str, **overrides: Any) -> SandboxJob:
    """A job as the gateway would build it, with the default policy's limits."""
    fields: dict[str, Any] = {
        "query_id": uuid.uuid4().hex[:8],
        "cypher": cypher,
        "timeout_seconds": LIMITS.timeout_seconds,
        "max_rows": LIMITS.max_rows,
        "max_bytes": LIMITS.max_bytes,
        "procedures_allowed": ALLOWED_PROCEDURES,
        "database": None,
    }
    fields.update(overrides)
    return SandboxJob(**fields)


# runner_settings(**overrides) -> RunnerSettings aimed at the test Neo4j and sandbox image
SettingsFactory = Callable[..., RunnerSettings]
