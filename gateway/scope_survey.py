"""What the policy's scope would make of the graph it is pointed at: the operator's look, not an agent's.

``survey(policy, run)`` asks Neo4j (through ``run``, a READ query in a sandbox, unscoped: it is
the start-up and doctor check, never an agent.s request) whether the policy's scope property occurs on
any node or relationship, whether each label and relationship type the policy names exists, and,
per label and relationship type, how many elements lack the property or hold a malformed one
(what the policy hides), and whether each property a named rule or pin reads occurs on its
label or type (``rule_reads``). Counts only: one pass over the graph per element kind, and the count
store for the names.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from pydantic import BaseModel

from gateway import rule_kinds
from gateway.config import GatewaySettings, neo4j_connection
from gateway.errors import GatewayError
from gateway.policy import Policy
from gateway.runner import SandboxRunner, settings_for
from gateway.scope.predicates import quote_name
from sandbox.wire import SandboxJob

# A query and its parameters -> its rows.
Run = Callable[[str, dict[str, Any]], list[list[Any]]]

# The degraded reason serve adds to every answer while the scope property occurs nowhere.
PROPERTY_MISSING = "scope:property-missing"
FIX = (
    "set scope.layers_property to the property your graph uses, or tag elements (an empty list makes an element global)"
)

# A label, type or property the policy names that the graph lacks: `policy lint --graph` names each
# one with its near-miss.
NAMES_FIX = (
    "write each name as your graph spells it, or remove it from the policy "
    "(`cypher-gateway policy lint --graph` names each one with its likely spelling)"
)

_ON_NODES = "EXISTS { MATCH (n) WHERE n[$p] IS NOT NULL }"
_ON_RELATIONSHIPS = "EXISTS { MATCH ()-[r]->() WHERE r[$p] IS NOT NULL }"
_HIDDEN = (
    "WITH {kind} AS kind, {key} AS name, {element}[$p] AS v "
    "RETURN kind, name, count(*) AS total, sum(CASE WHEN v IS NULL THEN 1 ELSE 0 END) AS untagged, "
    "sum(CASE WHEN v IS NOT NULL AND NOT v IS :: LIST<STRING NOT NULL> THEN 1 ELSE 0 END) AS malformed"
)
# Per label and relationship type, in one query: one pass over the nodes, one over the relationships.
HIDDEN = (
    "MATCH (n) UNWIND labels(n) AS label "
    + _HIDDEN.format(kind="'label'", key="label", element="n")
    + " UNION ALL MATCH ()-[r]->() "
    + _HIDDEN.format(kind="'type'", key="type(r)", element="r")
)


class Hidden(BaseModel):
    kind: str  # "label" or "type"
    name: str
    total: int
    untagged: int
    malformed: int


class Survey(BaseModel):
    layers_property: str
    property_found: bool
    missing_labels: list[str]
    missing_types: list[str]
    hidden: list[Hidden] = []
    # Properties a named rule or pin reads that no element of its label or type carries ("Repository.name").
    missing_properties: list[str] = []

    @property
    def problems(self) -> list[str]:
        """What makes the policy not fit the graph, each in one sentence."""
        return [problem for problem, _ in self.problems_and_fixes]

    @property
    def property_problems(self) -> list[str]:
        """The problems with the properties the rules read (the names are ``gateway.policy_fit``'s)."""
        return [problem for problem, _ in self._property_problems()]

    @property
    def problems_and_fixes(self) -> list[tuple[str, str]]:
        """Each problem with its own fix: the scope property's fix only for the scope property."""
        out = self._property_problems()
        if self.missing_labels:
            out.append(
                (f"labels the policy names do not exist in the graph: {', '.join(self.missing_labels)}", NAMES_FIX)
            )
        if self.missing_types:
            missing = ", ".join(self.missing_types)
            out.append((f"relationship types the policy names do not exist in the graph: {missing}", NAMES_FIX))
        return out

    def _property_problems(self) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        if not self.property_found:
            out.append(
                (
                    f"the policy's scope property {self.layers_property!r} occurs on no node or relationship: "
                    "every element is hidden from every caller",
                    FIX,
                )
            )
        if self.missing_properties:
            out.append(
                (
                    "properties the policy's rules read occur on no element of their label or type (every such "
                    f"element is hidden): {', '.join(self.missing_properties)}",
                    NAMES_FIX,
                )
            )
        return out

    def hidden_summary(self, limit: int = 12) -> str:
        hiding = [h for h in self.hidden if h.untagged or h.malformed]
        if not hiding:
            return f"every element carries {self.layers_property!r} as a list of strings"
        parts = [f"{h.kind} {h.name}: {h.untagged} untagged, {h.malformed} malformed of {h.total}" for h in hiding]
        more = f"; and {len(parts) - limit} more" if len(parts) > limit else ""
        return "the policy hides " + "; ".join(parts[:limit]) + more


def named_labels(policy: Policy) -> list[str]:
    names = {label for tool in policy.tools.values() for label in (*tool.denied_labels, *tool.pins)}
    return sorted(names | set(policy.scope.nodes))


def named_types(policy: Policy) -> list[str]:
    names = set(policy.scope.bookkeeping_relationship_types) | set(policy.scope.relationships)
    for tool in policy.tools.values():
        names |= tool.denied_relationship_types
    return sorted(names)


def rule_reads(policy: Policy) -> list[tuple[str, str, str]]:
    """(``label`` | ``type``, name, property) for every property a named rule or a pin reads."""
    sc = policy.scope
    reads: set[tuple[str, str, str]] = set()
    for kind, rules in (("label", sc.nodes), ("type", sc.relationships)):
        for name, rule in rules.items():
            reads |= {(kind, name, key) for key in rule_kinds.property_refs(rule, sc.layers_property)}
    for tool in policy.tools.values():
        reads |= {("label", label, pin.property) for label, pin in tool.pins.items()}
    return sorted(reads)


def reads_layers(policy: Policy) -> bool:
    """Whether any rule reads the scope property (else nothing about it is worth a line)."""
    return any(
        policy.scope.layers_property in rule_kinds.property_refs(rule, policy.scope.layers_property)
        for rule in policy.scope_rules()
    )


def reads_layers_everywhere(policy: Policy) -> bool:
    """Whether the default rule reads the scope property (else its absence is no problem)."""
    default = policy.scope.default
    return policy.scope.layers_property in rule_kinds.property_refs(default, policy.scope.layers_property)


def survey(policy: Policy, run: Run, *, counts: bool = True) -> Survey:
    """The policy against the graph; ``counts=False`` skips the per-label pass (serve's start-up)."""
    prop = policy.scope.layers_property
    labels, types = named_labels(policy), named_types(policy)
    # One query for the property and every name (the count store answers each count).
    label_counts = ", ".join(f"COUNT {{ MATCH (n:{quote_name(name)}) }}" for name in labels)
    type_counts = ", ".join(f"COUNT {{ MATCH ()-[r:{quote_name(name)}]->() }}" for name in types)
    reads = rule_reads(policy)
    params: dict[str, Any] = {"p": prop} | {f"r{i}": read[2] for i, read in enumerate(reads)}
    read_checks = ", ".join(
        f"EXISTS {{ MATCH (n:{quote_name(name)}) WHERE n[$r{i}] IS NOT NULL }}"
        if kind == "label"
        else f"EXISTS {{ MATCH ()-[n:{quote_name(name)}]->() WHERE n[$r{i}] IS NOT NULL }}"
        for i, (kind, name, _) in enumerate(reads)
    )
    # Named columns: two empty lists would otherwise be two columns of the same name.
    text = (
        f"RETURN {_ON_NODES} OR {_ON_RELATIONSHIPS} AS found, [{label_counts}] AS labels, "
        f"[{type_counts}] AS types, [{read_checks}] AS reads"
    )
    row = run(text, params)[0]
    found = bool(row[0]) or not reads_layers_everywhere(policy)
    missing_labels = [name for name, count in zip(labels, row[1], strict=True) if not count]
    missing_types = [name for name, count in zip(types, row[2], strict=True) if not count]
    missing_properties = [f"{name}.{p}" for (_, name, p), there in zip(reads, row[3], strict=True) if not there]
    hidden = (
        [Hidden(kind=r[0], name=r[1], total=r[2], untagged=r[3], malformed=r[4]) for r in run(HIDDEN, {"p": prop})]
        if counts
        else []
    )
    hidden.sort(key=lambda h: (h.kind, h.name))
    return Survey(
        layers_property=prop, property_found=found, missing_labels=missing_labels, missing_types=missing_types,
        hidden=hidden, missing_properties=missing_properties,
    )  # fmt: skip


class SurveyFailed(Exception):
    """The graph could not be looked at (Neo4j busy or refusing); the message says why."""


@contextmanager
def operator_reads(settings: GatewaySettings, timeout_seconds: float = 120.0) -> Iterator[Run]:
    """A :data:`Run` over the graph ``settings`` point at, through one warm sandbox removed on the way out.

    What ``policy lint --graph``, ``policy explain`` and ``policy matrix`` read with; ``SetupError``
    when no Neo4j is configured, :class:`SurveyFailed` when the sandbox cannot run.
    """
    target = neo4j_connection(settings)
    runner = SandboxRunner(settings_for(settings, target, pool_size=1))
    try:
        runner.wait_ready(60.0)
        ok, reason = runner.available()
        if not ok:
            raise SurveyFailed(f"the sandbox cannot run: {reason} (`cypher-gateway doctor` says what to fix)")
        yield via_sandbox(runner, target.database, timeout_seconds)
    finally:
        runner.close()


def via_sandbox(
    runner: SandboxRunner, database: str | None, timeout_seconds: float, ready_seconds: float = 60.0
) -> Run:
    """A :data:`Run` that sends each query to a sandbox of ``runner`` (READ transaction, no scope)."""

    def run(cypher: str, params: dict[str, Any]) -> list[list[Any]]:
        job = SandboxJob(query_id=f"survey-{uuid.uuid4().hex[:8]}", cypher=cypher, params=params, database=database,
                         timeout_seconds=timeout_seconds, max_rows=100_000, max_bytes=16_000_000)  # fmt: skip
        runner.wait_ready(ready_seconds, count=1)
        try:
            result = runner.run(job)
        except GatewayError as exc:
            raise SurveyFailed(str(exc)) from exc
        if result.error is not None or result.truncated:
            raise SurveyFailed(result.error.message if result.error is not None else "the answer was truncated")
        return result.rows

    return run
