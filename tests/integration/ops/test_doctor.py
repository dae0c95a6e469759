"""``cypher-gateway doctor`` against the real Docker, sandbox image and Neo4j.

All checks hold on a set-up machine (exit 0); a bad account fails the read with the
credentials fix while the box still proves sealed; a sandbox given a network is caught
by the live egress probe.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from gateway.connection import Neo4jConnection
from gateway.ops import doctor
from gateway.runner import SandboxRunner
from tests.support.env import neo4j_env
from tests.support.paths import GATEWAY_CLI


def _doctor(env: dict[str, str], cwd: Path) -> tuple[int, dict[str, dict[str, Any]]]:
    done = subprocess.run([GATEWAY_CLI, "doctor", "--json"], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=240, check=False)  # fmt: skip
    report = json.loads(done.stdout)
    return done.returncode, {check["name"]: check for check in report["checks"]}


def test_every_check_holds_on_a_set_up_machine(
    neo4j_connection: Neo4jConnection, sandbox_image: str, tmp_path: Path
) -> None:
    env = neo4j_env(neo4j_connection, GATEWAY_SANDBOX_IMAGE=sandbox_image, GATEWAY_AUDIT_PATH=str(tmp_path / "a.jsonl"))
    code, checks = _doctor(env, tmp_path)
    assert {name: c["status"] for name, c in checks.items() if c["status"] != "ok"} == {}
    assert code == 0
    assert "READ transaction" in checks["neo4j read"]["detail"]
    assert "sees only lo" in checks["sandbox egress"]["detail"]
    assert neo4j_connection.password.get_secret_value() not in json.dumps(checks)


def test_an_account_neo4j_refuses_fails_the_read_with_the_credentials_fix(
    neo4j_connection: Neo4jConnection, sandbox_image: str, tmp_path: Path
) -> None:
    # An unknown user, not a wrong password for the real one: Neo4j locks a user out after
    # repeated failures, and the other tests share that user.
    env = neo4j_env(neo4j_connection, NEO4J_USER=f"nobody-{uuid.uuid4().hex[:8]}", GATEWAY_SANDBOX_IMAGE=sandbox_image,
                    GATEWAY_AUDIT_PATH=str(tmp_path / "a.jsonl"))  # fmt: skip
    code, checks = _doctor(env, tmp_path)
    assert code == 1
    assert checks["neo4j read"]["status"] == "failed", checks["neo4j read"]
    assert "NEO4J_USER and NEO4J_PASSWORD" in checks["neo4j read"]["fix"]
    # The box is tested all the same: egress does not depend on the account.
    assert checks["sandbox"]["status"] == "ok" and checks["sandbox egress"]["status"] == "ok"


def test_a_sandbox_with_a_network_fails_the_egress_check(
    neo4j_connection: Neo4jConnection, sandbox_image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in neo4j_env(neo4j_connection, GATEWAY_SANDBOX_IMAGE=sandbox_image,
                                 GATEWAY_AUDIT_PATH=str(tmp_path / "a.jsonl")).items():  # fmt: skip
        monkeypatch.setenv(name, value)
    pool_spec = SandboxRunner.sandbox_spec

    def with_a_network(runner: SandboxRunner) -> dict[str, Any]:
        # What a daemon or runtime that ignores --network none would hand a query.
        return {**pool_spec(runner), "network_mode": "bridge"}

    monkeypatch.setattr(SandboxRunner, "sandbox_spec", with_a_network)
    report = doctor.diagnose()
    checks = {check.name: check for check in report.checks}
    assert not report.ok
    egress = checks["sandbox egress"]
    assert egress.status == "failed" and "not sealed" in egress.detail and "eth0" in egress.detail, egress
    assert egress.fix is not None and "do not serve" in egress.fix
    assert checks["neo4j read"].status == "ok"  # only the box was changed
