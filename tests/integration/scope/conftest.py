"""Fixtures for the scope tests.

``scope_graph`` seeds ``scope_fixture.cypher`` (marker label :ScopeFixture, so it
coexists with other tests' data) with the harness's write driver and removes it at
the end of the session. ``run_scoped`` runs a query the way layer 1 alone would let it
reach Neo4j: guard, then the scope rewrite, then a READ transaction with the caller's
layers as the reserved parameter. It returns serialized rows (the sandbox's tagged
JSON), so layer 2 (``filter_rows``) can be applied to them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway import guard, scope
from gateway.compose import compose
from gateway.config import GatewaySettings
from gateway.domain import Principal
from gateway.mnr.seed import statements
from gateway.policy import Policy, ToolName, load_policy
from gateway.service import Gateway
from tests.support.graph import labelled_graph
from tests.support.jobs import patient
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH
from tests.support.rows import RunScoped, Scoped

FIXTURE = Path(__file__).resolve().parent / "scope_fixture.cypher"
MARKER = "ScopeFixture"


@pytest.fixture(scope="module")
def gateway(gateway_settings: GatewaySettings, docker_client: Any) -> Iterator[Gateway]:
    """A Gateway composed as ``serve`` composes it (under ``gateway_settings``'s policy), patient: a test
    measures answers, so its calls wait for a container rather than hear ``busy``."""
    composed = compose(gateway_settings, policy=patient(load_policy(gateway_settings.policy_file)), audit=False)
    assert composed.problems == [] and composed.runner is not None, composed.problems
    assert composed.runner.wait_ready(90), "the warm pool did not fill within 90 s"
    yield composed.gateway
    composed.close()


@pytest.fixture(scope="session")
def policy() -> Policy:
    return load_policy(ALL_PROPERTIES_POLICY_PATH)


@pytest.fixture(scope="session")
def scope_graph(neo4j_driver: Any) -> Iterator[Any]:
    seed = statements(FIXTURE.read_text(encoding="utf-8"))
    with labelled_graph(neo4j_driver, MARKER, seed, database="neo4j"):
        records, _, _ = neo4j_driver.execute_query(f"MATCH (n:{MARKER}) RETURN count(n) AS c", database_="neo4j")
        assert records[0]["c"] == 33, "the scope fixture graph was not seeded"
        yield neo4j_driver


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
