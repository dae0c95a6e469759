"""The visible copy: the graph with everything one principal cannot see under one tool removed.

``export_graph`` reads every node and relationship of the gateway's database with plain Cypher;
``VisibilityModel`` decides, in Python, which of them the policy shows (docs/decisions/0018's
table, read from the policy's fields, never from the scope rewrite's Cypher text, so that the
prover compares two independent readings of the same rules); ``load_copy`` writes what is
visible into a second, separate Neo4j, wiped first. A relationship goes when it or either end
is invisible; the properties the policy hides are removed.

Harness-only, like ``seed.py``: it talks to Neo4j with the harness's own driver.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from gateway.cypher import ast
from gateway.domain import Principal
from gateway.policy import (
    DERIVED_ANCHOR,
    DERIVED_ELEMENT,
    Policy,
    ScopeFilter,
    ToolName,
    VisibilityRule,
    derived_path,
)
from sandbox.rule_checks import epoch_nanos
from sandbox.withhold import Owners

# The bound the scope rewrite also puts on anchors within anchors (policies refuse cycles).
MAX_DERIVED_DEPTH = 8
# The copy is written in batches of this many elements per statement.
BATCH = 500


class CopyError(Exception):
    """The graph could not be exported or the copy could not be loaded; the message says why."""


@dataclass(frozen=True)
class GraphNode:
    id: str
    labels: frozenset[str]
    properties: Mapping[str, Any]


@dataclass(frozen=True)
class GraphRel:
    id: str
    type: str
    start: str
    end: str
    properties: Mapping[str, Any]


@dataclass
class Graph:
    """A whole database as plain Python values (the driver's types for temporal and spatial ones)."""

    nodes: dict[str, GraphNode] = field(default_factory=dict)
    rels: dict[str, GraphRel] = field(default_factory=dict)

    def size(self) -> int:
        return len(self.nodes) + len(self.rels)


def export_graph(driver: Any, database: str | None, max_elements: int) -> Graph:
    """Every node and relationship of ``database`` (refused above ``max_elements``: a copy per principal)."""
    graph = Graph()
    with driver.session(database=database) as session:
        count = session.run("MATCH (n) RETURN count(n) AS c").single()["c"]
        count += session.run("MATCH ()-[r]->() RETURN count(r) AS c").single()["c"]
        if count > max_elements:
            raise CopyError(
                f"the database holds {count} elements, more than --max-elements {max_elements}: the prover copies "
                "the graph once per principal and tool; run it on a fixture-sized database"
            )
        for rec in session.run("MATCH (n) RETURN elementId(n) AS id, labels(n) AS labels, properties(n) AS props"):
            graph.nodes[rec["id"]] = GraphNode(rec["id"], frozenset(rec["labels"]), dict(rec["props"]))
        rels = (
            "MATCH (a)-[r]->(b) RETURN elementId(r) AS id, type(r) AS type, elementId(a) AS s, elementId(b) AS e, "
            "properties(r) AS props"
        )
        for rec in session.run(rels):
            graph.rels[rec["id"]] = GraphRel(rec["id"], rec["type"], rec["s"], rec["e"], dict(rec["props"]))
    return graph


@dataclass(frozen=True)
class _Step:
    """One element of a derived path: a node (its labels) or a relationship (types, direction)."""

    name: str | None
    labels: frozenset[str] = frozenset()
    types: frozenset[str] = frozenset()
    direction: str = "both"  # "out": left to right, "in": right to left
    node: bool = True


def _steps(path: str) -> list[_Step]:
    """A derived rule's path as steps; anything but plain labels, types and directions is refused."""
    steps: list[_Step] = []
    for element in derived_path(path).elements:
        name = element.variable.name if element.variable is not None else None
        if isinstance(element, ast.NodePattern):
            labels = frozenset(element.labels.names()) if element.labels is not None else frozenset()
            if element.labels is not None and not _conjunction(element.labels.expression):
                raise CopyError(f"derived path {path!r}: only plain labels (A or A:B) are modelled")
            if element.properties is not None:
                raise CopyError(f"derived path {path!r}: property maps are not modelled")
            steps.append(_Step(name, labels=labels))
        elif isinstance(element, ast.RelPattern):
            types = frozenset(element.types.names()) if element.types is not None else frozenset()
            if element.types is not None and not _conjunction(element.types.expression, "|"):
                raise CopyError(f"derived path {path!r}: only plain types (A or A|B) are modelled")
            if element.properties is not None:
                raise CopyError(f"derived path {path!r}: property maps are not modelled")
            steps.append(_Step(name, types=types, direction=_direction(element), node=False))
        else:
            raise CopyError(f"derived path {path!r}: {type(element).__name__} is not modelled")
    return steps


def _conjunction(expression: ast.LabelNode, op: str = "&") -> bool:
    """Only names joined by ``op`` (``A:B`` / ``A&B`` for labels, ``A|B`` for types)."""
    if isinstance(expression, ast.LabelName):
        return True
    if isinstance(expression, ast.LabelParen):
        return _conjunction(expression.operand, op)
    return (
        isinstance(expression, ast.LabelBinary)
        and expression.op == op
        and _conjunction(expression.left, op)
        and _conjunction(expression.right, op)
    )


def _direction(rel: ast.RelPattern) -> str:
    return {"->": "out", "<-": "in"}.get(rel.direction, "both")


def _parts(rule: VisibilityRule) -> list[VisibilityRule]:
    """``rule`` and every rule composed into it."""
    return [rule, *(part for sub in rule.rules or () for part in _parts(sub))]


def _instant(value: Any) -> int | None:
    """A zoned datetime's (or a date's midnight UTC) nanoseconds since the epoch; None for any other value.

    Nanoseconds, not a Python datetime: ``to_native`` drops the digits below the microsecond,
    and Neo4j orders by them.
    """
    import neo4j.time  # harness-only, as in seed.py: the gateway process never loads the driver

    if isinstance(value, neo4j.time.DateTime) and value.tzinfo is not None:
        return epoch_nanos(value.to_native(), value.nanosecond)
    if isinstance(value, neo4j.time.Date):
        return epoch_nanos(datetime(value.year, value.month, value.day, tzinfo=UTC), 0)
    if isinstance(value, datetime) and value.tzinfo is not None:
        return epoch_nanos(value, value.microsecond * 1000)
    if isinstance(value, date) and not isinstance(value, datetime):
        return epoch_nanos(datetime(value.year, value.month, value.day, tzinfo=UTC), 0)
    return None


def _is_string_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


@dataclass
class VisibilityModel:
    """What one principal sees under one tool of one policy, decided element by element."""

    policy: Policy
    tool: ToolName
    principal: Principal
    params: Mapping[str, Any]
    graph: Graph
    # The instant time-valid rules compare with (the gateway's own is taken per request).
    now: datetime = field(default_factory=lambda: datetime.now(UTC))
    _steps: dict[str, list[_Step]] = field(default_factory=dict)
    _out: dict[str, list[GraphRel]] = field(default_factory=dict)
    _in: dict[str, list[GraphRel]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for rel in self.graph.rels.values():
            self._out.setdefault(rel.start, []).append(rel)
            self._in.setdefault(rel.end, []).append(rel)
        scope = self.policy.scope
        for rule in (*scope.nodes.values(), *scope.relationships.values()):
            for part in _parts(rule):
                if part.kind == "derived" and part.path and part.path not in self._steps:
                    self._steps[part.path] = _steps(part.path)

    # ---- the rules ------------------------------------------------------------------------------

    def _filters(self, name: str) -> list[ScopeFilter]:
        return [f for f in self.policy.scope.filters.get(name, ()) if self.tool in f.tools]

    def _rule(self, rule: VisibilityRule, element: GraphNode | GraphRel, depth: int) -> bool:
        scope = self.policy.scope
        if rule.kind == "public":
            return True
        if rule.kind == "denied":
            return False
        if rule.kind == "derived":
            return depth < MAX_DERIVED_DEPTH and self._derived(rule.path or "", element, depth)
        if rule.kind == "all_of":
            return all(self._rule(sub, element, depth) for sub in rule.rules or ())
        if rule.kind == "any_of":
            return any(self._rule(sub, element, depth) for sub in rule.rules or ())
        if rule.kind == "time_valid":
            return self._time_valid(rule, element)
        present = scope.rule_property(rule) in element.properties
        value = element.properties.get(scope.rule_property(rule))
        allowed = self.principal.attribute(rule.attribute_name())
        if rule.kind == "equality":
            return isinstance(value, str) and value in allowed
        if not present or value is None:
            return scope.untagged == "global"
        return _is_string_list(value) and (not value or any(item in allowed for item in value))

    def _time_valid(self, rule: VisibilityRule, element: GraphNode | GraphRel) -> bool:
        """``from <= now < to``: zoned datetimes and dates (midnight UTC) only; no ``to`` is still valid."""
        now = _instant(self.now)
        since = _instant(element.properties.get(rule.from_property or "validFrom"))
        if now is None or since is None or since > now:
            return False
        end = element.properties.get(rule.to_property or "validTo")
        if end is None:
            return True
        until = _instant(end)
        return until is not None and now < until

    def _filter(self, rule: ScopeFilter, element: GraphNode | GraphRel) -> bool:
        if rule.rule is not None:
            return self._rule(rule.rule, element, 0)
        value = element.properties.get(rule.property or "")
        if rule.absent:
            return value is None
        return isinstance(value, str) and value == rule.equals

    def node_visible(self, node: GraphNode, depth: int = 0, stated: frozenset[str] = frozenset()) -> bool:
        """Every named label's rule, every filter and pin of a label it carries; the default without one."""
        scope = self.policy.scope
        pins = self.policy.tool(self.tool).pins
        named = node.labels & set(scope.nodes)
        if len(named) > 1 and named & scope.one_parent_labels():
            return False  # a label that walks to its one parent, and another named label: malformed, hidden
        for label in node.labels:
            rule = scope.nodes.get(label)
            if rule is not None:
                if any(p.kind == "derived" for p in _parts(rule)) and depth > 0 and label not in stated:
                    return False  # an anchor with a derived label its path does not state
                if not self._rule(rule, node, depth):
                    return False
            if not all(self._filter(f, node) for f in self._filters(label)):
                return False
            pin = pins.get(label)
            if pin is not None:
                wanted = self.params.get(pin.parameter)
                value = node.properties.get(pin.property)
                if wanted is None or value is None or not _cypher_equal(value, wanted):
                    return False
        if not node.labels & set(scope.nodes):
            return self._rule(scope.default, node, depth)
        return True

    def rel_visible(self, rel: GraphRel) -> bool:
        """Its type's rule and filters, not a hidden type of the tool, and both ends visible."""
        scope = self.policy.scope
        if rel.type in self.policy.hidden_relationship_types(self.tool):
            return False
        if not self._rule(scope.relationships.get(rel.type, scope.default), rel, 0):
            return False
        if rel.type not in scope.nodes and not all(self._filter(f, rel) for f in self._filters(rel.type)):
            return False
        return self.node_visible(self.graph.nodes[rel.start]) and self.node_visible(self.graph.nodes[rel.end])

    # ---- derived paths --------------------------------------------------------------------------

    def _derived(self, path: str, element: GraphNode | GraphRel, depth: int) -> bool:
        steps = self._steps[path]
        at = next(i for i, s in enumerate(steps) if s.name == DERIVED_ELEMENT)
        anchor_step = next(s for s in steps if s.name == DERIVED_ANCHOR)
        for binding in self._bindings(steps, at, element):
            anchor = binding[DERIVED_ANCHOR]
            assert isinstance(anchor, GraphNode)
            if self.node_visible(anchor, depth + 1, anchor_step.labels):
                return True
        return False

    def _bindings(self, steps: list[_Step], at: int, element: GraphNode | GraphRel) -> Iterable[dict[str, Any]]:
        """Every way the fixed-length path matches with ``x`` bound to ``element`` (distinct relationships)."""
        if steps[at].node != isinstance(element, GraphNode):
            return
        if isinstance(element, GraphRel):
            # x is a relationship: try both of its nodes as the ones around it, as the direction allows.
            ends = [(element.start, element.end)] if steps[at].direction == "out" else []
            if steps[at].direction == "in":
                ends = [(element.end, element.start)]
            if steps[at].direction == "both":
                ends = [(element.start, element.end), (element.end, element.start)]
            if not steps[at].types or element.type in steps[at].types:
                for left, right in ends:
                    yield from self._extend(
                        steps, at - 1, at + 1, left, right, {DERIVED_ELEMENT: element}, {element.id}
                    )
            return
        if self._node_fits(steps[at], element):
            yield from self._extend(steps, at, at, element.id, element.id, {DERIVED_ELEMENT: element}, set())

    def _extend(
        self, steps: list[_Step], lo: int, hi: int, left: str, right: str, bound: dict[str, Any], used: set[str]
    ) -> Iterable[dict[str, Any]]:
        """Grow the match outwards: first to the right end of the path, then to the left."""
        if lo >= 0 and steps[lo].node and not self._node_fits(steps[lo], self.graph.nodes[left]):
            return
        if hi < len(steps) and steps[hi].node and not self._node_fits(steps[hi], self.graph.nodes[right]):
            return
        bound = dict(bound)
        for index, node_id in ((lo, left), (hi, right)):
            if 0 <= index < len(steps) and steps[index].name:
                bound.setdefault(steps[index].name or "", self.graph.nodes[node_id])
        if hi + 1 < len(steps):
            rel_step = steps[hi + 1]
            for rel, other in self._adjacent(right, rel_step, forward=True):
                if rel.id not in used:
                    named = {**bound, **({rel_step.name: rel} if rel_step.name else {})}
                    yield from self._extend(steps, lo, hi + 2, left, other, named, used | {rel.id})
            return
        if lo - 1 >= 0:
            rel_step = steps[lo - 1]
            for rel, other in self._adjacent(left, rel_step, forward=False):
                if rel.id not in used:
                    named = {**bound, **({rel_step.name: rel} if rel_step.name else {})}
                    yield from self._extend(steps, lo - 2, hi, other, right, named, used | {rel.id})
            return
        yield bound

    def _adjacent(self, node_id: str, step: _Step, *, forward: bool) -> Iterable[tuple[GraphRel, str]]:
        """Relationships at ``node_id`` that fit ``step`` read left to right (``forward``) or back."""
        outgoing = step.direction in ("out", "both") if forward else step.direction in ("in", "both")
        incoming = step.direction in ("in", "both") if forward else step.direction in ("out", "both")
        if outgoing:
            for rel in self._out.get(node_id, []):
                if not step.types or rel.type in step.types:
                    yield rel, rel.end
        if incoming:
            for rel in self._in.get(node_id, []):
                if not step.types or rel.type in step.types:
                    yield rel, rel.start

    @staticmethod
    def _node_fits(step: _Step, node: GraphNode) -> bool:
        return step.labels <= node.labels

    # ---- the copy -------------------------------------------------------------------------------

    def visible(self) -> Graph:
        """The visible copy: visible nodes, visible relationships between them, hidden properties removed."""
        # The sandbox's own reading of which keys an element shows (allow-list or deny-list).
        withholding = self.policy.withholding()
        copy = Graph()
        for node in self.graph.nodes.values():
            if self.node_visible(node):
                shown, _ = withholding.split(Owners("node", node.labels), node.properties)
                copy.nodes[node.id] = GraphNode(node.id, node.labels, shown)
        for rel in self.graph.rels.values():
            if rel.start in copy.nodes and rel.end in copy.nodes and self.rel_visible(rel):
                shown, _ = withholding.split(Owners("relationship", frozenset({rel.type})), rel.properties)
                copy.rels[rel.id] = GraphRel(rel.id, rel.type, rel.start, rel.end, shown)
        return copy


def _cypher_equal(a: Any, b: Any) -> bool:
    """``a = b`` as Cypher reads it for the values a pin compares (numbers across int and float)."""
    numbers = (int, float)
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, numbers) and isinstance(b, numbers):
        return bool(a == b)
    return type(a) is type(b) and bool(a == b)


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _writable(props: Mapping[str, Any]) -> dict[str, Any]:
    """Properties as the copy must store them.

    The driver reads a datetime stored with offset ``Z`` with pytz's UTC zone, which it would
    write back as the named zone ``[UTC]`` (``toString`` then differs); it is written as the offset
    it was read as. (A datetime stored with the named zone UTC reads the same: it becomes ``Z``.)
    """
    import datetime as dt

    from neo4j.time import DateTime

    def fix(value: Any) -> Any:
        if isinstance(value, DateTime) and getattr(value.tzinfo, "zone", None) == "UTC":
            return value.replace(tzinfo=dt.UTC)
        if isinstance(value, list):
            return [fix(v) for v in value]
        return value

    return {key: fix(value) for key, value in props.items()}


def load_copy(driver: Any, database: str | None, graph: Graph) -> None:
    """Wipe the copy's database and write ``graph`` into it (ids are the source's, mapped)."""
    with driver.session(database=database) as session:
        session.run("MATCH (n) DETACH DELETE n").consume()
        mapped: dict[str, str] = {}
        by_labels: dict[frozenset[str], list[GraphNode]] = {}
        for node in graph.nodes.values():
            by_labels.setdefault(node.labels, []).append(node)
        for labels, nodes in sorted(by_labels.items(), key=lambda item: sorted(item[0])):
            text = "".join(":" + _quoted(label) for label in sorted(labels))
            for i in range(0, len(nodes), BATCH):
                rows = [{"id": n.id, "props": _writable(n.properties)} for n in nodes[i : i + BATCH]]
                query = (
                    f"UNWIND $rows AS row CREATE (n{text}) SET n = row.props RETURN row.id AS src, elementId(n) AS dst"
                )
                for rec in session.run(query, rows=rows):
                    mapped[rec["src"]] = rec["dst"]
        by_type: dict[str, list[GraphRel]] = {}
        for rel in graph.rels.values():
            by_type.setdefault(rel.type, []).append(rel)
        for rel_type, rels in sorted(by_type.items()):
            for i in range(0, len(rels), BATCH):
                rows = [
                    {"s": mapped[r.start], "e": mapped[r.end], "props": _writable(r.properties)}
                    for r in rels[i : i + BATCH]
                ]
                query = (
                    "UNWIND $rows AS row MATCH (a) WHERE elementId(a) = row.s MATCH (b) WHERE elementId(b) = row.e "
                    f"CREATE (a)-[r:{_quoted(rel_type)}]->(b) SET r = row.props"
                )
                session.run(query, rows=rows).consume()
        counted = session.run("MATCH (n) RETURN count(n) AS c").single()["c"]
        counted += session.run("MATCH ()-[r]->() RETURN count(r) AS c").single()["c"]
    if counted != graph.size():
        raise CopyError(f"the copy holds {counted} elements, {graph.size()} were written (is it shared?)")
