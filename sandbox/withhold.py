"""Hidden properties removed from every node and relationship an answer returns whole.

Two forms of the policy's choice: the allow-list ``visible_properties`` (the job's
``visible_properties``: every key it does not list for the element is removed; exact names) or
the deny-list ``hidden_properties`` (label or relationship type -> keys removed, compared
case-insensitively as the guard compares them). Either way the keys go from the element's
``properties`` wherever it stands: a column, a list, a map, a path. The guard refuses every
query that names such a key or copies properties it does not name (``gateway/guard/hidden.py``),
so a whole element is the only way the value could reach an answer; this removes it there.

A hidden key weighs nothing. While rows are read (``RowCollector``), the serializers ask
``Withholding.split`` which of an element's properties to take from the driver's object, before
any value is sized or converted: a hidden value is never measured, converted nor counted, so
neither the byte limit, ``bytes`` nor ``truncated`` says how large it is, and no work past the
driver's own decoding is spent on it. The
hidden keys the result check reads (the scope's property, a rule's, a filter's) are set aside,
put back only once the row has been measured, and removed again after the check by the second
pass: ``apply`` over the tagged JSON of ``sandbox/wire.py`` (standard library only, like the
result check), which also gives the count the answer carries: how many elements of the final rows
belong to a label or type that hides properties (they are shown without them); under the allow-list
every element counts, so the count never says whether an element held a key nobody listed.
Counted over the final rows only, so the count says nothing about rows the result check dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Literal, NamedTuple, TypeVar

from sandbox.rebuild import ShownNode, ShownRelationship
from sandbox.rule_checks import reads
from sandbox.tagged import TYPE_KEY, elements
from sandbox.wire import SandboxJob, ScopeCheck, VisibleKeys

V = TypeVar("V")


class Owners(NamedTuple):
    """What decides an element's keys: its labels (a node) or its type (a relationship)."""

    kind: Literal["node", "relationship"]
    names: frozenset[str]


# A serializer's conversion of one element's properties: (its owners, the driver's property map,
# the conversion of one value) -> the JSON properties shown.
PropertiesOf = Callable[[Owners, Mapping[str, Any], Callable[[Any], Any]], dict[str, Any]]
_TYPED = {"Node": "node", "Relationship": "relationship"}


def owners_of(element: Any) -> Owners:
    """The owners of a driver's Node or Relationship, of Neo4j's typed JSON element, or of our tagged one.

    The one reading of "which labels or type": the serializers, the size bound and the removal
    after the result check all ask here.
    """
    # The projection wrapper's rebuilt elements are dicts of their properties: asked first, so a
    # property named like a tag never decides their owners.
    if isinstance(element, ShownNode):
        return Owners("node", _strings(element.labels))
    if isinstance(element, ShownRelationship):
        return Owners("relationship", _strings([element.type]))
    tag = element.get(TYPE_KEY) if isinstance(element, dict) else None
    if tag in _TYPED:  # Neo4j's typed JSON (the Query API's answer)
        value = element.get("_value") or {}
        if tag == "Node":
            return Owners("node", _strings(value.get("_labels")))
        return Owners("relationship", _strings([value.get("_type")]))
    if tag == "node":
        return Owners("node", _strings(element.get("labels")))
    if tag == "relationship":
        return Owners("relationship", _strings([element.get("type")]))
    labels = getattr(element, "labels", None)
    if labels is not None:
        return Owners("node", _strings(labels))
    return Owners("relationship", _strings([getattr(element, "type", None)]))


def _strings(values: Any) -> frozenset[str]:
    if not isinstance(values, Iterable) or isinstance(values, str | bytes):
        return frozenset()
    return frozenset(v for v in values if isinstance(v, str))


class _Keys(NamedTuple):
    """The keys of one kind of element: those shown (allow-list, exact) or those hidden (deny-list, lower-case)."""

    shown: frozenset[str] | None
    hidden: frozenset[str]

    def hides(self, key: str) -> bool:
        return key not in self.shown if self.shown is not None else key.lower() in self.hidden

    def hides_any(self) -> bool:
        return self.shown is not None or bool(self.hidden)


class Withholding:
    """Which keys to remove per element, and which to leave for the result check.

    Under the allow-list (``visible``) an element keeps exactly the keys listed for it. Under the
    deny-list (``hidden``) labels, types and keys are compared case-insensitively, as the guard
    compares them: a key the guard would refuse to read by name is never shown whole either.
    """

    def __init__(
        self,
        hidden: Mapping[str, Collection[str]] | None = None,
        keep: Collection[str] = (),
        *,
        visible: VisibleKeys | None = None,
    ) -> None:
        self.hidden: dict[str, frozenset[str]] = {}
        for owner, keys in (hidden or {}).items():
            lowered = owner.lower()
            self.hidden[lowered] = self.hidden.get(lowered, frozenset()) | {k.lower() for k in keys}
        self.visible = visible
        self.keep = frozenset(k.lower() for k in keep)
        self._by_owners: dict[Owners, _Keys] = {}

    @classmethod
    def for_job(cls, job: SandboxJob, keep: Collection[str] = ()) -> Withholding | None:
        """The job's withholding (None when its policy hides nothing)."""
        if job.visible_properties is None and not job.hidden_properties:
            return None
        return cls(job.hidden_properties, keep, visible=job.visible_properties)

    @classmethod
    def while_reading(cls, job: SandboxJob) -> Withholding | None:
        """The first pass: everything hidden but the properties the result check reads."""
        # Every property the result check (sandbox/scope_check.py) reads must survive until it has
        # run: the layers property, every rule's property, every filter's and pin's.
        return cls.for_job(job, read_by_the_check(job.scope) if job.scope is not None else [])

    def keys(self, owners: Owners) -> _Keys:
        found = self._by_owners.get(owners)
        if found is None:
            found = self._by_owners[owners] = self._decide(owners)
        return found

    def _decide(self, owners: Owners) -> _Keys:
        if self.visible is not None:
            return _Keys(shown=_visible(self.visible, owners), hidden=frozenset())
        lowered = (owner.lower() for owner in owners.names)
        return _Keys(shown=None, hidden=frozenset().union(*(self.hidden.get(o, frozenset()) for o in lowered)))

    def split(self, owners: Owners, properties: Mapping[str, V]) -> tuple[dict[str, V], dict[str, V]]:
        """(the properties shown, the hidden ones the result check reads); every other hidden key is left behind."""
        keys = self.keys(owners)
        if not keys.hides_any():
            return dict(properties), {}
        shown: dict[str, V] = {}
        held: dict[str, V] = {}
        for key, value in properties.items():
            if not keys.hides(key):
                shown[key] = value
            elif key.lower() in self.keep:
                held[key] = value
        return shown, held

    def left_behind(self, owners: Owners, key: str) -> bool:
        """Whether ``key`` of such an element is hidden and not read by the result check: never taken."""
        return self.keys(owners).hides(key) and key.lower() not in self.keep

    def apply(self, value: Any) -> tuple[int, int]:
        """Remove hidden keys from ``value`` in place: (elements of a hiding label or type, keys removed)."""
        count = removed = 0
        for item in elements(value):
            keys = self.keys(owners_of(item))
            if keys.hides_any():
                count += 1
                removed += self._remove(item.get("properties"), keys)
        return count, removed

    def _remove(self, properties: Any, keys: _Keys) -> int:
        if not isinstance(properties, dict):
            return 0
        gone = [key for key in properties if keys.hides(key) and key.lower() not in self.keep]
        for key in gone:
            del properties[key]
        return len(gone)


def _visible(visible: VisibleKeys, owners: Owners) -> frozenset[str]:
    """The allow-list's keys for one element: its type's (else default); a node's listed labels' all at once."""
    default = frozenset(visible.default)
    if owners.kind == "relationship":
        (rel_type,) = owners.names or {""}
        return frozenset(visible.relationships.get(rel_type, default))
    listed = [frozenset(visible.nodes[label]) for label in owners.names if label in visible.nodes]
    return frozenset.intersection(*listed) if listed else default


def read_by_the_check(scope: ScopeCheck) -> list[str]:
    """The properties the result check reads: kept for it under hidden properties, withheld after."""
    rules = [*scope.nodes.values(), *scope.relationships.values(), *([scope.default] if scope.default else [])]
    conditions = [c for listed in scope.conditions.values() for c in listed]
    rules += [c.rule for c in conditions if c.rule is not None]
    read = [scope.layers_property, *(c.property for c in conditions if c.property)]
    read += [name for rule in rules for name in reads(rule)]
    return list(dict.fromkeys(read))
