"""Scope through the product path: Gateway -> real Docker sandbox -> real Neo4j.

Layer 1 alone (the rewrite) returns nothing hidden and redacts nothing; with the
rewrite switched off, layer 2 alone (the sandbox's result check) drops every
row holding a hidden element and marks the answer ``degraded: ["scope:redacted"]``.
"""

from __future__ import annotations

from typing import Any

import pytest

from gateway.policy import load_policy
from gateway.runner import SandboxRunner
from gateway.service import Gateway, LayerSwitches, Principal
from tests.support.rows import leaked_secrets

AGENT_A = Principal(name="agent-a", scope=frozenset({"project-a"}))
NOBODY = Principal(name="forgot-scope")

QUERIES = [
    "MATCH (f:Fact:ScopeFixture) RETURN f, f.text AS text",
    "MATCH p = (:Task {id: 'task-a1'})-[:HAS_ATTEMPT]->() RETURN p",
    "MATCH (s:Secret:ScopeFixture) RETURN collect(s) AS secrets",
]


@pytest.fixture(scope="module")
def runner(sandbox_runner: SandboxRunner) -> SandboxRunner:
    return sandbox_runner


@pytest.mark.parametrize("query", QUERIES)
def test_layer_one_alone_returns_nothing_hidden(scope_graph: Any, runner: SandboxRunner, query: str) -> None:
    gateway = Gateway(load_policy(), runner, layers=LayerSwitches(result_check=False))
    result = gateway.run("analyze", query, {}, AGENT_A)
    assert result.rows, "the scoped query returned nothing at all"
    assert leaked_secrets(result.rows, "SECRET-B") == []
    assert result.redacted == 0 and "scope:redacted" not in result.degraded


@pytest.mark.parametrize("query", QUERIES)
def test_layer_two_alone_drops_what_the_rewrite_was_switched_off_for(
    scope_graph: Any, runner: SandboxRunner, query: str
) -> None:
    bare = Gateway(load_policy(), runner, layers=LayerSwitches(scope_rewrite=False, result_check=False))
    assert leaked_secrets(bare.run("analyze", query, {}, AGENT_A).rows, "SECRET-B"), "nothing to catch"
    gateway = Gateway(load_policy(), runner, layers=LayerSwitches(scope_rewrite=False))
    result = gateway.run("analyze", query, {}, AGENT_A)
    assert leaked_secrets(result.rows, "SECRET-B") == []
    assert result.redacted > 0 and result.degraded == ["scope:redacted"]


def test_an_empty_scope_sees_only_global_elements_through_the_sandbox(scope_graph: Any, runner: SandboxRunner) -> None:
    query = "MATCH (f:Fact:ScopeFixture) RETURN f.id ORDER BY f.id"
    result = Gateway(load_policy(), runner).run("analyze", query, {}, NOBODY)
    assert result.rows == [["fact-g1"], ["fact-g2"]]


def test_check_shows_the_rewritten_query(runner: SandboxRunner) -> None:
    checked = Gateway(load_policy(), runner).check("analyze", "MATCH (n:Secret) RETURN count(n)", {}, AGENT_A)
    assert checked.allowed and checked.rewritten is not None
    assert checked.rewritten.startswith("MATCH __gw_p1 = (n:Secret) WHERE ") and "$__gw_scope" in checked.rewritten
