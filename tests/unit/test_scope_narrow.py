"""A request narrows its principal's scope, never widens it: both layers see only what it asked for."""

from __future__ import annotations

import pytest

from gateway import catalogue
from gateway.domain import Principal
from gateway.errors import QueryRejected
from gateway.policy import load_policy
from gateway.scope.narrow import narrowed
from gateway.service import Gateway
from tests.support.stub_runner import RunnerStub

POLICY = load_policy()
SCOPE_KEY = POLICY.scope.scope_parameter
ALICE = Principal(name="alice", scope=frozenset({"project-a", "project-b"}))
QUERY = "MATCH (f:Fact) RETURN f.text AS text"


def test_no_narrowing_keeps_the_principal() -> None:
    assert narrowed(ALICE, None) == ALICE


def test_a_subset_narrows_and_keeps_the_name() -> None:
    seen = narrowed(ALICE, ["project-a", "project-a"])
    assert seen.name == "alice" and seen.scope == frozenset({"project-a"})


def test_an_empty_narrowing_is_global_only_not_everything() -> None:
    assert narrowed(ALICE, []).scope == frozenset()


@pytest.mark.parametrize("requested", [["project-c"], ["project-a", "project-c"], [""]])
def test_a_layer_outside_the_principal_is_refused_naming_it(requested: list[str]) -> None:
    with pytest.raises(QueryRejected) as caught:
        narrowed(ALICE, requested)
    assert caught.value.rule == catalogue.SCOPE_WIDER.id
    assert "project-c" in caught.value.reason or "''" in caught.value.reason
    assert "project-b" not in caught.value.reason  # nothing of what the principal holds


def test_an_empty_principal_cannot_widen_itself() -> None:
    with pytest.raises(QueryRejected):
        narrowed(Principal(name="nobody"), ["project-a"])


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
