"""A reviewer's question answered from the audit log of a server Keycloak's tokens reached: "who read
acme/infra?". The Mentis policy (recall pinned to ``$repository``) grants its repositories through
roles from the Keycloak group claim, so the principal, its role and the pinned repository all come
from the real issuer and the real server; ``audit summary`` answers from the file it wrote.

Its own module: the server must listen on the port the realm's audience names, which the other
Keycloak module's server holds for that module's lifetime.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from fastmcp import Client as FastMCPClient
from fastmcp.client.transports import StreamableHttpTransport

from gateway.connection import Neo4jConnection
from gateway.ops import keycloak
from gateway.policy import DEFAULT_POLICY_PATH
from tests.integration.oauth.test_oauth_keycloak import GATEWAY_PORT, REALM, REALM_FILE, RESOURCE, token_for
from tests.support.env import clean_env, server_env
from tests.support.paths import GATEWAY_CLI
from tests.support.server import start_http_server, stop

pytestmark = pytest.mark.keycloak

MENTIS = Path(DEFAULT_POLICY_PATH).parent / "mentis.yaml"
RECALL = "MATCH (r:Repository {name: $repository})<-[:IN]-(t:Task {id: $taskId}) RETURN count(t) AS c"


def _recall(token: str, repository: str, task: str) -> Any:
    async def go() -> Any:
        transport = StreamableHttpTransport(RESOURCE, headers={"Authorization": f"Bearer {token}"})
        async with FastMCPClient(transport) as client:
            arguments = {"cypher": RECALL, "params": {"repository": repository, "taskId": task}}
            return await client.call_tool("recall", arguments, raise_on_error=False)

    return anyio.run(go)


def _summary(audit: Path, *arguments: str) -> Any:
    done = subprocess.run([GATEWAY_CLI, "audit", "summary", "--path", str(audit), "--json", *arguments],
                          capture_output=True, text=True, env=clean_env(), timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_who_read_acme_infra_is_one_audit_summary(
    neo4j_connection: Neo4jConnection, sandbox_image: str, tmp_path: Path
) -> None:
    try:
        keycloak.start(REALM_FILE, REALM)
    except keycloak.KeycloakSetupError as exc:
        pytest.fail(f"Keycloak is required and could not be started: {exc}", pytrace=False)
    document = yaml.safe_load(MENTIS.read_text(encoding="utf-8"))
    document["sandbox"]["busy_wait_ms"] = 10_000  # back to back on a small machine: answers, not "busy"
    document["roles"] = {"claim": "groups", "grants": {
        "payments-readers": {"tools": ["recall"], "attributes": {"repositories": ["acme/payments", "acme/infra"]}},
    }}  # fmt: skip
    policy = tmp_path / "mentis-roles.yaml"
    policy.write_text(yaml.safe_dump(document), encoding="utf-8")
    audit = tmp_path / "audit.jsonl"
    env = server_env(neo4j_connection, sandbox_image, audit, GATEWAY_POLICY_FILE=str(policy),
                     GATEWAY_OAUTH_ISSUER=f"{keycloak.base_url()}/realms/{REALM}", GATEWAY_OAUTH_RESOURCE=RESOURCE,
                     GATEWAY_OAUTH_NAME_CLAIM="azp")  # fmt: skip
    process = start_http_server(env, [], tmp_path / "server.log", GATEWAY_PORT)
    try:
        token = token_for("agent-payments")
        for repository, task in (("acme/infra", "t1"), ("acme/payments", "t2"), ("acme/payments", "t3")):
            answer = _recall(token, repository, task)
            assert not answer.is_error, answer
    finally:
        stop(process)

    # Who read acme/infra? The Keycloak client, named by its azp claim, once.
    assert _summary(audit, "--where", "repository=acme/infra", "--by", "principal") == {
        "oauth:agent-payments": {"calls": 1, "answered": 1}
    }
    # Through which role's grant: every call held both repositories, from the group's role.
    assert _summary(audit, "--by", "attribute:repositories") == {
        "acme/infra": {"calls": 3, "answered": 3}, "acme/payments": {"calls": 3, "answered": 3}
    }  # fmt: skip
    lines = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
    recalls = [line for line in lines if line.get("tool") == "recall"]
    assert [line["pinned"] for line in recalls] == [
        {"repository": "acme/infra", "taskId": "t1"}, {"repository": "acme/payments", "taskId": "t2"},
        {"repository": "acme/payments", "taskId": "t3"}]  # fmt: skip
    assert {line["principal_source"] for line in recalls} == {"oauth"}
