"""The managed local Neo4j: fetch from Maven Central, configure, start, stop.

``cypher-gateway neo4j start|stop|status``. Neo4j 5.26 Community's jars are
resolved by Maven from ``docker/neo4j/pom.xml`` into a cache shared by every
checkout; the server's state (conf, data, logs, password) lives in a state
directory. Starting is idempotent: a running server is reused.

The ``neo4j`` driver is imported lazily and only by the connectivity wait, so
importing this module never loads the driver into a gateway process.
"""

from __future__ import annotations

import argparse
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
from typing import Any

from pydantic import BaseModel, ConfigDict

from gateway.errors import SetupError
from gateway.paths import REPO_ROOT, cache_dir, state_dir

POM_PATH = REPO_ROOT / "docker" / "neo4j" / "pom.xml"
DEFAULT_BOLT_PORT = 17687
DEFAULT_HTTP_PORT = 17474
# The host name a TLS-mode managed server is reached by: its certificate must name it.
TLS_HOST = "localhost"
USER = "neo4j"
DATABASE = "neo4j"
START_TIMEOUT_S = 180.0


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


def neo4j_version() -> str:
    match = re.search(r"<neo4j\.version>([^<]+)</neo4j\.version>", POM_PATH.read_text(encoding="utf-8"))
    if not match:
        raise Neo4jSetupError(f"{POM_PATH} does not declare <neo4j.version>")
    return match.group(1).strip()


def lib_dir() -> Path:
    return cache_dir() / f"neo4j-{neo4j_version()}" / "lib"


def home_dir() -> Path:
    return state_dir() / "neo4j"


def bolt_port() -> int:
    return int(os.environ.get("CYPHER_GATEWAY_NEO4J_PORT", DEFAULT_BOLT_PORT))


def http_port() -> int:
    return int(os.environ.get("CYPHER_GATEWAY_NEO4J_HTTP_PORT", DEFAULT_HTTP_PORT))


def _password_file() -> Path:
    return home_dir() / "password"


def _pid_file() -> Path:
    return home_dir() / "run" / "neo4j.pid"


def connection_info() -> Neo4jConnection:
    """Connection facts for the managed server (it need not be running)."""
    password_file = _password_file()
    if not password_file.exists():
        raise Neo4jSetupError(
            f"the managed Neo4j has no password yet ({password_file} missing): run `cypher-gateway neo4j start`"
        )
    if (_tls_dir(home_dir()) / "public.crt").exists():
        # A TLS server is reached by the name its certificate carries.
        bolt, http = f"bolt+s://{TLS_HOST}:{bolt_port()}", f"https://{TLS_HOST}:{http_port()}"
    else:
        bolt, http = f"bolt://127.0.0.1:{bolt_port()}", f"http://127.0.0.1:{http_port()}"
    return Neo4jConnection(
        uri=bolt,
        user=USER,
        password=password_file.read_text(encoding="utf-8").strip(),
        database=DATABASE,
        http_uri=http,
    )


def connection_from_env(*, start_managed: bool = False) -> Neo4jConnection:
    """``NEO4J_URI`` (with ``NEO4J_USER``, ``NEO4J_PASSWORD``, ``NEO4J_DATABASE``) when set, else the
    managed server: started when ``start_managed``, otherwise only read (it need not be running)."""
    if os.environ.get("NEO4J_URI"):
        return Neo4jConnection(
            uri=os.environ["NEO4J_URI"],
            user=os.environ.get("NEO4J_USER", "neo4j"),
            password=os.environ.get("NEO4J_PASSWORD", ""),
            database=os.environ.get("NEO4J_DATABASE") or None,
        )
    return start() if start_managed else connection_info()


# --- fetch -------------------------------------------------------------------------------------------


def fetch_neo4j() -> Path:
    """Resolve Neo4j and its runtime dependencies into the cache (once)."""
    target = lib_dir()
    marker = target / ".complete"
    if marker.exists():
        return target
    java_version()  # fail early, with a clear message, before a long download
    if shutil.which("mvn") is None:
        raise Neo4jSetupError("Maven (`mvn`) is not on PATH; install it (Debian: apt-get install maven)")
    staging = target.with_name("lib.partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    _say(f"fetching Neo4j {neo4j_version()} Community and its dependencies from Maven Central ...")
    command = [
        "mvn", "-B", "-f", str(POM_PATH), "dependency:copy-dependencies",
        f"-DoutputDirectory={staging}", "-DincludeScope=runtime",
    ]  # fmt: skip
    started = time.monotonic()
    downloaded = 0
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    tail: list[str] = []
    assert process.stdout is not None
    for line in process.stdout:
        tail = [*tail[-30:], line.rstrip()]
        if "Downloaded from" in line:
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
    _say(f"Neo4j {neo4j_version()}: {len(jars)} jars in {target} ({time.monotonic() - started:.0f} s)")
    return target


def java_version() -> str:
    java = _java()
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
    except OSError as exc:
        raise Neo4jSetupError(f"cannot run {java}: {exc}") from exc
    match = re.search(r'version "(\d+)', out)
    if not match or match.group(1) not in {"17", "21"}:
        raise Neo4jSetupError(f"Neo4j 5.26 needs Java 17 or 21; {java} reports: {out.strip()[:200]}")
    return match.group(1)


def _java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return str(Path(java_home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise Neo4jSetupError("no `java` on PATH and no JAVA_HOME: install OpenJDK 17")
    return found


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


def render_conf(*, listen: str, bolt: int, http: int | None, tls: Path | None = None) -> str:
    """The neo4j.conf we run with; shared by the managed server and the container image.

    ``tls``: a directory holding ``private.key`` and ``public.crt``; Bolt then requires TLS and the
    HTTP port serves HTTPS only (see :func:`tls_conf`).
    """
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
        # A server-side ceiling; the sandbox sets the policy's (shorter) timeout per transaction.
        "db.transaction.timeout=60s",
        # The default is unlimited: one query could exhaust the heap.
        "db.memory.transaction.max=256m",
        "dbms.memory.transaction.total.max=512m",
        "dbms.security.allow_csv_import_from_file_urls=false",
        "dbms.usage_report.enabled=false",
        "server.logs.gc.enabled=false",
        *[f"server.jvm.additional={flag}" for flag in _JVM_ADDITIONAL],
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


def _write_conf(home: Path, tls: Path | None = None) -> None:
    for sub in ("conf", "data", "logs", "run", "plugins", "import"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    certificates = _install_tls(home, tls)
    (home / "conf" / "neo4j.conf").write_text(
        render_conf(listen="127.0.0.1", bolt=bolt_port(), http=http_port(), tls=certificates), encoding="utf-8"
    )
    lib_link = home / "lib"
    if (lib_link.is_symlink() or lib_link.exists()) and lib_link.resolve() != lib_dir().resolve():
        lib_link.unlink()
    if not lib_link.exists():
        lib_link.symlink_to(lib_dir())


def _neo4j_env(home: Path) -> dict[str, str]:
    return {**os.environ, "NEO4J_HOME": str(home), "NEO4J_CONF": str(home / "conf")}


def _set_initial_password(home: Path) -> None:
    password_file = _password_file()
    auth_store = home / "data" / "dbms" / "auth.ini"
    if password_file.exists() and (home / "data" / "databases").exists():
        return
    if auth_store.exists() and not password_file.exists():
        raise Neo4jSetupError(f"{home} has an auth store but no password file; remove {home} to start afresh")
    # A leading letter: a token starting with '-' would be read as an option by the admin tool.
    password = "cgw" + secrets.token_urlsafe(18)
    result = subprocess.run(
        [_java(), "-cp", f"{home / 'lib'}/*", "org.neo4j.cli.AdminTool", "dbms", "set-initial-password", password],
        env=_neo4j_env(home), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if result.returncode != 0:
        raise Neo4jSetupError(f"set-initial-password failed: {result.stderr.strip() or result.stdout.strip()}")
    password_file.write_text(password + "\n", encoding="utf-8")
    password_file.chmod(0o600)


def _launch_command(home: Path) -> list[str]:
    """Ask Neo4j's own launcher for the JVM command it would run, so our flags are its flags."""
    result = subprocess.run(
        [_java(), "-cp", f"{home / 'lib'}/*", "org.neo4j.server.startup.Neo4jCommand", "console", "--dry-run"],
        env=_neo4j_env(home), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    lines = [ln for ln in result.stdout.splitlines() if "CommunityEntryPoint" in ln]
    if result.returncode != 0 or not lines:
        raise Neo4jSetupError(f"Neo4j's launcher dry run failed: {result.stderr.strip() or result.stdout.strip()}")
    command = shlex.split(lines[-1])
    if "--console-mode" not in command:
        command.append("--console-mode")
    return command


# --- run ---------------------------------------------------------------------------------------------


def _running_pid() -> int | None:
    try:
        pid = int(_pid_file().read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid
    cmdline = Path(f"/proc/{pid}/cmdline")
    if cmdline.exists() and b"CommunityEntryPoint" not in cmdline.read_bytes():
        return None
    return pid


def wait_until_ready(connection: Neo4jConnection, timeout_s: float = START_TIMEOUT_S, pid: int | None = None) -> None:
    """Block until the driver's ``verify_connectivity()`` passes."""
    import neo4j

    # Readiness, not trust: a TLS server is probed accepting any certificate (+ssc); whoever
    # connects for real checks the certificate against their own CA.
    probe_uri = connection.uri.replace("+s://", "+ssc://")
    deadline = time.monotonic() + timeout_s
    last_error: Exception | None = None
    next_report = time.monotonic() + 10
    while time.monotonic() < deadline:
        if pid is not None and _running_pid() is None:
            raise Neo4jSetupError(f"Neo4j exited during start-up; see {home_dir() / 'logs' / 'console.log'}")
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


def start(tls: Path | None = None) -> Neo4jConnection:
    """Fetch (once), configure and start the managed Neo4j, or reuse the running one.

    ``tls``: a directory with ``private.key`` and ``public.crt``: the server then speaks only TLS
    (Bolt TLS required, HTTPS instead of HTTP) and is reached as ``bolt+s://localhost:<port>``.
    """
    home = home_dir()
    pid = _running_pid()
    if pid is not None:
        if (tls is not None) != (_tls_dir(home) / "public.crt").exists():
            wanted = "with" if tls is not None else "without"
            raise Neo4jSetupError(f"the managed Neo4j is running, but not {wanted} TLS: stop it first")
        connection = connection_info()
        wait_until_ready(connection, pid=pid)
        _say(f"already running (pid {pid}) on {connection.uri}")
        return connection
    fetch_neo4j()
    _write_conf(home, tls)
    _set_initial_password(home)
    command = _launch_command(home)
    log_path = home / "logs" / "console.log"
    started = time.monotonic()
    _say(f"starting Neo4j {neo4j_version()} on 127.0.0.1:{bolt_port()} (log: {log_path})")
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            command, cwd=home, env=_neo4j_env(home), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            start_new_session=True,
        )  # fmt: skip
    _pid_file().write_text(f"{process.pid}\n", encoding="utf-8")
    connection = connection_info()
    wait_until_ready(connection, pid=process.pid)
    _say(f"ready in {time.monotonic() - started:.1f} s (pid {process.pid})")
    return connection


def stop(timeout_s: float = 60.0) -> bool:
    """Stop the managed server; True when one was running."""
    pid = _running_pid()
    if pid is None:
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and _running_pid() is not None:
        time.sleep(0.3)
    if _running_pid() is not None:
        os.kill(pid, signal.SIGKILL)
    _pid_file().unlink(missing_ok=True)
    return True


def status() -> dict[str, Any]:
    pid = _running_pid()
    facts: dict[str, Any] = {
        "running": pid is not None,
        "pid": pid,
        "version": neo4j_version(),
        "home": str(home_dir()),
        "lib": str(lib_dir()),
        "fetched": (lib_dir() / ".complete").exists(),
    }
    if _password_file().exists():
        facts.update(connection_info().model_dump())
    return facts


# --- CLI ---------------------------------------------------------------------------------------------


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("neo4j", help="manage the local Neo4j 5.26 Community server")
    actions = parser.add_subparsers(dest="neo4j_action", required=True, metavar="ACTION")
    start_parser = actions.add_parser("start", help="fetch (once), configure and start; reuses a running server")
    start_parser.add_argument(
        "--tls", type=Path, metavar="DIR", help="speak only TLS, with DIR/private.key and DIR/public.crt (PEM)"
    )
    actions.add_parser("stop", help="stop the managed server")
    status_parser = actions.add_parser("status", help="is it running, and how to reach it")
    status_parser.add_argument("--json", action="store_true", help="print connection facts as JSON")
    parser.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    try:
        if args.neo4j_action == "start":
            connection = start(tls=args.tls)
            print(json.dumps({"uri": connection.uri, "user": connection.user, "database": connection.database}))
            return 0
        if args.neo4j_action == "stop":
            print("stopped" if stop() else "not running")
            return 0
        facts = status()
        if args.json:
            print(json.dumps(facts))
        else:
            state = f"running (pid {facts['pid']})" if facts["running"] else "stopped"
            print(f"Neo4j {facts['version']}: {state}; bolt {facts.get('uri', '-')}; home {facts['home']}")
        return 0 if facts["running"] or args.neo4j_action != "status" else 1
    except Neo4jSetupError as exc:
        print(f"cypher-gateway neo4j: {exc}", file=sys.stderr)
        return 1
