"""The must-not-retrieve runner can fail: leaks, wrong expectations, degraded answers, wrong rules.

Real sandbox, real Neo4j (the fixture memory graph); plus the CLI's exit codes and
JUnit file, and the pytest plugin collecting ``*.mnr.yaml`` files.
"""

from __future__ import annotations

import http.server
import subprocess
import sys
import textwrap
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from gateway.connection import Neo4jConnection
from gateway.domain import LayerSwitches
from gateway.mnr.cases import LayerPermit, Suite, load_suite
from gateway.mnr.runner import CaseOutcome, MnrSession
from gateway.policy import HiddenProperties, load_policy
from gateway.runner import SandboxRunner
from tests.support.env import neo4j_env
from tests.support.mnr import SUITE_HEADER
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH

CLI = [sys.executable, "-m", "gateway.cli"]
HEADER = SUITE_HEADER


def _suite(tmp_path: Path, body: str, name: str = "t") -> Suite:
    path = tmp_path / f"{name}.mnr.yaml"
    path.write_text(HEADER + textwrap.indent(textwrap.dedent(body), "  "))
    return load_suite(path)


@pytest.fixture(scope="module")
def shared_runner(sandbox_runner: SandboxRunner) -> SandboxRunner:
    return sandbox_runner


@pytest.fixture(scope="module")
def session(neo4j_connection: Neo4jConnection, shared_runner: SandboxRunner) -> Iterator[MnrSession]:
    with MnrSession(connection=neo4j_connection, runner=shared_runner) as mnr:
        yield mnr


def _only(outcomes: list[CaseOutcome]) -> CaseOutcome:
    assert len(outcomes) == 1
    return outcomes[0]


LEAKY_CASE = """\
- id: texts
  query: MATCH (f:MnrFixture:Fact) RETURN f.text AS text
  must_not_retrieve: [{uid: fact-b-1}]
"""


def test_a_leak_fails_the_case_naming_the_leaked_record(
    tmp_path: Path, neo4j_connection: Neo4jConnection, shared_runner: SandboxRunner
) -> None:
    suite = _suite(tmp_path, LEAKY_CASE)
    switched_off = LayerSwitches(scope_rewrite=False, result_check=False)
    with MnrSession(connection=neo4j_connection, runner=shared_runner, layers=switched_off) as leaky:
        outcome = _only(leaky.run_suite(suite))
    assert outcome.status == "failed"
    assert outcome.failures[0].startswith("LEAKED uid=fact-b-1")
    assert "beta launch date is 2027-03-14" in outcome.failures[0]
    assert "t::texts FAILED" in outcome.message()


def test_the_same_case_passes_with_every_layer_on(tmp_path: Path, session: MnrSession) -> None:
    outcome = _only(session.run_suite(_suite(tmp_path, LEAKY_CASE)))
    assert outcome.status == "passed", outcome.message()


def test_a_principal_with_named_lists_runs_as_written(tmp_path: Path, session: MnrSession) -> None:
    # layers written among the named lists is the scope: project-a's fact comes back, project-b's does not.
    suite = _suite(
        tmp_path,
        """\
        - id: named
          principal: {name: agent-m, attributes: {layers: [project-a], repositories: [acme/api]}}
          query: MATCH (f:MnrFixture:Fact) RETURN f
          must_not_retrieve: [{uid: fact-b-1}]
          must_retrieve: [{uid: fact-a-1}]
        """,
    )
    outcome = _only(session.run_suite(suite))
    assert outcome.status == "passed", outcome.message()
    assert (outcome.principal, outcome.scope, outcome.attributes) == (
        "agent-m", ["project-a"], {"repositories": ["acme/api"]})  # fmt: skip


def test_layer_two_alone_redacts_and_a_case_not_expecting_it_fails(
    tmp_path: Path, neo4j_connection: Neo4jConnection, shared_runner: SandboxRunner
) -> None:
    suite = _suite(
        tmp_path, "- id: nodes\n  query: MATCH (f:MnrFixture:Fact) RETURN f\n  must_not_retrieve: [{uid: fact-b-1}]\n"
    )
    with MnrSession(connection=neo4j_connection, runner=shared_runner, layers=LayerSwitches(scope_rewrite=False)) as s:
        outcome = _only(s.run_suite(suite))
    assert outcome.status == "failed"
    assert outcome.redacted > 0 and outcome.degraded == ["scope:redacted"]
    assert "layer 2 redacted" in outcome.failures[0]
    assert not any(f.startswith("LEAKED") for f in outcome.failures)


def test_a_wrong_expectation_fails(tmp_path: Path, session: MnrSession) -> None:
    suite = _suite(
        tmp_path,
        """\
        - id: wrong-leak
          query: MATCH (f:MnrFixture:Fact) RETURN f
          must_not_retrieve: [{uid: fact-a-1}]
        - id: wrong-retrieve
          query: MATCH (f:MnrFixture:Fact) RETURN f
          must_retrieve: [{uid: fact-b-1}]
        - id: wrong-count
          query: MATCH (f:MnrFixture:Fact) RETURN count(f) AS n
          expect_rows: [[7]]
        - id: too-many-rows
          query: MATCH (f:MnrFixture:Fact) RETURN f
          max_rows: 2
        """,
    )
    by_id = {o.case_id: o for o in session.run_suite(suite)}
    assert all(o.status == "failed" for o in by_id.values()), [o.message() for o in by_id.values()]
    assert by_id["wrong-leak"].failures[0].startswith("LEAKED uid=fact-a-1: row ")
    assert by_id["wrong-retrieve"].failures == ["missing uid=fact-b-1: not found in 5 row(s)"]
    assert by_id["wrong-count"].failures == ["rows [[5]], expected [[7]]"]
    assert by_id["too-many-rows"].failures == ["5 row(s), at most 2 expected"]


def test_notifications_are_judged_exactly(
    tmp_path: Path, session: MnrSession, neo4j_connection: Neo4jConnection, shared_runner: SandboxRunner
) -> None:
    suite = _suite(
        tmp_path,
        """\
        - id: unknown-label
          query: MATCH (n:MnrNeverUsedLabel) RETURN count(n) AS n
          expect_notifications: []
        - id: deprecation
          query: "MATCH (f:MnrFixture:Fact {uid: 'fact-a-1'}) CALL { WITH f RETURN f.uid AS u } RETURN u"
          expect_notifications: ["01N00", "01N50"]
        """,
    )
    by_id = {o.case_id: o for o in session.run_suite(suite)}
    assert by_id["unknown-label"].status == "passed", by_id["unknown-label"].message()
    assert by_id["deprecation"].failures == ["notifications ['01N00'], expected ['01N00', '01N50']"]
    with MnrSession(connection=neo4j_connection, runner=shared_runner, layers=LayerSwitches(scope_rewrite=False)) as s:
        unscoped = s.run_suite(suite)[0]
    assert unscoped.failures == ["notifications ['01N50'], expected []"]


def test_rejections_must_match_the_rule(tmp_path: Path, session: MnrSession) -> None:
    suite = _suite(
        tmp_path,
        """\
        - id: right-rule
          query: "CREATE (n:X) RETURN n"
          must_reject: write.clause
        - id: other-rule
          query: "CREATE (n:X) RETURN n"
          must_reject: param.reserved
        - id: not-rejected
          query: "MATCH (f:MnrFixture:Fact) RETURN count(f) AS n"
          must_reject: write.clause
        - id: unexpected-rejection
          query: "MERGE (n:X) RETURN n"
          max_rows: 10
        """,
    )
    by_id = {o.case_id: o for o in session.run_suite(suite)}
    assert by_id["right-rule"].status == "passed" and by_id["right-rule"].rule == "write.clause"
    assert by_id["other-rule"].status == "failed"
    assert by_id["other-rule"].failures[0].startswith("expected rejection by param.reserved, got rule write.clause")
    assert by_id["not-rejected"].failures == ["expected rejection by write.clause, but the query ran (1 row(s))"]
    assert by_id["unexpected-rejection"].failures[0].startswith("rejected by rule write.clause")


def test_an_unknown_uid_is_an_error_not_a_pass(tmp_path: Path, session: MnrSession) -> None:
    suite = _suite(tmp_path, "- id: typo\n  query: MATCH (f:Fact) RETURN f\n  must_not_retrieve: [{uid: fact-b-9}]\n")
    outcome = _only(session.run_suite(suite))
    assert outcome.status == "error"
    assert outcome.failures == ["uid='fact-b-9' names no element of fixture builtin:memory"]


def test_a_disabled_sandbox_fails_every_case_unless_it_says_so(
    tmp_path: Path, neo4j_connection: Neo4jConnection
) -> None:
    suite = _suite(
        tmp_path,
        """\
        - id: retrieve
          query: MATCH (f:Fact) RETURN f
          must_retrieve: [{uid: fact-a-1}]
        - id: not-retrieve
          query: MATCH (f:Fact) RETURN f
          must_not_retrieve: [{uid: fact-b-1}]
        - id: expects-disabled
          query: MATCH (f:Fact) RETURN f
          expect_degraded: ["analyze:disabled"]
        - id: rejection-still-decided
          query: "CREATE (n:X) RETURN n"
          must_reject: write.clause
        """,
    )
    with MnrSession(connection=neo4j_connection, runner=None) as no_sandbox:
        by_id = {o.case_id: o for o in no_sandbox.run_suite(suite)}
    for case_id in ("retrieve", "not-retrieve"):
        outcome = by_id[case_id]
        assert outcome.status == "failed", case_id
        assert outcome.degraded == ["analyze:disabled"]
        assert outcome.failures[0].startswith(
            "degraded analyze:disabled: the sandbox did not run, so nothing was checked"
        )
    assert by_id["expects-disabled"].status == "passed"
    assert by_id["rejection-still-decided"].status == "passed"


# --- the CLI -------------------------------------------------------------------------------------


def _run_cli(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "mnr", "run", *args], capture_output=True, text=True, timeout=240, env=env)


def test_cli_exit_codes_table_and_junit(tmp_path: Path, neo4j_connection: Neo4jConnection, sandbox_image: str) -> None:
    passing = tmp_path / "ok"
    passing.mkdir()
    (passing / "ok.mnr.yaml").write_text(HEADER + "  - id: fine\n    query: MATCH (f:Fact) RETURN f\n"
                                         "    must_not_retrieve: [{uid: fact-b-1}]\n")  # fmt: skip
    failing = tmp_path / "bad.mnr.yaml"
    failing.write_text(
        HEADER + "  - id: good\n    query: CREATE (n:X) RETURN n\n    must_reject: write.clause\n"
        "  - id: wrong\n    query: MATCH (f:MnrFixture:Fact) RETURN f\n    must_not_retrieve: [{uid: fact-a-2}]\n"
    )
    env = neo4j_env(neo4j_connection)
    proc = _run_cli([str(passing)], env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASS    ok::fine" in proc.stdout and "1 cases: 1 passed, 0 failed, 0 errors" in proc.stdout

    junit = tmp_path / "out.xml"
    proc = _run_cli([str(failing), str(passing), "--junit", str(junit)], env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FAIL    bad::wrong" in proc.stdout and "LEAKED uid=fact-a-2" in proc.stdout
    assert "3 cases: 2 passed, 1 failed, 0 errors" in proc.stdout
    root = ET.parse(junit).getroot()  # noqa: S314 (our own output)
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("3", "1", "0")
    failure = root.find("./testsuite[@name='bad']/testcase[@name='wrong']/failure")
    assert failure is not None and "fact-a-2" in (failure.get("message") or "")


# --- the pytest plugin ---------------------------------------------------------------------------


def test_pytest_plugin_collects_cases_as_integration_items(tmp_path: Path, neo4j_connection: Neo4jConnection) -> None:
    (tmp_path / "plug.mnr.yaml").write_text(
        HEADER + "  - id: clean\n    query: MATCH (f:Fact) RETURN f\n    must_not_retrieve: [{uid: fact-b-1}]\n"
        "  - id: leaks-by-design\n    query: MATCH (f:MnrFixture:Fact) RETURN f\n"
        "    must_not_retrieve: [{uid: fact-g-2}]\n"
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    integration: real services\n")
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-m", "integration", str(tmp_path)]
    env = neo4j_env(neo4j_connection)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "1 failed, 1 passed" in out
    assert "plug::leaks-by-design FAILED" in out and "LEAKED uid=fact-g-2" in out


# --- a short value still names its element ---------------------------------------------------------

SHORT_FIXTURE = """\
MATCH (n:MnrShortValues) DETACH DELETE n;
CREATE (:MnrShortValues:Entity {uid: 'ent-ada', name: 'Ada', layers: ['project-b']}),
       (:MnrShortValues:Entity {uid: 'ent-bob', name: 'Bob', layers: ['project-a']});
"""


def test_a_short_property_value_returned_plain_is_a_leak(
    tmp_path: Path, neo4j_connection: Neo4jConnection, shared_runner: SandboxRunner, neo4j_driver: Any
) -> None:
    (tmp_path / "short.cypher").write_text(SHORT_FIXTURE)
    path = tmp_path / "short.mnr.yaml"
    path.write_text(
        HEADER.replace("builtin:memory", "short.cypher")
        + "  - id: names\n    query: MATCH (e:MnrShortValues) RETURN e.name AS name ORDER BY name\n"
        "    must_not_retrieve: [{uid: ent-ada}]\n"
    )
    suite = load_suite(path)
    switched_off = LayerSwitches(scope_rewrite=False, result_check=False)
    try:
        with MnrSession(connection=neo4j_connection, runner=shared_runner, layers=switched_off) as leaky:
            outcome = _only(leaky.run_suite(suite))
        with MnrSession(connection=neo4j_connection, runner=shared_runner) as scoped:
            held = _only(scoped.run_suite(suite))
    finally:
        with neo4j_driver.session(database=neo4j_connection.database) as db:
            db.run("MATCH (n:MnrShortValues) DETACH DELETE n").consume()
    # "Ada" is three characters, but only ent-ada holds it: the answer named the hidden entity.
    assert outcome.row_count == 2
    assert outcome.status == "failed", outcome.message()
    assert outcome.failures == ["LEAKED uid=ent-ada: row 0 name: string 'Ada' (a property only ent-ada holds)"]
    assert held.status == "passed" and held.row_count == 1, held.message()


MISSPELT_FIXTURE = """\
MATCH (n:MnrMisspelt) DETACH DELETE n;
CREATE (:MnrMisspelt:Repository {uid: 'repo-1', name: 'acme/payments', layers: ['project-a'], apiToken: 's3cr3t'});
"""


def test_a_text_selector_catches_a_secret_a_misspelt_hidden_property_lets_through(
    tmp_path: Path, neo4j_connection: Neo4jConnection, shared_runner: SandboxRunner, neo4j_driver: Any
) -> None:
    # The policy meant to hide apiToken and wrote api_token: the whole node comes back with it.
    (tmp_path / "misspelt.cypher").write_text(MISSPELT_FIXTURE)
    path = tmp_path / "misspelt.mnr.yaml"
    path.write_text(
        HEADER.replace("builtin:memory", "misspelt.cypher").replace("policy: default", "policy: default-all-properties")
        + "  - id: repositories\n    query: MATCH (r:MnrMisspelt) RETURN r\n"
        "    must_not_retrieve: [{text: s3cr3t}]\n"
    )
    suite = load_suite(path)
    default = load_policy(ALL_PROPERTIES_POLICY_PATH)  # no allow-list: the deny-list alone decides
    misspelt = default.model_copy(update={"hidden_properties": HiddenProperties({"Repository": ["api_token"]})})
    spelt = default.model_copy(update={"hidden_properties": HiddenProperties({"Repository": ["apiToken"]})})
    try:
        with MnrSession(connection=neo4j_connection, runner=shared_runner, policy=misspelt) as leaky:
            outcome = _only(leaky.run_suite(suite))
        with MnrSession(connection=neo4j_connection, runner=shared_runner, policy=spelt) as hidden:
            held = _only(hidden.run_suite(suite))
    finally:
        with neo4j_driver.session(database=neo4j_connection.database) as db:
            db.run("MATCH (n:MnrMisspelt) DETACH DELETE n").consume()
    assert outcome.status == "failed" and outcome.row_count == 1, outcome.message()
    assert outcome.failures == ["LEAKED text~'s3cr3t': row 0 r.properties.apiToken: string 's3cr3t'"]
    assert held.status == "passed" and held.row_count == 1, held.message()


# --- a file alone never switches the guard off: LOAD CSV must not reach Neo4j ----------------------


class _Recorder(http.server.BaseHTTPRequestHandler):
    paths: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).paths.append(self.path)
        body = b"uid\nfetched\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/csv")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def url_trap() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on the loopback (where the managed Neo4j runs) that records every fetch."""

    class Recorder(_Recorder):  # a fresh list of paths per test
        paths: ClassVar[list[str]] = []

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/exfil.csv", Recorder.paths
    finally:
        server.shutdown()
        server.server_close()


def _load_csv_case(url: str) -> str:
    return (
        "  - id: fetch-a-url\n"
        "    layers: {guard: false, scope_rewrite: false, explain_check: false, result_check: false}\n"
        f"    query: \"LOAD CSV WITH HEADERS FROM '{url}' AS row RETURN row.uid AS uid\"\n"
        "    must_not_retrieve: [{text: fetched}]\n"
    )


def test_a_file_switching_every_layer_off_never_reaches_neo4j_without_the_flag(
    tmp_path: Path, neo4j_connection: Neo4jConnection, shared_runner: SandboxRunner, url_trap: tuple[str, list[str]]
) -> None:
    url, fetched = url_trap
    path = tmp_path / "unguarded.mnr.yaml"
    path.write_text(HEADER + _load_csv_case(url))
    suite = load_suite(path)
    with MnrSession(connection=neo4j_connection, runner=shared_runner) as session:
        refused = _only(session.run_suite(suite))
    assert refused.status == "error"
    assert f"{path}: case 'fetch-a-url' switches off guard and explain_check" in refused.failures[0]
    assert f"--allow-layers-off {path}::fetch-a-url" in refused.failures[0]
    assert fetched == []
    # The control: permitted on the command line, the same file does make Neo4j fetch the URL,
    # so the empty list above means the query never ran, not that the trap cannot see it.
    permit = LayerPermit.parse(f"{path}::fetch-a-url", tmp_path)
    with MnrSession(connection=neo4j_connection, runner=shared_runner, layer_permits=[permit]) as session:
        permitted = _only(session.run_suite(suite))
    assert fetched == ["/exfil.csv"], permitted.message()
    assert permitted.status == "failed" and permitted.failures[0].startswith("LEAKED text~'fetched'")


def test_the_pytest_plugin_needs_its_option_for_a_guarding_switch(
    tmp_path: Path, neo4j_connection: Neo4jConnection, url_trap: tuple[str, list[str]]
) -> None:
    url, fetched = url_trap
    (tmp_path / "plug.mnr.yaml").write_text(HEADER + _load_csv_case(url))
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    integration: real services\n")
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(tmp_path)]
    env = neo4j_env(neo4j_connection)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "1 failed" in out, out
    assert "--mnr-allow-layers-off plug.mnr.yaml::fetch-a-url" in out
    assert fetched == []
    permitted = [*cmd, "--mnr-allow-layers-off", "plug.mnr.yaml::fetch-a-url"]
    proc = subprocess.run(permitted, capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert "LEAKED text~'fetched'" in out and "switches off" not in out, out
    assert fetched == ["/exfil.csv"]
