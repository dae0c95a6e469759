"""Every legitimate read in the guard corpus, rewritten for scope, still plans on the real Neo4j.

A span rewrite that misplaces one parenthesis produces Cypher Neo4j refuses; a
refusal at run time is fail-closed but breaks the agent. EXPLAIN (nothing runs)
on each rewritten corpus query catches that, and the share of legitimate reads
the rewrite refuses is pinned so a new refusal is a visible decision.
"""

from __future__ import annotations

from typing import Any

import pytest

from gateway import guard, scope
from gateway.cypher import ast
from gateway.domain import Principal
from gateway.errors import QueryRejected
from tests.support.corpus import allowed_cases, plans_on_this_server, policy_for

pytestmark = pytest.mark.neo4j2026  # runs on 5.26 and again on 2026.x

ANYONE = Principal(name="scope-corpus")


def test_rewritten_corpus_plans_on_neo4j(neo4j_driver: Any, neo4j_connection: Any) -> None:
    refused: list[tuple[int, str]] = []
    broken: list[tuple[int, str, str]] = []
    planned = 0
    with neo4j_driver.session(database=neo4j_connection.database) as session:
        for case in allowed_cases():
            policy = policy_for(case)
            decision = guard.check(case["query"], case["params"], case["tool"], policy)
            assert decision.allowed and decision.parsed is not None, (case["id"], decision.reason)
            try:
                cypher = scope.plan(decision.parsed, policy, case["tool"], ANYONE).cypher
            except QueryRejected as exc:
                assert exc.rule in ("scope.unsupported", "scope.element_id"), exc
                refused.append((case["id"], str(exc)))
                continue
            if any(True for _ in decision.parsed.find_all(ast.PatternPart)):
                assert f"${policy.scope.scope_parameter}" in cypher, cypher
            if "requires-apoc" in case["tags"] or not plans_on_this_server(case):
                continue  # no APOC on the managed Neo4j; Cypher 25 only on 2026.x
            # As the runner sends it: under the version the guard read it as.
            text = f"EXPLAIN CYPHER {decision.parsed.language} {cypher.lstrip()}"
            params = {**case["params"], policy.scope.scope_parameter: ["project-a"]}
            try:
                session.run(text, params).consume()
                planned += 1
            except Exception as exc:  # any refusal is a rewrite bug
                broken.append((case["id"], cypher[:300], str(exc)[:300]))
    assert not broken, broken
    assert planned >= 100
    # Legitimate reads the rewrite refuses (procedures, non-allow-listed functions, element ids): few, and deliberate.
    assert len(refused) <= 10, refused
