"""The audit log: one append-only JSON line per tool call.

What a reviewer needs to reconstruct a decision, and nothing that could leak:
parameter *keys* only (values are redacted), never credentials, the query text
only when the operator keeps it (its hash always).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from gateway.domain import ToolResult
    from gateway.errors import GatewayError


class AuditEvent(BaseModel):
    model_config = ConfigDict(extra="forbid")

    time: str
    query_id: str
    principal: str
    transport: str
    tool: str
    # For ``check`` lines: the tool the query was checked against.
    checked_tool: str | None = None
    query_hash: str
    query: str | None = None
    param_keys: list[str] = Field(default_factory=list)
    decision: str = "pending"  # "answered" | "rejected" | "error" | "degraded"; check: "allowed" | "rejected"
    rule: str | None = None
    error_code: str | None = None
    query_type: str | None = None
    rows: int = 0
    bytes: int = 0
    truncated: bool = False
    truncation: str | None = None
    degraded: list[str] = Field(default_factory=list)
    redacted: int = 0
    duration_ms: float = 0.0

    @classmethod
    def begin(
        cls, *, query_id: str, principal: str, transport: str, tool: str, cypher: str, param_keys: list[str]
    ) -> AuditEvent:
        return cls(
            time=datetime.now(UTC).isoformat(timespec="milliseconds"),
            query_id=query_id, principal=principal, transport=transport, tool=tool,
            query_hash=hashlib.sha256(cypher.encode("utf-8")).hexdigest()[:16], query=cypher,
            param_keys=param_keys,
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

    def checked(self, tool: str, allowed: bool, rule: str | None, started: float) -> AuditEvent:
        return self.model_copy(
            update={"checked_tool": tool, "decision": "allowed" if allowed else "rejected", "rule": rule,
                    "duration_ms": _elapsed_ms(started)}
        )  # fmt: skip


def _elapsed_ms(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 3)


class AuditLog:
    """Appends events to a JSON-lines file; safe to share across threads."""

    def __init__(self, path: Path | str, *, include_query_text: bool = True) -> None:
        self.path = Path(path)
        self.include_query_text = include_query_text
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, event: AuditEvent) -> None:
        record = event.model_dump()
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
