"""``cypher-gateway audit tail|summary``: the audit log read back for a reviewer.

``tail`` prints the last lines, filtered by principal, decision, tool or time; ``summary``
counts them, in sections (tools, decisions, rules, errors, principals, refusals...) or
broken down ``--by principal|scope|tool|rule|hour|client|decision|attribute:NAME``. A section
with nothing in it is not printed. ``--where NAME=VALUE`` keeps the lines whose principal holds
VALUE in its attribute list NAME, or whose pinned parameter NAME was VALUE: "who read X".

A principal is its (source, name): a tokens-file name and an OAuth subject that print alike
are counted apart, each labelled with its source. Every value printed comes from the log, which
may hold any text (a line another version wrote, an edited file, a client's address): ``summary`` prints
it escaped (:func:`gateway.identity_text.printable`), ``tail`` as ASCII-only JSON.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from gateway.audit import MAX_KEY_CHARS, AuditLog, kept_text
from gateway.config import ConfigError, load_settings
from gateway.domain import DEFAULT_ATTRIBUTE
from gateway.identity_text import printable

BY_KEYS = ("principal", "scope", "tool", "rule", "hour", "client", "decision")
BY_ATTRIBUTE = "attribute:"
NONE = "(none)"
_RELATIVE = re.compile(r"^(\d+)([smhd])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def since_time(text: str, now: datetime | None = None) -> datetime:
    """``--since``: an ISO time (UTC unless it says otherwise), or a span back from now (``90m``, ``2h``, ``7d``)."""
    match = _RELATIVE.match(text.strip())
    if match:
        return (now or datetime.now(UTC)) - timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is neither an ISO time nor a span such as 90m, 2h or 7d") from exc
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _time(record: dict[str, Any]) -> datetime | None:
    try:
        return datetime.fromisoformat(str(record.get("time")))
    except ValueError:
        return None


def by_key(text: str) -> str:
    """``--by``: one of :data:`BY_KEYS`, or ``attribute:NAME`` (``attribute:layers`` is the scope)."""
    if text in BY_KEYS or (text.startswith(BY_ATTRIBUTE) and text.removeprefix(BY_ATTRIBUTE)):
        return text
    raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(BY_KEYS)} or attribute:NAME")


def where_pair(text: str) -> tuple[str, str]:
    """``--where NAME=VALUE``."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip() or not value:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE (e.g. repository=acme/infra)")
    return name.strip(), value


def attribute_values(record: dict[str, Any], name: str) -> list[str]:
    """The principal's list ``name`` on a line (``layers`` is its scope); empty when it has none."""
    named = record.get("attributes")
    values = record.get("scope") if name == DEFAULT_ATTRIBUTE else named.get(name) if isinstance(named, dict) else None
    return [str(v) for v in values] if isinstance(values, list) else []


def matches(record: dict[str, Any], name: str, value: str) -> bool:
    """The line's principal holds ``value`` in its list ``name``, or the pinned parameter ``name`` was ``value``.

    Compared as the line keeps values (``kept_text``): a value longer than the audit keeps matches
    every value that begins with the same characters (``_audit`` says so on stderr).
    """
    kept = kept_text(value)
    pinned = record.get("pinned")
    held = isinstance(pinned, dict) and name in pinned and str(pinned[name]) == kept
    return held or kept in attribute_values(record, name)


def select(
    records: list[dict[str, Any]],
    *,
    since: datetime | None = None,
    principal: str | None = None,
    decision: str | None = None,
    tool: str | None = None,
    where: list[tuple[str, str]] | None = None,
) -> list[dict[str, Any]]:
    """The records that match every filter given."""
    chosen = []
    for record in records:
        if not all(matches(record, name, value) for name, value in where or ()):
            continue
        if since is not None and ((when := _time(record)) is None or when < since):
            continue
        if principal is not None and record.get("principal") != principal:
            continue
        if decision is not None and record.get("decision") != decision:
            continue
        if tool is not None and record.get("tool") != tool:
            continue
        chosen.append(record)
    return chosen


def _identity(record: dict[str, Any]) -> tuple[str | None, str | None]:
    """Who a line is about: (source, name). A line written without a source has None there."""
    name, source = record.get("principal"), record.get("principal_source")
    return (None if source is None else str(source)), (None if name is None else str(name))


def principal_labels(records: list[dict[str, Any]]) -> dict[tuple[str | None, str | None], str]:
    """A printed label for each (source, name) among ``records``: the name, and ``name [source]``
    wherever one name stands for more than one source."""
    identities = {_identity(record) for record in records}
    sources: Counter[str | None] = Counter(name for _, name in identities)
    return {
        (source, name): NONE if name is None else name if sources[name] == 1 else f"{name} [{source or 'unknown'}]"
        for source, name in identities
    }


def keys_of(record: dict[str, Any], by: str, labels: dict[tuple[str | None, str | None], str]) -> list[str]:
    """The groups a record falls in for ``--by`` (one, or one per attribute value)."""
    if by == "hour":
        when = _time(record)
        return [when.astimezone(UTC).strftime("%Y-%m-%dT%H:00Z") if when else "?"]
    if by == "principal":
        return [labels[_identity(record)]]
    if by.startswith(BY_ATTRIBUTE):
        return attribute_values(record, by.removeprefix(BY_ATTRIBUTE)) or [NONE]
    value = record.get(by)
    if by == "scope" and isinstance(value, list):
        return [",".join(map(str, value)) or "(global only)"]
    return [NONE if value is None else str(value)]


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts by tool, decision, rule, error code, principal and transport; refusals by reason and client."""
    refused = [r for r in records if r.get("decision") == "refused"]
    labels = principal_labels(records)
    return {
        "calls": len(records),
        "by_tool": dict(Counter(r.get("tool") for r in records)),
        "by_decision": dict(Counter(r.get("decision") for r in records)),
        "by_rule": dict(Counter(r["rule"] for r in records if r.get("rule"))),
        "by_error": dict(Counter(r["error_code"] for r in records if r.get("error_code"))),
        "by_principal": dict(Counter(labels[_identity(r)] for r in records if r.get("principal"))),
        "by_transport": dict(Counter(r.get("transport") for r in records)),
        "refused_by_reason": dict(Counter(f"{r.get('status')} {r.get('reason')}" for r in refused)),
        "refused_by_client": dict(Counter(str(r.get("client")) for r in refused)),
        "degraded": dict(Counter(d for r in records for d in r.get("degraded", []))),
        "truncated": sum(1 for r in records if r.get("truncated")),
    }


def breakdown(records: list[dict[str, Any]], by: str) -> dict[str, dict[str, int]]:
    """For each group of ``--by``: its calls and how many ended in each decision."""
    groups: dict[str, Counter[str]] = defaultdict(Counter)
    labels = principal_labels(records)
    for record in records:
        for key in keys_of(record, by, labels):
            group = groups[key]
            group["calls"] += 1
            group[str(record.get("decision"))] += 1
    return {key: dict(counter) for key, counter in groups.items()}


def _print_counts(title: str, counts: dict[Any, int]) -> None:
    if not counts:
        return
    print(f"{title}:")
    for name, count in sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0]))):
        print(f"  {count:6}  {printable(name)}")


def _audit(args: argparse.Namespace) -> int:
    try:
        path = Path(args.path) if args.path else load_settings(args.config).audit_path
    except ConfigError as exc:
        print(f"[cypher-gateway] cannot read settings: {exc}", file=sys.stderr)
        return 2
    if not path.exists():
        print(f"[cypher-gateway] no audit log at {path}", file=sys.stderr)
        return 1
    for name, value in args.where or ():
        if kept_text(value) != value:
            print(f"[cypher-gateway] the audit keeps the first {MAX_KEY_CHARS} characters of a value: --where "
                  f"{printable(name)} matches every value that begins like the one given", file=sys.stderr)  # fmt: skip
    records = select(AuditLog(path).read(), since=args.since, principal=getattr(args, "principal", None),
                     decision=getattr(args, "decision", None), tool=getattr(args, "tool", None),
                     where=args.where)  # fmt: skip
    if args.audit_action == "tail":
        for record in records[-args.lines :] if args.lines > 0 else []:
            # ASCII-only JSON: every control or non-ASCII character of the line is a \u escape.
            print(json.dumps(record, separators=(",", ":"), ensure_ascii=True))
        return 0
    if args.by:
        table = breakdown(records, args.by)
        if args.json:
            print(json.dumps(table, indent=2))
            return 0
        print(f"{len(records)} lines in {printable(path)}, by {printable(args.by)}")
        order = sorted(table) if args.by == "hour" else sorted(table, key=lambda k: (-table[k]["calls"], k))
        for key in order:
            decisions = ", ".join(f"{printable(d)} {n}" for d, n in sorted(table[key].items()) if d != "calls")
            print(f"  {table[key]['calls']:6}  {printable(key)}  ({decisions})")
        return 0
    summary = summarize(records)
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(f"{summary['calls']} lines in {printable(path)}")
    for key in ("by_tool", "by_decision", "by_rule", "by_error", "by_principal", "by_transport",
                "refused_by_reason", "refused_by_client", "degraded"):  # fmt: skip
        _print_counts(key.removeprefix("by_").replace("_by_", " by "), summary[key])
    if summary["truncated"]:
        print(f"truncated: {summary['truncated']}")
    return 0


def register(subparsers: Any) -> None:
    audit = subparsers.add_parser("audit", help="read the audit log")
    actions = audit.add_subparsers(dest="audit_action", required=True, metavar="ACTION")
    tail = actions.add_parser("tail", help="print the last audit lines (filtered)")
    tail.add_argument("-n", "--lines", type=int, default=20)
    tail.add_argument("--principal", help="only this principal's lines")
    tail.add_argument("--decision", help="only lines with this decision (answered, rejected, refused, error...)")
    tail.add_argument("--tool", help="only this tool's lines (recall, analyze, check, schema, http)")
    summary = actions.add_parser("summary", help="counts by tool, decision, rule, principal; refusals")
    summary.add_argument(
        "--by",
        type=by_key,
        metavar="|".join((*BY_KEYS, "attribute:NAME")),
        help="one breakdown: each group's lines and decisions (attribute:NAME: one group per value)",
    )
    summary.add_argument("--json", action="store_true")
    for sub in (tail, summary):
        sub.add_argument("--since", type=since_time, help="ISO time (UTC by default) or a span back: 90m, 2h, 7d")
        sub.add_argument("--path", help="audit log file (default: the configured audit_path)")
        sub.add_argument(
            "--where",
            type=where_pair,
            action="append",
            metavar="NAME=VALUE",
            help="only lines whose principal's list NAME holds VALUE, or whose pinned parameter NAME "
            "was VALUE (repeatable: all must hold)",
        )
        sub.add_argument("--config", type=Path)
    audit.set_defaults(handler=_audit)
