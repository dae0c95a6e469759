"""The scope rewrite as a pure pass: what it injects, and what it refuses (no database here)."""

from __future__ import annotations

import re

import pytest

from gateway import guard, scope
from gateway.domain import LayerSwitches, Principal
from gateway.errors import QueryRejected
from gateway.policy import Policy, load_policy

POLICY = load_policy()
ANYONE = Principal(name="scope-rewrite")


def rewritten(cypher: str, tool: str = "analyze", policy: Policy = POLICY) -> str:
    decision = guard.check(cypher, {}, tool, policy)  # type: ignore[arg-type]
    assert decision.allowed and decision.parsed is not None, decision.reason
    return scope.plan(decision.parsed, policy, tool, ANYONE).cypher  # type: ignore[arg-type]


def refusal(cypher: str) -> str:
    decision = guard.check(cypher, {}, "analyze", POLICY)
    assert decision.parsed is not None, decision.reason
    with pytest.raises(QueryRejected) as info:
        scope.plan(decision.parsed, POLICY, "analyze", ANYONE)
    assert info.value.rule == "scope.unsupported"
    return info.value.reason


def test_a_match_gets_a_path_variable_and_a_predicate_on_every_node_and_relationship() -> None:
    out = rewritten("MATCH (a:Fact)-->(b) RETURN b")
    assert out.startswith("MATCH __gw_p1 = (a:Fact)-->(b) WHERE ")
    assert "all(__gw_x IN nodes(__gw_p1)" in out and "all(__gw_r IN relationships(__gw_p1)" in out
    assert "$__gw_scope" in out and out.endswith(" RETURN b")


def test_an_existing_where_is_kept_and_anded_with_the_predicate() -> None:
    out = rewritten("MATCH (a) WHERE a.x = 1 OR a.y = 2 RETURN a")
    # The agent's OR must stay inside parentheses: `x OR y AND scope` would let every `x` through.
    assert "WHERE (a.x = 1 OR a.y = 2) AND (all(__gw_x IN nodes(__gw_p1)" in out


def test_a_named_path_is_reused_not_renamed() -> None:
    out = rewritten("MATCH p = (a)-[*1..3]->(b) RETURN p")
    assert "__gw_p" not in out.split("WHERE")[0]
    assert "nodes(p)" in out and "relationships(p)" in out


@pytest.mark.parametrize(
    "cypher, marker",
    [
        ("MATCH (a) WHERE EXISTS { (a)-->(b) } RETURN a", "EXISTS { MATCH __gw_p1_1 = (a)-->(b) WHERE"),
        ("MATCH (a) RETURN COUNT { (a)-->() } AS c", "COUNT { MATCH __gw_p1_1 = (a)-->() WHERE"),
        (
            "MATCH (a) RETURN COLLECT { MATCH (a)-->(b) RETURN b.id } AS c",
            "COLLECT { MATCH __gw_p1_1 = (a)-->(b) WHERE",
        ),
        ("MATCH (a) RETURN [(a)-->(b) | b.id] AS c", "[__gw_p1_1 = (a)-->(b) WHERE"),
        ("MATCH (a) RETURN [(a)-->(b) WHERE b.x > 1 | b.id] AS c", "[__gw_p1_1 = (a)-->(b) WHERE (b.x > 1) AND"),
        ("MATCH (a) WHERE (a)-->(:Fact) RETURN a", "(EXISTS { MATCH __gw_p1_1 = (a)-->(:Fact) WHERE"),
        ("MATCH (a) WHERE NOT (a)-->() RETURN a", "NOT EXISTS { MATCH __gw_p1_1 = (a)-->() WHERE"),
        ("MATCH ((a)-[:NEXT]->(b)){1,3} RETURN a", "MATCH __gw_p1 = ((a)-[:NEXT]->(b)){1,3} WHERE"),
        ("MATCH p = shortestPath((a)-[*..4]-(b)) RETURN p", "MATCH p = shortestPath((a)-[*..4]-(b)) WHERE"),
        ("MATCH shortestPath((a)-[*..4]-(b)) RETURN a", "MATCH __gw_p1 = shortestPath((a)-[*..4]-(b)) WHERE"),
        ("OPTIONAL MATCH (a)-->(b) RETURN b", "OPTIONAL MATCH __gw_p1 = (a)-->(b) WHERE"),
        ("CALL { MATCH (a) RETURN a } RETURN a", "CALL { MATCH __gw_p1 = (a) WHERE"),
        ("MATCH (a) RETURN a UNION MATCH (b) RETURN b AS a", "UNION MATCH __gw_p2 = (b) WHERE"),
    ],
)
def test_every_pattern_construct_is_scoped(cypher: str, marker: str) -> None:
    out = rewritten(cypher)
    assert marker in out, out
    # A predicate for every generated or named path: none of them is left without it. (A guarded
    # condition repeats its pattern's predicate inside its CASE, so count the paths, not the texts.)
    paths = re.findall(r"(?:MATCH |OPTIONAL MATCH |\[)(\w+) = ", out)
    assert paths and set(paths) == set(re.findall(r"all\(__gw_x IN nodes\((\w+)\)", out)), out


def test_bookkeeping_relationships_are_excluded_unless_the_policy_allows_them() -> None:
    assert "NOT type(__gw_r) IN ['CONTRADICTS', 'SUPERSEDES']" in rewritten("MATCH (a)-->(b) RETURN b")
    # Allowing bookkeeping takes both settings: the default policy also lists them as denied types,
    # which stay hidden (Policy.hidden_relationship_types: the same set layer 2 hides).
    tools = {n: t.model_copy(update={"denied_relationship_types": frozenset()}) for n, t in POLICY.tools.items()}
    allowing = POLICY.model_copy(
        update={
            "scope": POLICY.scope.model_copy(update={"allow_bookkeeping": {"recall": False, "analyze": True}}),
            "tools": tools,
        }
    )
    assert "NOT type(" not in rewritten("MATCH (a)-->(b) RETURN b", policy=allowing)


def test_the_scope_parameter_and_property_come_from_the_policy() -> None:
    custom = POLICY.model_copy(
        update={"scope": POLICY.scope.model_copy(update={"layers_property": "vis", "scope_parameter": "__gw_who"})}
    )
    out = rewritten("MATCH (a) RETURN a", policy=custom)
    assert "__gw_x.vis" in out and "$__gw_who" in out and ".layers" not in out


@pytest.mark.parametrize(
    "attack, why",
    [
        # Index procedures rank hidden elements too and ignore label filters.
        ("CALL db.index.fulltext.queryNodes('facts', 'vault') YIELD node RETURN node", "whole database"),
        ("CALL db.index.vector.queryNodes('emb', 5, [0.1, 0.2]) YIELD node RETURN node", "whole database"),
        ("CALL db.schema.visualization()", "whole database"),
        # Schema procedures name labels, types and keys that only hidden elements carry.
        ("CALL db.labels() YIELD label RETURN label", "schema tool"),
        ("CALL db.relationshipTypes", "schema tool"),
        ("MATCH (n) CALL { CALL db.propertyKeys() YIELD propertyKey RETURN propertyKey } RETURN n", "schema tool"),
        # Functions that fetch elements by id or count relationships bypass every pattern.
        ("MATCH (a) RETURN apoc.node.degree(a)", "apoc.node.degree"),
        ("RETURN apoc.nodes.get([1, 2, 3])", "apoc.nodes.get"),
        ("MATCH (a) RETURN my.custom.fn(a)", "my.custom.fn"),
        ("RETURN apoc.map.fromNodes('Secret', 'id')", "apoc.map.fromNodes"),
        # shortestPath as an expression returns a path no WHERE of ours could reach.
        ("MATCH (a), (b) RETURN shortestPath((a)-[*..3]-(b))", "shortestPath"),
        # A variable in the gateway's namespace could shadow a generated one.
        ("MATCH (__gw_x) RETURN __gw_x", "reserved"),
        ("MATCH (`__gw_p1`)-->(b) RETURN b", "reserved"),
    ],
)
def test_constructs_the_rewrite_cannot_scope_are_refused(attack: str, why: str) -> None:
    reason = refusal(attack)
    assert why in reason, reason


@pytest.mark.parametrize(
    "attack",
    [
        "MATCH (n:Fact) RETURN id(n) AS i",
        "MATCH (n:Fact) RETURN elementId(n) AS i",
        "MATCH (n:Fact) RETURN n.uid ORDER BY ID(n)",  # the order alone shows the gaps' positions
        "MATCH (n:Fact) WHERE id(n) > 10 RETURN n.uid",
        "MATCH (n:Fact) WITH n ORDER BY elementid(n) RETURN collect(n.uid) AS uids",
        "MATCH (a)-[r]->(b) RETURN [x IN [a, b] | ElementId(x)] AS ids, id(r) AS rid",
        "RETURN COUNT { MATCH (n) WHERE id(n) < $probe } AS below",
    ],
)
def test_element_ids_are_refused_under_scope(attack: str) -> None:
    decision = guard.check(attack, {"probe": 5}, "analyze", POLICY)
    assert decision.allowed and decision.parsed is not None, decision.reason  # the guard itself lets them pass
    with pytest.raises(QueryRejected) as info:
        scope.plan(decision.parsed, POLICY, "analyze", ANYONE)
    assert info.value.rule == "scope.element_id" and "gaps" in info.value.reason


def test_element_ids_pass_with_the_rewrite_off() -> None:
    # Nothing is hidden without the rewrite (tests only): the refusal belongs to scope, not to the guard.
    plan = scope.plan("MATCH (n) RETURN id(n)", POLICY, "analyze", ANYONE, LayerSwitches(scope_rewrite=False))
    assert plan.cypher == "MATCH (n) RETURN id(n)"


def test_a_query_referencing_the_reserved_scope_parameter_is_refused() -> None:
    # Guard rejects a caller-supplied key; the rewrite also refuses the text naming it.
    decision = guard.check("MATCH (a) WHERE $__gw_scope IS NOT NULL RETURN a", {}, "analyze", POLICY)
    if decision.parsed is not None and decision.allowed:
        with pytest.raises(QueryRejected, match=r"scope\.unsupported"):
            scope.plan(decision.parsed, POLICY, "analyze", ANYONE)
    else:
        assert decision.rule is not None


def test_start_and_end_node_are_allowed() -> None:
    out = rewritten("MATCH ()-[r]->() RETURN startNode(r).id, endNode(r).id")
    assert "relationships(__gw_p1)" in out


def test_pure_apoc_value_functions_are_allowed() -> None:
    out = rewritten("MATCH (n) RETURN apoc.text.join(['a'], ','), apoc.coll.sum([1]), apoc.map.merge({}, {})")
    assert "apoc.text.join" in out and "nodes(__gw_p1)" in out


# ---- the error oracle: conditions that could raise run only behind the visibility check ----


def test_a_condition_that_cannot_raise_stays_as_written() -> None:
    # Comparisons of an element's property with literals never raise: left alone, they keep index seeks.
    out = rewritten("MATCH (a:Fact)-->(b) WHERE a.id = 'x' AND b.n IN [1, 2] AND NOT b:Secret RETURN b")
    assert "CASE WHEN (all(" not in out
    assert out.startswith("MATCH __gw_p1 = (a:Fact)-->(b) WHERE (a.id = 'x' AND b.n IN [1, 2] AND NOT b:Secret) AND")


@pytest.mark.parametrize(
    "condition",
    [
        "1 / b.n = 1",  # division by zero on a hidden value
        "date(b.text) IS NOT NULL",  # a failed conversion
        "b.flag",  # not a boolean: raises
        "b.n IN b.m",  # `x IN 5` raises
        "b.text =~ $re",  # an invalid regex (a parameter: the guard refuses one read from the data)
        "all(n IN nodes(p) WHERE 1 / n.x > 0)",
    ],
)
def test_a_condition_that_could_raise_runs_only_on_a_visible_path(condition: str) -> None:
    out = rewritten(f"MATCH p = (a)-->(x)-->(b) WHERE a.id = 'x' AND {condition} RETURN b")
    # The whole WHERE runs behind the path's visibility; the condition that cannot raise is
    # repeated in front, as written, for the planner.
    assert "WHERE (a.id = 'x') AND CASE WHEN all(__gw_x IN nodes(p) WHERE" in out
    assert f"THEN (a.id = 'x' AND {condition}) ELSE false END AND (all(__gw_x IN nodes(p) WHERE" in out


@pytest.mark.parametrize(
    "cypher",
    [
        "MATCH (n) WHERE n.a = 1 AND-1 < 1 / n.x RETURN n",  # CASE WHEN right after AND
        "MATCH (n) WHERE n.a = 1 AND 1 / n.x = toInteger('1')AND true RETURN n",  # END right before AND
        "MATCH (n)-->(m) RETURN*",  # the * the rewrite replaces with the agent's variables
        "MATCH (n)-->(m) WITH*RETURN n",
    ],
)
def test_inserted_text_never_runs_into_the_agents_words(cypher: str) -> None:
    out = rewritten(cypher)
    assert not re.search(r"ANDCASE|ENDAND|RETURN[mn]|WITH[mn]|nRETURN", out), out
    assert guard.check(out, {}, "analyze", POLICY).rule != "parse.failed", out


def test_one_guard_per_where_with_the_conditions_that_cannot_raise_repeated_in_front() -> None:
    out = rewritten("MATCH (a) WHERE ((1 / a.n = 1) OR (a.x = 1)) AND a.y = 2 RETURN a")
    assert "WHERE (a.y = 2) AND CASE WHEN " in out
    assert "THEN (((1 / a.n = 1) OR (a.x = 1)) AND a.y = 2) ELSE false END AND (all(" in out
    # A repeated condition keeps its own parentheses: an OR must not bind looser than the AND after it.
    out = rewritten("MATCH (a) WHERE (a.x = 1 OR a.y = 2) AND 1 / a.n = 1 RETURN a")
    assert "WHERE (a.x = 1 OR a.y = 2) AND CASE WHEN " in out


def test_the_guard_names_every_path_once_however_many_conditions_could_raise() -> None:
    out = rewritten("MATCH (a), (b)-->(c) WHERE 1 / a.n = 1 AND 1 / b.n = 1 AND 1 / c.n = 1 RETURN a")
    assert out.count("CASE WHEN all(__gw_x IN nodes(__gw_p1) + nodes(__gw_p2) WHERE") == 1
    assert "all(__gw_r IN relationships(__gw_p2) WHERE" in out.split(" THEN (")[0]
    assert out.count(" ELSE false END AND (all(") == 1


@pytest.mark.parametrize(
    "cypher, guarded",
    [
        # Inline WHERE of a middle node: behind that node's visibility.
        (
            "MATCH (a)-->(y WHERE 1 / y.n = 1)-->(z) RETURN z",
            "(y WHERE CASE WHEN all(__gw_x IN [y] WHERE any(__gw_v IN [__gw_x.layers]",
        ),
        # Quantified path: behind every element of the group.
        (
            "MATCH (a) ((u)-[r]->(v) WHERE 1 / v.n = 1){1,2} (z) RETURN z",
            "WHERE CASE WHEN all(__gw_x IN [u, v] WHERE any(__gw_v IN [__gw_x.layers] WHERE CASE WHEN __gw_v IS ::",
        ),
        ("MATCH (a) ((u)-[r]->(v) WHERE 1 / v.n = 1){1,2} (z) RETURN z", "all(__gw_e IN [r] WHERE"),
        # Quantified relationship: the relationship and both its endpoints.
        ("MATCH (a)-[r WHERE 1 / endNode(r).n = 1]->{1,2}(z) RETURN z", "startNode(__gw_e).layers"),
        # A property map value that could raise: behind the element, null (no match) otherwise.
        (
            "MATCH (a)-->(y)-->(z {n: 1 / y.n}) RETURN z",
            "(z {n: CASE WHEN all(__gw_x IN [y, z] WHERE any(__gw_v IN [__gw_x.layers]",
        ),
        ("MATCH (a) RETURN [(a)-->(b) WHERE 1 / b.n = 1 | b] AS c", "WHERE CASE WHEN all(__gw_x IN nodes(__gw_p1_1)"),
        ("MATCH (a) RETURN COUNT { (a)-->(b) WHERE 1 / b.n = 1 } AS c", "WHERE CASE WHEN all(__gw_x IN nodes("),
    ],
)
def test_conditions_inside_patterns_are_guarded(cypher: str, guarded: str) -> None:
    out = rewritten(cypher)
    assert guarded in out, out
    assert "1 / " in out.split("THEN (", 1)[1]


def test_property_map_literals_and_parameters_are_left_alone() -> None:
    out = rewritten("MATCH (a {id: 'x', n: [1, 2]})-->(b) RETURN b")
    assert "MATCH __gw_p1 = (a {id: 'x', n: [1, 2]})-->(b) WHERE (all(" in out


def test_a_condition_inside_a_pattern_with_no_element_to_check_first_is_refused() -> None:
    # `1 / $x` would run per candidate, hidden ones too: whether it fails says a hidden match exists.
    decision = guard.check("MATCH (a) (()-->() WHERE 1 / $x = 1){1,2} (b) RETURN b", {"x": 0}, "analyze", POLICY)
    assert decision.parsed is not None, decision.reason
    with pytest.raises(QueryRejected, match=r"scope\.unsupported: .*names no element of its pattern"):
        scope.plan(decision.parsed, POLICY, "analyze", ANYONE)


def test_a_safe_all_over_the_patterns_own_path_stays_as_written() -> None:
    # Left alone so shortestPath can still apply it during its search; a risky one is guarded.
    safe = "MATCH p = shortestPath((a)-[*..3]-(b)) WHERE all(n IN nodes(p) WHERE n.x > 0) RETURN p"
    assert "THEN (" not in rewritten(safe)
    risky = "MATCH p = shortestPath((a)-[*..3]-(b)) WHERE all(n IN nodes(p) WHERE 1 / n.x > 0) RETURN p"
    assert "THEN (all(n IN nodes(p) WHERE 1 / n.x > 0)) ELSE false END" in rewritten(risky)
    # nodes() of something that is not this pattern's path could raise (a string): guarded.
    other = "MATCH (a)-->(b) WITH a, 'x' AS q MATCH (a)-->(c) WHERE all(n IN nodes(q) WHERE n.x > 0) RETURN c"
    assert "THEN (all(n IN nodes(q)" in rewritten(other)


# ---- cost: the rewritten text grows linearly, and the policy caps it -----------------------


def _many(patterns: int, conditions: int) -> str:
    return "MATCH " + ", ".join(["()"] * patterns) + " WHERE " + " AND ".join(["1 / $x = 1"] * conditions) + " RETURN 1"


def test_many_patterns_times_many_conditions_grows_linearly_not_as_their_product() -> None:
    # The guard in front of the WHERE names every path once, however many conditions it holds.
    base = len(rewritten(_many(20, 20)))
    assert len(rewritten(_many(40, 20))) - base == pytest.approx(
        len(rewritten(_many(60, 20))) - len(rewritten(_many(40, 20))), rel=0.01
    )
    more_conditions = len(rewritten(_many(20, 40))) - base
    assert more_conditions == 20 * len(" AND 1 / $x = 1")  # each condition once, nothing per pattern


def test_a_rewrite_longer_than_the_policys_limit_is_refused_before_it_is_built() -> None:
    limits = POLICY.tool("analyze").limits.model_copy(update={"max_query_chars": 1000, "max_rewritten_chars": 5000})
    tools = {name: tool.model_copy(update={"limits": limits}) for name, tool in POLICY.tools.items()}
    small = POLICY.model_copy(update={"tools": tools})
    assert len(rewritten("MATCH (), () RETURN 1", policy=small)) < 5000
    decision = guard.check("MATCH " + ", ".join(["()"] * 30) + " RETURN 1", {}, "analyze", small)
    assert decision.parsed is not None
    with pytest.raises(QueryRejected) as info:
        scope.plan(decision.parsed, small, "analyze", ANYONE)
    assert info.value.rule == "scope.too_large" and "5,000" in info.value.reason
