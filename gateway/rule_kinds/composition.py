"""``all_of`` / ``any_of``: every one / at least one of ``rules`` holds, for one label or type.

Nesting is allowed but bounded (``MAX_NESTING``); a derived rule inside takes part in the
policy's cycle check like a top-level one. The sandbox decides with three values (a derived
sub-rule is "only Neo4j can tell"): ``all_of`` is false when one is false, unknown when one is
unknown, else true; ``any_of`` is true when one is true, unknown when one is unknown, else false.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.rule_kinds.base import FALSE, TRUE, RuleKindSpec, SentenceContext, TextContext, WireContext
from sandbox.wire import ElementRule

if TYPE_CHECKING:
    from gateway.policy import VisibilityRule

# Rules within rules: deep enough for any reviewer's sentence, small enough to read.
MAX_NESTING = 3


def _depth(rule: VisibilityRule) -> int:
    return 1 + max((_depth(sub) for sub in rule.rules or ()), default=0) if rule.rules else 0


def _validate(rule: VisibilityRule) -> None:
    if len(rule.rules or ()) < 2:
        raise ValueError(f"an {rule.kind} rule combines at least two rules (`rules: [<rule>, <rule>]`)")
    if _depth(rule) > MAX_NESTING:
        raise ValueError(f"{rule.kind} rules nest at most {MAX_NESTING} deep")


def without(rule: VisibilityRule, part: VisibilityRule) -> VisibilityRule | None:
    """What an ``all_of`` asks beyond ``part`` when ``part`` is one of its rules (the rewrite
    writes a rule shared with the default once); None for any other rule."""
    if rule.kind != ALL_OF.name or part not in (rule.rules or ()):
        return None
    rest = tuple(sub for sub in rule.rules or () if sub != part)
    if not rest:
        return part
    return rest[0] if len(rest) == 1 else rule.model_copy(update={"rules": rest})


def _sub_rules(rule: VisibilityRule) -> tuple[VisibilityRule, ...]:
    return tuple(rule.rules or ())


def _all_text(rule: VisibilityRule, var: str, ctx: TextContext) -> str:
    parts = [ctx.rule(var, sub) for sub in _sub_rules(rule)]
    if FALSE in parts:
        return FALSE
    parts = [p for p in parts if p != TRUE]
    if not parts:
        return TRUE
    return parts[0] if len(parts) == 1 else "(" + " AND ".join(parts) + ")"


def _any_text(rule: VisibilityRule, var: str, ctx: TextContext) -> str:
    parts = [ctx.rule(var, sub) for sub in _sub_rules(rule)]
    if TRUE in parts:
        return TRUE
    parts = [p for p in parts if p != FALSE]
    if not parts:
        return FALSE
    return parts[0] if len(parts) == 1 else "(" + " OR ".join(parts) + ")"


def _all_wire(rule: VisibilityRule, ctx: WireContext) -> ElementRule:
    return ElementRule(kind="all_of", rules=[ctx.wire(sub) for sub in _sub_rules(rule)])


def _any_wire(rule: VisibilityRule, ctx: WireContext) -> ElementRule:
    return ElementRule(kind="any_of", rules=[ctx.wire(sub) for sub in _sub_rules(rule)])


def _all_sentence(rule: VisibilityRule, subject: str, ctx: SentenceContext) -> str:
    return "(" + " and ".join(ctx.holds(sub, subject) for sub in _sub_rules(rule)) + ")"


def _any_sentence(rule: VisibilityRule, subject: str, ctx: SentenceContext) -> str:
    return "(" + " or ".join(ctx.holds(sub, subject) for sub in _sub_rules(rule)) + ")"


ALL_OF = RuleKindSpec(
    name="all_of",
    fields=frozenset({"rules"}),
    required=frozenset({"rules"}),
    text=_all_text,
    wire=_all_wire,
    sentence=_all_sentence,
    validate=_validate,
    sub_rules=_sub_rules,
    label="all_of rule",
)
ANY_OF = RuleKindSpec(
    name="any_of",
    fields=frozenset({"rules"}),
    required=frozenset({"rules"}),
    text=_any_text,
    wire=_any_wire,
    sentence=_any_sentence,
    validate=_validate,
    sub_rules=_sub_rules,
    label="any_of rule",
)
