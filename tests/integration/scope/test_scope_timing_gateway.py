"""The timing oracle: an expensive agent condition must not run on a hidden element.

A hidden node's ``secret`` is 'swordfish'. The agent brackets it with a seekable range
(``n.secret >= $lo AND n.secret < $hi``, kept outside the guard so index seeks stay) and adds a
condition made expensive on purpose (a comparison of two 999,000-element lists per row). If the
expensive part ran on the hidden node, a right guess would take far longer than a wrong one
(seen at 1.1-1.3 s against 0.07-0.15 s before visibility came first). Measured through the
product path (Gateway -> sandbox -> Neo4j), ``PAIRS`` interleaved right/wrong pairs, compared
with a rank test at a strict level: no wall-clock threshold.

The control proves the test can see the difference: for a caller who *may* see the node, the
expensive part runs on it, and right and wrong guesses are told apart at the same level.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from typing import Any

import pytest

from gateway import guard
from gateway.domain import Principal
from gateway.policy import load_policy
from gateway.service import Gateway
from tests.support.graph import labelled_graph, unique_label
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH
from tests.support.stats import mann_whitney_p

pytestmark = [pytest.mark.neo4j2026, pytest.mark.slow, pytest.mark.timeout(1200)]

AGENT = Principal(name="timing-agent", scope=frozenset({"project-a"}))
INSIDER = Principal(name="timing-insider", scope=frozenset({"vault"}))
RIGHT = {"lo": "sw", "hi": "sx"}  # brackets 'swordfish'
WRONG = {"lo": "zy", "hi": "zz"}
PAIRS, CONTROL_PAIRS = 30, 15
ALPHA = 0.001
K = 40  # expensive comparisons per query when the condition runs on the node

# The red team's query, then variants as expensive per row for a size analysis that refuses
# list equality over long lists (the first the guard allows is measured).
EXPENSIVE = [
    "[n.uid, a] = [n.uid, b]",
    "size([x IN a WHERE x = n.uid]) = 0",
    "none(x IN a WHERE x = n.uid)",
]
TEMPLATE = (
    "WITH range(1, 999000) AS a, range(1, 999000) AS b UNWIND range(1, $k) AS i "
    "CALL (a, b) {{ MATCH (n:{g}) WHERE n.secret >= $lo AND n.secret < $hi AND {expensive} "
    "RETURN count(n) AS c }} RETURN sum(c) AS s"
)


@pytest.fixture(scope="module")
def graph(neo4j_driver: Any) -> Iterator[str]:
    label = unique_label("Timing")
    seed = [
        f"CREATE (:{label} {{uid: 1, secret: 'swordfish', layers: ['vault']}}), "
        f"(:{label} {{uid: 2, secret: 'apple', layers: ['project-a']}})"
    ]
    with labelled_graph(neo4j_driver, label, seed, database="neo4j"):
        yield label


def oracle_query(graph: str) -> str:
    policy = load_policy(ALL_PROPERTIES_POLICY_PATH)
    for expensive in EXPENSIVE:
        query = TEMPLATE.format(g=graph, expensive=expensive)
        if guard.check(query, {"k": K, **RIGHT}, "analyze", policy).allowed:
            return query
    raise AssertionError("the guard refuses every expensive variant: the timing test needs a new one")


def latencies(gateway: Gateway, query: str, who: Principal, pairs: int) -> tuple[list[float], list[float]]:
    """Interleaved right/wrong runs (the order inside each pair drawn at random); the answers must agree."""
    order = random.Random(27)
    right: list[float] = []
    wrong: list[float] = []
    answers: set[str] = set()
    for _ in range(pairs):
        for guess, sink in order.sample([(RIGHT, right), (WRONG, wrong)], 2):
            started = time.perf_counter()
            result = gateway.run("analyze", query, {"k": K, **guess}, who)
            sink.append(time.perf_counter() - started)
            answers.add(repr(result.rows) if who is AGENT else "control")
    assert answers == ({"[[0]]"} if who is AGENT else {"control"}), answers
    return right, wrong


def test_a_right_guess_about_a_hidden_value_takes_as_long_as_a_wrong_one(gateway: Gateway, graph: str) -> None:
    query = oracle_query(graph)
    gateway.run("analyze", query, {"k": K, **WRONG}, AGENT)  # warm the plan cache for both
    right, wrong = latencies(gateway, query, AGENT, PAIRS)
    p = mann_whitney_p(right, wrong)
    medians = f"{sorted(right)[PAIRS // 2]:.3f} / {sorted(wrong)[PAIRS // 2]:.3f} s"
    assert p >= ALPHA, f"right and wrong guesses are told apart (p = {p:.2g}; medians {medians})"


def test_the_control_tells_right_from_wrong_when_the_node_is_visible(gateway: Gateway, graph: str) -> None:
    # The same query for a caller who may see the node: the expensive part runs on it for the
    # right guess only, and the rank test sees it. Without this, a pass above could be a blind test.
    query = oracle_query(graph)
    right, wrong = latencies(gateway, query, INSIDER, CONTROL_PAIRS)
    p = mann_whitney_p(right, wrong)
    assert p < ALPHA and sorted(right)[CONTROL_PAIRS // 2] > sorted(wrong)[CONTROL_PAIRS // 2], (p, right, wrong)
