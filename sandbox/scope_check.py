"""Layer 2 of scope: check every element in a serialized result against the caller's scope.

Runs inside the sandbox container after serialization (values are the tagged
JSON of ``sandbox/wire.py``), so it imports only the standard library, pydantic
and the wire models. When the rewrite (layer 1) works, this finds nothing; it is
the net under it. It holds the rewrite's rules (docs/decisions/0018): per label and type, each
rule is decided by its kind's check (``sandbox/rule_checks.py``) from the serialized element;
filters and pins too; an element some check leaves to Neo4j (a derived walk) is visible only
when Neo4j, asked in the job's own READ transaction (``confirm_derived``), says so. A node
carrying a label whose rule walks to a parent together with any other named label is hidden
here, without asking (the rewrite's rule: one parent, nothing else with its own rule).

A row that holds any node, relationship or path outside the scope is dropped as
a whole, not just the element: its other columns may be derived from the
hidden element (``RETURN n, n.secret``). The membership rule is the
rewrite's: an empty ``layers`` list is global; a list of strings with one
in the scope is visible; a missing property is hidden (global only when the
policy says ``scope.untagged: global``); anything else (a string, a number, a
list holding a non-string or a null) is malformed and hidden. A relationship of
a hidden type is hidden.
A bare relationship's endpoints are not in the serialized value, so this layer
checks them only when they appear (in a path or another column); layer 1 always
checks them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from sandbox.rule_checks import check, now_instant, walks
from sandbox.tagged import TYPE_KEY, elements
from sandbox.wire import ElementCondition, ElementRule, ScopeCheck

# The parameter the derived queries read the element ids from (reserved: no caller sets it).
IDS_PARAMETER = "__gw_ids"


class _Rules:
    """A ScopeCheck read once per result: the default rule resolved, value lists as sets.

    The check context of ``sandbox.rule_checks``: each kind's check reads what it needs here.
    """

    def __init__(self, scope: ScopeCheck, confirmed: frozenset[str], params: dict[str, Any] | None = None) -> None:
        self.scope = scope
        self.params = params or {}
        self.default = scope.default or ElementRule(
            kind="membership", property=scope.layers_property, values=list(scope.layers)
        )
        self.values: dict[int, frozenset[str]] = {}
        self.hidden_types = frozenset(scope.hidden_relationship_types)
        self.confirmed = confirmed
        self.untagged = scope.untagged
        self.now = now_instant(scope.now)

    def allowed(self, rule: ElementRule) -> frozenset[str]:
        allowed = self.values.get(id(rule))
        if allowed is None:
            allowed = self.values[id(rule)] = frozenset(rule.values)
        return allowed

    def rule(self, rule: ElementRule, properties: dict[str, Any]) -> bool | None:
        """Whether ``rule`` holds; None when only Neo4j can tell (a derived walk, maybe composed)."""
        return check(rule, properties, self)

    def condition(self, condition: ElementCondition, properties: dict[str, Any]) -> bool:
        if condition.rule is not None:
            return self.rule(condition.rule, properties) is True
        value = properties.get(condition.property)
        if condition.absent:
            return value is None
        wanted = condition.equals if condition.parameter is None else self.params.get(condition.parameter)
        if value is None or wanted is None:
            return False  # Cypher's `=` with a null is null: not visible
        if isinstance(value, bool) or isinstance(wanted, bool):
            return type(value) is type(wanted) and value == wanted  # true = 1 is false in Cypher
        return bool(value == wanted)

    def node_verdict(self, item: dict[str, Any]) -> bool | None:
        """True / False, or None when the node's rules leave it to Neo4j."""
        properties = item.get("properties")
        labels = item.get("labels")
        if not isinstance(properties, dict) or not isinstance(labels, list):
            return False
        carried = {label: self.scope.nodes[label] for label in labels if label in self.scope.nodes}
        if len(carried) > 1 and any(walks(rule) for rule in carried.values()):
            return False  # a label that walks to its one parent, and another named label: malformed
        ask_neo4j = False
        named = False
        for label in labels:
            rule = self.scope.nodes.get(label)
            if rule is not None:
                named = True
                held = self.rule(rule, properties)
                if held is False:
                    return False
                ask_neo4j = ask_neo4j or held is None
            if not all(self.condition(c, properties) for c in self.scope.conditions.get(label, ())):
                return False
        if not named and not self.rule(self.default, properties):
            return False
        return None if ask_neo4j else True

    def relationship_verdict(self, item: dict[str, Any]) -> bool | None:
        properties = item.get("properties")
        rel_type = item.get("type")
        if not isinstance(properties, dict) or not isinstance(rel_type, str) or rel_type in self.hidden_types:
            return False
        held = self.rule(self.scope.relationships.get(rel_type, self.default), properties)
        if held is False:
            return False
        if not all(self.condition(c, properties) for c in self.scope.conditions.get(rel_type, ())):
            return False
        return held

    def node(self, item: dict[str, Any]) -> bool:
        verdict = self.node_verdict(item)
        return verdict is True or (verdict is None and item.get("elementId") in self.confirmed)

    def relationship(self, item: dict[str, Any]) -> bool:
        verdict = self.relationship_verdict(item)
        return verdict is True or (verdict is None and item.get("elementId") in self.confirmed)


def _value_visible(value: Any, rules: _Rules) -> bool:
    for item in elements(value):
        visible = rules.node(item) if item.get(TYPE_KEY) == "node" else rules.relationship(item)
        if not visible:
            return False
    return True


def element_visible(properties: Any, scope: ScopeCheck) -> bool:
    """An element's properties under the default rule (what a policy that names no rules checks)."""
    if not isinstance(properties, dict):
        return False
    rules = _Rules(scope, frozenset())
    return bool(rules.rule(rules.default, properties))


def derived_candidates(
    rows: list[list[Any]], scope: ScopeCheck, params: dict[str, Any] | None = None
) -> tuple[set[str], set[str]]:
    """The element tokens (nodes, relationships) in ``rows`` whose visibility only Neo4j can tell:
    those whose checks answer None (``sandbox.rule_checks``) and nothing False. ``params``: the
    job's parameters, which pins compare with (without them a pinned element is never a candidate)."""
    nodes: set[str] = set()
    relationships: set[str] = set()
    rules = _Rules(scope, frozenset(), params)
    for item in elements(rows):
        token = item.get("elementId")
        if not isinstance(token, str):
            continue
        if item.get(TYPE_KEY) == "node":
            if rules.node_verdict(item) is None:
                nodes.add(token)
        elif rules.relationship_verdict(item) is None:
            relationships.add(token)
    return nodes, relationships


Ask = Callable[[str, dict[str, Any]], Iterable[Any]]


def confirm_derived(
    rows: list[list[Any]], scope: ScopeCheck, element_ids: dict[str, str], params: dict[str, Any], ask: Ask
) -> frozenset[str]:
    """The tokens of ``rows``' elements under a derived rule that Neo4j says are visible.

    ``element_ids`` maps a token back to Neo4j's element id (which never leaves the sandbox);
    ``ask(cypher, params)`` runs the check's gateway-written query in the job's transaction and
    yields the visible ids. Every element not confirmed is hidden.
    """
    nodes, relationships = derived_candidates(rows, scope, params)
    confirmed: set[str] = set()
    for tokens, query in ((nodes, scope.derived_nodes), (relationships, scope.derived_relationships)):
        ids = {element_ids[t]: t for t in tokens if t in element_ids}
        if not ids or query is None:
            continue
        for element_id in ask(query, {**params, IDS_PARAMETER: sorted(ids)}):
            if element_id in ids:
                confirmed.add(ids[element_id])
    return frozenset(confirmed)


def filter_rows(
    columns: list[str],
    rows: list[list[Any]],
    scope: ScopeCheck,
    confirmed: frozenset[str] = frozenset(),
    params: dict[str, Any] | None = None,
) -> tuple[list[list[Any]], int]:
    """The rows whose every element is visible, and how many rows were dropped.

    ``confirmed``: the tokens of elements under a derived rule Neo4j found visible (``confirm_derived``);
    ``params``: the job's parameters, which pins compare with.
    """
    rules = _Rules(scope, confirmed, params)
    kept = [row for row in rows if _value_visible(row, rules)]
    return kept, len(rows) - len(kept)
