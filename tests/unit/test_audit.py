"""The audit log: one JSON line per call, no parameter values, no credentials; the reviewer CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gateway.audit import AuditLog
from gateway.cli import main
from gateway.domain import LayerSwitches, Principal
from gateway.errors import SandboxUnavailable
from gateway.policy import load_policy
from gateway.service import Gateway
from sandbox.wire import SandboxJob, SandboxResult

SECRET_VALUE = "param-value-that-must-not-be-logged"
ALICE = Principal(name="alice", scope=frozenset({"l1"}))


class AnsweringRunner:
    """Stands in for the sandbox in orchestration tests only (the e2e tests use the real one)."""

    def __init__(self, **result: Any) -> None:
        self.result = result
        self.jobs: list[SandboxJob] = []

    def run(self, job: SandboxJob) -> SandboxResult:
        self.jobs.append(job)
        return SandboxResult(query_id=job.query_id, ok=True, **self.result)

    def cancel(self, query_id: str) -> bool:
        return False

    def available(self) -> tuple[bool, str]:
        return True, ""

    def close(self) -> None:
        pass


class GoneRunner(AnsweringRunner):
    def run(self, job: SandboxJob) -> SandboxResult:
        raise SandboxUnavailable("the Docker daemon is not reachable")


def _gateway(tmp_path: Path, runner: Any, **audit_kw: Any) -> tuple[Gateway, AuditLog]:
    audit = AuditLog(tmp_path / "audit.jsonl", **audit_kw)
    # Scope rewrite off: these tests are about audit lines, not scoping (tests/test_server_e2e.py runs it all).
    return Gateway(load_policy(), runner, audit, layers=LayerSwitches(scope_rewrite=False)), audit


def test_one_line_per_call_with_decision_rule_and_no_values(tmp_path: Path) -> None:
    runner = AnsweringRunner(columns=["c"], rows=[[1]], row_count=1, bytes=2, query_type="r")
    gateway, audit = _gateway(tmp_path, runner)
    gateway.run("analyze", "MATCH (n) WHERE n.x = $v RETURN count(n) AS c", {"v": SECRET_VALUE}, ALICE)
    with pytest.raises(Exception, match=r"write\.clause"):
        gateway.run("analyze", "CREATE (n:Pwned)", {"v": SECRET_VALUE}, ALICE)
    lines = audit.read()
    assert [line["decision"] for line in lines] == ["answered", "rejected"]
    assert lines[0]["rows"] == 1 and lines[0]["query_type"] == "r" and lines[0]["param_keys"] == ["v"]
    assert lines[1]["rule"] == "write.clause" and lines[1]["error_code"] == "rejected"
    for line in lines:
        assert line["principal"] == "alice" and len(line["query_hash"]) == 16
        assert {"time", "transport", "tool", "duration_ms", "truncated", "degraded"} <= set(line)
    raw = (tmp_path / "audit.jsonl").read_text()
    assert SECRET_VALUE not in raw
    # The scope parameter the gateway injects is not the caller's and is not logged as one.
    assert "__gw" not in raw


def test_query_text_can_be_left_out(tmp_path: Path) -> None:
    gateway, audit = _gateway(tmp_path, AnsweringRunner(), include_query_text=False)
    gateway.run("analyze", "MATCH (n) RETURN count(n) AS secretish", {}, ALICE)
    (line,) = audit.read()
    assert line["query"] is None and line["query_hash"]
    assert "secretish" not in (tmp_path / "audit.jsonl").read_text()


def test_degraded_call_is_audited(tmp_path: Path) -> None:
    gateway, audit = _gateway(tmp_path, GoneRunner())
    result = gateway.run("analyze", "MATCH (n) RETURN count(n) AS c", {}, ALICE)
    assert result.degraded == ["analyze:disabled"] and result.rows == []
    (line,) = audit.read()
    assert line["decision"] == "degraded" and line["degraded"] == ["analyze:disabled"]


def test_audit_file_is_private_and_append_only(tmp_path: Path) -> None:
    gateway, _ = _gateway(tmp_path, AnsweringRunner())
    for _ in range(3):
        gateway.run("analyze", "MATCH (n) RETURN count(n) AS c", {}, ALICE)
    path = tmp_path / "audit.jsonl"
    assert path.stat().st_mode & 0o077 == 0
    first = path.read_text().splitlines()
    gateway.run("analyze", "MATCH (n) RETURN count(n) AS c", {}, ALICE)
    assert path.read_text().splitlines()[:3] == first


def test_cli_tail_and_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gateway, _ = _gateway(tmp_path, AnsweringRunner())
    gateway.run("analyze", "MATCH (n) RETURN count(n) AS c", {}, ALICE)
    for attack in ("CREATE (n)", "LOAD CSV FROM 'file:///etc/passwd' AS l RETURN l"):
        with pytest.raises(Exception):  # noqa: B017
            gateway.run("analyze", attack, {}, ALICE)
    path = str(tmp_path / "audit.jsonl")
    assert main(["audit", "tail", "-n", "2", "--path", path]) == 0
    tail = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [t["decision"] for t in tail] == ["rejected", "rejected"]
    assert main(["audit", "summary", "--json", "--path", path]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["calls"] == 3 and summary["by_tool"] == {"analyze": 3}
    assert summary["by_decision"] == {"answered": 1, "rejected": 2}
    assert set(summary["by_rule"]) == {"write.clause", "load_csv"}
    assert main(["audit", "summary", "--path", path]) == 0
    assert "write.clause" in capsys.readouterr().out
