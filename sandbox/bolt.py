"""The Bolt transport: the ``neo4j`` driver, READ sessions, EXPLAIN first, bounded streaming.

Each job runs in one explicit READ transaction with the policy's timeout and metadata naming
the job (``cypherGatewayQueryId``). At the policy deadline the sandbox itself, on a second connection,
finds that transaction by its metadata and terminates it: Neo4j's own timeout lands only at its
next monitor check (2 s by default), and closing the connection does not stop it. One second
later it looks again; a transaction still listed is expression work Neo4j cannot interrupt, and
the answer says so. Only this code runs those two commands, with the job's own id; agent queries
can do neither (the guard and the EXPLAIN check refuse SHOW and TERMINATE).

The driver always gets a ``bolt://`` URI (direct: no routing table, whose addresses the
sandbox could not reach anyway) and, for TLS, its own ``ssl_context`` from sandbox/tls.py:
the handshake runs inside the sandbox, end to end with the real server, and checks the
certificate against the real host name while the bytes go through the shim and the socket.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import threading
import time
import warnings
from typing import Any

import neo4j
from neo4j.exceptions import AuthError, DriverError, Neo4jError, ServiceUnavailable, SessionExpired

from sandbox.config import SandboxConfig
from sandbox.explain import ExplainRejected, check_plan, check_query_type
from sandbox.rebuild import TooDeep, rebuild_row, tag_of
from sandbox.scope_check import confirm_derived
from sandbox.serialize import RowCollector
from sandbox.shim import Shim
from sandbox.tls import context_or_error, tls_failure
from sandbox.wire import TX_METADATA_QUERY_ID, Notification, SandboxError, SandboxJob, SandboxResult
from sandbox.withhold import Withholding

WARM_JOB = SandboxJob(query_id="warm", cypher="RETURN 1 AS warm", timeout_seconds=3.0, max_rows=1, max_bytes=1024)
# The metadata key that names a job's transaction, and the two commands the deadline runs.
QUERY_ID_KEY = TX_METADATA_QUERY_ID  # the runner terminates a killed sandbox's transaction by it too
_FIND_OWN = (
    f"SHOW TRANSACTIONS YIELD transactionId, metaData WHERE metaData.{QUERY_ID_KEY} = $query_id RETURN transactionId"
)
_TERMINATE = "TERMINATE TRANSACTIONS $ids"
# How long after terminating the deadline looks again, and how long Neo4j may take over each
# command (a loaded server answers SHOW TRANSACTIONS in seconds; the runner's wall clock, which
# closes the connection, is the backstop).
SETTLE_SECONDS = 1.0
LOOK_TIMEOUT_SECONDS = 2.0


class Deadline:
    """Terminates one job's transaction when its time is up (started with the transaction).

    Its transaction id is looked up right away, off the critical path, so that at the deadline
    one round trip (TERMINATE) is all that stands between the timeout and Neo4j stopping.
    """

    def __init__(self, driver: Any, database: str | None, query_id: str, seconds: float) -> None:
        self._driver = driver
        self._database = database
        self._query_id = query_id
        self._seconds = seconds
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="deadline", daemon=True)
        self.fired_at: float | None = None
        self.error: str | None = None

    def start(self) -> None:
        self._due = time.monotonic() + self._seconds
        self._thread.start()

    def cancel(self) -> None:
        self._done.set()

    def _run(self, text: str, params: dict[str, Any]) -> list[Any]:
        records, _, _ = self._driver.execute_query(
            neo4j.Query(text, timeout=LOOK_TIMEOUT_SECONDS), params,
            database_=self._database, routing_=neo4j.RoutingControl.READ,
        )  # fmt: skip
        return list(records)

    def own_transactions(self) -> list[str]:
        return [r["transactionId"] for r in self._run(_FIND_OWN, {"query_id": self._query_id})]

    def _watch(self) -> None:
        ids: list[str] = []
        try:
            while not ids and not self._done.wait(0.05) and time.monotonic() < self._due:
                ids = self.own_transactions()
        except Exception:
            ids = []  # looked up again at the deadline
        if self._done.wait(max(0.0, self._due - time.monotonic())):
            return
        self.fired_at = time.monotonic()
        try:
            ids = ids or self.own_transactions()
            if ids:
                self._run(_TERMINATE, {"ids": ids})
        except Exception as exc:  # the answer says so; the runner's wall clock still closes the connection
            self.error = f"{type(exc).__name__}: {getattr(exc, 'code', None) or str(exc)[:200]}"

    def outcome(self) -> str:
        """What happened after the deadline, for the timeout's message ('' when it did not fire)."""
        if self.fired_at is None:
            return ""
        self._thread.join(LOOK_TIMEOUT_SECONDS)
        if self.error is not None:
            return f" (terminating it failed: {self.error})"
        late = time.monotonic() - self.fired_at
        if late > SETTLE_SECONDS:
            return f"; Neo4j went on with it for {late:.1f} s after that (work it cannot interrupt)"
        time.sleep(max(0.0, SETTLE_SECONDS - late))
        try:
            still = bool(self.own_transactions())
        except Exception:
            still = False
        return f"; Neo4j still runs it {SETTLE_SECONDS:g} s later (work it cannot interrupt)" if still else ""


# GQL statuses the driver makes up for a server that sends only Neo4j codes (older than 5.23).
_POLYFILLED_STATUSES = frozenset({"01N42", "02N42", "03N42"})


def notifications_of(summary: Any) -> list[Notification]:
    """Neo4j's notifications with both identities: the GQL status and the Neo4j code.

    The driver fills each API from the other. When the server sends GQL statuses, the
    (deprecated) ``notifications`` list is derived one for one, in order, from the statuses
    that carry a Neo4j code, which are exactly those ``is_notification`` marks; when it sends
    only the old notifications, the statuses are made up (``01N42`` …) and carry nothing.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        legacy = list(summary.notifications or [])
    statuses = [s for s in summary.gql_status_objects if s.is_notification]
    if len(statuses) != len(legacy) or any(s.gql_status in _POLYFILLED_STATUSES for s in statuses):
        statuses = []
    return [
        Notification(
            gql_status=status.gql_status if status is not None else None,
            code=n.get("code"),
            title=n.get("title"),
            description=n.get("description"),
            severity=n.get("severity"),
            classification=n.get("category"),
        )
        for n, status in itertools.zip_longest(legacy, statuses)
    ]


class OriginalRefused(Exception):
    """Neo4j's EXPLAIN refused the agent's own query (before the rewritten one was planned)."""

    def __init__(self, error: Neo4jError) -> None:
        super().__init__(error.message)
        self.error = error


def classify(exc: BaseException) -> SandboxError:
    """Map a driver error to the wire's error codes; Neo4j's own refusals keep their code and message."""
    if isinstance(exc, OriginalRefused):
        refused = classify(exc.error)
        return dataclasses.replace(refused, from_original=refused.code == "neo4j_refused")
    if isinstance(exc, ExplainRejected):
        return SandboxError(code="explain_rejected", message=str(exc))
    if isinstance(exc, TooDeep):
        return SandboxError(code="too_deep", message=str(exc))
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


def _pipelined_begin(session: neo4j.Session) -> contextlib.AbstractContextManager[Any]:
    """The driver's own switch that sends BEGIN with the first RUN, as ``execute_query`` does.

    A private attribute of the driver version the sandbox image pins (a test holds it); without
    it BEGIN waits for its own reply: one round trip slower, nothing else changes.
    """
    switch = getattr(session, "_pipelined_begin", None)
    return switch if isinstance(switch, contextlib.AbstractContextManager) else contextlib.nullcontext()


def _past_deadline(exc: BaseException, deadline: Deadline, job: SandboxJob) -> SandboxError:
    """The error for a job that failed; once the deadline has fired it is a timeout, whatever Neo4j said."""
    if deadline.fired_at is None:
        return classify(exc)
    message = f"the query ran past its {job.timeout_seconds:g} s timeout and its transaction was terminated"
    return SandboxError(code="timeout", message=message + deadline.outcome(), neo4j_code=getattr(exc, "code", None))


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
        self.driver: neo4j.Driver | None = None
        self.derived_visible: frozenset[str] = frozenset()
        self._open: tuple[neo4j.Session, neo4j.Transaction] | None = None
        context, self.warm_error = context_or_error(config.tls, config.server_name(), config.tls_ca_file)
        if self.warm_error is not None:
            return  # no driver at all: every job answers warm_error
        self.driver = neo4j.GraphDatabase.driver(
            uri,
            ssl_context=context,  # None: plaintext (tls off)
            auth=(config.neo4j_user, config.neo4j_password),
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
            self.end_transaction()
            if probe.error is not None and probe.error.code == "unavailable":
                self.warm_error = probe.error
        except Exception as exc:  # reported with the job, not here: the container must still answer
            self.warm_error = classify(exc)

    def run(self, job: SandboxJob) -> SandboxResult:
        """Run ``job``; its READ transaction stays open until :meth:`end_transaction` (or :meth:`close`).

        The answer is complete once the last record is read: a READ transaction commits nothing,
        so ending it (a rollback) waits until the answer has been written.
        """
        started = time.perf_counter()
        self.end_transaction()
        self.derived_visible = frozenset()
        if self.driver is None:
            return SandboxResult(query_id=job.query_id, ok=False, error=self.warm_error)
        driver = self.driver
        collector = RowCollector(job.max_rows, job.max_bytes, withholding=Withholding.while_reading(job))
        tag = tag_of(job.params)  # the projection wrapper's elements (sandbox/rebuild.py)
        meta: dict[str, Any] = {}
        database = job.database or self.config.database

        def work(tx: neo4j.Transaction) -> None:
            if job.original_cypher is not None:
                try:
                    tx.run("EXPLAIN " + job.original_cypher, job.params).consume()
                except Neo4jError as exc:
                    raise OriginalRefused(exc) from exc
            if job.explain_check:
                plan_summary = tx.run("EXPLAIN " + job.cypher, job.params).consume()
                check_query_type(plan_summary.query_type)
                check_plan(plan_summary.plan, job.procedures_allowed)
            result = tx.run(job.cypher, job.params)
            meta["columns"] = list(result.keys())
            for record in result:
                if not collector.add(rebuild_row(record.values(), tag)):
                    break
            summary = result.consume()
            meta["query_type"] = summary.query_type
            meta["notifications"] = notifications_of(summary)
            if job.scope is not None:
                # Layer 2's derived rules: Neo4j decides, in this same READ transaction.
                def ask(text: str, params: dict[str, Any]) -> list[Any]:
                    return [record[0] for record in tx.run(text, params)]

                ids = collector.element_tokens.element_ids()
                self.derived_visible = confirm_derived(collector.rows, job.scope, ids, job.params, ask)

        deadline = Deadline(driver, database, job.query_id, job.timeout_seconds)
        # One PULL asks for every row the policy lets through plus the one that says it was cut:
        # an answer within the row limit is one round trip, however many rows. The driver still
        # hands over one record at a time, so the sandbox holds one record, never the whole batch.
        session = driver.session(database=database, default_access_mode=neo4j.READ_ACCESS, fetch_size=job.max_rows + 1)
        try:
            # One explicit transaction, never execute_read: its retry loop could run a query twice.
            # BEGIN travels with the first RUN (one round trip fewer); a refused BEGIN fails that RUN.
            with _pipelined_begin(session):
                tx = session.begin_transaction(timeout=job.timeout_seconds, metadata={QUERY_ID_KEY: job.query_id})
            self._open = (session, tx)
            deadline.start()
            work(tx)
            deadline.cancel()
        except Exception as exc:
            deadline.cancel()
            if self._open is None:  # BEGIN itself failed: only the session is open
                with contextlib.suppress(Exception):
                    session.close()
            self.end_transaction()
            return SandboxResult(
                query_id=job.query_id, ok=False, error=_past_deadline(exc, deadline, job),
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

    def end_transaction(self) -> None:
        """Roll back and release the last job's transaction, if it is still open."""
        opened, self._open = self._open, None
        if opened is not None:
            session, tx = opened
            with contextlib.suppress(Exception):  # the process exits next; Neo4j rolls back a closed connection
                tx.close()
            with contextlib.suppress(Exception):
                session.close()

    def close(self) -> None:
        self.end_transaction()
        if self.driver is not None:
            self.driver.close()
        if self._shim is not None:
            self._shim.close()
