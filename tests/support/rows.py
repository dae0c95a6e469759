"""What a serialized answer (the sandbox's tagged JSON rows) holds."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from pydantic import BaseModel


class Scoped(BaseModel):
    """A query as it reached Neo4j and its serialized answer."""

    cypher: str
    columns: list[str]
    rows: list[list[Any]]


# run_scoped(cypher, layers, *, tool=, params=, rewrite=, use_policy=) -> Scoped
RunScoped = Callable[..., Scoped]


def ids(rows: Iterable[Any]) -> set[str]:
    """Every `id` property of every element anywhere in serialized rows, plus every string value."""
    found: set[str] = set()
    stack = list(rows)
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            if item.get("$type") in ("node", "relationship"):
                props = item.get("properties") or {}
                if isinstance(props.get("id"), str):
                    found.add(props["id"])
                stack.extend(props.values())
            else:
                stack.extend(item.get("nodes") or [])
                stack.extend(item.get("relationships") or [])
                stack.extend(v for k, v in item.items() if k not in ("nodes", "relationships", "$type"))
        elif isinstance(item, str):
            found.add(item)
    return found


def leaked_secrets(rows: Iterable[Any], marker: str) -> list[str]:
    return sorted(s for s in ids(rows) if marker in s)
