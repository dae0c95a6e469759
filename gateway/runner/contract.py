"""The gateway's side of the container contract: what goes in and what is accepted back.

The wire's classes are the sandbox's own dataclasses (``sandbox/wire.py``); here the
gateway validates what a container says with pydantic over those same classes, strictly,
as it validates every other boundary. A container is untrusted: its answer is checked
field by field before anything of it reaches a caller.
"""

from __future__ import annotations

from pydantic import TypeAdapter

from sandbox.wire import Credentials, SandboxJob, SandboxResult, to_json

_RESULT: TypeAdapter[SandboxResult] = TypeAdapter(SandboxResult)
_JOB: TypeAdapter[SandboxJob] = TypeAdapter(SandboxJob)


def job_line(job: SandboxJob) -> bytes:
    """A job as the line written to a sandbox's stdin."""
    return to_json(job).encode("utf-8") + b"\n"


def credentials_line(user: str, password: str) -> bytes:
    """The first line a sandbox reads: the Neo4j account, kept out of the container's configuration."""
    return to_json(Credentials(user=user, password=password)).encode("utf-8") + b"\n"


def parse_result(line: bytes | str) -> SandboxResult:
    """A container's result line, validated; raises ``pydantic.ValidationError`` (a ``ValueError``)."""
    return _RESULT.validate_json(line)


def parse_job(line: bytes | str) -> SandboxJob:
    """A job line read back with the gateway's validation (for tests and tools that replay jobs)."""
    return _JOB.validate_json(line)
