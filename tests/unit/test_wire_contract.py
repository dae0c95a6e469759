"""The container contract read by both of its readers: the sandbox's (standard library) and the
gateway's (pydantic over the same dataclasses). Every field and every error code round-trips
through both, and both refuse the same malformed lines."""

from __future__ import annotations

import json
import subprocess
import sys
import typing
from typing import Any

import pytest
from pydantic import ValidationError

from gateway.runner.contract import credentials_line, job_line, parse_job, parse_result
from sandbox.wire import (
    Credentials,
    Notification,
    SandboxError,
    SandboxErrorCode,
    SandboxJob,
    SandboxResult,
    ScopeCheck,
    VisibleKeys,
    WireError,
    decode,
    failure,
    to_json,
)

FULL_JOB = SandboxJob(
    query_id="q1",
    cypher="MATCH (n) WHERE n.x = $x RETURN n",
    params={"x": [1, 2.5, "three", None, True, {"nested": {"deep": [False]}}], "__gw_scope": ["a", "b"]},
    database="movies",
    timeout_seconds=2.5,
    max_rows=7,
    max_bytes=4096,
    procedures_allowed=["db.labels"],
    explain_check=False,
    scope=ScopeCheck(layers_property="layers", layers=["a"], hidden_relationship_types=["SUPERSEDES"]),
    visible_properties=VisibleKeys(nodes={"A": ["x"]}, relationships={"T": []}, default=["name"]),
)
FULL_RESULT = SandboxResult(
    query_id="q1",
    ok=True,
    columns=["n", "x"],
    rows=[[{"$type": "node", "elementId": "4:x:1", "labels": ["A"], "properties": {"é": "ü"}}, 1.5]],
    row_count=1,
    bytes=123,
    truncated=True,
    truncation="bytes",
    query_type="r",
    duration_ms=12.25,
    notifications=[Notification(code="c", title="t", description="d", severity="WARNING")],
    redacted=2,
    error=SandboxError(code="neo4j_refused", message="m", neo4j_code="Neo.ClientError.X"),
)


def both(cls: type[Any], line: str) -> tuple[Any, Any]:
    """What the sandbox's reader and the gateway's validation make of one line."""
    gateway = {SandboxJob: parse_job, SandboxResult: parse_result}[cls]
    return decode(cls, line), gateway(line)


def test_every_job_field_round_trips_through_both_readers() -> None:
    line = job_line(FULL_JOB).decode()
    assert line.endswith("\n") and "\n" not in line[:-1]
    sandbox_side, gateway_side = both(SandboxJob, line)
    assert sandbox_side == gateway_side == FULL_JOB


def test_every_result_field_round_trips_through_both_readers() -> None:
    sandbox_side, gateway_side = both(SandboxResult, to_json(FULL_RESULT))
    assert sandbox_side == gateway_side == FULL_RESULT


@pytest.mark.parametrize("code", typing.get_args(SandboxErrorCode))
def test_every_error_code_round_trips(code: SandboxErrorCode) -> None:
    result = failure("q", code, "why", "Neo.Code")
    assert both(SandboxResult, to_json(result)) == (result, result)


def test_the_defaults_and_the_lenient_spots_are_the_same_on_both_sides() -> None:
    minimal = '{"query_id":"q","cypher":"RETURN 1","timeout_seconds":1,"max_rows":1,"max_bytes":1}'
    sandbox_side, gateway_side = both(SandboxJob, minimal)
    assert sandbox_side == gateway_side
    assert sandbox_side.timeout_seconds == 1.0 and isinstance(sandbox_side.timeout_seconds, float)
    # A literal is matched by equality on both sides (pydantic's rule): true and 1.0 are version 1.
    for version in ("true", "1.0"):
        sandbox_side, gateway_side = both(SandboxResult, f'{{"version":{version},"query_id":"q","ok":true}}')
        assert sandbox_side == gateway_side and sandbox_side.version == 1 == gateway_side.version


MALFORMED_RESULTS = {
    "unknown key": {"query_id": "q", "ok": True, "extra": 1},
    "unknown nested key": {"query_id": "q", "ok": False, "error": {"code": "internal", "message": "m", "x": 1}},
    "missing field": {"ok": True},
    "missing nested field": {"query_id": "q", "ok": False, "error": {"code": "internal"}},
    "int for bool": {"query_id": "q", "ok": 1},
    "bool for int": {"query_id": "q", "ok": True, "row_count": True},
    "string for int": {"query_id": "q", "ok": True, "bytes": "5"},
    "float for int": {"query_id": "q", "ok": True, "redacted": 1.5},
    "int for string": {"query_id": 5, "ok": True},
    "string for float": {"query_id": "q", "ok": True, "duration_ms": "3"},
    "null for a required string": {"query_id": None, "ok": True},
    "unknown error code": {"query_id": "q", "ok": False, "error": {"code": "nope", "message": "m"}},
    "unknown truncation": {"query_id": "q", "ok": True, "truncation": "columns"},
    "unknown query type": {"query_id": "q", "ok": True, "query_type": "x"},
    "another wire version": {"version": 2, "query_id": "q", "ok": True},
    "rows not lists": {"query_id": "q", "ok": True, "rows": [1, 2]},
    "columns not strings": {"query_id": "q", "ok": True, "columns": [1]},
    "not an object": [1, 2],
}


@pytest.mark.parametrize("case", sorted(MALFORMED_RESULTS))
def test_both_readers_refuse_the_same_malformed_results(case: str) -> None:
    line = json.dumps(MALFORMED_RESULTS[case])
    with pytest.raises(WireError):
        decode(SandboxResult, line)
    with pytest.raises(ValidationError):
        parse_result(line)


def test_both_readers_refuse_a_line_that_is_not_json() -> None:
    with pytest.raises(WireError):
        decode(SandboxJob, b"{not json")
    with pytest.raises(ValidationError):
        parse_job(b"{not json")


@pytest.mark.parametrize(
    "change",
    [{"timeout_seconds": "5"}, {"max_rows": 1.0}, {"params": []}, {"scope": {"layers": []}}, {"explain_check": 0}],
)
def test_both_readers_refuse_the_same_malformed_jobs(change: dict[str, Any]) -> None:
    line = json.dumps({**json.loads(to_json(FULL_JOB)), **change})
    with pytest.raises(WireError):
        decode(SandboxJob, line)
    with pytest.raises(ValidationError):
        parse_job(line)


def test_the_account_line_reads_back_and_never_shows_the_password() -> None:
    line = credentials_line("neo4j", "s3cret-value")
    account = decode(Credentials, line)
    assert account == Credentials(user="neo4j", password="s3cret-value")
    assert "s3cret-value" not in repr(account) and "s3cret-value" not in str(account)


def test_the_sandbox_program_imports_no_pydantic_and_no_gateway() -> None:
    code = (
        "import sys; import sandbox.main, sandbox.wire, sandbox.config, sandbox.forwarder; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'pydantic', 'gateway', 'neo4j', 'httpx'}))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    # The driver is imported by the job process's backend, never by the program's start-up.
    assert proc.stdout.strip() == "[]"
