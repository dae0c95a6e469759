"""The Keycloak helper's import directory, with a fake ``kc.sh`` (no Keycloak, no Java): a failed
start leaves no realm file behind, and a start imports only the realm it was given."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from gateway.ops import keycloak, neo4j_local


@pytest.fixture()
def dist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CYPHER_GATEWAY_STATE", str(tmp_path / "state"))
    monkeypatch.setenv(keycloak.PORT_ENV, "1")
    home = keycloak.home()
    (home / "bin").mkdir(parents=True)
    (home / ".complete").write_text(keycloak.VERSION, encoding="utf-8")
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.touch()
    monkeypatch.setattr(neo4j_local, "java_for", lambda line: java)
    return home


def _kc(dist: Path, body: str) -> None:
    script = dist / "bin" / "kc.sh"
    script.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    script.chmod(0o755)


def _realm(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    path.write_text('{"realm": "test"}', encoding="utf-8")
    return path


def test_a_failed_start_leaves_no_realm_file_to_import(
    dist: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _kc(dist, "echo 'bad realm file' >&2; exit 1")
    monkeypatch.setattr(keycloak, "ready", lambda realm: False)
    with pytest.raises(keycloak.KeycloakSetupError, match="exited with 1 before it served realm test"):
        keycloak.start(_realm(tmp_path, "bad-realm.json"), "test")
    import_dir = dist / "data" / "import"
    assert not import_dir.exists() or list(import_dir.iterdir()) == []
    assert "bad realm file" in (dist / "keycloak.log").read_text(encoding="utf-8")


def test_a_start_imports_only_the_realm_it_was_given(
    dist: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import_dir = dist / "data" / "import"
    import_dir.mkdir(parents=True)
    (import_dir / "left-by-an-earlier-start.json").write_text("{}", encoding="utf-8")
    _kc(dist, "exec sleep 60")
    answers = itertools.chain([False, False], itertools.repeat(True))
    monkeypatch.setattr(keycloak, "ready", lambda realm: next(answers))
    try:
        keycloak.start(_realm(tmp_path, "realm.json"), "test")
        assert [p.name for p in import_dir.iterdir()] == ["realm.json"]
    finally:
        keycloak.stop()
