"""The runner against the real Docker daemon and the real Neo4j: pool, hardening, no in-process path."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from gateway.runner import SandboxRunner, remove_leftovers
from gateway.runner.docker_io import LABEL_RUNNER
from sandbox.wire import to_json
from tests.support.jobs import SettingsFactory, make_job
from tests.support.waiting import wait_until


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

    def used_ones_removed() -> bool:
        return not (before & {c.id for c in _containers_of(docker_client, sandbox_runner.runner_id)})

    wait_until(used_ones_removed, timeout=60, what="used containers removed")


def test_sandbox_containers_are_hardened(sandbox_runner: SandboxRunner, docker_client: Any) -> None:
    assert sandbox_runner.wait_ready(60)
    settings = sandbox_runner.settings
    container = docker_client.containers.get(sandbox_runner.pool_container_ids()[0])
    host = container.attrs["HostConfig"]
    config = container.attrs["Config"]
    assert host["NetworkMode"] == "none"
    # crun where the daemon has it (scripts/ensure-docker.sh registers it), else runc.
    assert host["Runtime"] == sandbox_runner.runtime and sandbox_runner.runtime in ("crun", "runc")
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
    assert password not in to_json(result)
    assert password not in repr(sandbox_runner.settings) and password not in str(sandbox_runner.settings)


def test_no_container_configuration_holds_the_password(sandbox_runner: SandboxRunner, docker_client: Any) -> None:
    """What anyone with access to the Docker daemon reads (``docker inspect``): no credential at all."""
    password = sandbox_runner.settings.neo4j_password.get_secret_value()
    assert sandbox_runner.run(make_job("RETURN 1 AS x")).ok, "the account reached the sandbox all the same"
    assert sandbox_runner.wait_ready(60)
    forwarder = sandbox_runner.forwarder_container_id()
    assert forwarder is not None
    inspected = [forwarder, *sandbox_runner.pool_container_ids()]
    assert len(inspected) == 1 + sandbox_runner.settings.pool_size
    for container_id in inspected:
        config = json.dumps(docker_client.api.inspect_container(container_id))
        assert password not in config, f"the password is in {container_id[:12]}'s configuration"
        assert "PASSWORD" not in config


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
assert runner.wait_ready(60, count=1)
result = runner.run(SandboxJob(query_id="q", cypher="RETURN 1 AS x", timeout_seconds=5.0, max_rows=10, max_bytes=10000))
assert result.ok and result.rows == [[1]], result
assert error_for(result) is None
runner.close()
print("neo4j" in sys.modules, any(m.startswith("neo4j.") for m in sys.modules))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "False False"


def test_a_huge_value_is_truncated_inside_the_memory_limit(sandbox_runner: SandboxRunner) -> None:
    # 16.8 MB in one value, well inside the container's memory limit: a bytes truncation, not a crash.
    result = sandbox_runner.run(make_job("RETURN reduce(s = 'x', i IN range(1, 24) | s + s) AS big"))
    assert result.ok, result.error
    assert result.truncated and result.truncation == "bytes" and result.rows == []


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
    return list(
        docker_client.containers.list(all=True, ignore_removed=True, filters={"label": f"{LABEL_RUNNER}={runner_id}"})
    )


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
