"""The one function table: every function a query can name, and what each part of the gateway knows of it.

One row per function, read by three parts of the gateway:

* the guard's size check (``gateway.guard.size_walk``): the function's reviewed cost model
  (``gateway.guard.cost_models``), or none, and then a call is refused (``function.unreviewed``);
* the scope rewrite (``gateway.scope.calls``): whether a scoped query may call it, with the reason
  (a :class:`Scoped` group: it cannot reach an element outside the caller's layers), or why not
  (:class:`Refused`). A name not in the table is refused by the rewrite too, except in the APOC
  namespaces of ``SCOPED_NAMESPACES``;
* the hidden-property check (``gateway.guard.hidden``): whether it copies every property of its
  argument (``copies_properties``), reads one by a name given as an argument (``key_argument``),
  and whether its result is always a list or a number (a subscript on a list, or by a number, is an
  index, never a property read);
* the answer's projection (``gateway.scope.plain``): whether its result can hold an element
  (``result``).

Names are Neo4j's spelling (``SHOW FUNCTIONS``); lookups are case-insensitive, as Neo4j resolves
built-ins. The table holds every built-in of Neo4j 5.26 and 2026.x (Cypher 5 and 25), the names
the parser reads as syntax (quantifiers, ``reduce``, ``exists``), and the APOC functions a policy
may allow; tests/unit/test_functions.py holds the lists it is compared with. Adding a function is
one row here and its tests (docs/architecture.md, "where each change goes").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gateway.guard import cost_models as costs
from gateway.guard.cost_models import FunctionModel

Returns = Literal["list", "number"]
# What a call's value can hold: "plain" never a node, relationship, path or map (the projection of
# hidden properties may skip it, gateway/scope/plain.py); "arguments" only what its arguments hold.
Result = Literal["plain", "arguments"]


@dataclass(frozen=True)
class Scoped:
    """A group of functions the scope rewrite lets through, and why none can reach a hidden element."""

    group: str
    reason: str


@dataclass(frozen=True)
class Refused:
    """Why the scope rewrite refuses a function."""

    reason: str


@dataclass(frozen=True)
class Function:
    """One function: its name, its cost model (None: the guard refuses a call), what the scope rewrite
    does with it, and what the hidden-property check must know of it."""

    name: str
    scope: Scoped | Refused
    cost: FunctionModel | None
    copies_properties: bool = False
    key_argument: int | None = None
    returns: Returns | None = None
    result: Result | None = None


NUMBERS = Scoped("numbers", "compute on the numbers they are given (rand() on none)")
STRINGS = Scoped("strings", "compute on the strings they are given")
VALUES = Scoped("values", "convert, test or pick from the values and lists they are given; randomUUID() takes none")
TIME_AND_SPACE = Scoped(
    "time and space", "build or compare temporal, spatial and vector values from their arguments or the clock"
)
AGGREGATES = Scoped("aggregates", "aggregate the rows the scoped query produced")
ELEMENTS_HELD = Scoped(
    "elements held",
    "read an element or path the query already holds; startNode()/endNode() too, because the "
    "pattern that bound a relationship also checked both its endpoints (procedures that yield "
    "relationships are refused)",
)
SYNTAX = Scoped(
    "syntax",
    "Cypher syntax with a function's name: the parser reads all/any/none/single and reduce (allReduce "
    "in Cypher 25) as quantifier and reduce expressions, and exists(<pattern>) holds a pattern predicate, scoped "
    "as any pattern is (Neo4j 5 refuses exists(<property>) itself)",
)
CYPHER_25 = Scoped(
    "cypher 25",
    "Cypher 25's new built-ins (Neo4j 2026.x, SHOW FUNCTIONS under CYPHER 25): each computes on its "
    "arguments only; none takes an element id or reads the graph, a file or a URL",
)
APOC_VALUES = Scoped(
    "apoc values",
    "APOC functions that compute on the maps they are given (not apoc.map.fromNodes, which "
    "reads every node with a label)",
)
APOC_NAMESPACES = Scoped("apoc strings and lists", "APOC functions that compute on strings and lists only")
# Whole APOC namespaces the scope rewrite lets through (APOC_NAMESPACES): they compute on strings and lists only.
SCOPED_NAMESPACES: tuple[str, ...] = ("apoc.text.", "apoc.coll.")


def _f(
    name: str, scope: Scoped | Refused, handler: costs.FunctionHandler | None, *, regex: int | None = None,
    pass_through: bool = False, tracked: bool = False, copies_properties: bool = False,
    key_argument: int | None = None, returns: Returns | None = None, result: Result | None = None,
) -> Function:  # fmt: skip
    cost = None if handler is None else FunctionModel(handler, regex, pass_through, tracked)
    return Function(name, scope, cost, copies_properties, key_argument, returns, result)


# fmt: off
_ROWS: tuple[Function, ...] = (
    # numbers
    _f("abs", NUMBERS, costs.absolute, returns="number", result="plain"),
    _f("acos", NUMBERS, costs.number_of, result="plain"),
    _f("asin", NUMBERS, costs.number_of, result="plain"),
    _f("atan", NUMBERS, costs.number_of, result="plain"),
    _f("atan2", NUMBERS, costs.number_of, result="plain"),
    _f("ceil", NUMBERS, costs.number_of, returns="number", result="plain"),
    _f("cos", NUMBERS, costs.number_of, result="plain"),
    _f("cot", NUMBERS, costs.number_of, result="plain"),
    _f("degrees", NUMBERS, costs.number_of, result="plain"),
    _f("e", NUMBERS, costs.number_of, result="plain"),
    _f("exp", NUMBERS, costs.number_of, result="plain"),
    _f("floor", NUMBERS, costs.number_of, returns="number", result="plain"),
    _f("haversin", NUMBERS, costs.number_of, result="plain"),
    _f("isNaN", NUMBERS, costs.boolean, result="plain"),
    _f("log", NUMBERS, costs.number_of, result="plain"),
    _f("log10", NUMBERS, costs.number_of, result="plain"),
    _f("pi", NUMBERS, costs.number_of, result="plain"),
    _f("radians", NUMBERS, costs.number_of, result="plain"),
    _f("rand", NUMBERS, costs.number_of, result="plain"),
    _f("round", NUMBERS, costs.number_of, returns="number", result="plain"),
    _f("sign", NUMBERS, costs.number_of, returns="number", result="plain"),
    _f("sin", NUMBERS, costs.number_of, result="plain"),
    _f("sqrt", NUMBERS, costs.number_of, result="plain"),
    _f("tan", NUMBERS, costs.number_of, result="plain"),
    # strings
    _f("btrim", STRINGS, costs.trim, result="plain"),
    _f("char_length", STRINGS, costs.size, returns="number", result="plain"),
    _f("character_length", STRINGS, costs.size, returns="number", result="plain"),
    _f("left", STRINGS, costs.substring, result="plain"),
    _f("lower", STRINGS, costs.string_like(), result="plain"),
    _f("ltrim", STRINGS, costs.trim, result="plain"),
    # Unicode normalisation can expand a character into several (NFKD: up to 18).
    _f("normalize", STRINGS, costs.string_like(18), result="plain"),
    _f("replace", STRINGS, costs.replace, result="plain"),
    _f("reverse", STRINGS, costs.same, result="arguments"),
    _f("right", STRINGS, costs.substring, result="plain"),
    _f("rtrim", STRINGS, costs.trim, result="plain"),
    _f("split", STRINGS, costs.split, returns="list", result="plain"),
    _f("substring", STRINGS, costs.substring, result="plain"),
    _f("toLower", STRINGS, costs.string_like(), result="plain"),
    _f("toUpper", STRINGS, costs.string_like(), result="plain"),
    _f("trim", STRINGS, costs.trim, result="plain"),
    _f("upper", STRINGS, costs.string_like(), result="plain"),
    # values
    _f("coalesce", VALUES, costs.coalesce, pass_through=True, result="arguments"),
    _f("head", VALUES, costs.element_of, pass_through=True, result="arguments"),
    _f("isEmpty", VALUES, costs.boolean, result="plain"),
    _f("last", VALUES, costs.element_of, pass_through=True, result="arguments"),
    _f("nullIf", VALUES, costs.same, pass_through=True, result="arguments"),
    _f("randomUUID", VALUES, costs.scalar, result="plain"),
    _f("range", VALUES, costs.range_list, returns="list", result="plain"),
    _f("size", VALUES, costs.size, returns="number", result="plain"),
    _f("tail", VALUES, costs.same, pass_through=True, returns="list", result="arguments"),
    _f("toBoolean", VALUES, costs.boolean, result="plain"),
    _f("toBooleanList", VALUES, costs.list_conversion, returns="list", result="plain"),
    _f("toBooleanOrNull", VALUES, costs.boolean, result="plain"),
    _f("toFloat", VALUES, costs.number_of, result="plain"),
    _f("toFloatList", VALUES, costs.list_conversion, returns="list", result="plain"),
    _f("toFloatOrNull", VALUES, costs.number_of, result="plain"),
    _f("toInteger", VALUES, costs.to_integer, returns="number", result="plain"),
    _f("toIntegerList", VALUES, costs.list_conversion, returns="list", result="plain"),
    _f("toIntegerOrNull", VALUES, costs.to_integer, returns="number", result="plain"),
    _f("toString", VALUES, costs.to_string, result="plain"),
    _f("toStringList", VALUES, costs.list_conversion, returns="list", result="plain"),
    _f("toStringOrNull", VALUES, costs.to_string, result="plain"),
    _f("valueType", VALUES, costs.scalar, result="plain"),
    # time and space
    _f("date", TIME_AND_SPACE, costs.parse_text, result="plain"),
    _f("date.realtime", TIME_AND_SPACE, costs.scalar),
    _f("date.statement", TIME_AND_SPACE, costs.scalar),
    _f("date.transaction", TIME_AND_SPACE, costs.scalar),
    _f("date.truncate", TIME_AND_SPACE, costs.scalar, result="plain"),
    _f("datetime", TIME_AND_SPACE, costs.parse_text, result="plain"),
    _f("datetime.fromepoch", TIME_AND_SPACE, costs.scalar),
    _f("datetime.fromepochmillis", TIME_AND_SPACE, costs.scalar),
    _f("datetime.realtime", TIME_AND_SPACE, costs.scalar),
    _f("datetime.statement", TIME_AND_SPACE, costs.scalar),
    _f("datetime.transaction", TIME_AND_SPACE, costs.scalar),
    _f("datetime.truncate", TIME_AND_SPACE, costs.scalar, result="plain"),
    _f("duration", TIME_AND_SPACE, costs.parse_text, result="plain"),
    _f("duration.between", TIME_AND_SPACE, costs.scalar, result="plain"),
    _f("duration.inDays", TIME_AND_SPACE, costs.scalar, result="plain"),
    _f("duration.inMonths", TIME_AND_SPACE, costs.scalar, result="plain"),
    _f("duration.inSeconds", TIME_AND_SPACE, costs.scalar, result="plain"),
    _f("localdatetime", TIME_AND_SPACE, costs.parse_text, result="plain"),
    _f("localdatetime.realtime", TIME_AND_SPACE, costs.scalar),
    _f("localdatetime.statement", TIME_AND_SPACE, costs.scalar),
    _f("localdatetime.transaction", TIME_AND_SPACE, costs.scalar),
    _f("localdatetime.truncate", TIME_AND_SPACE, costs.scalar),
    _f("localtime", TIME_AND_SPACE, costs.parse_text, result="plain"),
    _f("localtime.realtime", TIME_AND_SPACE, costs.scalar),
    _f("localtime.statement", TIME_AND_SPACE, costs.scalar),
    _f("localtime.transaction", TIME_AND_SPACE, costs.scalar),
    _f("localtime.truncate", TIME_AND_SPACE, costs.scalar),
    _f("point", TIME_AND_SPACE, costs.parse_text, result="plain"),
    _f("point.distance", TIME_AND_SPACE, costs.number_of, result="plain"),
    _f("point.withinBBox", TIME_AND_SPACE, costs.boolean),
    _f("time", TIME_AND_SPACE, costs.parse_text, result="plain"),
    _f("time.realtime", TIME_AND_SPACE, costs.scalar),
    _f("time.statement", TIME_AND_SPACE, costs.scalar),
    _f("time.transaction", TIME_AND_SPACE, costs.scalar),
    _f("time.truncate", TIME_AND_SPACE, costs.scalar),
    _f("timestamp", TIME_AND_SPACE, costs.number_of, result="plain"),
    _f("vector.similarity.cosine", TIME_AND_SPACE, costs.vector_math),
    _f("vector.similarity.euclidean", TIME_AND_SPACE, costs.vector_math),
    # aggregates
    _f("avg", AGGREGATES, costs.number_of, result="plain"),
    _f("collect", AGGREGATES, costs.collect, tracked=True, returns="list", result="arguments"),
    _f("count", AGGREGATES, costs.number_of, returns="number", result="plain"),
    _f("max", AGGREGATES, costs.same, pass_through=True, result="arguments"),
    _f("min", AGGREGATES, costs.same, pass_through=True, result="arguments"),
    _f("percentileCont", AGGREGATES, costs.number_of, result="plain"),
    _f("percentileDisc", AGGREGATES, costs.element_of, pass_through=True, result="plain"),
    _f("stDev", AGGREGATES, costs.number_of, result="plain"),
    _f("stDevP", AGGREGATES, costs.number_of, result="plain"),
    _f("sum", AGGREGATES, costs.number_of, result="plain"),
    # elements held
    _f("elementId", ELEMENTS_HELD, costs.scalar, result="plain"),
    _f("endNode", ELEMENTS_HELD, costs.entity),
    _f("id", ELEMENTS_HELD, costs.number_of, result="plain"),
    _f("keys", ELEMENTS_HELD, costs.stored_list, pass_through=True, copies_properties=True),
    _f("labels", ELEMENTS_HELD, costs.stored_list, pass_through=True, returns="list", result="plain"),
    _f("length", ELEMENTS_HELD, costs.size, returns="number", result="plain"),
    _f("nodes", ELEMENTS_HELD, costs.path_list(relationships=False), returns="list"),
    _f("properties", ELEMENTS_HELD, costs.stored_list, pass_through=True, copies_properties=True),
    _f("relationships", ELEMENTS_HELD, costs.path_list(relationships=True), returns="list"),
    _f("startNode", ELEMENTS_HELD, costs.entity),
    _f("type", ELEMENTS_HELD, costs.scalar, result="plain"),
    # syntax
    _f("all", SYNTAX, None),
    _f("allReduce", SYNTAX, None),
    _f("any", SYNTAX, None),
    _f("exists", SYNTAX, costs.boolean, result="plain"),
    _f("none", SYNTAX, None),
    _f("reduce", SYNTAX, None),
    _f("single", SYNTAX, None),
    # cypher 25
    _f("cardinality", CYPHER_25, costs.size, returns="number", result="plain"),
    _f("ceiling", CYPHER_25, costs.number_of, returns="number", result="plain"),
    _f("coll.distinct", CYPHER_25, costs.list_builder, returns="list"),
    _f("coll.flatten", CYPHER_25, costs.list_builder, returns="list"),
    _f("coll.indexOf", CYPHER_25, costs.index_of, returns="number", result="plain"),
    _f("coll.insert", CYPHER_25, costs.list_builder, returns="list"),
    _f("coll.max", CYPHER_25, costs.extreme, pass_through=True),
    _f("coll.min", CYPHER_25, costs.extreme, pass_through=True),
    _f("coll.remove", CYPHER_25, costs.list_builder, returns="list"),
    _f("coll.sort", CYPHER_25, costs.list_builder, returns="list"),
    _f("collect_list", CYPHER_25, costs.collect, tracked=True, returns="list"),
    _f("cosh", CYPHER_25, costs.number_of),
    _f("coth", CYPHER_25, costs.number_of),
    _f("duration_between", CYPHER_25, costs.scalar),
    _f("format", CYPHER_25, costs.format_temporal),
    _f("ln", CYPHER_25, costs.number_of),
    _f("local_datetime", CYPHER_25, costs.parse_text),
    _f("local_time", CYPHER_25, costs.parse_text),
    _f("path_length", CYPHER_25, costs.size, returns="number", result="plain"),
    _f("percentile_cont", CYPHER_25, costs.number_of),
    _f("percentile_disc", CYPHER_25, costs.element_of, pass_through=True),
    _f("property_exists", CYPHER_25, costs.boolean, key_argument=1),
    _f("sinh", CYPHER_25, costs.number_of),
    _f("stdev_pop", CYPHER_25, costs.number_of),
    _f("stdev_samp", CYPHER_25, costs.number_of),
    _f("string.indexOf", CYPHER_25, costs.index_of, returns="number", result="plain"),
    _f("string.join", CYPHER_25, costs.string_join),
    _f("string.regexReplace", CYPHER_25, costs.regex_replace, regex=1),
    _f("tanh", CYPHER_25, costs.number_of),
    _f("uuid", CYPHER_25, costs.parse_text),
    _f("uuid.leastSignificantBits", CYPHER_25, costs.number_of),
    _f("uuid.mostSignificantBits", CYPHER_25, costs.number_of),
    _f("vector", CYPHER_25, costs.parse_text),
    _f("vector_dimension_count", CYPHER_25, costs.number_of),
    _f("vector_distance", CYPHER_25, costs.vector_math),
    _f("vector_norm", CYPHER_25, costs.vector_math),
    _f("zoned_datetime", CYPHER_25, costs.parse_text),
    _f("zoned_time", CYPHER_25, costs.parse_text),
    # apoc values
    _f("apoc.map.clean", APOC_VALUES, None),
    _f("apoc.map.flatten", APOC_VALUES, None),
    _f("apoc.map.fromLists", APOC_VALUES, None),
    _f("apoc.map.fromPairs", APOC_VALUES, None),
    _f("apoc.map.fromValues", APOC_VALUES, None),
    _f("apoc.map.get", APOC_VALUES, None),
    _f("apoc.map.merge", APOC_VALUES, costs.map_merge),
    _f("apoc.map.mergeList", APOC_VALUES, None),
    _f("apoc.map.removeKey", APOC_VALUES, None),
    _f("apoc.map.removeKeys", APOC_VALUES, None),
    _f("apoc.map.setKey", APOC_VALUES, None),
    _f("apoc.map.submap", APOC_VALUES, None),
    _f("apoc.map.values", APOC_VALUES, None),
    # APOC namespaces the scope rewrite lets through whole, with the functions the guard reviewed in them
    _f("apoc.coll.sum", APOC_NAMESPACES, costs.list_sum),
    _f("apoc.text.join", APOC_NAMESPACES, costs.string_join),
    # refused by the scope rewrite
    _f("file", Refused("it names the file LOAD CSV reads, and LOAD CSV is refused"), None),
    _f("linenumber", Refused("it numbers the lines LOAD CSV reads, and LOAD CSV is refused"), None),
    _f("graph.byElementId", Refused("it names another graph of a composite database (USE is refused)"), None),
    _f("graph.byName", Refused("it names another graph of a composite database (USE is refused)"), None),
    # Neo4j 4's name for point.distance(): Neo4j 5.26 and 2026.x have no function of this name and answer
    # its call with a syntax error, so neither the guard nor the rewrite has anything to review.
    _f("distance", Refused("Neo4j 5 replaced it by point.distance()"), None, result="plain"),
)
# fmt: on

FUNCTIONS: dict[str, Function] = {row.name.lower(): row for row in _ROWS}


def lookup(name: str) -> Function | None:
    """The row of ``name`` (any case), or None when the table does not hold it."""
    return FUNCTIONS.get(name.lower())


def cost_model(name: str) -> FunctionModel | None:
    """The reviewed cost model of ``name``, or None: the guard refuses a call (function.unreviewed)."""
    row = lookup(name)
    return None if row is None else row.cost


def names(*, copies_properties: bool = False, returns: Returns | None = None) -> frozenset[str]:
    """The lower-case names of the rows that copy every property, or whose result is always ``returns``."""
    return frozenset(
        key
        for key, row in FUNCTIONS.items()
        if (copies_properties and row.copies_properties) or (returns is not None and row.returns == returns)
    )


def key_arguments() -> dict[str, int]:
    """Lower-case name -> the position of the argument that names the property the function reads."""
    return {key: row.key_argument for key, row in FUNCTIONS.items() if row.key_argument is not None}
