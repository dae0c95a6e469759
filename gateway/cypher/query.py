"""One parsed query: its text, its tokens and its statements, with the helpers every pass uses.

``parse(text, max_chars=…, max_depth=…)`` checks the size before lexing and the bracket depth
before parsing, parses in linear time, and never lets a ``RecursionError``
escape: every failure is a :class:`~gateway.cypher.errors.CypherSyntaxError`
(:class:`~gateway.cypher.errors.CypherTooLarge`, :class:`~gateway.cypher.errors.CypherTooDeep`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from gateway.cypher import ast
from gateway.cypher.errors import CypherTooLarge
from gateway.cypher.parser import Parser
from gateway.cypher.tokens import Token, tokenize


@dataclass
class ParsedQuery:
    """A parsed query: the original ``text``, its ``tokens`` and its ``statements``.

    AST access (``gateway.cypher.ast``): ``parsed.statement.body`` is a
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
    tokens: list[Token]
    statements: list[ast.Statement]

    @property
    def statement(self) -> ast.Statement:
        return self.statements[0]

    @property
    def language(self) -> ast.CypherVersion:
        """The Cypher version the (first) statement was read as: the one it must run under."""
        return self.statement.language

    def walk(self) -> Iterator[ast.Node]:
        return ast.walk(self.statements)

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


_UNICODE_SPACE = frozenset(
    "\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def ascii_whitespace(text: str, tokens: list[Token]) -> str:
    """``text`` with every Unicode space between tokens (not in a comment) made an ASCII space.

    Neo4j's parser reads them as whitespace, and so does the lexer; Neo4j 2026.x's pre-parser,
    which reads the ``CYPHER …`` options the runner's version prefix starts, does not:
    ``CYPHER 5 MATCH<U+00A0>p = (n) …`` is refused as the option ``MATCH p``. One character for
    one keeps every offset of the tree.
    """
    if text.isascii():
        return text
    chars = list(text)
    previous = 0
    for token in tokens:
        i = previous
        while i < token.start:
            if text.startswith("//", i):
                i = min((j for j in (text.find("\n", i), text.find("\r", i)) if j != -1), default=token.start)
            elif text.startswith("/*", i):
                i = text.find("*/", i) + 2
            else:
                if text[i] in _UNICODE_SPACE:
                    chars[i] = " "
                i += 1
        previous = token.end
    return "".join(chars)


def parse(text: str, *, max_chars: int, max_depth: int, language: ast.CypherVersion = "5") -> ParsedQuery:
    """Parse ``text`` of at most ``max_chars`` characters, its brackets nested at most ``max_depth`` deep.

    ``language`` is the Cypher version a statement without a ``CYPHER 5`` / ``CYPHER 25`` prefix is read as.
    """
    if len(text) > max_chars:
        raise CypherTooLarge(f"the query is {len(text)} characters long; the limit is {max_chars}", text, max_chars)
    tokens = tokenize(text, max_depth=max_depth)
    text = ascii_whitespace(text, tokens)
    parser = Parser(text, tokens, max_depth=max_depth, language=language)
    try:
        statements = parser.parse_statements()
    except RecursionError:
        raise parser.too_deep() from None
    return ParsedQuery(text, tokens, statements)
