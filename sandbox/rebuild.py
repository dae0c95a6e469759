"""Nodes, relationships and paths rebuilt from the maps the projection wrapper returns.

Under hidden properties the scope rewrite (``gateway/scope/projection.py``) makes Neo4j return
each node and relationship of the answer as a map carrying only the keys that may be shown
(and those the result check reads), so Neo4j never reads nor sends a hidden value. Those maps
are marked with the job's own tag (the ``__gw_shown`` parameter, random per request: an agent's
map can never carry it) and take one of three forms:

* a node: ``{__gw: tag, n: elementId, l: labels, p: [[key, value], …]}``;
* a relationship: ``{__gw: tag, r: elementId, t: type, s: start's elementId, e: end's, p: […]}``;
* a container that holds one: ``{__gw: tag, c: 'list' | 'map' | 'path', i: [[key, value], …]}``
  (a path's items are its nodes, then its relationships);
* ``{__gw: tag, deep: true}``: a value nested past the levels the wrapper rebuilds that may hold
  an element; it was not sent, and the job is refused (``TooDeep``, rule sandbox.too_deep).

This module turns them back into what the driver (Bolt) or Neo4j's typed JSON (Query API)
would have given for the element itself, so every later step (the byte budget, the conversion,
the element tokens, the result check, the withholding) reads the same answer as without the
wrapper. Only marked maps are descended into, and the wrapper marks at most a few levels, so
the walk's depth is bounded by the rewrite, never by the data.
Standard library only: the Query API's path never imports the driver.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# The parameter that carries the job's tag; the rewrite sets it, the guard refuses it from callers.
TAG_PARAMETER = "__gw_shown"
MARK = "__gw"
# The marker's key for a value nested past the levels the wrapper rebuilds that may hold an element.
TOO_DEEP = "deep"


class TooDeep(Exception):
    """The answer holds a value the wrapper could not project: refused, its hidden values never fetched."""

    def __init__(self) -> None:
        super().__init__(
            "under this policy's hidden properties, nodes, relationships and paths are returned at most "
            "three levels of lists, maps or paths deep within a column (maps two levels deeper still are "
            "looked into); return the nested elements in a shallower column"
        )


class ShownNode(dict[str, Any]):
    """A node as the wrapper returned it: its shown properties, its element id and labels."""

    def __init__(self, element_id: str, labels: Iterable[str], properties: Iterable[tuple[str, Any]]) -> None:
        super().__init__(properties)
        self.element_id = element_id
        self.labels = frozenset(labels)


class _End:
    """A relationship's start or end, known only by its element id (as the driver's may be)."""

    def __init__(self, element_id: str | None) -> None:
        self.element_id = element_id


class ShownRelationship(dict[str, Any]):
    """A relationship as the wrapper returned it: its shown properties, id, type and ends."""

    def __init__(
        self, element_id: str, type_: str, start: str | None, end: str | None, properties: Iterable[tuple[str, Any]]
    ) -> None:
        super().__init__(properties)
        self.element_id = element_id
        self.type = type_
        self.start_node = _End(start)
        self.end_node = _End(end)


class ShownPath:
    """A path as the wrapper returned it: its nodes and relationships, in order."""

    def __init__(self, nodes: list[Any], relationships: list[Any]) -> None:
        self.nodes = nodes
        self.relationships = relationships


def _pairs(items: Any) -> list[tuple[Any, Any]]:
    return [(pair[0], pair[1]) for pair in items or [] if isinstance(pair, list) and len(pair) == 2]


def rebuild(value: Any, tag: str) -> Any:
    """A Bolt value with every marked map turned back into its node, relationship, path, list or map."""
    if not isinstance(value, dict) or value.get(MARK) != tag:
        return value
    if TOO_DEEP in value:
        raise TooDeep
    if "n" in value:
        return ShownNode(value["n"], value.get("l") or [], ((k, v) for k, v in _pairs(value.get("p"))))
    if "r" in value:
        return ShownRelationship(
            value["r"], str(value.get("t")), value.get("s"), value.get("e"), _pairs(value.get("p"))
        )
    items = [(key, rebuild(item, tag)) for key, item in _pairs(value.get("i"))]
    kind = value.get("c")
    if kind == "map":
        return {str(key): item for key, item in items}
    if kind == "path":
        values = [item for _, item in items]
        # Relationships, shown or the driver's own, are those with ends.
        return ShownPath(
            [v for v in values if not hasattr(v, "start_node")], [v for v in values if hasattr(v, "start_node")]
        )
    return [item for _, item in items]


def rebuild_row(values: Iterable[Any], tag: str | None) -> list[Any]:
    """One Bolt record's values, rebuilt (unchanged when the job has no tag)."""
    return [rebuild(v, tag) for v in values] if tag else list(values)


# ---- the Query API's typed JSON --------------------------------------------------------------


def _typed_plain(value: Any) -> Any:
    """A typed scalar or list of scalars (an id, a label list) as plain JSON."""
    if isinstance(value, dict) and "$type" in value:
        inner = value.get("_value")
        if value["$type"] == "List":
            return [_typed_plain(v) for v in inner or []]
        return None if value["$type"] == "Null" else inner
    return value


def _typed_fields(value: dict[str, Any], tag: str) -> dict[str, Any] | None:
    """The fields of a marked typed Map, or None when ``value`` is not one."""
    if not isinstance(value, dict) or value.get("$type") != "Map":
        return None
    fields = value.get("_value")
    if not isinstance(fields, dict) or _typed_plain(fields.get(MARK)) != tag:
        return None
    return fields


def _typed_pairs(items: Any) -> list[tuple[Any, Any]]:
    pairs = []
    for pair in _typed_plain_list(items):
        inner = pair.get("_value") if isinstance(pair, dict) and pair.get("$type") == "List" else None
        if isinstance(inner, list) and len(inner) == 2:
            pairs.append((_typed_plain(inner[0]), inner[1]))
    return pairs


def _typed_plain_list(value: Any) -> list[Any]:
    if isinstance(value, dict) and value.get("$type") == "List" and isinstance(value.get("_value"), list):
        return list(value["_value"])
    return []


def rebuild_typed(value: Any, tag: str) -> Any:
    """A Query API value with every marked map turned back into Neo4j's typed JSON for the element."""
    fields = _typed_fields(value, tag)
    if fields is None:
        return value
    if TOO_DEEP in fields:
        raise TooDeep
    if "n" in fields:
        return {"$type": "Node", "_value": {
            "_element_id": _typed_plain(fields["n"]), "_labels": _typed_plain(fields.get("l")) or [],
            "_properties": dict(_typed_pairs(fields.get("p"))),
        }}  # fmt: skip
    if "r" in fields:
        return {"$type": "Relationship", "_value": {
            "_element_id": _typed_plain(fields["r"]), "_type": _typed_plain(fields.get("t")),
            "_start_node_element_id": _typed_plain(fields.get("s")),
            "_end_node_element_id": _typed_plain(fields.get("e")),
            "_properties": dict(_typed_pairs(fields.get("p"))),
        }}  # fmt: skip
    items = [(key, rebuild_typed(item, tag)) for key, item in _typed_pairs(fields.get("i"))]
    kind = _typed_plain(fields.get("c"))
    if kind == "map":
        return {"$type": "Map", "_value": {str(key): item for key, item in items}}
    if kind == "path":
        return {"$type": "Path", "_value": [item for _, item in items]}
    return {"$type": "List", "_value": [item for _, item in items]}


def rebuild_typed_row(values: Iterable[Any], tag: str | None) -> list[Any]:
    """One Query API row's values, rebuilt (unchanged when the job has no tag)."""
    return [rebuild_typed(v, tag) for v in values] if tag else list(values)


def tag_of(params: dict[str, Any]) -> str | None:
    """The job's tag, when its query was wrapped."""
    tag = params.get(TAG_PARAMETER)
    return tag if isinstance(tag, str) and tag else None
