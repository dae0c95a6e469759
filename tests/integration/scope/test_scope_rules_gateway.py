"""Visibility rules per label and type (docs/decisions/0018) through ``Gateway``, a real sandbox
and Neo4j: a Mentis-shaped graph (Repository -HAS_TASK-> Task -HAS_ATTEMPT-> Attempt, scoped
by the caller's repositories), catalog nodes everyone sees, bookkeeping nobody does, and
Mindreader-style layered facts retired by ``validTo``. Every must-not-retrieve case holds with
both layers, with the rewrite alone, and with the rewrite off (layer 2 alone).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.domain import LayerSwitches, Principal, ToolResult
from gateway.errors import QueryRejected
from gateway.policy import load_policy
from gateway.runner import SandboxRunner
from gateway.service import Gateway

pytestmark = pytest.mark.neo4j2026

POLICY = load_policy(Path(__file__).resolve().parents[2] / "policies" / "rules.yaml")
ALICE = Principal(name="alice", scope=frozenset({"team"}), attributes={"repositories": frozenset({"repo-a"})})
NOBODY = Principal(name="nobody")
SWITCHES = [{}, {"scope_rewrite": False}, {"result_check": False}]
SWITCH_IDS = ["both", "layer2-only", "layer1-only"]


@pytest.fixture(scope="module")
def marker(neo4j_driver: Any, neo4j_connection: Any) -> Iterator[str]:
    name = f"Rules{uuid.uuid4().hex[:8]}"
    m = name
    with neo4j_driver.session(database=neo4j_connection.database) as session:
        session.run(
            f"CREATE (ra:Repository:{m} {{name: 'repo-a'}}), (rb:Repository:{m} {{name: 'repo-b'}}), "
            f"(ta1:Task:{m} {{name: 'task-a1', id: 't1'}}), (ta2:Task:{m} {{name: 'task-a2', id: 't2'}}), "
            f"(tb1:Task:{m} {{name: 'task-b1', id: 't1'}}), "
            f"(a11:Attempt:{m} {{name: 'attempt-a1-1'}}), (a12:Attempt:{m} {{name: 'attempt-a1-2'}}), "
            f"(a21:Attempt:{m} {{name: 'attempt-a2-1'}}), (b11:Attempt:{m} {{name: 'attempt-b1-1'}}), "
            f"(:Attempt:{m} {{name: 'attempt-orphan'}}), "
            f"(c:Catalog:{m} {{name: 'catalog'}}), (:Catalog:Bookkeeping:{m} {{name: 'bookkeeping'}}), "
            # Public by one label, another repository's by the other: an extra label never widens.
            f"(:Catalog:Repository:{m} {{name: 'repo-b'}}), "
            f"(:Fact:{m} {{name: 'fact-live', layers: ['team']}}), "
            f"(:Fact:{m} {{name: 'fact-retired', layers: ['team'], validTo: '2024-01-01'}}), "
            f"(:Fact:{m} {{name: 'fact-other', layers: ['other']}}), "
            f"(:{m} {{name: 'plain-global', layers: []}}), (:{m} {{name: 'plain-other', layers: ['other']}}), "
            f"(:{m} {{name: 'plain-untagged'}}), "
            "(ra)-[:HAS_TASK]->(ta1), (ra)-[:HAS_TASK]->(ta2), (rb)-[:HAS_TASK]->(tb1), "
            "(ta1)-[:HAS_ATTEMPT]->(a11), (ta1)-[:HAS_ATTEMPT]->(a12), (ta2)-[:HAS_ATTEMPT]->(a21), "
            "(tb1)-[:HAS_ATTEMPT]->(b11), (ta1)-[:USES]->(c), (tb1)-[:USES]->(c)"
        ).consume()
    yield m
    with neo4j_driver.session(database=neo4j_connection.database) as session:
        session.run(f"MATCH (n:{m}) DETACH DELETE n").consume()


def gateway(runner: SandboxRunner, switches: dict[str, bool]) -> Gateway:
    return Gateway(POLICY, runner, layers=LayerSwitches(**switches))


def names(result: ToolResult, column: int = 0) -> list[str]:
    return sorted(row[column]["properties"]["name"] for row in result.rows)


VISIBLE_TO_ALICE = [
    "attempt-a1-1", "attempt-a1-2", "attempt-a2-1", "catalog", "fact-live", "plain-global", "repo-a",
    "task-a1", "task-a2",
]  # fmt: skip


@pytest.mark.parametrize("switches", SWITCHES, ids=SWITCH_IDS)
def test_every_rule_kind_on_analyze(sandbox_runner: SandboxRunner, marker: str, switches: dict[str, bool]) -> None:
    result = gateway(sandbox_runner, switches).run("analyze", f"MATCH (n:{marker}) RETURN n", {}, ALICE)
    # Equality (repo-b), derived through a hidden anchor (task-b1, its attempt, the orphan),
    # denied beside public (bookkeeping), membership (fact-other, plain-other, plain-untagged)
    # and analyze's validTo filter (fact-retired) all hide.
    assert names(result) == VISIBLE_TO_ALICE


# Nodes whose every label's rule holds on its own, hidden all the same: (the extra label, what makes
# them, the query's condition, the patterns that must not find them). ``{marker}`` is the graph's
# label, ``{extra}`` the case's own, ``{m}`` in a pattern the extra label.
MULTI_LABEL_NODES = {
    # Each walk holds (its task and its repository are alice's): two parents claimed.
    "two derived labels": (
        "Two",
        "MATCH (ra:Repository:{marker} {{name: 'repo-a'}})-[:HAS_TASK]->(ta1:Task:{marker} {{name: 'task-a1'}}) "
        "CREATE (ra)-[:HAS_TASK]->(two:Task:Attempt:{extra} {{name: 'task-and-attempt'}})<-[:HAS_ATTEMPT]-(ta1)",
        " WHERE n.name = 'task-and-attempt'",
        ["(n:Task:{m})", "(n:Attempt:{m})", "(n:{m})", "(n:Task:Attempt:{m})"],
    ),
    # Alice's repository name, and a task of alice's repository: a node that belongs to one parent
    # and is also something else.
    "a derived and another named label": (
        "Both",
        "MATCH (ra:Repository:{marker} {{name: 'repo-a'}}) "
        "CREATE (ra)-[:HAS_TASK]->(:Repository:Task:{extra} {{name: 'repo-a', id: 't9'}})",
        "",
        ["(n:Repository:{m})", "(n:Task:{m})", "(n:{m})", "(:Repository {{name: 'repo-a'}})-[:HAS_TASK]->(n:{m})"],
    ),
}


@pytest.mark.parametrize("switches", SWITCHES, ids=SWITCH_IDS)
@pytest.mark.parametrize(
    ("case", "pattern"), [(case, pattern) for case, (*_, patterns) in MULTI_LABEL_NODES.items() for pattern in patterns]
)
def test_a_node_with_a_derived_and_another_named_label_is_hidden_whatever_the_pattern_states(
    sandbox_runner: SandboxRunner,
    marker: str,
    case: str,
    pattern: str,
    switches: dict[str, bool],
    neo4j_driver: Any,
    neo4j_connection: Any,
) -> None:
    suffix, create, condition, _ = MULTI_LABEL_NODES[case]
    extra = f"{marker}{suffix}"
    cypher = f"MATCH {pattern.format(m=extra)}{condition} RETURN n"
    with neo4j_driver.session(database=neo4j_connection.database) as session:
        session.run(create.format(marker=marker, extra=extra)).consume()
        try:
            # The raw query finds it: an empty answer is the gateway hiding it.
            assert session.run(cypher.replace("RETURN n", "RETURN count(n)")).single()[0] == 1
            result = gateway(sandbox_runner, switches).run("analyze", cypher, {}, ALICE)
        finally:
            session.run(f"MATCH (n:{extra}) DETACH DELETE n").consume()
    assert result.rows == []


@pytest.mark.parametrize("switches", SWITCHES, ids=SWITCH_IDS)
def test_a_caller_without_attributes_sees_only_public_and_global(
    sandbox_runner: SandboxRunner, marker: str, switches: dict[str, bool]
) -> None:
    result = gateway(sandbox_runner, switches).run("analyze", f"MATCH (n:{marker}) RETURN n", {}, NOBODY)
    assert names(result) == ["catalog", "plain-global"]


@pytest.mark.parametrize("switches", SWITCHES, ids=SWITCH_IDS)
def test_relationships_follow_their_type_rule_and_their_endpoints(
    sandbox_runner: SandboxRunner, marker: str, switches: dict[str, bool]
) -> None:
    cypher = f"MATCH (s:{marker})-[r]->(e:{marker}) RETURN s, type(r), e, r"
    result = gateway(sandbox_runner, switches).run("analyze", cypher, {}, ALICE)
    seen = sorted((row[0]["properties"]["name"], row[1], row[2]["properties"]["name"]) for row in result.rows)
    assert seen == [
        ("repo-a", "HAS_TASK", "task-a1"),
        ("repo-a", "HAS_TASK", "task-a2"),
        ("task-a1", "HAS_ATTEMPT", "attempt-a1-1"),
        ("task-a1", "HAS_ATTEMPT", "attempt-a1-2"),
        ("task-a1", "USES", "catalog"),
        ("task-a2", "HAS_ATTEMPT", "attempt-a2-1"),
    ]


@pytest.mark.parametrize("switches", SWITCHES, ids=SWITCH_IDS)
def test_a_path_through_a_hidden_anchor_is_hidden(
    sandbox_runner: SandboxRunner, marker: str, switches: dict[str, bool]
) -> None:
    cypher = f"MATCH p = (:Catalog:{marker})<-[:USES]-(:Task)-[:HAS_ATTEMPT]->(:Attempt) RETURN p"
    result = gateway(sandbox_runner, switches).run("analyze", cypher, {}, ALICE)
    ends = sorted(row[0]["nodes"][-1]["properties"]["name"] for row in result.rows)
    assert ends == ["attempt-a1-1", "attempt-a1-2"]


def test_aggregates_count_only_visible_elements(sandbox_runner: SandboxRunner, marker: str) -> None:
    # Counting is layer 1's alone: layer 2 sees a number, not the elements behind it.
    result = gateway(sandbox_runner, {}).run(
        "analyze", f"MATCH (a:Attempt:{marker}) RETURN count(a), collect(a.name)", {}, ALICE
    )
    assert result.rows[0][0] == 3 and sorted(result.rows[0][1]) == ["attempt-a1-1", "attempt-a1-2", "attempt-a2-1"]


def test_the_unchecked_control_really_returns_the_hidden_elements(sandbox_runner: SandboxRunner, marker: str) -> None:
    off = {"scope_rewrite": False, "result_check": False}
    result = gateway(sandbox_runner, off).run("analyze", f"MATCH (n:{marker}) RETURN n", {}, ALICE)
    assert len(result.rows) == 19


# ---- recall pinned for real ------------------------------------------------------------------

MENTIONS_ONLY = "WHERE $repository IS NOT NULL AND $taskId IS NOT NULL"


@pytest.mark.parametrize("switches", SWITCHES, ids=SWITCH_IDS)
def test_a_recall_that_mentions_but_does_not_use_its_parameters_sees_only_the_pinned_task(
    sandbox_runner: SandboxRunner, marker: str, switches: dict[str, bool]
) -> None:
    run = gateway(sandbox_runner, switches).run
    params = {"repository": "repo-a", "taskId": "t1"}
    attempts = run("recall", f"MATCH (a:Attempt:{marker}) {MENTIONS_ONLY} RETURN a", params, ALICE)
    assert names(attempts) == ["attempt-a1-1", "attempt-a1-2"]  # not task t2's, not repo-b's task t1
    tasks = run("recall", f"MATCH (t:Task:{marker}) {MENTIONS_ONLY} RETURN t", params, ALICE)
    assert names(tasks) == ["task-a1"]
    repositories = run("recall", f"MATCH (r:Repository:{marker}) {MENTIONS_ONLY} RETURN r", params, ALICE)
    assert names(repositories) == ["repo-a"]


@pytest.mark.parametrize("switches", SWITCHES, ids=SWITCH_IDS)
def test_a_pin_never_widens_past_the_callers_repositories(
    sandbox_runner: SandboxRunner, marker: str, switches: dict[str, bool]
) -> None:
    # repo-b's task t1 exists, but alice's repositories do not hold repo-b.
    params = {"repository": "repo-b", "taskId": "t1"}
    run = gateway(sandbox_runner, switches).run
    result = run("recall", f"MATCH (n:{marker}) {MENTIONS_ONLY} RETURN n", params, ALICE)
    assert names(result) == ["catalog", "fact-live", "fact-retired", "plain-global"]


@pytest.mark.parametrize("switches", SWITCHES, ids=SWITCH_IDS)
def test_recall_sees_retired_facts_that_analyze_filters(
    sandbox_runner: SandboxRunner, marker: str, switches: dict[str, bool]
) -> None:
    run = gateway(sandbox_runner, switches).run
    params = {"repository": "repo-a", "taskId": "t1"}
    recalled = run("recall", f"MATCH (f:Fact:{marker}) {MENTIONS_ONLY} RETURN f", params, ALICE)
    assert names(recalled) == ["fact-live", "fact-retired"]
    analyzed = run("analyze", f"MATCH (f:Fact:{marker}) RETURN f", {}, ALICE)
    assert names(analyzed) == ["fact-live"]


def test_a_caller_cannot_supply_an_attribute_parameter(sandbox_runner: SandboxRunner, marker: str) -> None:
    with pytest.raises(QueryRejected):
        gateway(sandbox_runner, {}).run(
            "analyze", f"MATCH (n:{marker}) RETURN n", {"__gw_attr_repositories": ["repo-b"]}, ALICE
        )


def test_a_recall_must_still_supply_the_pinned_parameters(sandbox_runner: SandboxRunner, marker: str) -> None:
    with pytest.raises(QueryRejected):
        gateway(sandbox_runner, {}).run("recall", f"MATCH (a:Attempt:{marker}) RETURN a", {}, ALICE)


def test_the_survey_checks_the_properties_the_rules_read(neo4j_driver: Any, marker: str) -> None:
    from gateway import scope_survey

    def run(cypher: str, params: dict[str, Any]) -> list[list[Any]]:
        records, _, _ = neo4j_driver.execute_query(cypher, params, database_="neo4j", routing_="r")
        return [list(r.values()) for r in records]

    fits = scope_survey.survey(POLICY, run, counts=False)
    assert fits.missing_properties == [] and fits.property_found
    raw = POLICY.model_dump()
    raw["scope"]["nodes"]["Repository"] = {"kind": "equality", "property": "owner", "attribute": "repositories"}
    raw["scope"]["nodes"][f"Absent{marker}"] = {"kind": "public"}
    misfit = scope_survey.survey(type(POLICY).model_validate(raw), run, counts=False)
    assert misfit.missing_properties == ["Repository.owner"]
    assert f"Absent{marker}" in misfit.missing_labels
    assert any("Repository.owner" in problem for problem in misfit.problems)


EVERYTHING = Principal(
    name="everything", scope=frozenset({"team", "other"}), attributes={"repositories": frozenset({"repo-a", "repo-b"})}
)


@pytest.mark.parametrize(
    "cypher",
    [
        "MATCH (r:Repository:{m})-[:HAS_TASK]->(t)-[:HAS_ATTEMPT]->(a) RETURN r.name, t.name, a.name",
        "MATCH (t:Task:{m}) OPTIONAL MATCH (t)-[:USES]->(c) RETURN t.name, c.name",
        "MATCH (n:{m}) WHERE n:Repository OR n:Task RETURN labels(n), count(*)",
        "MATCH p = (:Repository:{m})-[*1..2]->(x) RETURN length(p), x.name",
    ],
)
def test_where_the_rules_hide_nothing_the_rewrite_answers_like_the_agents_own_query(
    sandbox_runner: SandboxRunner, marker: str, cypher: str
) -> None:
    # The invariant: every rule kind holds for this caller on these elements, so scoping changes nothing.
    text = cypher.format(m=marker)
    scoped = gateway(sandbox_runner, {}).run("analyze", text, {}, EVERYTHING)
    unscoped = gateway(sandbox_runner, {"scope_rewrite": False, "result_check": False}).run(
        "analyze", text, {}, EVERYTHING
    )
    assert scoped.columns == unscoped.columns
    assert sorted(map(repr, scoped.rows)) == sorted(map(repr, unscoped.rows)) and unscoped.rows


@pytest.mark.requires_2026
@pytest.mark.parametrize("switches", SWITCHES, ids=SWITCH_IDS)
def test_every_rule_kind_in_cypher_25(sandbox_runner: SandboxRunner, marker: str, switches: dict[str, bool]) -> None:
    result = gateway(sandbox_runner, switches).run("analyze", f"CYPHER 25 MATCH (n:{marker}) RETURN n", {}, ALICE)
    assert names(result) == VISIBLE_TO_ALICE
