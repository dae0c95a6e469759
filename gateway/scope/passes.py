"""The scope passes: each is a small function over one parsed query.

``PASSES`` lists them in the order they run. The first three only refuse
(``scope.unsupported``, ``scope.element_id``); the fourth records insertions in an
``Edits``; the last refuses any pattern the fourth left without its predicates.

The one idea (docs/decisions/0018): every element of every pattern the query can match
(MATCH, OPTIONAL MATCH, EXISTS / COUNT / COLLECT, pattern comprehensions, pattern
predicates, quantified and variable-length paths, selectors) is checked on its own, so the
planner can drop a hidden element right after the scan or expand that finds it. A
fixed-length part names its anonymous elements (``__gw_n<k>``, ``__gw_r<k>``) and its
owner's WHERE gets one conjunct per element (``Predicates.node_visible`` /
``relationship_visible``; a relationship's ends are elements of the same part). A quantified
group checks its elements per iteration in its own WHERE. A part with a variable-length or
quantified relationship, or under a selector, keeps a path variable and the whole-path
predicate, which Neo4j applies during the expansion or the selector's search. Elements an
earlier clause bound are already checked. ``SCOPERS`` says, per kind of node that owns
patterns, how they get their conjuncts; ``refuse_unscoped`` then checks that every pattern
in the tree received them, so a construct nobody taught the rewrite is refused, never run
unscoped.

The second idea closes the error and timing oracles: Neo4j may evaluate an agent's condition
on an element as soon as it is bound, before its visibility conjunct, so every agent
condition runs as ``CASE WHEN <visible> THEN (condition) ELSE false END`` behind the
elements it names (``guard_condition``), except the seekable comparisons kept in front for
the planner (``seekable``).

Cost: the text grows linearly with the agent's. One conjunct per element, one CASE per
WHERE whose guard holds the conjuncts of the elements it names (not written again after it:
the CASE is false wherever its guard is, except beside a path search); ``plan`` refuses a
result longer than the policy's ``max_rewritten_chars``. Every analysis here is iterative or
recurses only into bracketed nesting, which the parser bounds.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Container, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from gateway.catalogue import SCOPE_ELEMENT_ID, SCOPE_TOO_LARGE, SCOPE_UNSUPPORTED
from gateway.cypher import ParsedQuery, ast
from gateway.policy import Policy
from gateway.scope.calls import function_is_safe, why_refused
from gateway.scope.columns import keep_agent_columns
from gateway.scope.coverage import unscoped_patterns
from gateway.scope.edits import Edits, token_at
from gateway.scope.predicates import GENERATED_PREFIX, Predicates, quote_name
from gateway.scope.projection import ShownKeys, final_returns, wrap_returns
from gateway.scope.visible_props import find_unlisted_reads, reads_partly_shown, write_unlisted_reads

# Selectors whose MATCH-level WHERE is applied during the search (legacy shortestPath) or that
# select nothing (ALL). GQL ANY / SHORTEST k / ALL SHORTEST / … GROUPS select paths *before* the
# MATCH's WHERE filters them; for those, ``scope_selected_path`` puts the predicate inside the
# parenthesised path pattern, which Neo4j applies before it selects (measured on 5.26 and 2026.x).
SHORTEST_PATH_FUNCTIONS = frozenset({"shortestPath", "allShortestPaths"})
SCOPABLE_SELECTORS: frozenset[str | None] = frozenset(
    {None, "shortestPath", "allShortestPaths", "ALL", "ALL PATH", "ALL PATHS"}
)


class Frame:
    """Where generated names (``p`` paths, ``n`` nodes, ``r`` relationships) are drawn from: the
    query's clauses, or one expression.

    Inside an expression (EXISTS/COUNT/COLLECT, a comprehension, a pattern predicate) names
    depend only on the nesting depth and the order within that expression, so two equal
    expressions stay equal after the rewrite: Neo4j matches an ORDER BY or a grouping key to a
    projected expression by its text. A name never clashes with one in scope around it: the
    clauses' names are numbered across the whole query, and an expression's differ by depth.
    """

    def __init__(self, depth: int = 0) -> None:
        self.depth = depth
        self.counts: dict[str, int] = {}

    def name(self, kind: str, counters: dict[str, int]) -> str:
        if self.depth == 0:
            counters[kind] = counters.get(kind, 0) + 1
            return f"{GENERATED_PREFIX}{kind}{counters[kind]}"
        self.counts[kind] = self.counts.get(kind, 0) + 1
        return f"{GENERATED_PREFIX}{kind}{self.depth}_{self.counts[kind]}"


@dataclass
class Context:
    parsed: ParsedQuery
    policy: Policy
    predicates: Predicates
    edits: Edits = field(default_factory=Edits)
    scoped: set[ast.Path] = field(default_factory=set)  # every path that received its predicate
    generated: dict[ast.PatternPart, list[str]] = field(default_factory=dict)  # names given in MATCH parts
    element_names: dict[ast.Node, str] = field(default_factory=dict)  # anonymous elements the rewrite named
    handled: set[ast.QuantifiedPath] = field(default_factory=set)  # groups whose WHERE a selector guarded
    # Per MATCH and expression owner: the names bound before it, with the labels stated where bound.
    bound: dict[ast.Node, dict[str, frozenset[str]]] = field(default_factory=dict)
    # Reads of keys some elements do not show (visible_props): (node, opener, closer) wrappers, and
    # map projection items replaced (projection, item, text).
    read_wraps: list[tuple[ast.Node, str, str]] = field(default_factory=list)
    read_items: list[tuple[ast.MapProjection, ast.MapProjectionItem, str]] = field(default_factory=list)
    frame: Frame = field(default_factory=Frame)
    shown: ShownKeys | None = None  # under hidden properties: the keys an element may send
    wrapped: bool = False  # the final RETURNs project elements to their shown keys
    stars: dict[ast.Projection, list[str]] = field(default_factory=dict)  # final RETURN *'s variables
    _counters: dict[str, int] = field(default_factory=dict)

    def rewritten(self) -> set[ast.Node]:
        """The nodes other than pattern owners whose text the rewrite changes (a column they name gets AS)."""
        return {node for node, _, _ in self.read_wraps} | {node for node, _, _ in self.read_items}

    def hides(self) -> bool:
        """Whether the policy hides properties (the final RETURNs are wrapped)."""
        return self.shown is not None and self.shown.active()

    def fresh(self, kind: str) -> str:
        """A generated name: ``p`` for a path, ``n`` for a node, ``r`` for a relationship."""
        return self.frame.name(kind, self._counters)


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


# ---- naming: every element the visibility text must reach gets a variable ------------------


def _name_part(ctx: Context, part: ast.PatternPart) -> str:
    """The part's path variable, inserting a generated one when the agent gave none."""
    if part.variable is not None:
        return part.variable.name
    name = ctx.fresh("p")
    ctx.edits.open(part, f"{name} = ")
    ctx.generated.setdefault(part, []).append(name)
    return name


def _name_element(ctx: Context, element: ast.NodePattern | ast.RelPattern, part: ast.PatternPart | None) -> str:
    """The element's variable, inserting a generated ``__gw_n<k>``/``__gw_r<k>`` when it has none.

    ``()`` becomes ``(__gw_n1)``; ``-->`` becomes ``-[__gw_r1]->`` (the brackets go after its first
    ``-``), ``-[:T]->`` becomes ``-[__gw_r1:T]->``.
    """
    known = _element_name(ctx, element)
    if known is not None:
        return known
    if isinstance(element, ast.NodePattern):
        name = ctx.fresh("n")
        ctx.edits.open(element, name, offset=token_at(ctx.parsed, element.start, "(") + 1)
    else:
        name = ctx.fresh("r")
        dash = token_at(ctx.parsed, element.start, "-")
        bracket = _bracket_in(ctx.parsed, element)
        if bracket is None:
            ctx.edits.open(element, f"[{name}]", offset=dash + 1)
        else:
            ctx.edits.open(element, name, offset=bracket + 1)
    ctx.element_names[element] = name
    if part is not None:
        ctx.generated.setdefault(part, []).append(name)
    return name


def _element_name(ctx: Context, element: ast.NodePattern | ast.RelPattern) -> str | None:
    """The agent's variable of ``element``, or the one the rewrite gave it, if any."""
    if element.variable is not None:
        return element.variable.name
    return ctx.element_names.get(element)


def _bracket_in(parsed: ParsedQuery, rel: ast.RelPattern) -> int | None:
    try:
        at = token_at(parsed, rel.start, "[")
    except ValueError:
        return None
    return at if at < rel.end else None


def _has_condition(element: ast.NodePattern | ast.RelPattern) -> bool:
    if element.where is not None:
        return True
    entries = element.properties.entries if isinstance(element.properties, ast.MapLiteral) else []
    return any(not _constant(entry.value) for entry in entries)


def _stated_labels(labels: ast.LabelExpression | None) -> frozenset[str]:
    """The labels every match of ``labels`` carries (a conjunction of names; nothing for ``|``, ``!``, ``%``, ``$``)."""
    return _names_joined_by(labels, "&")


def _stated_type(types: ast.LabelExpression | None) -> frozenset[str]:
    """The types a relationship pattern allows (``:A``, ``:A|B``); nothing when it does not list them."""
    return _names_joined_by(types, "|")


def _names_joined_by(expression: ast.LabelExpression | None, op: str) -> frozenset[str]:
    """The names of ``expression`` when it is only names joined by ``op`` (and parentheses); else nothing."""
    if expression is None:
        return frozenset()
    names: list[str] = []
    stack: list[ast.LabelNode] = [expression.expression]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.LabelName):
            names.append(node.name)
        elif isinstance(node, ast.LabelBinary) and node.op == op:
            stack += [node.left, node.right]
        elif isinstance(node, ast.LabelParen):
            stack.append(node.operand)
        else:
            return frozenset()
    return frozenset(names)


def _flat(path: ast.Path) -> list[ast.PathElement]:
    """``path``'s elements with unquantified groups opened (their elements are singletons of the path)."""
    out: list[ast.PathElement] = []
    for element in path.elements:
        if isinstance(element, ast.QuantifiedPath) and element.quantifier is None:
            out += _flat(element.path)  # depth bounded by the brackets
        else:
            out.append(element)
    return out


def needs_path_predicate(parsed: ParsedQuery, part_selector: str | None, path: ast.Path) -> bool:
    """A selector, a variable-length or a quantified relationship: visibility is checked over the path.

    So is a relationship written with the old type alternation ``[:A|:B]``, which Neo4j refuses
    to combine with a variable: it cannot be named to be checked on its own.
    """
    if part_selector is not None:
        return True
    return any(
        isinstance(element, ast.RelPattern)
        and (element.length is not None or element.quantifier is not None or _legacy_alternation(parsed, element))
        for element in _flat(path)
    )


def _legacy_alternation(parsed: ParsedQuery, rel: ast.RelPattern) -> bool:
    if rel.variable is not None or rel.types is None:
        return False
    tokens = parsed.tokens
    index = bisect_left(tokens, rel.types.start, key=lambda token: token.start)
    bar = False
    for token in tokens[index:]:
        if token.start >= rel.types.end:
            return False
        if bar and token.value == ":":
            return True
        bar = token.value == "|"
    return False


def _has_relationships(path: ast.Path) -> bool:
    return any(isinstance(n, ast.RelPattern | ast.QuantifiedPath) for n in path.walk())


# ---- what each name of a pattern owner waits for --------------------------------------------


@dataclass
class _Owner:
    """The patterns of one owner (a MATCH, a short EXISTS/COUNT, a comprehension, a pattern predicate).

    Collects every element to check, then writes per name the visibility it waits for
    (``checks``) and the conjuncts that go to the root of the owner's WHERE (``root``).
    ``outer`` holds the names bound before the owner: their elements are already filtered.
    """

    predicates: Predicates
    outer: Container[str] = frozenset()
    nodes: dict[str, set[str]] = field(default_factory=dict)  # name -> the labels its patterns state
    rels: dict[str, tuple[frozenset[str], str | None, str | None]] = field(default_factory=dict)  # types, ends
    node_lists: dict[str, frozenset[str]] = field(default_factory=dict)  # group variables, checked per iteration
    rel_lists: dict[str, frozenset[str]] = field(default_factory=dict)
    paths: dict[str, bool] = field(default_factory=dict)  # path name -> has relationships
    whole: list[str] = field(default_factory=list)  # paths checked as a whole (at the root)
    # Paths of shortestPath()/allShortestPaths(): their predicate is written once (see _finish).
    shortest: set[str] = field(default_factory=set)
    waits_for_path: dict[str, str] = field(default_factory=dict)  # a list variable -> its path
    singletons: set[str] = field(default_factory=set)  # element variables (a property of one cannot raise)
    # Single-typed directed relationships between two named nodes: (type, from node, to node).
    hops: list[tuple[str, str, str]] = field(default_factory=list)
    # Names of ``outer``: the labels stated where each was bound, and those this owner states.
    outer_labels: dict[str, frozenset[str]] = field(default_factory=dict)
    _walked: dict[str, dict[str, str]] | None = None  # ``walked()``, until an element is recorded

    def hop(self, rel_type: str, source: str, target: str) -> None:
        self._walked = None
        self.hops.append((rel_type, source, target))

    def node(self, name: str, labels: frozenset[str]) -> None:
        self._walked = None
        self.singletons.add(name)
        if name not in self.outer:
            self.nodes.setdefault(name, set()).update(labels)
        else:
            self.outer_labels[name] = self.outer_labels.get(name, frozenset()) | labels

    def rel(self, name: str, types: frozenset[str], ends: tuple[str | None, str | None]) -> None:
        self.singletons.add(name)
        if name not in self.outer:
            self.rels.setdefault(name, (types, *ends))

    def _node_text(self, name: str) -> str:
        walked = frozenset(self.walked().get(name, {}))
        return self.predicates.node_visible(quote_name(name), frozenset(self.nodes[name]), walked=walked)

    def walked(self) -> dict[str, dict[str, str]]:
        """Per node, the derived labels whose walk this owner's own pattern takes, each to the anchor
        node it reaches (checked in the same WHERE): node name -> {label: anchor name}.

        ``(r:Repository)-[:HAS_TASK]->(t)`` under ``Task: (x)<-[:HAS_TASK]-(anchor:Repository)``: a
        row holds ``t`` only with a visible ``r`` that proves the walk, so ``t``'s text leaves it out
        (whether ``t`` is a Task is still tested) and a condition on ``t`` waits for ``r`` as well
        (``checks``). Kept until another element is recorded.
        """
        if self._walked is not None:
            return self._walked
        walked: dict[str, dict[str, str]] = {}
        self._walked = walked
        rules = self.predicates.rules
        if rules is None:
            return walked
        for name in self.nodes:
            for label in sorted(rules.scope.nodes):
                hops = rules.derived_hops(label)
                anchor = self._follow(name, hops) if hops is not None else None
                if anchor is not None:
                    walked.setdefault(name, {})[label] = anchor
        # A walk proven through a node whose own walk is proven through the first would be circular.
        for name, labels in walked.items():
            for label, anchor in list(labels.items()):
                if name in _anchors_above(walked, anchor):
                    del labels[label]
        return walked

    def _follow(self, start: str, hops: tuple[tuple[str, str, frozenset[str]], ...]) -> str | None:
        """The node this owner's pattern reaches from ``start`` along ``hops``, each with its stated labels.

        Or a node part of the way whose stated derived label walks the rest of ``hops`` by its own
        rule: ``Attempt: (x)<-[:HAS_ATTEMPT]-(:Task)<-[:HAS_TASK]-(anchor:Repository)`` beside
        ``Task: (x)<-[:HAS_TASK]-(anchor:Repository)``, ``(t:Task)-[:HAS_ATTEMPT]->(a)``: a visible
        ``t`` is a Task that has taken that rest.
        """
        current, visited = start, {start}
        for index, (rel_type, direction, labels) in enumerate(hops):
            if index and self._walks_rest(current, hops[index:]):
                return current
            following = None
            for hop_type, source, target in self.hops:
                near, far = (source, target) if direction == "out" else (target, source)
                reached = hop_type == rel_type and near == current and far not in visited
                if reached and labels <= self._labels_of(far):
                    following = far
                    break
            if following is None:
                return None
            current = following
            visited.add(current)
        return current

    def _walks_rest(self, name: str, rest: tuple[tuple[str, str, frozenset[str]], ...]) -> bool:
        """Whether a label ``name`` is stated to carry is derived by exactly the walk ``rest``."""
        rules = self.predicates.rules
        return rules is not None and any(rules.derived_hops(label) == rest for label in self._labels_of(name))

    def _labels_of(self, name: str) -> frozenset[str]:
        """What this owner knows ``name`` carries: an element of its own, or one bound (and checked) before."""
        if name in self.nodes:
            return frozenset(self.nodes[name])
        return self.outer_labels.get(name, frozenset())

    def _end(self, name: str | None, rel: str, function: str) -> tuple[str, ...]:
        if name is None:
            return (self.predicates.node_visible(f"{function}({quote_name(rel)})"),)
        return (self._node_text(name),) if name in self.nodes else ()

    def checks(self) -> dict[str, tuple[str, ...]]:
        """Per name, the visibility texts a condition naming it waits for (a relationship: with its ends)."""
        out: dict[str, tuple[str, ...]] = {name: (self._node_text(name),) for name in self.nodes}
        walked = self.walked()
        for name in walked:
            # Its visibility is its own text and its anchors' (and theirs, up the proven walks).
            # An anchor bound before is already visible: nothing to wait for.
            above = sorted(a for a in _anchors_above(walked, name) if a in self.nodes)
            out[name] = (self._node_text(name), *(self._node_text(anchor) for anchor in above))
        for name, (types, start, end) in self.rels.items():
            own = self.predicates.relationship_visible(quote_name(name), types)
            out[name] = (own, *self._end(start, name, "startNode"), *self._end(end, name, "endNode"))
        for name, labels in self.node_lists.items():
            out[name] = (self.predicates.visible_nodes(quote_name(name), labels),)
        for name, types in self.rel_lists.items():
            out[name] = (self.predicates.visible_relationships(quote_name(name), types),)
        for name, has in self.paths.items():
            out[name] = (self.predicates.visible_path(quote_name(name), has_relationships=has),)
        for name, path in self.waits_for_path.items():
            out[name] = out[path]
        return out

    def root(self) -> list[str]:
        """The conjuncts the owner's WHERE gets: one per element, one per path checked as a whole."""
        texts = [self._node_text(name) for name in self.nodes]
        for name, (types, _, _) in self.rels.items():
            texts.append(self.predicates.relationship_visible(quote_name(name), types))
        texts += [self.path_text(name) for name in self.whole]
        return texts

    def path_text(self, name: str) -> str:
        return self.predicates.visible_path(quote_name(name), has_relationships=self.paths[name])


def _anchors_above(walked: dict[str, dict[str, str]], name: str) -> set[str]:
    """Every anchor ``name``'s proven walks reach, and theirs in turn."""
    seen: set[str] = set()
    pending = [name]
    while pending:
        for anchor in walked.get(pending.pop(), {}).values():
            if anchor not in seen:
                seen.add(anchor)
                pending.append(anchor)
    return seen


def _joined(texts: list[str] | tuple[str, ...]) -> str:
    return " AND ".join(f"({text})" for text in dict.fromkeys(texts))


def _guard_text(checks: dict[str, tuple[str, ...]], names: set[str]) -> str:
    return _joined([text for name in sorted(names) for text in checks.get(name, ())])


def _scope_elements(
    ctx: Context, owner: _Owner, path: ast.Path, part: ast.PatternPart | None, *, name_all: bool
) -> None:
    """Record the singletons of ``path`` (named when ``name_all`` or when they carry a condition)."""
    flat = _flat(path)
    names: list[str | None] = []
    for element in flat:
        if isinstance(element, ast.QuantifiedPath):
            names.append(None)
            continue
        single = not (isinstance(element, ast.RelPattern) and (element.length or element.quantifier))
        named = element.variable is not None or (single and name_all) or _has_condition(element)
        names.append(_name_element(ctx, element, part) if named else None)
    for index, (element, name) in enumerate(zip(flat, names, strict=True)):
        if name is None or isinstance(element, ast.QuantifiedPath):
            continue
        if isinstance(element, ast.NodePattern):
            owner.node(name, _stated_labels(element.labels))
        elif element.length is None and element.quantifier is None:
            ends = (_neighbour(flat, names, index - 1), _neighbour(flat, names, index + 1))
            if None in ends:
                ends = (None, None)  # an unnamed neighbour: check both ends through the relationship
            types = _stated_type(element.types)
            owner.rel(name, types, ends)
            left, right = ends
            if left is not None and right is not None and len(types) == 1 and element.direction != "--":
                source, target = (left, right) if element.direction == "->" else (right, left)
                owner.hop(next(iter(types)), source, target)


def _neighbour(flat: list[ast.PathElement], names: list[str | None], index: int) -> str | None:
    if 0 <= index < len(flat) and isinstance(flat[index], ast.NodePattern):
        return names[index]
    return None


def _scope_part(
    ctx: Context, owner: _Owner, path: ast.Path, part: ast.PatternPart | None, path_name: str | None, *, whole: bool
) -> None:
    """One pattern part: per element (``whole`` False) or, for a path the planner expands, as a whole path."""
    ctx.scoped.add(path)
    _scope_elements(ctx, owner, path, part, name_all=not whole)
    if path_name is not None:
        owner.paths[path_name] = _has_relationships(path)
    if whole:
        assert path_name is not None
        owner.whole.append(path_name)
        for element in _flat(path):
            if isinstance(element, ast.RelPattern) and element.variable is not None:
                if element.length is not None or element.quantifier is not None:
                    owner.waits_for_path[element.variable.name] = path_name
            elif isinstance(element, ast.QuantifiedPath):
                _scope_group(ctx, element, part, per_iteration=False)
                for name in _env(element.path):
                    owner.waits_for_path[name] = path_name
        return
    for element in _flat(path):
        if isinstance(element, ast.QuantifiedPath):
            for name, (kind, stated) in _scope_group(ctx, element, part, per_iteration=True).items():
                (owner.node_lists if kind == _NODE else owner.rel_lists)[name] = stated


# Kinds of element variables inside a group.
_NODE, _REL = "node", "rel"


def _env(path: ast.Path) -> dict[str, tuple[str, frozenset[str]]]:
    """The singletons ``path`` binds at its own level: name -> (kind, labels or type stated)."""
    env: dict[str, tuple[str, frozenset[str]]] = {}
    for element in _flat(path):
        if isinstance(element, ast.NodePattern) and element.variable is not None:
            env[element.variable.name] = (_NODE, _stated_labels(element.labels))
        elif isinstance(element, ast.RelPattern) and element.variable is not None:
            env[element.variable.name] = (_REL, _stated_type(element.types))
    return env


def _scope_group(
    ctx: Context, group: ast.QuantifiedPath, part: ast.PatternPart | None, *, per_iteration: bool
) -> dict[str, tuple[str, frozenset[str]]]:
    """A quantified path pattern: its WHERE runs behind its elements' visibility, per iteration.

    With ``per_iteration`` every element of the group is named and the group's WHERE gets one
    visibility conjunct per element, applied by Neo4j inside the expansion. Returns the group's
    variables (lists outside it).
    """
    inner = _Owner(ctx.predicates)
    for element in _flat(group.path):
        if isinstance(element, ast.QuantifiedPath) or (
            isinstance(element, ast.RelPattern) and (element.length is not None or element.quantifier is not None)
        ):
            raise SCOPE_UNSUPPORTED.rejected(
                f"the quantified pattern {ctx.parsed.source(group)!r} nests another repetition; the scope "
                "rewrite checks one level of repetition"
            )
    _scope_elements(ctx, inner, group.path, part, name_all=per_iteration)
    checks = inner.checks()
    every = tuple(text for texts in checks.values() for text in texts)
    root = tuple(inner.root()) if per_iteration else ()
    conditions = _joined(root)
    if group.where is None:
        if conditions:
            ctx.edits.close(group.path, f" WHERE {conditions}")
    else:
        # Every element of the group is in scope here: a condition that could raise waits for them all.
        guard_condition(ctx, group.where, checks, inner.singletons, every=every, then=root)
    _guard_inline(ctx, group.path, checks, inner.singletons, every)
    return _env(group.path)


def _and(conditions: str) -> str:
    return f" AND {conditions}" if conditions else ""


# ---- visibility before any agent condition ----------------------------------------------------
#
# Neo4j may evaluate an agent's condition on an element as soon as it is bound (a middle node,
# an element inside a quantified path), before the element's visibility conjunct: a condition
# that raises (1 / 0) says the value exists, and one made expensive on purpose ([x, a] = [x, b]
# over long lists) says it through the time it takes. So every agent condition runs as
# `CASE WHEN <visibility of the elements it names> THEN (condition) ELSE false END`: CASE
# evaluates a branch only once it is selected. One CASE per WHERE, whatever its number of
# conjuncts. A condition that could raise waits for every element of its owner (whether it
# raises must not depend on a hidden neighbour either). The exceptions, kept in front of the
# CASE as written so the planner can still seek an index or filter a label scan with them:
# top-level comparisons of one element's property with a parameter or a literal
# (`seekable`): their cost on a hidden element does not depend on its value beyond what the
# comparison itself decides (SECURITY.md).

# Operators that never raise on any operand types (they yield null instead).
_VALUE_COMPARISONS = frozenset({"=", "<>", "<", ">", "<=", ">=", "STARTS_WITH", "ENDS_WITH", "CONTAINS"})
_LOGICAL = frozenset({"AND", "OR", "XOR"})
# The comparisons an index seek or a scan filter uses.
_SEEKABLE = frozenset({"=", "<", "<=", ">", ">=", "STARTS_WITH"})


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
    of this pattern's ``paths`` with such a condition. `AND` of a non-boolean raises, so its
    operands must be conditions. Such a condition still runs behind its elements' visibility
    (its cost could depend on a hidden value); one that could raise waits for every element.

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
            safe = _static_label_check(node, names)
        elif isinstance(node, ast.Quantified) and node.where is not None and _is_path_elements(node.source, paths):
            pending.append((node.where, names.plus(node.variable.name)))
            continue
        else:
            safe = False
        if not safe:
            return False
    return True


def _static_label_check(node: ast.LabelCheck, elements: Container[str]) -> bool:
    subject = ast.unparen(node.subject)
    computed = any(isinstance(n, ast.LabelDynamic) for n in node.labels.walk())
    return isinstance(subject, ast.Variable) and subject.name in elements and not computed


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


def _constant(expr: ast.Expr) -> bool:
    """A literal, a parameter, or a list literal of them: known before any element is read."""
    expr = ast.unparen(expr)
    if isinstance(expr, ast.ListLiteral):
        return all(isinstance(ast.unparen(item), ast.Literal | ast.Parameter) for item in expr.items)
    return isinstance(expr, ast.Literal | ast.Parameter)


def _element_property(expr: ast.Expr, elements: Container[str]) -> bool:
    expr = ast.unparen(expr)
    if not isinstance(expr, ast.Property):
        return False
    subject = ast.unparen(expr.subject)
    return isinstance(subject, ast.Variable) and subject.name in elements


def seekable(condition: ast.Expr, elements: Container[str]) -> bool:
    """A comparison an index seek or a label-scan filter can use: kept outside the guard.

    One element's property compared with a parameter or a literal by =, <, <=, >, >=,
    STARTS WITH, IN a parameter or a list literal, IS [NOT] NULL; and a static label check of an
    element (a label scan). None of them can raise, and each costs a bounded, value-independent
    amount per row beyond what it decides.
    """
    condition = ast.unparen(condition)
    if isinstance(condition, ast.BinaryOp) and condition.op in _SEEKABLE:
        left, right = condition.left, condition.right
        return (_element_property(left, elements) and _scalar(right)) or (
            _element_property(right, elements) and _scalar(left)
        )
    if isinstance(condition, ast.BinaryOp) and condition.op == "IN":
        return _element_property(condition.left, elements) and _constant(condition.right)
    if isinstance(condition, ast.IsNull):
        return _element_property(condition.operand, elements)
    if isinstance(condition, ast.LabelCheck):
        return not condition.negated and _static_label_check(condition, elements)
    return False


def _scalar(expr: ast.Expr) -> bool:
    return isinstance(ast.unparen(expr), ast.Literal | ast.Parameter)


def _referenced(exprs: list[ast.Expr]) -> set[str]:
    return {node.name for expr in exprs for node in expr.walk() if isinstance(node, ast.Variable)}


def _before_the_search(
    condition: ast.Expr, checks: dict[str, tuple[str, ...]], elements: Container[str], paths: Container[str]
) -> bool:
    """A conjunct of a shortestPath's WHERE that Neo4j must see to filter the search's rows first.

    Neo4j filters the rows a shortestPath starts from by the conjuncts that do not name the path,
    before it searches; inside the CASE it cannot see them, and one row whose start and end are the
    same node fails the whole query (``a <> b``: docs/neo4j-facts.md). Written in front: a
    conjunct that names no path, cannot raise and reads only elements already visible, or an
    identity comparison of two elements (``a <> b``, value-independent, the same cost on any
    element). Either selects the same paths in front as inside the CASE.
    """
    names = _referenced([condition])
    if any(name in paths for name in names) or not cannot_raise(condition, elements, paths):
        return False
    if not any(checks.get(name) for name in names):
        return True
    condition = ast.unparen(condition)
    return (
        isinstance(condition, ast.BinaryOp)
        and condition.op in ("=", "<>")
        and all(isinstance(ast.unparen(side), ast.Variable) for side in (condition.left, condition.right))
        and all(name in elements for name in names)
    )


def _in_front(
    ctx: Context,
    condition: ast.Expr,
    checks: dict[str, tuple[str, ...]],
    elements: Container[str],
    paths: Container[str],
    *,
    searched: bool,
) -> bool:
    """Whether ``condition`` is also written in front of the CASE, as the agent wrote it.

    The copy in front reads a key the allow-list shows on some elements only as it is stored, where
    the CASE reads it as null on an element that does not show it (``visible_props``). A seekable
    comparison true on the CASE's read is true on the stored one (the element shows the key), so
    the copy selects nothing the CASE would not; ``IS NULL`` is the exception (true on the CASE's
    null, false on a stored value), and so is any other condition: those are not copied.
    """
    if reads_partly_shown(ctx.policy.visible_properties, condition):
        bare = ast.unparen(condition)
        return seekable(condition, elements) and not (isinstance(bare, ast.IsNull) and not bare.negated)
    return seekable(condition, elements) or (searched and _before_the_search(condition, checks, elements, paths))


def guard_condition(
    ctx: Context,
    where: ast.Expr,
    checks: dict[str, tuple[str, ...]],
    elements: Container[str],
    *,
    every: tuple[str, ...],
    own: frozenset[str] = frozenset(),
    paths: Container[str] = frozenset(),
    then: tuple[str, ...] = (),
    folded: tuple[str, ...] = (),
    search: bool = False,
) -> None:
    """Run ``where`` only once the elements it names (and ``own``) are visible; AND ``then`` after it.

    ``checks`` says what each name waits for; ``every`` is the guard of a condition that could
    raise (every element of its owner). The ``seekable`` conjuncts are repeated in front of the
    CASE, as written. With nothing to wait for (every name bound before, already filtered),
    ``where`` stays as written: ``(where)`` followed by ``then``. ``folded`` are conjuncts the
    CASE's guard carries when there is one, else they join ``then``: each is written once.

    A conjunct of ``then`` the guard holds is not written again after the CASE (which is false
    wherever its guard is), unless the owner searches for paths (``folded``: a shortestPath, whose
    rows Neo4j filters before the search only by conjuncts outside the CASE, docs/neo4j-facts.md;
    ``search``: a selector's group): there they stay where Neo4j plans the search with them.
    """
    conjuncts = _conjuncts(where)
    kept = [c for c in conjuncts if _in_front(ctx, c, checks, elements, paths, searched=bool(folded))]
    rest = [c for c in conjuncts if not any(c is k for k in kept)]
    guarded: list[str] = []
    if rest:
        named = [text for name in sorted(set(own) | _referenced(rest)) for text in checks.get(name, ())]
        risky = any(not cannot_raise(c, elements, paths) for c in rest)
        guarded = [*every, *named, *folded] if risky else [*named, *folded]
    if not guarded:
        after = _and(_joined([*folded, *then]))
        if after:
            ctx.edits.open(where, "(")
            ctx.edits.close(where, f"){after}")
        return
    after = _and(_joined([text for text in then if folded or search or text not in guarded]))
    front = "".join(f"({ctx.parsed.source(c)}) AND " for c in kept)
    ctx.edits.open(where, f"{front}CASE WHEN {_joined(guarded)} THEN (")
    ctx.edits.close(where, f") ELSE false END{after}")


def _guard_inline(
    ctx: Context,
    path: ast.Path,
    checks: dict[str, tuple[str, ...]],
    elements: Container[str],
    every: tuple[str, ...] = (),
) -> None:
    """Inline WHEREs, property maps and unquantified groups' WHEREs, behind the visibility of what they name.

    An inline condition waits for its own element and the elements it names (a relationship: with
    its ends); a quantified relationship is one relationship inside its own WHERE. Quantified
    groups guard their own (``_scope_group``).
    """
    for element in path.elements:
        if isinstance(element, ast.QuantifiedPath):
            if element.quantifier is None:
                if element.where is not None and element not in ctx.handled:
                    guard_condition(ctx, element.where, checks, elements, every=every)
                _guard_inline(ctx, element.path, checks, elements, every)  # depth bounded by the brackets
            continue
        name = _element_name(ctx, element)
        if name is None:
            continue  # an element with a condition has been named
        local, known = checks, elements
        if isinstance(element, ast.RelPattern) and element.quantifier is not None:
            # A quantified relationship is a single one in its own WHERE.
            local = {**checks, name: _single_relationship(ctx, name, _stated_type(element.types))}
            known = _Known(elements, (name,))
        own = frozenset({name})
        if element.where is not None:
            guard_condition(ctx, element.where, local, known, every=local.get(name, ()), own=own)
        if isinstance(element.properties, ast.MapLiteral):
            for entry in element.properties.entries:
                if not _constant(entry.value):
                    guard = _guard_text(local, set(own) | _referenced([entry.value]))
                    if guard:
                        _behind(ctx, entry.value, guard, otherwise="null")


def _single_relationship(ctx: Context, name: str, types: frozenset[str]) -> tuple[str, ...]:
    return (ctx.predicates.visible_relationship_with_endpoints(quote_name(name), types),)


def _behind(ctx: Context, expr: ast.Expr, guard: str, *, otherwise: str) -> None:
    """Wrap ``expr`` as ``CASE WHEN guard THEN (expr) ELSE otherwise END``: evaluated only once guard holds."""
    ctx.edits.open(expr, f"CASE WHEN {guard} THEN (")
    ctx.edits.close(expr, f") ELSE {otherwise} END")


# ---- the owners of patterns ---------------------------------------------------------------------


def _finish(ctx: Context, node: ast.Node, owner: _Owner, where: ast.Expr | None, after: int) -> None:
    """AND one conjunct per element (and per path checked whole) into ``where``, guarding the agent's.

    A shortestPath's path predicate goes only into the guard when the agent's condition has one:
    Neo4j 5.26 fails a shortestPath whose WHERE holds a path predicate with an EXISTS twice, in a
    CASE condition and as a conjunct (docs/neo4j-facts.md). The CASE yields false wherever the
    predicate does not hold, so the WHERE selects the same paths.
    """
    root = owner.root()
    conditions = _joined(root)
    checks = owner.checks()
    if where is None:
        if conditions:
            ctx.edits.close(node, f" WHERE {conditions}", offset=after)
        return
    folded = tuple(owner.path_text(name) for name in owner.whole if name in owner.shortest)
    guard_condition(
        ctx,
        where,
        checks,
        owner.singletons,
        every=tuple(root),
        paths=owner.paths.keys(),
        then=tuple(text for text in root if text not in folded),
        folded=folded,
    )


def _scope_parts(ctx: Context, owner: _Owner, parts: list[ast.PatternPart], *, named: bool = True) -> None:
    """Scope each part; name a part that is checked as a whole path (``named``: a MATCH's part in the tree)."""
    for part in parts:
        whole = needs_path_predicate(ctx.parsed, part.selector, part.path)
        name = _name_part(ctx, part) if whole else (part.variable.name if part.variable is not None else None)
        _scope_part(ctx, owner, part.path, part if named else None, name, whole=whole)
        if name is not None and part.selector in SHORTEST_PATH_FUNCTIONS:
            owner.shortest.add(name)
        scope_selected_path(ctx, part, owner)


def _guard_parts(ctx: Context, owner: _Owner, paths: list[ast.Path]) -> None:
    checks = owner.checks()
    every = tuple(owner.root())
    for path in paths:
        _guard_inline(ctx, path, checks, owner.singletons, every)


def scope_selected_path(ctx: Context, part: ast.PatternPart, owner: _Owner) -> None:
    """Under a GQL selector (ANY SHORTEST, SHORTEST k, …), visibility must hold *before* the selection.

    Neo4j selects among the paths the selector's parenthesised path pattern matches, after that
    pattern's own WHERE: ``ANY SHORTEST (q = (a)-->+(b) WHERE <q is visible>)``. A hidden shorter path
    then never suppresses a visible one. The group's own WHERE (the agent's) waits for the
    visibility of what it names, the whole path when it names the path (``nodes(q)``). The
    MATCH-level predicate stays too (it costs nothing).
    """
    if part.selector in SCOPABLE_SELECTORS:
        return
    path = part.path
    only = path.elements[0] if len(path.elements) == 1 else None
    if isinstance(only, ast.QuantifiedPath) and only.quantifier is None:
        if only.variable is not None:
            name = only.variable.name
        else:
            name = ctx.fresh("p")  # `ANY SHORTEST ((a)-->+(b) WHERE …)`: the group gets a name to check
            ctx.edits.open(only.path, f"{name} = ")
        group = _Owner(ctx.predicates, owner.outer)
        _scope_elements(ctx, group, only.path, None, name_all=False)
        group.paths[name] = _has_relationships(path)
        for element in _flat(only.path):
            variable = element.variable if isinstance(element, ast.RelPattern) else None
            if variable is not None and variable.name not in group.rels:
                group.waits_for_path[variable.name] = name
            elif isinstance(element, ast.QuantifiedPath):
                for inner in _env(element.path):
                    group.waits_for_path[inner] = name
        whole = ctx.predicates.visible_path(quote_name(name), has_relationships=group.paths[name])
        condition = _joined([whole])
        if only.where is None:
            ctx.edits.close(only.path, f" WHERE {condition}")
        else:
            ctx.handled.add(only)
            guard_condition(
                ctx, only.where, group.checks(), group.singletons,
                every=(whole,), paths={name}, then=(whole,), search=True,
            )  # fmt: skip
        return
    name = ctx.fresh("p")
    condition = f"({ctx.predicates.visible_path(name, has_relationships=_has_relationships(path))})"
    ctx.edits.open(path, f"({name} = ")
    ctx.edits.close(path, f" WHERE {condition})")


def bound_before(parsed: ParsedQuery) -> dict[ast.Node, dict[str, frozenset[str]]]:
    """Per MATCH, and per pattern comprehension or short EXISTS / COUNT / COLLECT in a MATCH's WHERE
    or a WITH's or RETURN's items: the variables earlier clauses of its query part bound, each with
    the labels the pattern that bound it stated (a matched node carries them; a read cannot remove
    one).

    Their elements came from an earlier pattern (nothing else yields a node or a relationship),
    so they were filtered there and are not checked again. Conservative: a WITH or RETURN keeps
    only what it lists (or everything with ``*``), a CALL's returned columns count as unbound.

    In a WITH's or RETURN's items those names are exactly in scope and their elements already
    filtered (the projection runs after the clauses before it), so an owner's pattern there refers
    to them rather than binding them afresh. Not a WITH's WHERE: a name the projection dropped
    would be bound afresh there; an ORDER BY only the names the projection keeps.

    A MATCH's WHERE sees the MATCH's own names too, and so does the body of a subquery in it
    (elsewhere a subquery's body starts with nothing bound: its imports are checked again). A
    subquery, comprehension or short EXISTS cannot be shown not to raise, so the WHERE holding it
    runs only once every element of the MATCH is visible (``guard_condition``'s ``every``).
    """
    out: dict[ast.Node, dict[str, frozenset[str]]] = {}
    for clause, bound in _clauses_and_bound(parsed):
        if isinstance(clause, ast.Match):
            out[clause] = bound
            for owner in _owners(clause.where):
                out[owner] = _after_match(bound, clause)
        elif isinstance(clause, ast.With | ast.Return):
            projection = clause.projection
            items = [owner for item in projection.items for owner in _owners(item.expression)]
            ordering = [owner for sort in projection.order_by for owner in _owners(sort.expression)]
            outer = bound
            if ordering and not projection.star:
                # Neo4j matches an ORDER BY expression to an equal projected one by its text, so both
                # take one set: the names the projection keeps under their own name, which the
                # ORDER BY sees whatever DISTINCT or aggregation hides.
                kept = {
                    name
                    for item in projection.items
                    if (name := _variable(item.expression)) and (item.alias is None or item.alias.name == name)
                }
                outer = {name: labels for name, labels in bound.items() if name in kept}
            for owner in items + ordering:
                out[owner] = outer
    return out


def _owners(expression: ast.Node | None) -> list[ast.Node]:
    """The pattern comprehensions and short EXISTS / COUNT / COLLECT in ``expression``."""
    if expression is None:
        return []
    return [
        node
        for node in expression.walk()
        if isinstance(node, ast.PatternComprehension) or (isinstance(node, ast.SubqueryExpr) and node.body is None)
    ]


def _clauses_and_bound(parsed: ParsedQuery) -> Iterator[tuple[ast.Node, dict[str, frozenset[str]]]]:
    """Every clause of every query part, with the variables earlier clauses of its part bound (and
    the labels stated where each was bound)."""
    bodies: list[ast.QueryBody] = [statement.body for statement in parsed.statements]
    # Outer subqueries come first (the walk is pre-order), so a body is seeded before it is read.
    bodies += [n.body for n in parsed.walk() if isinstance(n, ast.SubqueryExpr | ast.CallSubquery) and n.body]
    seeds: dict[int, dict[str, frozenset[str]]] = {}  # id(body) -> what a MATCH's WHERE holding it sees
    for body in bodies:
        for query in ast.single_queries(body):
            bound = dict(seeds.get(id(body), {}))
            for clause in query.clauses:
                yield clause, dict(bound)
                if isinstance(clause, ast.Match):
                    bound = _after_match(bound, clause)
                    for inner in _subquery_bodies(clause.where):
                        seeds[id(inner)] = bound
                elif isinstance(clause, ast.With | ast.Return):
                    kept = dict(bound) if clause.projection.star else {}
                    for item in clause.projection.items:
                        source = _variable(item.expression)
                        listed = item.alias.name if item.alias else source
                        if listed:
                            kept[listed] = bound.get(source, frozenset()) if source else frozenset()
                    bound = kept
                elif isinstance(clause, ast.Unwind):
                    bound[clause.variable.name] = frozenset()


def _after_match(bound: dict[str, frozenset[str]], clause: ast.Match) -> dict[str, frozenset[str]]:
    """``bound`` with the names ``clause`` binds, each with the labels stated for it."""
    after, stated = dict(bound), _stated_in(clause)
    for name in _declared(clause):
        after[name] = after.get(name, frozenset()) | stated.get(name, frozenset())
    return after


def _subquery_bodies(where: ast.Expr | None) -> list[ast.QueryBody]:
    if where is None:
        return []
    return [n.body for n in where.walk() if isinstance(n, ast.SubqueryExpr) and n.body is not None]


def _stated_in(clause: ast.Match) -> dict[str, frozenset[str]]:
    """The labels the MATCH's patterns state for each node they name (outside repeated groups)."""
    stated: dict[str, frozenset[str]] = {}
    for part in clause.patterns:
        for element in _flat(part.path):
            if isinstance(element, ast.NodePattern) and element.variable is not None:
                name = element.variable.name
                stated[name] = stated.get(name, frozenset()) | _stated_labels(element.labels)
    return stated


def _variable(expr: ast.Expr) -> str | None:
    expr = ast.unparen(expr)
    return expr.name if isinstance(expr, ast.Variable) else None


def _declared(clause: ast.Match) -> set[str]:
    names = {part.variable.name for part in clause.patterns if part.variable is not None}
    for part in clause.patterns:
        names |= {
            n.variable.name for n in part.path.walk() if isinstance(n, ast.NodePattern | ast.RelPattern) and n.variable
        }
    return names


def _owner_after(ctx: Context, node: ast.Node) -> _Owner:
    """The owner for ``node``'s patterns, with the names earlier clauses bound (and checked)."""
    bound = ctx.bound.get(node, {})
    return _Owner(ctx.predicates, frozenset(bound), outer_labels=dict(bound))


def _scope_match(ctx: Context, node: ast.Match) -> list[ast.Path]:
    owner = _owner_after(ctx, node)
    _scope_parts(ctx, owner, node.patterns)
    _finish(ctx, node, owner, node.where, node.end)
    _guard_parts(ctx, owner, [part.path for part in node.patterns])
    return [part.path for part in node.patterns]


def _scope_subquery(ctx: Context, node: ast.SubqueryExpr) -> list[ast.Path]:
    if node.body is not None:
        return []  # a full query: its own MATCH clauses are scoped as clauses
    # The short form `EXISTS { (a)-->(b) WHERE … }` becomes `EXISTS { MATCH … }`.
    ctx.edits.open(node, "MATCH ", offset=node.patterns[0].start)
    owner = _owner_after(ctx, node)
    _scope_parts(ctx, owner, node.patterns, named=False)
    _finish(ctx, node, owner, node.where, node.patterns[-1].end)
    _guard_parts(ctx, owner, [part.path for part in node.patterns])
    return [part.path for part in node.patterns]


def _scope_comprehension(ctx: Context, node: ast.PatternComprehension) -> list[ast.Path]:
    owner = _owner_after(ctx, node)
    whole = needs_path_predicate(ctx.parsed, None, node.pattern)
    name = node.path_variable.name if node.path_variable is not None else None
    if whole and name is None:
        name = ctx.fresh("p")
        ctx.edits.open(node.pattern, f"{name} = ")
    _scope_part(ctx, owner, node.pattern, None, name, whole=whole)
    _finish(ctx, node, owner, node.where, node.pattern.end)
    _guard_parts(ctx, owner, [node.pattern])
    return [node.pattern]


def _scope_pattern_predicate(ctx: Context, node: ast.PatternPredicate) -> list[ast.Path]:
    # `WHERE (a)-->(b)` is true iff a visible such path exists. A pattern predicate cannot bind a
    # node of its own (Neo4j refuses one), so its named nodes are the outer ones, already checked.
    path = node.pattern.path
    outer = frozenset(n.variable.name for n in path.walk() if isinstance(n, ast.NodePattern) and n.variable)
    owner = _Owner(ctx.predicates, outer)
    whole = needs_path_predicate(ctx.parsed, node.pattern.selector, path)
    name = ctx.fresh("p") if whole else None
    ctx.edits.open(node, f"EXISTS {{ MATCH {name} = " if name else "EXISTS { MATCH ")
    _scope_part(ctx, owner, path, None, name, whole=whole)
    conditions = _joined(owner.root())
    ctx.edits.close(node, f" WHERE {conditions} }}" if conditions else " }")
    _guard_parts(ctx, owner, [path])
    return [path]


Scoper = Callable[[Context, Any], list[ast.Path]]

# Expressions that own patterns: each draws its generated names from a frame of its own.
EXPRESSION_OWNERS = (ast.SubqueryExpr, ast.PatternComprehension, ast.PatternPredicate)

SCOPERS: dict[type[ast.Node], Scoper] = {
    ast.Match: _scope_match,
    ast.SubqueryExpr: _scope_subquery,
    ast.PatternComprehension: _scope_comprehension,
    ast.PatternPredicate: _scope_pattern_predicate,
}
"""Every kind of node that owns patterns, and how its patterns receive their visibility conjuncts."""


def scope_patterns(ctx: Context) -> None:
    """Give every element of every pattern its visibility conjunct, and guard every agent condition.

    It has to be one pre-order walk: a guarded conjunct can have the very span of a pattern
    predicate, and the guard must be registered first to wrap the EXISTS the predicate becomes
    (edits.py).
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
            scoper(ctx, node)
        stack.extend((child, frame) for child in reversed(node.children()))


def _is_exists_function(node: ast.Node) -> bool:
    return (
        isinstance(node, ast.FunctionCall)
        and node.name.lower() == "exists"
        and len(node.args) == 1
        and isinstance(ast.unparen(node.args[0]), ast.PatternPredicate)
    )


def keep_columns(ctx: Context) -> None:
    """The agent's columns stay its own: no generated variable in ``*``, no rewritten text as a name.

    Under hidden properties a final ``RETURN *`` is spelt out too, so the wrapper can name its columns.
    """
    expand = {r.projection for r in final_returns(ctx.parsed)} if ctx.hides() else set()
    ctx.stars = keep_agent_columns(ctx.parsed, ctx.edits, ctx.generated, ctx.rewritten(), expand)


def project_shown_keys(ctx: Context) -> None:
    """Under hidden properties, the answer's elements leave Neo4j with their shown keys only (``projection.py``)."""
    if ctx.shown is not None and ctx.hides():
        ctx.wrapped = wrap_returns(ctx.parsed, ctx.edits, ctx.shown, ctx.rewritten(), ctx.stars)


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
    find_unlisted_reads,
    keep_columns,
    write_unlisted_reads,
    project_shown_keys,
    refuse_unscoped,
)


class Rewritten(NamedTuple):
    """The scoped text, and which of the shown-keys parameters (``ShownKeys.parameters``) it reads."""

    cypher: str
    wrapped: bool  # the final RETURNs project elements to their shown keys (and read the tag)
    reads_shown: bool  # the text reads the allow-list's or deny-list's parameters


def run_passes(
    parsed: ParsedQuery, *, policy: Policy, predicates: Predicates, max_chars: int, shown: ShownKeys | None = None
) -> Rewritten:
    """The rewritten Cypher of ``parsed``; raises ``QueryRejected`` when it cannot be scoped.

    ``scope.unsupported`` for a construct the passes refuse, ``scope.too_large`` when the result
    would be longer than ``max_chars`` (checked before the text is built).
    """
    ctx = Context(
        parsed=parsed,
        policy=policy,
        predicates=predicates,
        bound=bound_before(parsed),
        shown=shown,
    )
    for scope_pass in PASSES:
        scope_pass(ctx)
    size = len(parsed.text) + ctx.edits.inserted_chars()
    if size > max_chars:
        raise SCOPE_TOO_LARGE.rejected(
            f"the scoped query would be {size:,} characters long (the visibility predicates add about 230 "
            f"per pattern); the limit is {max_chars:,}: use fewer patterns"
        )
    reads_shown = ctx.wrapped or bool(ctx.read_wraps or ctx.read_items)
    return Rewritten(ctx.edits.apply(parsed), ctx.wrapped, reads_shown)
