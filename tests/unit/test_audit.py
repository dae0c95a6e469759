"""The audit log: one JSON line per call, no parameter values, no credentials; the reviewer CLI."""

from __future__ import annotations

import argparse
import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from gateway.audit import MAX_KEY_CHARS, MAX_PARAM_KEYS, MAX_QUERY_CHARS, AuditEvent, AuditLog, file_sha256
from gateway.cli import main
from gateway.cli.audit import since_time
from gateway.domain import LayerSwitches, Principal
from gateway.errors import Busy, QueryRejected, SandboxUnavailable
from gateway.identity_text import MAX_IDENTITY_CHARS
from gateway.policy import DEFAULT_POLICY_PATH, load_policy
from gateway.service import Gateway
from sandbox.wire import SandboxJob, SandboxResult
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH
from tests.support.stub_runner import RunnerStub

SECRET_VALUE = "param-value-that-must-not-be-logged"
ALICE = Principal(name="alice", scope=frozenset({"l1"}))


class AnsweringRunner(RunnerStub):
    """Stands in for the sandbox in orchestration tests only (the e2e tests use the real one)."""

    def __init__(self, **result: Any) -> None:
        super().__init__()
        self.result = result

    def answer(self, job: SandboxJob) -> SandboxResult:
        return SandboxResult(query_id=job.query_id, ok=True, **self.result)


class GoneRunner(AnsweringRunner):
    def answer(self, job: SandboxJob) -> SandboxResult:
        raise SandboxUnavailable("the Docker daemon is not reachable")


def _gateway(tmp_path: Path, runner: Any, **audit_kw: Any) -> tuple[Gateway, AuditLog]:
    audit = AuditLog(tmp_path / "audit.jsonl", **audit_kw)
    # Scope rewrite off: these tests are about audit lines, not scoping (tests/test_server_e2e.py runs it all).
    return Gateway(
        load_policy(ALL_PROPERTIES_POLICY_PATH), runner, audit, layers=LayerSwitches(scope_rewrite=False)
    ), audit


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


class FullRunner(AnsweringRunner):
    def answer(self, job: SandboxJob) -> SandboxResult:
        raise Busy("the gateway is at capacity: nothing ran", 400)


def test_a_busy_answer_is_audited_and_counted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gateway, audit = _gateway(tmp_path, FullRunner())
    for _ in range(2):
        with pytest.raises(Busy):
            gateway.run("analyze", "MATCH (n) RETURN count(n) AS c", {}, ALICE)
    assert [(line["decision"], line["error_code"]) for line in audit.read()] == [("error", "busy")] * 2
    assert main(["audit", "summary", "--json", "--path", str(tmp_path / "audit.jsonl")]) == 0
    assert json.loads(capsys.readouterr().out)["by_error"] == {"busy": 2}


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


# --- what one line holds, and who it names ----------------------------------------------------


def test_a_line_is_bounded_whatever_the_caller_sends(tmp_path: Path) -> None:
    gateway, audit = _gateway(tmp_path, AnsweringRunner())
    huge_query = "RETURN 1 AS x // " + "y" * 3_000_000
    with pytest.raises(Exception, match=r"input\.too_large"):
        gateway.run("analyze", huge_query, {}, ALICE)
    with pytest.raises(Exception, match=r"input\.params_too_large"):
        gateway.run("analyze", "RETURN 1 AS x", {"k" * 1_000_000: 1}, ALICE)
    with pytest.raises(Exception, match=r"input\.params_too_large"):
        gateway.run("analyze", "RETURN 1 AS x", {f"p{i}": i for i in range(100_000)}, ALICE)
    raw = (tmp_path / "audit.jsonl").read_bytes()
    assert len(raw) < 3 * 30_000, len(raw)  # each line a few KB, not what the caller sent
    first, second, third = audit.read()
    assert first["query_chars"] == len(huge_query) and len(first["query"]) == MAX_QUERY_CHARS
    assert first["query_hash"] != AuditEvent.begin(
        query_id="x", principal=ALICE, transport="direct", tool="analyze", cypher=huge_query[:MAX_QUERY_CHARS],
        param_keys=[],
    ).query_hash  # the hash is of the whole text  # fmt: skip
    assert second["param_count"] == 1 and len(second["param_keys"][0]) == MAX_KEY_CHARS + 1
    assert third["param_count"] == 100_000 and len(third["param_keys"]) == MAX_PARAM_KEYS


def test_parameters_are_bounded_by_the_policy(tmp_path: Path) -> None:
    gateway, _ = _gateway(tmp_path, AnsweringRunner())
    limits = gateway.policy.tool("analyze").limits
    cases: dict[str, dict[str, Any]] = {
        "count": {f"p{i}": i for i in range(limits.max_param_keys + 1)},
        "name": {"k" * (limits.max_param_key_chars + 1): 1},
        "size": {"v": SECRET_VALUE * (limits.max_params_bytes // len(SECRET_VALUE) + 1)},
    }
    for what, params in cases.items():
        check = gateway.check("analyze", "RETURN 1 AS x", params, ALICE)
        assert (check.allowed, check.rule) == (False, "input.params_too_large"), what
    # At the limits, the same request is allowed.
    at_limit = {f"p{i}": "x" for i in range(limits.max_param_keys - 1)} | {"k" * limits.max_param_key_chars: 1}
    assert gateway.check("analyze", "RETURN 1 AS x", at_limit, ALICE).allowed
    assert SECRET_VALUE not in (tmp_path / "audit.jsonl").read_text()


def test_every_line_names_the_scope_and_the_policy(tmp_path: Path) -> None:
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_bytes(DEFAULT_POLICY_PATH.read_bytes())
    audit = AuditLog(tmp_path / "audit.jsonl", policy="default", policy_sha256=file_sha256(policy_file))
    gateway = Gateway(load_policy(policy_file), AnsweringRunner(), audit, layers=LayerSwitches(scope_rewrite=False))
    narrow = Principal(name="alice", scope=frozenset({"l2", "l1"}))
    gateway.run("analyze", "MATCH (n) RETURN count(n) AS c", {}, narrow)
    gateway.run("analyze", "MATCH (n) RETURN count(n) AS c", {}, Principal(name="alice"))
    first, second = audit.read()
    assert first["scope"] == ["l1", "l2"] and second["scope"] == []  # same principal, two scopes: told apart
    expected = hashlib.sha256(policy_file.read_bytes()).hexdigest()
    assert {(line["policy"], line["policy_sha256"]) for line in (first, second)} == {("default", expected)}


def test_a_narrowed_request_names_the_scope_it_asked_for(tmp_path: Path) -> None:
    gateway, audit = _gateway(tmp_path, AnsweringRunner())
    wide = Principal(name="alice", scope=frozenset({"l1", "l2"}))
    gateway.run("analyze", "MATCH (n) RETURN count(n) AS c", {}, wide, scope=["l2"])
    gateway.run("analyze", "MATCH (n) RETURN count(n) AS c", {}, wide)
    with pytest.raises(QueryRejected):
        gateway.run("analyze", "MATCH (n) RETURN count(n) AS c", {}, wide, scope=["l9"])
    narrowed, whole, wider = audit.read()
    assert (narrowed["scope"], narrowed["requested_scope"], narrowed["decision"]) == (["l1", "l2"], ["l2"], "answered")
    assert whole["requested_scope"] is None
    assert (wider["requested_scope"], wider["rule"]) == (["l9"], "scope.wider")


def test_a_narrowing_per_attribute_is_logged_per_attribute_and_refused_ones_too(tmp_path: Path) -> None:
    gateway, audit = _gateway(tmp_path, AnsweringRunner())
    wide = Principal(name="alice", scope=frozenset({"l1", "l2"}), attributes={"tenants": frozenset({"t1"})})
    gateway.run("analyze", "MATCH (n) RETURN count(n) AS c", {}, wide, scope={"layers": ["l1"]})
    with pytest.raises(QueryRejected):
        gateway.run("analyze", "MATCH (n) RETURN count(n) AS c", {}, wide, scope={"tenants": ["t1"]})
    narrowed, unappliable = audit.read()
    assert (narrowed["requested_scope"], narrowed["decision"]) == ({"layers": ["l1"]}, "answered")
    assert (unappliable["requested_scope"], unappliable["rule"]) == ({"tenants": ["t1"]}, "scope.unappliable")


def test_every_line_names_the_principals_attribute_lists_capped(tmp_path: Path) -> None:
    gateway, audit = _gateway(tmp_path, AnsweringRunner())
    mentis = Principal(
        name="m", scope=frozenset({"l1"}), attributes={"repositories": frozenset({"acme/web", "acme/api"})}
    )
    gateway.run("analyze", "MATCH (n) RETURN count(n) AS c", {}, mentis)
    gateway.run("analyze", "MATCH (n) RETURN count(n) AS c", {}, ALICE)
    crowded = Principal(name="c", attributes={
        **{f"a{i}": frozenset() for i in range(MAX_PARAM_KEYS + 5)},
        "zz": frozenset({"r" * MAX_IDENTITY_CHARS, *(f"r{i}" for i in range(MAX_PARAM_KEYS + 5))}),
    })  # fmt: skip
    gateway.run("analyze", "MATCH (n) RETURN count(n) AS c", {}, crowded)
    first, second, third = audit.read()
    assert (first["scope"], first["attributes"]) == (["l1"], {"repositories": ["acme/api", "acme/web"]})
    assert second["attributes"] == {}
    assert len(third["attributes"]) == MAX_PARAM_KEYS and "zz" not in third["attributes"]
    capped = AuditEvent.begin(query_id="x", principal=crowded.model_copy(update={"attributes": {
        "zz": crowded.attributes["zz"]}}), transport="direct", tool="analyze", cypher=None, param_keys=[])  # fmt: skip
    assert capped.attributes is not None and len(capped.attributes["zz"]) == MAX_PARAM_KEYS
    assert all(len(value) <= MAX_KEY_CHARS + 1 for value in capped.attributes["zz"])
    refused = AuditEvent.refused(status=403, code="forbidden", reason="x", principal=mentis)
    assert refused.attributes == {"repositories": ["acme/api", "acme/web"]}
    assert (first["scope_count"], refused.scope, refused.scope_count) == (1, ["l1"], 1)


def test_a_principal_with_thousands_of_layers_writes_a_capped_scope_and_says_how_many() -> None:
    layers = frozenset({"x" * MAX_IDENTITY_CHARS, *(f"layer-{i:05d}" for i in range(10_000))})
    crowded = Principal(name="crowded", scope=layers)
    for event in (
        AuditEvent.begin(
            query_id="x", principal=crowded, transport="direct", tool="analyze", cypher=None, param_keys=[]
        ),
        AuditEvent.refused(status=403, code="forbidden", reason="x", principal=crowded),
    ):
        assert event.scope is not None and len(event.scope) == MAX_PARAM_KEYS
        assert all(len(layer) <= MAX_KEY_CHARS + 1 for layer in event.scope)
        assert event.scope_count == 10_001
        assert len(event.model_dump_json()) < 20_000
    assert AuditEvent.refused(status=401, code="unauthorized", reason="x", principal=None).attributes is None


class SchemaRunner(RunnerStub):
    def answer(self, job: SandboxJob) -> SandboxResult:
        rows = [["Fact"], ["Task"]] if "labels(n)" in job.cypher else [["ABOUT"]] if "type(r)" in job.cypher else []
        return SandboxResult(query_id=job.query_id, ok=True, columns=["value"], rows=rows, row_count=len(rows))


def test_schema_is_one_schema_line_with_its_counts(tmp_path: Path) -> None:
    gateway, audit = _gateway(tmp_path, SchemaRunner())
    result = gateway.schema(ALICE, transport="stdio")
    assert result.labels == ["Fact", "Task"]
    (line,) = audit.read()
    assert line["tool"] == "schema" and line["decision"] == "answered" and line["transport"] == "stdio"
    assert line["counted"] == {"labels": 2, "relationshipTypes": 1, "propertyKeys": 0}
    assert line["rows"] == 3 and line["query"] is None and line["scope"] == ["l1"]
    assert main(["audit", "summary", "--json", "--path", str(tmp_path / "audit.jsonl")]) == 0


def test_schema_failure_is_one_error_line(tmp_path: Path) -> None:
    gateway, audit = _gateway(tmp_path, FullRunner())
    with pytest.raises(Busy):
        gateway.schema(ALICE)
    assert [(line["tool"], line["decision"], line["error_code"]) for line in audit.read()] == [
        ("schema", "error", "busy")
    ]


def _lines(path: Path, records: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def _record(when: str, principal: str | None, tool: str, decision: str, **extra: Any) -> dict[str, Any]:
    return {"time": when, "principal": principal, "tool": tool, "decision": decision, "transport": "http", **extra}


def test_summary_by_principal_hour_and_since(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "audit.jsonl"
    _lines(path, [
        _record("2026-01-01T10:05:00.000+00:00", "alice", "analyze", "answered", scope=["l1"]),
        _record("2026-01-01T10:55:00.000+00:00", "alice", "analyze", "rejected", rule="write.clause", scope=["l1"]),
        _record("2026-01-01T11:10:00.000+00:00", "bob", "schema", "answered", scope=[]),
        _record("2026-01-01T11:20:00.000+00:00", None, "http", "refused", status=401, reason="unknown token",
                client="10.0.0.7", error_code="unauthorized"),
    ])  # fmt: skip
    assert main(["audit", "summary", "--by", "principal", "--json", "--path", str(path)]) == 0
    by_principal = json.loads(capsys.readouterr().out)
    assert by_principal["alice"] == {"calls": 2, "answered": 1, "rejected": 1}
    assert by_principal["(none)"] == {"calls": 1, "refused": 1}  # refused before anyone was authenticated
    assert main(["audit", "summary", "--by", "scope", "--json", "--path", str(path)]) == 0
    assert set(json.loads(capsys.readouterr().out)) == {"l1", "(global only)", "(none)"}
    assert main(["audit", "summary", "--by", "hour", "--json", "--path", str(path)]) == 0
    assert {k: v["calls"] for k, v in json.loads(capsys.readouterr().out).items()} == {
        "2026-01-01T10:00Z": 2, "2026-01-01T11:00Z": 2}  # fmt: skip
    assert main(["audit", "summary", "--by", "client", "--since", "2026-01-01T11:15", "--json", "--path",
                 str(path)]) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out) == {"10.0.0.7": {"calls": 1, "refused": 1}}
    assert main(["audit", "summary", "--path", str(path)]) == 0
    out = capsys.readouterr().out
    assert "refused by client:" in out and "10.0.0.7" in out and "401 unknown token" in out
    # Nothing was degraded or truncated: those sections are not printed.
    assert "degraded" not in out and "truncated" not in out


def test_tail_filters_by_principal_and_decision(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "audit.jsonl"
    _lines(path, [
        _record("2026-01-01T10:05:00.000+00:00", "alice", "analyze", "answered"),
        _record("2026-01-01T10:06:00.000+00:00", "alice", "analyze", "rejected"),
        _record("2026-01-01T10:07:00.000+00:00", "bob", "analyze", "rejected"),
    ])  # fmt: skip
    assert main(["audit", "tail", "--principal", "alice", "--decision", "rejected", "--path", str(path)]) == 0
    (only,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert only["principal"] == "alice" and only["decision"] == "rejected"


def test_since_reads_iso_times_and_spans() -> None:
    now = datetime(2026, 1, 2, 12, 0, tzinfo=UTC)
    assert since_time("90m", now) == datetime(2026, 1, 2, 10, 30, tzinfo=UTC)
    assert since_time("2d", now) == datetime(2025, 12, 31, 12, 0, tzinfo=UTC)
    assert since_time("2026-01-01") == datetime(2026, 1, 1, tzinfo=UTC)
    with pytest.raises(argparse.ArgumentTypeError):
        since_time("yesterday")


# --- reviewer questions: who is who, and who read what ---------------------------------------

MENTIS = Path(DEFAULT_POLICY_PATH).parent / "mentis.yaml"
RECALL = "MATCH (r:Repository {name: $repository})<-[:IN]-(t:Task {id: $taskId}) RETURN count(t) AS c"


def test_one_name_from_two_sources_is_two_principals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gateway, audit = _gateway(tmp_path, AnsweringRunner())
    static = Principal(name="oauth:alice", source="tokens", scope=frozenset({"l1"}))
    subject = Principal(name="oauth:alice", source="oauth", scope=frozenset({"l1"}))
    for principal in (static, subject, subject):
        gateway.run("analyze", "MATCH (n) RETURN count(n) AS c", {}, principal)
    assert [line["principal_source"] for line in audit.read()] == ["tokens", "oauth", "oauth"]
    path = str(tmp_path / "audit.jsonl")
    assert main(["audit", "summary", "--by", "principal", "--json", "--path", path]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "oauth:alice [tokens]": {"calls": 1, "answered": 1},
        "oauth:alice [oauth]": {"calls": 2, "answered": 2},
    }
    assert main(["audit", "summary", "--json", "--path", path]) == 0
    assert json.loads(capsys.readouterr().out)["by_principal"] == {"oauth:alice [tokens]": 1, "oauth:alice [oauth]": 2}
    # tail's --principal matches the name, so a reviewer sees both: each line says its source.
    assert main(["audit", "tail", "--principal", "oauth:alice", "--path", path]) == 0
    assert [json.loads(line)["principal_source"] for line in capsys.readouterr().out.splitlines()] == [
        "tokens", "oauth", "oauth"]  # fmt: skip


def test_who_read_a_repository_is_one_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    audit = AuditLog(tmp_path / "audit.jsonl")
    gateway = Gateway(load_policy(MENTIS), AnsweringRunner(), audit, layers=LayerSwitches(scope_rewrite=False))
    infra = {"repositories": frozenset({"acme/infra", "acme/payments"})}
    ann = Principal(name="ann", source="tokens", attributes=infra)
    bob = Principal(name="bob", source="oauth", attributes={"repositories": frozenset({"acme/payments"})})
    gateway.run("recall", RECALL, {"repository": "acme/infra", "taskId": "t1"}, ann)
    gateway.run("recall", RECALL, {"repository": "acme/payments", "taskId": "t2"}, ann)
    gateway.run("recall", RECALL, {"repository": "acme/payments", "taskId": "t3"}, bob)
    gateway.run("analyze", "MATCH (r:Repository) RETURN count(r) AS c", {"note": "acme/infra"}, bob)
    lines = audit.read()
    # The pins' values are kept; any other parameter's value is not.
    assert [line["pinned"] for line in lines] == [
        {"repository": "acme/infra", "taskId": "t1"}, {"repository": "acme/payments", "taskId": "t2"},
        {"repository": "acme/payments", "taskId": "t3"}, None]  # fmt: skip
    assert lines[3]["param_keys"] == ["note"] and "note" not in json.dumps(lines[3]["pinned"])
    path = str(tmp_path / "audit.jsonl")

    # Who read acme/infra? Only ann, once.
    assert main(["audit", "summary", "--where", "repository=acme/infra", "--by", "principal", "--json",
                 "--path", path]) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out) == {"ann": {"calls": 1, "answered": 1}}
    # Who could read it (holds it among their repositories)? ann, on every call.
    assert main(["audit", "summary", "--where", "repositories=acme/infra", "--by", "principal", "--json",
                 "--path", path]) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out) == {"ann": {"calls": 2, "answered": 2}}
    # Calls by each repository a caller held; the filters combine.
    assert main(["audit", "summary", "--by", "attribute:repositories", "--json", "--path", path]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "acme/infra": {"calls": 2, "answered": 2}, "acme/payments": {"calls": 4, "answered": 4}}  # fmt: skip
    assert main(["audit", "tail", "--where", "repository=acme/payments", "--where", "taskId=t3", "--path", path]) == 0
    (only,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert (only["principal"], only["principal_source"]) == ("bob", "oauth")
    assert main(["audit", "summary", "--by", "attribute:repositories", "--where", "repository=acme/infra",
                 "--path", path]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "1 lines in" in out and "acme/infra  (answered 1)" in out and "acme/payments  (answered 1)" in out
    with pytest.raises(SystemExit):
        main(["audit", "summary", "--where", "repository", "--path", path])
    with pytest.raises(SystemExit):
        main(["audit", "summary", "--by", "attribute:", "--path", path])


def test_a_value_longer_than_the_audit_keeps_is_still_found_and_the_reader_is_told(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    audit = AuditLog(tmp_path / "audit.jsonl")
    gateway = Gateway(load_policy(MENTIS), AnsweringRunner(), audit, layers=LayerSwitches(scope_rewrite=False))
    long_repo = "acme/" + "x" * 150
    ann = Principal(name="ann", source="tokens", attributes={"repositories": frozenset({long_repo})})
    gateway.run("recall", RECALL, {"repository": long_repo, "taskId": "t1"}, ann)
    gateway.run("recall", RECALL, {"repository": "acme/payments", "taskId": "t2"}, ann)
    path = str(tmp_path / "audit.jsonl")
    assert main(["audit", "summary", "--where", f"repository={long_repo}", "--by", "principal", "--json",
                 "--path", path]) == 0  # fmt: skip
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {"ann": {"calls": 1, "answered": 1}}
    assert "keeps the first 100 characters" in captured.err
    assert main(["audit", "summary", "--where", f"repositories={long_repo}", "--json", "--path", path]) == 0
    assert json.loads(capsys.readouterr().out)["calls"] == 2
    # A short value is compared whole, and says nothing about cutting.
    assert main(["audit", "summary", "--where", "repository=acme/pay", "--json", "--path", path]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["calls"] == 0 and captured.err == ""
