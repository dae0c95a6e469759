"""What an agent receives: a tool result as the MCP server sends it, and fitting it into the policy's bytes.

A successful tool result goes out twice over: as ``structuredContent`` and as a text block holding
the same JSON (the MCP specification's "SHOULD also return the serialized JSON in a TextContent
block", which clients that forward only ``content`` to the model rely on). The policy's
``max_bytes`` bounds that whole result as sent, both copies together, so an agent's context never
pays more than the limit, whatever its client reads.

"As sent" is measured at its largest: compact JSON with every non-ASCII character escaped
(``\\uXXXX``), which is how one of the SDK's HTTP transports writes it (the others write UTF-8,
which is never longer). The text block itself is compact UTF-8 JSON.

Fitting drops whole rows from the end and says so (``truncated``, ``truncation: "bytes"``), as the
sandbox does when it stops reading at the row limit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from gateway.audit import REQUEST_ORIGIN
from gateway.domain import SchemaResult, ToolResult
from gateway.oauth import CLAIM_MISSING

_Answer = TypeVar("_Answer", ToolResult, SchemaResult)

# Field values of an answer that can grow while rows shrink (digits of rowCount and bytes,
# "truncation": "bytes"): the first guess leaves this much room; the exact check decides.
_SLACK = 64


def text_of(data: Mapping[str, Any]) -> str:
    """The text block of a tool result: compact UTF-8 JSON (non-ASCII kept as it is)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def sent_size(data: Mapping[str, Any], *, is_error: bool = False) -> int:
    """Bytes of the whole tool result carrying ``data`` (text block + structured content), as sent.

    An error result carries the text block only (see ``gateway.server.error_result``).
    """
    result: dict[str, Any] = {"content": [{"type": "text", "text": text_of(data)}]}
    if not is_error:
        result["structuredContent"] = data
    result |= {"isError": is_error, "resultType": "complete"}
    # ensure_ascii: every character of the output is ASCII, so its length is its size in bytes.
    return len(json.dumps(result, separators=(",", ":")))


def model_size(model: BaseModel) -> int:
    """``sent_size`` of a result model, as the server would send it."""
    return sent_size(model.model_dump(mode="json"))


def fit(result: ToolResult, max_bytes: int) -> ToolResult:
    """``result`` with as many leading rows as keep the whole tool result within ``max_bytes``.

    Unchanged when it fits. Otherwise rows are dropped from the end and the answer says
    ``truncated: true, truncation: "bytes"``; ``rowCount`` and ``bytes`` describe the rows kept.
    When not even the answer without rows fits (columns, notifications), no row is kept.
    """
    data = result.model_dump(mode="json")
    if sent_size(data) <= max_bytes:
        return result
    rows: list[list[Any]] = data["rows"]
    empty = _with_rows(result, rows, 0)
    budget = max_bytes - model_size(empty) - _SLACK
    keep = 0
    for cost in (_row_cost(row) for row in rows):
        if cost > budget:
            break
        budget -= cost
        keep += 1
    while keep > 0:
        candidate = _with_rows(result, rows, keep)
        if model_size(candidate) <= max_bytes:
            return candidate
        keep -= 1
    return empty


def _with_rows(result: ToolResult, rows: Sequence[list[Any]], keep: int) -> ToolResult:
    kept = list(rows[:keep])
    return result.model_copy(
        update={
            "rows": kept,
            "rowCount": keep,
            "bytes": len(text_of_rows(kept).encode("utf-8")),
            "truncated": True,
            "truncation": "bytes",
        }
    )


def text_of_rows(rows: Sequence[Any]) -> str:
    """The rows array as the sandbox encodes it (compact UTF-8): what ``bytes`` counts."""
    return json.dumps(list(rows), ensure_ascii=False, separators=(",", ":"))


def _row_cost(row: list[Any]) -> int:
    # One row appears once in the structured content and once inside the text block, where
    # its JSON is escaped again as a string; each copy also costs a separating comma.
    structured = json.dumps(row, separators=(",", ":"))
    in_text = json.dumps(json.dumps(row, ensure_ascii=False, separators=(",", ":")))
    return len(structured) + 1 + len(in_text) - 2 + 1


def with_identity_warning(result: _Answer) -> _Answer:
    """``result`` marked ``identity:claim-missing`` with the reason when this request's token lacks a mapped claim.

    Every answer of the request carries it: an agent sees why it sees nothing, and relays the fix.
    """
    origin = REQUEST_ORIGIN.get()
    warning = origin.claim_warning if origin is not None else None
    if warning is None or CLAIM_MISSING in result.degraded:
        return result
    reason = f"{result.degradedReason} {warning}" if result.degradedReason else warning
    return result.model_copy(update={"degraded": [*result.degraded, CLAIM_MISSING], "degradedReason": reason})
