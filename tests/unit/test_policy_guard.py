"""Policy files: strict validation, and the shipped files are what the guard expects."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.policy import POLICIES_DIR, PolicyError, load_policy
from tests.support.paths import REPO


@pytest.mark.parametrize("path", [*sorted(POLICIES_DIR.glob("*.yaml")), REPO / "tests/corpus/policies/permissive.yaml"])
def test_every_shipped_policy_loads(path: Path) -> None:
    policy = load_policy(path)
    assert set(policy.tools) == {"recall", "analyze"}


def test_default_is_strict() -> None:
    policy = load_policy()
    for tool in ("recall", "analyze"):
        tp = policy.tool(tool)
        assert not tp.limits.allow_unbounded_var_length
        assert {"apoc.load.*", "apoc.cypher.*", "apoc.export.*", "apoc.import.*", "dbms.*"} <= set(tp.functions_denied)
        assert {"SUPERSEDES", "CONTRADICTS"} <= tp.denied_relationship_types
        assert (tp.limits.timeout_seconds, tp.limits.max_rows, tp.limits.max_bytes) == (5, 100, 512_000)
    assert policy.tool("recall").procedures_allowed == frozenset()
    assert policy.tool("analyze").procedures_allowed == frozenset()
    assert set(policy.tool("recall").required_parameters) == {"repository", "taskId"}
    # One principal's queries share a container (docs/decisions/0014); overload answered within half a second.
    assert policy.sandbox.max_queries_per_container == 100
    assert 0 < policy.sandbox.busy_wait_ms <= 500 and policy.sandbox.max_concurrent_per_principal >= 1


# The analyze tool's procedure list in default.yaml (recall's is followed by an anchor, not an alias).
ANALYZE_PROCEDURES = "procedures_allowed: []\n    functions_denied: *"


@pytest.mark.parametrize(
    ("mutation", "needle"),
    [
        (("max_hops: 8", "max_hops: 8\n      max_hopz: 9"), "max_hopz"),
        (("allowed_clauses: [MATCH,", "allowed_clauses: [CREATE, MATCH,"), "allowed_clauses"),
        (('prefixes: ["__gw", "__mentis"]', 'prefixes: ["__mentis"]'), "scope_parameter"),
        (("max_rows: 100", "max_rows: 0"), "max_rows"),
        (("max_rewritten_chars: 100000", "max_rewritten_chars: 0"), "max_rewritten_chars"),
        ((ANALYZE_PROCEDURES, ANALYZE_PROCEDURES.replace("[]", '["db.*"]')), "procedures_allowed"),
        (("max_queries_per_container: 100", "max_queries_per_container: 0"), "max_queries_per_container"),
        (("busy_wait_ms: 500", "busy_wait_ms: 500\n  busy_wait_s: 1"), "busy_wait_s"),
    ],
)
def test_invalid_policies_are_refused(tmp_path: Path, mutation: tuple[str, str], needle: str) -> None:
    text = (POLICIES_DIR / "default.yaml").read_text()
    assert mutation[0] in text
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace(mutation[0], mutation[1], 1))
    with pytest.raises(PolicyError) as info:
        load_policy(bad)
    assert needle in str(info.value)
