"""Text insertions at AST offsets, merged so nested wrappers nest correctly.

Every scope pass only *inserts* text (a generated path variable, an opening
parenthesis, an ``AND <predicate>``); nothing of the agent's query is removed.
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

    def open(self, node: ast.Node, text: str, offset: int | None = None) -> None:
        """Insert ``text`` before ``node`` (or at ``offset``), as an opener belonging to ``node``."""
        at = node.start if offset is None else offset
        self._inserts.append(Insert(at, text, False, node.end - node.start, len(self._inserts)))

    def close(self, node: ast.Node, text: str, offset: int | None = None) -> None:
        """Insert ``text`` after ``node`` (or at ``offset``), as a closer belonging to ``node``."""
        at = node.end if offset is None else offset
        self._inserts.append(Insert(at, text, True, node.end - node.start, len(self._inserts)))

    def __len__(self) -> int:
        return len(self._inserts)

    def apply(self, parsed: ParsedQuery) -> str:
        merged: dict[int, list[str]] = {}
        for item in sorted(self._inserts, key=Insert.key):
            merged.setdefault(item.offset, []).append(item.text)
        text = parsed.text
        return parsed.rewrite([(at, at, _separated(text, at, "".join(texts))) for at, texts in merged.items()])


def _word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _separated(text: str, at: int, insert: str) -> str:
    """``insert`` with a space at either end where it would otherwise run into the agent's text."""
    if not insert:
        return insert
    if at > 0 and _word(text[at - 1]) and _word(insert[0]):
        insert = " " + insert
    if at < len(text) and _word(text[at]) and _word(insert[-1]):
        insert += " "
    return insert
