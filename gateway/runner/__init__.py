"""The runner: every approved query runs in a hardened Docker container, never in-process.

    runner = SandboxRunner(settings_for(gateway_settings), policy.sandbox)
    job = job_for(tool_policy, query_id=..., cypher=..., params=..., result_check=...)
    result = runner.run(job, principal)   # SandboxResult; raises Busy at capacity,
                                          # SandboxUnavailable when no sandbox can run
    error = error_for(result)             # the typed GatewayError for a failed result, or None
    runner.cancel(job.query_id)           # from another thread: kill the job's container, end its transaction

This package imports only the Docker SDK, pydantic and the wire's dataclasses: the
``neo4j`` driver is never loaded into the gateway process, so there is no code path by
which a query could run unsandboxed.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import socket
import threading
import time
import uuid
import weakref
from collections import deque
from dataclasses import dataclass
from typing import Any, Protocol

import docker.errors
from docker.client import DockerClient

from gateway.catalogue import SANDBOX_EXPLAIN, SANDBOX_TOO_DEEP
from gateway.domain import Principal
from gateway.errors import Busy, GatewayError, Neo4jRefused, QueryCancelled, QueryTimeout, SandboxUnavailable
from gateway.policy import SandboxPolicy
from gateway.runner.contract import credentials_line, job_line, parse_result
from gateway.runner.docker_io import LABEL_OWNER, LABEL_RUNNER, StreamClosed, sandbox_spec
from gateway.runner.forwarder import Forwarder
from gateway.runner.jobs import job_for, terminate_job
from gateway.runner.pool import WarmContainer, WarmPool
from gateway.runner.settings import RunnerSettings, settings_for
from sandbox.wire import SandboxJob, SandboxResult, failure

__all__ = [
    "RunRecord",
    "Runner",
    "RunnerSettings",
    "SandboxRunner",
    "error_for",
    "job_for",
    "remove_leftovers",
    "remove_orphans",
    "settings_for",
]

log = logging.getLogger(__name__)
# A daemon or image that was missing is looked for again at most this often.
RETRY_START_SECONDS = 5.0
# How often the forwarder's health is checked (off the request path).
WATCH_SECONDS = 2.0
# How many recent queries the runner remembers (which container ran which principal's query).
RECORDS_KEPT = 10_000
# A cancellation can arrive before its job does (while the guard still runs); it is remembered
# this long, so the job is refused when it comes.
CANCEL_MEMORY_SECONDS = 60.0


class Runner(Protocol):
    def run(
        self, job: SandboxJob, principal: Principal | None = None, *, arrived: float | None = None
    ) -> SandboxResult: ...
    def cancel(self, query_id: str) -> bool: ...
    def available(self) -> tuple[bool, str]: ...
    def close(self) -> None: ...


@dataclass(frozen=True)
class RunRecord:
    """Which container ran a query, for whom, and as its how-manyth query."""

    query_id: str
    principal: str | None
    container_id: str
    use: int
    # With the name, who the query ran for: a tokens-file name and an OAuth subject are two principals.
    source: str | None = None


def error_for(result: SandboxResult) -> GatewayError | None:
    """The gateway error a failed sandbox result stands for (None when it succeeded)."""
    if result.ok or result.error is None:
        return None
    err = result.error
    if err.code == "timeout":
        return QueryTimeout(err.message)
    if err.code == "cancelled":
        return QueryCancelled(err.message)
    if err.code == "neo4j_refused":
        return Neo4jRefused(err.message, err.neo4j_code, from_original=err.from_original)
    if err.code == "explain_rejected":
        return SANDBOX_EXPLAIN.rejected(err.message)
    if err.code == "too_deep":
        return SANDBOX_TOO_DEEP.rejected(err.message)
    return SandboxUnavailable(err.message)


class SandboxRunner:
    """Implements :class:`Runner` with a warm pool of sandbox containers and one forwarder.

    ``policy`` is the policy's ``sandbox`` section: reuse, the busy wait, each principal's
    concurrency. Harnesses that pass none get its defaults (one query per container).
    """

    def __init__(self, settings: RunnerSettings, policy: SandboxPolicy | None = None) -> None:
        self.settings = settings
        self.policy = policy or SandboxPolicy()
        self.runner_id = uuid.uuid4().hex[:12]
        self.runtime: str | None = None
        self._lock = threading.Lock()
        self._client: Any = None
        self._forwarder: Forwarder | None = None
        self._pool: WarmPool | None = None
        self._reason = "not started"
        self._last_attempt = 0.0
        self._closed = False
        self._stop = threading.Event()
        self._records: deque[RunRecord] = deque(maxlen=RECORDS_KEPT)
        self.forwarder_restarts = 0
        # Jobs in flight (query id -> its container, once it has one) and recent cancellations.
        self._jobs_lock = threading.Lock()
        self._running: dict[str, WarmContainer | None] = {}
        self._cancelled: dict[str, float] = {}
        self._start()
        self._watcher = threading.Thread(target=self._watch, name="sandbox-forwarder-watch", daemon=True)
        self._watcher.start()
        # A process that exits without close() must not leave containers behind.
        atexit.register(_close_quietly, weakref.ref(self))

    # --- lifecycle ---------------------------------------------------------------------------

    def _start(self) -> None:
        """Connect to Docker, start the forwarder and the pool; on failure remember why."""
        self._last_attempt = time.monotonic()
        try:
            client = (
                DockerClient(base_url=self.settings.docker_host, timeout=30)
                if self.settings.docker_host
                else DockerClient.from_env(timeout=30)
            )
            client.ping()
            client.images.get(self.settings.image)
            runtime = self._runtime_for(client)
        except docker.errors.ImageNotFound:
            self._reason = (
                f"sandbox image {self.settings.image} is not present (build it: cypher-gateway images build sandbox)"
            )
            return
        except _RuntimeMissing as exc:
            self._reason = str(exc)
            return
        except Exception as exc:
            self._reason = f"the Docker daemon is not reachable: {type(exc).__name__}: {str(exc)[:300]}"
            return
        with contextlib.suppress(Exception):
            remove_orphans(client)
        forwarder = Forwarder(client, self.settings, self.runner_id, runtime)
        try:
            forwarder.start()
        except Exception as exc:
            forwarder.close()
            if runtime == "runc" or self.settings.runtime == "crun":
                self._reason = f"the Neo4j forwarder could not start: {exc}"
                return
            # crun is registered but cannot start a container here (e.g. a hybrid cgroup host).
            log.warning("crun could not start a container (%s); sandboxes run under runc", str(exc)[:300])
            runtime = "runc"
            forwarder = Forwarder(client, self.settings, self.runner_id, runtime)
            try:
                forwarder.start()
            except Exception as exc2:
                forwarder.close()
                self._reason = f"the Neo4j forwarder could not start: {exc2}"
                return
        self._client, self._forwarder, self.runtime = client, forwarder, runtime
        account = credentials_line(self.settings.neo4j_user, self.settings.neo4j_password.get_secret_value())
        self._pool = WarmPool(
            client, self.settings, self.policy, forwarder.volume_name, self.runner_id,
            runtime=runtime, credentials_line=account,
        )  # fmt: skip
        self._reason = ""

    def _runtime_for(self, client: Any) -> str:
        if self.settings.runtime == "runc":
            return "runc"
        registered = client.info().get("Runtimes") or {}
        if "crun" in registered:
            return "crun"
        if self.settings.runtime == "crun":
            raise _RuntimeMissing(
                "sandbox_runtime is crun but the Docker daemon has no crun runtime registered "
                "(scripts/ensure-docker.sh installs and registers it)"
            )
        log.warning(
            "the Docker daemon has no crun runtime registered: sandboxes run under runc, "
            "which costs more CPU per container (scripts/ensure-docker.sh registers crun)"
        )
        return "runc"

    def _watch(self) -> None:
        """Restart a dead forwarder; the warm containers' connections died with it, so replace them too."""
        while not self._stop.wait(WATCH_SECONDS):
            with self._lock:
                forwarder, pool = self._forwarder, self._pool
                if self._closed or forwarder is None or pool is None or forwarder.running():
                    continue
                log.warning("the Neo4j forwarder is not running; restarting it")
                try:
                    forwarder.restart()
                    self.forwarder_restarts += 1
                except Exception as exc:
                    log.warning("forwarder restart failed: %s", exc)
                    continue
            pool.flush()

    def _ensure_started(self) -> WarmPool:
        with self._lock:
            if self._closed:
                raise SandboxUnavailable("the runner is closed")
            if self._pool is None and time.monotonic() - self._last_attempt >= RETRY_START_SECONDS:
                self._start()
            if self._pool is None:
                raise SandboxUnavailable(self._reason)
            return self._pool

    def available(self) -> tuple[bool, str]:
        try:
            pool = self._ensure_started()
        except SandboxUnavailable as exc:
            return False, exc.message
        if self._forwarder is None or not self._forwarder.running():
            return False, "the Neo4j forwarder is not running"
        if pool.ready_count() == 0 and pool.last_error:
            return False, pool.last_error
        return True, ""

    def wait_ready(self, timeout: float = 60.0, count: int | None = None) -> bool:
        """Block until ``count`` spares (default: the pool size) are ready (start-up, tests, benchmarks)."""
        wanted = self.settings.pool_size if count is None else count
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._pool is not None and self._pool.ready_count() >= wanted:
                return True
            time.sleep(0.05)
        return False

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            self._closed = True
            # Each step may fail (the daemon may be gone); the next must still run.
            if self._pool is not None:
                with contextlib.suppress(Exception):
                    self._pool.close()
            if self._forwarder is not None:
                with contextlib.suppress(Exception):
                    self._forwarder.close()
            if self._client is not None:
                with contextlib.suppress(Exception):
                    remove_leftovers(self._client, self.runner_id)
                with contextlib.suppress(Exception):
                    self._client.close()
            self._pool = self._forwarder = self._client = None

    # --- running -----------------------------------------------------------------------------

    def run(
        self, job: SandboxJob, principal: Principal | None = None, *, arrived: float | None = None
    ) -> SandboxResult:
        """Run ``job`` for ``principal`` in a sandbox.

        Waits for a container (and for the principal's concurrency limit) until the policy's
        ``busy_wait_ms`` after ``arrived`` (the request's ``time.monotonic()``, default now), then
        raises ``Busy``. The time the request spent in the guard counts against the wait: on a
        loaded host that time grows, and the wait is what bounds a busy answer's latency.
        Raises ``SandboxUnavailable`` when no sandbox can be started. ``principal`` None
        (harnesses, the runner's own jobs): a container nobody else uses. A job cancelled
        before or while it runs answers ``cancelled``.
        """
        with self._jobs_lock:
            if job.query_id in self._cancelled:
                return _cancelled(job)
            self._running[job.query_id] = None
        try:
            pool = self._ensure_started()
            since = time.monotonic() if arrived is None else arrived
            warm = pool.acquire(principal, since + self.policy.busy_wait_ms / 1000)
            with self._jobs_lock:
                self._running[job.query_id] = warm
                cancelled = job.query_id in self._cancelled
            reusable = False
            try:
                record = RunRecord(job.query_id, principal.name if principal else None, warm.id, warm.uses,
                                   principal.source if principal else None)  # fmt: skip
                self._records.append(record)
                result = _cancelled(job) if cancelled else self._run_in(warm, job)
                with self._jobs_lock:
                    # A job whose container was killed under it reports that, not the broken stream.
                    cancelled = job.query_id in self._cancelled
                if cancelled:
                    return _cancelled(job)
                # A container that saw anything unusual is not trusted with another query.
                reusable = result.ok and result.error is None and not result.truncated and not result.redacted
                return result
            finally:
                pool.release(warm, reusable=reusable)
        finally:
            with self._jobs_lock:
                self._running.pop(job.query_id, None)
                self._cancelled.pop(job.query_id, None)

    def cancel(self, query_id: str) -> bool:
        """Stop ``query_id``: kill its container and end its Neo4j transaction, or refuse the job when it arrives.

        Safe from any thread; returns once the transaction has ended (or could not be ended).
        True when the job was in flight.
        """
        now = time.monotonic()
        with self._jobs_lock:
            self._cancelled = {q: t for q, t in self._cancelled.items() if now - t < CANCEL_MEMORY_SECONDS}
            self._cancelled[query_id] = now
            in_flight = query_id in self._running
            warm = self._running.get(query_id)
        if warm is not None:
            self._kill(warm, query_id)
        return in_flight

    def _kill(self, warm: WarmContainer, query_id: str) -> None:
        """Kill a sandbox that holds a job, then end the job's Neo4j transaction from another sandbox.

        Killing the container closes its Bolt connection, but Neo4j does not reliably end a
        running transaction when its connection closes (measured: some ran on for minutes, until
        their timeout); the sandbox marked the transaction with the query id, and TERMINATE
        TRANSACTIONS by that id ends it.
        """
        with contextlib.suppress(Exception):
            warm.container.kill()
        job = terminate_job(query_id, own_query_id=uuid.uuid4().hex, database=self.settings.database,
                            timeout_seconds=self.settings.terminate_timeout_seconds)  # fmt: skip
        try:
            result = self.run(job)
        except (SandboxUnavailable, Busy) as exc:
            result = failure(job.query_id, "unavailable", exc.message)
        if not result.ok:
            # Neo4j still ends it at the policy's timeout, which it enforces server-side.
            log.warning("could not end the Neo4j transaction of query %s: %s", query_id, result.error)

    def _run_in(self, warm: WarmContainer, job: SandboxJob) -> SandboxResult:
        wall_clock = job.timeout_seconds + self.settings.wall_clock_grace_seconds
        deadline = time.monotonic() + wall_clock
        try:
            warm.reader.sock.sendall(job_line(job))
            line = warm.reader.read_stdout_line(deadline)
        except TimeoutError:
            self._kill(warm, job.query_id)
            return failure(
                job.query_id, "timeout", f"the sandbox did not answer within {wall_clock:g} s and was killed"
            )
        except (StreamClosed, OSError):
            if job.query_id in self._cancelled:
                return failure(job.query_id, "sandbox_failed", "the query was cancelled and its sandbox killed")
            return failure(job.query_id, "sandbox_failed", self._death_reason(warm))
        try:
            result = parse_result(line)
        except ValueError:
            return failure(job.query_id, "internal", "the sandbox's answer did not validate")
        if result.query_id != job.query_id and result.error is None:
            return failure(job.query_id, "internal", "the sandbox answered a different job")
        return result

    def _death_reason(self, warm: WarmContainer) -> str:
        try:
            warm.container.wait(timeout=5)
            warm.container.reload()
            state = warm.container.attrs.get("State", {})
        except Exception as exc:
            return f"the sandbox container stopped without answering ({type(exc).__name__})"
        if state.get("OOMKilled"):
            return f"the sandbox was killed for exceeding its memory limit ({self.settings.memory_mb} MB)"
        return f"the sandbox exited without answering (exit code {state.get('ExitCode')})"

    # --- introspection (tests, benchmark) -----------------------------------------------------

    def records(self) -> list[RunRecord]:
        """The recent queries' containers, oldest first."""
        return list(self._records)

    def pool_container_ids(self) -> list[str]:
        return self._pool.container_ids() if self._pool else []

    def forwarder_container_id(self) -> str | None:
        return str(self._forwarder.container.id) if self._forwarder and self._forwarder.container else None

    def sandbox_spec(self) -> dict[str, Any]:
        """The spec the pool starts every sandbox with: a diagnostic probe runs in the same box."""
        self._ensure_started()
        assert self._forwarder is not None
        return sandbox_spec(
            self.settings, self._forwarder.volume_name, self.runner_id, runtime=str(self.runtime), max_jobs=1
        )


class _RuntimeMissing(Exception):
    pass


def _cancelled(job: SandboxJob) -> SandboxResult:
    return failure(job.query_id, "cancelled", "the query was cancelled by its caller; its sandbox was killed")


def _close_quietly(ref: weakref.ReferenceType[SandboxRunner]) -> None:
    runner = ref()
    if runner is not None:
        with contextlib.suppress(Exception):
            runner.close()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_orphans(client: Any) -> int:
    """Remove containers and volumes of runners whose owning process (on this host) is dead."""
    host = socket.gethostname()
    dead: set[str] = set()
    # Other runners remove their containers while we list: one gone between the list and its
    # inspection is skipped, not an error that stops the start-up.
    for container in client.containers.list(all=True, ignore_removed=True, filters={"label": LABEL_OWNER}):
        owner = container.labels.get(LABEL_OWNER, "")
        owner_host, _, pid = owner.rpartition(":")
        if owner_host == host and pid.isdigit() and not _pid_alive(int(pid)):
            dead.add(container.labels.get(LABEL_RUNNER, ""))
    return sum(remove_leftovers(client, runner_id) for runner_id in dead if runner_id)


def remove_leftovers(client: Any, runner_id: str | None = None) -> int:
    """Remove containers and volumes a runner left behind (all runners' when ``runner_id`` is None)."""
    label = f"{LABEL_RUNNER}={runner_id}" if runner_id else LABEL_RUNNER
    removed = 0
    for container in client.containers.list(all=True, ignore_removed=True, filters={"label": label}):
        with contextlib.suppress(Exception):
            container.remove(force=True)
            removed += 1
    for volume in client.volumes.list(filters={"label": label}):
        with contextlib.suppress(Exception):
            volume.remove(force=True)
    return removed
