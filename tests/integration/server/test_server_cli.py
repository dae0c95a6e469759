"""``cypher-gateway serve`` start-up: bad settings stop it with their name; HTTP needs tokens;
a missing Neo4j or sandbox is reported on stderr but the server still starts (degraded)."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.support.env import clean_env
from tests.support.paths import GATEWAY_CLI, REPO
from tests.support.ports import free_port
from tests.support.server import start_http_server, stop


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return clean_env(GATEWAY_AUDIT_PATH=str(tmp_path / "audit.jsonl"), **extra)


def _serve(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([GATEWAY_CLI, "serve", *args], env=_env(tmp_path, **env), cwd=REPO, capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL, check=False)  # fmt: skip


def test_invalid_setting_stops_start_with_its_name(tmp_path: Path) -> None:
    done = _serve(tmp_path, GATEWAY_POOL_SIZE="0")
    assert done.returncode == 2 and "pool_size" in done.stderr
    done = _serve(tmp_path, "--config", str(tmp_path / "missing.toml"))
    assert done.returncode == 2 and "missing.toml" in done.stderr


def test_explicit_neo4j_without_password_stops_start(tmp_path: Path) -> None:
    done = _serve(tmp_path, NEO4J_URI="bolt://127.0.0.1:1")
    assert done.returncode == 2 and "neo4j_password" in done.stderr


def test_http_refuses_to_start_without_tokens(tmp_path: Path) -> None:
    done = _serve(tmp_path, "--transport", "http", "--port", str(free_port()))
    assert done.returncode == 2 and "tokens_file" in done.stderr and "--insecure-no-auth" in done.stderr
    bad = tmp_path / "tokens.toml"
    bad.write_text('[[principal]]\nname = "x"\ntoken = "too-short"\n')
    done = _serve(tmp_path, "--transport", "http", "--port", str(free_port()), "--tokens-file", str(bad))
    assert done.returncode == 2 and "too-short" not in done.stderr


def test_stdio_starts_degraded_and_says_what_is_missing(tmp_path: Path) -> None:
    # Nothing listens on port 1, and the image does not exist: both are named, the server still serves.
    env = _env(tmp_path, NEO4J_URI=f"bolt://127.0.0.1:{free_port()}", NEO4J_PASSWORD="irrelevant-pw",
               GATEWAY_SANDBOX_IMAGE="cypher-gateway/sandbox:absent")  # fmt: skip
    errlog_path = tmp_path / "stderr.log"

    async def session() -> Any:
        params = StdioServerParameters(command=GATEWAY_CLI, args=["serve"], env=env, cwd=str(REPO))
        with errlog_path.open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=60) as client:
                return await client.call_tool("analyze", {"cypher": "MATCH (n) RETURN count(n) AS c"})

    result = anyio.run(session)
    assert not result.is_error and result.structured_content["degraded"] == ["analyze:disabled"]
    stderr = errlog_path.read_text()
    # (the image name when Docker answers, else "the Docker daemon is not reachable")
    assert "Neo4j is not reachable" in stderr and "the sandbox cannot run" in stderr
    assert "`cypher-gateway doctor`" in stderr  # where to go from here
    assert "irrelevant-pw" not in stderr


def test_http_refuses_guessable_tokens_unless_told_otherwise(tmp_path: Path) -> None:
    # The README's example hash (of "test"), copied as is: the classic first tokens file.
    readme_example = hashlib.sha256(b"test").hexdigest()
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(f'[[principal]]\nname = "copied-from-readme"\nscope = []\ntoken_sha256 = "{readme_example}"\n')
    done = _serve(tmp_path, "--transport", "http", "--port", str(free_port()), "--tokens-file", str(tokens))
    assert done.returncode == 2, done.stderr
    assert "guessable" in done.stderr and "copied-from-readme" in done.stderr and "tokens new" in done.stderr

    port = free_port()
    log_path = tmp_path / "server.log"
    process = start_http_server(_env(tmp_path), ["--tokens-file", str(tokens), "--insecure-weak-tokens"], log_path,
                                port)  # fmt: skip
    try:
        answer = httpx.post(f"http://127.0.0.1:{port}/mcp", json={}, headers={"authorization": "Bearer test"})
    finally:
        stop(process)
    # Accepted on request, loudly; and the guessable token really opens the door.
    assert "WARNING: --insecure-weak-tokens" in log_path.read_text()
    assert answer.status_code != 401
