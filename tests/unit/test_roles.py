"""Roles from a group claim: the policy's roles grant tools and attribute values; no role, nothing."""

from __future__ import annotations

from typing import Any, get_args

import pytest
import yaml
from pydantic import ValidationError

from gateway.oauth import GATED_TOOLS, ClaimMapping, TokenRefused, identity
from gateway.policy import DEFAULT_POLICY_PATH, TOOL_NAMES, Policy
from gateway.roles import GrantedTool, Roles

ROLES = {
    "claim": "groups",
    "grants": {
        "payments-readers": {"tools": ["recall"], "attributes": {"repositories": ["acme/payments"]}},
        "infra-analysts": {"tools": ["analyze"], "attributes": {"repositories": ["acme/infra"], "layers": ["infra"]}},
    },
}


def _claims(**more: Any) -> dict[str, Any]:
    return {"iss": "https://idp.example", "sub": "alice", "scope": "recall analyze", **more}


def _mapping() -> ClaimMapping:
    return ClaimMapping(attribute_claims={"repositories": "repos"}, roles=Roles.model_validate(ROLES))


def test_the_tools_a_role_can_grant_are_the_gated_tools() -> None:
    assert get_args(GrantedTool) == GATED_TOOLS == TOOL_NAMES


def test_a_policy_maps_a_group_claim_to_roles() -> None:
    document = yaml.safe_load(DEFAULT_POLICY_PATH.read_text(encoding="utf-8"))
    policy = Policy.model_validate({**document, "roles": ROLES})
    assert policy.roles is not None and policy.roles.grants["payments-readers"].tools == {"recall"}


def test_one_role_grants_its_tools_and_values_and_the_scope_claim_is_not_read() -> None:
    found = identity(_claims(groups=["payments-readers", "some-other-group"]), _mapping())
    assert found.roles == {"payments-readers"}
    assert found.tools == {"recall"}  # the scope claim says recall and analyze: the role says recall
    assert found.principal.attributes == {"repositories": frozenset({"acme/payments"})}
    assert found.principal.scope == frozenset()


def test_roles_are_a_union_added_to_the_claim_mappings() -> None:
    claims = _claims(groups=["payments-readers", "infra-analysts"], repos=["acme/web"], layers=["team-a"])
    found = identity(claims, _mapping())
    assert found.tools == {"recall", "analyze"}
    assert found.principal.attributes == {"repositories": frozenset({"acme/payments", "acme/infra", "acme/web"})}
    assert found.principal.scope == {"infra", "team-a"}


@pytest.mark.parametrize("groups", [None, [], ["/payments-readers"], ["PAYMENTS-READERS"]])
def test_a_token_with_no_role_of_the_policy_is_refused(groups: Any) -> None:
    # Exact names only: a group's full path or another case is not the role.
    with pytest.raises(TokenRefused, match="names none of the policy's roles"):
        identity(_claims(groups=groups), _mapping())


@pytest.mark.parametrize("groups", ["payments-readers", ["payments-readers", 7], ["__gw_x"]])
def test_a_malformed_group_claim_refuses_the_token(groups: Any) -> None:
    if isinstance(groups, str):  # a space-separated string is read as the OAuth scope claim is
        assert identity(_claims(groups=groups), _mapping()).roles == {"payments-readers"}
        return
    with pytest.raises(TokenRefused):
        identity(_claims(groups=groups), _mapping())


@pytest.mark.parametrize(
    "grants",
    [
        {},
        {"r": {"tools": ["check"]}},
        {"r": {"attributes": {"__gw_x": ["a"]}}},
        {"r": {"attributes": {"repositories": ["__gw_x"]}}},
        {"r": {"attributes": {"repositories": [""]}}},
        {"r": {"unknown": 1}},
    ],
)
def test_a_roles_section_that_could_grant_something_unmeant_does_not_load(grants: Any) -> None:
    with pytest.raises(ValidationError):
        Roles.model_validate({"claim": "groups", "grants": grants})
