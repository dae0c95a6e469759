"""Faults against the real Docker daemon and the real Neo4j. In every case the runner
stays up, answers with a typed error (or SandboxUnavailable, which the tools report as
``degraded: ["<tool>:disabled"]``) and no rows, and nothing runs outside a sandbox."""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
import threading
from typing import Any

import pytest

from gateway.errors import SandboxUnavailable
from gateway.runner import SandboxRunner, error_for, remove_leftovers
from sandbox.pipe import splice
from tests.support.jobs import LIMITS, PATIENT, SettingsFactory, make_job
from tests.support.ports import free_port
from tests.support.waiting import returns_within, wait_until


def _still_serves(runner: SandboxRunner) -> None:
    result = runner.run(make_job("RETURN 'alive' AS x"))
    assert result.ok and result.rows == [["alive"]], result


class DockerSocketProxy:
    """A Unix socket that relays to the real Docker socket until ``stop()``: the daemon, as seen
    by the runner, goes away without stopping the daemon the other test suites share."""

    def __init__(self, target: str = "/var/run/docker.sock") -> None:
        self.dir = tempfile.mkdtemp(prefix="cgw-dockerproxy-")
        self.path = os.path.join(self.dir, "docker.sock")
        self.target = target
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(self.path)
        self.server.listen(64)
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.connect(self.target)
            self.conns += [client, upstream]
            splice(client, upstream)

    def stop(self) -> None:
        self.server.close()
        os.unlink(self.path)
        for conn in self.conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


def test_docker_daemon_unreachable(runner_settings: SettingsFactory, cleanup: list[SandboxRunner]) -> None:
    runner = SandboxRunner(runner_settings(docker_host="unix:///nonexistent/docker.sock"), PATIENT)
    cleanup.append(runner)
    ok, reason = runner.available()
    assert not ok and "Docker daemon" in reason
    # It answers rather than hangs; how fast is bench/faults.py's business.
    with pytest.raises(SandboxUnavailable, match="Docker daemon"):
        returns_within(lambda: runner.run(make_job("RETURN 1")), timeout=60, what="a job with no Docker daemon")


def test_docker_daemon_lost_while_running(runner_settings: SettingsFactory, docker_client: Any) -> None:
    proxy = DockerSocketProxy()
    runner = SandboxRunner(runner_settings(docker_host=f"unix://{proxy.path}", pool_size=1), PATIENT)
    try:
        assert runner.available()[0], runner.available()
        assert runner.wait_ready(60)
        _still_serves(runner)
        proxy.stop()
        for _ in range(2):
            try:
                result = runner.run(make_job("RETURN 1 AS x"))
            except SandboxUnavailable as exc:
                assert exc.code == "unavailable"
            else:
                assert not result.ok and not result.rows and error_for(result) is not None
        ok, reason = runner.available()
        assert not ok and reason
    finally:
        runner.close()
        # The proxy is gone; clean up through the real daemon.
        remove_leftovers(docker_client, runner.runner_id)


def test_sandbox_image_missing(runner_settings: SettingsFactory, cleanup: list[SandboxRunner]) -> None:
    runner = SandboxRunner(runner_settings(image="cypher-gateway/sandbox:does-not-exist"), PATIENT)
    cleanup.append(runner)
    ok, reason = runner.available()
    assert not ok and "image" in reason and "does-not-exist" in reason
    with pytest.raises(SandboxUnavailable, match="image"):
        runner.run(make_job("RETURN 1"))


def test_container_oom_killed(runner_settings: SettingsFactory, cleanup: list[SandboxRunner]) -> None:
    runner = SandboxRunner(runner_settings(pool_size=1, memory_mb=96), PATIENT)
    cleanup.append(runner)
    assert runner.wait_ready(60), runner.available()
    # One record of six 8 MB strings: decoding it needs far more than 96 MB.
    big = "reduce(s = 'x', i IN range(1, 23) | s + s)"
    cypher = f"WITH {big} AS b RETURN [b, b + 'a', b + 'b', b + 'c', b + 'd', b + 'e', b + 'f'] AS l"
    result = runner.run(make_job(cypher))
    assert not result.ok and not result.rows
    assert result.error is not None and result.error.code == "sandbox_failed", result.error
    assert "memory" in result.error.message
    _still_serves(runner)


def test_container_hangs_past_the_wall_clock(
    runner_settings: SettingsFactory, cleanup: list[SandboxRunner], docker_client: Any
) -> None:
    runner = SandboxRunner(runner_settings(pool_size=1, wall_clock_grace_seconds=1.0), PATIENT)
    cleanup.append(runner)
    assert runner.wait_ready(60)
    # Freeze the one warm container: it will take the job and never answer.
    (container_id,) = runner.pool_container_ids()
    docker_client.containers.get(container_id).pause()
    # The runner gives up on the frozen container and kills it; when (timeout + grace) is bench/faults.py's.
    result = returns_within(
        lambda: runner.run(make_job("RETURN 1 AS x", timeout_seconds=1.0)), timeout=60, what="a job on a frozen sandbox"
    )
    assert result.error is not None and result.error.code == "timeout" and "killed" in result.error.message
    assert not result.rows
    error = error_for(result)
    assert error is not None and error.code == "timeout"
    _still_serves(runner)


def test_neo4j_down(runner_settings: SettingsFactory, cleanup: list[SandboxRunner]) -> None:
    runner = SandboxRunner(runner_settings(pool_size=1, neo4j_port=free_port()), PATIENT)
    cleanup.append(runner)
    assert runner.wait_ready(60)
    result = runner.run(make_job("RETURN 1 AS x"))
    assert not result.ok and not result.rows
    assert result.error is not None and result.error.code == "unavailable", result.error
    assert "could not be reached" in result.error.message
    assert isinstance(error_for(result), SandboxUnavailable)


def test_neo4j_slow_query_is_terminated_at_the_policy_timeout(sandbox_runner: SandboxRunner) -> None:
    job = make_job("UNWIND range(1, 1000000) AS a UNWIND range(1, 1000000) AS b RETURN count(*) AS c")
    assert job.timeout_seconds == LIMITS.timeout_seconds
    # The deadline ends it in Neo4j (not the runner's wall clock): the sandbox's TERMINATE at the
    # policy timeout (Transaction.Terminated) or Neo4j's own timeout (TransactionTimedOut), whichever
    # lands first. How close to the policy's timeout it ends is bench/faults.py's business.
    result = returns_within(lambda: sandbox_runner.run(job), timeout=120, what="a query past the policy timeout")
    assert result.error is not None and result.error.code == "timeout", result.error
    code = result.error.neo4j_code or ""
    assert "TransactionTimedOut" in code or "Transaction.Terminated" in code, result.error
    assert "killed" not in result.error.message, result.error
    assert not result.rows
    _still_serves(sandbox_runner)


@pytest.mark.parametrize(
    ("cypher", "neo4j_code"),
    [
        ("MATCH (n RETURN n", "Neo.ClientError.Statement.SyntaxError"),
        ("RETURN 1 / 0 AS x", "Neo.ClientError.Statement.ArithmeticError"),
    ],
)
def test_neo4j_refuses_the_query(sandbox_runner: SandboxRunner, cypher: str, neo4j_code: str) -> None:
    result = sandbox_runner.run(make_job(cypher))
    assert result.error is not None and result.error.code == "neo4j_refused"
    assert result.error.neo4j_code == neo4j_code
    error = error_for(result)
    assert error is not None and error.code == "neo4j_refused"
    assert error.message.startswith("Neo4j refused the query: ")


def test_forwarder_killed_is_restarted(
    runner_settings: SettingsFactory, cleanup: list[SandboxRunner], docker_client: Any
) -> None:
    runner = SandboxRunner(runner_settings(pool_size=1), PATIENT)
    cleanup.append(runner)
    assert runner.wait_ready(60)
    first = runner.forwarder_container_id()
    docker_client.containers.get(first).kill()
    wait_until(lambda: runner.forwarder_restarts > 0, timeout=60, what="the forwarder restarted")
    assert runner.forwarder_restarts == 1 and runner.forwarder_container_id() != first
    assert runner.wait_ready(60)
    _still_serves(runner)
