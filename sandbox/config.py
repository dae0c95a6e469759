"""The sandbox's own configuration: settings from its environment, the account from its stdin.

Nothing secret is in the environment (a container's environment is part of its
configuration: ``docker inspect`` shows it). The Neo4j account arrives as the first
line on stdin, read here once, before any job.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal, cast

from sandbox.wire import Credentials, SandboxEnv, WireError, decode

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
    fetch_size: int = 16
    # Jobs this container runs, each in a fresh process, before the program exits.
    max_jobs: int = 1

    def __post_init__(self) -> None:
        if self.transport == "bolt" and bool(self.neo4j_uri) == bool(self.neo4j_socket):
            raise ConfigError(f"set exactly one of {SandboxEnv.NEO4J_URI} or {SandboxEnv.NEO4J_SOCKET}")
        if self.transport == "query-api" and not self.query_api_url:
            raise ConfigError(f"the query-api transport needs {SandboxEnv.QUERY_API_URL}")
        if self.max_jobs < 1 or self.fetch_size < 1:
            raise ConfigError(f"{SandboxEnv.MAX_JOBS} and {SandboxEnv.FETCH_SIZE} must be positive")

    @classmethod
    def from_env(cls, credentials: Credentials) -> SandboxConfig:
        env = os.environ
        transport = env.get(SandboxEnv.TRANSPORT, "bolt")
        if transport not in ("bolt", "query-api"):
            raise ConfigError(f"{SandboxEnv.TRANSPORT} must be bolt or query-api")
        try:
            fetch_size = int(env.get(SandboxEnv.FETCH_SIZE, "16"))
            max_jobs = int(env.get(SandboxEnv.MAX_JOBS, "1"))
        except ValueError:
            raise ConfigError(f"{SandboxEnv.FETCH_SIZE} and {SandboxEnv.MAX_JOBS} must be integers") from None
        return cls(
            transport=cast(Literal["bolt", "query-api"], transport),
            neo4j_uri=env.get(SandboxEnv.NEO4J_URI) or None,
            neo4j_socket=env.get(SandboxEnv.NEO4J_SOCKET) or None,
            query_api_url=env.get(SandboxEnv.QUERY_API_URL) or None,
            neo4j_user=credentials.user,
            neo4j_password=credentials.password,
            database=env.get(SandboxEnv.DATABASE) or None,
            fetch_size=fetch_size,
            max_jobs=max_jobs,
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
