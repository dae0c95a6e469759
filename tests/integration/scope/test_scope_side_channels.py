"""What an answer says about hidden elements besides its rows, through the product path.

``gateway.service.Gateway`` + a real ``SandboxRunner`` + the real Neo4j, every layer on.
A principal in ``project-a`` sees ``v1`` and ``v2`` and the ``LINK`` between them; a label, a
relationship type and a property key exist only on hidden elements. Each channel has a
control that shows it is real on this server (the scope rewrite switched off, or the harness's
own driver), then the answer under scope that must not carry it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gateway.domain import LayerSwitches, Principal, ToolResult
from gateway.policy import load_policy
from gateway.runner import SandboxRunner
from gateway.service import Gateway
from tests.support.graph import labelled_graph, unique_label

POLICY = load_policy()
A = Principal(name="alice", scope=frozenset({"project-a"}))


@pytest.fixture(scope="module")
def L(neo4j_driver: Any, neo4j_connection: Any) -> Iterator[str]:
    """The graph under a run-unique label; names only hidden elements carry end in the label."""
    label = unique_label("SideCh")
    seed = f"""
    CREATE (v1:{label} {{name: 'v1', layers: ['project-a']}})
    CREATE (h1:{label}:HiddenOnly{label} {{name: 'hidden-1', layers: ['project-b'], hiddenKey{label}: 1}})
    CREATE (v2:{label} {{name: 'v2', layers: []}})
    CREATE (h2:{label} {{name: 'hidden-2', layers: ['project-b']}})
    CREATE (v1)-[:LINK {{name: 'v1-v2', layers: []}}]->(v2)
    CREATE (v1)-[:HIDDEN{label} {{name: 'hidden-edge', layers: ['project-b']}}]->(v2)
    CREATE (v2)-[:LINK {{name: 'hidden-link', layers: ['project-b']}}]->(h2)
    """
    with labelled_graph(neo4j_driver, label, [seed], database=neo4j_connection.database):
        yield label


@pytest.fixture(scope="module")
def gw(sandbox_runner: SandboxRunner) -> Gateway:
    return Gateway(POLICY, sandbox_runner)


@pytest.fixture(scope="module")
def unscoped(sandbox_runner: SandboxRunner) -> Gateway:
    """The controls: the same gateway with the scope rewrite off (Neo4j's answers pass through whole)."""
    return Gateway(POLICY, sandbox_runner, layers=LayerSwitches(scope_rewrite=False))


def statuses(result: ToolResult) -> list[str | None]:
    return [n.gql_status for n in result.notifications]


# --- notifications -------------------------------------------------------------------------------
#
# Neo4j sends UnknownLabelWarning (01N50), UnknownRelationshipTypeWarning (01N51) and
# UnknownPropertyKeyWarning (01N52) only when no element in the whole database carries the name:
# asking for a name that only hidden elements carry answers the same rows without the warning.

UNKNOWN_NAMES = {
    # kind: (query template, the hidden-only name, its GQL status when the name is unknown)
    "label": ("MATCH (n:{name}) RETURN count(n) AS c", "HiddenOnly{L}", "01N50"),
    "relationship type": ("MATCH (:{L})-[r:{name}]->() RETURN count(r) AS c", "HIDDEN{L}", "01N51"),
    "property key": ("MATCH (n:{L}) RETURN count(n.{name}) AS c", "hiddenKey{L}", "01N52"),
}


@pytest.mark.parametrize("kind", list(UNKNOWN_NAMES))
def test_notifications_do_not_tell_a_hidden_only_name_from_an_unknown_one(
    gw: Gateway, unscoped: Gateway, L: str, kind: str
) -> None:
    template, hidden_name, status = UNKNOWN_NAMES[kind]
    hidden_only = template.format(L=L, name=hidden_name.format(L=L))
    unknown = template.format(L=L, name=f"Never{L}")
    # Control: Neo4j's own notifications tell the two apart.
    assert statuses(unscoped.run("analyze", unknown, {}, A)) == [status]
    assert statuses(unscoped.run("analyze", hidden_only, {}, A)) == []
    hidden_answer, unknown_answer = gw.run("analyze", hidden_only, {}, A), gw.run("analyze", unknown, {}, A)
    assert hidden_answer.rows == unknown_answer.rows == [[0]]
    assert hidden_answer.notifications == unknown_answer.notifications == []


@pytest.mark.parametrize(
    ("query", "status"),
    [
        # Deprecations: the query uses a feature Neo4j will drop.
        ("MATCH (n:{L}) CALL {{ WITH n RETURN n.name AS m }} RETURN count(m) AS c", "01N00"),
        ("MATCH (:{L})-[:LINK|:HIDDEN{L}]->(m) RETURN count(m) AS c", "01N01"),
        # What the query text alone says can never match, or shadows.
        ("MATCH (:{L})-[:LINK&NEXT]->(m) RETURN count(m) AS c", "01N61"),
        ("MATCH (:{L})-[r]->()-[r]->(m) RETURN count(m) AS c", "01N63"),
        ("MATCH (n:{L}) CALL {{ MATCH (n:{L}) RETURN n.name AS m }} RETURN count(m) AS c", "03N60"),
    ],
)
def test_notifications_the_query_text_alone_decides_still_reach_the_agent(
    gw: Gateway, L: str, query: str, status: str
) -> None:
    result = gw.run("analyze", query.format(L=L), {}, A)
    assert status in statuses(result), result.notifications
    kept = next(n for n in result.notifications if n.gql_status == status)
    assert kept.code and kept.description, kept  # Neo4j's code and explanation come with it
