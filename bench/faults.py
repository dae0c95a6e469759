"""Fault timing: how soon the runner answers when something is wrong, against the bound it keeps.

    .venv/bin/python bench/faults.py [--repeat 3]

The tests (tests/integration/sandbox/test_faults.py) prove each fault gets the right typed
answer and never hangs; the numbers live here, measured in one run, each as a ratio to
the bound it should respect:

* Docker daemon unreachable: seconds until ``SandboxUnavailable`` (there is no bound but
  "at once": no retry loop, no connect timeout to sit out).
* A frozen sandbox container: seconds until the runner kills it, over the job's timeout
  plus the runner's wall-clock grace (about 1.0: neither early nor late).
* A query past the policy timeout: seconds until it ends in Neo4j (the sandbox's TERMINATE at
  the deadline, or Neo4j's own TransactionTimedOut), over the policy's ``timeout_seconds``
  (about 1.0).

Writes ``bench/faults-results.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this file's directory comes first on sys.path and bench/sandbox.py
# would shadow the `sandbox` package: put the repo root there instead.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse
import dataclasses
import json
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

from docker.client import DockerClient

from gateway.config import connection_settings
from gateway.errors import SandboxUnavailable
from gateway.ops import images, neo4j_local
from gateway.policy import load_policy
from gateway.runner import RunnerSettings, SandboxRunner, job_for, remove_leftovers, settings_for
from sandbox.wire import SandboxJob

ANALYZE = load_policy().tool("analyze")
LIMITS = ANALYZE.limits
SLOW_QUERY = "UNWIND range(1, 1000000) AS a UNWIND range(1, 1000000) AS b RETURN count(*) AS c"


def job(cypher: str, timeout_seconds: float = LIMITS.timeout_seconds) -> SandboxJob:
    """A job as the gateway builds it (the default policy's analyze tool), with its own timeout."""
    built = job_for(ANALYZE, query_id=uuid.uuid4().hex[:8], cypher=cypher, params={}, result_check=None)
    return dataclasses.replace(built, timeout_seconds=timeout_seconds)


def timed(call: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    try:
        outcome: Any = call()
    except SandboxUnavailable as exc:
        outcome = exc
    return time.perf_counter() - started, outcome


def docker_unreachable(base: RunnerSettings) -> float:
    runner = SandboxRunner(base.model_copy(update={"docker_host": "unix:///nonexistent/docker.sock"}))
    try:
        seconds, outcome = timed(lambda: runner.run(job("RETURN 1")))
    finally:
        runner.close()
    assert isinstance(outcome, SandboxUnavailable), outcome
    return seconds


def frozen_container(base: RunnerSettings, docker: DockerClient) -> tuple[float, float]:
    """(seconds until the kill, the bound: job timeout + wall-clock grace)."""
    runner = SandboxRunner(base.model_copy(update={"pool_size": 1, "wall_clock_grace_seconds": 1.0}))
    try:
        assert runner.wait_ready(120), runner.available()
        (container_id,) = runner.pool_container_ids()
        docker.containers.get(container_id).pause()
        seconds, result = timed(lambda: runner.run(job("RETURN 1 AS x", timeout_seconds=1.0)))
        assert result.error is not None and result.error.code == "timeout", result
        return seconds, 1.0 + runner.settings.wall_clock_grace_seconds
    finally:
        runner.close()
        remove_leftovers(docker, runner.runner_id)


def neo4j_timeout(runner: SandboxRunner) -> float:
    runner.wait_ready(120)
    seconds, result = timed(lambda: runner.run(job(SLOW_QUERY)))
    code = result.error.neo4j_code if result.error is not None else None
    assert code is not None and ("TransactionTimedOut" in code or "Transaction.Terminated" in code), result
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("faults-results.json"))
    args = parser.parse_args()

    conn = neo4j_local.resolve(start_managed=True)
    base = settings_for(connection_settings(conn, sandbox_image=images.ensure_sandbox_image(), pool_size=1))
    docker = DockerClient.from_env()
    unreachable = [docker_unreachable(base) for _ in range(args.repeat)]
    frozen = [frozen_container(base, docker) for _ in range(args.repeat)]
    runner = SandboxRunner(base)
    try:
        slow = [neo4j_timeout(runner) for _ in range(args.repeat)]
    finally:
        runner.close()
        remove_leftovers(docker, runner.runner_id)

    kill_bound = frozen[0][1]
    results = {
        "repeat": args.repeat,
        "docker_unreachable_ms": round(statistics.median(unreachable) * 1000, 1),
        "frozen_container": {
            "bound_seconds": kill_bound,
            "median_seconds": round(statistics.median(s for s, _ in frozen), 3),
            "ratio_to_bound": round(statistics.median(s for s, _ in frozen) / kill_bound, 2),
        },
        "neo4j_transaction_timeout": {
            "policy_timeout_seconds": LIMITS.timeout_seconds,
            "median_seconds": round(statistics.median(slow), 3),
            "ratio_to_policy": round(statistics.median(slow) / LIMITS.timeout_seconds, 2),
        },
    }
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
