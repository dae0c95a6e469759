"""Bypass attempts against scope, through the product path with every layer on.

``gateway.service.Gateway`` + a real ``SandboxRunner`` + the real Neo4j. Every element a
principal in ``project-a`` may not see has a name starting with ``hidden``; an attack
fails when that word appears nowhere in the answer (rows, nested values, tagged nodes,
relationships and paths), the counts count only visible elements, and layer 2 had
nothing to do (``redacted == 0``, no ``degraded``): layer 1 alone must stop it. An
attack may also be refused, with a rule the test names.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.domain import LayerSwitches, Principal, ToolResult
from gateway.errors import Neo4jRefused, QueryRejected
from gateway.policy import Policy, load_policy
from gateway.runner import SandboxRunner
from gateway.service import Gateway
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH

POLICY = load_policy(ALL_PROPERTIES_POLICY_PATH)
A = Principal(name="alice", scope=frozenset({"project-a"}))
B = Principal(name="bob", scope=frozenset({"project-b"}))
NOBODY = Principal(name="forgot-the-scope")  # empty scope: global-only


@pytest.fixture(scope="module")
def L(neo4j_driver: Any, neo4j_connection: Any) -> Iterator[str]:
    """The attack graph under a run-unique label. Visible to project-a: g1, g2, a1 and the edges g1-a1, a1-g2."""
    label = f"ScopeAtk{uuid.uuid4().hex[:8]}"
    seed = f"""
    CREATE (g1:{label} {{name: 'g1', layers: []}})
    CREATE (g2:{label}:Secret {{name: 'g2', layers: []}})
    CREATE (a1:{label}:Secret {{name: 'a1', layers: ['project-a']}})
    CREATE (hb:{label}:Secret:OnlyHidden{label} {{name: 'hidden-b', layers: ['project-b'], hiddenKey{label}: 1}})
    CREATE (:{label} {{name: 'hidden-malformed', layers: 'project-a'}})
    CREATE (:{label} {{name: 'hidden-restricted', layers: ['restricted']}})
    CREATE (g1)-[:LINK {{name: 'g1-a1', layers: []}}]->(a1)-[:LINK {{name: 'a1-g2', layers: []}}]->(g2)
    CREATE (g1)-[:LINK {{name: 'hidden-edge-to-b', layers: []}}]->(hb)-[:LINK {{name: 'hidden-b-g2', layers: []}}]->(g2)
    CREATE (g1)-[:LINK {{name: 'hidden-direct', layers: ['project-b']}}]->(g2)
    CREATE (a1)-[:SUPERSEDES {{name: 'hidden-supersedes', layers: []}}]->(g1)
    CREATE (g2)-[:CONTRADICTS {{name: 'hidden-contradicts', layers: []}}]->(a1)
    CREATE (g2)-[:LINK {{name: 'hidden-malformed-edge', layers: 'project-a'}}]->(a1)
    CREATE (a1)-[:HIDDENONLY{label} {{name: 'hidden-type', layers: ['project-b']}}]->(g2)
    """
    with neo4j_driver.session(database=neo4j_connection.database) as session:
        session.run(seed).consume()
    yield label
    with neo4j_driver.session(database=neo4j_connection.database) as session:
        session.run(f"MATCH (n:{label}) DETACH DELETE n").consume()


@pytest.fixture(scope="module")
def gw(sandbox_runner: SandboxRunner) -> Gateway:
    return Gateway(POLICY, sandbox_runner)


def clean(result: ToolResult) -> ToolResult:
    """Assert the answer holds nothing hidden and layer 1 alone was enough."""
    text = json.dumps(result.rows)
    assert "hidden" not in text.lower(), text[:500]
    assert result.redacted == 0 and result.degraded == [], (result.redacted, result.degraded)
    return result


def column(result: ToolResult, index: int = 0) -> list[Any]:
    return [row[index] for row in result.rows]


def ask(gw: Gateway, cypher: str, principal: Principal = A) -> ToolResult:
    return clean(gw.run("analyze", cypher, {}, principal))


def test_plain_match_and_forgotten_scope(gw: Gateway, L: str) -> None:
    assert sorted(column(ask(gw, f"MATCH (n:{L}) RETURN n.name"))) == ["a1", "g1", "g2"]
    assert sorted(column(ask(gw, f"MATCH (n:{L}) RETURN n.name", NOBODY))) == ["g1", "g2"]
    other = gw.run("analyze", f"MATCH (n:{L}) RETURN n.name", {}, B)
    assert "hidden-b" in column(other) and "a1" not in column(other)  # positive control: the data is there


def test_whole_nodes_and_nested_collections(gw: Gateway, L: str) -> None:
    ask(gw, f"MATCH (n:{L}) RETURN n")
    ask(gw, f"MATCH (n:{L}) WITH n ORDER BY n.name RETURN collect(n) AS ns, collect({{n: [n]}}) AS deep")


def test_count_side_channels(gw: Gateway, L: str) -> None:
    assert column(ask(gw, f"MATCH (n:{L}:Secret) RETURN count(n)")) == [2]
    assert column(ask(gw, f"MATCH (n:{L}) RETURN count(*)")) == [3]
    assert column(ask(gw, f"MATCH (:{L} {{name: 'g1'}})-[r]->() RETURN count(r)")) == [1]
    assert column(ask(gw, f"MATCH (:{L} {{name: 'g1'}})-[*1..3]->(x) RETURN count(DISTINCT x)")) == [2]
    assert column(ask(gw, f"MATCH (n:{L}) RETURN sum(size(n.name))")) == [6]


def test_var_length_quantified_and_nodes_of_paths(gw: Gateway, L: str) -> None:
    paths = ask(gw, f"MATCH p = (:{L} {{name: 'g1'}})-[*1..3]->(:{L} {{name: 'g2'}}) RETURN p")
    assert len(paths.rows) == 1
    ask(gw, f"MATCH (:{L} {{name: 'g1'}}) ((x)-[]->(y)){{1,3}} (z:{L}) RETURN z.name, [n IN x | n.name]")
    ask(gw, f"MATCH p = (:{L} {{name: 'g1'}})-[*1..2]-() UNWIND nodes(p) AS n RETURN DISTINCT n.name")
    ask(gw, f"MATCH p = (:{L} {{name: 'g1'}})-[*1..2]-() UNWIND relationships(p) AS r RETURN DISTINCT r.name")


def test_shortest_paths(gw: Gateway, L: str) -> None:
    shortest = (
        f"MATCH p = shortestPath((:{L} {{name: 'g1'}})-[*..3]-(:{L} {{name: 'g2'}})) RETURN [n IN nodes(p) | n.name]"
    )
    assert column(ask(gw, shortest)) == [["g1", "a1", "g2"]]
    ask(gw, f"MATCH p = allShortestPaths((:{L} {{name: 'g1'}})-[*..3]-(:{L} {{name: 'g2'}})) RETURN p")
    # A GQL selector chooses among visible paths only: the hidden shorter one is neither returned nor
    # allowed to suppress the visible one.
    selected = (
        f"MATCH p = ANY SHORTEST (:{L} {{name: 'g1'}})-[]-{{1,3}}(:{L} {{name: 'g2'}}) RETURN [n IN nodes(p) | n.name]"
    )
    assert column(ask(gw, selected)) == [["g1", "a1", "g2"]]


def test_subqueries_comprehensions_and_pattern_predicates(gw: Gateway, L: str) -> None:
    row = ask(
        gw,
        f"MATCH (a:{L} {{name: 'g1'}}) RETURN COUNT {{ (a)-->() }} AS c, "
        f"EXISTS {{ (a)-->(:{L} {{name: 'hidden-b'}}) }} AS e, "
        "COLLECT { MATCH (a)--(b) RETURN b.name } AS ns, [(a)-[r]->(b) | r.name] AS rs",
    ).rows
    assert row == [[1, False, ["a1"], ["g1-a1"]]]
    assert ask(gw, f"MATCH (n:{L}) WHERE (n)-->(:{L} {{name: 'hidden-b'}}) RETURN n.name").rows == []
    assert column(
        ask(gw, f"MATCH (n:{L} {{name: 'g1'}}) WHERE NOT (n)-->(:{L} {{name: 'hidden-b'}}) RETURN n.name")
    ) == ["g1"]
    assert sorted(column(ask(gw, f"CALL () {{ MATCH (n:{L}:Secret) RETURN n }} RETURN n.name"))) == ["a1", "g2"]
    ask(gw, f"MATCH (a:{L}) CALL (a) {{ MATCH (a)-[*1..2]-(b) RETURN collect(b) AS bs }} RETURN a, bs")


def test_union_branches_and_optional_match(gw: Gateway, L: str) -> None:
    union = (
        f"MATCH (n:{L} {{name: 'hidden-b'}}) RETURN n.name AS x UNION MATCH (n:{L} {{name: 'a1'}}) RETURN n.name AS x"
    )
    assert column(ask(gw, union)) == ["a1"]
    optional = f"MATCH (a:{L} {{name: 'g1'}}) OPTIONAL MATCH (a)-->(b:{L} {{name: 'hidden-b'}}) RETURN a.name, b"
    assert ask(gw, optional).rows == [["g1", None]]
    counted = f"MATCH (a:{L} {{name: 'g1'}}) OPTIONAL MATCH (a)-[r]->(b) RETURN count(r), collect(b.name)"
    assert ask(gw, counted).rows == [[1, ["a1"]]]


def test_bookkeeping_edges_and_start_end_node(gw: Gateway, L: str) -> None:
    types = ask(gw, f"MATCH (:{L} {{name: 'a1'}})-[r]-(x) RETURN type(r), r, x")
    assert set(column(types)) == {"LINK"}
    ask(gw, f"MATCH (:{L})-[r]->() RETURN startNode(r), endNode(r), r")
    with pytest.raises(QueryRejected) as named:
        gw.run("analyze", f"MATCH (:{L})-[r:SUPERSEDES]->() RETURN r", {}, A)
    assert named.value.rule.startswith("relationship")


def test_label_and_type_predicates_in_where(gw: Gateway, L: str) -> None:
    assert ask(gw, f"MATCH (n) WHERE n:{L} AND n.name STARTS WITH 'hidden' RETURN n").rows == []
    assert ask(gw, f"MATCH (n:{L}) WHERE n.layers IS NULL OR n.layers = 'project-a' OR true RETURN n.name").rows
    ask(gw, f"MATCH (:{L})-[r]->() WHERE type(r) STARTS WITH 'SUP' OR type(r) STARTS WITH 'CON' RETURN r")
    ask(gw, f"MATCH (n:{L}) WHERE size(labels(n)) > 2 RETURN labels(n), keys(n)")


def test_malformed_layers(gw: Gateway, L: str) -> None:
    assert ask(gw, f"MATCH (:{L} {{name: 'g2'}})-[r]->() RETURN r").rows == []
    assert ask(gw, f"MATCH (n:{L}) WHERE n.name = 'hidden-malformed' RETURN n").rows == []


def test_index_procedures_are_refused(gw: Gateway, sandbox_runner: SandboxRunner, L: str) -> None:
    fulltext = "CALL db.index.fulltext.queryNodes('any_index', 'hidden') YIELD node, score RETURN node, score"
    vector = "CALL db.index.vector.queryNodes('any_index', 5, [0.1, 0.2]) YIELD node RETURN node"
    for cypher in (fulltext, vector):
        with pytest.raises(QueryRejected):
            gw.run("analyze", cypher, {}, A)  # the default policy does not allow the procedure
    tools = dict(POLICY.tools)
    tools["analyze"] = tools["analyze"].model_copy(
        update={"procedures_allowed": frozenset({"db.index.fulltext.queryNodes", "db.index.vector.queryNodes"})}
    )
    allowing: Policy = POLICY.model_copy(update={"tools": tools})
    for cypher in (fulltext, vector):
        with pytest.raises(QueryRejected) as refused:
            Gateway(allowing, sandbox_runner).run("analyze", cypher, {}, A)
        assert refused.value.rule == "scope.unsupported", refused.value.reason


def test_schema_tool_lists_only_visible_names(gw: Gateway, L: str) -> None:
    schema = gw.schema(A)
    if not schema.truncated:  # the shared database may hold more names than one answer carries
        assert L in schema.labels and "Secret" in schema.labels  # positive control
    assert f"OnlyHidden{L}" not in schema.labels
    assert f"HIDDENONLY{L}" not in schema.relationshipTypes
    assert f"hiddenKey{L}" not in schema.propertyKeys
    assert "SUPERSEDES" not in schema.relationshipTypes and "CONTRADICTS" not in schema.relationshipTypes


def test_check_shows_the_scoped_query(gw: Gateway, L: str) -> None:
    checked = gw.check("analyze", f"MATCH (n:{L})-->(m) RETURN m", {}, A)
    assert checked.allowed and checked.rewritten is not None
    assert f"${POLICY.scope.scope_parameter}" in checked.rewritten and "[m.layers]" in checked.rewritten


def test_controls_without_the_rewrite_the_attacks_do_leak(sandbox_runner: SandboxRunner, L: str) -> None:
    # Layer 2 alone cannot fix a count or a scalar: these are what the rewrite is for.
    unscoped = Gateway(POLICY, sandbox_runner, layers=LayerSwitches(scope_rewrite=False))
    assert column(unscoped.run("analyze", f"MATCH (n:{L}:Secret) RETURN count(n)", {}, A)) == [3]
    names = unscoped.run("analyze", f"MATCH (:{L} {{name: 'g1'}})-[r]->() RETURN r.name", {}, A)
    assert "hidden-edge-to-b" in column(names)


# --- error oracles: an agent predicate must never run on a hidden element ---
#
# Predicates the agent writes on an element *inside* a pattern (an intermediate node of a
# fixed-length pattern, the WHERE of a quantified path, the inline WHERE of a quantified
# relationship, the agent's own all(...) over a path's nodes) can run as soon as Neo4j has
# bound that element, on hidden elements, before the path-level scope predicate in the
# MATCH's WHERE (which needs the whole path) removes them. A predicate that raises on a hidden value
# then reports it: Neo4j's message quotes the value ("Text cannot be parsed to a Date
# "hidden-b""), and even a generic message would leave a one-bit oracle (error or no error)
# that reads a hidden property bit by bit. Each case: unscoped it raises (the oracle is real);
# scoped it must not raise.

_DATE_ON_HIDDEN = "CASE WHEN {v}.name = 'hidden-b' THEN date({v}.name) ELSE date('2020-01-01') END IS NOT NULL"
ORACLES = {
    "quantified-path-where": "MATCH (x:{L} {{name: 'g1'}}) ((u)-[r]->(v) WHERE " + _DATE_ON_HIDDEN.format(v="v")
    + "){{1,2}} (y) RETURN y.name",
    "quantified-relationship-where": "MATCH (x:{L} {{name: 'g1'}})-[r WHERE "
    + _DATE_ON_HIDDEN.format(v="endNode(r)") + "]->{{1,2}}(y) RETURN y.name",
    "shortest-path-agent-all": "MATCH p = shortestPath((x:{L} {{name: 'g1'}})-[*..3]->(y:{L} {{name: 'g2'}})) "
    "WHERE all(n IN nodes(p) WHERE " + _DATE_ON_HIDDEN.format(v="n") + ") RETURN y.name",
    # Not only expansions: any agent predicate on an element *inside* a pattern can run once that
    # element is bound, before the path-level scope predicate (which needs the whole path).
    "two-hop-where-on-middle": "MATCH (x:{L} {{name: 'g1'}})-->(y)-->(z) WHERE " + _DATE_ON_HIDDEN.format(v="y")
    + " RETURN z.name",
    "inline-where-on-middle": "MATCH (x:{L} {{name: 'g1'}})-[r]->(y WHERE " + _DATE_ON_HIDDEN.format(v="y")
    + ")-->(z) RETURN z.name",
    "var-length-agent-all-nodes": "MATCH p = (x:{L} {{name: 'g1'}})-[*1..2]->(y) WHERE all(n IN nodes(p) WHERE "
    + _DATE_ON_HIDDEN.format(v="n") + ") RETURN y.name",
    # COUNT, not EXISTS: EXISTS may stop at the first (visible) match, so whether it reaches the
    # hidden node depends on the order Neo4j expands in; COUNT visits every match.
    "count-quantified-path": "MATCH (x:{L} {{name: 'g1'}}) RETURN COUNT {{ (x) ((u)-->(v) WHERE "
    + _DATE_ON_HIDDEN.format(v="v") + "){{1,2}} (y) }}",
    "count-quantified-relationship": "MATCH (x:{L} {{name: 'g1'}}) RETURN COUNT {{ (x)-[r WHERE "
    + _DATE_ON_HIDDEN.format(v="endNode(r)") + "]->{{1,2}}(y) }}",
}  # fmt: skip
# The same shapes outside an expansion are closed on Neo4j 5.26 (the scope predicate runs first).
CLOSED_ORACLES = {
    "match-where": "MATCH (n:{L}) WHERE " + _DATE_ON_HIDDEN.format(v="n") + " RETURN n.name",
    "inline-node-where": "MATCH (x:{L} {{name: 'g1'}})-->(n WHERE " + _DATE_ON_HIDDEN.format(v="n") + ") RETURN n.name",
    "var-length-where": "MATCH (x:{L} {{name: 'g1'}})-[*1..2]->(n) WHERE " + _DATE_ON_HIDDEN.format(v="n")
    + " RETURN n.name",
    "optional-match-where": "MATCH (x:{L} {{name: 'g1'}}) OPTIONAL MATCH (x)-->(n) WHERE "
    + _DATE_ON_HIDDEN.format(v="n") + " RETURN n.name",
    "comprehension-where": "MATCH (x:{L} {{name: 'g1'}}) RETURN [(x)-->(n) WHERE " + _DATE_ON_HIDDEN.format(v="n")
    + " | n.name]",
    "count-subquery-where": "MATCH (x:{L} {{name: 'g1'}}) RETURN COUNT {{ (x)-->(n) WHERE "
    + _DATE_ON_HIDDEN.format(v="n") + " }}",
}  # fmt: skip


def _oracle(sandbox_runner: SandboxRunner, cypher: str, *, control: bool = True) -> None:
    if control:
        unscoped = Gateway(POLICY, sandbox_runner, layers=LayerSwitches(scope_rewrite=False))
        with pytest.raises(Neo4jRefused, match="hidden-b"):
            unscoped.run("analyze", cypher, {}, A)  # the oracle works without the rewrite
    result = Gateway(POLICY, sandbox_runner).run("analyze", cypher, {}, A)  # must not raise
    clean(result)


@pytest.mark.parametrize("case", list(ORACLES))
def test_error_oracle_inside_expansions(sandbox_runner: SandboxRunner, L: str, case: str) -> None:
    # Unscoped, shortestPath may stop at the (hidden) direct edge before it reaches hidden-b, so
    # that case has no control: there it is the scope predicate that sends the search past hidden-b.
    _oracle(sandbox_runner, ORACLES[case].format(L=L), control=case != "shortest-path-agent-all")


@pytest.mark.parametrize("case", list(CLOSED_ORACLES))
def test_error_oracle_outside_expansions_is_closed(sandbox_runner: SandboxRunner, L: str, case: str) -> None:
    _oracle(sandbox_runner, CLOSED_ORACLES[case].format(L=L))


def test_one_bit_error_oracle_needs_no_message(sandbox_runner: SandboxRunner, L: str) -> None:
    # Even if error messages were made generic, whether the query fails says whether a hidden
    # intermediate node's name starts with 'hidden-b': one query per bit of any hidden property.
    cypher = (
        f"MATCH (x:{L} {{name: 'g1'}})-->(y)-->(z) "
        "WHERE 1 / CASE WHEN y.name STARTS WITH 'hidden-b' THEN 0 ELSE 1 END = 1 RETURN z.name"
    )
    unscoped = Gateway(POLICY, sandbox_runner, layers=LayerSwitches(scope_rewrite=False))
    with pytest.raises(Neo4jRefused, match="by zero"):
        unscoped.run("analyze", cypher, {}, A)
    clean(Gateway(POLICY, sandbox_runner).run("analyze", cypher, {}, A))


@pytest.mark.parametrize(
    ("expression", "leaked"),
    [
        # "Unknown coordinate reference system: hidden-b": any string, unquoted.
        ("point({x: 1, y: 2, crs: y.name})", "hidden-b"),
        # "Invalid value for MonthOfYear (valid values 1 - 12): 18": any integer, unquoted (len('hidden-b') + 10).
        ("date({year: 2020, month: size(y.name) + 10})", ": 18"),
    ],
)
def test_error_messages_carry_no_unquoted_values(
    sandbox_runner: SandboxRunner, L: str, expression: str, leaked: str
) -> None:
    # These messages carry the value without quotes, through the intermediate-node oracle above;
    # with scope on, gateway.scope.withheld_details returns only Neo4j's error code.
    cypher = (
        "MATCH (x:" + L + " {name: 'g1'})-->(y)-->(z) "
        "WHERE CASE WHEN y.name STARTS WITH 'hidden' THEN " + expression + " ELSE null END IS NULL RETURN z.name"
    )
    try:
        Gateway(POLICY, sandbox_runner).run("analyze", cypher, {}, A)
    except Neo4jRefused as exc:
        assert leaked not in str(exc), str(exc)


@pytest.mark.parametrize(
    ("procedure", "hidden_name"),
    [
        ("db.labels() YIELD label AS name", "OnlyHidden{L}"),
        ("db.relationshipTypes() YIELD relationshipType AS name", "HIDDENONLY{L}"),
        ("db.propertyKeys() YIELD propertyKey AS name", "hiddenKey{L}"),
    ],
)
def test_schema_procedures_never_name_what_only_hidden_elements_carry(
    sandbox_runner: SandboxRunner, L: str, procedure: str, hidden_name: str
) -> None:
    # The schema tool answers the same question scoped (test_schema_tool_lists_only_visible_names).
    name = hidden_name.format(L=L)
    # Filtered to the one name, so the shared database's other names cannot truncate it away.
    cypher = f"CALL {procedure} WHERE name = $name RETURN name"
    tools = dict(POLICY.tools)
    tools["analyze"] = tools["analyze"].model_copy(
        update={"procedures_allowed": frozenset({"db.labels", "db.relationshipTypes", "db.propertyKeys"})}
    )
    allowing: Policy = POLICY.model_copy(update={"tools": tools})
    unscoped = Gateway(allowing, sandbox_runner, layers=LayerSwitches(scope_rewrite=False))
    assert column(unscoped.run("analyze", cypher, {"name": name}, A)) == [name]  # the leak is real
    # The default policy lists no procedure; were one listed, the scope rewrite refuses every call.
    for policy, rule in ((POLICY, "procedure.not_allowed"), (allowing, "scope.unsupported")):
        with pytest.raises(QueryRejected) as refused:
            Gateway(policy, sandbox_runner).run("analyze", cypher, {"name": name}, A)
        assert refused.value.rule == rule, refused.value.reason
