"""Guessable bearer tokens are named (serve refuses them), and ``tokens new`` makes strong ones.

``serve``'s refusal itself is tested with the real process in
tests/integration/server/test_server_cli.py.
"""

from __future__ import annotations

import hashlib
import re
import stat
from pathlib import Path

import pytest

from gateway.auth import MIN_TOKEN_CHARS, AuthConfigError, TokenEntry, TokenTable
from gateway.cli import main
from gateway.ops.tokens import add_principal, new_token
from tests.support.paths import REPO


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_every_token_hash_printed_in_the_readme_is_refused() -> None:
    digests = set(re.findall(r"\b[0-9a-f]{64}\b", (REPO / "README.md").read_text(encoding="utf-8")))
    assert digests, "the README shows an example token_sha256"
    for digest in digests:
        assert TokenEntry(name="copied", token_sha256=digest).weakness() is not None, digest


@pytest.mark.parametrize("word", ["test", "password", "changeme", "secret"])
def test_the_hash_of_a_well_known_word_is_weak(word: str) -> None:
    assert "well-known" in str(TokenEntry(name="a", token_sha256=_sha(word)).weakness())


def test_short_and_repetitive_tokens_are_weak() -> None:
    assert "shorter" in str(TokenEntry(name="a", token="0123456789abcdefgh").weakness())
    assert "distinct" in str(TokenEntry(name="a", token="abcabcabc" * 4).weakness())
    assert TokenEntry(name="a", token=new_token()).weakness() is None
    # A hashed entry cannot be measured, only compared: an unknown digest passes.
    assert TokenEntry(name="a", token_sha256=_sha(new_token())).weakness() is None


def test_the_table_names_each_weak_principal_and_never_the_token() -> None:
    short = "k3y-0123456789abcdef"  # 20 characters, all different but one
    assert len(short) < MIN_TOKEN_CHARS
    table = TokenTable([
        TokenEntry(name="strong", token=new_token()),
        TokenEntry(name="short", token=short),
        TokenEntry(name="readme", token_sha256=_sha("test")),
    ])  # fmt: skip
    weak = table.weak()
    assert sorted(weak) == ["readme", "short"]
    assert all(short not in reason for reason in weak.values())


def test_tokens_new_prints_the_token_once_and_stores_only_its_hash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "tokens.toml"
    assert main(["tokens", "new", "--principal", "review-agent", "--scope", "repo:acme, task:42",
                 "--tokens-file", str(path)]) == 0  # fmt: skip
    out = capsys.readouterr()
    token = out.out.strip()
    assert len(token) >= MIN_TOKEN_CHARS and token not in out.err
    text = path.read_text()
    assert token not in text and _sha(token) in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    table = TokenTable.load(path)
    principal = table.authenticate(token)
    assert principal is not None and principal.name == "review-agent"
    assert principal.scope == frozenset({"repo:acme", "task:42"})
    assert table.weak() == {}


def test_tokens_new_appends_and_tightens_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "tokens.toml"
    first = new_token()
    path.write_text(f'[[principal]]\nname = "first"\nscope = []\ntoken = "{first}"\n')
    path.chmod(0o644)
    second = add_principal(path, "second", [])
    table = TokenTable.load(path)
    assert len(table) == 2
    assert table.authenticate(first) is not None and table.authenticate(second) is not None
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_tokens_new_refuses_a_duplicate_name_and_leaves_the_file_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "tokens.toml"
    add_principal(path, "agent", ["a"])
    before = path.read_text()
    assert main(["tokens", "new", "--principal", "agent", "--scope", "b", "--tokens-file", str(path)]) == 1
    out = capsys.readouterr()
    assert out.out == "" and "only once" in out.err
    assert path.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tokens.toml"]  # no temporary file left behind


def test_tokens_new_refuses_to_touch_a_broken_file(tmp_path: Path) -> None:
    path = tmp_path / "tokens.toml"
    path.write_text("this is not toml = = \n")
    with pytest.raises(AuthConfigError, match="not valid TOML"):
        add_principal(path, "agent", [])
    assert path.read_text() == "this is not toml = = \n"


def test_tokens_new_needs_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.delenv("GATEWAY_TOKENS_FILE", raising=False)
    monkeypatch.delenv("GATEWAY_CONFIG", raising=False)
    assert main(["tokens", "new", "--principal", "a", "--scope", ""]) == 2
    assert "--tokens-file" in capsys.readouterr().err


def test_tokens_new_for_an_existing_principal_names_it(tmp_path: Path) -> None:
    path = tmp_path / "tokens.toml"
    add_principal(path, "agent", ["a"])
    with pytest.raises(AuthConfigError, match="principal 'agent' is already in"):
        add_principal(path, "agent", ["b"])


def test_tokens_list_rotate_revoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "tokens.toml"
    first = add_principal(path, "agent", ["a", "b"])
    other = add_principal(path, "other", [])
    capsys.readouterr()
    assert main(["tokens", "list", "--tokens-file", str(path)]) == 0
    listed = capsys.readouterr()
    assert listed.out.splitlines() == ["agent\ta, b\tsha256", "other\t(global-only)\tsha256"]
    assert first not in listed.out + listed.err and _sha(first) not in listed.out

    assert main(["tokens", "rotate", "agent", "--tokens-file", str(path)]) == 0
    rotated = capsys.readouterr()
    new = rotated.out.strip()
    assert new.startswith("cgw_") and new not in rotated.err and new != first
    table = TokenTable.load(path)
    assert table.authenticate(first) is None
    found = table.authenticate(new)
    assert found is not None and found.name == "agent" and found.scope == {"a", "b"}
    assert table.authenticate(other) is not None
    assert stat.S_IMODE(path.stat().st_mode) == 0o600

    assert main(["tokens", "revoke", "agent", "--tokens-file", str(path)]) == 0
    assert capsys.readouterr().out == ""
    table = TokenTable.load(path)
    assert table.authenticate(new) is None and table.authenticate(other) is not None

    assert main(["tokens", "rotate", "ghost", "--tokens-file", str(path)]) == 1
    assert "principal 'ghost' is not in" in capsys.readouterr().err
    assert main(["tokens", "revoke", "other", "--tokens-file", str(path)]) == 1
    assert "principal 'other' is the last one" in capsys.readouterr().err
