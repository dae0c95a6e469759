# ruff: noqa: E501  (a table of stored values reads better one per line)
"""The time-valid rule against the real Neo4j: for each stored type of ``validFrom`` / ``validTo``,
the rewrite's text (evaluated by Neo4j with the request's ``$__gw_now``) and the sandbox's check
(on the element as the sandbox serializes it) give the same, expected verdict.

Compared: zoned DATETIME (offset or named zone) as its instant, DATE as its midnight UTC. A
missing ``validTo`` is still valid; a missing ``validFrom``, a string, a LOCAL DATETIME, a number
or a list hides the element, and no value raises.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.policy import VisibilityRule
from gateway.rule_kinds import NOW_PARAMETER
from gateway.scope.rules import ToolRules, request_now
from sandbox.rule_checks import now_instant
from sandbox.scope_check import _Rules
from sandbox.wire import ElementRule, ScopeCheck
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH

pytestmark = pytest.mark.neo4j2026

NOW = "2026-06-01T12:00:00.000000+00:00"
# name -> (the properties as Cypher, visible at NOW)
CASES: dict[str, tuple[str, bool]] = {
    "open-ended": ("validFrom: datetime('2026-01-01T00:00:00Z')", True),
    "from-equals-now": ("validFrom: datetime('2026-06-01T12:00:00Z')", True),
    "from-a-nanosecond-later": ("validFrom: datetime('2026-06-01T12:00:00.000000001Z')", False),
    "from-in-the-future": ("validFrom: datetime('2099-01-01T00:00:00Z')", False),
    "same-instant-other-offset": ("validFrom: datetime('2026-06-01T14:00:00+02:00')", True),
    "named-zone-before": ("validFrom: datetime('2026-06-01T13:59:59[Europe/Stockholm]')", True),
    "named-zone-after": ("validFrom: datetime('2026-06-01T14:00:01[Europe/Stockholm]')", False),
    "retired": ("validFrom: datetime('2026-01-01T00:00:00Z'), validTo: datetime('2026-03-01T00:00:00Z')", False),
    "to-equals-now": ("validFrom: datetime('2026-01-01T00:00:00Z'), validTo: datetime('2026-06-01T12:00:00Z')", False),
    "retires-later": ("validFrom: datetime('2026-01-01T00:00:00Z'), validTo: datetime('2099-01-01T00:00:00Z')", True),
    "date-from-today": ("validFrom: date('2026-06-01')", True),
    "date-from-tomorrow": ("validFrom: date('2026-06-02')", False),
    "date-to-today": ("validFrom: date('2026-01-01'), validTo: date('2026-06-01')", False),
    "date-to-tomorrow": ("validFrom: date('2026-01-01'), validTo: date('2026-06-02')", True),
    "no-from": ("validTo: datetime('2099-01-01T00:00:00Z')", False),
    "nothing": ("name: 'nothing'", False),
    "string-from": ("validFrom: '2026-01-01T00:00:00Z'", False),
    "local-datetime-from": ("validFrom: localdatetime('2026-01-01T00:00:00')", False),
    "number-from": ("validFrom: 20260101", False),
    "list-from": ("validFrom: [datetime('2026-01-01T00:00:00Z')]", False),
    "string-to": ("validFrom: datetime('2026-01-01T00:00:00Z'), validTo: '2099-01-01'", False),
    "local-datetime-to": ("validFrom: datetime('2026-01-01T00:00:00Z'), validTo: localdatetime('2099-01-01T00:00')", False),
    "time-from": ("validFrom: time('10:00:00Z')", False),
}  # fmt: skip


@pytest.fixture(scope="module")
def marker(neo4j_driver: Any, neo4j_connection: Any) -> Iterator[str]:
    m = f"TimeValid{uuid.uuid4().hex[:8]}"
    creates = ", ".join(f"(:{m} {{case: '{name}', {props}}})" for name, (props, _) in CASES.items())
    with neo4j_driver.session(database=neo4j_connection.database) as session:
        session.run(f"CREATE {creates}").consume()
    yield m
    with neo4j_driver.session(database=neo4j_connection.database) as session:
        session.run(f"MATCH (n:{m}) DETACH DELETE n").consume()


def _text() -> str:
    from gateway.policy import load_policy

    policy = load_policy(ALL_PROPERTIES_POLICY_PATH)
    rules = ToolRules.of(policy, "analyze")
    return rules._rule("n", VisibilityRule(kind="time_valid"), 0)


def test_the_rewrite_and_the_sandbox_agree_on_every_stored_type(
    neo4j_driver: Any, neo4j_connection: Any, marker: str
) -> None:
    from sandbox.serialize import to_json

    with neo4j_driver.session(database=neo4j_connection.database) as session:
        records = list(
            session.run(f"MATCH (n:{marker}) RETURN n, n.case AS case, {_text()} AS visible", {NOW_PARAMETER: NOW})
        )
    assert len(records) == len(CASES)
    check = _Rules(ScopeCheck(layers_property="layers", layers=[], now=NOW), frozenset())
    rule = ElementRule(kind="time_valid", from_property="validFrom", to_property="validTo")
    rewrite = {r["case"]: r["visible"] for r in records}
    sandbox = {r["case"]: check.rule(rule, _properties(to_json(r["n"]))) for r in records}
    expected = {name: visible for name, (_, visible) in CASES.items()}
    assert rewrite == expected
    assert sandbox == expected


def _properties(node: Any) -> dict[str, Any]:
    assert isinstance(node, dict) and isinstance(node["properties"], dict)
    return node["properties"]


def test_the_requests_instant_reads_alike_in_neo4j_and_in_the_sandbox(neo4j_driver: Any, neo4j_connection: Any) -> None:
    now = request_now()
    with neo4j_driver.session(database=neo4j_connection.database) as session:
        record = session.run(
            "RETURN datetime($now).epochSeconds AS s, datetime($now).nanosecond AS ns", now=now
        ).single()
    assert record is not None
    assert now_instant(now) == record["s"] * 1_000_000_000 + record["ns"]
