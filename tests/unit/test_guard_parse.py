"""The parse stage: facts from every nesting level, spans, rewrite, bounds."""

from __future__ import annotations

import pytest

from gateway.cypher import CypherSyntaxError, CypherTooDeep, CypherTooLarge, ParsedQuery, ast, parse
from gateway.cypher.tokens import TokenKind, tokenize
from gateway.errors import QueryRejected
from gateway.guard import parse_query
from gateway.guard.facts import collect_facts
from gateway.policy import Limits

LIMITS = Limits()


def p(query: str) -> ParsedQuery:
    return parse(query, max_chars=LIMITS.max_query_chars, max_depth=LIMITS.max_nesting_depth)


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
    facts = collect_facts(parsed)
    assert facts.labels == {"A", "B", "C", "D", "E", "F"}
    assert facts.relationship_types == {"R1", "R2", "R3", "R4", "R5", "R6"}
    assert facts.parameters == {"p1", "p2", "p3", "p4"}
    assert set(facts.functions) == {"f1", "ns.f2", "f3"}
    assert facts.procedures == ["db.labels"]
    assert [h.max_hops for h in facts.hops] == [2]
    assert {"MATCH", "WHERE", "CALL_SUBQUERY", "CALL_PROCEDURE", "WITH", "RETURN"} <= facts.clause_kinds


def test_procedure_names_are_normalised() -> None:
    for query in (
        "CALL `apoc`.`cypher`.`doIt`('x')",
        "CALL apoc . cypher . doIt('x')",
        "CALL /* c */ apoc./* c */cypher.doIt('x')",
        "CALL apoc.cypher.doIt('x') YIELD value",
    ):
        assert collect_facts(p(query)).procedures == ["apoc.cypher.doIt"], query


def test_quantified_path_hops_multiply() -> None:
    parsed = p("MATCH (a)((x)-[:R]->(y)-[:S]->(z)){2,3}(b) RETURN b")
    assert [h.max_hops for h in collect_facts(parsed).hops] == [6]
    assert [h.max_hops for h in collect_facts(p("MATCH (a)-[*]->(b) RETURN b")).hops] == [None]
    assert [h.max_hops for h in collect_facts(p("MATCH (a)-[*3]->(b) RETURN b")).hops] == [3]
    assert [h.max_hops for h in collect_facts(p("MATCH (a)-[:R]->{,4}(b) RETURN b")).hops] == [4]


def test_spans_cover_exact_source_and_rewrite_splices() -> None:
    text = "MATCH (n:Person) WHERE n.age > 3 OR n.x RETURN n.name AS name"
    parsed = p(text)
    match = next(parsed.find_all(ast.Match))
    assert parsed.source(match.patterns[0]) == "(n:Person)"
    assert match.where is not None and parsed.source(match.where) == "n.age > 3 OR n.x"
    new = parsed.rewrite(
        [(match.where.start, match.where.start, "("), (match.where.end, match.where.end, ") AND n.layers IS NOT NULL")]
    )
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
    ("query", "error", "rule"),
    [
        ("x" * 10_001, CypherTooLarge, "input.too_large"),
        ("RETURN " + "[" * 40 + "]" * 40, CypherTooDeep, "input.too_deep"),
        ("RETURN " + "NOT " * 2000 + "true", CypherTooDeep, "input.too_deep"),
        ("RETURN " + "CASE WHEN true THEN " * 200 + "1" + " END" * 200, CypherTooDeep, "input.too_deep"),
        ("RETURN 1 +", CypherSyntaxError, "parse.failed"),
    ],
)
def test_bounds_raise_one_error_type_and_map_to_their_rule(query: str, error: type[Exception], rule: str) -> None:
    with pytest.raises(error):
        p(query)
    with pytest.raises(QueryRejected) as info:
        parse_query(query, LIMITS)
    assert info.value.rule == rule


def test_a_syntax_error_carries_its_position() -> None:
    with pytest.raises(CypherSyntaxError) as info:
        p("MATCH (n)\nRETURN n +")
    assert (info.value.offset, info.value.line, info.value.column) == (20, 2, 11)
    assert str(info.value).endswith("(at end of query)")
    with pytest.raises(CypherSyntaxError) as info:
        p("MATCH (n)\n  WHERE n.x = = 1 RETURN n")
    assert (info.value.line, info.value.column) == (2, 15)
    assert "line 2, column 15" in str(info.value)


def test_recursion_error_never_escapes_even_with_a_huge_depth_limit() -> None:
    with pytest.raises(CypherTooDeep):
        parse("RETURN " + "(" * 20_000 + "1" + ")" * 20_000, max_chars=1_000_000, max_depth=100_000)


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
    with pytest.raises(CypherSyntaxError) as info:
        tokenize(text)
    assert message in info.value.message


def test_block_comments_do_not_nest() -> None:
    tokens = tokenize("MATCH (n) /* a /* b */ CALL { CREATE (:P) } // */ RETURN n")
    assert "CREATE" in [t.upper for t in tokens]


def test_the_parsed_query_keeps_its_tokens() -> None:
    parsed = p("MATCH (n:`A b`) RETURN $x")
    assert [t.kind for t in parsed.tokens] == [
        TokenKind.ID, TokenKind.OP, TokenKind.ID, TokenKind.OP, TokenKind.QID, TokenKind.OP,
        TokenKind.ID, TokenKind.PARAM, TokenKind.EOF,
    ]  # fmt: skip
    assert parsed.tokens[4].value == "A b" and parsed.tokens[7].value == "x"


def test_parentheses_are_nodes_and_aliases_are_variables() -> None:
    parsed = p("MATCH (a) WHERE (a.x = 1) OR ((a.y)) RETURN a.x AS ax")
    match = next(parsed.find_all(ast.Match))
    assert isinstance(match.where, ast.BinaryOp) and match.where.op == "OR"
    assert parsed.source(match.where) == "(a.x = 1) OR ((a.y))"
    assert [parsed.source(n) for n in parsed.find_all(ast.Paren)] == ["(a.x = 1)", "((a.y))", "(a.y)"]
    assert isinstance(ast.unparen(match.where.right), ast.Property)
    item = next(parsed.find_all(ast.ReturnItem))
    assert isinstance(item.alias, ast.Variable) and item.alias.name == "ax"


def test_every_node_span_is_bracket_balanced_over_the_corpus() -> None:
    # Parentheses are nodes, so no span starts or ends inside a bracket pair: wrapping any
    # node's text (as the scope rewrite does) can never change how the rest of the query binds.
    # And the walk reaches every node: a field it skips as scalar never holds one.
    import dataclasses

    from tests.support.corpus import load_corpus

    rows = load_corpus()
    checked = 0
    for row in rows:
        try:
            parsed = parse(row["query"], max_chars=300_000, max_depth=LIMITS.max_nesting_depth)
        except CypherSyntaxError:
            continue
        index = {t.start: i for i, t in enumerate(parsed.tokens)}
        ends = {t.end: i for i, t in enumerate(parsed.tokens)}
        for node in parsed.walk():
            children = node.children()
            assert all(isinstance(child, ast.Node) for child in children), row["id"]
            held = [
                item
                for f in dataclasses.fields(node)
                for item in (lambda v: v if isinstance(v, list) else [v])(getattr(node, f.name))
                if isinstance(item, ast.Node)
            ]
            assert [id(n) for n in held] == [id(n) for n in children], (row["id"], type(node).__name__)
            if isinstance(node, ast.Forbidden) or node.start == node.end:
                continue
            lo, hi = index[node.start], ends[node.end]
            for i in range(lo, hi + 1):
                match = parsed.tokens[i].match
                assert match < 0 or lo <= match <= hi, (row["id"], parsed.source(node))
        checked += 1
    assert checked > 300
