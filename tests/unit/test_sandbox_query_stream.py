"""The Query API's answer read as a stream: rows one at a time, hidden values skipped unbuilt and uncounted."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sandbox.query_stream import TooLarge, read_answer
from sandbox.wire import VisibleKeys
from sandbox.withhold import Withholding

HUGE = "x" * 100_000


def _node(labels: list[str], properties: dict[str, Any]) -> dict[str, Any]:
    typed = {k: {"$type": "String", "_value": v} for k, v in properties.items()}
    return {"$type": "Node", "_value": {"_element_id": "4:x:1", "_labels": labels, "_properties": typed}}


def _taker(seen: list[Any], limit: int = 1_000) -> Any:
    """A row callback that keeps each row and stops after ``limit``."""

    def take(row: list[Any]) -> bool:
        seen.append(row)
        return len(seen) < limit

    return take


def _answer(rows: list[list[Any]]) -> list[bytes]:
    text = json.dumps({"data": {"fields": ["a"], "values": rows}, "notifications": [{"code": "N"}]})
    return [text[i : i + 7].encode() for i in range(0, len(text), 7)]  # small chunks: keys split across them


def test_rows_go_one_at_a_time_and_the_rest_of_the_document_is_kept() -> None:
    seen: list[Any] = []
    body = read_answer(iter(_answer([[1], [2], [3]])), 10_000, None, _taker(seen))
    assert seen == [[1], [2], [3]]
    assert body["data"]["fields"] == ["a"] and body["notifications"] == [{"code": "N"}]


def test_reading_stops_at_the_row_the_caller_refuses() -> None:
    seen: list[Any] = []
    read_answer(iter(_answer([[1], [2], [3]])), 10_000, None, _taker(seen, 2))
    assert seen == [[1], [2]]


def test_a_hidden_value_is_neither_built_nor_counted() -> None:
    withholding = Withholding({"Attempt": ["embedding", "layers"]}, keep=["layers"])
    row = [_node(["Attempt"], {"uid": "a1", "embedding": HUGE, "layers": "p"})]
    seen: list[Any] = []
    read_answer(iter(_answer([row])), 1_000, withholding, _taker(seen))
    properties = seen[0][0]["_value"]["_properties"]
    assert set(properties) == {"uid", "layers"}  # the check's key is kept for it, the embedding never built


def test_the_cap_counts_what_is_kept() -> None:
    row = [_node(["Fact"], {"uid": "a1", "embedding": HUGE})]  # Fact hides nothing
    with pytest.raises(TooLarge):
        read_answer(iter(_answer([row])), 1_000, Withholding({"Attempt": ["embedding"]}), lambda _r: True)


def test_an_agents_map_shaped_like_an_element_is_kept_whole() -> None:
    shaped = {"$type": "Map", "_value": {"_labels": ["Attempt"], "_properties": {"embedding": "mine"}}}
    seen: list[Any] = []
    read_answer(iter(_answer([[shaped]])), 10_000, Withholding({"Attempt": ["embedding"]}), _taker(seen))
    assert seen == [[shaped]]


def test_under_the_allow_list_an_unlisted_value_is_neither_built_nor_counted() -> None:
    visible = VisibleKeys(nodes={"Attempt": ["uid"], "Fact": ["uid", "embedding"]}, relationships={}, default=[])
    withholding = Withholding(keep=["layers"], visible=visible)
    rows = [
        [_node(["Attempt", "Marker"], {"uid": "a1", "embedding": HUGE, "layers": "p"})],
        [_node(["Marker"], {"uid": "m1", "name": HUGE})],  # no listed label: default, empty
    ]
    seen: list[Any] = []
    read_answer(iter(_answer(rows)), 1_000, withholding, _taker(seen))
    assert set(seen[0][0]["_value"]["_properties"]) == {"uid", "layers"}
    assert seen[1][0]["_value"]["_properties"] == {}


def test_under_the_allow_list_every_listed_label_must_allow_the_key() -> None:
    visible = VisibleKeys(nodes={"Attempt": ["uid"], "Fact": ["uid", "embedding"]}, relationships={}, default=[])
    row = [_node(["Fact", "Attempt"], {"uid": "a1", "embedding": HUGE})]
    seen: list[Any] = []
    read_answer(iter(_answer([row])), 1_000, Withholding(visible=visible), _taker(seen))
    assert set(seen[0][0]["_value"]["_properties"]) == {"uid"}
    with pytest.raises(TooLarge):  # a key every listed label allows is built and counted
        read_answer(iter(_answer([[_node(["Fact"], {"embedding": HUGE})]])), 1_000, Withholding(visible=visible),
                    lambda _r: True)  # fmt: skip
