"""The warm pool: ready sandbox containers, each serving one principal at most.

A container is created, attached, started, handed its account line on stdin, and kept
once its first job process says ``sandbox: ready`` (driver imported, connected,
authenticated). The pool holds:

- **spares**: ready, never used, nobody's; the supervisor keeps ``pool_size`` of them;
- **a principal's idle containers**: they ran fewer than the policy's
  ``max_queries_per_container`` queries, all of that principal, all answered cleanly, and
  their next job process has said ready; removed after ``idle_container_seconds``;
- containers **in use**, and used ones **re-arming** (waiting for that next ready line).

A query takes its principal's idle container if there is one, else a spare. A container
is bound to the first principal that uses it and never serves another; after an error,
a timeout, a truncation, a redaction or its last allowed query it is removed. With
``max_queries_per_container: 1`` every container is used once.

A query whose principal has a container re-arming (and no idle one) claims it and waits for
it, rather than taking a spare or being told ``busy``: that container is reserved for the
principal, so an agent calling back to back keeps one container (docs/decisions/0014). A
re-armed container goes to a query that claimed it before any later query of the principal.

Admission is bounded in time: a principal over its concurrency limit, or a query that
finds no container, waits at most the policy's ``busy_wait_ms`` and then gets ``Busy``
(or ``SandboxUnavailable`` when containers cannot be started at all). Every live
container counts against ``max_containers``; when spares are missing and that bound is
reached, the longest-idle container of any principal makes room.
"""

from __future__ import annotations

import contextlib
import logging
import statistics
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import docker.errors

from gateway.domain import Principal
from gateway.errors import Busy, SandboxUnavailable
from gateway.policy import SandboxPolicy
from gateway.runner.docker_io import FrameReader, raw_socket, sandbox_spec
from gateway.runner.settings import RunnerSettings
from sandbox.wire import SANDBOX_READY

log = logging.getLogger(__name__)
# The retry hint is the typical time a fresh container takes, from this many recent starts.
RECENT_STARTS = 20
MIN_RETRY_AFTER_MS = 100


@dataclass(eq=False)
class WarmContainer:
    container: Any
    attached: Any
    reader: FrameReader
    started_at: float
    # Bound on first use and never changed: a container serves one principal at most.
    principal: Principal | None = None
    uses: int = 0
    idle_since: float = 0.0

    @property
    def id(self) -> str:
        return str(self.container.id)


class WarmPool:
    def __init__(
        self,
        client: Any,
        settings: RunnerSettings,
        policy: SandboxPolicy,
        volume: str,
        runner_id: str,
        *,
        runtime: str,
        credentials_line: bytes,
    ) -> None:
        self.client = client
        self.settings = settings
        self.policy = policy
        self.volume = volume
        self.runner_id = runner_id
        self.runtime = runtime
        self._credentials_line = credentials_line
        self._lock = threading.Condition()
        self._spares: deque[WarmContainer] = deque()
        self._idle: dict[Principal, list[WarmContainer]] = {}
        self._running: dict[Principal, int] = {}
        # A principal's used containers waiting for their next job process (re-arming), and how
        # many of its queries are waiting for one of them instead of taking a spare.
        self._rearming: dict[Principal, int] = {}
        self._claims: dict[Principal, int] = {}
        self._live = 0  # started or starting, not yet discarded
        self._starting = 0
        self._closed = False
        self.last_error: str | None = None
        # After a failed start, the next one waits (doubling up to a cap) so a dead daemon
        # or a missing image is not hammered.
        self._backoff = 0.0
        self._next_start = 0.0
        self.started = 0
        self.start_seconds: list[float] = []
        self._starter = ThreadPoolExecutor(max_workers=settings.start_concurrency, thread_name_prefix="sandbox-start")
        # A re-arming container mostly waits for its next ready line: one thread each, at most.
        self._rearmer = ThreadPoolExecutor(max_workers=settings.max_containers, thread_name_prefix="sandbox-rearm")
        self._reaper = ThreadPoolExecutor(max_workers=2, thread_name_prefix="sandbox-reap")
        self._supervisor = threading.Thread(target=self._supervise, name="sandbox-pool", daemon=True)
        self._supervisor.start()

    # --- filling -------------------------------------------------------------------------------

    def _supervise(self) -> None:
        with self._lock:
            while not self._closed:
                now = time.monotonic()
                expired = self._expire_idle(now)
                deficit = self.settings.pool_size - len(self._spares) - self._starting
                room = self.settings.max_containers - self._live
                while deficit > room and (oldest := self._oldest_idle()) is not None:
                    expired.append(oldest)
                    self._live -= 1
                    room += 1
                # Removal only closes a stream and hands the container to the reaper: quick.
                for warm in expired:
                    self._remove_later(warm)
                if now >= self._next_start:
                    # While failing, probe with one start at a time.
                    wanted = min(deficit, room, 1 if self._backoff else deficit)
                    for _ in range(max(0, wanted)):
                        self._starting += 1
                        self._live += 1
                        self._starter.submit(self._start_one)
                # Woken by every change (a spare taken, a start done, a container released).
                self._lock.wait(timeout=max(0.05, min(0.5, self._next_start - now)) if self._backoff else 0.5)

    def _expire_idle(self, now: float) -> list[WarmContainer]:
        expired: list[WarmContainer] = []
        for principal, idle in list(self._idle.items()):
            keep = [w for w in idle if now - w.idle_since < self.policy.idle_container_seconds]
            expired += [w for w in idle if w not in keep]
            if keep:
                self._idle[principal] = keep
            else:
                del self._idle[principal]
        self._live -= len(expired)
        return expired

    def _oldest_idle(self) -> WarmContainer | None:
        candidates = [w for idle in self._idle.values() for w in idle]
        if not candidates:
            return None
        oldest = min(candidates, key=lambda w: w.idle_since)
        assert oldest.principal is not None
        idle = self._idle[oldest.principal]
        idle.remove(oldest)
        if not idle:
            del self._idle[oldest.principal]
        return oldest

    def _start_one(self) -> None:
        began = time.monotonic()
        container = None
        try:
            spec = sandbox_spec(
                self.settings, self.volume, self.runner_id,
                runtime=self.runtime, max_jobs=self.policy.max_queries_per_container,
            )  # fmt: skip
            container = self.client.containers.create(**spec)
            attached = container.attach_socket(params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
            reader = FrameReader(raw_socket(attached))
            container.start()
            # The account goes over the attach stream: never into the container's configuration.
            reader.sock.sendall(self._credentials_line)
            reader.read_until_stderr(SANDBOX_READY.encode(), time.monotonic() + self.settings.ready_timeout_seconds)
            warm = WarmContainer(container, attached, reader, time.monotonic())
            with self._lock:
                self._starting -= 1
                if self._closed:
                    self._live -= 1
                    self._remove_later(warm)
                    return
                self._spares.append(warm)
                self.last_error = None
                self._backoff = 0.0
                self.started += 1
                self.start_seconds.append(time.monotonic() - began)
                self._lock.notify_all()
        except Exception as exc:
            with self._lock:
                self._starting -= 1
                self._live -= 1
                self.last_error = _describe(exc, self.settings.image)
                self._backoff = min(max(self._backoff * 2, 0.5), 5.0)
                self._next_start = time.monotonic() + self._backoff
                self._lock.notify_all()
            log.warning("sandbox start failed: %s", self.last_error)
            if container is not None:
                self._remove(container)

    # --- using ---------------------------------------------------------------------------------

    def acquire(self, principal: Principal | None, deadline: float) -> WarmContainer:
        """A ready container for ``principal``'s next query, within ``deadline`` (monotonic).

        Raises ``Busy`` when the principal's concurrency limit or the pool stays full until the
        deadline, ``SandboxUnavailable`` when containers cannot be started at all. A principal of
        None (harnesses) has no limit and never gets a used container.
        """
        with self._lock:
            if principal is not None:
                limit = self.policy.max_concurrent_per_principal
                while self._running.get(principal, 0) >= limit:
                    if not self._wait(deadline):
                        raise self._busy(f"{limit} queries of this principal are already running")
                self._running[principal] = self._running.get(principal, 0) + 1
            claimed = False
            try:
                while True:
                    warm = self._take_idle(principal, claimed)
                    if warm is None:
                        claimed = self._claim(principal, claimed)
                        warm = None if claimed else self._take_spare()
                    if warm is not None:
                        warm.principal = principal
                        warm.uses += 1
                        return warm
                    if claimed:
                        # Its own container is re-arming: that is capacity reserved for this
                        # principal, so the query waits for it (at most the re-arm's own ready
                        # timeout, after which the container is discarded and the claim lapses)
                        # rather than taking a spare another principal may need, or being told
                        # "busy" while nobody else is using the gateway.
                        self._lock.wait(timeout=0.5)
                        continue
                    if not self._wait(deadline):
                        if self.last_error is not None:
                            raise SandboxUnavailable(self.last_error)
                        raise self._busy("every sandbox is in use")
            except BaseException:
                self._release_slot(principal)
                raise
            finally:
                if claimed:
                    self._unclaim(principal)

    def _claim(self, principal: Principal | None, claimed: bool) -> bool:
        """Whether this query (still) waits for one of its principal's re-arming containers.

        Each waiting query claims one re-arming container; a claim lapses when a re-arm
        fails and there are more claims than re-arming containers (that query then takes a
        spare, or waits for one within the busy deadline).
        """
        if principal is None:
            return False
        rearming, claims = self._rearming.get(principal, 0), self._claims.get(principal, 0)
        if claimed:
            if claims <= rearming:
                return True
            self._unclaim(principal)
            return False
        if rearming > claims:
            self._claims[principal] = claims + 1
            return True
        return False

    def _unclaim(self, principal: Principal | None) -> None:
        if principal is None:
            return
        left = self._claims.get(principal, 0) - 1
        if left > 0:
            self._claims[principal] = left
        else:
            self._claims.pop(principal, None)

    def _take_idle(self, principal: Principal | None, claimed: bool) -> WarmContainer | None:
        """One of the principal's idle containers; one a waiting query claimed goes to a claimant.

        Otherwise a query arriving later would take the container a claimant waited for, and
        the claimant, its claim lapsed, would be answered "busy" long after its wait.
        """
        idle = self._idle.get(principal) if principal is not None else None
        if not idle:
            return None
        assert principal is not None
        surplus = len(idle) + self._rearming.get(principal, 0) - self._claims.get(principal, 0)
        if not claimed and surplus <= 0:
            return None
        warm = idle.pop()
        if not idle:
            del self._idle[principal]
        return warm

    def _take_spare(self) -> WarmContainer | None:
        if not self._spares:
            return None
        warm = self._spares.popleft()
        self._lock.notify_all()  # wake the supervisor to refill
        return warm

    def _wait(self, deadline: float) -> bool:
        """Wait for a change; False once the deadline has passed."""
        remaining = deadline - time.monotonic()
        if remaining <= 0 or self._closed:
            return False
        self._lock.wait(timeout=remaining)
        return True

    def _busy(self, why: str) -> Busy:
        recent = self.start_seconds[-RECENT_STARTS:]
        typical_ms = statistics.median(recent) * 1000 if recent else self.policy.busy_wait_ms
        retry_after = max(MIN_RETRY_AFTER_MS, round(typical_ms))
        return Busy(
            f"the gateway is at capacity ({why}; waited {self.policy.busy_wait_ms} ms): nothing ran; "
            f"retry after {retry_after} ms",
            retry_after,
        )

    def _release_slot(self, principal: Principal | None) -> None:
        if principal is not None:
            left = self._running.get(principal, 0) - 1
            if left > 0:
                self._running[principal] = left
            else:
                self._running.pop(principal, None)
        self._lock.notify_all()

    def release(self, warm: WarmContainer, *, reusable: bool) -> None:
        """Give a used container back: kept for its principal's next query, or removed.

        ``reusable`` is the caller's verdict on the query it just ran (answered, nothing
        truncated or redacted); the pool adds its own conditions.
        """
        keep = (
            reusable
            and warm.principal is not None
            and warm.uses < self.policy.max_queries_per_container
            and not self._closed
        )
        with self._lock:
            self._release_slot(warm.principal)
            if keep and warm.principal is not None:
                self._rearming[warm.principal] = self._rearming.get(warm.principal, 0) + 1
        if keep:
            try:
                self._rearmer.submit(self._rearm, warm)
                return
            except RuntimeError:  # shutting down
                with self._lock:
                    self._rearmed(warm)
        self.discard(warm)

    def _rearmed(self, warm: WarmContainer) -> None:
        """One of the principal's re-arming containers is done re-arming (ready or not); under the lock."""
        assert warm.principal is not None
        left = self._rearming.get(warm.principal, 0) - 1
        if left > 0:
            self._rearming[warm.principal] = left
        else:
            self._rearming.pop(warm.principal, None)
        self._lock.notify_all()

    def _rearm(self, warm: WarmContainer) -> None:
        """Wait for the container's next job process to say ready, then keep it for its principal."""
        try:
            warm.reader.read_until_stderr(
                SANDBOX_READY.encode(), time.monotonic() + self.settings.ready_timeout_seconds
            )
        except Exception:
            with self._lock:
                self._rearmed(warm)
            self.discard(warm)
            return
        with self._lock:
            self._rearmed(warm)
            if not self._closed and warm.principal is not None:
                warm.idle_since = time.monotonic()
                self._idle.setdefault(warm.principal, []).append(warm)
                self._lock.notify_all()
                return
        self.discard(warm)

    def discard(self, warm: WarmContainer) -> None:
        """Remove a used (or unusable) container in the background."""
        with self._lock:
            self._live -= 1
            self._lock.notify_all()
        self._remove_later(warm)

    def _remove_later(self, warm: WarmContainer) -> None:
        with contextlib.suppress(Exception):
            warm.attached.close()
        try:
            self._reaper.submit(self._remove, warm.container)
        except RuntimeError:  # the executor is shut down (closing, or interpreter exit)
            self._remove(warm.container)

    def _remove(self, container: Any) -> None:
        with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError, Exception):
            container.remove(force=True)

    def flush(self) -> int:
        """Discard every ready container (their connections went through a forwarder that died)."""
        with self._lock:
            ready = list(self._spares) + [w for idle in self._idle.values() for w in idle]
            self._spares.clear()
            self._idle.clear()
            self._live -= len(ready)
            self._lock.notify_all()
        for warm in ready:
            self._remove_later(warm)
        return len(ready)

    # --- introspection -------------------------------------------------------------------------

    def ready_count(self) -> int:
        """Spares ready for anyone (a principal's idle containers are not counted)."""
        with self._lock:
            return len(self._spares)

    def container_ids(self) -> list[str]:
        with self._lock:
            return [w.id for w in self._spares]

    def idle_ids(self, principal: Principal) -> list[str]:
        with self._lock:
            return [w.id for w in self._idle.get(principal, [])]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._lock.notify_all()
        self._starter.shutdown(wait=True, cancel_futures=True)
        self._rearmer.shutdown(wait=True, cancel_futures=True)
        self.flush()
        self._reaper.shutdown(wait=True)


def _describe(exc: BaseException, image: str) -> str:
    if isinstance(exc, docker.errors.ImageNotFound):
        return f"sandbox image {image} is not present (build it: cypher-gateway images build sandbox)"
    if isinstance(exc, TimeoutError):
        return "a sandbox container did not become ready in time"
    if isinstance(exc, docker.errors.DockerException | ConnectionError | OSError):
        return f"the Docker daemon is not usable: {type(exc).__name__}: {str(exc)[:300]}"
    return f"{type(exc).__name__}: {str(exc)[:300]}"
