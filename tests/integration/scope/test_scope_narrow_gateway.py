"""A request's own ``scope`` narrows every attribute the policy reads, through ``Gateway``, a real
sandbox and Neo4j: the Mentis fixture under policies/mentis.yaml, whose rules read the caller's
``repositories`` (never ``layers``). Narrowing to one repository returns only it, with both layers,
the rewrite alone and the result check alone; a wider narrowing and one the policy cannot apply
are refused with their rules, before anything runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from gateway import catalogue
from gateway.connection import Neo4jConnection
from gateway.domain import LayerSwitches, Principal
from gateway.errors import QueryRejected
from gateway.mnr import seed
from gateway.policy import load_policy
from gateway.runner import SandboxRunner
from gateway.server import build_server, stdio_resolver
from gateway.service import Gateway

pytestmark = pytest.mark.neo4j2026  # runs on 5.26 and again on 2026.x

MENTIS = load_policy(Path(__file__).resolve().parents[3] / "policies" / "mentis.yaml")
DEV = Principal(name="mentis-agent", attributes={"repositories": frozenset({"acme/payments", "acme/storefront"})})
ONE = {"repositories": ["acme/payments"]}
SWITCHES = [{}, {"scope_rewrite": False}, {"result_check": False}]
SWITCH_IDS = ["both", "layer2-only", "layer1-only"]
REPOSITORIES = "MATCH (r:MentisFixture:Repository) RETURN r"
TASKS = "MATCH (r:MentisFixture:Repository)-[:HAS_TASK]->(t:Task) RETURN r, t"
PER_REPOSITORY = (
    "MATCH (r:MentisFixture:Repository)-[:HAS_TASK]->(:Task)-[:HAS_ATTEMPT]->(a:Attempt) "
    "RETURN r.name AS repository, count(a) AS attempts ORDER BY repository"
)


@pytest.fixture(scope="module")
def mentis(neo4j_connection: Neo4jConnection) -> None:
    assert seed.seed_builtin(neo4j_connection, "mentis") >= 5


def gateway(runner: SandboxRunner, switches: dict[str, bool] | None = None) -> Gateway:
    return Gateway(MENTIS, runner, layers=LayerSwitches(**(switches or {})))


def repositories(rows: list[list[Any]]) -> list[str]:
    return sorted({row[0]["properties"]["name"] for row in rows})


@pytest.mark.parametrize("switches", SWITCHES, ids=SWITCH_IDS)
def test_narrowing_to_one_repository_returns_only_it(
    sandbox_runner: SandboxRunner, mentis: None, switches: dict[str, bool]
) -> None:
    gw = gateway(sandbox_runner, switches)
    whole = gw.run("analyze", REPOSITORIES, {}, DEV)
    assert repositories(whole.rows) == ["acme/payments", "acme/storefront"]
    narrowed = gw.run("analyze", REPOSITORIES, {}, DEV, scope=ONE)
    assert repositories(narrowed.rows) == ["acme/payments"]
    # Derived from the repository: the other repository's tasks go with it.
    tasks = gw.run("analyze", TASKS, {}, DEV, scope=ONE)
    assert tasks.rowCount > 0 and repositories(tasks.rows) == ["acme/payments"]
    assert all(row[1]["properties"]["id"].startswith("PAY-") for row in tasks.rows)


def test_counts_see_only_the_narrowed_repository(sandbox_runner: SandboxRunner, mentis: None) -> None:
    gw = gateway(sandbox_runner)
    assert gw.run("analyze", PER_REPOSITORY, {}, DEV).rows == [["acme/payments", 4], ["acme/storefront", 1]]
    assert gw.run("analyze", PER_REPOSITORY, {}, DEV, scope=ONE).rows == [["acme/payments", 4]]
    assert gw.run("analyze", PER_REPOSITORY, {}, DEV, scope={"repositories": []}).rows == []


def test_narrowing_over_the_mcp_wire(sandbox_runner: SandboxRunner, mentis: None) -> None:
    server = build_server(gateway(sandbox_runner), stdio_resolver(DEV), resource_principal=DEV)

    async def go() -> Any:
        async with Client(server) as client:
            return await client.call_tool("analyze", {"cypher": PER_REPOSITORY, "scope": ONE})

    result = anyio.run(go)
    assert not result.is_error and result.structured_content["rows"] == [["acme/payments", 4]]


@pytest.mark.parametrize(
    "requested",
    [[], ["acme/payments"], {"layers": []}, {"tenants": ["t1"]}, {"repositories": ["acme/payments"], "teams": []}, {}],
    ids=["empty-list", "list", "layers", "unread-attribute", "one-unread-among-read", "empty-mapping"],
)
def test_a_narrowing_mentis_cannot_apply_is_refused_with_its_rule(
    sandbox_runner: SandboxRunner, mentis: None, requested: Any
) -> None:
    # Mentis's rules read repositories only: the list form narrows layers, which it never reads.
    gw = gateway(sandbox_runner)
    with pytest.raises(QueryRejected) as caught:
        gw.run("analyze", REPOSITORIES, {}, DEV, scope=requested)
    assert caught.value.rule == catalogue.SCOPE_UNAPPLIABLE.id
    checked = gw.check("analyze", REPOSITORIES, {}, DEV, scope=requested)
    assert not checked.allowed and checked.rule == catalogue.SCOPE_UNAPPLIABLE.id


@pytest.mark.parametrize("requested", [["umbrella/ops-secrets"], ["acme/payments", "umbrella/ops-secrets"]])
def test_a_repository_outside_the_callers_is_wider(
    sandbox_runner: SandboxRunner, mentis: None, requested: list[str]
) -> None:
    with pytest.raises(QueryRejected) as caught:
        gateway(sandbox_runner).run("analyze", REPOSITORIES, {}, DEV, scope={"repositories": requested})
    assert caught.value.rule == catalogue.SCOPE_WIDER.id
    assert "acme/storefront" not in caught.value.reason
