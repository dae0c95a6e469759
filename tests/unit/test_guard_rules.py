"""Rule catalogue and individual rules, each with an attack it stops."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.guard import RULES, Decision, check
from gateway.policy import Limits, Policy, ToolPolicy, load_policy
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH

DEFAULT = load_policy(ALL_PROPERTIES_POLICY_PATH)


def _with(tool: str = "analyze", **changes: Any) -> Policy:
    tools = dict(DEFAULT.tools)
    tools[tool] = tools[tool].model_copy(update=changes)  # type: ignore[index]
    return DEFAULT.model_copy(update={"tools": tools})


def test_rule_ids_are_unique_and_each_has_a_sentence() -> None:
    ids = [r.id for r in RULES]
    assert len(ids) == len(set(ids))
    assert all(r.sentence.endswith(".") for r in RULES)
    assert ids[:3] == ["input.too_large", "input.too_deep", "parse.failed"]


def test_non_string_parameter_key_is_rejected() -> None:
    # Parameter names are the request's shape, checked once where a request enters (input.invalid).
    decision = check("RETURN 1 AS x", {1: "x"}, "analyze", DEFAULT)  # type: ignore[dict-item]
    assert (decision.allowed, decision.rule) == (False, "input.invalid")
    assert check("RETURN 1 AS x", {"": "x"}, "analyze", DEFAULT).rule == "input.invalid"


def test_non_string_query_is_rejected_not_raised() -> None:
    decision = check(None, {}, "analyze", DEFAULT)  # type: ignore[arg-type]
    assert (decision.allowed, decision.rule) == (False, "parse.failed")


def test_unknown_tool_is_rejected() -> None:
    decision = check("RETURN 1", {}, "delete_everything", DEFAULT)  # type: ignore[arg-type]
    assert (decision.allowed, decision.rule) == (False, "tool.unknown")


def test_denied_label_anywhere() -> None:
    policy = _with(denied_labels=frozenset({"Secret"}))
    for query in (
        "MATCH (s:Secret) RETURN s",
        "MATCH (n) WHERE n:Secret RETURN n",
        "MATCH (n) WHERE EXISTS { (n)-->(:Secret) } RETURN n",
        "MATCH (n:`Secret`) RETURN n",
    ):
        decision = check(query, {}, "analyze", policy)
        assert decision.rule == "label.denied", query
    assert check("MATCH (s:Public) RETURN s", {}, "analyze", policy).allowed


def test_unbounded_allowed_when_policy_says_so_but_hops_still_capped() -> None:
    policy = _with(limits=Limits(allow_unbounded_var_length=True, max_hops=3))
    assert check("MATCH (a)-[*]->(b) RETURN b", {}, "analyze", policy).allowed
    assert check("MATCH (a)-[*1..4]->(b) RETURN b", {}, "analyze", policy).rule == "pattern.too_many_hops"


def test_limits_come_from_the_policy() -> None:
    policy = _with(limits=Limits(max_query_chars=20))
    assert check("MATCH (n) RETURN n", {}, "analyze", policy).allowed
    assert check("MATCH (n) RETURN n, n, n", {}, "analyze", policy).rule == "input.too_large"
    policy = _with(limits=Limits(max_nesting_depth=2))
    assert check("RETURN ((1))", {}, "analyze", policy).allowed
    assert check("RETURN (((1)))", {}, "analyze", policy).rule == "input.too_deep"


def test_clause_allow_list_is_per_tool() -> None:
    decision = check("CALL db.labels()", {}, "recall", DEFAULT)
    assert decision.rule == "clause.not_allowed"
    # analyze allows the CALL clause, so its (empty) procedure allow-list decides.
    assert check("CALL db.labels()", {}, "analyze", DEFAULT).rule == "procedure.not_allowed"


@pytest.mark.parametrize("procedure", ["db.labels", "db.relationshipTypes", "db.propertyKeys"])
def test_the_default_policy_allows_no_schema_procedure(procedure: str) -> None:
    # They name labels, types and keys that only hidden elements carry; the schema tool answers scoped.
    for tool in ("recall", "analyze"):
        assert not check(f"CALL {procedure}()", {}, tool, DEFAULT).allowed, (tool, procedure)


def test_procedure_allow_list_is_exact() -> None:
    listing = _with(procedures_allowed=frozenset({"db.labels"}))
    for name in ("db.labelsX", "db.label", "db", "db.labels.x", "`db.labels`.x", "DB.LABELS"):
        decision = check(f"CALL {name}()", {}, "analyze", listing)
        assert decision.rule == "procedure.not_allowed", name
    # A single backticked name "db.labels" is the same string and so the same allow-list entry.
    assert check("CALL `db`.`labels`()", {}, "analyze", listing).allowed


@pytest.mark.parametrize("key", ["__gw_scope", "__gwanything", "__GW_x", "__mentis", "__Mentis_layers"])
def test_reserved_prefixes(key: str) -> None:
    assert check("RETURN 1 AS x", {key: 1}, "analyze", DEFAULT).rule == "param.reserved"


def test_decision_json_excludes_tree_and_is_frozen() -> None:
    decision = check("MATCH (n) RETURN n", {}, "analyze", DEFAULT)
    assert decision.model_dump() == {"allowed": True, "rule": None, "reason": None}
    with pytest.raises(Exception):  # noqa: B017 - pydantic raises ValidationError for frozen models
        decision.allowed = False  # type: ignore[misc]
    assert isinstance(decision, Decision)


def test_rejections_keep_the_tree_when_parsed() -> None:
    decision = check("MATCH (n) SET n.x = 1", {}, "analyze", DEFAULT)
    assert decision.rule == "write.clause" and decision.parsed is not None
    assert check("MATCH (", {}, "analyze", DEFAULT).parsed is None


def test_tool_policy_models_are_strict() -> None:
    with pytest.raises(Exception):  # noqa: B017
        ToolPolicy.model_validate({"allowed_clauses": ["MATCH"], "procedures_alowed": []})
