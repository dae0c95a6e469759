"""The core's orchestration alone: what goes into the job, how sandbox answers map to the taxonomy.

The runner here is a recording stand-in for the Runner protocol (no Neo4j involved, nothing is
mocked about Neo4j's behaviour); the real path is covered by tests/test_server_e2e.py.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from gateway import answer
from gateway.audit import REQUEST_ORIGIN, AuditLog, Origin
from gateway.domain import LayerSwitches, Principal
from gateway.errors import (
    InternalError,
    InvalidInput,
    Neo4jRefused,
    QueryRejected,
    QueryTimeout,
    SandboxUnavailable,
)
from gateway.oauth import ClaimMapping, identity
from gateway.policy import load_policy
from gateway.service import Gateway
from sandbox.wire import SandboxError, SandboxJob, SandboxResult
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH
from tests.support.stub_runner import RunnerStub

POLICY = load_policy(ALL_PROPERTIES_POLICY_PATH)
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


def test_the_runner_is_told_when_the_request_arrived() -> None:
    # The busy wait counts from here, so the guard's time on a loaded host is part of it.
    runner = Recording({"columns": ["c"], "rows": [[3]], "row_count": 1})
    before = time.monotonic()
    Gateway(POLICY, runner).run("analyze", COUNT, {}, ALICE)
    (arrived,) = runner.arrivals
    assert arrived is not None and before <= arrived <= time.monotonic()


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


def test_a_timeout_names_the_policy_limit_and_what_to_change() -> None:
    neo4j_says = "The transaction has been terminated. Retry your operation in a new transaction, and you should see a successful result."  # noqa: E501
    runner = Recording(error=SandboxError(code="timeout", message=neo4j_says, neo4j_code="Neo.X.TransactionTimedOut"))
    with pytest.raises(QueryTimeout) as info:
        Gateway(POLICY, runner).run("analyze", COUNT, {}, ALICE)
    message = info.value.message
    seconds = POLICY.tool("analyze").limits.timeout_seconds
    assert f"time limit ({seconds:g} s for analyze)" in message
    assert "LIMIT" in message and "*1..3" in message and "tools.analyze.limits.timeout_seconds" in message
    assert "Retry" not in message and "successful result" not in message


def test_a_disabled_answer_carries_its_reason() -> None:
    class Gone(Recording):
        def answer(self, job: SandboxJob) -> SandboxResult:
            raise SandboxUnavailable("the Docker daemon is not reachable")

    answered = Gateway(POLICY, Gone()).run("analyze", COUNT, {}, ALICE)
    assert answered.degraded == ["analyze:disabled"] and answered.degradedReason == "the Docker daemon is not reachable"
    unset = Gateway(POLICY, None, disabled_reason="the managed Neo4j's password file /x/password does not exist")
    assert unset.run("analyze", COUNT, {}, ALICE).degradedReason == unset.disabled_reason


def test_a_standing_problem_is_said_by_every_answer() -> None:
    # serve's look at the graph found the policy's scope property nowhere: said from the first answer on.
    runner = Recording({"columns": ["c"], "rows": [[0]], "row_count": 1})
    reason = "the policy's scope property 'layers' occurs on no node or relationship"
    gateway = Gateway(POLICY, runner, standing_degraded=["scope:property-missing"], standing_reason=reason)
    for _ in range(2):
        answered = gateway.run("analyze", COUNT, {}, ALICE)
        assert answered.degraded == ["scope:property-missing"] and answered.degradedReason == reason
    assert Gateway(POLICY, runner).run("analyze", COUNT, {}, ALICE).degraded == []


def test_the_answer_is_fitted_to_the_policy_bytes() -> None:
    limit = POLICY.tool("analyze").limits.max_bytes
    rows = [["\U0001f600" * 1000] for _ in range(100)]  # 400 KB of UTF-8, under the sandbox's byte limit
    runner = Recording({"columns": ["v"], "rows": rows, "row_count": 100, "bytes": 400_202})
    fitted = Gateway(POLICY, runner).run("analyze", COUNT, {}, ALICE)
    assert fitted.truncated and fitted.truncation == "bytes" and 0 < fitted.rowCount < 100
    assert answer.model_size(fitted) <= limit


def test_cancel_is_passed_to_the_runner() -> None:
    class Cancellable(Recording):
        cancelled: list[str] = []

        def cancel(self, query_id: str) -> bool:
            self.cancelled.append(query_id)
            return True

    runner = Cancellable()
    assert Gateway(POLICY, runner).cancel("q-1") is True and runner.cancelled == ["q-1"]
    assert Gateway(POLICY, None).cancel("q-2") is False


def _one_row_answer(size: int) -> dict[str, Any]:
    """A sandbox answer of one ASCII string of ``size`` characters."""
    return {"columns": ["v"], "rows": [["x" * size]], "row_count": 1, "bytes": size + 4}


def test_the_claim_missing_sentence_is_fitted_within_the_policy_bytes() -> None:
    limit = POLICY.tool("analyze").limits.max_bytes
    # A row that leaves 10 bytes of the limit unused: it fits as long as nothing is added after fitting.
    base = answer.model_size(Gateway(POLICY, Recording(_one_row_answer(0))).run("analyze", COUNT, {}, ALICE))
    size = (limit - 10 - base) // 2  # an ASCII character is sent twice: structured and in the text block
    runner = Recording(_one_row_answer(size))
    plain = Gateway(POLICY, runner).run("analyze", COUNT, {}, ALICE)
    assert not plain.truncated and limit - 12 <= answer.model_size(plain) <= limit
    mapping = ClaimMapping(layers_read=True, attribute_claims={"repositories": "repos"})
    sentence = identity({"iss": "https://idp.example", "sub": "alice"}, mapping).claim_warning()
    assert sentence is not None and len(sentence) > 100
    token = REQUEST_ORIGIN.set(Origin(claim_warning=sentence))
    try:
        warned = Gateway(POLICY, runner).run("analyze", COUNT, {}, ALICE)
    finally:
        REQUEST_ORIGIN.reset(token)
    assert warned.degraded == ["identity:claim-missing"] and warned.degradedReason == sentence
    # The whole result as sent, text block and structured content, stays within max_bytes: the row goes.
    assert answer.model_size(warned) <= limit
    assert warned.truncated and warned.truncation == "bytes" and warned.rowCount == 0


def test_a_standing_problem_is_fitted_within_the_policy_bytes() -> None:
    limit = POLICY.tool("analyze").limits.max_bytes
    base = answer.model_size(Gateway(POLICY, Recording(_one_row_answer(0))).run("analyze", COUNT, {}, ALICE))
    runner = Recording(_one_row_answer((limit - 10 - base) // 2))
    reason = "the scope property occurs on no element of the graph; " * 4
    gateway = Gateway(POLICY, runner, standing_degraded=["scope:property-missing"], standing_reason=reason)
    marked = gateway.run("analyze", COUNT, {}, ALICE)
    assert marked.degraded == ["scope:property-missing"] and answer.model_size(marked) <= limit
    assert marked.truncated and marked.rowCount == 0
