"""One error taxonomy for every tool, with stable codes an agent can branch on."""

from __future__ import annotations

from typing import Literal

ErrorCode = Literal["rejected", "invalid_input", "timeout", "neo4j_refused", "unavailable"]


class GatewayError(Exception):
    """Base of every error the gateway reports to a caller."""

    code: ErrorCode = "unavailable"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class QueryRejected(GatewayError):
    """The guard (or the sandbox's EXPLAIN check) refused the query before it ran."""

    code: ErrorCode = "rejected"

    def __init__(self, rule: str, reason: str) -> None:
        super().__init__(f"{rule}: {reason}")
        self.rule = rule
        self.reason = reason


class InvalidInput(GatewayError):
    code: ErrorCode = "invalid_input"


class QueryTimeout(GatewayError):
    code: ErrorCode = "timeout"


class Neo4jRefused(GatewayError):
    code: ErrorCode = "neo4j_refused"

    def __init__(self, message: str, neo4j_code: str | None = None) -> None:
        super().__init__(f"Neo4j refused the query: {message}")
        self.neo4j_code = neo4j_code


class SandboxUnavailable(GatewayError):
    """The sandbox cannot run; the tool answers ``degraded: ["<tool>:disabled"]``, never unsandboxed."""

    code: ErrorCode = "unavailable"


class SetupError(Exception):
    """Operator-facing: the gateway cannot start or set itself up; the message names the setting/file and the fix."""
