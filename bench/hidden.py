"""Hidden-property weight in time: the same answer with a large hidden value and with none.

    .venv/bin/python bench/hidden.py [--pairs 12] [--repeats 1,100,480]

Two Attempts alike in every visible key, one with a hidden 1,024-float ``embedding``, one with
none, under the default policy with ``hidden_properties: {Attempt: [embedding]}``. The query
repeats the node ``k`` times (``RETURN [i IN range(1, $k) | a] AS xs``), so Neo4j sends the
hidden list ``k`` times. For each ``k``: interleaved pairs (heavy, empty, alternating which goes
first) through the real Gateway, sandbox (Bolt) and Neo4j; the medians of the wall-clock time
around ``Gateway.run`` and of the sandbox's own ``durationMs``, and their ratio heavy / empty;
beside them the bare driver in this process reading the agent's query as written, without the
scope rewrite's projection (what fetching the hidden value costs: Neo4j's work and the driver's
decoding). The answers themselves are identical
(tests/integration/guard/test_hidden_properties_weigh_nothing.py); through the gateway the
rewrite projects the node to its shown keys, so a ratio near 1 says the hidden value was not fetched.

The machine is shared: read the ratios between the two sides of one run. Writes
``bench/hidden-results.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this file's directory comes first on sys.path and bench/sandbox.py
# would shadow the `sandbox` package: put the repo root there instead.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse
import json
import statistics
import time
import uuid

import neo4j
from docker.client import DockerClient

from gateway.config import connection_settings
from gateway.domain import Principal, ToolResult
from gateway.ops import images, neo4j_local
from gateway.policy import HiddenProperties, load_policy
from gateway.runner import SandboxRunner, remove_leftovers, settings_for
from gateway.service import Gateway

EMBEDDING = [0.123456789012345] * 1024
POLICY = load_policy().model_copy(
    update={
        "hidden_properties": HiddenProperties.model_validate({"Attempt": ["embedding"]}),
        "visible_properties": None,
    }
)
AGENT = Principal(name="bench-hidden", scope=frozenset({"project-a"}))


def bare(driver: neo4j.Driver, database: str | None, query: str, uid: str, k: int) -> float:
    started = time.perf_counter()
    with driver.session(database=database) as session:
        list(session.run(query, u=uid, k=k))
    return (time.perf_counter() - started) * 1000


def timed(gateway: Gateway, query: str, uid: str, k: int) -> tuple[float, ToolResult]:
    started = time.perf_counter()
    result = gateway.run("analyze", query, {"u": uid, "k": k}, AGENT)
    return (time.perf_counter() - started) * 1000, result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=12)
    parser.add_argument("--repeats", default="1,100,480")
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("hidden-results.json"))
    args = parser.parse_args()
    repeats = [int(k) for k in args.repeats.split(",")]

    conn = neo4j_local.resolve(start_managed=True)
    marker = f"BenchHidden{uuid.uuid4().hex[:8]}"
    query = f"MATCH (a:{marker}:Attempt {{uid: $u}}) RETURN [i IN range(1, $k) | a] AS xs"
    driver = neo4j.GraphDatabase.driver(conn.uri, auth=(conn.user, conn.password.get_secret_value()))
    driver.execute_query(
        f"CREATE (:{marker}:Attempt {{uid: 'heavy', layers: ['project-a'], action: 'ran', embedding: $e}}), "
        f"(:{marker}:Attempt {{uid: 'empty', layers: ['project-a'], action: 'ran'}})",
        e=EMBEDDING,
        database_=conn.database,
    )
    base = settings_for(connection_settings(conn, sandbox_image=images.ensure_sandbox_image(), pool_size=2))
    # The policy's sandbox (containers reused per principal), waiting for one rather than "busy".
    runner = SandboxRunner(base, POLICY.sandbox.model_copy(update={"busy_wait_ms": 10_000}))
    results: dict[str, object] = {"pairs": args.pairs, "embedding_floats": len(EMBEDDING), "transport": "bolt"}
    try:
        assert runner.wait_ready(120), runner.available()
        gateway = Gateway(POLICY, runner)
        for k in repeats:
            for uid in ("heavy", "empty"):  # warm-up, not counted
                timed(gateway, query, uid, k)
            wall: dict[str, list[float]] = {"heavy": [], "empty": []}
            inside: dict[str, list[float]] = {"heavy": [], "empty": []}
            driver_ms: dict[str, list[float]] = {"heavy": [], "empty": []}
            for pair in range(args.pairs):
                for uid in ("heavy", "empty") if pair % 2 == 0 else ("empty", "heavy"):
                    ms, result = timed(gateway, query, uid, k)
                    assert result.rowCount == 1 and not result.truncated, result
                    wall[uid].append(ms)
                    inside[uid].append(result.durationMs or 0.0)
                    driver_ms[uid].append(bare(driver, conn.database, query, uid, k))
            cell: dict[str, object] = {
                side: {
                    "wall_ms_p50": round(statistics.median(wall[side]), 1),
                    "sandbox_ms_p50": round(statistics.median(inside[side]), 1),
                    "bare_driver_ms_p50": round(statistics.median(driver_ms[side]), 1),
                }
                for side in ("heavy", "empty")
            }
            cell["ratio_wall"] = round(statistics.median(wall["heavy"]) / statistics.median(wall["empty"]), 2)
            cell["ratio_sandbox"] = round(statistics.median(inside["heavy"]) / statistics.median(inside["empty"]), 2)
            cell["ratio_bare_driver"] = round(
                statistics.median(driver_ms["heavy"]) / statistics.median(driver_ms["empty"]), 2
            )
            results[f"k={k}"] = cell
            print(f"k={k}: {json.dumps(cell)}", flush=True)
    finally:
        runner.close()
        remove_leftovers(DockerClient.from_env(), runner.runner_id)
        driver.execute_query(f"MATCH (n:{marker}) DETACH DELETE n", database_=conn.database)
        driver.close()
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
