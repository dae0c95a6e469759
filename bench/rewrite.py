"""Scope rewrite cost on adversarial shapes: time and output size as the query doubles.

For each shape, queries of about 1, 2, 4 and 8 KB (all under the default policy's
``max_query_chars``) go through the real guard and ``scope.plan`` (default policy,
``analyze``), in one run, interleaved; the time is ``scope.plan``'s alone. The growth
columns divide each size's figure by the previous size's: about 2 is linear, about 4
quadratic. Time on a shared machine is noisy, so the work is also counted exactly, as the
Python function calls ``scope.plan`` makes. A shape whose rewrite the policy caps
(``scope.too_large``) is reported with the size the rewrite would have had.

    .venv/bin/python bench/rewrite.py [--json] [--rounds 5] [--write]

``--write`` stores the figures in ``bench/rewrite-results.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from gateway import guard, scope  # noqa: E402
from gateway.domain import Principal  # noqa: E402
from gateway.errors import QueryRejected  # noqa: E402
from gateway.policy import Policy, load_policy  # noqa: E402

RESULTS = REPO / "bench" / "rewrite-results.json"
TARGETS = (1024, 2048, 4096, 8192)
ANYONE = Principal(name="bench", scope=frozenset({"l1"}))


def _chain(operator: str, operand: str = "n.x") -> Callable[[int], str]:
    return lambda n: "MATCH (n) WHERE " + f" {operator} ".join([operand] * n) + " RETURN n"


def _nested(n: int) -> str:
    # EXISTS nested 19 deep, as deep as the default depth limit (32) lets them, repeated n times.
    inner = "1 / a.x = 1"
    for _ in range(19):
        inner = f"EXISTS {{ MATCH (a)-->(b) WHERE {inner} }}"
    return "MATCH (a) WHERE " + " OR ".join([inner] * n) + " RETURN a"


def _deep_parens(n: int) -> str:
    # Parentheses 30 deep (the limit is 32) around a condition that could raise, repeated n times.
    return "MATCH (n) WHERE " + " AND ".join(["(" * 30 + "1 / n.x = 1" + ")" * 30] * n) + " RETURN n"


SHAPES: dict[str, Callable[[int], str]] = {
    # The reported shape: k empty patterns times m conditions that could raise, k = m.
    "patterns x conditions": lambda n: (
        "MATCH " + ", ".join(["()"] * n) + " WHERE " + " AND ".join(["1 / $x = 1"] * n) + " RETURN 1"
    ),
    "patterns (a)-[r]->(b) x conditions": lambda n: (
        "MATCH "
        + ", ".join(f"(a{i})-[r{i}]->(b{i})" for i in range(n))
        + " WHERE "
        + " AND ".join(f"1 / a{i}.x = 1" for i in range(n))
        + " RETURN 1"
    ),
    "inline WHERE on many elements": lambda n: (
        "MATCH " + "-->".join(f"(a{i} WHERE 1 / a{i}.x = 1)" for i in range(n)) + " RETURN 1"
    ),
    "property maps that could raise": lambda n: (
        "MATCH " + "-->".join(f"(a{i} {{k: 1 / a{i}.x}})" for i in range(n)) + " RETURN 1"
    ),
    "quantified groups with WHERE": lambda n: (
        "MATCH (s)"
        + "".join(f" ((u{i})-[r{i}]->(v{i}) WHERE 1 / v{i}.x = 1){{1,2}}" for i in range(n))
        + " (t) RETURN t"
    ),
    "OR chain": _chain("OR"),
    "XOR chain": _chain("XOR"),
    "AND chain": _chain("AND"),
    "= chain": _chain("="),
    "+ chain": _chain("+"),
    "* chain": _chain("*"),
    "^ chain": _chain("^"),
    "|| chain": _chain("||", "'a'"),
    "STARTS WITH chain": _chain("STARTS WITH"),
    "IN chain": _chain("IN", "[1]"),
    "long list": lambda n: "MATCH (n) WHERE n.x IN [" + ", ".join(["1 / n.y"] * n) + "] RETURN n",
    "pattern predicates": lambda n: "MATCH (a) WHERE " + " OR ".join(["(a)-->()"] * n) + " RETURN a",
    "EXISTS 19 deep (the limit)": _nested,
    "parentheses 30 deep": _deep_parens,
}


def sized(shape: Callable[[int], str], target: int) -> str:
    """The query of ``shape`` whose length is closest to ``target`` from below."""
    n = 1
    while len(shape(n * 2)) <= target:
        n *= 2
    step = n // 2
    while step:
        if len(shape(n + step)) <= target:
            n += step
        step //= 2
    return shape(n)


def rewrite(query: str, policy: Policy) -> tuple[str, int, float]:
    """The outcome ("allowed", a rule id), the rewritten length (or the length a cap refused) and
    the milliseconds ``scope.plan`` took (the guard's parse, done first, is not counted)."""
    decision = guard.check(query, {"x": 1}, "analyze", policy)
    if not decision.allowed or decision.parsed is None:
        return str(decision.rule), 0, 0.0
    started = time.perf_counter()
    try:
        size, outcome = len(scope.plan(decision.parsed, policy, "analyze", ANYONE).cypher), "allowed"
    except QueryRejected as exc:
        size, outcome = 0, exc.rule
        if exc.rule == "scope.too_large":
            size = int(exc.reason.split(" characters")[0].rsplit(" ", 1)[1].replace(",", ""))
    return outcome, size, (time.perf_counter() - started) * 1000


def calls(query: str, policy: Policy) -> int:
    """Python function calls ``scope.plan`` makes: the work, counted exactly (time on a shared machine is noisy)."""
    decision = guard.check(query, {"x": 1}, "analyze", policy)
    if decision.parsed is None:
        return 0
    profile = cProfile.Profile()
    profile.enable()
    with contextlib.suppress(QueryRejected):
        scope.plan(decision.parsed, policy, "analyze", ANYONE)
    profile.disable()
    return int(pstats.Stats(profile).total_calls)  # type: ignore[attr-defined]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--write", action="store_true", help=f"store the figures in {RESULTS.relative_to(REPO)}")
    args = ap.parse_args()
    # The default policy without its property list: the queries read the keys their graph has.
    policy = load_policy().model_copy(update={"visible_properties": None})
    queries = {(name, target): sized(shape, target) for name, shape in SHAPES.items() for target in TARGETS}
    samples: dict[tuple[str, int], list[float]] = {key: [] for key in queries}
    outcome: dict[tuple[str, int], tuple[str, int]] = {}
    work: dict[tuple[str, int], int] = {}
    for key, query in queries.items():
        decision, size, _ = rewrite(query, policy)  # warm up
        outcome[key] = (decision, size)
        work[key] = calls(query, policy)
    for _ in range(args.rounds):
        for key, query in queries.items():  # interleaved: neighbours' noise hits every shape alike
            samples[key].append(rewrite(query, policy)[2])

    results: dict[str, object] = {}
    for name in SHAPES:
        rows = []
        previous: tuple[float, int, int] | None = None
        for target in TARGETS:
            query = queries[(name, target)]
            ms = statistics.median(samples[(name, target)])
            decision, out = outcome[(name, target)]
            steps = work[(name, target)]
            row: dict[str, object] = {"chars_in": len(query), "rewrite_ms": round(ms, 3), "calls": steps,
                                      "chars_out": out, "outcome": decision}  # fmt: skip
            if previous is not None:
                row["time_growth"] = round(ms / max(previous[0], 0.001), 2)
                row["calls_growth"] = round(steps / previous[2], 2) if previous[2] else None
                row["size_growth"] = round(out / previous[1], 2) if previous[1] else None
            rows.append(row)
            previous = (ms, out, steps)
        results[name] = rows
    worst_ms = max(statistics.median(s) for s in samples.values())
    # All shapes together per size: the sum of medians, so one shape's noisy sample weighs little.
    totals = [sum(statistics.median(samples[(name, t)]) for name in SHAPES) for t in TARGETS]
    results["all shapes"] = [
        {
            "target_chars": t,
            "rewrite_ms_total": round(total, 2),
            "time_growth": round(total / prev, 2) if prev else None,
        }
        for t, total, prev in zip(TARGETS, totals, [None, *totals[:-1]], strict=True)
    ]
    results["summary"] = {
        "worst_median_ms": round(worst_ms, 2),
        "worst_chars_out_per_char_in": round(max(o[1] / len(queries[k]) for k, o in outcome.items()), 1),
        "rounds": args.rounds,
    }
    if args.write:
        RESULTS.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(results, indent=1))
        return 0
    print(f"{'shape':<36} {'chars in':>9} {'ms':>8} {'x time':>7} {'calls':>8} {'x calls':>8} "
          f"{'chars out':>10} {'x size':>7}  outcome")  # fmt: skip
    for name in SHAPES:
        for row in results[name]:  # type: ignore[attr-defined]
            print(f"{name:<36} {row['chars_in']:>9} {row['rewrite_ms']:>8} {row.get('time_growth', ''):>7} "
                  f"{row['calls']:>8} {row.get('calls_growth') or '':>8} {row['chars_out']:>10} "
                  f"{row.get('size_growth') or '':>7}  {row['outcome']}")  # fmt: skip
    for total in results["all shapes"]:  # type: ignore[attr-defined]
        print(f"all shapes at {total['target_chars']} chars: {total['rewrite_ms_total']} ms "
              f"(x{total['time_growth']})")  # fmt: skip
    print(json.dumps(results["summary"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
