"""``denied``: no element of the label or type is ever visible."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.rule_kinds.base import FALSE, RuleKindSpec, SentenceContext, TextContext, WireContext
from sandbox.wire import ElementRule

if TYPE_CHECKING:
    from gateway.policy import VisibilityRule


def _text(rule: VisibilityRule, var: str, ctx: TextContext) -> str:
    return FALSE


def _wire(rule: VisibilityRule, ctx: WireContext) -> ElementRule:
    return ElementRule(kind="denied")


def _sentence(rule: VisibilityRule, subject: str, ctx: SentenceContext) -> str:
    return "never (it is denied)" if subject == "its" else f"never ({subject} is denied)"


SPEC = RuleKindSpec(
    name="denied",
    fields=frozenset(),
    required=frozenset(),
    text=_text,
    wire=_wire,
    sentence=_sentence,
    constant=False,
    label="denied rule",
)
