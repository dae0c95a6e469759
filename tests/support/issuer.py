"""A local OAuth issuer over real HTTP: metadata documents, a key set, and tokens signed with its key."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

RESOURCE = "http://127.0.0.1:1/mcp"  # only compared, never fetched
RFC8414 = "/.well-known/oauth-authorization-server/realms/test"
OPENID = "/realms/test/.well-known/openid-configuration"


class LocalIssuer:
    """One signing key; ``documents`` maps a path to the JSON served there (absent: 404, None: 500)."""

    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.documents: dict[str, Any] = {}
        self.asked: list[str] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.issuer = f"{self.base}/realms/test"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                issuer.asked.append(self.path)
                if self.path not in issuer.documents:
                    self.send_error(404)
                    return
                document = issuer.documents[self.path]
                if document is None:
                    self.send_error(500)
                    return
                body = json.dumps(document).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        return Handler

    def jwks(self) -> dict[str, Any]:
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [{**jwk, "kid": "k1", "use": "sig", "alg": "RS256"}]}

    def publish(self, path: str, *, issuer: str | None = None) -> None:
        """Serve metadata at ``path`` naming ``issuer`` (default: this one) and its key set at /certs."""
        self.documents[path] = {"issuer": issuer or self.issuer, "jwks_uri": f"{self.base}/certs"}
        self.documents["/certs"] = self.jwks()

    def token(self, **more: Any) -> str:
        now = int(time.time())
        claims = {"iss": self.issuer, "aud": RESOURCE, "sub": "alice", "iat": now, "exp": now + 300, "scope": "recall"}
        return jwt.encode({**claims, **more}, self.key, algorithm="RS256", headers={"kid": "k1"})


@contextlib.contextmanager
def serving() -> Iterator[LocalIssuer]:
    """A :class:`LocalIssuer` answering until the block ends."""
    local = LocalIssuer()
    thread = threading.Thread(target=local.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield local
    finally:
        local.server.shutdown()
        thread.join(timeout=10)
