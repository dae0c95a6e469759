"""``time_valid``: the element is valid at the request's instant: ``from <= now < to``.

``from_property`` / ``to_property`` (default ``validFrom`` / ``validTo``) are compared with the
request's one instant, the reserved parameter ``$__gw_now`` (ISO-8601, UTC), which the sandbox's
check receives as ``ScopeCheck.now``: both layers decide with the same time.

What is compared, fail-closed: a zoned DATETIME as the instant it names, and a DATE as its
midnight UTC. A missing ``to`` means still valid (Mindreader's reading: a retired element gains
``validTo``); a missing ``from`` hides the element, and so does any other stored value (a string,
a LOCAL DATETIME, a number, a list): only a value whose instant is certain decides.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.rule_kinds.base import (
    NOW_PARAMETER,
    RuleKindSpec,
    SentenceContext,
    TextContext,
    WireContext,
)
from sandbox.wire import ElementRule

if TYPE_CHECKING:
    from gateway.policy import VisibilityRule

DEFAULT_FROM = "validFrom"
DEFAULT_TO = "validTo"


def properties(rule: VisibilityRule) -> tuple[str, str]:
    """The (from, to) property names the rule reads."""
    return rule.from_property or DEFAULT_FROM, rule.to_property or DEFAULT_TO


def _seconds_until_now(value: str) -> str:
    """Whole seconds from ``value`` to the request's instant, rounded down (``-1`` for one
    nanosecond after it): ``>= 0`` is ``value <= now``, ``< 0`` is ``now < value``; null when
    ``value`` is missing.

    ``duration.inSeconds`` measures between instants whatever the zones (``<=`` does not: Neo4j
    orders two datetimes naming one instant in different zones by their local times), and reads
    a DATE as its midnight in the other value's zone: the gateway writes the instant at +00:00,
    so a date is its midnight UTC.
    """
    return f"duration.inSeconds({value}, datetime(${NOW_PARAMETER})).seconds"


def _text(rule: VisibilityRule, var: str, ctx: TextContext) -> str:
    start, end = (f"{var}.{ctx.quote(name)}" for name in properties(rule))
    # One type test for both values, a closed union whose members admit null; it guards the
    # arithmetic inside one CASE (Neo4j may reorder the operands of AND, and `duration.inSeconds`
    # raises on a string or a number), so a value of another type is false, never an error.
    # `a >= 0 > b` is `a >= 0 AND 0 > b`; a missing `from` reads as after the instant (-1 fails
    # `>= 0`), a missing `to` as before it (-1 passes `0 >`).
    return (
        f"CASE WHEN [{start}, {end}] IS :: LIST<DATE | ZONED DATETIME> "
        f"THEN coalesce({_seconds_until_now(start)}, -1) >= 0 > coalesce({_seconds_until_now(end)}, -1) "
        "ELSE false END"
    )


def _wire(rule: VisibilityRule, ctx: WireContext) -> ElementRule:
    start, end = properties(rule)
    return ElementRule(kind="time_valid", from_property=start, to_property=end)


def _sentence(rule: VisibilityRule, subject: str, ctx: SentenceContext) -> str:
    whose = "its" if subject == "its" else f"{subject}'s"
    start, end = properties(rule)
    return (
        f"{whose} {start} is at or before the request's time and {whose} {end} is absent or after it "
        f"(each a zoned datetime or a date; any other value, or no {start}, hides it)"
    )


def _properties(rule: VisibilityRule, layers_property: str) -> tuple[str, ...]:
    # Only `from`: a graph where nothing has been retired yet carries no `to` at all.
    return (properties(rule)[0],)


def _validate(rule: VisibilityRule) -> None:
    start, end = properties(rule)
    if start == end:
        raise ValueError("a time_valid rule reads two different properties (from_property, to_property)")


SPEC = RuleKindSpec(
    name="time_valid",
    fields=frozenset({"from_property", "to_property"}),
    required=frozenset(),
    text=_text,
    wire=_wire,
    sentence=_sentence,
    validate=_validate,
    property_refs=_properties,
    reads_now=True,
    label="time_valid rule",
)
