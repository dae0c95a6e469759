"""`cypher-gateway policy init`: a starting policy from a shipped template, the scope property renamed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.cli.policy_init import render_template, scope_properties
from gateway.policy import POLICIES_DIR, PolicyError, load_policy


def init(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway.cli", "policy", "init", *args], capture_output=True, text=True, cwd=cwd,
        timeout=60,
    )  # fmt: skip


def _body(text: str) -> dict[str, Any]:
    document = yaml.safe_load(text)
    assert isinstance(document, dict)
    return document


def test_default_template_is_the_shipped_file_under_a_header_and_loads(tmp_path: Path) -> None:
    result = init("--template", "default", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    shipped = (POLICIES_DIR / "default.yaml").read_text()
    header, _, rest = result.stdout.partition(shipped.splitlines()[0])
    assert rest and result.stdout.endswith(shipped)
    assert "GATEWAY_POLICY_FILE" in header and all(line.startswith("# ") for line in header.splitlines())
    (tmp_path / "my.yaml").write_text(result.stdout)
    assert load_policy(tmp_path / "my.yaml") == load_policy()


def test_default_template_with_a_renamed_scope_property_loads_and_reads_it(tmp_path: Path) -> None:
    result = init("--template", "default", "--scope-property", "layer_ids", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (tmp_path / "my.yaml").write_text(result.stdout)
    policy = load_policy(tmp_path / "my.yaml")
    assert policy.scope.layers_property == "layer_ids"
    assert "`layer_ids: []` is what makes an element global" in result.stdout
    lint = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "policy", "lint", str(tmp_path / "my.yaml")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert lint.returncode == 0 and "ok: policy 'default' is valid" in lint.stdout, lint.stdout + lint.stderr


def test_mindreader_template_renames_layers_everywhere_the_rules_read_it() -> None:
    text = render_template("mindreader", POLICIES_DIR / "mindreader.yaml", "layer_ids")
    scope = _body(text)["scope"]
    assert scope["layers_property"] == "layer_ids"
    assert scope_properties(_body(text)) == {"layer_ids"}
    # The rules themselves are untouched: kinds, filters and the names of other properties.
    original = _body((POLICIES_DIR / "mindreader.yaml").read_text())["scope"]
    assert scope["nodes"] == original["nodes"] and scope["filters"] == original["filters"]
    assert scope["filters"]["Fact"] == [{"rule": {"kind": "time_valid"}, "tools": ["analyze"]}]
    # No line outside a comment still names the old property as a value.
    code = [line.split("#", 1)[0] for line in text.splitlines()]
    assert not any(": layers" in line or "property: layers" in line for line in code)


def test_mentis_template_renames_the_repository_property_in_its_rule_and_its_pin() -> None:
    document = _body(render_template("mentis", POLICIES_DIR / "mentis.yaml", "repo_name"))
    assert document["scope"]["nodes"]["Repository"] == {
        "kind": "equality", "property": "repo_name", "attribute": "repositories",
    }  # fmt: skip
    pins = document["tools"]["recall"]["pins"]
    assert pins["Repository"] == {"property": "repo_name", "parameter": "repository"}
    assert pins["Task"] == {"property": "id", "parameter": "taskId"}  # not the scope property: kept
    # The allow-list shows the renamed key where it showed the old one; the others are kept.
    visible = document["visible_properties"]["nodes"]
    assert visible["Repository"] == ["repo_name"] and visible["Task"] == ["id", "title"]
    assert "embedding" not in visible["Attempt"] and "hidden_properties" not in document


def test_every_shipped_template_has_exactly_one_scope_property() -> None:
    found = {path.stem: scope_properties(_body(path.read_text())) for path in POLICIES_DIR.glob("*.yaml")}
    assert found["default"] == {"layers"} and found["mindreader"] == {"layers"} and found["mentis"] == {"name"}
    assert all(len(props) == 1 for props in found.values()), found


def test_an_unknown_template_is_a_usage_error_naming_it_and_the_known_ones(tmp_path: Path) -> None:
    result = init("--template", "mindraeder", cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert "no template 'mindraeder'" in result.stderr
    assert "default, mentis, mindreader" in result.stderr


@pytest.mark.parametrize("name", ["layer ids", "x}", "1layers", "a.b", "`x`", ""])
def test_a_scope_property_that_is_not_a_plain_name_is_refused_and_nothing_is_written(name: str, tmp_path: Path) -> None:
    result = init("--template", "mindreader", "--scope-property", name, cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert "--scope-property" in result.stderr


def test_a_template_reading_two_scope_properties_is_refused(tmp_path: Path) -> None:
    two = tmp_path / "two.yaml"
    two.write_text(
        "name: two\nscope:\n  layers_property: layers\n  default: {kind: denied}\n  nodes:\n"
        "    A: {kind: membership}\n    B: {kind: equality, property: tenant, attribute: tenants}\n"
    )
    with pytest.raises(PolicyError, match=r"template 'two' reads 2 scope properties \(layers, tenant\)"):
        render_template("two", two, "scope_ids")


def test_a_rename_the_rules_would_not_see_is_refused(tmp_path: Path) -> None:
    # The property is written in a form the rename does not rewrite (with an explicit YAML tag):
    # the check on the result refuses rather than print a policy still reading `layers`.
    odd = tmp_path / "odd.yaml"
    odd.write_text("name: odd\nscope:\n  default: {kind: membership, property: !!str layers}\n")
    with pytest.raises(PolicyError, match="left the rules reading"):
        render_template("odd", odd, "layer_ids")
