"""Queries built to exhaust Neo4j, through the real gateway, sandbox and managed Neo4j.

Each shape (lists, strings, maps, paths, cartesian products, collect over large inputs) either
is refused by the guard with a named rule, or runs and ends within the limits: answered within
the row and byte caps, stopped by Neo4j's memory limit, or timed out. While it runs, a
``RETURN 1`` probe on another connection must stay under 1 s, and no agent transaction may
still be listed by ``SHOW TRANSACTIONS`` later than the policy timeout + 1 s after the query
was sent. Without the guard's size rules the refused shapes wedge Neo4j for minutes (an
expression Neo4j neither tracks nor interrupts); without the deadline, operator shapes run on
to Neo4j's next timeout check. The suite runs on its own Neo4j (see conftest.py).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from gateway.domain import Principal, ToolResult
from gateway.errors import Neo4jRefused, QueryRejected, QueryTimeout
from gateway.service import Gateway
from tests.integration.exhaustion.conftest import POLICY, Monitor, Watch

AGENT = Principal(name="exhaustion", scope=frozenset())
PROBE_LIMIT_S = 1.0
# Neo4j's memory limit on operator state; a shape stopped by it has run within the limits.
MEMORY_LIMIT_CODES = ("MemoryPoolOutOfMemoryError", "TransactionMemoryLimit", "MemoryLimit")

# (shape, query): each is refused before it runs, and the rule says why.
REFUSED: list[tuple[str, str, str]] = [
    ("list: 6e7 integers (heap OOM, 40 s stall)", "RETURN size([x IN range(1, 60000000) | x]) AS v", "size.range"),
    ("list: 1e4 x 1e4 nested", "RETURN size([x IN range(1, 10000) | [y IN range(1, 10000) | y]]) AS v",
     "size.iterations"),
    ("list: 9e6 integers returned", "RETURN [x IN range(1, 3000) | range(1, 3000)] AS v", "size.elements"),
    ("list: 1e9 by shared reference",
     "WITH range(1, 1000) AS a WITH [x IN range(1, 1000) | a] AS b RETURN [y IN range(1, 1000) | b] AS v",
     "size.elements"),
    ("list: reduce over 1e9 (uninterruptible)", "RETURN reduce(s = 0, x IN range(1, 1000000000) | s + x) AS v",
     "size.range"),
    ("list: append in reduce (stack overflow)", "RETURN size(reduce(l = [], x IN range(1, 30000) | l + x)) AS v",
     "size.accumulator"),
    ("string: doubling", "RETURN size(reduce(s = 'x', i IN range(1, 40) | s + s)) AS v", "size.accumulator"),
    ("string: quadratic append", "RETURN size(reduce(s = '', x IN range(1, 1000000) | s + 'abcdefghij')) AS v",
     "size.string"),
    # Copying 1e9 characters (replace() builds its result) is counted before the string's size.
    ("string: nested replace 1e9 chars",
     "RETURN size(" + "replace(" * 9 + "'a'" + ", 'a', 'aaaaaaaaaa')" * 9 + ") AS v", "size.iterations"),
    ("maps: 1e7 two-entry maps (wedge)", "RETURN size([x IN range(1, 10000000) | {a: x, b: toString(x)}]) AS v",
     "size.range"),
    ("maps: one per collected node", "MATCH (n:{L}) WITH collect(n) AS ns RETURN [x IN ns | {id: x.i}] AS v",
     "size.elements"),
    ("collect: nested reduce over collect() (8e9 steps)",
     "MATCH (n:{L}) WITH collect(n.i) AS l "
     "RETURN reduce(s = 0, a IN l | s + reduce(t = 0, b IN l | t + reduce(u = 0, c IN l | u + 1))) AS v",
     "size.iterations"),
    ("collect: COLLECT {} over 1e8 (untracked)",
     "RETURN reduce(s = 0, y IN COLLECT { UNWIND range(1, 100000000) AS x RETURN x } | s + y) AS v", "size.range"),
]  # fmt: skip

# (shape, query): the guard lets these through; Neo4j must end them within the limits.
RUNS: list[tuple[str, str]] = [
    ("list: 1e6 integers", "RETURN size([x IN range(1, 1000000) | x]) AS v"),
    ("list: 900 x 900 nested", "RETURN size([x IN range(1, 900) | [y IN range(1, 900) | y]]) AS v"),
    ("string: nested replace 1e7 chars",
     "RETURN size(" + "replace(" * 7 + "'a'" + ", 'a', 'aaaaaaaaaa')" * 7 + ") AS v"),
    ("maps: 9e4 two-entry maps", "RETURN size([x IN range(1, 90000) | {a: x, b: toString(x)}]) AS v"),
    ("maps: collect() of maps", "MATCH (n:{L}) RETURN collect({id: n.i, name: n.name}) AS cards"),
    ("paths: count of 8-hop paths", "MATCH p = (a:{L})-[*..8]-(b:{L}) RETURN count(p) AS c"),
    ("paths: collect of 8-hop paths", "MATCH p = (a:{L})-[*..8]-(b:{L}) WITH collect(p) AS ps RETURN size(ps) AS c"),
    ("paths: in a pattern comprehension", "MATCH (a:{L}) RETURN sum(size([(a)-[*..8]-(b) | b.i])) AS v"),
    ("cartesian: 8e9 rows", "MATCH (a:{L}), (b:{L}), (c:{L}) RETURN count(a.i + b.i + c.i) AS c"),
    ("collect: 4e6 pairs", "MATCH (a:{L}), (b:{L}) WITH collect([a.i, b.i]) AS l RETURN size(l) AS n"),
    ("collect: 1e7 integers",
     "UNWIND range(1, 1000000) AS x UNWIND range(1, 10) AS y WITH collect(x) AS l RETURN size(l) AS n"),
    ("sort: 1e7 rows", "UNWIND range(1, 1000000) AS x UNWIND range(1, 10) AS y WITH x ORDER BY x DESC LIMIT 1 "
     "RETURN x"),
]  # fmt: skip


# Expression work Neo4j neither interrupts nor tracks, with the parameter sizes that made it last
# 7-100 s (a 20,000-character CONTAINS needle froze every thread of the JVM for 33-41 s): each
# family is refused by a size rule, with the sizes the parameters have at check time.
_NINETEEN_HUNDRED_ORS = (
    "MATCH (n:{L}) WITH n, n.i = 1 AS a WHERE " + " OR ".join(["a"] * 1900) + " RETURN count(n) AS c"
)
REFUSED_WITH_PARAMS: list[tuple[str, str, dict[str, Any], str]] = [
    ("search: CONTAINS a 20,000-character needle (server freeze)",
     "WITH replace($a, 'a', $a) AS s RETURN s CONTAINS $n AS v", {"a": "a" * 3000, "n": "b" * 20000},
     "size.iterations"),
    ("search: replace() with a 5,000-character search string",
     "RETURN size(replace($s, $n, '')) AS v", {"s": "a" * 190_000, "n": "a" * 4999 + "b"}, "size.iterations"),
    ("search: split() by a long delimiter", "RETURN size(split($s, $n)) AS v",
     {"s": "a" * 190_000, "n": "a" * 4999 + "b"}, "size.iterations"),
    ("search: a long needle against stored text", "MATCH (n:{L}) WHERE n.name CONTAINS $n RETURN count(n) AS c",
     {"n": "a" * 5000}, "size.iterations"),
    ("regex: string.regexReplace nested quantifiers",
     "CYPHER 25 RETURN string.regexReplace($s, '((a+)+)+b', 'x') AS v", {"s": "a" * 40}, "regex.backtracking"),
    ("regex: extended CASE WHEN =~", "RETURN CASE $s WHEN =~ '((a+)+)+b' THEN 1 ELSE 0 END AS v", {"s": "a" * 40},
     "regex.backtracking"),
    ("regex: read from the data in a CASE", "MATCH (n:{L}) RETURN CASE n.name WHEN =~ n.pattern THEN 1 ELSE 0 END AS v",
     {}, "regex.backtracking"),
    ("compare: list equality of 999,000 elements per step",
     "WITH range(1, 999000) AS a, range(1, 999000) AS b RETURN size([i IN range(1, $k) WHERE [a] = [b]]) AS v",
     {"k": 100}, "size.iterations"),
    ("compare: nested list order",
     "WITH range(1, 999000) AS a RETURN size([i IN range(1, 100) WHERE [[a]] < [[a]]]) AS v", {}, "size.iterations"),
    ("reduce: concatenation copies its accumulator (5e10 characters)",
     "RETURN size(reduce(s = '', x IN range(1, 10000) | s + $c)) AS v", {"c": "x" * 999}, "size.accumulator"),
    ("function: string.join builds 4e8 characters (heap OOM)",
     "CYPHER 25 RETURN size(string.join([x IN range(1, 999990) | ''], $sep)) AS v", {"sep": "x" * 400},
     "size.string"),
    ("function: one no cost model was reviewed for", "RETURN apoc.text.regexGroups($s, '(a+)+b') AS v",
     {"s": "a" * 40}, "function.unreviewed"),
    ("chain: 1,900 OR operands (2.7 s of semantic analysis)", _NINETEEN_HUNDRED_ORS, {}, "size.operands"),
    ("collect: COLLECT {} of 1e9 rows from two UNWINDs (heap OOM)",
     "RETURN size(last(COLLECT { UNWIND range(1, 1000000) AS x UNWIND range(1, 1000) AS y "
     "RETURN toString(x) + $s })) AS c", {"s": "s" * 200}, "size.elements"),
]  # fmt: skip

# The same families at sizes the guard lets through: Neo4j must end them within the limits.
RUNS_WITH_PARAMS: list[tuple[str, str, dict[str, Any]]] = [
    ("search: CONTAINS 1e5 x 1e3 (allowed)", "RETURN $s CONTAINS $n AS v", {"s": "a" * 100_000, "n": "a" * 999 + "b"}),
    ("compare: list equality of 1e6 elements once", "WITH range(1, 999000) AS a, range(1, 999000) AS b "
     "RETURN [a] = [b] AS v", {}),
    ("reduce: concatenation at the copy limit", "RETURN size(reduce(s = '', x IN range(1, 700) | s + $c)) AS v",
     {"c": "x" * 999}),
    ("chain: 64 OR operands", "MATCH (n:{L}) WHERE " + " OR ".join(f"n.i = {i}" for i in range(64))
     + " RETURN count(n) AS c", {}),
]  # fmt: skip


def _run(gateway: Gateway, cypher: str, params: dict[str, Any] | None = None) -> tuple[str, ToolResult | Exception]:
    """How the gateway ended the query: answered, timeout, memory (Neo4j's limit) or refused."""
    try:
        return "answered", gateway.run("analyze", cypher, params or {}, AGENT)
    except QueryTimeout as exc:
        return "timeout", exc
    except Neo4jRefused as exc:
        memory = any(code in f"{exc.neo4j_code} {exc.message}" for code in MEMORY_LIMIT_CODES)
        return ("memory" if memory else "neo4j_refused"), exc
    except QueryRejected as exc:
        return "rejected", exc


def _watched(
    gateway: Gateway, monitor: Monitor, cypher: str, params: dict[str, Any] | None = None
) -> tuple[str, Any, Watch]:
    """Run ``cypher`` and keep watching until the policy timeout + 2 s after it was sent."""
    timeout = POLICY.tools["analyze"].limits.timeout_seconds
    with monitor.watching() as watch:
        outcome, value = _run(gateway, cypher, params)
        time.sleep(max(0.0, watch.sent + timeout + 2.0 - time.monotonic()))
    return outcome, value, watch


@pytest.mark.parametrize(("shape", "query", "rule"), REFUSED, ids=[s for s, _, _ in REFUSED])
def test_exhausting_shape_is_refused_with_its_rule(
    exhaustion_gateway: Gateway, graph: str, shape: str, query: str, rule: str
) -> None:
    with pytest.raises(QueryRejected) as refused:
        exhaustion_gateway.run("analyze", query.replace("{L}", graph), {}, AGENT)
    assert refused.value.rule == rule, (shape, refused.value.message)


@pytest.mark.parametrize(
    ("shape", "query", "params", "rule"), REFUSED_WITH_PARAMS, ids=[s for s, _, _, _ in REFUSED_WITH_PARAMS]
)
def test_expression_work_neo4j_cannot_stop_is_refused_with_its_rule(
    exhaustion_gateway: Gateway, graph: str, shape: str, query: str, params: dict[str, Any], rule: str
) -> None:
    with pytest.raises(QueryRejected) as refused:
        exhaustion_gateway.run("analyze", query.replace("{L}", graph), params, AGENT)
    assert refused.value.rule == rule, (shape, refused.value.message)


@pytest.mark.parametrize(
    ("shape", "query", "params"),
    [*[(s, q, {}) for s, q in RUNS], *RUNS_WITH_PARAMS],
    ids=[s for s, _ in RUNS] + [s for s, _, _ in RUNS_WITH_PARAMS],
)
def test_admitted_shape_ends_within_the_limits_and_neo4j_stays_responsive(
    exhaustion_gateway: Gateway, monitor: Monitor, graph: str, shape: str, query: str, params: dict[str, Any]
) -> None:
    tool = POLICY.tools["analyze"].limits
    outcome, value, watch = _watched(exhaustion_gateway, monitor, query.replace("{L}", graph), params)
    print(f"\n[exhaustion] {shape}: {outcome}, {watch.summary()}")
    assert outcome in ("answered", "timeout", "memory"), (shape, outcome, value)
    if isinstance(value, ToolResult):
        assert value.rowCount <= tool.max_rows and value.bytes <= tool.max_bytes, (shape, value.rowCount, value.bytes)
    assert not watch.probe_errors, (shape, watch.probe_errors)
    assert watch.probe_max_s < PROBE_LIMIT_S, (shape, outcome, f"probe took {watch.probe_max_s:.2f} s")
    assert watch.agent_tx_busy_s <= tool.timeout_seconds + 1.0, (
        shape, outcome, f"Neo4j still ran it {watch.agent_tx_busy_s:.2f} s after it was sent",
    )  # fmt: skip


def test_no_agent_query_keeps_neo4j_busy_past_its_deadline(
    exhaustion_gateway: Gateway, monitor: Monitor, graph: str
) -> None:
    """An operator shape that would run for minutes: it times out, and SHOW TRANSACTIONS (an
    operator's view) no longer lists its transaction by the policy timeout + 1 s."""
    timeout = POLICY.tools["analyze"].limits.timeout_seconds
    query = f"MATCH (a:{graph}), (b:{graph}), (c:{graph}), (d:{graph}) RETURN count(a.i + b.i + c.i + d.i) AS c"
    outcome, value, watch = _watched(exhaustion_gateway, monitor, query)
    print(f"\n[exhaustion] deadline, 4-way cartesian: {outcome}, {watch.summary()}")
    assert outcome == "timeout", (outcome, value)
    assert watch.agent_tx_last_seen is not None, "the monitor never saw the query's transaction"
    assert watch.agent_tx_busy_s <= timeout + 1.0, f"listed {watch.agent_tx_busy_s:.2f} s after it was sent"
