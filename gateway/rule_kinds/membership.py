"""``membership``: the list property is empty (global) or shares an entry with the caller's attribute.

A missing property hides the element (unless the policy opts into ``scope.untagged: global``),
and so does anything malformed (a string, a number, a list holding a non-string or a null): a
writer bug or a renamed property turns into a missing answer, never a disclosure. The property
is read once (bound by a one-element ``any``). ``CASE``, not ``OR``: Neo4j does not promise the
order it evaluates ``OR`` operands in, and ``size('a')`` raises; a ``CASE`` branch runs only when
chosen. The type test needs ``NOT NULL``: ``null IS :: LIST<STRING NOT NULL>`` is true.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.rule_kinds.base import (
    GENERATED_PREFIX,
    RuleKindSpec,
    SentenceContext,
    TextContext,
    WireContext,
)
from sandbox.wire import ElementRule

if TYPE_CHECKING:
    from gateway.policy import VisibilityRule


def membership_text(element: str, prop: str, parameter: str, *, untagged_global: bool) -> str:
    """``element``'s list property ``prop`` (Cypher text) is global or meets ``parameter`` (``$name``)."""
    value, item = f"{GENERATED_PREFIX}v", f"{GENERATED_PREFIX}l"
    missing = f"WHEN {value} IS NULL THEN true " if untagged_global else ""
    return (
        f"any({value} IN [{element}.{prop}] WHERE CASE {missing}"
        f"WHEN {value} IS :: LIST<STRING NOT NULL> NOT NULL THEN size({value}) = 0 OR "
        f"any({item} IN {value} WHERE {item} IN {parameter}) "
        "ELSE false END)"
    )


def _text(rule: VisibilityRule, var: str, ctx: TextContext) -> str:
    return membership_text(
        var,
        ctx.quote(ctx.rule_property(rule)),
        ctx.attribute_parameter(rule.attribute_name()),
        untagged_global=ctx.untagged_global,
    )


def _wire(rule: VisibilityRule, ctx: WireContext) -> ElementRule:
    return ElementRule(kind="membership", property=ctx.rule_property(rule), values=ctx.values(rule.attribute_name()))


def _sentence(rule: VisibilityRule, subject: str, ctx: SentenceContext) -> str:
    whose = "its" if subject == "its" else f"{subject}'s"
    return (
        f"{whose} {ctx.rule_property(rule)} is an empty list or shares an entry with the caller's "
        f"{rule.attribute_name()}"
    )


def _properties(rule: VisibilityRule, layers_property: str) -> tuple[str, ...]:
    return (rule.property or layers_property,)


SPEC = RuleKindSpec(
    name="membership",
    fields=frozenset({"property", "attribute"}),
    required=frozenset(),
    text=_text,
    wire=_wire,
    sentence=_sentence,
    property_refs=_properties,
    reads_attribute=True,
    label="membership rule",
)
