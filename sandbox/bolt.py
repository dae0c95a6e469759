"""The Bolt transport: the ``neo4j`` driver, READ sessions, EXPLAIN first, bounded streaming.

The driver always gets a ``bolt://`` URI (direct: no routing table, whose addresses the
sandbox could not reach anyway) and, for TLS, its own ``ssl_context`` from sandbox/tls.py:
the handshake runs inside the sandbox, end to end with the real server, and checks the
certificate against the real host name while the bytes go through the shim and the socket.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import neo4j
from neo4j.exceptions import AuthError, DriverError, Neo4jError, ServiceUnavailable, SessionExpired

from sandbox.config import SandboxConfig
from sandbox.explain import ExplainRejected, check_plan, check_query_type
from sandbox.serialize import RowCollector
from sandbox.shim import Shim
from sandbox.tls import client_context, tls_failure
from sandbox.wire import Notification, SandboxError, SandboxJob, SandboxResult

WARM_JOB = SandboxJob(query_id="warm", cypher="RETURN 1 AS warm", timeout_seconds=3.0, max_rows=1, max_bytes=1024)


def _notifications(summary: Any) -> list[Notification]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        raw = summary.notifications or []
    return [
        Notification(
            code=n.get("code"), title=n.get("title"), description=n.get("description"), severity=n.get("severity")
        )
        for n in raw
    ]


def classify(exc: BaseException) -> SandboxError:
    """Map a driver error to the wire's error codes; Neo4j's own refusals keep their code and message."""
    if isinstance(exc, ExplainRejected):
        return SandboxError(code="explain_rejected", message=str(exc))
    if isinstance(exc, AuthError):
        return SandboxError(code="unavailable", message="Neo4j rejected the sandbox's credentials",
                            neo4j_code=getattr(exc, "code", None))  # fmt: skip
    if isinstance(exc, Neo4jError):
        code = exc.code or ""
        message = exc.message or str(exc)
        if "TransactionTimedOut" in code or ("Transaction.Terminated" in code and "timeout" in message.lower()):
            return SandboxError(code="timeout", message=message, neo4j_code=code)
        return SandboxError(code="neo4j_refused", message=message, neo4j_code=code or None)
    tls = tls_failure(exc)
    if tls is not None:
        return SandboxError(code="unavailable", message=f"Neo4j could not be reached over TLS: {tls}")
    if isinstance(exc, ServiceUnavailable | SessionExpired):
        message = f"Neo4j could not be reached: {exc}"
        if "incomplete handshake" in str(exc):
            # What a TLS-only server does with a plaintext Bolt handshake (and a closed port
            # behind the forwarder looks the same from here).
            message += (
                "; the connection closed in the Bolt handshake: is Neo4j down, or does it require TLS (bolt+s://)?"
            )
        return SandboxError(code="unavailable", message=message)
    if isinstance(exc, DriverError):
        return SandboxError(code="unavailable", message=f"driver error: {type(exc).__name__}: {exc}")
    return SandboxError(code="internal", message=f"{type(exc).__name__}: {exc}")


class BoltBackend:
    """One driver, connected and authenticated before any job arrives (the warm-pool contract)."""

    def __init__(self, config: SandboxConfig) -> None:
        self.config = config
        self._shim: Shim | None = None
        if config.neo4j_socket:
            self._shim = Shim(config.neo4j_socket)
            # bolt://, never neo4j://: routing would hand back the server's real addresses.
            uri = f"bolt://127.0.0.1:{self._shim.port}"
        else:
            uri = str(config.neo4j_uri)
        self.warm_error: SandboxError | None = None
        self.driver: neo4j.Driver | None = None
        try:
            context = client_context(config.tls, config.server_name(), config.tls_ca_file)
        except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
            # Never a plaintext fallback: without its TLS context there is no driver at all,
            # and every job answers this error.
            self.warm_error = SandboxError(code="unavailable", message=f"the TLS CA file cannot be used: {exc}")
            return
        self.driver = neo4j.GraphDatabase.driver(
            uri,
            ssl_context=context,  # None: plaintext (tls off)
            auth=(config.neo4j_user, config.neo4j_password.get_secret_value()),
            max_connection_pool_size=2,
            connection_timeout=3.0,
            connection_acquisition_timeout=3.0,
            # No retries: a retried query could outlive the runner's wall clock.
            max_transaction_retry_time=0.0,
            user_agent="cypher-gateway-sandbox/1",
        )

    def warm(self) -> None:
        """Connect and authenticate now, so a job pays only for its own round trips."""
        if self.driver is None:
            return  # warm_error says why there is no driver
        try:
            self.driver.verify_connectivity()
            self.warm_error = None
            # One throwaway job walks every code path a real one takes (lazy imports, the
            # session and transaction machinery, the wire models), so the real one is not slower.
            probe = self.run(WARM_JOB)
            if probe.error is not None and probe.error.code == "unavailable":
                self.warm_error = probe.error
        except Exception as exc:  # reported with the job, not here: the container must still answer
            self.warm_error = classify(exc)

    def run(self, job: SandboxJob) -> SandboxResult:
        started = time.perf_counter()
        if self.driver is None:
            return SandboxResult(query_id=job.query_id, ok=False, error=self.warm_error)
        driver = self.driver
        collector = RowCollector(job.max_rows, job.max_bytes)
        meta: dict[str, Any] = {}

        @neo4j.unit_of_work(timeout=job.timeout_seconds)
        def work(tx: neo4j.ManagedTransaction) -> None:
            if job.explain_check:
                plan_summary = tx.run("EXPLAIN " + job.cypher, job.params).consume()
                check_query_type(plan_summary.query_type)
                check_plan(plan_summary.plan, job.procedures_allowed)
            result = tx.run(job.cypher, job.params)
            meta["columns"] = list(result.keys())
            for record in result:
                if not collector.add(record.values()):
                    break
            summary = result.consume()
            meta["query_type"] = summary.query_type
            meta["notifications"] = _notifications(summary)

        try:
            with driver.session(
                database=job.database or self.config.database,
                default_access_mode=neo4j.READ_ACCESS,
                fetch_size=self.config.fetch_size,
            ) as session:
                session.execute_read(work)
        except Exception as exc:
            return SandboxResult(
                query_id=job.query_id, ok=False, error=classify(exc),
                duration_ms=(time.perf_counter() - started) * 1000,
            )  # fmt: skip
        return SandboxResult(
            query_id=job.query_id,
            ok=True,
            columns=meta["columns"],
            rows=collector.rows,
            row_count=len(collector.rows),
            bytes=collector.bytes,
            truncated=collector.truncation is not None,
            truncation=collector.truncation,
            query_type=meta["query_type"],
            notifications=meta["notifications"],
            duration_ms=(time.perf_counter() - started) * 1000,
        )

    def close(self) -> None:
        if self.driver is not None:
            self.driver.close()
        if self._shim is not None:
            self._shim.close()
