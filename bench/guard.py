"""Guard decision cost: median and p99 microseconds for small, 1 KB, 10 KB and 64 KB queries.

Runs the real ``gateway.guard.check`` and, in the same process and run, the
naive keyword-regex guard a competitor uses, and prints the ratio. The cost per KB
of the 64 KB query over that of the 1 KB query shows the parse is linear in size
(1.0 linear; 64 would be quadratic). With
``--graphglot`` it also measures graphglot 0.14.3's parse of the same small
queries (the numbers in docs/decisions/0001-own-cypher-parser.md).

    .venv/bin/python bench/guard.py [--json] [--graphglot]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from gateway.guard import check  # noqa: E402
from gateway.policy import Limits, load_policy  # noqa: E402

NAIVE = re.compile(r"\b(create|merge|delete|set|remove|drop|detach|foreach|load csv|call apoc.periodic)\b", re.I)

UNIT = (
    "MATCH (a{i}:Person {{name: 'n{i}'}})-[:KNOWS*1..3]->(b{i}:Person) "
    "WHERE b{i}.age > $min AND EXISTS {{ (b{i})-[:WORKS_AT]->(:Company {{open: true}}) }} "
    "AND NOT b{i}.name STARTS WITH 'x' "
    "WITH * "
)


def big_query(target_chars: int) -> str:
    parts: list[str] = []
    size = 0
    i = 0
    while size < target_chars - 60:
        unit = UNIT.format(i=i)
        parts.append(unit)
        size += len(unit)
        i += 1
    return "".join(parts) + "RETURN count(*) AS c"


def small_queries() -> list[str]:
    rows = [json.loads(x) for x in (REPO / "tests/corpus/guard.jsonl").read_text().splitlines()]
    return [r["query"] for r in rows if r["policy"] == "default" and len(r["query"].encode()) <= 1024]


def measure(fn: Callable[[str], object], queries: list[str], rounds: int) -> list[float]:
    samples: list[float] = []
    for _ in range(rounds):
        for q in queries:
            start = time.perf_counter_ns()
            fn(q)
            samples.append((time.perf_counter_ns() - start) / 1000)
    return samples


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "n": len(ordered),
        "p50_us": round(statistics.median(ordered), 1),
        "p99_us": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--graphglot", action="store_true", help="also time graphglot 0.14.3 on the small queries")
    args = ap.parse_args()

    # The default policy without its property list: the queries read the keys their graph has.
    base = load_policy().model_copy(update={"visible_properties": None})
    limits = Limits(max_query_chars=70_000)
    tools = {name: tp.model_copy(update={"limits": limits}) for name, tp in base.tools.items()}
    policy = base.model_copy(update={"tools": tools})

    def guard(q: str) -> object:
        return check(q, {}, "analyze", policy)

    def naive(q: str) -> object:
        return NAIVE.search(q)

    classes = {
        "small (<=1 KB, corpus)": (small_queries(), 20),
        "1 KB": ([big_query(1024)], 1000),
        "medium (10 KB)": ([big_query(10 * 1024)], 200),
        "large (64 KB)": ([big_query(64 * 1024)], 40),
    }
    for queries, _ in classes.values():
        for q in queries[:1]:
            guard(q)  # warm up imports and caches
    assert guard(classes["large (64 KB)"][0][0]).allowed  # type: ignore[attr-defined]

    results: dict[str, object] = {}
    per_kb: dict[str, float] = {}
    for name, (queries, rounds) in classes.items():
        g = summary(measure(guard, queries, rounds))
        n = summary(measure(naive, queries, rounds))
        mean_chars = sum(len(q) for q in queries) / len(queries)
        results[name] = {
            "queries": len(queries),
            "mean_chars": round(mean_chars),
            "guard": g,
            "naive_regex": n,
            "ratio_p50": round(g["p50_us"] / max(n["p50_us"], 0.01), 1),
            "guard_us_per_kb": round(g["p50_us"] / (mean_chars / 1024), 1),
        }
        per_kb[name] = g["p50_us"] / (mean_chars / 1024)
    results["size scaling"] = {
        "us_per_kb_64KB_over_1KB": round(per_kb["large (64 KB)"] / per_kb["1 KB"], 2),
        "us_per_kb_10KB_over_1KB": round(per_kb["medium (10 KB)"] / per_kb["1 KB"], 2),
    }
    if args.graphglot:
        from graphglot.dialect.neo4j import Neo4j

        Neo4j.Lexer.NESTED_COMMENTS = False
        dialect = Neo4j()
        reads = [q for q in small_queries()][:150]
        ok = 0

        def gg(q: str) -> object:
            try:
                return dialect.parse(q)
            except Exception:  # graphglot raises several error types; a failure is a data point here
                return None

        for q in reads:
            ok += gg(q) is not None
        results["graphglot 0.14.3 parse, small"] = {"parsed": ok, "of": len(reads), **summary(measure(gg, reads, 2))}

    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for name, r in results.items():
            print(f"{name}: {json.dumps(r)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
