"""The sandbox program: one job in on stdin, one result out on stdout, then exit.

    python3 -m sandbox.main            (the image's ENTRYPOINT)

Order matters for speed: the driver is imported, connected and authenticated
*before* the job is read, so a pooled container that is handed a job pays only
for the query's own round trips. ``sandbox: ready`` on stderr tells the runner
the container has reached that point. Nothing but the one result line is ever
written to stdout; credentials are never written anywhere.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Protocol

from pydantic import ValidationError

from sandbox.config import SandboxConfig
from sandbox.scope_check import filter_rows
from sandbox.serialize import ElementTokens
from sandbox.wire import SANDBOX_READY, SandboxError, SandboxJob, SandboxResult, failure

# A job is a query (<= the policy's max_query_chars) plus parameters; anything
# much larger than this is not a job we would run, and reading it would cost memory.
MAX_JOB_LINE = 4 * 1024 * 1024


class Backend(Protocol):
    warm_error: SandboxError | None

    def warm(self) -> None: ...
    def run(self, job: SandboxJob) -> SandboxResult: ...
    def close(self) -> None: ...


def make_backend(config: SandboxConfig) -> Backend:
    if config.transport == "query-api":
        from sandbox.query_api import QueryApiBackend

        return QueryApiBackend(config)
    from sandbox.bolt import BoltBackend

    return BoltBackend(config)


def _apply_scope(job: SandboxJob, result: SandboxResult) -> SandboxResult:
    """Layer 2 of scope: drop rows that carry anything outside the caller's layers."""
    if job.scope is None or not result.ok:
        return result
    rows, redacted = filter_rows(result.columns, result.rows, job.scope)
    if not redacted:
        return result
    # Renumber the element tokens, or the numbers the dropped rows used would show as gaps.
    rows = ElementTokens().apply(rows)
    # The byte count must describe the rows actually returned.
    size = len(json.dumps(rows, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    return result.model_copy(update={"rows": rows, "row_count": len(rows), "redacted": redacted, "bytes": size})


def handle(line: bytes, backend: Backend) -> SandboxResult:
    started = time.perf_counter()
    try:
        job = SandboxJob.model_validate_json(line)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "<job>"
        return failure("", "invalid_job", f"job did not validate: {where}: {first['msg']}")
    if backend.warm_error is not None:
        backend.warm()  # Neo4j may have come up since the container started
        if backend.warm_error is not None:
            return SandboxResult(query_id=job.query_id, ok=False, error=backend.warm_error)
    try:
        result = _apply_scope(job, backend.run(job))
    except Exception as exc:  # a bug here must still produce a result line
        result = failure(job.query_id, "internal", f"{type(exc).__name__}: {exc}")
    return result.model_copy(update={"duration_ms": (time.perf_counter() - started) * 1000})


def main() -> int:
    try:
        config = SandboxConfig.from_env()
    except (ValidationError, OSError, ValueError) as exc:
        sys.stdout.write(failure("", "internal", f"sandbox misconfigured: {exc}").model_dump_json() + "\n")
        return 2
    backend = make_backend(config)
    backend.warm()
    print(SANDBOX_READY, file=sys.stderr, flush=True)
    line = sys.stdin.buffer.readline(MAX_JOB_LINE + 1)
    if len(line) > MAX_JOB_LINE:
        result = failure("", "invalid_job", f"job line longer than {MAX_JOB_LINE} bytes")
    else:
        result = handle(line, backend)
    sys.stdout.write(result.model_dump_json() + "\n")
    sys.stdout.flush()
    backend.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
