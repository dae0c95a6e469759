"""The public guard corpus (``tests/corpus/guard.jsonl``) and the policies its cases name."""

from __future__ import annotations

import json
from functools import cache
from typing import Any, Literal, TypedDict

from gateway.policy import Policy, load_policy
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH, CORPUS_DIR

CORPUS_PATH = CORPUS_DIR / "guard.jsonl"
PERMISSIVE_POLICY_PATH = CORPUS_DIR / "policies" / "permissive.yaml"
ALLOWLIST_POLICY_PATH = CORPUS_DIR / "policies" / "allowlist.yaml"


class CorpusCase(TypedDict):
    """One line of the corpus (written by ``tests/corpus/build_corpus.py``)."""

    id: int
    label: str
    expect: Literal["allow", "deny"]
    rule: str | None
    tool: Literal["analyze", "recall"]
    params: dict[str, Any]
    policy: Literal["default-all-properties", "permissive", "allowlist"]
    tags: list[str]
    note: str
    origin: str
    query: str


@cache
def load_corpus() -> list[CorpusCase]:
    lines = CORPUS_PATH.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def allowed_cases() -> list[CorpusCase]:
    return [case for case in load_corpus() if case["expect"] == "allow"]


@cache
def corpus_policies() -> dict[str, Policy]:
    """The policies a corpus case can name, by the name it uses."""
    return {
        "default-all-properties": load_policy(ALL_PROPERTIES_POLICY_PATH),
        "permissive": load_policy(PERMISSIVE_POLICY_PATH),
        "allowlist": load_policy(ALLOWLIST_POLICY_PATH),
    }


def policy_for(case: CorpusCase) -> Policy:
    return corpus_policies()[case["policy"]]


def plans_on_this_server(case: CorpusCase) -> bool:
    """Cases tagged ``cypher25`` plan only on Neo4j 2026.x; the others on both release lines."""
    from gateway import managed_neo4j

    return "cypher25" not in case["tags"] or managed_neo4j.line_for().name == "2026"
