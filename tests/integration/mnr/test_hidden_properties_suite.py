"""The hidden-properties MNR suite (tests/mnr/hidden/) passes under its policy and fails without its section.

Real sandbox, real Neo4j, both release lines. The control runs the same cases under the same
policy with ``hidden_properties`` emptied: every case then fails (the values come back, the
queries are not refused), so the suite cannot pass by proving nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.connection import Neo4jConnection
from gateway.mnr.cases import Suite, load_suite
from gateway.mnr.runner import CaseOutcome, MnrSession
from gateway.policy import HiddenProperties, Policy, load_policy
from gateway.runner import SandboxRunner

pytestmark = pytest.mark.neo4j2026

HERE = Path(__file__).resolve().parents[2] / "mnr" / "hidden"
POLICY = load_policy(HERE / "policy.yaml")


@pytest.fixture(scope="module")
def suite() -> Suite:
    return load_suite(HERE / "hidden_properties.mnr.yaml")


def _session(connection: Neo4jConnection, runner: SandboxRunner, policy: Policy) -> MnrSession:
    return MnrSession(connection=connection, runner=runner, policy=policy)


@pytest.fixture(scope="module")
def outcomes(
    neo4j_connection: Neo4jConnection, sandbox_runner: SandboxRunner, suite: Suite
) -> Iterator[list[CaseOutcome]]:
    with _session(neo4j_connection, sandbox_runner, POLICY) as session:
        yield session.run_suite(suite)


def test_every_case_passes_under_the_suite_s_policy(outcomes: list[CaseOutcome]) -> None:
    failed = [o.message() for o in outcomes if o.status != "passed"]
    assert failed == []
    assert len(outcomes) == 14


def test_every_case_fails_when_nothing_is_hidden(
    neo4j_connection: Neo4jConnection, sandbox_runner: SandboxRunner, suite: Suite
) -> None:
    control = POLICY.model_copy(update={"hidden_properties": HiddenProperties()})
    with _session(neo4j_connection, sandbox_runner, control) as session:
        results = session.run_suite(suite)
    passed = [o.case_id for o in results if o.status == "passed"]
    assert passed == []
    leaked = {o.case_id: o.failures for o in results if o.case_id.startswith(("whole", "collected"))}
    assert all(failures and failures[0].startswith("LEAKED") for failures in leaked.values()), leaked
