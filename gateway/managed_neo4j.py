"""The managed local Neo4j's read-only facts: release lines, ports, state directory, password, TLS.

What ``serve`` needs to reach the managed server (:func:`connection_info`) without loading the
operator tooling that fetches, configures, starts and stops it (:mod:`gateway.ops.neo4j_local`).
Nothing here writes, downloads or starts anything: it only reads the environment, the shipped
pom and the state directory.

Two release lines can run side by side (:data:`LINES`): 5.26 LTS, the default, and 2026.x
(``CYPHER_GATEWAY_NEO4J_VERSION=2026``). Each has its own state directory (conf, data, logs,
password), its own ports and its own Java.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, SecretStr

from gateway.connection import Neo4jConnection
from gateway.errors import SetupError
from gateway.paths import resource, state_dir

DEFAULT_BOLT_PORT = 17687
DEFAULT_HTTP_PORT = 17474
# The host name a TLS-mode managed server is reached by: its certificate must name it.
TLS_HOST = "localhost"
USER = "neo4j"
DATABASE = "neo4j"
VERSION_ENV = "CYPHER_GATEWAY_NEO4J_VERSION"
LineName = Literal["5.26", "2026"]


class ServerLine(BaseModel):
    """One Neo4j release line the managed server can run, with everything that differs per line."""

    model_config = ConfigDict(frozen=True)

    name: LineName
    pom_property: str  # the <property> of docker/neo4j/pom.xml holding this line's version
    java_min: int
    java_max: int | None  # None: any newer Java
    default_bolt_port: int
    default_http_port: int
    port_env: str
    http_port_env: str
    home_name: str  # directory under the state dir
    # neo4j.conf lines only this line knows: strict validation refuses an unknown key.
    conf_extra: tuple[str, ...] = ()
    jvm_extra: tuple[str, ...] = ()
    image_repository: str  # docker repository of its image (tags are content hashes)
    image_base: Literal["java", "java21"]


LINES: dict[LineName, ServerLine] = {
    "5.26": ServerLine(
        name="5.26", pom_property="neo4j.version", java_min=17, java_max=21,
        default_bolt_port=DEFAULT_BOLT_PORT, default_http_port=DEFAULT_HTTP_PORT,
        port_env="CYPHER_GATEWAY_NEO4J_PORT", http_port_env="CYPHER_GATEWAY_NEO4J_HTTP_PORT",
        home_name="neo4j", image_repository="neo4j", image_base="java",
    ),
    "2026": ServerLine(
        name="2026", pom_property="neo4j2026.version", java_min=21, java_max=None,
        default_bolt_port=17697, default_http_port=17484,
        port_env="CYPHER_GATEWAY_NEO4J_2026_PORT", http_port_env="CYPHER_GATEWAY_NEO4J_2026_HTTP_PORT",
        home_name="neo4j-2026",
        # 2026.x broadcasts "fleet discovery" UDP packets to every local network by default.
        conf_extra=("server.fleet_discovery.enabled=false", "dbms.fleet_manager.enabled=false"),
        # JNA calls restricted methods; without this Java 21+ prints a warning per call site.
        jvm_extra=("--enable-native-access=ALL-UNNAMED",),
        image_repository="neo4j2026", image_base="java21",
    ),
}  # fmt: skip
_LINE_ALIASES: dict[str, LineName] = {"5": "5.26", "5.26": "5.26", "2026": "2026", "2026.x": "2026"}


class Neo4jSetupError(SetupError):
    """The managed Neo4j could not be fetched, configured or started; the message says why."""


def line_for(name: str | None = None) -> ServerLine:
    """The release line ``name`` (``5.26`` or ``2026``), else the one ``CYPHER_GATEWAY_NEO4J_VERSION`` names."""
    chosen = name if name is not None else os.environ.get(VERSION_ENV) or "5.26"
    key = _LINE_ALIASES.get(chosen.strip())
    if key is None:
        for line in LINES.values():
            if chosen.strip() == neo4j_version(line):
                return line
        raise Neo4jSetupError(
            f"unknown Neo4j version {chosen!r} (from --version or {VERSION_ENV}); expected one of {', '.join(LINES)}"
        )
    return LINES[key]


def pom_path() -> Path:
    """The Maven pom that names the Neo4j versions and their jars: the one place they are looked up."""
    return resource("docker", "neo4j", "pom.xml")


def neo4j_version(line: ServerLine | None = None) -> str:
    line = line or line_for()
    pom = pom_path()
    prop = re.escape(line.pom_property)
    match = re.search(rf"<{prop}>([^<]+)</{prop}>", pom.read_text(encoding="utf-8"))
    if not match:
        raise Neo4jSetupError(f"{pom} does not declare <{line.pom_property}>")
    return match.group(1).strip()


def home_dir(line: ServerLine | None = None) -> Path:
    return state_dir() / (line or line_for()).home_name


def bolt_port(line: ServerLine | None = None) -> int:
    line = line or line_for()
    return int(os.environ.get(line.port_env, line.default_bolt_port))


def http_port(line: ServerLine | None = None) -> int:
    line = line or line_for()
    return int(os.environ.get(line.http_port_env, line.default_http_port))


def password_file(line: ServerLine | None = None) -> Path:
    return home_dir(line) / "password"


def tls_dir(home: Path) -> Path:
    return home / "certificates"


def speaks_tls(home: Path) -> bool:
    """Whether the server of ``home`` was configured to speak only TLS (its certificate is installed)."""
    return (tls_dir(home) / "public.crt").exists()


def connection_info(line: ServerLine | None = None) -> Neo4jConnection:
    """Connection facts for the managed server of ``line`` (it need not be running)."""
    line = line or line_for()
    password = password_file(line)
    if not password.exists():
        # Often not "never started" but "started by another user or under another HOME" (an MCP
        # client that launches the server with its own environment): say both fixes.
        raise Neo4jSetupError(
            f"the managed Neo4j {line.name}'s password file {password} does not exist (state directory "
            f"{state_dir()}, from CYPHER_GATEWAY_STATE or HOME). Fix: run `cypher-gateway neo4j start --version "
            f"{line.name}` as this user; if it was started under another user or HOME, give this process that HOME "
            "or CYPHER_GATEWAY_STATE; or set NEO4J_URI, NEO4J_USER and NEO4J_PASSWORD for an existing Neo4j"
        )
    if speaks_tls(home_dir(line)):
        # A TLS server is reached by the name its certificate carries.
        bolt, http = f"bolt+s://{TLS_HOST}:{bolt_port(line)}", f"https://{TLS_HOST}:{http_port(line)}"
    else:
        bolt, http = f"bolt://127.0.0.1:{bolt_port(line)}", f"http://127.0.0.1:{http_port(line)}"
    return Neo4jConnection(
        uri=bolt,
        user=USER,
        password=SecretStr(password.read_text(encoding="utf-8").strip()),
        database=DATABASE,
        http_uri=http,
    )
