"""Runner configuration: one explicit object, passed in (never read from globals), made one way.

``settings_for`` turns the gateway's settings into ``RunnerSettings`` for ``serve``, the
must-not-retrieve runner, the benchmarks and the tests alike, so the path the tests run
is the one production runs.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from gateway.config import GatewaySettings, neo4j_connection
from gateway.connection import Neo4jConnection
from gateway.image_tag import sandbox_image_tag
from sandbox.wire import TlsMode


class RunnerSettings(BaseModel):
    """How sandboxes are started and where the forwarder may connect.

    The password is a ``SecretStr``: printing or logging these settings never shows it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    image: str
    pool_size: Annotated[int, Field(ge=1, le=64)] = 4
    # The one host:port the forwarder connects to (Bolt, or HTTPS for the Query API).
    neo4j_host: str
    neo4j_port: Annotated[int, Field(gt=0, lt=65536)]
    neo4j_user: str = "neo4j"
    neo4j_password: SecretStr
    database: str | None = None
    transport: Literal["bolt", "query-api"] = "bolt"
    # TLS from inside each sandbox to Neo4j, checked against neo4j_host (gateway.connection.TLS_BY_SCHEME);
    # on the Query API, "off" means http (a local test server only), anything else https.
    tls: TlsMode = "off"
    # A PEM CA file on the host, bind-mounted read-only into each sandbox ("verify" only); None: the
    # system trust store of the sandbox image.
    ca_file: Path | None = None
    # The forwarder's network: "host" when Neo4j listens on the host's loopback, else
    # the Docker network Neo4j's container is on. Sandboxes themselves never get one.
    forwarder_network: str | None = None

    # Hardening and resource limits of each sandbox container.
    memory_mb: Annotated[int, Field(ge=32)] = 256
    cpus: Annotated[float, Field(gt=0)] = 1.0
    pids_limit: Annotated[int, Field(ge=8)] = 64
    tmpfs_mb: Annotated[int, Field(ge=1)] = 16
    # The hard wall-clock kill is the job's own timeout plus this grace.
    wall_clock_grace_seconds: Annotated[float, Field(gt=0)] = 2.0
    # How long a fresh container may take to import, connect and report ready.
    ready_timeout_seconds: Annotated[float, Field(gt=0)] = 20.0
    # Containers started in parallel when refilling; each start is mostly daemon time, and on
    # 2 cores more than 2 at once only adds latency (docs/benchmarks.md).
    start_concurrency: Annotated[int, Field(ge=1, le=16)] = 2
    # Every live sandbox container (spares, running, a principal's idle ones) counts; each holds
    # at most one connection through the forwarder at a time.
    max_containers: Annotated[int, Field(ge=1, le=100)] = 16
    # The OCI runtime: "auto" takes crun when the daemon has it registered and it starts a
    # container (about 40 ms of CPU less per container than runc), else runc, saying so.
    runtime: Literal["auto", "crun", "runc"] = "auto"
    # How long the job that ends a killed sandbox's Neo4j transaction may take (Neo4j answers
    # TERMINATE once the transaction has stopped: about 1.2 s measured for a row-by-row query).
    terminate_timeout_seconds: Annotated[float, Field(gt=0)] = 10.0
    # None: the environment's DOCKER_HOST (or the default socket).
    docker_host: str | None = None

    @model_validator(mode="after")
    def _ca_file_needs_verification(self) -> RunnerSettings:
        if self.ca_file is not None and (self.tls != "verify" or not self.ca_file.is_absolute()):
            raise ValueError("ca_file must be an absolute path, and is used only with tls='verify'")
        return self

    def resolved_forwarder_network(self) -> str:
        if self.forwarder_network:
            return self.forwarder_network
        try:
            loopback = ipaddress.ip_address(self.neo4j_host).is_loopback
        except ValueError:
            loopback = self.neo4j_host == "localhost"
        return "host" if loopback else "bridge"

    def query_api_url(self) -> str:
        scheme = "http" if self.tls == "off" else "https"
        return f"{scheme}://{self.neo4j_host}:{self.neo4j_port}"


def settings_for(settings: GatewaySettings, target: Neo4jConnection | None = None, **overrides: Any) -> RunnerSettings:
    """The runner settings ``settings`` describe; ``target`` is where Neo4j is (resolved when not given).

    ``overrides`` set what the gateway's settings do not carry (pool timing, hardening limits,
    the Docker host, the forwarder's network): tests and benchmarks only. Raises ``ConfigError``
    when no Neo4j is configured and the managed one is not set up.
    """
    target = target or neo4j_connection(settings)
    fields: dict[str, Any] = {
        "image": settings.sandbox_image or sandbox_image_tag(),
        "pool_size": settings.pool_size,
        "max_containers": settings.sandbox_max_containers,
        "runtime": settings.sandbox_runtime,
        "memory_mb": settings.sandbox_memory_mb,
        "neo4j_host": target.host,
        "neo4j_port": target.port,
        "neo4j_user": target.user,
        "neo4j_password": target.password,
        "database": target.database,
        "transport": settings.neo4j_transport,
        "tls": target.tls,
        "ca_file": target.ca_file,
    }
    return RunnerSettings(**{**fields, **overrides})
