"""The managed Neo4j bounds what one transaction may take, whatever the gateway lets through.

Neo4j's own defaults bound nothing (no transaction timeout, no transaction memory limit);
the managed server is configured with both, and a memory-hungry read sent through a sandbox
is stopped by Neo4j with its own error. (What an operator sets on an existing server:
docs/scaling.md.)
"""

from __future__ import annotations

from typing import Any

from gateway.runner import SandboxRunner, error_for
from tests.support.jobs import make_job

# Neo4j's values for "no limit".
UNBOUNDED = {"0B", "0s", "0"}


def _settings(driver: Any, *names: str) -> dict[str, str]:
    with driver.session() as session:
        records = session.run("SHOW SETTINGS YIELD name, value WHERE name IN $names RETURN name, value", names=names)
        return {r["name"]: r["value"] for r in records}


def test_the_managed_server_bounds_time_and_memory_per_transaction(neo4j_driver: Any) -> None:
    settings = _settings(
        neo4j_driver, "db.transaction.timeout", "db.memory.transaction.max", "dbms.memory.transaction.total.max"
    )
    assert len(settings) == 3, settings
    unbounded = {name: value for name, value in settings.items() if value in UNBOUNDED}
    assert not unbounded, f"left unbounded: {unbounded}"


def test_a_read_past_the_transaction_memory_limit_is_stopped_by_neo4j(sandbox_runner: SandboxRunner) -> None:
    # 20 million integers collected into one list: a read the guard's rules do not size.
    result = sandbox_runner.run(make_job("UNWIND range(1, 20000000) AS x RETURN size(collect(x)) AS n"))
    assert result.error is not None, result
    assert result.error.neo4j_code == "Neo.TransientError.General.MemoryPoolOutOfMemoryError", result.error
    error = error_for(result)
    assert error is not None and error.code == "neo4j_refused"
    # The server is still there for the next query.
    assert sandbox_runner.run(make_job("RETURN 1 AS x")).rows == [[1]]
