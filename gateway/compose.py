"""Composition, in one place: settings -> policy -> runner -> audit -> Gateway.

Every entrance builds its Gateway here: ``cypher-gateway serve``, ``cypher-gateway check``
(with no sandbox: it runs nothing), the must-not-retrieve runner, the benchmarks and the
test fixtures, so what the tests exercise is what production runs. Bad settings or a bad
policy raise (a :class:`~gateway.errors.SetupError`); a Neo4j or Docker that is missing
only degrades: queries answer ``degraded: ["<tool>:disabled"]`` and ``problems`` says why.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from gateway.audit import AuditLog, file_sha256
from gateway.config import ConfigError, GatewaySettings, neo4j_connection
from gateway.domain import LayerSwitches, Principal
from gateway.policy import Policy, PolicyError, load_policy
from gateway.runner import Runner, SandboxRunner, settings_for
from gateway.service import Gateway

# compose(runner=START): start a sandbox runner from the settings.
START: Literal["start"] = "start"

# A look at the graph through the started runner before the Gateway is built: the degraded
# markers every answer must then carry, and their reason (serve's scope survey).
Survey = Callable[[Policy, SandboxRunner, str | None], tuple[list[str], str | None]]


@dataclass
class Composed:
    """A ready Gateway, what is missing (empty when the sandbox can run), and the runner it started."""

    gateway: Gateway
    settings: GatewaySettings
    problems: list[str] = field(default_factory=list)
    # The runner compose started: close() stops it. A runner passed in stays its owner's.
    runner: SandboxRunner | None = None

    def close(self) -> None:
        if self.runner is not None:
            self.runner.close()


def compose(
    settings: GatewaySettings,
    *,
    runner: Runner | Literal["start"] | None = START,
    policy: Policy | None = None,
    layers: LayerSwitches | None = None,
    audit: bool = True,
    survey: Survey | None = None,
) -> Composed:
    """Build the Gateway ``settings`` describe.

    ``runner``: start one from the settings (the default), share one already running, or
    None for no sandbox at all (``check`` then needs neither Docker nor Neo4j). ``policy``:
    one already loaded, else ``settings.policy_file`` is loaded here. ``layers``: switch
    layers off (tests only). ``audit=False``: no audit log (harnesses and the CLI's ``check``,
    which are not agents' tool calls). ``survey``: run once the started runner can serve
    (nothing missing); what it finds, every answer of the Gateway says.
    """
    # The hash names the file's bytes (as `sha256sum` prints it) only when the policy is that file's.
    policy_sha256 = file_sha256(settings.policy_file) if policy is None else None
    if policy is None:
        try:
            policy = load_policy(settings.policy_file)
        except PolicyError as exc:
            raise ConfigError(f"policy_file: {exc}") from exc
    audit_log = (
        AuditLog(settings.audit_path, include_query_text=settings.audit_query_text, policy=policy.name,
                 policy_sha256=policy_sha256)
        if audit else None
    )  # fmt: skip
    problems: list[str] = []
    database = settings.neo4j_database
    started: SandboxRunner | None = None
    if runner == START:
        started, database, problems = _start_runner(settings, policy)
        runner = started
    elif runner is not None:
        ok, reason = runner.available()
        if not ok:
            problems.append(f"the sandbox cannot run: {reason}")
    disabled_reason = "; ".join(problems) if runner is None and problems else None
    standing: tuple[list[str], str | None] = ([], None)
    if survey is not None and started is not None and not problems:
        standing = survey(policy, started, database)
        # The survey took the warm sandbox: serve once its replacement is warm, or a first query
        # meets an empty pool and "busy" (as _start_runner says).
        started.wait_ready(started.settings.ready_timeout_seconds, count=1)
    gateway = Gateway(
        policy, runner, audit_log, layers=layers, database=database, disabled_reason=disabled_reason,
        standing_degraded=standing[0], standing_reason=standing[1],
    )  # fmt: skip
    return Composed(gateway, settings, problems, started)


def stdio_principal(settings: GatewaySettings) -> Principal:
    """The one local agent that launched the process (stdio), and the CLI's default caller."""
    attributes = {name: frozenset(values) for name, values in settings.stdio_attributes.items()}
    return Principal(name=settings.stdio_principal, scope=frozenset(settings.stdio_scope), attributes=attributes)


def _start_runner(settings: GatewaySettings, policy: Policy) -> tuple[SandboxRunner | None, str | None, list[str]]:
    try:
        target = neo4j_connection(settings)
    except ConfigError as exc:
        if settings.neo4j_uri is not None or settings.neo4j_ca_file is not None:
            raise  # an explicit but incomplete (or TLS-contradicting) Neo4j configuration is a start-up error
        return None, settings.neo4j_database, [str(exc)]
    problems: list[str] = []
    problem = unreachable(target.host, target.port)
    if problem:
        problems.append(problem)
    runner_settings = settings_for(settings, target)
    runner = SandboxRunner(runner_settings, policy.sandbox)
    ok, reason = runner.available()
    if not ok:
        problems.append(f"the sandbox cannot run: {reason}")
    elif not problem:
        # Serve once a sandbox is warm: a first query would otherwise meet an empty pool and "busy".
        runner.wait_ready(runner_settings.ready_timeout_seconds, count=1)
    return runner, target.database, problems


def unreachable(host: str, port: int, timeout: float = 2.0) -> str | None:
    """Why nothing accepts a TCP connection at host:port, or None when something does."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as exc:
        return f"Neo4j is not reachable at {host}:{port} ({exc.strerror or exc})"
