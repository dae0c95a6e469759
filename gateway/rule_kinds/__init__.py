"""The kinds of visibility rule: one module each, one table (``KINDS``) every layer reads.

The names are the wire's (``sandbox.wire.RuleKind``: the sandbox cannot import the gateway);
each name's meaning is its module's ``RuleKindSpec``. The sandbox holds one check per name
(``sandbox/rule_checks.py``); tests/unit/test_rule_kinds.py holds the three lists equal.
The helpers below walk a rule with its sub-rules (composition), so no caller tests a kind's name.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from gateway.rule_kinds import composition, denied, derived, equality, membership, public, time_valid
from gateway.rule_kinds.base import NOW_PARAMETER, TODAY_PARAMETER, RuleKindSpec
from gateway.rule_kinds.time_valid import now_parameters
from sandbox.wire import RuleKind

if TYPE_CHECKING:
    from gateway.policy import VisibilityRule

__all__ = [
    "KINDS",
    "NOW_PARAMETER",
    "TODAY_PARAMETER",
    "RuleKindSpec",
    "anchors",
    "attributes",
    "needs_neo4j",
    "now_parameters",
    "property_refs",
    "reads_now",
    "spec",
    "walk",
]

KINDS: dict[RuleKind, RuleKindSpec] = {
    s.name: s
    for s in (
        membership.SPEC,
        equality.SPEC,
        derived.SPEC,
        public.SPEC,
        denied.SPEC,
        composition.ALL_OF,
        composition.ANY_OF,
        time_valid.SPEC,
    )
}


def spec(rule: VisibilityRule) -> RuleKindSpec:
    return KINDS[rule.kind]


def walk(rule: VisibilityRule) -> Iterator[VisibilityRule]:
    """``rule`` and every rule inside it, depth first."""
    yield rule
    for sub in spec(rule).sub_rules(rule):
        yield from walk(sub)


def anchors(rule: VisibilityRule) -> list[str]:
    """The labels ``rule``'s derived parts borrow visibility from."""
    return [label for r in walk(rule) if (label := spec(r).anchor(r)) is not None]


def needs_neo4j(rule: VisibilityRule) -> bool:
    """Some part of ``rule`` only Neo4j can decide (a derived walk)."""
    return any(spec(r).needs_neo4j for r in walk(rule))


def attributes(rule: VisibilityRule) -> set[str]:
    """The principal's attributes ``rule`` compares with."""
    return {r.attribute_name() for r in walk(rule) if spec(r).reads_attribute}


def reads_now(rule: VisibilityRule) -> bool:
    return any(spec(r).reads_now for r in walk(rule))


def property_refs(rule: VisibilityRule, layers_property: str) -> list[str]:
    """The element properties ``rule`` reads (its sub-rules' included; not a derived anchor's)."""
    return list(dict.fromkeys(p for r in walk(rule) for p in spec(r).property_refs(r, layers_property)))
