"""The syntax tree of one Cypher query.

Every node records ``start``/``end``: character offsets into the original text
(``text[node.start:node.end]`` is exactly the source of that node). Rewrites
splice the original text at these offsets (see ``ParsedQuery.rewrite``) rather
than regenerating it, so whatever the tree does not model precisely is
preserved byte for byte.

Parentheses around an expression are a :class:`Paren` node, so every node's
span is balanced: wrapping ``text[node.start:node.end]`` in new text can never
split a bracket pair. Every name a query binds is a :class:`Variable` node
(pattern elements, path names, ``AS`` aliases, ``UNWIND`` and comprehension
variables). Kinds and operators are ``Literal`` string types.

Walk a tree with ``node.walk()`` (pre-order, every descendant, into subqueries,
pattern comprehensions and EXISTS/COUNT/COLLECT blocks) or
``node.find_all(Match, NodePattern)``.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TypeVar

N = TypeVar("N", bound="Node")

LiteralKind = typing.Literal["string", "number", "boolean", "null"]
BinaryOperator = typing.Literal[
    "OR", "XOR", "AND", "=", "<>", "<", ">", "<=", ">=", "=~", "IN", "STARTS_WITH", "ENDS_WITH", "CONTAINS",
    "+", "-", "*", "/", "%", "^", "||",
]  # fmt: skip
UnaryOperator = typing.Literal["NOT", "-", "+"]
QuantifierKind = typing.Literal["all", "any", "none", "single"]
SubqueryKind = typing.Literal["EXISTS", "COUNT", "COLLECT"]
MapProjectionKind = typing.Literal["property", "all", "literal", "variable"]
LabelOperator = typing.Literal["|", "&"]
Direction = typing.Literal["->", "<-", "--"]
ForbiddenCategory = typing.Literal["write", "admin", "load_csv", "use"]
StatementPrefix = typing.Literal["EXPLAIN", "PROFILE"]
CypherVersion = typing.Literal["5", "25"]
DynamicLabelKind = typing.Literal["single", "any", "all"]


@dataclass(eq=False)
class Node:
    start: int
    end: int

    def children(self) -> list[Node]:
        """Direct children, in source order."""
        out: list[Node] = []
        for name in _child_fields(type(self)):
            value = getattr(self, name)
            if isinstance(value, list):
                out.extend(value)
            elif value is not None:
                out.append(value)
        return out

    def walk(self) -> Iterator[Node]:
        """Every node of this subtree, pre-order (iterative: deep trees cannot overflow the stack)."""
        return walk([self])

    def find_all(self, *types: type[N]) -> Iterator[N]:
        for node in self.walk():
            if isinstance(node, types):
                yield node


# ---------------------------------------------------------------- expressions


@dataclass(eq=False)
class Expr(Node):
    pass


@dataclass(eq=False)
class Literal(Expr):
    kind: LiteralKind
    value: str | float | int | bool | None


@dataclass(eq=False)
class Paren(Expr):
    """``( expression )``: the span includes both parentheses."""

    expression: Expr


@dataclass(eq=False)
class Parameter(Expr):
    name: str


@dataclass(eq=False)
class Variable(Expr):
    name: str


@dataclass(eq=False)
class ListLiteral(Expr):
    items: list[Expr]


@dataclass(eq=False)
class MapEntry(Node):
    key: str
    value: Expr


@dataclass(eq=False)
class MapLiteral(Expr):
    entries: list[MapEntry]


@dataclass(eq=False)
class Property(Expr):
    subject: Expr
    key: str


@dataclass(eq=False)
class Index(Expr):
    subject: Expr
    index: Expr


@dataclass(eq=False)
class Slice(Expr):
    subject: Expr
    lower: Expr | None
    upper: Expr | None


@dataclass(eq=False)
class BinaryOp(Expr):
    op: BinaryOperator
    left: Expr
    right: Expr


@dataclass(eq=False)
class UnaryOp(Expr):
    op: UnaryOperator
    operand: Expr


@dataclass(eq=False)
class IsNull(Expr):
    operand: Expr
    negated: bool


@dataclass(eq=False)
class TypePredicate(Expr):
    operand: Expr
    negated: bool
    type_text: str


@dataclass(eq=False)
class LabelCheck(Expr):
    """``n:Person`` / ``n:A|B`` / ``r IS KNOWS`` / (Cypher 25) ``n IS NOT LABELED A`` as a boolean expression."""

    subject: Expr
    labels: LabelExpression
    negated: bool = False


@dataclass(eq=False)
class IsNormalized(Expr):
    """``s IS [NOT] [NFC|NFD|NFKC|NFKD] NORMALIZED``."""

    operand: Expr
    negated: bool
    form: str | None


@dataclass(eq=False)
class PartialPredicate(Expr):
    """One operand of an extended simple ``CASE x WHEN …``: a predicate whose left side is the CASE subject.

    ``op`` is its operator as written in upper case (``<``, ``IS NOT NULL``, ``::``, ``STARTS WITH``,
    ``IS NORMALIZED``, ``IN``, ``IS LABELED`` …); ``right`` its right operand, ``labels`` its label
    expression, ``type_text`` its type, when it has one.
    """

    op: str
    right: Expr | None
    labels: LabelExpression | None
    type_text: str | None


@dataclass(eq=False)
class Keyword(Expr):
    """A bare word a few Cypher 25 functions take as an argument (``vector(v, 3, INT8)``, a property key)."""

    word: str


@dataclass(eq=False)
class FunctionCall(Expr):
    name: str  # dotted, backticks removed: "apoc.text.join"
    args: list[Expr]
    distinct: bool = False
    star: bool = False  # count(*)
    trim_mode: str | None = None  # trim(BOTH|LEADING|TRAILING [chars] FROM s): args are [chars?, s]


@dataclass(eq=False)
class CaseWhen(Node):
    """``WHEN condition THEN result``; an extended simple CASE may list several ``conditions``."""

    conditions: list[Expr]
    result: Expr


@dataclass(eq=False)
class Case(Expr):
    subject: Expr | None
    whens: list[CaseWhen]
    default: Expr | None


@dataclass(eq=False)
class ListComprehension(Expr):
    variable: Variable
    source: Expr
    where: Expr | None
    projection: Expr | None


@dataclass(eq=False)
class Quantified(Expr):
    """``all/any/none/single(x IN list WHERE pred)``."""

    quantifier: QuantifierKind
    variable: Variable
    source: Expr
    where: Expr | None


@dataclass(eq=False)
class Reduce(Expr):
    accumulator: Variable
    initial: Expr
    variable: Variable
    source: Expr
    expression: Expr
    predicate: Expr | None = None  # Cypher 25 allReduce(acc = init, x IN list | step, predicate)


@dataclass(eq=False)
class PatternComprehension(Expr):
    path_variable: Variable | None
    pattern: Path
    where: Expr | None
    projection: Expr


@dataclass(eq=False)
class PatternPredicate(Expr):
    """A bare pattern used as a boolean, ``WHERE (a)-[:R]->(b)``."""

    pattern: PatternPart


@dataclass(eq=False)
class SubqueryExpr(Expr):
    """``EXISTS { … }``, ``COUNT { … }``, ``COLLECT { … }``.

    Either ``body`` (a full query) or ``patterns`` (+ optional ``where``) is set.
    """

    kind: SubqueryKind
    body: QueryBody | None
    patterns: list[PatternPart]
    where: Expr | None


@dataclass(eq=False)
class MapProjectionItem(Node):
    kind: MapProjectionKind  # .name | .* | key: expr | v
    key: str | None
    value: Expr | None


@dataclass(eq=False)
class MapProjection(Expr):
    subject: Variable
    items: list[MapProjectionItem]


# ---------------------------------------------------------------- labels


@dataclass(eq=False)
class LabelName(Node):
    name: str


@dataclass(eq=False)
class LabelWildcard(Node):
    pass


@dataclass(eq=False)
class LabelNot(Node):
    operand: LabelNode


@dataclass(eq=False)
class LabelBinary(Node):
    op: LabelOperator  # ":" between labels is "&"
    left: LabelNode
    right: LabelNode


@dataclass(eq=False)
class LabelParen(Node):
    """``( label expression )``: the span includes both parentheses."""

    operand: LabelNode


@dataclass(eq=False)
class LabelDynamic(Node):
    """``$(expr)``, ``$any(expr)``, ``$all(expr)``: labels or types computed from a value at run time."""

    kind: DynamicLabelKind
    expression: Expr


LabelNode = LabelName | LabelWildcard | LabelNot | LabelBinary | LabelParen | LabelDynamic


@dataclass(eq=False)
class LabelExpression(Node):
    expression: LabelNode

    def names(self) -> list[str]:
        return [n.name for n in self.walk() if isinstance(n, LabelName)]


# ---------------------------------------------------------------- patterns


@dataclass(eq=False)
class NodePattern(Node):
    variable: Variable | None
    labels: LabelExpression | None
    properties: Expr | None  # MapLiteral or Parameter
    where: Expr | None


@dataclass(eq=False)
class Quantifier(Node):
    """``{m,n}``, ``+``, ``*`` after a relationship or a parenthesised path; max None = unbounded."""

    min: int
    max: int | None


@dataclass(eq=False)
class VarLength(Node):
    """The old-style ``*``, ``*3``, ``*1..3``, ``*..5`` inside a relationship pattern; max None = unbounded."""

    min: int
    max: int | None


@dataclass(eq=False)
class RelPattern(Node):
    variable: Variable | None
    direction: Direction
    types: LabelExpression | None
    length: VarLength | None
    properties: Expr | None
    where: Expr | None
    quantifier: Quantifier | None = None


@dataclass(eq=False)
class QuantifiedPath(Node):
    """A parenthesised path pattern ``((a)-->(b) WHERE …){1,3}`` (quantifier may be None).

    ``variable`` names the group's path (``(q = (a)-->+(b) WHERE length(q) > 1)``, after a selector).
    """

    path: Path
    where: Expr | None
    quantifier: Quantifier | None
    variable: Variable | None = None


PathElement = NodePattern | RelPattern | QuantifiedPath


@dataclass(eq=False)
class Path(Node):
    elements: list[PathElement]


@dataclass(eq=False)
class PatternPart(Node):
    variable: Variable | None  # p = …
    selector: str | None  # "shortestPath", "allShortestPaths", "ANY SHORTEST", "SHORTEST 2", "ALL TRAIL", …
    path: Path


# ---------------------------------------------------------------- clauses


@dataclass(eq=False)
class Clause(Node):
    pass


@dataclass(eq=False)
class Hint(Node):
    text: str


@dataclass(eq=False)
class Match(Clause):
    optional: bool
    patterns: list[PatternPart]
    hints: list[Hint]
    where: Expr | None
    mode: str | None = None  # Cypher 25 match mode: "REPEATABLE ELEMENTS", "DIFFERENT RELATIONSHIPS"


@dataclass(eq=False)
class ReturnItem(Node):
    expression: Expr
    alias: Variable | None


@dataclass(eq=False)
class SortItem(Node):
    expression: Expr
    descending: bool


@dataclass(eq=False)
class Projection(Node):
    """The shared body of WITH and RETURN."""

    distinct: bool
    star: bool
    items: list[ReturnItem]
    order_by: list[SortItem]
    skip: Expr | None
    limit: Expr | None


@dataclass(eq=False)
class With(Clause):
    projection: Projection
    where: Expr | None


@dataclass(eq=False)
class Return(Clause):
    projection: Projection


@dataclass(eq=False)
class Unwind(Clause):
    """``UNWIND list AS x``, and its Cypher 25 spelling ``FOR x IN list``."""

    expression: Expr
    variable: Variable


@dataclass(eq=False)
class OrderBySkipLimit(Clause):
    """``ORDER BY … SKIP … LIMIT …`` standing as a clause of its own between other clauses."""

    order_by: list[SortItem]
    skip: Expr | None
    limit: Expr | None


@dataclass(eq=False)
class LetItem(Node):
    variable: Variable
    expression: Expr


@dataclass(eq=False)
class Let(Clause):
    """Cypher 25 ``LET x = expr, …``: binds new variables, row by row."""

    items: list[LetItem]


@dataclass(eq=False)
class Filter(Clause):
    """Cypher 25 ``FILTER [WHERE] condition``: keeps the rows where it holds."""

    condition: Expr


@dataclass(eq=False)
class CallSubquery(Clause):
    optional: bool
    # None: ``CALL { … }``; a list: ``CALL (a, b) { … }``; star: ``CALL (*) { … }``
    scope: list[Variable] | None
    scope_star: bool
    body: QueryBody
    in_transactions: bool


@dataclass(eq=False)
class YieldItem(Node):
    name: str  # the procedure's output field; bound as a variable of that name unless aliased
    alias: Variable | None


@dataclass(eq=False)
class CallProcedure(Clause):
    optional: bool
    name: str  # dotted, backticks removed: "db.labels"
    args: list[Expr] | None  # None when called without parentheses
    yield_star: bool
    yield_items: list[YieldItem]
    where: Expr | None


@dataclass(eq=False)
class Finish(Clause):
    pass


@dataclass(eq=False)
class Forbidden(Clause):
    """A clause or command the gateway never runs, kept so a rule can name it.

    Its tokens are skipped, not parsed: the whole query is rejected anyway.
    """

    keyword: str  # "CREATE", "DETACH DELETE", "LOAD CSV", "SHOW", "USE", …
    category: ForbiddenCategory


# ---------------------------------------------------------------- queries


@dataclass(eq=False)
class SingleQuery(Node):
    clauses: list[Clause]


@dataclass(eq=False)
class Union(Node):
    queries: list[SingleQuery]
    all: list[bool] = field(default_factory=list)  # all[i] joins queries[i] and queries[i+1]


@dataclass(eq=False)
class WhenBranch(Node):
    condition: Expr
    body: SingleQuery


@dataclass(eq=False)
class When(Node):
    """Cypher 25 conditional query ``WHEN c THEN q [WHEN …] [ELSE q]``: the first branch whose condition holds runs."""

    branches: list[WhenBranch]
    otherwise: SingleQuery | None


@dataclass(eq=False)
class Next(Node):
    """Cypher 25 ``q1 NEXT q2 …``: each segment's returned columns are the next one's variables."""

    segments: list[SingleQuery | Union | When]


QueryBody = SingleQuery | Union | When | Next


@dataclass(eq=False)
class Statement(Node):
    prefix: StatementPrefix | None
    cypher_version: str | None  # "5" from ``CYPHER 5``
    options: list[str]  # ``CYPHER runtime=slotted`` -> ["runtime=slotted"]
    body: QueryBody
    language: CypherVersion = "5"  # the version the body was read as (the prefix, else the policy's default)


def single_queries(body: QueryBody, *, answer_only: bool = False) -> list[SingleQuery]:
    """The single queries of ``body``: each UNION and WHEN branch, of every NEXT segment.

    ``answer_only``: only those whose RETURN is the answer's (NEXT's last segment; the earlier
    segments' rows feed the next one).
    """
    if isinstance(body, SingleQuery):
        return [body]
    if isinstance(body, Union):
        return list(body.queries)
    if isinstance(body, When):
        return [branch.body for branch in body.branches] + ([body.otherwise] if body.otherwise else [])
    segments = body.segments[-1:] if answer_only else body.segments
    # A segment is never itself a NEXT: one level.
    return [query for segment in segments for query in single_queries(segment)]


def unparen(expr: Expr) -> Expr:
    """``expr`` without the parentheses around it: ``((x))`` is ``x``."""
    while isinstance(expr, Paren):
        expr = expr.expression
    return expr


# Field annotations that never hold a node; the walk skips them. Any other field is looked
# into, so a field added later is walked unless it is listed here.
_SCALAR_FIELDS = frozenset(
    {"bool", "int", "int | None", "str", "str | None", "list[bool]", "list[str]", "str | float | int | bool | None",
     "BinaryOperator", "Direction", "ForbiddenCategory", "LabelOperator", "LiteralKind", "MapProjectionKind",
     "QuantifierKind", "StatementPrefix | None", "SubqueryKind", "UnaryOperator", "CypherVersion",
     "DynamicLabelKind"}
)  # fmt: skip
_CHILD_FIELDS: dict[type[Node], tuple[str, ...]] = {}


def _child_fields(cls: type[Node]) -> tuple[str, ...]:
    """The fields of ``cls`` that can hold nodes (a field holding a list holds nodes only), in source order."""
    names = _CHILD_FIELDS.get(cls)
    if names is None:
        names = _CHILD_FIELDS[cls] = tuple(
            f.name for f in dataclasses.fields(cls) if f.name not in ("start", "end") and f.type not in _SCALAR_FIELDS
        )
    return names


def walk(roots: list[Node] | list[Statement]) -> Iterator[Node]:
    """Every node under ``roots``, pre-order, with an explicit stack (no recursion, however deep)."""
    stack: list[Node] = list(reversed(roots))
    fields = _CHILD_FIELDS
    while stack:
        node = stack.pop()
        yield node
        names = fields.get(type(node)) or _child_fields(type(node))
        for name in reversed(names):
            value = getattr(node, name)
            if isinstance(value, list):
                stack.extend(reversed(value))
            elif value is not None:
                stack.append(value)
