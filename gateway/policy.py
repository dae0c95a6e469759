"""The policy: pydantic models of ``policies/*.yaml``.

A policy is loaded once (``load_policy``) and passed down to every layer; no
layer reads limits from anywhere else. Validation is strict: an unknown key is
an error, so a misspelt rule can never silently fall back to a default.
"""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, RootModel, ValidationError, model_validator

from gateway import rule_kinds
from gateway.cypher import ast
from gateway.cypher.ast import CypherVersion
from gateway.errors import SetupError
from gateway.paths import resource
from gateway.roles import Roles
from sandbox.wire import RuleKind, Untagged, VisibleKeys
from sandbox.withhold import Withholding

# The policies shipped in the package: the repository's policies/, built into the wheel.
POLICIES_DIR = resource("policies")
DEFAULT_POLICY_PATH = POLICIES_DIR / "default.yaml"

ToolName = Literal["recall", "analyze"]
TOOL_NAMES: tuple[ToolName, ...] = ("recall", "analyze")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ClauseKind(StrEnum):
    """Clause kinds a policy can allow. Anything not listed is rejected."""

    MATCH = "MATCH"
    OPTIONAL_MATCH = "OPTIONAL_MATCH"
    WHERE = "WHERE"
    WITH = "WITH"
    RETURN = "RETURN"
    UNWIND = "UNWIND"
    ORDER_BY = "ORDER_BY"
    SKIP = "SKIP"
    LIMIT = "LIMIT"
    UNION = "UNION"
    CALL_SUBQUERY = "CALL_SUBQUERY"
    CALL_PROCEDURE = "CALL_PROCEDURE"
    FINISH = "FINISH"
    LET = "LET"  # Cypher 25
    FILTER = "FILTER"  # Cypher 25


class Limits(_Strict):
    """Resource limits. The runner and the sandbox read these values and no others."""

    max_query_chars: Annotated[int, Field(gt=0)] = 10_000
    # The caller's parameters, on every transport (stdio has no body limit): how many, how long
    # a name, and how many bytes all of them take as JSON.
    max_param_keys: Annotated[int, Field(gt=0)] = 100
    max_param_key_chars: Annotated[int, Field(gt=0)] = 100
    max_params_bytes: Annotated[int, Field(gt=0)] = 200_000
    # The scope rewrite's output, which Neo4j parses and plans: bounded so one request cannot
    # make the gateway build, or Neo4j read, megabytes of Cypher.
    max_rewritten_chars: Annotated[int, Field(gt=0)] = 100_000
    max_nesting_depth: Annotated[int, Field(gt=0)] = 32
    allow_unbounded_var_length: bool = False
    max_hops: Annotated[int, Field(gt=0)] = 8
    timeout_seconds: Annotated[float, Field(gt=0, le=300)] = 5.0
    max_rows: Annotated[int, Field(gt=0)] = 100
    max_bytes: Annotated[int, Field(gt=0)] = 512_000
    # What one evaluation of an expression may build and iterate (gateway.guard.size_walk): Neo4j
    # stops neither at its timeout, and its memory limit does not see what expressions build.
    max_range_length: Annotated[int, Field(gt=0)] = 1_000_000
    max_iterations: Annotated[int, Field(gt=0)] = 10_000_000
    max_list_elements: Annotated[int, Field(gt=0)] = 1_000_000
    max_string_chars: Annotated[int, Field(gt=0)] = 10_000_000
    max_accumulator_iterations: Annotated[int, Field(gt=0)] = 10_000
    max_data_factor: Annotated[int, Field(ge=1)] = 4
    max_data_chars: Annotated[int, Field(ge=1)] = 256
    # Operands of one AND / OR / XOR chain: Neo4j's semantic analysis of it runs before its timeout.
    max_boolean_operands: Annotated[int, Field(ge=2)] = 64


class ToolPolicy(_Strict):
    """What one tool (``recall`` or ``analyze``) may do."""

    description: str = ""
    allowed_clauses: frozenset[ClauseKind]
    # Fully qualified procedure names; an exact, case-sensitive allow-list (Neo4j's own resolution).
    procedures_allowed: frozenset[str] = frozenset()
    # Glob patterns (``apoc.load.*``) over fully qualified function names, matched case-insensitively.
    functions_denied: tuple[str, ...] = ()
    # Parameters the query must reference (``$repository``) and the caller must supply.
    required_parameters: tuple[str, ...] = ()
    denied_labels: frozenset[str] = frozenset()
    denied_relationship_types: frozenset[str] = frozenset()
    # Label -> the required parameter that binds one of its properties under this tool.
    pins: dict[str, Pin] = Field(default_factory=dict)
    limits: Limits = Limits()

    @model_validator(mode="after")
    def _procedures_are_exact_names(self) -> ToolPolicy:
        for name in self.procedures_allowed:
            if not name or any(ch in name for ch in "*?[]` ") or name.startswith(".") or name.endswith("."):
                raise ValueError(
                    f"procedures_allowed entry {name!r} must be one exact dotted name (no wildcards): "
                    "an allow-list is explicit"
                )
        for label, pin in self.pins.items():
            if pin.parameter not in self.required_parameters:
                raise ValueError(
                    f"pins.{label}: parameter {pin.parameter!r} is not one of required_parameters; a pin binds "
                    "only a parameter every request must supply"
                )
        return self


def _no_bookkeeping() -> dict[ToolName, bool]:
    return {"recall": False, "analyze": False}


RULE_KINDS: tuple[RuleKind, ...] = tuple(rule_kinds.KINDS)
# Attribute names become parameter names (``$__gw_attr_<name>``): identifiers only.
_ATTRIBUTE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DEFAULT_ATTRIBUTE = "layers"  # gateway.domain.DEFAULT_ATTRIBUTE: what a plain scope list means
# The variables a derived rule's path names: the element itself and the node whose rule it borrows.
DERIVED_ELEMENT = "x"
DERIVED_ANCHOR = "anchor"


class VisibilityRule(_Strict):
    """When an element of one label or type is visible (docs/decisions/0018, section 2).

    Each kind is one module of ``gateway.rule_kinds`` (what it means, the fields it takes):
    ``membership``, ``equality``, ``derived``, ``public``, ``denied``, ``all_of`` / ``any_of``
    (over ``rules``) and ``time_valid``. The fields a kind does not take are refused.
    """

    kind: RuleKind
    property: str | None = None
    attribute: str | None = None
    path: str | None = None
    rules: tuple[VisibilityRule, ...] | None = None
    from_property: str | None = None
    to_property: str | None = None

    @model_validator(mode="after")
    def _fields_fit_the_kind(self) -> VisibilityRule:
        spec = rule_kinds.KINDS[self.kind]
        given = {name for name in _RULE_FIELDS if getattr(self, name) is not None}
        extra = sorted(given - spec.fields)
        if extra:
            raise ValueError(f"{_a(self.kind)} rule takes no {', '.join(extra)}")
        missing = sorted(spec.required - given)
        if missing:
            raise ValueError(f"{_a(self.kind)} rule names its {' and '.join(missing)}")
        if self.attribute is not None and not _ATTRIBUTE_NAME.fullmatch(self.attribute):
            raise ValueError(f"attribute {self.attribute!r} must be an identifier (letters, digits, _)")
        for name in ("property", "from_property", "to_property"):
            if getattr(self, name) is not None and not getattr(self, name):
                raise ValueError(f"{name} must not be empty")
        spec.validate(self)
        return self

    def attribute_name(self) -> str:
        return self.attribute or DEFAULT_ATTRIBUTE


def _a(kind: str) -> str:
    return f"an {kind}" if kind[:1] in "aeiou" else f"a {kind}"


_RULE_FIELDS = ("property", "attribute", "path", "rules", "from_property", "to_property")


class ScopeFilter(_Strict):
    """A mandatory condition on one label or type under some tools (``validTo`` absent on analyze,
    or a rule such as ``{kind: time_valid}``)."""

    property: Annotated[str, Field(min_length=1)] | None = None
    absent: Literal[True] | None = None
    equals: str | None = None
    rule: VisibilityRule | None = None
    tools: frozenset[ToolName] = frozenset(TOOL_NAMES)

    @model_validator(mode="after")
    def _one_condition(self) -> ScopeFilter:
        if self.rule is not None:
            if self.property is not None or self.absent is not None or self.equals is not None:
                raise ValueError("a filter with a rule names no property, absent or equals")
            if rule_kinds.needs_neo4j(self.rule) or rule_kinds.attributes(self.rule):
                raise ValueError("a filter's rule reads the element alone (no derived path, no caller attribute)")
        elif self.property is None:
            raise ValueError("a filter names its property (with `absent` or `equals`) or a `rule`")
        elif (self.absent is None) == (self.equals is None):
            raise ValueError("a filter says exactly one of `absent: true` or `equals: <string>`")
        if not self.tools:
            raise ValueError("a filter applies to at least one tool")
        return self


class Pin(_Strict):
    """A request parameter binding one label's property for one tool: ``x.<property> = $<parameter>``."""

    property: Annotated[str, Field(min_length=1)]
    parameter: Annotated[str, Field(min_length=1)]


def attribute_parameter(name: str) -> str:
    """The reserved parameter that carries the caller's attribute ``name`` (not ``layers``)."""
    return f"__gw_attr_{name}"


def _membership() -> VisibilityRule:
    return VisibilityRule(kind="membership")


class ScopeSettings(_Strict):
    """How visibility is stored in the graph and passed to queries."""

    layers_property: str = "layers"
    # The rule of every label and type the policy does not name (docs/decisions/0018): membership
    # on layers_property against the caller's layers unless the policy says otherwise.
    default: VisibilityRule = Field(default_factory=_membership)
    nodes: dict[str, VisibilityRule] = Field(default_factory=dict)
    relationships: dict[str, VisibilityRule] = Field(default_factory=dict)
    # Label or relationship type -> conditions every element of it must also meet, per tool.
    filters: dict[str, tuple[ScopeFilter, ...]] = Field(default_factory=dict)
    # Correction edges: bookkeeping that never surfaces or is traversed unless allowed.
    bookkeeping_relationship_types: frozenset[str] = frozenset({"SUPERSEDES", "CONTRADICTS"})
    allow_bookkeeping: dict[ToolName, bool] = Field(default_factory=_no_bookkeeping)
    # The reserved parameter the gateway injects with the caller's layer ids.
    scope_parameter: str = "__gw_scope"
    # An element without the layers property: "hidden" (fail closed), or "global" for a graph
    # that needs the old reading. Global is otherwise an explicit empty list.
    untagged: Untagged = "hidden"

    @model_validator(mode="after")
    def _rules_are_sound(self) -> ScopeSettings:
        if rule_kinds.needs_neo4j(self.default):
            raise ValueError("scope.default cannot be derived: a derived path starts from a named label or type")
        for kind, rules in (("nodes", self.nodes), ("relationships", self.relationships)):
            for name, rule in rules.items():
                if not name:
                    raise ValueError(f"scope.{kind}: an empty label or type name")
                for part in rule_kinds.walk(rule):
                    if part.path is not None:
                        _check_derived(part.path or "", f"scope.{kind}.{name}", self.nodes, node=kind == "nodes")
        _refuse_cycles(self.nodes, self.relationships)
        return self

    def one_parent_labels(self) -> frozenset[str]:
        """The node labels whose rule walks to an anchor (derived, or composed with a derived rule).

        Such a label says the node belongs to its one parent: a node carrying one together with any
        other label named here is malformed and hidden, by every layer (docs/decisions/0018).
        """
        return frozenset(label for label, rule in self.nodes.items() if rule_kinds.needs_neo4j(rule))

    def rule_property(self, rule: VisibilityRule) -> str:
        """The property a membership or equality rule reads."""
        return rule.property or self.layers_property


def derived_path(path: str) -> ast.Path:
    """A derived rule's path, parsed (``CypherSyntaxError`` when it is not a pattern)."""
    from gateway.cypher import parse

    parsed = parse(f"MATCH {path} RETURN 1", max_chars=2_000, max_depth=32)
    matches = list(parsed.find_all(ast.Match))
    if len(matches) != 1 or len(matches[0].patterns) != 1 or matches[0].where is not None:
        raise ValueError("one path pattern")
    part = matches[0].patterns[0]
    if part.variable is not None or part.selector is not None:
        raise ValueError("a plain path pattern, without a path variable or selector")
    return part.path


def derived_anchor_label(path: str) -> str:
    """The one label a (validated) derived path states on its anchor."""
    for element in derived_path(path).elements:
        if isinstance(element, ast.NodePattern) and element.variable and element.variable.name == DERIVED_ANCHOR:
            assert element.labels is not None
            return element.labels.names()[0]
    raise ValueError("no anchor")


def _check_derived(path: str, where: str, nodes: dict[str, VisibilityRule], *, node: bool) -> None:
    from gateway.cypher import CypherSyntaxError

    try:
        parsed = derived_path(path)
    except (CypherSyntaxError, ValueError) as exc:
        raise ValueError(f"{where}: the derived path {path!r} is not one Cypher path pattern ({exc})") from None
    seen: dict[str, ast.NodePattern | ast.RelPattern] = {}
    for element in parsed.elements:
        if isinstance(element, ast.QuantifiedPath):
            raise ValueError(f"{where}: a derived path has a fixed length (no quantified group)")
        if isinstance(element, ast.RelPattern) and (element.length is not None or element.quantifier is not None):
            raise ValueError(f"{where}: a derived path has a fixed length (no variable-length relationship)")
        if element.where is not None:
            raise ValueError(f"{where}: a derived path has no WHERE inside it")
        if element.variable is not None:
            name = element.variable.name
            if name not in (DERIVED_ELEMENT, DERIVED_ANCHOR):
                raise ValueError(f"{where}: a derived path names only x and anchor, not {name!r}")
            if name in seen:
                raise ValueError(f"{where}: {name} appears twice in the derived path")
            seen[name] = element
    own = seen.get(DERIVED_ELEMENT)
    wanted = ast.NodePattern if node else ast.RelPattern
    if own is None or not isinstance(own, wanted):
        kind = "node" if node else "relationship"
        raise ValueError(f"{where}: the derived path must name the element as the {kind} x")
    anchor = seen.get(DERIVED_ANCHOR)
    if not isinstance(anchor, ast.NodePattern):
        raise ValueError(f"{where}: the derived path must name its anchor node `anchor`")
    names = anchor.labels.names() if anchor.labels is not None else []
    if anchor.labels is None or len(names) != 1 or not isinstance(anchor.labels.expression, ast.LabelName):
        raise ValueError(f"{where}: the anchor states exactly one label, whose rule it borrows (anchor:Label)")
    if names[0] not in nodes:
        raise ValueError(
            f"{where}: the anchor label {names[0]!r} has no rule in scope.nodes; a derived rule borrows a named rule"
        )


def _refuse_cycles(nodes: dict[str, VisibilityRule], relationships: dict[str, VisibilityRule]) -> None:
    """A derived rule whose anchors lead back to itself could never be decided.

    A label's anchors are those of every derived rule in it, composed ones included.
    """
    anchors = {label: found for label, rule in nodes.items() if (found := rule_kinds.anchors(rule))}
    starts = {**anchors, **{t: found for t, r in relationships.items() if (found := rule_kinds.anchors(r))}}
    for start, first in starts.items():
        _follow(anchors, [start], first)


def _follow(anchors: dict[str, list[str]], chain: list[str], labels: list[str]) -> None:
    for label in labels:
        if label in chain:
            raise ValueError(f"scope: derived rules form a cycle: {' -> '.join([*chain, label])}")
        if label in anchors:
            _follow(anchors, [*chain, label], anchors[label])


class HiddenProperties(RootModel[dict[str, frozenset[str]]]):
    """Property keys no answer shows, per label or relationship type: ``{Attempt: [embedding]}``.

    The guard refuses a query that names one anywhere, whatever label its variable has in the
    query (a pattern's label does not prove an element lacks others); the sandbox removes them
    from every node and relationship of that label or type an answer returns whole; the schema
    tool never lists them (``gateway.guard.hidden`` says what else a query may not use).
    """

    model_config = ConfigDict(frozen=True)
    root: dict[str, frozenset[str]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _plain_keys(self) -> HiddenProperties:
        for owner, keys in self.root.items():
            for name in (owner, *keys):
                if not _plain_name(name):
                    raise ValueError(
                        f"hidden_properties entry {name!r} (under {owner!r}) must be one plain label, type or "
                        "property key: no wildcards, dots, backticks or surrounding spaces"
                    )
        return self

    def names(self) -> frozenset[str]:
        """Every hidden property key, whatever label or type hides it."""
        return frozenset(key for keys in self.root.values() for key in keys)

    def by_owner(self) -> dict[str, list[str]]:
        """Label or type -> its hidden keys, sorted: what the sandbox job carries."""
        return {owner: sorted(keys) for owner, keys in sorted(self.root.items()) if keys}


def _plain_name(name: str) -> bool:
    return bool(name) and name == name.strip() and not any(ch in name for ch in "*?[]`.$") and name.isprintable()


class VisibleProperties(_Strict):
    """The property keys an answer may show: an allow-list, per label, per relationship type, by default.

    A key nobody listed is hidden: never returned, refused when a query names it, absent from the
    schema tool. Names are exact (Neo4j's labels, types and keys are case-sensitive): ``apiToken``
    listed does not make ``apitoken`` visible.

    A node sees the keys listed for **every** one of its labels that has an entry (the
    intersection: a second listed label can only take keys away); a node none of whose labels has
    an entry sees ``default``. A label without an entry adds nothing (a marker label such as a
    fixture's changes no answer). A relationship sees its type's list, else ``default``.
    ``default`` absent is empty.

    The keys the scope rules read (the membership property, an equality rule's, filters, pins)
    need not be listed: the rewrite and the sandbox's result check read them regardless, and the
    answer never shows them unless they are listed.
    """

    nodes: dict[str, frozenset[str]] = Field(default_factory=dict)
    relationships: dict[str, frozenset[str]] = Field(default_factory=dict)
    default: frozenset[str] = frozenset()

    @model_validator(mode="after")
    def _plain_names(self) -> VisibleProperties:
        listed = [("default", key) for key in self.default]
        for kind, owners in (("nodes", self.nodes), ("relationships", self.relationships)):
            for owner, keys in owners.items():
                listed += [(f"{kind}.{owner}", name) for name in (owner, *keys)]
        for where, name in listed:
            if not _plain_name(name):
                raise ValueError(
                    f"visible_properties entry {name!r} (under {where}) must be one plain label, type or "
                    "property key: no wildcards, dots, backticks or surrounding spaces"
                )
        return self

    def names(self) -> frozenset[str]:
        """Every key visible on some element: a key outside this set is visible nowhere."""
        return frozenset(self.default).union(*self.nodes.values(), *self.relationships.values())

    def on_every_node(self, key: str) -> bool:
        """Whether every node, whatever its labels, sees ``key``."""
        return key in self.default and all(key in keys for keys in self.nodes.values())

    def on_every_relationship(self, key: str, types: frozenset[str] | None = None) -> bool:
        """Whether every relationship (of one of ``types``, when given) sees ``key``."""
        if types is not None:
            return all(key in self.relationships.get(t, self.default) for t in types)
        return key in self.default and all(key in keys for keys in self.relationships.values())

    def wire(self) -> VisibleKeys:
        """What the sandbox job carries (sorted lists)."""
        return VisibleKeys(
            nodes={label: sorted(keys) for label, keys in sorted(self.nodes.items())},
            relationships={rel: sorted(keys) for rel, keys in sorted(self.relationships.items())},
            default=sorted(self.default),
        )


class ReservedParameters(_Strict):
    """Parameter keys only the gateway may set; a caller supplying one is rejected."""

    keys: frozenset[str] = frozenset()
    prefixes: tuple[str, ...] = ("__gw",)

    def is_reserved(self, key: str) -> bool:
        lowered = key.lower()
        return lowered in {k.lower() for k in self.keys} or any(lowered.startswith(p.lower()) for p in self.prefixes)


class CypherSettings(_Strict):
    """Which Cypher the guard reads, and which ``CYPHER`` query options it lets through.

    A query runs under the version the guard read it as (its ``CYPHER 5`` / ``CYPHER 25``
    prefix, else ``default_version``): the runner prepends that prefix, so a database whose
    own default language differs can never read the text differently from the guard.
    """

    versions: frozenset[CypherVersion] = frozenset({"5"})
    default_version: CypherVersion = "5"
    # Option name -> the values allowed (names and values as Neo4j spells them, compared case-insensitively).
    query_options: dict[str, frozenset[str]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _default_is_allowed(self) -> CypherSettings:
        if self.default_version not in self.versions:
            raise ValueError(f"cypher.default_version {self.default_version!r} must be one of cypher.versions")
        return self

    def option_allowed(self, name: str, value: str) -> bool:
        allowed = {k.lower(): {v.lower() for v in vs} for k, vs in self.query_options.items()}
        return value.lower() in allowed.get(name.lower(), set())


class SandboxPolicy(_Strict):
    """How sandbox containers are shared out: reuse, waiting, and each principal's share.

    A reviewer's choice, not a tuning knob: ``max_queries_per_container`` above 1 lets one
    principal's queries run, one after another, in the same container (SECURITY.md, layer 6,
    says what that gives up); a container never serves two principals.
    """

    # Queries one container runs, each in a fresh process, for one principal only; 1 = one-shot.
    max_queries_per_container: Annotated[int, Field(ge=1, le=1000)] = 1
    # A principal's container waiting for its next query is removed after this long.
    idle_container_seconds: Annotated[float, Field(gt=0, le=3600)] = 30.0
    # How long after its arrival a query may wait for a free sandbox before the answer is "busy"
    # (with a retry hint); the guard's time counts, so the wait bounds the whole busy answer.
    busy_wait_ms: Annotated[int, Field(ge=0, le=10_000)] = 500
    # Queries one principal may have running at once; more wait, then get "busy".
    max_concurrent_per_principal: Annotated[int, Field(ge=1, le=64)] = 4


class Policy(_Strict):
    """A whole policy file."""

    name: str
    description: str = ""
    reserved_parameters: ReservedParameters = ReservedParameters()
    scope: ScopeSettings = ScopeSettings()
    hidden_properties: HiddenProperties = HiddenProperties()
    # The allow-list (fails closed); without it, hidden_properties is the deny-list (fails open).
    visible_properties: VisibleProperties | None = None
    cypher: CypherSettings = CypherSettings()
    sandbox: SandboxPolicy = SandboxPolicy()
    tools: dict[ToolName, ToolPolicy]
    # An IdP group/role claim -> named roles granting tools and attribute values (gateway.roles).
    roles: Roles | None = None

    @model_validator(mode="after")
    def _every_tool_present(self) -> Policy:
        missing = [t for t in TOOL_NAMES if t not in self.tools]
        if missing:
            raise ValueError(f"policy must define every tool; missing: {', '.join(missing)}")
        if not self.reserved_parameters.is_reserved(self.scope.scope_parameter):
            raise ValueError(
                f"scope.scope_parameter {self.scope.scope_parameter!r} must be a reserved parameter "
                "(listed in reserved_parameters.keys or matching a prefix), or callers could set it"
            )
        if self.visible_properties is not None and self.hidden_properties.names():
            raise ValueError(
                "visible_properties and hidden_properties cannot both be given: with the allow-list, a key "
                "not listed is already hidden; remove hidden_properties"
            )
        timed = [f.rule for fs in self.scope.filters.values() for f in fs if f.rule is not None]
        for name in (rule_kinds.NOW_PARAMETER, rule_kinds.TODAY_PARAMETER):
            if any(rule_kinds.reads_now(rule) for rule in [*self.scope_rules(), *timed]) and not (
                self.reserved_parameters.is_reserved(name)
            ):
                raise ValueError(
                    f"a time_valid rule reads the parameter {name!r}, which must be reserved "
                    "(reserved_parameters), or callers could set the time"
                )
        for name in self.scope_attributes():
            if name != DEFAULT_ATTRIBUTE and not self.reserved_parameters.is_reserved(attribute_parameter(name)):
                raise ValueError(
                    f"the rules read attribute {name!r}, whose parameter {attribute_parameter(name)!r} must be "
                    "reserved (reserved_parameters), or callers could set it"
                )
        return self

    def scope_rules(self) -> list[VisibilityRule]:
        return [self.scope.default, *self.scope.nodes.values(), *self.scope.relationships.values()]

    def scope_attributes(self) -> list[str]:
        """The principal's attribute lists the rules read (``layers`` when a membership rule reads it)."""
        names = {name for rule in self.scope_rules() for name in rule_kinds.attributes(rule)}
        return sorted(names)

    def tool(self, name: ToolName) -> ToolPolicy:
        return self.tools[name]

    def hides_properties(self) -> bool:
        """Whether some property key is kept out of answers (always so under the allow-list)."""
        return self.visible_properties is not None or bool(self.hidden_properties.names())

    def key_hidden_everywhere(self, key: str) -> bool:
        """Whether no element shows ``key``: not in the allow-list (exact name), or in the deny-list (any case).

        The deny-list hides a key by name whatever label lists it (gateway.guard.hidden says why).
        """
        if self.visible_properties is not None:
            return key not in self.visible_properties.names()
        return key.lower() in {name.lower() for name in self.hidden_properties.names()}

    def withholding(self) -> Withholding:
        """What the sandbox removes from elements returned whole, as the gateway re-counts it."""
        return Withholding(self.hidden_properties.by_owner(), visible=self.visible_keys())

    def visible_keys(self) -> VisibleKeys | None:
        """The allow-list as a sandbox job carries it (None: the deny-list form)."""
        return self.visible_properties.wire() if self.visible_properties is not None else None

    def hidden_relationship_types(self, tool: ToolName) -> frozenset[str]:
        """Relationship types ``tool`` never shows or traverses, named or not.

        The tool's denied types always (the guard refuses naming one; hiding them also
        keeps untyped patterns such as ``-[r]-`` from reaching one), and the bookkeeping
        types unless the policy allows them for this tool.
        """
        hidden = set(self.tool(tool).denied_relationship_types)
        if not self.scope.allow_bookkeeping.get(tool, False):
            hidden |= self.scope.bookkeeping_relationship_types
        return frozenset(hidden)


class PolicyError(SetupError):
    """A policy file could not be read or is invalid; the message names the problem."""


def load_policy(path: Path | str | None = None) -> Policy:
    """Read and validate one policy file (the strict default when ``path`` is None)."""
    file = Path(path) if path is not None else DEFAULT_POLICY_PATH
    try:
        raw = yaml.safe_load(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PolicyError(f"cannot read policy file {file}: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise PolicyError(f"policy file {file} is not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise PolicyError(f"policy file {file} must hold a mapping at the top level")
    try:
        return Policy.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}" for err in exc.errors()
        )
        raise PolicyError(f"policy file {file} is invalid: {problems}") from exc
