"""The parse stage: facts from every nesting level, spans, rewrite, bounds."""

from __future__ import annotations

import pytest

from gateway.guard import ast
from gateway.guard.lexer import LexError, tokenize
from gateway.guard.parse import GuardParseError, ParsedQuery, parse
from gateway.policy import Limits

LIMITS = Limits()


def p(query: str) -> ParsedQuery:
    return parse(query, limits=LIMITS)


def test_facts_are_collected_inside_every_kind_of_nesting() -> None:
    parsed = p(
        "MATCH (a:A)-[:R1]->(b) "
        "WHERE EXISTS { MATCH (b)-[:R2]->(:B {k: $p1}) WHERE f1(b) } "
        "AND COUNT { (a)-[:R3]->(:C) } > $p2 "
        "CALL { WITH a CALL db.labels() YIELD label RETURN label } "
        "WITH a, label, [(a)-[:R4]->(d:D) WHERE d.x = $p3 | ns.f2(d)] AS ds "
        "RETURN a { .name, c: COLLECT { MATCH (a)-[:R5*1..2]->(e:E) RETURN f3(e) } }, "
        "CASE WHEN (a)-[:R6]->(:F) THEN $p4 END"
    )
    facts = parsed.facts
    assert facts.labels == {"A", "B", "C", "D", "E", "F"}
    assert facts.relationship_types == {"R1", "R2", "R3", "R4", "R5", "R6"}
    assert facts.parameters == {"p1", "p2", "p3", "p4"}
    assert set(facts.functions) == {"f1", "ns.f2", "f3"}
    assert facts.procedures == ["db.labels"]
    assert [h.max_hops for h in facts.hops] == [2]
    assert {"MATCH", "WHERE", "CALL_SUBQUERY", "CALL_PROCEDURE", "WITH", "RETURN"} <= facts.clause_kinds


def test_procedure_names_are_normalised() -> None:
    for query in ("CALL `apoc`.`cypher`.`doIt`('x')", "CALL apoc . cypher . doIt('x')",
                  "CALL /* c */ apoc./* c */cypher.doIt('x')", "CALL apoc.cypher.doIt('x') YIELD value"):
        assert p(query).facts.procedures == ["apoc.cypher.doIt"], query


def test_quantified_path_hops_multiply() -> None:
    parsed = p("MATCH (a)((x)-[:R]->(y)-[:S]->(z)){2,3}(b) RETURN b")
    assert [h.max_hops for h in parsed.facts.hops] == [6]
    assert [h.max_hops for h in p("MATCH (a)-[*]->(b) RETURN b").facts.hops] == [None]
    assert [h.max_hops for h in p("MATCH (a)-[*3]->(b) RETURN b").facts.hops] == [3]
    assert [h.max_hops for h in p("MATCH (a)-[:R]->{,4}(b) RETURN b").facts.hops] == [4]


def test_spans_cover_exact_source_and_rewrite_splices() -> None:
    text = "MATCH (n:Person) WHERE n.age > 3 OR n.x RETURN n.name AS name"
    parsed = p(text)
    match = next(parsed.find_all(ast.Match))
    assert parsed.source(match.patterns[0]) == "(n:Person)"
    assert match.where is not None and parsed.source(match.where) == "n.age > 3 OR n.x"
    new = parsed.rewrite([(match.where.start, match.where.start, "("),
                          (match.where.end, match.where.end, ") AND n.layers IS NOT NULL")])
    assert new == "MATCH (n:Person) WHERE (n.age > 3 OR n.x) AND n.layers IS NOT NULL RETURN n.name AS name"
    with pytest.raises(ValueError):
        parsed.rewrite([(0, 5, "x"), (3, 7, "y")])


def test_walk_reaches_patterns_in_expressions() -> None:
    parsed = p("MATCH (a) RETURN [(a)-->(b) | b] AS l, EXISTS { (a)-->(c) } AS e")
    names = sorted(n.variable.name for n in parsed.find_all(ast.NodePattern) if n.variable)
    assert names == ["a", "a", "a", "b", "c"]
    assert len(list(parsed.find_all(ast.PatternComprehension))) == 1
    assert [s.kind for s in parsed.find_all(ast.SubqueryExpr)] == ["EXISTS"]


def test_union_and_statement_shape() -> None:
    parsed = p("CYPHER 5 MATCH (a) RETURN a AS x UNION ALL MATCH (b) RETURN b AS x")
    assert parsed.statement.cypher_version == "5"
    assert isinstance(parsed.statement.body, ast.Union)
    assert parsed.statement.body.all == [True]


@pytest.mark.parametrize(
    ("query", "rule"),
    [
        ("x" * 10_001, "input.too_large"),
        ("RETURN " + "[" * 40 + "]" * 40, "input.too_deep"),
        ("RETURN " + "NOT " * 2000 + "true", "input.too_deep"),
        ("RETURN " + "CASE WHEN true THEN " * 200 + "1" + " END" * 200, "input.too_deep"),
        ("RETURN 1 +", "parse.failed"),
    ],
)
def test_bounds_raise_guard_parse_error(query: str, rule: str) -> None:
    with pytest.raises(GuardParseError) as info:
        p(query)
    assert info.value.rule == rule


def test_recursion_error_never_escapes_even_with_a_huge_depth_limit() -> None:
    limits = Limits(max_query_chars=1_000_000, max_nesting_depth=100_000)
    with pytest.raises(GuardParseError) as info:
        parse("RETURN " + "(" * 20_000 + "1" + ")" * 20_000, limits=limits)
    assert info.value.rule == "input.too_deep"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("MATCH (n) /* a", "unterminated block comment"),
        ("RETURN 'a", "unterminated string"),
        ("RETURN `a", "unterminated backticked"),
        ("RETURN (1]", "unbalanced"),
        ("RETURN (1", "unclosed"),
        ("RETURN '\\u0027'", "decodes to"),
        ("RETURN 1 // \u2028 x", "line separator"),
    ],
)
def test_lexer_errors(text: str, message: str) -> None:
    with pytest.raises(LexError) as info:
        tokenize(text)
    assert message in info.value.message


def test_block_comments_do_not_nest() -> None:
    tokens, _ = tokenize("MATCH (n) /* a /* b */ CALL { CREATE (:P) } // */ RETURN n")
    assert "CREATE" in [t.upper for t in tokens]


def test_facts_recorded_while_parsing_equal_facts_from_walking_the_tree() -> None:
    from gateway.guard.facts import collect_facts
    from tests.support.corpus import load_corpus

    rows = load_corpus()
    compared = 0
    for row in rows:
        try:
            parsed = parse(row["query"], limits=Limits(max_query_chars=300_000))
        except GuardParseError:
            continue
        walked = collect_facts(parsed.statements, parsed.text)
        for facts in (parsed.facts, walked):  # the parser records post-order, the walk is pre-order
            facts.functions.sort()
            facts.procedures.sort()
            facts.hops.sort(key=lambda h: (h.text, h.max_hops or -1))
            facts.forbidden.sort(key=lambda f: f.start)
        assert parsed.facts == walked, row["id"]
        compared += 1
    assert compared > 300
