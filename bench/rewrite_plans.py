"""Scoped query size and Neo4j planning time, per shipped policy, on the Mentis fixture.

For each representative agent query (``REPRESENTATIVE``, shared with the unit test that bounds
the size) and each policy in ``policies/``: the rewritten text's length against the agent's, and
the time Neo4j takes to plan it (``CYPHER replan=force EXPLAIN``: planning only, no plan cache;
the median of ``--rounds``), against the unscoped query's. The managed Neo4j (5.26 unless
``--version``) is started if needed and the Mentis fixture seeded into it.

    .venv/bin/python bench/rewrite_plans.py [--rounds 3] [--json] [--write]
    .venv/bin/python bench/rewrite_plans.py --anatomy mentis --rounds 7 [--json] [--write]

``--write`` stores the figures in ``bench/rewrite-plans-results.json`` (``--anatomy``: in
``bench/rewrite-plans-anatomy.json``: one policy's scoped text planned as written, without the
answer's projection, and under each planner-only ``CYPHER`` option, median and minimum). Before and after a change
of the rewrite, in one interleaved run: ``--texts FILE`` writes each rewritten text (run it on the
old tree), ``--baseline FILE`` reads them back and plans them beside the current ones, round by
round (unscoped, baseline, current), so the machine's load falls on all three alike.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
# Run as a script, this file's directory comes first on sys.path and bench/mcp.py would shadow
# the `mcp` package: put the repo root there instead.
if sys.path and Path(sys.path[0]).resolve() == REPO / "bench":
    sys.path[0] = str(REPO)
else:
    sys.path.insert(0, str(REPO))

from gateway import guard, scope  # noqa: E402
from gateway.cypher import ast, parse  # noqa: E402
from gateway.domain import Principal  # noqa: E402
from gateway.mnr import seed  # noqa: E402
from gateway.ops import neo4j_local  # noqa: E402
from gateway.policy import POLICIES_DIR, Policy, load_policy  # noqa: E402

RESULTS = REPO / "bench" / "rewrite-plans-results.json"
ANATOMY = REPO / "bench" / "rewrite-plans-anatomy.json"

# One query per shape the rewrite writes differently (fixed-length parts with stated and unstated
# labels, untyped relationships, variable length, shortestPath, OPTIONAL MATCH with a COUNT
# subquery, a pattern comprehension); tests/unit/test_scope_size.py bounds their scoped size.
REPRESENTATIVE: dict[str, str] = {
    "one labelled node": "MATCH (t:Task) RETURN t.id",
    "one unlabelled node": "MATCH (n) WHERE n.name = 'acme/payments' RETURN n",
    "two hops, labels stated": "MATCH (t:Task)-[:HAS_ATTEMPT]->(a:Attempt) RETURN t.id, count(a)",
    "three hops, one unstated": (
        "MATCH (r:Repository)-[:HAS_TASK]->(t)-[:HAS_ATTEMPT]->(a:Attempt) RETURN r.name, t.id, a.check"
    ),
    "untyped relationship": "MATCH (a)-[r]->(b) RETURN type(r), count(*)",
    "variable length": "MATCH p = (r:Repository)-[*1..3]-(x) RETURN r.name, length(p), count(x)",
    "shortestPath with condition": (
        "MATCH p = shortestPath((a:Repository {name: 'acme/payments'})-[*1..3]-(b:Task)) "
        "WHERE all(z IN nodes(p) WHERE z.check IS NULL) RETURN count(*)"
    ),
    "OPTIONAL MATCH and COUNT": (
        "MATCH (t:Task) OPTIONAL MATCH (t)-[:HAS_ATTEMPT]->(a:Attempt) WHERE a.check = 'passed' "
        "RETURN t.id, count(a) AS passed, COUNT { (t)-[:HAS_CONCLUSION]->(:Conclusion) } AS conclusions"
    ),
    "pattern comprehension": "MATCH (t:Task) RETURN t.id, [(t)-[:HAS_ATTEMPT]->(a) | a.check] AS checks",
    "EXISTS in a WHERE": (
        "MATCH (t:Task) WHERE EXISTS { MATCH (t)-[:HAS_ATTEMPT]->(a:Attempt) WHERE a.check = 'failed' } RETURN t.id"
    ),
}
CALLER = Principal(name="bench", scope=frozenset({"l1"}), attributes={"repositories": frozenset({"acme/payments"})})


def reading_the_representative_keys(policy: Policy) -> Policy:
    """``policy``, its allow-list also showing by default the keys the representative queries read.

    Under an allow-list a key listed for no label is refused before any rewrite; shown by default
    (and not on the labels that list others) every read of it still gets its CASE, whose size counts.
    """
    visible = policy.visible_properties
    if visible is None:
        return policy
    read = {
        node.key
        for text in REPRESENTATIVE.values()
        for node in parse(text, max_chars=10_000, max_depth=32).walk()
        if isinstance(node, ast.Property)
    }
    widened = visible.model_copy(update={"default": visible.default | read})
    return policy.model_copy(update={"visible_properties": widened})


def shipped_policies() -> list[Policy]:
    """Every policy in ``policies/``, each reading the representative queries' keys."""
    return [reading_the_representative_keys(load_policy(path)) for path in sorted(POLICIES_DIR.glob("*.yaml"))]


def rewritten(query: str, policy: Policy) -> tuple[str, dict[str, Any]]:
    decision = guard.check(query, {}, "analyze", policy)
    assert decision.allowed and decision.parsed is not None, decision
    planned = scope.plan(decision.parsed, policy, "analyze", CALLER)
    return planned.cypher, planned.params


def planning_samples(
    session: Any, queries: list[tuple[str, dict[str, Any]]], rounds: int, options: list[str] | None = None
) -> list[list[float]]:
    """Every planning time of each query (under its ``options``), the queries taken in turn within each round."""
    samples: list[list[float]] = [[] for _ in queries]
    for _ in range(rounds):
        for index, (query, params) in enumerate(queries):
            option = options[index] if options else ""
            started = time.perf_counter()
            session.run(f"CYPHER {option} replan=force EXPLAIN {query}".replace("  ", " "), params).consume()
            samples[index].append((time.perf_counter() - started) * 1000)
    return samples


def planning_ms(session: Any, queries: list[tuple[str, dict[str, Any]]], rounds: int) -> list[float]:
    """The median planning time of each query, the queries taken in turn within each round."""
    return [statistics.median(s) for s in planning_samples(session, queries, rounds)]


# CYPHER options that change only how Neo4j plans (the policies' ``cypher.query_options`` and a few more).
PLANNER_OPTIONS = (
    "planner=dp", "connectComponentsPlanner=greedy", "inferSchemaParts=off", "runtime=interpreted",
    "expressionEngine=interpreted",
)  # fmt: skip


def anatomy(session: Any, policy: Policy, rounds: int) -> list[dict[str, object]]:
    """Where one policy's planning time goes: per query, the scoped text planned as the rewrite
    writes it, without the answer's projection (the same policy hiding no property), and under each
    planner option; the unscoped query beside them, all in turn within each round."""
    bare = policy.model_copy(update={"visible_properties": None, "hidden_properties": type(policy.hidden_properties)()})
    rows: list[dict[str, object]] = []
    for name, query in REPRESENTATIVE.items():
        text, params = rewritten(query, policy)
        plain, plain_params = rewritten(query, bare)
        variants = {"unscoped": (query, {}), "scoped": (text, params), "no projection": (plain, plain_params)}
        variants |= {option: (text, params) for option in PLANNER_OPTIONS}
        options = ["", "", "", *PLANNER_OPTIONS]
        # The minimum as well as the median: on a loaded machine the minimum is the steadier figure.
        samples = planning_samples(session, list(variants.values()), rounds, options)
        row: dict[str, object] = {"policy": policy.name, "query": name, "chars_out": len(text)}
        row |= {"chars_no_projection": len(plain)}
        for key, values in zip(variants, samples, strict=True):
            row[f"plan_ms {key}"] = [round(statistics.median(values), 1), round(min(values), 1)]
        rows.append(row)
        line = "  ".join(f"{k} {v}" for k, v in row.items() if k.startswith("plan_ms"))
        print(f"{name:<28} {line}", file=sys.stderr, flush=True)
    return rows


def texts() -> dict[str, list[Any]]:
    """Every policy's rewritten text of every representative query, keyed ``policy/query``."""
    out: dict[str, list[Any]] = {}
    for policy in shipped_policies():
        for name, query in REPRESENTATIVE.items():
            out[f"{policy.name}/{name}"] = list(rewritten(query, policy))
    return out


def main() -> int:
    import neo4j

    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--write", action="store_true", help=f"store the figures in {RESULTS.relative_to(REPO)}")
    ap.add_argument("--texts", type=Path, metavar="FILE", help="write the rewritten texts here and stop")
    ap.add_argument("--baseline", type=Path, metavar="FILE", help="plan these texts (--texts of another tree) too")
    ap.add_argument(
        "--anatomy", metavar="POLICY", help=f"where this policy's planning time goes ({ANATOMY.relative_to(REPO)})"
    )
    args = ap.parse_args()
    if args.texts is not None:
        args.texts.write_text(json.dumps(texts(), indent=1) + "\n", encoding="utf-8")
        return 0
    baseline: dict[str, list[Any]] = (
        json.loads(args.baseline.read_text(encoding="utf-8")) if args.baseline is not None else {}
    )
    connection = neo4j_local.resolve(start_managed=True)
    seed.seed_builtin(connection, "mentis")
    auth = (connection.user, connection.password.get_secret_value())
    results: list[dict[str, object]] = []
    with (
        neo4j.GraphDatabase.driver(connection.uri, auth=auth) as driver,
        driver.session(database=connection.database) as session,
    ):
        if args.anatomy:
            chosen = [p for p in shipped_policies() if p.name == args.anatomy]
            rows = anatomy(session, chosen[0], args.rounds)
            rows.append({"load_average_after": [round(x, 1) for x in os.getloadavg()], "rounds": args.rounds})
            if args.write:
                ANATOMY.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
            if args.json:
                print(json.dumps(rows, indent=1))
            return 0
        for policy in shipped_policies():
            for name, query in REPRESENTATIVE.items():
                text, params = rewritten(query, policy)
                before = baseline.get(f"{policy.name}/{name}")
                queries = [(query, {}), (text, params), *([(before[0], before[1])] if before else [])]
                base, scoped, *old = planning_ms(session, queries, args.rounds)
                row: dict[str, object] = {
                    "policy": policy.name, "query": name, "chars_in": len(query), "chars_out": len(text),
                    "size_ratio": round(len(text) / len(query), 1), "plan_ms_unscoped": round(base, 1),
                    "plan_ms_scoped": round(scoped, 1),
                }  # fmt: skip
                if before:
                    row |= {"chars_out_before": len(before[0]), "plan_ms_scoped_before": round(old[0], 1)}
                results.append(row)
    if args.write:
        results.append({"load_average_after": [round(x, 1) for x in os.getloadavg()], "rounds": args.rounds})
        RESULTS.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(results, indent=1))
        return 0
    header = ("policy", "query", "chars in", "chars out", "x size", "plan ms", "scoped ms", "before ms")
    print("{:<11} {:<28} {:>8} {:>9} {:>6} {:>8} {:>9} {:>9}".format(*header))
    for row in results:
        if "policy" not in row:
            continue
        print(f"{row['policy']:<11} {row['query']:<28} {row['chars_in']:>8} {row['chars_out']:>9} "
              f"{row['size_ratio']:>6} {row['plan_ms_unscoped']:>8} {row['plan_ms_scoped']:>9} "
              f"{row.get('plan_ms_scoped_before', '-'):>9}")  # fmt: skip
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
