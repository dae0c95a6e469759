"""The public corpus: every attack rejected with its expected rule, every legitimate read allowed."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from gateway.guard import RULE_IDS, check
from gateway.policy import Policy
from tests.support.corpus import load_corpus, policy_for

CORPUS = load_corpus()


def _policy(case: Any) -> Policy:
    return policy_for(case)


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
