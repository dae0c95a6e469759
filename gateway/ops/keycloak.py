"""A managed local Keycloak, the real OAuth issuer the OAuth tests get their tokens from.

Like the managed Neo4j: the ``org.keycloak:keycloak-quarkus-dist`` zip comes from Maven Central
(by ``mvn``, into the shared local Maven repository), is unpacked under the state directory, and
runs in dev mode (an H2 database made afresh each start, plain HTTP on loopback) on Java 21+ found
the way :func:`gateway.ops.neo4j_local.java_for` finds it for Neo4j 2026.x. A realm JSON file is
imported at start. Starting is idempotent: a Keycloak already answering on the port is reused.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import httpx

from gateway import managed_neo4j
from gateway.errors import SetupError
from gateway.ops import neo4j_local
from gateway.paths import state_dir

VERSION = "26.7.3"
ARTIFACT = f"org.keycloak:keycloak-quarkus-dist:{VERSION}:zip"
DEFAULT_PORT = 18180
PORT_ENV = "CYPHER_GATEWAY_KEYCLOAK_PORT"
START_TIMEOUT_S = 420.0
# The bootstrap admin exists only inside this loopback dev server; the tests never use it.
ADMIN_USER = "admin"


class KeycloakSetupError(SetupError):
    """Keycloak could not be fetched or started; the message says why."""


def _say(message: str) -> None:
    print(f"[keycloak] {message}", file=sys.stderr, flush=True)


def port() -> int:
    return int(os.environ.get(PORT_ENV, DEFAULT_PORT))


def base_url() -> str:
    return f"http://127.0.0.1:{port()}"


def home() -> Path:
    return state_dir() / f"keycloak-{VERSION}"


def fetch() -> Path:
    """The unpacked distribution (downloaded by Maven once, unpacked once)."""
    target = home()
    if (target / ".complete").exists():
        return target
    if shutil.which("mvn") is None:
        raise KeycloakSetupError("Maven (`mvn`) is not on PATH; install it (Debian: apt-get install maven)")
    started = time.monotonic()
    _say(f"fetching Keycloak {VERSION} ({ARTIFACT}) from Maven Central (about 180 MB) ...")
    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    result = subprocess.run(
        ["mvn", "-B", "-q", "dependency:copy", f"-Dartifact={ARTIFACT}", f"-DoutputDirectory={staging}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    archives = list(staging.glob("*.zip"))
    if result.returncode != 0 or not archives:
        raise KeycloakSetupError(f"Maven could not fetch {ARTIFACT}:\n{result.stdout[-3000:]}{result.stderr[-2000:]}")
    _say(f"unpacking {archives[0].name} ({time.monotonic() - started:.0f} s so far) ...")
    with zipfile.ZipFile(archives[0]) as archive:
        archive.extractall(staging)
    archives[0].unlink()
    unpacked = staging / f"keycloak-{VERSION}"
    shutil.rmtree(target, ignore_errors=True)
    unpacked.rename(target)
    shutil.rmtree(staging, ignore_errors=True)
    for script in (target / "bin").glob("*.sh"):
        script.chmod(0o755)
    (target / ".complete").write_text(VERSION + "\n", encoding="utf-8")
    _say(f"Keycloak {VERSION} in {target} ({time.monotonic() - started:.0f} s)")
    return target


def ready(realm: str) -> bool:
    try:
        response = httpx.get(f"{base_url()}/realms/{realm}/.well-known/openid-configuration", timeout=2.0)
    except httpx.HTTPError:
        return False
    return response.status_code == 200


def start(realm_file: Path, realm: str) -> float:
    """Start Keycloak with ``realm_file`` imported (reuse a running one); returns the seconds it took."""
    started = time.monotonic()
    if ready(realm):
        return 0.0
    dist = fetch()
    # A fresh database each start: the realm file is imported whole (an existing realm would be kept as it was).
    shutil.rmtree(dist / "data" / "h2", ignore_errors=True)
    import_dir = dist / "data" / "import"
    # Only this realm file is imported: whatever an earlier start left is gone first.
    shutil.rmtree(import_dir, ignore_errors=True)
    import_dir.mkdir(parents=True)
    shutil.copyfile(realm_file, import_dir / realm_file.name)
    try:
        _launch(dist, realm, started)
    except BaseException:
        # A failed start leaves no realm file for the next start to import by surprise.
        shutil.rmtree(import_dir, ignore_errors=True)
        raise
    elapsed = time.monotonic() - started
    _say(f"Keycloak serves realm {realm} ({elapsed:.0f} s)")
    return elapsed


def _launch(dist: Path, realm: str, started: float) -> None:
    """Run ``kc.sh start-dev`` and wait until it serves ``realm``; KeycloakSetupError (the process
    stopped) when it exits or does not serve the realm in time."""
    java = neo4j_local.java_for(managed_neo4j.LINES["2026"])  # Java 21 or newer, found as for Neo4j 2026.x
    log_file = dist / "keycloak.log"
    env = {
        **os.environ,
        "JAVA_HOME": str(java.resolve().parent.parent),
        "KC_BOOTSTRAP_ADMIN_USERNAME": ADMIN_USER,
        "KC_BOOTSTRAP_ADMIN_PASSWORD": os.urandom(16).hex(),
    }
    command = [str(dist / "bin" / "kc.sh"), "start-dev", "--import-realm", "--http-host=127.0.0.1",
               f"--http-port={port()}"]  # fmt: skip
    _say(f"starting Keycloak {VERSION} on {base_url()} with {java} (log: {log_file}) ...")
    with log_file.open("ab") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    (dist / "keycloak.pid").write_text(str(process.pid), encoding="utf-8")
    while not ready(realm):
        if process.poll() is not None:
            tail = log_file.read_text(encoding="utf-8", errors="replace")[-3000:]
            raise KeycloakSetupError(
                f"Keycloak exited with {process.returncode} before it served realm {realm}:\n{tail}"
            )
        if time.monotonic() - started > START_TIMEOUT_S:
            stop()
            raise KeycloakSetupError(
                f"Keycloak did not serve realm {realm} within {START_TIMEOUT_S:.0f} s; see {log_file}"
            )
        time.sleep(1.0)


def stop() -> None:
    pid_file = home() / "keycloak.pid"
    if not pid_file.exists():
        return
    with contextlib.suppress(ProcessLookupError, ValueError):
        os.killpg(int(pid_file.read_text(encoding="utf-8")), signal.SIGTERM)
    pid_file.unlink(missing_ok=True)
