"""Cypher 25 against the real Neo4j 2026.x: the guard never misreads it.

* every Cypher 25 write the guard refuses is a write for Neo4j too (the attacks are real);
* a differential fuzz: Cypher 25 reads mutated with dangerous fragments (Cypher 5's and
  Cypher 25's own: NEXT, WHEN … THEN, FOR, LET, dynamic labels in SET/REMOVE), read as
  Cypher 25; whatever the guard allows, Neo4j plans as a read or refuses;
* the version the guard read is the one the query runs under: the same text answers as Cypher 5
  through a gateway whose policy reads Cypher 5, even when the database's default language is
  Cypher 25.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.compose import compose
from gateway.config import GatewaySettings
from gateway.domain import Principal
from gateway.guard import check
from gateway.policy import load_policy
from gateway.service import Gateway
from tests.integration.guard.test_guard_neo4j import _BITS
from tests.support.corpus import load_corpus
from tests.support.jobs import patient
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH

pytestmark = pytest.mark.requires_2026

POLICY = load_policy(ALL_PROPERTIES_POLICY_PATH)
CYPHER25_READS = [
    c["query"] for c in load_corpus() if c["expect"] == "allow" and "cypher25" in c["tags"] and not c["params"]
]
CYPHER25_BITS = [
    " NEXT CREATE (z:P) RETURN z ",
    " NEXT ",
    " WHEN true THEN CREATE (w) ",
    " ELSE ",
    " THEN ",
    " FOR i IN [1] CREATE (f) ",
    " FOR i IN [1] ",
    " LET v = 1 ",
    " FILTER true ",
    " SET n:$('X') ",
    " REMOVE n:$any(['X']) ",
    " SET n[$k] = 1 ",
    " CALL (n) { WHEN true THEN SET n.x = 1 } ",
    " IN CONCURRENT TRANSACTIONS ",
    " INSERT (q:Q) ",
    " $(",
    "$any(",
    " IS LABELED ",
    " SEARCH n IN (VECTOR INDEX i FOR [1.0] LIMIT 1) ",
    " GROUP BY ",
    " { ",
    "CYPHER 5 ",
    "CYPHER 25 ",
]


def test_cypher_25_writes_the_guard_refuses_are_writes_for_neo4j(neo4j_driver: Any) -> None:
    attacks = [c for c in load_corpus() if "cypher25" in c["tags"] and c["rule"] == "write.clause"]
    assert len(attacks) >= 5
    with neo4j_driver.session(database="neo4j") as session:
        for case in attacks:
            assert not check(case["query"], {}, "analyze", POLICY).allowed
            summary = session.run("EXPLAIN " + case["query"], {"l": "X"}).consume()
            assert summary.query_type in ("w", "rw"), case["query"]


def test_differential_fuzz_of_cypher_25(neo4j_driver: Any) -> None:
    rng = random.Random(20261203)
    bits = [*_BITS, *CYPHER25_BITS]
    assert len(CYPHER25_READS) >= 15
    allowed = 0
    with neo4j_driver.session(database="neo4j") as session:
        for _ in range(12_000):
            query = rng.choice(CYPHER25_READS)
            for _ in range(rng.randint(1, 3)):
                pos = rng.randint(len("CYPHER 25 "), len(query))
                query = query[:pos] + rng.choice(bits) + query[pos + rng.choice([0, 0, 0, 1, 2, 5]) :]
            decision = check(query, {"k": "x"}, "analyze", POLICY)
            if not decision.allowed:
                continue
            allowed += 1
            assert decision.parsed is not None and decision.parsed.language == "25"
            try:
                query_type = session.run(f"EXPLAIN CYPHER 25 {query}", {"k": "x"}).consume().query_type
            except Exception:  # Neo4j refusing the query is safe
                query_type = "refused"
            assert query_type in ("r", "refused"), f"guard allowed a {query_type!r} query: {query!r}"
    assert allowed > 200  # the fuzz really explored allowed space


# The same text is valid in both languages and answers differently: Cypher 5 compares 'a' with
# the boolean `is :: STRING`, Cypher 25 tests whether 'a' is a STRING.
TWO_READINGS = "WITH 1 AS is RETURN CASE 'a' WHEN is :: STRING THEN 1 ELSE 0 END AS c"


@pytest.fixture(scope="module")
def gateway_pair(gateway_settings: GatewaySettings, docker_client: Any) -> Iterator[tuple[Gateway, Gateway]]:
    composed = compose(gateway_settings, policy=patient(load_policy(gateway_settings.policy_file)), audit=False)
    assert composed.problems == [] and composed.runner is not None, composed.problems
    assert composed.runner.wait_ready(90), "the warm pool did not fill within 90 s"
    five = composed.gateway
    policy25 = POLICY.model_copy(update={"cypher": POLICY.cypher.model_copy(update={"default_version": "25"})})
    twenty_five = Gateway(policy25, composed.runner, database=five.database)
    yield five, twenty_five
    composed.close()


@pytest.fixture()
def database_default_cypher_25(neo4j_driver: Any) -> Iterator[None]:
    neo4j_driver.execute_query("ALTER DATABASE neo4j SET DEFAULT LANGUAGE CYPHER 25", database_="system")
    try:
        yield
    finally:
        neo4j_driver.execute_query("ALTER DATABASE neo4j SET DEFAULT LANGUAGE CYPHER 5", database_="system")


def test_the_query_runs_under_the_version_the_guard_read(
    gateway_pair: tuple[Gateway, Gateway], neo4j_driver: Any, database_default_cypher_25: None
) -> None:
    five, twenty_five = gateway_pair
    agent = Principal(name="cypher-version", scope=frozenset())
    # The database now reads unprefixed queries as Cypher 25 ...
    direct, _, _ = neo4j_driver.execute_query(TWO_READINGS, database_="neo4j")
    assert direct[0]["c"] == 1
    # ... but a gateway whose policy reads Cypher 5 runs the text as Cypher 5, as its guard read it.
    assert five.run("analyze", TWO_READINGS, {}, agent).rows == [[0]]
    assert twenty_five.run("analyze", TWO_READINGS, {}, agent).rows == [[1]]
    assert five.run("analyze", "CYPHER 25 " + TWO_READINGS, {}, agent).rows == [[1]]
