"""Sandbox jobs as the gateway builds them, with the default policy's limits, and runner settings."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from gateway.policy import Limits, load_policy
from gateway.runner import RunnerSettings, job_for
from sandbox.wire import SandboxJob

ANALYZE = load_policy().tool("analyze")
LIMITS: Limits = ANALYZE.limits


def make_job(cypher: str, **overrides: Any) -> SandboxJob:
    """A job as the gateway builds it (the default policy's analyze limits, no result check)."""
    job = job_for(ANALYZE, query_id=uuid.uuid4().hex[:8], cypher=cypher, params={}, result_check=None)
    return SandboxJob.model_validate({**job.model_dump(), **overrides})


# runner_settings(**overrides) -> RunnerSettings aimed at the test Neo4j and sandbox image
SettingsFactory = Callable[..., RunnerSettings]
