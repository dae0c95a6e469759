"""Identity strings at the door and printed text on the way out: every source of a principal
refuses a name or attribute value that could forge a line or hide one, the ``oauth:`` prefix
belongs to OAuth subjects alone, and the CLI prints any text read back from the log escaped."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from gateway.auth import AuthConfigError, TokenTable
from gateway.cli import main
from gateway.config import ConfigError, load_settings
from gateway.domain import Principal
from gateway.identity_text import MAX_IDENTITY_CHARS, identity_text_problem, printable, terminal_json
from gateway.mnr.cases import PrincipalSpec
from gateway.oauth import ClaimMapping, TokenRefused, identity

# The subject that forged a summary row and hid the rest of the terminal.
FORGED = "mallory\n     500  oauth:alice\x1b[8m"
GOOD = "cgw_" + "k2Jx9QmV7pLr4TzW8nYb3HsD6fGc1AeU5o"
DIGEST = hashlib.sha256(GOOD.encode()).hexdigest()

REFUSED = {
    "newline": FORGED,
    "escape": "alice\x1b[2J",
    "carriage return": "alice\rbob",
    "tab": "alice\tbob",
    "bidi override": "alice\u202egnp.exe",
    "zero-width space": "ali\u200bce",
    "line separator": "alice\u2028bob",
    "no-break space": "alice\u00a0bob",
    "private use": "alice\ue000",
    "unassigned": "alice\U000e0fff",
    "empty": "",
    "leading space": " alice",
    "too long": "a" * (MAX_IDENTITY_CHARS + 1),
}
ACCEPTED = ["alice", "acme/infra", "Zoë Ünal", "team-a:reader", "u@example.com", "a" * MAX_IDENTITY_CHARS, "日本"]


@pytest.mark.parametrize("value", REFUSED.values(), ids=REFUSED.keys())
def test_the_rule_refuses_control_format_and_odd_space_characters_without_quoting_them(value: str) -> None:
    problem = identity_text_problem(value)
    assert problem is not None
    assert value[1:] not in problem or not value[1:]  # the sentence names a code point, never the text
    assert printable(problem) == problem


@pytest.mark.parametrize("value", ACCEPTED)
def test_the_rule_accepts_names_people_and_issuers_use(value: str) -> None:
    assert identity_text_problem(value) is None
    assert Principal(name=value, scope=frozenset({value}), attributes={"repositories": frozenset({value})})


def test_printable_escapes_everything_the_rule_refuses_and_keeps_the_rest() -> None:
    assert printable(FORGED) == "mallory\\x0a     500  oauth:alice\\x1b[8m"
    assert printable("a\u202eb\u2028c\\d") == "a\\u202eb\\u2028c\\\\d"
    assert printable("Zoë acme/infra") == "Zoë acme/infra"
    for value in REFUSED.values():
        escaped = printable(value)
        assert "\n" not in escaped and "\x1b" not in escaped and "\r" not in escaped
        assert all(char == " " or identity_text_problem(char) is None for char in escaped)


def test_a_principal_cannot_be_made_with_a_bad_name_or_value() -> None:
    for where in ({"name": FORGED}, {"name": "a", "scope": frozenset({FORGED})},
                  {"name": "a", "attributes": {"repositories": frozenset({"acme\u202e"})}}):  # fmt: skip
        with pytest.raises(ValidationError):
            Principal(**where)


# --- each source refuses, naming the entry and the problem ---------------------------------------


def _tokens(tmp_path: Path, name: str, body: str = "") -> TokenTable:
    path = tmp_path / "tokens.toml"
    entry = json.dumps(name)  # a TOML basic string: the JSON escapes are TOML's
    other = f'[[principal]]\nname = {entry}\ntoken_sha256 = "{"ab" * 32}"\n{body}'
    path.write_text(f'[[principal]]\nname = "ok"\ntoken = "{GOOD}"\n{other}', encoding="utf-8")
    return TokenTable.load(path)


def test_a_tokens_file_with_a_bad_name_cannot_load_and_names_the_entry_escaped(tmp_path: Path) -> None:
    with pytest.raises(AuthConfigError) as info:
        _tokens(tmp_path, FORGED)
    message = str(info.value)
    assert "principal entry 2 (name mallory\\x0a     500  oauth:alice\\x1b[8m)" in message
    assert "U+000A" in message and "\n" not in message and "\x1b" not in message
    with pytest.raises(AuthConfigError, match=r"principal 'bob' is invalid \(<entry>: .*U\+202E"):
        _tokens(tmp_path, "bob", '[principal.attributes]\nrepositories = ["acme/\\u202eipa"]\n')
    with pytest.raises(AuthConfigError, match=r"principal 'bob' is invalid \(<entry>: .*U\+001B"):
        _tokens(tmp_path, "bob", 'scope = ["l1\\u001b[8m"]\n')


def test_a_tokens_principal_named_oauth_is_refused(tmp_path: Path) -> None:
    reserved = r"principal 'oauth:alice' is invalid \(name: .*'oauth:'.*reserved for OAuth subjects"
    with pytest.raises(AuthConfigError, match=reserved):
        _tokens(tmp_path, "oauth:alice")
    assert len(_tokens(tmp_path, "alice-oauth")) == 2


def test_the_stdio_settings_refuse_bad_names_values_and_the_oauth_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    for env, value, words in [("GATEWAY_STDIO_PRINCIPAL", FORGED, "U+000A"),
                              ("GATEWAY_STDIO_PRINCIPAL", "oauth:alice", "reserved for OAuth"),
                              ("GATEWAY_STDIO_SCOPE", "l1,l2\x1b[8m", "U+001B"),
                              ("GATEWAY_STDIO_ATTRIBUTES", "repositories=acme/\u202eipa", "U+202E")]:  # fmt: skip
        monkeypatch.setenv(env, value)
        with pytest.raises(ConfigError, match=re.escape(words)) as info:
            load_settings()
        assert "\x1b" not in str(info.value) and "\u202e" not in str(info.value)
        monkeypatch.delenv(env)


def test_an_mnr_case_principal_is_checked_like_the_others() -> None:
    with pytest.raises(ValidationError, match="U\\+000A"):
        PrincipalSpec(name=FORGED)
    with pytest.raises(ValidationError, match="U\\+200B"):
        PrincipalSpec(name="a", attributes={"repositories": ("acme\u200b",)})


@pytest.mark.parametrize(
    ("claims", "words"),
    [
        ({"sub": FORGED}, "claim sub is not a usable name: it holds the character U+000A"),
        ({"sub": "a" * (MAX_IDENTITY_CHARS + 1)}, "claim sub is not a usable name: it is longer than"),
        ({"sub": "alice", "preferred_username": "al\u202eice"}, "claim preferred_username is not a usable name"),
        ({"sub": "ali\u200bce", "preferred_username": "alice"}, "claim sub is not a usable name"),
        ({"sub": "alice", "layers": ["team\x1b[8m"]}, "claim layers holds a reserved or unusable value"),
        ({"sub": "alice", "repos": ["acme/\u2028api"]}, "claim repos holds a reserved or unusable value"),
    ],
)
def test_claims_that_are_not_identity_text_refuse_the_token(claims: dict[str, object], words: str) -> None:
    mapping = ClaimMapping(name_claim="preferred_username" if "preferred_username" in claims else "sub",
                           attribute_claims={"repositories": "repos"})  # fmt: skip
    with pytest.raises(TokenRefused, match=words.replace("+", "\\+")) as info:
        identity({"iss": "https://issuer.example", **claims}, mapping)
    assert printable(info.value.reason) == info.value.reason


def test_the_longest_subject_still_makes_a_principal_with_its_prefix() -> None:
    subject = "s" * (MAX_IDENTITY_CHARS - len("oauth:"))
    found = identity({"iss": "https://issuer.example", "sub": subject}, ClaimMapping())
    assert found.principal.name == "oauth:" + subject and found.principal.source == "oauth"
    with pytest.raises(TokenRefused, match="longer than"):
        identity({"iss": "https://issuer.example", "sub": subject + "s"}, ClaimMapping())


# --- printed output -----------------------------------------------------------------------------


def test_an_old_audit_line_holding_a_forged_name_is_printed_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "audit.jsonl"
    line = {"time": "2026-01-01T10:00:00.000+00:00", "principal": FORGED, "tool": "recall", "decision": "answered",
            "transport": "http", "client": "10.0.0.1\x1b]0;owned\x07", "rule": "x\u202ey",
            "attributes": {"repositories": ["acme/\u2028infra"]}}  # fmt: skip
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    summary = ["audit", "summary"]
    for argv in (summary, [*summary, "--by", "principal"], [*summary, "--by", "client"],
                 [*summary, "--by", "attribute:repositories"], ["audit", "tail"]):  # fmt: skip
        assert main([*argv, "--path", str(path)]) == 0
        out = capsys.readouterr().out
        assert "\x1b" not in out and "\u202e" not in out and "\u2028" not in out and "\x07" not in out, argv
        # The forged "500  oauth:alice" row stays inside the one line that names mallory.
        assert not any(row.strip().startswith("500") for row in out.splitlines()), argv
    assert main(["audit", "summary", "--path", str(path)]) == 0
    assert "  mallory\\x0a     500  oauth:alice\\x1b[8m\n" in capsys.readouterr().out


def test_policy_show_prints_a_policy_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "p.yaml"
    source = Path("policies/default.yaml").read_text(encoding="utf-8")
    policy.write_text(source.replace("name: default", 'name: "default\\e[8m"', 1), encoding="utf-8")
    assert main(["policy", "show", str(policy)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "x1b[8m" in out


def test_terminal_json_escapes_what_could_hide_text_and_reads_back_the_same() -> None:
    data = {"q": "x\u202ey\u200b\ue000\U000e0041é日本", "n": [1, "\x1b[8m"]}
    text = terminal_json(data)
    assert json.loads(text) == data
    assert all(ch.isascii() or ch in "é日本" for ch in text), text
