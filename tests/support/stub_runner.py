"""A stand-in for the sandbox runner, for tests of what happens around a query (never of Neo4j).

Subclasses say what the sandbox answers (``answer``); the stub records every job and
the principal it ran for. The integration tests use the real runner.
"""

from __future__ import annotations

from gateway.domain import Principal
from sandbox.wire import SandboxJob, SandboxResult


class RunnerStub:
    def __init__(self) -> None:
        self.jobs: list[SandboxJob] = []
        self.principals: list[Principal | None] = []
        self.arrivals: list[float | None] = []

    def answer(self, job: SandboxJob) -> SandboxResult:
        return SandboxResult(query_id=job.query_id, ok=True)

    def run(
        self, job: SandboxJob, principal: Principal | None = None, *, arrived: float | None = None
    ) -> SandboxResult:
        self.jobs.append(job)
        self.principals.append(principal)
        self.arrivals.append(arrived)
        return self.answer(job)

    def cancel(self, query_id: str) -> bool:
        return False

    def available(self) -> tuple[bool, str]:
        return True, ""

    def close(self) -> None:
        pass
