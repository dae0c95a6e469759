"""``cypher-gateway serve`` (stdio or streamable HTTP) and ``cypher-gateway audit tail|summary``.

Composition lives here and only here: settings -> policy -> runner -> audit ->
Gateway -> MCP server -> transport. Every message goes to stderr: on stdio,
stdout belongs to the MCP protocol.
"""

from __future__ import annotations

import argparse
import json
import logging
import socket
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gateway.audit import AuditLog
from gateway.auth import AuthConfigError, BearerAuth, TokenTable
from gateway.config import ConfigError, GatewaySettings, Neo4jTarget, load_settings, neo4j_target
from gateway.domain import Principal
from gateway.policy import PolicyError, load_policy
from gateway.runner import Runner
from gateway.service import Gateway

log = logging.getLogger("gateway.server")


def _say(message: str) -> None:
    print(f"[cypher-gateway] {message}", file=sys.stderr, flush=True)


@dataclass
class Composed:
    """A ready Gateway plus what is missing (empty when the sandbox can run)."""

    gateway: Gateway
    settings: GatewaySettings
    problems: list[str] = field(default_factory=list)

    def close(self) -> None:
        if self.gateway.runner is not None:
            self.gateway.runner.close()


def _reachable(host: str, port: int, timeout: float = 2.0) -> str | None:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as exc:
        return f"Neo4j is not reachable at {host}:{port} ({exc.strerror or exc})"


def _make_runner(settings: GatewaySettings, target: Neo4jTarget) -> Runner:
    from gateway.ops import images
    from gateway.runner import RunnerSettings, SandboxRunner

    return SandboxRunner(
        RunnerSettings(
            image=settings.sandbox_image or images.sandbox_image_tag(),
            pool_size=settings.pool_size,
            memory_mb=settings.sandbox_memory_mb,
            neo4j_host=target.host,
            neo4j_port=target.port,
            neo4j_user=target.user,
            neo4j_password=target.password,
            database=target.database,
            transport="query-api" if settings.neo4j_transport == "query-api" else "bolt",
        )
    )


def compose(settings: GatewaySettings) -> Composed:
    """Build the Gateway. Bad settings or policy raise; a missing Neo4j or Docker only degrades."""
    try:
        policy = load_policy(settings.policy_file)
    except PolicyError as exc:
        raise ConfigError(f"policy_file: {exc}") from exc
    audit = AuditLog(settings.audit_path, include_query_text=settings.audit_query_text)
    problems: list[str] = []
    runner: Runner | None = None
    database: str | None = settings.neo4j_database
    try:
        target = neo4j_target(settings)
        database = target.database
    except ConfigError as exc:
        if settings.neo4j_uri is not None:
            raise  # an explicit but incomplete Neo4j configuration is a start-up error
        problems.append(str(exc))
    else:
        unreachable = _reachable(target.host, target.port)
        if unreachable:
            problems.append(unreachable)
        runner = _make_runner(settings, target)
        ok, reason = runner.available()
        if not ok:
            problems.append(f"the sandbox cannot run: {reason}")
    return Composed(Gateway(policy, runner, audit, database=database), settings, problems)


# --- serve -------------------------------------------------------------------------------------------


def _serve(args: argparse.Namespace) -> int:
    from gateway.server import build_server, stdio_resolver

    overrides: dict[str, Any] = {}
    if args.host:
        overrides["http_host"] = args.host
    if args.port:
        overrides["http_port"] = args.port
    if args.tokens_file:
        overrides["tokens_file"] = args.tokens_file
    try:
        settings = load_settings(args.config, **overrides)
        tokens = _tokens(settings, args)
        composed = compose(settings)
    except (ConfigError, AuthConfigError) as exc:
        _say(f"cannot start: {exc}")
        return 2
    for problem in composed.problems:
        _say(f"WARNING: {problem}")
    if composed.problems:
        _say("starting anyway: recall and analyze answer degraded [\"<tool>:disabled\"] and run nothing")
    else:
        _say("Neo4j and the sandbox are reachable")
    stdio_principal = Principal(name=settings.stdio_principal, scope=frozenset(settings.stdio_scope))
    try:
        if args.transport == "stdio":
            server = build_server(composed.gateway, stdio_resolver(stdio_principal), resource_principal=stdio_principal)
            server.run("stdio")
        else:
            server = build_server(composed.gateway, stdio_resolver(stdio_principal))
            _run_http(server, settings, tokens)
    finally:
        composed.close()
    return 0


def _tokens(settings: GatewaySettings, args: argparse.Namespace) -> TokenTable | None:
    if args.transport != "http":
        return None
    if args.insecure_no_auth:
        for _ in range(3):
            _say("WARNING: --insecure-no-auth: HTTP requests are served WITHOUT authentication")
        return None
    if settings.tokens_file is None:
        raise ConfigError(
            "tokens_file (GATEWAY_TOKENS_FILE or --tokens-file) is required for HTTP; "
            "--insecure-no-auth serves anonymously and is meant only for throwaway local tests"
        )
    table = TokenTable.load(settings.tokens_file)
    _say(f"HTTP bearer auth on: {len(table)} principal(s) from {settings.tokens_file}")
    return table


def http_app(server: Any, settings: GatewaySettings, tokens: TokenTable | None) -> BearerAuth:
    """The ASGI app: auth and size limits in front of the SDK's stateless streamable-HTTP app."""
    inner = server.streamable_http_app(
        streamable_http_path=settings.http_path,
        stateless_http=True,
        json_response=True,
        max_request_body_size=settings.http_max_body_bytes,
        host=settings.http_host,
    )
    return BearerAuth(inner, tokens, max_body_bytes=settings.http_max_body_bytes)


def _run_http(server: Any, settings: GatewaySettings, tokens: TokenTable | None) -> None:
    import uvicorn

    if settings.http_host not in ("127.0.0.1", "localhost", "::1"):
        _say(f"WARNING: binding {settings.http_host}: reachable beyond this machine")
    _say(f"serving streamable HTTP on http://{settings.http_host}:{settings.http_port}{settings.http_path}")
    uvicorn.run(http_app(server, settings, tokens), host=settings.http_host, port=settings.http_port,
                log_level="warning")  # fmt: skip


# --- audit -------------------------------------------------------------------------------------------


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts by tool, decision, rule and error code, for a reviewer."""
    return {
        "calls": len(records),
        "by_tool": dict(Counter(r.get("tool") for r in records)),
        "by_decision": dict(Counter(r.get("decision") for r in records)),
        "by_rule": dict(Counter(r["rule"] for r in records if r.get("rule"))),
        "by_error": dict(Counter(r["error_code"] for r in records if r.get("error_code"))),
        "degraded": dict(Counter(d for r in records for d in r.get("degraded", []))),
        "truncated": sum(1 for r in records if r.get("truncated")),
    }


def _audit(args: argparse.Namespace) -> int:
    try:
        path = Path(args.path) if args.path else load_settings(args.config).audit_path
    except ConfigError as exc:
        _say(f"cannot read settings: {exc}")
        return 2
    if not path.exists():
        _say(f"no audit log at {path}")
        return 1
    records = AuditLog(path).read()
    if args.audit_action == "tail":
        for record in records[-args.lines :]:
            print(json.dumps(record, separators=(",", ":")))
        return 0
    summary = summarize(records)
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(f"{summary['calls']} calls in {path}")
    for key in ("by_tool", "by_decision", "by_rule", "by_error", "degraded"):
        print(f"{key.removeprefix('by_')}:")
        for name, count in sorted(summary[key].items(), key=lambda kv: (-kv[1], str(kv[0]))):
            print(f"  {count:6}  {name}")
    print(f"truncated: {summary['truncated']}")
    return 0


def register(subparsers: Any) -> None:
    serve = subparsers.add_parser("serve", help="serve the MCP tools over stdio (default) or streamable HTTP")
    serve.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    serve.add_argument("--config", type=Path, help="TOML settings file (else $GATEWAY_CONFIG, env, defaults)")
    serve.add_argument("--host", help="HTTP bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="HTTP port")
    serve.add_argument("--tokens-file", type=Path, help="TOML file of bearer tokens and their principals")
    serve.add_argument("--insecure-no-auth", action="store_true",
                       help="serve HTTP without authentication (logged loudly; never on a shared host)")  # fmt: skip
    serve.set_defaults(handler=_serve)

    audit = subparsers.add_parser("audit", help="read the audit log")
    actions = audit.add_subparsers(dest="audit_action", required=True, metavar="ACTION")
    tail = actions.add_parser("tail", help="print the last audit lines")
    tail.add_argument("-n", "--lines", type=int, default=20)
    summary = actions.add_parser("summary", help="counts by tool, decision and rule")
    summary.add_argument("--json", action="store_true")
    for sub in (tail, summary):
        sub.add_argument("--path", help="audit log file (default: the configured audit_path)")
        sub.add_argument("--config", type=Path)
    audit.set_defaults(handler=_audit)
