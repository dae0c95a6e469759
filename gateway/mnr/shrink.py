"""A difference made small: drop clauses and conditions while the same kind of difference remains.

Greedy, one piece at a time (delta debugging's simplest form): each WHERE conjunct, then each
droppable clause (an OPTIONAL MATCH, a CALL, a second MATCH), is removed when the smaller query
still shows the difference ``still_differs`` is asked about; a candidate the guard refuses or
that no longer differs is put back. Deterministic: the pieces are tried in query order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from gateway.mnr.generate import Clause, Query

# Each candidate runs the query again on both sides: bounded whatever the query's size.
MAX_TRIES = 40


def _candidates(query: Query) -> list[Query]:
    out: list[Query] = []
    for i, clause in enumerate(query.clauses):
        for j in range(len(clause.where)):
            smaller = replace(clause, where=clause.where[:j] + clause.where[j + 1 :])
            out.append(_with(query, i, smaller))
    for i, clause in enumerate(query.clauses):
        if clause.droppable:
            out.append(replace(query, clauses=query.clauses[:i] + query.clauses[i + 1 :]))
    return out


def _with(query: Query, index: int, clause: Clause) -> Query:
    return replace(query, clauses=(*query.clauses[:index], clause, *query.clauses[index + 1 :]))


def shrink(query: Query, still_differs: Callable[[Query], bool], max_tries: int = MAX_TRIES) -> Query:
    """The smallest query reached by dropping pieces of ``query`` while ``still_differs`` holds."""
    tries = 0
    current = query
    progress = True
    while progress and tries < max_tries:
        progress = False
        for candidate in _candidates(current):
            if tries >= max_tries:
                break
            tries += 1
            if still_differs(candidate):
                current = candidate
                progress = True
                break
    return current
