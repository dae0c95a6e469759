"""The gateway's MCP tool call end to end against a peer MCP server (mcp-neo4j-cypher), back to back.

    .venv/bin/python bench/peer.py               # 100 calls per query class, path and schedule, ~2 minutes
    .venv/bin/python bench/peer.py --quick       # 20 calls, no JSON unless --out
    .venv/bin/python bench/peer.py --calls 300

1. **The peer** (mcp-neo4j-cypher, pinned below) lives in its own virtualenv outside the repo's
   ``.venv`` (it pins its own fastmcp and mcp), made once under the state directory
   (``$CYPHER_GATEWAY_STATE``, default ``~/.local/state/cypher-gateway/bench-peer-venv``) with
   ``python3 -m venv`` and pip. It runs in process, unsandboxed: per call an EXPLAIN (its write
   check) and the query through one long-lived async driver, the rows as JSON text. Started with
   ``NEO4J_READ_ONLY=true`` (no write tool). Under ``--mode auto`` its stderr shows a validation
   error for the client's ``server/discover`` probe (mcp 1.22 does not know it) before the client
   falls back to the initialize handshake: harmless, and once per connection.
2. **The graph**: 200 nodes under a fresh label, chained by ``NEXT``, every element tagged with
   one layer (the gateway's stdio principal sees it: ``GATEWAY_STDIO_SCOPE``); three query
   classes, the same Cypher text to every path: a small read (5 rows), a 100-row read (the
   default policy's row limit, not truncated) and a 2-hop traversal (20 rows).
3. **Both servers over stdio through the same client** (the MCP SDK's ``Client`` in this
   process, ``--mode``: its default negotiation, or the initialize handshake for both):
   ``cypher-gateway serve`` under the default policy and its default settings (tool
   ``analyze``), and the peer (tool ``read_neo4j_cypher``). Warmed, then for each class N calls
   per path **back to back** (each call sent when the previous answer is back), the gateway,
   the peer and the bare driver (this process, one explicit READ transaction; a reference, not
   an MCP server) interleaved so load hits all three alike, in two schedules (``--blocks``):
   call by call in rotating order, where each server idles while the other two answer; and in
   blocks of 10 calls per path, where each server is called strictly back to back (a block's
   first call, which follows the other paths' calls, is checked but not timed). Every answer is
   checked: the same rows, in the same order, from every path; a gateway ``busy`` is counted
   apart.
4. **Where the gateway's milliseconds go**, per call, from clocks the product already reports:
   the audit line's ``duration_ms`` (``Gateway.run``: guard, rewrite, waiting for the
   principal's container, hand-off, sandbox, result check) and the answer's ``durationMs`` (inside
   the sandbox); the rest of the client's time is the MCP layer (JSON-RPC over the pipes, the
   SDK's validation and serialization on both sides, the worker-thread hop).
5. **Stages** (``--no-stages`` skips it): afterwards, alone, the same queries through an
   in-process ``Gateway`` strictly back to back, interleaved with the direct driver, split by
   ``bench/sandbox.py``'s ``breakdown`` (the wait for the principal's container to re-arm timed
   apart from the time inside the sandbox).

The machine is shared: read the ratios. Prints Markdown tables; writes ``bench/peer-results.json``
(``--quick``: only with ``--out``).
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this file's directory comes first on sys.path, and bench/mcp.py and
# bench/sandbox.py would shadow the MCP SDK and the sandbox package: the repository root instead.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse
import json
import os
import subprocess
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import anyio
import neo4j
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import CallToolResult, TextContent

from bench.sandbox import breakdown, breakdown_table, machine_busy, summary
from gateway.config import connection_settings
from gateway.connection import Neo4jConnection
from gateway.ops import images, neo4j_local
from gateway.paths import state_dir

REPO = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).parent / "cypher-gateway")
PEER_PACKAGE, PEER_VERSION = "mcp-neo4j-cypher", "0.6.0"
PEER_TOOL, GATEWAY_TOOL = "read_neo4j_cypher", "analyze"
PATHS = ("gateway", "peer", "driver")
NODES, WARM_CALLS = 200, 5
# The layer every seeded element is in: the one bench.sandbox.breakdown's principal sees (the label is
# this run's own, so nothing else matches the queries).
LAYER = "project-a"
SCHEDULES = {1: "call by call (gateway, peer, driver in rotating order)"}  # else: "blocks of K"


@dataclass(frozen=True)
class QueryClass:
    name: str
    cypher: str
    rows: int


def query_classes(label: str) -> list[QueryClass]:
    return [
        QueryClass("small read", f"MATCH (n:{label}) WHERE n.i <= 5 RETURN n.i AS i, n.name AS name ORDER BY i", 5),
        QueryClass("100 rows", f"MATCH (n:{label}) WHERE n.i <= 100 RETURN n.i AS i, n.name AS name ORDER BY i", 100),
        QueryClass(
            "2-hop",
            f"MATCH (a:{label})-[:NEXT]->(b:{label})-[:NEXT]->(c:{label}) WHERE a.i <= 20 "
            "RETURN a.i AS i, b.name AS b, c.name AS c ORDER BY i",
            20,
        ),
    ]


# --- the peer's virtualenv ------------------------------------------------------------------------


def peer_venv() -> Path:
    return state_dir() / "bench-peer-venv"


def installed_version(venv: Path, package: str) -> str | None:
    found = subprocess.run(
        [str(venv / "bin" / "python"), "-c", f"import importlib.metadata as m; print(m.version({package!r}))"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return found.stdout.strip() or None


def ensure_peer() -> Path:
    """The peer's executable, installed once into its own virtualenv (the pinned version)."""
    venv = peer_venv()
    exe = venv / "bin" / PEER_PACKAGE
    if exe.exists() and installed_version(venv, PEER_PACKAGE) == PEER_VERSION:
        return exe
    print(f"[peer] making {venv} and installing {PEER_PACKAGE}=={PEER_VERSION} ...", file=sys.stderr, flush=True)
    subprocess.run(["python3", "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", f"{PEER_PACKAGE}=={PEER_VERSION}"],
                   check=True)  # fmt: skip
    print(f"[peer] installed {PEER_PACKAGE} {installed_version(venv, PEER_PACKAGE)}", file=sys.stderr, flush=True)
    return exe


# --- the graph ------------------------------------------------------------------------------------


def seed(driver: Any, label: str, layer: str, database: str | None) -> None:
    with driver.session(database=database) as s:
        s.run(
            f"UNWIND range(1, $n) AS i CREATE (:{label} {{i: i, name: 'node ' + toString(i), layers: [$layer]}})",
            n=NODES, layer=layer,
        ).consume()  # fmt: skip
        s.run(f"CREATE INDEX {label}_i IF NOT EXISTS FOR (n:{label}) ON (n.i)").consume()
        s.run("CALL db.awaitIndexes(60)").consume()
        s.run(
            f"MATCH (a:{label}), (b:{label}) WHERE b.i = a.i + 1 CREATE (a)-[:NEXT {{layers: [$layer]}}]->(b)",
            layer=layer,
        ).consume()


def unseed(driver: Any, label: str, database: str | None) -> None:
    with driver.session(database=database) as s:
        s.run(f"MATCH (n:{label}) DETACH DELETE n").consume()
        s.run(f"DROP INDEX {label}_i IF EXISTS").consume()


# --- one call on each path ------------------------------------------------------------------------


@dataclass
class Answer:
    ms: float
    outcome: str  # "ok", an error code, or "wrong"
    rows: list[list[Any]] = field(default_factory=list)
    query_id: str | None = None
    sandbox_ms: float | None = None
    timed: bool = True


def _text(result: CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, TextContent))


def _error_code(result: CallToolResult) -> str:
    try:
        body = json.loads(_text(result))
    except ValueError:
        return "error"
    error = body.get("error") if isinstance(body, dict) else None
    return str(error.get("code", "error")) if isinstance(error, dict) else "error"


async def call_gateway(client: Client, cypher: str) -> Answer:
    began = time.perf_counter()
    result = await client.call_tool(GATEWAY_TOOL, {"cypher": cypher})
    ms = (time.perf_counter() - began) * 1000
    if result.is_error:
        return Answer(ms, _error_code(result))
    data = result.structured_content or {}
    if data.get("truncated") or data.get("degraded"):
        return Answer(ms, "wrong")
    return Answer(ms, "ok", data.get("rows", []), data.get("queryId"), data.get("durationMs"))


async def call_peer(client: Client, cypher: str) -> Answer:
    began = time.perf_counter()
    result = await client.call_tool(PEER_TOOL, {"query": cypher, "params": {}})
    ms = (time.perf_counter() - began) * 1000
    if result.is_error:
        return Answer(ms, "error")
    return Answer(ms, "ok", [list(row.values()) for row in json.loads(_text(result))])


def call_driver(driver: Any, cypher: str, database: str | None) -> Answer:
    began = time.perf_counter()
    with driver.session(database=database, default_access_mode=neo4j.READ_ACCESS) as s, s.begin_transaction() as tx:
        rows = [list(r.values()) for r in tx.run(cypher)]
        tx.commit()
    return Answer((time.perf_counter() - began) * 1000, "ok", rows)


# --- the run --------------------------------------------------------------------------------------


def gateway_params(layer: str, image: str, audit: Path) -> StdioServerParameters:
    # serve reads Neo4j as this process's neo4j_local.resolve() does (same environment).
    env = {**os.environ, "GATEWAY_STDIO_SCOPE": layer, "GATEWAY_SANDBOX_IMAGE": image, "GATEWAY_AUDIT_PATH": str(audit)}
    return StdioServerParameters(command=CLI, args=["serve"], env=env, cwd=str(REPO))


def peer_params(exe: Path, conn: Neo4jConnection) -> StdioServerParameters:
    env = {
        **os.environ, "NEO4J_URI": conn.uri, "NEO4J_USERNAME": conn.user,
        "NEO4J_PASSWORD": conn.password.get_secret_value(), "NEO4J_DATABASE": conn.database or "neo4j",
        "NEO4J_TRANSPORT": "stdio", "NEO4J_READ_ONLY": "true",
    }  # fmt: skip
    return StdioServerParameters(command=str(exe), args=[], env=env)


def measure(
    classes: list[QueryClass], calls: int, gw: StdioServerParameters, peer: StdioServerParameters,
    driver: Any, database: str | None, mode: str, blocks: list[int],
) -> dict[int, dict[str, dict[str, list[Answer]]]]:  # fmt: skip
    """answers[block][query class][path]; the schedules run one after the other on the same two servers."""
    answers: dict[int, dict[str, dict[str, list[Answer]]]] = {
        b: {c.name: {p: [] for p in PATHS} for c in classes} for b in blocks
    }

    async def run() -> None:
        async with (
            Client(gw, read_timeout_seconds=120, mode=mode) as g,
            Client(peer, read_timeout_seconds=120, mode=mode) as p,
        ):

            async def one(path: str, cypher: str) -> Answer:
                if path == "gateway":
                    return await call_gateway(g, cypher)
                if path == "peer":
                    return await call_peer(p, cypher)
                return call_driver(driver, cypher, database)

            for block, qc in ((b, c) for b in blocks for c in classes):
                print(f"[peer] blocks of {block}, {qc.name}: {WARM_CALLS} warm-up and {calls} calls per path ...",
                      file=sys.stderr, flush=True)  # fmt: skip
                for _ in range(WARM_CALLS):
                    for path in PATHS:
                        warm = await one(path, qc.cypher)
                        assert warm.outcome == "ok", (path, warm.outcome)
                measured = {path: 0 for path in PATHS}
                k = 0
                while min(measured.values()) < calls:
                    # Rotate who goes first, so no path always follows the same one.
                    for path in PATHS[k % 3 :] + PATHS[: k % 3]:
                        for j in range(block):
                            if j > 0 and measured[path] >= calls:
                                break
                            answer = await one(path, qc.cypher)
                            if answer.outcome == "ok" and len(answer.rows) != qc.rows:
                                answer.outcome = "wrong"
                            # In blocks, a block's first call follows the other paths' calls, not its
                            # own previous answer: it is checked and its failures count, its time not.
                            answer.timed = block == 1 or j > 0
                            answers[block][qc.name][path].append(answer)
                            measured[path] += answer.timed
                    k += 1

    anyio.run(run)
    return answers


def check_same_rows(answers: dict[str, list[Answer]]) -> int:
    """How many gateway and peer answers differ from the driver's rows (the reference)."""
    reference = next((a.rows for a in answers["driver"] if a.outcome == "ok"), None)
    return sum(1 for path in ("gateway", "peer") for a in answers[path] if a.outcome == "ok" and a.rows != reference)


def audit_durations(audit: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    if audit.exists():
        for line in audit.read_text(encoding="utf-8").splitlines():
            event = json.loads(line)
            if event.get("query_id") and event.get("tool") == GATEWAY_TOOL:
                out[event["query_id"]] = float(event.get("duration_ms") or 0.0)
    return out


def report_class(qc: QueryClass, answers: dict[str, list[Answer]], audit: dict[str, float]) -> dict[str, Any]:
    out: dict[str, Any] = {"cypher": qc.cypher, "rows": qc.rows, "paths": {}}
    for path in PATHS:
        ok = [a.ms for a in answers[path] if a.outcome == "ok" and a.timed]
        out["paths"][path] = {
            "calls": len(answers[path]),
            "failures": dict(Counter(a.outcome for a in answers[path] if a.outcome != "ok")),
            "latency_ms": summary(ok) if ok else None,
        }
    out["rows_differ"] = check_same_rows(answers)
    gw, peer = out["paths"]["gateway"]["latency_ms"], out["paths"]["peer"]["latency_ms"]
    out["ratio_p50_gateway_over_peer"] = gw["p50"] / peer["p50"] if gw and peer else None
    # The gateway's call split by the clocks it reports (each a per-call difference, then its percentiles).
    split: dict[str, list[float]] = {"MCP layer (client time - Gateway.run)": [],
                                     "Gateway.run outside the sandbox": [], "inside the sandbox": []}  # fmt: skip
    for a in answers["gateway"]:
        run_ms = audit.get(a.query_id or "")
        if a.outcome != "ok" or not a.timed or run_ms is None or a.sandbox_ms is None:
            continue
        split["MCP layer (client time - Gateway.run)"].append(a.ms - run_ms)
        split["Gateway.run outside the sandbox"].append(run_ms - a.sandbox_ms)
        split["inside the sandbox"].append(a.sandbox_ms)
    out["gateway_split_ms"] = {name: summary(values) for name, values in split.items() if values}
    return out


def latency_table(classes: dict[str, dict[str, Any]]) -> str:
    lines = ["| query | rows | path | timed / sent | failures | p50 ms | p95 ms | p99 ms | p50 / peer |",
             "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for name, c in classes.items():
        peer = c["paths"]["peer"]["latency_ms"]
        for path, p in c["paths"].items():
            lat = p["latency_ms"] or {"n": 0, "p50": float("nan"), "p95": float("nan"), "p99": float("nan")}
            failures = ", ".join(f"{k} {v}" for k, v in sorted(p["failures"].items())) or "none"
            ratio = f"{lat['p50'] / peer['p50']:.2f}x" if peer else "-"
            lines.append(
                f"| {name} | {c['rows']} | {path} | {lat['n']} / {p['calls']} | {failures} | {lat['p50']:.1f} "
                f"| {lat['p95']:.1f} | {lat['p99']:.1f} | {ratio} |"
            )
    return "\n".join(lines)


def split_table(classes: dict[str, dict[str, Any]]) -> str:
    lines = ["| query | gateway stage | n | p50 ms | p95 ms | p99 ms |", "|---|---|---|---|---|---|"]
    for name, c in classes.items():
        for stage, s in c["gateway_split_ms"].items():
            lines.append(f"| {name} | {stage} | {s['n']} | {s['p50']:.1f} | {s['p95']:.1f} | {s['p99']:.1f} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, help="measured calls per query class and path (100; quick: 20)")
    parser.add_argument("--quick", action="store_true", help="20 calls per class and path, no JSON unless --out")
    parser.add_argument(
        "--mode", default="auto", choices=("auto", "legacy"),
        help="the client's protocol negotiation for both servers (auto: the SDK's default; legacy: initialize)",
    )  # fmt: skip
    parser.add_argument(
        "--blocks", default="1,10",
        help="schedules, run one after the other: calls in a row per path before the next path (1: call by call; "
        "K > 1: each server strictly back to back within a block, the block's first call untimed)",
    )  # fmt: skip
    parser.add_argument(
        "--no-stages", action="store_true",
        help="skip the in-process stage split (bench/sandbox.py's one agent back to back) of each query class",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, help="JSON results (default run: bench/peer-results.json)")
    args = parser.parse_args()
    calls = args.calls or (20 if args.quick else 100)
    blocks = [int(b) for b in args.blocks.split(",")]
    out = args.out or (None if args.quick else Path(__file__).with_name("peer-results.json"))

    exe = ensure_peer()
    conn = neo4j_local.resolve(start_managed=True)
    image = images.ensure_sandbox_image()
    label, layer = f"Peer{uuid.uuid4().hex[:8]}", LAYER
    classes = query_classes(label)
    driver = neo4j.GraphDatabase.driver(conn.uri, auth=(conn.user, conn.password.get_secret_value()))
    results: dict[str, Any] = {
        "what": "one agent back to back over stdio (the MCP SDK's Client), gateway `analyze` under the default "
        "policy vs the peer's `read_neo4j_cypher`, and the bare driver (one explicit READ transaction) for "
        "reference; interleaved call by call (block 1) and in blocks where each server is called strictly back "
        "to back",
        "peer": {"package": PEER_PACKAGE, "version": PEER_VERSION, "tool": PEER_TOOL,
                 **{dep: installed_version(peer_venv(), dep) for dep in ("fastmcp", "mcp", "neo4j")}},
        "client_mode": args.mode, "blocks": blocks, "calls_per_path": calls, "warm_calls": WARM_CALLS,
        "cpus": os.cpu_count(), "neo4j": conn.uri, "load_before": os.getloadavg(),
    }  # fmt: skip
    try:
        seed(driver, label, layer, conn.database)
        with tempfile.TemporaryDirectory(prefix="cgw-peer-") as tmp:
            audit_path = Path(tmp) / "audit.jsonl"
            busy_before, began = machine_busy(), time.monotonic()
            answers = measure(
                classes, calls, gateway_params(layer, image, audit_path), peer_params(exe, conn), driver,
                conn.database, args.mode, blocks,
            )  # fmt: skip
            busy_after = machine_busy()
            audit = audit_durations(audit_path)
            if not args.no_stages:
                # After the MCP phase, alone: the same queries through an in-process Gateway, with the
                # wait for the principal's container timed apart (clocks around the layers).
                settings = connection_settings(conn, sandbox_image=image, audit_path=Path(tmp) / "stages.jsonl")
                results["stages"] = {}
                for qc in classes:
                    print(f"[peer] stages, {qc.name}: {calls} calls ...", file=sys.stderr, flush=True)
                    results["stages"][qc.name] = breakdown(settings, conn, driver, qc.cypher, calls)
    finally:
        unseed(driver, label, conn.database)
        driver.close()
    results["seconds"] = round(time.monotonic() - began, 1)
    results["machine_busy_percent"] = round(
        100 * (busy_after[0] - busy_before[0]) / max(1, busy_after[1] - busy_before[1]), 1
    )
    results["load_after"] = os.getloadavg()
    results["runs"] = [
        {"block": b, "classes": {qc.name: report_class(qc, answers[b][qc.name], audit) for qc in classes}}
        for b in blocks
    ]
    differ: dict[str, int] = {}
    for run in results["runs"]:
        schedule = SCHEDULES.get(run["block"], f"blocks of {run['block']}")
        print(f"\n### {schedule}\n\n{latency_table(run['classes'])}")
        print("\nThe gateway's call, split by the clocks it reports (per-call differences):\n")
        print(split_table(run["classes"]))
        differ.update({f"{schedule}: {n}": c["rows_differ"] for n, c in run["classes"].items() if c["rows_differ"]})
    print(
        f"\nload average before {results['load_before'][0]:.1f}, after {results['load_after'][0]:.1f} "
        f"(1 min; {results['cpus']} CPUs); machine busy {results['machine_busy_percent']}% over {results['seconds']} s"
    )
    for name, stages in results.get("stages", {}).items():
        print(f"\n### {name}: one agent back to back through an in-process Gateway (bench/sandbox.py)\n")
        print(breakdown_table(stages))
    if differ:
        print(f"ANSWERS DIFFER from the driver's rows: {differ}")
    if out is not None:
        out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        print(f"results: {out}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
