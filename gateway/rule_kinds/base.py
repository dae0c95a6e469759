"""What one kind of visibility rule is made of (``RuleKindSpec``) and what it is given to build from.

A kind module (``membership.py``, ``derived.py``, …) defines one ``SPEC``; the table in
``__init__.py`` lists them. The policy loader, the rewrite (``gateway/scope/rules.py``), the
sandbox check's wire form, ``policy show``, ``doctor`` / ``policy lint`` and ``policy init`` read
a rule only through its spec, so a kind's meaning is written once, here and in its module.

The contexts are protocols so this package imports neither the rewrite nor the policy: the
rewrite's ``ToolRules`` offers the text context, ``gateway.scope`` the wire context and the
``policy show`` code the sentence context.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from sandbox.wire import ElementRule, RuleKind

if TYPE_CHECKING:
    from gateway.policy import VisibilityRule

# Generated names all start with this prefix (gateway.scope.predicates.GENERATED_PREFIX): the
# rewrite refuses a query that uses it, so a rule's own variables never capture an agent's.
GENERATED_PREFIX = "__gw_"
# The reserved parameters holding the request's one instant as time-valid rules read it: the
# instant (ISO-8601, written at +18:00) and its date at UTC (gateway/rule_kinds/time_valid.py).
NOW_PARAMETER = "__gw_now"
TODAY_PARAMETER = "__gw_today"
TRUE, FALSE = "true", "false"


class TextContext(Protocol):
    """What a kind's visibility text is written with (one tool's rules, at one walk depth)."""

    @property
    def untagged_global(self) -> bool: ...

    def quote(self, name: str) -> str:
        """A property or label name as Cypher text."""
        ...

    def rule_property(self, rule: VisibilityRule) -> str:
        """The property a membership or equality rule reads (its own, else the layers property)."""
        ...

    def attribute_parameter(self, attribute: str) -> str:
        """The ``$name`` text of the reserved parameter carrying the caller's ``attribute``."""
        ...

    def rule(self, var: str, rule: VisibilityRule) -> str:
        """A sub-rule's text (composition)."""
        ...

    def derived(self, var: str, rule: VisibilityRule) -> str:
        """A derived rule's walk to its anchors, each anchor held to its own label's rules."""
        ...


class WireContext(Protocol):
    """What a kind's wire form (the sandbox's copy of the rule) is written with."""

    def rule_property(self, rule: VisibilityRule) -> str: ...

    def values(self, attribute: str) -> list[str]:
        """The caller's values of ``attribute``, sorted."""
        ...

    def wire(self, rule: VisibilityRule) -> ElementRule:
        """A sub-rule's wire form."""
        ...


class SentenceContext(Protocol):
    """What a kind's reviewer sentence is written with."""

    def rule_property(self, rule: VisibilityRule) -> str: ...

    def holds(self, rule: VisibilityRule, subject: str) -> str:
        """What ``rule`` asks of ``subject``: a sub-rule's or an anchor's sentence."""
        ...

    def anchor_rule(self, label: str) -> VisibilityRule:
        """The rule of a derived anchor's label."""
        ...


def _none(rule: VisibilityRule) -> tuple[VisibilityRule, ...]:
    return ()


def _no_properties(rule: VisibilityRule, layers_property: str) -> tuple[str, ...]:
    return ()


def _no_anchor(rule: VisibilityRule) -> str | None:
    return None


def _valid(rule: VisibilityRule) -> None:
    return None


@dataclass(frozen=True)
class RuleKindSpec:
    """One kind of visibility rule, complete: every layer reads the kind through this."""

    name: RuleKind
    # The policy fields a rule of this kind takes (besides ``kind``), and which of them it must give.
    fields: frozenset[str]
    required: frozenset[str]
    # The Cypher text: the element ``var`` meets ``rule`` (never raises on any stored value).
    text: Callable[[VisibilityRule, str, TextContext], str]
    # The sandbox's copy, the caller's values filled in (sandbox/rule_checks.py decides with it).
    wire: Callable[[VisibilityRule, WireContext], ElementRule]
    # What ``rule`` asks of ``subject`` ("its", "its Task's"), the end of a ``policy show`` sentence.
    sentence: Callable[[VisibilityRule, str, SentenceContext], str]
    # Checks beyond the fields' presence (ValueError with the reviewer's words).
    validate: Callable[[VisibilityRule], None] = _valid
    # The rules inside this one (composition).
    sub_rules: Callable[[VisibilityRule], tuple[VisibilityRule, ...]] = _none
    # The element properties the rule reads (``policy init``, the survey, ``doctor``'s fit check).
    property_refs: Callable[[VisibilityRule, str], tuple[str, ...]] = _no_properties
    # The label whose rule a derived rule borrows through its path.
    anchor: Callable[[VisibilityRule], str | None] = _no_anchor
    # The principal's attribute the rule compares with (its parameter is filled per request).
    reads_attribute: bool = False
    # Only Neo4j can decide it (a path walk): the sandbox asks the gateway-written query.
    needs_neo4j: bool = False
    # Compared with the request's one instant (``$__gw_now``).
    reads_now: bool = False
    # The same verdict for every element: True (public), False (denied), None (it reads the element).
    constant: bool | None = None
    # Words for ``doctor``/``policy explain`` naming what decided.
    label: str = field(default="")
