"""One TCK scenario through the real gateway, beside Neo4j's own answer and the TCK's.

For each scenario the harness empties the database, builds the scenario's graph with every
element global (no layers property, under a policy with ``scope.untagged: global``, which the
fixture sets), evaluates its parameters, and then asks three parties:

* the TCK: the expected table (or the error) the scenario states;
* Neo4j itself: the TCK's query in a READ transaction on the harness's driver (the control);
* the gateway: ``Gateway.run`` with a real sandbox, as an agent with an empty scope calls it.

``judge`` turns the three answers into a ``Verdict``. A read whose gateway answer differs from
Neo4j's own is ``different``: on a graph where everything is visible, the gateway changed a
result (a bug). One that matches Neo4j but not the TCK is ``neo4j-differs``: Neo4j, its driver
or the sandbox's serialization reads it otherwise, and the gateway is not the cause.

The database must be one the harness may empty: the TCK's queries see the whole graph.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from gateway.domain import Principal, ToolResult
from gateway.errors import GatewayError, Neo4jRefused, QueryRejected
from gateway.service import Gateway
from sandbox.serialize import to_json
from tests.support import tck_values
from tests.support.tck import Kind, TckScenario, named_graph
from tests.support.tck_values import Value

# The TCK's setups are Cypher 5 (Neo4j 2026.x reads some of them otherwise as Cypher 25);
# 5.26 accepts the prefix too, so one text runs on both release lines.
SETUP_PREFIX = "CYPHER 5 "

Category = Literal[
    "equal",  # the gateway answered what the TCK expects (rows, or an error for an error scenario)
    "refused",  # a rule refused it (guard, scope or the sandbox's EXPLAIN check); ``detail`` names it
    "neo4j-refused",  # Neo4j refused it, through the gateway as on its own (``detail``: the code)
    "neo4j-differs",  # the gateway's answer is Neo4j's own, and that is not the TCK's
    "truncated",  # more rows than the policy allows: the gateway's are a part of Neo4j's own
    "different",  # the gateway's answer is not Neo4j's own: a bug
    "wrote",  # a write scenario changed the graph, or was answered with rows: a bug
]


@dataclass(frozen=True)
class Answer:
    """One party's answer: rows, or the rule or Neo4j error code that stopped the query."""

    columns: tuple[str, ...] = ()
    rows: tuple[tuple[Value, ...], ...] = ()
    rule: str | None = None  # the gateway's refusal (a catalogue rule)
    error: str | None = None  # Neo4j's error code, or the gateway's error code when Neo4j gave none
    truncated: bool = False
    degraded: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        return self.rule is not None or self.error is not None

    def describe(self) -> str:
        if self.rule is not None:
            return f"refused by {self.rule}"
        if self.error is not None:
            return f"error {self.error}"
        shown = [list(row) for row in self.rows[:3]]
        more = f" (+{len(self.rows) - 3})" if len(self.rows) > 3 else ""
        return f"columns {list(self.columns)}, {len(self.rows)} rows {shown}{more}"


@dataclass
class Verdict:
    name: str
    kind: Kind
    category: Category
    detail: str = ""  # the rule, the Neo4j code or the query type that decided
    message: str = ""  # what differed, for a failing test
    seconds: dict[str, float] = field(default_factory=dict)


class TckHarness:
    """Runs scenarios on one Neo4j the harness may empty, through one Gateway.

    ``driver`` is the harness's own (write rights: it builds graphs); agent queries go only
    through ``gateway``. ``tck_root`` is the unpacked TCK, for its named graphs.
    """

    def __init__(
        self,
        driver: Any,
        gateway: Gateway,
        *,
        database: str | None,
        tck_root: Path,
        principal: Principal | None = None,
        timeout_seconds: float = 5.0,
    ) -> None:
        self.driver = driver
        self.gateway = gateway
        self.database = database
        self.tck_root = tck_root
        self.principal = principal or Principal(name="tck")
        self.timeout_seconds = timeout_seconds

    # --- the graph -------------------------------------------------------------------------------

    def build(self, scenario: TckScenario) -> dict[str, Any]:
        """Empty the database, build the scenario's graph, and return its parameters' values."""
        with self.driver.session(database=self.database) as session:
            session.run("MATCH (n) DETACH DELETE n").consume()
            statements = [named_graph(scenario.graph, self.tck_root)] if scenario.graph else []
            for statement in [*statements, *scenario.setup]:
                session.run(SETUP_PREFIX + statement).consume()
            # Neo4j reads the TCK's parameter literals, so their values are the ones Cypher means.
            return {
                key: session.run(f"{SETUP_PREFIX}RETURN {literal} AS v").single()["v"]
                for key, literal in scenario.params.items()
            }

    def fingerprint(self) -> str:
        """Every node and relationship with its labels/type and properties, hashed."""
        query = (
            "MATCH (n) RETURN 'n' AS k, labels(n) AS l, properties(n) AS p "
            "UNION ALL MATCH ()-[r]->() RETURN 'r' AS k, [type(r)] AS l, properties(r) AS p"
        )
        with self.driver.session(database=self.database) as session:
            rows = [json.dumps([to_json(v) for v in record.values()], sort_keys=True) for record in session.run(query)]
        return hashlib.sha256("\n".join(sorted(rows)).encode()).hexdigest()

    def query_type(self, scenario: TckScenario, params: Mapping[str, Any]) -> str | None:
        """What Neo4j plans the query as (``r``, ``rw``, ``w``, ``s``), or None when it refuses to plan it."""
        import neo4j

        with self.driver.session(database=self.database, default_access_mode=neo4j.READ_ACCESS) as session:
            try:
                summary = session.run(f"EXPLAIN {SETUP_PREFIX}{scenario.query}", params).consume()
            except neo4j.exceptions.Neo4jError:
                return None
        return str(summary.query_type) if summary.query_type is not None else None

    # --- the three answers -----------------------------------------------------------------------

    def direct(self, scenario: TckScenario, params: Mapping[str, Any]) -> Answer:
        """Neo4j's own answer, in a READ transaction (never retried, never writing)."""
        import neo4j

        with self.driver.session(database=self.database, default_access_mode=neo4j.READ_ACCESS) as session:
            tx = session.begin_transaction(timeout=self.timeout_seconds)
            try:
                result = tx.run(SETUP_PREFIX + scenario.query, params)
                columns = tuple(result.keys())
                rows = tuple(tuple(tck_values.from_json(to_json(v)) for v in record.values()) for record in result)
                return Answer(columns=columns, rows=rows)
            except neo4j.exceptions.Neo4jError as exc:
                return Answer(error=exc.code or type(exc).__name__)
            except Exception as exc:  # the driver cannot hold the value (e.g. a year past 9999)
                return Answer(error=f"driver:{type(exc).__name__}")
            finally:
                tx.close()

    def via_gateway(self, scenario: TckScenario, params: Mapping[str, Any]) -> Answer:
        """The gateway's answer, as an agent with an empty scope gets it from ``analyze``.

        A timeout is asked once more: on a busy machine a scenario can miss the policy's
        timeout once; one that misses it twice is judged like any other answer.
        """
        answer = self._via_gateway(scenario, params)
        return self._via_gateway(scenario, params) if answer.error == "timeout" else answer

    def _via_gateway(self, scenario: TckScenario, params: Mapping[str, Any]) -> Answer:
        try:
            result = self.gateway.run("analyze", scenario.query, dict(params), self.principal)
        except QueryRejected as exc:
            return Answer(rule=exc.rule)
        except Neo4jRefused as exc:
            return Answer(error=exc.neo4j_code or exc.code)
        except GatewayError as exc:
            return Answer(error=exc.code)
        return _answer(result)

    # --- one scenario ----------------------------------------------------------------------------

    def run(self, scenario: TckScenario) -> Verdict:
        seconds: dict[str, float] = {}

        def timed(phase: str, step: Callable[[], Any]) -> Any:
            started = time.perf_counter()
            try:
                return step()
            finally:
                seconds[phase] = time.perf_counter() - started

        params: dict[str, Any] = timed("graph", lambda: self.build(scenario))
        writes = scenario.kind in ("write", "procedure")
        if not writes and timed("plan", lambda: self.query_type(scenario, params)) in ("w", "rw", "s"):
            writes = True  # a write the TCK states no side effects for (nothing matched to change)
        if writes:
            before = self.fingerprint()
            gateway = timed("gateway", lambda: self.via_gateway(scenario, params))
            verdict = judge_write(scenario, gateway, changed=self.fingerprint() != before)
        else:
            gateway = timed("gateway", lambda: self.via_gateway(scenario, params))
            verdict = judge(scenario, gateway, lambda: timed("direct", lambda: self.direct(scenario, params)))
        verdict.seconds = seconds
        return verdict


def _answer(result: ToolResult) -> Answer:
    rows = tuple(tuple(tck_values.from_json(v) for v in row) for row in result.rows)
    return Answer(columns=tuple(result.columns), rows=rows, truncated=result.truncated, degraded=tuple(result.degraded))


# --- judging -----------------------------------------------------------------------------------------


def expected_answer(scenario: TckScenario) -> tuple[tuple[str, ...], list[list[Value]]] | None:
    """The TCK's table as values (None when the scenario expects an error)."""
    if scenario.expected is None:
        return None
    return scenario.expected.columns, [[tck_values.parse(cell) for cell in row] for row in scenario.expected.rows]


def matches_tck(scenario: TckScenario, answer: Answer) -> bool:
    expected = expected_answer(scenario)
    if expected is None or answer.failed:
        return False
    columns, rows = expected
    if columns and columns != answer.columns:
        return False
    assert scenario.expected is not None
    return tck_values.same_rows(
        rows,
        answer.rows,
        ordered=scenario.expected.ordered,
        ignore_list_order=scenario.expected.ignore_list_order,
    )


def same_answer(gateway: Answer, direct: Answer, *, ordered: bool) -> bool:
    """The gateway answered what Neo4j answered on its own (rows, or the same error code)."""
    if gateway.failed or direct.failed:
        return gateway.error is not None and gateway.error == direct.error
    if gateway.columns != direct.columns:
        return False
    if ordered:
        return gateway.rows == direct.rows
    return Counter(gateway.rows) == Counter(direct.rows)


def _is_part_of(gateway: Answer, direct: Answer) -> bool:
    """Every row the gateway kept is one of Neo4j's (as a multiset)."""
    return gateway.columns == direct.columns and not Counter(gateway.rows) - Counter(direct.rows)


def judge(scenario: TckScenario, gateway: Answer, direct: Callable[[], Answer]) -> Verdict:
    """A read or an error scenario: the gateway's answer against the TCK's and Neo4j's own."""
    name, kind = scenario.name, scenario.kind
    ordered = scenario.expected.ordered if scenario.expected else False
    if gateway.rule is not None:
        return Verdict(name, kind, "refused", gateway.rule)
    if gateway.degraded:
        return Verdict(name, kind, "different", ",".join(gateway.degraded), f"degraded: {gateway.describe()}")
    if kind != "error" and matches_tck(scenario, gateway) and not gateway.truncated:
        return Verdict(name, kind, "equal")
    own = direct()
    if kind == "error" and gateway.error is not None and gateway.error == own.error:
        return Verdict(name, kind, "equal", gateway.error)
    if gateway.truncated:
        if _is_part_of(gateway, own) and len(own.rows) > len(gateway.rows):
            return Verdict(name, kind, "truncated", f"{len(gateway.rows)} of {len(own.rows)} rows")
        return Verdict(name, kind, "different", "truncated", _diff(gateway, own))
    if not same_answer(gateway, own, ordered=ordered):
        return Verdict(name, kind, "different", "", _diff(gateway, own))
    if gateway.error is not None:
        return Verdict(name, kind, "neo4j-refused", gateway.error)
    detail = "Neo4j answers rows" if kind == "error" else ""
    return Verdict(name, kind, "neo4j-differs", detail, f"TCK expects {_tck(scenario)}; both gave {gateway.describe()}")


def judge_write(scenario: TckScenario, gateway: Answer, *, changed: bool) -> Verdict:
    """A write (or a call of the TCK's fixture procedures): refused, and the graph unchanged."""
    name = scenario.name
    kind: Kind = scenario.kind if scenario.kind in ("procedure", "error") else "write"
    if changed:
        return Verdict(
            name, kind, "wrote", "graph changed", f"the graph changed; the gateway gave {gateway.describe()}"
        )
    if gateway.rule is not None:
        return Verdict(name, kind, "refused", gateway.rule)
    if gateway.error is not None:
        return Verdict(name, kind, "neo4j-refused", gateway.error)
    return Verdict(name, kind, "wrote", "answered", f"a write was answered: {gateway.describe()}")


def _tck(scenario: TckScenario) -> str:
    if scenario.error is not None:
        return f"a {scenario.error.type} at {scenario.error.phase} ({scenario.error.detail})"
    expected = expected_answer(scenario)
    assert expected is not None
    return f"columns {list(expected[0])}, {len(expected[1])} rows {expected[1][:3]}"


def _diff(gateway: Answer, direct: Answer) -> str:
    return f"the gateway gave {gateway.describe()}; Neo4j on its own gave {direct.describe()}"
