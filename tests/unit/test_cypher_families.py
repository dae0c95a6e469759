"""The Cypher 5 families and the Cypher 25 reads the parser reads, the trees it builds, and what it refuses.

Where Neo4j's grammar is ambiguous, the expected reading is the one Neo4j 5.26.30 and 2026.08.1
showed by EXPLAIN (noted per case).
"""

from __future__ import annotations

import pytest

from gateway.cypher import CypherSyntaxError, CypherUnsupported, ParsedQuery, ast, parse
from gateway.guard.facts import collect_facts
from gateway.policy import Limits

LIMITS = Limits()


def p(query: str, language: ast.CypherVersion = "5") -> ParsedQuery:
    return parse(query, max_chars=LIMITS.max_query_chars, max_depth=LIMITS.max_nesting_depth, language=language)


def only(parsed: ParsedQuery, kind: type[ast.N]) -> ast.N:
    found = list(parsed.find_all(kind))
    assert len(found) == 1, found
    return found[0]


# ---------------------------------------------------------------- Cypher 5 families


@pytest.mark.parametrize(
    ("query", "order", "skip", "limit"),
    [
        ("MATCH (n) ORDER BY n.name LIMIT 3 RETURN n", 1, False, True),
        ("MATCH (n) OFFSET 1 RETURN n", 0, True, False),
        ("MATCH (n) SKIP 1 LIMIT 2 WITH n RETURN n", 0, True, True),
        ("MATCH (n) WHERE n.x > 1 LIMIT 5 RETURN n", 0, False, True),
    ],
)
def test_standalone_order_by_skip_limit_is_a_clause(query: str, order: int, skip: bool, limit: bool) -> None:
    clause = only(p(query), ast.OrderBySkipLimit)
    assert (len(clause.order_by), clause.skip is not None, clause.limit is not None) == (order, skip, limit)
    assert {"ORDER_BY", "SKIP", "LIMIT"} & collect_facts(p(query)).clause_kinds


def test_finish_is_a_clause() -> None:
    assert isinstance(p("MATCH (n) FINISH").statement.body.clauses[-1], ast.Finish)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("query", "negated", "form"),
    [("RETURN 'a' IS NORMALIZED", False, None), ("RETURN 'a' IS NOT NFKD NORMALIZED", True, "NFKD")],
)
def test_is_normalized(query: str, negated: bool, form: str | None) -> None:
    node = only(p(query), ast.IsNormalized)
    assert (node.negated, node.form) == (negated, form)


def test_extended_simple_case_lists_partial_predicates_and_values() -> None:
    parsed = p(
        "WITH 3 AS v RETURN CASE v WHEN IS NULL THEN 0 WHEN < 0 THEN 1 WHEN 2, 4, 6 THEN 2 "
        "WHEN :: INTEGER | FLOAT THEN 3 END"
    )
    case = only(parsed, ast.Case)
    ops = [[c.op if isinstance(c, ast.PartialPredicate) else "=" for c in w.conditions] for w in case.whens]
    assert ops == [["IS NULL"], ["<"], ["=", "=", "="], ["::"]]


def test_when_is_typed_reads_differently_in_the_two_languages() -> None:
    # Cypher 5: `WHEN is :: STRING` compares with the variable `is` (Neo4j 5.26 plans it so);
    # Cypher 25: `WHEN IS :: STRING` is a type predicate on the CASE subject.
    query = "WITH 1 AS is RETURN CASE 'a' WHEN is :: STRING THEN 1 ELSE 0 END"
    five = only(p(query), ast.Case).whens[0].conditions[0]
    assert isinstance(five, ast.TypePredicate) and isinstance(five.operand, ast.Variable)
    twenty_five = only(p(query, "25"), ast.Case).whens[0].conditions[0]
    assert isinstance(twenty_five, ast.PartialPredicate) and twenty_five.op == "IS TYPED"


def test_case_when_in_and_contains_are_cypher_25() -> None:
    case = only(p("RETURN CASE 3 WHEN IN [1] THEN 1 WHEN CONTAINS 'a' THEN 2 END", "25"), ast.Case)
    assert [w.conditions[0].op for w in case.whens] == ["IN", "CONTAINS"]  # type: ignore[attr-defined]
    with pytest.raises(CypherSyntaxError):
        p("RETURN CASE 3 WHEN CONTAINS 'a' THEN 2 END")


@pytest.mark.parametrize(
    ("query", "mode", "nargs"),
    [
        ("RETURN trim(BOTH 'x' FROM 'xax')", "BOTH", 2),
        ("RETURN trim(LEADING FROM ' a')", "LEADING", 1),
        ("RETURN trim('x' FROM 'xa')", "BOTH", 2),
        ("RETURN trim(' a ')", None, 1),
        ("WITH ' a' AS both RETURN trim(both)", None, 1),
    ],
)
def test_trim_forms(query: str, mode: str | None, nargs: int) -> None:
    call = only(p(query), ast.FunctionCall)
    assert (call.trim_mode, len(call.args)) == (mode, nargs)


@pytest.mark.parametrize(
    ("query", "nargs"),
    [
        ("MATCH (n) RETURN count(ALL n)", 1),
        ("MATCH (n) RETURN count(ALL (n))", 1),
        # Neo4j reads ALL as the quantifier whenever an expression can follow it ...
        ("WITH 1 AS all RETURN count(all - 1)", 1),
        # ... and as a name when the next token cannot start one.
        ("WITH {x: 1} AS all RETURN count(all.x)", 1),
    ],
)
def test_aggregate_with_all(query: str, nargs: int) -> None:
    call = only(p(query), ast.FunctionCall)
    assert len(call.args) == nargs
    if "all.x" in query:
        assert isinstance(call.args[0], ast.Property)


@pytest.mark.parametrize(
    "type_text",
    [
        "INTEGER | FLOAT",
        "LIST<INTEGER NOT NULL>",
        "ZONED DATETIME",
        "LOCAL TIME",
        "TIMESTAMP WITH TIME ZONE",
        "TIME WITHOUT TIMEZONE",
        "ANY<INTEGER | FLOAT>",
        "ANY PROPERTY VALUE",
        "PROPERTY VALUE",
        "SIGNED INTEGER",
        "INTEGER NOT NULL LIST NOT NULL",
        "STRING!",
        "ANY VALUE",
        "ANY NODE",
    ],
)
def test_type_predicates_read_neo4js_type_grammar(type_text: str) -> None:
    node = only(p(f"RETURN 1 IS :: {type_text} AS t"), ast.TypePredicate)
    assert node.type_text == type_text


@pytest.mark.parametrize("bad", ["INTEGER WITH TIME ZONE", "TIMESTAMP ZONE", "LIST INTEGER", "VECTOR<INT8>(3)"])
def test_types_outside_the_grammar_are_refused(bad: str) -> None:
    with pytest.raises(CypherSyntaxError):
        p(f"RETURN 1 IS :: {bad} AS t")


def test_vector_and_uuid_types_are_cypher_25() -> None:
    assert only(p("RETURN 1 IS :: VECTOR<INT8>(3) AS t", "25"), ast.TypePredicate).type_text == "VECTOR<INT8>(3)"
    assert only(p("RETURN 1 IS :: UUID AS t", "25"), ast.TypePredicate).type_text == "UUID"


def test_a_path_variable_and_where_inside_the_group_after_a_selector() -> None:
    parsed = p("MATCH ALL SHORTEST (q = (a)-[:KNOWS]-+(b) WHERE length(q) > 1) RETURN q")
    part = only(parsed, ast.PatternPart)
    group = part.path.elements[0]
    assert part.selector == "ALL SHORTEST"
    assert isinstance(group, ast.QuantifiedPath) and group.variable is not None and group.variable.name == "q"
    assert group.where is not None and group.quantifier is None


@pytest.mark.parametrize(
    ("query", "kinds"),
    [
        ("MATCH (n:$($label)) RETURN n", ["single"]),
        ("MATCH (n:$any($labels)&Person) RETURN n", ["any"]),
        ("MATCH ()-[r:$all(['A', 'B'])]->() RETURN r", ["all"]),
    ],
)
def test_dynamic_labels_in_patterns(query: str, kinds: list[str]) -> None:
    parsed = p(query)
    assert [n.kind for n in parsed.find_all(ast.LabelDynamic)] == kinds
    facts = collect_facts(parsed)
    assert len(facts.dynamic_labels) + len(facts.dynamic_types) == 1


def test_a_backticked_any_parameter_is_not_a_dynamic_label() -> None:
    with pytest.raises(CypherSyntaxError):
        p("MATCH (n:$`any`($labels)) RETURN n")


def test_a_dollar_glued_to_a_name_is_refused() -> None:
    with pytest.raises(CypherSyntaxError, match="directly after a name"):
        p("MATCH (n:Label$($x)) RETURN n")


# ---------------------------------------------------------------- Cypher 25


def test_the_prefix_decides_the_language() -> None:
    assert p("CYPHER 25 RETURN 1").language == "25"
    assert p("RETURN 1", "25").language == "25"
    assert p("CYPHER 5 RETURN 1", "25").language == "5"
    with pytest.raises(CypherSyntaxError, match="LET is Cypher 25"):
        p("MATCH (n) LET x = 1 RETURN x")
    with pytest.raises(CypherSyntaxError, match="Cypher 25"):
        p("CYPHER 5 MATCH (n) RETURN n NEXT RETURN 1 AS one", "25")


def test_let_filter_for() -> None:
    parsed = p("MATCH (n) LET a = n.x, b = 2 FILTER WHERE a > b FOR y IN [1] RETURN y", "25")
    clauses = parsed.statement.body.clauses  # type: ignore[union-attr]
    assert [type(c) for c in clauses] == [ast.Match, ast.Let, ast.Filter, ast.Unwind, ast.Return]
    assert [i.variable.name for i in only(parsed, ast.Let).items] == ["a", "b"]
    assert {"LET", "FILTER", "UNWIND"} <= collect_facts(parsed).clause_kinds


def test_next_joins_segments_and_union_stays_inside_one() -> None:
    body = p("MATCH (n) RETURN n.a AS a UNION MATCH (n) RETURN n.b AS a NEXT RETURN count(*) AS c", "25").statement.body
    assert isinstance(body, ast.Next)
    assert [type(s) for s in body.segments] == [ast.Union, ast.SingleQuery]


def test_conditional_queries_at_top_level_and_in_call() -> None:
    body = p("WHEN $x > 1 THEN MATCH (n) RETURN n.a AS r WHEN $x > 0 THEN RETURN 1 AS r ELSE RETURN 2 AS r", "25")
    when = body.statement.body
    assert isinstance(when, ast.When) and len(when.branches) == 2 and when.otherwise is not None
    inner = p("MATCH (n) CALL (n) { WHEN n.age > 30 THEN RETURN 'old' AS k ELSE RETURN 'young' AS k } RETURN k", "25")
    assert isinstance(only(inner, ast.CallSubquery).body, ast.When)


def test_label_checks_in_cypher_25() -> None:
    parsed = p("MATCH (n) RETURN n IS LABELED A AS a, n IS NOT LABELED A AS b, n IS NOT A AS c, n:$($l) AS d", "25")
    checks = list(parsed.find_all(ast.LabelCheck))
    assert [c.negated for c in checks] == [False, True, True, False]
    # Cypher 25 reads a label check at comparison precedence: `[] + n:A` is `([] + n):A`.
    check = only(p("MATCH (n) RETURN [] + n:A AS x", "25"), ast.LabelCheck)
    assert isinstance(check.subject, ast.BinaryOp)
    check5 = only(p("MATCH (n) RETURN [] + n:A AS x"), ast.LabelCheck)
    assert isinstance(check5.subject, ast.Variable)


def test_match_and_path_modes() -> None:
    assert (
        only(p("MATCH REPEATABLE ELEMENTS p = (a)-->{1,3}(b) RETURN p", "25"), ast.Match).mode == "REPEATABLE ELEMENTS"
    )
    assert only(p("MATCH DIFFERENT RELATIONSHIP BINDINGS (a)--(b) RETURN a", "25"), ast.Match).mode == (
        "DIFFERENT RELATIONSHIPS"
    )
    assert only(p("MATCH p = ANY SHORTEST TRAIL (a)-->{1,3}(b) RETURN p", "25"), ast.PatternPart).selector == (
        "ANY SHORTEST TRAIL"
    )
    with pytest.raises(CypherSyntaxError, match="Cypher 25"):
        p("MATCH REPEATABLE ELEMENTS p = (a)-->{1,3}(b) RETURN p")
    # A path variable named like a mode is still a path variable.
    assert only(p("MATCH trail = (a)-->(b) RETURN trail", "25"), ast.PatternPart).selector is None


def test_cypher_25_functions_with_special_arguments() -> None:
    reduce = only(p("RETURN allReduce(acc = 0, x IN [1, 2] | acc + x, acc < 10) AS ok", "25"), ast.Reduce)
    assert reduce.predicate is not None
    vector = only(p("RETURN vector([1, 2], 2, INTEGER8 NOT NULL) AS v", "25"), ast.FunctionCall)
    assert isinstance(vector.args[-1], ast.Keyword) and vector.args[-1].word == "INTEGER8 NOT NULL"
    exists = only(p("MATCH (n) RETURN property_exists(n, name) AS e", "25"), ast.FunctionCall)
    assert isinstance(exists.args[1], ast.Keyword)


@pytest.mark.parametrize(
    ("query", "construct"),
    [
        ("MATCH (m:Movie) SEARCH m IN (VECTOR INDEX i FOR $v LIMIT 5) RETURN m", "SEARCH"),
        ("MATCH (n) RETURN n.a AS a, count(*) AS c GROUP BY a", "GROUP BY"),
        ("{ MATCH (n) RETURN n }", "a query in braces"),
        ("MATCH p = SHORTEST $k (a)-->+(b) RETURN p", "a parameter as the number of paths"),
    ],
)
def test_cypher_25_the_gateway_refuses_names_the_construct(query: str, construct: str) -> None:
    with pytest.raises(CypherUnsupported) as info:
        p(query, "25")
    assert info.value.construct == construct


def test_unicode_spaces_between_tokens_become_ascii_ones_outside_strings_and_comments() -> None:
    # Neo4j 2026.x's pre-parser reads `CYPHER 5 MATCH<U+00A0>p = …` as the option `MATCH p`.
    parsed = p("MATCH\xa0p = (n) RETURN 'a\xa0b' /* \u3000 */\u2003AS x // \xa0\n")
    assert parsed.text == "MATCH p = (n) RETURN 'a\xa0b' /* \u3000 */ AS x // \xa0\n"
    assert parsed.source(only(parsed, ast.Literal)) == "'a\xa0b'"


@pytest.mark.parametrize("language", ["5", "25"])
def test_the_all_list_predicate_is_not_a_set_quantifier(language: ast.CypherVersion) -> None:
    # Found by reading the openCypher TCK's reads as Cypher 25: RETURN all(x IN …) is a predicate.
    parsed = p("RETURN all(x IN [1, 2] WHERE x > 0) AS a, count(all(y IN [1] WHERE y = 1)) AS c", language)
    assert [q.quantifier for q in parsed.find_all(ast.Quantified)] == ["all", "all"]
