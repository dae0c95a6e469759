"""HTTP transport security, over real HTTP (uvicorn) with the SDK's own client.

The gateway here has no runner (runner=None), so nothing can reach Neo4j and a
served tool call answers ``degraded: ["analyze:disabled"]``: these tests are
about who gets through the door, not about queries.
"""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from gateway.audit import AuditLog
from gateway.auth import AuthConfigError, TokenEntry, TokenTable, bearer_token
from gateway.cli.serve import http_app
from gateway.config import GatewaySettings
from gateway.domain import LayerSwitches, Principal
from gateway.policy import load_policy
from gateway.server import build_server, stdio_resolver
from gateway.service import Gateway
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH
from tests.support.ports import free_port
from tests.support.waiting import wait_until

GOOD = "good-" + uuid.uuid4().hex
OTHER = "other-" + uuid.uuid4().hex
MAX_BODY = 20_000
CLIENT_INFO = {"name": "t", "version": "0"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": CLIENT_INFO}}  # fmt: skip
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


class Served:
    def __init__(self, url: str, audit: AuditLog) -> None:
        self.url, self.audit = url, audit


def _serve(tokens: TokenTable | None, tmp_path: Path) -> Iterator[Served]:
    audit = AuditLog(tmp_path / "audit.jsonl")
    # No runner, so nothing can run; the scope rewrite is off only so a served call reaches
    # the (absent) sandbox and answers degraded instead of being refused by scope.
    gateway = Gateway(
        load_policy(ALL_PROPERTIES_POLICY_PATH), runner=None, audit=audit, layers=LayerSwitches(scope_rewrite=False)
    )
    server = build_server(gateway, stdio_resolver(Principal(name="stdio-must-not-be-used")))
    port = free_port()
    settings = GatewaySettings(http_port=port, http_max_body_bytes=MAX_BODY, audit_path=tmp_path / "audit.jsonl")
    uv = uvicorn.Server(uvicorn.Config(http_app(server, settings, tokens), host="127.0.0.1", port=port,
                                       log_level="warning", lifespan="on"))  # fmt: skip
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    wait_until(lambda: uv.started, timeout=60, what="uvicorn started", interval=0.05)
    yield Served(f"http://127.0.0.1:{port}/mcp", audit)
    uv.should_exit = True
    thread.join(timeout=10)


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[Served]:
    table = TokenTable([
        TokenEntry(name="alice", scope=frozenset({"layer-a"}), token=GOOD),
        TokenEntry(name="bob", token_sha256=hashlib.sha256(OTHER.encode()).hexdigest()),
    ])  # fmt: skip
    yield from _serve(table, tmp_path)


def _call(url: str, token: str | None, tool: str, args: dict[str, Any]) -> Any:
    async def go() -> Any:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        async with (
            create_mcp_http_client(headers=headers) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            return await client.call_tool(tool, args)

    return anyio.run(go)


def test_no_token_is_refused_with_401(served: Served) -> None:
    response = httpx.post(served.url, json=INIT, headers=HEADERS)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert served.audit.read() == []


def test_wrong_token_is_refused_with_401(served: Served) -> None:
    for bad in (GOOD + "x", GOOD[:-1], "Basic " + GOOD, OTHER.upper(), "x"):
        response = httpx.post(served.url, json=INIT, headers={**HEADERS, "authorization": f"Bearer {bad}"})
        assert response.status_code == 401, bad
    # Not a bearer scheme at all.
    response = httpx.post(served.url, json=INIT, headers={**HEADERS, "authorization": f"Basic {GOOD}"})
    assert response.status_code == 401


def test_mcp_client_without_token_cannot_call_a_tool(served: Served) -> None:
    with pytest.raises(BaseException):  # noqa: B017 - the SDK raises an ExceptionGroup around the 401
        _call(served.url, None, "analyze", {"cypher": "MATCH (n) RETURN count(n) AS c"})
    assert served.audit.read() == []


def test_right_token_is_served_as_its_principal(served: Served) -> None:
    result = _call(served.url, GOOD, "analyze", {"cypher": "MATCH (n) RETURN count(n) AS c"})
    assert not result.is_error, result.content
    # No runner in this test: the answer is degraded and carries no rows.
    assert result.structured_content["degraded"] == ["analyze:disabled"]
    assert result.structured_content["rows"] == []
    result = _call(served.url, OTHER, "check", {"cypher": "MATCH (n) RETURN n.x AS x", "tool": "analyze"})
    assert not result.is_error
    lines = served.audit.read()
    assert [(line["principal"], line["transport"], line["tool"]) for line in lines] == [
        ("alice", "http", "analyze"), ("bob", "http", "check")]  # fmt: skip
    assert lines[1]["checked_tool"] == "analyze" and lines[1]["decision"] == "allowed"
    assert lines[0]["decision"] == "degraded" and lines[0]["degraded"] == ["analyze:disabled"]


def test_oversized_body_is_refused_with_413(served: Served) -> None:
    big = {**INIT, "pad": "x" * (MAX_BODY + 1)}
    response = httpx.post(served.url, json=big, headers={**HEADERS, "authorization": f"Bearer {GOOD}"})
    assert response.status_code == 413
    # Without a token the answer is 401 before the body matters.
    response = httpx.post(served.url, json=big, headers=HEADERS)
    assert response.status_code == 401


def test_oversized_chunked_body_is_refused(served: Served) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"'
        for _ in range(10):
            yield b"y" * 4096
        yield b'"}}'

    response = httpx.post(served.url, content=chunks(), headers={**HEADERS, "authorization": f"Bearer {GOOD}"})
    assert response.status_code == 413


def test_insecure_no_auth_serves_anonymous(tmp_path: Path) -> None:
    for served in _serve(None, tmp_path):
        result = _call(served.url, None, "analyze", {"cypher": "MATCH (n) RETURN count(n) AS c"})
        assert not result.is_error
        assert served.audit.read()[0]["principal"] == "anonymous"


# --- the token table alone -------------------------------------------------------------------------


def test_token_table_matches_only_exact_tokens() -> None:
    table = TokenTable([TokenEntry(name="alice", token=GOOD)])
    alice = table.authenticate(GOOD)
    assert alice is not None and alice.name == "alice"
    assert table.authenticate(GOOD + " ") is None
    assert table.authenticate("") is None


def test_token_file_errors_never_echo_the_token(tmp_path: Path) -> None:
    secret = "s3cr3t-" + uuid.uuid4().hex
    path = tmp_path / "tokens.toml"
    path.write_text(f'[[principal]]\nname = "x"\ntoken = "{secret}"\nscopes = ["typo"]\n', encoding="utf-8")
    with pytest.raises(AuthConfigError) as info:
        TokenTable.load(path)
    assert secret not in str(info.value) and "scopes" in str(info.value)


def test_token_file_refuses_duplicates_and_short_tokens(tmp_path: Path) -> None:
    path = tmp_path / "tokens.toml"
    path.write_text(f'[[principal]]\nname = "a"\ntoken = "{GOOD}"\n[[principal]]\nname = "b"\ntoken = "{GOOD}"\n')
    with pytest.raises(AuthConfigError, match="share one token"):
        TokenTable.load(path)
    path.write_text('[[principal]]\nname = "a"\ntoken = "short"\n')
    with pytest.raises(AuthConfigError):
        TokenTable.load(path)
    path.write_text("")
    with pytest.raises(AuthConfigError, match="principal"):
        TokenTable.load(path)


def test_bearer_header_parsing_refuses_duplicates() -> None:
    assert bearer_token([(b"authorization", b"Bearer abc")]) == "abc"
    assert bearer_token([(b"authorization", b"Bearer abc"), (b"Authorization", b"Bearer abc")]) is None
    assert bearer_token([(b"authorization", b"Token abc")]) is None
    assert bearer_token([]) is None


def test_tokens_toml_loads_sha256_entries(tmp_path: Path) -> None:
    path = tmp_path / "tokens.toml"
    digest = hashlib.sha256(OTHER.encode()).hexdigest()
    path.write_text(f'[[principal]]\nname = "bob"\nscope = ["l1", "l2"]\ntoken_sha256 = "{digest}"\n')
    bob = TokenTable.load(path).authenticate(OTHER)
    assert bob == Principal(name="bob", source="tokens", scope=frozenset({"l1", "l2"}))
    assert json.dumps(digest) not in repr(TokenEntry(name="bob", token_sha256=digest))
