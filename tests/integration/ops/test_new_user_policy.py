"""A new user's path, as the docs tell it (docs/policies.md), on a Mindreader-style graph whose scope
property is named ``layer_ids``:

    cypher-gateway policy init --template mindreader --scope-property layer_ids > my.yaml
    cypher-gateway policy lint my.yaml
    GATEWAY_POLICY_FILE=my.yaml cypher-gateway serve          (stdio, an agent's MCP client)
    cypher-gateway mnr run --policy my.yaml my-suite/          (their own must-not-retrieve suite)

and on a Mentis-shaped graph whose repositories are named by ``slug`` and hold a secret
``apiToken``: the template's allow-list (``visible_properties``) never shows the secret; the
mistakes such a user makes instead (a deny-list with the secret misspelt, ``public`` on a label
others derive from) are caught by ``doctor`` and ``policy lint --graph``, and seen by a reviewer
through ``policy explain`` and ``policy matrix --html``. Their identity provider's token names
the repositories ``repos``: mapping the attribute to another claim name is reported by ``auth
inspect`` (and every answer, tests/unit/test_oauth.py), not left as a user who sees nothing.

Marked ``rule_kinds``: the template is written in the rule vocabulary of decision 0018
(per-label membership rules, ``validTo`` filters), which the policy model must accept.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from gateway.connection import Neo4jConnection
from tests.support.env import neo4j_env, server_env
from tests.support.issuer import OPENID, RESOURCE, serving
from tests.support.paths import GATEWAY_CLI, REPO

pytestmark = [pytest.mark.rule_kinds, pytest.mark.neo4j2026]

CLI = [sys.executable, "-m", "gateway.cli"]

# The user's graph: their marker label, their property name (`layer_ids`), their layers. Short
# names on purpose: "Ada" returned as a plain value must still count as Ada's entity.
USER_GRAPH = """\
MATCH (n:NewUserGraph) DETACH DELETE n;
CREATE (:NewUserGraph:Entity {uid: 'ent-ada', name: 'Ada', layer_ids: ['team-a']}),
       (:NewUserGraph:Entity {uid: 'ent-bob', name: 'Bob', layer_ids: ['team-b']}),
       (:NewUserGraph:Entity {uid: 'ent-oslo', name: 'Oslo', layer_ids: []}),
       (:NewUserGraph:Entity {uid: 'ent-eve', name: 'Eve'}),
       (:NewUserGraph:Fact {uid: 'fact-now', text: 'Ada uses Rust', layer_ids: ['team-a'],
                            validFrom: datetime('2026-01-01T00:00:00Z')}),
       (:NewUserGraph:Fact {uid: 'fact-old', text: 'Ada uses Perl', layer_ids: ['team-a'],
                            validFrom: datetime('2024-01-01T00:00:00Z'), validTo: datetime('2026-01-01T00:00:00Z')});
MATCH (f:NewUserGraph:Fact), (a:NewUserGraph {uid: 'ent-ada'})
CREATE (f)-[:ABOUT {uid: 'about-' + f.uid, layer_ids: ['team-a']}]->(a);
MATCH (a:NewUserGraph {uid: 'ent-ada'}), (b:NewUserGraph {uid: 'ent-bob'})
CREATE (a)-[:ASSERTS {uid: 'asr-knows', predicate: 'knows', layer_ids: ['team-b']}]->(b);
MATCH (new:NewUserGraph {uid: 'fact-now'}), (old:NewUserGraph {uid: 'fact-old'})
CREATE (new)-[:SUPERSEDES {uid: 'sup-1', layer_ids: ['team-a']}]->(old);
"""

USER_SUITE = """\
policy: my-graph
fixture: my-graph.cypher
defaults:
  principal: {name: team-a-agent, scope: [team-a]}
  tool: analyze
cases:
  - id: other-team-and-untagged-never
    description: Bob is team-b's, Eve has no layer_ids; neither comes back, not even as a name.
    query: "MATCH (e:NewUserGraph:Entity) RETURN e.name AS name ORDER BY name"
    must_not_retrieve: [{uid: ent-bob}, {uid: ent-eve}]
    expect_rows: [[Ada], [Oslo]]
  - id: global-only-for-an-empty-scope
    description: An empty scope sees the global entity only.
    principal: {name: nobody, scope: []}
    query: "MATCH (e:NewUserGraph:Entity) RETURN e.name AS name"
    must_not_retrieve: [{uid: ent-ada}, {uid: ent-eve}]
    expect_rows: [[Oslo]]
  - id: retired-fact-hidden-from-analyze
    description: validTo set means retired; analyze sees current facts only.
    query: "MATCH (f:NewUserGraph:Fact) RETURN f.text AS text"
    must_not_retrieve: [{uid: fact-old}]
    expect_rows: [[Ada uses Rust]]
  - id: other-team-assertion-never
    description: The knows assertion is team-b's (its own layer_ids); Bob and the correction edge stay hidden too.
    query: "MATCH (:NewUserGraph {uid: 'ent-ada'})-[r]->(x) RETURN type(r) AS t, x.name AS name"
    must_not_retrieve: [{uid: asr-knows}, {uid: ent-bob}, {uid: sup-1}]
    expect_rows: []
"""

# The same check written wrongly: the caller may see Ada, so this case must FAIL (a short name
# that comes back is found, not silently ignored).
WRONG_SUITE = """\
policy: my-graph
fixture: ../suite/my-graph.cypher
defaults:
  principal: {name: team-a-agent, scope: [team-a]}
  tool: analyze
cases:
  - id: ada-is-not-hidden-from-team-a
    description: Written wrongly on purpose.
    query: "MATCH (e:NewUserGraph:Entity) RETURN e.name AS name"
    must_not_retrieve: [{uid: ent-ada}]
"""


def _cli(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300, env=env, cwd=cwd)


def test_policy_init_lint_serve_and_an_own_suite_on_a_layer_ids_graph(
    tmp_path: Path, neo4j_connection: Neo4jConnection, neo4j_driver: Any, sandbox_image: str
) -> None:
    env = neo4j_env(neo4j_connection, GATEWAY_SANDBOX_IMAGE=sandbox_image)

    init = _cli(["policy", "init", "--template", "mindreader", "--scope-property", "layer_ids"], env, tmp_path)
    assert init.returncode == 0, init.stderr
    policy = tmp_path / "my.yaml"
    policy.write_text(init.stdout.replace("\nname: mindreader\n", "\nname: my-graph\n", 1))
    assert "name: my-graph" in policy.read_text()

    lint = _cli(["policy", "lint", str(policy)], env, tmp_path)
    assert lint.returncode == 0 and "ok: policy 'my-graph' is valid" in lint.stdout, lint.stdout + lint.stderr

    suite_dir = tmp_path / "suite"
    suite_dir.mkdir()
    (suite_dir / "my-graph.cypher").write_text(USER_GRAPH)
    (suite_dir / "my-graph.mnr.yaml").write_text(USER_SUITE)
    try:
        # Their own suite, the policy chosen by the variable every command reads.
        run = _cli(["mnr", "run", str(suite_dir)], {**env, "GATEWAY_POLICY_FILE": str(policy)}, tmp_path)
        assert run.returncode == 0, run.stdout + run.stderr
        assert "4 cases: 4 passed" in run.stdout, run.stdout

        # The same machinery finds a leak the user wrote an expectation against by mistake.
        wrong = tmp_path / "wrong"
        wrong.mkdir()
        (wrong / "wrong.mnr.yaml").write_text(WRONG_SUITE)
        leak = _cli(["mnr", "run", "--policy", str(policy), str(wrong)], env, tmp_path)
        assert leak.returncode == 1, leak.stdout + leak.stderr
        assert "LEAKED uid=ent-ada" in leak.stdout and "string 'Ada'" in leak.stdout

        # serve over stdio with GATEWAY_POLICY_FILE, as the mcpServers entry in the docs sets it.
        serve_env = server_env(
            neo4j_connection, sandbox_image, tmp_path / "audit.jsonl", GATEWAY_POLICY_FILE=str(policy),
            GATEWAY_STDIO_PRINCIPAL="team-a-agent", GATEWAY_STDIO_SCOPE="team-a",
        )  # fmt: skip

        async def session() -> Any:
            params = StdioServerParameters(command=GATEWAY_CLI, args=["serve"], env=serve_env, cwd=str(REPO))
            with (tmp_path / "stderr.log").open("w") as errlog:
                async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=90) as client:
                    return await client.call_tool(
                        "analyze", {"cypher": "MATCH (e:NewUserGraph:Entity) RETURN e.name AS name ORDER BY name"}
                    )

        result = anyio.run(session)
    finally:
        with neo4j_driver.session(database=neo4j_connection.database) as db:
            db.run("MATCH (n:NewUserGraph) DETACH DELETE n").consume()
    content = result.structured_content
    assert not result.is_error, result
    assert content["rows"] == [["Ada"], ["Oslo"]] and content["degraded"] == [], content


# The Mentis-shaped graph of a user whose repositories are named by `slug` and carry a secret.
MENTIS_USER_GRAPH = """\
MATCH (n:NewUserMentis) DETACH DELETE n;
CREATE (r1:NewUserMentis:Repository {uid: 'nu-repo-api', slug: 'acme/api', apiToken: 's3cr3t-api'}),
       (r2:NewUserMentis:Repository {uid: 'nu-repo-ops', slug: 'umbrella/ops', apiToken: 's3cr3t-ops'}),
       (r1)-[:HAS_TASK {uid: 'nu-ht-1'}]->(t1:NewUserMentis:Task {uid: 'nu-task-1', id: 'API-1', title: 'Fix login'}),
       (r2)-[:HAS_TASK {uid: 'nu-ht-2'}]->(t2:NewUserMentis:Task {uid: 'nu-task-2', id: 'OPS-1', title: 'Rotate'}),
       (t1)-[:HAS_ATTEMPT {uid: 'nu-ha-1'}]->(:NewUserMentis:Attempt {uid: 'nu-att-1', id: 'att-1', action: 'a',
           observation: 'o', affectedFiles: ['a.py'], inference: 'i', check: 'passed', createdAt: 1,
           embedding: [0.1]}),
       (t2)-[:HAS_CONCLUSION {uid: 'nu-hc-2'}]->(:NewUserMentis:Conclusion {uid: 'nu-con-2', id: 'con-2',
           inference: 'i', check: 'failed', createdAt: 2, outdatedAt: 3, outdatedReason: 'r', latestCommit: 'c',
           embedding: [0.2]});
"""
# The template's allow-list, and the deny-list a user might write instead (the secret misspelt).
TEMPLATE_VISIBLE = "visible_properties:\n"
DENY_LIST = "hidden_properties:\n  Repository: [api_token]\n  Attempt: [embedding]\n  Conclusion: [embedding]\n"
DERIVED_TASK = 'Task: {kind: derived, path: "(x)<-[:HAS_TASK]-(anchor:Repository)"}'


class _Cells(HTMLParser):
    """The matrix page's table: row header -> its cells' text."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.counts: dict[tuple[str, int], tuple[int, int]] = {}  # (row header, column) -> (visible, total)
        self.tags: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th") and self.rows:
            self.rows[-1].append("")
            found = dict(attrs)
            if found.get("data-visible") is not None:
                key = (self.rows[-1][0], len(self.rows[-1]) - 1)
                self.counts[key] = (int(found["data-visible"] or 0), int(found["data-total"] or 0))

    def handle_data(self, data: str) -> None:
        if self.rows and self.rows[-1]:
            self.rows[-1][-1] += data


def test_a_mentis_user_s_misspelt_secret_and_public_task_are_caught_before_they_ship(
    tmp_path: Path, neo4j_connection: Neo4jConnection, neo4j_driver: Any, sandbox_image: str
) -> None:
    env = neo4j_env(neo4j_connection, GATEWAY_SANDBOX_IMAGE=sandbox_image, GATEWAY_AUDIT_PATH=str(tmp_path / "a.jsonl"))
    init = _cli(["policy", "init", "--template", "mentis", "--scope-property", "slug"], env, tmp_path)
    assert init.returncode == 0, init.stderr
    assert "its name" not in init.stdout and "CONTRADICTS" not in init.stdout
    assert DERIVED_TASK in init.stdout
    # The template lists what an answer shows: the user's secret is not listed, so it cannot leak.
    assert TEMPLATE_VISIBLE in init.stdout and "hidden_properties:" not in init.stdout.replace("# ", "")
    start = init.stdout.index(TEMPLATE_VISIBLE)
    end = init.stdout.index("\nsandbox:", start) + 1
    allow_list = init.stdout
    # The user's two mistakes: a deny-list instead, with the secret's key misspelt, and tasks opened to every caller.
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        (init.stdout[:start] + DENY_LIST + "\n" + init.stdout[end:]).replace(DERIVED_TASK, "Task: {kind: public}", 1)
    )
    fixed = tmp_path / "fixed.yaml"
    fixed.write_text(allow_list)
    graph = tmp_path / "graph.cypher"
    graph.write_text(MENTIS_USER_GRAPH)
    try:
        # The matrix seeds the user's graph itself (--fixture) and shows both leaks to a reviewer.
        page = tmp_path / "matrix.html"
        shown = _cli(["policy", "matrix", "--policy", str(broken), "--fixture", str(graph), "--html", str(page),
                      "--principal", "ci:repositories=acme/api", "--principal", "nobody"], env, tmp_path)  # fmt: skip
        assert shown.returncode == 0, shown.stdout + shown.stderr
        cells = _Cells()
        cells.feed(page.read_text(encoding="utf-8"))
        assert "script" not in cells.tags
        rows = {row[0]: row[1:] for row in cells.rows}
        assert rows["label / type"] == ["ci", "nobody"]
        # Every task, to a caller with no repositories at all; and the token, to the repository's own caller.
        visible, total = cells.counts[("label Task", 2)]
        assert visible == total >= 2, cells.counts
        assert cells.counts[("label Repository", 2)][0] == 0
        assert "apiToken" in rows["label Repository"][0], rows["label Repository"]

        doctor = _cli(["doctor", "--json"], {**env, "GATEWAY_POLICY_FILE": str(broken)}, tmp_path)
        assert doctor.returncode == 1, doctor.stdout + doctor.stderr
        scope = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}["scope vs graph"]
        assert scope["status"] == "failed", scope
        assert "hidden_properties.Repository names 'api_token', which no Repository carries" in scope["detail"]
        assert "write 'apiToken' for 'api_token' in hidden_properties.Repository" in scope["fix"]
        assert (
            "scope.nodes.Task is public, and Attempt, Conclusion derive their visibility from Task" in scope["detail"]
        )
        assert "'layers'" not in scope["detail"]

        lint = _cli(["policy", "lint", "--graph", str(broken)], env, tmp_path)
        assert lint.returncode == 1, lint.stdout + lint.stderr
        assert "fix: write 'apiToken' for 'api_token' in hidden_properties.Repository" in lint.stdout
        assert "problem: scope.nodes.Task is public" in lint.stdout
        assert "hidden_properties is a deny-list and fails open" in lint.stdout

        # The allow-list form: the token is in no answer, refused by name, and the graph fits it.
        allowed = _cli(["policy", "matrix", "--policy", str(fixed), "--fixture", str(graph),
                        "--principal", "ci:repositories=acme/api"], env, tmp_path)  # fmt: skip
        assert allowed.returncode == 0, allowed.stdout + allowed.stderr
        assert "label Repository, ci: slug" in allowed.stdout and "apiToken" not in allowed.stdout
        named = subprocess.run(
            [*CLI, "check", "--tool", "analyze", "--attribute", "repositories=acme/api"],
            input="MATCH (r:Repository) RETURN r.apiToken", capture_output=True, text=True, timeout=120,
            env={**env, "GATEWAY_POLICY_FILE": str(fixed)}, cwd=tmp_path,
        )  # fmt: skip
        assert named.returncode != 0 and "property.not_visible" in named.stdout, named.stdout + named.stderr
        show = _cli(["policy", "show", str(fixed)], env, tmp_path)
        assert "which fails closed" in show.stdout and "names are exact" in show.stdout, show.stdout

        doctor = _cli(["doctor", "--json"], {**env, "GATEWAY_POLICY_FILE": str(fixed)}, tmp_path)
        scope = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}["scope vs graph"]
        assert scope["status"] == "ok" and "layers" not in scope["detail"], scope

        explain = _cli(["policy", "explain", "--policy", str(fixed), "--principal", "ci:repositories=acme/api",
                        "--element", "Conclusion:uid=nu-con-2"], env, tmp_path)  # fmt: skip
        assert explain.returncode == 1, explain.stdout + explain.stderr
        assert "NOT visible; decided by: derived anchor chain" in explain.stdout
        assert "its Task's Repository's slug is one of the caller's repositories" in explain.stdout
        assert (
            "its anchor chain Conclusion -> Task -> Repository reaches 1 Repository whose slug is 'umbrella/ops'"
            in (explain.stdout)
        )
    finally:
        with neo4j_driver.session(database=neo4j_connection.database) as db:
            db.run("MATCH (n:NewUserMentis) DETACH DELETE n").consume()


def test_a_mentis_user_s_claim_mapped_to_the_wrong_name_is_reported_and_fixed(tmp_path: Path) -> None:
    init = _cli(["policy", "init", "--template", "mentis", "--scope-property", "slug"], {**os.environ}, tmp_path)
    assert init.returncode == 0, init.stderr
    policy = tmp_path / "my.yaml"
    policy.write_text(init.stdout)
    with serving() as issuer:
        issuer.publish(OPENID)
        token = issuer.token(repos=["acme/api"])  # the issuer's claim is `repos`
        env = {**os.environ, "GATEWAY_POLICY_FILE": str(policy), "GATEWAY_OAUTH_ISSUER": issuer.issuer,
               "GATEWAY_OAUTH_RESOURCE": RESOURCE}  # fmt: skip

        def inspect(mapping: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([*CLI, "auth", "inspect"], input=token, capture_output=True, text=True, timeout=120,
                                  env={**env, "GATEWAY_OAUTH_ATTRIBUTE_CLAIMS": mapping}, cwd=tmp_path)  # fmt: skip

        wrong = inspect("repositories=repositories")
        fixed = inspect("repositories=repos")
    # Accepted, fail closed (no repositories), and the mismatch named with the claims the token does carry.
    assert wrong.returncode == 0, wrong.stdout + wrong.stderr
    assert "repositories (none: rules reading it show nothing)" in wrong.stdout, wrong.stdout
    assert (
        "WARNING     the token carries no claim 'repositories' (mapped to attribute repositories), so rules "
        "reading it show nothing; it carries: aud, exp, iat, iss, repos, scope, sub." in wrong.stdout
    ), wrong.stdout
    assert "acme/api" not in wrong.stdout
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "repositories acme/api" in fixed.stdout and "WARNING" not in fixed.stdout, fixed.stdout
