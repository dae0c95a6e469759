"""Scope: what one caller may see, decided once per request.

``plan(parsed, policy, tool, principal)`` returns a :class:`ScopePlan` holding
everything the scope layer contributes to a request:

* ``cypher``: the query rewritten by the passes of ``passes.PASSES`` so that
  every pattern only matches elements in the caller's layers (layer 1). It
  references ``$<policy.scope.scope_parameter>``;
* ``params``: that parameter with the caller's layer ids, and ``__gw_attr_<name>`` with each
  other attribute list the policy's rules read (``gateway/scope/rules.py``), injected last;
* ``result_check``: the caller's scope for the sandbox's check of every
  returned element (layer 2, ``sandbox/scope_check.py``);
* ``withhold_error_details``: whether Neo4j's error messages are reduced to
  their code (they can quote values of hidden elements);
* ``withhold_data_notifications``: whether Neo4j's notifications are reduced to
  those the query text alone decides (``notifications.kept_notifications``): the
  others are computed over the whole database.

Both layers read the hidden relationship types from one call,
``policy.hidden_relationship_types(tool)``. A construct the rewrite cannot
scope refuses the request (``QueryRejected``, rule ``scope.unsupported``), and so does
a rewrite longer than the tool's ``limits.max_rewritten_chars`` (``scope.too_large``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from gateway import rule_kinds
from gateway.cypher import ParsedQuery
from gateway.errors import Neo4jRefused
from gateway.policy import Policy, ToolName, VisibilityRule
from gateway.scope.notifications import kept_notifications
from gateway.scope.passes import PASSES, SCOPERS, run_passes
from gateway.scope.predicates import GENERATED_PREFIX, Predicates
from gateway.scope.projection import ShownKeys, new_tag
from gateway.scope.rules import ToolRules, request_now
from sandbox.rebuild import TAG_PARAMETER
from sandbox.scope_check import IDS_PARAMETER
from sandbox.wire import ElementCondition, ElementRule, ScopeCheck
from sandbox.withhold import read_by_the_check

if TYPE_CHECKING:
    from gateway.domain import LayerSwitches, Principal

__all__ = ["PASSES", "SCOPERS", "ScopePlan", "kept_notifications", "plan", "withheld_details"]


class ScopePlan(BaseModel):
    """The scope layer's part of one request (see the module docstring)."""

    model_config = ConfigDict(frozen=True)

    cypher: str
    params: dict[str, Any]
    result_check: ScopeCheck | None
    withhold_error_details: bool
    withhold_data_notifications: bool


def plan(
    query: ParsedQuery | str,
    policy: Policy,
    tool: ToolName,
    principal: Principal,
    layers: LayerSwitches | None = None,
) -> ScopePlan:
    """The scope plan for ``query`` asked by ``principal`` through ``tool``.

    ``layers`` switches layer 1 (``scope_rewrite``) or layer 2 (``result_check``) off, only so
    tests can prove each other layer holds alone; ``query`` may stay unparsed only when the
    rewrite is off.
    """
    rewrite_on = layers is None or layers.scope_rewrite
    check_on = layers is None or layers.result_check
    settings = policy.scope
    hidden = sorted(policy.hidden_relationship_types(tool))
    rules = ToolRules.of(policy, tool)
    # One instant per request: the rewrite's $__gw_now and the sandbox check's `now` are this text.
    now = request_now() if rules.reads_now else None
    result_check = _result_check(policy, tool, principal, rules, now) if check_on else None
    params: dict[str, Any] = {}
    if not rewrite_on:
        cypher = query if isinstance(query, str) else query.text
    elif isinstance(query, str):
        raise TypeError("the scope rewrite works on a parsed query")
    else:
        predicates = Predicates(
            settings.layers_property, settings.scope_parameter, tuple(hidden), settings.untagged == "global", rules
        )
        shown = ShownKeys(
            policy.hidden_properties.by_owner(),
            read_by_the_check(result_check) if result_check is not None else (),
            visible=policy.visible_properties.wire() if policy.visible_properties is not None else None,
        )
        rewritten = run_passes(
            query, policy=policy, predicates=predicates, max_chars=policy.tool(tool).limits.max_rewritten_chars,
            shown=shown,
        )  # fmt: skip
        cypher = rewritten.cypher
        if rewritten.reads_shown:
            params = shown.parameters()
        if rewritten.wrapped:
            params[TAG_PARAMETER] = new_tag()
    return ScopePlan(
        cypher=cypher,
        params={**params, **rules.parameters(principal, now)},
        result_check=result_check,
        withhold_error_details=rewrite_on,
        withhold_data_notifications=rewrite_on,
    )


class _Wire:
    """The wire context a kind writes the sandbox's copy of a rule with (gateway.rule_kinds.base.WireContext)."""

    def __init__(self, policy: Policy, principal: Principal) -> None:
        self.policy, self.principal = policy, principal

    def rule_property(self, rule: VisibilityRule) -> str:
        return self.policy.scope.rule_property(rule)

    def values(self, attribute: str) -> list[str]:
        return sorted(self.principal.attribute(attribute))

    def wire(self, rule: VisibilityRule) -> ElementRule:
        return rule_kinds.spec(rule).wire(rule, self)


def _result_check(
    policy: Policy, tool: ToolName, principal: Principal, rules: ToolRules, now: str | None
) -> ScopeCheck:
    """Layer 2's copy of the rules, the caller's attribute values filled in (docs/decisions/0018 §6)."""
    settings = policy.scope
    wire = _Wire(policy, principal)
    conditions: dict[str, list[ElementCondition]] = {}
    for name, filters in rules.filters.items():
        conditions[name] = [
            ElementCondition(rule=wire.wire(f.rule))
            if f.rule is not None
            else ElementCondition(property=f.property or "", absent=True)
            if f.absent
            else ElementCondition(property=f.property or "", equals=f.equals)
            for f in filters
        ]
    for label, pin in rules.pins.items():
        conditions.setdefault(label, []).append(ElementCondition(property=pin.property, parameter=pin.parameter))
    derived_nodes = derived_relationships = None
    element, ids = f"{GENERATED_PREFIX}x", f"{GENERATED_PREFIX}id"
    # The element's whole visibility text: what the sandbox could not settle, Neo4j settles here.
    if any(rule_kinds.needs_neo4j(r) for r in settings.nodes.values()):
        derived_nodes = (
            f"UNWIND ${IDS_PARAMETER} AS {ids} MATCH ({element}) WHERE elementId({element}) = {ids} "
            f"AND {rules.node(element)} RETURN elementId({element}) AS id"
        )
    if any(rule_kinds.needs_neo4j(r) for r in settings.relationships.values()):
        derived_relationships = (
            f"UNWIND ${IDS_PARAMETER} AS {ids} MATCH ()-[{element}]->() WHERE elementId({element}) = {ids} "
            f"AND {rules.relationship(element)} RETURN elementId({element}) AS id"
        )
    return ScopeCheck(
        layers_property=settings.layers_property,
        layers=sorted(principal.scope),
        hidden_relationship_types=sorted(policy.hidden_relationship_types(tool)),
        untagged=settings.untagged,
        default=wire.wire(settings.default),
        nodes={label: wire.wire(rule) for label, rule in settings.nodes.items()},
        relationships={t: wire.wire(rule) for t, rule in settings.relationships.items()},
        conditions=conditions,
        derived_nodes=derived_nodes,
        derived_relationships=derived_relationships,
        now=now,
    )


def withheld_details(error: Neo4jRefused) -> Neo4jRefused:
    """A runtime error can carry a property value, quoted or not.

    ``Text cannot be parsed to a Date "…"`` (sent with a SyntaxError code),
    ``Unknown coordinate reference system: <any string>``, ``MonthOfYear …: <any int>``:
    and Neo4j does not promise to evaluate the scope predicate before the agent's
    own expressions, so the value could belong to a hidden element. With scope on,
    only Neo4j's error code goes back; the guard has already parsed the query, so
    little help is lost.
    """
    code = error.neo4j_code or "Neo.ClientError"
    return Neo4jRefused(
        f"{code} (details withheld: Neo4j's message can quote data outside your scope)", error.neo4j_code
    )
