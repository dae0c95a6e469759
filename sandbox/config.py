"""The sandbox's own configuration, read once from its environment.

Credentials reach the sandbox only here (its environment, or a mounted file);
they are removed from ``os.environ`` after reading so nothing later in the
process (an error message, a debug dump) can echo them.
"""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, SecretStr, model_validator

from sandbox.wire import SandboxEnv

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

    @model_validator(mode="after")
    def _one_way_out(self) -> SandboxConfig:
        if self.transport == "bolt" and bool(self.neo4j_uri) == bool(self.neo4j_socket):
            raise ValueError(f"set exactly one of {SandboxEnv.NEO4J_URI} or {SandboxEnv.NEO4J_SOCKET}")
        if self.transport == "query-api" and not self.query_api_url:
            raise ValueError(f"the query-api transport needs {SandboxEnv.QUERY_API_URL}")
        return self

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
        )
        for key in SECRET_KEYS:
            env.pop(key, None)
        return config
