"""Run must-not-retrieve cases through the real gateway: guard, scope rewrite, sandbox, Neo4j.

One :class:`MnrSession` holds one policy, one warm sandbox pool (shared by
every case of the session) and the harness's write driver for seeding. Each
case is driven through ``Gateway.run`` exactly as an agent's tool call would
be; the harness only seeds fixtures and reads them back, never runs agent
queries itself.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gateway.catalogue import INPUT_INVALID
from gateway.compose import Composed, compose
from gateway.config import connection_settings, load_settings, neo4j_connection
from gateway.connection import Neo4jConnection
from gateway.domain import LayerSwitches, Principal, ToolResult
from gateway.errors import Busy, GatewayError, InvalidInput, QueryRejected
from gateway.mnr.cases import Case, LayerPermit, ResolvedCase, Selector, Suite
from gateway.mnr.match import FixtureElement, Matcher
from gateway.policy import Policy, load_policy
from gateway.runner import Runner
from gateway.service import Gateway

Status = Literal["passed", "failed", "error"]

POOL_SIZE = 2
READY_TIMEOUT_SECONDS = 90.0
FIXTURE_RETRIES = 3
RESEED_PAUSE_SECONDS = 0.5
# A suite runs its cases back to back; "busy" is the gateway asking for a pause, so the
# harness waits as a well-behaved agent does, up to this long per case.
BUSY_PATIENCE_SECONDS = 120.0


class CaseOutcome(BaseModel):
    """The verdict on one case, with everything a reader needs to see why."""

    model_config = ConfigDict(extra="forbid")

    suite: str
    file: str
    case_id: str
    description: str = ""
    tool: str
    principal: str
    scope: list[str]
    # The principal's further named lists (``repositories``, …), when it has any.
    attributes: dict[str, list[str]] = Field(default_factory=dict)
    status: Status
    # One line per broken expectation (or the harness problem for "error").
    failures: list[str] = Field(default_factory=list)
    detail: str = ""
    rule: str | None = None
    row_count: int | None = None
    degraded: list[str] = Field(default_factory=list)
    redacted: int = 0
    rewritten: str | None = None
    duration_ms: float = 0.0

    @property
    def name(self) -> str:
        return f"{self.suite}::{self.case_id}"

    def message(self) -> str:
        if self.status == "passed":
            return self.detail
        lines = [f"{self.name} {self.status.upper()}", *(f"  - {f}" for f in self.failures)]
        if self.detail:
            lines.append(f"  {self.detail}")
        if self.rewritten:
            lines.append(f"  rewritten query: {self.rewritten}")
        return "\n".join(lines)


def connection_from_env() -> Neo4jConnection:
    """The Neo4j ``serve`` would reach: the gateway's settings (``GATEWAY_NEO4J_*``/``NEO4J_*``, the
    TOML file of ``GATEWAY_CONFIG``), else the managed Neo4j."""
    return neo4j_connection(load_settings())


def _run_patiently(gateway: Gateway, resolved: ResolvedCase, principal: Principal) -> ToolResult:
    """``gateway.run`` for a case, trying again after each "busy" as its retry hint says."""
    deadline = time.monotonic() + BUSY_PATIENCE_SECONDS
    while True:
        try:
            return gateway.run(resolved.tool, resolved.case.query, resolved.params, principal)
        except Busy as exc:
            if time.monotonic() + exc.retry_after_ms / 1000 > deadline:
                raise
            time.sleep(exc.retry_after_ms / 1000)


class _Unset:
    pass


_UNSET = _Unset()


class MnrSession:
    """Runs suites against one Neo4j with one shared sandbox pool. Use as a context manager.

    Its Gateways are composed from the gateway's settings aimed at ``connection``, as
    ``serve`` composes its own (without an audit log: these are not agents' calls).
    ``runner``: leave it out to start a real ``SandboxRunner`` (pool of 2) on first use;
    pass one to share it; pass ``None`` for a gateway without a sandbox (every answer is
    ``<tool>:disabled``). ``layers``: when given, overrides every case's layer switches
    (e.g. to show what leaks with the scope layers off). ``layer_permits``: the cases whose
    files may switch a guarding layer off (``cases.GUARDING_LAYERS``); any other case that
    does is an error and never runs.
    """

    def __init__(
        self,
        *,
        connection: Neo4jConnection | None = None,
        policy: Policy | None = None,
        runner: Runner | _Unset | None = _UNSET,
        image: str | None = None,
        layers: LayerSwitches | None = None,
        pool_size: int = POOL_SIZE,
        layer_permits: Iterable[LayerPermit] = (),
    ) -> None:
        self.connection = connection or connection_from_env()
        self.settings = connection_settings(self.connection, sandbox_image=image, pool_size=pool_size)
        self.policy = policy or load_policy(self.settings.policy_file)
        self.layers = layers
        self.layer_permits = tuple(layer_permits)
        self._started: Composed | None = None
        # Started on first use unless one was passed in (a shared runner, or None for no sandbox).
        self._runner_ready = not isinstance(runner, _Unset)
        self._runner: Runner | None = None if isinstance(runner, _Unset) else runner
        self._driver: Any = None
        self._gateways: dict[tuple[LayerSwitches, str | None], Gateway] = {}
        # fixture path -> content hash seeded in this session, and its element index.
        self._seeded: dict[Path, str] = {}

    # --- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> MnrSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._started is not None:
            self._started.close()
            self._started = None
        self._runner = None
        if self._driver is not None:
            self._driver.close()
            self._driver = None

    @property
    def runner(self) -> Runner | None:
        if not self._runner_ready:
            self._runner_ready = True
            self._runner = self._start_runner()
        return self._runner

    def _start_runner(self) -> Runner | None:
        self._started = compose(self.settings, policy=self.policy, audit=False)
        if self._started.runner is not None and not self._started.problems:
            self._started.runner.wait_ready(READY_TIMEOUT_SECONDS)
        return self._started.runner

    def _gateway(self, case: Case, key_property: str | None = None) -> Gateway:
        switches = self.layers or LayerSwitches(**(case.layers.model_dump() if case.layers else {}))
        return self.gateway(switches, key_property)

    def gateway(self, switches: LayerSwitches | None = None, key_property: str | None = None) -> Gateway:
        """The session's Gateway with these layer switches (every layer on when None), composed once.

        ``key_property``: a suite's fixture key, shown under an allow-list that does not list it
        (``harness_policy``).
        """
        switches = switches or LayerSwitches()
        gateway = self._gateways.get((switches, key_property))
        if gateway is None:
            policy = harness_policy(self.policy, key_property) if key_property is not None else self.policy
            composed = compose(self.settings, runner=self.runner, policy=policy, layers=switches, audit=False)
            gateway = self._gateways[(switches, key_property)] = composed.gateway
        return gateway

    # --- fixtures ----------------------------------------------------------------------------

    def prepare(self, suite: Suite) -> dict[str, FixtureElement]:
        """Seed the suite's fixture (once per session and content) and read its elements back."""
        from gateway.mnr import seed

        path = suite.fixture_path()
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if self._driver is None:
            self._driver = seed.connect(self.connection)
        if self._seeded.get(path) != digest:
            seed.seed(self._driver, path, self.connection.database)
            self._seeded[path] = digest
        return self._index(suite)

    def _index(self, suite: Suite) -> dict[str, FixtureElement]:
        from gateway.mnr import seed

        # Read fresh for every case: in a shared database another process (the demo, a
        # second harness) may reseed the same fixture, which changes every element id.
        return seed.fixture_elements(self._driver, suite.key_property, self.connection.database)

    # --- running -----------------------------------------------------------------------------

    def run_suite(self, suite: Suite) -> list[CaseOutcome]:
        return [self.run_case(suite, case) for case in suite.cases]

    def run_suites(self, suites: Iterable[Suite]) -> list[CaseOutcome]:
        return [outcome for suite in suites for outcome in self.run_suite(suite)]

    def run_case(self, suite: Suite, case: Case) -> CaseOutcome:
        resolved = suite.resolved(case)
        principal = resolved.principal.principal()
        started = time.monotonic()
        blank = CaseOutcome(
            suite=suite.name, file=str(suite.source or ""), case_id=case.id, description=case.description,
            tool=resolved.tool, principal=resolved.principal.name,
            scope=list(resolved.principal.scope or sorted(principal.scope)),
            attributes={name: sorted(values) for name, values in sorted(principal.attributes.items())},
            status="passed",
        )  # fmt: skip
        outcome = blank.model_copy(deep=True)
        if suite.policy != self.policy.name:
            outcome.status = "error"
            outcome.failures = [policy_mismatch(suite, self.policy)]
            return outcome
        unpermitted = self._unpermitted(suite, case)
        if unpermitted is not None:
            outcome.status = "error"
            outcome.failures = [unpermitted]
            return outcome
        try:
            self.prepare(suite)
            for _attempt in range(FIXTURE_RETRIES):
                elements = self._present(suite, case)
                missing = _unknown_uids(case, elements)
                if missing:
                    outcome.status = "error"
                    outcome.failures = [
                        f"{suite.key_property}={uid!r} names no element of fixture {suite.fixture}" for uid in missing
                    ]
                    break
                outcome = blank.model_copy(deep=True)
                self._judge(resolved, Matcher(suite.key_property, elements), outcome, suite.key_property)
                if _same_ids(elements, self._index(suite)):
                    break
                # The fixture was reseeded while the case ran: this verdict is void; run it again.
                time.sleep(RESEED_PAUSE_SECONDS)
            else:
                outcome.status = "error"
                outcome.failures = [f"fixture {suite.fixture} kept changing while the case ran (reseeded elsewhere?)"]
        except Exception as exc:  # the harness could not run the case: report it, never hide it
            outcome.status = "error"
            outcome.failures = [f"harness error: {type(exc).__name__}: {exc}"]
        outcome.duration_ms = (time.monotonic() - started) * 1000
        return outcome

    def _unpermitted(self, suite: Suite, case: Case) -> str | None:
        """Why the case may not run as its file says, when it switches a guarding layer off unpermitted."""
        if self.layers is not None or case.layers is None:
            return None  # the caller's own switches (code, not a file) replace the file's
        off = case.layers.guarding_off()
        if not off or any(permit.allows(suite, case) for permit in self.layer_permits):
            return None
        named = f"{shown_path(suite.source)}::{case.id}"
        return (
            f"{shown_path(suite.source)}: case {case.id!r} switches off {' and '.join(off)}, so its query would reach "
            f"Neo4j unchecked; a case file alone cannot do that: allow it on the command line with "
            f"`mnr run --allow-layers-off {named}` (pytest: `--mnr-allow-layers-off {named}`)"
        )

    def _present(self, suite: Suite, case: Case) -> dict[str, FixtureElement]:
        """The fixture's elements; reseeded once when some the case names are gone (wiped elsewhere)."""
        from gateway.mnr import seed

        elements = self._index(suite)
        if _unknown_uids(case, elements):
            seed.seed(self._driver, suite.fixture_path(), self.connection.database)
            elements = self._index(suite)
        return elements

    def _judge(self, resolved: ResolvedCase, matcher: Matcher, outcome: CaseOutcome, key_property: str) -> None:
        case = resolved.case
        gateway = self._gateway(case, key_property)
        principal = resolved.principal.principal()
        failures: list[str] = []
        try:
            result = _run_patiently(gateway, resolved, principal)
        except QueryRejected as exc:
            outcome.rule = exc.rule
            if case.must_reject is None:
                failures.append(f"rejected by rule {exc.rule}: {exc.reason}")
            elif exc.rule != case.must_reject:
                failures.append(f"expected rejection by {case.must_reject}, got rule {exc.rule}: {exc.reason}")
            else:
                outcome.detail = f"rejected: {exc.rule}"
            outcome.failures = failures
            outcome.status = "failed" if failures else "passed"
            return
        except InvalidInput as exc:
            outcome.rule = INPUT_INVALID.id
            if case.must_reject != INPUT_INVALID.id:
                failures.append(f"invalid input: {exc.message}")
            else:
                outcome.detail = f"rejected: {INPUT_INVALID.id}"
            outcome.failures = failures
            outcome.status = "failed" if failures else "passed"
            return
        except GatewayError as exc:
            outcome.failures = [f"the query failed ({exc.code}): {exc.message}"]
            outcome.status = "failed"
            outcome.rewritten = self._rewritten(gateway, resolved, principal)
            return

        outcome.row_count = result.rowCount
        outcome.degraded = list(result.degraded)
        outcome.redacted = result.redacted
        failures = self._expectations(resolved, matcher, result)
        outcome.failures = failures
        outcome.status = "failed" if failures else "passed"
        outcome.detail = f"{result.rowCount} row(s)" + (f", degraded {result.degraded}" if result.degraded else "")
        if failures:
            outcome.rewritten = self._rewritten(gateway, resolved, principal)

    def _expectations(self, resolved: ResolvedCase, matcher: Matcher, result: ToolResult) -> list[str]:
        case = resolved.case
        failures: list[str] = []
        disabled = f"{resolved.tool}:disabled"
        if case.must_reject is not None:
            failures.append(
                f"expected rejection by {case.must_reject}, but the query ran ({result.rowCount} row(s))"
                if disabled not in result.degraded
                else f"expected rejection by {case.must_reject}, but the sandbox could not run ({disabled}) "
                "and the query was not rejected"
            )
            return failures
        if sorted(result.degraded) != sorted(case.expect_degraded):
            if disabled in result.degraded and disabled not in case.expect_degraded:
                failures.append(f"degraded {disabled}: the sandbox did not run, so nothing was checked ({self._why()})")
                return failures
            if "scope:redacted" in result.degraded and "scope:redacted" not in case.expect_degraded:
                failures.append(
                    f"layer 2 redacted {result.redacted} element(s) that layer 1 (the scope rewrite) let through"
                )
            else:
                failures.append(f"degraded {result.degraded}, expected {list(case.expect_degraded)}")
        for selector in case.must_not_retrieve:
            hits = matcher.find(selector, result.columns, result.rows)
            if hits:
                shown = "; ".join(h.describe() for h in hits[:3])
                if len(hits) > 3:
                    shown += f"; +{len(hits) - 3} more"
                failures.append(f"LEAKED {selector.describe()}: {shown}")
        for selector in case.must_retrieve:
            if not matcher.find(selector, result.columns, result.rows):
                failures.append(f"missing {selector.describe()}: not found in {result.rowCount} row(s)")
        if case.max_rows is not None and result.rowCount > case.max_rows:
            failures.append(f"{result.rowCount} row(s), at most {case.max_rows} expected")
        if case.min_rows is not None and result.rowCount < case.min_rows:
            failures.append(f"{result.rowCount} row(s), at least {case.min_rows} expected")
        if case.expect_rows is not None and result.rows != case.expect_rows:
            failures.append(f"rows {_short(result.rows)}, expected {_short(case.expect_rows)}")
        if case.expect_notifications is not None:
            got = [n.gql_status or n.code or "?" for n in result.notifications]
            if got != list(case.expect_notifications):
                failures.append(f"notifications {got}, expected {list(case.expect_notifications)}")
        return failures

    def _why(self) -> str:
        runner = self._runner
        if runner is None:
            return "no sandbox runner is configured"
        ok, reason = runner.available()
        return reason or ("the runner reports available now" if ok else "unknown")

    @staticmethod
    def _rewritten(gateway: Gateway, resolved: ResolvedCase, principal: Principal) -> str | None:
        check = gateway.check(resolved.tool, resolved.case.query, resolved.params, principal)
        return check.rewritten


def policy_mismatch(suite: Suite, policy: Policy) -> str:
    return (
        f"{suite.name} assumes policy {suite.policy!r}, but the policy in force is {policy.name!r}: "
        "its expectations say nothing about another policy"
    )


def shown_path(path: Path | None) -> str:
    """A case file as a reader would type it: relative to the working directory when inside it."""
    if path is None:
        return "<suite>"
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _same_ids(before: dict[str, FixtureElement], after: dict[str, FixtureElement]) -> bool:
    return {k: v.element_ids for k, v in before.items()} == {k: v.element_ids for k, v in after.items()}


def harness_policy(policy: Policy, key_property: str) -> Policy:
    """``policy`` with a suite's fixture key visible on every element, when its allow-list does not list it.

    The key (``uid``) is the harness's name for a fixture element (docs/mnr.md), not the graph's data:
    a case may project it (``RETURN f.uid``) whatever the policy under test lists. Nothing else changes.
    """
    visible = policy.visible_properties
    if visible is None or (visible.on_every_node(key_property) and visible.on_every_relationship(key_property)):
        return policy
    widened = visible.model_copy(
        update={
            "nodes": {label: keys | {key_property} for label, keys in visible.nodes.items()},
            "relationships": {rel: keys | {key_property} for rel, keys in visible.relationships.items()},
            "default": visible.default | {key_property},
        }
    )
    return policy.model_copy(update={"visible_properties": widened})


def _unknown_uids(case: Case, elements: dict[str, FixtureElement]) -> list[str]:
    selectors: tuple[Selector, ...] = case.must_not_retrieve + case.must_retrieve
    return [s.uid for s in selectors if s.uid is not None and s.uid not in elements]


def _short(value: Any, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def counts(outcomes: Iterable[CaseOutcome]) -> dict[str, int]:
    tally = {"cases": 0, "passed": 0, "failed": 0, "error": 0}
    for outcome in outcomes:
        tally["cases"] += 1
        tally[outcome.status] += 1
    return tally
