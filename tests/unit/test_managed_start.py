"""Starting the managed Neo4j watches the process it launched, not what /proc says about a pid.

Right after exec a new process's /proc cmdline can read empty for a moment; a start that judged
"is it still Neo4j?" by that cmdline reported "exited during start-up" for a server that was
coming up fine."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gateway.connection import Neo4jConnection
from gateway.managed_neo4j import Neo4jSetupError, home_dir
from gateway.ops import neo4j_local


@pytest.fixture
def launched(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Callable[[], bool]]:
    """``start()`` launching a plain sleeping process (its cmdline names no Neo4j class) and
    handing its liveness check to a recorder instead of waiting for Bolt."""
    monkeypatch.setenv("CYPHER_GATEWAY_STATE", str(tmp_path / "state"))
    home = home_dir()
    for sub in ("logs", "run"):
        (home / sub).mkdir(parents=True)
    (home / "password").write_text("pw\n", encoding="utf-8")
    monkeypatch.setattr(neo4j_local, "java_for", lambda line: Path(sys.executable))
    monkeypatch.setattr(neo4j_local, "fetch_neo4j", lambda line: None)
    monkeypatch.setattr(neo4j_local, "_write_conf", lambda home, line, tls: None)
    monkeypatch.setattr(neo4j_local, "_set_initial_password", lambda home, line, java: None)
    monkeypatch.setattr(
        neo4j_local, "_launch_command", lambda home, java: [sys.executable, "-c", "import time; time.sleep(30)"]
    )
    recorded: dict[str, Callable[[], bool]] = {}

    def record(connection: Neo4jConnection, alive: Callable[[], bool] | None = None, **_: object) -> None:
        assert alive is not None
        recorded["alive"] = alive

    monkeypatch.setattr(neo4j_local, "wait_until_ready", record)
    return recorded


def test_a_launched_process_is_alive_while_it_runs_whatever_its_cmdline_says(
    launched: dict[str, Callable[[], bool]],
) -> None:
    neo4j_local.start()
    pid = int(neo4j_local._pid_file().read_text(encoding="utf-8"))
    try:
        # The pid file's check refuses it (no Neo4j class in its cmdline); the start does not ask it.
        assert neo4j_local._running_pid() is None
        assert launched["alive"]() is True
    finally:
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while launched["alive"]() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert launched["alive"]() is False


def test_waiting_stops_as_soon_as_the_server_is_gone() -> None:
    unreachable = Neo4jConnection(uri="bolt://127.0.0.1:1", user="neo4j", password="pw", database="neo4j")
    with pytest.raises(Neo4jSetupError, match="exited during start-up"):
        neo4j_local.wait_until_ready(unreachable, timeout_s=60, alive=lambda: False)
