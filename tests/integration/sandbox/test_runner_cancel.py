"""Runner.cancel on the real stack: the job's container is killed and its Neo4j transaction ends.

Killing a sandbox alone closes its Bolt connection, which Neo4j does not reliably take as the
end of a running transaction; the runner ends it by the query id the sandbox put in the
transaction's metadata. Observed as an operator would: ``SHOW TRANSACTIONS``.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

from gateway.runner import SandboxRunner, error_for
from sandbox.wire import TX_METADATA_QUERY_ID, SandboxResult
from tests.support.jobs import make_job
from tests.support.waiting import wait_until

# Rows one at a time for minutes, far past every wait here: only the cancellation can end it.
SLOW = "UNWIND range(1, 1000000000) AS x WITH x WHERE x % 7 = 99 RETURN count(x) AS c"


def _transaction_of(driver: Any, query_id: str) -> list[str]:
    records = driver.execute_query("SHOW TRANSACTIONS YIELD transactionId, metaData").records
    return [r["transactionId"] for r in records if (r["metaData"] or {}).get(TX_METADATA_QUERY_ID) == query_id]


def test_cancel_kills_the_sandbox_and_ends_its_transaction(sandbox_runner: SandboxRunner, neo4j_driver: Any) -> None:
    job = make_job(SLOW, query_id=uuid.uuid4().hex, timeout_seconds=120)
    results: list[SandboxResult] = []
    worker = threading.Thread(target=lambda: results.append(sandbox_runner.run(job)), daemon=True)
    worker.start()
    wait_until(lambda: bool(_transaction_of(neo4j_driver, job.query_id)), timeout=60,
               what="the job's transaction, marked with its query id")  # fmt: skip

    assert sandbox_runner.cancel(job.query_id) is True
    # cancel() returns once TERMINATE has answered, i.e. once Neo4j has stopped the query.
    assert _transaction_of(neo4j_driver, job.query_id) == []
    worker.join(timeout=30)
    assert results and results[0].error is not None and results[0].error.code == "cancelled"
    assert error_for(results[0]) is not None and error_for(results[0]).code == "cancelled"  # type: ignore[union-attr]


def test_a_cancel_before_the_job_arrives_refuses_it(sandbox_runner: SandboxRunner) -> None:
    job = make_job("RETURN 1 AS one", query_id=uuid.uuid4().hex)
    assert sandbox_runner.cancel(job.query_id) is False  # not in flight yet
    result = sandbox_runner.run(job)
    assert result.error is not None and result.error.code == "cancelled" and not result.rows
