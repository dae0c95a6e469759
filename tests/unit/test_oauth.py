"""OAuth resource server against a local issuer: a JWKS served over real HTTP, tokens signed here.

The gateway has no runner (nothing reaches Neo4j): these tests are about which tokens get
through the door, as whom, and with which tools. Keycloak itself is tested in tests/integration/oauth.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx
import jwt
import pytest
import uvicorn
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from gateway.audit import AuditLog
from gateway.auth import PRINCIPAL_SCOPE_KEY, TOOLS_SCOPE_KEY, BearerAuth, TokenEntry, TokenTable, ungranted_tool
from gateway.cli.audit import summarize
from gateway.cli.serve import http_app
from gateway.config import GatewaySettings
from gateway.domain import LayerSwitches, Principal
from gateway.oauth import (
    ClaimMapping,
    JwtVerifier,
    KeySet,
    OAuthConfigError,
    ResourceServer,
    TokenRefused,
    identity,
    resource_server,
)
from gateway.policy import load_policy
from gateway.roles import Roles
from gateway.server import build_server, stdio_resolver
from gateway.service import Gateway
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH
from tests.support.ports import free_port
from tests.support.waiting import wait_until

ISSUER = "http://127.0.0.1:1/realms/test"  # only compared, never fetched
STATIC = "static-" + uuid.uuid4().hex
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
CLIENT_INFO = {"name": "t", "version": "0"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": CLIENT_INFO}}  # fmt: skip


class Issuer:
    """A signing key and the JWKS document that publishes it."""

    def __init__(self, kid: str = "k1") -> None:
        self.kid = kid
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.fetches = 0

    def jwks(self) -> dict[str, Any]:
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [{**jwk, "kid": self.kid, "use": "sig", "alg": "RS256"}]}

    def token(self, audience: str, **claims: Any) -> str:
        now = int(time.time())
        body = {"iss": ISSUER, "aud": audience, "sub": "alice", "iat": now, "exp": now + 300, **claims}
        return jwt.encode({k: v for k, v in body.items() if v is not None}, self.key, algorithm="RS256",
                          headers={"kid": self.kid})  # fmt: skip


def _serve_app(app: Any, lifespan: Literal["on", "off"] = "off") -> tuple[uvicorn.Server, threading.Thread, int]:
    port = free_port()
    uv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan=lifespan))
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    wait_until(lambda: uv.started, timeout=60, what="uvicorn started", interval=0.05)
    return uv, thread, port


class Served:
    def __init__(self, url: str, resource: str, issuer: Issuer, audit: AuditLog, keys: KeySet) -> None:
        self.url, self.resource, self.issuer, self.audit, self.keys = url, resource, issuer, audit, keys


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[Served]:
    with _serving(tmp_path) as found:
        yield found


@contextlib.contextmanager
def _serving(tmp_path: Path, **more: Any) -> Iterator[Served]:
    """The HTTP app with OAuth on (``more``: further settings) in front of a gateway without a runner."""
    issuer = Issuer()

    async def jwks_app(scope: Any, receive: Any, send: Any) -> None:
        issuer.fetches += 1
        body = json.dumps(issuer.jwks()).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})

    jwks_uv, jwks_thread, jwks_port = _serve_app(jwks_app)
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    settings = GatewaySettings(
        http_port=port, audit_path=tmp_path / "audit.jsonl", oauth_issuer=ISSUER, oauth_resource=resource,
        oauth_jwks_url=f"http://127.0.0.1:{jwks_port}/certs", oauth_jwks_min_refresh_seconds=60, **more,
    )  # fmt: skip
    policy = load_policy(ALL_PROPERTIES_POLICY_PATH)
    oauth = resource_server(settings, read_attributes=policy.scope_attributes())
    assert oauth is not None
    audit = AuditLog(tmp_path / "audit.jsonl")
    gateway = Gateway(policy, runner=None, audit=audit, layers=LayerSwitches(scope_rewrite=False))
    server = build_server(gateway, stdio_resolver(Principal(name="stdio-must-not-be-used")))
    tokens = TokenTable([TokenEntry(name="static", token_sha256=hashlib.sha256(STATIC.encode()).hexdigest())])
    uv = uvicorn.Server(uvicorn.Config(http_app(server, settings, tokens, oauth=oauth), host="127.0.0.1", port=port,
                                       log_level="warning", lifespan="on"))  # fmt: skip
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    wait_until(lambda: uv.started, timeout=60, what="uvicorn started", interval=0.05)
    try:
        yield Served(resource, resource, issuer, audit, oauth.verifier.keys)
    finally:
        uv.should_exit = jwks_uv.should_exit = True
        thread.join(timeout=10)
        jwks_thread.join(timeout=10)


def _call(url: str, token: str, tool: str, args: dict[str, Any]) -> Any:
    async def go() -> Any:
        async with (
            create_mcp_http_client(headers={"authorization": f"Bearer {token}"}) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            return await client.call_tool(tool, args)

    return anyio.run(go)


def _post(served: Served, token: str | None) -> httpx.Response:
    headers = {**HEADERS, **({"authorization": f"Bearer {token}"} if token else {})}
    return httpx.post(served.url, json=INIT, headers=headers)


def test_protected_resource_metadata_is_published_without_a_token(served: Served) -> None:
    base = served.url.removesuffix("/mcp")
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        document = httpx.get(base + path).json()
        assert document["resource"] == served.resource
        assert document["authorization_servers"] == [ISSUER]
        assert document["scopes_supported"] == ["recall", "analyze"]
        assert document["bearer_methods_supported"] == ["header"]


def test_401_names_the_metadata_and_says_invalid_token(served: Served) -> None:
    metadata = f'resource_metadata="{served.url.removesuffix("/mcp")}/.well-known/oauth-protected-resource/mcp"'
    missing = _post(served, None)
    assert missing.status_code == 401
    assert metadata in missing.headers["www-authenticate"] and "error=" not in missing.headers["www-authenticate"]
    bad = _post(served, "not-a-jwt")
    assert bad.status_code == 401
    assert metadata in bad.headers["www-authenticate"] and 'error="invalid_token"' in bad.headers["www-authenticate"]


def test_defective_tokens_are_refused(served: Served) -> None:
    issuer, aud = served.issuer, served.resource
    now = int(time.time())
    good = issuer.token(aud)
    header, _payload, signature = good.split(".")
    forged_payload = jwt.utils.base64url_encode(
        json.dumps({**jwt.decode(good, options={"verify_signature": False}), "layers": ["secret"]}).encode()
    ).decode()
    stranger = Issuer(kid="fresh")  # a fresh key under a kid the issuer never published
    none_token = jwt.encode({"iss": ISSUER, "aud": aud, "sub": "alice", "exp": now + 300}, "", algorithm="none",
                            headers={"kid": issuer.kid})  # fmt: skip
    public_pem = issuer.key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    hs_token = _hs256_with_public_key(public_pem, {"iss": ISSUER, "aud": aud, "sub": "alice", "exp": now + 300},
                                      issuer.kid)  # fmt: skip
    defective = {
        "expired": issuer.token(aud, iat=now - 600, exp=now - 120),
        "not yet valid": issuer.token(aud, nbf=now + 600),
        "wrong audience": issuer.token("http://127.0.0.1:9/other"),
        "wrong issuer": issuer.token(aud, iss="http://127.0.0.1:1/realms/other"),
        "tampered": f"{header}.{forged_payload}.{signature}",
        "alg none": none_token,
        "hs256 with the public key": hs_token,
        "unknown kid": stranger.token(aud),
        "no exp": issuer.token(aud, exp=None),
    }
    for what, token in defective.items():
        response = _post(served, token)
        assert response.status_code == 401, what
        assert 'error="invalid_token"' in response.headers["www-authenticate"], what
    assert _post(served, good).status_code == 200
    assert served.audit.read() == []


def _hs256_with_public_key(secret: bytes, claims: dict[str, Any], kid: str) -> str:
    # PyJWT refuses a PEM public key as an HMAC secret; the attacker's own HMAC needs no library.
    import base64
    import hmac

    def b64(data: bytes) -> bytes:
        return base64.urlsafe_b64encode(data).rstrip(b"=")

    signing_input = (
        b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode()) + b"." + b64(json.dumps(claims).encode())
    )
    return (signing_input + b"." + b64(hmac.new(secret, signing_input, hashlib.sha256).digest())).decode()


def test_claims_become_the_principal_and_scopes_gate_tools(served: Served) -> None:
    aud = served.resource
    analyst = served.issuer.token(aud, sub="ann", layers=["team-a"], scope="openid analyze")
    result = _call(served.url, analyst, "analyze", {"cypher": "MATCH (n) RETURN count(n) AS c"})
    assert not result.is_error, result.content
    assert result.structured_content["degraded"] == ["analyze:disabled"]
    with pytest.raises(BaseException):  # noqa: B017 - the SDK raises an ExceptionGroup around the 403
        _call(served.url, analyst, "recall", {"cypher": "MATCH (n) RETURN count(n) AS c"})
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "recall", "arguments": {"cypher": "RETURN 1 AS x"}}}  # fmt: skip
    response = httpx.post(served.url, json=call, headers={**HEADERS, "authorization": f"Bearer {analyst}"})
    assert response.status_code == 403
    challenge = response.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge and 'scope="recall"' in challenge
    assert "resource_metadata=" in challenge
    # The static tokens file works beside OAuth, with every tool.
    static = _call(served.url, STATIC, "recall", {"cypher": "MATCH (n) RETURN count(n) AS c"})
    assert "lacks the" not in static.content[0].text
    principals = [line["principal"] for line in served.audit.read()]
    assert principals[0] == "oauth:ann"
    assert "static" in principals


def test_keys_are_fetched_once_and_again_only_for_an_unknown_kid(served: Served) -> None:
    for _ in range(3):
        assert _post(served, served.issuer.token(served.resource)).status_code == 200
    assert served.issuer.fetches == 1
    stranger = Issuer(kid="fresh")
    for _ in range(5):
        assert _post(served, stranger.token(served.resource)).status_code == 401
    # The key set was read under a minute ago (min_refresh_seconds): made-up kids ask the issuer nothing.
    assert served.issuer.fetches == 1


def test_the_scope_gate_reads_every_call_of_a_batch() -> None:
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "analyze", "arguments": {}}}
    assert ungranted_tool(json.dumps(call).encode(), frozenset()) == "analyze"
    assert ungranted_tool(json.dumps(call).encode(), frozenset({"analyze"})) is None
    other = {**call, "params": {"name": "check"}}
    assert ungranted_tool(json.dumps([other, call]).encode(), frozenset({"recall"})) == "analyze"
    assert ungranted_tool(b"not json", frozenset()) is None


def test_a_token_without_the_layers_claim_gets_empty_scope() -> None:
    claims = {"iss": ISSUER, "sub": "bob", "aud": "x", "exp": 1}
    found = identity(claims, ClaimMapping())
    assert found.principal.scope == frozenset() and found.tools == frozenset()
    assert identity({**claims, "groups": ["g1"]}, ClaimMapping(layers_claim="groups")).principal.scope == {"g1"}


@pytest.mark.parametrize("layers", [["__gw_scope"], ["__gwx"], [""], "a b __gw_scope", [1], {"a": 1}])
def test_no_claim_can_name_a_reserved_or_unusable_layer(layers: Any) -> None:
    with pytest.raises(TokenRefused):
        identity({"iss": ISSUER, "sub": "bob", "layers": layers}, ClaimMapping())


def test_unsafe_algorithms_are_refused_at_start() -> None:
    keys = KeySet("http://127.0.0.1:1/certs")
    for algorithms in (("none",), ("HS256",), ("RS256", "HS512"), ()):
        with pytest.raises(OAuthConfigError):
            JwtVerifier(issuer=ISSUER, audience="x", keys=keys, algorithms=algorithms)


def test_oauth_settings_must_be_complete_and_https() -> None:
    with pytest.raises(OAuthConfigError, match="oauth_resource"):
        resource_server(GatewaySettings(oauth_issuer=ISSUER, oauth_jwks_url=ISSUER + "/certs"))
    with pytest.raises(OAuthConfigError, match="https"):
        resource_server(GatewaySettings(oauth_issuer="http://idp.example/realms/x", oauth_resource="https://gw/mcp",
                                        oauth_jwks_url="https://idp.example/certs"))  # fmt: skip
    assert resource_server(GatewaySettings()) is None


def test_a_stale_key_set_is_read_again_after_its_max_age() -> None:
    issuer = Issuer()
    now = [0.0]
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json=issuer.jwks()))
    keys = KeySet("http://127.0.0.1:1/certs", min_refresh_seconds=30, max_age_seconds=3600, transport=transport,
                  clock=lambda: now[0])  # fmt: skip
    verifier = JwtVerifier(issuer=ISSUER, audience="r", keys=keys)
    token = issuer.token("r")
    verifier.verify(token)
    now[0] = 3000
    verifier.verify(token)
    assert keys.fetches == 1
    # An unknown kid reads the set again, then not again within min_refresh_seconds.
    for _ in range(3):
        with pytest.raises(TokenRefused, match="unknown kid"):
            verifier.verify(Issuer(kid="fresh").token("r"))
    assert keys.fetches == 2
    now[0] = 3000 + 3601  # past max_age_seconds since the last read
    verifier.verify(token)
    assert keys.fetches == 3


def test_the_tool_layer_refuses_an_ungranted_tool_even_past_the_middleware(tmp_path: Path) -> None:
    # A request that reached the tools without the middleware's body check (another wiring, a
    # future transport) is still held to the token's scopes.
    gateway = Gateway(load_policy(ALL_PROPERTIES_POLICY_PATH), runner=None, audit=AuditLog(tmp_path / "audit.jsonl"),
                      layers=LayerSwitches(scope_rewrite=False))  # fmt: skip
    server = build_server(gateway, stdio_resolver(Principal(name="stdio-must-not-be-used")))
    inner = server.streamable_http_app(streamable_http_path="/mcp", stateless_http=True, json_response=False,
                                       host="127.0.0.1")  # fmt: skip

    async def no_body_check(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":  # the lifespan events pass through to the SDK's app
            scope[PRINCIPAL_SCOPE_KEY] = Principal(name="oauth:ann")
            scope[TOOLS_SCOPE_KEY] = frozenset({"analyze"})
        await inner(scope, receive, send)

    uv, thread, port = _serve_app(no_body_check, lifespan="on")
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        refused = _call(url, "unused", "recall", {"cypher": "MATCH (n) RETURN count(n) AS c"})
        assert refused.is_error and "lacks the 'recall' scope" in refused.content[0].text
        served = _call(url, "unused", "analyze", {"cypher": "MATCH (n) RETURN count(n) AS c"})
        assert not served.is_error, served.content
    finally:
        uv.should_exit = True
        thread.join(timeout=10)


def _attribute_server(issuer: Issuer) -> ResourceServer:
    settings = GatewaySettings(
        oauth_issuer=ISSUER, oauth_resource="http://127.0.0.1:1/mcp", oauth_jwks_url="http://127.0.0.1:1/certs",
        oauth_attribute_claims={"repositories": "repos", "tenants": "tenant_ids"},
    )  # fmt: skip
    oauth = resource_server(settings, transport=httpx.MockTransport(lambda r: httpx.Response(200, json=issuer.jwks())))
    assert oauth is not None
    return oauth


def test_attribute_claims_become_named_lists_and_a_missing_one_is_empty() -> None:
    issuer = Issuer()
    verifier = _attribute_server(issuer).verifier
    aud = "http://127.0.0.1:1/mcp"
    found = verifier.verify(issuer.token(aud, layers=["l1"], repos=["acme/api", "acme/web"])).principal
    assert found.scope == {"l1"}
    assert found.attribute("repositories") == {"acme/api", "acme/web"}
    # No tenant_ids claim: an empty list (a rule reading tenants shows nothing), never everything.
    assert found.attribute("tenants") == frozenset()
    bare = verifier.verify(issuer.token(aud)).principal
    assert bare.scope == frozenset() and bare.attributes == {"repositories": frozenset(), "tenants": frozenset()}


@pytest.mark.parametrize(
    ("repos", "reason"),
    [
        ("acme/api", "claim repos (repositories) is not a list of strings"),
        ("acme/api acme/web", "claim repos (repositories) is not a list of strings"),
        ([1], "claim repos (repositories) is not a list of strings"),
        ({"acme": "api"}, "claim repos (repositories) is not a list of strings"),
        (["acme/api", None], "claim repos (repositories) is not a list of strings"),
        (["__gw_scope"], "claim repos holds a reserved or unusable value"),
        ([""], "claim repos holds a reserved or unusable value"),
        ([f"r{i}" for i in range(300)], "claim repos holds over 256 values"),
    ],
)
def test_a_malformed_attribute_claim_is_401_invalid_token_with_its_reason(repos: Any, reason: str) -> None:
    issuer = Issuer()
    oauth = _attribute_server(issuer)
    seen: list[Principal] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope[PRINCIPAL_SCOPE_KEY])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    auth = BearerAuth(app, None, max_body_bytes=100_000, oauth=oauth)

    async def post(token: str) -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(auth), base_url="http://127.0.0.1:1") as client:
            return await client.post("/mcp", json=INIT, headers={**HEADERS, "authorization": f"Bearer {token}"})

    aud = "http://127.0.0.1:1/mcp"
    refused = anyio.run(post, issuer.token(aud, repos=repos))
    assert refused.status_code == 401
    assert 'error="invalid_token"' in refused.headers["www-authenticate"]
    assert reason in refused.json()["message"]
    assert seen == []
    accepted = anyio.run(post, issuer.token(aud, repos=["acme/api"]))
    assert accepted.status_code == 200 and seen[0].attribute("repositories") == {"acme/api"}


@pytest.mark.parametrize("name", ["__gw_scope", "__gwx", "layers", "repo-names"])
def test_a_claim_mapping_refuses_reserved_or_unusable_attribute_names(name: str) -> None:
    with pytest.raises(OAuthConfigError, match="oauth_attribute_claims"):
        ClaimMapping(attribute_claims={name: "groups"})


FORGED_SUBJECT = "mallory\n     500  oauth:alice\x1b[8m"


def test_a_subject_that_could_forge_an_audit_row_is_refused_at_the_door(served: Served) -> None:
    forged = served.issuer.token(served.resource, sub=FORGED_SUBJECT, scope="recall analyze")
    response = _post(served, forged)
    assert response.status_code == 401
    assert 'error="invalid_token"' in response.headers["www-authenticate"]
    message = response.json()["message"]
    assert "claim sub is not a usable name: it holds the character U+000A (a control character)" in message
    assert "mallory" not in response.text
    hidden = served.issuer.token(served.resource, sub="mallory\u202e", scope="recall analyze")
    assert _post(served, hidden).status_code == 401
    # Nothing ran as anyone, and no line holds the forged text.
    assert all("mallory" not in json.dumps(line) for line in served.audit.read())
    assert _post(served, served.issuer.token(served.resource, sub="mallory")).status_code == 200


def test_a_static_principal_and_an_oauth_subject_are_two_audit_identities(served: Served) -> None:
    subject = served.issuer.token(served.resource, sub="static", scope="recall analyze")
    for token in (subject, STATIC):
        result = _call(served.url, token, "check", {"tool": "analyze", "cypher": "MATCH (n) RETURN count(n) AS c"})
        assert not result.is_error, result.content
    lines = served.audit.read()
    assert [(line["principal_source"], line["principal"], line["subject"]) for line in lines] == [
        ("oauth", "oauth:static", "static"), ("tokens", "static", None)]  # fmt: skip


def test_a_token_lacking_a_mapped_claim_is_warned_about_in_every_answer_and_audit_line(tmp_path: Path) -> None:
    # The mapping names a claim the issuer does not send (it sends ``repos``).
    with _serving(tmp_path, oauth_attribute_claims={"repositories": "repositories"}) as served:
        query = {"cypher": "MATCH (n) RETURN count(n) AS c"}
        lacking = served.issuer.token(served.resource, layers=["team-a"], repos=["acme/api"], scope="analyze")
        result = _call(served.url, lacking, "analyze", query)
        assert not result.is_error, result.content
        answer = result.structured_content
        assert answer["degraded"] == ["analyze:disabled", "identity:claim-missing"]
        reason = answer["degradedReason"]
        assert "the token carries no claim 'repositories' (mapped to attribute repositories)" in reason
        assert "it carries: aud, exp, iat, iss, layers, repos, scope, sub." in reason
        assert "acme/api" not in reason and "team-a" not in reason  # claim names only, never values
        schema = _call(served.url, lacking, "schema", {}).structured_content
        assert "identity:claim-missing" in schema["degraded"] and "'repositories'" in schema["degradedReason"]
        # The same claim present under the mapped name: no warning.
        carrying = served.issuer.token(served.resource, layers=["team-a"], repositories=["acme/api"], scope="analyze")
        assert _call(served.url, carrying, "analyze", query).structured_content["degraded"] == ["analyze:disabled"]
        lines = served.audit.read()
    assert [line["tool"] for line in lines] == ["analyze", "schema", "analyze"]
    warned, schema_line, clean = lines
    assert warned["missing_claims"] == ["repositories"] and "identity:claim-missing" in warned["degraded"]
    # Still fail closed: the list the rules read is empty, the token was not refused.
    assert warned["attributes"] == {"repositories": []} and warned["decision"] == "degraded"
    assert schema_line["missing_claims"] == ["repositories"]
    assert clean["missing_claims"] is None and clean["attributes"] == {"repositories": ["acme/api"]}
    assert "identity:claim-missing" not in clean["degraded"]
    # `audit summary` counts the warned answers beside the other degraded markers.
    assert summarize(lines)["degraded"] == {"analyze:disabled": 3, "identity:claim-missing": 2}


def test_a_missing_layers_claim_is_reported_only_when_the_policy_reads_layers() -> None:
    claims = {"iss": ISSUER, "sub": "alice", "team": ["a"]}
    read = identity(claims, ClaimMapping(layers_read=True))
    assert read.principal.scope == frozenset() and read.missing_claims == {"layers": "layers"}
    assert read.carried_claims == ("iss", "sub", "team")
    assert identity(claims, ClaimMapping()).claim_warning() is None
    assert identity({**claims, "layers": []}, ClaimMapping(layers_read=True)).claim_warning() is None
    # A role's grant that fills the list leaves nothing silently empty; one that does not, is reported.
    roles = Roles.model_validate({"claim": "groups", "grants": {
        "infra": {"tools": ["recall"], "attributes": {"layers": ["infra"]}},
        "payments": {"tools": ["recall"], "attributes": {"repositories": ["acme/payments"]}}}})  # fmt: skip
    mapping = ClaimMapping(layers_read=True, attribute_claims={"repositories": "repos"}, roles=roles)
    infra = identity({**claims, "groups": ["infra"]}, mapping)
    assert infra.principal.scope == {"infra"} and infra.missing_claims == {"repositories": "repos"}
    payments = identity({**claims, "groups": ["payments"]}, mapping)
    assert payments.missing_claims == {"layers": "layers"}
    many = {**claims, **{f"c{i:02}\n": 1 for i in range(50)}}
    named = identity(many, ClaimMapping(layers_read=True)).carried_claims
    assert len(named) == 41 and named[-1] == "… 13 more" and named[0] == "c00\\x0a"


@pytest.mark.parametrize("value", [None, "", "  "])
def test_a_mapped_claim_present_but_null_or_empty_is_reported_like_a_missing_one(value: Any) -> None:
    claims = {"iss": ISSUER, "sub": "alice", "layers": value, "repos": value}
    mapping = ClaimMapping(layers_read=True, attribute_claims={"repositories": "repos"})
    empty = identity(claims, mapping)
    # Still accepted, fail closed: both lists empty, and both claims named in the warning.
    assert empty.principal.scope == frozenset() and empty.principal.attribute("repositories") == frozenset()
    assert empty.missing_claims == {"layers": "layers", "repositories": "repos"}
    warning = empty.claim_warning()
    assert warning is not None
    assert "a null or empty claim 'layers' (mapped to attribute layers)" in warning
    assert "a null or empty claim 'repos' (mapped to attribute repositories)" in warning
    assert "it carries: iss, layers, repos, sub." in warning
    # An absent claim keeps its own words; an empty list is a value (global only), not a missing claim.
    absent = identity({"iss": ISSUER, "sub": "alice", "repos": value}, mapping).claim_warning()
    assert absent is not None and "no claim 'layers' (mapped to attribute layers)" in absent
    assert identity({**claims, "layers": [], "repos": []}, ClaimMapping(layers_read=True)).claim_warning() is None
