"""The sandbox's check of each rule kind: one function per name of ``sandbox.wire.RuleKind``.

Each answers for one element's properties: True (the rule holds), False (it does not) or None
(only Neo4j can tell: a derived walk; the element then needs the gateway-written confirmation
query, which evaluates its whole visibility text). They are the rewrite's rules read from the
serialized element (``gateway/rule_kinds`` writes the Cypher text of the same rules), so they
must give the rewrite's verdicts on every stored value; anything unexpected is False.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, date, datetime
from typing import Any, NamedTuple, Protocol

from sandbox.tagged import TYPE_KEY
from sandbox.wire import ElementRule, RuleKind, Untagged


class CheckContext(Protocol):
    """What a check reads besides the element: the policy's untagged reading, the request's instant."""

    @property
    def untagged(self) -> Untagged: ...

    @property
    def now(self) -> int | None:
        """The request's instant in nanoseconds since the epoch (None: no instant was sent)."""
        ...

    def allowed(self, rule: ElementRule) -> frozenset[str]:
        """``rule.values`` as a set (read once per result)."""
        ...


Verdict = bool | None
Check = Callable[[ElementRule, dict[str, Any], CheckContext], Verdict]


def _membership(rule: ElementRule, properties: dict[str, Any], ctx: CheckContext) -> Verdict:
    value = properties.get(rule.property)
    if value is None:
        return ctx.untagged == "global"
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return False
    allowed = ctx.allowed(rule)
    return len(value) == 0 or any(item in allowed for item in value)


def _equality(rule: ElementRule, properties: dict[str, Any], ctx: CheckContext) -> Verdict:
    value = properties.get(rule.property)
    return isinstance(value, str) and value in ctx.allowed(rule)


def _derived(rule: ElementRule, properties: dict[str, Any], ctx: CheckContext) -> Verdict:
    return None


def _public(rule: ElementRule, properties: dict[str, Any], ctx: CheckContext) -> Verdict:
    return True


def _denied(rule: ElementRule, properties: dict[str, Any], ctx: CheckContext) -> Verdict:
    return False


def check(rule: ElementRule, properties: dict[str, Any], ctx: CheckContext) -> Verdict:
    """``rule``'s verdict on an element's properties (an unknown kind: False)."""
    found = CHECKS.get(rule.kind)
    return found.verdict(rule, properties, ctx) if found is not None else False


def _all_of(rule: ElementRule, properties: dict[str, Any], ctx: CheckContext) -> Verdict:
    verdicts = [check(sub, properties, ctx) for sub in rule.rules]
    if not verdicts or False in verdicts:
        return False
    return None if None in verdicts else True


def _any_of(rule: ElementRule, properties: dict[str, Any], ctx: CheckContext) -> Verdict:
    verdicts = [check(sub, properties, ctx) for sub in rule.rules]
    if True in verdicts:
        return True
    return None if None in verdicts else False


# Neo4j's ISO text of a zoned datetime: fractional seconds up to nanoseconds, an offset, and
# for a named zone nothing more (the zone travels apart, in "zone").
_ISO = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2}(?::\d{2})?)")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def instant(value: Any) -> int | None:
    """A zoned datetime's (or a date's midnight UTC) nanoseconds since the epoch; None for any other value."""
    if not isinstance(value, dict):
        return None
    kind, iso = value.get(TYPE_KEY), value.get("iso")
    if not isinstance(iso, str):
        return None
    try:
        if kind == "date":
            day = date.fromisoformat(iso)
            return epoch_nanos(datetime(day.year, day.month, day.day, tzinfo=UTC), 0)
        if kind == "datetime":
            found = _ISO.fullmatch(iso)
            if found is None:
                return None
            whole, fraction, offset = found.groups()
            moment = datetime.fromisoformat(whole + ("+00:00" if offset == "Z" else offset))
            return epoch_nanos(moment, int((fraction or "").ljust(9, "0")))
    except ValueError:
        return None
    return None


def epoch_nanos(moment: datetime, nanosecond: int) -> int:
    """``moment``'s whole seconds since the epoch, in nanoseconds, plus ``nanosecond`` (of its second):
    Neo4j orders instants to the nanosecond, which a Python datetime does not hold."""
    return (moment.replace(microsecond=0) - _EPOCH) // _ONE_SECOND * 1_000_000_000 + nanosecond


_ONE_SECOND = datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC) - _EPOCH


def _time_valid(rule: ElementRule, properties: dict[str, Any], ctx: CheckContext) -> Verdict:
    now = ctx.now
    since = instant(properties.get(rule.from_property))
    if now is None or since is None or since > now:
        return False
    end = properties.get(rule.to_property)
    if end is None:
        return True
    until = instant(end)
    return until is not None and now < until


def _reads_its_property(rule: ElementRule) -> list[str]:
    return [rule.property] if rule.property else []


def _reads_nothing(rule: ElementRule) -> list[str]:
    return []  # a derived walk reads the anchor, which Neo4j judges, not this element


def _reads_its_parts(rule: ElementRule) -> list[str]:
    return [name for part in rule.rules for name in reads(part)]


def _reads_its_interval(rule: ElementRule) -> list[str]:
    return [name for name in (rule.from_property, rule.to_property) if name]


class KindCheck(NamedTuple):
    """One rule kind in the sandbox: its verdict, and the element properties that verdict reads
    (kept for the check under hidden properties, withheld once it has run)."""

    verdict: Check
    reads: Callable[[ElementRule], list[str]]


CHECKS: dict[RuleKind, KindCheck] = {
    "membership": KindCheck(_membership, _reads_its_property),
    "equality": KindCheck(_equality, _reads_its_property),
    "derived": KindCheck(_derived, _reads_nothing),
    "public": KindCheck(_public, _reads_nothing),
    "denied": KindCheck(_denied, _reads_nothing),
    "all_of": KindCheck(_all_of, _reads_its_parts),
    "any_of": KindCheck(_any_of, _reads_its_parts),
    "time_valid": KindCheck(_time_valid, _reads_its_interval),
}


def walks(rule: ElementRule) -> bool:
    """``rule`` or a rule composed into it is a derived walk (the gateway's ``rule_kinds.needs_neo4j``)."""
    return rule.kind == "derived" or any(walks(sub) for sub in rule.rules)


def reads(rule: ElementRule) -> list[str]:
    """The element properties ``rule``'s check reads (an unknown kind reads nothing: it is False)."""
    found = CHECKS.get(rule.kind)
    return found.reads(rule) if found is not None else []


def now_instant(text: str | None) -> int | None:
    """The request's instant (the gateway's ISO-8601 text) in nanoseconds; None when absent or unreadable."""
    if text is None:
        return None
    return instant({TYPE_KEY: "datetime", "iso": text})
