"""A new user's path, as the docs tell it (docs/policies.md), on a Mindreader-style graph whose scope
property is named ``layer_ids``:

    cypher-gateway policy init --template mindreader --scope-property layer_ids > my.yaml
    cypher-gateway policy lint my.yaml
    GATEWAY_POLICY_FILE=my.yaml cypher-gateway serve          (stdio, an agent's MCP client)
    cypher-gateway mnr run --policy my.yaml my-suite/          (their own must-not-retrieve suite)

Marked ``rule_kinds``: the template is written in the rule vocabulary of decision 0018
(per-label membership rules, ``validTo`` filters), which the policy model must accept.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from gateway.connection import Neo4jConnection
from tests.support.env import neo4j_env, server_env
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
       (:NewUserGraph:Fact {uid: 'fact-now', text: 'Ada uses Rust', layer_ids: ['team-a']}),
       (:NewUserGraph:Fact {uid: 'fact-old', text: 'Ada uses Perl', layer_ids: ['team-a'],
                            validTo: datetime('2026-01-01T00:00:00Z')});
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
