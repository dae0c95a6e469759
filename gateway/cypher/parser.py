"""A recursive-descent parser for the read subset of Neo4j 5 Cypher.

It accepts what an agent's read query needs (MATCH, OPTIONAL MATCH, WITH,
RETURN, UNWIND, UNION, CALL subqueries, procedure calls, EXISTS/COUNT/COLLECT,
pattern and list comprehensions, map projections, quantified path patterns,
shortest paths, label expressions, type predicates) and produces
``gateway.cypher.ast`` nodes. Write clauses, admin commands, ``USE`` and
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
from gateway.cypher.errors import CypherSyntaxError, CypherTooDeep
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
READ_CLAUSE_KEYWORDS = frozenset({"MATCH", "OPTIONAL", "WITH", "RETURN", "UNWIND", "CALL", "FINISH", "USE", "LOAD"})
CLAUSE_KEYWORDS = READ_CLAUSE_KEYWORDS | WRITE_KEYWORDS | ADMIN_KEYWORDS
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
_TYPE_WORDS = frozenset(
    {"BOOL", "BOOLEAN", "VARCHAR", "STRING", "INT", "INTEGER", "SIGNED", "INTEGER8", "INTEGER16",
     "INTEGER32", "INTEGER64", "FLOAT", "FLOAT64", "DATE", "LOCAL", "ZONED", "TIME", "DATETIME",
     "WITHOUT", "TIMEZONE", "ZONE", "DURATION", "POINT", "NODE", "VERTEX", "RELATIONSHIP", "EDGE",
     "MAP", "LIST", "ARRAY", "PATH", "PROPERTY", "VALUE", "ANY", "NOTHING", "NULL"}
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

    def __init__(self, text: str, tokens: list[Token], *, max_depth: int) -> None:
        self.text = text
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
        return t.kind is _ID and t.upper in CLAUSE_KEYWORDS

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
            raise self.error("a clause, ';' or the end of the query")
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
        body = self.parse_query_body()
        return a.Statement(start, self.last_end, prefix, version, options, body)

    def parse_query_body(self) -> a.QueryBody:
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
        clauses: list[a.Clause] = []
        while self.at_clause_start():
            clauses.append(self.parse_clause())
        if not clauses:
            raise self.error("a clause (MATCH, WITH, RETURN, UNWIND, CALL, ...)")
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

    def parse_match(self, start: int, *, optional: bool) -> a.Match:
        self.expect_kw("MATCH")
        patterns = self.parse_pattern_list()
        hints: list[a.Hint] = []
        while self.at_kw("USING"):
            hints.append(self.parse_hint())
        where = self.parse_expr() if self.accept_kw("WHERE") else None
        return a.Match(start, self.last_end, optional, patterns, hints, where)

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
        star = False
        items: list[a.ReturnItem] = []
        if self.accept_op("*"):
            star = True
            if self.accept_op(","):
                items = self.parse_return_items()
        else:
            items = self.parse_return_items()
        order: list[a.SortItem] = []
        if self.at_kw("ORDER"):
            self.advance()
            self.expect_kw("BY")
            order = self.comma_list(self.parse_sort_item)
        skip = self.parse_expr() if self.accept_kw("SKIP", "OFFSET") else None
        limit = self.parse_expr() if self.accept_kw("LIMIT") else None
        return a.Projection(start, self.last_end, distinct, star, items, order, skip, limit)

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
        # In pattern position ANY/ALL/SHORTEST can only be a GQL path selector.
        words: list[str] = []
        if self.at_kw("ANY", "ALL", "SHORTEST"):
            first = self.advance().upper
            words.append(first)
            if first == "SHORTEST":
                if self.peek().kind is _NUM:
                    words.append(self.advance().value)
                if t := self.accept_kw("PATH", "PATHS", "GROUPS", "GROUP"):
                    words.append(t.upper)
            else:
                if self.accept_kw("SHORTEST"):
                    words.append("SHORTEST")
                elif self.peek().kind is _NUM:
                    words.append(self.advance().value)
                if t := self.accept_kw("PATH", "PATHS"):
                    words.append(t.upper)
        return " ".join(words) if words else None

    def parse_path(self) -> a.Path:
        start = self.peek().start
        elements: list[a.PathElement] = []
        prev: str | None = None
        while True:
            if self.at_op("("):
                if self.at_op("(", k=1):
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
        with self.nested():
            path = self.parse_path()
            where = self.parse_expr() if self.accept_kw("WHERE") else None
        self.expect_op(")")
        quant = self.parse_quantifier()
        return a.QuantifiedPath(start, self.last_end, path, where, quant)

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

    def parse_label_expression(self, *, allow_pipe: bool) -> a.LabelExpression:
        start = self.advance().start  # ":" or IS
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
        name = self.expect_name("a label or relationship type")
        return a.LabelName(name.start, name.end, name.value)

    # ------------------------------------------------------------ expressions

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
        left = self.parse_additive()
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
            else:
                return left

    def parse_is(self, left: a.Expr) -> a.Expr:
        self.advance()  # IS
        negated = bool(self.accept_kw("NOT"))
        if self.accept_kw("NULL"):
            return a.IsNull(left.start, self.last_end, left, negated)
        if self.accept_op("::") or self.accept_kw("TYPED"):
            type_start = self.peek().start
            self.parse_type()
            return a.TypePredicate(left.start, self.last_end, left, negated, self.text[type_start : self.last_end])
        if negated:
            raise self.error("NULL or a type after IS NOT")
        if self.at_kw("NORMALIZED") or self.at_kw("NFC", "NFD", "NFKC", "NFKD"):
            raise self.error("a supported predicate (IS NORMALIZED is not supported)")
        self.pos -= 1  # let the label expression parser consume IS
        labels = self.parse_label_expression(allow_pipe=not self.no_label_pipe)
        return a.LabelCheck(left.start, self.last_end, left, labels)

    def parse_type(self) -> None:
        self.parse_type_term()
        while self.accept_op("|"):
            self.parse_type_term()

    def parse_type_term(self) -> None:
        if not self.at_kw(*_TYPE_WORDS):
            raise self.error("a type name")
        while self.at_kw(*_TYPE_WORDS) or (self.at_kw("WITH") and self.at_kw("TIME", "TIMEZONE", k=1)):
            self.advance()
        if self.accept_op("<"):
            with self.nested():
                self.parse_type()
            self.expect_op(">")
        if self.at_kw("NOT") and self.at_kw("NULL", k=1):
            self.advance()
            self.advance()
        elif self.accept_op("!"):
            pass

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
            elif self.at_op(":"):
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
        distinct = bool(self.accept_kw("DISTINCT"))
        args: list[a.Expr] = []
        star = False
        if self.accept_op("*"):
            star = True
        else:
            args = self.comma_list(self.parse_expr, closer=")")
        self.expect_op(")")
        return a.FunctionCall(start, self.last_end, name, args, distinct, star)

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
                cond = self.parse_expr()
                self.expect_kw("THEN")
                result = self.parse_expr()
                whens.append(a.CaseWhen(wstart, result.end, cond, result))
            if not whens:
                raise self.error("WHEN")
            default = self.parse_expr() if self.accept_kw("ELSE") else None
            self.expect_kw("END")
        return a.Case(start, self.last_end, subject, whens, default)

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
        start = self.advance().start
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
        self.expect_op(")")
        return a.Reduce(start, self.last_end, acc, initial, var, source, expr)


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
