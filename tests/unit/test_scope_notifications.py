"""Which of Neo4j's notifications reach a scoped caller, from either transport, and where they are dropped."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from gateway.domain import LayerSwitches, Principal
from gateway.policy import load_policy
from gateway.scope import kept_notifications
from gateway.scope.notifications import KEPT_CODES, KEPT_GQL_STATUSES
from gateway.service import Gateway
from sandbox.bolt import notifications_of
from sandbox.query_api import notifications_from
from sandbox.wire import Notification, SandboxJob, SandboxResult
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH
from tests.support.stub_runner import RunnerStub

POLICY = load_policy(ALL_PROPERTIES_POLICY_PATH)
ALICE = Principal(name="alice", scope=frozenset({"project-a"}))
DEPRECATED = "Neo.ClientNotification.Statement.FeatureDeprecationWarning"
UNKNOWN_LABEL = "Neo.ClientNotification.Statement.UnknownLabelWarning"


@pytest.mark.parametrize(
    "status",
    [
        "01N50",  # unknown label: absent when only hidden elements carry it
        "01N51",  # unknown relationship type
        "01N52",  # unknown property key
        "03N90",  # cartesian product, and the other performance notes: the plan follows statistics
        "03N92",
        "03N94",
        "01G11",  # null skipped by an aggregation: data
        "01N42",  # made up by the driver for a server without GQL statuses
        "01N99",  # anything Neo4j adds later
    ],
)
def test_notifications_that_can_depend_on_data_are_dropped(status: str) -> None:
    # Even with a code on the list: the GQL status decides when there is one.
    assert kept_notifications([Notification(gql_status=status, code=DEPRECATED)]) == []


@pytest.mark.parametrize("status", sorted(KEPT_GQL_STATUSES))
def test_notifications_the_query_text_decides_are_kept(status: str) -> None:
    notification = Notification(gql_status=status, code="any", description="d")
    assert kept_notifications([notification]) == [notification]


def test_without_a_gql_status_the_neo4j_code_decides() -> None:
    kept = [Notification(code=code) for code in sorted(KEPT_CODES)]
    dropped = [Notification(code=UNKNOWN_LABEL), Notification(code=None), Notification()]
    assert kept_notifications([*dropped, *kept]) == kept


class _Runner(RunnerStub):
    """Answers every job with the given notifications."""

    def __init__(self, notifications: list[Notification]) -> None:
        super().__init__()
        self.notifications = notifications

    def answer(self, job: SandboxJob) -> SandboxResult:
        return SandboxResult(query_id=job.query_id, ok=True, columns=["c"], rows=[[0]], row_count=1,
                             notifications=self.notifications)  # fmt: skip


def test_the_gateway_drops_them_whenever_the_scope_rewrite_is_on() -> None:
    unknown = Notification(gql_status="01N50", code=UNKNOWN_LABEL)
    deprecated = Notification(gql_status="01N00", code=DEPRECATED)
    runner = _Runner([unknown, deprecated])
    query = "MATCH (n:Never) RETURN count(n) AS c"
    assert Gateway(POLICY, runner).run("analyze", query, {}, ALICE).notifications == [deprecated]
    # With the rewrite off (tests only) nothing is hidden to begin with: Neo4j's list passes whole.
    unscoped = Gateway(POLICY, runner, layers=LayerSwitches(scope_rewrite=False))
    assert unscoped.run("analyze", query, {}, ALICE).notifications == [unknown, deprecated]


def _status(gql_status: str, notification: bool = True) -> Any:
    return SimpleNamespace(gql_status=gql_status, is_notification=notification)


def _summary(legacy: list[dict[str, Any]], statuses: list[Any]) -> Any:
    return SimpleNamespace(notifications=legacy, gql_status_objects=statuses)


def test_bolt_pairs_each_notification_with_its_gql_status() -> None:
    legacy = [
        {"code": DEPRECATED, "title": "t", "description": "d", "severity": "WARNING", "category": "DEPRECATION"},
        {"code": UNKNOWN_LABEL, "severity": "WARNING", "category": "UNRECOGNIZED"},
    ]
    # The success status is no notification; the driver derives `legacy` from the other two, in order.
    summary = _summary(legacy, [_status("00000", notification=False), _status("01N00"), _status("01N50")])
    got = notifications_of(summary)
    assert [(n.gql_status, n.code, n.classification) for n in got] == [
        ("01N00", DEPRECATED, "DEPRECATION"), ("01N50", UNKNOWN_LABEL, "UNRECOGNIZED"),
    ]  # fmt: skip
    assert got[0].title == "t" and got[0].description == "d" and got[0].severity == "WARNING"


def test_bolt_from_a_server_without_gql_statuses_keeps_only_the_codes() -> None:
    # The driver makes statuses up (01N42, sorted by its own precedence): they identify nothing.
    legacy = [{"code": UNKNOWN_LABEL}, {"code": DEPRECATED}]
    summary = _summary(legacy, [_status("01N42"), _status("01N42"), _status("00000", notification=False)])
    assert [(n.gql_status, n.code) for n in notifications_of(summary)] == [(None, UNKNOWN_LABEL), (None, DEPRECATED)]


def test_the_query_api_sends_codes_only() -> None:
    body = {
        "data": {"fields": [], "values": []},
        "notifications": [
            {"code": DEPRECATED, "description": "d", "severity": "WARNING", "title": "t", "category": "DEPRECATION",
             "position": {"offset": 1, "line": 1, "column": 2}},
            "not a notification",
        ],
    }  # fmt: skip
    (only,) = notifications_from(body)
    assert (only.gql_status, only.code, only.classification, only.title) == (None, DEPRECATED, "DEPRECATION", "t")
    assert notifications_from({"data": {}}) == []
