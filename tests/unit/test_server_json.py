"""``server.json`` (the MCP registry's entry) says what the package is: its version is pyproject's,
every environment variable it names is one the settings read, and its shape is the registry's
(schema 2025-12-11: its required keys and types, written out here because tests fetch nothing and
no copy of the published schema ships with a package this machine can install)."""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # (the mcp SDK requires it; no stubs installed)
import pytest
from pydantic import AliasChoices

from gateway.config import CONFIG_FILE_ENV, GatewaySettings
from tests.support.paths import REPO

SERVER = json.loads((REPO / "server.json").read_text(encoding="utf-8"))
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
SCHEMA_URL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"

# What the registry's schema requires of the parts this file uses, as its 2025-12-11 text says.
_INPUT = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string"},
        "description": {"type": "string"},
        "isRequired": {"type": "boolean"},
        "isSecret": {"type": "boolean"},
        "format": {"enum": ["string", "number", "boolean", "filepath"]},
        "default": {"type": "string"},
        "placeholder": {"type": "string"},
        "value": {"type": "string"},
    },
}
_ARGUMENT = {
    "anyOf": [
        {
            "type": "object",
            "required": ["type"],
            "properties": {"type": {"const": "positional"}, "value": {"type": "string"}},
            "anyOf": [{"required": ["value"]}, {"required": ["valueHint"]}],
        },
        {
            "type": "object",
            "required": ["type", "name"],
            "properties": {"type": {"const": "named"}, "name": {"type": "string"}, "value": {"type": "string"}},
        },
    ]
}
REGISTRY_SHAPE: dict[str, Any] = {
    "type": "object",
    "required": ["name", "description", "version"],
    "properties": {
        "$schema": {"const": SCHEMA_URL},
        "name": {"type": "string", "pattern": r"^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$", "minLength": 3, "maxLength": 200},
        "title": {"type": "string", "minLength": 1, "maxLength": 100},
        "description": {"type": "string", "minLength": 1, "maxLength": 100},
        "version": {"type": "string", "maxLength": 255},
        "packages": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["registryType", "identifier", "transport"],
                "properties": {
                    "registryType": {"enum": ["npm", "pypi", "oci", "nuget", "mcpb"]},
                    "identifier": {"type": "string"},
                    "version": {"type": "string", "minLength": 1, "not": {"const": "latest"}},
                    "runtimeHint": {"type": "string"},
                    "transport": {
                        "anyOf": [
                            {"type": "object", "required": ["type"], "properties": {"type": {"const": "stdio"}}},
                            {
                                "type": "object",
                                "required": ["type", "url"],
                                "properties": {
                                    "type": {"const": "streamable-http"},
                                    "url": {"type": "string", "pattern": r"^https?://[^\s]+$"},
                                },
                            },
                        ]
                    },
                    "packageArguments": {"type": "array", "items": _ARGUMENT},
                    "environmentVariables": {"type": "array", "items": _INPUT},
                },
            },
        },
    },
}


def _settings_env_names() -> set[str]:
    """Every environment variable gateway/config.py reads."""
    names = {CONFIG_FILE_ENV}
    for field, info in GatewaySettings.model_fields.items():
        names.add(f"GATEWAY_{field.upper()}")
        if isinstance(info.validation_alias, AliasChoices):
            names |= {c for c in info.validation_alias.choices if isinstance(c, str) and c.isupper()}
    return names


def _variables(package: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in package.get("environmentVariables", [])}


def test_server_json_has_the_registry_shape() -> None:
    jsonschema.validate(SERVER, REGISTRY_SHAPE)
    assert SERVER["$schema"] == SCHEMA_URL


def test_server_json_fails_the_shape_where_the_registry_would() -> None:
    for broken in (
        {k: v for k, v in SERVER.items() if k != "description"},
        {**SERVER, "description": "x" * 101},
        {**SERVER, "name": "no-namespace"},
        {**SERVER, "packages": [{**SERVER["packages"][0], "version": "latest"}]},
        {**SERVER, "packages": [{**SERVER["packages"][1], "transport": {"type": "streamable-http"}}]},
        {**SERVER, "packages": [{**SERVER["packages"][1], "packageArguments": [{"type": "named", "value": "x"}]}]},
        {**SERVER, "packages": [{**SERVER["packages"][0], "environmentVariables": [{"description": "no name"}]}]},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, REGISTRY_SHAPE)


def test_server_json_names_this_package_at_pyprojects_version() -> None:
    assert SERVER["version"] == PROJECT["version"]
    assert [(p["registryType"], p["identifier"], p["version"]) for p in SERVER["packages"]] == [
        ("pypi", PROJECT["name"], PROJECT["version"])
    ] * 2
    assert {p["transport"]["type"] for p in SERVER["packages"]} == {"stdio", "streamable-http"}
    # PyPI ownership: the registry looks for this line in the package's description (the README).
    assert f"mcp-name: {SERVER['name']}" in (REPO / PROJECT["readme"]).read_text(encoding="utf-8")


def test_every_variable_server_json_names_is_one_the_settings_read() -> None:
    known = _settings_env_names()
    assert {"NEO4J_URI", "NEO4J_PASSWORD", "GATEWAY_POLICY_FILE", "GATEWAY_TOKENS_FILE"} <= known
    for package in SERVER["packages"]:
        named = _variables(package)
        assert sorted(set(named) - known) == [], package["transport"]["type"]
        assert {"NEO4J_URI", "NEO4J_USER", "NEO4J_PASSWORD", "GATEWAY_POLICY_FILE"} <= set(named)
        # A secret is marked so, and nothing else is.
        assert {n for n, v in named.items() if v.get("isSecret")} == {"NEO4J_PASSWORD"}


def test_the_http_package_names_its_auth_and_every_url_variable() -> None:
    http = next(p for p in SERVER["packages"] if p["transport"]["type"] == "streamable-http")
    named = _variables(http)
    assert {"GATEWAY_TOKENS_FILE", "GATEWAY_OAUTH_ISSUER", "GATEWAY_OAUTH_RESOURCE", "GATEWAY_OAUTH_JWKS_URL",
            "GATEWAY_OAUTH_ATTRIBUTE_CLAIMS"} <= set(named)  # fmt: skip
    placeholders = re.findall(r"\{([A-Za-z0-9_]+)\}", http["transport"]["url"])
    assert placeholders and set(placeholders) <= set(named)
    assert named["GATEWAY_HTTP_PORT"]["default"] == str(GatewaySettings.model_fields["http_port"].default)
    assert [a.get("value") for a in http["packageArguments"]] == ["serve", "http"]
