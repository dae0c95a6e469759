"""The Query API transport (HTTPS, for hosted Neo4j), through the same one-host forwarder.

httpx dials the forwarder's Unix socket directly (``HTTPTransport(uds=…)``);
over https, TLS is negotiated end to end with the real host name using the
context of sandbox/tls.py (the CA file, else the system trust store), so the
forwarder sees only ciphertext and the certificate is checked against that name.

Differences from Bolt, stated plainly: the Query API of Neo4j 5.26 reports no
query type, so there the plan's read-operator allow-list is the whole check; it has no
per-request transaction timeout, so the runner's wall clock and the server's
``db.transaction.timeout`` bound a query; and its answer is one JSON document,
read as a stream (``sandbox/query_stream.py``): rows go to the byte budget one at a time,
hidden properties are skipped as they arrive, and an answer cut by the limits has no
notifications (they follow the rows, which are not read past the cut).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import ssl
import time
from collections.abc import Callable
from typing import Any

import httpx
import ijson

from sandbox.config import SandboxConfig
from sandbox.explain import ExplainRejected, check_plan, check_query_type
from sandbox.query_stream import TooLarge, read_answer
from sandbox.rebuild import TooDeep, rebuild_typed_row, tag_of
from sandbox.scope_check import confirm_derived
from sandbox.serialize import JsonValue, RowCollector
from sandbox.tagged import TYPE_KEY
from sandbox.tls import context_or_error, tls_failure
from sandbox.wire import Notification, SandboxError, SandboxErrorCode, SandboxJob, SandboxResult, failure
from sandbox.withhold import PropertiesOf, Withholding, owners_of

TYPED_JSON = "application/vnd.neo4j.query"
# Reading more than this many times the byte limit means the rows cannot fit anyway.
RESPONSE_CAP_FACTOR = 8
_TEMPORAL = {
    "Date": "date", "Time": "time", "LocalTime": "localtime", "DateTime": "datetime",
    "OffsetDateTime": "datetime", "ZonedDateTime": "datetime", "LocalDateTime": "localdatetime",
}  # fmt: skip


class _TooLarge(Exception):
    pass


def build_request(config: SandboxConfig, job: SandboxJob, statement: str) -> httpx.Request:
    """The HTTP request for one statement (exposed for tests)."""
    database = job.database or config.database or "neo4j"
    url = f"{str(config.query_api_url).rstrip('/')}/db/{database}/query/v2"
    body = {"statement": statement, "parameters": job.params, "accessMode": "READ"}
    token = base64.b64encode(f"{config.neo4j_user}:{config.neo4j_password}".encode()).decode()
    headers = {"Content-Type": "application/json", "Accept": TYPED_JSON, "Authorization": f"Basic {token}"}
    return httpx.Request("POST", url, headers=headers, content=json.dumps(body).encode())


def _props(value: dict[str, Any], shown: PropertiesOf | None) -> dict[str, JsonValue]:
    return {k: from_typed(v, shown) for k, v in (value or {}).items()}


def _element_props(kind: str, v: dict[str, Any], shown: PropertiesOf | None) -> dict[str, JsonValue]:
    value = v.get("_properties", {})
    if shown is None:
        return _props(value, None)
    return shown(owners_of({"$type": kind, "_value": v}), value or {}, lambda x: from_typed(x, shown))


def _node(v: dict[str, Any], shown: PropertiesOf | None) -> dict[str, JsonValue]:
    labels = v.get("_labels", [])
    return {TYPE_KEY: "node", "elementId": v.get("_element_id"), "labels": sorted(labels),
            "properties": _element_props("Node", v, shown)}  # fmt: skip


def _rel(v: dict[str, Any], shown: PropertiesOf | None) -> dict[str, JsonValue]:
    return {TYPE_KEY: "relationship", "elementId": v.get("_element_id"), "type": v.get("_type"),
            "startElementId": v.get("_start_node_element_id"), "endElementId": v.get("_end_node_element_id"),
            "properties": _element_props("Relationship", v, shown)}  # fmt: skip


def from_typed(value: Any, shown: PropertiesOf | None = None) -> JsonValue:
    """Neo4j's typed JSON ({"$type": "Integer", "_value": "1"}) -> our tagged JSON.

    ``shown``: converts an element's properties, leaving hidden ones out; None shows them all.
    """
    if not isinstance(value, dict) or "$type" not in value:
        return value
    kind: str = value["$type"]
    v: Any = value.get("_value")
    if kind == "Null":
        return None
    if kind in ("Boolean", "String"):
        return v
    if kind == "Integer":
        return int(v)
    if kind == "Float":
        f = float(v)
        return f if f == f and f not in (float("inf"), float("-inf")) else {TYPE_KEY: "float", "value": v}
    if kind == "List":
        return [from_typed(x, shown) for x in v]
    if kind == "Map":
        mapped = _props(v, shown)
        return {TYPE_KEY: "map", "value": mapped} if TYPE_KEY in mapped else mapped
    if kind == "Base64":
        return {TYPE_KEY: "bytes", "base64": v}
    if kind in _TEMPORAL:
        return {TYPE_KEY: _TEMPORAL[kind], "iso": v}
    if kind == "Duration":
        return {TYPE_KEY: "duration", "iso": v}
    if kind == "Point":
        # "SRID=4326;POINT (1.2 3.4)" or "... POINT Z (1 2 3)"
        srid_part, _, coords = str(v).partition(";")
        numbers = [float(x) for x in coords[coords.index("(") + 1 : coords.index(")")].split()]
        out: dict[str, JsonValue] = {TYPE_KEY: "point", "srid": int(srid_part.split("=")[1]),
                                     "x": numbers[0], "y": numbers[1]}  # fmt: skip
        if len(numbers) > 2:
            out["z"] = numbers[2]
        return out
    if kind == "Node":
        return _node(v, shown)
    if kind == "Relationship":
        return _rel(v, shown)
    if kind == "Path":
        return {TYPE_KEY: "path", "nodes": [_node(x["_value"], shown) for x in v if x.get("$type") == "Node"],
                "relationships": [_rel(x["_value"], shown) for x in v if x.get("$type") == "Relationship"]}  # fmt: skip
    return {TYPE_KEY: "unknown", "repr": json.dumps(value)[:200]}


def notifications_from(body: dict[str, Any]) -> list[Notification]:
    """The answer's notifications; the Query API sends Neo4j codes and no GQL status."""
    return [
        Notification(
            code=n.get("code"), title=n.get("title"), description=n.get("description"),
            severity=n.get("severity"), classification=n.get("category"),
        )
        for n in body.get("notifications") or []
        if isinstance(n, dict)
    ]  # fmt: skip


def _unreachable(exc: httpx.HTTPError) -> str:
    tls = tls_failure(exc)
    return f"Neo4j could not be reached over TLS: {tls}" if tls else f"Neo4j could not be reached: {exc}"


class QueryApiBackend:
    def __init__(self, config: SandboxConfig) -> None:
        self.config = config
        self.warm_error: SandboxError | None = None
        self.derived_visible: frozenset[str] = frozenset()
        context, self.setup_error = context_or_error(config.tls, config.server_name(), config.tls_ca_file)
        # Our context for https; a plain http URL (tls off) never uses httpx's default.
        verify: ssl.SSLContext | bool = context if context is not None else True
        transport = (
            httpx.HTTPTransport(uds=config.neo4j_socket, verify=verify)
            if config.neo4j_socket
            else httpx.HTTPTransport(verify=verify)
        )
        self.client = httpx.Client(transport=transport)

    def warm(self) -> None:
        if self.setup_error is not None:
            self.warm_error = self.setup_error
            return
        # Open the connection (and TLS session) before the job: a cheap authenticated request.
        probe = SandboxJob(query_id="warm", cypher="RETURN 1", timeout_seconds=3.0, max_rows=1, max_bytes=64)
        try:
            self._post(probe, "RETURN 1", cap=64 * 1024)
            self.warm_error = None
        except httpx.HTTPError as exc:
            self.warm_error = SandboxError(code="unavailable", message=_unreachable(exc))
        except _Refused as exc:
            self.warm_error = SandboxError(code="unavailable", message=exc.message, neo4j_code=exc.code)

    def _post(
        self,
        job: SandboxJob,
        statement: str,
        cap: int,
        on_row: Callable[[list[Any]], bool] | None = None,
        withholding: Withholding | None = None,
    ) -> dict[str, Any]:
        """Neo4j's answer without its rows, each of which goes to ``on_row`` as it streams in."""
        request = build_request(self.config, job, statement)
        response = self.client.send(request, stream=True)
        try:
            body = read_answer(response.iter_raw(), cap, withholding, on_row or (lambda _row: True))
        except TooLarge:
            raise _TooLarge from None
        except ijson.JSONError as exc:
            if response.status_code < 400:
                raise _Refused(f"the Query API's answer is not JSON: {exc}", None) from exc
            body = {}
        finally:
            response.close()
        errors = body.get("errors") or []
        if errors or response.status_code >= 400:
            first = errors[0] if errors and isinstance(errors[0], dict) else {}
            raise _Refused(first.get("message", f"HTTP {response.status_code}"), first.get("code"))
        return body

    def _ask(self, job: SandboxJob, statement: str, params: dict[str, Any], cap: int) -> list[Any]:
        """The first column of a gateway-written query's rows (the result check's derived walks)."""
        found: list[Any] = []

        def keep(row: list[Any]) -> bool:
            found.append(from_typed(row[0]))
            return True

        self._post(dataclasses.replace(job, params=params), statement, cap, keep)
        return found

    def run(self, job: SandboxJob) -> SandboxResult:
        started = time.perf_counter()
        self.derived_visible = frozenset()
        if self.setup_error is not None:
            return SandboxResult(query_id=job.query_id, ok=False, error=self.setup_error)
        self.client.timeout = httpx.Timeout(job.timeout_seconds)
        cap = job.max_bytes * RESPONSE_CAP_FACTOR + 65536
        try:
            if job.original_cypher is not None:
                try:
                    self._post(job, "EXPLAIN " + job.original_cypher, cap)
                except _Refused as exc:
                    return failure(job.query_id, "neo4j_refused", exc.message, exc.code, from_original=True)
            if job.explain_check:
                explained = self._post(job, "EXPLAIN " + job.cypher, cap)
                if "queryType" in explained:  # Neo4j 2026.x reports it; 5.26 does not
                    check_query_type(explained["queryType"])
                check_plan(explained.get("queryPlan"), job.procedures_allowed)
            withholding = Withholding.while_reading(job)
            collector = RowCollector(job.max_rows, job.max_bytes, convert=from_typed, withholding=withholding)
            tag = tag_of(job.params)  # the projection wrapper's elements (sandbox/rebuild.py)
            body = self._post(
                job, job.cypher, cap, lambda values: collector.add(rebuild_typed_row(values, tag)), withholding
            )
            if job.scope is not None:
                # Layer 2's derived rules: Neo4j decides. The Query API runs one statement per
                # implicit transaction, so the walk is a second READ request; Neo4j reads committed
                # data statement by statement in one transaction too, so nothing is lost by it.
                ids = collector.element_tokens.element_ids()
                self.derived_visible = confirm_derived(
                    collector.rows, job.scope, ids, job.params, lambda text, params: self._ask(job, text, params, cap)
                )
        except _TooLarge:
            return SandboxResult(query_id=job.query_id, ok=True, truncated=True, truncation="bytes",
                                 duration_ms=(time.perf_counter() - started) * 1000)  # fmt: skip
        except ExplainRejected as exc:
            return failure(job.query_id, "explain_rejected", str(exc))
        except TooDeep as exc:
            return failure(job.query_id, "too_deep", str(exc))
        except _Refused as exc:
            code: SandboxErrorCode = "timeout" if exc.code and "TimedOut" in exc.code else "neo4j_refused"
            return failure(job.query_id, code, exc.message, exc.code)
        except httpx.TimeoutException:
            return failure(job.query_id, "timeout", "the Query API did not answer in time")
        except httpx.HTTPError as exc:
            return failure(job.query_id, "unavailable", _unreachable(exc))
        data = body.get("data") or {}
        return SandboxResult(
            query_id=job.query_id, ok=True, columns=list(data.get("fields") or []), rows=collector.rows,
            row_count=len(collector.rows), bytes=collector.bytes, truncated=collector.truncation is not None,
            truncation=collector.truncation, notifications=notifications_from(body),
            duration_ms=(time.perf_counter() - started) * 1000,
        )  # fmt: skip

    def close(self) -> None:
        self.client.close()


class _Refused(Exception):
    def __init__(self, message: str, code: str | None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
