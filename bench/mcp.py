"""End-to-end MCP tool-call latency over stdio, next to the sandbox-only figure from the same run.

    .venv/bin/python bench/mcp.py [--calls 50] [--out bench/mcp-results.json]

1. Seeds a small graph (20 nodes in one layer) with the driver (this benchmark process is not
   the gateway; the gateway process never loads the driver).
2. MCP: starts ``cypher-gateway serve`` (stdio) through the SDK's client and times ``recall``
   calls for 5 rows, measured at the client: JSON-RPC over pipes, guard, scope rewrite, warm
   sandbox, Neo4j, truncation, audit line, and back.
3. Sandbox only: the same scoped job (built by a Gateway composed as the server composes
   its own) straight into that Gateway's ``SandboxRunner`` in this process.
The two phases run one after the other so they do not compete for the CPUs.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

# Run as a script, this file's directory comes first on sys.path and "mcp" would be this
# file, not the SDK: drop it, put the repository there instead.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
REPO = _HERE.parent
sys.path.insert(0, str(REPO))

import anyio  # noqa: E402
from mcp.client.client import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from gateway.compose import compose  # noqa: E402
from gateway.config import load_settings  # noqa: E402
from gateway.domain import Principal  # noqa: E402
from gateway.ops import images, neo4j_local  # noqa: E402
from gateway.runner import Runner  # noqa: E402
from sandbox.wire import SandboxJob, SandboxResult  # noqa: E402

CLI = str(Path(sys.executable).parent / "cypher-gateway")
REPOSITORY, TASK = "bench/repo", "bench-task"


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _stats(values: list[float]) -> dict[str, float]:
    return {"n": len(values), "p50_ms": round(statistics.median(values), 2), "p99_ms": round(_pct(values, 0.99), 2),
            "mean_ms": round(statistics.fmean(values), 2), "max_ms": round(max(values), 2)}  # fmt: skip


def _seed(label: str, layer: str) -> Any:
    import neo4j  # the benchmark seeds directly; the gateway never imports the driver

    conn = neo4j_local.resolve(start_managed=True)  # the Neo4j the served gateway reaches
    driver = neo4j.GraphDatabase.driver(conn.uri, auth=(conn.user, conn.password.get_secret_value()))
    driver.execute_query(
        f"UNWIND range(1, 20) AS i CREATE (:{label} {{i: i, repository: $r, taskId: $t, text: 'fact ' + toString(i),"
        " layers: [$layer]})", r=REPOSITORY, t=TASK, layer=layer,
    )  # fmt: skip
    return driver


def _query(label: str) -> str:
    return (f"MATCH (n:{label}) WHERE n.repository = $repository AND n.taskId = $taskId AND n.i <= 5 "
            "RETURN n.i AS i, n.text AS text ORDER BY i")  # fmt: skip


def bench_mcp(label: str, layer: str, calls: int, image: str, audit: Path) -> dict[str, Any]:
    env = {**os.environ, "GATEWAY_STDIO_SCOPE": layer, "GATEWAY_SANDBOX_IMAGE": image,
           "GATEWAY_AUDIT_PATH": str(audit), "GATEWAY_POOL_SIZE": "2"}  # fmt: skip
    params = StdioServerParameters(command=CLI, args=["serve"], env=env, cwd=str(REPO))
    args = {"cypher": _query(label), "params": {"repository": REPOSITORY, "taskId": TASK}}
    timings: list[float] = []

    async def run() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            for _ in range(3):  # warm-up: the pool fills, code paths load
                result = await client.call_tool("recall", args)
                assert not result.is_error, result.content
            for _ in range(calls):
                started = time.perf_counter()
                result = await client.call_tool("recall", args)
                timings.append((time.perf_counter() - started) * 1000)
                structured = result.structured_content or {}
                assert not result.is_error and structured.get("rowCount") == 5, result.content
                # The pool refills after each one-shot container; pace calls like an agent would.
                await anyio.sleep(0.3)

    anyio.run(run)
    return _stats(timings)


class _Recorder:
    """Hands each job on to the real runner and keeps the last one, so it can be replayed."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        self.job: SandboxJob | None = None

    def run(
        self, job: SandboxJob, principal: Principal | None = None, *, arrived: float | None = None
    ) -> SandboxResult:
        self.job = job
        return self.runner.run(job, principal)

    def cancel(self, query_id: str) -> bool:
        return self.runner.cancel(query_id)

    def available(self) -> tuple[bool, str]:
        return self.runner.available()

    def close(self) -> None:
        pass


def bench_sandbox(label: str, layer: str, calls: int, image: str) -> dict[str, Any]:
    settings = load_settings(sandbox_image=image, pool_size=2)
    composed = compose(settings, audit=False)
    try:
        runner = composed.runner
        assert runner is not None and runner.wait_ready(90), composed.problems or "the warm pool did not fill"
        # One tool call through a Gateway composed like the server's builds the scoped job; it is then replayed.
        recorder = _Recorder(runner)
        gateway = compose(settings, runner=recorder, policy=composed.gateway.policy, audit=False).gateway
        principal = Principal(name="bench", scope=frozenset({layer}))
        gateway.run("recall", _query(label), {"repository": REPOSITORY, "taskId": TASK}, principal)
        assert recorder.job is not None, "the gateway ran no job"
        timings: list[float] = []
        for i in range(calls + 3):
            job = dataclasses.replace(recorder.job, query_id=uuid.uuid4().hex)
            started = time.perf_counter()
            result = runner.run(job)
            elapsed = (time.perf_counter() - started) * 1000
            assert result.ok and result.row_count == 5, result.error
            if i >= 3:
                timings.append(elapsed)
            time.sleep(0.3)
        return _stats(timings)
    finally:
        composed.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "mcp-results.json")
    args = parser.parse_args()
    image = images.ensure_sandbox_image()
    label, layer = f"Bench{uuid.uuid4().hex[:8]}", f"bench-{uuid.uuid4().hex[:6]}"
    driver = _seed(label, layer)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            mcp_stats = bench_mcp(label, layer, args.calls, image, Path(tmp) / "audit.jsonl")
        sandbox_stats = bench_sandbox(label, layer, args.calls, image)
    finally:
        driver.execute_query(f"MATCH (n:{label}) DETACH DELETE n")
        driver.close()
    report = {
        "what": "recall returning 5 rows; stdio MCP call measured at the SDK client vs the same job into the runner",
        "calls": args.calls, "pause_between_calls_s": 0.3, "cpus": os.cpu_count(),
        "mcp_stdio": mcp_stats, "sandbox_only": sandbox_stats,
        "overhead_p50_ms": round(mcp_stats["p50_ms"] - sandbox_stats["p50_ms"], 2),
    }  # fmt: skip
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
