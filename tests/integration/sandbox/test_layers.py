"""Each layer holds alone: with the static guard off (jobs go straight to the runner) the
sandbox's EXPLAIN check and READ mode stop writes; with the EXPLAIN check off too, READ
mode alone does. "Stopped" is verified in the database: counts and a property checksum
of the seeded graph before and after, and no node with the attack's label."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from gateway.runner import SandboxRunner, error_for
from tests.support.graph import count_label, fingerprint
from tests.support.jobs import make_job

pytestmark = pytest.mark.neo4j2026  # runs on 5.26 and again on 2026.x

# Recorded from Neo4j 5.26 Community: a write in a READ transaction is refused with this code.
ACCESS_MODE = "Neo.ClientError.Statement.AccessMode"


def attacks(label: str, pwned: str) -> list[str]:
    return [
        f"CREATE (:{pwned} {{x: 1}})",
        f"INSERT (:{pwned} {{x: 1}})",
        f"MATCH (n:{label}) SET n.name = 'pwned'",
        f"MATCH (n:{label}) REMOVE n.name",
        f"MATCH (n:{label} {{i: 1}}) DETACH DELETE n",
        f"MERGE (:{pwned} {{x: 2}})",
        f"MATCH (n:{label}) FOREACH (x IN [1] | SET n.i = -1)",
        f"MATCH (n:{label}) CALL {{ WITH n SET n.i = -2 }} RETURN count(*) AS c",
        f"MATCH (n:{label}) RETURN n.i AS i UNION ALL CREATE (p:{pwned}) RETURN 0 AS i",
        f"MATCH (a:{label} {{i: 1}}), (b:{label} {{i: 3}}) CREATE (a)-[:PWNED]->(b)",
        f"MATCH (n:{label}) SET n:{pwned}",
    ]


SCHEMA_ATTACKS = ["CREATE INDEX cgw_pwned_idx IF NOT EXISTS FOR (n:CgwPwned) ON (n.x)"]


def _run_all(runner: SandboxRunner, queries: list[str], explain: bool) -> list[Any]:
    results = []
    for cypher in queries:
        result = runner.run(make_job(cypher, explain_check=explain))
        assert not result.ok and not result.rows, f"a write was not stopped: {cypher}: {result}"
        results.append((cypher, result.error))
    return results


def test_guard_off_explain_check_and_read_mode_stop_writes(
    sandbox_runner: SandboxRunner, neo4j_driver: Any, seeded: str
) -> None:
    pwned = f"Pwned{uuid.uuid4().hex[:8]}"
    before = fingerprint(neo4j_driver, seeded)
    for cypher, error in _run_all(sandbox_runner, attacks(seeded, pwned) + SCHEMA_ATTACKS, explain=True):
        # INSERT is not Cypher 5 syntax on 5.26: Neo4j's parser refuses it before planning.
        expected = {"explain_rejected", "neo4j_refused"} if cypher.startswith("INSERT") else {"explain_rejected"}
        assert error.code in expected, (cypher, error)
    after = fingerprint(neo4j_driver, seeded)
    assert (after["nodes"], after["relationships"], after["checksum"]) == (
        before["nodes"], before["relationships"], before["checksum"],
    )  # fmt: skip
    assert count_label(neo4j_driver, pwned) == 0


def test_guard_and_explain_off_read_mode_alone_stops_writes(
    sandbox_runner: SandboxRunner, neo4j_driver: Any, seeded: str
) -> None:
    pwned = f"Pwned{uuid.uuid4().hex[:8]}"
    before = fingerprint(neo4j_driver, seeded)
    for cypher, error in _run_all(sandbox_runner, attacks(seeded, pwned), explain=False):
        if cypher.startswith("INSERT"):
            assert error.code == "neo4j_refused", (cypher, error)
            continue
        assert error.code == "neo4j_refused" and error.neo4j_code == ACCESS_MODE, (cypher, error)
        mapped = error_for(sandbox_runner.run(make_job(cypher, explain_check=False)))
        assert mapped is not None and mapped.message.startswith("Neo4j refused the query: ")
    for cypher, error in _run_all(sandbox_runner, SCHEMA_ATTACKS, explain=False):
        assert error.code == "neo4j_refused", (cypher, error)
    after = fingerprint(neo4j_driver, seeded)
    assert (after["nodes"], after["relationships"], after["checksum"]) == (
        before["nodes"], before["relationships"], before["checksum"],
    )  # fmt: skip
    assert count_label(neo4j_driver, pwned) == 0
    with neo4j_driver.session() as session:
        assert not session.run("SHOW INDEXES YIELD name WHERE name = 'cgw_pwned_idx' RETURN name").data()


def test_the_check_is_not_fooled_by_a_disallowed_procedure(sandbox_runner: SandboxRunner) -> None:
    # Read-typed procedures outside the allow-list are refused by the EXPLAIN check.
    for cypher in ("CALL db.schema.visualization()", "CALL dbms.listConfig() YIELD name RETURN name"):
        result = sandbox_runner.run(make_job(cypher, procedures_allowed=["db.labels"]))
        assert not result.ok and result.error is not None
        assert result.error.code in {"explain_rejected", "neo4j_refused"}, (cypher, result.error)
