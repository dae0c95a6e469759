"""`policy show` finds the shipped policies by name or checkout path from any directory (an installed wheel)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gateway.policy import POLICIES_DIR, load_policy
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH, REPO


def show(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway.cli", "policy", "show", *args], capture_output=True, text=True, cwd=cwd,
        timeout=60,
    )  # fmt: skip


def test_the_checkout_path_names_the_shipped_policy_outside_a_checkout(tmp_path: Path) -> None:
    result = show("policies/default.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Policy 'default'" in result.stdout and "write.clause" in result.stdout
    # Said once, on stderr: the table is what was asked for, the note says where it came from.
    assert result.stderr.count("using the shipped policy 'default'") == 1
    assert str(POLICIES_DIR / "default.yaml") in result.stderr


def test_a_bare_name_names_the_shipped_policy(tmp_path: Path) -> None:
    result = show("default", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Policy 'default'" in result.stdout and result.stderr == ""


def test_a_local_file_wins_over_the_shipped_policy_of_the_same_name(tmp_path: Path) -> None:
    (tmp_path / "policies").mkdir()
    own = (REPO / "policies" / "default.yaml").read_text().replace("name: default", "name: my-own", 1)
    assert "name: my-own" in own
    (tmp_path / "policies" / "default.yaml").write_text(own)
    result = show("policies/default.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Policy 'my-own'" in result.stdout and result.stderr == ""


def test_an_unknown_policy_names_what_was_looked_up(tmp_path: Path) -> None:
    result = show("policies/nope.yaml", cwd=tmp_path)
    assert result.returncode == 2
    assert f"looked for the file {tmp_path / 'policies' / 'nope.yaml'}" in result.stderr
    assert f"a shipped policy named 'nope' in {POLICIES_DIR}" in result.stderr
    assert "shipped policies: default" in result.stderr


def test_a_path_elsewhere_is_never_taken_for_a_shipped_policy(tmp_path: Path) -> None:
    # /elsewhere/default.yaml is a file the user meant, not "the" default: a typo must not pass.
    missing = tmp_path / "elsewhere" / "default.yaml"
    result = show(str(missing), cwd=tmp_path)
    assert result.returncode == 2
    assert f"no policy '{missing}': looked for the file {missing};" in result.stderr
    assert "shipped policy named" not in result.stderr


def test_the_all_properties_test_policy_is_the_shipped_default_but_for_its_property_list() -> None:
    # The guard corpus and the guard/scope/sandbox tests run under it: were it to drift from the
    # shipped default (limits, functions, scope), they would stop testing what ships.
    shipped = load_policy().model_dump(exclude={"name", "description", "visible_properties"})
    test_only = load_policy(ALL_PROPERTIES_POLICY_PATH)
    assert test_only.model_dump(exclude={"name", "description", "visible_properties"}) == shipped
    assert test_only.visible_properties is None and not test_only.hidden_properties.names()
    assert load_policy().visible_properties is not None
