"""Hidden properties removed from every node and relationship an answer returns whole.

The policy's ``hidden_properties`` (label or relationship type -> keys; the job's
``hidden_properties``) are removed from the element's ``properties`` wherever it stands: a
column, a list, a map, a path. The guard refuses every query that names such a key or copies
properties it does not name (``gateway/guard/hidden.py``), so a whole element is the only way
the value could reach an answer; this removes it there.

A hidden key weighs nothing. While rows are read (``RowCollector``), the serializers ask
``Withholding.split`` which of an element's properties to take from the driver's object, before
any value is sized or converted: a hidden value is never measured, converted nor counted, so
neither the byte limit, ``bytes`` nor ``truncated`` says how large it is, and no work past the
driver's own decoding is spent on it. The
hidden keys the result check reads (the scope's property, a rule's, a filter's) are set aside,
put back only once the row has been measured, and removed again after the check by the second
pass: ``apply`` over the tagged JSON of ``sandbox/wire.py`` (standard library only, like the
result check), which also gives the count the answer carries: how many elements of the final rows
belong to a label or type that hides properties (they are shown without them). Counted over the
final rows only, so the count says nothing about rows the result check dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, TypeVar

from sandbox.tagged import TYPE_KEY, elements
from sandbox.wire import SandboxJob, ScopeCheck

V = TypeVar("V")
# A serializer's conversion of one element's properties: (labels or [type], the driver's property
# map, the conversion of one value) -> the JSON properties shown.
PropertiesOf = Callable[[Iterable[str], Mapping[str, Any], Callable[[Any], Any]], dict[str, Any]]


class Withholding:
    """Which keys to remove per label or type, and which to leave for the result check.

    Labels, types and keys are compared case-insensitively, as the guard compares them: a key
    the guard would refuse to read by name is never shown whole either.
    """

    def __init__(self, hidden: Mapping[str, Collection[str]], keep: Collection[str] = ()) -> None:
        self.hidden: dict[str, frozenset[str]] = {}
        for owner, keys in hidden.items():
            lowered = owner.lower()
            self.hidden[lowered] = self.hidden.get(lowered, frozenset()) | {k.lower() for k in keys}
        self.keep = frozenset(k.lower() for k in keep)
        self._by_owners: dict[frozenset[str], frozenset[str]] = {}

    @classmethod
    def while_reading(cls, job: SandboxJob) -> Withholding | None:
        """The first pass: everything hidden but the properties the result check reads."""
        if not job.hidden_properties:
            return None
        # Every property the result check (sandbox/scope_check.py) reads must survive until it has
        # run: the layers property, every rule's property, every filter's and pin's.
        return cls(job.hidden_properties, read_by_the_check(job.scope) if job.scope is not None else [])

    def hidden_keys(self, owners: Iterable[str]) -> frozenset[str]:
        """The (lower-case) keys hidden on an element of these labels, or of this type."""
        key = owners if isinstance(owners, frozenset) else frozenset(owners)
        found = self._by_owners.get(key)
        if found is None:
            found = self._by_owners[key] = frozenset().union(
                *(self.hidden.get(owner.lower(), frozenset()) for owner in key if isinstance(owner, str))
            )
        return found

    def split(self, owners: Iterable[str], properties: Mapping[str, V]) -> tuple[dict[str, V], dict[str, V]]:
        """(the properties shown, the hidden ones the result check reads); every other hidden key is left behind."""
        hidden = self.hidden_keys(owners)
        if not hidden:
            return dict(properties), {}
        shown: dict[str, V] = {}
        held: dict[str, V] = {}
        for key, value in properties.items():
            lowered = key.lower()
            if lowered not in hidden:
                shown[key] = value
            elif lowered in self.keep:
                held[key] = value
        return shown, held

    def apply(self, value: Any) -> tuple[int, int]:
        """Remove hidden keys from ``value`` in place: (elements of a hiding label or type, keys removed)."""
        count = removed = 0
        for item in elements(value):
            owners = item.get("labels") if item.get(TYPE_KEY) == "node" else [item.get("type")]
            keys = self._keys(owners)
            if keys is not None:
                count += 1
                removed += self._remove(item.get("properties"), keys)
        return count, removed

    def _keys(self, owners: Any) -> set[str] | None:
        if not isinstance(owners, list):
            return None
        keys: set[str] | None = None
        for owner in owners:
            if isinstance(owner, str) and owner.lower() in self.hidden:
                keys = (keys or set()) | self.hidden[owner.lower()]
        return keys

    def _remove(self, properties: Any, keys: set[str]) -> int:
        if not isinstance(properties, dict):
            return 0
        gone = [key for key in properties if key.lower() in keys and key.lower() not in self.keep]
        for key in gone:
            del properties[key]
        return len(gone)


def read_by_the_check(scope: ScopeCheck) -> list[str]:
    """The properties the result check reads: kept for it under hidden properties, withheld after."""
    rules = [*scope.nodes.values(), *scope.relationships.values(), *([scope.default] if scope.default else [])]
    conditions = [c.property for listed in scope.conditions.values() for c in listed]
    return [scope.layers_property, *(r.property for r in rules if r.property), *conditions]
