"""``derived``: a fixed-length ``path`` from ``x`` (the element) to ``anchor`` exists, and the anchor
is visible by its own label's rules.

The walk is written by the rewrite (``ToolRules`` as the text context: one ``EXISTS`` over the
chain of declared anchors); the sandbox cannot walk, so its check answers "only Neo4j can tell"
and the gateway-written confirmation query decides. The path's shape (``x`` and ``anchor`` only,
one anchor label with its own rule, no cycles) is checked by the policy (``gateway.policy``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.rule_kinds.base import RuleKindSpec, SentenceContext, TextContext, WireContext
from sandbox.wire import ElementRule

if TYPE_CHECKING:
    from gateway.policy import VisibilityRule


def is_derived(rule: VisibilityRule) -> bool:
    """The rule is a derived walk itself (not one holding a derived rule inside it)."""
    return rule.kind == SPEC.name


def _anchor(rule: VisibilityRule) -> str | None:
    from gateway.policy import derived_anchor_label  # the policy imports this package

    return derived_anchor_label(rule.path or "")


def _validate(rule: VisibilityRule) -> None:
    if not (rule.path or "").strip():
        raise ValueError("a derived rule names its path (a Cypher pattern from x to anchor)")


def _text(rule: VisibilityRule, var: str, ctx: TextContext) -> str:
    return ctx.derived(var, rule)


def _wire(rule: VisibilityRule, ctx: WireContext) -> ElementRule:
    return ElementRule(kind="derived")


def _sentence(rule: VisibilityRule, subject: str, ctx: SentenceContext) -> str:
    whose = "its" if subject == "its" else f"{subject}'s"
    anchor = _anchor(rule) or ""
    return ctx.holds(ctx.anchor_rule(anchor), f"{whose} {anchor}")


SPEC = RuleKindSpec(
    name="derived",
    fields=frozenset({"path"}),
    required=frozenset({"path"}),
    text=_text,
    wire=_wire,
    sentence=_sentence,
    validate=_validate,
    anchor=_anchor,
    needs_neo4j=True,
    label="derived anchor chain",
)
