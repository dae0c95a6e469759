"""Sandbox benchmark: capacity under load, and what one query costs, on one seeded graph.

    .venv/bin/python bench/sandbox.py            # the full run: 60 s per cell, ~25 minutes
    .venv/bin/python bench/sandbox.py --quick    # 10 s per cell and small samples, ~5 minutes

1. **Throughput.** Open-loop load through the real Gateway (guard, scope rewrite, audit,
   runner, sandbox, Neo4j) at 5, 10 and 20 queries per second, spread over four principals,
   with the policy's ``sandbox.max_queries_per_container`` at 1, 10 and 100 (everything else
   as in the default policy: a 500 ms busy wait, 4 running queries per principal). Each cell
   has its own runner, warmed before the clock starts. For each: offered, answered,
   achieved, failures by code, latency p50/p99 of the answered queries, and the longest
   time a ``busy`` answer took against the wait + 100 ms.
2. **Runtimes.** The one-query-per-container cell at 20 q/s (saturated: the rate is how
   fast containers are made) under crun and under runc, one after the other.
   **Overload.** 10 queries per container at 60 q/s, about three times what that setting
   answers here, with the default 500 ms wait and with a 150 ms one: how long a ``busy``
   answer takes, and what the answered queries' latency becomes when they queued first.
3. **Latency of one query.** The driver in this process (a reference only: the gateway never
   does that), the same with the sandbox's EXPLAIN round trip, a warm pooled sandbox, and a
   cold container made for the query; interleaved.
4. **CPU per query inside the container** (cgroup v1 hosts): one-shot containers under crun
   and under runc, and one container serving 10 queries, in rotated rounds; each variant's
   containers run under their own parent cgroup, whose CPU account keeps what its removed
   containers used. Docker's own share (dockerd, containerd, the shim, the runtime) is not in
   it: the Docker client's CPU in this process is, per query.

The machine is shared: read the ratios between cells of one run. Prints Markdown tables and
writes JSON (``bench/sandbox-results.json`` for a full run; ``--out`` for a quick one).
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this file's directory comes first on sys.path and this file
# (bench/sandbox.py) would shadow the `sandbox` package: put the repo root there instead.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse
import contextlib
import json
import os
import statistics
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import neo4j

from gateway.compose import compose
from gateway.config import GatewaySettings, connection_settings
from gateway.domain import Principal
from gateway.errors import GatewayError
from gateway.ops import images, neo4j_local
from gateway.policy import Policy, load_policy
from gateway.runner import SandboxRunner, job_for, settings_for
from gateway.runner.contract import credentials_line, job_line, parse_result
from gateway.runner.docker_io import FrameReader, raw_socket, sandbox_spec
from sandbox.wire import SANDBOX_READY, SandboxJob

# The default policy without its property list: the queries read the keys their graph has.
POLICY = load_policy().model_copy(update={"visible_properties": None})
ANALYZE = POLICY.tool("analyze")
RATES = (5.0, 10.0, 20.0)
REUSE = (1, 10, 100)
# The reused configuration past its capacity (~23 q/s on the 2-core machine): about 3x, with the
# default wait and with a short one (what a reviewer trades for the answered queries' latency).
OVERLOAD_REUSE, OVERLOAD_RATE, OVERLOAD_WAITS = 10, 60.0, (500, 150)
PRINCIPALS = tuple(Principal(name=f"agent-{i}", scope=frozenset({"project-a"})) for i in range(4))


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def summary(values: list[float]) -> dict[str, float]:
    return {"n": len(values), "p50": pct(values, 50), "p95": pct(values, 95), "p99": pct(values, 99),
            "mean": statistics.fmean(values)}  # fmt: skip


def seed(driver: Any, label: str) -> None:
    with driver.session() as s:
        s.run(
            f"UNWIND range(1, 2000) AS i CREATE (:{label} {{i: i, name: 'node ' + toString(i), layers: []}})"
        ).consume()
        s.run(f"CREATE INDEX {label}_i IF NOT EXISTS FOR (n:{label}) ON (n.i)").consume()
        s.run("CALL db.awaitIndexes(60)").consume()
        s.run(f"MATCH (a:{label}), (b:{label}) WHERE b.i = a.i + 1 CREATE (a)-[:NEXT {{layers: []}}]->(b)").consume()


def machine_busy() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine, every process included (other sessions too)."""
    with open("/proc/stat", encoding="ascii") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def with_sandbox(policy: Policy, per_container: int, busy_wait_ms: int) -> Policy:
    update = {"max_queries_per_container": per_container, "busy_wait_ms": busy_wait_ms}
    return policy.model_copy(update={"sandbox": policy.sandbox.model_copy(update=update)})


# --- 1 and 2: throughput ----------------------------------------------------------------------


@dataclass
class Call:
    latency_ms: float
    outcome: str  # "ok", an error code, or "degraded"


@dataclass
class Cell:
    per_container: int
    rate: float
    seconds: float
    runtime: str
    busy_wait_ms: int
    calls: list[Call] = field(default_factory=list)
    wall: float = 0.0
    gateway_cpu_ms: float = 0.0
    machine_busy: float = 0.0
    containers_started: int = 0

    def report(self) -> dict[str, Any]:
        ok = [c.latency_ms for c in self.calls if c.outcome == "ok"]
        busy = [c.latency_ms for c in self.calls if c.outcome == "busy"]
        out: dict[str, Any] = {
            "queries_per_container": self.per_container, "offered_qps": self.rate, "seconds": self.seconds,
            "runtime": self.runtime, "sent": len(self.calls), "answered": len(ok),
            "achieved_qps": len(ok) / self.wall if self.wall else 0.0,
            "failures": dict(Counter(c.outcome for c in self.calls if c.outcome != "ok")),
            "busy_wait_ms": self.busy_wait_ms,
            "busy_longest_ms": max(busy) if busy else None, "busy_bound_ms": self.busy_wait_ms + 100,
            "longest_call_ms": max(c.latency_ms for c in self.calls) if self.calls else None,
            "containers_started": self.containers_started,
            "gateway_cpu_ms_per_query": self.gateway_cpu_ms / max(1, len(self.calls)),
            "machine_busy_percent": self.machine_busy,
        }  # fmt: skip
        if ok:
            out["latency_ms"] = summary(ok)
        return out


def run_cell(
    settings: GatewaySettings,
    cypher: str,
    per_container: int,
    rate: float,
    seconds: float,
    runtime: str,
    busy_wait_ms: int = POLICY.sandbox.busy_wait_ms,
) -> Cell:
    """One open-loop load: a query every 1/rate s, each on its own thread, principals in turn."""
    cell_name = f"{per_container}/container at {rate:g} q/s for {seconds:g} s ({runtime}, wait {busy_wait_ms} ms)"
    print(f"[bench] {cell_name} ...", file=sys.stderr, flush=True)
    policy = with_sandbox(POLICY, per_container, busy_wait_ms)
    composed = compose(settings.model_copy(update={"sandbox_runtime": runtime}), policy=policy)
    runner, gateway = composed.runner, composed.gateway
    assert runner is not None and not composed.problems, composed.problems
    cell = Cell(per_container, rate, seconds, str(runner.runtime), busy_wait_ms)
    try:
        assert runner.wait_ready(120), runner.available()
        for principal in PRINCIPALS:  # warm Neo4j's plan cache and each principal's first container
            gateway.run("analyze", cypher, {}, principal)
        assert runner.wait_ready(120), runner.available()
        lock = threading.Lock()

        def one(principal: Principal) -> None:
            started = time.perf_counter()
            try:
                result = gateway.run("analyze", cypher, {}, principal)
                outcome = "degraded" if result.degraded else "ok"
            except GatewayError as exc:
                outcome = exc.code
            with lock:
                cell.calls.append(Call((time.perf_counter() - started) * 1000, outcome))

        pool = runner._pool
        started_before = pool.started if pool else 0
        cpu_before, (busy_before, total_before) = time.process_time(), machine_busy()
        threads = []
        began = time.perf_counter()
        for i in range(int(rate * seconds)):
            delay = began + i / rate - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            thread = threading.Thread(target=one, args=(PRINCIPALS[i % len(PRINCIPALS)],))
            thread.start()
            threads.append(thread)
        for thread in threads:
            thread.join(120)
        cell.wall = time.perf_counter() - began
        busy_after, total_after = machine_busy()
        cell.gateway_cpu_ms = (time.process_time() - cpu_before) * 1000
        cell.machine_busy = 100 * (busy_after - busy_before) / max(1, total_after - total_before)
        cell.containers_started = (pool.started if pool else 0) - started_before
    finally:
        composed.close()
    answered = sum(call.outcome == "ok" for call in cell.calls)
    print(f"[bench]   answered {answered}/{len(cell.calls)} in {cell.wall:.1f} s", file=sys.stderr, flush=True)
    return cell


# --- 3: latency of one query ---------------------------------------------------------------------


def job(cypher: str) -> SandboxJob:
    return job_for(ANALYZE, query_id=uuid.uuid4().hex[:8], cypher=cypher, params={}, result_check=None)


def direct(driver: Any, cypher: str, explain: bool, database: str | None) -> float:
    started = time.perf_counter()
    with driver.session(database=database, default_access_mode=neo4j.READ_ACCESS) as session:

        def work(tx: Any) -> list[Any]:
            if explain:
                tx.run("EXPLAIN " + cypher).consume()
            return [r.values() for r in tx.run(cypher)]

        session.execute_read(work)
    return (time.perf_counter() - started) * 1000


def warm(runner: SandboxRunner, cypher: str) -> float:
    runner.wait_ready(60)  # measure the warm path itself: a ready container is waiting
    started = time.perf_counter()
    result = runner.run(job(cypher))
    elapsed = (time.perf_counter() - started) * 1000
    assert result.ok, result.error
    return elapsed


def cold(runner: SandboxRunner, client: Any, cypher: str) -> float:
    """What a hardened container made for one query costs: create, start, connect, run, remove."""
    started = time.perf_counter()
    settings = runner.settings
    spec = sandbox_spec(
        settings, f"cgw-sock-{runner.runner_id}", runner.runner_id, runtime=str(runner.runtime), max_jobs=1
    )
    container = client.containers.create(**spec)
    try:
        attached = container.attach_socket(params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
        reader = FrameReader(raw_socket(attached))
        container.start()
        reader.sock.sendall(credentials_line(settings.neo4j_user, settings.neo4j_password.get_secret_value()))
        reader.read_until_stderr(SANDBOX_READY.encode(), time.monotonic() + 30)
        reader.sock.sendall(job_line(job(cypher)))
        result = parse_result(reader.read_stdout_line(time.monotonic() + 30))
        assert result.ok, result.error
        attached.close()
    finally:
        container.remove(force=True)
    return (time.perf_counter() - started) * 1000


def latency(settings: GatewaySettings, conn: Any, driver: Any, cypher: str, n: int, cold_n: int) -> dict[str, Any]:
    runner = SandboxRunner(settings_for(settings))
    try:
        assert runner.wait_ready(120), runner.available()
        for _ in range(5):  # warm Neo4j's plan cache and the driver for every path
            direct(driver, cypher, False, conn.database)
            direct(driver, cypher, True, conn.database)
        runs: dict[str, list[float]] = {"direct": [], "direct+explain": [], "warm": []}
        # Interleaved, so a noisy neighbour on the shared cores hits every path alike.
        for _ in range(n):
            runs["direct"].append(direct(driver, cypher, False, conn.database))
            runs["direct+explain"].append(direct(driver, cypher, True, conn.database))
            runs["warm"].append(warm(runner, cypher))
        runs["cold"] = [cold(runner, runner._client, cypher) for _ in range(cold_n)]
        out: dict[str, Any] = {"latency_ms": {name: summary(values) for name, values in runs.items()}}
        if runner._pool is not None:
            out["refill_seconds"] = summary(runner._pool.start_seconds)
        out["runtime"] = runner.runtime
        return out
    finally:
        runner.close()


# --- 4: CPU per query inside the container -------------------------------------------------------

CPUACCT = Path("/sys/fs/cgroup/cpuacct")


def _cgroup_ms(parent: str) -> float:
    usage = CPUACCT / parent / "cpuacct.usage"
    return int(usage.read_text()) / 1e6 if usage.exists() else 0.0


def _container_cpu(runner: SandboxRunner, cypher: str, runtime: str, queries: int, parent: str) -> tuple[float, float]:
    """(container CPU ms, this process's CPU ms) per query, for one container running ``queries`` jobs."""
    settings = runner.settings
    spec = sandbox_spec(settings, f"cgw-sock-{runner.runner_id}", runner.runner_id, runtime=runtime, max_jobs=queries)
    spec["cgroup_parent"] = f"/{parent}"
    before, cpu_before = _cgroup_ms(parent), time.process_time()
    container = runner._client.containers.create(**spec)
    try:
        attached = container.attach_socket(params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
        reader = FrameReader(raw_socket(attached))
        container.start()
        reader.sock.sendall(credentials_line(settings.neo4j_user, settings.neo4j_password.get_secret_value()))
        for _ in range(queries):
            reader.read_until_stderr(SANDBOX_READY.encode(), time.monotonic() + 60)
            reader.sock.sendall(job_line(job(cypher)))
            assert parse_result(reader.read_stdout_line(time.monotonic() + 60)).ok
        container.wait(timeout=60)  # the container's own teardown counts too
        attached.close()
    finally:
        container.remove(force=True)
    return (_cgroup_ms(parent) - before) / queries, (time.process_time() - cpu_before) * 1000 / queries


def container_cpu(settings: GatewaySettings, cypher: str, rounds: int) -> dict[str, Any] | None:
    if not CPUACCT.is_dir():
        return None
    run_id = f"cgw-bench-{uuid.uuid4().hex[:8]}"
    variants = {"one-shot, crun": ("crun", 1), "one-shot, runc": ("runc", 1), "10 per container, crun": ("crun", 10)}
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    runner = SandboxRunner(settings_for(settings, pool_size=1))
    try:
        assert runner.wait_ready(120), runner.available()
        names = list(variants)
        for r in range(rounds + 1):  # round 0 warms every variant up and is not kept
            for name in names[r % len(names) :] + names[: r % len(names)]:
                runtime, queries = variants[name]
                sample = _container_cpu(runner, cypher, runtime, queries, f"{run_id}/{queries}-{runtime}")
                if r:
                    samples[name].append(sample)
    finally:
        runner.close()
        for directory in sorted(Path("/sys/fs/cgroup").glob(f"*/{run_id}/*")) + sorted(
            Path("/sys/fs/cgroup").glob(f"*/{run_id}")
        ):
            with contextlib.suppress(OSError):
                directory.rmdir()
    return {
        name: {"rounds": len(xs), "container_cpu_ms_per_query": statistics.median(x[0] for x in xs),
               "client_cpu_ms_per_query": statistics.median(x[1] for x in xs)}
        for name, xs in samples.items()
    }  # fmt: skip


# --- the default policy: one agent back to back, where one query's milliseconds go ----------------


def breakdown(
    settings: GatewaySettings, conn: Any, driver: Any, cypher: str, n: int, policy: Policy = POLICY
) -> dict[str, Any]:
    """One principal calling back to back through the Gateway under the default policy, interleaved
    with the direct driver; each call split into its stages (no instrumentation in the product:
    the stages are differences of clocks the benchmark reads around the layers)."""
    composed = compose(settings, policy=policy)
    runner, gateway = composed.runner, composed.gateway
    assert runner is not None and not composed.problems, composed.problems
    principal = Principal(name="lone-agent", scope=frozenset({"project-a"}))
    stages: dict[str, list[float]] = {
        "direct": [], "direct+explain": [], "gateway": [], "runner.run": [], "waiting for a container": [],
        "inside the sandbox (decode, BEGIN, EXPLAIN, run, COMMIT, result check)": [],
    }  # fmt: skip
    outcomes: Counter[str] = Counter()
    pool = runner._pool
    assert pool is not None
    acquire, run, seen = pool.acquire, runner.run, {}

    def timed_acquire(*args: Any) -> Any:
        began = time.perf_counter()
        try:
            return acquire(*args)
        finally:
            seen["acquire"] = (time.perf_counter() - began) * 1000

    def timed_run(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        result = run(*args, **kwargs)
        seen["run"], seen["inside"] = (time.perf_counter() - began) * 1000, result.duration_ms or 0.0
        return result

    pool.acquire, runner.run = timed_acquire, timed_run  # type: ignore[method-assign,assignment]
    try:
        assert runner.wait_ready(120), runner.available()
        for _ in range(10):  # warm Neo4j's plan cache, the driver and the principal's container
            direct(driver, cypher, True, conn.database)
            with contextlib.suppress(GatewayError):
                gateway.run("analyze", cypher, {}, principal)
        assert runner.wait_ready(120), runner.available()
        for _ in range(n):
            stages["direct"].append(direct(driver, cypher, False, conn.database))
            stages["direct+explain"].append(direct(driver, cypher, True, conn.database))
            began = time.perf_counter()
            try:
                gateway.run("analyze", cypher, {}, principal)
                outcomes["ok"] += 1
            except GatewayError as exc:
                outcomes[exc.code] += 1
                continue
            stages["gateway"].append((time.perf_counter() - began) * 1000)
            stages["runner.run"].append(seen["run"])
            stages["waiting for a container"].append(seen["acquire"])
            stages["inside the sandbox (decode, BEGIN, EXPLAIN, run, COMMIT, result check)"].append(seen["inside"])
        containers = {r.container_id for r in runner.records() if r.principal == principal.name}
        return {
            "calls": n, "outcomes": dict(outcomes), "containers_used": len(containers),
            "latency_ms": {name: summary(values) for name, values in stages.items() if values},
        }  # fmt: skip
    finally:
        composed.close()


def breakdown_table(one: dict[str, Any]) -> str:
    lat = one["latency_ms"]
    lines = ["| stage | n | p50 ms | p95 ms | p99 ms |", "|---|---|---|---|---|"]
    for name, s in lat.items():
        lines.append(f"| {name} | {s['n']} | {s['p50']:.2f} | {s['p95']:.2f} | {s['p99']:.2f} |")
    lines.append(f"\noutcomes {one['outcomes']}, containers used {one['containers_used']}")
    return "\n".join(lines)


def default_run(
    settings: GatewaySettings, conn: Any, driver: Any, cypher: str, seconds: float, n: int
) -> dict[str, Any]:
    """The default policy as shipped: four principals at 20 and 25 q/s, and one agent back to back."""
    per = POLICY.sandbox.max_queries_per_container
    cells = [run_cell(settings, cypher, per, rate, seconds, "auto") for rate in (20.0, 25.0)]
    out: dict[str, Any] = {"throughput": [cell.report() for cell in cells]}
    print(throughput_table(out["throughput"]), flush=True)
    out["lone_agent"] = breakdown(settings, conn, driver, cypher, n)
    print("\n" + breakdown_table(out["lone_agent"]), flush=True)
    # The same agent under the previous default (a container per query), in the same run.
    out["lone_agent_one_shot"] = breakdown(
        settings, conn, driver, cypher, n, with_sandbox(POLICY, 1, POLICY.sandbox.busy_wait_ms)
    )
    print("\n" + breakdown_table(out["lone_agent_one_shot"]), flush=True)
    return out


# --- the run ------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10 s per cell, small samples (a few minutes)")
    parser.add_argument("--seconds", type=float, help="seconds of load per cell (60; quick: 10)")
    parser.add_argument("--n", type=int, help="warm-path samples (100; quick: 20)")
    parser.add_argument("--cold-n", type=int, help="cold-container samples (20; quick: 5)")
    parser.add_argument("--no-runtimes", action="store_true", help="skip the crun/runc comparison")
    parser.add_argument("--no-overload", action="store_true", help="skip the reused configuration at 3x its capacity")
    parser.add_argument(
        "--default-policy",
        action="store_true",
        help="only the default policy: 4 principals at 20 and 25 q/s, one agent back to back",
    )
    parser.add_argument("--out", type=Path, help="JSON results (full run: bench/sandbox-results.json)")
    args = parser.parse_args()
    seconds = args.seconds or (10.0 if args.quick else 60.0)
    n, cold_n = args.n or (20 if args.quick else 100), args.cold_n or (5 if args.quick else 20)
    out = args.out or (None if args.quick else Path(__file__).with_name("sandbox-results.json"))

    conn = neo4j_local.resolve(start_managed=True)
    tag = images.ensure_sandbox_image()
    workdir = Path(tempfile.mkdtemp(prefix="cgw-bench-"))
    settings = connection_settings(conn, sandbox_image=tag, audit_path=workdir / "audit.jsonl")
    label = f"Bench{uuid.uuid4().hex[:8]}"
    cypher = f"MATCH (a:{label})-[:NEXT]->(b) WHERE a.i <= 20 RETURN a.i AS i, b.name AS next ORDER BY i"
    driver = neo4j.GraphDatabase.driver(conn.uri, auth=(conn.user, conn.password.get_secret_value()))
    busy_wait = POLICY.sandbox.busy_wait_ms
    results: dict[str, Any] = {
        "query": cypher, "principals": len(PRINCIPALS), "pool_size": settings.pool_size,
        "max_containers": settings.sandbox_max_containers, "busy_wait_ms": busy_wait, "seconds_per_cell": seconds,
        "cpus": os.cpu_count(), "load_before": os.getloadavg(),
    }  # fmt: skip
    try:
        seed(driver, label)
        if args.default_policy:
            results["default_policy"] = default_run(settings, conn, driver, cypher, seconds, n)
            results["load_after"] = os.getloadavg()
            target = args.out or Path(__file__).with_name("sandbox-default-results.json")
            target.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
            print(f"\nresults: {target}")
            return 0
        cells = [run_cell(settings, cypher, per, rate, seconds, "auto") for rate in RATES for per in REUSE]
        results["throughput"] = [cell.report() for cell in cells]
        print(throughput_table(results["throughput"]), flush=True)
        if not args.no_runtimes:
            pair = [run_cell(settings, cypher, 1, RATES[-1], seconds, rt) for rt in ("crun", "runc")]
            results["runtimes"] = [cell.report() for cell in pair]
            print("\n" + throughput_table(results["runtimes"]), flush=True)
        if not args.no_overload:
            results["overload"] = [
                run_cell(settings, cypher, OVERLOAD_REUSE, OVERLOAD_RATE, seconds, "auto", wait).report()
                for wait in OVERLOAD_WAITS
            ]
            print("\n" + throughput_table(results["overload"]), flush=True)
        print(f"[bench] one query: {n} direct and warm, {cold_n} cold ...", file=sys.stderr, flush=True)
        results["one_query"] = latency(settings, conn, driver, cypher, n, cold_n)
        print("\n" + latency_table(results["one_query"]), flush=True)
        print("[bench] CPU per container (cgroup accounting) ...", file=sys.stderr, flush=True)
        results["container_cpu"] = container_cpu(settings, cypher, 3 if args.quick else 12)
        print("\n" + cpu_table(results["container_cpu"]), flush=True)
    finally:
        with driver.session() as s:
            s.run(f"MATCH (n:{label}) DETACH DELETE n").consume()
            s.run(f"DROP INDEX {label}_i IF EXISTS").consume()
        driver.close()
    results["load_after"] = os.getloadavg()
    if out is not None:
        out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        print(f"\nresults: {out}")
    return 0


def throughput_table(cells: list[dict[str, Any]]) -> str:
    lines = [
        "| per container | runtime | offered q/s | sent | answered | achieved q/s | failures by code "
        "| p50 ms | p99 ms | longest busy ms (bound) | longest call ms | containers started | gateway CPU ms/query "
        "| machine busy |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in cells:
        lat = c.get("latency_ms") or {}
        failures = ", ".join(f"{k} {v}" for k, v in sorted(c["failures"].items())) or "none"
        busy = "-" if c["busy_longest_ms"] is None else f"{c['busy_longest_ms']:.0f} ({c['busy_bound_ms']})"
        lines.append(
            f"| {c['queries_per_container']} | {c['runtime']} | {c['offered_qps']:g} | {c['sent']} | {c['answered']} "
            f"| {c['achieved_qps']:.1f} | {failures} | {lat.get('p50', float('nan')):.0f} "
            f"| {lat.get('p99', float('nan')):.0f} | {busy} | {c['longest_call_ms'] or 0:.0f} "
            f"| {c['containers_started']} | {c['gateway_cpu_ms_per_query']:.1f} | {c['machine_busy_percent']:.0f}% |"
        )
    return "\n".join(lines)


def latency_table(one: dict[str, Any]) -> str:
    lat = one["latency_ms"]
    ref = lat["direct"]
    lines = ["| path | n | p50 ms | p95 ms | p99 ms | p50 / direct | p50 over direct ms | p99 over direct ms |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for name, s in lat.items():
        lines.append(
            f"| {name} | {s['n']} | {s['p50']:.1f} | {s['p95']:.1f} | {s['p99']:.1f} | {s['p50'] / ref['p50']:.1f}x "
            f"| {s['p50'] - ref['p50']:+.1f} | {s['p99'] - ref['p99']:+.1f} |"
        )
    refill = one.get("refill_seconds") or {}
    if refill:
        lines.append(
            f"\nRefill (create, attach, start, account, connect, ready; {one['runtime']}): "
            f"p50 {refill['p50'] * 1000:.0f} ms, p95 {refill['p95'] * 1000:.0f} ms (n={refill['n']})."
        )
    return "\n".join(lines)


def cpu_table(cpu: dict[str, Any] | None) -> str:
    if cpu is None:
        return "CPU per query inside the container: not measured (no cgroup v1 cpuacct hierarchy here)."
    one_shot = cpu["one-shot, runc"]["container_cpu_ms_per_query"]
    lines = ["| variant | rounds | container CPU ms / query | ratio | Docker client CPU ms / query |",
             "|---|---|---|---|---|"]  # fmt: skip
    for name, c in cpu.items():
        lines.append(
            f"| {name} | {c['rounds']} | {c['container_cpu_ms_per_query']:.0f} "
            f"| {c['container_cpu_ms_per_query'] / one_shot:.2f} | {c['client_cpu_ms_per_query']:.1f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
