"""The allow-list inside the query: a key visible on some elements only reads as null on the others.

Under ``visible_properties`` the guard has refused every key visible on no element
(``property.not_visible``). A key listed for some labels or types but not others can still be
named: ``n.name`` where ``name`` is listed for ``Repository`` but not for ``Fact``. This pass
makes each such read yield the value only where the element shows the key, by the same rule the
sandbox applies to elements returned whole (``sandbox/withhold.py``):

* ``x.k`` becomes ``CASE WHEN <x shows k> THEN x.k END``; a map projection's ``.k`` becomes
  ``k: CASE WHEN <x shows k> THEN x.k END``; a pattern map's ``{k: v}`` compares with
  ``CASE WHEN <x shows k> THEN (v) END``, null where ``x`` does not show ``k``, so the pattern
  matches nothing there (a pattern map on a hidden key is no oracle).
* ``<x shows k>`` for a node: no label of ``x`` is listed without ``k``, and (when ``default``
  lacks ``k``) some label of ``x`` is listed with it; for a relationship: ``k`` is in its type's
  list, or in ``default`` when its type has none. The relationship's lists are read from the
  parameters the projection passes (``SHOWN_PARAMETERS``), not written as literals: Neo4j 5.26
  fails a WHERE holding two CASEs that test ``type(r) IN`` different literal lists
  (docs/neo4j-facts.md).
* No CASE where every element of the kind shows ``k`` (for a pattern map on a relationship:
  every type the pattern allows): the text stays small.

Which kind of element a variable holds is read from the patterns that bind it (a node pattern,
or a single relationship) or from ``nodes(p)`` / ``relationships(p)`` a comprehension or UNWIND
walks; a variable bound otherwise (``WITH n AS m``, ``UNWIND``, a map, a
quantified group's list) is of no known kind, and reading a key from it that not every element
shows is refused (``scope.unsupported``), as is such a key read by a computed subscript
(``x['k']``, ``x[$key]``) or ``property_exists``: write ``x.k`` on a matched variable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

from gateway.catalogue import SCOPE_UNSUPPORTED
from gateway.cypher import ast
from gateway.guard.functions import key_arguments
from gateway.policy import VisibleProperties
from gateway.scope.predicates import GENERATED_PREFIX, quote_name, string_literal

if TYPE_CHECKING:
    from gateway.scope.passes import Context

_LABEL = f"{GENERATED_PREFIX}label"
# The allow-list as parameters: label or type -> the keys it shows, and the keys shown by default.
SHOWN_PARAMETERS = {
    "node": f"{GENERATED_PREFIX}show_nodes",
    "relationship": f"{GENERATED_PREFIX}show_rels",
}
DEFAULT_PARAMETER = f"{GENERATED_PREFIX}show_default"
_KEY_ARGUMENT = key_arguments()
_NODE, _REL = "node", "relationship"


class Kinds:
    """Per variable name: the kinds of value the query binds to it anywhere (a name can stand for
    several variables across UNION branches and subqueries, so every binding counts).

    ``node`` from a node pattern, ``relationship`` from a single relationship pattern, either from
    a comprehension or UNWIND over ``nodes(p)`` / ``relationships(p)``, the source's kinds from
    ``WITH x AS y`` / ``LET y = x``; ``other`` from every other binding (a path, a list, a value,
    a procedure's field). A name is of a known kind only when every binding gives that one kind.
    """

    def __init__(self, parsed_nodes: list[ast.Node]) -> None:
        self.kinds: dict[str, set[str]] = {}
        copies: list[tuple[str, str]] = []  # (bound name, the variable it copies)
        for node in parsed_nodes:
            for name, kind in _bindings(node):
                self.kinds.setdefault(name, set()).add(kind)
            copied = _copy(node)
            if copied is not None:
                copies.append(copied)
        for _ in range(len(copies) + 1):  # a chain of copies settles within as many rounds
            changed = False
            for name, source in copies:
                before = len(self.kinds.setdefault(name, set()))
                self.kinds[name] |= self.kinds.get(source, {"other"})
                changed = changed or len(self.kinds[name]) != before
            if not changed:
                break

    def of(self, expr: ast.Expr) -> str | None:
        """The kind ``expr`` surely is: a variable every binding of which is a node, or a relationship."""
        expr = ast.unparen(expr)
        if not isinstance(expr, ast.Variable):
            return None
        kinds = self.kinds.get(expr.name, set())
        return next(iter(kinds)) if len(kinds) == 1 and kinds <= {_NODE, _REL} else None


def _bindings(node: ast.Node) -> list[tuple[str, str]]:
    """The names ``node`` binds and the kind of each (a copy of a variable is left to ``_copy``)."""
    if isinstance(node, ast.NodePattern) and node.variable is not None:
        return [(node.variable.name, _NODE)]
    if isinstance(node, ast.RelPattern) and node.variable is not None:
        single = node.length is None and node.quantifier is None
        return [(node.variable.name, _REL if single else "other")]
    if isinstance(node, ast.QuantifiedPath) and node.quantifier is not None:
        # Inside a quantified group every element variable is a list outside it.
        inner = [n.name for n in node.walk() if isinstance(n, ast.Variable)]
        return [(name, "other") for name in inner]
    if isinstance(node, ast.Unwind):
        return [(node.variable.name, _listed_kind(node.expression))]
    if isinstance(node, ast.ListComprehension | ast.Quantified):
        return [(node.variable.name, _listed_kind(node.source))]
    if isinstance(node, ast.Reduce):
        return [(node.accumulator.name, "other"), (node.variable.name, _listed_kind(node.source))]
    if isinstance(node, ast.PatternPart | ast.QuantifiedPath) and node.variable is not None:
        return [(node.variable.name, "other")]
    if isinstance(node, ast.PatternComprehension) and node.path_variable is not None:
        return [(node.path_variable.name, "other")]
    if isinstance(node, ast.YieldItem):
        return [((node.alias.name if node.alias is not None else node.name), "other")]
    if isinstance(node, ast.ReturnItem) and node.alias is not None and _copy(node) is None:
        return [(node.alias.name, "other")]
    if isinstance(node, ast.LetItem) and _copy(node) is None:
        return [(node.variable.name, "other")]
    return []


def _copy(node: ast.Node) -> tuple[str, str] | None:
    """``WITH x AS y`` or ``LET y = x``: (y, x)."""
    if isinstance(node, ast.ReturnItem) and node.alias is not None:
        source = ast.unparen(node.expression)
        return (node.alias.name, source.name) if isinstance(source, ast.Variable) else None
    if isinstance(node, ast.LetItem):
        source = ast.unparen(node.expression)
        return (node.variable.name, source.name) if isinstance(source, ast.Variable) else None
    return None


def _listed_kind(source: ast.Expr) -> str:
    """What a comprehension or UNWIND over ``source`` binds (``nodes(p)``: nodes; ``relationships(p)``: ones)."""
    source = ast.unparen(source)
    if isinstance(source, ast.FunctionCall) and not source.distinct and len(source.args) == 1:
        return {"nodes": _NODE, "relationships": _REL}.get(source.name.lower(), "other")
    return "other"


def _alternatives(types: ast.LabelExpression | None) -> frozenset[str] | None:
    """The types a relationship pattern allows when it lists them (``:A``, ``:A|B``); None when it does not."""
    if types is None:
        return None
    names: list[str] = []
    stack: list[ast.LabelNode] = [types.expression]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.LabelName):
            names.append(node.name)
        elif isinstance(node, ast.LabelBinary) and node.op == "|":
            stack += [node.left, node.right]
        elif isinstance(node, ast.LabelParen):
            stack.append(node.operand)
        else:
            return None
    return frozenset(names)


def _listed(names: list[str]) -> str:
    return "[" + ", ".join(string_literal(n) for n in sorted(names)) + "]"


def shows(
    visible: VisibleProperties, kind: str, subject: str, key: str, types: frozenset[str] | None = None
) -> str | None:
    """Cypher true where the element ``subject`` (of ``kind``) shows ``key``; None when every such element does."""
    if kind == _NODE:
        if visible.on_every_node(key):
            return None
        if key in visible.default:
            without = [label for label, keys in visible.nodes.items() if key not in keys]
            return f"none({_LABEL} IN labels({subject}) WHERE {_LABEL} IN {_listed(without)})"
        listed = [label for label, keys in visible.nodes.items() if key in keys]
        if not listed:
            return "false"
        some = f"any({_LABEL} IN labels({subject}) WHERE {_LABEL} IN {_listed(listed)})"
        without = [label for label, keys in visible.nodes.items() if key not in keys]
        if not without:
            return some
        return f"{some} AND none({_LABEL} IN labels({subject}) WHERE {_LABEL} IN {_listed(without)})"
    if visible.on_every_relationship(key, types):
        return None
    if key not in visible.default and not any(key in keys for keys in visible.relationships.values()):
        return "false"
    lists = f"${SHOWN_PARAMETERS[_REL]}[type({subject})]"
    return f"{string_literal(key)} IN coalesce({lists}, ${DEFAULT_PARAMETER})"


def _everywhere(visible: VisibleProperties, key: str) -> bool:
    return visible.on_every_node(key) and visible.on_every_relationship(key)


def reads_partly_shown(visible: VisibleProperties | None, expr: ast.Expr) -> bool:
    """Whether ``expr`` reads a key some elements do not show (a read this pass rewrites where it stands)."""
    if visible is None:
        return False
    return any(isinstance(node, ast.Property) and not _everywhere(visible, node.key) for node in expr.walk())


def find_unlisted_reads(ctx: Context) -> None:
    """Decide which reads of a key some elements do not show get a CASE (see the module's text).

    Only recorded here (``ctx.read_wraps``, ``ctx.read_items``): ``keep_columns`` names a rewritten
    column by the agent's text, and ``write_unlisted_reads`` writes them after it, so that a
    wrapper of the same span as its RETURN item lands inside the item's ``AS``.
    """
    visible = ctx.policy.visible_properties
    if visible is None:
        return
    nodes = list(ctx.parsed.walk())
    kinds = Kinds(nodes)
    for node in nodes:
        if isinstance(node, ast.Property):
            _property(ctx, visible, kinds, node)
        elif isinstance(node, ast.MapProjection):
            _projection(ctx, visible, kinds, node)
        elif isinstance(node, ast.NodePattern | ast.RelPattern) and node.properties is not None:
            _pattern_map(ctx, visible, kinds, node)
        elif isinstance(node, ast.Index):
            _subscript(ctx, visible, node)
        elif isinstance(node, ast.FunctionCall):
            _key_function(ctx, visible, node)


def _unknown(key: str, text: str) -> NoReturn:
    raise SCOPE_UNSUPPORTED.rejected(
        f"{text} reads the property {key}, which visible_properties shows on some elements only, from a value "
        "that is not a node or relationship variable of a pattern; read it as x.key on a matched variable"
    )


def _property(ctx: Context, visible: VisibleProperties, kinds: Kinds, node: ast.Property) -> None:
    if _everywhere(visible, node.key):
        return
    kind = kinds.of(node.subject)
    if kind is None:
        _unknown(node.key, ctx.parsed.source(node))
    subject = ast.unparen(node.subject)
    assert isinstance(subject, ast.Variable)
    condition = shows(visible, kind, quote_name(subject.name), node.key)
    if condition is None:
        return
    ctx.read_wraps.append((node, f"CASE WHEN {condition} THEN ", " END"))


def _projection(ctx: Context, visible: VisibleProperties, kinds: Kinds, node: ast.MapProjection) -> None:
    for item in node.items:
        if item.kind != "property" or item.key is None or _everywhere(visible, item.key):
            continue
        kind = kinds.of(node.subject)
        if kind is None:
            _unknown(item.key, ctx.parsed.source(node))
        subject = quote_name(node.subject.name)
        condition = shows(visible, kind, subject, item.key)
        if condition is not None:
            key = quote_name(item.key)
            ctx.read_items.append((node, item, f"{key}: CASE WHEN {condition} THEN {subject}.{key} END"))


def _pattern_map(
    ctx: Context, visible: VisibleProperties, kinds: Kinds, element: ast.NodePattern | ast.RelPattern
) -> None:
    text = ctx.parsed.source(element.properties) if element.properties is not None else ""
    if not isinstance(element.properties, ast.MapLiteral):
        if not all(_everywhere(visible, key) for key in visible.names()):
            raise SCOPE_UNSUPPORTED.rejected(
                f"the pattern's property map {text} is a parameter, and visible_properties shows some keys on "
                "some elements only; write the map out"
            )
        return
    node = isinstance(element, ast.NodePattern)
    single, types = True, None
    if isinstance(element, ast.RelPattern):
        single, types = element.length is None and element.quantifier is None, _alternatives(element.types)
    name = element.variable.name if element.variable is not None else ctx.element_names.get(element)
    for entry in element.properties.entries:
        kind = _NODE if node else _REL
        if name is None or not single:
            everywhere = visible.on_every_node(entry.key) if node else visible.on_every_relationship(entry.key, types)
            if not everywhere:
                raise SCOPE_UNSUPPORTED.rejected(
                    f"the pattern's property map {text} matches on {entry.key}, which visible_properties shows on "
                    "some elements only; name the element and compare in a WHERE"
                )
            continue
        condition = shows(visible, kind, quote_name(name), entry.key, types)
        if condition is not None:
            ctx.read_wraps.append((entry.value, f"CASE WHEN {condition} THEN (", ") END"))


def _subscript(ctx: Context, visible: VisibleProperties, node: ast.Index) -> None:
    key = ast.unparen(node.index)
    if isinstance(key, ast.Literal) and isinstance(key.value, str) and not _everywhere(visible, key.value):
        raise SCOPE_UNSUPPORTED.rejected(
            f"{ctx.parsed.source(node)} reads the property {key.value}, which visible_properties shows on some "
            "elements only, by a subscript; write it as x.key on a matched variable"
        )
    if isinstance(key, ast.Parameter) and not all(_everywhere(visible, k) for k in visible.names()):
        raise SCOPE_UNSUPPORTED.rejected(
            f"{ctx.parsed.source(node)} may read a property named by a parameter, and visible_properties shows "
            "some keys on some elements only; write the key out as x.key (or index a list expression)"
        )


def _key_function(ctx: Context, visible: VisibleProperties, node: ast.FunctionCall) -> None:
    position = _KEY_ARGUMENT.get(node.name.lower())
    if position is None or len(node.args) != position + 1:
        return
    key = ast.unparen(node.args[position])
    if isinstance(key, ast.Literal) and isinstance(key.value, str) and _everywhere(visible, key.value):
        return
    raise SCOPE_UNSUPPORTED.rejected(
        f"{ctx.parsed.source(node)} tests a property that visible_properties may show on some elements only; "
        "compare x.key with null instead"
    )


def write_unlisted_reads(ctx: Context) -> None:
    """Write the CASEs ``find_unlisted_reads`` decided."""
    for node, opener, closer in ctx.read_wraps:
        ctx.edits.open(node, opener)
        ctx.edits.close(node, closer)
    for _projection_node, item, text in ctx.read_items:
        ctx.edits.replace(item.start, item.end, text)
