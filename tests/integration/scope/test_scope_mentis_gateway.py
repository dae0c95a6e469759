"""Reads of the Mentis fixture under policies/mentis.yaml (derived rules) through ``Gateway``, a real
sandbox and Neo4j, answered as plain Neo4j answers them on the graph the caller can see."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gateway.connection import Neo4jConnection
from gateway.domain import Principal
from gateway.mnr import seed
from gateway.policy import POLICIES_DIR, Policy
from gateway.runner import SandboxRunner
from gateway.service import Gateway

pytestmark = pytest.mark.neo4j2026

# The shipped policy with a longer time limit: under derived rules Neo4j plans the scoped text for
# up to seconds on a loaded two-core machine (docs/benchmarks.md); these tests are about the answer.
_RAW = yaml.safe_load((POLICIES_DIR / "mentis.yaml").read_text(encoding="utf-8"))
_RAW["tools"]["analyze"]["limits"] = {**_RAW["tools"]["analyze"]["limits"], "timeout_seconds": 30}
MENTIS_PATIENT = Policy.model_validate(_RAW)
PAYMENTS = Principal(name="payments", attributes={"repositories": frozenset({"acme/payments"})})

# The shortest paths from the payments repository to each of its tasks (one hop each); the
# agent's condition over the whole path waits for the path's visibility, which reads derived
# rules (EXISTS subqueries) inside the shortestPath's WHERE.
SHORTEST_WITH_PATH_CONDITION = (
    "MATCH p = shortestPath((a:Repository {name: 'acme/payments'})-[*1..3]-(b:Task)) "
    "WHERE all(z IN nodes(p) WHERE z.check IS NULL) RETURN count(*)"
)

# The smallest form of the same text that Neo4j 5.26 fails to run (docs/neo4j-facts.md): one
# path predicate holding an EXISTS, written both inside a CASE condition and as a conjunct.
NEO4J_SHORTEST_PATH_REPEATED_EXISTS = (
    "MATCH p = shortestPath((a:Repository:MentisFixture)-[*1..3]-(b:Task)) "
    "WHERE CASE WHEN all(x IN nodes(p) WHERE NOT x:Task OR EXISTS { MATCH (x)<-[:HAS_TASK]-(:Repository) }) "
    "THEN true ELSE false END "
    "AND all(x IN nodes(p) WHERE NOT x:Task OR EXISTS { MATCH (x)<-[:HAS_TASK]-(:Repository) }) "
    "RETURN count(*)"
)


@pytest.fixture(scope="module")
def mentis(neo4j_connection: Neo4jConnection) -> None:
    assert seed.seed_builtin(neo4j_connection, "mentis") >= 5


def test_shortest_path_with_a_condition_on_the_path_answers_like_the_visible_graph(
    sandbox_runner: SandboxRunner, mentis: None
) -> None:
    result = Gateway(MENTIS_PATIENT, sandbox_runner).run("analyze", SHORTEST_WITH_PATH_CONDITION, {}, PAYMENTS)
    assert result.rows == [[2]]


def test_neo4j_fails_a_shortest_path_whose_where_repeats_a_path_predicate_with_exists(
    neo4j_driver: Any, neo4j_connection: Neo4jConnection, mentis: None
) -> None:
    """The Neo4j fact the rewrite works around: it never writes a shortestPath's path predicate twice."""
    import neo4j

    with neo4j_driver.session(database=neo4j_connection.database) as session:
        try:
            rows = [record.values() for record in session.run(NEO4J_SHORTEST_PATH_REPEATED_EXISTS)]
        except neo4j.exceptions.Neo4jError as exc:
            assert "out of bounds" in str(exc.message) or "ref slot" in str(exc.message)
        else:
            pytest.fail(f"Neo4j runs the repeated path predicate ({rows}): the workaround may go")
