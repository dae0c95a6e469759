"""Fixtures for the scope tests (loaded with ``pytest_plugins``).

``scope_graph`` seeds ``tests/scope_fixture.cypher`` (marker label
:ScopeFixture, so it coexists with other tests' data) with the harness's write
driver. ``run_scoped`` runs a query the way layer 1 alone would let it reach
Neo4j: guard, then the scope rewrite, then a READ transaction with the
caller's layers as the reserved parameter. It returns serialized rows (the
sandbox's tagged JSON), so layer 2 (``filter_rows``) can be applied to them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from gateway import guard, scope
from gateway.domain import Principal
from gateway.policy import Policy, ToolName, load_policy

FIXTURE = Path(__file__).resolve().parent / "scope_fixture.cypher"
_STATEMENT_END = re.compile(r";[ \t]*(?:\r?\n|$)")


class Scoped(BaseModel):
    cypher: str
    columns: list[str]
    rows: list[list[Any]]


RunScoped = Callable[..., Scoped]


@pytest.fixture(scope="session")
def policy() -> Policy:
    return load_policy()


@pytest.fixture(scope="session")
def scope_graph(neo4j_driver: Any) -> Any:
    statements = [s.strip() for s in _STATEMENT_END.split(FIXTURE.read_text(encoding="utf-8")) if s.strip()]
    for statement in statements:
        neo4j_driver.execute_query(statement, database_="neo4j")
    records, _, _ = neo4j_driver.execute_query("MATCH (n:ScopeFixture) RETURN count(n) AS c", database_="neo4j")
    assert records[0]["c"] == 33, "the scope fixture graph was not seeded"
    return neo4j_driver


def ids(rows: Iterable[Any]) -> set[str]:
    """Every `id` property of every element anywhere in serialized rows, plus every string value."""
    found: set[str] = set()
    stack = list(rows)
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            if item.get("$type") in ("node", "relationship"):
                props = item.get("properties") or {}
                if isinstance(props.get("id"), str):
                    found.add(props["id"])
                stack.extend(props.values())
            else:
                stack.extend(item.get("nodes") or [])
                stack.extend(item.get("relationships") or [])
                stack.extend(v for k, v in item.items() if k not in ("nodes", "relationships", "$type"))
        elif isinstance(item, str):
            found.add(item)
    return found


def leaked_secrets(rows: Iterable[Any], marker: str) -> list[str]:
    return sorted(s for s in ids(rows) if marker in s)


@pytest.fixture()
def run_scoped(scope_graph: Any, policy: Policy) -> RunScoped:
    import neo4j

    from sandbox.serialize import to_json

    def run(
        cypher: str,
        layers: Iterable[str],
        *,
        tool: ToolName = "analyze",
        params: dict[str, Any] | None = None,
        rewrite: bool = True,
        use_policy: Policy | None = None,
    ) -> Scoped:
        pol = use_policy or policy
        params = dict(params or {})
        decision = guard.check(cypher, params, tool, pol)
        assert decision.allowed and decision.parsed is not None, f"guard refused: {decision.rule} {decision.reason}"
        text = scope.plan(decision.parsed, pol, tool, Principal(name="run-scoped")).cypher if rewrite else cypher
        params[pol.scope.scope_parameter] = sorted(layers)

        def work(tx: Any) -> tuple[list[str], list[list[Any]]]:
            result = tx.run(text, params)
            rows = [[to_json(v) for v in record.values()] for record in result]
            return list(result.keys()), rows

        with scope_graph.session(database="neo4j", default_access_mode=neo4j.READ_ACCESS) as session:
            columns, rows = session.execute_read(work)
        return Scoped(cypher=text, columns=columns, rows=rows)

    return run
