"""``equality``: the string property is one of the caller's attribute values.

The attribute holds strings only: no other stored value equals one, and none raises.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.rule_kinds.base import RuleKindSpec, SentenceContext, TextContext, WireContext
from sandbox.wire import ElementRule

if TYPE_CHECKING:
    from gateway.policy import VisibilityRule


def _text(rule: VisibilityRule, var: str, ctx: TextContext) -> str:
    prop = ctx.quote(ctx.rule_property(rule))
    return f"coalesce({var}.{prop} IN {ctx.attribute_parameter(rule.attribute_name())}, false)"


def _wire(rule: VisibilityRule, ctx: WireContext) -> ElementRule:
    return ElementRule(kind="equality", property=ctx.rule_property(rule), values=ctx.values(rule.attribute_name()))


def _sentence(rule: VisibilityRule, subject: str, ctx: SentenceContext) -> str:
    whose = "its" if subject == "its" else f"{subject}'s"
    return f"{whose} {ctx.rule_property(rule)} is one of the caller's {rule.attribute_name()}"


def _properties(rule: VisibilityRule, layers_property: str) -> tuple[str, ...]:
    return (rule.property or layers_property,)


SPEC = RuleKindSpec(
    name="equality",
    fields=frozenset({"property", "attribute"}),
    # Both named: comparing the layers list property with a string would hide everything.
    required=frozenset({"property", "attribute"}),
    text=_text,
    wire=_wire,
    sentence=_sentence,
    property_refs=_properties,
    reads_attribute=True,
    label="equality rule",
)
