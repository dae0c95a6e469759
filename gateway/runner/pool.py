"""The warm pool: pre-started sandbox containers, each used for exactly one job.

A container is created, attached, started, and kept only once it says
``sandbox: ready`` (driver imported, connected, authenticated). A job takes
one, writes the job line, reads one result line, and the container is then
removed: nothing a query did can be seen by the next one. A supervisor
thread keeps the pool full in the background.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import docker.errors

from gateway.runner.docker_io import FrameReader, raw_socket, sandbox_spec
from gateway.runner.settings import RunnerSettings
from sandbox.wire import SANDBOX_READY

log = logging.getLogger(__name__)


@dataclass
class WarmContainer:
    container: Any
    attached: Any
    reader: FrameReader
    started_at: float

    @property
    def id(self) -> str:
        return str(self.container.id)


class WarmPool:
    def __init__(self, client: Any, settings: RunnerSettings, volume: str, runner_id: str) -> None:
        self.client = client
        self.settings = settings
        self.volume = volume
        self.runner_id = runner_id
        self._ready: queue.Queue[WarmContainer] = queue.Queue()
        self._starting = 0
        self._lock = threading.Condition()
        self._closed = False
        self.last_error: str | None = None
        # After a failed start, the next one waits (doubling up to a cap) so a dead daemon
        # or a missing image is not hammered.
        self._backoff = 0.0
        self._next_start = 0.0
        self.started = 0
        self.start_seconds: list[float] = []
        self._starter = ThreadPoolExecutor(max_workers=settings.start_concurrency, thread_name_prefix="sandbox-start")
        self._reaper = ThreadPoolExecutor(max_workers=2, thread_name_prefix="sandbox-reap")
        self._supervisor = threading.Thread(target=self._supervise, name="sandbox-pool", daemon=True)
        self._supervisor.start()

    # --- filling -------------------------------------------------------------------------------

    def _supervise(self) -> None:
        while True:
            with self._lock:
                if self._closed:
                    return
                now = time.monotonic()
                deficit = self.settings.pool_size - self._ready.qsize() - self._starting
                if now >= self._next_start:
                    # While failing, probe with one start at a time.
                    for _ in range(max(0, min(deficit, 1) if self._backoff else deficit)):
                        self._starting += 1
                        self._starter.submit(self._start_one)
                self._lock.wait(timeout=max(0.05, min(0.5, self._next_start - now)) if self._backoff else 0.5)

    def _start_one(self) -> None:
        began = time.monotonic()
        container = None
        try:
            container = self.client.containers.create(**sandbox_spec(self.settings, self.volume, self.runner_id))
            attached = container.attach_socket(params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
            reader = FrameReader(raw_socket(attached))
            container.start()
            reader.read_until_stderr(SANDBOX_READY.encode(), time.monotonic() + self.settings.ready_timeout_seconds)
            warm = WarmContainer(container, attached, reader, time.monotonic())
            with self._lock:
                if self._closed:
                    self.discard(warm)
                    return
                self._ready.put(warm)
                self.last_error = None
                self._backoff = 0.0
                self.started += 1
                self.start_seconds.append(time.monotonic() - began)
        except Exception as exc:
            with self._lock:
                self.last_error = _describe(exc, self.settings.image)
                self._backoff = min(max(self._backoff * 2, 0.5), 5.0)
                self._next_start = time.monotonic() + self._backoff
            log.warning("sandbox start failed: %s", self.last_error)
            if container is not None:
                self._remove(container)
        finally:
            with self._lock:
                self._starting -= 1
                self._lock.notify_all()

    # --- using ---------------------------------------------------------------------------------

    def take(self, timeout: float) -> WarmContainer | None:
        """A ready container, or None if none became ready within ``timeout``."""
        # While starts are failing, answer "unavailable" fast rather than after the full wait.
        wait = min(timeout, 2.0) if self.last_error else timeout
        try:
            warm = self._ready.get(timeout=wait)
        except queue.Empty:
            return None
        with self._lock:
            self._lock.notify_all()  # wake the supervisor to refill
        return warm

    def discard(self, warm: WarmContainer) -> None:
        """Remove a used (or unusable) container in the background."""
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
        flushed = 0
        while True:
            try:
                self.discard(self._ready.get_nowait())
                flushed += 1
            except queue.Empty:
                break
        with self._lock:
            self._lock.notify_all()
        return flushed

    def ready_count(self) -> int:
        return self._ready.qsize()

    def container_ids(self) -> list[str]:
        return [w.id for w in list(self._ready.queue)]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._lock.notify_all()
        self._starter.shutdown(wait=True, cancel_futures=True)
        while True:
            try:
                self.discard(self._ready.get_nowait())
            except queue.Empty:
                break
        self._reaper.shutdown(wait=True)


def _describe(exc: BaseException, image: str) -> str:
    if isinstance(exc, docker.errors.ImageNotFound):
        return f"sandbox image {image} is not present (build it: cypher-gateway images build sandbox)"
    if isinstance(exc, TimeoutError):
        return "a sandbox container did not become ready in time"
    if isinstance(exc, docker.errors.DockerException | ConnectionError | OSError):
        return f"the Docker daemon is not usable: {type(exc).__name__}: {str(exc)[:300]}"
    return f"{type(exc).__name__}: {str(exc)[:300]}"
