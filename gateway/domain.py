"""The request path's own types: who asks, which layers run, and what each tool answers.

One module that the core (``service``), the MCP server, the audit log and HTTP auth all
import, so none of them has to import another for a shared type. Field names of the
results are the wire names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gateway.identity_text import attribute_name_problem, check_identity_text
from gateway.policy import ToolName
from sandbox.wire import VALUE_TAGS, Notification, QueryType, Truncation

Transport = Literal["stdio", "http", "direct"]
# Where a principal was established: a tokens-file entry, a verified OAuth token, the process's
# own settings (stdio, the CLI, an MNR case), or HTTP with authentication switched off. Pools and
# the audit tell principals apart by (source, name), never by the name alone.
PrincipalSource = Literal["tokens", "oauth", "local", "anonymous"]
# The name prefix of OAuth principals; no other source may use it.
OAUTH_PREFIX = "oauth:"


def static_principal_name(value: str) -> str:
    """A principal's name from a static source (tokens file, stdio settings): identity text, never ``oauth:…``.

    The prefix is reserved for principals of a verified OAuth token, so a static entry cannot
    pass for one (in pools, audit lines and summaries).
    """
    check_identity_text(value, "the name")
    if value.startswith(OAUTH_PREFIX):
        raise ValueError(f"the name starts with {OAUTH_PREFIX!r}, which is reserved for OAuth subjects")
    return value


# The attribute a plain scope list means, and what membership rules read by default.
DEFAULT_ATTRIBUTE = "layers"


def attribute_lists(
    scope: Iterable[str] | None, attributes: Mapping[str, Iterable[str]] | None
) -> tuple[frozenset[str], dict[str, frozenset[str]]]:
    """A principal's ``(scope, attributes)`` as it is written down: a plain list (``scope``) is
    ``layers``, which may also be written among the named lists, but not both ways.

    Raises ValueError naming the problem (the caller adds whose principal it is).
    """
    named = {name: frozenset(values) for name, values in (attributes or {}).items()}
    for name, values in named.items():
        if (problem := attribute_name_problem(name)) is not None:
            raise ValueError(problem)
        for value in values:
            check_identity_text(value, f"a {name} value")
    for layer in scope or ():
        check_identity_text(layer, f"a {DEFAULT_ATTRIBUTE} value")
    if DEFAULT_ATTRIBUTE in named:
        if scope is not None:
            raise ValueError(f"{DEFAULT_ATTRIBUTE} is given twice: as scope and as attributes.{DEFAULT_ATTRIBUTE}")
        scope = named.pop(DEFAULT_ATTRIBUTE)
    return frozenset(scope or ()), named


class Principal(BaseModel):
    """Who is asking, and which layers they may see. An empty scope means global-only."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    source: PrincipalSource = "local"
    # The default attribute list (``layers``): what a plain list in a tokens file, the stdio
    # settings or an MNR file means.
    scope: frozenset[str] = frozenset()
    # Further attribute lists a policy's rules may read (``repositories``, ``tenants``, …);
    # one the principal lacks is empty: it sees nothing through a rule that reads it.
    attributes: dict[str, frozenset[str]] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _printable_name(cls, value: str) -> str:
        return check_identity_text(value, "the principal's name")

    @field_validator("scope")
    @classmethod
    def _printable_layers(cls, value: frozenset[str]) -> frozenset[str]:
        for layer in value:
            check_identity_text(layer, f"a {DEFAULT_ATTRIBUTE} value")
        return value

    @field_validator("attributes")
    @classmethod
    def _named_lists(cls, value: dict[str, frozenset[str]]) -> dict[str, frozenset[str]]:
        for name, values in value.items():
            if name == DEFAULT_ATTRIBUTE:
                # attribute("layers") answers scope: a second layers list would be silently ignored.
                raise ValueError(f"{DEFAULT_ATTRIBUTE} is the scope, not one of the named attributes")
            if (problem := attribute_name_problem(name)) is not None:
                raise ValueError(problem)
            for item in values:
                check_identity_text(item, f"a {name} value")
        return value

    def attribute(self, name: str) -> frozenset[str]:
        """The principal's list for ``name`` (``layers`` is :attr:`scope`); empty when it has none."""
        return self.scope if name == DEFAULT_ATTRIBUTE else self.attributes.get(name, frozenset())

    def __hash__(self) -> int:
        # Principals key the runner's pools: hashable although ``attributes`` is a dict.
        return hash((self.source, self.name, self.scope, tuple(sorted(self.attributes.items()))))


class LayerSwitches(BaseModel):
    """Each layer can be switched off, only so tests can prove every other layer holds alone."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    guard: bool = True
    scope_rewrite: bool = True
    explain_check: bool = True
    result_check: bool = True


ROWS_DESCRIPTION = (
    "One list per row, its values in the order of `columns`. JSON values come as they are; other values "
    'are objects tagged "$type": '
    + "; ".join(f"{tag} {fields}" for tag, fields in VALUE_TAGS.items())
    + ". Element ids are tokens that mean something only inside this answer (n1, r1), not Neo4j's ids. "
    "A UTC offset with seconds (+02:05:59) arrives cut to whole minutes, its local time moved to keep the "
    "instant (Neo4j's Python driver reads offsets in minutes): return toString(value) for the value as stored."
)


class ToolResult(BaseModel):
    """What ``recall`` and ``analyze`` answer (field names are the wire names)."""

    model_config = ConfigDict(extra="forbid")

    queryId: str
    tool: ToolName
    columns: list[str] = Field(default_factory=list)
    rows: list[list[Any]] = Field(default_factory=list, description=ROWS_DESCRIPTION)
    rowCount: int = 0
    bytes: int = 0
    truncated: bool = False
    truncation: Truncation | None = None
    # Empty when every layer ran on its primary path; "<tool>:disabled", "scope:redacted",
    # "identity:claim-missing" (the token lacks a mapped claim: gateway.oauth).
    degraded: list[str] = Field(default_factory=list)
    # Why a tool is disabled, and the operator's fix (the agent relays it; nothing ran).
    degradedReason: str | None = None
    redacted: int = 0
    withheld: int = Field(
        0,
        description="How many nodes and relationships in `rows` are shown without the properties the policy hides "
        "for their label or type (the `schema` tool does not list those keys either); under an allow-list "
        "(visible_properties) every one, since each shows only the keys listed for it.",
    )
    queryType: QueryType | None = None
    durationMs: float = 0.0
    notifications: list[Notification] = Field(default_factory=list)


class CheckResult(BaseModel):
    """The guard's decision without running anything, plus the scoped query a reviewer can read."""

    model_config = ConfigDict(extra="forbid")

    allowed: bool
    rule: str | None
    reason: str | None
    tool: ToolName
    policy: str
    rewritten: str | None = None


class SchemaResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    labels: list[str] = Field(default_factory=list)
    relationshipTypes: list[str] = Field(default_factory=list)
    propertyKeys: list[str] = Field(default_factory=list)
    truncated: bool = False
    degraded: list[str] = Field(default_factory=list)
    degradedReason: str | None = None
