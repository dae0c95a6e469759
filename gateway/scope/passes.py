"""The scope passes: each is a small function over one parsed query.

``PASSES`` lists them in the order they run. The first three only refuse
(``scope.unsupported``, ``scope.element_id``); the fourth records insertions in an
``Edits``; the last refuses any pattern the fourth left without its predicate.

The one idea: every pattern the query can match (MATCH, OPTIONAL MATCH, EXISTS /
COUNT / COLLECT, pattern comprehensions, pattern predicates, quantified and
variable-length paths, shortestPath) gets a path variable (generated when the
agent did not name one), and the pattern's own WHERE gets "every node and every
relationship on that path is visible". A path covers anonymous elements,
intermediate nodes of variable-length and quantified patterns, and both
endpoints of every relationship, with one predicate whose completeness a
reviewer can see at a glance. Because the predicate sits in the pattern's WHERE,
it filters before any aggregation and, in OPTIONAL MATCH, yields nulls rather
than dropping rows. ``SCOPERS`` says, per kind of node that owns a pattern, how
it gets that predicate; ``refuse_unscoped`` then checks that every pattern in
the tree received one, so a construct nobody taught the rewrite is refused,
never run unscoped.

The second idea closes the error oracle: Neo4j may evaluate an agent's condition
on an element as soon as it is bound, before the path predicate, so a WHERE
holding a condition that could raise (``1 / x``, ``date(s)``) is put behind the
visibility of what it runs on: ``CASE WHEN <visible> THEN (where) ELSE false
END``. A MATCH-level WHERE waits for its whole pattern; one inside a pattern
(inline WHERE, property map, quantified-path WHERE) for the elements it is
attached to and names.

Cost: the text grows linearly with the agent's. Each pattern's predicate is
written once at the root of its WHERE; the guard in front of an agent's WHERE
names the paths (or elements) it waits for in one predicate, once per WHERE
whatever its number of conditions; ``plan`` refuses a result longer than the
policy's ``max_rewritten_chars``. Every analysis here is iterative or recurses
only into bracketed nesting, which the parser bounds.
"""

from __future__ import annotations

from collections.abc import Callable, Container
from dataclasses import dataclass, field
from typing import Any

from gateway.catalogue import SCOPE_ELEMENT_ID, SCOPE_TOO_LARGE, SCOPE_UNSUPPORTED
from gateway.cypher import ParsedQuery, ast
from gateway.policy import Policy
from gateway.scope.calls import function_is_safe, why_refused
from gateway.scope.columns import keep_agent_columns
from gateway.scope.coverage import unscoped_patterns
from gateway.scope.edits import Edits, token_at
from gateway.scope.predicates import GENERATED_PREFIX, Predicates, quote_name

# Selectors whose MATCH-level WHERE is applied during the search (legacy shortestPath) or that
# select nothing (ALL). GQL ANY / SHORTEST k / ALL SHORTEST / … GROUPS select paths *before* the
# MATCH's WHERE filters them; for those, ``scope_selected_path`` puts the predicate inside the
# parenthesised path pattern, which Neo4j applies before it selects (measured on 5.26 and 2026.x).
SCOPABLE_SELECTORS: frozenset[str | None] = frozenset(
    {None, "shortestPath", "allShortestPaths", "ALL", "ALL PATH", "ALL PATHS"}
)


class Frame:
    """Where generated path names are drawn from: the query's clauses, or one expression.

    Inside an expression (EXISTS/COUNT/COLLECT, a comprehension, a pattern predicate) names
    depend only on the nesting depth and the order within that expression, so two equal
    expressions stay equal after the rewrite: Neo4j matches an ORDER BY or a grouping key to a
    projected expression by its text. A name never clashes with one in scope around it: the
    clauses' names are numbered across the whole query, and an expression's differ by depth.
    """

    def __init__(self, depth: int = 0) -> None:
        self.depth = depth
        self.count = 0

    def name(self, counter: list[int]) -> str:
        if self.depth == 0:
            counter[0] += 1
            return f"{GENERATED_PREFIX}p{counter[0]}"
        self.count += 1
        return f"{GENERATED_PREFIX}p{self.depth}_{self.count}"


@dataclass
class Context:
    parsed: ParsedQuery
    policy: Policy
    predicates: Predicates
    edits: Edits = field(default_factory=Edits)
    scoped: set[ast.Path] = field(default_factory=set)  # every path that received its predicate
    generated: dict[ast.PatternPart, str] = field(default_factory=dict)  # MATCH parts the rewrite named
    frame: Frame = field(default_factory=Frame)
    _counter: list[int] = field(default_factory=lambda: [0])

    def fresh_path(self) -> str:
        return self.frame.name(self._counter)


Pass = Callable[[Context], None]


def refuse_reserved_names(ctx: Context) -> None:
    """A variable or parameter in the gateway's namespace could capture generated names or the scope."""
    for node in ctx.parsed.walk():
        # Every bound name is a Variable (aliases too); an unaliased YIELD binds the field's own name.
        name = node.name if isinstance(node, ast.Variable | ast.YieldItem) else None
        if name is not None and name.lower().startswith(GENERATED_PREFIX):
            raise SCOPE_UNSUPPORTED.rejected(f"the name {name!r} is reserved for variables the gateway generates")
        if isinstance(node, ast.Parameter) and ctx.policy.reserved_parameters.is_reserved(node.name):
            raise SCOPE_UNSUPPORTED.rejected(f"the parameter ${node.name} is reserved for the gateway")


# Neo4j's ids of elements. Ids are allocated across the whole database (and reused after
# deletes), so the ids of visible elements leave gaps where hidden ones sit: how many, and
# in what order they were created. Nodes can be compared without them (`a <> b`).
ELEMENT_ID_FUNCTIONS: frozenset[str] = frozenset({"id", "elementid"})


def refuse_element_ids(ctx: Context) -> None:
    """``id()`` and ``elementId()`` would read allocation order; any use, even ``ORDER BY``, is refused."""
    for node in ctx.parsed.walk():
        if isinstance(node, ast.FunctionCall) and node.name.lower() in ELEMENT_ID_FUNCTIONS:
            raise SCOPE_ELEMENT_ID.rejected(
                f"{node.name}() exposes Neo4j's element ids, whose gaps count the elements you cannot see; "
                "compare elements directly (a = b) or by a key property"
            )


def refuse_unscopable(ctx: Context) -> None:
    """Constructs that reach elements without a pattern the rewrite can scope."""
    for node in ctx.parsed.walk():
        if isinstance(node, ast.CallProcedure):
            # No procedure answers from the caller's layers only: db.labels() & co. list names
            # that only hidden elements carry, and index procedures rank hidden elements too
            # (filtering their results afterwards would still leak through the top-k).
            raise SCOPE_UNSUPPORTED.rejected(
                f"the procedure {node.name} answers from the whole database, not from the caller's layers; "
                "use MATCH (and the schema tool for the labels, types and keys you can see)"
            )
        if isinstance(node, ast.FunctionCall) and not function_is_safe(node.name):
            raise SCOPE_UNSUPPORTED.rejected(f"the function {node.name}() is refused: {why_refused(node.name)}")
        if isinstance(node, ast.NodePattern | ast.RelPattern):
            refuse_computed_labels(ctx, node.labels if isinstance(node, ast.NodePattern) else node.types)
        if isinstance(node, ast.PatternPredicate) and node.pattern.selector is not None:
            raise SCOPE_UNSUPPORTED.rejected(
                f"{node.pattern.selector}(…) as an expression cannot be scoped; "
                f"write MATCH p = {node.pattern.selector}(…) instead"
            )


def _fixed_value(expr: ast.Expr) -> bool:
    expr = ast.unparen(expr)
    if isinstance(expr, ast.ListLiteral):
        return all(isinstance(ast.unparen(item), ast.Literal | ast.Parameter) for item in expr.items)
    return isinstance(expr, ast.Literal | ast.Parameter)


def refuse_computed_labels(ctx: Context, labels: ast.LabelExpression | None) -> None:
    """A dynamic label in a pattern is evaluated while matching, before the path's visibility
    predicate: computed from an element, it could raise on a hidden one (an error oracle)."""
    for node in labels.walk() if labels is not None else ():
        if isinstance(node, ast.LabelDynamic) and not _fixed_value(node.expression):
            raise SCOPE_UNSUPPORTED.rejected(
                f"the dynamic label {ctx.parsed.source(node)!r} is computed while the pattern is matched; "
                "in a pattern, give it a parameter or a literal"
            )


def _has_relationships(path: ast.Path) -> bool:
    return any(isinstance(n, ast.RelPattern | ast.QuantifiedPath) for n in path.walk())


def _name_part(ctx: Context, part: ast.PatternPart) -> str:
    """The part's path variable, inserting a generated one when the agent gave none."""
    if part.variable is not None:
        return part.variable.name
    name = ctx.fresh_path()
    ctx.edits.open(part, f"{name} = ")
    ctx.generated[part] = name
    return name


def _add_condition(
    ctx: Context, owner: ast.Node, where: ast.Expr | None, after: int, paths: list[tuple[str, ast.Path]]
) -> None:
    """AND the visibility of ``paths`` into ``where``, or add ``WHERE <visibility>`` at offset ``after``.

    Each path's predicate is a conjunct of its own at the root of the WHERE (the planner can
    apply it as soon as that path is bound, and shortestPath during its search). If the agent's
    WHERE could raise, it also runs behind one guard naming all of ``paths`` (``guard_where``).
    """
    condition = _condition(ctx, paths)
    if where is None:
        ctx.edits.close(owner, f" WHERE {condition}", offset=after)
        return
    shapes = [(name, _has_relationships(path)) for name, path in paths]
    guard_where(
        ctx, where, lambda _: ctx.predicates.visible_paths(shapes), _elements_of(owner),
        frozenset(name for name, _ in paths), then=f" AND {condition}",
    )  # fmt: skip


def _condition(ctx: Context, paths: list[tuple[str, ast.Path]]) -> str:
    ctx.scoped.update(path for _, path in paths)
    return " AND ".join(
        f"({ctx.predicates.visible_path(name, has_relationships=_has_relationships(path))})" for name, path in paths
    )


# ---- the error oracle: agent conditions run only on visible elements ----------------------
#
# Neo4j may evaluate an agent's condition on an element as soon as it is bound (a middle node,
# an element inside a quantified path), before the path-level scope predicate. A condition
# that raises on a hidden value (1 / 0, date('x')) then reports that the value exists. So an
# agent WHERE holding a condition that *could* raise runs as `CASE WHEN <visible> THEN (where)
# ELSE false END`: CASE evaluates a branch only once it is selected. One CASE per WHERE, whatever
# its number of conjuncts, and its guard names the paths or elements it waits for rather than
# repeating their predicates, so the rewritten text stays linear in the agent's. The conjuncts
# that cannot raise (a comparison of an element's property with a literal) are also repeated in
# front of the CASE, as written, so the planner can still use them for index seeks.

# Operators that never raise on any operand types (they yield null instead).
_VALUE_COMPARISONS = frozenset({"=", "<>", "<", ">", "<=", ">=", "STARTS_WITH", "ENDS_WITH", "CONTAINS"})
_LOGICAL = frozenset({"AND", "OR", "XOR"})


class _Known:
    """Element names shared by many checks, plus the few one of them adds: a lookup, never a copy.

    A path with n elements has n inline conditions; copying its names for each would make the
    rewrite quadratic in the query.
    """

    __slots__ = ("_added", "_base")

    def __init__(self, base: Container[str], added: tuple[str, ...] = ()) -> None:
        self._base, self._added = base, added

    def __contains__(self, name: object) -> bool:
        return name in self._added or name in self._base

    def plus(self, name: str) -> _Known:
        return _Known(self._base, (*self._added, name))


def _value_cannot_raise(expr: ast.Expr, elements: Container[str]) -> bool:
    """A value that is computed without any operation that can fail."""
    pending = [expr]
    while pending:
        value = ast.unparen(pending.pop())
        if isinstance(value, ast.Literal | ast.Parameter | ast.Variable):
            continue
        if isinstance(value, ast.Property):
            # Only on an element of this pattern: `s.key` raises when s is a string or a list.
            subject = ast.unparen(value.subject)
            if isinstance(subject, ast.Variable) and subject.name in elements:
                continue
            return False
        if isinstance(value, ast.ListLiteral):
            pending.extend(value.items)
            continue
        return False
    return True


def cannot_raise(expr: ast.Expr, elements: Container[str], paths: Container[str] = frozenset()) -> bool:
    """A boolean condition that cannot raise, whatever the values of ``elements`` (singleton elements).

    Deliberately small (fail closed): AND/OR/XOR/NOT over comparisons, IN a list literal,
    IS NULL, type and label predicates, on literals, parameters, variables and properties of
    this pattern's elements; and all/any/none/single over ``nodes(p)``/``relationships(p)`` of one
    of this pattern's ``paths`` with such a condition (shortestPath can then still apply it during
    its search). `AND` of a non-boolean raises, so its operands must be conditions.

    Iterative: a flat chain of 2,000 ORs is as deep as the tree gets without brackets.
    """
    pending: list[tuple[ast.Expr, _Known]] = [(expr, _Known(elements))]
    while pending:
        node, names = pending.pop()
        node = ast.unparen(node)
        if isinstance(node, ast.Literal):
            safe = node.kind in ("boolean", "null")
        elif isinstance(node, ast.BinaryOp) and node.op in _LOGICAL:
            pending += [(node.left, names), (node.right, names)]
            continue
        elif isinstance(node, ast.BinaryOp) and node.op in _VALUE_COMPARISONS:
            safe = _value_cannot_raise(node.left, names) and _value_cannot_raise(node.right, names)
        elif isinstance(node, ast.BinaryOp) and node.op == "IN":  # `x IN 5` raises: a list literal only
            safe = (
                isinstance(ast.unparen(node.right), ast.ListLiteral)
                and _value_cannot_raise(node.left, names)
                and _value_cannot_raise(node.right, names)
            )
        elif isinstance(node, ast.UnaryOp) and node.op.upper() == "NOT":
            pending.append((node.operand, names))
            continue
        elif isinstance(node, ast.IsNull | ast.TypePredicate):
            safe = _value_cannot_raise(node.operand, names)
        elif isinstance(node, ast.LabelCheck):
            subject = ast.unparen(node.subject)
            computed = any(isinstance(n, ast.LabelDynamic) for n in node.labels.walk())
            safe = isinstance(subject, ast.Variable) and subject.name in names and not computed
        elif isinstance(node, ast.Quantified) and node.where is not None and _is_path_elements(node.source, paths):
            pending.append((node.where, names.plus(node.variable.name)))
            continue
        else:
            safe = False
        if not safe:
            return False
    return True


def _is_path_elements(expr: ast.Expr, paths: Container[str]) -> bool:
    expr = ast.unparen(expr)
    if not (isinstance(expr, ast.FunctionCall) and expr.name.lower() in ("nodes", "relationships")):
        return False
    arg = ast.unparen(expr.args[0]) if len(expr.args) == 1 else None
    return isinstance(arg, ast.Variable) and arg.name in paths


def _conjuncts(expr: ast.Expr) -> list[ast.Expr]:
    """The AND-ed conditions of ``expr``, through any parentheses, each without its own."""
    out, stack = [], [expr]
    while stack:
        node = ast.unparen(stack.pop())
        if isinstance(node, ast.BinaryOp) and node.op == "AND":
            stack.extend([node.right, node.left])
        else:
            out.append(node)
    return out


def _risky_conjuncts(where: ast.Expr, elements: Container[str], paths: Container[str]) -> list[ast.Expr]:
    return [c for c in _conjuncts(where) if not cannot_raise(c, elements, paths)]


def guard_where(
    ctx: Context,
    where: ast.Expr,
    guard: str | Callable[[list[ast.Expr]], str],
    elements: Container[str],
    paths: Container[str] = frozenset(),
    *,
    then: str = "",
) -> None:
    """Run ``where`` only once ``guard`` holds, if any of its conjuncts could raise; append ``then``.

    ``guard`` is the guard's text, or builds it from the conjuncts that could raise (an empty
    text: nothing to check them behind, refuse). Without any, ``where`` stays as written:
    ``(where)`` followed by ``then``.
    """
    risky = _risky_conjuncts(where, elements, paths)
    if not risky:
        if then:
            ctx.edits.open(where, "(")
            ctx.edits.close(where, f"){then}")
        return
    text = guard if isinstance(guard, str) else guard(risky)
    if not text:
        raise SCOPE_UNSUPPORTED.rejected(
            f"the condition {ctx.parsed.source(risky[0])!r} could fail on a hidden element and names no "
            "element of its pattern to check first; move it into the MATCH's WHERE"
        )
    flagged = set(risky)
    seekable = "".join(f"({ctx.parsed.source(c)}) AND " for c in _conjuncts(where) if c not in flagged)
    ctx.edits.open(where, f"{seekable}CASE WHEN {text} THEN (")
    ctx.edits.close(where, f") ELSE false END{then}")


def _behind(ctx: Context, expr: ast.Expr, guard: str, *, otherwise: str) -> None:
    """Wrap ``expr`` as ``CASE WHEN guard THEN (expr) ELSE otherwise END``: evaluated only once guard holds."""
    ctx.edits.open(expr, f"CASE WHEN {guard} THEN (")
    ctx.edits.close(expr, f") ELSE {otherwise} END")


# Kinds of element variables: a single node or relationship, or a list of relationships
# (`-[r*1..3]-`, `-[r]->{1,3}` outside its own WHERE).
_NODE, _REL, _RELS = "node", "rel", "rels"


def _env(path: ast.Path) -> dict[str, str]:
    """The element variables ``path`` binds as seen from its own level (not inside quantified groups)."""
    env: dict[str, str] = {}
    for element in path.elements:
        if isinstance(element, ast.NodePattern) and element.variable is not None:
            env[element.variable.name] = _NODE
        elif isinstance(element, ast.RelPattern) and element.variable is not None:
            listed = element.length is not None or element.quantifier is not None
            env[element.variable.name] = _RELS if listed else _REL
        elif isinstance(element, ast.QuantifiedPath) and element.quantifier is None:
            env.update(_env(element.path))  # `((a)-->(b))`: a plain group binds singletons (bracket-bounded depth)
    return env


def _owner_paths(owner: ast.Node) -> list[ast.Path]:
    if isinstance(owner, ast.Match | ast.SubqueryExpr):
        return [part.path for part in owner.patterns]
    if isinstance(owner, ast.PatternComprehension):
        return [owner.pattern]
    return []


def _elements_of(owner: ast.Node) -> frozenset[str]:
    return frozenset(name for path in _owner_paths(owner) for name in _singletons(_env(path)))


def _element_guard(ctx: Context, env: dict[str, str], names: set[str], single: str | None = None) -> str:
    """One predicate: every element of ``env`` named in ``names`` is visible ("" when none is).

    ``single`` names a quantified relationship inside its own WHERE, where it is one relationship.
    """
    kinds = {name: _REL if name == single else env[name] for name in sorted(names) if name in env}
    return ctx.predicates.visible_elements(
        [quote_name(n) for n, kind in kinds.items() if kind == _NODE],
        [quote_name(n) for n, kind in kinds.items() if kind == _REL],
        [quote_name(n) for n, kind in kinds.items() if kind == _RELS],
    )


def _referenced(exprs: list[ast.Expr]) -> set[str]:
    return {node.name for expr in exprs for node in expr.walk() if isinstance(node, ast.Variable)}


def _guard_value(ctx: Context, value: ast.Expr, guard: str) -> None:
    """A property-map value that could raise runs only once ``guard`` holds (else null: no match)."""
    if not guard:
        raise SCOPE_UNSUPPORTED.rejected(
            f"the property value {ctx.parsed.source(value)!r} could fail on a hidden element; "
            "use a literal or a parameter, or move the condition into the MATCH's WHERE"
        )
    _behind(ctx, value, guard, otherwise="null")


def _singletons(env: dict[str, str]) -> frozenset[str]:
    return frozenset(name for name, kind in env.items() if kind in (_NODE, _REL))


def _guard_element(
    ctx: Context, element: ast.NodePattern | ast.RelPattern, env: dict[str, str], singletons: frozenset[str]
) -> None:
    own = {element.variable.name} if element.variable is not None else set()
    single: str | None = None
    known: Container[str] = singletons
    if isinstance(element, ast.RelPattern) and element.variable is not None and element.length is None:
        single = element.variable.name  # a quantified relationship is a single one in its own WHERE
        known = _Known(singletons, (single,))
    if element.where is not None:
        where = element.where
        guard_where(ctx, where, lambda risky: _element_guard(ctx, env, own | _referenced(risky), single), known)
    if isinstance(element.properties, ast.MapLiteral):
        for entry in element.properties.entries:
            if not _value_cannot_raise(entry.value, known):
                _guard_value(ctx, entry.value, _element_guard(ctx, env, own | _referenced([entry.value]), single))


def guard_path_conditions(ctx: Context, path: ast.Path) -> None:
    """Inline WHEREs, property maps and quantified-path WHEREs inside ``path``, behind their elements' visibility."""
    env = _env(path)
    singletons = _singletons(env)
    for element in path.elements:
        if isinstance(element, ast.QuantifiedPath):
            inner = _env(element.path)
            if element.where is not None:
                # Every element of the group is in scope here: check them all, not only those named.
                guard_where(ctx, element.where, _element_guard(ctx, inner, set(inner)), _singletons(inner))
            guard_path_conditions(ctx, element.path)  # depth bounded by the brackets
        else:
            _guard_element(ctx, element, env, singletons)


def scope_selected_path(ctx: Context, part: ast.PatternPart) -> None:
    """Under a GQL selector (ANY SHORTEST, SHORTEST k, …), visibility must hold *before* the selection.

    Neo4j selects among the paths the selector's parenthesised path pattern matches, after that
    pattern's own WHERE: ``ANY SHORTEST (q = (a)-->+(b) WHERE <q is visible>)``. A hidden shorter path
    then never suppresses a visible one. The MATCH-level predicate stays too (it costs nothing).
    """
    if part.selector in SCOPABLE_SELECTORS or part.selector in ("shortestPath", "allShortestPaths"):
        return
    path = part.path
    only = path.elements[0] if len(path.elements) == 1 else None
    if isinstance(only, ast.QuantifiedPath) and only.quantifier is None and only.variable is not None:
        # `SHORTEST 1 (q = … WHERE …)`: the agent named the group; its WHERE gets the predicate.
        condition = f"({ctx.predicates.visible_path(only.variable.name, has_relationships=_has_relationships(path))})"
        if only.where is None:
            ctx.edits.close(only.path, f" WHERE {condition}")
        else:
            ctx.edits.open(only.where, "(")
            ctx.edits.close(only.where, f") AND {condition}")
        return
    name = ctx.fresh_path()
    condition = f"({ctx.predicates.visible_path(name, has_relationships=_has_relationships(path))})"
    ctx.edits.open(path, f"({name} = ")
    ctx.edits.close(path, f" WHERE {condition})")


def _scope_match(ctx: Context, node: ast.Match) -> list[tuple[str, ast.Path]]:
    paths = [(_name_part(ctx, part), part.path) for part in node.patterns]
    for part in node.patterns:
        scope_selected_path(ctx, part)
    _add_condition(ctx, node, node.where, node.end, paths)
    return paths


def _scope_subquery(ctx: Context, node: ast.SubqueryExpr) -> list[tuple[str, ast.Path]]:
    if node.body is not None:
        return []  # a full query: its own MATCH clauses are scoped as clauses
    # The short form `EXISTS { (a)-->(b) WHERE … }` becomes `EXISTS { MATCH p = … }`.
    ctx.edits.open(node, "MATCH ", offset=node.patterns[0].start)
    paths = [(_name_part(ctx, part), part.path) for part in node.patterns]
    for part in node.patterns:
        scope_selected_path(ctx, part)
    _add_condition(ctx, node, node.where, node.patterns[-1].end, paths)
    return paths


def _scope_comprehension(ctx: Context, node: ast.PatternComprehension) -> list[tuple[str, ast.Path]]:
    if node.path_variable is not None:
        name = node.path_variable.name
    else:
        name = ctx.fresh_path()
        ctx.edits.open(node.pattern, f"{name} = ")
    paths = [(name, node.pattern)]
    _add_condition(ctx, node, node.where, node.pattern.end, paths)
    return paths


def _scope_pattern_predicate(ctx: Context, node: ast.PatternPredicate) -> list[tuple[str, ast.Path]]:
    # `WHERE (a)-->(b)` is true iff a visible such path exists.
    name = ctx.fresh_path()
    paths = [(name, node.pattern.path)]
    ctx.edits.open(node, f"EXISTS {{ MATCH {name} = ")
    ctx.edits.close(node, f" WHERE {_condition(ctx, paths)} }}")
    return paths


Scoper = Callable[[Context, Any], list[tuple[str, ast.Path]]]

# Expressions that own patterns: each draws its generated names from a frame of its own.
EXPRESSION_OWNERS = (ast.SubqueryExpr, ast.PatternComprehension, ast.PatternPredicate)

SCOPERS: dict[type[ast.Node], Scoper] = {
    ast.Match: _scope_match,
    ast.SubqueryExpr: _scope_subquery,
    ast.PatternComprehension: _scope_comprehension,
    ast.PatternPredicate: _scope_pattern_predicate,
}
"""Every kind of node that owns patterns, and how its patterns receive their predicate."""


def scope_patterns(ctx: Context) -> None:
    """Give every pattern a path variable and a visibility condition in its own WHERE.

    In the same walk, every agent condition that could raise is put behind the visibility of
    what it runs on (``guard_where``, ``guard_path_conditions``). It has to be the same
    pre-order walk: a guarded conjunct can have the very span of a pattern predicate, and the
    guard must be registered first to wrap the EXISTS the predicate becomes (edits.py).
    """
    stack: list[tuple[ast.Node, Frame]] = [(statement, ctx.frame) for statement in reversed(ctx.parsed.statements)]
    while stack:
        node, frame = stack.pop()
        if isinstance(node, EXPRESSION_OWNERS):
            frame = Frame(frame.depth + 1)
        ctx.frame = frame
        if _is_exists_function(node):
            # exists(<pattern>) takes only a pattern: drop the name and keep its parentheses, so
            # the pattern predicate inside becomes ((EXISTS { … })), the same test, scoped.
            ctx.edits.replace(node.start, token_at(ctx.parsed, node.start, "("), "")
        scoper = SCOPERS.get(type(node))
        if scoper is not None:
            for _, path in scoper(ctx, node):
                guard_path_conditions(ctx, path)
        stack.extend((child, frame) for child in reversed(node.children()))


def _is_exists_function(node: ast.Node) -> bool:
    return (
        isinstance(node, ast.FunctionCall)
        and node.name.lower() == "exists"
        and len(node.args) == 1
        and isinstance(ast.unparen(node.args[0]), ast.PatternPredicate)
    )


def keep_columns(ctx: Context) -> None:
    """The agent's columns stay its own: no generated variable in ``*``, no rewritten text as a name."""
    keep_agent_columns(ctx.parsed, ctx.edits, ctx.generated)


def refuse_unscoped(ctx: Context) -> None:
    """Fail closed on coverage: a pattern without its visibility predicate refuses the query."""
    for path in unscoped_patterns(ctx.parsed, ctx.scoped):
        raise SCOPE_UNSUPPORTED.rejected(
            f"the pattern {ctx.parsed.source(path)!r} would run without its visibility predicate: "
            "the scope rewrite does not cover the construct it appears in"
        )


PASSES: tuple[Pass, ...] = (
    refuse_reserved_names,
    refuse_element_ids,
    refuse_unscopable,
    scope_patterns,
    keep_columns,
    refuse_unscoped,
)


def run_passes(parsed: ParsedQuery, *, policy: Policy, predicates: Predicates, max_chars: int) -> str:
    """The rewritten Cypher of ``parsed``; raises ``QueryRejected`` when it cannot be scoped.

    ``scope.unsupported`` for a construct the passes refuse, ``scope.too_large`` when the result
    would be longer than ``max_chars`` (checked before the text is built).
    """
    ctx = Context(parsed=parsed, policy=policy, predicates=predicates)
    for scope_pass in PASSES:
        scope_pass(ctx)
    size = len(parsed.text) + ctx.edits.inserted_chars()
    if size > max_chars:
        raise SCOPE_TOO_LARGE.rejected(
            f"the scoped query would be {size:,} characters long (the visibility predicates add about 230 "
            f"per pattern); the limit is {max_chars:,}: use fewer patterns"
        )
    return ctx.edits.apply(parsed)
