"""``public``: every element of the label or type is visible to every caller."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.rule_kinds.base import TRUE, RuleKindSpec, SentenceContext, TextContext, WireContext
from sandbox.wire import ElementRule

if TYPE_CHECKING:
    from gateway.policy import VisibilityRule


def _text(rule: VisibilityRule, var: str, ctx: TextContext) -> str:
    return TRUE


def _wire(rule: VisibilityRule, ctx: WireContext) -> ElementRule:
    return ElementRule(kind="public")


def _sentence(rule: VisibilityRule, subject: str, ctx: SentenceContext) -> str:
    return "it exists" if subject == "its" else f"{subject} exists"


SPEC = RuleKindSpec(
    name="public",
    fields=frozenset(),
    required=frozenset(),
    text=_text,
    wire=_wire,
    sentence=_sentence,
    constant=True,
    label="public rule",
)
