"""A request narrows its principal's scope, never widens it, for every attribute the policy reads:
both layers see only what it asked for, and a narrowing the policy cannot apply is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway import catalogue
from gateway.domain import Principal
from gateway.errors import InvalidInput, QueryRejected
from gateway.policy import Policy, load_policy
from gateway.scope.narrow import narrowed
from gateway.service import Gateway
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH
from tests.support.stub_runner import RunnerStub

POLICY = load_policy(ALL_PROPERTIES_POLICY_PATH)
POLICIES = Path(__file__).resolve().parents[2] / "policies"
MENTIS = load_policy(POLICIES / "mentis.yaml")
RULES = load_policy(Path(__file__).resolve().parents[1] / "policies" / "rules.yaml")
SCOPE_KEY = POLICY.scope.scope_parameter
ALICE = Principal(name="alice", scope=frozenset({"project-a", "project-b"}))
QUERY = "MATCH (f:Fact) RETURN f.text AS text"


def test_no_narrowing_keeps_the_principal() -> None:
    assert narrowed(ALICE, None, POLICY) == ALICE


def test_a_subset_narrows_and_keeps_the_name() -> None:
    seen = narrowed(ALICE, ["project-a", "project-a"], POLICY)
    assert seen.name == "alice" and seen.scope == frozenset({"project-a"})


def test_an_empty_narrowing_is_global_only_not_everything() -> None:
    assert narrowed(ALICE, [], POLICY).scope == frozenset()


@pytest.mark.parametrize("requested", [["project-c"], ["project-a", "project-c"], [""]])
def test_a_layer_outside_the_principal_is_refused_naming_it(requested: list[str]) -> None:
    with pytest.raises(QueryRejected) as caught:
        narrowed(ALICE, requested, POLICY)
    assert caught.value.rule == catalogue.SCOPE_WIDER.id
    assert "project-c" in caught.value.reason or "''" in caught.value.reason
    assert "project-b" not in caught.value.reason  # nothing of what the principal holds


def test_an_empty_principal_cannot_widen_itself() -> None:
    with pytest.raises(QueryRejected):
        narrowed(Principal(name="nobody"), ["project-a"], POLICY)


def test_both_layers_of_a_run_get_the_narrowed_layers_and_the_container_stays_the_principals() -> None:
    runner = RunnerStub()
    Gateway(POLICY, runner).run("analyze", QUERY, {}, ALICE, scope=["project-b"])
    job = runner.jobs[0]
    assert job.params[SCOPE_KEY] == ["project-b"]
    assert job.scope is not None and job.scope.layers == ["project-b"]
    assert runner.principals == [ALICE]


def test_a_wider_run_is_refused_before_any_sandbox_job() -> None:
    runner = RunnerStub()
    with pytest.raises(QueryRejected) as caught:
        Gateway(POLICY, runner).run("analyze", QUERY, {}, ALICE, scope=["project-z"])
    assert caught.value.rule == catalogue.SCOPE_WIDER.id and runner.jobs == []


def test_check_says_the_rule_for_a_wider_scope() -> None:
    result = Gateway(POLICY, RunnerStub()).check("analyze", QUERY, {}, ALICE, scope=["project-z"])
    assert not result.allowed and result.rule == catalogue.SCOPE_WIDER.id


DEV = Principal(
    name="dev",
    scope=frozenset({"team"}),
    attributes={"repositories": frozenset({"acme/payments", "acme/storefront"}), "tenants": frozenset({"t1"})},
)


def test_a_mapping_narrows_the_attribute_it_names_and_keeps_the_others() -> None:
    seen = narrowed(DEV, {"repositories": ["acme/payments"]}, RULES)
    assert seen.attribute("repositories") == frozenset({"acme/payments"})
    assert seen.scope == DEV.scope and seen.attribute("tenants") == frozenset({"t1"})


def test_a_mapping_may_narrow_layers_and_another_attribute_at_once() -> None:
    seen = narrowed(DEV, {"layers": [], "repositories": []}, RULES)
    assert seen.scope == frozenset() and seen.attribute("repositories") == frozenset()


def test_a_value_outside_the_principals_list_for_that_attribute_is_wider() -> None:
    with pytest.raises(QueryRejected) as caught:
        narrowed(DEV, {"repositories": ["umbrella/ops-secrets"]}, MENTIS)
    assert caught.value.rule == catalogue.SCOPE_WIDER.id
    assert "umbrella/ops-secrets" in caught.value.reason and "acme/storefront" not in caught.value.reason


@pytest.mark.parametrize(
    ("policy", "requested"),
    [
        (MENTIS, []),  # the list form narrows layers, which mentis's rules never read
        (MENTIS, ["team"]),
        (MENTIS, {"layers": []}),
        (MENTIS, {"tenants": ["t1"]}),  # the principal holds it, the policy does not read it
        (RULES, {"tenants": []}),
        (RULES, {"repositories": ["acme/payments"], "projects": []}),
        (POLICY, {}),  # names nothing to narrow
    ],
)
def test_a_narrowing_the_policy_cannot_apply_is_refused_never_ignored(policy: Policy, requested: object) -> None:
    with pytest.raises(QueryRejected) as caught:
        narrowed(DEV, requested, policy)  # type: ignore[arg-type]
    assert caught.value.rule == catalogue.SCOPE_UNAPPLIABLE.id


def test_unappliable_is_decided_before_wider_so_the_answer_never_depends_on_what_the_principal_holds() -> None:
    with pytest.raises(QueryRejected) as caught:
        narrowed(Principal(name="nobody"), {"repositories": ["x"], "tenants": ["y"]}, RULES)
    assert caught.value.rule == catalogue.SCOPE_UNAPPLIABLE.id


@pytest.mark.parametrize("requested", ["project-a", ["project-a", 1], {"layers": "project-a"}, {"layers": [None]}])
def test_a_scope_of_another_shape_is_invalid_input(requested: object) -> None:
    with pytest.raises(InvalidInput):
        narrowed(ALICE, requested, POLICY)  # type: ignore[arg-type]


def test_a_mapping_narrows_both_layers_of_a_run() -> None:
    runner = RunnerStub()
    Gateway(MENTIS, runner).run("analyze", "MATCH (r:Repository) RETURN r.name AS n", {}, DEV,
                                scope={"repositories": ["acme/payments"]})  # fmt: skip
    job = runner.jobs[0]
    assert job.params["__gw_attr_repositories"] == ["acme/payments"]
    assert job.scope is not None and job.scope.nodes["Repository"].values == ["acme/payments"]
    assert runner.principals == [DEV]


def test_check_says_the_rule_for_an_unappliable_scope() -> None:
    # A key the Mentis allow-list shows: the answer is the scope's rule, not the property's.
    query = "MATCH (t:Task) RETURN t.title AS title"
    result = Gateway(MENTIS, RunnerStub()).check("analyze", query, {}, DEV, scope=[])
    assert not result.allowed and result.rule == catalogue.SCOPE_UNAPPLIABLE.id
