"""Parse once, cheaply bounded, and collect the facts every rule needs.

``parse(query, limits=…)`` checks the size before lexing and the bracket depth
before parsing, parses in linear time, and never lets a ``RecursionError``
escape. Failures raise :class:`GuardParseError` carrying the rule id
(``input.too_large``, ``input.too_deep`` or ``parse.failed``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from gateway.guard import ast
from gateway.guard.facts import Facts, Hops, collect_facts
from gateway.guard.lexer import LexError, tokenize
from gateway.guard.parser import ParseError, Parser, TooDeep
from gateway.policy import Limits

# Bracket-free nesting (NOT NOT …, - - …, CASE inside CASE) is counted by the
# parser; this slack above the bracket limit keeps ordinary queries legal while
# bounding the Python stack (~15 frames per level) far below the recursion limit.
_EXTRA_LOGICAL_DEPTH = 8


class GuardParseError(Exception):
    """The query cannot be parsed within the limits; ``rule`` is the rejection id."""

    def __init__(self, rule: str, reason: str, offset: int | None = None) -> None:
        super().__init__(f"{rule}: {reason}")
        self.rule = rule
        self.reason = reason
        self.offset = offset


@dataclass
class ParsedQuery:
    """A parsed query: the original ``text``, its ``statements`` and the collected ``facts``.

    AST access (``gateway.guard.ast``): ``parsed.statement.body`` is a
    ``SingleQuery`` (``.clauses``) or a ``Union`` (``.queries``). Clauses are
    ``Match`` (``.patterns: list[PatternPart]``, ``.where``), ``With``/``Return``
    (``.projection``), ``Unwind``, ``CallSubquery`` (``.body``), ``CallProcedure``,
    ``Finish``. A ``PatternPart.path.elements`` is a list of ``NodePattern``,
    ``RelPattern`` and ``QuantifiedPath`` (which holds a nested ``Path``). Patterns
    also occur inside expressions: ``PatternComprehension``, ``PatternPredicate``,
    ``SubqueryExpr`` (EXISTS/COUNT/COLLECT: ``.body`` or ``.patterns``).

    ``parsed.walk()`` yields every node anywhere (pre-order, iterative);
    ``parsed.find_all(ast.Match, ast.NodePattern)`` filters by type. Every node
    has ``start``/``end`` offsets into ``text``; ``parsed.source(node)`` is its
    exact text and ``parsed.rewrite([(start, end, replacement), …])`` returns new
    Cypher text with those spans replaced (use ``start == end`` to insert).
    """

    text: str
    statements: list[ast.Statement]
    facts: Facts
    max_bracket_depth: int

    @property
    def statement(self) -> ast.Statement:
        return self.statements[0]

    def walk(self) -> Iterator[ast.Node]:
        for statement in self.statements:
            yield from statement.walk()

    def find_all(self, *types: type[ast.N]) -> Iterator[ast.N]:
        for node in self.walk():
            if isinstance(node, types):
                yield node

    def source(self, node: ast.Node) -> str:
        return self.text[node.start : node.end]

    def rewrite(self, edits: list[tuple[int, int, str]]) -> str:
        """Apply non-overlapping span replacements to the original text."""
        out: list[str] = []
        cursor = 0
        for start, end, replacement in sorted(edits, key=lambda e: (e[0], e[1])):
            if start < cursor or end < start:
                raise ValueError(f"overlapping or inverted edit at {start}..{end}")
            out.append(self.text[cursor:start])
            out.append(replacement)
            cursor = end
        out.append(self.text[cursor:])
        return "".join(out)


def parse(query: str, *, limits: Limits) -> ParsedQuery:
    if len(query) > limits.max_query_chars:
        raise GuardParseError(
            "input.too_large",
            f"the query is {len(query)} characters long; the limit is {limits.max_query_chars}",
        )
    try:
        tokens, depth = tokenize(query)
    except LexError as exc:
        raise GuardParseError("parse.failed", f"the query cannot be read: {exc.message}", exc.offset) from None
    if depth > limits.max_nesting_depth:
        raise GuardParseError(
            "input.too_deep",
            f"brackets nest {depth} levels deep; the limit is {limits.max_nesting_depth}",
        )
    parser = Parser(query, tokens, max_depth=limits.max_nesting_depth + _EXTRA_LOGICAL_DEPTH)
    try:
        statements = parser.parse_statements()
    except ParseError as exc:
        raise GuardParseError(
            "parse.failed", f"the query is not Cypher this gateway can parse: {exc.message}", exc.offset
        ) from None
    except (TooDeep, RecursionError):
        raise GuardParseError(
            "input.too_deep",
            f"expressions nest deeper than the limit of {limits.max_nesting_depth} levels",
        ) from None
    return ParsedQuery(query, statements, parser.facts, depth)

__all__ = ["Facts", "GuardParseError", "Hops", "ParsedQuery", "collect_facts", "parse"]
