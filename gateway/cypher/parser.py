"""A recursive-descent parser for the read subset of Neo4j Cypher 5 and Cypher 25.

It accepts what an agent's read query needs (MATCH, OPTIONAL MATCH, WITH,
RETURN, UNWIND, UNION, CALL subqueries, procedure calls, EXISTS/COUNT/COLLECT,
pattern and list comprehensions, map projections, quantified path patterns,
shortest paths, label expressions, type predicates, standalone ORDER BY / SKIP /
LIMIT, FINISH) and produces ``gateway.cypher.ast`` nodes.

The statement's ``CYPHER 5`` / ``CYPHER 25`` prefix, else the caller's default
language, decides how the body is read. Cypher 25 adds LET, FILTER, FOR, NEXT,
conditional WHEN … THEN … ELSE queries, match modes, path modes, IS LABELED and
label checks at comparison precedence (``[] + n:A`` is ``([] + n):A`` there),
dynamic labels in expressions, ``WHEN IS :: T`` and ``WHEN IN …`` in a simple
CASE, allReduce and the keyword arguments of the vector functions. Cypher 25
that Neo4j reads but this parser refuses (SEARCH, GROUP BY, a query in braces,
a parameter as a path count) raises :class:`CypherUnsupported` naming it. Write clauses, admin commands, ``USE`` and
``LOAD CSV`` are recognised at clause position and recorded as ``Forbidden``
nodes (their tokens are skipped: the query is refused anyway). Anything else
it does not understand raises :class:`CypherSyntaxError`: the guard fails closed.

Linear time: no backtracking; a parenthesised group is classified (pattern or
expression) by looking at the token after its matching bracket, which the
lexer has already paired. Every construct that can nest inside itself is parsed
inside ``with self.nested():``, which bounds the depth (:class:`CypherTooDeep`)
long before Python's own recursion limit.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Final, TypeVar

from gateway.cypher import ast as a
from gateway.cypher.errors import CypherSyntaxError, CypherTooDeep, CypherUnsupported
from gateway.cypher.tokens import Token, TokenKind, string_value

# Bracket-free nesting (NOT NOT …, - - …, CASE inside CASE) is counted by the
# parser; this slack above the bracket limit keeps ordinary queries legal while
# bounding the Python stack (~15 frames per level) far below the recursion limit.
EXTRA_LOGICAL_DEPTH: Final = 8

# Token kinds as module constants: looking up an Enum member costs more than comparing it.
_ID, _QID, _STR, _NUM, _PARAM, _OP, _EOF = (
    TokenKind.ID, TokenKind.QID, TokenKind.STR, TokenKind.NUM, TokenKind.PARAM, TokenKind.OP, TokenKind.EOF,
)  # fmt: skip
_NAMES = (_ID, _QID)
_T = TypeVar("_T")

WRITE_KEYWORDS = frozenset({"CREATE", "INSERT", "MERGE", "SET", "REMOVE", "DELETE", "DETACH", "NODETACH", "FOREACH"})
ADMIN_KEYWORDS = frozenset(
    {"DROP", "SHOW", "GRANT", "DENY", "REVOKE", "ALTER", "START", "STOP", "RENAME", "ENABLE",
     "DEALLOCATE", "REALLOCATE", "TERMINATE", "DRYRUN"}
)  # fmt: skip
# CREATE followed by one of these is a schema/admin command, not a write clause.
_CREATE_ADMIN = frozenset(
    {"INDEX", "CONSTRAINT", "USER", "ROLE", "DATABASE", "COMPOSITE", "ALIAS", "OR", "RANGE", "TEXT",
     "POINT", "LOOKUP", "FULLTEXT", "VECTOR", "BTREE", "SERVER"}
)  # fmt: skip
READ_CLAUSE_KEYWORDS = frozenset(
    {"MATCH", "OPTIONAL", "WITH", "RETURN", "UNWIND", "CALL", "FINISH", "USE", "LOAD", "ORDER", "SKIP", "OFFSET",
     "LIMIT"}
)  # fmt: skip
CLAUSE_KEYWORDS = READ_CLAUSE_KEYWORDS | WRITE_KEYWORDS | ADMIN_KEYWORDS
# Clauses only Cypher 25 has; under Cypher 5 they are names, and the error says which language reads them.
CYPHER25_CLAUSE_KEYWORDS = frozenset({"LET", "FILTER", "FOR"})
_CYPHER25_ONLY = CYPHER25_CLAUSE_KEYWORDS | {"NEXT", "WHEN"}
_MATCH_MODES = {"REPEATABLE": ("ELEMENT", "ELEMENTS"), "DIFFERENT": ("RELATIONSHIP", "RELATIONSHIPS")}
_PATH_MODES = ("WALK", "TRAIL", "ACYCLIC")
_NORMAL_FORMS = ("NFC", "NFD", "NFKC", "NFKD")
# Words after which a following name cannot be the start of an expression (an optional ALL before it is a name).
_NOT_EXPRESSION_START = frozenset(
    {"AS", "ORDER", "SKIP", "OFFSET", "LIMIT", "WHERE", "UNION", "AND", "OR", "XOR", "IS", "IN", "CONTAINS",
     "STARTS", "ENDS", "FROM", "THEN", "ELSE", "END", "NEXT", "WHEN"}
)  # fmt: skip
# Cypher 25 functions whose last argument is a bare word: (arguments before it, what the word is).
_KEYWORD_ARGUMENT_FUNCTIONS = {
    "vector": (2, "a vector coordinate type"),
    "vector_distance": (2, "a distance metric"),
    "vector_norm": (1, "a distance metric"),
}
# Token text -> the tree's operator, for each precedence level of binary operators.
_OR: dict[str, a.BinaryOperator] = {"OR": "OR"}
_XOR: dict[str, a.BinaryOperator] = {"XOR": "XOR"}
_AND: dict[str, a.BinaryOperator] = {"AND": "AND"}
_COMPARISON: dict[str, a.BinaryOperator] = {"=": "=", "<>": "<>", "<": "<", ">": ">", "<=": "<=", ">=": ">="}
_ADDITIVE: dict[str, a.BinaryOperator] = {"+": "+", "-": "-", "||": "||"}
_MULTIPLICATIVE: dict[str, a.BinaryOperator] = {"*": "*", "/": "/", "%": "%"}
_POWER: dict[str, a.BinaryOperator] = {"^": "^"}
_STRING_MATCH: dict[str, a.BinaryOperator] = {"STARTS": "STARTS_WITH", "ENDS": "ENDS_WITH"}
_SIGN: dict[str, a.UnaryOperator] = {"-": "-", "+": "+"}
_SUBQUERY: dict[str, a.SubqueryKind] = {"EXISTS": "EXISTS", "COUNT": "COUNT", "COLLECT": "COLLECT"}
_PREFIX: dict[str, a.StatementPrefix] = {"EXPLAIN": "EXPLAIN", "PROFILE": "PROFILE"}
_QUANTIFIERS: dict[str, a.QuantifierKind] = {"ALL": "all", "ANY": "any", "NONE": "none", "SINGLE": "single"}
# Type names that are one word (Neo4j's typeName rule; the multi-word ones are read by parse_type_name).
_SIMPLE_TYPES = frozenset(
    {"NOTHING", "NULL", "BOOL", "BOOLEAN", "VARCHAR", "STRING", "INT", "INTEGER", "FLOAT", "DATE", "DURATION",
     "POINT", "NODE", "VERTEX", "RELATIONSHIP", "EDGE", "MAP", "PATH", "PATHS"}
)  # fmt: skip
_CYPHER25_SIMPLE_TYPES = frozenset({"UUID", "INTEGER64", "INT64", "FLOAT64"})
_VECTOR_COORDINATES = frozenset(
    {"INT", "INTEGER", "INTEGER64", "INTEGER32", "INTEGER16", "INTEGER8", "INT64", "INT32", "INT16", "INT8", "FLOAT",
     "FLOAT64", "FLOAT32"}
)  # fmt: skip


class _Nesting:
    """One level of nesting for the block it guards (one reused instance per parser)."""

    __slots__ = ("_parser",)

    def __init__(self, parser: Parser) -> None:
        self._parser = parser

    def __enter__(self) -> None:
        parser = self._parser
        parser.depth += 1
        if parser.depth > parser.max_depth + EXTRA_LOGICAL_DEPTH:
            raise parser.too_deep()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._parser.depth -= 1


class Parser:
    """Parse ``tokens`` (from :func:`~gateway.cypher.tokens.tokenize` over ``text``) into statements."""

    def __init__(self, text: str, tokens: list[Token], *, max_depth: int, language: a.CypherVersion = "5") -> None:
        self.text = text
        self.default_language: a.CypherVersion = language
        self.cypher25 = language == "25"  # set per statement from its prefix
        # Padding with EOF lets every lookahead index without a bounds check.
        eof = tokens[-1]
        self.toks = [*tokens, eof, eof, eof, eof]
        self.pos = 0
        self.depth = 0
        self.max_depth = max_depth
        self.no_label_pipe = False  # inside a comprehension's WHERE, "|" ends the predicate
        self._nesting = _Nesting(self)

    # ------------------------------------------------------------ token helpers

    def peek(self, k: int = 0) -> Token:
        return self.toks[self.pos + k]

    def at_kw(self, *words: str, k: int = 0) -> bool:
        t = self.toks[self.pos + k]
        return t.upper in words and t.kind is _ID

    def at_op(self, *ops: str, k: int = 0) -> bool:
        t = self.toks[self.pos + k]
        return t.kind is _OP and t.value in ops

    def at_name(self, k: int = 0) -> bool:
        return self.toks[self.pos + k].kind in _NAMES

    def advance(self) -> Token:
        t = self.toks[self.pos]
        if t.kind is not _EOF:
            self.pos += 1
        return t  # EOF is sticky

    def accept_kw(self, *words: str) -> Token | None:
        return self.advance() if self.at_kw(*words) else None

    def accept_op(self, *ops: str) -> Token | None:
        return self.advance() if self.at_op(*ops) else None

    def error(self, expected: str) -> CypherSyntaxError:
        t = self.peek()
        found = "end of input" if t.kind is _EOF else repr(self.text[t.start : t.end][:40])
        return CypherSyntaxError(f"expected {expected} but found {found}", self.text, t.start)

    def too_deep(self) -> CypherTooDeep:
        return CypherTooDeep(
            f"expressions nest deeper than the limit of {self.max_depth} levels", self.text, self.peek().start
        )

    def expect_kw(self, word: str) -> Token:
        if not self.at_kw(word):
            raise self.error(word)
        return self.advance()

    def expect_op(self, op: str) -> Token:
        if not self.at_op(op):
            raise self.error(repr(op))
        return self.advance()

    def expect_name(self, what: str = "a name") -> Token:
        if not self.at_name():
            raise self.error(what)
        return self.advance()

    @property
    def last_end(self) -> int:
        return self.toks[self.pos - 1].end if self.pos else 0

    def nested(self) -> _Nesting:
        """``with self.nested(): …`` parses the block one level deeper (bounded by ``max_depth``)."""
        return self._nesting

    def at_rel_start(self, i: int) -> bool:
        """Does a relationship pattern start at token index i? (``-[``, ``--``, ``<-[``, ``<--``)"""
        t = self.toks
        if i + 2 >= len(t):
            return False
        if t[i].kind is _OP and t[i].value == "-":
            return t[i + 1].kind is _OP and t[i + 1].value in ("-", "[")
        if t[i].kind is _OP and t[i].value == "<" and t[i + 1].kind is _OP and t[i + 1].value == "-":
            return t[i + 2].kind is _OP and t[i + 2].value in ("-", "[")
        return False

    def at_clause_start(self) -> bool:
        t = self.peek()
        if t.kind is not _ID:
            return False
        if t.upper in ("ORDER", "SKIP", "OFFSET", "LIMIT"):
            # A standalone ORDER BY / SKIP / LIMIT; "ORDER" alone is not a clause.
            return t.upper != "ORDER" or self.at_kw("BY", k=1)
        return t.upper in CLAUSE_KEYWORDS or (self.cypher25 and t.upper in CYPHER25_CLAUSE_KEYWORDS)

    def set_quantifier_all(self) -> bool:
        """Is the ALL here the optional set quantifier (``count(ALL x)``, Cypher 25 ``RETURN ALL x``)?

        Neo4j takes it so whenever an expression (or, in a call, the closing bracket) follows, except
        the list predicate ``all(x IN list …)``, which is an expression itself.
        """
        if not self.at_kw("ALL") or (self.at_op("(", k=1) and self.at_name(k=2) and self.at_kw("IN", k=3)):
            return False
        return self.starts_expression(1)

    def starts_expression(self, k: int = 0) -> bool:
        """Can the token at offset k begin an expression (used where an optional ALL may precede one)?"""
        t = self.toks[self.pos + k]
        if t.kind in (_NUM, _STR, _PARAM, _QID):
            return True
        if t.kind is _OP:
            return t.value in ("(", "[", "{", "-", "+", "$")
        return t.kind is _ID and t.upper not in _NOT_EXPRESSION_START and t.upper not in CLAUSE_KEYWORDS

    def unsupported(self, construct: str) -> CypherUnsupported:
        return CypherUnsupported(construct, self.text, self.peek().start)

    def not_cypher5(self) -> CypherSyntaxError | None:
        """Under Cypher 5, a Cypher 25 keyword where a clause could start: say which language reads it."""
        t = self.peek()
        if self.cypher25 or t.kind is not _ID or t.upper not in _CYPHER25_ONLY:
            return None
        return CypherSyntaxError(
            f"{t.upper} is Cypher 25; start the query with CYPHER 25 to use it", self.text, t.start
        )

    # ------------------------------------------------------------ statements

    def parse_statements(self) -> list[a.Statement]:
        if self.peek().kind is _EOF:
            raise CypherSyntaxError("the query is empty", self.text, 0)
        statements = [self.parse_statement()]
        while self.accept_op(";"):
            if self.peek().kind is _EOF:
                break
            statements.append(self.parse_statement())
        if self.peek().kind is not _EOF:
            raise self.not_cypher5() or self.error("a clause, ';' or the end of the query")
        return statements

    def parse_statement(self) -> a.Statement:
        start = self.peek().start
        prefix: a.StatementPrefix | None = None
        version: str | None = None
        options: list[str] = []
        while True:
            if prefix is None and (t := self.accept_kw("EXPLAIN", "PROFILE")):
                prefix = _PREFIX[t.upper]
            elif self.accept_kw("CYPHER"):
                if self.peek().kind is _NUM:
                    version = self.advance().value
                while self.at_name() and self.at_op("=", k=1):
                    key = self.advance().value
                    self.advance()
                    val = self.advance()
                    if val.kind not in (_ID, _NUM, _STR):
                        raise self.error("an option value")
                    options.append(f"{key}={val.value}")
            else:
                break
        language: a.CypherVersion = "25" if version == "25" else "5" if version == "5" else self.default_language
        self.cypher25 = language == "25"
        body = self.parse_query_body()
        return a.Statement(start, self.last_end, prefix, version, options, body, language)

    def parse_query_body(self) -> a.QueryBody:
        """A whole query: in Cypher 25, segments joined by NEXT, each a UNION or a conditional WHEN query."""
        if not self.cypher25:
            return self.parse_union()
        with self.nested():
            start = self.peek().start
            segments = [self.parse_regular_query()]
            while self.accept_kw("NEXT"):
                segments.append(self.parse_regular_query())
        if len(segments) == 1:
            return segments[0]
        return a.Next(start, self.last_end, segments)

    def parse_regular_query(self) -> a.SingleQuery | a.Union | a.When:
        if self.at_kw("WHEN"):
            return self.parse_when()
        return self.parse_union()

    def parse_when(self) -> a.When:
        start = self.peek().start
        branches: list[a.WhenBranch] = []
        with self.nested():
            while self.at_kw("WHEN"):
                branch_start = self.advance().start
                condition = self.parse_expr()
                self.expect_kw("THEN")
                body = self.parse_single_query()
                branches.append(a.WhenBranch(branch_start, self.last_end, condition, body))
            otherwise = self.parse_single_query() if self.accept_kw("ELSE") else None
        return a.When(start, self.last_end, branches, otherwise)

    def parse_union(self) -> a.SingleQuery | a.Union:
        with self.nested():
            start = self.peek().start
            first = self.parse_single_query()
            queries = [first]
            flags: list[bool] = []
            while self.accept_kw("UNION"):
                is_all = bool(self.accept_kw("ALL"))
                if not is_all:
                    self.accept_kw("DISTINCT")
                flags.append(is_all)
                queries.append(self.parse_single_query())
        if len(queries) == 1:
            return first
        return a.Union(start, self.last_end, queries, flags)

    def parse_single_query(self) -> a.SingleQuery:
        start = self.peek().start
        if self.cypher25 and self.at_op("{"):
            raise self.unsupported("a query in braces")
        clauses: list[a.Clause] = []
        while self.at_clause_start():
            clauses.append(self.parse_clause())
        if not clauses:
            raise self.not_cypher5() or self.error("a clause (MATCH, WITH, RETURN, UNWIND, CALL, ...)")
        return a.SingleQuery(start, self.last_end, clauses)

    # ------------------------------------------------------------ clauses

    def parse_clause(self) -> a.Clause:
        t = self.peek()
        kw = t.upper
        if kw == "OPTIONAL":
            self.advance()
            if self.at_kw("MATCH"):
                return self.parse_match(t.start, optional=True)
            if self.at_kw("CALL"):
                return self.parse_call(t.start, optional=True)
            raise self.error("MATCH or CALL after OPTIONAL")
        if kw == "MATCH":
            return self.parse_match(t.start, optional=False)
        if kw == "WITH":
            self.advance()
            proj = self.parse_projection()
            where = self.parse_expr() if self.accept_kw("WHERE") else None
            return a.With(t.start, self.last_end, proj, where)
        if kw == "RETURN":
            self.advance()
            proj = self.parse_projection()
            return a.Return(t.start, self.last_end, proj)
        if kw == "UNWIND":
            self.advance()
            expr = self.parse_expr()
            self.expect_kw("AS")
            var = self.parse_variable()
            return a.Unwind(t.start, self.last_end, expr, var)
        if kw in ("ORDER", "SKIP", "OFFSET", "LIMIT"):
            order, skip, limit = self.parse_order_skip_limit()
            return a.OrderBySkipLimit(t.start, self.last_end, order, skip, limit)
        if kw == "FOR":  # Cypher 25 (at_clause_start admits it only there)
            self.advance()
            var = self.parse_variable()
            self.expect_kw("IN")
            expr = self.parse_expr()
            return a.Unwind(t.start, self.last_end, expr, var)
        if kw == "LET":
            self.advance()
            items = self.comma_list(self.parse_let_item)
            return a.Let(t.start, self.last_end, items)
        if kw == "FILTER":
            self.advance()
            self.accept_kw("WHERE")
            condition = self.parse_expr()
            return a.Filter(t.start, self.last_end, condition)
        if kw == "CALL":
            return self.parse_call(t.start, optional=False)
        if kw == "FINISH":
            self.advance()
            return a.Finish(t.start, self.last_end)
        if kw == "USE":
            self.advance()
            self.skip_clause()
            return a.Forbidden(t.start, self.last_end, "USE", "use")
        if kw == "LOAD":
            self.advance()
            self.accept_kw("CSV")
            if self.at_kw("WITH") and self.at_kw("HEADERS", k=1):
                self.pos += 2
            self.skip_clause()
            return a.Forbidden(t.start, self.last_end, "LOAD CSV", "load_csv")
        if kw in ADMIN_KEYWORDS or (kw == "CREATE" and self.at_kw(*_CREATE_ADMIN, k=1)):
            self.advance()
            keyword = kw
            if self.at_name():
                keyword = f"{kw} {self.text[self.peek().start : self.peek().end].upper()}"
            self.skip_clause(stop_at_clauses=False)
            return a.Forbidden(t.start, self.last_end, keyword, "admin")
        if kw in WRITE_KEYWORDS:
            self.advance()
            keyword = kw
            if kw in ("DETACH", "NODETACH") and self.accept_kw("DELETE"):
                keyword = f"{kw} DELETE"
            self.skip_clause()
            return a.Forbidden(t.start, self.last_end, keyword, "write")
        raise self.error("a clause")  # pragma: no cover - guarded by at_clause_start

    def skip_clause(self, *, stop_at_clauses: bool = True) -> None:
        """Skip the tokens of a clause that will be refused, up to the next clause at this level."""
        while True:
            t = self.peek()
            if t.kind is _EOF or (t.kind is _OP and t.value in (";", ")", "]", "}")):
                return
            if t.kind is _OP and t.value in ("(", "[", "{"):
                self.pos = t.match + 1
                continue
            if stop_at_clauses and t.kind is _ID and (t.upper in CLAUSE_KEYWORDS or t.upper == "UNION"):
                prev = self.toks[self.pos - 1]
                if not (prev.kind is _OP and prev.value in (".", ":", "$")) and prev.upper != "ON":
                    return
            self.advance()

    def parse_let_item(self) -> a.LetItem:
        var = self.parse_variable()
        self.expect_op("=")
        expr = self.parse_expr()
        return a.LetItem(var.start, expr.end, var, expr)

    def parse_match(self, start: int, *, optional: bool) -> a.Match:
        self.expect_kw("MATCH")
        mode = self.parse_match_mode()
        patterns = self.parse_pattern_list()
        hints: list[a.Hint] = []
        while self.at_kw("USING"):
            hints.append(self.parse_hint())
        where = self.parse_expr() if self.accept_kw("WHERE") else None
        if self.cypher25 and self.at_kw("SEARCH"):
            raise self.unsupported("SEARCH")
        return a.Match(start, self.last_end, optional, patterns, hints, where, mode)

    def parse_match_mode(self) -> str | None:
        """``REPEATABLE ELEMENT[S] [BINDINGS]`` / ``DIFFERENT RELATIONSHIP[S] [BINDINGS]`` (Cypher 25)."""
        t = self.peek()
        words = _MATCH_MODES.get(t.upper) if t.kind is _ID else None
        if words is None or not self.at_kw(*words, k=1):
            return None
        if not self.cypher25:
            raise CypherSyntaxError(
                f"match modes such as {t.upper} are Cypher 25; start the query with CYPHER 25", self.text, t.start
            )
        first = self.advance().upper
        second = self.advance().upper
        if not second.endswith("S"):
            self.accept_kw("BINDINGS")
        return f"{first} {second.rstrip('S')}S"

    def parse_hint(self) -> a.Hint:
        start = self.advance().start  # USING
        if self.accept_kw("JOIN"):
            self.expect_kw("ON")
            self.comma_list(self.parse_variable)
        elif self.accept_kw("SCAN"):
            self.parse_variable()
            self.expect_op(":")
            self.expect_name("a label")
        else:
            self.accept_kw("TEXT", "RANGE", "POINT", "BTREE")
            self.expect_kw("INDEX")
            self.accept_kw("SEEK")
            self.parse_variable()
            self.expect_op(":")
            self.expect_name("a label or relationship type")
            self.expect_op("(")
            self.comma_list(lambda: self.expect_name("a property key"))
            self.expect_op(")")
        return a.Hint(start, self.last_end, self.text[start : self.last_end])

    def parse_projection(self) -> a.Projection:
        start = self.peek().start
        distinct = bool(self.accept_kw("DISTINCT"))
        if (
            not distinct
            and self.cypher25
            and (self.set_quantifier_all() or (self.at_kw("ALL") and self.at_op("*", k=1)))
        ):
            self.advance()  # RETURN ALL: the default, spelt out
        star = False
        items: list[a.ReturnItem] = []
        if self.accept_op("*"):
            star = True
            if self.accept_op(","):
                items = self.parse_return_items()
        else:
            items = self.parse_return_items()
        if self.cypher25 and self.at_kw("GROUP") and self.at_kw("BY", k=1):
            raise self.unsupported("GROUP BY")
        order, skip, limit = self.parse_order_skip_limit()
        return a.Projection(start, self.last_end, distinct, star, items, order, skip, limit)

    def parse_order_skip_limit(self) -> tuple[list[a.SortItem], a.Expr | None, a.Expr | None]:
        order: list[a.SortItem] = []
        if self.at_kw("ORDER") and self.at_kw("BY", k=1):
            self.pos += 2
            order = self.comma_list(self.parse_sort_item)
        skip = self.parse_expr() if self.accept_kw("SKIP", "OFFSET") else None
        limit = self.parse_expr() if self.accept_kw("LIMIT") else None
        return order, skip, limit

    def parse_return_items(self) -> list[a.ReturnItem]:
        return self.comma_list(self.parse_return_item)

    def parse_return_item(self) -> a.ReturnItem:
        start = self.peek().start
        expr = self.parse_expr()
        alias = self.parse_variable() if self.accept_kw("AS") else None
        return a.ReturnItem(start, self.last_end, expr, alias)

    def parse_sort_item(self) -> a.SortItem:
        start = self.peek().start
        expr = self.parse_expr()
        desc = False
        if t := self.accept_kw("ASC", "ASCENDING", "DESC", "DESCENDING"):
            desc = t.upper.startswith("DESC")
        return a.SortItem(start, self.last_end, expr, desc)

    def parse_call(self, start: int, *, optional: bool) -> a.Clause:
        self.expect_kw("CALL")
        if self.at_op("{", "("):
            scope: list[a.Variable] | None = None
            scope_star = False
            if self.accept_op("("):
                scope_star = bool(self.accept_op("*"))
                scope = [] if scope_star else self.comma_list(self.parse_variable, closer=")")
                self.expect_op(")")
            self.expect_op("{")
            body = self.parse_query_body()
            self.expect_op("}")
            in_tx = False
            if self.at_kw("IN"):
                in_tx = True
                self.advance()
                self.skip_clause()
            return a.CallSubquery(start, self.last_end, optional, scope, scope_star, body, in_tx)
        name = self.parse_dotted_name("a procedure name")
        args: list[a.Expr] | None = None
        if self.accept_op("("):
            args = self.comma_list(self.parse_expr, closer=")")
            self.expect_op(")")
        yield_star = False
        yields: list[a.YieldItem] = []
        where: a.Expr | None = None
        if self.accept_kw("YIELD"):
            if self.accept_op("*"):
                yield_star = True
            else:
                yields = self.comma_list(self.parse_yield_item)
            if self.accept_kw("WHERE"):
                where = self.parse_expr()
        return a.CallProcedure(start, self.last_end, optional, name, args, yield_star, yields, where)

    def parse_yield_item(self) -> a.YieldItem:
        start = self.peek().start
        name = self.expect_name("a yield field").value
        alias = self.parse_variable() if self.accept_kw("AS") else None
        return a.YieldItem(start, self.last_end, name, alias)

    def parse_dotted_name(self, what: str) -> str:
        parts = [self.expect_name(what).value]
        while self.at_op(".") and self.at_name(k=1):
            self.advance()
            parts.append(self.advance().value)
        return ".".join(parts)

    def parse_variable(self) -> a.Variable:
        t = self.expect_name("a variable")
        return a.Variable(t.start, t.end, t.value)

    # ------------------------------------------------------------ patterns

    def parse_pattern_list(self) -> list[a.PatternPart]:
        return self.comma_list(self.parse_pattern_part)

    def parse_pattern_part(self) -> a.PatternPart:
        start = self.peek().start
        var: a.Variable | None = None
        if self.at_name() and self.at_op("=", k=1):
            var = self.parse_variable()
            self.advance()
        selector: str | None = None
        if self.at_kw("SHORTESTPATH", "ALLSHORTESTPATHS") and self.at_op("(", k=1):
            selector = "shortestPath" if self.advance().upper == "SHORTESTPATH" else "allShortestPaths"
            self.expect_op("(")
            path = self.parse_path()
            self.expect_op(")")
            return a.PatternPart(start, self.last_end, var, selector, path)
        selector = self.parse_path_selector()
        path = self.parse_path()
        return a.PatternPart(start, self.last_end, var, selector, path)

    def parse_path_selector(self) -> str | None:
        # In pattern position ANY/ALL/SHORTEST (and, in Cypher 25, a path mode) can only be a GQL path selector.
        words: list[str] = []
        modes = _PATH_MODES if self.cypher25 else ()
        if self.at_kw("ANY", "ALL", "SHORTEST") or (modes and self.at_kw(*modes) and not self.at_op("=", k=1)):
            first = self.advance().upper
            words.append(first)
            if first == "SHORTEST":
                self.parse_selector_count(words)
            elif first in ("ANY", "ALL"):
                if self.accept_kw("SHORTEST"):
                    words.append("SHORTEST")
                elif first == "ANY":
                    self.parse_selector_count(words)
            if first not in modes and modes and (mode := self.accept_kw(*modes)):
                words.append(mode.upper)
            if t := self.accept_kw("PATH", "PATHS"):
                words.append(t.upper)
            if first == "SHORTEST" and (t := self.accept_kw("GROUPS", "GROUP")):
                words.append(t.upper)
        return " ".join(words) if words else None

    def parse_selector_count(self, words: list[str]) -> None:
        if self.peek().kind is _NUM:
            words.append(self.advance().value)
        elif self.cypher25 and self.peek().kind is _PARAM:
            raise self.unsupported("a parameter as the number of paths")

    def parse_path(self) -> a.Path:
        start = self.peek().start
        elements: list[a.PathElement] = []
        prev: str | None = None
        while True:
            if self.at_op("("):
                if self.at_op("(", k=1) or (self.at_name(k=1) and self.at_op("=", k=2)):
                    elements.append(self.parse_quantified_path())
                    prev = "qpp"
                else:
                    if prev == "node":
                        raise self.error("a relationship pattern between two node patterns")
                    elements.append(self.parse_node_pattern())
                    prev = "node"
            elif self.at_rel_start(self.pos):
                if prev is None or prev == "rel":
                    raise self.error("a node pattern")
                elements.append(self.parse_rel_pattern())
                prev = "rel"
            else:
                break
        if not elements:
            raise self.error("a pattern")
        if prev == "rel":
            raise self.error("a node pattern after the relationship")
        return a.Path(start, self.last_end, elements)

    def parse_quantified_path(self) -> a.QuantifiedPath:
        start = self.expect_op("(").start
        var: a.Variable | None = None
        if self.at_name() and self.at_op("=", k=1):
            var = self.parse_variable()
            self.advance()
        with self.nested():
            path = self.parse_path()
            where = self.parse_expr() if self.accept_kw("WHERE") else None
        self.expect_op(")")
        quant = self.parse_quantifier()
        return a.QuantifiedPath(start, self.last_end, path, where, quant, var)

    def parse_quantifier(self) -> a.Quantifier | None:
        t = self.peek()
        if self.accept_op("+"):
            return a.Quantifier(t.start, t.end, 1, None)
        if self.accept_op("*"):
            return a.Quantifier(t.start, t.end, 0, None)
        if self.accept_op("{"):
            lo = self.parse_int() if self.peek().kind is _NUM else None
            hi: int | None
            if self.accept_op(","):
                hi = self.parse_int() if self.peek().kind is _NUM else None
            else:
                if lo is None:
                    raise self.error("a number")
                hi = lo
            self.expect_op("}")
            return a.Quantifier(t.start, self.last_end, lo or 0, hi)
        return None

    def parse_int(self) -> int:
        t = self.advance()
        try:
            return int(t.value.replace("_", ""), 0)
        except ValueError:
            raise CypherSyntaxError(f"expected an integer, found {t.value!r}", self.text, t.start) from None

    def parse_node_pattern(self) -> a.NodePattern:
        start = self.expect_op("(").start
        var: a.Variable | None = None
        t = self.peek()
        if t.kind is _QID or (t.kind is _ID and (t.upper not in ("WHERE", "IS") or self.at_op(")", ":", "{", k=1))):
            var = self.parse_variable()
        labels = self.parse_label_spec()
        props = self.parse_properties()
        where = self.parse_expr() if self.accept_kw("WHERE") else None
        self.expect_op(")")
        return a.NodePattern(start, self.last_end, var, labels, props, where)

    def parse_label_spec(self) -> a.LabelExpression | None:
        if self.at_op(":") or (self.at_kw("IS") and not self.at_kw("NOT", "NULL", k=1)):
            return self.parse_label_expression(allow_pipe=True)
        return None

    def parse_properties(self) -> a.Expr | None:
        if self.at_op("{"):
            return self.parse_map_literal()
        if self.peek().kind is _PARAM:
            t = self.advance()
            return a.Parameter(t.start, t.end, t.value)
        return None

    def parse_rel_pattern(self) -> a.RelPattern:
        start = self.peek().start
        left = bool(self.accept_op("<"))
        self.expect_op("-")
        var: a.Variable | None = None
        types: a.LabelExpression | None = None
        length: a.VarLength | None = None
        props: a.Expr | None = None
        where: a.Expr | None = None
        if self.accept_op("["):
            t = self.peek()
            if t.kind is _QID or (t.kind is _ID and (t.upper not in ("WHERE", "IS") or self.at_op("]", ":", k=1))):
                var = self.parse_variable()
            types = self.parse_label_spec()
            if self.at_op("*"):
                length = self.parse_var_length()
            props = self.parse_properties()
            where = self.parse_expr() if self.accept_kw("WHERE") else None
            self.expect_op("]")
        self.expect_op("-")
        right = bool(self.accept_op(">"))
        direction: a.Direction = "->" if right and not left else "<-" if left and not right else "--"
        quant = self.parse_quantifier()
        return a.RelPattern(start, self.last_end, var, direction, types, length, props, where, quant)

    def parse_var_length(self) -> a.VarLength:
        start = self.expect_op("*").start
        lo: int | None = self.parse_int() if self.peek().kind is _NUM else None
        # "*3" is exactly 3; a bare "*" leaves both None: unbounded
        hi = lo
        if self.accept_op(".."):
            hi = self.parse_int() if self.peek().kind is _NUM else None
        return a.VarLength(start, self.last_end, 1 if lo is None else lo, hi)

    # ------------------------------------------------------------ label expressions

    def parse_label_expression(self, *, allow_pipe: bool, lead: bool = True) -> a.LabelExpression:
        """``:A…`` or ``IS A…`` (``lead``: the ``:`` or IS is the next token); else the labels start here."""
        start = self.advance().start if lead else self.peek().start
        node = self.parse_label_or(allow_pipe)
        # Old-style conjunction ":A:B" means A & B.
        while self.at_op(":"):
            self.advance()
            right = self.parse_label_or(allow_pipe)
            node = a.LabelBinary(node.start, right.end, "&", node, right)
        return a.LabelExpression(start, self.last_end, node)

    def parse_label_or(self, allow_pipe: bool) -> a.LabelNode:
        node = self.parse_label_and(allow_pipe)
        while allow_pipe and self.at_op("|"):
            self.advance()
            self.accept_op(":")  # ":A|:B" in relationship types
            right = self.parse_label_and(allow_pipe)
            node = a.LabelBinary(node.start, right.end, "|", node, right)
        return node

    def parse_label_and(self, allow_pipe: bool) -> a.LabelNode:
        node = self.parse_label_not(allow_pipe)
        while self.accept_op("&"):
            right = self.parse_label_not(allow_pipe)
            node = a.LabelBinary(node.start, right.end, "&", node, right)
        return node

    def parse_label_not(self, allow_pipe: bool) -> a.LabelNode:
        t = self.peek()
        if self.accept_op("!"):
            with self.nested():
                operand = self.parse_label_not(allow_pipe)
            return a.LabelNot(t.start, operand.end, operand)
        if self.accept_op("%"):
            return a.LabelWildcard(t.start, t.end)
        if self.accept_op("("):
            with self.nested():
                inner = self.parse_label_or(True)
            self.expect_op(")")
            return a.LabelParen(t.start, self.last_end, inner)
        dynamic = self.dynamic_label_kind()
        if dynamic is not None:
            self.pos += 2  # "$" or "$any"/"$all", then "("
            with self.nested():
                expr = self.parse_expr()
            self.expect_op(")")
            return a.LabelDynamic(t.start, self.last_end, dynamic, expr)
        name = self.expect_name("a label or relationship type")
        return a.LabelName(name.start, name.end, name.value)

    # ------------------------------------------------------------ expressions

    def dynamic_label_kind(self) -> a.DynamicLabelKind | None:
        """``$(``, ``$any(``, ``$all(`` start a dynamic label (a backticked ``$`any``` is a parameter)."""
        t = self.peek()
        if not self.at_op("(", k=1):
            return None
        if t.kind is _OP and t.value == "$":
            return "single"
        if t.kind is _PARAM and t.value.upper() in ("ANY", "ALL") and self.text[t.start + 1] != "`":
            return "any" if t.value.upper() == "ANY" else "all"
        return None

    def parse_expr(self) -> a.Expr:
        with self.nested():
            return self.parse_or()

    def comma_list(self, item: Callable[[], _T], *, closer: str | None = None) -> list[_T]:
        """``item (, item)*``; with ``closer``, an empty list when the closing bracket comes first."""
        if closer is not None and self.at_op(closer):
            return []
        items = [item()]
        while self.accept_op(","):
            items.append(item())
        return items

    def binary_chain(
        self, operand: Callable[[], a.Expr], operators: dict[str, a.BinaryOperator], *, keywords: bool = False
    ) -> a.Expr:
        """``operand (op operand)*``, left-associative, for one precedence level's ``operators``."""
        kind = _ID if keywords else _OP
        left = operand()
        while True:
            t = self.toks[self.pos]
            op = operators.get(t.upper if keywords else t.value) if t.kind is kind else None
            if op is None:
                return left
            self.pos += 1
            right = operand()
            left = a.BinaryOp(left.start, right.end, op, left, right)

    def parse_or(self) -> a.Expr:
        return self.binary_chain(self.parse_xor, _OR, keywords=True)

    def parse_xor(self) -> a.Expr:
        return self.binary_chain(self.parse_and, _XOR, keywords=True)

    def parse_and(self) -> a.Expr:
        return self.binary_chain(self.parse_not, _AND, keywords=True)

    def parse_not(self) -> a.Expr:
        t = self.peek()
        if self.accept_kw("NOT"):
            with self.nested():
                operand = self.parse_not()
            return a.UnaryOp(t.start, operand.end, "NOT", operand)
        return self.parse_comparison()

    def parse_comparison(self) -> a.Expr:
        return self.binary_chain(self.parse_predicate, _COMPARISON)

    def parse_predicate(self) -> a.Expr:
        return self.parse_predicate_from(self.parse_additive())

    def parse_predicate_from(self, left: a.Expr) -> a.Expr:
        while True:
            start = left.start
            if self.accept_op("=~"):
                right = self.parse_additive()
                left = a.BinaryOp(start, right.end, "=~", left, right)
            elif self.at_kw("STARTS", "ENDS") and self.at_kw("WITH", k=1):
                op = _STRING_MATCH[self.advance().upper]
                self.advance()
                right = self.parse_additive()
                left = a.BinaryOp(start, right.end, op, left, right)
            elif self.accept_kw("CONTAINS"):
                right = self.parse_additive()
                left = a.BinaryOp(start, right.end, "CONTAINS", left, right)
            elif self.at_kw("IN"):
                self.advance()
                right = self.parse_additive()
                left = a.BinaryOp(start, right.end, "IN", left, right)
            elif self.at_kw("IS"):
                left = self.parse_is(left)
            elif self.accept_op("::"):
                type_text = self.parse_type()
                left = a.TypePredicate(start, self.last_end, left, False, type_text)
            elif self.cypher25 and self.at_op(":"):
                # Cypher 25 reads a label check at this precedence, not as a postfix.
                labels = self.parse_label_expression(allow_pipe=not self.no_label_pipe)
                left = a.LabelCheck(start, labels.end, left, labels)
            else:
                return left

    def parse_is(self, left: a.Expr) -> a.Expr:
        self.advance()  # IS
        negated = bool(self.accept_kw("NOT"))
        if self.accept_kw("NULL"):
            return a.IsNull(left.start, self.last_end, left, negated)
        if self.accept_op("::") or self.accept_kw("TYPED"):
            type_text = self.parse_type()
            return a.TypePredicate(left.start, self.last_end, left, negated, type_text)
        if self.at_kw("NORMALIZED") or (self.at_kw(*_NORMAL_FORMS) and self.at_kw("NORMALIZED", k=1)):
            form = self.advance().upper
            if form != "NORMALIZED":
                self.advance()
            return a.IsNormalized(left.start, self.last_end, left, negated, None if form == "NORMALIZED" else form)
        if self.cypher25:
            self.accept_kw("LABELED")
            labels = self.parse_label_expression(allow_pipe=not self.no_label_pipe, lead=False)
            return a.LabelCheck(left.start, self.last_end, left, labels, negated)
        if negated:
            raise self.error("NULL, NORMALIZED or a type after IS NOT")
        self.pos -= 1  # let the label expression parser consume IS
        labels = self.parse_label_expression(allow_pipe=not self.no_label_pipe)
        return a.LabelCheck(left.start, self.last_end, left, labels)

    def parse_type(self) -> str:
        """``type (| type)*`` as Neo4j's grammar spells it; returns its text."""
        start = self.peek().start
        self.parse_type_part()
        while self.accept_op("|"):
            self.parse_type_part()
        return self.text[start : self.last_end]

    def parse_type_part(self) -> None:
        self.parse_type_name()
        self.parse_type_nullability()
        while self.accept_kw("LIST", "ARRAY"):
            self.parse_type_nullability()

    def parse_type_nullability(self) -> None:
        if self.at_kw("NOT") and self.at_kw("NULL", k=1):
            self.pos += 2
        else:
            self.accept_op("!")

    def parse_type_name(self) -> None:
        t = self.advance()
        word = t.upper if t.kind is _ID else ""
        if word in _SIMPLE_TYPES or (self.cypher25 and word in _CYPHER25_SIMPLE_TYPES):
            return
        if word == "SIGNED":
            self.expect_kw("INTEGER")
        elif word in ("LOCAL", "ZONED"):
            if not self.accept_kw("TIME", "DATETIME"):
                raise self.error("TIME or DATETIME")
        elif word in ("TIME", "TIMESTAMP"):
            if not self.accept_kw("WITH", "WITHOUT"):
                raise self.error("WITH or WITHOUT")
            if not self.accept_kw("TIMEZONE"):
                self.expect_kw("TIME")
                self.expect_kw("ZONE")
        elif word in ("LIST", "ARRAY"):
            self.parse_type_argument()
        elif word == "PROPERTY":
            self.expect_kw("VALUE")
        elif word == "ANY":
            if self.accept_kw("NODE", "VERTEX", "RELATIONSHIP", "EDGE", "MAP"):
                return
            if self.accept_kw("PROPERTY"):
                self.expect_kw("VALUE")
                return
            if self.accept_kw("VALUE") and not self.at_op("<"):
                return
            if self.at_op("<"):
                self.parse_type_argument()
        elif self.cypher25 and word == "VECTOR":
            self.parse_vector_type()
        else:
            self.pos -= 1
            raise self.error("a type name")

    def parse_type_argument(self) -> None:
        self.expect_op("<")
        with self.nested():
            self.parse_type()
        self.expect_op(">")

    def parse_vector_type(self) -> None:
        # VECTOR(dim, coordinate) or VECTOR[<coordinate>][(dim)]
        if self.accept_op("<"):
            self.parse_vector_coordinate()
            self.expect_op(">")
        if self.accept_op("("):
            self.accept_op("-")
            if self.peek().kind is not _NUM:
                raise self.error("a dimension")
            self.advance()
            if self.accept_op(","):
                self.parse_vector_coordinate()
            self.expect_op(")")

    def parse_vector_coordinate(self) -> str:
        start = self.peek().start
        if self.at_kw("SIGNED"):
            self.advance()
        if not self.at_kw(*_VECTOR_COORDINATES):
            raise self.error("a vector coordinate type")
        self.advance()
        self.parse_type_nullability()
        return self.text[start : self.last_end]

    def parse_additive(self) -> a.Expr:
        return self.binary_chain(self.parse_multiplicative, _ADDITIVE)

    def parse_multiplicative(self) -> a.Expr:
        return self.binary_chain(self.parse_power, _MULTIPLICATIVE)

    def parse_power(self) -> a.Expr:
        return self.binary_chain(self.parse_unary, _POWER)

    def parse_unary(self) -> a.Expr:
        t = self.peek()
        if self.at_op("-", "+"):
            self.advance()
            with self.nested():
                operand = self.parse_unary()
            return a.UnaryOp(t.start, operand.end, _SIGN[t.value], operand)
        return self.parse_postfix()

    def parse_postfix(self) -> a.Expr:
        expr = self.parse_atom()
        while True:
            if self.at_op(".") and self.at_name(k=1):
                self.advance()
                key = self.advance()
                expr = a.Property(expr.start, key.end, expr, key.value)
            elif self.at_op("["):
                self.advance()
                lower: a.Expr | None = None
                if not self.at_op(".."):
                    lower = self.parse_expr()
                if self.accept_op(".."):
                    upper = None if self.at_op("]") else self.parse_expr()
                    self.expect_op("]")
                    expr = a.Slice(expr.start, self.last_end, expr, lower, upper)
                else:
                    if lower is None:
                        raise self.error("an index")
                    self.expect_op("]")
                    expr = a.Index(expr.start, self.last_end, expr, lower)
            elif self.at_op(":") and not self.cypher25:
                labels = self.parse_label_expression(allow_pipe=not self.no_label_pipe)
                expr = a.LabelCheck(expr.start, labels.end, expr, labels)
            else:
                return expr

    def parse_atom(self) -> a.Expr:
        t = self.peek()
        kind = t.kind
        if kind is _NUM:
            self.advance()
            return a.Literal(t.start, t.end, "number", _number(self.text, t))
        if kind is _STR:
            self.advance()
            return a.Literal(t.start, t.end, "string", string_value(t.value))
        if kind is _PARAM:
            self.advance()
            return a.Parameter(t.start, t.end, t.value)
        if kind is _OP:
            if t.value == "(":
                if self.at_rel_start(t.match + 1):
                    part = self.parse_pattern_part()
                    return a.PatternPredicate(part.start, part.end, part)
                self.advance()
                inner = self.parse_expr()
                self.expect_op(")")
                return a.Paren(t.start, self.last_end, inner)
            if t.value == "[":
                return self.parse_bracket()
            if t.value == "{":
                return self.parse_map_literal()
            raise self.error("an expression")
        if kind is _QID:
            return self.parse_name_atom()
        if kind is _ID:
            up = t.upper
            if up in ("TRUE", "FALSE"):
                self.advance()
                return a.Literal(t.start, t.end, "boolean", up == "TRUE")
            if up == "NULL":
                self.advance()
                return a.Literal(t.start, t.end, "null", None)
            if up == "CASE":
                return self.parse_case()
            if up in ("EXISTS", "COUNT", "COLLECT") and self.at_op("{", k=1):
                return self.parse_subquery_expr()
            if up in _QUANTIFIERS and self.at_op("(", k=1) and self.at_name(k=2) and self.at_kw("IN", k=3):
                return self.parse_quantified()
            if up == "REDUCE" and self.at_op("(", k=1):
                return self.parse_reduce()
            if up == "ALLREDUCE" and self.cypher25 and self.at_op("(", k=1):
                return self.parse_reduce()
            if up in ("SHORTESTPATH", "ALLSHORTESTPATHS") and self.at_op("(", k=1):
                part = self.parse_pattern_part()
                return a.PatternPredicate(part.start, part.end, part)
            return self.parse_name_atom()
        raise self.error("an expression")

    def parse_name_atom(self) -> a.Expr:
        # A function call is name(.name)* followed by "("; otherwise a variable.
        i = self.pos
        toks = self.toks
        while toks[i + 1].kind is _OP and toks[i + 1].value == "." and toks[i + 2].kind in _NAMES:
            i += 2
        if toks[i + 1].kind is _OP and toks[i + 1].value == "(":
            return self.parse_function_call()
        var = self.parse_variable()
        if self.at_op("{"):
            return self.parse_map_projection(var)
        return var

    def parse_function_call(self) -> a.FunctionCall:
        start = self.peek().start
        name = self.parse_dotted_name("a function name")
        self.expect_op("(")
        lowered = name.lower()
        args: list[a.Expr]
        if lowered == "trim":
            mode, args = self.parse_trim_arguments()
            self.expect_op(")")
            return a.FunctionCall(start, self.last_end, name, args, trim_mode=mode)
        if self.cypher25 and (lowered in _KEYWORD_ARGUMENT_FUNCTIONS or lowered == "property_exists"):
            args = self.parse_keyword_arguments(lowered)
            self.expect_op(")")
            return a.FunctionCall(start, self.last_end, name, args)
        distinct = bool(self.accept_kw("DISTINCT"))
        # count(ALL x): the set quantifier, spelt out; `all` is a name when no expression follows it.
        if not distinct and (self.set_quantifier_all() or (self.at_kw("ALL") and self.at_op(")", k=1))):
            self.advance()
        args = []
        star = False
        if self.accept_op("*"):
            star = True
        else:
            args = self.comma_list(self.parse_expr, closer=")")
        self.expect_op(")")
        return a.FunctionCall(start, self.last_end, name, args, distinct, star)

    def parse_trim_arguments(self) -> tuple[str | None, list[a.Expr]]:
        """``trim([BOTH|LEADING|TRAILING] [chars] FROM source)``, or the arguments of a plain call."""
        mode: str | None = None
        if self.at_kw("BOTH", "LEADING", "TRAILING") and (self.at_kw("FROM", k=1) or self.starts_expression(1)):
            mode = self.advance().upper
        if self.accept_kw("FROM"):
            return mode or "BOTH", [self.parse_expr()]
        if mode is None and self.at_op(")"):
            return None, []
        first = self.parse_expr()
        if self.accept_kw("FROM"):
            return mode or "BOTH", [first, self.parse_expr()]
        if mode is not None:
            raise self.error("FROM")
        args = [first]
        while self.accept_op(","):
            args.append(self.parse_expr())
        return None, args

    def parse_keyword_arguments(self, name: str) -> list[a.Expr]:
        if name == "property_exists":
            subject: a.Expr = self.parse_variable()
            self.expect_op(",")
            key = self.expect_name("a property key")
            return [subject, a.Keyword(key.start, key.end, key.value)]
        count, what = _KEYWORD_ARGUMENT_FUNCTIONS[name]
        args = [self.parse_expr()]
        for _ in range(count - 1):
            self.expect_op(",")
            args.append(self.parse_expr())
        self.expect_op(",")
        word_start = self.peek().start
        if name == "vector":
            self.parse_vector_coordinate()
        else:
            self.expect_name(what)
        word = self.text[word_start : self.last_end]
        return [*args, a.Keyword(word_start, self.last_end, word)]

    def parse_bracket(self) -> a.Expr:
        start = self.expect_op("[").start
        # [x IN list WHERE … | …]
        if self.at_name() and self.at_kw("IN", k=1):
            var = self.parse_variable()
            self.advance()
            source = self.parse_expr()
            where, proj = self.parse_comprehension_tail(require_projection=False)
            self.expect_op("]")
            return a.ListComprehension(start, self.last_end, var, source, where, proj)
        # [(a)-->(b) WHERE … | …] or [p = (a)-->(b) | …]
        path_var: a.Variable | None = None
        if self.at_name() and self.at_op("=", k=1) and self.at_op("(", k=2):
            path_var = self.parse_variable()
            self.advance()
            is_pattern = True
        else:
            t = self.peek()
            is_pattern = t.kind is _OP and t.value == "(" and self.at_rel_start(t.match + 1)
        if is_pattern:
            with self.nested():
                path = self.parse_path()
                where, proj = self.parse_comprehension_tail(require_projection=True)
            self.expect_op("]")
            assert proj is not None
            return a.PatternComprehension(start, self.last_end, path_var, path, where, proj)
        items = self.comma_list(self.parse_expr, closer="]")
        self.expect_op("]")
        return a.ListLiteral(start, self.last_end, items)

    def parse_comprehension_tail(self, *, require_projection: bool) -> tuple[a.Expr | None, a.Expr | None]:
        # In the WHERE, "|" ends the predicate; in the projection it is a label disjunction again.
        where = self.parse_expr_where_pipe_is(label=False) if self.accept_kw("WHERE") else None
        proj: a.Expr | None = None
        if self.accept_op("|"):
            proj = self.parse_expr_where_pipe_is(label=True)
        elif require_projection:
            raise self.error("'|' and a projection")
        return where, proj

    def parse_expr_where_pipe_is(self, *, label: bool) -> a.Expr:
        saved = self.no_label_pipe
        self.no_label_pipe = not label
        try:
            return self.parse_expr()
        finally:
            self.no_label_pipe = saved

    def parse_map_literal(self) -> a.MapLiteral:
        start = self.expect_op("{").start
        entries = self.comma_list(self.parse_map_entry, closer="}")
        self.expect_op("}")
        return a.MapLiteral(start, self.last_end, entries)

    def parse_map_entry(self) -> a.MapEntry:
        key = self.expect_name("a map key")
        self.expect_op(":")
        value = self.parse_expr()
        return a.MapEntry(key.start, value.end, key.value, value)

    def parse_map_projection(self, subject: a.Variable) -> a.MapProjection:
        self.expect_op("{")
        items = self.comma_list(self.parse_map_projection_item, closer="}")
        self.expect_op("}")
        return a.MapProjection(subject.start, self.last_end, subject, items)

    def parse_map_projection_item(self) -> a.MapProjectionItem:
        t = self.peek()
        if self.accept_op("."):
            if self.accept_op("*"):
                return a.MapProjectionItem(t.start, self.last_end, "all", None, None)
            key = self.expect_name("a property key")
            return a.MapProjectionItem(t.start, key.end, "property", key.value, None)
        name = self.expect_name("a map projection item")
        if self.accept_op(":"):
            value = self.parse_expr()
            return a.MapProjectionItem(t.start, value.end, "literal", name.value, value)
        var = a.Variable(name.start, name.end, name.value)
        return a.MapProjectionItem(t.start, name.end, "variable", name.value, var)

    def parse_case(self) -> a.Case:
        start = self.advance().start  # CASE
        with self.nested():
            subject = None if self.at_kw("WHEN") else self.parse_expr()
            whens: list[a.CaseWhen] = []
            while self.at_kw("WHEN"):
                wstart = self.advance().start
                # With a subject, each WHEN lists operands (values or predicates on the subject).
                conditions = [self.parse_expr()] if subject is None else self.comma_list(self.parse_case_operand)
                self.expect_kw("THEN")
                result = self.parse_expr()
                whens.append(a.CaseWhen(wstart, result.end, conditions, result))
            if not whens:
                raise self.error("WHEN")
            default = self.parse_expr() if self.accept_kw("ELSE") else None
            self.expect_kw("END")
        return a.Case(start, self.last_end, subject, whens, default)

    def parse_case_operand(self) -> a.Expr:
        """One operand of ``CASE x WHEN …``: a value compared for equality, or a predicate on x (partial)."""
        t = self.peek()
        start = t.start
        op: str | None = None
        right: a.Expr | None = None
        labels: a.LabelExpression | None = None
        type_text: str | None = None
        if self.at_op("=", "<>", "<", ">", "<=", ">="):
            op = self.advance().value
            right = self.parse_additive_with_suffix()
        elif self.at_op("=~"):
            op = self.advance().value
            right = self.parse_additive()
        elif self.at_kw("STARTS", "ENDS") and self.at_kw("WITH", k=1):
            op = f"{self.advance().upper} WITH"
            self.advance()
            right = self.parse_additive()
        elif self.cypher25 and self.at_kw("IN", "CONTAINS"):
            op = self.advance().upper
            right = self.parse_additive()
        elif self.accept_op("::"):
            op, type_text = "::", self.parse_type()
        elif self.cypher25 and self.at_op(":"):
            op = ":"
            labels = self.parse_label_expression(allow_pipe=not self.no_label_pipe)
        elif self.at_kw("IS") and self.is_partial_is():
            self.advance()
            negated = " NOT" if self.accept_kw("NOT") else ""
            if self.accept_kw("NULL"):
                op = f"IS{negated} NULL"
            elif self.accept_kw("TYPED") or (self.cypher25 and self.accept_op("::")):
                op, type_text = f"IS{negated} TYPED", self.parse_type()
            elif self.at_kw("NORMALIZED") or self.at_kw(*_NORMAL_FORMS):
                form = self.advance().upper
                if form != "NORMALIZED":
                    self.expect_kw("NORMALIZED")
                op = f"IS{negated} {form} NORMALIZED".replace(" NORMALIZED NORMALIZED", " NORMALIZED")
            else:  # Cypher 25: IS [NOT] [LABELED] labels
                self.accept_kw("LABELED")
                op = f"IS{negated} LABELED"
                labels = self.parse_label_expression(allow_pipe=not self.no_label_pipe, lead=False)
        else:
            return self.parse_expr()
        return a.PartialPredicate(start, self.last_end, op, right, labels, type_text)

    def is_partial_is(self) -> bool:
        """After ``WHEN``, does IS begin a predicate on the CASE subject (else it is a name, ``WHEN is``)?"""
        nxt = self.peek(1)
        if nxt.kind is _ID and nxt.upper in ("NOT", "NULL", "TYPED", "NORMALIZED", *_NORMAL_FORMS):
            return True
        if not self.cypher25:
            return False  # Cypher 5: `WHEN is :: T` compares with the variable `is`
        if nxt.kind is _OP:
            return nxt.value in ("::", "(", "%", "!", "$")
        return nxt.kind in _NAMES and nxt.upper != "THEN"

    def parse_additive_with_suffix(self) -> a.Expr:
        """An operand at the precedence of one comparison's side (Neo4j's expression7)."""
        left = self.parse_additive()
        if self.at_kw("IS", "IN", "CONTAINS", "STARTS", "ENDS") or self.at_op("=~", "::"):
            # parse_predicate reads the single suffix Neo4j allows here (and refuses more than it would).
            return self.parse_predicate_from(left)
        return left

    def parse_subquery_expr(self) -> a.SubqueryExpr:
        t = self.advance()
        self.expect_op("{")
        body: a.QueryBody | None = None
        patterns: list[a.PatternPart] = []
        where: a.Expr | None = None
        if self.at_clause_start():
            body = self.parse_query_body()
        else:
            with self.nested():
                patterns = self.parse_pattern_list()
                where = self.parse_expr() if self.accept_kw("WHERE") else None
        self.expect_op("}")
        return a.SubqueryExpr(t.start, self.last_end, _SUBQUERY[t.upper], body, patterns, where)

    def parse_quantified(self) -> a.Quantified:
        t = self.advance()
        self.expect_op("(")
        var = self.parse_variable()
        self.expect_kw("IN")
        source = self.parse_expr()
        where = self.parse_expr() if self.accept_kw("WHERE") else None
        self.expect_op(")")
        return a.Quantified(t.start, self.last_end, _QUANTIFIERS[t.upper], var, source, where)

    def parse_reduce(self) -> a.Reduce:
        """``reduce(acc = init, x IN list | step)``; Cypher 25 ``allReduce(…, predicate)`` adds a predicate."""
        keyword = self.advance()
        start = keyword.start
        self.expect_op("(")
        acc = self.parse_variable()
        self.expect_op("=")
        initial = self.parse_expr()
        self.expect_op(",")
        var = self.parse_variable()
        self.expect_kw("IN")
        source = self.parse_expr()
        self.expect_op("|")
        expr = self.parse_expr()
        predicate: a.Expr | None = None
        if keyword.upper == "ALLREDUCE":
            self.expect_op(",")
            predicate = self.parse_expr()
        self.expect_op(")")
        return a.Reduce(start, self.last_end, acc, initial, var, source, expr, predicate)


def _number(text: str, t: Token) -> int | float:
    text = t.value.replace("_", "")
    try:
        if text[:2].lower() in ("0x", "0o"):
            return int(text, 0)
        if any(c in text for c in ".eE"):
            return float(text)
        return int(text)
    except ValueError:
        raise CypherSyntaxError(f"invalid number {t.value!r}", text, t.start) from None
