"""TLS to Neo4j, end to end from inside the sandbox, for both transports.

The sandbox never dials Neo4j's real address: its bytes go through the in-sandbox
shim (Bolt) or straight to the forwarder's Unix socket (Query API). So the
address a connection is made to (``127.0.0.1``, a socket path) is not the name
the server's certificate carries. :func:`client_context` returns a context that
always sends SNI for, and checks the certificate against, the configured server
name, whatever address the socket was dialled at: the forwarder only ever relays
ciphertext, and a certificate for another name is refused.

Modes (``sandbox.wire.TlsMode``): ``off`` — plaintext; ``verify`` — the
certificate must chain to the CA file when one is mounted, else to the system
trust store (Debian's ca-certificates in the image), and must name the server;
``trust-all`` — any certificate is accepted (the driver's ``+ssc`` schemes), the
bytes are still encrypted.
"""

from __future__ import annotations

import ssl
import typing

from sandbox.wire import SandboxError, TlsMode


class ServerNameContext(ssl.SSLContext):
    """An ``SSLContext`` whose sockets always use ``server_name`` for SNI and the hostname check."""

    server_name: str

    def wrap_socket(
        self,
        sock: typing.Any,
        server_side: bool = False,
        do_handshake_on_connect: bool = True,
        suppress_ragged_eofs: bool = True,
        server_hostname: str | bytes | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLSocket:
        # The caller's server_hostname is the dialled address (the shim's 127.0.0.1): replaced.
        return super().wrap_socket(
            sock,
            server_side=server_side,
            do_handshake_on_connect=do_handshake_on_connect,
            suppress_ragged_eofs=suppress_ragged_eofs,
            server_hostname=self.server_name,
            session=session,
        )


def client_context(mode: TlsMode, server_name: str, ca_file: str | None = None) -> ServerNameContext | None:
    """The TLS context for ``mode`` (None for ``off``); raises ``ssl.SSLError``/``OSError`` on a bad CA file."""
    if mode == "off":
        return None
    context = ServerNameContext(ssl.PROTOCOL_TLS_CLIENT)  # hostname check and CERT_REQUIRED by default
    context.server_name = server_name
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if mode == "trust-all":
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif ca_file:
        context.load_verify_locations(cafile=ca_file)
    else:
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    return context


def context_or_error(
    mode: TlsMode, server_name: str, ca_file: str | None
) -> tuple[ServerNameContext | None, SandboxError | None]:
    """:func:`client_context`, or the error every job answers when the CA file cannot be used.

    Never a fallback (plaintext, or the client library's own trust store): a backend without
    its context makes no connection at all.
    """
    try:
        return client_context(mode, server_name, ca_file), None
    except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
        return None, SandboxError(code="unavailable", message=f"the TLS CA file cannot be used: {exc}")


def tls_failure(exc: BaseException) -> str | None:
    """What went wrong with TLS, if an ``ssl`` error is anywhere in ``exc``'s chain (else None)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        # reason and verify_message are set by the ssl module's own errors only.
        if isinstance(current, ssl.SSLCertVerificationError):
            detail = getattr(current, "verify_message", None) or getattr(current, "reason", None) or current
            return f"the server's TLS certificate was refused: {detail}"
        if isinstance(current, ssl.SSLError):
            return f"the TLS handshake failed: {getattr(current, 'reason', None) or current}"
        current = current.__cause__ or current.__context__
    return None
