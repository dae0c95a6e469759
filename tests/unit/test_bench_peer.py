"""The peer benchmark's accounting: the gateway's call split by its clocks, untimed calls left out, rows compared."""

from __future__ import annotations

from bench.peer import Answer, QueryClass, check_same_rows, report_class

ROWS = [[1, "node 1"], [2, "node 2"]]
QC = QueryClass("small read", "MATCH (n) RETURN n", 2)


def answers(gateway: list[Answer]) -> dict[str, list[Answer]]:
    return {"gateway": gateway, "peer": [Answer(10.0, "ok", ROWS)], "driver": [Answer(2.0, "ok", ROWS)]}


def test_split_is_client_time_minus_gateway_run_minus_sandbox_per_call() -> None:
    gateway = [Answer(30.0, "ok", ROWS, "q1", sandbox_ms=8.0), Answer(50.0, "ok", ROWS, "q2", sandbox_ms=10.0)]
    out = report_class(QC, answers(gateway), {"q1": 20.0, "q2": 44.0})
    split = {stage: (s["p50"], s["p99"]) for stage, s in out["gateway_split_ms"].items()}
    # q1: 30 - 20 = 10, 20 - 8 = 12, 8; q2: 50 - 44 = 6, 44 - 10 = 34, 10 (two samples: p50 the lower, p99 the upper).
    assert split == {
        "MCP layer (client time - Gateway.run)": (6.0, 10.0),
        "Gateway.run outside the sandbox": (12.0, 34.0),
        "inside the sandbox": (8.0, 10.0),
    }
    assert out["ratio_p50_gateway_over_peer"] == 3.0


def test_untimed_and_failed_calls_count_as_sent_not_in_latency() -> None:
    gateway = [
        Answer(30.0, "ok", ROWS, "q1", sandbox_ms=8.0),
        Answer(900.0, "ok", ROWS, "q2", sandbox_ms=8.0, timed=False),  # a block's first call
        Answer(5.0, "busy"),
    ]
    out = report_class(QC, answers(gateway), {"q1": 20.0, "q2": 20.0})
    path = out["paths"]["gateway"]
    assert path["calls"] == 3 and path["failures"] == {"busy": 1}
    assert path["latency_ms"]["n"] == 1 and path["latency_ms"]["p99"] == 30.0
    assert out["gateway_split_ms"]["MCP layer (client time - Gateway.run)"]["n"] == 1


def test_an_answer_with_other_rows_is_counted() -> None:
    wrong = Answer(30.0, "ok", [[2, "node 2"], [1, "node 1"]], "q1", sandbox_ms=8.0)
    assert check_same_rows(answers([wrong])) == 1
    assert check_same_rows(answers([Answer(30.0, "ok", ROWS)])) == 0
