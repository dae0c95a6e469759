"""The container contract between the gateway's runner and the sandbox program.

Shared by both sides, so it imports nothing but the standard library: the sandbox
program starts faster without pydantic, the gateway process never imports the
``neo4j`` driver, and nothing under ``sandbox/`` imports the gateway. The models are
plain dataclasses. The sandbox reads them with :func:`decode` (strict: unknown keys,
missing fields and wrong types are refused); the gateway validates the same classes
with pydantic (``gateway/runner/contract.py``), strict as well, through the
``__pydantic_config__`` each class carries. A contract test holds the two readers to
the same verdicts.

The contract: the environment a container is started with (``SandboxEnv``, nothing
secret in it), the socket it reaches Neo4j through, the user it runs as, the line
each program writes to stderr once it is ready, and the wire format. The first line
on a sandbox's stdin is its ``Credentials``; then each job is one JSON line on stdin
and each result one JSON line on stdout. A container runs at most
``CGW_MAX_JOBS`` jobs, each in a fresh process that says ``sandbox: ready`` once it
has connected and authenticated.

Values in ``rows`` are JSON. Graph and non-JSON Neo4j types are tagged objects
with a ``"$type"`` key, listed in ``VALUE_TAGS`` (written by ``sandbox/serialize.py``;
the tool results' schema describes them to agents from the same table).
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, TypeVar

WIRE_VERSION: Literal[1] = 1

# The tagged objects of ``rows``: each "$type" with the fields it carries.
VALUE_TAGS: dict[str, str] = {
    "node": "{elementId, labels, properties}",
    "relationship": "{elementId, type, startElementId, endElementId, properties}",
    "path": "{nodes, relationships}",
    "date": "{iso}",
    "localtime": "{iso}",
    "time": "{iso}",
    "localdatetime": "{iso}",
    "datetime": "{iso, zone?} (zone: a named zone such as Europe/Stockholm)",
    "duration": "{iso, months, days, seconds, nanoseconds}",
    "point": "{srid, x, y, z?}",
    "bytes": "{base64}",
    "float": "{value}: NaN and the infinities, which JSON lacks",
    "map": '{value}: a map whose own keys include "$type"',
    "unknown": "{repr}: a value of a type the sandbox does not know",
}

# Written to stderr once a container is ready: the sandbox has imported the driver,
# connected and authenticated; the forwarder is listening on the socket.
SANDBOX_READY = "sandbox: ready"
FORWARDER_READY = "forwarder: listening"
# The forwarder's Unix socket, on a volume it shares with the sandboxes: their only way out.
SOCKET_DIR = "/run/cgw"
SOCKET_PATH = f"{SOCKET_DIR}/neo4j.sock"
# The container's only writable place (a tmpfs); emptied between two jobs of one container.
SCRATCH_DIR = "/tmp"
# A configured CA file (PEM) is mounted read-only here, in the sandbox only.
CA_FILE_PATH = "/run/cgw-tls/ca.pem"
# The unprivileged user (and group) both containers run as; docker/sandbox/Dockerfile creates it.
SANDBOX_UID = 10001
ENV_PREFIX = "CGW_"
# The transaction metadata key under which a sandbox marks its Neo4j transaction with the job's
# query id, so the runner can find and end that transaction after killing the sandbox.
TX_METADATA_QUERY_ID = "cypherGatewayQueryId"

# What the gateway's pydantic validation of these classes follows: the same strictness
# as decode() below (pydantic reads this attribute; the sandbox never imports pydantic).
_STRICT = {"extra": "forbid", "strict": True}


class SandboxEnv(StrEnum):
    """The environment the runner starts a sandbox with; ``sandbox/config.py`` reads it once.

    Nothing secret goes here: a container's environment is part of its configuration,
    which anyone who can use the Docker daemon can read (``docker inspect``).
    """

    TRANSPORT = "CGW_TRANSPORT"  # "bolt" or "query-api"
    NEO4J_SOCKET = "CGW_NEO4J_SOCKET"  # the forwarder's socket (in a container)
    NEO4J_URI = "CGW_NEO4J_URI"  # a direct Bolt URI instead (host-side tests only)
    QUERY_API_URL = "CGW_QUERY_API_URL"  # the real https://host[:port] TLS is verified against
    DATABASE = "CGW_DATABASE"
    PROBE = "CGW_PROBE"  # sandbox/probe.py's request (a diagnostic container, never a query's)
    MAX_JOBS = "CGW_MAX_JOBS"  # jobs this container runs before it exits (the policy's reuse limit)
    TLS = "CGW_TLS"  # a TlsMode; the default is "off"
    TLS_SERVER_NAME = "CGW_TLS_SERVER_NAME"  # the name the certificate is checked against (the real host)
    TLS_CA_FILE = "CGW_TLS_CA_FILE"  # a PEM CA file (CA_FILE_PATH in a container); unset: the system trust store


# TLS from the sandbox to Neo4j: "off" (bolt://, neo4j://, http://); "verify" (+s, https: the
# certificate must chain to the CA file or the system trust store and name the server);
# "trust-all" (+ssc: any certificate, still encrypted). gateway/config.py maps URI schemes to it.
TlsMode = Literal["off", "verify", "trust-all"]


# What an element without the scope property is (the policy's scope.untagged).
Untagged = Literal["hidden", "global"]
Truncation = Literal["rows", "bytes"]
QueryType = Literal["r", "rw", "w", "s"]
SandboxErrorCode = Literal[
    "timeout",  # Neo4j terminated the transaction at the policy timeout
    "neo4j_refused",  # Neo4j refused the query (syntax, AccessMode, ...)
    "explain_rejected",  # the EXPLAIN check found a non-read query or a disallowed procedure
    "too_deep",  # an element nested past what the projection wrapper rebuilds (sandbox/rebuild.py)
    "unavailable",  # Neo4j could not be reached from the sandbox
    "invalid_job",  # the job line did not validate
    "sandbox_failed",  # the container died without answering (OOM-killed, crashed); set by the runner
    "cancelled",  # the caller cancelled the query and the runner killed its container; set by the runner
    "internal",  # a bug in the sandbox program
]


@dataclass(frozen=True, kw_only=True)
class Credentials:
    """The Neo4j account, sent as the first line on the sandbox's stdin (never in its configuration)."""

    __pydantic_config__ = _STRICT

    user: str
    password: str = field(repr=False)


# Every kind of visibility rule: the one list of names, read by the gateway's registry
# (gateway/rule_kinds) and the sandbox's checks (sandbox/rule_checks.py); a test holds the three equal.
RuleKind = Literal["membership", "equality", "derived", "public", "denied", "all_of", "any_of", "time_valid"]


@dataclass(frozen=True, kw_only=True)
class ElementRule:
    """One label's or type's visibility rule with the caller's values filled in (decision 0018).

    ``membership``: ``property`` is an empty list of strings or shares one with ``values``;
    ``equality``: ``property`` is a string in ``values``; ``derived``: only Neo4j can tell (the
    check's ``derived_*`` query); ``public``: always; ``denied``: never; ``all_of`` / ``any_of``:
    every one / one of ``rules``; ``time_valid``: ``from_property <= ScopeCheck.now < to_property``.
    """

    __pydantic_config__ = _STRICT

    kind: RuleKind
    property: str = ""
    values: list[str] = field(default_factory=list)
    rules: list[ElementRule] = field(default_factory=list)
    from_property: str = ""
    to_property: str = ""


@dataclass(frozen=True, kw_only=True)
class ElementCondition:
    """A filter or pin: ``property`` is absent, or equals ``equals`` or the job's parameter ``parameter``,
    or the element meets ``rule``.

    A missing property never equals anything (Cypher's ``=`` with null is not true).
    """

    __pydantic_config__ = _STRICT

    property: str = ""
    absent: bool = False
    equals: Any = None
    parameter: str | None = None
    rule: ElementRule | None = None


@dataclass(frozen=True, kw_only=True)
class ScopeCheck:
    """The caller's scope, for the sandbox's second-layer result check."""

    __pydantic_config__ = _STRICT

    layers_property: str
    layers: list[str]
    hidden_relationship_types: list[str] = field(default_factory=list)
    # An element without the property: hidden unless the policy opted into "global".
    untagged: Untagged = "hidden"
    # The rule of labels and types not named; None: membership on layers_property against layers.
    default: ElementRule | None = None
    nodes: dict[str, ElementRule] = field(default_factory=dict)
    relationships: dict[str, ElementRule] = field(default_factory=dict)
    # Label or type -> the tool's filters and pins on it.
    conditions: dict[str, list[ElementCondition]] = field(default_factory=dict)
    # Gateway-written Cypher over ``$__gw_ids`` (element ids) returning the ids of those that are
    # visible (column ``id``), run in the job's own transaction for elements under a derived rule.
    derived_nodes: str | None = None
    derived_relationships: str | None = None
    # The request's one instant (ISO-8601, UTC) that time-valid rules compare with; the rewrite's
    # parameter ``$__gw_now`` holds the same text.
    now: str | None = None


@dataclass(frozen=True, kw_only=True)
class VisibleKeys:
    """The policy's visible_properties: the only keys an element returned whole keeps (exact names).

    A node keeps the keys listed for every one of its labels that has an entry (the intersection),
    ``default`` when none has; a relationship those of its type, else ``default``.
    """

    __pydantic_config__ = _STRICT

    nodes: dict[str, list[str]] = field(default_factory=dict)
    relationships: dict[str, list[str]] = field(default_factory=dict)
    default: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class SandboxJob:
    """One query to run, already approved by the guard and rewritten for scope."""

    __pydantic_config__ = _STRICT

    version: Literal[1] = WIRE_VERSION
    query_id: str
    cypher: str
    # The agent's own query, when the scope rewrite changed it. EXPLAINed first: a query Neo4j
    # refuses must be refused with Neo4j's error for what the agent wrote, not run as rewritten.
    original_cypher: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    database: str | None = None
    timeout_seconds: float
    max_rows: int
    max_bytes: int
    procedures_allowed: list[str] = field(default_factory=list)
    # Layer switches exist so tests can prove each layer holds alone; the EXPLAIN check is also
    # off for the runner's own constant TERMINATE job (gateway.runner.jobs.terminate_job).
    explain_check: bool = True
    scope: ScopeCheck | None = None
    # The policy's hidden_properties (label or type -> keys): removed from every node and
    # relationship the answer returns whole (sandbox/withhold.py).
    hidden_properties: dict[str, list[str]] = field(default_factory=dict)
    # The policy's visible_properties: when given, every key it does not list is removed instead.
    visible_properties: VisibleKeys | None = None


@dataclass(frozen=True, kw_only=True)
class Notification:
    """One of Neo4j's notifications: its GQL status where the server sends one, its Neo4j code where known."""

    __pydantic_config__ = _STRICT

    gql_status: str | None = None  # "01N00"; None from sources that send only the Neo4j code
    code: str | None = None  # "Neo.ClientNotification.Statement.FeatureDeprecationWarning"
    title: str | None = None
    description: str | None = None
    severity: str | None = None
    classification: str | None = None  # "DEPRECATION", "UNRECOGNIZED", "PERFORMANCE", …


@dataclass(frozen=True, kw_only=True)
class SandboxError:
    __pydantic_config__ = _STRICT

    code: SandboxErrorCode
    message: str
    neo4j_code: str | None = None
    # Neo4j refused the agent's own text at EXPLAIN: no element was read, so the message
    # (which quotes only that text) can go back whole.
    from_original: bool = False


@dataclass(frozen=True, kw_only=True)
class SandboxResult:
    __pydantic_config__ = _STRICT

    version: Literal[1] = WIRE_VERSION
    query_id: str
    ok: bool
    columns: list[str] = field(default_factory=list)
    rows: list[list[Any]] = field(default_factory=list)
    row_count: int = 0
    bytes: int = 0
    truncated: bool = False
    truncation: Truncation | None = None
    query_type: QueryType | None = None
    duration_ms: float = 0.0
    notifications: list[Notification] = field(default_factory=list)
    redacted: int = 0
    # Elements of the rows shown without the properties their label or type hides.
    withheld: int = 0
    error: SandboxError | None = None


def failure(
    query_id: str, code: SandboxErrorCode, message: str, neo4j_code: str | None = None, *, from_original: bool = False
) -> SandboxResult:
    """A result that carries only an error: how either side says a job did not run to the end."""
    error = SandboxError(code=code, message=message, neo4j_code=neo4j_code, from_original=from_original)
    return SandboxResult(query_id=query_id, ok=False, error=error)


# --- encoding and the sandbox's reader -------------------------------------------------------------


def to_json(value: Any) -> str:
    """One wire object (or anything holding them) as one line of compact UTF-8 JSON."""
    return json.dumps(value, default=_fields, ensure_ascii=False, separators=(",", ":"))


def _fields(value: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    raise TypeError(f"{type(value).__name__} is not part of the wire format")


class WireError(ValueError):
    """A line that is not a valid wire object; the message names the field."""


W = TypeVar("W")
_HINTS: dict[type[Any], dict[str, Any]] = {}


def decode(cls: type[W], line: bytes | str) -> W:
    """Read one JSON line as ``cls``, strictly (what the gateway's pydantic validation also refuses)."""
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise WireError(f"<line>: not JSON ({exc})") from None
    return _dataclass(cls, data, "")


def _dataclass(cls: type[W], data: Any, where: str) -> W:
    if not isinstance(data, dict):
        raise WireError(f"{where or '<root>'}: expected an object")
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise WireError(f"{where}{unknown[0]}: unknown field")
    values: dict[str, Any] = {}
    for name, spec in known.items():
        if name in data:
            values[name] = _value(hints[name], data[name], f"{where}{name}")
        elif spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
            raise WireError(f"{where}{name}: missing")
    return cls(**values)


def _value(tp: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        for option in typing.get_args(tp):
            try:
                return _value(option, value, where)
            except WireError:
                continue
        raise WireError(f"{where}: {type(value).__name__} is none of {tp}")
    if tp is type(None):
        if value is None:
            return None
        raise WireError(f"{where}: expected null")
    if origin is Literal:
        # Equality, as pydantic's literal check has it (a JSON true or 1.0 is the literal 1).
        for option in typing.get_args(tp):
            if value == option:
                return option
        raise WireError(f"{where}: {value!r} is not one of {typing.get_args(tp)}")
    if tp in (str, bool, int, float):
        if tp is float and type(value) is int:
            return float(value)
        if type(value) is not tp:
            raise WireError(f"{where}: expected {tp.__name__}, got {type(value).__name__}")
        return value
    if origin is tuple:
        items = typing.get_args(tp)
        if not isinstance(value, list) or len(value) != len(items):
            raise WireError(f"{where}: expected a list of {len(items)}")
        return tuple(_value(item, v, f"{where}.{i}") for i, (item, v) in enumerate(zip(items, value, strict=True)))
    if origin is list:
        if not isinstance(value, list):
            raise WireError(f"{where}: expected a list")
        (item,) = typing.get_args(tp)
        return [_value(item, v, f"{where}.{i}") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise WireError(f"{where}: expected an object")
        _, item = typing.get_args(tp)
        return {k: _value(item, v, f"{where}.{k}") for k, v in value.items()}
    if dataclasses.is_dataclass(tp):
        return _dataclass(tp, value, f"{where}.")  # type: ignore[arg-type]
    raise WireError(f"{where}: the wire has no reader for {tp}")
