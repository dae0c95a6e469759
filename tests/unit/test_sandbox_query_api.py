"""The Query API transport's pure parts: the HTTP request it builds and the typed JSON it reads."""

from __future__ import annotations

from sandbox.config import SandboxConfig
from sandbox.query_api import build_request, from_typed
from tests.support.jobs import make_job


def test_request_building() -> None:
    config = SandboxConfig(
        transport="query-api", query_api_url="https://db.example.com:443/", tls="verify", neo4j_user="u",
        neo4j_password="p", database="movies",
    )  # fmt: skip
    request = build_request(config, make_job("RETURN $x", params={"x": 1}), "RETURN $x")
    assert str(request.url) == "https://db.example.com/db/movies/query/v2"
    assert request.headers["Authorization"] == "Basic dTpw"
    assert request.headers["Accept"] == "application/vnd.neo4j.query"
    assert b'"accessMode": "READ"' in request.content and b'"parameters": {"x": 1}' in request.content


def test_typed_json_conversion() -> None:
    assert from_typed({"$type": "Integer", "_value": "9007199254740993"}) == 9007199254740993
    assert from_typed({"$type": "Point", "_value": "SRID=4979;POINT Z (1.5 2 3)"}) == {
        "$type": "point", "srid": 4979, "x": 1.5, "y": 2.0, "z": 3.0,
    }  # fmt: skip
    node = {"$type": "Node", "_value": {"_element_id": "4:x:1", "_labels": ["B", "A"],
            "_properties": {"n": {"$type": "String", "_value": "v"}}}}  # fmt: skip
    assert from_typed(node) == {"$type": "node", "elementId": "4:x:1", "labels": ["A", "B"], "properties": {"n": "v"}}
    assert from_typed({"$type": "Map", "_value": {"$type": {"$type": "String", "_value": "node"}}}) == {
        "$type": "map", "value": {"$type": "node"},
    }  # fmt: skip
