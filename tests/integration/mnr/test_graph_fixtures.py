"""The Mentis and Mindreader fixtures reproduce the shapes their systems write, seeded into the real Neo4j.

Read back with the harness's write driver (never through the gateway): what a policy for
those graphs has to get right is in the data, so the data is checked first.
"""

from __future__ import annotations

from typing import Any

import pytest

from gateway.connection import Neo4jConnection
from gateway.mnr import seed

pytestmark = pytest.mark.neo4j2026


def _rows(driver: Any, connection: Neo4jConnection, query: str) -> list[list[Any]]:
    with driver.session(database=connection.database) as session:
        return [record.values() for record in session.run(query)]


@pytest.fixture(scope="module")
def seeded(neo4j_connection: Neo4jConnection, neo4j_driver: Any) -> Any:
    assert seed.seed_builtin(neo4j_connection, "mentis") >= 5
    assert seed.seed_builtin(neo4j_connection, "mindreader") >= 10
    return neo4j_driver


def test_mentis_attempts_with_and_without_a_check_and_1024_float_embeddings(
    seeded: Any, neo4j_connection: Neo4jConnection
) -> None:
    rows = _rows(seeded, neo4j_connection, (
        "MATCH (r:MentisFixture:Repository)-[:HAS_TASK]->(t:Task)-[:HAS_ATTEMPT]->(a:Attempt) "
        "RETURN a.uid, r.name, t.id, a.check, size(a.embedding), "
        "all(v IN a.embedding WHERE v IS :: FLOAT), 'check' IN keys(a) ORDER BY a.uid"
    ))  # fmt: skip
    by_uid = {row[0]: row[1:] for row in rows}
    # Unverified in Mentis is the absence of a check, never a string saying so.
    assert by_uid["att-pay-2"] == ["acme/payments", "PAY-101", None, 1024, True, False]
    assert by_uid["att-pay-1"][2] == "failed" and by_uid["att-pay-3"][2] == "passed"
    assert all(values[3] == 1024 and values[4] for values in by_uid.values())
    # Another repository has a task with the same id: the task id alone names two tasks.
    assert sorted(values[0] for values in by_uid.values() if values[1] == "PAY-101") == [
        "acme/payments", "acme/payments", "acme/payments", "umbrella/ops-secrets",
    ]  # fmt: skip
    # No scope property anywhere: Mentis is scoped by repository, through relationships.
    assert _rows(seeded, neo4j_connection, (
        "MATCH (n:MentisFixture) WHERE n.layers IS NOT NULL RETURN n.uid UNION "
        "MATCH (:MentisFixture)-[n]->() WHERE n.layers IS NOT NULL RETURN n.uid"
    )) == []  # fmt: skip


def test_mentis_outdated_conclusion_keeps_its_fields_and_gains_outdated_at(
    seeded: Any, neo4j_connection: Neo4jConnection
) -> None:
    rows = _rows(seeded, neo4j_connection, (
        "MATCH (:MentisFixture:Task {uid: 'task-pay-101'})-[:HAS_CONCLUSION]->(c:Conclusion) "
        "RETURN c.uid, c.outdatedAt IS :: ZONED DATETIME NOT NULL, c.outdatedReason IS NOT NULL, "
        "c.inference IS NOT NULL, c.check, size(c.embedding) ORDER BY c.uid"
    ))  # fmt: skip
    assert rows == [["con-pay-1", True, True, True, "failed", 1024], ["con-pay-2", False, False, True, "passed", 1024]]


def test_mindreader_layers_on_entities_and_assertions_validto_catalog_and_one_untagged(
    seeded: Any, neo4j_connection: Neo4jConnection
) -> None:
    untagged = _rows(seeded, neo4j_connection, (
        "MATCH (n:MindreaderFixture) WHERE n.layers IS NULL RETURN n.uid AS uid UNION "
        "MATCH (:MindreaderFixture)-[n]->() WHERE n.layers IS NULL RETURN n.uid AS uid"
    ))  # fmt: skip
    assert sorted(r[0] for r in untagged) == ["asr-untagged", "ent-ghost"]
    retired = _rows(seeded, neo4j_connection, (
        "MATCH (n:MindreaderFixture) WHERE n.validTo IS NOT NULL RETURN n.uid AS uid UNION "
        "MATCH (:MindreaderFixture)-[n:ASSERTS]->() WHERE n.validTo IS NOT NULL RETURN n.uid AS uid"
    ))  # fmt: skip
    assert sorted(r[0] for r in retired) == ["asr-lives-paris", "fact-lang-old", "fact-lang-until"]
    # The catalog is global by construction: every Class and Property has layers = [].
    assert _rows(seeded, neo4j_connection, (
        "MATCH (c:MindreaderFixture) WHERE c:Class OR c:Property "
        "RETURN count(c), all(l IN collect(c.layers) WHERE l = [])"
    )) == [[5, True]]  # fmt: skip
    shapes = _rows(seeded, neo4j_connection, (
        "MATCH (:MindreaderFixture)-[r]->() RETURN type(r) AS t, count(*) ORDER BY t"
    ))  # fmt: skip
    assert dict((t, c) for t, c in shapes) == {
        "ABOUT": 9, "ASSERTS": 6, "CONTRADICTS": 1, "FROM_EPISODE": 3, "HAS_PROPERTY": 2, "INSTANCE_OF": 6,
        "SUPERSEDES": 1,
    }  # fmt: skip
    assert _rows(seeded, neo4j_connection, "MATCH (e:MindreaderFixture:Episode) RETURN count(e)") == [[2]]
