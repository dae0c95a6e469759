"""The sandbox's TLS context, against a real TLS server on loopback (no Neo4j, no Docker).

The sandbox dials 127.0.0.1 (its shim) or a Unix socket, never the server's name: the
context must still send SNI for, and check the certificate against, the real host name.
"""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from sandbox.config import SandboxConfig
from sandbox.tls import client_context, tls_failure
from tests.support.tls import Certificates, make_certificates

SERVER_NAME = "db.example.test"


@dataclass
class TlsServer:
    port: int
    sni: list[str | None] = field(default_factory=list)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("tls"), SERVER_NAME)


@pytest.fixture()
def server(certificates: Certificates) -> Iterator[TlsServer]:
    """A TLS server on 127.0.0.1 whose certificate names only SERVER_NAME; it records each SNI."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificates.server_dir / "public.crt", certificates.server_dir / "private.key")
    listener = socket.create_server(("127.0.0.1", 0))
    found = TlsServer(port=listener.getsockname()[1])
    context.sni_callback = lambda _sock, name, _ctx: found.sni.append(name)

    def serve() -> None:
        while True:
            try:
                raw, _ = listener.accept()
            except OSError:
                return
            try:
                with context.wrap_socket(raw, server_side=True) as tls:
                    tls.sendall(b"hello")
            except (OSError, ssl.SSLError):
                pass  # a client that refused our certificate

    threading.Thread(target=serve, daemon=True).start()
    yield found
    listener.close()


def _handshake(context: ssl.SSLContext | None, port: int) -> bytes:
    assert context is not None
    # What the driver and httpx pass as server_hostname: the dialled address, not the server's name.
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        assert tls.version() in ("TLSv1.2", "TLSv1.3")
        return tls.recv(5)


def test_verify_checks_the_real_name_although_loopback_is_dialled(
    server: TlsServer, certificates: Certificates
) -> None:
    context = client_context("verify", SERVER_NAME, str(certificates.ca_file))
    assert _handshake(context, server.port) == b"hello"
    assert server.sni == [SERVER_NAME]
    # The control: an ordinary context checks the dialled address, and this certificate does not name it.
    plain = ssl.create_default_context(cafile=str(certificates.ca_file))
    with pytest.raises(ssl.SSLCertVerificationError):
        _handshake(plain, server.port)


def test_verify_refuses_another_name_and_another_ca(server: TlsServer, certificates: Certificates) -> None:
    with pytest.raises(ssl.SSLCertVerificationError) as wrong_name:
        _handshake(client_context("verify", "other.example.test", str(certificates.ca_file)), server.port)
    assert "other.example.test" in str(tls_failure(wrong_name.value))
    with pytest.raises(ssl.SSLCertVerificationError) as wrong_ca:
        _handshake(client_context("verify", SERVER_NAME, str(certificates.wrong_ca_file)), server.port)
    assert "certificate was refused" in str(tls_failure(wrong_ca.value))


def test_verify_without_a_ca_file_uses_the_system_trust_store(server: TlsServer) -> None:
    # The test CA is in no system store: refused, never accepted unverified.
    with pytest.raises(ssl.SSLCertVerificationError):
        _handshake(client_context("verify", SERVER_NAME), server.port)


def test_trust_all_accepts_any_certificate_but_still_encrypts(server: TlsServer) -> None:
    assert _handshake(client_context("trust-all", "anything.example.test"), server.port) == b"hello"
    assert server.sni == ["anything.example.test"]


def test_off_means_no_context_and_a_bad_ca_file_raises(tmp_path: Path) -> None:
    assert client_context("off", SERVER_NAME) is None
    (tmp_path / "empty.pem").write_text("not a certificate\n")
    with pytest.raises(ssl.SSLError):
        client_context("verify", SERVER_NAME, str(tmp_path / "empty.pem"))
    with pytest.raises(OSError):
        client_context("verify", SERVER_NAME, str(tmp_path / "missing.pem"))


def test_tls_failure_finds_the_ssl_error_in_a_chain() -> None:
    try:
        try:
            raise ssl.SSLError(1, "wrong version number")
        except ssl.SSLError as inner:
            raise ConnectionError("Couldn't connect") from inner
    except ConnectionError as outer:
        assert "TLS handshake failed" in str(tls_failure(outer))
    assert tls_failure(ConnectionError("refused")) is None


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"transport": "query-api", "query_api_url": "https://db:443", "tls": "off"}, "https exactly when"),
        ({"transport": "query-api", "query_api_url": "http://db:7474", "tls": "verify"}, "https exactly when"),
        ({"neo4j_socket": "/run/cgw/neo4j.sock", "tls": "verify"}, "CGW_TLS_SERVER_NAME"),
        ({"neo4j_uri": "bolt://db:7687", "tls": "trust-all", "tls_ca_file": "/ca.pem"}, "only used with"),
        ({"neo4j_uri": "bolt+s://db:7687"}, "must be bolt://"),
    ],
)
def test_the_sandbox_refuses_a_tls_configuration_that_says_two_things(fields: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SandboxConfig(**fields)  # type: ignore[arg-type]


def test_the_server_name_is_the_configured_one_or_the_urls_host() -> None:
    through_socket = SandboxConfig(neo4j_socket="/s", tls="verify", tls_server_name="db.example.test")
    assert through_socket.server_name() == "db.example.test"
    assert SandboxConfig(neo4j_uri="bolt://h.example.test:7687", tls="verify").server_name() == "h.example.test"
    api = SandboxConfig(transport="query-api", query_api_url="https://q.example.test", tls="verify")
    assert api.server_name() == "q.example.test"


@pytest.mark.parametrize(
    "config",
    [
        SandboxConfig(neo4j_uri="bolt://db.example.test:7687", tls="verify", tls_ca_file="/nonexistent/ca.pem"),
        SandboxConfig(transport="query-api", query_api_url="https://db.example.test", tls="verify",
                      tls_ca_file="/nonexistent/ca.pem"),
    ],
    ids=["bolt", "query-api"],
)  # fmt: skip
def test_a_backend_whose_ca_file_cannot_be_used_connects_nowhere_and_says_so(config: SandboxConfig) -> None:
    from sandbox.bolt import BoltBackend
    from sandbox.query_api import QueryApiBackend
    from tests.support.jobs import make_job

    backend = BoltBackend(config) if config.transport == "bolt" else QueryApiBackend(config)
    backend.warm()
    result = backend.run(make_job("RETURN 1 AS x"))
    backend.close()
    assert not result.ok and result.error is not None and result.error.code == "unavailable"
    assert "the TLS CA file cannot be used" in result.error.message
