"""HTTP authentication: bearer tokens mapped to principals, and request size limits.

The tokens file is TOML, one table per principal::

    [[principal]]
    name = "review-agent"
    scope = ["repo:acme", "task:42"]
    token_sha256 = "<hex sha256 of the token>"   # preferred: the file then holds no secret
    # token = "<the token itself>"               # accepted for local setups

    [principal.attributes]                       # optional: further named lists a policy's rules read
    repositories = ["acme/api"]

``scope`` is the ``layers`` list; it may instead be written ``layers = [...]`` under
``[principal.attributes]``, but not both ways. Attribute names are identifiers.

:class:`BearerAuth` is a plain ASGI middleware in front of the whole MCP app: a
request without ``Authorization: Bearer <token>`` or with an unknown token gets
401 before any body is read; a request whose body exceeds the limit gets 413.
Token comparison is constant time over *every* entry (no early exit), so timing
does not tell how many characters or which entry matched.

A guessable token is as good as none: :meth:`TokenTable.weak` names the entries whose
token is short or repetitive, or whose hash is that of a well-known word (the README's
example among them), and ``serve`` refuses to start with one unless told otherwise.
``cypher-gateway tokens new`` makes a strong one.
"""

from __future__ import annotations

import contextvars
import hashlib
import hmac
import json
import logging
import tomllib
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gateway.audit import note_token
from gateway.domain import Principal, attribute_lists, static_principal_name
from gateway.errors import SetupError
from gateway.identity_text import identity_text_problem, printable
from gateway.oauth import GATED_TOOLS, OAuthIdentity, ResourceServer, TokenRefused

log = logging.getLogger(__name__)

# Where the middleware leaves the authenticated principal in the ASGI scope.
PRINCIPAL_SCOPE_KEY = "cypher_gateway.principal"
# With an OAuth token: the gated tools its scopes grant (absent: a tokens-file principal, every tool),
# and the verified identity (issuer, subject).
TOOLS_SCOPE_KEY = "cypher_gateway.tools"
IDENTITY_SCOPE_KEY = "cypher_gateway.oauth_identity"
# Why this layer refused a request, for the refusal's audit line (gateway.http_audit): never the token.
REFUSAL_REASON_KEY = "cypher_gateway.refusal_reason"
# The same principal for handlers that get no request object (static MCP resources);
# tasks spawned while serving the request inherit it.
CURRENT_PRINCIPAL: contextvars.ContextVar[Principal | None] = contextvars.ContextVar(
    "cypher_gateway_principal", default=None
)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


# A token is guessable below this many characters, or with fewer distinct ones (a repeated word).
MIN_TOKEN_CHARS = 24
MIN_DISTINCT_TOKEN_CHARS = 8
# Words people put in a first tokens file, and the README's example (the hash of "test"):
# a hash of any of these is refused like a short token, since a hash table of them is public.
WELL_KNOWN_TOKENS = (
    "test", "testing", "password", "passw0rd", "secret", "token", "changeme", "change-me", "admin", "example",
    "letmein", "qwerty", "12345678", "123456789", "1234567890", "neo4j", "cypher-gateway", "my-token",
)  # fmt: skip
WELL_KNOWN_DIGESTS = frozenset(hashlib.sha256(word.encode("utf-8")).digest() for word in WELL_KNOWN_TOKENS)


class AuthConfigError(SetupError):
    """The tokens file is missing or invalid; the message names the problem (never a token)."""


class TokenEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    # The layers list; None when not written (then attributes.layers, or global-only).
    scope: frozenset[str] | None = None
    attributes: dict[str, frozenset[str]] = Field(default_factory=dict)
    token: str | None = Field(default=None, min_length=16, repr=False)
    token_sha256: str | None = Field(default=None, pattern=r"^[0-9a-fA-F]{64}$", repr=False)

    @field_validator("name")
    @classmethod
    def _identity_name(cls, value: str) -> str:
        return static_principal_name(value)

    @model_validator(mode="after")
    def _one_secret(self) -> TokenEntry:
        if (self.token is None) == (self.token_sha256 is None):
            raise ValueError("give exactly one of token or token_sha256")
        attribute_lists(self.scope, self.attributes)  # raises ValueError naming the problem
        return self

    def principal(self) -> Principal:
        scope, attributes = attribute_lists(self.scope, self.attributes)
        return Principal(name=self.name, source="tokens", scope=scope, attributes=attributes)

    def digest(self) -> bytes:
        if self.token_sha256 is not None:
            return bytes.fromhex(self.token_sha256)
        assert self.token is not None
        return hashlib.sha256(self.token.encode("utf-8")).digest()

    def weakness(self) -> str | None:
        """Why this entry's token could be guessed, or None. Never names the token."""
        if self.digest() in WELL_KNOWN_DIGESTS:
            return "its token is a well-known word (a published example)"
        if self.token is not None:
            if len(self.token) < MIN_TOKEN_CHARS:
                return f"its token is shorter than {MIN_TOKEN_CHARS} characters"
            if len(set(self.token)) < MIN_DISTINCT_TOKEN_CHARS:
                return f"its token has fewer than {MIN_DISTINCT_TOKEN_CHARS} distinct characters"
        return None


class TokenTable:
    """Bearer token -> principal, compared in constant time."""

    def __init__(self, entries: list[TokenEntry]) -> None:
        names = [e.name for e in entries]
        if len(set(names)) != len(names):
            raise AuthConfigError("each principal name may appear only once in the tokens file")
        digests = [e.digest() for e in entries]
        if len(set(digests)) != len(digests):
            raise AuthConfigError("two principals share one token")
        self._entries = [(e.digest(), e.principal()) for e in entries]
        self._weak = {e.name: reason for e in entries if (reason := e.weakness()) is not None}

    @classmethod
    def load(cls, path: Path | str) -> TokenTable:
        file = Path(path)
        try:
            text = file.read_text(encoding="utf-8")
        except OSError as exc:
            raise AuthConfigError(f"cannot read tokens file {file}: {exc.strerror or exc}") from exc
        return cls.parse(text, file)

    @classmethod
    def parse(cls, text: str, file: Path) -> TokenTable:
        """The table a tokens file's ``text`` describes; ``file`` only names it in errors."""
        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise AuthConfigError(f"tokens file {file} is not valid TOML: {exc}") from exc
        items = raw.get("principal", [])
        if set(raw) - {"principal"} or not isinstance(items, list) or not items:
            raise AuthConfigError(f"tokens file {file} must hold one or more [[principal]] tables and nothing else")
        return cls([_entry(item, index, file) for index, item in enumerate(items, start=1)])

    def __len__(self) -> int:
        return len(self._entries)

    def attribute_names(self) -> frozenset[str]:
        """The named attribute lists some principal of the file has (``doctor`` asks)."""
        return frozenset(name for _, principal in self._entries for name in principal.attributes)

    def weak(self) -> dict[str, str]:
        """Principal name -> why its token could be guessed, for every such entry."""
        return dict(self._weak)

    def authenticate(self, token: str) -> Principal | None:
        presented = hashlib.sha256(token.encode("utf-8")).digest()
        found: Principal | None = None
        for digest, principal in self._entries:
            # No break: every entry is compared, whatever matched.
            if hmac.compare_digest(digest, presented):
                found = principal
        return found


def _entry(item: object, index: int, file: Path) -> TokenEntry:
    try:
        return TokenEntry.model_validate(item)
    except ValidationError as exc:
        name = item.get("name") if isinstance(item, dict) else None
        if isinstance(name, str) and identity_text_problem(name) is None:
            who = f"principal {name!r}"
        else:
            # A name that is itself the problem is shown escaped: this message reaches a terminal.
            who = f"principal entry {index}" + (f" (name {printable(name)})" if isinstance(name, str) and name else "")
        # Field names and pydantic's messages only, never the input: the rejected value may be a token.
        problems = sorted(
            {f"{'.'.join(str(p) for p in err['loc']) or '<entry>'}: {err['msg']}" for err in exc.errors()}
        )
        raise AuthConfigError(f"tokens file {file}: {who} is invalid ({'; '.join(problems)})") from exc


class Authenticated(BaseModel):
    """Whom a bearer token names: the principal, and for an OAuth token what the issuer vouched for."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    principal: Principal
    # None: a tokens-file principal (every tool).
    oauth: OAuthIdentity | None = None

    def may_call(self, tool: str) -> bool:
        """The rule the middleware (403) and the tool layer apply: an OAuth token needs a grant for a gated tool."""
        return self.oauth is None or tool not in GATED_TOOLS or tool in self.oauth.tools


def authenticate(token: str, tokens: TokenTable | None, oauth: ResourceServer | None) -> Authenticated:
    """The tokens file first, then the OAuth verifier; :class:`TokenRefused` naming why neither took it.

    The one decision ``serve``'s middleware and ``cypher-gateway auth inspect`` both make.
    """
    principal = tokens.authenticate(token) if tokens is not None else None
    if principal is not None:
        return Authenticated(principal=principal)
    if oauth is None:
        raise TokenRefused("not a token of the tokens file")
    found = oauth.verifier.verify(token)
    return Authenticated(principal=found.principal, oauth=found)


def bearer_token(headers: list[tuple[bytes, bytes]]) -> str | None:
    values = [v for k, v in headers if k.lower() == b"authorization"]
    if len(values) != 1:
        return None  # none, or an ambiguous duplicate
    scheme, _, token = values[0].decode("latin-1").strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    return token


class BearerAuth:
    """ASGI middleware: authenticate (unless no method is configured, the loud opt-out) and cap body size.

    A bearer token is looked up in the tokens file first, then (when ``oauth`` is set) verified as
    an OAuth JWT; both may be on at once. With OAuth on, the Protected Resource Metadata (RFC 9728)
    is served here without authentication, and every 401 names it in ``WWW-Authenticate``.
    """

    def __init__(
        self, app: ASGIApp, tokens: TokenTable | None, *, max_body_bytes: int, oauth: ResourceServer | None = None
    ) -> None:
        self.app = app
        self.tokens = tokens
        self.max_body_bytes = max_body_bytes
        self.oauth = oauth
        self._metadata_paths = oauth.metadata_paths() if oauth is not None else ()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: list[tuple[bytes, bytes]] = list(scope.get("headers", []))
        if self.oauth is not None and scope.get("path") in self._metadata_paths:
            await _respond_json(send, 200, self.oauth.metadata())
            return
        if self.tokens is not None or self.oauth is not None:
            token = bearer_token(headers)
            if token is None:
                await self._unauthorized(send, None, "a valid bearer token is required")
                return
            try:
                if self.oauth is None:
                    found = authenticate(token, self.tokens, None)
                else:  # a key read blocks
                    found = await anyio.to_thread.run_sync(authenticate, token, self.tokens, self.oauth)
            except TokenRefused as exc:
                if self.oauth is None:
                    await self._unauthorized(send, "invalid_token", "a valid bearer token is required")
                    return
                scope[REFUSAL_REASON_KEY] = f"OAuth token refused: {exc.reason}"
                await self._unauthorized(send, "invalid_token", f"the bearer token was refused: {exc.reason}")
                return
            if found.oauth is not None:
                scope[TOOLS_SCOPE_KEY] = found.oauth.tools
                scope[IDENTITY_SCOPE_KEY] = found.oauth
                note_token(found.oauth.subject, found.oauth.issuer,
                           missing_claims=list(found.oauth.missing_claims.values()),
                           claim_warning=found.oauth.claim_warning())  # fmt: skip
            scope[PRINCIPAL_SCOPE_KEY] = found.principal
        else:
            scope[PRINCIPAL_SCOPE_KEY] = Principal(name="anonymous", source="anonymous", scope=frozenset())
        declared = _content_length(headers)
        if declared is not None and declared > self.max_body_bytes:
            await _respond(send, 413, "too_large", f"request body over {self.max_body_bytes} bytes")
            return
        body_receive = self._capped(receive, send)
        granted = scope.get(TOOLS_SCOPE_KEY)
        if granted is not None and scope.get("method") == "POST":
            # An OAuth token's scopes gate tools: a call to a tool it lacks is 403 insufficient_scope
            # (the MCP scope challenge), before the SDK sees it. The body is capped, so buffering is bounded.
            messages = await _buffered(body_receive)
            if any(m["type"] == "http.disconnect" for m in messages):
                return  # the client left, or the cap answered 413 already
            lacking = ungranted_tool(b"".join(m.get("body", b"") for m in messages), granted)
            if lacking is not None:
                scope[REFUSAL_REASON_KEY] = f"the OAuth token lacks the {lacking} scope"
                await self._forbidden(send, lacking)
                return
            body_receive = _replay(messages, receive)
        reset = CURRENT_PRINCIPAL.set(scope[PRINCIPAL_SCOPE_KEY])
        try:
            await self.app(scope, body_receive, send)
        finally:
            CURRENT_PRINCIPAL.reset(reset)

    async def _forbidden(self, send: Send, tool: str) -> None:
        assert self.oauth is not None
        challenge = (f'Bearer realm="cypher-gateway", resource_metadata="{self.oauth.metadata_url()}", '
                     f'error="insufficient_scope", scope="{tool}"').encode("latin-1")  # fmt: skip
        await _respond(send, 403, "insufficient_scope", f"the bearer token lacks the {tool!r} scope",
                       extra=[(b"www-authenticate", challenge)])  # fmt: skip

    async def _unauthorized(self, send: Send, error: str | None, message: str) -> None:
        # RFC 6750 §3: no error code when no token came; RFC 9728 §5.1: where the metadata is.
        params = ['realm="cypher-gateway"']
        if self.oauth is not None:
            params.append(f'resource_metadata="{self.oauth.metadata_url()}"')
        if error is not None:
            params.append(f'error="{error}"')
        challenge = ("Bearer " + ", ".join(params)).encode("latin-1")
        await _respond(send, 401, "unauthorized", message, extra=[(b"www-authenticate", challenge)])

    def _capped(self, receive: Receive, send: Send) -> Receive:
        # A chunked body declares no length: count it as it arrives.
        received = 0
        limit = self.max_body_bytes

        async def capped_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    await _respond(send, 413, "too_large", f"request body over {limit} bytes")
                    return {"type": "http.disconnect"}
            return message

        return capped_receive


def ungranted_tool(body: bytes, granted: frozenset[str]) -> str | None:
    """The gated tool a JSON-RPC body calls without its scope, or None (unparsable bodies are the SDK's to refuse)."""
    try:
        document = json.loads(body)
    except ValueError:
        return None
    for item in document if isinstance(document, list) else [document]:
        if isinstance(item, dict) and item.get("method") == "tools/call" and isinstance(item.get("params"), dict):
            name = item["params"].get("name")
            if name in GATED_TOOLS and name not in granted:
                return str(name)
    return None


async def _buffered(receive: Receive) -> list[Message]:
    messages: list[Message] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request" or not message.get("more_body", False):
            return messages


def _replay(messages: list[Message], receive: Receive) -> Receive:
    pending = list(messages)

    async def replay() -> Message:
        return pending.pop(0) if pending else await receive()

    return replay


def _content_length(headers: list[tuple[bytes, bytes]]) -> int | None:
    for key, value in headers:
        if key.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _respond_json(send: Send, status: int, document: dict[str, Any]) -> None:
    body = json.dumps(document).encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})  # fmt: skip


async def _respond(
    send: Send, status: int, code: str, message: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = json.dumps({"error": code, "message": message}).encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                        *(extra or [])],
        }
    )  # fmt: skip
    await send({"type": "http.response.body", "body": body})
