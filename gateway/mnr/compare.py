"""One query's answers side by side, and what their difference is.

Three answers are compared: the gateway's (the principal's, through every layer), the visible
copy's (plain Cypher on the graph with the invisible removed) and the full graph's (plain
Cypher, unscoped: used only to tell a leak from a wrong answer). Rows are compared as
multisets of canonical JSON: element ids dropped (the gateway's are per-answer tokens), the
order inside lists ignored (``collect`` fixes none), floats to 12 significant digits. Errors
are compared by class only: an error or rows.

* **leak**: the gateway answers a row the copy does not and the full graph does (only the
  full graph could have produced it), or says the answer was cut while the copy's fits, or
  its result check had to redact an element (the rewrite let one through).
* **error oracle**: the gateway raises where the copy answers, and so does the full graph
  (the error says something about what is hidden).
* **wrong answer**: any other difference (fewer rows, other values; a rewrite that raises
  where neither graph does).

The gateway answering where plain Cypher on the copy raises is none of these: Cypher fixes no
evaluation order for ``AND``/``OR``, and the rewrite evaluates the agent's condition only after
visibility (``CASE``), so a condition that raises on some visible element may never be reached
under one plan and be reached under another. ``evaluation_order`` tells it apart; the prover
counts it as inconclusive (SECURITY.md: plan-dependent behaviour is not guaranteed).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from sandbox.tagged import TYPE_KEY

Kind = Literal["leak", "error_oracle", "wrong_answer"]
KINDS: tuple[Kind, ...] = ("leak", "error_oracle", "wrong_answer")
_IDS = ("elementId", "startElementId", "endElementId")


@dataclass(frozen=True)
class Answer:
    """Rows (canonical), or the error class and message; ``truncated`` when the limits cut it."""

    rows: Counter[str] | None
    error: str | None = None
    truncated: bool = False
    redacted: int = 0
    timed_out: bool = False

    @classmethod
    def of_rows(cls, rows: list[list[Any]], *, truncated: bool = False, redacted: int = 0) -> Answer:
        return cls(Counter(canonical(row) for row in rows), truncated=truncated, redacted=redacted)

    @classmethod
    def of_error(cls, message: str, *, timed_out: bool = False) -> Answer:
        return cls(None, error=message, timed_out=timed_out)

    def describe(self, limit: int = 5) -> str:
        if self.rows is None:
            return f"error: {self.error}"
        shown = sorted(self.rows.elements())[:limit]
        more = f" (+{sum(self.rows.values()) - limit} more)" if sum(self.rows.values()) > limit else ""
        cut = (", truncated" if self.truncated else "") + (f", {self.redacted} redacted" if self.redacted else "")
        return f"{sum(self.rows.values())} row(s){cut}: " + "; ".join(shown) + more


def _plain(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.12g}") if math.isfinite(value) else repr(value)
    if isinstance(value, list):
        return sorted((_plain(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if not (k in _IDS and value.get(TYPE_KEY) in _GRAPH)}
    return value


_GRAPH = ("node", "relationship")


def canonical(row: list[Any]) -> str:
    """One row as canonical JSON (the column order kept: it is the query's)."""
    return json.dumps([_plain(v) for v in row], sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def classify(
    gateway: Answer, copy: Answer, full: Answer | Callable[[], Answer], *, rows_determined: bool = True
) -> Kind | None:
    """What the difference between the gateway's and the copy's answer is; None when they agree.

    ``full`` only tells one kind of difference from another: a callable is called only then.
    """
    if gateway.timed_out or copy.timed_out:
        return None  # plan-dependent: reported as inconclusive by the caller, never as agreement
    if gateway.redacted:
        return "leak"
    if gateway.rows is None or copy.rows is None:
        if gateway.rows is None and copy.rows is None:
            return None
        if gateway.rows is None:
            return "error_oracle" if _answer(full).rows is None else "wrong_answer"
        return None  # the gateway answers where the copy raises: evaluation_order()
    if gateway.truncated or copy.truncated:
        if gateway.truncated == copy.truncated:
            return None  # both cut: which rows were kept is Neo4j's order, not the graph's
        return "leak" if gateway.truncated else "wrong_answer"
    if not rows_determined:
        given, expected = sum(gateway.rows.values()), sum(copy.rows.values())
        return None if given == expected else ("leak" if given > expected else "wrong_answer")
    if gateway.rows == copy.rows:
        return None
    extra = gateway.rows - copy.rows
    rows = _answer(full).rows
    if rows is not None and any(row in rows for row in extra):
        return "leak"
    return "wrong_answer"


def _answer(full: Answer | Callable[[], Answer]) -> Answer:
    return full() if callable(full) else full


def evaluation_order(gateway: Answer, copy: Answer) -> bool:
    """The gateway answered where plain Cypher on the copy raised (see the module's note)."""
    return gateway.rows is not None and copy.rows is None and not copy.timed_out
