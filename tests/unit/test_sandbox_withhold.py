"""Hidden properties leave whole nodes and relationships in the sandbox; the schema tool never lists them."""

from __future__ import annotations

import copy
from typing import Any

from gateway.domain import Principal
from gateway.policy import HiddenProperties, load_policy
from gateway.runner import job_for
from gateway.service import Gateway
from sandbox.serialize import RowCollector, encode
from sandbox.wire import ElementCondition, ElementRule, SandboxJob, SandboxResult, ScopeCheck, WireError, decode
from sandbox.wire import to_json as wire_json
from sandbox.withhold import Withholding
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH
from tests.support.stub_runner import RunnerStub

HIDDEN = {"Attempt": ["embedding"], "KNOWS": ["secret"]}
EMBEDDING = [0.123456789] * 1024


def _node(labels: list[str], **props: Any) -> dict[str, Any]:
    return {"$type": "node", "elementId": "n", "labels": labels, "properties": props}


def _rel(rel_type: str, **props: Any) -> dict[str, Any]:
    return {"$type": "relationship", "elementId": "r", "type": rel_type, "startElementId": "a",
            "endElementId": "b", "properties": props}  # fmt: skip


def test_hidden_keys_leave_elements_wherever_they_stand() -> None:
    attempt = _node(["Attempt", "Task"], uid="a-1", embedding=EMBEDDING)
    rows: list[list[Any]] = [
        [attempt, _rel("KNOWS", since=2020, secret="s3cret"), _node(["Fact"], embedding="kept: Fact hides nothing")],
        [[{"k": [copy.deepcopy(attempt)]}], {"$type": "path", "nodes": [copy.deepcopy(attempt)], "relationships": []}],
        [{"$type": "map", "value": {"$type": "x", "n": copy.deepcopy(attempt)}}],
    ]
    elements, removed = Withholding(HIDDEN).apply(rows)
    assert (elements, removed) == (5, 5)  # the Fact hides nothing: not counted
    assert "embedding" not in encode(rows[1]) + encode(rows[2]) and "s3cret" not in encode(rows)
    assert rows[0][0]["properties"] == {"uid": "a-1"} and rows[0][1]["properties"] == {"since": 2020}
    assert rows[0][2]["properties"] == {"embedding": "kept: Fact hides nothing"}  # per label: Fact hides nothing


def test_labels_types_and_keys_match_as_the_guard_matches_them() -> None:
    rows = [[_node(["attempt"], Embedding=[1.0], uid="x")]]
    assert Withholding(HIDDEN).apply(rows) == (1, 1)
    assert rows[0][0]["properties"] == {"uid": "x"}


def _typed(value: Any) -> Any:
    """``value`` in Neo4j's typed JSON (the Query API's), as the sandbox reads it off the wire."""
    if isinstance(value, str):
        return {"$type": "String", "_value": value}
    if isinstance(value, float):
        return {"$type": "Float", "_value": repr(value)}
    return {"$type": "List", "_value": [_typed(item) for item in value]}


def _typed_node(labels: list[str], **props: Any) -> dict[str, Any]:
    return {"$type": "Node", "_value": {"_element_id": "4:x:1", "_labels": labels,
                                        "_properties": {k: _typed(v) for k, v in props.items()}}}  # fmt: skip


def test_the_first_pass_keeps_what_the_result_check_reads_and_the_last_removes_it() -> None:
    from sandbox.main import handle
    from sandbox.query_api import from_typed

    measured: list[int] = []

    class Backend:
        warm_error = None
        derived_visible: frozenset[str] = frozenset()

        def run(self, job: SandboxJob) -> SandboxResult:
            collector = RowCollector(job.max_rows, job.max_bytes, convert=from_typed,
                                     withholding=Withholding.while_reading(job))  # fmt: skip
            for layers in ([], ["other"], ["mine"]):
                collector.add([_typed_node(["Attempt"], layers=layers, embedding=EMBEDDING, uid=str(layers))])
            measured.append(collector.bytes)
            return SandboxResult(query_id=job.query_id, ok=True, columns=["a"], rows=collector.rows,
                                 row_count=len(collector.rows), bytes=collector.bytes)  # fmt: skip

    job = SandboxJob(query_id="q", cypher="MATCH (a) RETURN a", timeout_seconds=1, max_rows=10, max_bytes=2_000,
                     scope=ScopeCheck(layers_property="layers", layers=["mine"]),
                     hidden_properties={"Attempt": ["embedding", "layers"]})  # fmt: skip
    result = handle(wire_json(job).encode(), Backend())  # type: ignore[arg-type]
    # Each row fits the 2,000-byte limit only without its 1,024 floats; the result check saw the
    # layers (one row dropped), then they went too.
    assert result.ok and not result.truncated
    assert result.redacted == 1 and result.withheld == 2
    assert [row[0]["properties"] for row in result.rows] == [{"uid": "[]"}, {"uid": "['mine']"}]
    assert result.bytes == len(encode(result.rows).encode())
    # While reading, the layers the check still needed were in the rows but not in their size.
    shown = [[{"$type": "node", "elementId": f"n{i}", "labels": ["Attempt"], "properties": {"uid": uid}}]
             for i, uid in enumerate(("[]", "['other']", "['mine']"), start=1)]  # fmt: skip
    assert measured == [len(encode(shown).encode())]


def test_a_hidden_value_is_neither_sized_nor_converted() -> None:
    """The budget walk and the conversion never reach a hidden value: only the shown keys are read."""
    from sandbox.query_api import from_typed

    class Untouchable(dict[str, Any]):
        def __getitem__(self, key: str) -> Any:
            raise AssertionError("a hidden value was read")

        def items(self) -> Any:
            raise AssertionError("a hidden value was walked")

        def values(self) -> Any:
            raise AssertionError("a hidden value was sized")

    node = _typed_node(["Attempt"], uid="a-1")
    node["_value"]["_properties"]["embedding"] = Untouchable({"$type": "List", "_value": []})
    collector = RowCollector(10, 2_000, convert=from_typed, withholding=Withholding(HIDDEN))
    assert collector.add([node, {"$type": "List", "_value": [node]}])
    assert collector.rows[0][0]["properties"] == {"uid": "a-1"}
    assert collector.bytes == len(encode(collector.rows).encode())


def test_the_first_pass_keeps_every_property_a_visibility_rule_reads() -> None:
    """A rule reading a property the policy also hides: the result check still sees it, the answer never."""
    scope = ScopeCheck(
        layers_property="layers", layers=[],
        nodes={"Repository": ElementRule(kind="equality", property="name", values=["mine"])},
        conditions={"Fact": [ElementCondition(property="validTo", absent=True)]},
    )  # fmt: skip
    job = SandboxJob(query_id="q", cypher="RETURN 1", scope=scope, timeout_seconds=5, max_rows=10, max_bytes=1000,
                     hidden_properties={"Repository": ["name", "token"], "Fact": ["validTo"]})  # fmt: skip
    first = Withholding.while_reading(job)
    assert first is not None and {"name", "validto", "layers"} <= first.keep and "token" not in first.keep


def test_an_answer_without_hiding_labels_says_nothing() -> None:
    from sandbox.main import handle

    class Backend:
        warm_error = None
        derived_visible: frozenset[str] = frozenset()

        def run(self, job: SandboxJob) -> SandboxResult:
            rows = [[_node(["Fact"], layers=[], embedding="x")]]
            return SandboxResult(query_id=job.query_id, ok=True, columns=["f"], rows=rows, row_count=1, bytes=10)

    job = SandboxJob(query_id="q", cypher="MATCH (f) RETURN f", timeout_seconds=1, max_rows=10, max_bytes=2_000,
                     hidden_properties=HIDDEN)  # fmt: skip
    result = handle(wire_json(job).encode(), Backend())  # type: ignore[arg-type]
    assert result.withheld == 0 and result.rows[0][0]["properties"]["embedding"] == "x"


def test_the_job_carries_the_policy_s_hidden_properties_and_the_wire_reads_them_strictly() -> None:
    policy = load_policy(ALL_PROPERTIES_POLICY_PATH)
    hidden = HiddenProperties.model_validate(HIDDEN)
    job = job_for(policy.tool("analyze"), query_id="q", cypher="RETURN 1", params={}, result_check=None,
                  hidden_properties=hidden.by_owner())  # fmt: skip
    assert job.hidden_properties == {"Attempt": ["embedding"], "KNOWS": ["secret"]}
    assert decode(SandboxJob, wire_json(job)).hidden_properties == job.hidden_properties
    bad = wire_json(job).replace('"embedding"', "7")
    try:
        decode(SandboxJob, bad)
    except WireError as exc:
        assert "hidden_properties" in str(exc)
    else:
        raise AssertionError("a non-string hidden key was read")


class _Schema(RunnerStub):
    def answer(self, job: SandboxJob) -> SandboxResult:
        rows: list[list[Any]] = [["Embedding"], ["embedding"], ["secret"], ["uid"]]
        if "labels(n)" in job.cypher:
            rows = [["Attempt"]]
        return SandboxResult(query_id=job.query_id, ok=True, columns=["value"], rows=rows, row_count=len(rows))


def test_the_schema_tool_never_lists_a_hidden_key_and_its_own_keys_query_still_runs() -> None:
    policy = load_policy(ALL_PROPERTIES_POLICY_PATH).model_copy(
        update={"hidden_properties": HiddenProperties.model_validate(HIDDEN)}
    )
    runner = _Schema()
    result = Gateway(policy, runner).schema(Principal(name="alice", scope=frozenset({"l1"})))
    assert result.propertyKeys == ["uid"]
    assert result.labels == ["Attempt"]  # a label that hides keys is itself visible
    assert len(runner.jobs) == 3 and all(job.hidden_properties == HIDDEN for job in runner.jobs)


class _Whole(RunnerStub):
    def answer(self, job: SandboxJob) -> SandboxResult:
        return SandboxResult(query_id=job.query_id, ok=True, columns=["a"], rows=[[{"x": 1}]], row_count=1, withheld=1)


def test_the_answer_says_how_many_elements_are_shown_without_hidden_keys() -> None:
    policy = load_policy(ALL_PROPERTIES_POLICY_PATH).model_copy(
        update={"hidden_properties": HiddenProperties.model_validate(HIDDEN)}
    )
    result = Gateway(policy, _Whole()).run("analyze", "MATCH (a:Attempt) RETURN a", {}, Principal(name="alice"))
    assert result.withheld == 1 and result.degraded == []


class _Large(RunnerStub):
    def answer(self, job: SandboxJob) -> SandboxResult:
        rows = [[_node(["Attempt"], note="x" * 200_000)] for _ in range(3)]
        return SandboxResult(query_id=job.query_id, ok=True, columns=["a"], rows=rows, row_count=3, withheld=3)


def test_the_count_follows_rows_cut_to_fit_the_answer() -> None:
    policy = load_policy(ALL_PROPERTIES_POLICY_PATH).model_copy(
        update={"hidden_properties": HiddenProperties.model_validate(HIDDEN)}
    )
    result = Gateway(policy, _Large()).run("analyze", "MATCH (a:Attempt) RETURN a", {}, Principal(name="alice"))
    assert result.truncated and 0 < result.rowCount < 3
    assert result.withheld == result.rowCount
