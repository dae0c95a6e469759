"""The one function table: every function the parser and Neo4j know is in it, and its three readers agree.

The readers are the guard's size check (a call without a cost model is refused,
``function.unreviewed``), the scope rewrite (``gateway.scope.calls``) and the hidden-property
check (``gateway.guard.hidden``). Each is asked here through its own entry point, not through
the table, so a reader that kept a list of its own would disagree.
"""

from __future__ import annotations

import pytest

from gateway import catalogue
from gateway.cypher import parser
from gateway.guard import functions, parse_query, size_walk
from gateway.guard.hidden import hidden_property_use
from gateway.policy import Limits
from gateway.scope.calls import function_is_safe, why_refused
from tests.unit.test_scope_calls import BUILT_INS

# What SHOW FUNCTIONS YIELD name WHERE isBuiltIn lists under CYPHER 25 on Neo4j 2026.x besides BUILT_INS
# (tests/integration/scope/test_scope_functions_neo4j.py compares the running server with the table).
# fmt: off
CYPHER25_BUILT_INS = (
    "cardinality", "ceiling", "coll.distinct", "coll.flatten", "coll.indexOf", "coll.insert", "coll.max", "coll.min",
    "coll.remove", "coll.sort", "collect_list", "cosh", "coth", "duration_between", "format", "ln", "local_datetime",
    "local_time", "path_length", "percentile_cont", "percentile_disc", "property_exists", "sinh", "stdev_pop",
    "stdev_samp", "string.indexOf", "string.join", "string.regexReplace", "tanh", "uuid", "uuid.leastSignificantBits",
    "uuid.mostSignificantBits", "vector", "vector_dimension_count", "vector_distance", "vector_norm", "zoned_datetime",
    "zoned_time",
)
# fmt: on
# The names the parser reads with a grammar of their own where a function call could stand
# (gateway/cypher/parser.py: parse_function_call, parse_keyword_arguments and the atoms before them).
PARSER_FUNCTIONS = (
    *parser._KEYWORD_ARGUMENT_FUNCTIONS,
    *(name.lower() for name in parser._QUANTIFIERS),
    "trim",
    "property_exists",
    "reduce",
    "allReduce",
    "exists",
    "count",
    "collect",
)  # fmt: skip
ROWS = list(functions.FUNCTIONS.values())


def _unreviewed(name: str) -> bool:
    """Whether the guard's size check refuses a call of ``name`` as a function without a cost model."""
    report = size_walk.measure(parse_query(f"RETURN `{name}`() AS v", Limits()), {}, Limits())
    return report.first(catalogue.FUNCTION_UNREVIEWED) is not None


def test_each_function_has_one_row() -> None:
    assert len(functions.FUNCTIONS) == len(functions._ROWS)  # a second row of a name would shadow the first


def test_every_function_neo4j_and_the_parser_know_is_in_the_table() -> None:
    known = {*BUILT_INS, *CYPHER25_BUILT_INS, *PARSER_FUNCTIONS}
    assert sorted(name for name in known if functions.lookup(name) is None) == []


def test_every_built_in_the_scope_lets_through_has_a_cost_model_and_every_costed_one_is_let_through() -> None:
    # A built-in the rewrite lets through but the guard refuses, or one the guard costs but the rewrite
    # refuses, is a review one side has not made. The parser's syntax names have no call to cost.
    syntax = {name.lower() for name in PARSER_FUNCTIONS} - {"trim", "property_exists", "count", "collect"}
    syntax -= set(parser._KEYWORD_ARGUMENT_FUNCTIONS)
    for name in {*BUILT_INS, *CYPHER25_BUILT_INS}:
        row = functions.lookup(name)
        assert row is not None
        if isinstance(row.scope, functions.Scoped) and name.lower() not in syntax:
            assert row.cost is not None, name
    for row in ROWS:
        if row.cost is not None:
            assert isinstance(row.scope, functions.Scoped), row.name


@pytest.mark.parametrize("row", ROWS, ids=[row.name for row in ROWS])
def test_the_guard_and_the_scope_rewrite_read_the_same_row(row: functions.Function) -> None:
    assert _unreviewed(row.name) == (row.cost is None)
    assert function_is_safe(row.name) == isinstance(row.scope, functions.Scoped)
    assert function_is_safe(row.name.upper()) == function_is_safe(row.name)  # Neo4j resolves built-ins in any case
    if isinstance(row.scope, functions.Refused):
        assert why_refused(row.name) == row.scope.reason


def test_a_name_outside_the_table_is_refused_by_the_guard_and_by_the_rewrite_outside_its_namespaces() -> None:
    assert _unreviewed("my.fn") and not function_is_safe("my.fn")
    assert _unreviewed("apoc.text.regexGroups") and function_is_safe("apoc.text.regexGroups")


def test_distance_is_neither_costed_nor_let_through() -> None:
    # Neo4j 5 has no distance() (point.distance() replaced it): nothing to review, refused by both.
    row = functions.lookup("distance")
    assert row is not None and row.cost is None and isinstance(row.scope, functions.Refused)
    assert _unreviewed("distance") and not function_is_safe("distance")


HIDDEN = frozenset({"secret"})


def _hidden(query: str, language: str = "5") -> str | None:
    parsed = parse_query(query, Limits(), "25" if language == "25" else "5")
    return hidden_property_use(parsed, {}, HIDDEN, "test")


@pytest.mark.parametrize("row", [r for r in ROWS if r.copies_properties], ids=lambda r: r.name)
def test_the_hidden_check_refuses_every_function_that_copies_properties(row: functions.Function) -> None:
    assert _hidden(f"MATCH (n) RETURN {row.name}(n) AS v") is not None


@pytest.mark.parametrize("row", [r for r in ROWS if r.key_argument is not None], ids=lambda r: r.name)
def test_the_hidden_check_reads_the_key_a_function_is_given(row: functions.Function) -> None:
    assert row.key_argument == 1  # property_exists(n, key) is the one such function
    assert _hidden(f"MATCH (n) RETURN {row.name}(n, secret) AS v", "25") is not None


@pytest.mark.parametrize("row", [r for r in ROWS if r.returns == "number"], ids=lambda r: r.name)
def test_a_function_that_always_answers_a_number_is_an_index_to_the_hidden_check(row: functions.Function) -> None:
    assert _hidden(f"MATCH (n) RETURN n.list[{row.name}(n.x)] AS v") is None


@pytest.mark.parametrize("row", [r for r in ROWS if r.returns == "list"], ids=lambda r: r.name)
def test_a_function_that_always_answers_a_list_is_indexed_not_read_by_the_hidden_check(
    row: functions.Function,
) -> None:
    assert _hidden(f"MATCH (n) RETURN {row.name}(n.x)[n.k] AS v") is None


def test_a_function_the_table_does_not_mark_is_a_computed_key_to_the_hidden_check() -> None:
    row = functions.lookup("toString")
    assert row is not None and row.returns is None
    assert _hidden("MATCH (n) RETURN n[toString(n.x)] AS v") is not None
    assert _hidden("MATCH (n) RETURN toString(n.x)[n.k] AS v") is not None


def test_a_function_whose_result_can_hold_an_element_is_never_read_as_plain() -> None:
    # The projection of hidden properties skips a RETURN of plain columns (gateway/scope/plain.py).
    for name in ("nodes", "relationships", "startNode", "endNode", "properties"):
        row = functions.lookup(name)
        assert row is not None and row.result is None, name
    for name in ("min", "max", "collect", "head", "last", "coalesce"):
        row = functions.lookup(name)
        assert row is not None and row.result == "arguments", name
    numbers = [row.name for row in functions.FUNCTIONS.values() if row.returns == "number"]
    assert numbers and all(functions.FUNCTIONS[n.lower()].result == "plain" for n in numbers), numbers
