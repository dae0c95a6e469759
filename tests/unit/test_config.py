"""Settings: env vars, the TOML file, precedence, and failing at start with the setting's name."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config import ConfigError, load_settings, neo4j_connection


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for key in list(os.environ):
        if key.startswith(("GATEWAY_", "NEO4J_")):
            monkeypatch.delenv(key)


def test_defaults_bind_loopback_and_use_the_managed_neo4j() -> None:
    settings = load_settings()
    assert settings.http_host == "127.0.0.1"
    assert settings.neo4j_uri is None
    assert settings.tokens_file is None


def test_env_vars_with_gateway_prefix_and_plain_neo4j_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GATEWAY_POOL_SIZE", "3")
    monkeypatch.setenv("GATEWAY_STDIO_SCOPE", "a, b")
    monkeypatch.setenv("NEO4J_URI", "bolt://db.internal:7688")
    monkeypatch.setenv("NEO4J_PASSWORD", "pw-from-env")
    monkeypatch.setenv("NEO4J_DATABASE", "memory")
    settings = load_settings()
    assert settings.pool_size == 3 and settings.stdio_scope == ["a", "b"]
    target = neo4j_connection(settings)
    assert (target.host, target.port, target.user, target.database) == ("db.internal", 7688, "neo4j", "memory")
    assert target.password.get_secret_value() == "pw-from-env"
    # Secrets never print.
    assert "pw-from-env" not in repr(settings) and "pw-from-env" not in repr(target)


def test_toml_file_and_env_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text('http_port = 9100\npool_size = 2\nstdio_scope = ["x"]\nneo4j_uri = "bolt://h:1"\n')
    settings = load_settings(config)
    assert (settings.http_port, settings.pool_size, settings.stdio_scope) == (9100, 2, ["x"])
    monkeypatch.setenv("GATEWAY_HTTP_PORT", "9200")
    assert load_settings(config).http_port == 9200  # the environment wins over the file


@pytest.mark.parametrize(
    ("content", "name"),
    [
        ("http_port = 0\n", "http_port"),
        ("pool_size = 'many'\n", "pool_size"),
        ("neo4j_uri = 'not a uri'\n", "neo4j_uri"),
        ("neo4j_transport = 'carrier-pigeon'\n", "neo4j_transport"),
        ("htpp_port = 80\n", "htpp_port"),  # a misspelt key is an error, not ignored
    ],
)
def test_invalid_setting_fails_with_its_name(tmp_path: Path, content: str, name: str) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text(content)
    with pytest.raises(ConfigError, match=name):
        load_settings(config)


def test_invalid_env_value_fails_with_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GATEWAY_HTTP_MAX_BODY_BYTES", "-1")
    with pytest.raises(ConfigError, match="http_max_body_bytes"):
        load_settings()


def test_missing_config_file_and_missing_password_fail_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(tmp_path / "nope.toml")
    monkeypatch.setenv("NEO4J_URI", "bolt://h:7687")
    with pytest.raises(ConfigError, match="neo4j_password"):
        neo4j_connection(load_settings())


def test_invalid_password_value_is_not_echoed(tmp_path: Path) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text('neo4j_password = ["hunter2-secret"]\n')
    with pytest.raises(ConfigError) as info:
        load_settings(config)
    assert "neo4j_password" in str(info.value) and "hunter2-secret" not in str(info.value)


def test_stdio_attributes_from_env_and_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gateway.compose import stdio_principal

    config = tmp_path / "gateway.toml"
    config.write_text('stdio_scope = ["l1"]\n[stdio_attributes]\nrepositories = ["acme/api"]\ntenants = []\n')
    principal = stdio_principal(load_settings(config))
    assert principal.scope == {"l1"}
    assert principal.attributes == {"repositories": frozenset({"acme/api"}), "tenants": frozenset()}
    monkeypatch.setenv("GATEWAY_STDIO_ATTRIBUTES", "repositories=acme/api, acme/web;tenants=t1")
    assert stdio_principal(load_settings()).attributes == {
        "repositories": frozenset({"acme/api", "acme/web"}), "tenants": frozenset({"t1"})
    }  # fmt: skip
    monkeypatch.setenv("GATEWAY_STDIO_ATTRIBUTES", '{"repositories": ["acme/api"]}')
    assert stdio_principal(load_settings()).attribute("repositories") == {"acme/api"}


def test_oauth_attribute_claims_from_env_and_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text('oauth_attribute_claims = {repositories = "repos"}\n')
    assert load_settings(config).oauth_attribute_claims == {"repositories": "repos"}
    monkeypatch.setenv("GATEWAY_OAUTH_ATTRIBUTE_CLAIMS", "repositories=repos, tenants=tenant_ids")
    assert load_settings().oauth_attribute_claims == {"repositories": "repos", "tenants": "tenant_ids"}


@pytest.mark.parametrize(
    ("variable", "value", "words"),
    [
        ("GATEWAY_OAUTH_ATTRIBUTE_CLAIMS", "__gw_scope=groups", "reserved '__gw'"),
        ("GATEWAY_OAUTH_ATTRIBUTE_CLAIMS", "__gwx=groups", "reserved '__gw'"),
        ("GATEWAY_OAUTH_ATTRIBUTE_CLAIMS", "layers=groups", "oauth_layers_claim"),
        ("GATEWAY_OAUTH_ATTRIBUTE_CLAIMS", "repo-names=repos", "not an identifier"),
        ("GATEWAY_OAUTH_ATTRIBUTE_CLAIMS", "repositories=", "needs a claim name"),
        ("GATEWAY_OAUTH_ATTRIBUTE_CLAIMS", "repos", "not NAME=VALUE"),
        ("GATEWAY_OAUTH_ATTRIBUTE_CLAIMS", "{not json", "not valid JSON"),
        ("GATEWAY_STDIO_ATTRIBUTES", "layers=a", "stdio_scope"),
        ("GATEWAY_STDIO_ATTRIBUTES", "__gw_attr_x=a", "reserved '__gw'"),
        ("GATEWAY_STDIO_ATTRIBUTES", '{"repositories": "acme/api"}', "stdio_attributes"),
    ],
)
def test_bad_attribute_settings_fail_at_load_with_their_name(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, words: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=variable.removeprefix("GATEWAY_").lower()) as info:
        load_settings()
    assert words in str(info.value)
