"""``mnr prove``: non-interference against the visible copy, on a user's own graph and policy.

For each principal and tool: the fixture is seeded into the gateway's Neo4j, the whole graph
is exported, the policy's rules decide in Python what the principal sees (``visible_copy``),
and that copy is loaded into a second Neo4j of the prover's own. Every generated query
(``generate``) then runs through the real Gateway (guard, scope rewrite, sandbox) as the
principal, as plain Cypher on the copy, and as plain Cypher on the full graph; ``compare``
says whether the answers differ and how. Each difference is run again, shrunk (``shrink``)
and reported with the rewritten query. The property: whatever the principal cannot see
changes no answer the gateway gives (docs/mnr.md, "Proving non-interference").

Harness-only, like ``seed.py``: the copy and the full graph are read with the harness's driver.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import re
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from gateway.connection import Neo4jConnection
from gateway.domain import LayerSwitches, Principal, ToolResult
from gateway.errors import Busy, GatewayError, InvalidInput, Neo4jRefused, QueryRejected, QueryTimeout
from gateway.mnr.cases import PrincipalSpec, Suite
from gateway.mnr.compare import KINDS, Answer, Kind, classify, evaluation_order
from gateway.mnr.generate import Generator, Query, Schema, suite_queries
from gateway.mnr.shrink import shrink
from gateway.mnr.visible_copy import Graph, GraphNode, GraphRel, VisibilityModel, export_graph, load_copy
from gateway.policy import TOOL_NAMES, Policy, ToolName, VisibilityRule
from gateway.service import Gateway
from sandbox.withhold import Withholding

PROGRESS_EVERY = 50
BUSY_PATIENCE_SECONDS = 120.0
# The full graph's answer is read only to tell a leak from a wrong answer; this many rows suffice.
FULL_ROWS = 10_000
DEFAULT_MAX_ELEMENTS = 20_000
# Default principals holding one value each, besides nobody and everyone: the copies and the
# queries are shared among the principals, so more would thin each one's share.
MAX_SINGLE_PRINCIPALS = 6
# A principal and tool whose generator draws this many times its share (plus DRY_SLACK) without
# finding that many new queries the guard accepts has run dry: the report says so.
DRY_FACTOR = 20
DRY_SLACK = 100


class ProveError(Exception):
    """The prover could not run (no sandbox, no copy); the message says what is missing."""


class Difference(BaseModel):
    """One query whose gateway answer differs from the visible copy's, confirmed by a second run."""

    model_config = ConfigDict(extra="forbid")

    kind: Kind
    tool: ToolName
    principal: str
    origin: str
    query: str
    params: dict[str, Any] = Field(default_factory=dict)
    shrunk: str
    rewritten: str | None = None
    gateway: str
    copy_answer: str
    full: str

    def message(self) -> str:
        lines = [
            f"{self.kind.upper().replace('_', ' ')} [{self.tool} as {self.principal}] ({self.origin})",
            f"  query:     {self.query}",
        ]
        if self.params:
            lines.append(f"  params:    {self.params}")
        if self.shrunk != self.query:
            lines.append(f"  shrunk:    {self.shrunk}")
        lines += [f"  gateway:   {self.gateway}", f"  copy:      {self.copy_answer}", f"  full:      {self.full}"]
        if self.rewritten:
            lines.append(f"  rewritten: {self.rewritten}")
        return "\n".join(lines)


class ProveReport(BaseModel):
    """What one prover run did and found."""

    model_config = ConfigDict(extra="forbid")

    policy: str
    fixture: str
    seed: int
    principals: list[str]
    tools: list[ToolName]
    generated: int = 0
    # Distinct queries (per principal and tool) the guard accepted that ran through the gateway and
    # as plain Cypher on the copy; an error or a timeout on either side is an answer.
    executed: int = 0
    # Drawn by the generator and skipped: a query already run for the same principal and tool.
    repeated: int = 0
    # "<tool> as <principal>: <executed> of <share>" for each pair whose generator ran dry.
    dry: list[str] = Field(default_factory=list)
    refused: int = 0
    # Timeouts (either side) and answers cut by bytes: plan- or encoding-dependent, not compared.
    inconclusive: int = 0
    # Of those, answers where plain Cypher on the copy raised (compare.evaluation_order).
    evaluation_order: int = 0
    # Differences seen once and not again (the rerun agreed): listed, not counted as findings.
    unconfirmed: int = 0
    differences: list[Difference] = Field(default_factory=list)
    seconds: float = 0.0

    def count(self, kind: Kind) -> int:
        return sum(1 for d in self.differences if d.kind == kind)

    def summary(self) -> str:
        found = ", ".join(f"{self.count(k)} {k.replace('_', ' ')}s" for k in KINDS)
        return (
            f"mnr prove {self.policy} on {self.fixture} (seed {self.seed}): {self.executed} queries executed "
            f"({self.refused} refused by the guard, {self.inconclusive} inconclusive of which {self.evaluation_order} "
            f"evaluation order, {self.unconfirmed} unconfirmed) "
            f"over {len(self.principals)} principal(s) x {len(self.tools)} tool(s) in {self.seconds:.0f} s: {found}"
            + (f"; generator ran dry for {'; '.join(self.dry)}" if self.dry else "")
        )

    def text(self) -> str:
        return "\n\n".join([*(d.message() for d in self.differences), self.summary()])


class ProveSettings(BaseModel):
    """One prover run: what to prove, how much, and where the visible copy lives."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    policy: Policy
    fixture: Path
    principals: list[PrincipalSpec] = Field(default_factory=list)
    n: int = 2000
    seed: int = 0
    tools: list[ToolName] = Field(default_factory=lambda: list(TOOL_NAMES))
    suites: list[Suite] = Field(default_factory=list)
    max_elements: int = DEFAULT_MAX_ELEMENTS
    # Stop after this many differences (a positive control needs one); None: run every query.
    max_differences: int | None = None
    # Switch gateway layers off: the positive control (the scope rewrite off must show leaks).
    layers: LayerSwitches | None = None


Progress = Callable[[str], None]


def _stderr(message: str) -> None:
    print(f"[prove] {message}", file=sys.stderr, flush=True)


def default_principals(policy: Policy, graph: Graph) -> list[PrincipalSpec]:
    """Nobody, each single value (the first ``MAX_SINGLE_PRINCIPALS``), and everybody.

    Per attribute the policy's membership and equality rules read: the values the graph holds in
    each rule's property, on the elements that rule governs (its label or type; the default rule:
    the elements no named rule governs).
    """
    scope = policy.scope
    values: dict[str, set[str]] = {}
    governed: list[tuple[VisibilityRule, list[GraphNode | GraphRel]]] = []
    for label, rule in scope.nodes.items():
        governed.append((rule, [n for n in graph.nodes.values() if label in n.labels]))
    for rel_type, rule in scope.relationships.items():
        governed.append((rule, [r for r in graph.rels.values() if r.type == rel_type]))
    unnamed: list[GraphNode | GraphRel] = [n for n in graph.nodes.values() if not n.labels & set(scope.nodes)]
    unnamed += [r for r in graph.rels.values() if r.type not in scope.relationships]
    governed.append((scope.default, unnamed))
    for rule, elements in governed:
        if rule.kind not in ("membership", "equality"):
            continue
        prop = scope.rule_property(rule)
        found = values.setdefault(rule.attribute_name(), set())
        for element in elements:
            value = element.properties.get(prop)
            if isinstance(value, str):
                found.add(value)
            elif isinstance(value, list):
                found.update(v for v in value if isinstance(v, str))
    out = [PrincipalSpec(name="nobody", attributes={})]
    singles = [(attribute, value) for attribute, found in sorted(values.items()) for value in sorted(found)]
    for attribute, value in singles[:MAX_SINGLE_PRINCIPALS]:
        out.append(PrincipalSpec(name=f"{attribute}={value}", attributes={attribute: (value,)}))
    every = {attribute: tuple(sorted(found)) for attribute, found in values.items() if found}
    if every:
        out.append(PrincipalSpec(name="everyone", attributes=every))
    return out


def parse_principal(text: str) -> PrincipalSpec:
    """``NAME=ATTR:V1,V2;ATTR2:V3`` or ``NAME=V1,V2`` (a plain list is the layers)."""
    name, sep, rest = text.partition("=")
    if not sep or not name.strip():
        raise ValueError(f"{text!r} is not NAME=ATTR:V1,V2[;ATTR:V…] or NAME=V1,V2")
    attributes: dict[str, tuple[str, ...]] = {}
    for part in filter(None, (p.strip() for p in rest.split(";"))):
        attribute, colon, listed = part.partition(":")
        if not colon:
            attribute, listed = "layers", part
        attributes[attribute.strip()] = tuple(v.strip() for v in listed.split(",") if v.strip())
    return PrincipalSpec(name=name.strip(), attributes=attributes)


class Prover:
    """Runs one :class:`ProveSettings` against the gateway's Neo4j and a copy Neo4j (drivers held open)."""

    def __init__(
        self,
        settings: ProveSettings,
        *,
        gateway: Gateway,
        driver: Any,
        database: str | None,
        copy_driver: Any,
        copy_database: str | None,
        progress: Progress = _stderr,
    ) -> None:
        self.settings = settings
        self.gateway = gateway
        self.driver = driver
        self.database = database
        self.copy_driver = copy_driver
        self.copy_database = copy_database
        self.progress = progress
        self.policy = settings.policy

    def run(self) -> ProveReport:
        from gateway.mnr import seed

        started = time.monotonic()
        seed.seed(self.driver, self.settings.fixture, self.database)
        graph = export_graph(self.driver, self.database, self.settings.max_elements)
        principals = self.settings.principals or default_principals(self.policy, graph)
        report = ProveReport(
            policy=self.policy.name, fixture=self.settings.fixture.name, seed=self.settings.seed,
            principals=[p.name for p in principals], tools=list(self.settings.tools),
        )  # fmt: skip
        schema = Schema.of(graph, self.policy)
        pairs = [(tool, p) for tool in self.settings.tools for p in principals]
        for index, ((tool, spec), share) in enumerate(zip(pairs, shares(self.settings.n, len(pairs)), strict=True)):
            if self._enough(report):
                break
            principal = spec.principal()
            params = self._required_params(tool, principal, graph)
            salt = int(hashlib.sha256(f"{self.settings.seed}:{index}".encode()).hexdigest()[:8], 16)
            generator = Generator(schema, salt, self.policy.tool(tool).required_parameters, params)
            # The suites' queries are shared out among the principals of their tool, one each in turn,
            # and count towards the pair's share; generated queries fill the rest, a quarter at least.
            own = suite_queries(self.settings.suites, schema, tool, self.settings.seed)
            same_tool = [p for t, p in pairs if t == tool]
            mine = own[same_tool.index(spec) :: len(same_tool)]
            stream = generator.stream()
            first = next(stream)
            # A pin compares with the request's own parameter: one copy per set of parameters then.
            pinned = bool(self.policy.tool(tool).pins)
            groups: dict[str, list[Query]] = {}
            for query in mine:
                groups.setdefault(_group_key(query, pinned), []).append(query)
            generated_key = _group_key(first, pinned)
            order = [k for k in groups if k != generated_key] + [generated_key]
            seen: set[str] = set()
            started_pair = report.executed
            for key in order:
                group = groups.get(key, [])
                model = VisibilityModel(self.policy, tool, principal, (group[0] if group else first).params, graph)
                load_copy(self.copy_driver, self.copy_database, model.visible())
                for query in group:
                    self._one(report, tool, spec.name, principal, query, seen)
                if key == generated_key:
                    done = report.executed - started_pair
                    self._fill(report, tool, spec.name, principal, itertools.chain([first], stream), seen,
                               max(share - done, share // 4))  # fmt: skip
        report.seconds = time.monotonic() - started
        self.progress(report.summary())
        return report

    def _enough(self, report: ProveReport) -> bool:
        wanted = self.settings.max_differences
        return wanted is not None and len(report.differences) >= wanted

    # ---- one principal and tool --------------------------------------------------------------------

    def _fill(
        self,
        report: ProveReport,
        tool: ToolName,
        name: str,
        principal: Principal,
        queries: Iterator[Query],
        seen: set[str],
        wanted: int,
    ) -> None:
        """Run generated queries until ``wanted`` of them were executed (or the generator runs dry)."""
        got = drawn = 0
        limit = DRY_FACTOR * wanted + DRY_SLACK
        while got < wanted and not self._enough(report):
            if drawn >= limit:
                report.dry.append(f"{tool} as {name}: {got} of {wanted}")
                self.progress(f"the generator ran dry for {tool} as {name}: {got} of {wanted} after {drawn} drawn")
                return
            drawn += 1
            if self._one(report, tool, name, principal, next(queries), seen):
                got += 1

    def _one(
        self, report: ProveReport, tool: ToolName, name: str, principal: Principal, query: Query, seen: set[str]
    ) -> bool:
        """Run ``query`` unless it already ran for this principal and tool; True when it was executed."""
        if self._enough(report):
            return False
        if query.key() in seen:
            report.repeated += 1
            return False
        seen.add(query.key())
        report.generated += 1
        answers = self._answers(tool, principal, query)
        if answers is None:
            report.refused += 1
            return False
        report.executed += 1
        gateway, copy, full = answers
        if report.executed % PROGRESS_EVERY == 0:
            found = " ".join(f"{k}={report.count(k)}" for k in KINDS)
            self.progress(f"{self.policy.name} {tool} as {name}: {report.executed} executed, {found}")
        if gateway.timed_out or copy.timed_out or gateway.error == "bytes":
            report.inconclusive += 1
            return True
        if evaluation_order(gateway, copy):
            report.inconclusive += 1
            report.evaluation_order += 1
            return True
        kind = classify(gateway, copy, full, rows_determined=query.rows_determined)
        if kind is not None and self._raises_in_written_order(tool, query, gateway):
            report.inconclusive += 1
            report.evaluation_order += 1
            return True
        if kind is not None:
            again = self._answers(tool, principal, query)
            if again is None or classify(*again, rows_determined=query.rows_determined) != kind:
                report.unconfirmed += 1
            else:
                difference = self._difference(kind, tool, name, principal, query, answers)
                report.differences.append(difference)
                self.progress(difference.message())
        return True

    def _raises_in_written_order(self, tool: ToolName, query: Query, gateway: Answer) -> bool:
        """The gateway raised where the copy answered, and the copy raises the same when made to
        evaluate each WHERE as written (``written_order``): the error comes from a visible value
        the rewrite's order reached first, not from anything hidden (compare.py's note)."""
        if gateway.rows is not None:
            return False
        ordered = written_order(query)
        if ordered == query:
            return False
        limits = self.policy.tool(tool).limits
        copy = _plain_answer(self.copy_driver, self.copy_database, ordered, limits.timeout_seconds, limits.max_rows)
        code = _NEO4J_CODE.search(copy.error or "")
        return copy.rows is None and not copy.timed_out and code is not None and code.group() in (gateway.error or "")

    def _difference(
        self, kind: Kind, tool: ToolName, name: str, principal: Principal, query: Query, answers: _Answers
    ) -> Difference:
        def still(candidate: Query) -> bool:
            got = self._answers(tool, principal, candidate)
            return got is not None and classify(*got, rows_determined=candidate.rows_determined) == kind

        small = shrink(query, still)
        check = self.gateway.check(tool, small.text(), small.params, principal)
        gateway, copy, full = answers
        return Difference(
            kind=kind, tool=tool, principal=name, origin=query.origin, query=query.text(), params=query.params,
            shrunk=small.text(), rewritten=check.rewritten, gateway=gateway.describe(), copy_answer=copy.describe(),
            full=full().describe(),
        )  # fmt: skip

    def _required_params(self, tool: ToolName, principal: Principal, graph: Graph) -> dict[str, Any]:
        """Values for the tool's required parameters: a pinned one gets a value its label holds.

        The value chosen is one the principal can see under analyze when there is one (so recall's
        answers are not all empty), else the first the graph holds; an unpinned one gets a string.
        """
        tool_policy = self.policy.tool(tool)
        out: dict[str, Any] = {}
        by_parameter = {pin.parameter: (label, pin.property) for label, pin in tool_policy.pins.items()}
        wide = VisibilityModel(self.policy, "analyze", principal, {}, graph)
        for parameter in tool_policy.required_parameters:
            pinned = by_parameter.get(parameter)
            if pinned is None:
                out[parameter] = "prove"
                continue
            label, prop = pinned
            holders = sorted(
                (n for n in graph.nodes.values() if label in n.labels and prop in n.properties),
                key=lambda n: (not wide.node_visible(n), str(n.properties[prop])),
            )
            out[parameter] = holders[0].properties[prop] if holders else "prove"
        return out

    # ---- one query, three answers ----------------------------------------------------------------

    def _answers(self, tool: ToolName, principal: Principal, query: Query) -> _Answers | None:
        """The gateway's and the copy's answers, and the full graph's when asked; None when the guard refuses."""
        gateway = self._through_gateway(tool, principal, query)
        if gateway is None:
            return None
        limits = self.policy.tool(tool).limits
        copy = _plain_answer(self.copy_driver, self.copy_database, query, limits.timeout_seconds, limits.max_rows)
        withholding = self.policy.withholding() if self.policy.hides_properties() else None
        timeout = limits.timeout_seconds
        full = _Full(lambda: _plain_answer(self.driver, self.database, query, timeout, FULL_ROWS, withholding))
        return gateway, copy, full

    def _through_gateway(self, tool: ToolName, principal: Principal, query: Query) -> Answer | None:
        deadline = time.monotonic() + BUSY_PATIENCE_SECONDS
        while True:
            try:
                result = self.gateway.run(tool, query.text(), query.params, principal)
                break
            except Busy as exc:
                if time.monotonic() + exc.retry_after_ms / 1000 > deadline:
                    raise ProveError(f"the sandbox stayed busy for {BUSY_PATIENCE_SECONDS:.0f} s") from exc
                time.sleep(exc.retry_after_ms / 1000)
            except (QueryRejected, InvalidInput):
                return None
            except Neo4jRefused as exc:
                if exc.from_original:
                    return None  # Neo4j refused the agent's own text before reading anything
                return Answer.of_error(exc.message)
            except QueryTimeout as exc:
                return Answer.of_error(exc.message, timed_out=True)
            except GatewayError as exc:
                return Answer.of_error(f"{exc.code}: {exc.message}")
        return _gateway_answer(result)


class _Full:
    """The full graph's answer, run once and only when asked: it only tells a difference's kind."""

    def __init__(self, run: Callable[[], Answer]) -> None:
        self._run = run
        self._answer: Answer | None = None

    def __call__(self) -> Answer:
        if self._answer is None:
            self._answer = self._run()
        return self._answer


_Answers = tuple[Answer, Answer, Callable[[], Answer]]


_NEO4J_CODE = re.compile(r"Neo\.\w+\.\w+\.\w+")


def written_order(query: Query) -> Query:
    """``query`` with each WHERE evaluated whole, left to right, on every row its clause makes.

    Neo4j splits a WHERE's conjuncts and may filter by any first; behind a ``CASE`` on a value it
    cannot fold (``rand()``) it evaluates them in the order written, as the rewrite's guard does.
    """
    clauses = tuple(
        replace(c, where=(f"CASE WHEN rand() >= 0 THEN ({' AND '.join(c.where)}) ELSE false END",)) if c.where else c
        for c in query.clauses
    )
    return replace(query, clauses=clauses)


def shares(n: int, pairs: int) -> list[int]:
    """``n`` queries shared out among ``pairs`` principal-and-tool pairs, the remainder to the first ones."""
    each, extra = divmod(n, max(1, pairs))
    return [each + (1 if i < extra else 0) for i in range(pairs)]


def _group_key(query: Query, pinned: bool) -> str:
    return json.dumps(query.params, sort_keys=True, default=str) if pinned else ""


def _gateway_answer(result: ToolResult) -> Answer:
    if any(marker.endswith(":disabled") for marker in result.degraded):
        raise ProveError(f"the gateway answers without a sandbox: {result.degradedReason}")
    if result.truncated and result.truncation == "bytes":
        return Answer.of_error("bytes")
    return Answer.of_rows(result.rows, truncated=result.truncated, redacted=result.redacted)


def _plain_answer(
    driver: Any,
    database: str | None,
    query: Query,
    timeout: float,
    max_rows: int,
    withholding: Withholding | None = None,
) -> Answer:
    """Plain Cypher in a READ transaction; rows as the sandbox would serialize them."""
    import neo4j
    from neo4j.exceptions import ClientError, DatabaseError, TransientError

    from sandbox.serialize import to_json

    rows: list[list[Any]] = []
    truncated = False
    try:
        with (
            driver.session(database=database, default_access_mode=neo4j.READ_ACCESS) as session,
            session.begin_transaction(timeout=timeout) as tx,
        ):
            for record in tx.run(query.text(), query.params):
                if len(rows) >= max_rows:
                    truncated = True
                    break
                rows.append([to_json(v) for v in record.values()])
    except (ClientError, DatabaseError, TransientError) as exc:
        message = f"{exc.code}: {exc.message}" if getattr(exc, "code", None) else str(exc)
        code = getattr(exc, "code", "") or ""
        timed_out = "TimedOut" in code or "Timeout" in code or "terminated" in message.lower()
        return Answer.of_error(message, timed_out=timed_out)
    if withholding is not None:
        withholding.apply(rows)
    return Answer.of_rows(rows, truncated=truncated)


@contextmanager
def copy_neo4j(home: Path, port: int, *, keep: bool = False) -> Iterator[Neo4jConnection]:
    """The prover's own Neo4j for visible copies (started unless running; stopped after unless ``keep``).

    Never the gateway's or the user's database: a private instance with its own state directory,
    port and password (``neo4j_local.start_instance``), wiped before every copy.
    """
    from gateway.ops import neo4j_local

    running = neo4j_local.instance_running(home)
    home.mkdir(parents=True, exist_ok=True)
    connection = neo4j_local.start_instance(home, bolt=port)
    try:
        yield connection
    finally:
        if not running and not keep:
            neo4j_local.stop_instance(home)


def prove(
    settings: ProveSettings,
    *,
    copy_home: Path,
    copy_port: int,
    connection: Neo4jConnection | None = None,
    image: str | None = None,
    progress: Progress = _stderr,
) -> ProveReport:
    """Run the prover: the gateway on ``connection`` (the settings' Neo4j when None), the copy on its own Neo4j."""
    from gateway.mnr import seed
    from gateway.mnr.runner import MnrSession

    # Generated queries name labels and keys the copy lacks: Neo4j's warnings about them are expected.
    logging.getLogger("neo4j").setLevel(logging.ERROR)
    with copy_neo4j(copy_home, copy_port) as copy_connection:
        session = MnrSession(connection=connection, policy=settings.policy, image=image)
        driver = seed.connect(session.connection)
        copy_driver = seed.connect(copy_connection)
        try:
            prover = Prover(
                settings, gateway=session.gateway(settings.layers), driver=driver,
                database=session.connection.database, copy_driver=copy_driver,
                copy_database=copy_connection.database, progress=progress,
            )  # fmt: skip
            return prover.run()
        finally:
            copy_driver.close()
            driver.close()
            session.close()
