"""The EXPLAIN check's plan rules, on plans shaped as Neo4j returns them (Bolt and Query API).

The operator check is an allow-list of read operators: an operator it does not know is
refused, so a write planned with an operator nobody listed cannot pass.
"""

from __future__ import annotations

from typing import Any

import pytest

from sandbox.explain import ExplainRejected, check_plan, is_read_operator


def plan(*names: str, details: str = "") -> dict[str, Any]:
    """A linear plan, root first: each operator the only child of the one before."""
    node: dict[str, Any] | None = None
    for name in reversed(names):
        args = {"Details": details} if name.startswith("ProcedureCall") else {}
        node = {"operatorType": f"{name}@neo4j", "args": args, "children": [node] if node else []}
    assert node is not None
    return node


# Recorded from Neo4j 5.26 and 2026.x: MATCH (a), (b) MERGE (a)-[:R]->(b) RETURN a plans a
# LockingMerge, which a deny-list of "^Merge" let through on the Query API (no query type there).
LOCKING_MERGE = plan("ProduceResults", "Apply", "CartesianProduct", "AllNodesScan", "LockingMerge", "Expand(Into)")


@pytest.mark.parametrize(
    "names",
    [
        ("ProduceResults", "LockingMerge", "Argument"),
        ("ProduceResults", "MergeInto", "Argument"),  # 2026.x
        ("ProduceResults", "MergeUniqueNode"),  # 2026.x
        ("ProduceResults", "LockNodes", "AllNodesScan"),  # 2025.09+
        ("ProduceResults", "SubqueryForeach", "AllNodesScan"),  # conditional writes (Cypher 25)
        ("EmptyResult", "SetDynamicProperty", "AllNodesScan"),  # SET n[$k] = ... (Cypher 25)
        ("ProduceResults", "Merge", "NodeUniqueIndexSeek(Locking)"),
        ("ProduceResults", "NodeUniqueIndexSeek(Locking)"),
        ("ProduceResults", "Create"),
        ("EmptyResult", "Foreach", "AllNodesScan"),
        ("EmptyResult", "TransactionForeach", "AllNodesScan"),
        ("ProduceResults", "TransactionApply", "AllNodesScan"),
        ("ProduceResults", "LoadCSV"),
        ("ProduceResults", "ShowSettings"),
        ("ProduceResults", "TerminateTransactions"),
        ("ProduceResults", "AdministrationCommand"),
        ("ProduceResults", "RunQueryAt"),  # another database: what USE does on a composite
        ("ProduceResults", "FrobnicateTheGraph"),  # a name no Neo4j has yet
        ("ProduceResults", ""),  # an operator whose name cannot be read
        ("ProduceResults", "Expand(Locking)"),
        ("ProduceResults", "Expand(All"),
    ],
)
def test_anything_but_a_listed_read_operator_is_refused(names: tuple[str, ...]) -> None:
    with pytest.raises(ExplainRejected, match="not a read operator"):
        check_plan(plan(*names), [])


def test_the_locking_merge_plan_is_refused_and_says_which_operator() -> None:
    with pytest.raises(ExplainRejected, match="LockingMerge"):
        check_plan(LOCKING_MERGE, [])


def test_read_plans_pass_with_their_modes() -> None:
    check_plan(plan("ProduceResults", "Filter", "Expand(All)", "NodeByLabelScan"), [])
    check_plan(plan("ProduceResults", "VarLengthExpand(Pruning,BFS,All)", "NodeIndexSeek"), [])
    check_plan(plan("ProduceResults", "StatefulShortestPath(All, Trail)", "AllNodesScan"), [])  # 2026.x spelling
    check_plan(plan("EmptyResult", "AllNodesScan"), [])  # FINISH
    assert is_read_operator("Repeat(Walk)") and is_read_operator("OptionalExpand(Into)")


def test_the_refusal_says_why_for_reads_that_are_not_allowed() -> None:
    with pytest.raises(ExplainRejected, match=r"LoadCSV.*fetches the URL"):
        check_plan(plan("ProduceResults", "LoadCSV"), [])
    with pytest.raises(ExplainRejected, match=r"ShowTransactions.*READ mode runs"):
        check_plan(plan("ProduceResults", "ShowTransactions"), [])


def test_procedures_stay_on_their_own_exact_allow_list() -> None:
    labels = plan("ProduceResults", "ProcedureCall", details="db.labels() :: (label :: STRING)")
    check_plan(labels, ["db.labels"])
    with pytest.raises(ExplainRejected, match=r"procedure db\.labels is not on the allow-list"):
        check_plan(labels, [])
    with pytest.raises(ExplainRejected, match="could not be read"):
        check_plan(plan("ProduceResults", "ProcedureCall", details="???"), ["db.labels"])


def test_no_plan_is_refused() -> None:
    with pytest.raises(ExplainRejected, match="no plan"):
        check_plan(None, [])


def test_query_api_plans_use_arguments_and_operator_type_without_a_runtime_suffix() -> None:
    api = {"operatorType": "ProduceResults", "arguments": {}, "children": [
        {"operatorType": "LockingMerge", "arguments": {}, "children": []}]}  # fmt: skip
    with pytest.raises(ExplainRejected, match="LockingMerge"):
        check_plan(api, [])
