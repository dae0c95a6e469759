"""Neo4j values -> JSON, faithfully, and rows -> JSON under a byte budget.

Runs only inside the sandbox (it imports the ``neo4j`` driver's types).
Tagged objects follow the table in ``sandbox/wire.py``.

Neo4j's element ids never leave the sandbox: ``ElementTokens`` replaces them with
tokens local to one answer (the ids' gaps count elements the caller cannot see).

Hidden properties (``sandbox/withhold.py``) are left out as each element is converted, taken
from the driver's object key by key: a hidden value is never sized nor converted.

Why a budget walk before encoding: a single record may hold a 10 MB string.
Encoding it only to learn it does not fit would double the memory it costs;
instead a cheap lower bound (characters count at least one byte each) is
checked first, and a value that cannot fit is never encoded.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from neo4j.graph import Node, Path, Relationship
from neo4j.spatial import Point
from neo4j.time import Date, DateTime, Duration, Time

from sandbox.rebuild import ShownNode, ShownPath, ShownRelationship
from sandbox.tagged import TYPE_KEY
from sandbox.wire import Truncation
from sandbox.withhold import Owners, PropertiesOf, Withholding, owners_of

# Neo4j's typed JSON (the Query API's answer) tags its elements so.
TYPED_ELEMENTS = ("Node", "Relationship")

JsonValue = Any  # None | bool | int | float | str | list[JsonValue] | dict[str, JsonValue]
# A conversion of one value that leaves hidden properties out (``RowCollector``), or shows all.
Convert = Callable[[Any, PropertiesOf | None], JsonValue]


def all_properties(_owners: Owners, properties: Mapping[str, Any], convert: Callable[[Any], Any]) -> JsonValue:
    return {key: convert(value) for key, value in properties.items()}


# The driver's elements, and those rebuilt from the projection wrapper's maps (sandbox/rebuild.py).
NODES = (Node, ShownNode)
RELATIONSHIPS = (Relationship, ShownRelationship)
PATHS = (Path, ShownPath)


def _properties(
    entity: Node | Relationship | ShownNode | ShownRelationship, shown: PropertiesOf | None
) -> dict[str, JsonValue]:
    return (shown or all_properties)(owners_of(entity), entity, lambda value: to_json(value, shown))


def _node(node: Node | ShownNode, shown: PropertiesOf | None) -> dict[str, JsonValue]:
    return {
        TYPE_KEY: "node",
        "elementId": node.element_id,
        "labels": sorted(node.labels),
        "properties": _properties(node, shown),
    }


def _relationship(rel: Relationship | ShownRelationship, shown: PropertiesOf | None) -> dict[str, JsonValue]:
    start, end = rel.start_node, rel.end_node
    return {
        TYPE_KEY: "relationship",
        "elementId": rel.element_id,
        "type": rel.type,
        "startElementId": start.element_id if start is not None else None,
        "endElementId": end.element_id if end is not None else None,
        "properties": _properties(rel, shown),
    }


def _zone(value: Time | DateTime) -> str | None:
    # A named zone (Europe/Stockholm) is more than its offset: keep its name.
    tz = value.tzinfo
    if tz is None:
        return None
    name = getattr(tz, "key", None) or getattr(tz, "zone", None)
    return str(name) if name else None


def _named_zone(value: DateTime) -> bool:
    """A zone whose offset depends on the instant (Europe/Stockholm), not a fixed offset."""
    return value.tzinfo is not None and value.timetz().utc_offset() is None


def _zoned_iso(value: DateTime) -> str:
    """``value.iso_format()`` for a named zone, without handing the zone a ``neo4j.time.DateTime``.

    The driver asks ``tzinfo.utcoffset()`` with its own DateTime, which the C ``zoneinfo``
    reads as if it were a ``datetime`` (undefined behaviour: it crashed a test process); the
    native datetime is what it expects. The offset is written as the driver writes a fixed one.
    """
    assert value.tzinfo is not None
    offset = value.tzinfo.utcoffset(value.to_native())
    text = value.replace(tzinfo=None).iso_format()
    if offset is None:
        return text
    total = offset.total_seconds()
    hours, minutes = divmod(abs(int(total // 60)), 60)
    return f"{text}{'-' if total < 0 else '+'}{hours:02d}:{minutes:02d}"


def _temporal(value: Date | Time | DateTime) -> dict[str, JsonValue]:
    if isinstance(value, DateTime):
        kind = "datetime" if value.tzinfo is not None else "localdatetime"
    elif isinstance(value, Time):
        kind = "time" if value.tzinfo is not None else "localtime"
    else:
        kind = "date"
    iso = _zoned_iso(value) if isinstance(value, DateTime) and _named_zone(value) else value.iso_format()
    out: dict[str, JsonValue] = {TYPE_KEY: kind, "iso": iso}
    if not isinstance(value, Date):
        zone = _zone(value)
        if zone:
            out["zone"] = zone
    return out


def _duration(value: Duration) -> dict[str, JsonValue]:
    return {
        TYPE_KEY: "duration",
        "iso": value.iso_format(),
        "months": value.months,
        "days": value.days,
        "seconds": value.seconds,
        "nanoseconds": value.nanoseconds,
    }


def _point(value: Point) -> dict[str, JsonValue]:
    out: dict[str, JsonValue] = {TYPE_KEY: "point", "srid": value.srid, "x": value[0], "y": value[1]}
    if len(value) > 2:
        out["z"] = value[2]
    return out


def to_json(value: Any, shown: PropertiesOf | None = None) -> JsonValue:
    """One Neo4j value as JSON (tagged objects for graph, temporal, spatial and bytes values).

    ``shown``: converts an element's properties, leaving hidden ones out; None shows them all.
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        # JSON has no NaN or infinities; Cypher does.
        return value if math.isfinite(value) else {TYPE_KEY: "float", "value": repr(value)}
    if isinstance(value, NODES):
        return _node(value, shown)
    if isinstance(value, RELATIONSHIPS):
        return _relationship(value, shown)
    if isinstance(value, PATHS):
        return {
            TYPE_KEY: "path",
            "nodes": [_node(n, shown) for n in value.nodes],
            "relationships": [_relationship(r, shown) for r in value.relationships],
        }
    if isinstance(value, Date | Time | DateTime):
        return _temporal(value)
    if isinstance(value, Duration):
        return _duration(value)
    if isinstance(value, Point):
        return _point(value)
    if isinstance(value, bytes | bytearray):
        return {TYPE_KEY: "bytes", "base64": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, Mapping):
        mapped = {str(k): to_json(v, shown) for k, v in value.items()}
        # A user map with a "$type" key would be read as one of our tagged values: wrap it.
        return {TYPE_KEY: "map", "value": mapped} if TYPE_KEY in mapped else mapped
    if isinstance(value, list | tuple):
        return [to_json(v, shown) for v in value]
    # An unknown driver type is reported, not dropped: the result stays honest.
    return {TYPE_KEY: "unknown", "repr": repr(value)[:200]}


def min_size(value: Any, budget: int, withholding: Withholding | None = None) -> int:
    """A cheap lower bound on the encoded size of ``value``; stops counting once past ``budget``.

    Hidden properties (``withholding``) are not counted: a driver's element, or an element of
    Neo4j's typed JSON (the Query API's), counts only the values it shows.
    """
    total = 0
    stack = [value]
    while stack and total <= budget:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item) + 2
        elif isinstance(item, bytes | bytearray):
            total += (len(item) * 4) // 3
        elif isinstance(item, NODES + RELATIONSHIPS):
            shown = withholding.split(owners_of(item), item)[0] if withholding is not None else item
            stack.extend(shown.values())
            total += 2
        elif withholding is not None and isinstance(item, Mapping) and item.get(TYPE_KEY) in TYPED_ELEMENTS:
            element = item.get("_value") or {}
            stack.extend(withholding.split(owners_of(item), element.get("_properties") or {})[0].values())
            total += 2
        elif isinstance(item, PATHS):
            stack.extend(item.nodes)
            stack.extend(item.relationships)
        elif isinstance(item, Mapping):
            stack.extend(item.keys())
            stack.extend(item.values())
            total += 2
        elif isinstance(item, list | tuple):
            stack.extend(item)
            total += 2
        else:
            total += 1
    return total


class ElementTokens:
    """Neo4j's element ids replaced by tokens that mean something only inside one answer.

    Nodes become ``n1``, ``n2`` …, relationships ``r1`` …, in the order they appear in the
    answer (a map's entries by key); the same element keeps its token throughout (a relationship's ``startElementId``
    is its start node's token, whether or not that node is in the answer). Neo4j allocates
    ids across the whole database and reuses them, so a visible element's id tells how many
    hidden elements were created around it; a token tells nothing beyond the answer.
    """

    def __init__(self) -> None:
        self._tokens: dict[tuple[str, str], str] = {}
        self._issued: dict[str, int] = {}

    def token(self, prefix: str, element_id: JsonValue) -> JsonValue:
        if element_id is None:
            return None
        key = (prefix, str(element_id))
        if key not in self._tokens:
            self._issued[prefix] = self._issued.get(prefix, 0) + 1
            self._tokens[key] = f"{prefix}{self._issued[prefix]}"
        return self._tokens[key]

    def element_ids(self) -> dict[str, str]:
        """Token -> Neo4j's element id, for the sandbox's own look-ups (never written out)."""
        return {token: element_id for (_, element_id), token in self._tokens.items()}

    def apply(self, value: JsonValue) -> JsonValue:
        """``value`` (tagged JSON, changed in place) with every element id replaced, in reading order."""
        stack = [value]
        while stack:  # iterative: a deeply nested list from the database cannot overflow the stack
            item = stack.pop()
            if isinstance(item, list):
                stack.extend(reversed(item))
            elif isinstance(item, dict):
                kind = item.get(TYPE_KEY)
                if kind == "node":
                    item["elementId"] = self.token("n", item.get("elementId"))
                elif kind == "relationship":
                    item["elementId"] = self.token("r", item.get("elementId"))
                    item["startElementId"] = self.token("n", item.get("startElementId"))
                    item["endElementId"] = self.token("n", item.get("endElementId"))
                elif kind == "path":
                    stack.extend(reversed([*(item.get("nodes") or []), *(item.get("relationships") or [])]))
                elif kind == "map":
                    # The wrapper of a user map that has its own "$type" key: its entries are plain values.
                    inner = item.get("value")
                    stack.extend(reversed(_by_key(inner)) if isinstance(inner, dict) else [inner])
                else:
                    stack.extend(reversed(_by_key(item)))
        return value


def _by_key(mapping: dict[str, JsonValue]) -> list[JsonValue]:
    # A map's entries in key order: Neo4j's order of a map's keys differs between a map and keys()
    # of it, and the tokens must not depend on which of the two the answer was read through.
    return [mapping[key] for key in sorted(mapping)]


def encode(value: JsonValue) -> str:
    """The one JSON encoding used for sizes and output (compact, UTF-8, no NaN)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


class HeldBack:
    """One row's conversion under hidden properties: hidden values are never converted.

    The hidden values the result check reads are set aside and put back (``restore``) only
    once the row has been measured: the check sees them, no byte count ever includes them.
    """

    def __init__(self, withholding: Withholding) -> None:
        self.withholding = withholding
        self._held: list[tuple[dict[str, JsonValue], dict[str, Any], Callable[[Any], JsonValue]]] = []

    def properties(
        self, owners: Owners, properties: Mapping[str, Any], convert: Callable[[Any], JsonValue]
    ) -> dict[str, JsonValue]:
        shown, held = self.withholding.split(owners, properties)
        out = {key: convert(value) for key, value in shown.items()}
        if held:
            self._held.append((out, held, convert))
        return out

    def restore(self) -> None:
        for out, held, convert in self._held:
            out.update((key, convert(value)) for key, value in held.items())
        self._held.clear()


def row_json(
    values: Iterable[Any], budget: int, convert: Convert = to_json, withholding: Withholding | None = None
) -> tuple[list[JsonValue], int] | None:
    """A record's values as JSON and their encoded size, or None when they cannot fit in ``budget``.

    Neither the size nor the budget walk counts a hidden property (``withholding``); the hidden
    values the result check reads are in the row returned, outside its size.
    """
    raw = list(values)
    if min_size(raw, budget, withholding) > budget:
        return None
    held = HeldBack(withholding) if withholding is not None else None
    row = [convert(v, held.properties if held is not None else None) for v in raw]
    size = len(encode(row).encode("utf-8"))
    if size > budget:
        return None
    if held is not None:
        held.restore()
    return row, size


class RowCollector:
    """Accepts rows until ``max_rows`` or ``max_bytes`` (of the encoded rows array) would be passed.

    ``bytes`` counts exactly what ``encode(rows)`` would produce once the hidden properties are
    gone, brackets and commas included. ``withholding``: the hidden properties, left out of each
    row as it is converted (those the result check reads are in ``rows`` until it has run).
    """

    def __init__(
        self,
        max_rows: int,
        max_bytes: int,
        convert: Convert = to_json,
        withholding: Withholding | None = None,
    ) -> None:
        self.max_rows = max_rows
        self.max_bytes = max_bytes
        self.element_tokens = ElementTokens()

        def converted(value: Any, shown: PropertiesOf | None) -> JsonValue:
            # Tokens before the row is measured: the byte limit counts what is returned.
            return self.element_tokens.apply(convert(value, shown))

        self.convert: Convert = converted
        self.withholding = withholding
        self.rows: list[list[JsonValue]] = []
        self.bytes = 2  # "[]"
        self.truncation: Truncation | None = None

    def add(self, values: Iterable[Any]) -> bool:
        """Take one record; False means stop reading (and ``truncation`` says why)."""
        if len(self.rows) >= self.max_rows:
            self.truncation = "rows"
            return False
        separator = 1 if self.rows else 0
        budget = self.max_bytes - self.bytes - separator
        fitted = row_json(values, budget, self.convert, self.withholding) if budget > 0 else None
        if fitted is None:
            self.truncation = "bytes"
            return False
        row, size = fitted
        self.rows.append(row)
        self.bytes += size + separator
        return True
