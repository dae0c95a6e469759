"""OAuth 2.1 resource server: JWT access tokens from one issuer, checked against its JWKS.

A token is accepted only if all of these hold (PyJWT does the cryptography and the claim checks):

- its header names an algorithm of the allow-list (asymmetric only: never ``none``, never HS*,
  whose "secret" would be the issuer's public key) and a ``kid`` the issuer's key set holds;
- its signature verifies with that key;
- ``iss`` is exactly the configured issuer, ``aud`` holds this server's resource URI;
- ``exp`` is in the future and ``nbf``/``iat`` are not (``leeway`` seconds of clock skew).

Keys are cached: the key set is fetched once, again when a token names a ``kid`` the cache lacks
(at most once per ``min_refresh_seconds``, so a flood of made-up ``kid``s cannot make the
gateway hammer the issuer), and again when the cache is older than ``max_age_seconds`` (so a key
the issuer withdrew stops working). Never once per request. Without ``oauth_jwks_url`` the key
set's URL is the ``jwks_uri`` of the issuer's metadata (RFC 8414, then OpenID discovery), read
with each key-set read; a document naming another issuer than the configured one is refused, and
an unreadable one keeps the keys held.

Claims become the principal (:class:`ClaimMapping`): ``sub`` (or the configured claim) is the
name, the configured layers claim the scope (absent: empty scope, global-only, never
everything), each configured attribute claim one named list (absent: empty, so a rule that
reads it shows nothing; present but not a list of strings: the token is refused), and the
token's OAuth scopes say which of the gated tools it may call. A mapped claim the token lacks,
leaving its list empty, is named in :meth:`OAuthIdentity.claim_warning` (a mapping to the wrong
claim name would otherwise look like a user who may see nothing); the token is still accepted.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import jwt
from mcp.server.auth.routes import build_resource_metadata_url
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl, BaseModel, ConfigDict, Field, field_validator

from gateway.domain import DEFAULT_ATTRIBUTE, OAUTH_PREFIX, Principal
from gateway.errors import ErrorCode, GatewayError, SetupError
from gateway.identity_text import (
    MAX_IDENTITY_CHARS,
    RESERVED_PREFIX,
    attribute_name_problem,
    identity_text_problem,
    printable,
)
from gateway.roles import Roles

if TYPE_CHECKING:
    from gateway.config import GatewaySettings

log = logging.getLogger(__name__)

# Asymmetric algorithms only: an HS* token would be verified with the issuer's *public* key as the secret.
ALLOWED_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
# Tools an OAuth token may call only with the OAuth scope of the same name; `check` and `schema`
# run no agent query and need none.
GATED_TOOLS = ("recall", "analyze")
JWKS_TIMEOUT_S = 5.0
# Where an issuer publishes its metadata: RFC 8414 (inserted before the issuer's path), OpenID (appended).
RFC8414_PATH = "/.well-known/oauth-authorization-server"
OPENID_PATH = "/.well-known/openid-configuration"
# The most layers one token may carry (each value is bounded as identity text): a claim is the issuer's data.
MAX_LAYERS = 256
# How many of a token's claim names a warning lists, and how much of each (they are the issuer's data).
MAX_NAMED_CLAIMS = 40
MAX_CLAIM_NAME_CHARS = 64
# The degraded marker of an answer to a token that lacks a mapped claim.
CLAIM_MISSING = "identity:claim-missing"


class OAuthConfigError(SetupError):
    """The OAuth settings are incomplete or unsafe; the message names the setting."""


class InsufficientScope(GatewayError):
    """A tool call the token's OAuth scopes do not grant (the HTTP middleware answers 403 before this)."""

    code: ErrorCode = "rejected"


class TokenRefused(Exception):
    """A bearer token was not accepted; ``reason`` is safe to log (it never holds the token)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ClaimMapping(BaseModel):
    """Which claims become the principal's name, its layers and its tool scopes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name_claim: str = "sub"
    layers_claim: str = "layers"
    scope_claim: str = "scope"
    # Named attribute list -> the claim that fills it (``{"repositories": "repos"}``).
    attribute_claims: dict[str, str] = Field(default_factory=dict)
    # The policy's roles: set, a token's tools come from its roles and a token with none is refused.
    roles: Roles | None = None
    # Whether the policy's rules read layers: only then is a token without the layers claim worth a warning.
    layers_read: bool = False

    @field_validator("attribute_claims")
    @classmethod
    def _attribute_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            problem = attribute_name_problem(name)
            if problem is None and name == DEFAULT_ATTRIBUTE:
                problem = f"{DEFAULT_ATTRIBUTE} is read from layers_claim"
            if problem is not None:
                raise OAuthConfigError(f"oauth_attribute_claims: {problem}")
        return value


class OAuthIdentity(BaseModel):
    """What an accepted token says: the principal, the tools it may call, and where it came from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    principal: Principal
    tools: frozenset[str]
    issuer: str
    subject: str
    # The policy's roles the token holds (empty when the policy maps none).
    roles: frozenset[str] = frozenset()
    # Attribute -> the mapped claim the token lacks, leaving that list empty (names only, never values).
    missing_claims: dict[str, str] = Field(default_factory=dict)
    # The names of the claims the token does carry (sorted, bounded): what the mapping could have meant.
    carried_claims: tuple[str, ...] = ()
    # Those of the missing claims the token does carry, with null or an empty string for a value.
    empty_claims: frozenset[str] = frozenset()

    def claim_warning(self) -> str | None:
        """One sentence naming each mapped claim the token lacks and the claims it carries; None when none is."""
        if not self.missing_claims:
            return None
        missing = "; ".join(
            f"{'a null or empty' if claim in self.empty_claims else 'no'} claim {printable(claim)!r} "
            f"(mapped to attribute {attribute})"
            for attribute, claim in self.missing_claims.items()
        )
        carried = ", ".join(self.carried_claims) or "(none)"
        return (
            f"the token carries {missing}, so rules reading it show nothing; it carries: {carried}. "
            "Map the attribute to a claim the issuer sends (oauth_attribute_claims, oauth_layers_claim) "
            "or have the issuer add the claim."
        )


class KeySetUnreadable(Exception):
    """The issuer's metadata or key set could not be read; ``reason`` names the URL and the defect."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class IssuerMetadata(BaseModel):
    """The fields the gateway reads of an issuer's metadata (RFC 8414 §2, OpenID Connect Discovery §3)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    issuer: str
    jwks_uri: str


def metadata_urls(issuer: str) -> tuple[str, str]:
    """Where ``issuer`` publishes its metadata, in the order read: RFC 8414 §3.1, then OpenID Discovery §4."""
    parts = urlsplit(issuer)
    rfc8414 = urlunsplit((parts.scheme, parts.netloc, RFC8414_PATH + parts.path.rstrip("/"), "", ""))
    return rfc8414, issuer.rstrip("/") + OPENID_PATH


def discover(issuer: str, client: httpx.Client) -> IssuerMetadata:
    """The metadata ``issuer`` publishes about itself, or :class:`KeySetUnreadable`.

    A document that names another issuer is refused, not skipped (RFC 8414 §3.3): whoever serves
    it is not the issuer the tokens must come from, so its key set is not read.
    """
    for url in metadata_urls(issuer):
        try:
            response = client.get(url)
            if response.status_code == 404:
                continue
            response.raise_for_status()
            metadata = IssuerMetadata.model_validate(response.json())
        except (httpx.HTTPError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
            raise KeySetUnreadable(f"cannot read the issuer's metadata at {url}: {type(exc).__name__}") from exc
        if metadata.issuer != issuer:
            raise KeySetUnreadable(f"the metadata at {url} names issuer {metadata.issuer[:200]!r}, not {issuer!r}")
        if (problem := url_problem(metadata.jwks_uri)) is not None:
            raise KeySetUnreadable(f"the metadata at {url} names a jwks_uri that {problem}")
        return metadata
    raise KeySetUnreadable(f"the issuer publishes no metadata at {' or '.join(metadata_urls(issuer))}")


def url_problem(url: str) -> str | None:
    """Why ``url`` may not carry keys or tokens' trust: https only, plain http on loopback alone."""
    parts = urlsplit(url)
    loopback = parts.hostname in ("127.0.0.1", "localhost", "::1")
    if parts.scheme != "https" and not (parts.scheme == "http" and loopback):
        return "is not an https:// URL (http:// only on loopback)"
    return None


class KeySet:
    """The issuer's signing keys by ``kid``, fetched lazily and refreshed only as the module says.

    The key set's URL is ``jwks_url`` when given, else the ``jwks_uri`` of the ``issuer``'s
    metadata, read with the key set and held as long as the keys are (an issuer outage keeps both).
    """

    def __init__(
        self,
        jwks_url: str | None = None,
        *,
        issuer: str | None = None,
        min_refresh_seconds: float = 30.0,
        max_age_seconds: float = 3600.0,
        transport: httpx.BaseTransport | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if jwks_url is None and issuer is None:
            raise OAuthConfigError("the key set needs oauth_jwks_url or an oauth_issuer to discover it from")
        self.jwks_url = jwks_url
        self.issuer = issuer
        self.min_refresh_seconds = min_refresh_seconds
        self.max_age_seconds = max_age_seconds
        self._transport = transport
        self._clock = clock
        self._keys: dict[str, jwt.PyJWK] = {}
        self._fetched_at: float | None = None  # when the keys held were read
        self._asked_at: float | None = None  # when the issuer was last asked, answered or not
        self._lock = threading.Lock()
        self.fetches = 0  # how many times the issuer was asked (tests hold the cache to its promise)

    def key(self, kid: str) -> jwt.PyJWK:
        with self._lock:
            now = self._clock()
            stale = self._fetched_at is None or now - self._fetched_at > self.max_age_seconds
            recently_asked = self._asked_at is not None and now - self._asked_at < self.min_refresh_seconds
            if (stale or kid not in self._keys) and not recently_asked:
                self._refresh(now)
            found = self._keys.get(kid)
        if found is None:
            raise TokenRefused("unknown kid")
        return found

    def read(self) -> tuple[str, list[jwt.PyJWK]]:
        """Ask the issuer now (metadata when discovering, then the key set): its URL and signing keys.

        Raises :class:`KeySetUnreadable`. The cache is not touched: ``doctor`` asks through this.
        """
        with httpx.Client(transport=self._transport, timeout=JWKS_TIMEOUT_S, follow_redirects=False) as client:
            url = self.jwks_url or discover(str(self.issuer), client).jwks_uri
            try:
                response = client.get(url)
                response.raise_for_status()
                keys = jwt.PyJWKSet.from_dict(response.json()).keys
            except (httpx.HTTPError, ValueError, jwt.PyJWTError) as exc:
                raise KeySetUnreadable(f"cannot read the issuer's key set at {url}: {type(exc).__name__}") from exc
        return url, [k for k in keys if k.key_id and k.public_key_use in (None, "sig")]

    def _refresh(self, now: float) -> None:
        self._asked_at = now
        self.fetches += 1
        try:
            _, keys = self.read()
        except KeySetUnreadable as exc:
            # The keys we had stay (an issuer outage does not lock everyone out); asked again
            # only after min_refresh_seconds.
            log.warning("%s", exc.reason)
            return
        self._keys = {k.key_id: k for k in keys if k.key_id}
        self._fetched_at = now


class JwtVerifier:
    """Bearer JWT -> :class:`OAuthIdentity`, or :class:`TokenRefused` naming the defect."""

    def __init__(
        self,
        *,
        issuer: str,
        audience: str,
        keys: KeySet,
        algorithms: tuple[str, ...] = ("RS256", "ES256"),
        leeway_seconds: int = 30,
        mapping: ClaimMapping | None = None,
    ) -> None:
        unsafe = [a for a in algorithms if a not in ALLOWED_ALGORITHMS]
        if unsafe or not algorithms:
            raise OAuthConfigError(
                f"oauth_algorithms: {', '.join(unsafe) or '(none)'} not allowed; use asymmetric ones of "
                + ", ".join(ALLOWED_ALGORITHMS)
            )
        self.issuer, self.audience, self.keys = issuer, audience, keys
        self.algorithms = algorithms
        self.leeway_seconds = leeway_seconds
        self.mapping = mapping or ClaimMapping()

    def verify(self, token: str) -> OAuthIdentity:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise TokenRefused("not a JWT") from exc
        alg, kid = header.get("alg"), header.get("kid")
        if alg not in self.algorithms:
            raise TokenRefused(f"algorithm {str(alg)[:16]!r} not allowed")
        if not isinstance(kid, str) or not kid:
            raise TokenRefused("no kid")
        key = self.keys.key(kid)
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key=key,
                algorithms=[alg],
                audience=self.audience,
                issuer=self.issuer,
                leeway=self.leeway_seconds,
                options={"require": ["exp", "iss", "aud", "sub"], "strict_aud": False},
            )
        except jwt.ExpiredSignatureError as exc:
            raise TokenRefused("expired") from exc
        except jwt.ImmatureSignatureError as exc:
            raise TokenRefused("not yet valid") from exc
        except jwt.InvalidAudienceError as exc:
            raise TokenRefused("wrong audience") from exc
        except jwt.InvalidIssuerError as exc:
            raise TokenRefused("wrong issuer") from exc
        except jwt.InvalidSignatureError as exc:
            raise TokenRefused("bad signature") from exc
        except jwt.MissingRequiredClaimError as exc:
            raise TokenRefused(f"missing claim {exc.claim}") from exc
        except jwt.PyJWTError as exc:
            raise TokenRefused(f"invalid token ({type(exc).__name__})") from exc
        return identity(claims, self.mapping)


def identity(claims: dict[str, Any], mapping: ClaimMapping) -> OAuthIdentity:
    """The principal verified ``claims`` describe. Fails closed: a malformed claim refuses the token."""
    # The subject is audited even when another claim names the principal: both are identity text.
    for claim in dict.fromkeys((mapping.name_claim, "sub")):
        # The name claim leaves room for the prefix in the principal's name.
        limit = MAX_IDENTITY_CHARS - len(OAUTH_PREFIX) if claim == mapping.name_claim else MAX_IDENTITY_CHARS
        if (problem := identity_text_problem(claims.get(claim), limit)) is not None:
            raise TokenRefused(f"claim {claim} is not a usable name: it {problem}")
    name = claims[mapping.name_claim]
    # Null or an empty string says no more than an absent claim: reported alike, never refused.
    read_claims = (mapping.layers_claim, *mapping.attribute_claims.values())
    empty = {claim for claim in read_claims if _empty(claims, claim)}
    absent = {claim for claim in read_claims if claim not in claims} | empty
    layers = _strings(claims.get(mapping.layers_claim), mapping.layers_claim)
    _usable(layers, mapping.layers_claim)
    attributes: dict[str, frozenset[str]] = {}
    for attribute, claim in mapping.attribute_claims.items():
        value = None if claim in empty else claims.get(claim)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            # No string splitting here: "acme/api acme/web" is one value or two only the issuer knows.
            raise TokenRefused(f"claim {claim} ({attribute}) is not a list of strings")
        attributes[attribute] = frozenset(_usable(value or [], claim))
    scopes = _strings(claims.get(mapping.scope_claim), mapping.scope_claim)
    tools = frozenset(t for t in GATED_TOOLS if t in scopes)
    roles: frozenset[str] = frozenset()
    if mapping.roles is not None:
        held = _usable(_strings(claims.get(mapping.roles.claim), mapping.roles.claim), mapping.roles.claim)
        grant = mapping.roles.grant(held)
        if grant is None:
            raise TokenRefused(f"claim {mapping.roles.claim} names none of the policy's roles")
        roles, tools = grant.roles, grant.tools
        layers = sorted(set(layers) | grant.attributes.get(DEFAULT_ATTRIBUTE, frozenset()))
        for attribute, values in grant.attributes.items():
            if attribute != DEFAULT_ATTRIBUTE:
                attributes[attribute] = attributes.get(attribute, frozenset()) | values
    # Reported only when the list stays empty: a role's grant may fill what the token leaves out.
    mapped = {DEFAULT_ATTRIBUTE: mapping.layers_claim} if mapping.layers_read and not layers else {}
    mapped |= {a: c for a, c in mapping.attribute_claims.items() if not attributes.get(a)}
    missing = {attribute: claim for attribute, claim in mapped.items() if claim in absent}
    return OAuthIdentity(
        # "oauth:" keeps a token's subject apart from a tokens-file principal of the same name (a
        # container serves one principal: docs/decisions/0011).
        principal=Principal(
            name=f"{OAUTH_PREFIX}{name}", source="oauth", scope=frozenset(layers), attributes=attributes
        ),
        tools=tools,
        issuer=str(claims["iss"]),
        subject=str(claims["sub"]),
        roles=roles,
        missing_claims=missing,
        carried_claims=_claim_names(claims) if missing else (),
        empty_claims=frozenset(empty & set(missing.values())),
    )


def _empty(claims: dict[str, Any], claim: str) -> bool:
    """Whether the token carries ``claim`` with no value in it: null, or a string of spaces at most."""
    if claim not in claims:
        return False
    value = claims[claim]
    return value is None or (isinstance(value, str) and not value.strip())


def _claim_names(claims: dict[str, Any]) -> tuple[str, ...]:
    """The token's claim names as a warning lists them: sorted, printable, bounded in number and length."""
    names = sorted(printable(name)[:MAX_CLAIM_NAME_CHARS] for name in claims)
    if len(names) > MAX_NAMED_CLAIMS:
        return (*names[:MAX_NAMED_CLAIMS], f"… {len(names) - MAX_NAMED_CLAIMS} more")
    return tuple(names)


def _usable(values: list[str], claim: str) -> list[str]:
    """``values`` of ``claim`` when bounded and none could pass for a gateway parameter; else the token is refused."""
    if len(values) > MAX_LAYERS:
        raise TokenRefused(f"claim {claim} holds over {MAX_LAYERS} values")
    if any(value.startswith(RESERVED_PREFIX) for value in values):
        raise TokenRefused(f"claim {claim} holds a reserved or unusable value")
    for value in values:
        if (problem := identity_text_problem(value)) is not None:
            raise TokenRefused(f"claim {claim} holds a reserved or unusable value: one {problem}")
    return values


def _strings(value: Any, claim: str) -> list[str]:
    """A claim as a list of strings: absent is empty; a space-separated string (OAuth ``scope``) splits."""
    if value is None:
        return []
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise TokenRefused(f"claim {claim} is neither a string nor a list of strings")


class ResourceServer(BaseModel):
    """The OAuth side of the HTTP app: the verifier and what RFC 9728 metadata publishes."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    verifier: JwtVerifier
    resource: str
    authorization_servers: list[str]

    def metadata(self) -> dict[str, Any]:
        """The Protected Resource Metadata document (RFC 9728 §2), in the SDK's model."""
        document = ProtectedResourceMetadata(
            resource=AnyHttpUrl(self.resource),
            authorization_servers=[AnyHttpUrl(a) for a in self.authorization_servers],
            scopes_supported=list(GATED_TOOLS),
            bearer_methods_supported=["header"],
            resource_name="cypher-gateway",
        )
        return document.model_dump(mode="json", exclude_none=True)

    def metadata_paths(self) -> tuple[str, str]:
        """Where the metadata is served: the RFC 9728 §3.1 path for the resource's path, and the bare one."""
        suffixed = urlsplit(str(build_resource_metadata_url(AnyHttpUrl(self.resource)))).path
        return suffixed, WELL_KNOWN_PATH

    def metadata_url(self) -> str:
        return str(build_resource_metadata_url(AnyHttpUrl(self.resource)))


WELL_KNOWN_PATH = "/.well-known/oauth-protected-resource"


def resource_server(
    settings: GatewaySettings,
    *,
    roles: Roles | None = None,
    read_attributes: Collection[str] = (),
    transport: httpx.BaseTransport | None = None,
) -> ResourceServer | None:
    """The resource server the settings describe, None when ``oauth_issuer`` is unset.

    ``roles`` and ``read_attributes`` (the attribute lists the rules read) come from the policy served.
    """
    if settings.oauth_issuer is None:
        return None
    if settings.oauth_resource is None:
        raise OAuthConfigError("oauth_issuer is set: oauth_resource must be set too")
    for name in ("oauth_issuer", "oauth_resource", "oauth_jwks_url"):
        value = getattr(settings, name)
        if value is not None and (problem := url_problem(value)) is not None:
            raise OAuthConfigError(f"{name} {problem}")
    # No oauth_jwks_url: the key set's URL is the jwks_uri of the issuer's own metadata.
    keys = KeySet(
        settings.oauth_jwks_url,
        issuer=settings.oauth_issuer,
        min_refresh_seconds=settings.oauth_jwks_min_refresh_seconds,
        max_age_seconds=settings.oauth_jwks_max_age_seconds,
        transport=transport,
    )
    verifier = JwtVerifier(
        issuer=settings.oauth_issuer,
        audience=settings.oauth_resource,
        keys=keys,
        algorithms=tuple(settings.oauth_algorithms),
        leeway_seconds=settings.oauth_leeway_seconds,
        mapping=ClaimMapping(
            name_claim=settings.oauth_name_claim,
            layers_claim=settings.oauth_layers_claim,
            scope_claim=settings.oauth_scope_claim,
            attribute_claims=settings.oauth_attribute_claims,
            roles=roles,
            layers_read=DEFAULT_ATTRIBUTE in read_attributes,
        ),
    )
    return ResourceServer(verifier=verifier, resource=settings.oauth_resource,
                          authorization_servers=[settings.oauth_issuer])  # fmt: skip
