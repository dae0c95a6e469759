"""What an answer says about hidden elements besides its rows, through the product path.

``gateway.service.Gateway`` + a real ``SandboxRunner`` + the real Neo4j, every layer on.
A principal in ``project-a`` sees ``v1`` and ``v2`` and the ``LINK`` between them; a label, a
relationship type and a property key exist only on hidden elements. Each channel has a
control that shows it is real on this server (the scope rewrite switched off, or the harness's
own driver), then the answer under scope that must not carry it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.domain import LayerSwitches, Principal, ToolResult
from gateway.errors import QueryRejected
from gateway.policy import load_policy
from gateway.runner import SandboxRunner
from gateway.service import Gateway
from tests.support.graph import labelled_graph, unique_label
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH

POLICY = load_policy(ALL_PROPERTIES_POLICY_PATH)
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


# --- element ids -------------------------------------------------------------------------------
#
# Neo4j allocates ids across the whole database: between the ids of two visible elements sit
# the ids of the hidden ones created in between (and of deleted ones, whose ids are reused).


@pytest.mark.parametrize(
    "query",
    [
        "MATCH (n:{L}) RETURN id(n) AS i",
        "MATCH (n:{L}) RETURN elementId(n) AS i",
        "MATCH (n:{L}) RETURN n.name AS name ORDER BY elementId(n)",
        "MATCH (n:{L}) WHERE id(n) >= 0 RETURN count(n) AS c",
        "MATCH (:{L})-[r]->() RETURN collect(id(r)) AS ids",
    ],
)
def test_id_functions_are_refused(gw: Gateway, unscoped: Gateway, L: str, query: str) -> None:
    cypher = query.format(L=L)
    assert unscoped.run("analyze", cypher, {}, A).rows  # control: without the rewrite they run
    with pytest.raises(QueryRejected) as refused:
        gw.run("analyze", cypher, {}, A)
    assert refused.value.rule == "scope.element_id", refused.value.reason


def test_answers_carry_tokens_not_neo4j_element_ids(gw: Gateway, neo4j_driver: Any, L: str) -> None:
    records, _, _ = neo4j_driver.execute_query(
        f"MATCH (n:{L}) RETURN elementId(n) AS id UNION ALL MATCH (:{L})-[r]->() RETURN elementId(r) AS id"
    )
    raw_ids = [str(record["id"]) for record in records]
    cypher = f"MATCH p = (a:{L})-[r]->(b) RETURN a, r, b, p, [b, a] AS both, {{start: startNode(r)}} AS m"
    result = gw.run("analyze", cypher, {}, A)
    assert len(result.rows) == 1, result.rows  # the visible LINK v1 -> v2, nothing else
    text = json.dumps(result.rows)
    assert [element_id for element_id in raw_ids if element_id in text] == []
    a, r, b, p, both, m = result.rows[0]
    assert (a["properties"]["name"], b["properties"]["name"]) == ("v1", "v2")
    assert (a["elementId"], r["elementId"], b["elementId"]) == ("n1", "r1", "n2")
    assert (r["startElementId"], r["endElementId"]) == ("n1", "n2")  # the same element, the same token
    assert [n["elementId"] for n in p["nodes"]] == ["n1", "n2"] and p["relationships"][0]["elementId"] == "r1"
    assert [n["elementId"] for n in both] == ["n2", "n1"] and m["start"]["elementId"] == "n1"


# --- the same family: counts, order and limits see visible elements only -------------------------


@pytest.mark.parametrize(
    ("query", "visible", "everything"),
    [
        # The shapes Neo4j answers from its count store, which counts every element.
        ("MATCH (n:{L}) RETURN count(n) AS c", 2, 4),
        ("MATCH (n:{L}) RETURN count(*) AS c", 2, 4),
        ("MATCH ()-[r:HIDDEN{L}]->() RETURN count(r) AS c", 0, 1),
        ("MATCH (:{L})-[r:LINK]->() RETURN count(r) AS c", 1, 2),
        ("MATCH (n:HiddenOnly{L}) RETURN count(n) > 0 AS c", False, True),
    ],
)
def test_count_store_shortcuts_count_visible_elements_only(
    gw: Gateway, unscoped: Gateway, L: str, query: str, visible: object, everything: object
) -> None:
    cypher = query.format(L=L)
    assert unscoped.run("analyze", cypher, {}, A).rows == [[everything]]  # control
    assert gw.run("analyze", cypher, {}, A).rows == [[visible]]


@pytest.mark.parametrize(
    ("query", "visible", "everything"),
    [
        # LIMIT probes: 'hidden-1' sorts before 'v1', so a limit taken before the filter shows it.
        ("MATCH (n:{L}) RETURN n.name AS name ORDER BY name LIMIT 1", [["v1"]], [["hidden-1"]]),
        (
            "MATCH (n:{L}) WITH n ORDER BY n.name LIMIT 2 RETURN collect(n.name) AS names",
            [[["v1", "v2"]]],
            [[["hidden-1", "hidden-2"]]],
        ),
        ("MATCH (n:{L}) RETURN n.name AS name ORDER BY name DESC SKIP 1 LIMIT 2", [["v1"]], [["v1"], ["hidden-2"]]),
        # ORDER BY a value that counts hidden neighbours unscoped: v2 has three, v1 two; scoped one each.
        (
            "MATCH (n:{L}) WHERE n.name STARTS WITH 'v' RETURN n.name AS name ORDER BY COUNT {{ (n)--() }} DESC, name",
            [["v1"], ["v2"]],
            [["v2"], ["v1"]],
        ),
    ],
)
def test_order_and_limit_apply_to_visible_elements_only(
    gw: Gateway, unscoped: Gateway, L: str, query: str, visible: list[list[Any]], everything: list[list[Any]]
) -> None:
    cypher = query.format(L=L)
    assert unscoped.run("analyze", cypher, {}, A).rows == everything  # control
    assert gw.run("analyze", cypher, {}, A).rows == visible
