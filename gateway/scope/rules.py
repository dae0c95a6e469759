"""The policy's visibility rules under one tool, compiled to Cypher text (docs/decisions/0018).

``ToolRules.of(policy, tool)`` resolves, once per request, what each label and relationship
type needs: its rule (``scope.nodes`` / ``scope.relationships``, else ``scope.default``), the
tool's filters and the tool's pins. ``node(var, labels)`` and ``relationship(var, types)``
return the text ``Predicates.node_visible`` / ``relationship_visible`` hand to the rewrite.

A node is visible when every named label it carries holds its rule, filters and pins, and the
default rule when it carries none of the named labels. What the pattern states (``labels``)
only simplifies: a stated label's condition is written without its label test, the others
stay guarded by one (``NOT x:L OR …``), so a node with an extra label at run time is held to
that label's rule too. An extra label never widens. A label whose rule walks to an anchor
(derived, or composed with a derived rule) says "this node belongs to its one parent": a node
carrying one together with any other named label is malformed and hidden. So once the pattern
states a named label, every label it cannot also carry is a plain label test, and the node is
walked at most once (not at all when the stated label is not derived); a node stating none keeps
one guarded walk per derived label, and one test that a derived label is its one named label.

No text here can raise on any stored value: every property is read inside ``CASE`` (0005) or
compared under ``coalesce``. A derived rule becomes one ``EXISTS`` over its whole walk, a
``MATCH <hop> WHERE <anchor's other conditions>`` per declared anchor; an anchor states its one
label, so a derived label it does not state hides it rather than walking again, and the text
is bounded by the (acyclic, checked by the policy) chain of declared anchors. Labels ruled like
the default share its one predicate (docs/decisions/0028).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from gateway import rule_kinds
from gateway.cypher import ast, parse
from gateway.policy import (
    DEFAULT_ATTRIBUTE,
    DERIVED_ANCHOR,
    DERIVED_ELEMENT,
    Pin,
    Policy,
    ScopeFilter,
    ScopeSettings,
    ToolName,
    VisibilityRule,
    attribute_parameter,
)
from gateway.rule_kinds import composition
from gateway.rule_kinds.base import FALSE, TRUE
from gateway.rule_kinds.derived import is_derived

if TYPE_CHECKING:
    from gateway.domain import Principal

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PREFIX = "__gw_"  # predicates.GENERATED_PREFIX (not imported: predicates imports this module)
# Anchors within anchors: the policy refuses cycles, this bounds the text whatever it holds.
MAX_DERIVED_DEPTH = 8


def quote(name: str) -> str:
    if _IDENTIFIER.fullmatch(name):
        return name
    return "`" + name.replace("`", "``") + "`"


def literal(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _and(parts: list[str]) -> str:
    parts = [p for p in parts if p != TRUE]
    if FALSE in parts:
        return FALSE
    if not parts:
        return TRUE
    return parts[0] if len(parts) == 1 else "(" + " AND ".join(parts) + ")"


# Label tests are written one label each: Neo4j refuses a query that mixes label expression
# symbols (`n:A|B`) with the colon conjunction an agent may write (`(n:A:B)`).
def _any_of(var: str, labels: list[str]) -> str:
    tests = " OR ".join(f"{var}:{quote(label)}" for label in labels)
    return f"({tests})" if len(labels) > 1 else tests


def _none_of(var: str, labels: list[str]) -> str:
    tests = " AND ".join(f"NOT {var}:{quote(label)}" for label in labels)
    item = f"{_PREFIX}k"
    # One test over the node's labels, when that is the shorter text (Neo4j's planning time grows
    # with the text's size; docs/neo4j-facts.md).
    listed = f"none({item} IN labels({var}) WHERE {item} IN [{', '.join(map(literal, labels))}])"
    return listed if len(listed) < len(tests) else tests


@dataclass(frozen=True)
class _Derived:
    """A derived path with ``x`` and ``anchor`` cut out, so each use renames them."""

    text: str
    spans: tuple[tuple[int, int, str], ...]  # (start, end, "x" | "anchor") in ``text``
    anchor_labels: frozenset[str]
    # From ``x`` to the anchor, each hop's (type, "out" | "in" seen from the side nearer ``x``, the
    # labels the far node is stated to carry); None unless the path is such a plain chain.
    hops: tuple[Hop, ...] | None = None

    @classmethod
    def of(cls, path: str) -> _Derived:
        prefix = "MATCH "
        parsed = parse(prefix + path + " RETURN 1", max_chars=2_000, max_depth=32)
        (match,) = parsed.find_all(ast.Match)
        elements = match.patterns[0].path.elements
        spans: list[tuple[int, int, str]] = []
        labels: frozenset[str] = frozenset()
        for element in elements:
            assert isinstance(element, ast.NodePattern | ast.RelPattern)  # the policy checked it
            if element.variable is not None:
                spans.append((element.variable.start, element.variable.end, element.variable.name))
                if element.variable.name == DERIVED_ANCHOR and isinstance(element, ast.NodePattern):
                    labels = frozenset(element.labels.names() if element.labels else ())
        text = parsed.text[match.patterns[0].start : match.patterns[0].end]
        offset = match.patterns[0].start
        return cls(text, tuple((s - offset, e - offset, n) for s, e, n in spans), labels, _hops(elements))

    def renamed(self, element: str, anchor: str) -> str:
        out, last = [], 0
        for start, end, name in self.spans:
            out += [self.text[last:start], element if name == DERIVED_ELEMENT else anchor]
            last = end
        return "".join(out) + self.text[last:]


Hop = tuple[str, str, frozenset[str]]


def _hops(elements: list[Any]) -> tuple[Hop, ...] | None:
    """The chain from ``x`` (first) to ``anchor`` (last), when every hop is one single-typed, directed
    relationship and no element carries a property map or a WHERE; else None."""
    if len(elements) < 3 or any(e.properties is not None or e.where is not None for e in elements):
        return None
    first, last = elements[0], elements[-1]
    if not (
        isinstance(first, ast.NodePattern) and first.variable is not None and first.variable.name == DERIVED_ELEMENT
    ):
        return None
    if not (isinstance(last, ast.NodePattern) and last.variable is not None and last.variable.name == DERIVED_ANCHOR):
        return None
    hops: list[Hop] = []
    for rel, far in zip(elements[1::2], elements[2::2], strict=True):
        if not isinstance(rel, ast.RelPattern) or not isinstance(far, ast.NodePattern):
            return None
        rel_type = rel.types.expression if rel.types is not None else None
        if rel.length is not None or rel.quantifier is not None or rel.direction == "--":
            return None
        far_label = far.labels.expression if far.labels is not None else None
        if not isinstance(rel_type, ast.LabelName) or not isinstance(far_label, ast.LabelName | None):
            return None
        if far is not last and far.variable is not None:
            return None
        labels = frozenset({far_label.name} if far_label is not None else ())
        hops.append((rel_type.name, "out" if rel.direction == "->" else "in", labels))
    return tuple(hops)


@dataclass(frozen=True)
class ToolRules:
    """One policy's visibility rules as one tool applies them."""

    scope: ScopeSettings
    scope_parameter: str
    pins: Mapping[str, Pin] = field(default_factory=dict)
    # Label or type -> the filters of this tool.
    filters: Mapping[str, tuple[ScopeFilter, ...]] = field(default_factory=dict)
    derived: Mapping[str, _Derived] = field(default_factory=dict)  # rule path text -> parsed

    @classmethod
    def of(cls, policy: Policy, tool: ToolName) -> ToolRules:
        settings = policy.scope
        filters = {
            name: kept
            for name, all_filters in settings.filters.items()
            if (kept := tuple(f for f in all_filters if tool in f.tools))
        }
        paths = [
            part.path
            for rule in (*settings.nodes.values(), *settings.relationships.values())
            for part in rule_kinds.walk(rule)
        ]
        derived = {path: _Derived.of(path) for path in paths if path}
        return cls(settings, settings.scope_parameter, dict(policy.tool(tool).pins), filters, derived)

    @property
    def untagged_global(self) -> bool:
        return self.scope.untagged == "global"

    def parameter(self, attribute: str) -> str:
        return self.scope_parameter if attribute == DEFAULT_ATTRIBUTE else attribute_parameter(attribute)

    def _all_rules(self) -> list[VisibilityRule]:
        filtered = [f.rule for filters in self.filters.values() for f in filters if f.rule is not None]
        return [self.scope.default, *self.scope.nodes.values(), *self.scope.relationships.values(), *filtered]

    @property
    def reads_now(self) -> bool:
        """Some rule this tool applies compares with the request's instant."""
        return any(rule_kinds.reads_now(rule) for rule in self._all_rules())

    def parameters(self, principal: Principal, now: str | None = None) -> dict[str, Any]:
        """Every reserved parameter the rules read, filled from ``principal``'s attribute lists and,
        when a rule compares with it, the request's instant ``now`` (ISO-8601, UTC)."""
        names = {DEFAULT_ATTRIBUTE} | {name for rule in self._all_rules() for name in rule_kinds.attributes(rule)}
        out: dict[str, Any] = {self.parameter(name): sorted(principal.attribute(name)) for name in sorted(names)}
        if self.reads_now:
            out |= rule_kinds.now_parameters(now if now is not None else request_now())
        return out

    # ---- nodes ---------------------------------------------------------------------------

    def node(
        self,
        var: str,
        labels: frozenset[str] = frozenset(),
        depth: int = 0,
        *,
        walked: frozenset[str] = frozenset(),
    ) -> str:
        """``var`` (a variable or expression) is a visible node; ``labels`` it surely carries.

        ``walked``: derived labels whose walk is taken elsewhere, so it is not written here: by the
        caller's walk, which continues from ``var`` as an anchor (``_derived``), or by the agent's
        own pattern, from ``var`` to a node checked beside it (``derived_hops``). Whether ``var``
        carries them is still tested.
        """
        conditioned = sorted(set(self.scope.nodes) | set(self.filters) | set(self.pins))
        named = set(self.scope.nodes)
        if conditioned and not _IDENTIFIER.fullmatch(var):
            # Label tests and EXISTS want a name; an expression (startNode(r)) is bound to one.
            bound = f"{_PREFIX}e{depth}"
            return f"any({bound} IN [{var}] WHERE {self.node(bound, labels, depth)})"
        # Labels ruled exactly like the default share its one predicate (written once below).
        shared = self._shared()
        derived = self.scope.one_parent_labels()
        stated = labels & named
        # A derived label says "this node belongs to its one parent": a node carrying one together
        # with any other named label is malformed data and hidden (narrower, never wider). So a
        # pattern that states a named label rules out the labels it cannot also carry, and each
        # is a plain label test instead of a walk.
        if stated & derived and len(stated) > 1:
            return FALSE
        excluded = self._excluded(stated, derived, named, depth)
        parts: list[str] = []
        for label in conditioned:
            if label in excluded:
                continue
            condition = self._label(
                var,
                label,
                depth,
                walked=label in walked,
                own_rule=label not in shared,
            )
            if label in labels or condition == TRUE:
                parts.append(condition)
            elif condition == FALSE:
                excluded.add(label)
            else:
                parts.append(f"(NOT {var}:{quote(label)} OR {condition})")
        if not stated and depth == 0 and derived - excluded:
            # Nothing named stated: each derived label keeps its guarded walk, and one conjunct
            # beside them holds "a derived label is the node's one named label" (measured: planned
            # faster than the label tests inside each guard).
            parts.insert(0, self._one_named(var, derived - excluded, named - excluded))
        if excluded:
            parts.insert(0, _none_of(var, sorted(excluded)))
        default = self._default(var, labels, depth, named - excluded, shared - excluded)
        if default is not None:
            parts.insert(0, default)
        return _and(parts)

    @staticmethod
    def _excluded(stated: frozenset[str], derived: frozenset[str], named: set[str], depth: int) -> set[str]:
        """The named labels a node whose pattern states ``stated`` must not carry to be visible.

        A stated derived label: every other named label. Another stated named label, or an anchor
        (whose path states its label): every derived label not stated, so an anchor never walks again
        through a label its path does not state and the text stays bounded by the chain of anchors.
        """
        if stated & derived:
            return set(named - stated)
        if stated or depth > 0:
            return set(derived - stated)
        return set()

    @staticmethod
    def _one_named(var: str, derived: frozenset[str], named: set[str]) -> str:
        """A node carrying a derived label carries no other named label."""
        item = f"{_PREFIX}k"
        carried = f"size([{item} IN labels({var}) WHERE {item} IN [{', '.join(map(literal, sorted(named)))}]]) <= 1"
        if len(named - derived) <= 1:
            return carried  # two named labels carried: one is derived
        return f"({carried} OR {_none_of(var, sorted(derived))})"

    def derived_hops(self, label: str) -> tuple[Hop, ...] | None:
        """The hops of ``label``'s walk when its rule is a derived walk alone over a plain chain:
        a pattern that matches them to a visible anchor proves the walk (``node(…, walked=…)``)."""
        rule = self.scope.nodes.get(label)
        if rule is None or not is_derived(rule):
            return None
        return self.derived[rule.path or ""].hops

    def label_condition(self, var: str, label: str) -> str:
        """One named label's own condition (its rule, filters and pin), the part ``node`` holds for it."""
        return self._label(var, label, 0)

    def default_condition(self, var: str) -> str:
        """The default rule, the part ``node`` holds for a node that carries no named label."""
        return self._rule(var, self.scope.default, 0)

    def _shared(self) -> frozenset[str]:
        default = self.scope.default
        if rule_kinds.spec(default).constant is not None:
            return frozenset()
        # An all_of that holds the default among its rules shares it too; the rest is its own.
        return frozenset(
            label
            for label, rule in self.scope.nodes.items()
            if rule == default or composition.without(rule, default) is not None
        )

    def _default(
        self, var: str, labels: frozenset[str], depth: int, named: set[str], shared: frozenset[str]
    ) -> str | None:
        """The default rule's text: it holds for a node carrying no named label or one ruled like it.

        ``None`` when the stated labels already exempt the node from it.
        """
        others = sorted(named - shared)
        if labels & shared:
            return self._rule(var, self.scope.default, depth)
        if labels & named:
            if not shared:
                return None
            return f"({_none_of(var, sorted(shared))} OR {self._rule(var, self.scope.default, depth)})"
        default = self._rule(var, self.scope.default, depth)
        if not others or default == TRUE:
            return default
        exempt = _any_of(var, others)
        if shared:
            exempt = f"({exempt} AND {_none_of(var, sorted(shared))})"
        return exempt if default == FALSE else f"({exempt} OR {default})"

    def _label(
        self,
        var: str,
        label: str,
        depth: int,
        *,
        own_rule: bool = True,
        walked: bool = False,
    ) -> str:
        """``label``'s conditions; ``own_rule`` False: its rule shares the default's, written once apart,
        so only what it asks beyond the default is written here."""
        parts: list[str] = []
        full = self.scope.nodes.get(label)
        rule = full if own_rule or full is None else composition.without(full, self.scope.default)
        if rule is not None and full is not None and not (is_derived(full) and walked):
            parts.append(self._rule(var, rule, depth))
        parts += [self._filter(var, f, depth) for f in self.filters.get(label, ())]
        pin = self.pins.get(label)
        if pin is not None:
            parts.append(f"coalesce({var}.{quote(pin.property)} = ${quote(pin.parameter)}, false)")
        return _and(parts)

    # ---- relationships ---------------------------------------------------------------------

    def relationship(self, var: str, types: frozenset[str] = frozenset(), depth: int = 0) -> str:
        """``var`` is a relationship whose own rule and filters hold (hidden types and endpoints apart)."""
        # Filters share one namespace of labels and types: a name the policy rules as a label is one.
        named = sorted(set(self.scope.relationships) | (set(self.filters) - set(self.scope.nodes)))
        if named and not _IDENTIFIER.fullmatch(var):
            bound = f"{_PREFIX}e{depth}"
            return f"any({bound} IN [{var}] WHERE {self.relationship(bound, types, depth)})"
        if len(types) == 1:
            return self._type(var, next(iter(types)), depth)
        if types:
            cases, otherwise = sorted(types), FALSE  # it has one of the stated types
        else:
            cases, otherwise = named, self._rule(var, self.scope.default, depth)
        branches = [(t, self._type(var, t, depth)) for t in cases]
        if not branches or all(text == otherwise for _, text in branches):
            return otherwise
        if not types:
            # A type whose text is the ELSE's needs no branch of its own.
            branches = [(t, text) for t, text in branches if text != otherwise]
        whens = " ".join(f"WHEN {literal(t)} THEN {text}" for t, text in branches)
        return f"CASE type({var}) {whens} ELSE {otherwise} END"

    def _type(self, var: str, rel_type: str, depth: int) -> str:
        rule = self.scope.relationships.get(rel_type, self.scope.default)
        filters = [self._filter(var, f, depth) for f in self.filters.get(rel_type, ())]
        return _and([self._rule(var, rule, depth), *filters])

    # ---- one rule ----------------------------------------------------------------------------

    def _rule(self, var: str, rule: VisibilityRule, depth: int) -> str:
        """``rule``'s text, written by its kind (gateway/rule_kinds)."""
        return rule_kinds.spec(rule).text(rule, var, _RuleText(self, depth))

    def _derived(self, var: str, rule: VisibilityRule, depth: int) -> str:
        """One EXISTS for the whole walk to the root anchor: a MATCH per declared hop, each anchor's
        other conditions in its own WHERE (separate MATCH clauses, so no relationship uniqueness
        joins the hops: the same test as one EXISTS per anchor, nested)."""
        clauses: list[str] = []
        element = var
        current: VisibilityRule | None = rule
        while current is not None:
            if depth >= MAX_DERIVED_DEPTH:
                return FALSE
            path = self.derived[current.path or ""]
            anchor = f"{_PREFIX}a{depth}"
            visible = self.node(anchor, path.anchor_labels, depth + 1, walked=path.anchor_labels)
            if visible == FALSE:
                return FALSE
            where = "" if visible == TRUE else f" WHERE {visible}"
            clauses.append(f"MATCH {path.renamed(element, anchor)}{where}")
            (label,) = path.anchor_labels  # the policy gives every anchor exactly one label
            following = self.scope.nodes.get(label)
            current = following if following is not None and is_derived(following) else None
            element, depth = anchor, depth + 1
        return f"EXISTS {{ {' '.join(clauses)} }}"

    def _filter(self, var: str, rule: ScopeFilter, depth: int) -> str:
        if rule.rule is not None:
            return self._rule(var, rule.rule, depth)
        prop = f"{var}.{quote(rule.property or '')}"
        if rule.absent:
            return f"{prop} IS NULL"
        return f"coalesce({prop} = {literal(rule.equals or '')}, false)"


@dataclass(frozen=True)
class _RuleText:
    """The text context a kind writes with (gateway.rule_kinds.base.TextContext): one tool's rules at one depth."""

    rules: ToolRules
    depth: int

    @property
    def untagged_global(self) -> bool:
        return self.rules.untagged_global

    def quote(self, name: str) -> str:
        return quote(name)

    def rule_property(self, rule: VisibilityRule) -> str:
        return self.rules.scope.rule_property(rule)

    def attribute_parameter(self, attribute: str) -> str:
        return "$" + quote(self.rules.parameter(attribute))

    def rule(self, var: str, rule: VisibilityRule) -> str:
        return self.rules._rule(var, rule, self.depth)

    def derived(self, var: str, rule: VisibilityRule) -> str:
        return self.rules._derived(var, rule, self.depth)


def request_now() -> str:
    """The request's one instant, as the rewrite's ``$__gw_now`` and the sandbox check's ``now`` carry it."""
    return datetime.now(UTC).isoformat(timespec="microseconds")
