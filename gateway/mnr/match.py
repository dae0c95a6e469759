"""Search a tool result for what a selector names, in every nested value.

Rows are JSON as the sandbox sends them (sandbox/wire.py): graph values are
tagged objects (``$type`` node / relationship / path), everything else is
plain JSON. The walk visits every cell, list item and map value; a node or
relationship is matched as an element, and a relationship also counts as a
hit for the elements its endpoints name (a visible edge must not point at a
hidden node). A ``text`` selector also looks inside every returned node's and
relationship's property map (bare, in a path, in a list or a map, and in the
property's own lists), so a property the policy meant to hide is caught
however the query returned it. Answers carry element tokens local to the
answer, not Neo4j's ids, so an edge's endpoints are known from the fixture
itself (the keys of the relationships at each element); a Neo4j id found
anyway still counts. Plain strings are compared to keys, element ids and
fingerprints (every string value only that fixture element holds, however
short), so ``RETURN f.text``, ``RETURN e.name`` giving "Ada" or ``RETURN
elementId(f)`` (with the rewrite off) leaks as surely as ``RETURN f``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from gateway.mnr.cases import Selector

TYPE_KEY = "$type"
# A fingerprint found inside a longer string (``'x' + f.text``) counts only from
# this length on, so short common words never make a false leak.
MIN_SUBSTRING_FINGERPRINT = 12


@dataclass(frozen=True)
class FixtureElement:
    """One fixture element a ``uid`` selector names, as the harness read it after seeding."""

    key: str
    element_ids: frozenset[str]
    # String property values no other fixture element holds, of any length (the key is always one).
    fingerprints: frozenset[str] = field(default_factory=frozenset)
    # Keys of the fixture relationships that start or end at this element.
    relationships: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True)
class Hit:
    """Where a selector was found: a row index and a readable path to the value."""

    row: int
    where: str
    what: str

    def describe(self) -> str:
        return f"row {self.row} {self.where}: {self.what}"


def _walk(value: Any, where: str, *, in_element: bool = False) -> Iterator[tuple[str, Any, bool]]:
    """Every value inside ``value``: ``(where, value, in_element)``, ``in_element`` for values
    found in a node's or relationship's property map (at any depth of its lists)."""
    yield where, value, in_element
    if isinstance(value, dict):
        kind = value.get(TYPE_KEY)
        if kind in ("node", "relationship"):
            # The element is matched whole; its property values are walked too, for the
            # selectors that look inside elements (``text``).
            for key, item in (value.get("properties") or {}).items():
                yield from _walk(item, f"{where}.properties.{key}", in_element=True)
            return
        if kind == "path":
            for i, node in enumerate(value.get("nodes") or []):
                yield from _walk(node, f"{where}.nodes[{i}]", in_element=in_element)
            for i, rel in enumerate(value.get("relationships") or []):
                yield from _walk(rel, f"{where}.relationships[{i}]", in_element=in_element)
            return
        for key, item in value.items():
            yield from _walk(item, f"{where}.{key}", in_element=in_element)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _walk(item, f"{where}[{i}]", in_element=in_element)


def _element_label(value: dict[str, Any]) -> str:
    props = value.get("properties") or {}
    name = props.get("uid", value.get("elementId"))
    if value.get(TYPE_KEY) == "node":
        return f"node :{':'.join(value.get('labels') or [])} {name}"
    return f"relationship [:{value.get('type')}] {name}"


def _scalar_is(value: Any, wanted: Any) -> bool:
    # JSON true == 1 in Python; a count of 1 is not the boolean true.
    return (type(value) is type(wanted) and value == wanted) or (
        isinstance(value, int | float)
        and isinstance(wanted, int | float)
        and not isinstance(value, bool)
        and not isinstance(wanted, bool)
        and value == wanted
    )


class Matcher:
    """Finds selectors in rows. ``elements`` resolves ``uid`` selectors (from the seeded fixture)."""

    def __init__(self, key_property: str, elements: dict[str, FixtureElement]) -> None:
        self.key_property = key_property
        self.elements = elements

    def find(self, selector: Selector, columns: list[str], rows: list[list[Any]]) -> list[Hit]:
        hits: list[Hit] = []
        for r, row in enumerate(rows):
            for c, cell in enumerate(row):
                column = columns[c] if c < len(columns) else f"#{c}"
                for where, value, in_element in _walk(cell, column):
                    # Inside an element only ``text`` looks: a ``value`` or ``uid`` selector names what
                    # a query projects or returns, and an element's own properties are matched with it.
                    if in_element and selector.text is None:
                        continue
                    what = self._hit(selector, value)
                    if what is not None:
                        hits.append(Hit(row=r, where=where, what=what))
        return hits

    def _hit(self, selector: Selector, value: Any) -> str | None:
        if selector.uid is not None:
            return self._uid_hit(self.elements[selector.uid], value)
        if selector.value is not None:
            if not isinstance(value, dict | list) and _scalar_is(value, selector.value):
                return f"value {value!r}"
            return None
        if selector.text is not None:
            if isinstance(value, str) and selector.text in value:
                return f"string {value!r}"
            return None
        return self._element_hit(selector, value)

    def _uid_hit(self, element: FixtureElement, value: Any) -> str | None:
        if isinstance(value, dict):
            kind = value.get(TYPE_KEY)
            if kind not in ("node", "relationship"):
                return None
            props = value.get("properties") or {}
            if value.get("elementId") in element.element_ids or props.get(self.key_property) == element.key:
                return _element_label(value)
            if kind == "relationship":
                for end in ("startElementId", "endElementId"):
                    if value.get(end) in element.element_ids:
                        return f"{_element_label(value)} whose {end} is {element.key}"
                if props.get(self.key_property) in element.relationships:
                    return f"{_element_label(value)} whose endpoint is {element.key}"
            return None
        if isinstance(value, str):
            if value == element.key or value in element.element_ids:
                return f"string {value!r} (its key or element id)"
            if value in element.fingerprints:
                return f"string {value!r} (a property only {element.key} holds)"
            for fingerprint in element.fingerprints:
                if len(fingerprint) >= MIN_SUBSTRING_FINGERPRINT and fingerprint in value:
                    return f"string {value!r} containing {fingerprint!r} (a property only {element.key} holds)"
        return None

    def _element_hit(self, selector: Selector, value: Any) -> str | None:
        if not isinstance(value, dict):
            return None
        kind = value.get(TYPE_KEY)
        if selector.labels is not None:
            if kind != "node" or not set(selector.labels) <= set(value.get("labels") or []):
                return None
        elif selector.type is not None:
            if kind != "relationship" or value.get("type") != selector.type:
                return None
        elif kind not in ("node", "relationship"):
            return None
        props = value.get("properties") or {}
        for key, wanted in (selector.props or {}).items():
            if key not in props or props[key] != wanted:
                return None
        return _element_label(value)
