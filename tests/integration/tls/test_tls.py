"""TLS is never dropped: from inside the sandbox to a Neo4j that speaks only TLS, through the
shim, the socket and the one-host forwarder, with the certificate checked against the real
host name. Everything runs for real: the TLS-only managed Neo4j (conftest.py), the sandbox
image, the forwarder, the Gateway as ``serve`` composes it.
"""

from __future__ import annotations

import base64
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest

from gateway.compose import Composed, compose
from gateway.config import load_settings
from gateway.connection import Neo4jConnection
from gateway.domain import Principal
from gateway.errors import SandboxUnavailable
from gateway.managed_neo4j import TLS_HOST
from tests.integration.tls.conftest import TlsNeo4j
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH
from tests.support.waiting import returns_within

AGENT = Principal(name="tls-test", scope=frozenset())
BOLT_MAGIC = b"\x60\x60\xb0\x17"


@contextmanager
def gateway_for(
    server: Neo4jConnection, sandbox_image: str, tmp_path: Path, uri: str, **settings: Any
) -> Iterator[Composed]:
    """The Gateway ``serve`` would build for ``uri`` (and ``settings``), with its pool full.

    Under the default policy without its property list: the seeded nodes' keys are the test's own.
    """
    composed = compose(
        load_settings(
            neo4j_uri=uri, neo4j_user=server.user, neo4j_password=server.password, neo4j_database=server.database,
            sandbox_image=sandbox_image, pool_size=1, audit_path=tmp_path / "audit.jsonl",
            policy_file=ALL_PROPERTIES_POLICY_PATH, **settings,
        ),
        audit=False,
    )  # fmt: skip
    try:
        assert composed.runner is not None and composed.runner.wait_ready(90), composed.problems
        yield composed
    finally:
        composed.close()


def _answer(composed: Composed, cypher: str) -> Any:
    """The Gateway's answer, which must come within the job's wall clock: an error never hangs."""
    assert composed.runner is not None
    bound = composed.gateway.policy.tool("analyze").limits.timeout_seconds
    bound += composed.runner.settings.wall_clock_grace_seconds
    return returns_within(lambda: composed.gateway.run("analyze", cypher, {}, AGENT), timeout=bound, what=cypher)


def _unavailable(composed: Composed) -> str:
    with pytest.raises(SandboxUnavailable) as raised:
        _answer(composed, "RETURN 1 AS x")
    assert raised.value.code == "unavailable"
    return raised.value.message


@pytest.mark.parametrize("scheme", ["bolt+s", "neo4j+s"])
def test_bolt_s_and_neo4j_s_answer_verified_against_the_ca_file(
    tls_neo4j: TlsNeo4j, tls_seeded: str, sandbox_image: str, tmp_path: Path, scheme: str
) -> None:
    uri = f"{scheme}://{TLS_HOST}:{tls_neo4j.bolt_port}"
    ca_file = tls_neo4j.certificates.ca_file
    with gateway_for(tls_neo4j.connection, sandbox_image, tmp_path, uri, neo4j_ca_file=ca_file) as composed:
        assert composed.runner is not None and composed.runner.settings.tls == "verify"
        result = _answer(composed, f"MATCH (n:{tls_seeded}) RETURN n.i AS i ORDER BY i")
    assert result.rows == [[1], [2], [3]] and not result.degraded


@pytest.mark.parametrize("scheme", ["bolt+ssc", "neo4j+ssc"])
def test_ssc_accepts_the_servers_certificate_without_a_ca(
    tls_neo4j: TlsNeo4j, sandbox_image: str, tmp_path: Path, scheme: str
) -> None:
    uri = f"{scheme}://{TLS_HOST}:{tls_neo4j.bolt_port}"
    with gateway_for(tls_neo4j.connection, sandbox_image, tmp_path, uri) as composed:
        assert composed.runner is not None and composed.runner.settings.tls == "trust-all"
        assert _answer(composed, "RETURN 1 AS x").rows == [[1]]


def test_a_wrong_ca_is_an_unavailable_error_that_says_certificate(
    tls_neo4j: TlsNeo4j, sandbox_image: str, tmp_path: Path
) -> None:
    uri = f"bolt+s://{TLS_HOST}:{tls_neo4j.bolt_port}"
    wrong = tls_neo4j.certificates.wrong_ca_file
    with gateway_for(tls_neo4j.connection, sandbox_image, tmp_path, uri, neo4j_ca_file=wrong) as composed:
        message = _unavailable(composed)
    assert "TLS" in message and "certificate" in message, message
    # Without a CA file the system trust store decides, and it does not know the test's CA.
    with gateway_for(tls_neo4j.connection, sandbox_image, tmp_path, uri) as composed:
        message = _unavailable(composed)
    assert "TLS" in message and "certificate" in message, message


def test_the_certificate_is_checked_against_the_uris_host_name(
    tls_neo4j: TlsNeo4j, sandbox_image: str, tmp_path: Path
) -> None:
    # The same server and CA, named by an address its certificate (for localhost) does not carry.
    uri = f"bolt+s://127.0.0.1:{tls_neo4j.bolt_port}"
    ca_file = tls_neo4j.certificates.ca_file
    with gateway_for(tls_neo4j.connection, sandbox_image, tmp_path, uri, neo4j_ca_file=ca_file) as composed:
        message = _unavailable(composed)
    assert "certificate" in message and "127.0.0.1" in message, message


def test_a_plaintext_uri_against_a_tls_only_server_is_a_clear_error(
    tls_neo4j: TlsNeo4j, sandbox_image: str, tmp_path: Path
) -> None:
    uri = f"bolt://{TLS_HOST}:{tls_neo4j.bolt_port}"
    with gateway_for(tls_neo4j.connection, sandbox_image, tmp_path, uri) as composed:
        message = _unavailable(composed)
    assert "Bolt handshake" in message and "TLS" in message, message


def test_the_query_api_keeps_tls_with_the_same_ca_setting(
    tls_neo4j: TlsNeo4j, tls_seeded: str, sandbox_image: str, tmp_path: Path
) -> None:
    uri = f"https://{TLS_HOST}:{tls_neo4j.https_port}"
    certificates = tls_neo4j.certificates
    with gateway_for(
        tls_neo4j.connection, sandbox_image, tmp_path, uri, neo4j_transport="query-api",
        neo4j_ca_file=certificates.ca_file,
    ) as composed:  # fmt: skip
        result = _answer(composed, f"MATCH (n:{tls_seeded}) RETURN n.i AS i ORDER BY i")
    assert result.rows == [[1], [2], [3]]
    with gateway_for(
        tls_neo4j.connection, sandbox_image, tmp_path, uri, neo4j_transport="query-api",
        neo4j_ca_file=certificates.wrong_ca_file,
    ) as composed:  # fmt: skip
        message = _unavailable(composed)
    assert "TLS" in message and "certificate" in message, message


# --- on the wire ---------------------------------------------------------------------------------


class Tap:
    """A TCP relay on 127.0.0.1 in front of one local port; keeps what each client sent (1 MB each)."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.sent: list[bytearray] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            record = bytearray()
            self.sent.append(record)
            threading.Thread(target=self._pump, args=(client, upstream, record), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, None), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket, record: bytearray | None) -> None:
        try:
            while data := src.recv(65536):
                if record is not None and len(record) < 1_000_000:
                    record += data
                dst.sendall(data)
        except OSError:
            pass
        for sock in (src, dst):
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.listener.close()


def _is_client_hello(first: bytes) -> bool:
    # TLS record: content type 22 (handshake), version 3.x, 2-byte length; then handshake type 1.
    return len(first) > 5 and first[0] == 0x16 and first[1] == 0x03 and first[5] == 0x01


@pytest.mark.parametrize("transport", ["bolt", "query-api"])
def test_the_forwarder_link_carries_tls_and_never_the_credentials(
    tls_neo4j: TlsNeo4j, sandbox_image: str, tmp_path: Path, transport: str
) -> None:
    server = tls_neo4j.connection
    target = tls_neo4j.bolt_port if transport == "bolt" else tls_neo4j.https_port
    tap = Tap(target)
    scheme = "bolt+s" if transport == "bolt" else "https"
    uri = f"{scheme}://{TLS_HOST}:{tap.port}"
    try:
        with gateway_for(
            server, sandbox_image, tmp_path, uri, neo4j_transport=transport,
            neo4j_ca_file=tls_neo4j.certificates.ca_file,
        ) as composed:  # fmt: skip
            assert _answer(composed, "RETURN 'through the tap' AS x").rows == [["through the tap"]]
    finally:
        tap.close()
    # compose() first checks that the port answers (connect, send nothing, close): not a sandbox link.
    links = [sent for sent in tap.sent if sent]
    assert links, "nothing went through the tap"
    basic = base64.b64encode(f"{server.user}:{server.password.get_secret_value()}".encode())
    for sent in links:
        assert _is_client_hello(bytes(sent[:6])), f"not a TLS ClientHello: {bytes(sent[:8]).hex()}"
        assert not sent.startswith(BOLT_MAGIC)
        assert TLS_HOST.encode() in sent[:512], "the ClientHello carries no SNI for the real host name"
        assert server.password.get_secret_value().encode() not in sent and basic not in sent


def test_the_tap_sees_plaintext_bolt_when_tls_is_off(
    neo4j_connection: Neo4jConnection, sandbox_image: str, tmp_path: Path
) -> None:
    """The control: through the same tap, a plaintext URI shows the Bolt magic and the password."""
    tap = Tap(int(neo4j_connection.uri.rsplit(":", 1)[1]))
    try:
        with gateway_for(neo4j_connection, sandbox_image, tmp_path, f"bolt://{TLS_HOST}:{tap.port}") as composed:
            assert _answer(composed, "RETURN 1 AS x").rows == [[1]]
    finally:
        tap.close()
    links = [sent for sent in tap.sent if sent]
    assert links and all(sent.startswith(BOLT_MAGIC) for sent in links)
    assert any(neo4j_connection.password.get_secret_value().encode() in sent for sent in links)


def test_the_sandbox_image_has_a_system_trust_store(docker_client: Any, sandbox_image: str) -> None:
    """What verify uses without a CA file: Debian's ca-certificates, loaded by the default context."""
    program = "import json, ssl; print(json.dumps(ssl.create_default_context().cert_store_stats()))"
    out = docker_client.containers.run(
        sandbox_image, entrypoint=["python3", "-c", program], network_mode="none", remove=True
    )
    stats = json.loads(out)
    assert stats["x509_ca"] >= 100, stats
