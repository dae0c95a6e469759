"""OAuth against a real issuer: Keycloak (started here, with the realm file docs/identity.md walks
through) mints the tokens, a real ``serve --transport http`` checks them, and the fastmcp client
calls the tools with them. The server is given only the issuer: it finds the key set through the
issuer's metadata. ``auth inspect``, doctor's identity check and roles from Keycloak groups are
held against the same issuer.

The realm has clients whose service-account tokens carry different ``layers`` claims and OAuth
scopes (agent-a: team-a, recall+analyze; agent-b: team-b+shared, analyze only), one without the
layers claim, one whose tokens are for another audience, and one (agent-payments) whose service
account is in the Keycloak group payments-readers, carried in a ``groups`` claim. Defective tokens are made from real
ones (expired, tampered, alg none) or signed with a fresh key (unknown kid). A wrong-issuer token
would need Keycloak's private key: tests/unit/test_oauth.py signs one with the issuer's own key.
"""

from __future__ import annotations

import base64
import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import jwt
import pytest
import yaml
from cryptography.hazmat.primitives.asymmetric import rsa
from fastmcp import Client as FastMCPClient
from fastmcp.client.transports import StreamableHttpTransport

from gateway.audit import AuditLog
from gateway.config import GatewaySettings
from gateway.connection import Neo4jConnection
from gateway.ops import keycloak
from gateway.ops.identity_check import IdentityProblem, check_identity
from gateway.policy import DEFAULT_POLICY_PATH, load_policy
from tests.support.env import clean_env, server_env
from tests.support.graph import labelled_graph, unique_label
from tests.support.paths import GATEWAY_CLI, REPO
from tests.support.server import start_http_server, stop

pytestmark = pytest.mark.keycloak

# The realm docs/identity.md describes: one file for the guide and the tests.
REALM_FILE = REPO / "docs" / "identity" / "cypher-gateway-test-realm.json"
REALM = "cypher-gateway-test"
# The resource URI the realm's audience mappers name: the gateway must listen where it says.
GATEWAY_PORT = 18766
RESOURCE = f"http://127.0.0.1:{GATEWAY_PORT}/mcp"
SECRETS = {
    c: f"{c}-local-test-secret"
    for c in ("agent-a", "agent-b", "agent-nolayers", "agent-elsewhere", "agent-shortlived", "agent-payments")
}


def _issuer() -> str:
    return f"{keycloak.base_url()}/realms/{REALM}"


@pytest.fixture(scope="module")
def issuer() -> str:
    try:
        seconds = keycloak.start(REALM_FILE, REALM)
    except keycloak.KeycloakSetupError as exc:
        pytest.fail(f"Keycloak is required and could not be started: {exc}", pytrace=False)
    print(f"[keycloak] start took {seconds:.1f} s")
    return _issuer()


def token_for(client: str) -> str:
    response = httpx.post(
        f"{_issuer()}/protocol/openid-connect/token",
        data={"grant_type": "client_credentials", "client_id": client, "client_secret": SECRETS[client]},
        timeout=30,
    )
    response.raise_for_status()
    return str(response.json()["access_token"])


class Served:
    def __init__(self, label: str, audit: Path, log: Path) -> None:
        self.label, self.audit, self.log = label, audit, log


@pytest.fixture(scope="module")
def served(
    issuer: str, neo4j_connection: Neo4jConnection, sandbox_image: str, neo4j_driver: Any,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Served]:  # fmt: skip
    label = unique_label("OAuth")
    seed = [f"UNWIND range(1, 3) AS i CREATE (:{label} {{i: i, layers: ['team-a']}})",
            f"UNWIND range(1, 2) AS i CREATE (:{label} {{i: 10 + i, layers: ['team-b']}})"]  # fmt: skip
    workdir = tmp_path_factory.mktemp("oauth-server")
    audit = workdir / "audit.jsonl"
    env = server_env(
        neo4j_connection, sandbox_image, audit, GATEWAY_OAUTH_ISSUER=issuer, GATEWAY_OAUTH_RESOURCE=RESOURCE,
        # No GATEWAY_OAUTH_JWKS_URL: the key set is found through the issuer's metadata.
        GATEWAY_OAUTH_NAME_CLAIM="azp",
        GATEWAY_OAUTH_LEEWAY_SECONDS="1",
        # A named list from a claim the realm's tokens carry (or lack: agent-nolayers).
        GATEWAY_OAUTH_ATTRIBUTE_CLAIMS="teams=layers",
    )  # fmt: skip
    log = workdir / "server.log"
    with labelled_graph(neo4j_driver, label, seed):
        process = start_http_server(env, [], log, GATEWAY_PORT)
        try:
            yield Served(label, audit, log)
        finally:
            stop(process)


def _count(token: str, label: str, tool: str = "analyze") -> Any:
    async def go() -> Any:
        transport = StreamableHttpTransport(RESOURCE, headers={"Authorization": f"Bearer {token}"})
        async with FastMCPClient(transport) as client:
            return await client.call_tool(tool, {"cypher": f"MATCH (n:{label}) RETURN count(n) AS c"},
                                          raise_on_error=False)  # fmt: skip

    return anyio.run(go)


def test_each_principal_sees_only_the_layers_its_token_carries(served: Served) -> None:
    a, b, none = token_for("agent-a"), token_for("agent-b"), token_for("agent-nolayers")
    assert _count(a, served.label).structured_content["rows"] == [[3]]
    assert _count(b, served.label).structured_content["rows"] == [[2]]
    # No layers claim: global-only, never everything.
    assert _count(none, served.label).structured_content["rows"] == [[0]]
    # agent-a holds the recall scope: whatever the recall policy says of this query, it is not the scope gate.
    assert "lacks the" not in str(_count(a, served.label, "recall").content)
    # agent-b holds analyze only: its recall call is a 403 insufficient_scope, which the client raises.
    with pytest.raises(BaseException):  # noqa: B017 - an ExceptionGroup around the HTTP 403
        _count(b, served.label, "recall")
    lines = AuditLog(served.audit).read()
    assert [line["principal"] for line in lines[:3]] == ["oauth:agent-a", "oauth:agent-b", "oauth:agent-nolayers"]
    # The claim became a named list; a token without it got an empty one, never everything.
    assert [line["attributes"] for line in lines[:3]] == [
        {"teams": ["team-a"]}, {"teams": ["shared", "team-b"]}, {"teams": []}
    ]  # fmt: skip
    for token in (a, b, none):
        assert token not in served.audit.read_text() and token not in served.log.read_text()


def _post(token: str) -> httpx.Response:
    info = {"name": "t", "version": "0"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": info}}  # fmt: skip
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json",
               "authorization": f"Bearer {token}"}  # fmt: skip
    return httpx.post(RESOURCE, json=init, headers=headers, timeout=30)


def _b64(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def test_defective_tokens_are_refused_with_invalid_token(served: Served) -> None:
    real = token_for("agent-a")
    header, payload, signature = real.split(".")
    claims = jwt.decode(real, options={"verify_signature": False})
    head = jwt.get_unverified_header(real)
    fresh = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    expiring = token_for("agent-shortlived")  # Keycloak gives it a 1 s lifespan; the server allows 1 s of skew
    time.sleep(3)
    defective = {
        "expired (a real token past its exp)": expiring,
        "wrong audience (a real token for another resource)": token_for("agent-elsewhere"),
        "tampered": f"{header}.{_b64({**claims, 'layers': ['team-a', 'team-b']})}.{signature}",
        "alg none": f"{_b64({**head, 'alg': 'none'})}.{payload}.",
        "unknown kid": jwt.encode(claims, fresh, algorithm="RS256", headers={"kid": uuid.uuid4().hex}),
    }
    for what, token in defective.items():
        response = _post(token)
        assert response.status_code == 401, what
        challenge = response.headers["www-authenticate"]
        assert 'error="invalid_token"' in challenge and "resource_metadata=" in challenge, what
    assert _post(real).status_code == 200


def test_protected_resource_metadata_names_keycloak(served: Served, issuer: str) -> None:
    document = httpx.get(f"http://127.0.0.1:{GATEWAY_PORT}/.well-known/oauth-protected-resource/mcp").json()
    assert document["resource"] == RESOURCE and document["authorization_servers"] == [issuer]


def _inspect(token: str, tmp_path: Path, *, policy: Path | None = None, **settings: str) -> tuple[int, str]:
    """``cypher-gateway auth inspect --json`` on ``token`` (from stdin), with the settings serve gets above."""
    env = clean_env(GATEWAY_OAUTH_ISSUER=_issuer(), GATEWAY_OAUTH_RESOURCE=RESOURCE, GATEWAY_OAUTH_NAME_CLAIM="azp",
                    GATEWAY_OAUTH_ATTRIBUTE_CLAIMS="teams=layers", GATEWAY_AUDIT_PATH=str(tmp_path / "audit.jsonl"),
                    **settings)  # fmt: skip
    if policy is not None:
        env["GATEWAY_POLICY_FILE"] = str(policy)
    done = subprocess.run([GATEWAY_CLI, "auth", "inspect", "--json"], input=token, capture_output=True, text=True,
                          env=env, timeout=120, check=False)  # fmt: skip
    assert token not in done.stdout + done.stderr
    return done.returncode, done.stdout


def test_auth_inspect_shows_what_a_good_token_gets_and_why_a_bad_one_is_refused(issuer: str, tmp_path: Path) -> None:
    status, out = _inspect(token_for("agent-b"), tmp_path)
    assert status == 0, out
    found = json.loads(out)
    assert found["principal"] == "oauth:agent-b" and found["issuer"] == issuer
    assert found["attributes"] == {"layers": ["shared", "team-b"], "teams": ["shared", "team-b"]}
    assert found["tools"] == ["analyze", "check", "schema"]  # agent-b holds the analyze scope only
    # agent-elsewhere's tokens name no audience at all (its client has no audience mapper).
    status, out = _inspect(token_for("agent-elsewhere"), tmp_path)
    assert status == 1 and json.loads(out) == {"accepted": False, "reason": "missing claim aud"}


def test_doctor_fails_a_wrong_jwks_url_with_the_fix(issuer: str) -> None:
    settings = GatewaySettings(oauth_issuer=issuer, oauth_resource=RESOURCE,
                               oauth_jwks_url=f"{issuer}/protocol/openid-connect/certz")  # fmt: skip
    with pytest.raises(IdentityProblem) as caught:
        check_identity(settings, load_policy())
    assert "certz" in caught.value.detail
    # The fix names the key set the issuer's own metadata publishes.
    assert f"({issuer}/protocol/openid-connect/certs)" in caught.value.fix
    sound = check_identity(settings.model_copy(update={"oauth_jwks_url": None}), load_policy())
    assert f"issuer {issuer} publishes its metadata" in sound and "RS256 allowed" in sound


def test_roles_come_from_keycloak_groups(issuer: str, tmp_path: Path) -> None:
    document = yaml.safe_load(DEFAULT_POLICY_PATH.read_text(encoding="utf-8"))
    document["roles"] = {"claim": "groups", "grants": {
        "payments-readers": {"tools": ["recall"], "attributes": {"repositories": ["acme/payments"]}},
        "infra-readers": {"tools": ["recall", "analyze"], "attributes": {"repositories": ["acme/infra"]}},
    }}  # fmt: skip
    policy = tmp_path / "roles.yaml"
    policy.write_text(yaml.safe_dump(document), encoding="utf-8")
    status, out = _inspect(token_for("agent-payments"), tmp_path, policy=policy)
    assert status == 0, out
    found = json.loads(out)
    assert found["roles"] == ["payments-readers"]
    assert found["attributes"]["repositories"] == ["acme/payments"]
    # The client holds no OAuth tool scope: recall comes from the role, and analyze from nothing.
    assert found["tools"] == ["recall", "check", "schema"]
    # A token in no group of the policy's roles gets nothing: refused.
    status, out = _inspect(token_for("agent-a"), tmp_path, policy=policy)
    assert status == 1 and json.loads(out)["reason"] == "claim groups names none of the policy's roles"
