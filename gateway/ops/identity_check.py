"""``doctor``'s identity check: can the principals ``serve`` would accept be who the policy needs?

Always: every attribute list the policy's rules read is supplied by some principal source (the
stdio settings, the tokens file, the OAuth claim mappings or the policy's roles); with OAuth on,
by the OAuth mappings too, or every OAuth principal would get it empty and see nothing through
the rule that reads it. With OAuth on (``oauth_issuer`` set), also: the settings build the
resource server ``serve`` builds; the issuer publishes its metadata (RFC 8414 or OpenID) naming
itself; its key set is readable (``oauth_jwks_url`` or the metadata's ``jwks_uri``, read through
the same :class:`~gateway.oauth.KeySet` ``serve`` reads it with) and holds a signing key for one of
``oauth_algorithms``; and the Protected Resource Metadata publishes ``oauth_resource`` exactly as
configured (the audience tokens must hold).
"""

from __future__ import annotations

import httpx

from gateway.auth import TokenTable
from gateway.config import GatewaySettings
from gateway.domain import DEFAULT_ATTRIBUTE
from gateway.errors import SetupError
from gateway.oauth import JWKS_TIMEOUT_S, KeySetUnreadable, discover, resource_server
from gateway.policy import Policy


class IdentityProblem(Exception):
    """What does not hold, and its fix."""

    def __init__(self, detail: str, fix: str) -> None:
        super().__init__(detail)
        self.detail, self.fix = detail, fix


def check_identity(settings: GatewaySettings, policy: Policy, *, transport: httpx.BaseTransport | None = None) -> str:
    """What holds, or :class:`IdentityProblem` for the first thing that does not."""
    found = [_attributes(settings, policy)]
    if settings.oauth_issuer is not None:
        found.append(_oauth(settings, policy, transport))
    return "; ".join(found)


def _attributes(settings: GatewaySettings, policy: Policy) -> str:
    sources: dict[str, set[str]] = {"the stdio settings": set(settings.stdio_attributes)}
    if settings.tokens_file is not None:
        try:
            sources["the tokens file"] = set(TokenTable.load(settings.tokens_file).attribute_names())
        except SetupError as exc:
            raise IdentityProblem(str(exc), "correct the tokens file (cypher-gateway tokens list reads it)") from exc
    oauth_names = set(settings.oauth_attribute_claims) | (policy.roles.attribute_names() if policy.roles else set())
    if settings.oauth_issuer is not None:
        sources["OAuth"] = oauth_names
    read = [name for name in policy.scope_attributes() if name != DEFAULT_ATTRIBUTE]
    for name in read:
        supplied = [source for source, names in sources.items() if name in names]
        fix = (f"map it from a token claim (oauth_attribute_claims, env GATEWAY_OAUTH_ATTRIBUTE_CLAIMS={name}=CLAIM), "
               "or grant it in the policy's roles; for static principals, give it under [principal.attributes] "
               f"in the tokens file (tokens new --attribute {name}=...) or in stdio_attributes")  # fmt: skip
        if not supplied:
            raise IdentityProblem(
                f"the policy's rules read attribute {name!r}, which no principal source supplies", fix
            )
        if settings.oauth_issuer is not None and "OAuth" not in supplied:
            raise IdentityProblem(
                f"the policy's rules read attribute {name!r}, which no claim mapping or role supplies: every "
                "OAuth principal would have it empty and see nothing through those rules", fix)  # fmt: skip
    if not read:
        return "the policy's rules read no attribute beyond layers"
    return f"attribute(s) {', '.join(read)} supplied"


def _oauth(settings: GatewaySettings, policy: Policy, transport: httpx.BaseTransport | None) -> str:
    issuer = str(settings.oauth_issuer)
    try:
        server = resource_server(
            settings, roles=policy.roles, read_attributes=policy.scope_attributes(), transport=transport
        )
    except SetupError as exc:
        raise IdentityProblem(str(exc), "correct the oauth_* setting named above") from exc
    assert server is not None
    try:
        with httpx.Client(transport=transport, timeout=JWKS_TIMEOUT_S, follow_redirects=False) as client:
            metadata = discover(issuer, client)
    except KeySetUnreadable as exc:
        raise IdentityProblem(exc.reason, "set oauth_issuer to exactly the `iss` of the issuer's tokens (Keycloak: "
                              "https://HOST/realms/REALM) and check this machine reaches it") from exc  # fmt: skip
    keys = server.verifier.keys
    try:
        url, held = keys.read()
    except KeySetUnreadable as exc:
        raise IdentityProblem(exc.reason, f"unset oauth_jwks_url to use the key set the issuer's metadata names "
                              f"({metadata.jwks_uri}), or set it to that URL") from exc  # fmt: skip
    algorithms = server.verifier.algorithms
    usable = sorted({k.algorithm_name for k in held if k.algorithm_name in algorithms})
    if not usable:
        offered = ", ".join(sorted({k.algorithm_name for k in held})) or "no signing key"
        raise IdentityProblem(
            f"the key set at {url} holds {offered}; oauth_algorithms allows {', '.join(algorithms)}",
            "add the issuer's signing algorithm to oauth_algorithms (asymmetric only), or give the issuer a "
            "signing key of an allowed one")  # fmt: skip
    published = server.metadata()["resource"]
    if published != settings.oauth_resource:
        raise IdentityProblem(
            f"the Protected Resource Metadata publishes resource {published!r}, not oauth_resource "
            f"{settings.oauth_resource!r}: clients would ask for tokens this server refuses",
            f"set oauth_resource to {published!r} and name that in the issuer's audience mapper")  # fmt: skip
    return (f"issuer {issuer} publishes its metadata; its key set ({url}) holds {len(held)} signing key(s), "
            f"{', '.join(usable)} allowed; the resource metadata names {published}")  # fmt: skip
