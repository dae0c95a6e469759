"""The demo's report: a misbehaving step is marked and named."""

from __future__ import annotations

from gateway.ops.demo import Step, render


def test_report_marks_a_misbehaving_step() -> None:
    good = Step("fine", "agent-a", "analyze", "RETURN 1 AS x", {}, got=["1"], decided_by="sandbox", ok=True)
    bad = Step("leaky", "agent-a", "analyze", "MATCH (n) RETURN n", {}, decided_by="scope rewrite")
    bad.expect(False, "fact-r-1 came back")
    bad.expect(False, "a later problem does not hide the first")
    text = render([good, bad], 1.0)
    assert "[ok  ] 1. fine" in text and "[FAIL] 2. leaky" in text
    assert "PROBLEM fact-r-1 came back" in text
    assert "1/2 steps ok" in text and "did NOT behave as expected" in text
