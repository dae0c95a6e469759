"""The scope rewrite's cost through the real server: the MCP SDK's client -> ``cypher-gateway serve``
over stdio -> the real sandbox -> the real Neo4j.

Two shapes once took the server down from a single call, both under ``max_query_chars``: k
empty patterns times m conditions (the rewrite copied each pattern's predicate into every
condition: 4,918 characters became a 103 MB query and `check` answered after 446 s), and a
flat chain of 1,900 ORs (a RecursionError, answered with the SDK's untyped error and no audit
line). Both must now get a typed answer at once, and an audit line each.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from gateway.audit import AuditLog
from gateway.connection import Neo4jConnection
from gateway.policy import load_policy
from tests.support.env import server_env
from tests.support.paths import GATEWAY_CLI, REPO
from tests.support.server import SeededGraph

LIMITS = load_policy().tool("analyze").limits
# A generous bound for a whole MCP round trip on a shared machine (bench/rewrite.py: the rewrite
# itself takes at most about 160 ms for any 8 KB shape); the failures above took minutes.
ANSWER_BOUND_S = 30.0


def _body(result: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(result.content[0].text)
    return data


def test_the_rewrite_stays_small_and_every_failure_is_typed(
    neo4j_connection: Neo4jConnection, sandbox_image: str, seeded_graph: SeededGraph, tmp_path: Path
) -> None:
    label = seeded_graph.label
    audit_path = tmp_path / "audit.jsonl"
    env = server_env(neo4j_connection, sandbox_image, audit_path, GATEWAY_STDIO_SCOPE=seeded_graph.layer)
    # k patterns x m conditions, as reported (k = 800), and at the policy's size limit; m is held to
    # the policy's operands per boolean chain (a longer chain is refused as size.operands first).
    operands = LIMITS.max_boolean_operands
    products = {
        "reported": "MATCH " + ",".join(["()"] * 800) + " WHERE " + " AND ".join(["-1"] * operands) + " RETURN 1",
        "largest": "MATCH " + ",".join(["()"] * 1500) + " WHERE " + " AND ".join(["-1"] * operands) + " RETURN 1",
        "allowed": "MATCH "
        + ",".join(["()"] * 100)
        + " WHERE "
        + " AND ".join(["1 / $x = 1"] * operands)
        + " RETURN 1",
    }
    # Run, the longest chain the policy allows (Neo4j's own planner needs seconds for 800 ORs).
    ors = f"MATCH (n:{label}) WHERE " + " OR ".join(["n.i = 3"] * operands) + " RETURN n.i AS i"
    calls: list[tuple[str, dict[str, Any]]] = [
        *[("check", {"cypher": q, "tool": "analyze", "params": {"x": 1}}) for q in products.values()],
        ("check", {"cypher": "MATCH (n) WHERE " + " OR ".join(["n"] * 1900) + " RETURN n", "tool": "analyze"}),
        ("check", {"cypher": "MATCH (n WHERE " + " XOR ".join(["n"] * 1600) + ") RETURN n", "tool": "analyze"}),
        ("analyze", {"cypher": ors}),
        ("analyze", {"cypher": products["reported"]}),
    ]
    answers: list[tuple[Any, float]] = []

    async def session() -> None:
        params = StdioServerParameters(command=GATEWAY_CLI, args=["serve"], env=env, cwd=str(REPO))
        async with Client(params, read_timeout_seconds=120) as client:
            for tool, args in calls:
                assert len(args["cypher"]) <= LIMITS.max_query_chars
                started = time.monotonic()
                answers.append((await client.call_tool(tool, args), time.monotonic() - started))

    anyio.run(session)
    assert all(seconds < ANSWER_BOUND_S for _, seconds in answers), [round(s, 1) for _, s in answers]
    reported, largest, allowed, or_chain, xor_chain, ran, refused = (_body(a) for a, _ in answers)
    # The product shapes: refused by the cap before anything runs, or rewritten to a size linear
    # in the query (a few hundred characters per pattern), never their product.
    assert (reported["allowed"], reported["rule"]) == (False, "scope.too_large")
    assert (largest["allowed"], largest["rule"]) == (False, "scope.too_large")
    # About 390 characters per pattern: its element's visibility, once in the pattern's WHERE and
    # once in the guard the raising conditions wait behind (they wait for every element).
    assert allowed["allowed"] is True and len(allowed["rewritten"]) < 400 * 100 + 2 * len(products["allowed"])
    # The flat chains: a typed answer at once (once a RecursionError), now the operand bound's.
    assert (or_chain["allowed"], or_chain["rule"]) == (False, "size.operands")
    assert (xor_chain["allowed"], xor_chain["rule"]) == (False, "size.operands")
    assert ran.get("rows") == [[3]] and ran["degraded"] == [], ran
    assert refused["error"]["code"] == "rejected" and refused["error"]["rule"] == "scope.too_large"
    lines = AuditLog(audit_path).read()
    assert [(line["tool"], line["decision"], line["rule"]) for line in lines] == [
        ("check", "rejected", "scope.too_large"),
        ("check", "rejected", "scope.too_large"),
        ("check", "allowed", None),
        ("check", "rejected", "size.operands"),
        ("check", "rejected", "size.operands"),
        ("analyze", "answered", None),
        ("analyze", "rejected", "scope.too_large"),
    ]
