"""Every built-in function of Neo4j 5.26 is either let through the scope rewrite with a reason or refused with one.

``BUILT_INS`` is what ``SHOW FUNCTIONS YIELD name WHERE isBuiltIn`` lists on Neo4j 5.26.30
(tests/integration/scope/test_scope_functions_neo4j.py compares it with the running server).
"""

from __future__ import annotations

import pytest

from gateway import guard, scope
from gateway.domain import Principal
from gateway.errors import QueryRejected
from gateway.policy import load_policy
from gateway.scope.calls import REFUSED_FUNCTIONS, SAFE_FUNCTION_GROUPS, function_is_safe
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH

POLICY = load_policy(ALL_PROPERTIES_POLICY_PATH)
ANYONE = Principal(name="calls")

# fmt: off
BUILT_INS = (
    "abs", "acos", "all", "any", "asin", "atan", "atan2", "avg", "btrim", "ceil", "char_length",
    "character_length", "coalesce", "collect", "cos", "cot", "count", "date", "date.realtime", "date.statement",
    "date.transaction", "date.truncate", "datetime", "datetime.fromepoch", "datetime.fromepochmillis",
    "datetime.realtime", "datetime.statement", "datetime.transaction", "datetime.truncate", "degrees",
    "duration", "duration.between", "duration.inDays", "duration.inMonths", "duration.inSeconds", "e",
    "elementId", "endNode", "exists", "exp", "file", "floor", "graph.byElementId", "graph.byName", "haversin",
    "head", "id", "isEmpty", "isNaN", "keys", "labels", "last", "left", "length", "linenumber", "localdatetime",
    "localdatetime.realtime", "localdatetime.statement", "localdatetime.transaction", "localdatetime.truncate",
    "localtime", "localtime.realtime", "localtime.statement", "localtime.transaction", "localtime.truncate",
    "log", "log10", "lower", "ltrim", "max", "min", "nodes", "none", "normalize", "nullIf", "percentileCont",
    "percentileDisc", "pi", "point", "point.distance", "point.withinBBox", "properties", "radians", "rand",
    "randomUUID", "range", "reduce", "relationships", "replace", "reverse", "right", "round", "rtrim", "sign",
    "sin", "single", "size", "split", "sqrt", "startNode", "stdev", "stdevp", "substring", "sum", "tail", "tan",
    "time", "time.realtime", "time.statement", "time.transaction", "time.truncate", "timestamp", "toBoolean",
    "toBooleanList", "toBooleanOrNull", "toFloat", "toFloatList", "toFloatOrNull", "toInteger", "toIntegerList",
    "toIntegerOrNull", "toLower", "toString", "toStringList", "toStringOrNull", "toUpper", "trim", "type",
    "upper", "valueType", "vector.similarity.cosine", "vector.similarity.euclidean",
)
# fmt: on


def test_every_built_in_function_is_allowed_or_refused_with_a_reason() -> None:
    allowed = {name.lower() for _, names in SAFE_FUNCTION_GROUPS.values() for name in names}
    refused = {name.lower() for name in REFUSED_FUNCTIONS}
    assert allowed.isdisjoint(refused)
    unclassified = [name for name in BUILT_INS if name.lower() not in allowed | refused]
    assert unclassified == []
    assert all(reason for reason, _ in SAFE_FUNCTION_GROUPS.values())
    assert all(REFUSED_FUNCTIONS.values())


@pytest.mark.parametrize(
    "query",
    [
        "MATCH (n) RETURN timestamp() > 0 AS now",
        "MATCH (n) WHERE exists((n)-->()) RETURN count(*) AS c",
        "MATCH (n) RETURN char_length(n.name), nullIf(n.x, 1), valueType(n.x), btrim(n.name) AS v",
    ],
)
def test_reads_once_refused_are_let_through_and_scoped(query: str) -> None:
    decision = guard.check(query, {}, "analyze", POLICY)
    assert decision.allowed and decision.parsed is not None, decision.reason
    assert "$__gw_scope" in scope.plan(decision.parsed, POLICY, "analyze", ANYONE).cypher


@pytest.mark.parametrize(("function", "why"), [("graph.byName('x')", "composite"), ("my.fn(1)", "not on the")])
def test_refused_functions_say_why(function: str, why: str) -> None:
    # The guard refuses both first (function.unreviewed); the scope rewrite refuses them on its own too.
    assert guard.check(f"MATCH (n) RETURN {function} AS v", {}, "analyze", POLICY).rule == "function.unreviewed"
    parsed = guard.parse_query(f"MATCH (n) RETURN {function} AS v", POLICY.tool("analyze").limits)
    with pytest.raises(QueryRejected) as info:
        scope.plan(parsed, POLICY, "analyze", ANYONE)
    assert info.value.rule == "scope.unsupported" and why in info.value.reason
    assert not function_is_safe(function.split("(")[0])
