"""The ``cypher-gateway serve`` child process of the server tests, and the graph it serves."""

from __future__ import annotations

import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.paths import GATEWAY_CLI, REPO
from tests.support.waiting import wait_until


@dataclass(frozen=True)
class SeededGraph:
    """A graph under a run-unique label, visible to ``layer`` only."""

    label: str
    layer: str
    repository: str
    task_id: str
    many: int  # nodes with small properties (row truncation)
    blobs: int  # nodes with a large property (byte truncation)
    blob_chars: int


@dataclass
class HttpServer:
    url: str
    tokens: dict[str, str]  # principal name -> token
    audit_path: Path
    process: subprocess.Popen[bytes]
    log_path: Path


def _listens(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def start_http_server(
    env: dict[str, str], args: list[str], log_path: Path, port: int, *, cli: str = GATEWAY_CLI, cwd: Path = REPO
) -> subprocess.Popen[bytes]:
    """``serve --transport http`` on ``port`` (the ``cli`` given, else the checkout's), once it accepts connections."""
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [cli, "serve", "--transport", "http", "--port", str(port), *args],
            env=env, stdout=log, stderr=subprocess.STDOUT, cwd=cwd,
        )  # fmt: skip

    def up() -> bool:
        if process.poll() is not None:
            pytest.fail(f"the HTTP server exited with {process.returncode}:\n{log_path.read_text()}", pytrace=False)
        return _listens(port)

    try:
        wait_until(up, timeout=60, what="the HTTP server listening")
    except AssertionError:
        process.kill()
        pytest.fail(f"the HTTP server did not listen within 60 s:\n{log_path.read_text()}", pytrace=False)
    return process


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
