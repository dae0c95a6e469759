"""The rewrite is closed: parse its output again and every pattern must carry its guard.

For every corpus read the guard allows (and a set of adversarial WHERE shapes), the
rewritten text is re-parsed with the guard's parser. Then:

* every element of a fixed-length pattern has a variable (anonymous ones a generated one),
  and its visibility is a conjunct of its own at the root of the owner's WHERE, or of the guard
  of a root ``CASE WHEN guard THEN … ELSE false END`` (so no OR, XOR or comment in the agent's
  text can bind looser); a quantified group's elements at the root of the group's WHERE (per
  iteration);
* a pattern with a selector, a variable-length or a quantified relationship has a path
  variable whose whole-path predicate is a conjunct at the root;
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
from gateway.scope.passes import bound_before, needs_path_predicate
from gateway.scope.predicates import Predicates, quote_name
from gateway.scope.rules import ToolRules
from tests.support.corpus import load_corpus
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH
from tests.support.shapes import ADVERSARIAL_WHERE

POLICY = load_policy(ALL_PROPERTIES_POLICY_PATH)
ANYONE = Principal(name="scope-invariants")


def corpus_reads() -> list[str]:
    out = []
    for record in load_corpus():
        if record["expect"] == "allow" and record["tool"] == "analyze" and not record["params"]:
            out.append(record["query"])
    return out


def _predicates() -> Predicates:
    settings = POLICY.scope
    hidden = tuple(sorted(POLICY.hidden_relationship_types("analyze")))
    return Predicates(
        settings.layers_property,
        settings.scope_parameter,
        hidden,
        settings.untagged == "global",
        ToolRules.of(POLICY, "analyze"),
    )


def _root_conjuncts(parsed: ParsedQuery, where: ast.Expr | None) -> set[str]:
    """The sources of the AND-conjuncts at the root of ``where``, each without its outer parentheses.

    A root ``CASE WHEN g THEN x ELSE false END`` is false wherever ``g`` is: ``g``'s conjuncts
    count as root conjuncts too.
    """
    out, stack = set(), [where] if where is not None else []
    while stack:
        node = stack.pop()
        if isinstance(node, ast.BinaryOp) and node.op == "AND":
            stack.extend([node.right, node.left])
            continue
        node = ast.unparen(node)
        out.add(parsed.source(node))
        if _false_otherwise(node):
            assert isinstance(node, ast.Case)
            stack.append(node.whens[0].conditions[0])
    return out


def _false_otherwise(node: ast.Expr) -> bool:
    """``CASE WHEN g THEN x ELSE false END``."""
    if not isinstance(node, ast.Case) or node.subject is not None or len(node.whens) != 1:
        return False
    default = ast.unparen(node.default) if node.default is not None else None
    return isinstance(default, ast.Literal) and default.value is False and len(node.whens[0].conditions) == 1


def _bare(text: str) -> str:
    """``text`` without parentheses around the whole of it (as a root conjunct is compared)."""
    while text.startswith("(") and text.endswith(")"):
        depth = 0
        for index, char in enumerate(text):
            depth += {"(": 1, ")": -1}.get(char, 0)
            if depth == 0 and index < len(text) - 1:
                return text
        text = text[1:-1]
    return text


def _flat(path: ast.Path) -> list[ast.PathElement]:
    out: list[ast.PathElement] = []
    for element in path.elements:
        if isinstance(element, ast.QuantifiedPath) and element.quantifier is None:
            out += _flat(element.path)
        else:
            out.append(element)
    return out


def _stated(labels: ast.LabelExpression | None, *, one: bool = False) -> frozenset[str]:
    # Labels: only a conjunction of names states labels every match carries; types (``one``): the
    # alternatives a pattern allows.
    operator = "|" if one else "&"
    if labels is None or not all(
        isinstance(n, ast.LabelExpression | ast.LabelName | ast.LabelParen)
        or (isinstance(n, ast.LabelBinary) and n.op == operator)
        for n in labels.walk()
    ):
        return frozenset()
    return frozenset(labels.names())


def _assert_elements(
    parsed: ParsedQuery, path: ast.Path, where: ast.Expr | None, outer: set[str], predicates: Predicates
) -> None:
    """Every element of a fixed-length path has a variable and its own conjunct at the root of ``where``."""
    conjuncts = _root_conjuncts(parsed, where)
    for element in _flat(path):
        if isinstance(element, ast.QuantifiedPath):
            _assert_elements(parsed, element.path, element.where, set(), predicates)  # per iteration
            continue
        assert element.variable is not None, f"element without a variable: {parsed.source(element)!r}"
        name = element.variable.name
        if name in outer:
            continue
        if isinstance(element, ast.NodePattern):
            expected = predicates.node_visible(quote_name(name), _stated(element.labels))
        else:
            expected = predicates.relationship_visible(quote_name(name), _stated(element.types, one=True))
        assert _bare(expected) in conjuncts, (
            f"{name} is not checked at the root of {parsed.source(where) if where else ''!r}"
        )


def _assert_owner(
    parsed: ParsedQuery, parts: list[tuple[str | None, ast.Variable | None, ast.Path]], where: ast.Expr | None,
    outer: set[str], predicates: Predicates,
) -> None:  # fmt: skip
    for selector, variable, path in parts:
        if needs_path_predicate(parsed, selector, path):
            assert variable is not None, f"a path checked as a whole needs a variable: {parsed.source(path)!r}"
            name = quote_name(variable.name)
            expected = {predicates.visible_path(name, has_relationships=has) for has in (True, False)}
            assert {_bare(e) for e in expected} & _root_conjuncts(parsed, where), (
                f"path {variable.name} is not checked at the root"
            )
        else:
            _assert_elements(parsed, path, where, outer, predicates)


def _declared(node: ast.Node) -> set[str]:
    return {n.name for n in node.walk() if isinstance(n, ast.Variable)}


BOUND: dict[ast.Match, frozenset[str]] = {}
OUTER: dict[ast.Node, frozenset[str]] = {}


def _declared_before(parsed: ParsedQuery, offset: int) -> set[str]:
    return {
        n.variable.name
        for n in parsed.walk()
        if isinstance(n, ast.NodePattern | ast.RelPattern) and n.variable is not None and n.start < offset
    }


def _check(parsed: ParsedQuery, node: ast.Node, outer: set[str], predicates: Predicates) -> None:
    inner = outer
    if isinstance(node, ast.Match):
        parts = [(part.selector, part.variable, part.path) for part in node.patterns]
        _assert_owner(parsed, parts, node.where, outer | BOUND.get(node, frozenset()), predicates)
        inner = outer | set().union(*(_declared(part) for part in node.patterns))
    elif isinstance(node, ast.PatternComprehension):
        known = outer | OUTER.get(node, frozenset())
        _assert_owner(parsed, [(None, node.path_variable, node.pattern)], node.where, known, predicates)
        inner = outer | _declared(node.pattern)
    elif isinstance(node, ast.SubqueryExpr):
        # Every short form was turned into a MATCH body (checked as a Match below); the names bound
        # before it (by earlier clauses too) were checked where they were bound.
        assert node.body is not None, f"short-form subquery left: {parsed.source(node)!r}"
        inner = outer | _declared_before(parsed, node.start)
    elif isinstance(node, ast.PatternPredicate):
        raise AssertionError(f"bare pattern predicate left: {parsed.source(node)!r}")
    for child in node.children():
        _check(parsed, child, inner, predicates)


def assert_closed(rewritten: str) -> None:
    """Every element of every pattern is checked at the root of its owner's WHERE (names bound around
    a subquery or comprehension are checked where they are bound)."""
    parsed = parse(rewritten, max_chars=10**6, max_depth=POLICY.tool("analyze").limits.max_nesting_depth)
    predicates = _predicates()
    BOUND.clear()
    OUTER.clear()
    for owner, names in bound_before(parsed).items():  # names an earlier clause bound (and checked)
        if isinstance(owner, ast.Match):
            BOUND[owner] = frozenset(names)
        else:
            OUTER[owner] = frozenset(names)
    for statement in parsed.statements:
        _check(parsed, statement, set(), predicates)


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
