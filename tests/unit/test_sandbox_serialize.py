"""The sandbox serializer on values no JSON parameter can carry."""

from __future__ import annotations


def test_bytes_and_unknown_values_are_tagged() -> None:
    from sandbox.serialize import to_json

    # Bytes never arrive as JSON parameters, so they are checked on the serializer directly.
    assert to_json(b"\x00\xffhi") == {"$type": "bytes", "base64": "AP9oaQ=="}
    assert to_json(object())["$type"] == "unknown"
    assert to_json(float("inf")) == {"$type": "float", "value": "inf"}


def _node(element_id: str) -> dict[str, object]:
    return {"$type": "node", "elementId": element_id, "labels": [], "properties": {"elementId": element_id}}


def _rel(element_id: str, start: str, end: str) -> dict[str, object]:
    return {"$type": "relationship", "elementId": element_id, "type": "T", "startElementId": start,
            "endElementId": end, "properties": {}}  # fmt: skip


def test_element_ids_become_tokens_local_to_the_answer() -> None:
    from sandbox.serialize import ElementTokens, RowCollector, encode

    # Ids 7 and 9 of one database: the gap says an element was created between them.
    a, b = "4:db:7", "4:db:9"
    row = [
        _node(a),
        _rel("5:db:3", a, b),
        {"$type": "path", "nodes": [_node(a), _node(b)], "relationships": [_rel("5:db:3", a, b)]},
        {"$type": "map", "value": {"$type": "node", "elementId": a}},  # a user map that looks like a node
        [[{"k": _node(b)}]],
        _rel("5:db:4", b, "4:db:8"),  # an endpoint outside the answer still gets a token
    ]
    collector = RowCollector(max_rows=10, max_bytes=10_000, convert=lambda value, _shown: value)
    assert collector.add(row)
    (out,) = collector.rows
    assert out[0]["elementId"] == "n1" and out[0]["properties"] == {"elementId": a}  # a property stays as stored
    assert (out[1]["elementId"], out[1]["startElementId"], out[1]["endElementId"]) == ("r1", "n1", "n2")
    assert [n["elementId"] for n in out[2]["nodes"]] == ["n1", "n2"] and out[2]["relationships"][0]["elementId"] == "r1"
    assert out[3] == {"$type": "map", "value": {"$type": "node", "elementId": a}}  # user data is not a tag
    assert out[4][0][0]["k"]["elementId"] == "n2"
    assert (out[5]["elementId"], out[5]["endElementId"]) == ("r2", "n3")
    # The same collector keeps its tokens for the next row; a new answer starts again at n1.
    assert collector.add([_node(b)]) and collector.rows[1][0]["elementId"] == "n2"
    assert ElementTokens().apply([_node(b)]) == [_node("n1") | {"properties": {"elementId": b}}]
    assert collector.bytes == len(encode(collector.rows).encode())


def test_rows_dropped_by_the_result_check_leave_no_gap_in_the_tokens() -> None:
    from sandbox.main import handle
    from sandbox.wire import SandboxJob, SandboxResult, ScopeCheck
    from sandbox.wire import to_json as wire_json

    def node(token: str, layers: list[str]) -> dict[str, object]:
        return {"$type": "node", "elementId": token, "labels": [], "properties": {"layers": layers}}

    class Backend:
        warm_error = None
        derived_visible: frozenset[str] = frozenset()

        def run(self, job: SandboxJob) -> SandboxResult:
            rows = [[node("n1", [])], [node("n2", ["hidden"]), node("n3", ["hidden"])], [node("n4", [])]]
            return SandboxResult(query_id=job.query_id, ok=True, columns=["n"], rows=rows, row_count=3)

    job = SandboxJob(query_id="q", cypher="MATCH (n) RETURN n", timeout_seconds=1, max_rows=10, max_bytes=10_000,
                     scope=ScopeCheck(layers_property="layers", layers=["mine"]))  # fmt: skip
    result = handle(wire_json(job).encode(), Backend())  # type: ignore[arg-type]
    assert result.redacted == 1
    assert [row[0]["elementId"] for row in result.rows] == ["n1", "n2"]


def test_every_tag_the_serializer_writes_is_described_to_agents() -> None:
    from datetime import timedelta, timezone
    from zoneinfo import ZoneInfo

    from neo4j.graph import Graph, Node, Path
    from neo4j.spatial import CartesianPoint
    from neo4j.time import Date, DateTime, Duration, Time

    from gateway.domain import ROWS_DESCRIPTION
    from sandbox.serialize import to_json
    from sandbox.wire import VALUE_TAGS

    graph = Graph()
    start, end = Node(graph, "4:db:1", 1, ["A"], {}), Node(graph, "4:db:2", 2, ["B"], {})
    rel = graph.relationship_type("T")(graph, "5:db:1", 1, {})
    rel._start_node, rel._end_node = start, end  # what the driver's hydration sets
    one_hour = timezone(timedelta(hours=1))
    stockholm = DateTime(2024, 1, 2, 3, 4, 5, tzinfo=ZoneInfo("Europe/Stockholm"))
    values = [
        start, rel, Path(start, rel), Date(2024, 1, 2), Time(10, 0, 0), Time(10, 0, 0, tzinfo=one_hour),
        DateTime(2024, 1, 2, 3, 4, 5), stockholm, Duration(days=1),
        CartesianPoint((1.0, 2.0)), b"x", float("nan"), {"$type": "mine"}, object(),
    ]  # fmt: skip
    written = {to_json(value)["$type"] for value in values}
    assert written == set(VALUE_TAGS)
    for tag, fields in VALUE_TAGS.items():
        assert f"{tag} {fields}" in ROWS_DESCRIPTION
    assert to_json(stockholm)["zone"] == "Europe/Stockholm"
