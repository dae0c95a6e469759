"""The gateway's settings: one pydantic-settings model, from ``GATEWAY_*`` env vars and/or a TOML file.

Precedence (highest first): constructor arguments, environment, the TOML file,
defaults. ``NEO4J_URI``, ``NEO4J_USER``, ``NEO4J_PASSWORD`` and ``NEO4J_DATABASE``
are accepted as well as their ``GATEWAY_NEO4J_*`` spellings, so an existing Neo4j
is configured the way its own tools are. When no URI is set at all, the managed
local Neo4j (``cypher-gateway neo4j start``) is used.

A missing or invalid setting fails at start with its name (:class:`ConfigError`).
Secrets are ``SecretStr``: printing the settings never shows them.
"""

from __future__ import annotations

import json
import os
import ssl
import stat
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

from gateway import managed_neo4j
from gateway.connection import TLS_BY_SCHEME, Neo4jConnection
from gateway.domain import DEFAULT_ATTRIBUTE, static_principal_name
from gateway.errors import SetupError
from gateway.identity_text import attribute_name_problem, check_identity_text
from gateway.paths import state_dir
from gateway.policy import DEFAULT_POLICY_PATH
from sandbox.wire import SANDBOX_UID, TlsMode

CONFIG_FILE_ENV = "GATEWAY_CONFIG"


class ConfigError(SetupError):
    """A setting is missing or invalid; the message names it."""


def _alias(name: str) -> AliasChoices:
    return AliasChoices(f"GATEWAY_{name}", name, name.lower())


class GatewaySettings(BaseSettings):
    """Everything the server needs to start. Field names are the TOML keys (lower case)."""

    model_config = SettingsConfigDict(
        env_prefix="GATEWAY_", extra="forbid", frozen=True, populate_by_name=True, case_sensitive=False
    )

    # --- Neo4j (None: the managed local server) ---
    neo4j_uri: str | None = Field(default=None, validation_alias=_alias("NEO4J_URI"))
    neo4j_user: str | None = Field(default=None, validation_alias=_alias("NEO4J_USER"))
    neo4j_password: SecretStr | None = Field(default=None, validation_alias=_alias("NEO4J_PASSWORD"))
    neo4j_database: str | None = Field(default=None, validation_alias=_alias("NEO4J_DATABASE"))
    # "bolt" or the HTTPS Query API (hosted instances that expose no Bolt port).
    neo4j_transport: str = "bolt"
    # A PEM CA file the server's certificate must chain to (+s and https URIs); None: the system
    # trust store. Mounted read-only into each sandbox.
    neo4j_ca_file: Path | None = Field(default=None, validation_alias=_alias("NEO4J_CA_FILE"))

    # --- policy, sandbox ---
    policy_file: Path = DEFAULT_POLICY_PATH
    # None: the content-hash tag of the sandbox image for the current sources.
    sandbox_image: str | None = None
    pool_size: Annotated[int, Field(ge=1, le=64)] = 4
    sandbox_max_containers: Annotated[int, Field(ge=1, le=100)] = 16
    sandbox_runtime: Literal["auto", "crun", "runc"] = "auto"
    sandbox_memory_mb: Annotated[int, Field(ge=32)] = 256

    # --- audit ---
    audit_path: Path = Field(default_factory=lambda: state_dir() / "audit.jsonl")
    audit_query_text: bool = True

    # --- stdio principal (the one local agent that launched us) ---
    stdio_principal: str = "stdio"
    stdio_scope: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Its further named lists (``repositories``, ``tenants``, …); the layers list is stdio_scope.
    # Env: GATEWAY_STDIO_ATTRIBUTES="repositories=acme/api,acme/web;tenants=t1" (or JSON).
    stdio_attributes: Annotated[dict[str, list[str]], NoDecode] = Field(default_factory=dict)

    # --- HTTP ---
    http_host: str = "127.0.0.1"
    http_port: Annotated[int, Field(gt=0, lt=65536)] = 8765
    http_path: str = "/mcp"
    # TOML file mapping bearer tokens to principals (see gateway.auth).
    tokens_file: Path | None = None
    http_max_body_bytes: Annotated[int, Field(gt=0)] = 256_000
    # OAuth 2.1 resource server (gateway.oauth): on when oauth_issuer is set; beside tokens_file or alone.
    oauth_issuer: str | None = None  # the exact `iss` of accepted tokens; published as the authorization server
    oauth_resource: str | None = None  # this server's resource URI: the `aud` a token must hold
    # The issuer's key set; None: the jwks_uri its metadata names (RFC 8414 / OpenID discovery).
    oauth_jwks_url: str | None = None
    oauth_algorithms: Annotated[list[str], NoDecode] = Field(default_factory=lambda: ["RS256", "ES256"])
    oauth_leeway_seconds: Annotated[int, Field(ge=0, le=300)] = 30
    oauth_name_claim: str = "sub"
    oauth_layers_claim: str = "layers"
    oauth_scope_claim: str = "scope"
    # Named attribute list -> the claim that fills it (a claim the token lacks: an empty list).
    # Env: GATEWAY_OAUTH_ATTRIBUTE_CLAIMS="repositories=repos,tenants=tenant_ids" (or JSON).
    oauth_attribute_claims: Annotated[dict[str, str], NoDecode] = Field(default_factory=dict)
    oauth_jwks_min_refresh_seconds: Annotated[float, Field(ge=1)] = 30.0
    oauth_jwks_max_age_seconds: Annotated[float, Field(ge=60)] = 3600.0

    @field_validator("neo4j_transport")
    @classmethod
    def _known_transport(cls, value: str) -> str:
        if value not in ("bolt", "query-api"):
            raise ValueError("must be 'bolt' or 'query-api'")
        return value

    @field_validator("neo4j_uri")
    @classmethod
    def _uri_has_host(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in TLS_BY_SCHEME or not parts.hostname:
            raise ValueError(
                "must look like bolt://host:7687 (bolt, bolt+s, bolt+ssc, neo4j, neo4j+s, neo4j+ssc; "
                "or https://host for the Query API)"
            )
        return value

    @field_validator("stdio_scope", "oauth_algorithms", mode="before")
    @classmethod
    def _comma_list(cls, value: Any) -> Any:
        # An env var holds "a,b"; TOML holds a real list.
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("stdio_attributes", mode="before")
    @classmethod
    def _named_lists_text(cls, value: Any) -> Any:
        # An env var holds "name=a,b;other=c" (or JSON); TOML holds a real table.
        if isinstance(value, str):
            return _json_or(value, lambda text: {name: [v.strip() for v in values.split(",") if v.strip()]
                                                 for name, values in _pairs(text, ";")})  # fmt: skip
        return value

    @field_validator("stdio_principal")
    @classmethod
    def _stdio_name(cls, value: str) -> str:
        return static_principal_name(value)

    @field_validator("stdio_scope")
    @classmethod
    def _stdio_layers(cls, value: list[str]) -> list[str]:
        for layer in value:
            check_identity_text(layer, f"a {DEFAULT_ATTRIBUTE} value")
        return value

    @field_validator("stdio_attributes")
    @classmethod
    def _stdio_values(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for name, values in value.items():
            for item in values:
                check_identity_text(item, f"a {name} value")
        return value

    @field_validator("oauth_attribute_claims", mode="before")
    @classmethod
    def _claims_text(cls, value: Any) -> Any:
        if isinstance(value, str):
            return _json_or(value, lambda text: {name: claim.strip() for name, claim in _pairs(text, ",")})
        return value

    @field_validator("stdio_attributes", "oauth_attribute_claims")
    @classmethod
    def _attribute_names(cls, value: dict[str, Any]) -> dict[str, Any]:
        for name in value:
            if name == DEFAULT_ATTRIBUTE:
                raise ValueError(
                    f"{DEFAULT_ATTRIBUTE} has its own setting (stdio_scope, oauth_layers_claim), not a named attribute"
                )
            if (problem := attribute_name_problem(name)) is not None:
                raise ValueError(problem)
        return value

    @field_validator("oauth_attribute_claims")
    @classmethod
    def _claim_names(cls, value: dict[str, str]) -> dict[str, str]:
        if any(not claim for claim in value.values()):
            raise ValueError("every attribute needs a claim name")
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml_file = os.environ.get(CONFIG_FILE_ENV)
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        if toml_file:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=Path(toml_file)))
        return tuple(sources)


def _json_or(text: str, parse: Any) -> Any:
    """A JSON object as it is, else ``parse(text)`` (the compact env-var form)."""
    if text.lstrip().startswith("{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"is not valid JSON ({exc.msg})") from None
    return parse(text)


def _pairs(text: str, separator: str) -> list[tuple[str, str]]:
    """``name=value`` items split by ``separator``; an item without ``=`` is an error naming it."""
    pairs = []
    for item in (part.strip() for part in text.split(separator)):
        if not item:
            continue
        name, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"{item[:80]!r} is not NAME=VALUE")
        pairs.append((name.strip(), value))
    return pairs


def load_settings(config_file: Path | str | None = None, **overrides: Any) -> GatewaySettings:
    """Read the settings (from ``config_file`` when given, else ``$GATEWAY_CONFIG``), or raise ConfigError."""
    previous = os.environ.get(CONFIG_FILE_ENV)
    if config_file is not None:
        path = Path(config_file)
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist")
        os.environ[CONFIG_FILE_ENV] = str(path)
    elif previous and not Path(previous).is_file():
        raise ConfigError(f"{CONFIG_FILE_ENV}={previous} does not exist")
    try:
        return GatewaySettings(**overrides)
    except ValidationError as exc:
        raise ConfigError(_describe(exc)) from exc
    except SettingsError as exc:
        raise ConfigError(str(exc)) from exc
    except ValueError as exc:  # a TOML syntax error
        raise ConfigError(f"config file is not valid TOML: {exc}") from exc
    finally:
        if config_file is not None:
            if previous is None:
                os.environ.pop(CONFIG_FILE_ENV, None)
            else:
                os.environ[CONFIG_FILE_ENV] = previous


def _describe(exc: ValidationError) -> str:
    # Names and messages only: an invalid value may be a secret.
    problems = []
    for err in exc.errors():
        # The first alias of an env-capable field is GATEWAY_<NAME>: report the field's own name.
        name = ".".join(str(p) for p in err["loc"]).removeprefix("GATEWAY_").lower() or "<root>"
        problems.append(f"{name}: {err['msg']}")
    return "invalid gateway settings: " + "; ".join(problems)


def neo4j_connection(settings: GatewaySettings) -> Neo4jConnection:
    """The Neo4j ``settings`` configure, or the managed local one when no URI is set: the one resolver."""
    if settings.neo4j_uri is None:
        try:
            managed = managed_neo4j.connection_info()
        except managed_neo4j.Neo4jSetupError as exc:
            raise ConfigError(f"neo4j_uri is not set and the managed Neo4j is not ready: {exc}") from exc
        uri = managed.http_uri if settings.neo4j_transport == "query-api" and managed.http_uri else managed.uri
        user, password, http_uri = managed.user, managed.password, managed.http_uri
        database = settings.neo4j_database or managed.database
    else:
        if settings.neo4j_password is None:
            raise ConfigError("neo4j_password (NEO4J_PASSWORD) is required when neo4j_uri is set")
        uri, user, password = settings.neo4j_uri, settings.neo4j_user or "neo4j", settings.neo4j_password
        database, http_uri = settings.neo4j_database, None
    scheme = urlsplit(uri).scheme
    tls = TLS_BY_SCHEME.get(scheme)
    if tls is None:
        raise ConfigError(f"the managed Neo4j reports a URI scheme the gateway does not know: {scheme}")
    if (scheme in ("http", "https")) != (settings.neo4j_transport == "query-api"):
        # A scheme read one way by the settings and another by the transport could lose TLS unseen.
        raise ConfigError(
            f"neo4j_uri {scheme}:// does not fit neo4j_transport = {settings.neo4j_transport}: "
            "the Query API takes https:// (or http://), Bolt takes bolt:// or neo4j:// (+s, +ssc)"
        )
    if settings.neo4j_ca_file is not None:
        _check_ca_file(settings.neo4j_ca_file, scheme, tls)
    ca_file = settings.neo4j_ca_file.resolve() if settings.neo4j_ca_file else None  # Docker mounts absolute paths
    return Neo4jConnection(uri=uri, user=user, password=password, database=database, http_uri=http_uri, ca_file=ca_file)


def _check_ca_file(path: Path, scheme: str, tls: TlsMode) -> None:
    """Stop the start unless the CA file can be honoured exactly as configured (never a silent downgrade)."""
    if tls == "off":
        raise ConfigError(
            f"neo4j_ca_file is set but neo4j_uri is {scheme}://, which is not encrypted: "
            "use bolt+s:// or neo4j+s:// (https:// for the Query API), or unset neo4j_ca_file"
        )
    if tls == "trust-all":
        raise ConfigError(
            f"neo4j_ca_file is set but neo4j_uri is {scheme}://, which accepts any certificate: "
            f"use {scheme.replace('+ssc', '+s')}:// to verify against the CA file, or unset neo4j_ca_file"
        )
    try:
        info = path.stat()
        ssl.create_default_context(cafile=str(path))
    except FileNotFoundError:
        raise ConfigError(f"neo4j_ca_file: {path} does not exist") from None
    except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
        raise ConfigError(f"neo4j_ca_file: {path} holds no PEM certificate that TLS can use ({exc})") from None
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(f"neo4j_ca_file: {path} is not a regular file")
    # The sandbox reads it as its own unprivileged user, through a read-only bind mount.
    readable = (
        info.st_mode & stat.S_IROTH
        or (info.st_uid == SANDBOX_UID and info.st_mode & stat.S_IRUSR)
        or (info.st_gid == SANDBOX_UID and info.st_mode & stat.S_IRGRP)
    )
    if not readable:
        raise ConfigError(
            f"neo4j_ca_file: {path} is not readable by the sandbox's user (uid {SANDBOX_UID}): "
            "make it world-readable (a CA certificate is public)"
        )


def connection_settings(connection: Neo4jConnection, **overrides: Any) -> GatewaySettings:
    """Settings aimed at a Neo4j the caller already holds a connection to (harnesses, benchmarks, tests).

    Everything else comes from where ``serve`` reads it (``overrides``, then the environment and the
    TOML file), so a harness composes its Gateway exactly as the server does.
    """
    if connection.ca_file is not None:
        overrides = {"neo4j_ca_file": connection.ca_file, **overrides}
    return load_settings(
        neo4j_uri=connection.uri, neo4j_user=connection.user, neo4j_password=connection.password,
        neo4j_database=connection.database, **overrides,
    )  # fmt: skip
