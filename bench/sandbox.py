"""Sandbox benchmark: direct driver vs warm pool vs cold container, on one seeded graph.

    .venv/bin/python bench/sandbox.py [--n 100] [--cold-n 20] [--rate 10] [--seconds 20]

The direct in-process driver is a reference only: the gateway never does that.
Everything else goes through the real runner (forwarder, socket, shim, hardened
one-shot containers). Prints a Markdown table and writes JSON next to it.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this file's directory comes first on sys.path and this file
# (bench/sandbox.py) would shadow the `sandbox` package: put the repo root there instead.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse
import json
import statistics
import threading
import time
import uuid
from typing import Any

import neo4j

from gateway.config import connection_settings
from gateway.ops import images, neo4j_local
from gateway.policy import load_policy
from gateway.runner import SandboxRunner, job_for, remove_leftovers, settings_for
from gateway.runner.contract import credentials_line, job_line, parse_result
from gateway.runner.docker_io import FrameReader, raw_socket, sandbox_spec
from sandbox.wire import SANDBOX_READY, SandboxJob

ANALYZE = load_policy().tool("analyze")


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def summary(values: list[float]) -> dict[str, float]:
    return {"n": len(values), "p50": pct(values, 50), "p95": pct(values, 95), "p99": pct(values, 99),
            "mean": statistics.fmean(values)}  # fmt: skip


def seed(driver: Any, label: str) -> None:
    with driver.session() as s:
        s.run(f"UNWIND range(1, 2000) AS i CREATE (:{label} {{i: i, name: 'node ' + toString(i)}})").consume()
        s.run(f"CREATE INDEX {label}_i IF NOT EXISTS FOR (n:{label}) ON (n.i)").consume()
        s.run("CALL db.awaitIndexes(60)").consume()
        s.run(f"MATCH (a:{label}), (b:{label}) WHERE b.i = a.i + 1 CREATE (a)-[:NEXT]->(b)").consume()


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
    """What a hardened `docker run --rm` per query costs: create, start, connect, run, remove."""
    started = time.perf_counter()
    spec = sandbox_spec(
        runner.settings, f"cgw-sock-{runner.runner_id}", runner.runner_id, runtime=str(runner.runtime), max_jobs=1
    )
    container = client.containers.create(**spec)
    try:
        attached = container.attach_socket(params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
        reader = FrameReader(raw_socket(attached))
        container.start()
        reader.sock.sendall(
            credentials_line(runner.settings.neo4j_user, runner.settings.neo4j_password.get_secret_value())
        )
        reader.read_until_stderr(SANDBOX_READY.encode(), time.monotonic() + 30)
        reader.sock.sendall(job_line(job(cypher)))
        result = parse_result(reader.read_stdout_line(time.monotonic() + 30))
        assert result.ok, result.error
        attached.close()
    finally:
        container.remove(force=True)
    return (time.perf_counter() - started) * 1000


def sustained(runner: SandboxRunner, cypher: str, rate: float, seconds: float) -> dict[str, Any]:
    """Open-loop load: one query every 1/rate s, each on its own thread; latency includes pool waits."""
    latencies: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()

    def one() -> None:
        started = time.perf_counter()
        try:
            result = runner.run(job(cypher))
            ok, why = result.ok, (result.error.message if result.error else "")
        except Exception as exc:
            ok, why = False, f"{type(exc).__name__}: {exc}"
        with lock:
            if ok:
                latencies.append((time.perf_counter() - started) * 1000)
            else:
                failures.append(why)

    threads = []
    began = time.perf_counter()
    total = int(rate * seconds)
    for i in range(total):
        delay = began + i / rate - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        t = threading.Thread(target=one)
        t.start()
        threads.append(t)
    for t in threads:
        t.join(120)
    wall = time.perf_counter() - began
    out: dict[str, Any] = {"offered_qps": rate, "seconds": seconds, "sent": total, "ok": len(latencies),
                           "failed": len(failures), "achieved_qps": len(latencies) / wall,
                           "failure_samples": sorted(set(failures))[:3]}  # fmt: skip
    if latencies:
        out["latency"] = summary(latencies)
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--cold-n", type=int, default=20)
    parser.add_argument("--rate", type=float, default=10.0)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--pool-size", type=int, default=4)
    parser.add_argument("--start-concurrency", type=int, default=4)
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("sandbox-results.json"))
    args = parser.parse_args()

    conn = neo4j_local.start()
    tag = images.ensure_sandbox_image()
    gateway_settings = connection_settings(conn, sandbox_image=tag, pool_size=args.pool_size)
    settings = settings_for(gateway_settings, start_concurrency=args.start_concurrency)
    label = f"Bench{uuid.uuid4().hex[:8]}"
    cypher = f"MATCH (a:{label})-[:NEXT]->(b) WHERE a.i <= 20 RETURN a.i AS i, b.name AS next ORDER BY i"
    driver = neo4j.GraphDatabase.driver(conn.uri, auth=(conn.user, conn.password))
    runner = SandboxRunner(settings)
    results: dict[str, Any] = {"query": cypher, "pool_size": args.pool_size}
    try:
        seed(driver, label)
        assert runner.wait_ready(120), runner.available()
        for _ in range(5):  # warm Neo4j's plan cache and the driver for every path
            direct(driver, cypher, False, conn.database)
            direct(driver, cypher, True, conn.database)
        runs: dict[str, list[float]] = {"direct": [], "direct+explain": [], "warm": []}
        # Interleaved, so a noisy neighbour on the shared cores hits every path alike.
        for _ in range(args.n):
            runs["direct"].append(direct(driver, cypher, False, conn.database))
            runs["direct+explain"].append(direct(driver, cypher, True, conn.database))
            runs["warm"].append(warm(runner, cypher))
        client = runner._client  # the benchmark reuses the runner's daemon connection and forwarder
        runs["cold"] = [cold(runner, client, cypher) for _ in range(args.cold_n)]
        results["latency_ms"] = {name: summary(values) for name, values in runs.items()}
        results["start_seconds"] = summary(runner._pool.start_seconds) if runner._pool else {}
        runner.wait_ready(60)
        results["sustained"] = sustained(runner, cypher, args.rate, args.seconds)
    finally:
        runner.close()
        with driver.session() as s:
            s.run(f"MATCH (n:{label}) DETACH DELETE n").consume()
            s.run(f"DROP INDEX {label}_i IF EXISTS").consume()
        driver.close()
    from docker.client import DockerClient

    leaked = remove_leftovers(DockerClient.from_env(), runner.runner_id)
    results["leaked_containers"] = leaked
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(table(results))
    return 0


def table(results: dict[str, Any]) -> str:
    lat = results["latency_ms"]
    ref = lat["direct"]
    lines = ["| path | n | p50 ms | p95 ms | p99 ms | p50 / direct | p50 over direct ms | p99 over direct ms |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for name, s in lat.items():
        lines.append(
            f"| {name} | {s['n']} | {s['p50']:.1f} | {s['p95']:.1f} | {s['p99']:.1f} | {s['p50'] / ref['p50']:.1f}x "
            f"| {s['p50'] - ref['p50']:+.1f} | {s['p99'] - ref['p99']:+.1f} |"
        )
    sus = results["sustained"]
    lines.append("")
    lines.append(
        f"Sustained {sus['offered_qps']:g} q/s for {sus['seconds']:g} s: {sus['ok']}/{sus['sent']} ok, "
        f"{sus['achieved_qps']:.1f} q/s achieved"
        + (f", p50 {sus['latency']['p50']:.0f} ms, p99 {sus['latency']['p99']:.0f} ms" if "latency" in sus else "")
        + f"; leaked containers after close: {results['leaked_containers']}."
    )
    st = results.get("start_seconds") or {}
    if st:
        lines.append(f"Container refill (create+attach+start+connect+ready): p50 {st['p50'] * 1000:.0f} ms, "
                     f"p95 {st['p95'] * 1000:.0f} ms (n={st['n']}).")  # fmt: skip
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
