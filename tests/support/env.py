"""The environment of a child process (server, CLI, demo) aimed at the test Neo4j.

A developer's own ``GATEWAY_*`` and ``NEO4J_*`` variables are dropped first, so a child
only ever sees the settings its test gives it.
"""

from __future__ import annotations

import os
from pathlib import Path

from gateway.connection import Neo4jConnection
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without ``GATEWAY_*`` / ``NEO4J_*``, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GATEWAY_", "NEO4J_"))}
    env.update(extra)
    return env


def neo4j_env(connection: Neo4jConnection, **extra: str) -> dict[str, str]:
    """A clean environment whose ``NEO4J_*`` name ``connection``."""
    env = clean_env(
        NEO4J_URI=connection.uri, NEO4J_USER=connection.user, NEO4J_PASSWORD=connection.password.get_secret_value()
    )
    if connection.database:
        env["NEO4J_DATABASE"] = connection.database
    env.update(extra)
    return env


def patient_policy_file(directory: Path) -> Path:
    """The default policy without its property list (``ALL_PROPERTIES_POLICY_PATH``: the server
    tests read their own graph's keys) with a long sandbox wait, written into ``directory``.

    A server test sends queries back to back on a small, shared machine, where refilling
    the pool can take longer than the default wait: it should see answers, not "busy"
    (the capacity tests use the default wait). Every other line is that file's.
    """
    text = ALL_PROPERTIES_POLICY_PATH.read_text(encoding="utf-8")
    assert "busy_wait_ms: 500\n" in text, "the default policy's wait moved: update this helper"
    path = directory / "patient-default-policy.yaml"
    path.write_text(text.replace("busy_wait_ms: 500\n", "busy_wait_ms: 10000\n"), encoding="utf-8")
    return path


def server_env(connection: Neo4jConnection, sandbox_image: str, audit_path: Path, **extra: str) -> dict[str, str]:
    """Environment for a ``cypher-gateway serve`` child aimed at the test Neo4j and sandbox image."""
    defaults = {
        "GATEWAY_SANDBOX_IMAGE": sandbox_image,
        "GATEWAY_POOL_SIZE": "2",
        "GATEWAY_AUDIT_PATH": str(audit_path),
        "GATEWAY_POLICY_FILE": str(patient_policy_file(audit_path.parent)),
    }
    return neo4j_env(connection, **{**defaults, **extra})  # a test's own values win


def sandbox_program_env(connection: Neo4jConnection) -> dict[str, str]:
    """Environment for the sandbox program run on the host, straight at ``connection``.

    It holds no credentials: the program reads its account from the first line on stdin.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("CGW_")}
    env.update(CGW_NEO4J_URI=connection.uri)
    if connection.database:
        env["CGW_DATABASE"] = connection.database
    return env
