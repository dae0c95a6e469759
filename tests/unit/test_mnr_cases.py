"""The case format, the result matcher and the reports: pure functions, no services."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from gateway.connection import Neo4jConnection
from gateway.mnr.cases import Case, LayerPermit, PrincipalSpec, Selector, Suite, SuiteError, discover, load_suite
from gateway.mnr.match import FixtureElement, Matcher
from gateway.mnr.report import junit_xml, summary, table
from gateway.mnr.runner import CaseOutcome, MnrSession
from gateway.mnr.seed import MEMORY_FIXTURE, statements
from gateway.policy import POLICIES_DIR, load_policy
from tests.support.paths import MNR_SUITES as MNR_DIR


def _case(**fields: Any) -> Case:
    return Case.model_validate({"id": "c", "query": "MATCH (n) RETURN n", **fields})


# --- the format is strict ------------------------------------------------------------------------


def test_unknown_keys_are_errors_at_every_level() -> None:
    with pytest.raises(ValidationError, match="must_not_retreive"):
        _case(must_not_retreive=[{"uid": "x"}])
    with pytest.raises(ValidationError, match="Extra inputs"):
        Selector.model_validate({"uid": "x", "colour": "red"})
    with pytest.raises(ValidationError, match="Extra inputs"):
        Suite.model_validate({"fixture": "builtin:memory", "cases": [], "extra": 1})


def test_a_selector_names_exactly_one_kind() -> None:
    with pytest.raises(ValidationError, match="exactly one"):
        Selector.model_validate({})
    with pytest.raises(ValidationError, match="exactly one"):
        Selector.model_validate({"uid": "a", "value": "b"})
    with pytest.raises(ValidationError, match="not both"):
        Selector.model_validate({"labels": ["Fact"], "type": "NEXT"})
    assert Selector.model_validate({"labels": ["Fact"], "props": {"uid": "a"}}).describe() == ":Fact {uid: 'a'}"


def test_a_case_needs_an_expectation_and_must_reject_stands_alone() -> None:
    with pytest.raises(ValidationError, match="at least one expectation"):
        _case()
    with pytest.raises(ValidationError, match="stands alone"):
        _case(must_reject="write.clause", must_retrieve=[{"uid": "a"}])
    with pytest.raises(ValidationError, match="stands alone"):
        _case(must_reject="write.clause", must_not_retrieve=[{"uid": "a"}])
    with pytest.raises(ValidationError, match="case id"):
        _case(id="has space", max_rows=1)
    assert _case(max_rows=0).max_rows == 0
    # "No notification at all" is an expectation of its own; leaving the field out checks nothing.
    assert _case(expect_notifications=[]).expect_notifications == ()
    with pytest.raises(ValidationError, match="stands alone"):
        _case(must_reject="write.clause", expect_notifications=[])


def test_suite_checks_ids_principal_and_tool(tmp_path: Path) -> None:
    base = {"policy": "default", "fixture": "builtin:memory"}
    case = {"id": "a", "query": "RETURN 1", "max_rows": 1}
    with pytest.raises(ValidationError, match="appears twice"):
        Suite.model_validate(
            {**base, "defaults": {"tool": "analyze", "principal": {"name": "p"}}, "cases": [case, case]}
        )
    with pytest.raises(ValidationError, match="no principal"):
        Suite.model_validate({**base, "defaults": {"tool": "analyze"}, "cases": [case]})
    with pytest.raises(ValidationError, match="no tool"):
        Suite.model_validate({**base, "defaults": {"principal": {"name": "p"}}, "cases": [case]})


def test_load_suite_names_the_file_and_the_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mnr.yaml"
    bad.write_text("policy: default\nfixture: builtin:memory\ncases:\n- {id: x, query: RETURN 1, max_rowz: 1}\n")
    with pytest.raises(SuiteError, match=r"bad\.mnr\.yaml.*max_rowz"):
        load_suite(bad)
    missing_fixture = tmp_path / "m.mnr.yaml"
    missing_fixture.write_text(
        "policy: default\nfixture: nowhere.cypher\ndefaults: {tool: analyze, principal: {name: p}}\n"
        "cases: [{id: x, query: RETURN 1, max_rows: 1}]\n"
    )
    with pytest.raises(SuiteError, match="does not exist"):
        load_suite(missing_fixture)
    unknown_builtin = tmp_path / "u.mnr.yaml"
    unknown_builtin.write_text(missing_fixture.read_text().replace("nowhere.cypher", "builtin:nope"))
    with pytest.raises(SuiteError, match="no built-in fixture 'nope'"):
        load_suite(unknown_builtin)


def _default_suite_files() -> list[Path]:
    """The default policy's suites: the files directly in tests/mnr (a subdirectory holds another policy's)."""
    return sorted(MNR_DIR.glob("*.mnr.yaml"))


def test_every_subfolder_suite_runs_under_its_own_policy_file() -> None:
    others = [f for f in discover([MNR_DIR]) if f.parent != MNR_DIR]
    assert others
    for file in others:
        suite = load_suite(file)
        assert suite.policy == load_policy(file.parent / "policy.yaml").name
        assert all(case.description.strip() for case in suite.cases), file


def test_shipped_suites_load_and_hold_at_least_60_cases() -> None:
    files = _default_suite_files()
    suites = [load_suite(f) for f in files]
    total = sum(len(s.cases) for s in suites)
    assert total >= 60, total
    assert all(s.fixture_path() == MEMORY_FIXTURE for s in suites)
    kinds = {"must_reject": 0, "must_not_retrieve": 0, "must_retrieve": 0, "expect_rows": 0}
    for suite in suites:
        for case in suite.cases:
            kinds["must_reject"] += case.must_reject is not None
            kinds["must_not_retrieve"] += bool(case.must_not_retrieve)
            kinds["must_retrieve"] += bool(case.must_retrieve)
            kinds["expect_rows"] += case.expect_rows is not None
    assert all(count >= 10 for count in kinds.values()), kinds


def test_shipped_suites_declare_their_policy_and_describe_every_case() -> None:
    assert {load_suite(f).policy for f in _default_suite_files()} == {load_policy().name}
    # A subfolder holds another policy's suites beside that policy (policy.yaml); the shipped graphs'
    # folders link the shipped policy of their name and use that graph's built-in fixture.
    for shipped in ("mentis", "mindreader"):
        own = MNR_DIR / shipped / "policy.yaml"
        assert own.resolve() == (POLICIES_DIR / f"{shipped}.yaml").resolve(), own
        suites = [load_suite(f) for f in discover([MNR_DIR / shipped])]
        assert suites and all(s.policy == shipped and s.fixture == f"builtin:{shipped}" for s in suites)
    for file in discover([MNR_DIR]):
        if file.parent != MNR_DIR:
            declared = yaml.safe_load((file.parent / "policy.yaml").read_text(encoding="utf-8"))["name"]
            assert load_suite(file).policy == declared, file
    suites = [load_suite(f) for f in _default_suite_files()]
    undescribed = [f"{s.name}::{c.id}" for s in suites for c in s.cases if not c.description.strip()]
    assert not undescribed, undescribed


def test_a_suite_must_declare_its_policy_and_the_runner_refuses_another(tmp_path: Path) -> None:
    body = (
        "fixture: builtin:memory\ndefaults: {tool: analyze, principal: {name: p}}\n"
        "cases: [{id: x, query: RETURN 1, max_rows: 1}]\n"
    )
    undeclared = tmp_path / "undeclared.mnr.yaml"
    undeclared.write_text(body)
    with pytest.raises(SuiteError, match="policy: Field required"):
        load_suite(undeclared)
    other = tmp_path / "other.mnr.yaml"
    other.write_text("policy: permissive\n" + body)
    suite = load_suite(other)
    connection = Neo4jConnection(uri="bolt://127.0.0.1:1", user="neo4j", password="unused")
    with MnrSession(connection=connection, runner=None) as session:  # refused before anything is seeded or run
        (outcome,) = session.run_suite(suite)
    assert outcome.status == "error"
    assert outcome.failures == [
        "other assumes policy 'permissive', but the policy in force is 'default': "
        "its expectations say nothing about another policy"
    ]


def test_seed_file_splits_into_statements() -> None:
    parts = statements(MEMORY_FIXTURE.read_text())
    assert parts[0] == "MATCH (n:MnrFixture) DETACH DELETE n"
    assert all(not p.endswith(";") and "//" not in p.split("\n")[0] for p in parts)
    assert statements("// c\nRETURN 1;\nRETURN 'a;b';\n") == ["RETURN 1", "RETURN 'a;b'"]


# --- the matcher finds nested values -------------------------------------------------------------

HIDDEN = FixtureElement(
    key="fact-b-1", element_ids=frozenset({"4:x:9"}), fingerprints=frozenset({"fact-b-1", "beta launch date is 2027"}),
    relationships=frozenset({"about-fact-b-1"}),
)  # fmt: skip
MATCHER = Matcher("uid", {"fact-b-1": HIDDEN})


def _node(element_id: str, uid: str, labels: tuple[str, ...] = ("Fact",)) -> dict[str, Any]:
    return {"$type": "node", "elementId": element_id, "labels": list(labels), "properties": {"uid": uid}}


def _rel(element_id: str, start: str, end: str, rel_type: str = "NEXT") -> dict[str, Any]:
    return {
        "$type": "relationship", "elementId": element_id, "type": rel_type,
        "startElementId": start, "endElementId": end, "properties": {"uid": element_id},
    }  # fmt: skip


@pytest.mark.parametrize(
    "cell",
    [
        _node("4:x:9", "renamed"),  # by element id
        _node("4:x:other", "fact-b-1"),  # by key property
        {"a": [{"b": [_node("4:x:9", "fact-b-1")]}]},  # nested in maps and lists
        {"$type": "path", "nodes": [_node("4:x:1", "g"), _node("4:x:9", "x")], "relationships": []},
        _rel("5:x:1", "4:x:1", "4:x:9"),  # a visible edge pointing at the hidden node
        _rel("r1", "n1", "n2") | {"properties": {"uid": "about-fact-b-1"}},  # the same, known by its key
        "fact-b-1",
        "4:x:9",
        ["prefix: beta launch date is 2027 and more"],  # a fingerprint inside a longer string
        {"p": {"uid": "fact-b-1"}},  # properties(n) as a plain map
    ],
)
def test_uid_selector_finds_the_element_anywhere(cell: Any) -> None:
    hits = MATCHER.find(Selector(uid="fact-b-1"), ["c"], [[1, cell]])
    assert hits, cell
    assert hits[0].row == 0


def test_uid_selector_ignores_other_elements_and_values() -> None:
    rows = [[_node("4:x:1", "fact-a-1"), "fact-a-1", 9, None, _rel("5:x:2", "4:x:1", "4:x:3")]]
    assert MATCHER.find(Selector(uid="fact-b-1"), ["a", "b", "c", "d", "e"], rows) == []


def test_value_and_element_selectors() -> None:
    rows = [[True, 1, "SUPERSEDES", _rel("5:x:1", "a", "b", "SUPERSEDES"), _node("4:x:2", "f", ("Fact", "Secret"))]]
    cols = list("abcde")
    assert len(MATCHER.find(Selector(value=1), cols, rows)) == 1  # True is not 1
    assert len(MATCHER.find(Selector(value=True), cols, rows)) == 1
    assert MATCHER.find(Selector(value="SUPERSEDES"), cols, rows)[0].where == "c"
    assert MATCHER.find(Selector(type="SUPERSEDES"), cols, rows)[0].where == "d"
    assert MATCHER.find(Selector(labels=("Secret",)), cols, rows)[0].where == "e"
    assert MATCHER.find(Selector(props={"uid": "f"}), cols, rows)[0].where == "e"
    assert MATCHER.find(Selector(text="PERSED"), cols, rows)[0].where == "c"
    assert MATCHER.find(Selector(labels=("Nope",)), cols, rows) == []


# A Repository whose secret property a policy meant to hide under another name (api_token for
# apiToken): the node comes back whole, the secret inside its property map.
LEAKY = {
    "$type": "node", "elementId": "n1", "labels": ["Repository"],
    "properties": {"uid": "repo-1", "name": "acme/payments", "apiToken": "s3cr3t"},
}  # fmt: skip


@pytest.mark.parametrize(
    ("cell", "where"),
    [
        (LEAKY, "r.properties.apiToken"),  # a bare node
        (_rel("r1", "n1", "n2") | {"properties": {"token": "Bearer s3cr3t"}}, "r.properties.token"),
        ({"$type": "path", "nodes": [LEAKY], "relationships": []}, "r.nodes[0].properties.apiToken"),
        ([{"repo": LEAKY}], "r[0].repo.properties.apiToken"),  # nested in a list and a map
        (LEAKY | {"properties": {"tokens": ["old", "s3cr3t"]}}, "r.properties.tokens[1]"),  # a list property
    ],
)
def test_text_selector_looks_inside_returned_elements_property_maps(cell: Any, where: str) -> None:
    hits = MATCHER.find(Selector(text="s3cr3t"), ["r"], [[cell]])
    assert [hit.where for hit in hits] == [where]


def test_only_text_looks_inside_elements_value_and_uid_name_what_is_projected() -> None:
    # A visible node whose property equals a value or a hidden element's key is that node's own
    # data, not a projection of the hidden one.
    visible = _node("4:x:1", "fact-a-1") | {"properties": {"uid": "fact-a-1", "about": "fact-b-1", "n": 1}}
    assert MATCHER.find(Selector(value=1), ["r"], [[visible]]) == []
    assert MATCHER.find(Selector(uid="fact-b-1"), ["r"], [[visible]]) == []
    assert MATCHER.find(Selector(text="fact-b"), ["r"], [[visible]])[0].where == "r.properties.about"


# --- reports -------------------------------------------------------------------------------------


def _outcome(case_id: str, status: Any, suite: str = "s", failures: list[str] | None = None) -> CaseOutcome:
    return CaseOutcome(
        suite=suite, file=f"/x/{suite}.mnr.yaml", case_id=case_id, tool="analyze", principal="p",
        scope=["project-a"], status=status, failures=failures or [], duration_ms=12.5,
    )  # fmt: skip


OUTCOMES = [
    _outcome("ok", "passed"),
    _outcome("leak", "failed", failures=["LEAKED uid=fact-b-1: row 0 f: node :Fact fact-b-1 \x07bell"]),
    _outcome("broken", "error", suite="t", failures=["harness error: boom"]),
]


def test_junit_xml_is_valid_and_counts_match() -> None:
    root = ET.fromstring(junit_xml(OUTCOMES).split("\n", 1)[1])  # noqa: S314 (our own output)
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("3", "1", "1")
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["s", "t"]
    assert suites[0].get("tests") == "2" and suites[0].get("failures") == "1"
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert set(cases) == {"ok", "leak", "broken"}
    failure = cases["leak"].find("failure")
    assert failure is not None and "fact-b-1" in (failure.get("message") or "")
    assert failure.text is not None and "\\x07bell" in failure.text  # control characters escaped
    assert cases["broken"].find("error") is not None
    assert cases["ok"].find("failure") is None and cases["ok"].get("time") == "0.013"


def test_table_lists_every_case_and_the_failures() -> None:
    text = table(OUTCOMES)
    assert "PASS    s::ok" in text and "FAIL    s::leak" in text and "ERROR   t::broken" in text
    assert "s::leak FAILED" in text and "harness error: boom" in text
    assert text.endswith(summary(OUTCOMES))
    assert summary(OUTCOMES) == "3 cases: 1 passed, 1 failed, 1 errors"


def test_a_layer_permit_names_one_file_and_a_case_glob(tmp_path: Path) -> None:
    path = tmp_path / "s.mnr.yaml"
    path.write_text(
        "policy: default\nfixture: builtin:memory\ndefaults: {tool: analyze, principal: {name: p}}\ncases:\n"
        "- {id: guard-off, query: RETURN 1, max_rows: 1, layers: {guard: false}}\n"
        "- {id: explain-off, query: RETURN 1, max_rows: 1, layers: {explain_check: false, result_check: false}}\n"
        "- {id: scope-off, query: RETURN 1, max_rows: 1, layers: {scope_rewrite: false, result_check: false}}\n"
    )
    suite = load_suite(path)
    guard_off, explain_off, _scope_off = suite.cases
    assert [c.layers.guarding_off() for c in suite.cases if c.layers] == [("guard",), ("explain_check",), ()]
    whole_file = LayerPermit.parse("s.mnr.yaml", tmp_path)
    assert whole_file.allows(suite, guard_off) and whole_file.allows(suite, explain_off)
    one_case = LayerPermit.parse("s.mnr.yaml::guard-*", tmp_path)
    assert one_case.allows(suite, guard_off) and not one_case.allows(suite, explain_off)
    # Another file of the same name elsewhere is another file.
    assert not LayerPermit.parse("other/s.mnr.yaml", tmp_path).allows(suite, guard_off)
    for bad in ("", "::guard-off", "s.mnr.yaml::"):
        with pytest.raises(SuiteError, match="FILE or FILE::CASE"):
            LayerPermit.parse(bad, tmp_path)


def test_the_runner_refuses_an_unpermitted_guarding_switch_before_anything_runs(tmp_path: Path) -> None:
    path = tmp_path / "u.mnr.yaml"
    path.write_text(
        "policy: default\nfixture: builtin:memory\ndefaults: {tool: analyze, principal: {name: p}}\ncases:\n"
        "- {id: all-off, query: RETURN 1, max_rows: 1, layers: {guard: false, explain_check: false}}\n"
        "- {id: scope-only, query: RETURN 1, max_rows: 1, layers: {scope_rewrite: false}}\n"
    )
    suite = load_suite(path)
    nowhere = Neo4jConnection(uri="bolt://127.0.0.1:1", user="neo4j", password="unused")
    with MnrSession(connection=nowhere, runner=None) as session:
        off, scope_only = session.run_suite(suite)
    assert off.status == "error" and len(off.failures) == 1
    assert f"{path}: case 'all-off' switches off guard and explain_check" in off.failures[0]
    assert f"--allow-layers-off {path}::all-off" in off.failures[0] and "--mnr-allow-layers-off" in off.failures[0]
    # The scope layers alone need no permit: the case went on to the harness (no Neo4j here).
    assert scope_only.failures[0].startswith("harness error")
    permit = LayerPermit.parse(str(path) + "::all-off", tmp_path)
    with MnrSession(connection=nowhere, runner=None, layer_permits=[permit]) as session:
        permitted = session.run_case(suite, suite.cases[0])
    assert permitted.failures[0].startswith("harness error")


def test_a_principal_has_a_layers_list_and_named_attribute_lists() -> None:
    plain = PrincipalSpec.model_validate({"name": "p", "scope": ["layer-a"]}).principal()
    assert plain.scope == frozenset({"layer-a"}) and plain.attributes == {}
    named = PrincipalSpec.model_validate(
        {"name": "p", "scope": ["layer-a"], "attributes": {"repositories": ["acme/payments"]}}
    ).principal()
    assert named.scope == frozenset({"layer-a"})
    assert named.attribute("repositories") == frozenset({"acme/payments"})
    assert named.attribute("tenants") == frozenset()  # an attribute left out is empty, never everything
    only_repositories = PrincipalSpec.model_validate({"name": "p", "attributes": {"repositories": ["x"]}})
    assert only_repositories.principal().scope == frozenset()  # no layers: global-only under a membership rule
    with pytest.raises(ValidationError):
        PrincipalSpec.model_validate({"name": "p", "attributes": {"repositories": "acme/payments"}})


# --- principals with named attribute lists -------------------------------------------------------


def test_a_case_principal_may_carry_named_attribute_lists(tmp_path: Path) -> None:
    path = tmp_path / "a.mnr.yaml"
    path.write_text(
        "policy: default\nfixture: builtin:memory\n"
        "defaults: {tool: analyze, principal: {name: p, scope: [project-a]}}\ncases:\n"
        "- {id: plain, query: RETURN 1, max_rows: 1}\n"
        "- {id: repos, query: RETURN 1, max_rows: 1,\n"
        "   principal: {name: m, attributes: {repositories: [acme/api], layers: [project-b]}}}\n"
    )
    suite = load_suite(path)
    plain, repos = (suite.resolved(case).principal.principal() for case in suite.cases)
    assert plain.scope == {"project-a"} and plain.attributes == {}
    assert repos.scope == {"project-b"} and repos.attribute("repositories") == {"acme/api"}
    assert repos.attribute("tenants") == frozenset()


@pytest.mark.parametrize(
    ("principal", "words"),
    [
        ("{name: m, scope: [a], attributes: {layers: [b]}}", "principal 'm': layers is given twice"),
        ("{name: m, attributes: {repo-names: [r]}}", "not an identifier"),
        ("{name: m, attributes: {__gw_attr_x: [r]}}", "reserved"),
        ("{name: m, attributes: {repositories: acme}}", "attributes.repositories"),
    ],
)
def test_a_bad_case_principal_names_the_file_the_principal_and_the_problem(
    tmp_path: Path, principal: str, words: str
) -> None:
    path = tmp_path / "bad.mnr.yaml"
    path.write_text(
        f"policy: default\nfixture: builtin:memory\ndefaults: {{tool: analyze, principal: {principal}}}\n"
        "cases: [{id: x, query: RETURN 1, max_rows: 1}]\n"
    )
    with pytest.raises(SuiteError, match=r"bad\.mnr\.yaml") as info:
        load_suite(path)
    assert words in str(info.value)


def test_the_report_shows_a_principals_named_lists() -> None:
    outcome = _outcome("repos", "passed").model_copy(update={"attributes": {"repositories": ["acme/api"]}})
    assert "project-a; repositories=acme/api" in table([outcome])
