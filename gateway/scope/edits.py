"""Text insertions at AST offsets, merged so nested wrappers nest correctly.

The scope passes *insert* text (a generated path variable, an opening
parenthesis, an ``AND <predicate>``); nothing of the agent's query is removed,
with one exception: a ``*`` projection that would carry generated variables is
replaced by the variables it stands for (``columns.py``).
Two insertions can land on one offset (``WHERE (a)-->(b)`` gets both the WHERE
wrapper and the pattern-predicate wrapper at the same place), so each records
the span of the node it wraps: at one offset, closers come before openers,
openers of outer nodes before inner ones, and closers of inner nodes before
outer ones.

An insertion never fuses with its neighbours into one token: where its first or
last character and the agent's adjacent character are both word characters
(``… AND-1 < n.x`` gets ``CASE WHEN`` right after ``AND``), a space separates them.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

from gateway.cypher import ParsedQuery, ast


@dataclass(frozen=True)
class Insert:
    offset: int
    text: str
    closing: bool
    span: int  # length of the wrapped node: larger = outer
    seq: int

    def key(self) -> tuple[int, int, int, int]:
        if self.closing:
            # Passes register outer nodes before inner ones, so among equal spans the
            # later closer belongs to the inner node and must come first.
            return (self.offset, 0, self.span, -self.seq)
        return (self.offset, 1, -self.span, self.seq)


class Edits:
    def __init__(self) -> None:
        self._inserts: list[Insert] = []
        self._replacements: list[tuple[int, int, str]] = []

    def open(self, node: ast.Node, text: str, offset: int | None = None) -> None:
        """Insert ``text`` before ``node`` (or at ``offset``), as an opener belonging to ``node``."""
        at = node.start if offset is None else offset
        self._inserts.append(Insert(at, text, False, node.end - node.start, len(self._inserts)))

    def close(self, node: ast.Node, text: str, offset: int | None = None) -> None:
        """Insert ``text`` after ``node`` (or at ``offset``), as a closer belonging to ``node``."""
        at = node.end if offset is None else offset
        self._inserts.append(Insert(at, text, True, node.end - node.start, len(self._inserts)))

    def replace(self, start: int, end: int, text: str) -> None:
        """Replace ``start:end``, one token of the agent's (no insertion can fall inside it)."""
        self._replacements.append((start, end, text))

    def __len__(self) -> int:
        return len(self._inserts) + len(self._replacements)

    def inserted_chars(self) -> int:
        """How much longer than the original the rewritten text will be (known before it is built)."""
        replaced = sum(len(text) - (end - start) for start, end, text in self._replacements)
        return sum(len(item.text) for item in self._inserts) + replaced

    def apply(self, parsed: ParsedQuery) -> str:
        merged: dict[int, list[str]] = {}
        for item in sorted(self._inserts, key=Insert.key):
            merged.setdefault(item.offset, []).append(item.text)
        text = parsed.text
        # An insertion at a replaced token's start sorts before it, one at its end after it.
        spans = [(at, at, _separated(text, at, at, "".join(texts))) for at, texts in merged.items()]
        replaced = [(start, end, _separated(text, start, end, new)) for start, end, new in self._replacements]
        return parsed.rewrite(spans + replaced)


def token_at(parsed: ParsedQuery, offset: int, value: str) -> int:
    """The offset of the first token ``value`` at or after ``offset`` (the parser has seen it there)."""
    tokens = parsed.tokens
    index = bisect_left(tokens, offset, key=lambda token: token.start)
    for token in tokens[index:]:
        if token.value == value:
            return token.start
    raise ValueError(f"no {value!r} after offset {offset}")  # pragma: no cover - the parser saw it


def _word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _separated(text: str, start: int, end: int, insert: str) -> str:
    """``insert`` (for ``text[start:end]``) with a space at either end where it would run into the agent's text."""
    if not insert:
        return insert
    if start > 0 and _word(text[start - 1]) and _word(insert[0]):
        insert = " " + insert
    if end < len(text) and _word(text[end]) and _word(insert[-1]):
        insert += " "
    return insert
