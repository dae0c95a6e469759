"""Which answer columns surely hold no node, relationship, path or map: they need no projection.

The projection that keeps hidden values inside Neo4j (``projection.py``) is a few kilobytes of
Cypher per final RETURN, and Neo4j's planning time grows with the text (docs/benchmarks.md). A
column such as ``t.id``, ``count(a)`` or ``type(r)`` can never carry an element, so when every
column of a RETURN is like that the RETURN is left as the agent wrote it.

The reading is a whitelist: an expression is plain only when its every possible value is a
plain value (a number, string, boolean, temporal, point, null, or a list of them). A property of a
node or relationship is plain (stored properties are); a function is read from the function table
(``gateway/guard/functions.py``, its ``result``): "plain" always is, "arguments" (``min``,
``head``, ``coalesce``) is when its arguments are, any other is not. A variable is plain when
every binding of its name in the whole query is plain (``WITH count(*) AS c``, ``UNWIND [1, 2]
AS x``). Anything else (a variable bound by a pattern, a map, ``COLLECT {}``, an unknown
function) is not: the projection stays, so a wrong "not plain" costs planning time, never a
hidden value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gateway.cypher import ast
from gateway.guard import functions

# Operators whose result is a boolean whatever their operands.
_BOOLEAN_OPERATORS = frozenset(
    {"OR", "XOR", "AND", "=", "<>", "<", ">", "<=", ">=", "=~", "IN", "STARTS_WITH", "ENDS_WITH", "CONTAINS"}
)

KindOf = Callable[[ast.Expr], "str | None"]


class Plainness:
    """The plain variables of one parsed query, and the test of an expression against them."""

    def __init__(self, nodes: Iterable[ast.Node], kind_of: KindOf) -> None:
        self.kind_of = kind_of
        self.plain_names: set[str] = set()
        bindings: dict[str, list[ast.Expr | None]] = {}
        for node in nodes:
            for name, source in _bindings(node):
                bindings.setdefault(name, []).append(source)
        # Least fixpoint: a name becomes plain once every binding of it is plain (a cycle never is).
        changed = True
        while changed:
            changed = False
            for name, sources in bindings.items():
                if name not in self.plain_names and all(s is not None and self.plain(s) for s in sources):
                    self.plain_names.add(name)
                    changed = True

    def plain(self, expr: ast.Expr) -> bool:
        """``expr`` can only evaluate to a plain value (never an element, a path or a map)."""
        expr = ast.unparen(expr)
        if isinstance(expr, ast.Literal | ast.Parameter):
            return True  # a parameter is the caller's own value: it holds no element
        if isinstance(expr, ast.Variable):
            return expr.name in self.plain_names
        if isinstance(expr, ast.Property | ast.Index):
            # A stored property is plain; so is a part of a plain value (a date's year).
            return self.kind_of(expr.subject) is not None or self.plain(expr.subject)
        if isinstance(expr, ast.IsNull | ast.TypePredicate | ast.LabelCheck | ast.IsNormalized | ast.Quantified):
            return True
        if isinstance(expr, ast.PatternPredicate):
            return True
        if isinstance(expr, ast.SubqueryExpr):
            return expr.kind in ("EXISTS", "COUNT")
        if isinstance(expr, ast.BinaryOp):
            return expr.op in _BOOLEAN_OPERATORS or (self.plain(expr.left) and self.plain(expr.right))
        if isinstance(expr, ast.UnaryOp):
            return expr.op == "NOT" or self.plain(expr.operand)
        if isinstance(expr, ast.ListLiteral):
            return all(self.plain(item) for item in expr.items)
        if isinstance(expr, ast.Slice):
            return self.plain(expr.subject)
        if isinstance(expr, ast.FunctionCall):
            row = functions.lookup(expr.name)
            result = row.result if row is not None else None
            return result == "plain" or (result == "arguments" and all(self.plain(a) for a in expr.args))
        if isinstance(expr, ast.Case):
            results = [when.result for when in expr.whens] + ([expr.default] if expr.default is not None else [])
            return all(self.plain(result) for result in results)
        if isinstance(expr, ast.ListComprehension):
            return self.plain(expr.projection if expr.projection is not None else expr.source)
        if isinstance(expr, ast.PatternComprehension):
            return self.plain(expr.projection)
        return False


def _bindings(node: ast.Node) -> list[tuple[str, ast.Expr | None]]:
    """The names ``node`` binds, each with the expression whose value it takes (None: not a value's copy)."""
    if isinstance(node, ast.ReturnItem) and node.alias is not None:
        return [(node.alias.name, node.expression)]
    if isinstance(node, ast.LetItem):
        return [(node.variable.name, node.expression)]
    if isinstance(node, ast.Unwind):
        return [(node.variable.name, node.expression)]  # a plain list's items are plain
    if isinstance(node, ast.ListComprehension | ast.Quantified):
        return [(node.variable.name, node.source)]
    if isinstance(node, ast.Reduce):
        return [(node.accumulator.name, None), (node.variable.name, node.source)]
    names: list[tuple[str, ast.Expr | None]] = []
    elements = ast.NodePattern | ast.RelPattern | ast.PatternPart | ast.QuantifiedPath
    if isinstance(node, elements) and node.variable is not None:
        names.append((node.variable.name, None))
    elif isinstance(node, ast.PatternComprehension) and node.path_variable is not None:
        names.append((node.path_variable.name, None))
    elif isinstance(node, ast.YieldItem):
        names.append(((node.alias.name if node.alias is not None else node.name), None))
    return names
