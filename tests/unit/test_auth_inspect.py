"""``cypher-gateway auth inspect``: a token checked as serve checks it, its grant printed, the token never."""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.cli import main
from gateway.policy import DEFAULT_POLICY_PATH
from tests.support.issuer import OPENID, RESOURCE, LocalIssuer, serving

STATIC = "cgw_" + "k3" * 20


@pytest.fixture()
def local_issuer() -> Iterator[LocalIssuer]:
    with serving() as local:
        yield local


@pytest.fixture()
def configured(local_issuer: LocalIssuer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LocalIssuer:
    local_issuer.publish(OPENID)
    tokens = tmp_path / "tokens.toml"
    digest = hashlib.sha256(STATIC.encode()).hexdigest()
    tokens.write_text(f'[[principal]]\nname = "ci"\nscope = ["team-a"]\ntoken_sha256 = "{digest}"\n', encoding="utf-8")
    for name, value in {"OAUTH_ISSUER": local_issuer.issuer, "OAUTH_RESOURCE": RESOURCE, "TOKENS_FILE": str(tokens),
                        "OAUTH_ATTRIBUTE_CLAIMS": "repositories=repos"}.items():  # fmt: skip
        monkeypatch.setenv(f"GATEWAY_{name}", value)
    return local_issuer


def _inspect(token: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *more: str) -> Any:
    monkeypatch.setattr("sys.stdin", io.StringIO(token + "\n"))
    status = main(["auth", "inspect", *more])
    out, err = capsys.readouterr()
    assert token not in out + err
    return status, out, err


def test_a_good_oauth_token_shows_its_principal_attributes_and_tools(
    configured: LocalIssuer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = _inspect(configured.token(repos=["acme/api"], layers=["team-b"]), monkeypatch, capsys)
    assert status == 0
    assert f"accepted: an OAuth token of {configured.issuer} (subject alice)" in out
    assert "principal   oauth:alice" in out and "repositories acme/api" in out and "layers      team-b" in out
    assert "tools       recall, check, schema" in out  # the scope claim grants recall, not analyze
    status, out, _ = _inspect(configured.token(), monkeypatch, capsys, "--json")
    assert status == 0 and json.loads(out)["attributes"] == {"layers": [], "repositories": []}


def test_a_tokens_file_token_gets_every_tool(
    configured: LocalIssuer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = _inspect(STATIC, monkeypatch, capsys, "--json")
    document = json.loads(out)
    assert status == 0 and document["source"] == "tokens file" and document["principal"] == "ci"
    assert document["tools"] == ["recall", "analyze", "check", "schema"]


@pytest.mark.parametrize(
    ("claims", "reason"),
    [({"aud": "http://elsewhere/mcp"}, "wrong audience"), ({"exp": 1}, "expired"), ({"repos": "acme/api"}, "repos")],
)
def test_a_refused_token_says_why_and_exits_1(
    configured: LocalIssuer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    claims: dict[str, Any], reason: str,
) -> None:  # fmt: skip
    status, out, _ = _inspect(configured.token(**claims), monkeypatch, capsys)
    assert status == 1 and out.startswith("refused: ") and reason in out


def test_the_policy_roles_decide_the_tools(
    configured: LocalIssuer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    document = yaml.safe_load(DEFAULT_POLICY_PATH.read_text(encoding="utf-8"))
    grant = {"tools": ["analyze"], "attributes": {"repositories": ["acme/payments"]}}
    roles = {"claim": "groups", "grants": {"payments-readers": grant}}
    policy = tmp_path / "policy.yaml"
    policy.write_text(yaml.safe_dump({**document, "roles": roles}), encoding="utf-8")
    monkeypatch.setenv("GATEWAY_POLICY_FILE", str(policy))
    status, out, _ = _inspect(configured.token(groups=["payments-readers"]), monkeypatch, capsys, "--json")
    found = json.loads(out)
    assert status == 0 and found["roles"] == ["payments-readers"] and found["tools"] == ["analyze", "check", "schema"]
    assert found["attributes"]["repositories"] == ["acme/payments"]
    status, out, _ = _inspect(configured.token(groups=["marketing"]), monkeypatch, capsys)
    assert status == 1 and "names none of the policy's roles" in out


def test_settings_that_accept_no_token_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = _inspect("whatever-token-text", monkeypatch, capsys)
    assert status == 2 and "neither tokens_file nor oauth_issuer" in err and not out


def test_a_token_lacking_a_mapped_claim_is_accepted_with_the_claim_named(
    configured: LocalIssuer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The settings map repositories to `repos`; this issuer calls the claim `repositories`.
    lacking = configured.token(layers=["team-b"], repositories=["acme/api"])
    status, out, _ = _inspect(lacking, monkeypatch, capsys)
    assert status == 0 and "repositories (none: rules reading it show nothing)" in out
    assert (
        "WARNING     the token carries no claim 'repos' (mapped to attribute repositories), so rules reading it "
        "show nothing; it carries: aud, exp, iat, iss, layers, repositories, scope, sub." in out
    ), out
    assert "acme/api" not in out and "team-b" not in out.split("WARNING")[1]
    status, out, _ = _inspect(lacking, monkeypatch, capsys, "--json")
    assert status == 0 and "no claim 'repos'" in json.loads(out)["warning"]
    status, out, _ = _inspect(configured.token(layers=["team-b"], repos=["acme/api"]), monkeypatch, capsys, "--json")
    assert status == 0 and json.loads(out)["warning"] is None
