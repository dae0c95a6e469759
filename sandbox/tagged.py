"""Walking the tagged JSON of ``sandbox/wire.py``: every node and relationship in an answer.

Standard library only: the result check and the removal of hidden properties both read it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

TYPE_KEY = "$type"


def elements(value: Any) -> Iterator[dict[str, Any]]:
    """Every node and relationship in ``value``, however deeply nested (not inside one another)."""
    # Iterative: a deeply nested list from the database cannot overflow the stack.
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            kind = item.get(TYPE_KEY)
            if kind in ("node", "relationship"):
                yield item
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
