"""The runner against the real Docker daemon and the real Neo4j: pool, hardening, no in-process path."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

from gateway.runner import SandboxRunner, error_for, remove_leftovers
from gateway.runner.docker_io import LABEL_RUNNER
from sandbox.wire import SandboxError, SandboxResult
from tests.support.jobs import SettingsFactory, make_job


def test_a_query_runs_in_a_sandbox_and_comes_back(sandbox_runner: SandboxRunner, seeded: str) -> None:
    result = sandbox_runner.run(make_job(f"MATCH (n:{seeded}) RETURN n.i AS i ORDER BY i LIMIT 3"))
    assert result.ok, result.error
    assert result.columns == ["i"] and result.rows == [[1], [2], [3]]
    assert result.query_type == "r" and not result.truncated


def test_every_container_is_used_once(sandbox_runner: SandboxRunner, docker_client: Any) -> None:
    assert sandbox_runner.wait_ready(60)
    before = set(sandbox_runner.pool_container_ids())
    assert len(before) == sandbox_runner.settings.pool_size
    for _ in range(3):
        assert sandbox_runner.run(make_job("RETURN 1 AS x")).ok
    assert sandbox_runner.wait_ready(60)
    after = set(sandbox_runner.pool_container_ids())
    # Three jobs consumed (at least) two of the pooled containers; none is handed out again.
    assert len(before - after) == len(before)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        alive = {
            c.id
            for c in docker_client.containers.list(
                all=True, filters={"label": f"{LABEL_RUNNER}={sandbox_runner.runner_id}"}
            )
        }
        if not (before & alive):
            break
        time.sleep(0.2)
    assert not (before & alive), "used containers were not removed"


def test_sandbox_containers_are_hardened(sandbox_runner: SandboxRunner, docker_client: Any) -> None:
    assert sandbox_runner.wait_ready(60)
    settings = sandbox_runner.settings
    container = docker_client.containers.get(sandbox_runner.pool_container_ids()[0])
    host = container.attrs["HostConfig"]
    config = container.attrs["Config"]
    assert host["NetworkMode"] == "none"
    assert host["ReadonlyRootfs"] is True
    assert host["CapDrop"] == ["ALL"] and not host.get("CapAdd")
    assert "no-new-privileges" in host["SecurityOpt"]
    assert not any("seccomp" in opt for opt in host["SecurityOpt"]), "the default seccomp profile must stay"
    assert host["Privileged"] is False
    assert config["User"] == "10001:10001"
    assert host["PidsLimit"] == settings.pids_limit
    assert host["Memory"] == settings.memory_mb * 1024 * 1024 == host["MemorySwap"]
    assert host["NanoCpus"] == int(settings.cpus * 1e9)
    assert "/tmp" in host["Tmpfs"]
    assert not host.get("Binds"), "no host directory may be mounted"
    mounts = container.attrs["Mounts"]
    assert len(mounts) == 1 and mounts[0]["Type"] == "volume" and mounts[0]["RW"] is False
    # Inside: no capabilities, no new privileges, seccomp filtering on.
    status = container.exec_run(["cat", "/proc/self/status"], user="10001").output.decode()
    fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
    assert fields["CapEff"].strip() == "0000000000000000"
    assert fields["NoNewPrivs"].strip() == "1" and fields["Seccomp"].strip() == "2"


def test_the_password_is_not_in_the_container_logs_or_result(sandbox_runner: SandboxRunner) -> None:
    password = sandbox_runner.settings.neo4j_password.get_secret_value()
    result = sandbox_runner.run(make_job("RETURN 'x' AS x"))
    assert password not in result.model_dump_json()
    assert password not in repr(sandbox_runner.settings) and password not in str(sandbox_runner.settings)


def test_the_gateway_process_never_loads_the_driver(runner_settings: SettingsFactory) -> None:
    """A full request cycle in a fresh interpreter: runner up, job run, result mapped, runner closed."""
    settings = runner_settings(pool_size=1)
    code = f"""
import sys
from pydantic import SecretStr
from gateway.runner import RunnerSettings, SandboxRunner, error_for
from sandbox.wire import SandboxJob
settings = RunnerSettings.model_validate_json({settings.model_dump_json()!r}).model_copy(
    update={{"neo4j_password": SecretStr({settings.neo4j_password.get_secret_value()!r})}})
runner = SandboxRunner(settings)
result = runner.run(SandboxJob(query_id="q", cypher="RETURN 1 AS x", timeout_seconds=5.0, max_rows=10, max_bytes=10000))
assert result.ok and result.rows == [[1]], result
assert error_for(result) is None
runner.close()
print("neo4j" in sys.modules, any(m.startswith("neo4j.") for m in sys.modules))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "False False"


def test_error_mapping_uses_the_gateway_taxonomy() -> None:
    def failed(code: Any, neo4j_code: str | None = None) -> SandboxResult:
        return SandboxResult(query_id="q", ok=False, error=SandboxError(code=code, message="m", neo4j_code=neo4j_code))

    refused = error_for(failed("neo4j_refused", "Neo.ClientError.Statement.SyntaxError"))
    assert refused is not None and refused.code == "neo4j_refused"
    assert refused.message == "Neo4j refused the query: m"
    assert getattr(refused, "neo4j_code", None) == "Neo.ClientError.Statement.SyntaxError"
    assert error_for(failed("timeout")).code == "timeout"  # type: ignore[union-attr]
    assert error_for(failed("explain_rejected")).code == "rejected"  # type: ignore[union-attr]
    for code in ("unavailable", "sandbox_failed", "internal", "invalid_job"):
        assert error_for(failed(code)).code == "unavailable"  # type: ignore[union-attr]
    assert error_for(SandboxResult(query_id="q", ok=True)) is None


def test_a_huge_value_is_truncated_inside_the_memory_limit(sandbox_runner: SandboxRunner) -> None:
    # 16.8 MB in one value, well inside the container's memory limit: a bytes truncation, not a crash.
    result = sandbox_runner.run(make_job("RETURN reduce(s = 'x', i IN range(1, 24) | s + s) AS big"))
    assert result.ok, result.error
    assert result.truncated and result.truncation == "bytes" and result.rows == []


def test_jobs_and_settings_come_from_the_policy_and_the_uri() -> None:
    from gateway.policy import load_policy
    from gateway.runner import job_for, settings_for

    tool = load_policy().tool("analyze")
    job = job_for(tool, query_id="q", cypher="RETURN 1")
    assert (job.timeout_seconds, job.max_rows, job.max_bytes) == (
        tool.limits.timeout_seconds, tool.limits.max_rows, tool.limits.max_bytes,
    )  # fmt: skip
    assert job.procedures_allowed == sorted(tool.procedures_allowed) and job.explain_check
    bolt = settings_for(uri="neo4j://db.internal:7690", user="u", password="p", database=None, image="i", pool_size=1)
    assert (bolt.transport, bolt.neo4j_host, bolt.neo4j_port) == ("bolt", "db.internal", 7690)
    hosted = settings_for(uri="https://abc.databases.neo4j.io", user="u", password="p", database="neo4j",
                          image="i", pool_size=1)  # fmt: skip
    assert (hosted.transport, hosted.neo4j_port, hosted.query_api_url()) == (
        "query-api", 443, "https://abc.databases.neo4j.io:443",
    )  # fmt: skip
    assert "p" not in repr(hosted.neo4j_password)


def _runner_in_subprocess(settings_json: str, password: str, exit_how: str) -> str:
    code = f"""
import os, sys
from pydantic import SecretStr
from gateway.runner import RunnerSettings, SandboxRunner
settings = RunnerSettings.model_validate_json({settings_json!r}).model_copy(
    update={{"neo4j_password": SecretStr({password!r})}})
runner = SandboxRunner(settings)
assert runner.wait_ready(60)
print(runner.runner_id, flush=True)
if {exit_how!r} == "crash":
    os._exit(0)  # no atexit, no close(): what a killed gateway leaves behind
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip().splitlines()[-1]


def _containers_of(docker_client: Any, runner_id: str) -> list[Any]:
    return list(docker_client.containers.list(all=True, filters={"label": f"{LABEL_RUNNER}={runner_id}"}))


def test_a_process_exiting_without_close_leaves_nothing(runner_settings: SettingsFactory, docker_client: Any) -> None:
    settings = runner_settings(pool_size=1)
    runner_id = _runner_in_subprocess(settings.model_dump_json(), settings.neo4j_password.get_secret_value(), "exit")
    assert _containers_of(docker_client, runner_id) == []


def test_a_crashed_owners_containers_are_removed_by_the_next_runner(
    runner_settings: SettingsFactory, docker_client: Any
) -> None:
    from gateway.runner import remove_orphans

    settings = runner_settings(pool_size=1)
    runner_id = _runner_in_subprocess(settings.model_dump_json(), settings.neo4j_password.get_secret_value(), "crash")
    try:
        assert _containers_of(docker_client, runner_id), "the crash should have left the pool behind"
        assert remove_orphans(docker_client) >= 2  # its forwarder and its warm container
        assert _containers_of(docker_client, runner_id) == []
    finally:
        remove_leftovers(docker_client, runner_id)
