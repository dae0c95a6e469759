"""The rule catalogue is complete both ways: every rule the code can answer with is in it, and every
rule in it can be produced by a request."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

from gateway import catalogue, guard
from gateway.cli.policy import render_policy
from gateway.domain import Principal
from gateway.errors import QueryRejected
from gateway.guard import RULES
from gateway.policy import Policy, load_policy
from gateway.service import Gateway
from sandbox.wire import SandboxError, SandboxJob, SandboxResult
from tests.support.corpus import policy_for
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH
from tests.support.stub_runner import RunnerStub

REPO = Path(__file__).resolve().parent.parent.parent
POLICY = load_policy(ALL_PROPERTIES_POLICY_PATH)
PERMISSIVE = load_policy(REPO / "tests" / "corpus" / "policies" / "permissive.yaml")
ALICE = Principal(name="alice", scope=frozenset({"l1"}))
IDS = {rule.id for rule in catalogue.CATALOGUE}
STAGES = ("request", "parse", "guard", "scope", "sandbox")


class ExplainRefuses(RunnerStub):
    """A runner whose sandbox answers as Neo4j's EXPLAIN check does for a write."""

    def answer(self, job: SandboxJob) -> SandboxResult:
        error = SandboxError(code="explain_rejected", message="the plan is not read-only")
        return SandboxResult(query_id=job.query_id, ok=False, error=error)


class TooDeepAnswer(RunnerStub):
    """A runner whose sandbox met the wrapper's marker for a value nested too deep."""

    def answer(self, job: SandboxJob) -> SandboxResult:
        return SandboxResult(query_id=job.query_id, ok=False, error=SandboxError(code="too_deep", message="too deep"))


def test_every_rule_has_a_unique_id_a_sentence_and_a_stage_in_data_path_order() -> None:
    ids = [rule.id for rule in catalogue.CATALOGUE]
    assert len(ids) == len(set(ids))
    assert all(rule.sentence.endswith(".") for rule in catalogue.CATALOGUE)
    stages = [STAGES.index(rule.stage) for rule in catalogue.CATALOGUE]
    assert stages == sorted(stages)
    assert "param.invalid" not in IDS  # parameter names are the request's shape: input.invalid


def test_the_guards_rules_are_catalogue_entries_in_catalogue_order() -> None:
    entries = [rule.entry for rule in RULES]
    assert all(entry in catalogue.CATALOGUE for entry in entries)
    assert entries == [rule for rule in catalogue.CATALOGUE if rule.stage in ("parse", "guard")]


def _product_files() -> list[Path]:
    files = [*(REPO / "gateway").rglob("*.py"), *(REPO / "sandbox").rglob("*.py")]
    return [f for f in files if f != REPO / "gateway" / "catalogue.py"]


def test_no_product_code_spells_a_rule_id() -> None:
    # "load_csv" is also the parser's name for the clause's category, so only dotted ids are
    # looked for as bare strings; the next test covers every id where a rule is raised.
    dotted = {rule_id for rule_id in IDS if "." in rule_id}
    found = []
    for path in _product_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in dotted:
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: {node.value!r}")
    assert found == []


def test_every_place_that_answers_with_a_rule_takes_it_from_the_catalogue() -> None:
    # QueryRejected(rule, …), Decision(rule=…), CheckResult(rule=…): never a literal.
    literal = []
    for path in _product_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            args = [kw.value for kw in node.keywords if kw.arg == "rule"]
            if name == "QueryRejected" and node.args:
                args.append(node.args[0])
            literal += [
                f"{path.relative_to(REPO)}:{node.lineno}"
                for arg in args
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
            ]
    assert literal == []


def _corpus_example(rule_id: str) -> dict[str, Any]:
    rows = (REPO / "tests" / "corpus" / "guard.jsonl").read_text(encoding="utf-8").splitlines()
    # A blank query is the request's shape (input.invalid) before it is the parser's.
    return next(
        case
        for case in map(json.loads, rows)
        if case["expect"] == "deny" and case["rule"] == rule_id and case["query"].strip()
    )


def test_every_rule_in_the_catalogue_is_produced_by_some_request() -> None:
    produced: dict[str, str] = {}

    def through_check(policy: Policy, tool: Any, cypher: Any, params: Any) -> None:
        result = Gateway(policy, ExplainRefuses()).check(tool, cypher, params, ALICE)
        assert result.rule is not None, cypher
        produced[result.rule] = str(cypher)[:60]

    for rule in catalogue.CATALOGUE:
        if rule.stage in ("parse", "guard"):
            case = _corpus_example(rule.id)
            through_check(policy_for(case), case["tool"], case["query"], case["params"])  # type: ignore[arg-type]
    through_check(POLICY, "analyze", "   ", {})
    through_check(POLICY, "analyze", "RETURN 1 AS x", {"": 1})
    through_check(POLICY, "analyze", "MATCH (__gw_a) RETURN count(*) AS d", {})
    through_check(POLICY, "analyze", "RETURN 1 AS x", {"k" * 1000: 1})
    through_check(POLICY, "analyze", "MATCH (a) RETURN elementId(a) AS i", {})
    through_check(POLICY, "analyze", "MATCH " + ", ".join(["()"] * 500) + " RETURN 1 AS x", {})
    narrowing = Gateway(POLICY, ExplainRefuses()).check("analyze", "RETURN 1 AS x", {}, ALICE, scope=["l2"])
    produced[str(narrowing.rule)] = "a request scope wider than the principal's"
    unappliable = Gateway(POLICY, ExplainRefuses()).check("analyze", "RETURN 1 AS x", {}, ALICE, scope={"tenants": []})
    produced[str(unappliable.rule)] = "a request scope narrowing an attribute the policy does not read"
    # The Gateway refuses an unknown tool as the request's shape (input.invalid); the guard,
    # asked directly, names the tool itself.
    decision = guard.check("RETURN 1 AS x", {}, "delete_everything", POLICY)  # type: ignore[arg-type]
    produced[str(decision.rule)] = "guard.check with an unknown tool"
    runner = ExplainRefuses()
    try:
        Gateway(POLICY, runner).run("analyze", "MATCH (n:Fact) RETURN count(n) AS c", {}, ALICE)
    except QueryRejected as exc:
        produced[exc.rule] = "the sandbox's EXPLAIN check"
    assert len(runner.jobs) == 1
    try:
        Gateway(POLICY, TooDeepAnswer()).run("analyze", "MATCH (n:Fact) RETURN [[[[n]]]] AS c", {}, ALICE)
    except QueryRejected as exc:
        produced[exc.rule] = "an element nested past the projection wrapper"
    assert set(produced) == IDS, produced


def test_policy_show_prints_every_rule_with_its_sentence() -> None:
    shown = render_policy(POLICY)
    for rule in catalogue.CATALOGUE:
        assert rule.id in shown and rule.sentence[:40] in shown, rule.id


def test_policy_show_prints_the_sandbox_sharing() -> None:
    shown = render_policy(POLICY)
    assert "up to 100 queries of one principal per container" in shown and "'busy' after waiting 500 ms" in shown
    one_shot = POLICY.model_copy(update={"sandbox": POLICY.sandbox.model_copy(update={"max_queries_per_container": 1})})
    assert "sandbox: one query per container" in render_policy(one_shot)
