"""The audit log: one append-only JSON line per tool call, and one per refused HTTP request.

What a reviewer needs to reconstruct a decision, and nothing that could leak:
parameter *keys* only (values are redacted, except those of the parameters the tool's pins
bind: what a read was confined to), never credentials, the query text
only when the operator keeps it (its hash always). Each line says who asked
(principal and where it was established: ``principal_source``, so a tokens-file name and an
OAuth subject are never one identity; its effective scope and named attribute lists, for HTTP
the client address and a token's subject and issuer), under which policy (name and SHA-256 of
the file) and over which transport.

A line is bounded whatever the caller sends: the query text is cut at
:data:`MAX_QUERY_CHARS` characters (``query_chars`` keeps the full length, the
hash covers the whole text), the parameter keys at :data:`MAX_PARAM_KEYS` keys of
:data:`MAX_KEY_CHARS` characters each (``param_count`` keeps the number).
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import os
import threading
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from gateway.domain import Principal, ToolResult
    from gateway.errors import GatewayError

# What one line may hold of what the caller sent. Above the policy's own input limits (a query
# within limits.max_query_chars is kept whole), so only a request refused for its size is cut.
MAX_QUERY_CHARS = 10_000
MAX_PARAM_KEYS = 100
MAX_KEY_CHARS = 100
# A refusal's reason as another layer wrote it (an HTTP body): one sentence, not the body.
MAX_REASON_CHARS = 300


class Origin(BaseModel):
    """Where an HTTP request came from and, for a JWT, whose token it carried (set per request)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    client: str | None = None
    # A validated token's ``sub`` and ``iss``; None for a tokens-file principal.
    subject: str | None = None
    issuer: str | None = None
    # The mapped claims the token lacks (names only), and the sentence every answer of the request carries.
    missing_claims: list[str] | None = None
    claim_warning: str | None = None


# The HTTP request being served; tool calls run in worker threads that inherit it.
REQUEST_ORIGIN: contextvars.ContextVar[Origin | None] = contextvars.ContextVar("cypher_gateway_origin", default=None)


def note_token(
    subject: str | None, issuer: str | None, *, missing_claims: list[str] | None = None,
    claim_warning: str | None = None,
) -> None:  # fmt: skip
    """Record the validated token's subject, issuer and lacking claims on this request's lines (auth middleware)."""
    current = REQUEST_ORIGIN.get() or Origin()
    update = {"subject": subject, "issuer": issuer, "missing_claims": missing_claims or None,
              "claim_warning": claim_warning}  # fmt: skip
    REQUEST_ORIGIN.set(current.model_copy(update=update))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def kept_text(text: str) -> str:
    """A name or value as a line keeps it: its first ``MAX_KEY_CHARS`` characters, then ``…``."""
    return text if len(text) <= MAX_KEY_CHARS else text[:MAX_KEY_CHARS] + "…"


def _capped_keys(keys: Iterable[object]) -> list[str]:
    names = sorted(str(k) for k in keys)
    return [kept_text(name) for name in names[:MAX_PARAM_KEYS]]


def _pinned(values: Mapping[str, object] | None) -> dict[str, object] | None:
    """Pinned parameter values as JSON scalars, each cut like a key (the policy bounds them anyway)."""
    if not values:
        return None
    kept: dict[str, object] = {}
    for name, value in sorted(values.items())[:MAX_PARAM_KEYS]:
        if not isinstance(value, bool | int | float | str):
            value = json.dumps(value, default=str)[:MAX_KEY_CHARS]
        kept[_capped_keys([name])[0]] = _capped_keys([value])[0] if isinstance(value, str) else value
    return kept


def _attributes(principal: Principal | str | None) -> dict[str, list[str]] | None:
    """The principal's named lists beside ``scope``, each capped like parameter keys (and so is their number)."""
    if principal is None or isinstance(principal, str):
        return None
    named = sorted(principal.attributes.items())[:MAX_PARAM_KEYS]
    return {_capped_keys([name])[0]: _capped_keys(values) for name, values in named}


def _requested(requested: object) -> list[str] | dict[str, list[str]] | None:
    """A request's own ``scope`` as the line keeps it: the list form, or one capped list per attribute."""
    if isinstance(requested, Mapping):
        named = sorted(requested.items(), key=lambda item: str(item[0]))[:MAX_PARAM_KEYS]
        return {
            _capped_keys([name])[0]: _capped_keys(values if isinstance(values, Iterable) else [values])
            for name, values in named
        }
    if isinstance(requested, Iterable) and not isinstance(requested, str | bytes):
        return _capped_keys(requested)
    return None


class AuditEvent(BaseModel):
    model_config = ConfigDict(extra="forbid")

    time: str
    query_id: str
    principal: str | None
    # Where the principal was established (tokens, oauth, local, anonymous): with the name, the identity.
    principal_source: str | None = None
    # The layers the query was confined to (empty: global-only), capped like parameter keys
    # (an IdP's claim can carry thousands); None when no principal is known.
    scope: list[str] | None = None
    # How many layers the principal has, so a capped ``scope`` says it is one.
    scope_count: int | None = None
    # The principal's further named lists (``repositories``, …; empty: it has none); None when no
    # principal is known.
    attributes: dict[str, list[str]] | None = None
    # The narrower scope the request asked for (capped like parameter keys): a list narrows layers,
    # a mapping one list per attribute; the query ran under it when answered, and a wider one is
    # refused as scope.wider. None: the principal's whole scope.
    requested_scope: list[str] | dict[str, list[str]] | None = None
    transport: str
    client: str | None = None
    subject: str | None = None
    issuer: str | None = None
    # The mapped claims the token lacked (its lists stayed empty); None when it lacked none.
    missing_claims: list[str] | None = None
    # Filled by AuditLog.write from the policy the server runs under.
    policy: str | None = None
    policy_sha256: str | None = None
    tool: str
    # For ``check`` lines: the tool the query was checked against.
    checked_tool: str | None = None
    query_hash: str | None = None
    query: str | None = None
    query_chars: int = 0
    param_keys: list[str] = Field(default_factory=list)
    param_count: int = 0
    # The values of the parameters the tool's pins bind (``{"repository": "acme/infra"}``), None without.
    pinned: dict[str, Any] | None = None
    # "answered" | "rejected" | "error" | "degraded"; check: "allowed" | "rejected"; HTTP: "refused"
    decision: str = "pending"
    rule: str | None = None
    error_code: str | None = None
    # Refused HTTP requests: the status and why.
    status: int | None = None
    reason: str | None = None
    query_type: str | None = None
    rows: int = 0
    bytes: int = 0
    truncated: bool = False
    truncation: str | None = None
    degraded: list[str] = Field(default_factory=list)
    redacted: int = 0
    # ``schema`` lines: how many labels, relationship types and property keys were answered.
    counted: dict[str, int] | None = None
    duration_ms: float = 0.0

    @classmethod
    def begin(
        cls, *, query_id: str, principal: Principal | str, transport: str, tool: str, cypher: str | None,
        param_keys: Iterable[object], requested_scope: object = None,
        pinned: Mapping[str, object] | None = None,
    ) -> AuditEvent:  # fmt: skip
        origin = REQUEST_ORIGIN.get() or Origin()
        keys = list(param_keys)
        text = cypher if cypher is not None else ""
        return cls(
            time=_now(), query_id=query_id,
            principal=principal if isinstance(principal, str) else principal.name,
            principal_source=None if isinstance(principal, str) else principal.source,
            scope=None if isinstance(principal, str) else _capped_keys(principal.scope),
            scope_count=None if isinstance(principal, str) else len(principal.scope), attributes=_attributes(principal),
            transport=transport, client=origin.client, subject=origin.subject, issuer=origin.issuer, tool=tool,
            missing_claims=origin.missing_claims,
            query_hash=hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16] if cypher is not None
            else None,
            query=text[:MAX_QUERY_CHARS] if cypher is not None else None, query_chars=len(text),
            param_keys=_capped_keys(keys), param_count=len(keys), pinned=_pinned(pinned),
            requested_scope=_requested(requested_scope),
        )  # fmt: skip

    @classmethod
    def refused(cls, *, status: int, code: str, reason: str, principal: Principal | None) -> AuditEvent:
        """An HTTP request answered with ``status`` before any tool ran; ``principal`` when auth had passed."""
        origin = REQUEST_ORIGIN.get() or Origin()
        return cls(
            time=_now(), query_id=os.urandom(16).hex(),
            principal=principal.name if principal is not None else None,
            principal_source=principal.source if principal is not None else None,
            scope=_capped_keys(principal.scope) if principal is not None else None,
            scope_count=len(principal.scope) if principal is not None else None, attributes=_attributes(principal),
            transport="http", client=origin.client, subject=origin.subject, issuer=origin.issuer, tool="http",
            missing_claims=origin.missing_claims,
            decision="refused", error_code=code, status=status, reason=reason[:MAX_REASON_CHARS],
        )  # fmt: skip

    def answered(self, result: ToolResult, started: float) -> AuditEvent:
        return self.model_copy(
            update={
                "decision": "degraded" if any(d.endswith(":disabled") for d in result.degraded) else "answered",
                "query_type": result.queryType,
                "rows": result.rowCount,
                "bytes": result.bytes,
                "truncated": result.truncated,
                "truncation": result.truncation,
                "degraded": result.degraded,
                "redacted": result.redacted,
                "duration_ms": _elapsed_ms(started),
            }
        )

    def failed(self, error: GatewayError, started: float) -> AuditEvent:
        return self.model_copy(
            update={
                "decision": "rejected" if error.code == "rejected" else "error",
                "rule": getattr(error, "rule", None),
                "error_code": error.code,
                "duration_ms": _elapsed_ms(started),
            }
        )

    def schema_answered(
        self, degraded: list[str], counted: dict[str, int] | None, rows: int, size: int, truncated: bool,
        started: float,
    ) -> AuditEvent:  # fmt: skip
        return self.model_copy(
            update={"decision": "degraded" if degraded else "answered", "counted": counted, "rows": rows,
                    "bytes": size, "truncated": truncated, "degraded": degraded, "duration_ms": _elapsed_ms(started)}
        )  # fmt: skip

    def checked(self, tool: str, allowed: bool, rule: str | None, started: float) -> AuditEvent:
        return self.model_copy(
            update={"checked_tool": tool, "decision": "allowed" if allowed else "rejected", "rule": rule,
                    "duration_ms": _elapsed_ms(started)}
        )  # fmt: skip


def _elapsed_ms(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 3)


def file_sha256(path: Path | str) -> str | None:
    """The SHA-256 of a file's bytes (what ``sha256sum`` prints), or None when it cannot be read."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


class AuditLog:
    """Appends events to a JSON-lines file; safe to share across threads.

    ``policy`` and ``policy_sha256`` are written on every line: the policy the server runs under.
    """

    def __init__(
        self,
        path: Path | str,
        *,
        include_query_text: bool = True,
        policy: str | None = None,
        policy_sha256: str | None = None,
    ) -> None:
        self.path = Path(path)
        self.include_query_text = include_query_text
        self.policy = policy
        self.policy_sha256 = policy_sha256
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, event: AuditEvent) -> None:
        record = event.model_dump()
        record["policy"] = self.policy
        record["policy_sha256"] = self.policy_sha256
        if not self.include_query_text:
            record["query"] = None
        line = json.dumps(record, separators=(",", ":"), default=str) + "\n"
        with self._lock:
            # O_APPEND: each line lands whole at the end, even with other writers.
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line.encode("utf-8"))
            finally:
                os.close(fd)

    def read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        with self.path.open(encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
