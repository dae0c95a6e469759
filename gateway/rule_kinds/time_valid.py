"""``time_valid``: the element is valid at the request's instant: ``from <= now < to``.

``from_property`` / ``to_property`` (default ``validFrom`` / ``validTo``) are compared with the
request's one instant, which the sandbox's check receives as ``ScopeCheck.now`` (ISO-8601, UTC)
and the rewrite as two reserved parameters (``now_parameters``): both layers decide with the same
time.

What is compared, fail-closed: a zoned DATETIME as the instant it names, and a DATE as its
midnight UTC. A missing ``to`` means still valid (Mindreader's reading: a retired element gains
``validTo``); a missing ``from`` hides the element, and so does any other stored value (a string,
a LOCAL DATETIME, a number, a list): only a value whose instant is certain decides.

How, in Cypher: plain comparisons, which never raise (a value of another type compares as null),
and no arithmetic (Neo4j spends far more planning a function call than reading a longer text).
Neo4j orders two datetimes naming one instant by their offsets, the larger later; so the instant
is written at +18:00, the largest offset there is, and ``from <= now`` and ``now < to`` hold
exactly as the instants do. A DATE compares as null with a datetime, and with the instant's UTC
date exactly as its midnight UTC does with the instant.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import TYPE_CHECKING

from gateway.rule_kinds.base import (
    NOW_PARAMETER,
    TODAY_PARAMETER,
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


# The largest offset Neo4j (and ISO-8601) admits: no stored datetime naming the same instant is later.
_LATEST = timezone(timedelta(hours=18))


def now_parameters(now: str) -> dict[str, str]:
    """The reserved parameters the text reads, from the request's instant ``now`` (ISO-8601, UTC):
    the instant written at +18:00, and its date at UTC."""
    instant = datetime.fromisoformat(now)
    return {
        NOW_PARAMETER: instant.astimezone(_LATEST).isoformat(timespec="microseconds"),
        TODAY_PARAMETER: instant.astimezone(UTC).date().isoformat(),
    }


def _text(rule: VisibilityRule, var: str, ctx: TextContext) -> str:
    start, end = (f"{var}.{ctx.quote(name)}" for name in properties(rule))
    now, today = f"datetime(${NOW_PARAMETER})", f"date(${TODAY_PARAMETER})"
    # Each comparison is null unless the value is of the other side's type; CASE makes a null false.
    return (
        f"CASE WHEN ({start} <= {now} OR {start} <= {today}) "
        f"AND ({end} IS NULL OR {now} < {end} OR {today} < {end}) THEN true ELSE false END"
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
