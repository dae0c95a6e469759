"""The wire format between the gateway's runner and the sandbox program.

Shared by both sides, so it must import nothing but pydantic and the standard
library: the gateway process never imports the ``neo4j`` driver.

One job is one JSON line on the container's stdin; one result is one JSON line
on its stdout.

Values in ``rows`` are JSON. Graph and non-JSON Neo4j types are tagged objects
with a ``"$type"`` key (see ``sandbox/serialize.py``):
``node`` {elementId, labels, properties}, ``relationship`` {elementId, type,
startElementId, endElementId, properties}, ``path`` {nodes, relationships},
``date``/``time``/``localtime``/``datetime``/``localdatetime`` {iso},
``duration`` {iso, months, days, seconds, nanoseconds}, ``point`` {srid, x, y, z?},
``bytes`` {base64}.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

WIRE_VERSION: Literal[1] = 1

Truncation = Literal["rows", "bytes"]
QueryType = Literal["r", "rw", "w", "s"]
SandboxErrorCode = Literal[
    "timeout",  # Neo4j terminated the transaction at the policy timeout
    "neo4j_refused",  # Neo4j refused the query (syntax, AccessMode, ...)
    "explain_rejected",  # the EXPLAIN check found a non-read query or a disallowed procedure
    "unavailable",  # Neo4j could not be reached from the sandbox
    "invalid_job",  # the job line did not validate
    "sandbox_failed",  # the container died without answering (OOM-killed, crashed); set by the runner
    "internal",  # a bug in the sandbox program
]


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ScopeCheck(_Wire):
    """The caller's scope, for the sandbox's second-layer result check."""

    layers_property: str
    layers: list[str]
    hidden_relationship_types: list[str] = Field(default_factory=list)


class SandboxJob(_Wire):
    """One query to run, already approved by the guard and rewritten for scope."""

    version: Literal[1] = WIRE_VERSION
    query_id: str
    cypher: str
    params: dict[str, Any] = Field(default_factory=dict)
    database: str | None = None
    timeout_seconds: float
    max_rows: int
    max_bytes: int
    procedures_allowed: list[str] = Field(default_factory=list)
    # Layer switches exist only so tests can prove each layer holds alone.
    explain_check: bool = True
    scope: ScopeCheck | None = None


class Notification(_Wire):
    code: str | None = None
    title: str | None = None
    description: str | None = None
    severity: str | None = None


class SandboxError(_Wire):
    code: SandboxErrorCode
    message: str
    neo4j_code: str | None = None


class SandboxResult(_Wire):
    version: Literal[1] = WIRE_VERSION
    query_id: str
    ok: bool
    columns: list[str] = Field(default_factory=list)
    rows: list[list[Any]] = Field(default_factory=list)
    row_count: int = 0
    bytes: int = 0
    truncated: bool = False
    truncation: Truncation | None = None
    query_type: QueryType | None = None
    duration_ms: float = 0.0
    notifications: list[Notification] = Field(default_factory=list)
    redacted: int = 0
    error: SandboxError | None = None
