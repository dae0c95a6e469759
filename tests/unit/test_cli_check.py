"""The `cypher-gateway check` contract and `policy show|lint`, run as real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gateway import __version__
from gateway.managed_neo4j import Neo4jSetupError, connection_info
from tests.support.paths import REPO


def run(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway.cli", *args], input=stdin, capture_output=True, text=True, cwd=REPO,
        timeout=60, env=env,
    )  # fmt: skip


def test_allowed_query_exit_0_and_one_json_object_with_the_scoped_query() -> None:
    result = run("check", stdin="MATCH (n) RETURN n LIMIT 1")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    rewritten = out.pop("rewritten")
    assert out == {"allowed": True, "rule": None, "reason": None, "tool": "analyze", "policy": "default"}
    assert rewritten.startswith("MATCH (n) WHERE (any(__gw_v IN [n.layers] ") and "$__gw_scope" in rewritten


def test_rejected_query_exit_3_with_rule_and_reason() -> None:
    result = run("check", "--tool", "analyze", stdin="CALL /*x*/ apoc.periodic.iterate('a', 'b', {})")
    assert result.returncode == 3
    out = json.loads(result.stdout)
    assert out["allowed"] is False and out["rule"] == "procedure.not_allowed"
    assert "apoc.periodic.iterate" in out["reason"]
    assert set(out) == {"allowed", "rule", "reason", "tool", "policy", "rewritten"} and out["rewritten"] is None


def test_what_only_the_scope_rewrite_refuses_is_refused() -> None:
    # The guard alone would allow a variable in the gateway's namespace; the gateway refuses it, and so does the CLI.
    result = run("check", stdin="MATCH (__gw_n) RETURN count(*) AS x")
    assert result.returncode == 3 and json.loads(result.stdout)["rule"] == "scope.unsupported"


def test_params_and_tool_are_applied() -> None:
    query = "MATCH (t:Task {repository: $repository, taskId: $taskId}) RETURN t"
    ok = run("check", "--tool", "recall", "--params", '{"repository": "r", "taskId": "t"}', stdin=query)
    assert ok.returncode == 0, ok.stdout
    missing = run("check", "--tool", "recall", "--params", '{"repository": "r"}', stdin=query)
    assert missing.returncode == 3 and json.loads(missing.stdout)["rule"] == "param.required"
    reserved = run("check", "--params", '{"__gw_scope": ["x"]}', stdin="RETURN 1 AS x")
    assert reserved.returncode == 3 and json.loads(reserved.stdout)["rule"] == "param.reserved"


def test_check_needs_neither_neo4j_nor_docker() -> None:
    # A Neo4j URI without its password stops `serve`; no Docker daemon degrades it. `check` runs nothing.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GATEWAY_", "NEO4J_"))}
    env.update(NEO4J_URI="bolt://127.0.0.1:1", DOCKER_HOST="unix:///nonexistent/docker.sock")
    result = run("check", stdin="MATCH (n) RETURN n", env=env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["rewritten"].startswith("MATCH (n) WHERE (any(__gw_v IN [n.layers] ")


@pytest.mark.parametrize("params", ["{", "[1, 2]", '"x"'])
def test_bad_params_exit_2(params: str) -> None:
    result = run("check", "--params", params, stdin="RETURN 1")
    assert result.returncode == 2 and result.stdout == "" and "params" in result.stderr


def test_bad_policy_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ntools: {}\nsurprise: 1\n")
    result = run("check", "--policy", str(bad), stdin="RETURN 1")
    assert result.returncode == 2 and "invalid" in result.stderr
    assert run("check", "--policy", str(tmp_path / "missing.yaml"), stdin="RETURN 1").returncode == 2


def test_bad_tool_is_a_usage_error() -> None:
    assert run("check", "--tool", "write", stdin="RETURN 1").returncode == 2


def test_policy_show_is_a_readable_table() -> None:
    result = run("policy", "show")
    assert result.returncode == 0
    for needle in (
        "recall",
        "analyze",
        "apoc.load.*",
        "limits.max_rows",
        "512000",
        "write.clause",
        "scope.unsupported",
    ):
        assert needle in result.stdout, needle


def test_policy_lint(tmp_path: Path) -> None:
    default = run("policy", "lint", str(REPO / "policies" / "default.yaml"))
    # The shipped default lists what an answer shows: nothing about properties to warn of.
    assert default.returncode == 0 and "warning:" not in default.stdout, default.stdout
    shows_all = run("policy", "lint", str(REPO / "tests" / "policies" / "default-all-properties.yaml"))
    assert shows_all.returncode == 0 and "warning: the policy names no property list, so every property" in (
        shows_all.stdout
    )
    permissive = run("policy", "lint", str(REPO / "tests" / "corpus" / "policies" / "permissive.yaml"))
    assert permissive.returncode == 0 and "warning:" in permissive.stdout
    bad = tmp_path / "typo.yaml"
    bad.write_text((REPO / "policies" / "default.yaml").read_text().replace("max_hops: 8", "max_hop: 8"))
    result = run("policy", "lint", str(bad))
    assert result.returncode == 1 and "max_hop" in result.stdout


def test_version_flag_prints_the_package_version() -> None:
    result = run("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"cypher-gateway {__version__}", result


def test_a_missing_managed_password_names_the_state_directory_and_the_fixes(tmp_path: Path) -> None:
    with pytest.MonkeyPatch.context() as env:
        env.setenv("CYPHER_GATEWAY_STATE", str(tmp_path / "elsewhere"))
        with pytest.raises(Neo4jSetupError) as raised:
            connection_info()
    message = str(raised.value)
    assert str(tmp_path / "elsewhere") in message and "cypher-gateway neo4j start" in message
    assert "CYPHER_GATEWAY_STATE" in message and "NEO4J_PASSWORD" in message


def test_check_takes_the_callers_named_lists_and_refuses_bad_ones() -> None:
    assert run("check", "--attribute", "repositories=acme/api", stdin="RETURN 1 AS x").returncode == 0
    for spec, words in [("repo-x=a", "not an identifier"), ("layers=a", "--scope"), ("repositories", "NAME=VALUE")]:
        result = run("check", "--attribute", spec, stdin="RETURN 1 AS x")
        assert result.returncode == 2 and words in result.stderr, (spec, result.stderr)


def test_a_query_that_would_reorder_the_terminal_is_printed_escaped_and_still_parses() -> None:
    # A right-to-left override and a zero-width space in the agent's text: a reviewer reading the
    # output must see them as escapes, and a program reading it must get the same text back.
    query = "MATCH (n) WHERE n.name = 'a\u202eb\u200bc' RETURN n.name AS naïve"
    result = run("check", stdin=query)
    assert result.returncode == 0, result.stderr
    assert "\u202e" not in result.stdout and "\u200b" not in result.stdout
    assert "\\u202e" in result.stdout and "naïve" in result.stdout
    assert "a\u202eb\u200bc" in json.loads(result.stdout)["rewritten"]
