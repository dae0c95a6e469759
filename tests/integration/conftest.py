"""Fixtures for every integration test: the real Neo4j, the real Docker daemon, the images and
a warm sandbox pool. Every test below this directory is marked ``integration``.

Nothing here skips. A missing service is set up (Neo4j is started, images are
built) or the test fails with a message that names what is missing.

The Neo4j release line is ``CYPHER_GATEWAY_NEO4J_VERSION`` (5.26 unless it says 2026).
``make test`` runs everything on 5.26, then the tests marked ``neo4j2026`` again on 2026.x.
A test marked ``requires_2026`` (Cypher 25) is also marked ``neo4j2026``; on 5.26 it is
deselected, and the summary says how many were and why.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from gateway import managed_neo4j
from gateway.config import GatewaySettings, connection_settings
from gateway.connection import Neo4jConnection
from gateway.errors import SetupError
from gateway.ops import images, neo4j_local
from gateway.runner import RunnerSettings, SandboxRunner, remove_leftovers, settings_for
from tests.support.jobs import PATIENT, SettingsFactory
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

HERE = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)  # before -m selects: requires_2026 implies neo4j2026
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    line = managed_neo4j.line_for()
    kept: list[pytest.Item] = []
    needs_2026: list[pytest.Item] = []
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.integration)
        if item.get_closest_marker("requires_2026") is not None:
            item.add_marker(pytest.mark.neo4j2026)
            if line.name != "2026":
                needs_2026.append(item)
                continue
        kept.append(item)
    if needs_2026:
        config.hook.pytest_deselected(items=needs_2026)
        items[:] = kept
        config.stash[_NEEDS_2026] = len(needs_2026)


_NEEDS_2026 = pytest.StashKey[int]()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    count = config.stash.get(_NEEDS_2026, 0)
    if count:
        terminalreporter.write_line(
            f"{count} tests need Neo4j 2026.x (Cypher 25) and were deselected on {managed_neo4j.line_for().name}; "
            "`make test` runs them with CYPHER_GATEWAY_NEO4J_VERSION=2026"
        )


@pytest.fixture(scope="session")
def neo4j_connection() -> Neo4jConnection:
    """The managed local Neo4j of the selected line (started if not running), or NEO4J_URI & co. when set."""
    try:
        return neo4j_local.resolve(start_managed=True)
    except SetupError as exc:
        pytest.fail(f"the real Neo4j is required and could not be started: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def neo4j_driver(neo4j_connection: Neo4jConnection) -> Iterator[Any]:
    """A direct driver with write rights, for seeding and checking only (never for agent queries)."""
    import neo4j

    driver = neo4j.GraphDatabase.driver(
        neo4j_connection.uri, auth=(neo4j_connection.user, neo4j_connection.password.get_secret_value())
    )
    yield driver
    driver.close()


@pytest.fixture(scope="session")
def docker_client() -> Iterator[Any]:
    from docker.client import DockerClient

    try:
        client = DockerClient.from_env()
        client.ping()
    except Exception as exc:
        pytest.fail(
            f"the real Docker daemon is required and does not answer ({exc}); "
            "run scripts/ensure-docker.sh (the README's commands do)",
            pytrace=False,
        )
    yield client
    client.close()


def _ensure(builder: Callable[[], str], name: str) -> str:
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
    """Tag of the local Neo4j image of the selected line (stands in for neo4j:5.26-community / 2026)."""
    return _ensure(images.ensure_neo4j_image, "Neo4j")


# --- the sandbox runner --------------------------------------------------------------------------


@pytest.fixture(scope="session")
def gateway_settings(neo4j_connection: Neo4jConnection, sandbox_image: str) -> GatewaySettings:
    """The gateway's settings aimed at the test Neo4j and sandbox image (as `serve` would read them),
    under the default policy without its property list: these tests read their own graphs' keys."""
    return connection_settings(
        neo4j_connection, sandbox_image=sandbox_image, pool_size=2, policy_file=ALL_PROPERTIES_POLICY_PATH
    )


@pytest.fixture(scope="session")
def runner_settings(gateway_settings: GatewaySettings) -> SettingsFactory:
    """RunnerSettings made the way `serve` makes them; ``overrides`` set what a test varies."""

    def build(**overrides: Any) -> RunnerSettings:
        return settings_for(gateway_settings, **overrides)

    return build


@pytest.fixture(scope="module")
def sandbox_runner(runner_settings: SettingsFactory, docker_client: Any) -> Iterator[SandboxRunner]:
    """A running warm pool shared by a module's tests; it must leave nothing behind."""
    runner = SandboxRunner(runner_settings(), PATIENT)
    ok, reason = runner.available()
    assert ok, f"the sandbox runner could not start: {reason}"
    assert runner.wait_ready(90), "the warm pool did not fill within 90 s"
    yield runner
    runner_id = runner.runner_id
    runner.close()
    assert remove_leftovers(docker_client, runner_id) == 0, "the runner leaked containers"


@pytest.fixture(scope="module")
def query_api_runner(
    runner_settings: SettingsFactory, neo4j_connection: Neo4jConnection, docker_client: Any
) -> Iterator[SandboxRunner]:
    """A pool of one on the Query API transport (httpx to the managed Neo4j's HTTP address)."""
    assert neo4j_connection.http_uri, "the managed Neo4j reports no HTTP address for the Query API"
    http = urlparse(neo4j_connection.http_uri)
    runner = SandboxRunner(
        runner_settings(transport="query-api", neo4j_host=http.hostname, neo4j_port=http.port, pool_size=1),
        PATIENT,
    )
    assert runner.wait_ready(60), runner.available()
    yield runner
    runner.close()
    assert remove_leftovers(docker_client, runner.runner_id) == 0
