"""``cypher-gateway doctor``: does everything the gateway needs hold, and what fixes what does not.

Each check says ``ok``, ``failed`` (with a fix) or ``skipped`` (a check it needs failed),
in the order a request needs them: the settings, the policy, the audit log, identity (the
principal sources supply what the policy reads; with OAuth, the issuer, its keys and the
resource metadata: gateway.ops.identity_check), Docker, the
sandbox image, Neo4j's address, then a live sandbox: it starts, one read query goes
through the real pool, forwarder and credentials (TLS included), the policy's scope is
held against the graph (its property must occur, the labels, types and properties it names
must exist, near-misses named; per label and type, how many elements it hides, when its
rules read the scope property; ``gateway.policy_fit``), and the egress probe runs in the same box.
Exit 0 only when every check holds; ``--json`` prints the same report as one object.

The doctor starts its own small runner (one warm sandbox) and removes it on the way
out; it writes no audit line (it is not an agent's tool call).
"""

from __future__ import annotations

import argparse
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from gateway import policy_fit, scope_survey
from gateway.cli.policy import lint_warnings
from gateway.compose import unreachable
from gateway.config import GatewaySettings, load_settings, neo4j_connection
from gateway.connection import Neo4jConnection
from gateway.errors import SetupError
from gateway.image_tag import sandbox_image_tag
from gateway.ops.egress import ProbeFailed, doctor_request, network_gateways, run_probe
from gateway.ops.identity_check import IdentityProblem, check_identity
from gateway.policy import Policy, load_policy
from gateway.runner import SandboxRunner, job_for, settings_for

Status = Literal["ok", "failed", "skipped"]
# What the read check asks: a real read of the graph, cheap on any size (Neo4j counts from its store).
READ_QUERY = "MATCH (n) RETURN count(n) AS nodes"
READY_TIMEOUT_S = 60.0
# The scope survey counts every element once: minutes at most on a large graph, operator-run.
SURVEY_TIMEOUT_S = 120.0


class Check(BaseModel):
    name: str
    status: Status
    detail: str
    fix: str | None = None


class Report(BaseModel):
    ok: bool
    checks: list[Check]


class _Failed(Exception):
    """A check that does not hold: what was found, and the fix."""

    def __init__(self, detail: str, fix: str) -> None:
        super().__init__(detail)
        self.detail, self.fix = detail, fix


def _settings_fix() -> str:
    return "correct the setting named above: its GATEWAY_* variable, or its key in the --config TOML file"


class Doctor:
    """Runs the checks in order; a check whose prerequisites failed is skipped, naming them."""

    def __init__(self, config_file: Path | None) -> None:
        self.config_file = config_file
        self.checks: list[Check] = []
        self.settings: GatewaySettings | None = None
        self.policy: Policy | None = None
        self.docker: Any = None
        self.target: Neo4jConnection | None = None
        self.runner: SandboxRunner | None = None

    def run(self) -> Report:
        try:
            self._check("settings", self._settings, needs=[])
            self._check("policy", self._policy, needs=["settings"])
            self._check("audit log", self._audit, needs=["settings"])
            self._check("identity", self._identity, needs=["settings", "policy"])
            self._check("docker", self._docker, needs=[])
            self._check("sandbox image", self._image, needs=["settings", "docker"])
            self._check("neo4j", self._neo4j, needs=["settings"])
            self._check("sandbox", self._sandbox, needs=["sandbox image", "neo4j"])
            self._check("neo4j read", self._read, needs=["policy", "sandbox"])
            self._check("scope vs graph", self._scope_graph, needs=["neo4j read"])
            self._check("sandbox egress", self._egress, needs=["sandbox"])
        finally:
            if self.runner is not None:
                self.runner.close()
            if self.docker is not None:
                self.docker.close()
        return Report(ok=all(c.status == "ok" for c in self.checks), checks=self.checks)

    def _check(self, name: str, body: Callable[[], str], needs: list[str]) -> None:
        missing = [c.name for c in self.checks if c.name in needs and c.status != "ok"]
        if missing:
            self.checks.append(Check(name=name, status="skipped", detail=f"needs: {', '.join(missing)}"))
            return
        try:
            self.checks.append(Check(name=name, status="ok", detail=body()))
        except _Failed as failed:
            self.checks.append(Check(name=name, status="failed", detail=failed.detail, fix=failed.fix))

    # --- the checks, each returning what it found -------------------------------------------

    def _settings(self) -> str:
        try:
            self.settings = load_settings(self.config_file)
        except SetupError as exc:
            raise _Failed(str(exc), _settings_fix()) from exc
        source = self.config_file or os.environ.get("GATEWAY_CONFIG")
        return f"from {source} and the environment" if source else "from the environment and the defaults"

    def _policy(self) -> str:
        assert self.settings is not None
        file = self.settings.policy_file
        try:
            self.policy = load_policy(file)
        except SetupError as exc:
            raise _Failed(
                str(exc), f"edit {file} (`cypher-gateway policy lint {file}` names each problem), or set policy_file "
                "(GATEWAY_POLICY_FILE) to a valid policy"
            ) from exc  # fmt: skip
        # What fails without a graph is also said here, in case the graph check cannot run.
        warnings = lint_warnings(self.policy) + [f.problem for f in policy_fit.static_findings(self.policy)]
        notes = f"; {len(warnings)} lint warning(s): " + "; ".join(warnings) if warnings else ", lints clean"
        return f"policy {self.policy.name!r} from {file}{notes}"

    def _audit(self) -> str:
        assert self.settings is not None
        path = self.settings.audit_path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # What AuditLog.write does, without writing a line.
            os.close(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600))
        except OSError as exc:
            raise _Failed(
                f"cannot append to {path}: {exc.strerror or exc}",
                f"make {path.parent} writable, or set audit_path (GATEWAY_AUDIT_PATH) to a file this user can write",
            ) from exc
        return f"{path} is writable"

    def _identity(self) -> str:
        assert self.settings is not None and self.policy is not None
        try:
            return check_identity(self.settings, self.policy)
        except IdentityProblem as problem:
            raise _Failed(problem.detail, problem.fix) from problem

    def _docker(self) -> str:
        from docker.client import DockerClient

        try:
            self.docker = DockerClient.from_env(timeout=10)
            self.docker.ping()
            version = self.docker.version().get("Version", "?")
        except Exception as exc:
            where = os.environ.get("DOCKER_HOST") or "the default socket (/var/run/docker.sock)"
            raise _Failed(
                f"no Docker daemon answers at {where}: {type(exc).__name__}: {str(exc)[:200]}",
                "start the Docker daemon (Debian: apt-get install docker.io, then systemctl start docker, or "
                "dockerd & as root), or set DOCKER_HOST to a daemon this user may use",
            ) from exc
        return f"Docker {version} answers"

    def _image(self) -> str:
        assert self.settings is not None
        current = sandbox_image_tag()
        configured = self.settings.sandbox_image or current
        present = bool(self.docker.images.list(name=configured))
        if not present:
            raise _Failed(
                f"the sandbox image {configured} is not built",
                "cypher-gateway images build sandbox"
                + ("" if configured == current else " (and unset GATEWAY_SANDBOX_IMAGE to use it)"),
            )
        if configured != current:
            raise _Failed(
                f"sandbox_image pins {configured}; the installed sources build {current}",
                "unset sandbox_image (GATEWAY_SANDBOX_IMAGE) and run `cypher-gateway images build sandbox`",
            )
        return f"{configured} is built and current"

    def _neo4j(self) -> str:
        assert self.settings is not None
        managed = self.settings.neo4j_uri is None
        try:
            self.target = neo4j_connection(self.settings)
        except SetupError as exc:
            raise _Failed(
                str(exc),
                "cypher-gateway neo4j start (the managed Neo4j), or set NEO4J_URI, NEO4J_USER and NEO4J_PASSWORD",
            ) from exc
        where = f"{self.target.host}:{self.target.port}"
        problem = unreachable(self.target.host, self.target.port)
        if problem:
            raise _Failed(
                problem,
                "cypher-gateway neo4j start"
                if managed
                else f"check that Neo4j listens at {where} and that this machine can reach it",
            )
        return f"{'the managed Neo4j' if managed else 'Neo4j'} listens at {where} ({self.target.scheme})"

    def _sandbox(self) -> str:
        assert self.settings is not None and self.target is not None
        self.runner = SandboxRunner(settings_for(self.settings, self.target, pool_size=1))
        self.runner.wait_ready(READY_TIMEOUT_S)
        ok, reason = self.runner.available()
        if not ok:
            raise _Failed(
                f"the sandbox cannot run: {reason}",
                "look for Docker's own error above; `docker run --rm --network none IMAGE true` should work",
            )
        endpoint = f"{self.runner.settings.neo4j_host}:{self.runner.settings.neo4j_port}"
        return f"a hardened sandbox starts warm; its forwarder relays to {endpoint}"

    def _read(self) -> str:
        assert self.runner is not None and self.target is not None and self.policy is not None
        job = job_for(self.policy.tool("analyze"), query_id=f"doctor-{uuid.uuid4().hex[:8]}", cypher=READ_QUERY,
                      params={}, result_check=None, database=self.target.database)  # fmt: skip
        result = self.runner.run(job)
        user, database = self.target.user, self.target.database or "the default database"
        if result.error is not None:
            raise _Failed(f"the sandbox's read failed ({result.error.code}): {result.error.message}",
                          _read_fix(result.error.message, result.error.neo4j_code))  # fmt: skip
        return f"a sandbox read {result.rows[0][0]} nodes from {database} as {user!r} in a READ transaction"

    def _scope_graph(self) -> str:
        assert self.policy is not None
        reads_layers = scope_survey.reads_layers(self.policy)
        found = scope_survey.survey(self.policy, self._query, counts=reads_layers)
        shapes = policy_fit.read_shapes(self._query)
        # The property missing everywhere is the survey's (its first problem); the names are policy_fit's.
        findings = [] if found.property_found else [policy_fit.Finding(problem=found.problems[0], fix=scope_survey.FIX)]
        findings += policy_fit.static_findings(self.policy) + policy_fit.graph_findings(self.policy, shapes)
        if findings:
            raise _Failed("; ".join(f.problem for f in findings), policy_fit.fix_lines(findings))
        fits = "every label, relationship type and property the policy names occurs in the graph"
        if (hidden := policy_fit.one_parent_warning(self.policy, self._query)) is not None:
            fits = f"{fits}; {hidden}"
        if not reads_layers:
            # The rules never read the scope property: its use and counts would describe nothing.
            return fits
        return f"{fits}; {found.layers_property!r} is in use; {found.hidden_summary()}"

    def _query(self, cypher: str, params: dict[str, Any]) -> list[list[Any]]:
        """One of the doctor's own reads (the operator's, unscoped) in a sandbox, or a failed check."""
        assert self.runner is not None and self.target is not None
        run = scope_survey.via_sandbox(self.runner, self.target.database, SURVEY_TIMEOUT_S, READY_TIMEOUT_S)
        try:
            return run(cypher, params)
        except scope_survey.SurveyFailed as exc:
            raise _Failed(f"could not look at the graph: {exc}", "run doctor again when Neo4j is less busy") from exc

    def _egress(self) -> str:
        assert self.runner is not None
        settings = self.runner.settings
        try:
            report = run_probe(self.docker, self.runner.sandbox_spec(),
                               doctor_request(settings, network_gateways(self.docker)))  # fmt: skip
        except ProbeFailed as exc:
            raise _Failed(str(exc), "rebuild the sandbox image (cypher-gateway images build sandbox)") from exc
        breaches = report.breaches()
        forwarder = self.docker.containers.get(self.runner.forwarder_container_id())
        endpoint = f"{settings.neo4j_host}:{settings.neo4j_port}"
        if forwarder.attrs["Args"][-1] != endpoint:
            breaches.append(f"the forwarder targets {forwarder.attrs['Args'][-1]}, not {endpoint}")
        if breaches:
            raise _Failed(
                "the sandbox is not sealed: " + "; ".join(breaches),
                "do not serve until this holds: sandboxes must start with --network none (look for a Docker "
                "runtime or daemon setting that adds networks or DNS to containers)",
            )
        return (
            f"a sandbox sees only lo, reaches none of {len(report.tcp)} address(es) on this machine "
            f"({', '.join(report.tcp)}), resolves no name, cannot write its socket volume; "
            f"the forwarder targets only {endpoint}"
        )


def _read_fix(message: str, neo4j_code: str | None) -> str:
    text = f"{message} {neo4j_code or ''}".lower()
    if "credential" in text or "unauthorized" in text or "authentication" in text:
        return "check NEO4J_USER and NEO4J_PASSWORD (the managed Neo4j's password: cypher-gateway neo4j status --json)"
    if any(word in text for word in ("ssl", "tls", "certificate", "handshake")):
        return "make neo4j_uri's scheme match the server's TLS (bolt:// plain, bolt+s:// TLS) and check its certificate"
    if "database" in text:
        return "check NEO4J_DATABASE names a database this user may read"
    return "check that the Neo4j at neo4j_uri is the server you mean and that this user may read from it"


def diagnose(config_file: Path | None = None) -> Report:
    return Doctor(config_file).run()


def render(report: Report) -> str:
    width = max(len(c.name) for c in report.checks)
    lines = []
    for check in report.checks:
        mark = {"ok": "ok", "failed": "FAILED", "skipped": "skipped"}[check.status]
        lines.append(f"{mark:8} {check.name:<{width}}  {check.detail}")
        if check.fix:
            lines.append(f"{'':8} {'':<{width}}  fix: {check.fix}")
    bad = [c.name for c in report.checks if c.status != "ok"]
    lines.append("")
    lines.append(
        f"all {len(report.checks)} checks hold" if not bad else f"{len(bad)} of {len(report.checks)} checks do not "
        f"hold: {', '.join(bad)}"
    )  # fmt: skip
    return "\n".join(lines)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "doctor",
        help="check Docker, the sandbox image, Neo4j, the sandbox's egress, the policy and the audit log",
        description="Check everything serve needs, with a fix for what does not hold. Exit 0 only when all hold.",
    )
    parser.add_argument("--config", type=Path, help="TOML settings file (else $GATEWAY_CONFIG, env, defaults)")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    parser.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    report = diagnose(args.config)
    print(report.model_dump_json(indent=2) if args.json else render(report))
    return 0 if report.ok else 1
