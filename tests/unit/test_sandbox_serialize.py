"""The sandbox serializer on values no JSON parameter can carry."""

from __future__ import annotations


def test_bytes_and_unknown_values_are_tagged() -> None:
    from sandbox.serialize import to_json

    # Bytes never arrive as JSON parameters, so they are checked on the serializer directly.
    assert to_json(b"\x00\xffhi") == {"$type": "bytes", "base64": "AP9oaQ=="}
    assert to_json(object())["$type"] == "unknown"
    assert to_json(float("inf")) == {"$type": "float", "value": "inf"}
