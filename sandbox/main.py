"""The sandbox program: jobs in on stdin, results out on stdout, each job in a fresh process.

    python3 -I -S -B /opt/sandbox/sandbox/launch.py     (the image's entry point)
    python3 -m sandbox.main                              (on a host, for tests)

The first line on stdin is the Neo4j account (``sandbox/wire.py``: ``Credentials``); it is
never in the container's configuration. Then, up to ``CGW_MAX_JOBS`` times, this process
(which has only imported code: no thread, no connection) forks a child that connects and
authenticates, says ``sandbox: ready`` on stderr, reads one job line, writes one result line
and exits. Connecting before the job is read is what makes a pooled container fast: the job
pays only for its own round trips.

Between two jobs, when this program is the container's first process, everything the
previous job left is removed: every other process in the container is killed and the
scratch tmpfs emptied. A job never shares a process, a Bolt connection or a file with the
job before it, even in a container the policy lets serve several jobs of one principal.
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
    if not job.hidden_properties or not result.ok:
        return result
    elements, removed = Withholding(job.hidden_properties).apply(result.rows)
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


def _one_job(backend_class: Callable[[SandboxConfig], Backend], config: SandboxConfig) -> int:
    """The child: connect, say ready, run one job. Its exit ends everything it opened."""
    gc.disable()  # a process that lives for one job inside a memory limit needs no cycle collector
    backend = backend_class(config)
    backend.warm()
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


def _run_child(backend_class: Callable[[SandboxConfig], Backend], config: SandboxConfig) -> None:
    status = 1
    try:
        status = _one_job(backend_class, config)
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        # No interpreter teardown: nothing is left to finalise, and the parent must not
        # run anything the child inherited.
        os._exit(status)


def _reset_container() -> bool:
    """Remove what a job left: kill every other process in the container, empty the scratch tmpfs.

    Only the container's first process may do this (``kill(-1)`` from it reaches exactly the
    container's other processes). False when the scratch directory could not be emptied: the
    container must then not serve another job.
    """
    with contextlib.suppress(ProcessLookupError):
        os.kill(-1, signal.SIGKILL)
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    try:
        for entry in os.scandir(SCRATCH_DIR):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, onerror=_make_removable)
            else:
                os.unlink(entry.path)
        return not any(os.scandir(SCRATCH_DIR))
    except OSError:
        return False


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
    for _ in range(config.max_jobs):
        pid = os.fork()
        if pid == 0:
            _run_child(backend_class, config)
        _, status = os.waitpid(pid, 0)
        if first_of_container and not _reset_container():
            return 1
        if os.waitstatus_to_exitcode(status) != EXIT_DONE:
            break
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
