"""Property-based tests: whatever the input, the guard returns a decision and never raises."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.guard import RULE_IDS, Decision, check
from gateway.policy import load_policy
from tests.support.corpus import load_corpus
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH

POLICY = load_policy(ALL_PROPERTIES_POLICY_PATH)
CORPUS = load_corpus()
SMALL_READS = [
    c["query"]
    for c in CORPUS
    if c["expect"] == "allow"
    and c["policy"] == "default-all-properties"
    and c["tool"] == "analyze"
    and not c["params"]
    and len(c["query"]) < 400
]
ALL_QUERIES = [c["query"] for c in CORPUS if len(c["query"]) < 3000]
CYPHER_BITS = [
    "MATCH",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "-",
    "->",
    "<-",
    ":",
    "CALL",
    "CREATE",
    "WITH",
    "RETURN",
    "'",
    '"',
    "`",
    "/*",
    "*/",
    "//",
    "\n",
    "\r",
    "$",
    "\\",
    "\\u0027",
    "EXISTS",
    "COUNT",
    "|",
    ",",
    ";",
    "UNION",
    "*",
    "..",
    "{1,",
    "apoc.load.json",
    "n",
    ".",
    "x",
    "=",
    "IS",
    "NOT",
    "NULL",
    "CASE",
]
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _valid(decision: Decision) -> bool:
    return isinstance(decision, Decision) and (
        (decision.allowed is True and decision.rule is None)
        or (decision.allowed is False and decision.rule in RULE_IDS | {"tool.unknown"} and bool(decision.reason))
    )


@SETTINGS
@given(st.text(max_size=300))
def test_random_text_always_yields_a_decision(text: str) -> None:
    assert _valid(check(text, {}, "analyze", POLICY))


@SETTINGS
@given(st.lists(st.sampled_from(CYPHER_BITS), max_size=60).map(" ".join))
def test_random_cypher_fragments_always_yield_a_decision(text: str) -> None:
    assert _valid(check(text, {}, "analyze", POLICY))


@SETTINGS
@given(st.sampled_from(ALL_QUERIES), st.integers(0, 3000), st.integers(0, 5), st.sampled_from(CYPHER_BITS))
def test_mutated_corpus_queries_always_yield_a_decision(query: str, pos: int, cut: int, insert: str) -> None:
    pos %= len(query) + 1
    mutated = query[:pos] + insert + query[pos + cut :]
    assert _valid(check(mutated, {}, "analyze", POLICY))


@SETTINGS
@given(st.integers(1, 3000), st.sampled_from(["(", "[", "{", "NOT ", "- ", "CASE WHEN true THEN ", "CALL { "]))
def test_any_nesting_depth_is_a_clean_decision(depth: int, opener: str) -> None:
    assert _valid(check("RETURN " + opener * depth + "1", {}, "analyze", POLICY))


@SETTINGS
@given(
    st.sampled_from(SMALL_READS),
    st.sampled_from(
        [
            "CREATE (x:P)",
            "SET n.x = 1",
            "DETACH DELETE n",
            "MERGE (m)",
            "REMOVE n.x",
            "FOREACH (i IN [1] | CREATE ())",
            "LOAD CSV FROM 'file:///x' AS l",
            "INSERT (x)",
        ]
    ),
)
def test_a_write_appended_to_any_read_is_never_allowed(read: str, write: str) -> None:
    query = read.rstrip().rstrip(";") + "\n" + write  # newline: some reads end in a // comment
    assert not check(query, {}, "analyze", POLICY).allowed


@SETTINGS
@given(st.sampled_from(SMALL_READS), st.sampled_from(["/* CREATE (x) */", "// DELETE n\n", "/* ' \" ` */"]))
def test_comments_between_clauses_do_not_change_a_read(read: str, comment: str) -> None:
    assert check(read, {}, "analyze", POLICY).allowed
    padded = read.replace(" RETURN ", f" {comment} RETURN ", 1)
    assert check(padded, {}, "analyze", POLICY).allowed
