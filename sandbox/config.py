"""The sandbox's own configuration: settings from its environment, the account from its stdin.

Nothing secret is in the environment (a container's environment is part of its
configuration: ``docker inspect`` shows it). The Neo4j account arrives as the first
line on stdin, read here once, before any job.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal, cast
from urllib.parse import urlsplit

from sandbox.wire import Credentials, SandboxEnv, TlsMode, WireError, decode

# The account line is a user name and a password: far below this.
MAX_CREDENTIALS_LINE = 64 * 1024


class ConfigError(ValueError):
    """The environment or the account line is not what the runner sends."""


@dataclass(frozen=True)
class SandboxConfig:
    transport: Literal["bolt", "query-api"] = "bolt"
    # Exactly one way out: a direct URI (host-side tests only) or the forwarder's socket.
    neo4j_uri: str | None = None
    neo4j_socket: str | None = None
    # For the Query API: the real https://host[:port] (TLS is verified against this name).
    query_api_url: str | None = None
    neo4j_user: str = "neo4j"
    neo4j_password: str = field(default="", repr=False)
    database: str | None = None
    # Jobs this container runs, each in a fresh process, before the program exits.
    max_jobs: int = 1
    # TLS end to end to Neo4j (sandbox/tls.py); the server name is the real host's, never the shim's.
    tls: TlsMode = "off"
    tls_server_name: str | None = None
    tls_ca_file: str | None = None

    def __post_init__(self) -> None:
        if self.transport == "bolt" and bool(self.neo4j_uri) == bool(self.neo4j_socket):
            raise ConfigError(f"set exactly one of {SandboxEnv.NEO4J_URI} or {SandboxEnv.NEO4J_SOCKET}")
        if self.transport == "bolt" and self.neo4j_uri and urlsplit(self.neo4j_uri).scheme != "bolt":
            raise ConfigError(f"{SandboxEnv.NEO4J_URI} must be bolt://host:port; TLS is set by {SandboxEnv.TLS}")
        if self.transport == "query-api" and not self.query_api_url:
            raise ConfigError(f"the query-api transport needs {SandboxEnv.QUERY_API_URL}")
        if self.max_jobs < 1:
            raise ConfigError(f"{SandboxEnv.MAX_JOBS} must be positive")
        if self.tls not in ("off", "verify", "trust-all"):
            raise ConfigError(f"{SandboxEnv.TLS} must be off, verify or trust-all")
        https = urlsplit(str(self.query_api_url)).scheme == "https"
        if self.transport == "query-api" and https != (self.tls != "off"):
            # Never a silent downgrade: the URL and the TLS mode must say the same thing.
            raise ConfigError(f"{SandboxEnv.QUERY_API_URL} must be https exactly when {SandboxEnv.TLS} is not off")
        if self.tls != "off" and self.neo4j_socket and not self.tls_server_name:
            raise ConfigError(f"TLS through the forwarder's socket needs {SandboxEnv.TLS_SERVER_NAME}")
        if self.tls_ca_file and self.tls != "verify":
            raise ConfigError(f"{SandboxEnv.TLS_CA_FILE} is only used with {SandboxEnv.TLS}=verify")

    def server_name(self) -> str:
        """The host name TLS checks the certificate against: the real server's, whatever is dialled."""
        if self.tls_server_name:
            return self.tls_server_name
        url = self.query_api_url if self.transport == "query-api" else self.neo4j_uri
        return urlsplit(str(url)).hostname or ""

    @classmethod
    def from_env(cls, credentials: Credentials) -> SandboxConfig:
        env = os.environ
        transport = env.get(SandboxEnv.TRANSPORT, "bolt")
        if transport not in ("bolt", "query-api"):
            raise ConfigError(f"{SandboxEnv.TRANSPORT} must be bolt or query-api")
        try:
            max_jobs = int(env.get(SandboxEnv.MAX_JOBS, "1"))
        except ValueError:
            raise ConfigError(f"{SandboxEnv.MAX_JOBS} must be an integer") from None
        return cls(
            transport=cast(Literal["bolt", "query-api"], transport),
            neo4j_uri=env.get(SandboxEnv.NEO4J_URI) or None,
            neo4j_socket=env.get(SandboxEnv.NEO4J_SOCKET) or None,
            query_api_url=env.get(SandboxEnv.QUERY_API_URL) or None,
            neo4j_user=credentials.user,
            neo4j_password=credentials.password,
            database=env.get(SandboxEnv.DATABASE) or None,
            max_jobs=max_jobs,
            tls=cast(TlsMode, env.get(SandboxEnv.TLS, "off")),
            tls_server_name=env.get(SandboxEnv.TLS_SERVER_NAME) or None,
            tls_ca_file=env.get(SandboxEnv.TLS_CA_FILE) or None,
        )


def read_credentials(fd: int = 0) -> Credentials:
    """The account line, read from ``fd`` without buffering: what follows it stays unread for the jobs."""
    line = bytearray()
    while not line.endswith(b"\n"):
        chunk = os.read(fd, 1)
        if not chunk:
            break
        line += chunk
        if len(line) > MAX_CREDENTIALS_LINE:
            raise ConfigError("the account line is too long")
    if not line:
        raise ConfigError("no account line on stdin")
    try:
        return decode(Credentials, bytes(line))
    except WireError as exc:
        raise ConfigError(f"the account line did not validate: {exc}") from None
