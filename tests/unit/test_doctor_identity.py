"""``doctor``'s identity check against a local issuer: each way identity can be set up wrong fails with its fix."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.config import GatewaySettings
from gateway.ops.identity_check import IdentityProblem, check_identity
from gateway.policy import POLICIES_DIR, Policy, load_policy
from gateway.roles import Roles
from tests.support.issuer import OPENID, RESOURCE, LocalIssuer, serving

MENTIS = POLICIES_DIR / "mentis.yaml"  # its rules read the attribute `repositories`


@pytest.fixture()
def issuer() -> Iterator[LocalIssuer]:
    with serving() as local:
        local.publish(OPENID)
        yield local


def _settings(issuer: LocalIssuer, **more: Any) -> GatewaySettings:
    given = {"oauth_issuer": issuer.issuer, "oauth_resource": RESOURCE, "oauth_attribute_claims": {"repositories": "r"}}
    return GatewaySettings(**{**given, **more})


def _problem(settings: GatewaySettings, policy: Policy | None = None) -> IdentityProblem:
    with pytest.raises(IdentityProblem) as caught:
        check_identity(settings, policy or load_policy(MENTIS))
    return caught.value


def test_a_sound_oauth_setup_holds(issuer: LocalIssuer) -> None:
    found = check_identity(_settings(issuer), load_policy(MENTIS))
    assert "publishes its metadata" in found and "1 signing key(s), RS256 allowed" in found
    assert "repositories supplied" in found


def test_a_wrong_jwks_url_fails_with_the_discovered_one_as_the_fix(issuer: LocalIssuer) -> None:
    problem = _problem(_settings(issuer, oauth_jwks_url=f"{issuer.base}/certz"))
    assert "/certz" in problem.detail and "HTTPStatusError" in problem.detail
    assert f"({issuer.base}/certs)" in problem.fix


def test_an_issuer_without_metadata_or_naming_another_fails(issuer: LocalIssuer) -> None:
    issuer.documents.clear()
    assert "publishes no metadata" in _problem(_settings(issuer)).detail
    issuer.publish(OPENID, issuer="https://someone-else.example")
    problem = _problem(_settings(issuer))
    assert "names issuer 'https://someone-else.example'" in problem.detail and "oauth_issuer" in problem.fix


def test_a_key_set_without_a_key_for_the_allowed_algorithms_fails(issuer: LocalIssuer) -> None:
    problem = _problem(_settings(issuer, oauth_algorithms=["ES256"]))
    assert "holds RS256; oauth_algorithms allows ES256" in problem.detail and "oauth_algorithms" in problem.fix


def test_a_resource_the_metadata_publishes_otherwise_fails(issuer: LocalIssuer) -> None:
    # The published document normalises the bare origin with a slash: tokens for one are refused by the other.
    problem = _problem(_settings(issuer, oauth_resource="http://127.0.0.1:1"))
    assert "publishes resource 'http://127.0.0.1:1/'" in problem.detail and "audience mapper" in problem.fix


def test_an_attribute_the_policy_reads_that_no_source_supplies_fails(issuer: LocalIssuer, tmp_path: Path) -> None:
    problem = _problem(GatewaySettings())
    assert problem.detail == "the policy's rules read attribute 'repositories', which no principal source supplies"
    assert "GATEWAY_OAUTH_ATTRIBUTE_CLAIMS=repositories=CLAIM" in problem.fix
    # Static principals supply it: the stdio settings, or an entry of the tokens file.
    assert "repositories supplied" in check_identity(GatewaySettings(stdio_attributes={"repositories": ["a"]}),
                                                     load_policy(MENTIS))  # fmt: skip
    # With OAuth on, OAuth must supply it: a claim mapping or a role.
    problem = _problem(_settings(issuer, oauth_attribute_claims={}, stdio_attributes={"repositories": ["a"]}))
    assert "every OAuth principal would have it empty" in problem.detail
    roles = Roles.model_validate({"grants": {"r": {"attributes": {"repositories": ["acme/api"]}}}})
    policy = load_policy(MENTIS).model_copy(update={"roles": roles})
    assert "repositories supplied" in check_identity(_settings(issuer, oauth_attribute_claims={}), policy)
