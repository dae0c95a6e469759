"""The procedures and functions the scope rewrite lets a query call, each group with its reason.

A call is safe when it cannot reach an element outside the caller's layers: it computes on
the values it is given, or reads an element the query already holds (and every element a
scoped query holds came from a pattern that received its visibility predicate). Anything
not listed here is refused (``scope.unsupported``): user-defined functions, most of APOC
(``apoc.nodes.get(ids)`` fetches by id, ``apoc.node.degree(n)`` counts hidden relationships),
and the built-ins of ``REFUSED_FUNCTIONS``. Every built-in function of Neo4j 5.26 is in exactly
one of ``SAFE_FUNCTION_GROUPS`` and ``REFUSED_FUNCTIONS`` (tests/unit/test_scope_calls.py holds
the list ``SHOW FUNCTIONS`` gives; an integration test compares it with the running server).
"""

from __future__ import annotations

# The fields YIELD * gives for the procedures that return names (labels, types, keys), so the
# column walk knows them. The rewrite refuses every procedure call (SECURITY.md, layer 2):
# these name labels, types and keys that only hidden elements carry.
NAME_ONLY_PROCEDURES: dict[str, tuple[str, ...]] = {
    "db.labels": ("label",),
    "db.relationshiptypes": ("relationshipType",),
    "db.propertykeys": ("propertyKey",),
}

# fmt: off
SAFE_FUNCTION_GROUPS: dict[str, tuple[str, tuple[str, ...]]] = {
    "numbers": (
        "compute on the numbers they are given (rand() on none)",
        ("abs", "acos", "asin", "atan", "atan2", "ceil", "cos", "cot", "degrees", "e", "exp", "floor", "haversin",
         "isNaN", "log", "log10", "pi", "radians", "rand", "round", "sign", "sin", "sqrt", "tan"),
    ),
    "strings": (
        "compute on the strings they are given",
        ("btrim", "char_length", "character_length", "left", "lower", "ltrim", "normalize", "replace", "reverse",
         "right", "rtrim", "split", "substring", "toLower", "toUpper", "trim", "upper"),
    ),
    "values": (
        "convert, test or pick from the values and lists they are given; randomUUID() takes none",
        ("coalesce", "head", "isEmpty", "last", "nullIf", "randomUUID", "range", "size", "tail", "toBoolean",
         "toBooleanList", "toBooleanOrNull", "toFloat", "toFloatList", "toFloatOrNull", "toInteger",
         "toIntegerList", "toIntegerOrNull", "toString", "toStringList", "toStringOrNull", "valueType"),
    ),
    "time and space": (
        "build or compare temporal, spatial and vector values from their arguments or the clock",
        ("date", "date.realtime", "date.statement", "date.transaction", "date.truncate", "datetime",
         "datetime.fromepoch", "datetime.fromepochmillis", "datetime.realtime", "datetime.statement",
         "datetime.transaction", "datetime.truncate", "duration", "duration.between", "duration.inDays",
         "duration.inMonths", "duration.inSeconds", "localdatetime", "localdatetime.realtime",
         "localdatetime.statement", "localdatetime.transaction", "localdatetime.truncate", "localtime",
         "localtime.realtime", "localtime.statement", "localtime.transaction", "localtime.truncate", "point",
         "point.distance", "point.withinBBox", "time", "time.realtime", "time.statement", "time.transaction",
         "time.truncate", "timestamp", "vector.similarity.cosine", "vector.similarity.euclidean"),
    ),
    "aggregates": (
        "aggregate the rows the scoped query produced",
        ("avg", "collect", "count", "max", "min", "percentileCont", "percentileDisc", "stDev", "stDevP", "sum"),
    ),
    "elements held": (
        "read an element or path the query already holds; startNode()/endNode() too, because the "
        "pattern that bound a relationship also checked both its endpoints (procedures that yield "
        "relationships are refused)",
        ("elementId", "endNode", "id", "keys", "labels", "length", "nodes", "properties", "relationships",
         "startNode", "type"),
    ),
    "syntax": (
        "Cypher syntax with a function's name: the parser reads all/any/none/single and reduce as "
        "quantifier and reduce expressions, and exists(<pattern>) holds a pattern predicate, scoped "
        "as any pattern is (Neo4j 5 refuses exists(<property>) itself)",
        ("all", "any", "exists", "none", "reduce", "single"),
    ),
    "cypher 25": (
        "Cypher 25's new built-ins (Neo4j 2026.x, SHOW FUNCTIONS under CYPHER 25): each computes on its "
        "arguments only; none takes an element id or reads the graph, a file or a URL",
        ("cardinality", "ceiling", "coll.distinct", "coll.flatten", "coll.indexOf", "coll.insert", "coll.max",
         "coll.min", "coll.remove", "coll.sort", "collect_list", "cosh", "coth", "sinh", "tanh", "ln",
         "duration_between", "format", "local_datetime", "local_time", "zoned_datetime", "zoned_time", "path_length",
         "percentile_cont", "percentile_disc", "property_exists", "stdev_pop", "stdev_samp", "string.indexOf",
         "string.join", "string.regexReplace", "uuid", "uuid.leastSignificantBits", "uuid.mostSignificantBits",
         "vector", "vector_dimension_count", "vector_distance", "vector_norm"),
    ),
    "apoc values": (
        "APOC functions that compute on the maps they are given (not apoc.map.fromNodes, which "
        "reads every node with a label)",
        ("apoc.map.clean", "apoc.map.flatten", "apoc.map.fromLists", "apoc.map.fromPairs", "apoc.map.fromValues",
         "apoc.map.get", "apoc.map.merge", "apoc.map.mergeList", "apoc.map.removeKey", "apoc.map.removeKeys",
         "apoc.map.setKey", "apoc.map.submap", "apoc.map.values"),
    ),
}
# fmt: on

# Whole APOC namespaces that compute on strings and lists only.
SAFE_FUNCTION_PREFIXES: tuple[str, ...] = ("apoc.text.", "apoc.coll.")

REFUSED_FUNCTIONS: dict[str, str] = {
    "file": "it names the file LOAD CSV reads, and LOAD CSV is refused",
    "linenumber": "it numbers the lines LOAD CSV reads, and LOAD CSV is refused",
    "graph.byElementId": "it names another graph of a composite database (USE is refused)",
    "graph.byName": "it names another graph of a composite database (USE is refused)",
}

SAFE_FUNCTIONS: frozenset[str] = frozenset(name.lower() for _, names in SAFE_FUNCTION_GROUPS.values() for name in names)


def function_is_safe(name: str) -> bool:
    lowered = name.lower()
    return lowered in SAFE_FUNCTIONS or lowered.startswith(SAFE_FUNCTION_PREFIXES)


def why_refused(name: str) -> str:
    """Why a function the rewrite does not let through is refused."""
    for refused, reason in REFUSED_FUNCTIONS.items():
        if refused.lower() == name.lower():
            return reason
    return "it is not on the scope rewrite's list of functions that cannot reach elements outside the caller's layers"
