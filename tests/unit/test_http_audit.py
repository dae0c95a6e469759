"""The refusal-audit middleware's contract with the auth layers inside it (tokens file, JWT).

An inner layer names why it refused (``REFUSAL_REASON_KEY``) and a validated token's subject and
issuer (``note_token``); both reach the audit line, with the client address, also from the worker
thread a tool call runs in. The end-to-end behaviour is in tests/integration/server/test_server_audit.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from gateway.audit import AuditLog, note_token
from gateway.auth import PRINCIPAL_SCOPE_KEY
from gateway.domain import LayerSwitches, Principal
from gateway.http_audit import REFUSAL_REASON_KEY, RefusalAudit
from gateway.policy import load_policy
from gateway.service import Gateway
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH
from tests.support.stub_runner import RunnerStub

CAROL = Principal(name="carol", scope=frozenset({"team-a"}))


def _scope(client: str = "10.1.2.3") -> dict[str, Any]:
    return {"type": "http", "method": "POST", "path": "/mcp", "headers": [], "client": (client, 5555)}


async def _respond(send: Any, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": []})
    await send({"type": "http.response.body", "body": body})


def _drive(app: Any, scope: dict[str, Any]) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    anyio.run(app, scope, receive, send)
    return sent


def test_an_inner_layer_names_the_reason_and_the_token(tmp_path: Path) -> None:
    audit = AuditLog(tmp_path / "audit.jsonl", policy="default", policy_sha256="ab" * 32)

    async def jwt_layer(scope: Any, receive: Any, send: Any) -> None:
        note_token("user-17", "https://idp.example/realms/r")
        scope[REFUSAL_REASON_KEY] = "token expired"
        await _respond(send, 401, b'{"error": "unauthorized"}')

    sent = _drive(RefusalAudit(jwt_layer, audit), _scope())
    assert sent[0]["status"] == 401  # the answer itself is untouched
    (line,) = audit.read()
    assert (line["decision"], line["status"], line["error_code"], line["reason"]) == (
        "refused", 401, "unauthorized", "token expired")  # fmt: skip
    assert (line["client"], line["subject"], line["issuer"]) == ("10.1.2.3", "user-17", "https://idp.example/realms/r")
    assert line["principal"] is None and line["policy_sha256"] == "ab" * 32


def test_an_answered_request_writes_no_refusal_and_its_tool_lines_carry_the_origin(tmp_path: Path) -> None:
    audit = AuditLog(tmp_path / "audit.jsonl")
    gateway = Gateway(
        load_policy(ALL_PROPERTIES_POLICY_PATH), RunnerStub(), audit, layers=LayerSwitches(scope_rewrite=False)
    )

    async def served(scope: Any, receive: Any, send: Any) -> None:
        scope[PRINCIPAL_SCOPE_KEY] = CAROL
        note_token("carol-sub", "https://idp.example")
        # As the MCP server does: the core runs in a worker thread.
        await anyio.to_thread.run_sync(
            lambda: gateway.run("analyze", "MATCH (n) RETURN count(n) AS c", {}, CAROL, transport="http")
        )
        await _respond(send, 200, b"{}")

    _drive(RefusalAudit(served, audit), _scope("192.0.2.9"))
    (line,) = audit.read()
    assert line["tool"] == "analyze" and line["scope"] == ["team-a"]
    assert (line["client"], line["subject"], line["issuer"]) == ("192.0.2.9", "carol-sub", "https://idp.example")


def test_a_refusal_after_authentication_names_the_principal(tmp_path: Path) -> None:
    audit = AuditLog(tmp_path / "audit.jsonl")

    async def too_large(scope: Any, receive: Any, send: Any) -> None:
        scope[PRINCIPAL_SCOPE_KEY] = CAROL
        await _respond(send, 413, b'{"error": "too_large", "message": "request body over 10 bytes"}')

    _drive(RefusalAudit(too_large, audit), _scope())
    (line,) = audit.read()
    assert (line["principal"], line["scope"], line["reason"]) == ("carol", ["team-a"], "request body over 10 bytes")


def test_the_refusal_is_on_file_before_its_last_byte_leaves(tmp_path: Path) -> None:
    """A client that has its 413 and reads the audit log at once finds the line (it once raced)."""
    audit = AuditLog(tmp_path / "audit.jsonl", policy="default", policy_sha256="ab" * 32)
    lines_when_sent: list[int] = []

    async def large_body(scope: Any, receive: Any, send: Any) -> None:
        await _respond(send, 413, b'{"message": "request body over 64000 bytes"}')
        await anyio.sleep(0.05)  # the app is still unwinding when the client already has its answer

    async def send(message: Any) -> None:
        if message["type"] == "http.response.body":
            lines_when_sent.append(len(audit.read()))

    async def receive() -> Any:
        return {"type": "http.request", "body": b"", "more_body": False}

    anyio.run(RefusalAudit(large_body, audit), _scope(), receive, send)
    assert lines_when_sent == [1]
    (line,) = audit.read()  # once, not again when the app returns
    assert (line["status"], line["reason"]) == (413, "request body over 64000 bytes")
