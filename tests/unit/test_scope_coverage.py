"""Fail closed on coverage: a pattern the scope walk does not reach refuses the query; it never runs.

The rewrite gives each pattern its visibility predicate through ``gateway.scope.passes.SCOPERS``
(one entry per kind of node that owns patterns). Independently, ``gateway.scope.coverage`` finds
every pattern in the tree. Here one entry at a time is taken out of the walk, as a construct
nobody taught the rewrite would be, and the query holding it must be refused, not run.
"""

from __future__ import annotations

from typing import Any

import pytest

from gateway import guard, scope
from gateway.cypher import ast
from gateway.domain import Principal
from gateway.errors import QueryRejected
from gateway.policy import load_policy
from gateway.scope import coverage, passes
from gateway.service import Gateway
from sandbox.wire import SandboxJob, SandboxResult
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH
from tests.support.stub_runner import RunnerStub

POLICY = load_policy(ALL_PROPERTIES_POLICY_PATH)
ALICE = Principal(name="alice", scope=frozenset({"l1"}))

# One query per kind of node that owns patterns.
OWNERS: dict[type[ast.Node], str] = {
    ast.Match: "MATCH (a:Fact)-->(b) RETURN b.id AS id",
    ast.SubqueryExpr: "UNWIND [1] AS x RETURN COUNT { (a:Fact)-->(b) } AS c",
    ast.PatternComprehension: "UNWIND [1] AS x RETURN [(a:Fact)-->(b) | b.id] AS ids",
    ast.PatternPredicate: "UNWIND [1] AS x WITH x WHERE CASE WHEN (:Fact)-->() THEN true END RETURN x",
}


class Recording(RunnerStub):
    def answer(self, job: SandboxJob) -> SandboxResult:
        return SandboxResult(query_id=job.query_id, ok=True, columns=["x"], rows=[[1]], row_count=1)


def test_every_kind_of_pattern_owner_is_in_the_walk() -> None:
    assert set(OWNERS) == set(passes.SCOPERS)


@pytest.mark.parametrize("owner", list(OWNERS), ids=lambda t: t.__name__)
def test_each_owner_alone_is_scoped_and_runs(owner: type[ast.Node]) -> None:
    runner = Recording()
    Gateway(POLICY, runner).run("analyze", OWNERS[owner], {}, ALICE)
    (job,) = runner.jobs
    assert f"${POLICY.scope.scope_parameter}" in job.cypher


@pytest.mark.parametrize("owner", list(OWNERS), ids=lambda t: t.__name__)
def test_a_pattern_left_out_of_the_scope_walk_is_refused_not_run(
    owner: type[ast.Node], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(passes.SCOPERS, owner)
    runner = Recording()
    gateway = Gateway(POLICY, runner)
    with pytest.raises(QueryRejected) as refused:
        gateway.run("analyze", OWNERS[owner], {}, ALICE)
    assert refused.value.rule == "scope.unsupported"
    assert "without its visibility predicate" in refused.value.reason
    assert runner.jobs == []
    checked = gateway.check("analyze", OWNERS[owner], {}, ALICE)
    assert (checked.allowed, checked.rule, checked.rewritten) == (False, "scope.unsupported", None)


def test_a_comprehension_skipped_by_the_walk_is_refused_even_beside_scoped_patterns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The MATCH around it still gets its predicate: coverage is per pattern, not per query.
    original = passes.SCOPERS[ast.PatternComprehension]

    def skip(ctx: Any, node: Any) -> list[tuple[str, ast.Path]]:
        return []

    monkeypatch.setitem(passes.SCOPERS, ast.PatternComprehension, skip)
    runner = Recording()
    query = "MATCH (a:Fact) RETURN a.id AS id, [(a)-->(b) | b.id] AS linked"
    with pytest.raises(QueryRejected, match="'\\(a\\)-->\\(b\\)' would run without its visibility predicate"):
        Gateway(POLICY, runner).run("analyze", query, {}, ALICE)
    assert runner.jobs == []
    monkeypatch.setitem(passes.SCOPERS, ast.PatternComprehension, original)
    Gateway(POLICY, runner).run("analyze", query, {}, ALICE)
    assert len(runner.jobs) == 1


def test_coverage_finds_every_pattern_wherever_it_occurs() -> None:
    query = (
        "MATCH (a)-->(b), (c) OPTIONAL MATCH (a)((x)-->(y)){1,2}(d) "
        "WHERE EXISTS { (a)-->() } AND (b)-->() "
        "CALL (a) { MATCH (a)<--(e) RETURN e UNION MATCH (a)-->(e) RETURN e } "
        "MATCH p = shortestPath((a)-[*..3]-(d)) "
        "RETURN [(c)-->(f) | f] AS fs, COUNT { MATCH (c)-->(g) RETURN g } AS n"
    )
    decision = guard.check(query, {}, "analyze", POLICY)
    assert decision.parsed is not None, decision.reason
    found = [decision.parsed.source(path) for path in coverage.patterns(decision.parsed)]
    assert found == [
        "(a)-->(b)", "(c)", "(a)((x)-->(y)){1,2}(d)", "(a)-->()", "(b)-->()", "(a)<--(e)", "(a)-->(e)",
        "(a)-[*..3]-(d)", "(c)-->(f)", "(c)-->(g)",
    ]  # fmt: skip
    rewritten = scope.plan(decision.parsed, POLICY, "analyze", ALICE).cypher
    # Every element of a fixed-length pattern checked on its own (anonymous ones named), the
    # quantified group per iteration, the variable-length path as a whole.
    for name in ("a", "b", "c", "d", "x", "y", "e", "f", "g"):
        assert f"[{name}.layers]" in rewritten, name
    assert "all(__gw_x IN nodes(p)" in rewritten and "[__gw_n1_1.layers]" in rewritten
