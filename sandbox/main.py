"""The sandbox program: jobs in on stdin, results out on stdout, each job in a fresh process.

    python3 -I -S -B /opt/sandbox/sandbox/launch.py     (the image's entry point)
    python3 -m sandbox.main                              (on a host, for tests)

The first line on stdin is the Neo4j account (``sandbox/wire.py``: ``Credentials``); it is
never in the container's configuration. Then, up to ``CGW_MAX_JOBS`` times, this process
(which has only imported code: no thread, no connection) forks a child that connects,
authenticates and warms up, then waits at its gate: a pipe only this process can write. Once
the gate opens the child says ``sandbox: ready`` on stderr, reads one job line, writes one
result line and exits. Connecting before the job is read is what makes a pooled container
fast: the job pays only for its own round trips. In a container that serves several jobs the
next child is forked as soon as the current one has its gate opened, so it connects while
the current job runs and a principal calling back to back does not wait for it.

Between two jobs, when this program is the container's first process, everything the
previous job left is removed before the next child's gate opens: every process in the
container but this one and that child is killed and the scratch tmpfs emptied. The next
child is forked by this process, never by a job, and reads nothing until its gate opens. A
job never shares a process, a Bolt connection or a file with the job before it, even in a
container the policy lets serve several jobs of one principal.
Nothing but result lines is ever written to stdout; credentials are never written anywhere.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import os
import shutil
import signal
import sys
import time
from collections.abc import Callable
from typing import Protocol

from sandbox.config import ConfigError, SandboxConfig, read_credentials
from sandbox.scope_check import filter_rows
from sandbox.wire import (
    SANDBOX_READY,
    SCRATCH_DIR,
    SandboxError,
    SandboxJob,
    SandboxResult,
    WireError,
    decode,
    failure,
    to_json,
)
from sandbox.withhold import Withholding

# A job is a query (<= the policy's max_query_chars) plus parameters; anything
# much larger than this is not a job we would run, and reading it would cost memory.
MAX_JOB_LINE = 4 * 1024 * 1024
# A child's exit status: it ran its job, or stdin closed before a job came (the runner is done).
EXIT_DONE, EXIT_NO_JOB = 0, 3
# The byte that lets an armed job process say ready and read its job.
GATE_OPEN = b"G"
# How many times the reset looks for processes a job left (each round kills what it finds).
KILL_ROUNDS = 2000


class Backend(Protocol):
    warm_error: SandboxError | None
    # Tokens of the last job's elements under a derived rule that Neo4j confirmed visible.
    derived_visible: frozenset[str]

    def warm(self) -> None: ...
    def run(self, job: SandboxJob) -> SandboxResult: ...
    def close(self) -> None: ...


def backend_type(config: SandboxConfig) -> Callable[[SandboxConfig], Backend]:
    # Imported once in the parent, so no child pays for the driver's import (nor for the
    # codec the driver loads when it first resolves a host name).
    import encodings.idna  # noqa: F401

    if config.transport == "query-api":
        from sandbox.query_api import QueryApiBackend

        return QueryApiBackend
    from sandbox.bolt import BoltBackend

    return BoltBackend


def _apply_scope(job: SandboxJob, result: SandboxResult, confirmed: frozenset[str] = frozenset()) -> SandboxResult:
    """Layer 2 of scope: drop rows that carry anything outside the caller's scope."""
    if job.scope is None or not result.ok:
        return result
    rows, redacted = filter_rows(result.columns, result.rows, job.scope, confirmed, job.params)
    if not redacted:
        return result
    # Renumber the element tokens, or the numbers the dropped rows used would show as gaps.
    # (Imported here: serialize loads the driver, which the program's start-up never does.)
    from sandbox.serialize import ElementTokens

    rows = ElementTokens().apply(rows)
    # The byte count must describe the rows actually returned.
    size = len(json.dumps(rows, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    return dataclasses.replace(result, rows=rows, row_count=len(rows), redacted=redacted, bytes=size)


def _withhold(job: SandboxJob, result: SandboxResult) -> SandboxResult:
    """Hidden properties: the keys the result check needed go now; the answer says how many elements hide some."""
    withholding = Withholding.for_job(job)
    if withholding is None or not result.ok:
        return result
    elements, removed = withholding.apply(result.rows)
    if not elements:
        return result
    size = result.bytes
    if removed:  # the byte count must describe the rows actually returned
        size = len(json.dumps(result.rows, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    return dataclasses.replace(result, withheld=elements, bytes=size)


def handle(line: bytes, backend: Backend) -> SandboxResult:
    started = time.perf_counter()
    try:
        job = decode(SandboxJob, line)
    except WireError as exc:
        return failure("", "invalid_job", f"job did not validate: {exc}")
    if backend.warm_error is not None:
        backend.warm()  # Neo4j may have come up since the container started
        if backend.warm_error is not None:
            return SandboxResult(query_id=job.query_id, ok=False, error=backend.warm_error)
    try:
        ran = backend.run(job)
        result = _withhold(job, _apply_scope(job, ran, backend.derived_visible))
    except Exception as exc:  # a bug here must still produce a result line
        result = failure(job.query_id, "internal", f"{type(exc).__name__}: {exc}")
    return dataclasses.replace(result, duration_ms=(time.perf_counter() - started) * 1000)


def _write(result: SandboxResult) -> None:
    sys.stdout.write(to_json(result) + "\n")
    sys.stdout.flush()


def _one_job(backend_class: Callable[[SandboxConfig], Backend], config: SandboxConfig, gate: int) -> int:
    """The child: connect, wait at its gate, say ready, run one job. Its exit ends everything it opened."""
    gc.disable()  # a process that lives for one job inside a memory limit needs no cycle collector
    backend = backend_class(config)
    backend.warm()
    # Armed. Only the first process opens the gate, once the job before this one has ended and
    # what it left is gone; until then this process reads nothing from stdin.
    if os.read(gate, 1) != GATE_OPEN:
        return EXIT_NO_JOB
    os.close(gate)
    print(SANDBOX_READY, file=sys.stderr, flush=True)
    line = sys.stdin.buffer.readline(MAX_JOB_LINE + 1)
    if not line:
        return EXIT_NO_JOB
    if len(line) > MAX_JOB_LINE:
        _write(failure("", "invalid_job", f"job line longer than {MAX_JOB_LINE} bytes"))
    else:
        _write(handle(line, backend))
    backend.close()
    return EXIT_DONE


def _run_child(backend_class: Callable[[SandboxConfig], Backend], config: SandboxConfig, gate: int) -> None:
    status = 1
    try:
        status = _one_job(backend_class, config, gate)
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        # No interpreter teardown: nothing is left to finalise, and the parent must not
        # run anything the child inherited.
        os._exit(status)


def _reset_container(armed: int | None) -> tuple[bool, bool]:
    """Remove what a job left: kill every process in the container but this one and ``armed``, empty the scratch tmpfs.

    Only the container's first process may do this (its pid namespace's ``/proc`` lists exactly
    the container's processes, and orphans are re-parented to it, so it reaps them). ``armed`` is
    the next job's process, forked by this process (never by a job) and waiting at its gate.
    Returns (the container is clean, ``armed`` is still alive); not clean when the scratch
    directory could not be emptied or the processes would not die: the container must then not
    serve another job.
    """
    keep = {os.getpid()} | ({armed} if armed is not None else set())
    armed_alive = armed is not None
    for _ in range(KILL_ROUNDS):
        others = [int(entry) for entry in os.listdir("/proc") if entry.isdigit() and int(entry) not in keep]
        if not others:
            break
        for pid in others:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.0005)  # let the killed die before they are reaped
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if pid == armed:  # a job may kill the next one: then it is made again, after this
                armed_alive = False
                keep.discard(pid)
    else:
        return False, armed_alive
    try:
        for entry in os.scandir(SCRATCH_DIR):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, onerror=_make_removable)
            else:
                os.unlink(entry.path)
        return not any(os.scandir(SCRATCH_DIR)), armed_alive
    except OSError:
        return False, armed_alive


@dataclasses.dataclass
class _Armed:
    """A job process forked by the first process, connecting or warm, waiting at its gate.

    The gate is a pipe only that process and the first process hold (a job forked earlier
    never had it), so nothing but the first process can let it take a job.
    """

    pid: int
    gate: int

    @classmethod
    def fork(cls, backend_class: Callable[[SandboxConfig], Backend], config: SandboxConfig) -> _Armed:
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(write_end)
            _run_child(backend_class, config, read_end)
        os.close(read_end)
        return cls(pid, write_end)

    def open(self) -> bool:
        """Let it say ready and take the next job; False when it is gone."""
        try:
            os.write(self.gate, GATE_OPEN)
            return True
        except OSError:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
            return False
        finally:
            self._close_gate()

    def discard(self) -> None:
        """End it without a job (its gate closes: it exits), and reap it."""
        self._close_gate()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)

    def _close_gate(self) -> None:
        if self.gate >= 0:
            os.close(self.gate)
            self.gate = -1


def _make_removable(_function: object, path: str, _exc: object) -> None:
    # A job may leave a directory without write or search permission for its owner.
    os.chmod(os.path.dirname(path), 0o700)
    if os.path.isdir(path) and not os.path.islink(path):
        os.chmod(path, 0o700)
        shutil.rmtree(path)
    else:
        os.unlink(path)


def _not_dumpable() -> None:
    """Make this process (and every child it forks) non-dumpable: no ptrace, no /proc/<pid>/mem.

    The first process holds the account and outlives each job; without this, a job process of
    the same uid could attach to it (or to a later job's process) and persist past the reset.
    Fails closed: a container whose first process cannot do this does not serve.
    """
    import ctypes

    pr_set_dumpable = 4
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(pr_set_dumpable, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


def main() -> int:
    first_of_container = os.getpid() == 1
    if first_of_container:
        try:
            _not_dumpable()
        except OSError as exc:
            _write(failure("", "internal", f"sandbox could not harden its first process: {exc}"))
            return 2
    try:
        config = SandboxConfig.from_env(read_credentials())
    except (ConfigError, OSError) as exc:
        _write(failure("", "internal", f"sandbox misconfigured: {exc}"))
        return 2
    backend_class = backend_type(config)
    # The children share the imported code copy-on-write; keep the collector off those pages.
    gc.freeze()
    armed: _Armed | None = _Armed.fork(backend_class, config)
    for served in range(config.max_jobs):
        current = armed or _Armed.fork(backend_class, config)
        if not current.open():  # it died at its gate: a fresh one (it connects now, after the reset)
            current = _Armed.fork(backend_class, config)
            if not current.open():
                return 1
        # The next job's process connects and warms up while this one runs, off the next job's path.
        armed = _Armed.fork(backend_class, config) if served + 1 < config.max_jobs else None
        _, status = os.waitpid(current.pid, 0)
        if first_of_container:
            clean, armed_alive = _reset_container(armed.pid if armed is not None else None)
            if not clean:
                return 1
            if armed is not None and not armed_alive:
                armed.discard()
                armed = _Armed.fork(backend_class, config)
        if os.waitstatus_to_exitcode(status) != EXIT_DONE:
            break
    if armed is not None:
        armed.discard()
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
