"""Principals with named attribute lists wherever one is written down: the type, the tokens file,
``tokens new|list|rotate``. A plain list keeps meaning ``layers``, so no existing file breaks."""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path

import pytest
from pydantic import ValidationError

from gateway.auth import AuthConfigError, TokenTable
from gateway.cli import main
from gateway.domain import Principal, attribute_lists
from gateway.ops.tokens import add_principal, parse_attributes, rotate_principal

GOOD = "cgw_" + "k2Jx9QmV7pLr4TzW8nYb3HsD6fGc1AeU5o"
DIGEST = hashlib.sha256(GOOD.encode()).hexdigest()


def _table(tmp_path: Path, body: str) -> TokenTable:
    path = tmp_path / "tokens.toml"
    path.write_text(f'[[principal]]\nname = "alice"\ntoken_sha256 = "{DIGEST}"\n{body}', encoding="utf-8")
    return TokenTable.load(path)


def _alice(table: TokenTable) -> Principal:
    found = table.authenticate(GOOD)
    assert found is not None
    return found


def test_a_principal_refuses_attribute_names_that_are_not_identifiers_or_reserved() -> None:
    assert Principal(name="a", attributes={"repositories": frozenset({"r1"})}).attribute("repositories") == {"r1"}
    for bad, words in [("repo-names", "not an identifier"), ("__gw_scope", "reserved"), ("", "not an identifier"),
                       ("layers", "is the scope")]:  # fmt: skip
        with pytest.raises(ValidationError, match=words):
            Principal(name="a", attributes={bad: frozenset()})


def test_attribute_lists_read_layers_either_way_but_not_both() -> None:
    assert attribute_lists(["a"], None) == (frozenset({"a"}), {})
    both = attribute_lists(None, {"layers": ["a"], "tenants": ["t"]})
    assert both == (frozenset({"a"}), {"tenants": frozenset({"t"})})
    assert attribute_lists(None, None) == (frozenset(), {})
    with pytest.raises(ValueError, match="layers is given twice"):
        attribute_lists([], {"layers": ["a"]})


def test_a_plain_scope_list_still_means_layers(tmp_path: Path) -> None:
    alice = _alice(_table(tmp_path, 'scope = ["l1"]\n'))
    assert alice.scope == {"l1"} and alice.attributes == {} and alice.attribute("layers") == {"l1"}
    assert alice.attribute("repositories") == frozenset()  # one it lacks is empty, never everything


def test_the_tokens_file_carries_named_lists(tmp_path: Path) -> None:
    alice = _alice(_table(tmp_path, 'scope = ["l1"]\n[principal.attributes]\nrepositories = ["acme/api", "acme/web"]\n'
                                    "tenants = []\n"))  # fmt: skip
    assert alice.scope == {"l1"}
    assert alice.attributes == {"repositories": {"acme/api", "acme/web"}, "tenants": frozenset()}
    # layers may be one of the named lists instead of scope
    assert _alice(_table(tmp_path, '[principal.attributes]\nlayers = ["l2"]\n')).scope == {"l2"}


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ('scope = ["l1"]\n[principal.attributes]\nlayers = ["l2"]\n', "layers is given twice"),
        ('[principal.attributes]\n"repo-names" = ["r"]\n', "not an identifier"),
        ('[principal.attributes]\n__gw_attr_x = ["r"]\n', "reserved"),
        ('[principal.attributes]\nrepositories = "acme/api"\n', "attributes.repositories"),
        ("[principal.attributes]\nrepositories = [1]\n", "attributes.repositories"),
    ],
)
def test_a_bad_attribute_list_names_the_principal_and_the_problem(tmp_path: Path, body: str, words: str) -> None:
    with pytest.raises(AuthConfigError, match="principal 'alice'") as info:
        _table(tmp_path, body)
    assert words in str(info.value) and DIGEST not in str(info.value)


def test_an_entry_without_a_name_is_named_by_its_position(tmp_path: Path) -> None:
    path = tmp_path / "tokens.toml"
    path.write_text(f'[[principal]]\nname = "a"\ntoken = "{GOOD}"\n[[principal]]\ntoken = "{GOOD}x"\n')
    with pytest.raises(AuthConfigError, match="principal entry 2 is invalid") as info:
        TokenTable.load(path)
    assert GOOD not in str(info.value)


def test_attribute_options_are_parsed_or_refused_by_name() -> None:
    assert parse_attributes(["repositories=a/b, c/d", "tenants="]) == {"repositories": ["a/b", "c/d"], "tenants": []}
    for spec, words in [("repositories", "NAME=VALUE"), ("repo-x=a", "not an identifier"), ("layers=a", "--scope"),
                        ("__gwx=a", "reserved")]:  # fmt: skip
        with pytest.raises(AuthConfigError, match=words):
            parse_attributes([spec])
    with pytest.raises(AuthConfigError, match="given twice"):
        parse_attributes(["t=a", "t=b"])


def test_tokens_new_list_rotate_keep_the_named_lists(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "tokens.toml"
    assert main(["tokens", "new", "--principal", "mentis", "--scope", "",
                 "--attribute", "repositories=acme/api,acme/web", "--tokens-file", str(path)]) == 0  # fmt: skip
    token = capsys.readouterr().out.strip()
    add_principal(path, "plain", ["l1"])
    text = path.read_text()
    assert '[principal.attributes]\nrepositories = ["acme/api", "acme/web"]' in text
    assert [p["name"] for p in tomllib.loads(text)["principal"]] == ["mentis", "plain"]
    found = TokenTable.load(path).authenticate(token)
    assert found is not None and found.scope == frozenset()
    assert found.attribute("repositories") == {"acme/api", "acme/web"}

    assert main(["tokens", "list", "--tokens-file", str(path)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "mentis\t(global-only); repositories: acme/api, acme/web\tsha256",
        "plain\tl1\tsha256",
    ]
    rotated = rotate_principal(path, "mentis")
    found = TokenTable.load(path).authenticate(rotated)
    assert found is not None and found.attribute("repositories") == {"acme/api", "acme/web"}
    assert TokenTable.load(path).authenticate(token) is None


def test_tokens_new_refuses_a_bad_attribute_before_writing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "tokens.toml"
    assert main(["tokens", "new", "--principal", "x", "--scope", "a", "--attribute", "layers=b",
                 "--tokens-file", str(path)]) == 1  # fmt: skip
    out = capsys.readouterr()
    assert out.out == "" and "--scope" in out.err and not path.exists()
