"""The container contract between the gateway's runner and the sandbox program.

Shared by both sides, so it must import nothing but pydantic and the standard
library: the gateway process never imports the ``neo4j`` driver, and nothing
under ``sandbox/`` imports the gateway.

The contract: the environment a container is started with (``SandboxEnv``), the
socket it reaches Neo4j through, the user it runs as, the line each program
writes to stderr once it is ready, and the wire format. One job is one JSON
line on the container's stdin; one result is one JSON line on its stdout.

Values in ``rows`` are JSON. Graph and non-JSON Neo4j types are tagged objects
with a ``"$type"`` key (see ``sandbox/serialize.py``):
``node`` {elementId, labels, properties}, ``relationship`` {elementId, type,
startElementId, endElementId, properties}, ``path`` {nodes, relationships},
``date``/``time``/``localtime``/``datetime``/``localdatetime`` {iso},
``duration`` {iso, months, days, seconds, nanoseconds}, ``point`` {srid, x, y, z?},
``bytes`` {base64}.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

WIRE_VERSION: Literal[1] = 1

# Written to stderr once a container is ready: the sandbox has imported the driver,
# connected and authenticated; the forwarder is listening on the socket.
SANDBOX_READY = "sandbox: ready"
FORWARDER_READY = "forwarder: listening"
# The forwarder's Unix socket, on a volume it shares with the sandboxes: their only way out.
SOCKET_DIR = "/run/cgw"
SOCKET_PATH = f"{SOCKET_DIR}/neo4j.sock"
# A configured CA file (PEM) is mounted read-only here, in the sandbox only.
CA_FILE_PATH = "/run/cgw-tls/ca.pem"
# The unprivileged user (and group) both containers run as; docker/sandbox/Dockerfile creates it.
SANDBOX_UID = 10001
ENV_PREFIX = "CGW_"


class SandboxEnv(StrEnum):
    """The environment the runner starts a sandbox with; ``sandbox/config.py`` reads it once."""

    TRANSPORT = "CGW_TRANSPORT"  # "bolt" or "query-api"
    NEO4J_SOCKET = "CGW_NEO4J_SOCKET"  # the forwarder's socket (in a container)
    NEO4J_URI = "CGW_NEO4J_URI"  # a direct Bolt URI instead (host-side tests only)
    QUERY_API_URL = "CGW_QUERY_API_URL"  # the real https://host[:port] TLS is verified against
    NEO4J_USER = "CGW_NEO4J_USER"
    NEO4J_PASSWORD = "CGW_NEO4J_PASSWORD"  # noqa: S105 (a variable name) -- removed from the environment once read
    NEO4J_PASSWORD_FILE = "CGW_NEO4J_PASSWORD_FILE"  # noqa: S105 (a variable name) -- a mounted secret instead
    DATABASE = "CGW_DATABASE"
    FETCH_SIZE = "CGW_FETCH_SIZE"
    TLS = "CGW_TLS"  # a TlsMode; the default is "off"
    TLS_SERVER_NAME = "CGW_TLS_SERVER_NAME"  # the name the certificate is checked against (the real host)
    TLS_CA_FILE = "CGW_TLS_CA_FILE"  # a PEM CA file (CA_FILE_PATH in a container); unset: the system trust store


# TLS from the sandbox to Neo4j: "off" (bolt://, neo4j://, http://); "verify" (+s, https: the
# certificate must chain to the CA file or the system trust store and name the server);
# "trust-all" (+ssc: any certificate, still encrypted). gateway/config.py maps URI schemes to it.
TlsMode = Literal["off", "verify", "trust-all"]


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


def failure(query_id: str, code: SandboxErrorCode, message: str, neo4j_code: str | None = None) -> SandboxResult:
    """A result that carries only an error: how either side says a job did not run to the end."""
    return SandboxResult(
        query_id=query_id, ok=False, error=SandboxError(code=code, message=message, neo4j_code=neo4j_code)
    )
