"""A served query's life and the server's own, on the real stack: a cancelled call ends its sandbox
and its Neo4j transaction; SIGTERM stops the server and removes every container it started.

The Neo4j side is observed the way an operator would, with ``SHOW TRANSACTIONS`` on a direct
connection: a query is found by a marker in its text.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from gateway.audit import AuditLog
from gateway.connection import Neo4jConnection
from gateway.runner.docker_io import LABEL_OWNER
from tests.support.env import server_env
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH, GATEWAY_CLI, REPO
from tests.support.ports import free_port
from tests.support.server import start_http_server, stop
from tests.support.waiting import wait_until

# Far above every wait below: a query that ends before it was ended by the cancellation.
SLOW_POLICY_TIMEOUT = 120


def _slow_query(marker: str) -> str:
    # Rows one at a time for minutes: Neo4j checks between rows whether the transaction is over.
    return (
        "UNWIND range(1, 1000000) AS x UNWIND range(1, 1000000) AS y "
        f"WITH x, '{marker}' AS marker WHERE x % 7 = 99 RETURN count(x) AS c"
    )


def _transactions(driver: Any, marker: str) -> list[str]:
    records = driver.execute_query("SHOW TRANSACTIONS YIELD transactionId, currentQuery").records
    return [r["transactionId"] for r in records if marker in (r["currentQuery"] or "")]


@pytest.fixture(scope="module")
def slow_policy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default policy with a timeout no test waits for."""
    policy = yaml.safe_load(ALL_PROPERTIES_POLICY_PATH.read_text(encoding="utf-8"))
    policy["name"] = "default-slow"
    for tool in policy["tools"].values():
        tool["limits"] = {**tool["limits"], "timeout_seconds": SLOW_POLICY_TIMEOUT}
    policy["sandbox"] = {**policy.get("sandbox", {}), "busy_wait_ms": 10_000}  # a loaded machine refills slowly
    path = tmp_path_factory.mktemp("policy") / "slow.yaml"
    path.write_text(yaml.safe_dump(policy), encoding="utf-8")
    return path


# --- the server's containers -----------------------------------------------------------------------


def _owned(docker_client: Any, pid: int) -> tuple[list[Any], list[Any]]:
    label = f"{LABEL_OWNER}={socket.gethostname()}:{pid}"
    containers = docker_client.containers.list(all=True, ignore_removed=True, filters={"label": label})
    volumes = docker_client.volumes.list(filters={"label": label})
    return containers, volumes


def _roles(containers: list[Any]) -> set[str]:
    return {c.labels.get("cypher-gateway.role", "") for c in containers if c.status == "running"}


def _wait_for_a_warm_sandbox(docker_client: Any, pid: int) -> None:
    # On a busy machine the pool can take longer to fill than a call waits for a container.
    def ready() -> bool:
        return {"forwarder", "sandbox"} <= _roles(_owned(docker_client, pid)[0])

    wait_until(ready, timeout=90, what="the server's forwarder and a warm sandbox running")


# --- cancellation ------------------------------------------------------------------------------------


async def _served(client: Client) -> None:
    # On a busy machine the pool may not have a sandbox ready yet: the answer is then degraded.
    for _ in range(30):
        warmup = await client.call_tool("analyze", {"cypher": "RETURN 1 AS one"})
        if not warmup.is_error and not warmup.structured_content["degraded"]:
            return
    pytest.fail(f"the server never ran a query: {warmup.content}")


async def _cancel_when_running(client: Client, driver: Any, marker: str, audit_path: Path) -> None:
    """Call the slow query, cancel the call once Neo4j runs it, and see it end; the session lives on."""
    await _served(client)
    answered: list[Any] = []

    async def calling() -> None:
        answered.append(await client.call_tool("analyze", {"cypher": _slow_query(marker)}))

    def running() -> bool:
        return bool(answered or _transactions(driver, marker))

    async with anyio.create_task_group() as call:
        call.start_soon(calling)
        await anyio.to_thread.run_sync(lambda: wait_until(running, timeout=60, what="the query running in Neo4j"))
        assert not answered, f"the call ended before it was cancelled: {answered[0]}"
        call.cancel_scope.cancel()

    def ended() -> bool:
        return not _transactions(driver, marker)

    def audited() -> bool:
        return any(line.get("error_code") == "cancelled" for line in AuditLog(audit_path).read())

    # Within 30 s of a 120 s policy timeout, so the cancellation ended it (measured: about 1.5 s;
    # the container is killed at once, and TERMINATE returns once Neo4j has stopped the query).
    await anyio.to_thread.run_sync(lambda: wait_until(ended, timeout=30, what="the query's transaction ending"))
    await anyio.to_thread.run_sync(lambda: wait_until(audited, timeout=30, what="an audit line 'cancelled'"))
    after = await client.call_tool("check", {"cypher": "RETURN 1 AS one", "tool": "analyze"})
    assert not after.is_error  # the session survived the cancellation


def test_cancelled_call_over_stdio_ends_its_sandbox_and_transaction(
    neo4j_connection: Neo4jConnection, sandbox_image: str, neo4j_driver: Any, slow_policy: Path, tmp_path: Path
) -> None:
    audit_path = tmp_path / "audit.jsonl"
    env = server_env(neo4j_connection, sandbox_image, audit_path, GATEWAY_POLICY_FILE=str(slow_policy))

    async def session() -> None:
        params = StdioServerParameters(command=GATEWAY_CLI, args=["serve"], env=env, cwd=str(REPO))
        async with Client(params, read_timeout_seconds=SLOW_POLICY_TIMEOUT) as client:
            await _cancel_when_running(client, neo4j_driver, uuid.uuid4().hex, audit_path)

    anyio.run(session)


def test_cancelled_call_over_http_ends_its_sandbox_and_transaction(
    neo4j_connection: Neo4jConnection, sandbox_image: str, neo4j_driver: Any, docker_client: Any,
    slow_policy: Path, tmp_path: Path,
) -> None:  # fmt: skip
    audit_path = tmp_path / "audit.jsonl"
    token = uuid.uuid4().hex * 2
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(f'[[principal]]\nname = "agent"\nscope = []\ntoken = "{token}"\n', encoding="utf-8")
    env = server_env(neo4j_connection, sandbox_image, audit_path, GATEWAY_POLICY_FILE=str(slow_policy))
    port = free_port()
    process = start_http_server(env, ["--tokens-file", str(tokens)], tmp_path / "server.log", port)
    _wait_for_a_warm_sandbox(docker_client, process.pid)

    async def session() -> None:
        async with (
            create_mcp_http_client(headers={"authorization": f"Bearer {token}"}) as http,
            Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http),
                   read_timeout_seconds=SLOW_POLICY_TIMEOUT) as client,
        ):  # fmt: skip
            await _cancel_when_running(client, neo4j_driver, uuid.uuid4().hex, audit_path)

    try:
        anyio.run(session)
    finally:
        stop(process)


# --- shutdown ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_sigterm_removes_the_forwarder_and_every_sandbox(
    transport: str, neo4j_connection: Neo4jConnection, sandbox_image: str, docker_client: Any, tmp_path: Path
) -> None:
    env = server_env(neo4j_connection, sandbox_image, tmp_path / "audit.jsonl")
    log_path = tmp_path / "server.log"
    if transport == "http":
        process = start_http_server(env, ["--insecure-no-auth"], log_path, free_port())
    else:
        with log_path.open("wb") as log:
            # stdin stays open, as an MCP client's pipe does while it runs.
            process = subprocess.Popen([GATEWAY_CLI, "serve"], env=env, cwd=REPO, stdin=subprocess.PIPE,
                                       stdout=subprocess.DEVNULL, stderr=log)  # fmt: skip
    try:
        _wait_for_a_warm_sandbox(docker_client, process.pid)
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            stop(process)
    assert process.returncode == 128 + signal.SIGTERM, log_path.read_text()
    containers, volumes = _owned(docker_client, process.pid)
    assert containers == [] and volumes == [], f"left behind: {_roles(containers)}, {len(volumes)} volume(s)"
