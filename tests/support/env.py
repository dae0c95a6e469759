"""The environment of a child process (server, CLI, demo) aimed at the test Neo4j.

A developer's own ``GATEWAY_*`` and ``NEO4J_*`` variables are dropped first, so a child
only ever sees the settings its test gives it.
"""

from __future__ import annotations

import os
from pathlib import Path

from gateway.ops.neo4j_local import Neo4jConnection


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without ``GATEWAY_*`` / ``NEO4J_*``, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GATEWAY_", "NEO4J_"))}
    env.update(extra)
    return env


def neo4j_env(connection: Neo4jConnection, **extra: str) -> dict[str, str]:
    """A clean environment whose ``NEO4J_*`` name ``connection``."""
    env = clean_env(NEO4J_URI=connection.uri, NEO4J_USER=connection.user, NEO4J_PASSWORD=connection.password)
    if connection.database:
        env["NEO4J_DATABASE"] = connection.database
    env.update(extra)
    return env


def server_env(connection: Neo4jConnection, sandbox_image: str, audit_path: Path, **extra: str) -> dict[str, str]:
    """Environment for a ``cypher-gateway serve`` child aimed at the test Neo4j and sandbox image."""
    return neo4j_env(
        connection,
        GATEWAY_SANDBOX_IMAGE=sandbox_image,
        GATEWAY_POOL_SIZE="2",
        GATEWAY_AUDIT_PATH=str(audit_path),
        **extra,
    )


def sandbox_program_env(connection: Neo4jConnection) -> dict[str, str]:
    """Environment for the sandbox program run on the host, straight at ``connection``.

    It holds no credentials: the program reads its account from the first line on stdin.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("CGW_")}
    env.update(CGW_NEO4J_URI=connection.uri)
    if connection.database:
        env["CGW_DATABASE"] = connection.database
    return env
