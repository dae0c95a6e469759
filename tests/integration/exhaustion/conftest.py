"""A Neo4j of its own for the exhaustion suite, a gateway over it, and a monitor beside it.

The suite sends queries built to exhaust Neo4j. If one got through, it could wedge the server
for minutes; on its own managed instance (own state dir and ports, the managed conf) that cannot
take the shared test Neo4j down with it. The instance is started for the session and stopped
after it.

``CYPHER_GATEWAY_EXHAUSTION_STATE`` / ``CYPHER_GATEWAY_EXHAUSTION_NEO4J_PORT`` /
``CYPHER_GATEWAY_EXHAUSTION_NEO4J_HTTP_PORT`` pin where it lives (default: under the state dir,
on free ports).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from gateway import managed_neo4j
from gateway.config import connection_settings
from gateway.connection import Neo4jConnection
from gateway.ops import neo4j_local
from gateway.paths import state_dir
from gateway.policy import load_policy
from gateway.runner import SandboxRunner, remove_leftovers, settings_for
from gateway.service import Gateway
from sandbox.bolt import QUERY_ID_KEY
from tests.support.graph import unique_label
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH
from tests.support.ports import free_port

POLICY = load_policy(ALL_PROPERTIES_POLICY_PATH)
# How often the monitor asks: often enough to see a 1 s stall, rarely enough to stay out of the way.
PROBE_INTERVAL_S = 0.1


@contextmanager
def _instance_env(state: str, bolt: int, http: int) -> Iterator[None]:
    """neo4j_local reads where its server lives from the environment: point it at this instance."""
    names = {
        "CYPHER_GATEWAY_STATE": state,
        "CYPHER_GATEWAY_NEO4J_PORT": str(bolt),
        "CYPHER_GATEWAY_NEO4J_HTTP_PORT": str(http),
    }
    saved = {name: os.environ.get(name) for name in [*names, "NEO4J_URI"]}
    os.environ.update(names)
    os.environ.pop("NEO4J_URI", None)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _start_afresh() -> Neo4jConnection:
    """Stop one left running by an interrupted run (it may listen on other ports), then start.

    On a loaded machine the start-up check has read a JVM that was still coming up as gone
    (twice in a few runs); the server then comes up all the same, so it is waited for once more.
    """
    neo4j_local.stop()
    try:
        return neo4j_local.start()
    except managed_neo4j.Neo4jSetupError as exc:
        try:
            connection = managed_neo4j.connection_info()
            neo4j_local.wait_until_ready(connection)
        except managed_neo4j.Neo4jSetupError:
            pytest.fail(f"the exhaustion suite's own Neo4j could not be started: {exc}", pytrace=False)
        return connection


@pytest.fixture(scope="session")
def exhaustion_neo4j() -> Iterator[Neo4jConnection]:
    """A managed Neo4j (the managed conf: memory limits, monitor interval) used by this suite alone."""
    state = os.environ.get("CYPHER_GATEWAY_EXHAUSTION_STATE") or str(state_dir() / "exhaustion")
    bolt = int(os.environ.get("CYPHER_GATEWAY_EXHAUSTION_NEO4J_PORT") or free_port())
    http = int(os.environ.get("CYPHER_GATEWAY_EXHAUSTION_NEO4J_HTTP_PORT") or free_port())
    with _instance_env(state, bolt, http):
        connection = _start_afresh()
    yield connection
    with _instance_env(state, bolt, http):
        neo4j_local.stop()


@pytest.fixture(scope="session")
def operator_driver(exhaustion_neo4j: Neo4jConnection) -> Iterator[Any]:
    """Seeding, the probe and SHOW TRANSACTIONS: an operator's connections, never an agent's."""
    import neo4j

    c = exhaustion_neo4j
    driver = neo4j.GraphDatabase.driver(c.uri, auth=(c.user, c.password.get_secret_value()), max_connection_pool_size=4)
    yield driver
    driver.close()


@pytest.fixture(scope="session")
def graph(operator_driver: Any, exhaustion_neo4j: Neo4jConnection) -> Iterator[str]:
    """2,000 global nodes, each linked to its next three (dense enough that paths of 8 hops explode)."""
    label = unique_label("Exh")
    with operator_driver.session(database=exhaustion_neo4j.database) as session:
        session.run(
            f"UNWIND range(1, 2000) AS i CREATE (:{label} {{i: i, name: 'n' + toString(i), "
            "tags: ['a', 'b', 'c'], layers: []})"
        ).consume()
        session.run(
            f"MATCH (a:{label}), (b:{label}) WHERE b.i > a.i AND b.i <= a.i + 3 CREATE (a)-[:NEXT]->(b)"
        ).consume()
    yield label
    with operator_driver.session(database=exhaustion_neo4j.database) as session:
        session.run(f"MATCH (n:{label}) CALL (n) {{ DETACH DELETE n }} IN TRANSACTIONS").consume()


@pytest.fixture(scope="session")
def exhaustion_gateway(exhaustion_neo4j: Neo4jConnection, sandbox_image: str, docker_client: Any) -> Iterator[Gateway]:
    """The product path (guard, scope, sandbox runner) aimed at this suite's Neo4j."""
    settings = connection_settings(exhaustion_neo4j, sandbox_image=sandbox_image, pool_size=2)
    runner = SandboxRunner(settings_for(settings))
    ok, reason = runner.available()
    assert ok, f"the sandbox runner could not start: {reason}"
    assert runner.wait_ready(90), "the warm pool did not fill within 90 s"
    yield Gateway(POLICY, runner)
    runner_id = runner.runner_id
    runner.close()
    assert remove_leftovers(docker_client, runner_id) == 0, "the runner leaked containers"


@dataclass
class Watch:
    """What the monitor saw while one agent query ran."""

    sent: float
    probe_max_s: float = 0.0
    probe_errors: list[str] = field(default_factory=list)
    # monotonic time an agent transaction (tagged with a query id) was last listed
    agent_tx_last_seen: float | None = None

    @property
    def agent_tx_busy_s(self) -> float:
        """How long after the query was sent its transaction was still listed (0 if never seen)."""
        return 0.0 if self.agent_tx_last_seen is None else self.agent_tx_last_seen - self.sent

    def summary(self) -> str:
        return f"probe max {self.probe_max_s:.2f} s, transaction listed until {self.agent_tx_busy_s:.2f} s"


class Monitor:
    """Two operator connections beside the agent's: ``RETURN 1`` (is Neo4j responsive?) and
    ``SHOW TRANSACTIONS`` (is an agent transaction still running?), each asked in a loop."""

    def __init__(self, driver: Any, database: str | None) -> None:
        self._driver = driver
        self._database = database

    @contextmanager
    def watching(self) -> Iterator[Watch]:
        watch = Watch(sent=time.monotonic())
        stop = threading.Event()
        threads = [
            threading.Thread(target=self._probe, args=(watch, stop), daemon=True),
            threading.Thread(target=self._transactions, args=(watch, stop), daemon=True),
        ]
        for thread in threads:
            thread.start()
        try:
            yield watch
        finally:
            stop.set()
            for thread in threads:
                thread.join(30)

    def _probe(self, watch: Watch, stop: threading.Event) -> None:
        while not stop.wait(PROBE_INTERVAL_S):
            started = time.monotonic()
            try:
                self._driver.execute_query("RETURN 1 AS ok", database_=self._database)
            except Exception as exc:  # a failed probe is a finding, reported by the test
                watch.probe_errors.append(f"{type(exc).__name__}: {str(exc)[:200]}")
            watch.probe_max_s = max(watch.probe_max_s, time.monotonic() - started)

    def _transactions(self, watch: Watch, stop: threading.Event) -> None:
        query = (
            "SHOW TRANSACTIONS YIELD transactionId, metaData "
            f"WHERE metaData.{QUERY_ID_KEY} IS NOT NULL AND metaData.{QUERY_ID_KEY} <> 'warm' RETURN count(*) AS n"
        )
        while not stop.wait(PROBE_INTERVAL_S):
            try:
                records, _, _ = self._driver.execute_query(query, database_=self._database)
            except Exception as exc:  # an unanswered SHOW TRANSACTIONS is a finding too
                watch.probe_errors.append(f"SHOW TRANSACTIONS: {type(exc).__name__}: {str(exc)[:200]}")
            else:
                if records[0]["n"]:
                    watch.agent_tx_last_seen = time.monotonic()


@pytest.fixture(scope="session")
def monitor(operator_driver: Any, exhaustion_neo4j: Neo4jConnection) -> Monitor:
    return Monitor(operator_driver, exhaustion_neo4j.database)
