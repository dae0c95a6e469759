"""Shared fixtures: the real Neo4j and the real Docker daemon.

Nothing here skips. A missing service is set up (Neo4j is started, images are
built) or the test fails with a message that names what is missing.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.ops import images, neo4j_local
from gateway.ops.neo4j_local import Neo4jConnection

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")


@pytest.fixture(scope="session")
def neo4j_connection() -> Neo4jConnection:
    """The managed local Neo4j 5.26 (started if it is not running), or NEO4J_URI & co. when set."""
    try:
        return neo4j_local.connection_from_env(start_managed=True)
    except neo4j_local.Neo4jSetupError as exc:
        pytest.fail(f"the real Neo4j is required and could not be started: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def neo4j_driver(neo4j_connection: Neo4jConnection) -> Iterator[Any]:
    """A direct driver with write rights, for seeding and checking only (never for agent queries)."""
    import neo4j

    driver = neo4j.GraphDatabase.driver(neo4j_connection.uri, auth=(neo4j_connection.user, neo4j_connection.password))
    yield driver
    driver.close()


@pytest.fixture(scope="session")
def docker_client() -> Iterator[Any]:
    import docker

    try:
        client = docker.from_env()
        client.ping()
    except Exception as exc:
        pytest.fail(
            f"the real Docker daemon is required and does not answer ({exc}); "
            "run scripts/ensure-docker.sh (the README's commands do)",
            pytrace=False,
        )
    yield client
    client.close()


def _ensure(builder: Any, name: str) -> str:
    try:
        tag: str = builder()
    except images.ImageBuildError as exc:
        pytest.fail(f"the {name} image is required and could not be built: {exc}", pytrace=False)
    return tag


@pytest.fixture(scope="session")
def sandbox_image(docker_client: Any) -> str:
    """Tag of the sandbox image for the current sources (built when missing)."""
    return _ensure(images.ensure_sandbox_image, "sandbox")


@pytest.fixture(scope="session")
def neo4j_image(docker_client: Any) -> str:
    """Tag of the local Neo4j image that stands in for neo4j:5.26-community."""
    return _ensure(images.ensure_neo4j_image, "Neo4j")


def docker_run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run the docker CLI; tests use it where the CLI states intent more plainly than the SDK."""
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=False)
