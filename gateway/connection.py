"""Which Neo4j: the one value type every entrance resolves, whatever it reads the settings from.

``serve``, ``doctor``, the must-not-retrieve runner, the demo, the benchmarks and the tests all
get theirs from :func:`gateway.config.neo4j_connection` (the settings as ``serve`` reads them), so
each reaches the same server for the same environment. Standard library and pydantic only: it
sits below everything that uses it, the managed server's facts (:mod:`gateway.managed_neo4j`)
included.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, SecretStr

from sandbox.wire import TlsMode

# What each accepted URI scheme asks of TLS, from inside the sandbox to the server. neo4j:// URIs
# are served like bolt:// (direct, no routing table: the sandbox reaches one host:port only);
# +s verifies the certificate (neo4j_ca_file, else the system trust store) against the URI's
# host name; +ssc accepts any certificate, as the driver does, and still encrypts.
TLS_BY_SCHEME: dict[str, TlsMode] = {
    "bolt": "off", "neo4j": "off", "http": "off",
    "bolt+s": "verify", "neo4j+s": "verify", "https": "verify",
    "bolt+ssc": "trust-all", "neo4j+ssc": "trust-all",
}  # fmt: skip
_DEFAULT_PORTS = {"https": 443, "http": 7474}


class Neo4jConnection(BaseModel):
    """How to reach one Neo4j server. The password is a ``SecretStr``: printing this never shows it.

    ``uri`` is the one the configured transport speaks (Bolt, or the Query API's https://);
    ``http_uri`` is the managed server's HTTP address when it has one.
    """

    model_config = ConfigDict(frozen=True)

    uri: str
    user: str
    password: SecretStr
    database: str | None = None
    http_uri: str | None = None
    # A PEM CA file the server's certificate must chain to (+s and https only); None: the system trust store.
    ca_file: Path | None = None

    @property
    def scheme(self) -> str:
        return urlsplit(self.uri).scheme

    @property
    def host(self) -> str:
        return urlsplit(self.uri).hostname or "127.0.0.1"

    @property
    def port(self) -> int:
        return urlsplit(self.uri).port or _DEFAULT_PORTS.get(self.scheme, 7687)

    @property
    def tls(self) -> TlsMode:
        """What this URI asks of TLS (a scheme outside :data:`TLS_BY_SCHEME` is refused before it gets here)."""
        return TLS_BY_SCHEME[self.scheme]

    def __repr__(self) -> str:
        return f"Neo4jConnection(uri={self.uri!r}, user={self.user!r}, database={self.database!r})"

    __str__ = __repr__
