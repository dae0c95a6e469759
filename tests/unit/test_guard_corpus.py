"""The public corpus: every attack rejected with its expected rule, every legitimate read allowed."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from gateway.guard import RULE_IDS, check
from gateway.policy import Policy, load_policy

CORPUS_PATH = Path(__file__).parent / "corpus" / "guard.jsonl"
POLICIES = {
    "default": load_policy(),
    "permissive": load_policy(Path(__file__).parent / "corpus" / "policies" / "permissive.yaml"),
}


def load_corpus() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CORPUS_PATH.read_text(encoding="utf-8").splitlines() if line.strip()]


CORPUS = load_corpus()


def _policy(case: dict[str, Any]) -> Policy:
    return POLICIES[case["policy"]]


@pytest.mark.parametrize("case", CORPUS, ids=[f"{c['id']}-{c['label']}" for c in CORPUS])
def test_corpus_case(case: dict[str, Any]) -> None:
    decision = check(case["query"], case["params"], case["tool"], _policy(case))
    if case["expect"] == "allow":
        assert decision.allowed, f"legitimate read refused: {decision.rule}: {decision.reason}"
        assert decision.parsed is not None
    else:
        assert not decision.allowed, f"attack allowed: {case['query'][:200]!r}"
        assert decision.rule == case["rule"], decision.reason
        assert decision.reason and decision.reason.endswith(".")


def test_corpus_is_big_and_covers_every_family() -> None:
    assert len(CORPUS) >= 150
    labels = Counter(c["label"] for c in CORPUS)
    for family in (
        "READ",
        "WRITE",
        "ADMIN",
        "FILE-ACCESS",
        "PROCEDURE",
        "MALFORMED",
        "RESERVED-PARAM",
        "REQUIRED-PARAM",
        "SCOPE",
        "RESOURCE",
        "NESTING",
        "SIZE",
        "MULTI",
        "UNICODE-ESCAPE",
    ):
        assert labels[family] > 0, family
    tags = {t for c in CORPUS for t in c["tags"]}
    for bypass in (
        "gql-insert",
        "comment-in-name",
        "backtick-namespace",
        "string-with-write",
        "nested-comment-trap",
        "cr-comment-trap",
        "in-transactions",
        "union",
        "foreach",
        "apoc-cypher",
        "dbms",
        "wrapper-escape",
        "tx-metadata",
        "use",
        "load-csv",
        "qpp",
        "exists-subquery",
        "count-subquery",
        "cypher-version",
        "keyword-like-props",
        "unicode-escape",
    ):
        assert bypass in tags, bypass
    assert sum(c["expect"] == "allow" for c in CORPUS) >= 80


def test_every_rule_is_exercised_by_the_corpus() -> None:
    expected = {c["rule"] for c in CORPUS if c["expect"] == "deny"}
    assert expected == RULE_IDS
