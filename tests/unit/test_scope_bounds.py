"""Every input under max_query_chars gets a typed answer, in bounded time and size.

Long flat chains of every binary operator, long lists, many patterns and deep nesting go
through the whole static path (parse, guard, scope rewrite) as ``Gateway.check`` runs it.
Each must be allowed with a rewrite no longer than the policy's ``max_rewritten_chars``, or
refused with a rule of the catalogue: never an exception (a ``RecursionError`` from a flat
chain of 1,900 ORs was one), never a rewrite that grows with the product of two sizes (a
4,918-character query once became 103 MB).
"""

from __future__ import annotations

import time
import typing

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway import catalogue
from gateway.cypher import ast
from gateway.domain import Principal
from gateway.policy import load_policy
from gateway.service import Gateway
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH

POLICY = load_policy(ALL_PROPERTIES_POLICY_PATH)
LIMITS = POLICY.tool("analyze").limits
GATEWAY = Gateway(POLICY, runner=None)
ANYONE = Principal(name="bounds", scope=frozenset({"l1"}))
RULES = {rule.id for rule in catalogue.CATALOGUE}
# bench/rewrite.py measures at most about 160 ms (median, shared 2-core machine) for any of its
# 8 KB adversarial shapes. The bound is 30 times that: only a blow-up like the quadratic rewrite
# (446 s for one query) can reach it, never a slow neighbour.
TIME_BOUND_S = 5.0

OPERATORS = [" ".join(op.split("_")) for op in typing.get_args(ast.BinaryOperator)]
OPERANDS = ["n.x", "n", "1", "$x", "'a'", "[1]", "null", "(n)-->()", "1 / n.y", "m.x"]
# Where a chain can sit: each template has one {e} for the expression.
PLACES = [
    "MATCH (n) WHERE {e} RETURN n",
    "MATCH (n WHERE {e})-->(m) RETURN m",
    "MATCH (m)-[r WHERE {e}]->(n) RETURN n",
    "MATCH (m) ((n)-->(o) WHERE {e}){1,2} (p) RETURN p",
    "MATCH (n {k: {e}})-->(m) RETURN m",
    "MATCH (n), (m) RETURN {e} AS v",
    "MATCH (n) WITH n, 1 AS m WHERE {e} RETURN n",
    "MATCH (n) RETURN [x IN [1] WHERE {e} | x] AS v",
    "MATCH (n) RETURN COUNT { (n)-->(m) WHERE {e} } AS v",
]


def _fill(template: str, part: str, joiner: str, budget: int) -> str:
    """``template`` with as many ``part``s joined by ``joiner`` as fit in ``budget`` characters."""
    n = max(1, (budget - len(template)) // (len(part) + len(joiner)))
    return template.replace("{e}", joiner.join([part] * n))


def assert_typed_answer(query: str) -> None:
    assert len(query) <= LIMITS.max_query_chars
    started = time.monotonic()
    result = GATEWAY.check("analyze", query, {"x": 1}, ANYONE)
    elapsed = time.monotonic() - started
    if result.allowed:
        assert result.rewritten is not None and len(result.rewritten) <= LIMITS.max_rewritten_chars
    else:
        assert result.rule in RULES, result
    assert elapsed < TIME_BOUND_S, f"{elapsed:.1f} s for {query[:80]}…"


@settings(max_examples=60, deadline=None)
@given(
    operator=st.sampled_from(OPERATORS),
    operand=st.sampled_from(OPERANDS),
    place=st.sampled_from(PLACES),
    size=st.integers(min_value=50, max_value=LIMITS.max_query_chars),
)
def test_long_chains_of_every_binary_operator(operator: str, operand: str, place: str, size: int) -> None:
    assert_typed_answer(_fill(place, operand, f" {operator} ", size))


@settings(max_examples=30, deadline=None)
@given(
    item=st.sampled_from(["1", "n.x", "1 / n.y", "[1, 2]", "(n)-->()", "COUNT { (n)-->() }", "'x'"]),
    place=st.sampled_from(PLACES),
    size=st.integers(min_value=50, max_value=LIMITS.max_query_chars),
)
def test_long_lists(item: str, place: str, size: int) -> None:
    template = place.replace("{e}", "1 IN [{e}]")
    assert_typed_answer(_fill(template, item, ", ", size))


@settings(max_examples=30, deadline=None)
@given(
    pattern=st.sampled_from(["()", "(a)", "()-->()", "(a {k: 1 / a.x})", "(a WHERE 1 / a.x = 1)", "()-[*1..2]->()"]),
    condition=st.sampled_from(["", "1 / $x = 1", "n.x = 1", "(n)-->()"]),
    share=st.floats(min_value=0.05, max_value=0.95),
    size=st.integers(min_value=50, max_value=LIMITS.max_query_chars),
)
def test_many_patterns_with_many_conditions(pattern: str, condition: str, share: float, size: int) -> None:
    head = _fill("MATCH (n), {e}", pattern, ", ", int(size * share))
    query = _fill(head + " WHERE {e} RETURN 1", condition, " AND ", size) if condition else head + " RETURN 1"
    assert_typed_answer(query)


@settings(max_examples=30, deadline=None)
@given(
    wrapper=st.sampled_from(
        [
            "({})",
            "NOT ({})",
            "EXISTS {{ MATCH (n)-->(m) WHERE {} }}",
            "[x IN [{}] | x][0]",
            "CASE WHEN {} THEN true END",
            "- ({})",
        ]
    ),
    depth=st.integers(min_value=1, max_value=LIMITS.max_nesting_depth + 4),
    repeat=st.integers(min_value=1, max_value=400),
)
def test_deep_nesting_at_the_depth_limit_repeated(wrapper: str, depth: int, repeat: int) -> None:
    inner = "1 / n.x = 1"
    for _ in range(depth):
        inner = wrapper.format(inner)
    query = "MATCH (n) WHERE " + " OR ".join([inner] * repeat) + " RETURN n"
    if len(query) > LIMITS.max_query_chars:
        query = "MATCH (n) WHERE " + inner + " RETURN n"
    assert_typed_answer(query)


def test_the_reported_shapes_answer_at_once() -> None:
    # k empty patterns x m conditions (4,918 characters once took 446 s and 206 MB), and a flat
    # chain of 1,900 ORs and of 1,600 XORs in an inline WHERE (once a RecursionError).
    assert_typed_answer("MATCH " + ",".join(["()"] * 800) + " WHERE " + " AND ".join(["-1"] * 500) + " RETURN 1")
    assert_typed_answer("MATCH (n) WHERE " + " OR ".join(["n"] * 1900) + " RETURN n")
    assert_typed_answer("MATCH (n WHERE " + " XOR ".join(["n"] * 1600) + ") RETURN n")
