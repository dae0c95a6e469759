"""The prover's pieces without Neo4j: the visibility model against the shipped policies' rules, the
generator's determinism, the comparison's classes and the shrinker."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gateway.domain import Principal
from gateway.mnr.compare import Answer, classify, evaluation_order
from gateway.mnr.generate import Clause, Generator, Query, Schema
from gateway.mnr.prove import (
    Prover,
    ProveReport,
    ProveSettings,
    default_principals,
    parse_principal,
    shares,
    written_order,
)
from gateway.mnr.shrink import shrink
from gateway.mnr.visible_copy import Graph, GraphNode, GraphRel, VisibilityModel
from gateway.policy import POLICIES_DIR, ToolName, load_policy

MENTIS = load_policy(POLICIES_DIR / "mentis.yaml")
MINDREADER = load_policy(POLICIES_DIR / "mindreader.yaml")


def _graph(
    nodes: list[tuple[str, set[str], dict[str, Any]]], rels: list[tuple[str, str, str, str, dict[str, Any]]]
) -> Graph:
    graph = Graph()
    for node_id, labels, props in nodes:
        graph.nodes[node_id] = GraphNode(node_id, frozenset(labels), props)
    for rel_id, rel_type, start, end, props in rels:
        graph.rels[rel_id] = GraphRel(rel_id, rel_type, start, end, props)
    return graph


MENTIS_GRAPH = _graph(
    [
        ("r1", {"Repository"}, {"name": "acme/payments"}),
        ("r2", {"Repository"}, {"name": "umbrella/ops"}),
        ("t1", {"Task"}, {"id": "PAY-101"}),
        ("t2", {"Task"}, {"id": "PAY-101"}),
        ("a1", {"Attempt"}, {"id": "a1", "embedding": [0.1]}),
        ("a2", {"Attempt"}, {"id": "a2", "embedding": [0.2]}),
        ("s1", {"Scratch"}, {"text": "denied by default"}),
        ("orphan", {"Task"}, {"id": "ORPHAN"}),
    ],
    [
        ("h1", "HAS_TASK", "r1", "t1", {}),
        ("h2", "HAS_TASK", "r2", "t2", {}),
        ("x1", "HAS_ATTEMPT", "t1", "a1", {}),
        ("x2", "HAS_ATTEMPT", "t2", "a2", {}),
    ],
)


def _visible(
    policy: Any, graph: Graph, tool: ToolName, principal: Principal, params: dict[str, Any] | None = None
) -> Graph:
    return VisibilityModel(policy, tool, principal, params or {}, graph).visible()


def test_derived_rules_follow_the_anchor_chain() -> None:
    alice = Principal(name="alice", attributes={"repositories": frozenset({"acme/payments"})})
    copy = _visible(MENTIS, MENTIS_GRAPH, "analyze", alice)
    assert set(copy.nodes) == {"r1", "t1", "a1"}
    assert set(copy.rels) == {"h1", "x1"}
    # Hidden properties are removed from the copy.
    assert "embedding" not in copy.nodes["a1"].properties


def test_nobody_sees_nothing_under_an_equality_root() -> None:
    assert not _visible(MENTIS, MENTIS_GRAPH, "analyze", Principal(name="nobody")).nodes


def test_recall_pins_bind_what_is_seen() -> None:
    both = Principal(name="both", attributes={"repositories": frozenset({"acme/payments", "umbrella/ops"})})
    copy = _visible(MENTIS, MENTIS_GRAPH, "recall", both, {"repository": "umbrella/ops", "taskId": "PAY-101"})
    assert set(copy.nodes) == {"r2", "t2", "a2"}
    assert not _visible(MENTIS, MENTIS_GRAPH, "recall", both, {"repository": "umbrella/ops", "taskId": "X"}).rels


SINCE, RETIRED = datetime(2020, 1, 1, tzinfo=UTC), datetime(2025, 1, 1, tzinfo=UTC)
MINDREADER_GRAPH = _graph(
    [
        ("e1", {"Entity"}, {"layers": ["work"]}),
        ("e2", {"Entity"}, {"layers": []}),
        ("e3", {"Entity"}, {}),
        ("e4", {"Entity"}, {"layers": "work"}),
        ("f1", {"Fact"}, {"layers": ["work"], "validFrom": SINCE, "validTo": RETIRED}),
        ("f2", {"Fact"}, {"layers": ["work"], "validFrom": SINCE}),
        ("f3", {"Fact"}, {"layers": ["work"], "validFrom": SINCE}),  # about the untagged e3 only
        ("f4", {"Fact"}, {"layers": ["work"], "validFrom": "2020-01-01"}),  # a string is not a time
    ],
    [
        ("a1", "ASSERTS", "e1", "e2", {"layers": ["work"], "validFrom": SINCE}),
        ("a2", "ASSERTS", "e1", "e2", {"layers": ["health"], "validFrom": SINCE}),
        ("a3", "ASSERTS", "e1", "e2", {"layers": ["work"], "validFrom": SINCE, "validTo": RETIRED}),
        ("c1", "SUPERSEDES", "f2", "f1", {"layers": []}),
        ("u1", "ABOUT", "f3", "e3", {"layers": []}),
        ("u2", "ABOUT", "f2", "e1", {"layers": []}),
        ("u3", "ABOUT", "f1", "e1", {"layers": []}),
        ("u4", "ABOUT", "f4", "e1", {"layers": []}),
    ],
)


def test_membership_untagged_malformed_filters_anchors_and_bookkeeping() -> None:
    worker = Principal(name="w", scope=frozenset({"work"}))
    analyze = _visible(MINDREADER, MINDREADER_GRAPH, "analyze", worker)
    # untagged e3, malformed e4, retired f1, f3 about a hidden anchor, f4 without a time: hidden
    assert set(analyze.nodes) == {"e1", "e2", "f2"}
    assert set(analyze.rels) == {"a1", "u2"}  # another layer, retired, bookkeeping, hidden end
    recall = _visible(MINDREADER, MINDREADER_GRAPH, "recall", worker)
    assert set(recall.nodes) == {"e1", "e2", "f1", "f2", "f4"}
    assert set(recall.rels) == {"a1", "a3", "u2", "u3", "u4"}


def test_default_principals_and_parsing() -> None:
    names = [p.name for p in default_principals(MENTIS, MENTIS_GRAPH)]
    assert names == ["nobody", "repositories=acme/payments", "repositories=umbrella/ops", "everyone"]
    spec = parse_principal("bob=repositories:a/b,c/d;layers:x")
    assert spec.principal().attribute("repositories") == frozenset({"a/b", "c/d"})
    assert parse_principal("carol=l1,l2").principal().scope == frozenset({"l1", "l2"})


def test_generation_is_deterministic_for_a_seed() -> None:
    schema = Schema.of(MENTIS_GRAPH, MENTIS)
    first = [q.text() for q in Generator(schema, 7).queries(50)]
    assert first == [q.text() for q in Generator(schema, 7).queries(50)]
    assert first != [q.text() for q in Generator(schema, 8).queries(50)]
    assert not any("embedding" in text for text in first)  # hidden keys are never named
    required = next(iter(Generator(schema, 7, ("repository",), {"repository": "r"}).queries(1)))
    assert required.text().startswith("WITH $repository AS") and required.params == {"repository": "r"}


def _rows(*rows: str) -> Answer:
    return Answer(Counter(rows))


def test_classification() -> None:
    same = _rows('["a"]')
    assert classify(same, same, same) is None
    assert classify(_rows('["a"]', '["h"]'), same, _rows('["a"]', '["h"]')) == "leak"
    assert classify(_rows("[3]"), _rows("[2]"), _rows("[3]")) == "leak"
    assert classify(_rows("[1]"), _rows("[2]"), _rows("[3]")) == "wrong_answer"
    error = Answer.of_error("boom")
    assert classify(error, same, error) == "error_oracle"
    assert classify(error, same, same) == "wrong_answer"
    assert classify(same, error, error) is None and evaluation_order(same, error)
    assert not evaluation_order(error, same)
    assert classify(Answer.of_rows([["a"]], redacted=1), same, same) == "leak"
    assert classify(Answer.of_error("slow", timed_out=True), same, same) is None


def test_the_full_graph_is_read_only_to_name_a_difference() -> None:
    same = _rows('["a"]')

    def unread() -> Answer:
        raise AssertionError("the full graph was read although the answers agree")

    assert classify(same, same, unread) is None
    assert classify(_rows('["h"]'), same, lambda: _rows('["h"]')) == "leak"


def test_n_is_shared_out_whole() -> None:
    assert shares(2000, 24) == [84] * 8 + [83] * 16 and sum(shares(2000, 24)) == 2000
    assert shares(5, 1) == [5]


def _prover(refuse: set[str]) -> tuple[Prover, ProveReport]:
    """A prover whose gateway refuses the queries named in ``refuse`` and answers every other one alike."""
    prover = Prover.__new__(Prover)
    prover.settings = ProveSettings(policy=MENTIS, fixture=Path("unused.cypher"))
    prover.policy = MENTIS
    prover.progress = lambda message: None
    same = _rows("[1]")
    prover._answers = lambda tool, principal, query: (  # type: ignore[method-assign]
        None if query.text() in refuse else (same, same, lambda: same)
    )
    return prover, ProveReport(policy="mentis", fixture="f", seed=0, principals=["p"], tools=["analyze"])


def test_the_share_counts_executed_queries_not_drawn_ones() -> None:
    schema = Schema.of(MENTIS_GRAPH, MENTIS)
    stream = Generator(schema, 3).stream()
    drawn = [next(stream) for _ in range(400)]
    refused = {q.text() for q in drawn[::3]}
    prover, report = _prover(refused)
    prover._fill(report, "analyze", "p", Principal(name="p"), iter(drawn), set(), 150)
    # Repeats and refusals are drawn past: 150 distinct queries ran on both sides.
    assert report.executed == 150 and report.repeated > 0 and report.refused > 0 and not report.dry
    assert len({q.key() for q in drawn[: report.generated + report.repeated]}) == report.generated


def test_a_generator_that_runs_dry_is_reported() -> None:
    query = Query((Clause("MATCH (a) RETURN a", droppable=False),))
    prover, report = _prover(set())
    prover._fill(report, "analyze", "p", Principal(name="p"), iter([query] * 10_000), set(), 5)
    assert report.executed == 1 and report.dry == ["analyze as p: 1 of 5"]
    assert "generator ran dry for analyze as p: 1 of 5" in report.summary()


def test_a_node_with_two_derived_labels_is_not_in_the_copy() -> None:
    graph = _graph(
        [
            ("r1", {"Repository"}, {"name": "acme/payments"}),
            ("t1", {"Task"}, {"id": "T"}),
            ("two", {"Task", "Attempt"}, {}),
        ],
        [
            ("h1", "HAS_TASK", "r1", "t1", {}),
            ("h2", "HAS_TASK", "r1", "two", {}),
            ("x1", "HAS_ATTEMPT", "t1", "two", {}),
        ],
    )
    alice = Principal(name="alice", attributes={"repositories": frozenset({"acme/payments"})})
    assert set(_visible(MENTIS, graph, "analyze", alice).nodes) == {"r1", "t1"}


def test_a_node_with_a_derived_and_another_named_label_is_not_in_the_copy() -> None:
    graph = _graph(
        [
            ("r1", {"Repository"}, {"name": "acme/payments"}),
            ("t1", {"Task"}, {"id": "T"}),
            # Its repository name is alice's and a visible repository has it as a task: hidden all the same.
            ("both", {"Repository", "Task"}, {"name": "acme/payments", "id": "U"}),
            ("a1", {"Attempt"}, {}),
        ],
        [
            ("h1", "HAS_TASK", "r1", "t1", {}),
            ("h2", "HAS_TASK", "r1", "both", {}),
            ("x1", "HAS_ATTEMPT", "both", "a1", {}),
        ],
    )
    alice = Principal(name="alice", attributes={"repositories": frozenset({"acme/payments"})})
    assert set(_visible(MENTIS, graph, "analyze", alice).nodes) == {"r1", "t1"}


def test_written_order_evaluates_each_where_whole() -> None:
    query = Query((Clause("MATCH (a)", ("a.x = 1", "size(a.y) > 2"), droppable=False), Clause("RETURN a")))
    assert written_order(query).text() == (
        "MATCH (a) WHERE CASE WHEN rand() >= 0 THEN (a.x = 1 AND size(a.y) > 2) ELSE false END RETURN a"
    )
    plain = Query((Clause("MATCH (a) RETURN a"),))
    assert written_order(plain) == plain


def test_shrinking_drops_what_the_difference_does_not_need() -> None:
    query = Query(
        (
            Clause("MATCH (a)", ("a.x = 1", "a.y = 2"), droppable=False),
            Clause("OPTIONAL MATCH (a)--(b)"),
            Clause("RETURN a", droppable=False),
        )
    )
    small = shrink(query, lambda q: "a.y = 2" in q.text())
    assert small.text() == "MATCH (a) WHERE a.y = 2 RETURN a"


def test_prove_usage_errors_exit_2_before_any_service(tmp_path: Path) -> None:
    def prove(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "gateway.cli", "mnr", "prove", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=240)

    missing = prove("--policy", "mentis", "--fixture", str(tmp_path / "none.cypher"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    fixture = tmp_path / "g.cypher"
    fixture.write_text("RETURN 1;\n")
    bad = prove("--policy", "mentis", "--fixture", str(fixture), "--principal", "no-equals-sign")
    assert bad.returncode == 2 and "NAME=" in bad.stderr


def test_a_datetime_read_with_offset_z_is_written_back_with_that_offset() -> None:
    import datetime as dt

    import pytz  # type: ignore[import-untyped]
    from neo4j.time import DateTime

    from gateway.mnr.visible_copy import _writable

    read = DateTime(2026, 11, 5, 7, 0, 0, tzinfo=pytz.FixedOffset(0))  # how the driver reads `Z`
    written = _writable({"at": read, "list": [read]})
    assert written["at"].tzinfo is dt.UTC and written["list"][0].tzinfo is dt.UTC


def test_no_generated_query_orders_elements_by_their_ids() -> None:
    # min/max of a node or relationship follows Neo4j's ids, which the visible copy does not keep.
    schema = Schema.of(MENTIS_GRAPH, MENTIS)
    texts = [q.text() for seed in range(4) for q in Generator(schema, seed).queries(300)]
    assert any(re.search(r"\b(min|max)\(", text) for text in texts)
    assert not [t for t in texts if re.search(r"\b(min|max)\((DISTINCT )?[A-Za-z_][A-Za-z0-9_]*\)", t)]
