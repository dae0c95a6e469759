"""The core's orchestration alone: what goes into the job, how sandbox answers map to the taxonomy.

The runner here is a recording stand-in for the Runner protocol (no Neo4j involved, nothing is
mocked about Neo4j's behaviour); the real path is covered by tests/test_server_e2e.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from gateway.audit import AuditLog
from gateway.domain import LayerSwitches, Principal
from gateway.errors import (
    InternalError,
    InvalidInput,
    Neo4jRefused,
    QueryRejected,
    QueryTimeout,
    SandboxUnavailable,
)
from gateway.policy import load_policy
from gateway.service import Gateway
from sandbox.wire import SandboxError, SandboxJob, SandboxResult
from tests.support.stub_runner import RunnerStub

POLICY = load_policy()
SCOPE_KEY = POLICY.scope.scope_parameter
ALICE = Principal(name="alice", scope=frozenset({"l2", "l1"}))
COUNT = "MATCH (n:Fact) RETURN count(n) AS c"


class Recording(RunnerStub):
    def __init__(self, result: dict[str, Any] | None = None, error: SandboxError | None = None) -> None:
        super().__init__()
        self.result, self.error = result or {}, error

    def answer(self, job: SandboxJob) -> SandboxResult:
        if self.error is not None:
            return SandboxResult(query_id=job.query_id, ok=False, error=self.error)
        return SandboxResult(query_id=job.query_id, ok=True, **self.result)


def test_job_carries_policy_limits_scope_and_rewritten_query() -> None:
    runner = Recording({"columns": ["c"], "rows": [[3]], "row_count": 1})
    result = Gateway(POLICY, runner, database="memory").run("analyze", COUNT, {}, ALICE)
    assert result.rows == [[3]] and result.degraded == []
    (job,) = runner.jobs
    limits = POLICY.tool("analyze").limits
    assert (job.timeout_seconds, job.max_rows, job.max_bytes) == (
        limits.timeout_seconds, limits.max_rows, limits.max_bytes)  # fmt: skip
    assert job.database == "memory" and job.explain_check is True
    assert job.params[SCOPE_KEY] == ["l1", "l2"]
    assert f"${SCOPE_KEY}" in job.cypher and job.cypher != COUNT  # the scope rewrite ran
    assert job.scope is not None and job.scope.layers == ["l1", "l2"]
    assert set(POLICY.scope.bookkeeping_relationship_types) <= set(job.scope.hidden_relationship_types)
    assert sorted(job.procedures_allowed) == sorted(POLICY.tool("analyze").procedures_allowed)


def test_caller_cannot_supply_the_scope_parameter() -> None:
    runner = Recording()
    with pytest.raises(QueryRejected) as info:
        Gateway(POLICY, runner).run("analyze", COUNT, {SCOPE_KEY: ["everything"]}, ALICE)
    assert info.value.rule == "param.reserved" and runner.jobs == []
    # Even with the guard off, the injected value wins over the caller's.
    gateway = Gateway(POLICY, runner, layers=LayerSwitches(guard=False))
    gateway.run("analyze", COUNT, {SCOPE_KEY: ["everything"]}, ALICE)
    assert runner.jobs[-1].params[SCOPE_KEY] == ["l1", "l2"]


@pytest.mark.parametrize(
    ("code", "expected"),
    [("timeout", QueryTimeout), ("neo4j_refused", Neo4jRefused), ("explain_rejected", QueryRejected),
     ("unavailable", SandboxUnavailable), ("internal", SandboxUnavailable)],
)  # fmt: skip
def test_sandbox_errors_map_onto_the_taxonomy(code: Any, expected: type[Exception]) -> None:
    runner = Recording(error=SandboxError(code=code, message="m", neo4j_code="Neo.X"))
    with pytest.raises(expected):
        Gateway(POLICY, runner).run("analyze", COUNT, {}, ALICE)


def test_redaction_and_missing_runner_are_reported_as_degraded() -> None:
    redacted = Gateway(POLICY, Recording({"rows": [[None]], "row_count": 1, "redacted": 2})).run(
        "analyze", COUNT, {}, ALICE
    )
    assert redacted.degraded == ["scope:redacted"] and redacted.redacted == 2
    disabled = Gateway(POLICY, None).run("recall", "MATCH (n) WHERE n.repository = $repository AND "
                                         "n.taskId = $taskId RETURN n.i AS i", {"repository": "r", "taskId": "t"},
                                         ALICE)  # fmt: skip
    assert disabled.degraded == ["recall:disabled"] and disabled.rows == [] and disabled.columns == []


def test_rejections_never_reach_the_runner() -> None:
    runner = Recording()
    gateway = Gateway(POLICY, runner)
    for attack in ("CREATE (n)", "CALL dbms.listConfig()", "MATCH (n) RETURN n; MATCH (m) DETACH DELETE m"):
        with pytest.raises(QueryRejected):
            gateway.run("analyze", attack, {}, ALICE)
    with pytest.raises(QueryRejected, match="param"):
        gateway.run("recall", "MATCH (n) RETURN n.i AS i", {}, ALICE)  # recall needs $repository, $taskId
    with pytest.raises(InvalidInput):
        gateway.run("analyze", "   ", {}, ALICE)
    with pytest.raises(InvalidInput):
        gateway.run("analyze", COUNT, ["not", "a", "mapping"], ALICE)  # type: ignore[arg-type]
    assert runner.jobs == []


def test_check_reports_rule_and_rewritten_query_without_running() -> None:
    runner = Recording()
    gateway = Gateway(POLICY, runner)
    refused = gateway.check("analyze", "MATCH (n) SET n.x = 1", {}, ALICE)
    assert refused.allowed is False and refused.rule == "write.clause"
    allowed = gateway.check("analyze", COUNT, {}, ALICE)
    assert allowed.allowed is True and allowed.rewritten is not None and f"${SCOPE_KEY}" in allowed.rewritten
    assert runner.jobs == []


def test_a_bug_in_any_step_answers_internal_with_the_query_id_of_its_audit_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    def broken_plan(*args: Any, **kwargs: Any) -> Any:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr("gateway.service.scope.plan", broken_plan)
    audit = AuditLog(tmp_path / "audit.jsonl")
    gateway = Gateway(POLICY, Recording(), audit=audit)
    with pytest.raises(InternalError) as ran:
        gateway.run("analyze", COUNT, {}, ALICE)
    with pytest.raises(InternalError) as checked:
        gateway.check("analyze", COUNT, {}, ALICE)
    lines = audit.read()
    assert [(line["tool"], line["query_id"], line["error_code"]) for line in lines] == [
        ("analyze", ran.value.query_id, "internal"),
        ("check", checked.value.query_id, "internal"),
    ]
    assert ran.value.code == "internal" and ran.value.query_id in ran.value.message
