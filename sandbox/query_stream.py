"""The Query API's answer read as a stream: rows handed on one at a time, hidden values skipped.

Neo4j's answer is one JSON document (``{"data": {"fields": …, "values": [[…], …]}, …}``). It is
parsed event by event (``ijson``): each row of ``data.values`` is built and handed to the caller as
soon as it is complete, so reading stops as soon as the row or byte limit is reached, and the rest
of the document (fields, notifications, errors, an EXPLAIN's plan) is built beside it.

Inside a row, a node's or relationship's property (typed JSON: ``{"$type": "Node", "_value":
{"_labels": […], "_properties": {…}}}``) that the policy hides, and the result check does not read,
is skipped as it streams: never built, never counted. ``cap`` bounds the bytes kept (scalars'
lengths), not the bytes read, so a hidden value's size cannot cut the answer. A property seen
before its element's labels or type is kept (and withheld later by ``withhold.py``): Neo4j writes
``_labels`` / ``_type`` first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import ijson

from sandbox.withhold import Withholding, owners_of

ROWS = "data.values"
_ELEMENTS = ("Node", "Relationship")


class TooLarge(Exception):
    """More than ``cap`` bytes would be kept."""


class Stop(Exception):
    """The caller took its last row: the rest is not read."""


class _Chunks:
    """A file-like view of an iterator of byte chunks, for ijson."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._buffer = b""

    def read(self, size: int = -1) -> bytes:
        while size < 0 or len(self._buffer) < size:
            chunk = next(self._chunks, None)
            if chunk is None:
                break
            self._buffer += chunk
        if size < 0:
            out, self._buffer = self._buffer, b""
        else:
            out, self._buffer = self._buffer[:size], self._buffer[size:]
        return out


class _Builder:
    """Builds one JSON value from parse events, skipping hidden element properties."""

    def __init__(self, withholding: Withholding | None, cap: int, kept: list[int]) -> None:
        self.withholding = withholding
        self.cap = cap
        self.kept = kept  # shared: the bytes kept across the whole document
        self.stack: list[Any] = []
        self.keys: list[str | None] = []
        self.value: Any = None
        self.skipping = 0  # depth inside a skipped value (0: not skipping)

    def _count(self, size: int) -> None:
        self.kept[0] += size
        if self.kept[0] > self.cap:
            raise TooLarge

    def _hidden(self, key: str) -> bool:
        """Whether the property ``key`` about to start belongs to an element and is hidden."""
        if self.withholding is None or len(self.stack) < 3 or self.keys[-2] != "_properties":
            return False
        element = self.stack[-2]
        typed = self.stack[-3] if len(self.stack) >= 3 else None
        if not isinstance(element, dict) or not isinstance(typed, dict) or typed.get("$type") not in _ELEMENTS:
            return False
        # The element's labels or type come before its properties in Neo4j's answer; should they
        # not, nothing is skipped here and the withholding after the read still removes the key.
        if "_labels" not in element and "_type" not in element:
            return False
        return self.withholding.left_behind(owners_of(typed), key)

    def _put(self, value: Any) -> None:
        if not self.stack:
            self.value = value
            return
        top = self.stack[-1]
        if isinstance(top, list):
            top.append(value)
        else:
            top[self.keys[-1]] = value

    def event(self, event: str, value: Any) -> bool:
        """Feed one event; True once the value is complete."""
        if self.skipping:
            if event in ("start_map", "start_array"):
                self.skipping += 1
            elif event in ("end_map", "end_array"):
                self.skipping -= 1
            elif event == "map_key":
                return False
            if self.skipping == 1 and event not in ("start_map", "start_array"):
                self.skipping = 0  # the skipped value ended (a scalar, or its closing bracket)
            return False
        if event == "map_key":
            if self._hidden(value):
                self.skipping = 1
                return False
            self.keys[-1] = value
            self._count(len(value) + 3)
            return False
        if event in ("start_map", "start_array"):
            container: Any = {} if event == "start_map" else []
            self._put(container)
            self.stack.append(container)
            self.keys.append(None)
            self._count(2)
            return False
        if event in ("end_map", "end_array"):
            self.stack.pop()
            self.keys.pop()
            return not self.stack
        self._count(len(value) + 2 if isinstance(value, str) else 8)
        self._put(value)
        return not self.stack


def read_answer(
    chunks: Iterator[bytes], cap: int, withholding: Withholding | None, on_row: Callable[[list[Any]], bool]
) -> dict[str, Any]:
    """The document without its rows; each row goes to ``on_row`` (False: stop reading).

    Raises ``TooLarge`` when more than ``cap`` bytes would be kept.
    """
    kept = [0]
    body = _Builder(None, cap, kept)
    row: _Builder | None = None
    try:
        for prefix, event, value in ijson.parse(_Chunks(chunks), use_float=True):
            if row is not None:
                if row.event(event, value):
                    if not on_row(row.value):
                        raise Stop
                    row = None
                continue
            if prefix == ROWS and event in ("start_array", "end_array"):
                continue
            if prefix == ROWS + ".item" and event == "start_array":
                row = _Builder(withholding, cap, kept)
                row.event(event, value)
                continue
            body.event(event, value)
    except Stop:
        pass
    return body.value if isinstance(body.value, dict) else {}
