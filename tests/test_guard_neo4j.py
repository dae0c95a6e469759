"""The guard and the real Neo4j agree: every corpus query the guard allows plans as a read.

This catches parser/Neo4j disagreements (it is how the ``\\uXXXX`` pre-decoding
bypass was found). Queries using APOC functions are excluded by tag: APOC is not
installed on the test server; their count is asserted so nothing drops silently.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.test_guard_corpus import CORPUS

ALLOWED = [c for c in CORPUS if c["expect"] == "allow"]
NEEDS_APOC = [c for c in ALLOWED if "requires-apoc" in c["tags"]]


@pytest.mark.integration
def test_every_allowed_corpus_query_is_a_read_for_neo4j(neo4j_driver: Any, neo4j_connection: Any) -> None:
    assert len(NEEDS_APOC) == 2
    failures: list[str] = []
    checked = 0
    with neo4j_driver.session(database=neo4j_connection.database) as session:
        for case in ALLOWED:
            if case in NEEDS_APOC:
                continue
            try:
                summary = session.run("EXPLAIN " + case["query"], case["params"]).consume()
            except Exception as exc:  # the driver's error types; any one is a disagreement
                failures.append(f"{case['id']}: {type(exc).__name__}: {str(exc)[:200]}")
                continue
            checked += 1
            if summary.query_type != "r":
                failures.append(f"{case['id']}: query type {summary.query_type!r}")
    assert not failures, "\n".join(failures)
    assert checked == len(ALLOWED) - len(NEEDS_APOC)


@pytest.mark.integration
def test_unicode_escape_bypass_is_real_in_neo4j(neo4j_driver: Any, neo4j_connection: Any) -> None:
    """The attack the lexer refuses: Neo4j really sees a live CREATE after an empty string."""
    with neo4j_driver.session(database=neo4j_connection.database) as session:
        with pytest.raises(Exception, match="RETURN can only be used at the end"):
            session.run("EXPLAIN RETURN '\\u0027 CREATE (x) //' AS s").consume()
        summary = session.run("EXPLAIN MATCH (n) WHERE n.x = '\\u0027 SET n.pwned = true //' RETURN n").consume()
        assert summary.query_type in ("w", "rw")  # Neo4j plans a write: the SET is live code
