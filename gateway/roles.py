"""Roles: an identity provider's group (or role) claim mapped to named roles, each granting tools and scope.

A policy's ``roles`` section names the claim and, per role, what holding it grants::

    roles:
      claim: groups                    # the token claim listing the caller's groups / roles
      grants:
        payments-readers:
          tools: [recall]
          attributes:
            repositories: [acme/payments]
        infra-analysts:
          tools: [recall, analyze]
          attributes:
            layers: [infra]

A token's roles are the claim's values that the policy names (exact strings: Keycloak's group
mapper must not add the group's full path). What they grant is the union over those roles, added
to what the other claim mappings give. With roles configured the tools come from the roles
alone (the OAuth ``scope`` claim is not read), and a token naming no role of the policy is
refused: no role, nothing granted (fail closed).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gateway.identity_text import RESERVED_PREFIX, attribute_name_problem

# The tools a role can grant: the ones an OAuth token needs a grant for (gateway.oauth.GATED_TOOLS;
# tests/unit/test_roles.py holds the two equal). `check` and `schema` run no agent query.
GrantedTool = Literal["recall", "analyze"]
# A role's values are the operator's, but they reach the scope rewrite as a token's would: the same bounds.
MAX_VALUE_CHARS = 256


class Role(BaseModel):
    """What holding one role grants."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tools: frozenset[GrantedTool] = frozenset()
    # Attribute lists by name (``layers`` among them) -> the values this role adds.
    attributes: dict[str, frozenset[str]] = Field(default_factory=dict)

    @field_validator("attributes")
    @classmethod
    def _usable(cls, value: dict[str, frozenset[str]]) -> dict[str, frozenset[str]]:
        for name, values in value.items():
            if (problem := attribute_name_problem(name)) is not None:
                raise ValueError(problem)
            if any(not v or v.startswith(RESERVED_PREFIX) or len(v) > MAX_VALUE_CHARS for v in values):
                raise ValueError(f"attribute {name!r} holds an empty, overlong or reserved ({RESERVED_PREFIX}…) value")
        return value


class Grant(BaseModel):
    """The union of what a token's roles grant."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    roles: frozenset[str]
    tools: frozenset[str]
    attributes: dict[str, frozenset[str]]


class Roles(BaseModel):
    """The policy's ``roles`` section: which claim names the roles, and what each grants."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    claim: Annotated[str, Field(min_length=1)] = "groups"
    grants: Annotated[dict[str, Role], Field(min_length=1)]

    def grant(self, held: list[str]) -> Grant | None:
        """What the roles among ``held`` (the claim's values) grant; None when it names none of them."""
        roles = frozenset(name for name in held if name in self.grants)
        if not roles:
            return None
        attributes: dict[str, frozenset[str]] = {}
        for name in sorted(roles):
            for attribute, values in self.grants[name].attributes.items():
                attributes[attribute] = attributes.get(attribute, frozenset()) | values
        tools = frozenset(tool for name in roles for tool in self.grants[name].tools)
        return Grant(roles=roles, tools=tools, attributes=attributes)

    def attribute_names(self) -> frozenset[str]:
        """Every attribute list some role supplies (doctor: does a principal source supply each one the rules read)."""
        return frozenset(name for role in self.grants.values() for name in role.attributes)
