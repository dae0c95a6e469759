"""Hidden properties removed from every node and relationship an answer returns whole.

The policy's ``hidden_properties`` (label or relationship type -> keys; the job's
``hidden_properties``) are removed from the element's ``properties`` wherever it stands: a
column, a list, a map, a path. The guard refuses every query that names such a key or copies
properties it does not name (``gateway/guard/hidden.py``), so a whole element is the only way
the value could reach an answer; this removes it there.

Two passes over the tagged JSON of ``sandbox/wire.py`` (standard library only, like the result
check). While rows are read (``RowCollector``), so the byte limit counts what is returned (a
1,024-float embedding per node would otherwise fill an answer): every hidden key except those the
result check still reads (the scope's property). After the result check, every hidden key, and
the count the answer carries: how many elements of the final rows belong to a label or type that
hides properties (they are shown without them). Counted over the final rows only, so the count
says nothing about rows the result check dropped.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from sandbox.tagged import TYPE_KEY, elements
from sandbox.wire import SandboxJob, ScopeCheck


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

    @classmethod
    def while_reading(cls, job: SandboxJob) -> Withholding | None:
        """The first pass: everything hidden but the properties the result check reads."""
        if not job.hidden_properties:
            return None
        # Every property the result check (sandbox/scope_check.py) reads must survive until it has
        # run: the layers property, every rule's property, every filter's and pin's.
        return cls(job.hidden_properties, _read_by_the_check(job.scope) if job.scope is not None else [])

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


def _read_by_the_check(scope: ScopeCheck) -> list[str]:
    rules = [*scope.nodes.values(), *scope.relationships.values(), *([scope.default] if scope.default else [])]
    conditions = [c.property for listed in scope.conditions.values() for c in listed]
    return [scope.layers_property, *(r.property for r in rules if r.property), *conditions]
