"""The rewrite is closed: parse its output again and every pattern must carry its guard.

For every corpus read the guard allows (and a set of adversarial WHERE shapes), the
rewritten text is re-parsed with the guard's parser. Then:

* every MATCH pattern part and pattern comprehension has a path variable;
* the WHERE of every MATCH / EXISTS / COUNT / comprehension is ``<agent's> AND <scope>``
  at the top of the tree (so no OR, XOR or comment in the agent's text can bind looser);
* the scope conjunct names every path variable of that pattern;
* no pattern predicate is left bare (each became an EXISTS subquery).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway import guard, scope
from gateway.cypher import ParsedQuery, ast, parse
from gateway.domain import Principal
from gateway.errors import QueryRejected
from gateway.policy import load_policy
from tests.support.corpus import load_corpus
from tests.support.shapes import ADVERSARIAL_WHERE

POLICY = load_policy()
ANYONE = Principal(name="scope-invariants")


def corpus_reads() -> list[str]:
    out = []
    for record in load_corpus():
        if record["expect"] == "allow" and record["tool"] == "analyze" and not record["params"]:
            out.append(record["query"])
    return out


def _root_conjuncts(parsed: ParsedQuery, where: ast.Expr | None) -> list[str]:
    """The sources of the AND-conjuncts at the root of ``where``, outer parentheses stripped."""
    assert where is not None, "a pattern's WHERE is missing"
    out, stack = [], [where]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.BinaryOp) and node.op == "AND":
            stack.extend([node.right, node.left])
        else:
            out.append(parsed.source(node).strip("() "))
    return out


def _assert_guarded(parsed: ParsedQuery, where: ast.Expr | None, names: list[str]) -> None:
    conjuncts = _root_conjuncts(parsed, where)
    for name in names:
        # Our predicate, whole, as its own conjunct at the root: nothing of the agent's can bind looser.
        assert any(c.startswith(f"all(__gw_x IN nodes({name}) WHERE") for c in conjuncts), (
            f"path {name} is not guarded at the root of the WHERE: {conjuncts!r}"
        )


def assert_closed(rewritten: str) -> None:
    parsed = parse(rewritten, max_chars=10**6, max_depth=POLICY.tool("analyze").limits.max_nesting_depth)
    for node in parsed.walk():
        if isinstance(node, ast.Match):
            names = []
            for part in node.patterns:
                assert part.variable is not None, f"pattern without a path variable: {parsed.source(part)!r}"
                names.append(part.variable.name)
            _assert_guarded(parsed, node.where, names)
        elif isinstance(node, ast.PatternComprehension):
            assert node.path_variable is not None
            _assert_guarded(parsed, node.where, [node.path_variable.name])
        elif isinstance(node, ast.SubqueryExpr):
            # Every short form was turned into a MATCH body (checked as a Match above).
            assert node.body is not None, f"short-form subquery left: {parsed.source(node)!r}"
        elif isinstance(node, ast.PatternPredicate):
            raise AssertionError(f"bare pattern predicate left: {parsed.source(node)!r}")


def _rewrite(query: str) -> str | None:
    decision = guard.check(query, {}, "analyze", POLICY)
    if not decision.allowed or decision.parsed is None:
        return None
    try:
        return scope.plan(decision.parsed, POLICY, "analyze", ANYONE).cypher
    except QueryRejected:
        return None


@pytest.mark.parametrize("query", ADVERSARIAL_WHERE)
def test_adversarial_where_shapes_stay_anded(query: str) -> None:
    rewritten = _rewrite(query)
    assert rewritten is not None, f"refused: {query}"
    assert_closed(rewritten)


def test_every_corpus_read_rewrites_to_a_closed_query() -> None:
    reads = corpus_reads()
    checked = 0
    for query in reads:
        rewritten = _rewrite(query)
        if rewritten is None:
            continue
        assert_closed(rewritten)
        checked += 1
    assert checked >= 100, f"only {checked} of {len(reads)} corpus reads were rewritten"


# ---- property test: random boolean WHERE shapes (parentheses, OR/XOR/AND/NOT, comments) --------


_ATOMS = st.sampled_from(
    [
        "true",
        "false",
        "a.x = 1",
        "a.id = 'fact-b1'",
        "a:Secret",
        "a.x IS NULL",
        "(a)-->(:Fact)",
        "a.x IN [1, 2]",
        "EXISTS { (a)-->(b) WHERE b.x = 1 OR true }",
        "$p = 1",
        "NOT a.y",
    ]
)


def _combine(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    binary = st.tuples(children, st.sampled_from([" OR ", " XOR ", " AND ", " /* c */ OR "]), children).map(
        lambda t: t[0] + t[1] + t[2]
    )
    return st.one_of(binary, children.map(lambda c: f"({c})"), children.map(lambda c: f"NOT {c}"))


WHERES = st.recursive(_ATOMS, _combine, max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(where=WHERES, tail=st.sampled_from([" RETURN a", "\nRETURN a", " // c\nRETURN a", " /* c */ RETURN a"]))
def test_random_where_shapes_keep_the_scope_predicate_at_the_root(where: str, tail: str) -> None:
    templates = (
        "MATCH (a:Fact) WHERE {w}{t}",
        "OPTIONAL MATCH (a)-[*1..2]->(b) WHERE {w}{t}",
        "MATCH (a) RETURN [(a)-->(b) WHERE {w} | b] AS c",
        "MATCH (a) WHERE EXISTS {{ (a)-->(b) WHERE {w} }}{t}",
    )
    for template in templates:
        query = template.format(w=where, t=tail)
        decision = guard.check(query, {"p": 1}, "analyze", POLICY)
        if not decision.allowed or decision.parsed is None:
            continue
        assert_closed(scope.plan(decision.parsed, POLICY, "analyze", ANYONE).cypher)
