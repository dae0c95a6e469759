"""Layer 2 of scope: check every element in a serialized result against the caller's scope.

Runs inside the sandbox container after serialization (values are the tagged
JSON of ``sandbox/wire.py``), so it imports only the standard library, pydantic
and the wire models. When the rewrite (layer 1) works, this finds nothing; it is
the net under it.

A row that holds any node, relationship or path outside the scope is dropped as
a whole, not just the element: its other columns may be derived from the
hidden element (``RETURN n, n.secret``). The rule for one element is the
rewrite's rule: an empty ``layers`` list is global; a list of strings with one
in the scope is visible; a missing property is hidden (global only when the
policy says ``scope.untagged: global``); anything else (a string, a number, a
list holding a non-string or a null) is malformed and hidden. A relationship of
a hidden type is hidden.
A bare relationship's endpoints are not in the serialized value, so this layer
checks them only when they appear (in a path or another column); layer 1 always
checks them.
"""

from __future__ import annotations

from typing import Any

from sandbox.wire import ScopeCheck

_TYPE = "$type"


def element_visible(properties: Any, scope: ScopeCheck, allowed: frozenset[str]) -> bool:
    if not isinstance(properties, dict):
        return False
    layers = properties.get(scope.layers_property)
    if layers is None:
        return scope.untagged == "global"
    if not isinstance(layers, list) or not all(isinstance(layer, str) for layer in layers):
        return False
    return len(layers) == 0 or any(layer in allowed for layer in layers)


def _value_visible(value: Any, scope: ScopeCheck, allowed: frozenset[str], hidden_types: frozenset[str]) -> bool:
    # Iterative: a deeply nested list from the database cannot overflow the stack.
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            kind = item.get(_TYPE)
            if kind == "node":
                if not element_visible(item.get("properties"), scope, allowed):
                    return False
            elif kind == "relationship":
                if item.get("type") in hidden_types or not element_visible(item.get("properties"), scope, allowed):
                    return False
            elif kind == "path":
                stack.extend(item.get("nodes") or [])
                stack.extend(item.get("relationships") or [])
            elif kind == "map":
                # The serializer's wrapper for a user map that has its own "$type" key:
                # its entries are plain values, never a tag.
                inner = item.get("value")
                stack.extend(inner.values() if isinstance(inner, dict) else [inner])
            else:
                # Plain maps and any other tag: look inside anyway, never skip unseen.
                stack.extend(item.values())
    return True


def filter_rows(columns: list[str], rows: list[list[Any]], scope: ScopeCheck) -> tuple[list[list[Any]], int]:
    """The rows whose every element is visible, and how many rows were dropped."""
    allowed = frozenset(scope.layers)
    hidden_types = frozenset(scope.hidden_relationship_types)
    kept = [row for row in rows if _value_visible(row, scope, allowed, hidden_types)]
    return kept, len(rows) - len(kept)
