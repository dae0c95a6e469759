"""The pytest plugin runs a directory's suites under the policy the ini option ``mnr_policies`` maps
it to, and every other suite under the settings' policy, in one pytest run; a suite in a mapped
directory written for another policy is still refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gateway.connection import Neo4jConnection
from gateway.policy import DEFAULT_POLICY_PATH
from tests.support.env import neo4j_env
from tests.support.mnr import SUITE_HEADER

CASE = "  - id: fine\n    query: MATCH (f:Fact) RETURN f\n    must_not_retrieve: [{uid: fact-b-1}]\n"


def test_mapped_directories_run_under_their_policy(
    tmp_path: Path, neo4j_connection: Neo4jConnection, sandbox_image: str
) -> None:
    other = DEFAULT_POLICY_PATH.read_text(encoding="utf-8").replace("name: default", "name: other", 1)
    (tmp_path / "other.yaml").write_text(other)
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nmarkers =\n    integration: real services\n    neo4j2026: both lines\n"
        "mnr_policies =\n    graph = other.yaml\n"
    )
    (tmp_path / "top.mnr.yaml").write_text(SUITE_HEADER + CASE)
    (tmp_path / "graph").mkdir()
    (tmp_path / "graph" / "mapped.mnr.yaml").write_text(SUITE_HEADER.replace("policy: default", "policy: other") + CASE)
    (tmp_path / "graph" / "stray.mnr.yaml").write_text(SUITE_HEADER + CASE)
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", str(tmp_path)]
    env = neo4j_env(neo4j_connection, GATEWAY_SANDBOX_IMAGE=sandbox_image)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "1 failed, 2 passed" in out, out
    assert "PASSED top.mnr.yaml::fine" in out and "PASSED graph/mapped.mnr.yaml::fine" in out
    assert "stray assumes policy 'default', but the policy in force is 'other'" in out
