"""The HTTP request's own audit: where it came from, and every refusal as an audit line.

:class:`RefusalAudit` is the outermost ASGI middleware. It records the client address for
every audit line the request's tool calls write (``gateway.audit.REQUEST_ORIGIN``), and,
when the answer is a refusal before any tool ran (401 no or unknown token, 403 Origin, 413
body too large, 421 Host), writes one ``refused`` line: time, client address, status,
reason, and the principal when authentication had already passed. It never reads a token
or a body the client sent: the reason comes from the layer that refused (an inner
middleware may name it under :data:`REFUSAL_REASON_KEY`), else from the refusal's own body.
"""

from __future__ import annotations

import json
import logging

from gateway.audit import REQUEST_ORIGIN, AuditEvent, AuditLog, Origin
from gateway.auth import (
    PRINCIPAL_SCOPE_KEY,
    REFUSAL_REASON_KEY,
    ASGIApp,
    Message,
    Receive,
    Scope,
    Send,
    bearer_token,
)
from gateway.domain import Principal

__all__ = ["REFUSAL_REASON_KEY", "REFUSED", "RefusalAudit"]

log = logging.getLogger(__name__)

REFUSED: dict[int, str] = {401: "unauthorized", 403: "forbidden", 413: "too_large", 421: "misdirected"}
# Of a refusal's body, only this much is read for its reason.
_BODY_CHARS = 300


class RefusalAudit:
    """ASGI middleware: the client address on this request's audit lines, and a line per refusal."""

    def __init__(self, app: ASGIApp, audit: AuditLog | None) -> None:
        self.app = app
        self.audit = audit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        reset = REQUEST_ORIGIN.set(Origin(client=str(client[0]) if client else None))
        status: int | None = None
        body = b""
        written = False

        async def watch(message: Message) -> None:
            nonlocal status, body, written
            if message["type"] == "http.response.start" and status is None:
                status = int(message["status"])
            elif message["type"] == "http.response.body" and status in REFUSED:
                if len(body) < _BODY_CHARS:
                    body += bytes(message.get("body", b""))[:_BODY_CHARS]
                if not message.get("more_body", False) and not written:
                    # Before the refusal's last byte leaves: a client that has its answer finds the line.
                    written = True
                    self._write(scope, status, body)
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            if status in REFUSED and not written:
                assert status is not None
                self._write(scope, status, body)
            REQUEST_ORIGIN.reset(reset)

    def _write(self, scope: Scope, status: int, body: bytes) -> None:
        principal = scope.get(PRINCIPAL_SCOPE_KEY)
        event = AuditEvent.refused(
            status=status, code=REFUSED[status], reason=_reason(scope, status, body),
            principal=principal if isinstance(principal, Principal) else None,
        )  # fmt: skip
        log.warning("HTTP %s refused (%s) from %s: %s", status, event.error_code, event.client or "?", event.reason)
        if self.audit is None:
            return
        try:
            self.audit.write(event)
        except Exception:  # the client has its answer already; the operator's log says what failed
            log.exception("could not write the audit line of a refused HTTP request")


def _reason(scope: Scope, status: int, body: bytes) -> str:
    named = scope.get(REFUSAL_REASON_KEY)
    if isinstance(named, str) and named:
        return named
    if status == 401 and scope.get(PRINCIPAL_SCOPE_KEY) is None:
        headers = list(scope.get("headers", []))
        return "no bearer token" if bearer_token(headers) is None else "unknown token"
    text = body.decode("utf-8", "replace")
    try:
        parsed = json.loads(text)
    except ValueError:
        return text.strip() or f"HTTP {status}"
    message = parsed.get("message") if isinstance(parsed, dict) else None
    return str(message) if message else text.strip()
