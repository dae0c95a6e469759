"""TLS in the settings: every URI scheme keeps its TLS to the sandbox, and what cannot be honoured
stops the start with the setting's name (never a silent downgrade). No Docker, no Neo4j."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gateway.config import ConfigError, load_settings, neo4j_connection
from gateway.ops.neo4j_local import render_conf
from gateway.runner import RunnerSettings, settings_for
from gateway.runner.docker_io import sandbox_spec
from sandbox.wire import CA_FILE_PATH, SandboxEnv
from tests.support.tls import Certificates, make_certificates


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith(("GATEWAY_", "NEO4J_")):
            monkeypatch.delenv(key)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("tls"), "db.example.test")


def _runner(uri: str) -> RunnerSettings:
    return settings_for(load_settings(neo4j_uri=uri, neo4j_password="p", sandbox_image="i"))


@pytest.mark.parametrize(
    ("uri", "tls"),
    [
        ("bolt://db.example.test:7687", "off"),
        ("neo4j://db.example.test:7687", "off"),
        ("bolt+s://db.example.test:7687", "verify"),
        ("neo4j+s://db.example.test", "verify"),
        ("bolt+ssc://db.example.test:7687", "trust-all"),
        ("neo4j+ssc://db.example.test:7687", "trust-all"),
    ],
)
def test_every_bolt_scheme_keeps_its_tls_to_the_sandbox(uri: str, tls: str) -> None:
    runner = _runner(uri)
    assert (runner.tls, runner.neo4j_host, runner.neo4j_port) == (tls, "db.example.test", 7687)
    env = sandbox_spec(runner, "vol", "r", runtime="runc", max_jobs=1)["environment"]
    if tls == "off":
        assert SandboxEnv.TLS not in env
    else:
        assert (env[SandboxEnv.TLS], env[SandboxEnv.TLS_SERVER_NAME]) == (tls, "db.example.test")


def test_the_query_api_over_https_verifies_and_over_http_does_not() -> None:
    hosted = settings_for(
        load_settings(neo4j_uri="https://q.example.test", neo4j_transport="query-api", neo4j_password="p",
                      sandbox_image="i")
    )  # fmt: skip
    assert (hosted.tls, hosted.query_api_url()) == ("verify", "https://q.example.test:443")
    local = settings_for(
        load_settings(neo4j_uri="http://127.0.0.1:7474", neo4j_transport="query-api", neo4j_password="p",
                      sandbox_image="i")
    )  # fmt: skip
    assert (local.tls, local.query_api_url()) == ("off", "http://127.0.0.1:7474")


def test_the_ca_file_is_mounted_read_only_and_named_in_the_environment(certificates: Certificates) -> None:
    runner = settings_for(
        load_settings(neo4j_uri="bolt+s://db.example.test:7687", neo4j_password="p", sandbox_image="i",
                      neo4j_ca_file=certificates.ca_file)
    )  # fmt: skip
    spec = sandbox_spec(runner, "vol", "r", runtime="runc", max_jobs=1)
    assert spec["environment"][SandboxEnv.TLS_CA_FILE] == CA_FILE_PATH
    ca_mounts = [m for m in spec["mounts"] if m["Target"] == CA_FILE_PATH]
    assert ca_mounts == [
        {"Target": CA_FILE_PATH, "Source": str(certificates.ca_file), "Type": "bind", "ReadOnly": True}
    ]
    # Without a CA file: no host mount at all, and the system trust store.
    bare = sandbox_spec(_runner("bolt+s://db.example.test:7687"), "vol", "r", runtime="runc", max_jobs=1)
    assert [m["Type"] for m in bare["mounts"]] == ["volume"] and SandboxEnv.TLS_CA_FILE not in bare["environment"]


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("bolt://db.example.test:7687", "not encrypted"),
        ("neo4j+ssc://db.example.test:7687", "accepts any certificate"),
    ],
)
def test_a_ca_file_that_would_not_be_used_stops_the_start(certificates: Certificates, uri: str, message: str) -> None:
    settings = load_settings(neo4j_uri=uri, neo4j_password="p", neo4j_ca_file=certificates.ca_file)
    with pytest.raises(ConfigError, match=f"neo4j_ca_file.*{message}"):
        neo4j_connection(settings)


def test_a_ca_file_that_cannot_be_honoured_stops_the_start(tmp_path: Path, certificates: Certificates) -> None:
    def target(ca_file: Path) -> None:
        neo4j_connection(load_settings(neo4j_uri="bolt+s://db.example.test", neo4j_password="p", neo4j_ca_file=ca_file))

    with pytest.raises(ConfigError, match=r"neo4j_ca_file: .* does not exist"):
        target(tmp_path / "missing.pem")
    (tmp_path / "junk.pem").write_text("no certificate here\n")
    with pytest.raises(ConfigError, match=r"neo4j_ca_file: .* holds no PEM certificate"):
        target(tmp_path / "junk.pem")
    private = tmp_path / "private-ca.pem"
    private.write_bytes(certificates.ca_file.read_bytes())
    private.chmod(0o600)  # owned by the test's user, who is not the sandbox's
    with pytest.raises(ConfigError, match=r"neo4j_ca_file: .* not readable by the sandbox's user"):
        target(private)
    target(certificates.ca_file)  # a good one passes


def test_a_scheme_the_transport_would_read_otherwise_stops_the_start() -> None:
    with pytest.raises(ConfigError, match="neo4j_uri https:// does not fit neo4j_transport = bolt"):
        neo4j_connection(load_settings(neo4j_uri="https://db.example.test", neo4j_password="p"))
    with pytest.raises(ConfigError, match="neo4j_uri bolt\\+s:// does not fit neo4j_transport = query-api"):
        neo4j_connection(load_settings(neo4j_uri="bolt+s://db", neo4j_password="p", neo4j_transport="query-api"))
    with pytest.raises(ConfigError, match="neo4j_uri"):
        load_settings(neo4j_uri="bolt+tls://db.example.test")


def test_the_managed_server_in_tls_mode_requires_tls_and_serves_only_https(tmp_path: Path) -> None:
    conf = render_conf(listen="127.0.0.1", bolt=7687, http=7474, tls=tmp_path)
    assert "server.bolt.tls_level=REQUIRED" in conf and "server.bolt.tls_level=DISABLED" not in conf
    assert "server.http.enabled=false" in conf and "server.https.enabled=true" in conf
    assert f"dbms.ssl.policy.bolt.base_directory={tmp_path}" in conf
    plain = render_conf(listen="127.0.0.1", bolt=7687, http=7474)
    assert "server.bolt.tls_level=DISABLED" in plain and "dbms.ssl" not in plain


def test_the_start_stops_on_a_ca_file_it_cannot_honour(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """compose() is where serve starts: it raises before any sandbox or Docker call."""
    from gateway.compose import compose

    missing = tmp_path / "missing.pem"
    settings = load_settings(neo4j_uri="bolt+s://db.example.test", neo4j_password="p", neo4j_ca_file=missing)
    with pytest.raises(ConfigError, match=r"neo4j_ca_file: .*missing.pem does not exist"):
        compose(settings, audit=False)
    # The managed server (set up, plaintext): a CA file there is a contradiction, not a degraded start.
    monkeypatch.setenv("CYPHER_GATEWAY_STATE", str(tmp_path / "state"))
    (tmp_path / "state" / "neo4j").mkdir(parents=True)
    (tmp_path / "state" / "neo4j" / "password").write_text("p\n")
    with pytest.raises(ConfigError, match="neo4j_ca_file is set but neo4j_uri is bolt://"):
        compose(load_settings(neo4j_ca_file=missing), audit=False)
