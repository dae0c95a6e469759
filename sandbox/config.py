"""The sandbox's own configuration, read once from its environment.

Credentials reach the sandbox only here (its environment, or a mounted file);
they are removed from ``os.environ`` after reading so nothing later in the
process (an error message, a debug dump) can echo them.
"""

from __future__ import annotations

import os
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, SecretStr, model_validator

from sandbox.wire import SandboxEnv, TlsMode

SECRET_KEYS = (SandboxEnv.NEO4J_PASSWORD,)


class SandboxConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    transport: Literal["bolt", "query-api"] = "bolt"
    # Exactly one way out: a direct URI (host-side tests only) or the forwarder's socket.
    neo4j_uri: str | None = None
    neo4j_socket: str | None = None
    # For the Query API: the real https://host[:port] (TLS is verified against this name).
    query_api_url: str | None = None
    neo4j_user: str = "neo4j"
    neo4j_password: SecretStr = SecretStr("")
    database: str | None = None
    fetch_size: int = 16
    # TLS end to end to Neo4j (sandbox/tls.py); the server name is the real host's, never the shim's.
    tls: TlsMode = "off"
    tls_server_name: str | None = None
    tls_ca_file: str | None = None

    @model_validator(mode="after")
    def _one_way_out(self) -> SandboxConfig:
        if self.transport == "bolt" and bool(self.neo4j_uri) == bool(self.neo4j_socket):
            raise ValueError(f"set exactly one of {SandboxEnv.NEO4J_URI} or {SandboxEnv.NEO4J_SOCKET}")
        if self.transport == "bolt" and self.neo4j_uri and urlsplit(self.neo4j_uri).scheme != "bolt":
            raise ValueError(f"{SandboxEnv.NEO4J_URI} must be bolt://host:port; TLS is set by {SandboxEnv.TLS}")
        if self.transport == "query-api" and not self.query_api_url:
            raise ValueError(f"the query-api transport needs {SandboxEnv.QUERY_API_URL}")
        https = urlsplit(str(self.query_api_url)).scheme == "https"
        if self.transport == "query-api" and https != (self.tls != "off"):
            # Never a silent downgrade: the URL and the TLS mode must say the same thing.
            raise ValueError(f"{SandboxEnv.QUERY_API_URL} must be https exactly when {SandboxEnv.TLS} is not off")
        if self.tls != "off" and self.neo4j_socket and not self.tls_server_name:
            raise ValueError(f"TLS through the forwarder's socket needs {SandboxEnv.TLS_SERVER_NAME}")
        if self.tls_ca_file and self.tls != "verify":
            raise ValueError(f"{SandboxEnv.TLS_CA_FILE} is only used with {SandboxEnv.TLS}=verify")
        return self

    def server_name(self) -> str:
        """The host name TLS checks the certificate against: the real server's, whatever is dialled."""
        if self.tls_server_name:
            return self.tls_server_name
        url = self.query_api_url if self.transport == "query-api" else self.neo4j_uri
        return urlsplit(str(url)).hostname or ""

    @classmethod
    def from_env(cls) -> SandboxConfig:
        env = os.environ
        password = env.get(SandboxEnv.NEO4J_PASSWORD)
        password_file = env.get(SandboxEnv.NEO4J_PASSWORD_FILE)
        if password is None and password_file:
            with open(password_file, encoding="utf-8") as fh:
                password = fh.read().strip()
        config = cls(
            transport=env.get(SandboxEnv.TRANSPORT, "bolt"),
            neo4j_uri=env.get(SandboxEnv.NEO4J_URI) or None,
            neo4j_socket=env.get(SandboxEnv.NEO4J_SOCKET) or None,
            query_api_url=env.get(SandboxEnv.QUERY_API_URL) or None,
            neo4j_user=env.get(SandboxEnv.NEO4J_USER, "neo4j"),
            neo4j_password=SecretStr(password or ""),
            database=env.get(SandboxEnv.DATABASE) or None,
            fetch_size=int(env.get(SandboxEnv.FETCH_SIZE, "16")),
            tls=env.get(SandboxEnv.TLS, "off"),
            tls_server_name=env.get(SandboxEnv.TLS_SERVER_NAME) or None,
            tls_ca_file=env.get(SandboxEnv.TLS_CA_FILE) or None,
        )
        for key in SECRET_KEYS:
            env.pop(key, None)
        return config
