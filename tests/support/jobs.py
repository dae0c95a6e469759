"""Sandbox jobs as the gateway builds them, with the default policy's limits, and runner settings."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from typing import Any

from gateway.policy import Limits, Policy, SandboxPolicy, load_policy
from gateway.runner import RunnerSettings, job_for
from sandbox.wire import SandboxJob
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH

ANALYZE = load_policy(ALL_PROPERTIES_POLICY_PATH).tool("analyze")
LIMITS: Limits = ANALYZE.limits
# Tests run queries back to back on a small, shared machine, where refilling a container can
# take seconds: they wait for a sandbox rather than get "busy" (the capacity tests use the
# policy's own wait). The default policy's other sandbox settings stay as they are.
PATIENT = SandboxPolicy(busy_wait_ms=10_000)


def patient(policy: Policy) -> Policy:
    """``policy`` with the patient sandbox wait above."""
    return policy.model_copy(update={"sandbox": policy.sandbox.model_copy(update={"busy_wait_ms": 10_000})})


def make_job(cypher: str, **overrides: Any) -> SandboxJob:
    """A job as the gateway builds it (the default policy's analyze limits, no result check)."""
    job = job_for(ANALYZE, query_id=uuid.uuid4().hex[:8], cypher=cypher, params={}, result_check=None)
    return dataclasses.replace(job, **overrides)


# runner_settings(**overrides) -> RunnerSettings aimed at the test Neo4j and sandbox image
SettingsFactory = Callable[..., RunnerSettings]
