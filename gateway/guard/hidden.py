"""The hidden-properties rule: a query may not name, or reach by any other way, a property the policy hides.

A policy's ``hidden_properties`` (embeddings, secrets, internal fields) are listed per label or
relationship type, but this check is by **name alone**: a label in a pattern does not prove an
element lacks other labels (``(a:Fact)`` can also be an ``:Attempt``), and a variable can hold an
element whose label the query never states. So ``x.embedding`` is refused whatever ``x`` is. Names
are compared case-insensitively, as the guard compares labels and types (Neo4j's keys are
case-sensitive: this refuses slightly more than it must, never less).

Every way a query can read a property's value, or test it, is a refusal:

* a property read anywhere (``RETURN n.embedding``, ``WHERE n.secret = $guess`` — a condition on
  a hidden value is an oracle for it —, ``ORDER BY n.embedding``, ``vector.similarity.cosine(n.embedding, …)``);
* a pattern's property map (``MATCH (n {secret: $guess})``) and an index hint naming the key;
* a map projection's ``.embedding``;
* and, while the policy hides any property at all, whatever copies properties it does not name:
  ``properties(x)``, ``keys(x)`` (the keys an element has tell whether it holds a hidden one),
  ``x {.*}``, and a dynamic access ``x[key]`` or ``property_exists(x, key)`` whose key is not a
  string fixed by the text or the parameters. These are refused on any subject, maps included: the
  guard does not know types, and proving a variable is never an element of a label that hides
  something is not possible from the text (fail closed). A subscript that is provably an integer
  (a number, ``size(l) - 1``) or applied to a value that is provably a list (``collect(x)[0]``,
  ``split(s, ',')[1]``) is a list index, not a property, and stays allowed.

Nodes and relationships returned whole are not refused: the sandbox removes the hidden keys from
them (``sandbox/withhold.py``). Neo4j's runtime errors, which can quote a value, reach the agent only
as their code while the scope rewrite is on (``scope.withheld_details``). A procedure reads what it
likes (a vector index query ranks by the embedding): the scope rewrite refuses every procedure call,
and a policy that hides a property must not allow one that reads it.

Under the allow-list (``visible_properties``) the same checks run with "hidden" read as "visible on
no element": a key listed under no label, no type and not in ``default`` (exact names, as Neo4j
compares keys) is refused wherever the query names it (rule ``property.not_visible``), and, as the
allow-list always hides something, ``properties()``, ``keys()``, ``{.*}`` and unresolved dynamic
keys are always refused. A key visible on some elements but not others is left to the scope
rewrite (``gateway/scope/visible_props.py``), which makes it null where it is not visible.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from gateway.cypher import ParsedQuery, ast
from gateway.guard import functions

# From the function table (gateway.guard.functions): the functions that hand back every property of
# their argument, or every key; those that read the property an argument names (its position); those
# whose result is always a list (subscripting it is indexing, never a property read); those whose
# result is always a number (or null: as a subscript, an index).
_COPY_ALL = functions.names(copies_properties=True)
_KEY_ARGUMENT = functions.key_arguments()
_LISTS = functions.names(returns="list")
_NUMBERS = functions.names(returns="number")
_ARITHMETIC = frozenset({"+", "-", "*", "/", "%", "^"})
_HINT_KEYS = re.compile(r"\(([^)]*)\)")


def hidden_property_use(
    parsed: ParsedQuery, params: Mapping[str, Any], hidden: frozenset[str], policy_name: str
) -> str | None:
    """Why ``parsed`` may reach a property in ``hidden`` (by any name in it), or None when it cannot."""
    if not hidden:
        return None
    lowered = frozenset(h.lower() for h in hidden)
    return _Check(
        parsed, params, lambda key: key.lower() in lowered, f"which policy {policy_name!r} hides", policy_name
    ).run()


def invisible_property_use(
    parsed: ParsedQuery, params: Mapping[str, Any], visible: frozenset[str], policy_name: str
) -> str | None:
    """Why ``parsed`` may reach a property visible on no element (none of ``visible``, exact names), or None."""
    says = f"which is not in policy {policy_name!r}'s visible_properties (visible on no label, type nor by default)"
    return _Check(parsed, params, lambda key: key not in visible, says, policy_name).run()


class _Check:
    def __init__(
        self, parsed: ParsedQuery, params: Mapping[str, Any], hides: Callable[[str], bool], says: str, policy: str
    ) -> None:
        self.parsed = parsed
        self.params = params
        self.is_hidden = hides
        self.says = says
        self.policy = policy

    def run(self) -> str | None:
        for node in self.parsed.walk():
            reason = self.node(node)
            if reason is not None:
                return reason
        return None

    def named(self, verb: str, key: str, text: str) -> str:
        return f"the query {verb} the property {key} ({text}), {self.says}"

    def node(self, node: ast.Node) -> str | None:
        if isinstance(node, ast.Property):
            return self.named("reads", node.key, self.parsed.source(node)) if self.is_hidden(node.key) else None
        if isinstance(node, ast.MapProjection):
            return self.map_projection(node)
        if isinstance(node, ast.NodePattern | ast.RelPattern) and node.properties is not None:
            return self.pattern_map(node.properties)
        if isinstance(node, ast.FunctionCall):
            return self.function(node)
        if isinstance(node, ast.Index):
            return self.index(node)
        if isinstance(node, ast.Hint):
            return self.hint(node)
        return None

    def map_projection(self, node: ast.MapProjection) -> str | None:
        for item in node.items:
            if item.kind == "all":
                return (
                    f"the map projection {self.parsed.source(node)} copies every property, and policy "
                    f"{self.policy!r} hides some; list the ones you need ({node.subject.name} {{.name, …}})"
                )
            if item.kind == "property" and item.key is not None and self.is_hidden(item.key):
                return self.named("copies", item.key, self.parsed.source(node))
        return None

    def pattern_map(self, properties: ast.Expr) -> str | None:
        text = self.parsed.source(properties)
        if isinstance(properties, ast.MapLiteral):
            for entry in properties.entries:
                if self.is_hidden(entry.key):
                    return self.named("matches on", entry.key, text)
            return None
        value = self.params.get(properties.name) if isinstance(properties, ast.Parameter) else None
        if not isinstance(value, Mapping):
            return f"the pattern's property map {text} cannot be checked against the properties policy hides"
        for key in value:
            if isinstance(key, str) and self.is_hidden(key):
                return self.named("matches on", key, text)
        return None

    def function(self, node: ast.FunctionCall) -> str | None:
        name = node.name.lower()
        if name in _COPY_ALL:
            return (
                f"{self.parsed.source(node)} lists every property of its argument, and policy {self.policy!r} "
                "hides some; read the properties you need by name"
            )
        key = _KEY_ARGUMENT.get(name)
        if key is not None and len(node.args) == key + 1:
            return self.key_expression(node.args[key], self.parsed.source(node))
        return None

    def index(self, node: ast.Index) -> str | None:
        key = ast.unparen(node.index)
        if _integer(key, self.params) or _list(ast.unparen(node.subject)):
            return None
        return self.key_expression(key, self.parsed.source(node))

    def key_expression(self, key: ast.Expr, text: str) -> str | None:
        """A property key given as an expression: fine when the text or a parameter fixes it to a visible name."""
        key = ast.unparen(key)
        value: Any
        if isinstance(key, ast.Literal):
            value = key.value
        elif isinstance(key, ast.Parameter) and key.name in self.params:
            value = self.params[key.name]
        else:
            return (
                f"{text} reads a property whose name is computed at run time, which cannot be checked against "
                f"the properties policy {self.policy!r} hides; write the name out or pass it as a parameter"
            )
        if isinstance(value, str) and self.is_hidden(value):
            return self.named("reads", value, text)
        return None

    def hint(self, node: ast.Hint) -> str | None:
        for group in _HINT_KEYS.findall(node.text):
            for key in group.split(","):
                name = key.strip().strip("`")
                if self.is_hidden(name):
                    return self.named("names", name, node.text)
        return None


def _integer(expr: ast.Expr, params: Mapping[str, Any]) -> bool:
    """Whether ``expr`` is always a number (or null): as a subscript it indexes a list."""
    expr = ast.unparen(expr)
    if isinstance(expr, ast.Literal):
        return isinstance(expr.value, int | float) and not isinstance(expr.value, bool)
    if isinstance(expr, ast.Parameter):
        value = params.get(expr.name)
        return isinstance(value, int | float) and not isinstance(value, bool)
    if isinstance(expr, ast.UnaryOp):
        return expr.op in ("-", "+") and _integer(expr.operand, params)
    if isinstance(expr, ast.BinaryOp):
        return expr.op in _ARITHMETIC and _integer(expr.left, params) and _integer(expr.right, params)
    if isinstance(expr, ast.FunctionCall):
        return expr.name.lower() in _NUMBERS
    return False


def _list(expr: ast.Expr) -> bool:
    """Whether ``expr`` is always a list: subscripting it never reads a property."""
    if isinstance(expr, ast.ListLiteral | ast.ListComprehension | ast.PatternComprehension | ast.Slice):
        return True
    if isinstance(expr, ast.SubqueryExpr):
        return expr.kind == "COLLECT"
    if isinstance(expr, ast.FunctionCall):
        return expr.name.lower() in _LISTS
    return False
