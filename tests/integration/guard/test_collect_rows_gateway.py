"""A COLLECT subquery is sized by its rows, through the real stack, before Neo4j is reached.

Through ``Gateway``, the real sandbox and Neo4j. ``COLLECT { UNWIND … UNWIND … RETURN … }`` holds
every row of the subquery: 10^9 strings of ~209 characters ran Neo4j's heap out. The same shape
capped by a LIMIT answers through the sandbox (the runner counts it: the test can fail); the
uncapped one is refused by the size rule (``size.elements``) and no job reaches the runner, the
only way to Neo4j.
"""

from __future__ import annotations

from typing import Any

import pytest

from gateway.domain import Principal
from gateway.errors import QueryRejected
from gateway.policy import load_policy
from gateway.runner import SandboxRunner
from gateway.service import Gateway
from sandbox.wire import SandboxJob, SandboxResult
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH

pytestmark = pytest.mark.neo4j2026

POLICY = load_policy(ALL_PROPERTIES_POLICY_PATH)
AGENT = Principal(name="collect-rows-agent", scope=frozenset())
PARAMS = {"s": "s" * 200}
# Two UNWINDs of static ranges: 10^6 x 10^3 rows, each a string of toString(x) + $s.
ROWS = "UNWIND range(1, 1000000) AS x UNWIND range(1, 1000) AS y RETURN toString(x) + $s"


class _Counting:
    """The real runner, counting the jobs that reach it (every way to Neo4j goes through ``run``)."""

    def __init__(self, runner: SandboxRunner) -> None:
        self.runner = runner
        self.jobs: list[str] = []

    def run(
        self, job: SandboxJob, principal: Principal | None = None, *, arrived: float | None = None
    ) -> SandboxResult:
        self.jobs.append(job.cypher)
        return self.runner.run(job, principal, arrived=arrived)

    def cancel(self, query_id: str) -> bool:
        return self.runner.cancel(query_id)

    def available(self) -> tuple[bool, str]:
        return self.runner.available()

    def close(self) -> None:  # the module's runner is closed by its fixture
        pass


def test_a_collect_subquery_of_a_billion_rows_is_refused_before_neo4j_is_reached(
    sandbox_runner: SandboxRunner,
) -> None:
    counting = _Counting(sandbox_runner)
    gateway = Gateway(POLICY, counting)
    # The same rows capped at 10: answered by Neo4j through the sandbox (the last string: "1" + $s).
    capped: Any = gateway.run("analyze", f"RETURN size(last(COLLECT {{ {ROWS} LIMIT 10 }})) AS c", PARAMS, AGENT)
    assert capped.rows == [[201]] and len(counting.jobs) == 1
    with pytest.raises(QueryRejected) as refused:
        gateway.run("analyze", f"RETURN size(last(COLLECT {{ {ROWS} }})) AS c", PARAMS, AGENT)
    assert refused.value.rule == "size.elements", refused.value.reason
    assert "1,000,000,000" in refused.value.reason
    assert len(counting.jobs) == 1  # the refused query never reached the sandbox, nor Neo4j behind it
