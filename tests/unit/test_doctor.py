"""``cypher-gateway doctor`` without services: each failure is named with its fix, what depends
on it is skipped, and the exit code is 0 only when every check holds.

The checks that need Docker and Neo4j (the image, a live sandbox, the read, the egress
probe) are tested against the real ones in tests/integration/ops/test_doctor.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gateway.cli import main
from sandbox.probe import ProbeReport
from tests.support.ports import free_port


@pytest.fixture()
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No daemon at DOCKER_HOST, no Neo4j listening at NEO4J_URI, the audit log in tmp_path."""
    for name in ("GATEWAY_CONFIG", "GATEWAY_POLICY_FILE", "GATEWAY_SANDBOX_IMAGE", "NEO4J_DATABASE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    monkeypatch.setenv("NEO4J_URI", f"bolt://127.0.0.1:{free_port()}")
    monkeypatch.setenv("NEO4J_PASSWORD", "irrelevant-password")
    monkeypatch.setenv("GATEWAY_AUDIT_PATH", str(tmp_path / "audit" / "audit.jsonl"))
    return monkeypatch


def _doctor(capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, dict[str, Any]]]:
    code = main(["doctor", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is (code == 0)
    return code, {check["name"]: check for check in report["checks"]}


def test_missing_services_are_named_with_fixes_and_their_dependents_skipped(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, checks = _doctor(capsys)
    assert code == 1
    held = [name for name, c in checks.items() if c["status"] == "ok"]
    assert held == ["settings", "policy", "audit log", "identity"]
    assert checks["docker"]["status"] == "failed" and "no-docker.sock" in checks["docker"]["detail"]
    assert "DOCKER_HOST" in checks["docker"]["fix"]
    assert checks["neo4j"]["status"] == "failed" and "not reachable" in checks["neo4j"]["detail"]
    assert "listens at" in checks["neo4j"]["fix"]
    for name in ("sandbox image", "sandbox", "neo4j read", "scope vs graph", "sandbox egress"):
        assert checks[name]["status"] == "skipped", checks[name]
    assert checks["sandbox"]["detail"] == "needs: sandbox image, neo4j"
    assert "irrelevant-password" not in json.dumps(checks)


def test_an_invalid_setting_fails_first_and_stops_what_needs_settings(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env.setenv("GATEWAY_POOL_SIZE", "0")
    code, checks = _doctor(capsys)
    assert code == 1
    assert checks["settings"]["status"] == "failed" and "pool_size" in checks["settings"]["detail"]
    assert checks["policy"]["status"] == "skipped" and checks["audit log"]["status"] == "skipped"


def test_an_invalid_policy_and_an_unwritable_audit_path_fail_with_their_fixes(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\ntools: {}\n")
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    env.setenv("GATEWAY_POLICY_FILE", str(bad))
    env.setenv("GATEWAY_AUDIT_PATH", str(blocker / "audit.jsonl"))
    code, checks = _doctor(capsys)
    assert code == 1
    assert checks["policy"]["status"] == "failed" and "policy lint" in checks["policy"]["fix"]
    assert checks["audit log"]["status"] == "failed" and "GATEWAY_AUDIT_PATH" in checks["audit log"]["fix"]
    assert checks["neo4j read"]["detail"].startswith("needs: policy")


def test_the_text_report_puts_each_fix_under_its_failure(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["doctor"]) == 1
    lines = capsys.readouterr().out.splitlines()
    failed = next(i for i, line in enumerate(lines) if line.startswith("FAILED") and " docker " in line)
    assert "fix:" in lines[failed + 1]
    assert lines[-1].startswith("7 of 11 checks do not hold: docker, sandbox image, neo4j")


def test_a_probe_report_names_every_breach() -> None:
    sealed = ProbeReport(tcp={"172.17.0.1:7687": "blocked: OSError"}, dns={"db": "failed: no name"},
                         fs={"create": "denied: Read-only file system"}, interfaces=["lo"])  # fmt: skip
    assert sealed.breaches() == []
    leaky = ProbeReport(tcp={"172.17.0.1:7687": "connected"}, dns={"db": "resolved: ('10.0.0.5', 443)"},
                        fs={"unlink": "allowed"}, interfaces=["eth0", "lo"])  # fmt: skip
    assert leaky.breaches() == [
        "connected to 172.17.0.1:7687",
        "resolved db",
        "could unlink on the socket volume",
        "has network interfaces ['eth0', 'lo'] (only lo expected)",
    ]
