"""``make demo``: the scripted agent session runs against the real server, sandbox and Neo4j."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gateway.connection import Neo4jConnection
from tests.support.env import clean_env, neo4j_env
from tests.support.paths import REPO
from tests.support.ports import free_port


def _section(report: str, title: str) -> str:
    """One step of the report: from its title line to the blank line that ends it."""
    start = report.index(title)
    return report[start : report.index("\n\n", start)]


def _demo(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway.ops.demo", *args],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip


def test_demo_runs_every_step_as_expected(
    neo4j_connection: Neo4jConnection, sandbox_image: str, tmp_path: Path
) -> None:
    done = _demo(neo4j_env(neo4j_connection), "--workdir", str(tmp_path))
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    out = done.stdout
    assert "FAIL" not in out and "every step behaved as expected" in out
    # The demo's steps, each with the layer that decided.
    assert "check=failed" in out and "OUTDATED" in out  # exact history with its corrections
    assert "never left Neo4j" in out  # the restricted attempt was hidden by the rewrite
    assert "rule `write.clause`" in out and "rule `param.reserved`" in out and "rule `param.required`" in out
    assert "truncation=rows" in out
    narrow, wide = _section(out, "Facts, as agent-a "), _section(out, "Facts, as agent-ab ")
    assert "fact-a-1" in narrow and "fact-b-1" not in narrow  # the same query, two scopes
    assert "fact-a-1" in wide and "fact-b-1" in wide
    assert "fact-r-1" not in narrow + wide and "fact-bad-1" not in narrow + wide
    assert "degraded=['analyze:disabled'] rows=[]" in out and "is not present" in out
    # The graphs users run, each under its own policy (they need the rule kinds of decision 0018).
    recall = _section(out, "Mentis recall of acme/payments PAY-101")
    assert "a1c0ffee-0002" in recall and "no check: unverified" in recall and "b2dead00" not in recall
    assert "a1c0ffee-0004" not in _section(out, "Mentis recall that mentions")
    empty = _section(out, "Mindreader entities with an empty scope")
    assert "London (Place)" in empty and "Paris (Place)" in empty
    assert "Ada Lovelace" not in empty and "Untagged Ghost" not in empty
    audit = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert {(a["tool"], a["decision"]) for a in audit} >= {
        ("recall", "answered"), ("analyze", "rejected"), ("analyze", "degraded"),
    }  # fmt: skip
    assert {a["principal"] for a in audit} == {"agent-a", "agent-ab", "mentis-agent", "nobody"}
    assert neo4j_connection.password.get_secret_value() not in (tmp_path / "audit.jsonl").read_text()


def test_demo_fails_with_exit_2_when_neo4j_is_unreachable(sandbox_image: str, tmp_path: Path) -> None:
    env = clean_env(NEO4J_URI=f"bolt://127.0.0.1:{free_port()}", NEO4J_PASSWORD="unused")
    done = _demo(env, "--workdir", str(tmp_path))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "set-up failed" in done.stderr and "cannot reach Neo4j" in done.stderr
