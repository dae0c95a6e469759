"""The guard and the real Neo4j agree: every corpus query the guard allows plans as a read.

This catches parser/Neo4j disagreements (it is how the ``\\uXXXX`` pre-decoding
bypass was found). Queries using APOC functions are excluded by tag: APOC is not
installed on the test server; their count is asserted so nothing drops silently.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.corpus import load_corpus, plans_on_this_server
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH

pytestmark = pytest.mark.neo4j2026  # runs on 5.26 and again on 2026.x

CORPUS = load_corpus()

ALLOWED = [c for c in CORPUS if c["expect"] == "allow"]
NEEDS_APOC = [c for c in ALLOWED if "requires-apoc" in c["tags"]]
CYPHER25 = [c for c in ALLOWED if "cypher25" in c["tags"]]


def test_every_allowed_corpus_query_is_a_read_for_neo4j(neo4j_driver: Any, neo4j_connection: Any) -> None:
    assert len(NEEDS_APOC) == 2
    assert len(CYPHER25) >= 20  # Cypher 25 reads: checked on 2026.x (Neo4j 5.26 refuses CYPHER 25)
    expected = [c for c in ALLOWED if c not in NEEDS_APOC and plans_on_this_server(c)]
    failures: list[str] = []
    checked = 0
    with neo4j_driver.session(database=neo4j_connection.database) as session:
        for case in expected:
            try:
                summary = session.run("EXPLAIN " + case["query"], case["params"]).consume()
            except Exception as exc:  # the driver's error types; any one is a disagreement
                failures.append(f"{case['id']}: {type(exc).__name__}: {str(exc)[:200]}")
                continue
            checked += 1
            if summary.query_type != "r":
                failures.append(f"{case['id']}: query type {summary.query_type!r}")
    assert not failures, "\n".join(failures)
    assert checked == len(expected)


def test_unicode_escape_bypass_is_real_in_neo4j(neo4j_driver: Any, neo4j_connection: Any) -> None:
    """The attack the lexer refuses: Neo4j really sees a live CREATE after an empty string."""
    with neo4j_driver.session(database=neo4j_connection.database) as session:
        with pytest.raises(Exception, match="RETURN can only be used at the end"):
            session.run("EXPLAIN RETURN '\\u0027 CREATE (x) //' AS s").consume()
        summary = session.run("EXPLAIN MATCH (n) WHERE n.x = '\\u0027 SET n.pwned = true //' RETURN n").consume()
        assert summary.query_type in ("w", "rw")  # Neo4j plans a write: the SET is live code


_BITS = [
    " CREATE (x:P) ",
    " SET n.x = 1 ",
    " DELETE n ",
    "'",
    '"',
    "`",
    "/*",
    "*/",
    "//",
    "\n",
    "\r",
    "\\",
    "\\'",
    "\\\\",
    "\\u0027",
    "\\u000a",
    "\\u002a",
    "}",
    "{",
    ")",
    "(",
    "]",
    "[",
    ";",
    " UNION ",
    " CALL { CREATE (y) } ",
    " MERGE (z) ",
    " FOREACH (i IN [1] | CREATE ()) ",
    "$",
    ":",
    " LOAD CSV FROM 'file:///x' AS l ",
    " WITH * ",
    " RETURN 1 AS one ",
    "\u00a0",
    "\u2028",
    "\x0b",
    "\u0085",
    "\t",
    " INSERT (q) ",
    " DETACH DELETE n ",
    " CALL db.createLabel('X') ",
    " REMOVE n.x ",
    "-->",
    "<--",
    " OPTIONAL ",
    " USE system ",
    "*",
    "|",
]


def test_differential_fuzz_nothing_the_guard_allows_plans_as_a_write(neo4j_driver: Any, neo4j_connection: Any) -> None:
    """Mutate corpus reads with dangerous fragments: whatever the guard allows, Neo4j plans as a read or refuses."""
    import random

    from gateway.guard import check
    from gateway.policy import load_policy

    policy = load_policy(ALL_PROPERTIES_POLICY_PATH)
    rng = random.Random(20261202)
    reads = [
        c["query"]
        for c in ALLOWED
        if len(c["query"]) < 400
        and not c["params"]
        and c["policy"] == "default-all-properties"
        and "cypher25" not in c["tags"]
    ]
    allowed = 0
    with neo4j_driver.session(database=neo4j_connection.database) as session:
        for _ in range(20_000):
            query = rng.choice(reads)
            for _ in range(rng.randint(1, 3)):
                pos = rng.randint(0, len(query))
                query = query[:pos] + rng.choice(_BITS) + query[pos + rng.choice([0, 0, 0, 1, 2, 5]) :]
            if not check(query, {}, "analyze", policy).allowed:
                continue
            allowed += 1
            try:
                query_type = session.run("EXPLAIN " + query).consume().query_type
            except Exception:  # Neo4j refusing the query is safe
                query_type = "refused"
            assert query_type in ("r", "refused"), f"guard allowed a {query_type!r} query: {query!r}"
    assert allowed > 500  # the fuzz really explored allowed space
