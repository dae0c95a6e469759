"""The hidden-properties rule (``property.hidden``): every path to a hidden value, each with its attack."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.guard import check
from gateway.policy import HiddenProperties, Policy, PolicyError, load_policy
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH

DEFAULT = load_policy(ALL_PROPERTIES_POLICY_PATH)
HIDDEN = DEFAULT.model_copy(
    update={"hidden_properties": HiddenProperties.model_validate({"Attempt": ["embedding"], "KNOWS": ["secret"]})}
)


def _rule(query: str, params: dict[str, Any] | None = None, policy: Policy = HIDDEN) -> str | None:
    decision = check(query, params or {}, "analyze", policy)
    return None if decision.allowed else decision.rule


# (path, attack): each query reads, tests or copies a hidden value, or its name.
REFUSED = [
    ("projection", "MATCH (a:Attempt) RETURN a.embedding"),
    ("projection, any label", "MATCH (f:Fact) RETURN f.embedding"),  # f may also be an :Attempt
    ("projection, relationship", "MATCH ()-[k:KNOWS]->() RETURN k.secret"),
    ("projection, case-insensitive", "MATCH (a) RETURN a.EMBEDDING"),
    ("projection, backticks", "MATCH (a) RETURN a.`embedding`"),
    ("projection in a function", "MATCH (a) RETURN size(a.embedding)"),
    ("similarity", "MATCH (a) RETURN vector.similarity.cosine(a.embedding, $v) AS s"),
    ("WHERE oracle", "MATCH (a:Attempt) WHERE a.embedding[0] > 0.5 RETURN a.uid"),
    ("WHERE presence", "MATCH (a) WHERE a.secret IS NOT NULL RETURN count(a)"),
    ("WHERE in EXISTS", "MATCH (a) WHERE EXISTS { MATCH (a)-->(b) WHERE b.secret = 'x' } RETURN a.uid"),
    ("ORDER BY oracle", "MATCH (a:Attempt) RETURN a.uid ORDER BY a.embedding[0]"),
    ("WITH ORDER BY", "MATCH (a) WITH a ORDER BY a.secret RETURN a.uid"),
    ("aggregate", "MATCH (a) RETURN max(a.secret)"),
    ("pattern map oracle", "MATCH (a:Attempt {embedding: $v}) RETURN a.uid"),
    ("relationship pattern map", "MATCH ()-[k {secret: 'x'}]->() RETURN count(k)"),
    ("pattern map parameter", "MATCH (a $m) RETURN a.uid"),
    ("map projection", "MATCH (a:Attempt) RETURN a {.uid, .embedding}"),
    ("map projection, all", "MATCH (a:Fact) RETURN a {.*}"),
    ("map projection, all on a map", "WITH {x: 1} AS m RETURN m {.*}"),
    ("properties()", "MATCH (a:Attempt) RETURN properties(a)"),
    ("properties() of a relationship", "MATCH ()-[k]->() RETURN properties(k)['secret']"),
    ("keys()", "MATCH (a:Attempt) RETURN keys(a)"),
    ("keys() in WHERE", "MATCH (a) WHERE 'embedding' IN keys(a) RETURN a.uid"),
    ("dynamic access, literal", "MATCH (a) RETURN a['embedding']"),
    ("dynamic access, parameter", "MATCH (a) RETURN a[$k]"),
    ("dynamic access, computed", "MATCH (a) RETURN a['emb' + 'edding']"),
    ("dynamic access, variable", "MATCH (a) WITH a, 'secret' AS k RETURN a[k]"),
    ("dynamic access in WHERE", "MATCH (a) WHERE a[$k] IS NOT NULL RETURN a.uid"),
    ("property_exists", "MATCH (a) RETURN property_exists(a, 'embedding')"),
    ("property_exists, computed", "MATCH (a) WITH a, 'x' AS k RETURN property_exists(a, k)"),
    ("index hint", "MATCH (a:Attempt) USING INDEX a:Attempt(embedding) WHERE a.uid = 'x' RETURN a.uid"),
]


@pytest.mark.parametrize(("path", "query"), REFUSED, ids=[p for p, _ in REFUSED])
def test_every_path_to_a_hidden_property_is_refused(path: str, query: str) -> None:
    params = {"k": "embedding", "v": [0.1], "m": {"embedding": [0.1]}}
    assert _rule(query, params) == "property.hidden", path
    # The same query is not refused for this reason when the policy hides nothing.
    assert _rule(query, params, DEFAULT) != "property.hidden"


ALLOWED = [
    "MATCH (a:Attempt) RETURN a",  # whole: the sandbox removes the hidden keys
    "MATCH (a:Attempt) RETURN a.uid, a {.uid, .action}",
    "MATCH (a:Attempt {uid: 'x'}) RETURN a.uid ORDER BY a.uid",
    "MATCH (a) RETURN a['uid']",
    "MATCH (a) RETURN a[$visible]",
    "WITH [1, 2, 3] AS l RETURN l[0], l[-1], l[size(l) - 1], l[$i]",
    "MATCH (a) WITH collect(a) AS all RETURN all[0]",
    "MATCH p = ()-->() RETURN nodes(p)[0]",
    "RETURN split('a,b', ',')[1]",
    "WITH {embedding: 1} AS m RETURN m",  # a map literal's key reads nothing
    "MATCH (a) RETURN property_exists(a, 'uid')",
]


@pytest.mark.parametrize("query", ALLOWED)
def test_reads_that_cannot_reach_a_hidden_value_are_allowed(query: str) -> None:
    assert _rule(query, {"visible": "uid", "i": 2}) is None


def test_the_refusal_names_the_property_and_the_policy() -> None:
    decision = check("MATCH (a) RETURN a.embedding", {}, "analyze", HIDDEN)
    assert decision.reason == (
        "The query reads the property embedding (a.embedding), which policy 'default-all-properties' hides."
    )
    decision = check("MATCH (a) RETURN keys(a)", {}, "analyze", HIDDEN)
    assert decision.reason is not None and "read the properties you need by name" in decision.reason


def test_a_parameter_naming_a_hidden_key_is_refused_only_by_its_value() -> None:
    assert _rule("MATCH (a) RETURN a[$k]", {"k": "uid"}) is None
    assert _rule("MATCH (a) RETURN a[$k]", {"k": "Embedding"}) == "property.hidden"
    assert _rule("MATCH (a) RETURN a[$k]", {}) == "property.hidden"  # not supplied: cannot be checked


def test_the_policy_section_takes_plain_keys_only(tmp_path: Any) -> None:
    # The default policy without its property list: the deny-list is the only list it then gives.
    base = ALL_PROPERTIES_POLICY_PATH.read_text(encoding="utf-8")
    for bad in ("'emb*'", "'a.embedding'", "'`x`'", "''", "' x'"):
        path = tmp_path / "p.yaml"
        path.write_text(base + f"\nhidden_properties:\n  Attempt: [{bad}]\n", encoding="utf-8")
        with pytest.raises(PolicyError, match="hidden_properties"):
            load_policy(path)
    path = tmp_path / "ok.yaml"
    path.write_text(base + "\nhidden_properties:\n  Attempt: [embedding, secret]\n  KNOWS: [since]\n")
    hidden = load_policy(path).hidden_properties
    assert hidden.names() == {"embedding", "secret", "since"}
    assert hidden.by_owner() == {"Attempt": ["embedding", "secret"], "KNOWS": ["since"]}


def test_policy_show_says_what_is_hidden() -> None:
    from gateway.cli.policy import render_policy

    line = "hidden properties (never named by a query, never in an answer or the schema tool): "
    assert line + "Attempt: embedding; KNOWS: secret" in render_policy(HIDDEN)
    # With no list at all, show says every property is shown (never "hidden properties: none").
    assert line not in render_policy(DEFAULT) and "every property of a visible element is shown" in render_policy(
        DEFAULT
    )
