"""Every error the gateway raises, in one tree.

Caller-facing errors carry a stable ``code`` an agent can branch on (the MCP
error body's ``code``); a refused query also carries the ``rule`` that refused
it, always one of ``gateway.catalogue``. Set-up errors stop a start or an
operator command and name the file or setting to fix; no request ever sees
one. The front end's syntax error never leaves the request path as itself:
the guard answers it with ``QueryRejected``.

    Exception
    ├── GatewayError                  caller-facing; ``code`` is the wire's error code
    │   ├── QueryRejected             "rejected": a rule refused the query before it ran
    │   │                             (``rule``, ``reason``; every rule is in gateway.catalogue)
    │   ├── InvalidInput              "invalid_input": the request's shape (rule input.invalid)
    │   ├── QueryTimeout              "timeout": Neo4j stopped the query at the policy's timeout
    │   ├── QueryCancelled            "cancelled": the caller cancelled the request; its sandbox was
    │   │                             killed (audited; the cancelled request gets no answer)
    │   ├── Neo4jRefused              "neo4j_refused": Neo4j refused the query at run time
    │   │                             (only its code when scope is on: gateway.scope.withheld_details)
    │   ├── SandboxUnavailable        "unavailable": no sandbox could answer; ``run`` turns a sandbox
    │   │                             that cannot start into ``degraded: ["<tool>:disabled"]``
    │   ├── InsufficientScope         "rejected": gateway/oauth.py: an OAuth token's scopes lack the tool
    │   │                             (HTTP answers 403 insufficient_scope before the tool runs)
    │   ├── InternalError             "internal": anything unexpected on the request path (a bug); the
    │   │                             answer and the audit line carry its ``query_id``
    │   └── Busy                      "busy": at capacity (every sandbox taken, or the principal's
    │                                 concurrency limit reached) for the policy's wait;
    │                                 ``retry_after_ms`` says when to try again
    ├── SetupError                    operator-facing: a start or set-up step cannot go on
    │   ├── PolicyError               gateway/policy.py: a policy file is unreadable or invalid
    │   ├── ConfigError               gateway/config.py: the server's settings
    │   ├── AuthConfigError           gateway/auth.py: the HTTP authentication settings
    │   ├── OAuthConfigError          gateway/oauth.py: the OAuth resource server's settings
    │   ├── Neo4jSetupError           gateway/managed_neo4j.py: the managed Neo4j cannot be fetched,
    │   │                             set up or started, or its state directory has no password
    │   ├── ImageBuildError           gateway/ops/images.py: the offline images cannot be built
    │   ├── ReviewError               gateway/ops/policy_review.py: a principal or element to explain names nothing
    │   └── KeycloakSetupError        gateway/ops/keycloak.py: the test IdP cannot be fetched or started
    └── ValueError
        └── CypherSyntaxError         gateway/cypher/errors.py: not Cypher the front end reads
            │                         (``offset``, ``line``, ``column``) -> rule parse.failed
            ├── CypherTooDeep         nested past limits.max_nesting_depth -> rule input.too_deep
            ├── CypherTooLarge        longer than limits.max_query_chars -> rule input.too_large
            └── CypherUnsupported     Cypher 25 Neo4j reads but the gateway does not (``construct``)
                                      -> rule cypher25.unsupported

Errors that never leave their module are not part of the tree: the runner's
``StreamClosed`` (a container's stream ended) and ``_RuntimeMissing``, the guard's
``RegexUnreadable`` (a pattern it cannot bound: refused as a rule), doctor's ``_Failed`` and the
egress probe's ``ProbeFailed``, OAuth's ``TokenRefused`` (a 401 with its reason), the sandbox's ``ExplainRejected``
(sent back as an ``explain_rejected`` result, which the runner turns into
``QueryRejected``, rule sandbox.explain), ``TooDeep`` (likewise ``too_deep``, rule
sandbox.too_deep) and its Query API client's private
ones, and the must-not-retrieve tool's own ``SuiteError``, ``SeedError`` and
``MnrCaseFailed``.
"""

from __future__ import annotations

from typing import Literal

ErrorCode = Literal[
    "rejected", "invalid_input", "timeout", "cancelled", "neo4j_refused", "unavailable", "busy", "internal"
]


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


class QueryCancelled(GatewayError):
    code: ErrorCode = "cancelled"


class Neo4jRefused(GatewayError):
    """``from_original``: Neo4j refused the agent's own text at EXPLAIN (nothing was read)."""

    code: ErrorCode = "neo4j_refused"

    def __init__(self, message: str, neo4j_code: str | None = None, *, from_original: bool = False) -> None:
        super().__init__(f"Neo4j refused the query: {message}")
        self.neo4j_code = neo4j_code
        self.from_original = from_original


class SandboxUnavailable(GatewayError):
    """The sandbox cannot run; the tool answers ``degraded: ["<tool>:disabled"]``, never unsandboxed."""

    code: ErrorCode = "unavailable"


class InternalError(GatewayError):
    """Something unexpected failed while answering (a bug, never the caller's input being refused).

    The caller gets this code and ``query_id`` instead of the exception; the operator finds the
    traceback in the server's log and the request in the audit log under the same id.
    """

    code: ErrorCode = "internal"

    def __init__(self, query_id: str) -> None:
        super().__init__(
            f"the gateway failed while answering this request (an internal error, query id {query_id}); "
            "the operator can find it in the audit log under that id"
        )
        self.query_id = query_id


class Busy(GatewayError):
    """At capacity: nothing ran, and trying again after ``retry_after_ms`` may succeed.

    Never a degraded answer (the sandbox works, it is only full) and never an unsandboxed run.
    """

    code: ErrorCode = "busy"

    def __init__(self, message: str, retry_after_ms: int) -> None:
        super().__init__(message)
        self.retry_after_ms = retry_after_ms


class SetupError(Exception):
    """Operator-facing: the gateway cannot start or set itself up; the message names the setting/file and the fix."""
