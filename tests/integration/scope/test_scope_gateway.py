"""Scope through the product path: a composed Gateway -> real Docker sandbox -> real Neo4j.

Layer 1 alone (the rewrite) returns nothing hidden and redacts nothing; with the
rewrite switched off, layer 2 alone (the sandbox's result check) drops every
row holding a hidden element and marks the answer ``degraded: ["scope:redacted"]``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gateway.compose import compose
from gateway.config import GatewaySettings
from gateway.domain import LayerSwitches, Principal
from gateway.policy import load_policy
from gateway.runner import SandboxRunner
from gateway.service import Gateway
from tests.support.jobs import patient
from tests.support.rows import leaked_secrets

AGENT_A = Principal(name="agent-a", scope=frozenset({"project-a"}))
NOBODY = Principal(name="forgot-scope")

QUERIES = [
    "MATCH (f:Fact:ScopeFixture) RETURN f, f.text AS text",
    "MATCH p = (:Task {id: 'task-a1'})-[:HAS_ATTEMPT]->() RETURN p",
    "MATCH (s:Secret:ScopeFixture) RETURN collect(s) AS secrets",
]


@pytest.fixture(scope="module")
def runner(gateway_settings: GatewaySettings, docker_client: Any) -> Iterator[SandboxRunner]:
    composed = compose(gateway_settings, policy=patient(load_policy(gateway_settings.policy_file)), audit=False)
    assert composed.problems == [] and composed.runner is not None, composed.problems
    assert composed.runner.wait_ready(90), "the warm pool did not fill within 90 s"
    yield composed.runner
    composed.close()


def gateway(settings: GatewaySettings, runner: SandboxRunner, layers: LayerSwitches | None = None) -> Gateway:
    """A Gateway composed as `serve` composes it, sharing the module's runner."""
    return compose(settings, runner=runner, layers=layers, audit=False).gateway


@pytest.mark.parametrize("query", QUERIES)
def test_layer_one_alone_returns_nothing_hidden(
    scope_graph: Any, gateway_settings: GatewaySettings, runner: SandboxRunner, query: str
) -> None:
    result = gateway(gateway_settings, runner, LayerSwitches(result_check=False)).run("analyze", query, {}, AGENT_A)
    assert result.rows, "the scoped query returned nothing at all"
    assert leaked_secrets(result.rows, "SECRET-B") == []
    assert result.redacted == 0 and "scope:redacted" not in result.degraded


@pytest.mark.parametrize("query", QUERIES)
def test_layer_two_alone_drops_what_the_rewrite_was_switched_off_for(
    scope_graph: Any, gateway_settings: GatewaySettings, runner: SandboxRunner, query: str
) -> None:
    bare = gateway(gateway_settings, runner, LayerSwitches(scope_rewrite=False, result_check=False))
    assert leaked_secrets(bare.run("analyze", query, {}, AGENT_A).rows, "SECRET-B"), "nothing to catch"
    result = gateway(gateway_settings, runner, LayerSwitches(scope_rewrite=False)).run("analyze", query, {}, AGENT_A)
    assert leaked_secrets(result.rows, "SECRET-B") == []
    assert result.redacted > 0 and result.degraded == ["scope:redacted"]


def test_an_empty_scope_sees_only_global_elements_through_the_sandbox(
    scope_graph: Any, gateway_settings: GatewaySettings, runner: SandboxRunner
) -> None:
    query = "MATCH (f:Fact:ScopeFixture) RETURN f.id ORDER BY f.id"
    result = gateway(gateway_settings, runner).run("analyze", query, {}, NOBODY)
    assert result.rows == [["fact-g1"], ["fact-g2"]]


def test_check_shows_the_rewritten_query(gateway_settings: GatewaySettings, runner: SandboxRunner) -> None:
    checked = gateway(gateway_settings, runner).check("analyze", "MATCH (n:Secret) RETURN count(n)", {}, AGENT_A)
    assert checked.allowed and checked.rewritten is not None
    assert checked.rewritten.startswith("MATCH (n:Secret) WHERE (any(__gw_v IN [n.layers] ")
    assert "$__gw_scope" in checked.rewritten


BOTH = Principal(name="agent-ab", scope=frozenset({"project-a", "project-b"}))
# Whole nodes: the result check (layer 2) judges the elements an answer carries.
FACTS = "MATCH (f:Fact:ScopeFixture) RETURN f ORDER BY f.id"


@pytest.mark.parametrize(
    ("requested", "expected_layer_facts"),
    [
        (None, {"fact-a1", "fact-a2", "fact-b1", "fact-b2", "fact-ab"}),
        (["project-a"], {"fact-a1", "fact-a2", "fact-ab"}),
        ([], set()),
    ],
)
def test_a_request_scope_narrows_what_both_layers_let_through(
    scope_graph: Any,
    gateway_settings: GatewaySettings,
    runner: SandboxRunner,
    requested: list[str] | None,
    expected_layer_facts: set[str],
) -> None:
    for layers in (LayerSwitches(result_check=False), LayerSwitches(scope_rewrite=False)):
        result = gateway(gateway_settings, runner, layers).run("analyze", FACTS, {}, BOTH, scope=requested)
        seen = {row[0]["properties"]["id"] for row in result.rows}
        tagged = {fact for fact in seen if fact not in ("fact-g1", "fact-g2")}
        assert tagged == expected_layer_facts, (layers, requested, seen)
        assert "fact-g1" in seen  # global elements stay visible under any narrowing
