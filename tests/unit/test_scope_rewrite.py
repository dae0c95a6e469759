"""The scope rewrite as a pure pass: what it injects, and what it refuses (no database here)."""

from __future__ import annotations

import re

import pytest

from gateway import guard, scope
from gateway.domain import LayerSwitches, Principal
from gateway.errors import QueryRejected
from gateway.policy import Policy, load_policy
from gateway.scope.predicates import Predicates
from gateway.scope.rules import ToolRules
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH

POLICY = load_policy(ALL_PROPERTIES_POLICY_PATH)
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


def _predicates(policy: Policy = POLICY) -> Predicates:
    hidden = tuple(sorted(policy.hidden_relationship_types("analyze")))
    settings = policy.scope
    return Predicates(
        settings.layers_property,
        settings.scope_parameter,
        hidden,
        settings.untagged == "global",
        ToolRules.of(policy, "analyze"),
    )


def node(name: str, *labels: str) -> str:
    """The conjunct that checks one node, as the rewrite writes it."""
    return f"({_predicates().node_visible(name, frozenset(labels))})"


def rel(name: str, *types: str) -> str:
    return f"({_predicates().relationship_visible(name, frozenset(types))})"


def test_a_fixed_length_match_gets_one_conjunct_per_element_anonymous_ones_named() -> None:
    out = rewritten("MATCH (a:Fact)-->()<-[:R]-(b) RETURN b")
    assert out == (
        "MATCH (a:Fact)-[__gw_r1]->(__gw_n1)<-[__gw_r2:R]-(b) "
        f"WHERE {node('a', 'Fact')} AND {node('__gw_n1')} AND {node('b')} "
        f"AND {rel('__gw_r1')} AND {rel('__gw_r2', 'R')} "
        "RETURN b"
    )
    assert "$__gw_scope" in out and "nodes(" not in out  # no whole-path predicate for a fixed-length pattern


def test_an_element_named_twice_is_checked_once_with_every_label_its_patterns_state() -> None:
    out = rewritten("MATCH (a:A)-[r:T|U]->(b), (a:B)<--(c:C|D) RETURN c")
    assert out.count(node("a", "A", "B")) == 1
    assert rel("r", "T", "U") in out  # the types the pattern allows
    assert node("c") in out  # nor `C|D` a label every match carries


def test_an_existing_where_is_kept_and_anded_with_the_predicate() -> None:
    out = rewritten("MATCH (a) WHERE a.x = 1 OR a.y = 2 RETURN a")
    # The agent's OR must stay inside parentheses: `x OR y AND scope` would let every `x` through;
    # and as it is not a seekable comparison, it waits for a's visibility (the CASE is false
    # wherever a is not visible: its check is not written again after it).
    assert f"WHERE CASE WHEN {node('a')} THEN (a.x = 1 OR a.y = 2) ELSE false END RETURN" in out


def test_a_variable_length_pattern_keeps_its_path_predicate_named_or_generated() -> None:
    out = rewritten("MATCH p = (a)-[*1..3]->(b) RETURN p")
    assert "__gw_p" not in out.split("WHERE")[0]
    assert f"({_predicates().visible_path('p')})" in out
    out = rewritten("MATCH (a)-[r*1..3]->(b:B) RETURN b")
    assert out.startswith("MATCH __gw_p1 = (a)-[r*1..3]->(b:B) WHERE ")
    assert f"{node('a')} AND {node('b', 'B')} AND ({_predicates().visible_path('__gw_p1')})" in out


def test_a_quantified_group_checks_its_elements_per_iteration_in_its_own_where() -> None:
    out = rewritten("MATCH (a) ((u)-[:NEXT]->()){1,3} (b) RETURN b")
    assert (
        f"((u)-[__gw_r1:NEXT]->(__gw_n1) WHERE {node('u')} AND {node('__gw_n1')} AND {rel('__gw_r1', 'NEXT')}){{1,3}}"
        in out
    )
    assert out.endswith(f"(b) WHERE {node('a')} AND {node('b')} RETURN b")


@pytest.mark.parametrize(
    "cypher, marker",
    [
        ("MATCH (a) WHERE EXISTS { (a)-->(b) } RETURN a", "EXISTS { MATCH (a)-[__gw_r1_1]->(b) WHERE"),
        ("MATCH (a) RETURN COUNT { (a)-->() } AS c", "COUNT { MATCH (a)-[__gw_r1_1]->(__gw_n1_1) WHERE"),
        (
            "MATCH (a) RETURN COLLECT { MATCH (a)-->(b) RETURN b.id } AS c",
            "COLLECT { MATCH (a)-[__gw_r1_1]->(b) WHERE",
        ),
        ("MATCH (a) RETURN [(a)-->(b) | b.id] AS c", "[(a)-[__gw_r1_1]->(b) WHERE"),
        ("MATCH (a) RETURN [(a)-->(b) WHERE b.x > 1 | b.id] AS c", "[(a)-[__gw_r1_1]->(b) WHERE (b.x > 1) AND"),
        ("MATCH (a) WHERE (a)-->(:Fact) RETURN a", "(EXISTS { MATCH (a)-[__gw_r1_1]->(__gw_n1_1:Fact) WHERE"),
        ("MATCH (a) WHERE NOT (a)-->() RETURN a", "NOT EXISTS { MATCH (a)-[__gw_r1_1]->(__gw_n1_1) WHERE"),
        ("MATCH ((a)-[:NEXT]->(b)){1,3} RETURN a", "MATCH ((a)-[__gw_r1:NEXT]->(b) WHERE"),
        ("MATCH p = shortestPath((a)-[*..4]-(b)) RETURN p", "MATCH p = shortestPath((a)-[*..4]-(b)) WHERE"),
        ("MATCH shortestPath((a)-[*..4]-(b)) RETURN a", "MATCH __gw_p1 = shortestPath((a)-[*..4]-(b)) WHERE"),
        ("OPTIONAL MATCH (a)-->(b) RETURN b", "OPTIONAL MATCH (a)-[__gw_r1]->(b) WHERE"),
        ("CALL { MATCH (a) RETURN a } RETURN a", "CALL { MATCH (a) WHERE"),
        ("MATCH (a) RETURN a UNION MATCH (b) RETURN b AS a", "UNION MATCH (b) WHERE"),
    ],
)
def test_every_pattern_construct_is_scoped(cypher: str, marker: str) -> None:
    out = rewritten(cypher)
    assert marker in out, out
    # Every element the rewrite named is checked (the closure test checks where).
    for name in set(re.findall(r"__gw_[nr]\w+", out)):
        assert f"[{name}.layers]" in out, (name, out)


def test_bookkeeping_relationships_are_excluded_unless_the_policy_allows_them() -> None:
    assert "NOT type(__gw_r1) IN ['CONTRADICTS', 'SUPERSEDES']" in rewritten("MATCH (a)-->(b) RETURN b")
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
    assert "[a.vis]" in out and "$__gw_who" in out and ".layers" not in out


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
    assert out.startswith("MATCH (__gw_n1)-[r]->(__gw_n2) WHERE ") and rel("r") in out


def test_pure_apoc_value_functions_are_allowed() -> None:
    out = rewritten("MATCH (n) RETURN apoc.text.join(['a'], ','), apoc.coll.sum([1]), apoc.map.merge({}, {})")
    assert "apoc.text.join" in out and node("n") in out


# ---- visibility before any agent condition: error and timing oracles ----------------------


def test_seekable_comparisons_stay_in_front_and_everything_else_waits_for_its_elements() -> None:
    # Index seeks and label-scan filters need the comparisons outside any CASE; the expensive
    # list equality runs only once n is known to be visible (the timing oracle).
    out = rewritten(
        "MATCH (n:Secret) WHERE n.secret >= $lo AND n.secret < $hi AND [n.uid, $a] = [n.uid, $b] RETURN count(n)"
    )
    assert out == (
        "MATCH (n:Secret) WHERE (n.secret >= $lo) AND (n.secret < $hi) AND CASE WHEN "
        f"{node('n', 'Secret')} THEN (n.secret >= $lo AND n.secret < $hi AND [n.uid, $a] = [n.uid, $b]) "
        "ELSE false END RETURN count(n)"
    )


@pytest.mark.parametrize(
    "condition",
    [
        "a.id = 'x'", "'x' = a.id", "a.n < 3", "a.n <= $p", "a.n > 1.5", "a.n >= $p", "a.id STARTS WITH 'x'",
        "a.id IN ['x', $p]", "a.id IN $list", "a.id IS NULL", "a.id IS NOT NULL", "a:Fact",
    ],
)  # fmt: skip
def test_the_seekable_forms_are_not_guarded(condition: str) -> None:
    out = rewritten(f"MATCH (a)-->(b) WHERE {condition} RETURN b")
    assert " ELSE false END AND " not in out, out
    assert out.startswith(f"MATCH (a)-[__gw_r1]->(b) WHERE ({condition}) AND ")


@pytest.mark.parametrize(
    "condition",
    [
        "a.id <> 'x'",  # not a seek
        "a.id CONTAINS $p",  # costs len(value) x len(needle)
        "a.id ENDS WITH 'x'",
        "a.x = b.x",  # two elements
        "a.id = a.alias",  # not a parameter or a literal
        "[a.id, $l] = [a.id, $m]",
        "NOT a.id = 'x'",
        "a.id = 'x' OR a.n = 1",
        "a.id ENDS WITH $p",
    ],
)
def test_every_other_condition_waits_for_the_elements_it_names(condition: str) -> None:
    out = rewritten(f"MATCH (a)-->(b) WHERE {condition} RETURN b")
    guard = f"CASE WHEN {node('a')} AND {node('b')} THEN" if "b." in condition else f"CASE WHEN {node('a')} THEN"
    assert f"WHERE {guard} ({condition}) ELSE false END AND " in out, out


@pytest.mark.parametrize(
    "condition",
    [
        "1 / b.n = 1",  # division by zero on a hidden value
        "date(b.text) IS NOT NULL",  # a failed conversion
        "b.flag",  # not a boolean: raises
        "b.n IN b.m",  # `x IN 5` raises
        "b.text =~ $re",  # an invalid regex (a parameter: the guard refuses one read from the data)
        "1 / $x = 1",  # names no element: whether it raises would say a hidden match exists
        "a.id = toString($p)",  # a function: could raise
        "a.id =~ 'x.*'",
    ],
)
def test_a_condition_that_could_raise_waits_for_every_element_of_its_match(condition: str) -> None:
    out = rewritten(f"MATCH (a)-->(x)-->(b) WHERE a.id = 'x' AND {condition} RETURN b")
    every = f"{node('a')} AND {node('x')} AND {node('b')} AND {rel('__gw_r1')} AND {rel('__gw_r2')}"
    assert f"WHERE (a.id = 'x') AND CASE WHEN {every}" in out, out
    assert f"THEN (a.id = 'x' AND {condition}) ELSE false END RETURN b" in out


def test_a_condition_naming_a_path_waits_for_the_whole_path() -> None:
    out = rewritten("MATCH p = (a)-->(b) WHERE all(n IN nodes(p) WHERE n.x > 0) RETURN p")
    whole = f"({_predicates().visible_path('p')})"
    assert f"WHERE CASE WHEN {whole} THEN (all(n IN nodes(p) WHERE n.x > 0)) ELSE false END AND " in out
    out = rewritten("MATCH p = (a)-->(b) WHERE length(p) > 0 RETURN p")
    assert f" AND {whole} THEN (length(p) > 0)" in out


def test_a_shortest_paths_identity_comparison_stays_where_neo4j_filters_before_the_search() -> None:
    # Neo4j fails the whole query when one row reaches shortestPath with the same start and end
    # node; it drops those rows only by a conjunct it sees outside the CASE.
    bound = rewritten("MATCH (a:Fact), (b:Fact) MATCH p = shortestPath((a)-[*..4]-(b)) WHERE a <> b RETURN p")
    assert "shortestPath((a)-[*..4]-(b)) WHERE (a <> b) AND " in bound, bound
    declared = rewritten("MATCH p = shortestPath((a:Fact)-[*..4]-(b)) WHERE a <> b AND size(b.x) > 1 RETURN p")
    assert "shortestPath((a:Fact)-[*..4]-(b)) WHERE (a <> b) AND CASE WHEN " in declared, declared
    assert "THEN (a <> b AND size(b.x) > 1) ELSE false END" in declared
    # A condition that reads a value of an element still to be checked waits for it.
    valued = rewritten("MATCH p = shortestPath((a:Fact)-[*..4]-(b)) WHERE a.x <> b.x RETURN p")
    assert "WHERE CASE WHEN " in valued and "THEN (a.x <> b.x) ELSE false END" in valued, valued


def test_a_condition_on_a_relationship_waits_for_it_and_its_ends() -> None:
    out = rewritten("MATCH (a)-[r]->(b) WHERE r.w > r.v RETURN b")
    assert f"WHERE CASE WHEN {rel('r')} AND {node('a')} AND {node('b')} THEN (r.w > r.v)" in out


@pytest.mark.parametrize(
    "cypher",
    [
        "MATCH (n) WHERE n.a = 1 AND-1 < 1 / n.x RETURN n",  # CASE WHEN right after AND
        "MATCH (n) WHERE n.a = 1 AND 1 / n.x = toInteger('1')AND true RETURN n",  # END right before AND
        "MATCH (n)-->(m) RETURN*",  # the * the rewrite replaces with the agent's variables
        "MATCH (n)-->(m) WITH*RETURN n",
        "MATCH (n)-->(m)RETURN n",  # a generated name right before the agent's word
    ],
)
def test_inserted_text_never_runs_into_the_agents_words(cypher: str) -> None:
    out = rewritten(cypher)
    assert not re.search(r"ANDCASE|ENDAND|RETURN[mn]|WITH[mn]|nRETURN", out), out
    assert guard.check(out, {}, "analyze", POLICY).rule != "parse.failed", out


def test_one_guard_per_where_with_the_seekable_conditions_repeated_in_front() -> None:
    out = rewritten("MATCH (a) WHERE ((1 / a.n = 1) OR (a.x = 1)) AND a.y = 2 RETURN a")
    assert f"WHERE (a.y = 2) AND CASE WHEN {node('a')} THEN " in out
    assert "THEN (((1 / a.n = 1) OR (a.x = 1)) AND a.y = 2) ELSE false END RETURN" in out
    assert out.count("CASE WHEN (any(") == 1


@pytest.mark.parametrize(
    "cypher, guarded",
    [
        # Inline WHERE of a middle node: behind that node's visibility.
        ("MATCH (a)-->(y WHERE 1 / y.n = 1)-->(z) RETURN z", f"(y WHERE CASE WHEN {node('y')} THEN (1 / y.n = 1)"),
        # Quantified path: behind every element of the group, per iteration (the guard is the group's
        # own conjuncts: they are not written again after it).
        (
            "MATCH (a) ((u)-[r]->(v) WHERE 1 / v.n = 1){1,2} (z) RETURN z",
            f"WHERE CASE WHEN {node('u')} AND {node('v')} AND {rel('r')} THEN (1 / v.n = 1) ELSE false END){{1,2}}",
        ),
        # Quantified relationship: the relationship and both its ends.
        (
            "MATCH (a)-[r WHERE 1 / endNode(r).n = 1]->{1,2}(z) RETURN z",
            f"[r WHERE CASE WHEN ({_predicates().visible_relationship_with_endpoints('r')}) THEN",
        ),
        # A property map value: behind the elements it names and its own, null (no match) otherwise.
        (
            "MATCH (a)-->(y)-->(z {n: 1 / y.n}) RETURN z",
            f"(z {{n: CASE WHEN {node('y')} AND {node('z')} THEN (1 / y.n)",
        ),
        ("MATCH (a) RETURN [(a)-->(b) WHERE 1 / b.n = 1 | b] AS c", f"WHERE CASE WHEN {node('b')} AND "),
        ("MATCH (a) RETURN COUNT { (a)-->(b) WHERE 1 / b.n = 1 } AS c", f"WHERE CASE WHEN {node('b')} AND "),
        # An anonymous element with a condition is named so that it can be checked first.
        ("MATCH (a)-[*1..2]->(WHERE 1 / $x = 1) RETURN a", f"(__gw_n1 WHERE CASE WHEN {node('__gw_n1')} THEN"),
    ],
)
def test_conditions_inside_patterns_are_guarded(cypher: str, guarded: str) -> None:
    out = rewritten(cypher)
    assert guarded in out, out
    assert "1 / " not in out.split("THEN (", 1)[0] and "1 / " in out.split("THEN (", 1)[1]


def test_property_map_literals_and_parameters_are_left_alone() -> None:
    out = rewritten("MATCH (a {id: 'x', n: [1, 2], m: $m})-->(b) RETURN b")
    assert out.startswith(f"MATCH (a {{id: 'x', n: [1, 2], m: $m}})-[__gw_r1]->(b) WHERE {node('a')} AND")


def test_a_quantified_condition_naming_no_element_waits_for_the_whole_iteration() -> None:
    # `1 / $x` would run per candidate, hidden ones too: whether it fails says a hidden match exists.
    out = rewritten("MATCH (a) (()-->() WHERE 1 / $x = 1){1,2} (b) RETURN b")
    assert f"WHERE CASE WHEN {node('__gw_n1')} AND {node('__gw_n2')} AND {rel('__gw_r1')} THEN (1 / $x = 1)" in out


def test_a_selector_groups_condition_waits_for_the_whole_selected_path() -> None:
    # The red-team query: nodes(q) reaches the unnamed nodes between a and d.
    out = rewritten(
        "CYPHER 25 MATCH ANY SHORTEST (q = (a:X {uid: 'a'})-->{1,5}(d:X {uid: 'd'}) "
        "WHERE all(x IN nodes(q) WHERE 1 / CASE WHEN x.secret STARTS WITH $p THEN 0 ELSE 1 END = 1)) RETURN length(q)"
    )
    whole = f"({_predicates().visible_path('q')})"
    assert f"WHERE CASE WHEN {whole} THEN (all(x IN nodes(q) WHERE 1 / CASE" in out
    assert f"ELSE false END AND {whole}) WHERE " in out
    # An unnamed group is named so that its condition can wait for it.
    out = rewritten(
        "CYPHER 25 MATCH SHORTEST 2 GROUPS ((a:X)-->{1,5}(d:X) WHERE reduce(s = 0, x IN [a, d] | s + 1 / x.x) > 0) "
        "RETURN d"
    )
    assert (
        "SHORTEST 2 GROUPS (__gw_p2 = (a:X)-->{1,5}(d:X) WHERE CASE WHEN "
        f"({_predicates().visible_path('__gw_p2')}) AND" in out
    )


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
    assert more_conditions == 20 * len(" AND 1 / $x = 1")  # each condition once, nothing per element


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


def test_the_old_type_alternation_is_checked_over_its_path_since_it_cannot_be_named() -> None:
    # Neo4j refuses `-[r:A|:B]->` (a variable with the old `|:`): that part keeps a path predicate.
    out = rewritten("MATCH (a)-[:A|:B]->(b) RETURN b")
    assert out.startswith("MATCH __gw_p1 = (a)-[:A|:B]->(b) WHERE ")
    assert f"({_predicates().visible_path('__gw_p1')})" in out
    assert rewritten("MATCH (a)-[:A|B]->(b) RETURN b").startswith("MATCH (a)-[__gw_r1:A|B]->(b) WHERE ")


def test_elements_bound_by_an_earlier_clause_are_not_checked_again() -> None:
    out = rewritten("MATCH (r:Repo {name: $n}) MATCH (r)<-[:IN]-(t) RETURN t")
    second = out.split(" MATCH ", 1)[1]
    assert node("r", "Repo") in out.split(" MATCH ", 1)[0] and "[r.layers]" not in second
    assert node("t") in second and rel("__gw_r1", "IN") in second
    # A WITH that does not carry a name ends it: the next MATCH binds a new element, checked.
    out = rewritten("MATCH (a:A) WITH a.x AS x MATCH (a)-->(b) RETURN b")
    assert node("a") in out.split(" WITH ", 1)[1]
    # A subquery's body starts with nothing bound (its imports are checked again).
    out = rewritten("MATCH (a) CALL (a) { MATCH (a)-->(b) RETURN b } RETURN b")
    assert node("a") in out.split("CALL (a) {", 1)[1]


@pytest.mark.parametrize(
    ("query", "afresh"),
    [
        # Names bound before a projection's items: checked where they were bound, not again.
        ("MATCH (t:Task) RETURN t.id, [(t)-[:HAS]->(a) | a.x] AS xs", False),
        ("MATCH (t:Task) WITH t RETURN COUNT { (t)-[:HAS]->(a) } AS n", False),
        ("MATCH (t:Task) WITH t, EXISTS { (t)-[:HAS]->(a) } AS has RETURN has", False),
        ("MATCH (t:Task) MATCH (u) WHERE size([(t)-[:HAS]->(a) | a]) > 0 RETURN u", False),
        # The projection dropped t: in the WITH's WHERE or ORDER BY the pattern binds a new t.
        ("MATCH (t:Task) WITH 1 AS one WHERE size([(t)-[:HAS]->(a) | a]) > 0 RETURN one", True),
        ("MATCH (t:Task) WITH count(*) AS n ORDER BY size([(t)-[:HAS]->(a) | a]) RETURN n", True),
        # A MATCH's WHERE holding a pattern or subquery runs once all the MATCH's elements are
        # visible: its own names are not checked again, in a full subquery's body neither.
        ("MATCH (t:Task) WHERE size([(t)-[:HAS]->(a) | a]) > 0 RETURN t.id", False),
        ("MATCH (t:Task)-->(u) WHERE EXISTS { MATCH (t)-[:HAS]->(a) RETURN a } RETURN t.id", False),
        # ... until a WITH in the body drops the name: a later MATCH binds it afresh.
        ("MATCH (t:Task) WHERE COUNT { MATCH (t)-[:HAS]->(a) WITH a MATCH (a)-->(t) RETURN a } > 1 RETURN 1", True),
        # An inline WHERE runs behind its own element only; a WITH's WHERE's subquery checks its imports.
        ("MATCH (u)-->(t:Task WHERE size([(t)-[:HAS]->(a) | a]) > 0) RETURN t.id", True),
        ("MATCH (t:Task) WITH t WHERE EXISTS { MATCH (t)-[:HAS]->(a) RETURN a } RETURN t.id", True),
        # A name not bound before the RETURN: the pattern binds it.
        ("MATCH (u:Task) WITH u RETURN [(t)-[:HAS]->(a) | a.x] AS xs", True),
    ],
)
def test_a_comprehension_or_short_subquery_checks_only_names_it_binds_afresh(query: str, afresh: bool) -> None:
    out = rewritten(query)
    inside = out[out.index("(t)-") :]
    inside = inside[: min(i for i in (inside.find(" | "), inside.find(" }"), len(inside)) if i >= 0)]
    assert ("[t.layers]" in inside) is afresh, out
    assert "[a.layers]" in inside  # the owner's own node is always checked


def test_an_order_by_and_the_items_take_one_set_of_earlier_names() -> None:
    # DISTINCT: the ORDER BY sees only what is projected, and its text must equal the item's.
    out = rewritten("MATCH (t) WITH t RETURN DISTINCT COUNT { (t)-->() } ORDER BY COUNT { (t)-->() }")
    projected, ordered = out.split(" RETURN DISTINCT ")[1].split(" ORDER BY ")
    assert projected.split(" AS ")[0] == ordered and "[t.layers]" in ordered
    kept = rewritten("MATCH (t) WITH t RETURN DISTINCT t, COUNT { (t)-->() } ORDER BY COUNT { (t)-->() }")
    projected, ordered = kept.split(" RETURN DISTINCT ")[1].split(" ORDER BY ")
    assert projected.split(", ", 1)[1].split(" AS ")[0] == ordered and "[t.layers]" not in ordered
