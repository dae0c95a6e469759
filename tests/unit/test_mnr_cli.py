"""``cypher-gateway mnr run`` usage errors exit 2 before any service is needed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gateway.policy import DEFAULT_POLICY_PATH
from tests.support.env import clean_env
from tests.support.mnr import SUITE_HEADER

HEADER = SUITE_HEADER


def _run_cli(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway.cli", "mnr", "run", *args], capture_output=True, text=True, timeout=240,
        env=env,
    )  # fmt: skip


def test_cli_usage_errors_exit_2(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = _run_cli([str(empty)])
    assert proc.returncode == 2 and "no *.mnr.yaml files" in proc.stderr
    bad = tmp_path / "bad.mnr.yaml"
    bad.write_text(HEADER + "  - id: x\n    query: RETURN 1\n    must_not_retreive: []\n")
    proc = _run_cli([str(bad)])
    assert proc.returncode == 2 and "must_not_retreive" in proc.stderr


# --- the policy in force: chosen as every command chooses it, a mismatch said once ---------------

# A Neo4j nobody listens on: a case that gets past the checks ends in a harness error.
NOWHERE = {"NEO4J_URI": "bolt://127.0.0.1:9", "NEO4J_USER": "neo4j", "NEO4J_PASSWORD": "unused"}
CASES_OF_TWO = "  - id: one\n    query: RETURN 1\n    max_rows: 1\n  - id: two\n    query: RETURN 2\n    max_rows: 1\n"


def _other_policy(tmp_path: Path) -> Path:
    other = tmp_path / "other.yaml"
    other.write_text(DEFAULT_POLICY_PATH.read_text().replace("name: default", "name: other", 1))
    return other


def _suites(tmp_path: Path) -> list[str]:
    paths = []
    for name in ("first", "second"):
        path = tmp_path / f"{name}.mnr.yaml"
        path.write_text(HEADER + CASES_OF_TWO)
        paths.append(str(path))
    return paths


def test_mnr_run_honours_gateway_policy_file_and_says_once_how_to_choose(tmp_path: Path) -> None:
    other = _other_policy(tmp_path)
    proc = _run_cli(_suites(tmp_path), clean_env(GATEWAY_POLICY_FILE=str(other)))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"the policy in force is 'other' ({other}, the settings' policy_file: GATEWAY_POLICY_FILE" in proc.stderr
    assert "first.mnr.yaml assumes 'default' (2 cases)" in proc.stderr
    assert "second.mnr.yaml assumes 'default' (2 cases)" in proc.stderr
    # Once for the run, not once per case (4 cases here); nothing ran, so no table either.
    assert proc.stderr.count("--policy FILE") == 1 and proc.stdout == ""


def test_mnr_run_policy_flag_wins_and_takes_a_shipped_name(tmp_path: Path) -> None:
    other = _other_policy(tmp_path)
    proc = _run_cli([*_suites(tmp_path), "--policy", str(other)], clean_env())
    assert proc.returncode == 2 and f"the policy in force is 'other' ({other}, from --policy)" in proc.stderr
    unknown = _run_cli([*_suites(tmp_path), "--policy", "nope"], clean_env())
    assert unknown.returncode == 2 and "no policy 'nope'" in unknown.stderr and "shipped policies: " in unknown.stderr
    # The environment names another policy; --policy default (a shipped name) overrides it, so the
    # cases go on to the harness (here: a Neo4j nobody listens on).
    env = clean_env(GATEWAY_POLICY_FILE=str(other), **NOWHERE)
    ran = _run_cli([*_suites(tmp_path), "--policy", "default"], env)
    assert ran.returncode == 1 and "the policy in force" not in ran.stderr, ran.stdout + ran.stderr
    assert "4 cases: 0 passed, 0 failed, 4 errors" in ran.stdout and "harness error" in ran.stdout


# --- switching a guarding layer off needs the command line, never only the file ------------------

LOAD_CSV_CASE = (
    "  - id: fetch-a-url\n"
    "    layers: {guard: false, scope_rewrite: false, explain_check: false, result_check: false}\n"
    "    query: \"LOAD CSV FROM 'http://127.0.0.1:9/x.csv' AS row RETURN row\"\n"
    "    max_rows: 0\n"
)


def test_a_file_switching_the_guard_off_is_an_error_naming_file_case_and_flag(tmp_path: Path) -> None:
    suite = tmp_path / "unguarded.mnr.yaml"
    suite.write_text(HEADER + LOAD_CSV_CASE)
    # A Neo4j nobody listens on: the case must be refused before anything is seeded or run.
    env = clean_env(**NOWHERE)
    proc = _run_cli([str(suite)], env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "ERROR   unguarded::fetch-a-url" in proc.stdout
    message = f"{suite}: case 'fetch-a-url' switches off guard and explain_check"
    assert message in proc.stdout and f"--allow-layers-off {suite}::fetch-a-url" in proc.stdout
    assert "harness error" not in proc.stdout  # refused, not a failed attempt to reach Neo4j

    # With the flag the case goes on to the harness (here: the unreachable Neo4j).
    allowed = _run_cli([str(suite), "--allow-layers-off", f"{suite}::fetch-*"], env)
    assert allowed.returncode == 1 and "switches off" not in allowed.stdout and "harness error" in allowed.stdout


def test_mnr_seed_names_an_unknown_fixture_and_the_known_ones_before_reaching_neo4j() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "mnr", "seed", "mentys"], capture_output=True, text=True, timeout=120,
        env=clean_env(**NOWHERE),
    )  # fmt: skip
    assert proc.returncode == 1
    assert "no built-in fixture 'mentys' (known: memory, mentis, mindreader)" in proc.stderr
    assert "cannot reach Neo4j" not in proc.stderr
