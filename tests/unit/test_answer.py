"""What the agent receives is bounded: the whole tool result as sent (text block + structured content)
fits in the policy's max_bytes, whatever the values hold, and a cut is flagged as a byte truncation."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway import answer
from gateway.domain import ToolResult
from gateway.server import ok_result


def _result(columns: list[str], rows: list[list[Any]]) -> ToolResult:
    return ToolResult(
        queryId="q", tool="analyze", columns=columns, rows=rows, rowCount=len(rows),
        bytes=len(answer.text_of_rows(rows).encode("utf-8")),
    )  # fmt: skip


def _as_sent(result: ToolResult) -> list[int]:
    """Sizes of the server's CallToolResult as the SDK's transports write it (UTF-8 and ASCII-escaped JSON)."""
    wire = ok_result(result)
    utf8 = len(wire.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8"))
    escaped = len(json.dumps(wire.model_dump(mode="json", by_alias=True, exclude_none=True), separators=(",", ":")))
    return [utf8, escaped]


def _check_fitted(original: ToolResult, fitted: ToolResult, max_bytes: int) -> None:
    assert max(_as_sent(fitted)) <= max_bytes
    assert fitted.rows == original.rows[: len(fitted.rows)]  # a prefix, rows whole
    assert fitted.rowCount == len(fitted.rows)
    assert fitted.bytes == len(answer.text_of_rows(fitted.rows).encode("utf-8"))
    if fitted.rows != original.rows:
        assert fitted.truncated and fitted.truncation == "bytes"
        # Not overly cautious: one more row would not have fitted. (one_more lacks the truncation
        # flags and counts a truncated answer carries, ~60 bytes, and fit keeps a small slack.)
        one_more = original.model_copy(update={"rows": original.rows[: len(fitted.rows) + 1]})
        assert answer.model_size(one_more) > max_bytes - 128


EMOJI = "\U0001f600"  # 4 bytes in UTF-8, 12 as a JSON escape pair (\ud83d\ude00)

CASES: dict[str, tuple[list[str], list[list[Any]]]] = {
    "emoji": (["v"], [[EMOJI * 200] for _ in range(60)]),
    "cjk and accents": (["a", "b"], [["漢字かな" * 100, "Ünïcödé façade" * 20] for _ in range(60)]),
    "quotes and backslashes": (["v"], [['"\\' * 500] for _ in range(60)]),
    "deeply nested": (
        ["tree"],
        [[{"k": [[[{"d": [EMOJI, "é", {"x": [1, 2.5, None, True]}]}]]] * 30}] for _ in range(60)],
    ),
    "many columns": ([f"column_{i}_ü" for i in range(300)], [[f"v{i}é" for i in range(300)] for _ in range(60)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_whole_result_as_sent_fits_and_the_cut_is_flagged(name: str) -> None:
    columns, rows = CASES[name]
    original = _result(columns, rows)
    max_bytes = max(_as_sent(original)) // 3
    fitted = answer.fit(original, max_bytes)
    assert fitted.truncated and fitted.truncation == "bytes" and 0 < fitted.rowCount < len(rows)
    _check_fitted(original, fitted, max_bytes)


def test_non_ascii_is_counted_at_its_escaped_size() -> None:
    # 60 rows of 200 emoji are 48,000 bytes of UTF-8 row data, but ~2 x 144,000 bytes as sent
    # (structured content and text block, each escaped by one of the SDK's transports).
    original = _result(["v"], [[EMOJI * 200] for _ in range(60)])
    assert original.bytes < 50_000
    fitted = answer.fit(original, 100_000)
    assert fitted.truncation == "bytes" and fitted.rowCount < 30
    _check_fitted(original, fitted, 100_000)


def test_an_answer_that_fits_is_unchanged() -> None:
    original = _result(["i", "text"], [[i, f"fact {i} ü"] for i in range(100)])
    assert answer.fit(original, max(_as_sent(original))) == original


def test_when_not_even_the_columns_fit_no_row_is_sent() -> None:
    original = _result([f"c{i}" for i in range(500)], [[i] * 500 for i in range(3)])
    fitted = answer.fit(original, 2_000)
    assert fitted.rows == [] and fitted.rowCount == 0 and fitted.truncation == "bytes"


def test_text_block_is_compact_utf8_json_of_the_structured_content() -> None:
    original = _result(["v"], [[EMOJI + "é"]])
    wire = ok_result(original)
    text = wire.content[0].text  # type: ignore[union-attr]
    assert EMOJI in text and "\\u" not in text and ": " not in text and ", " not in text
    assert json.loads(text) == wire.structured_content


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.lists(json_values, min_size=2, max_size=2), max_size=40), max_bytes=st.integers(640, 20_000))
def test_any_answer_fits(rows: list[list[Any]], max_bytes: int) -> None:
    original = _result(["a", "b"], rows)
    _check_fitted(original, answer.fit(original, max_bytes), max_bytes)
