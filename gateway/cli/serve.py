"""``cypher-gateway serve`` (stdio or streamable HTTP); ``audit tail|summary`` lives in ``gateway.cli.audit``.

``serve``: settings -> :func:`~gateway.compose.compose` (policy, runner, audit, Gateway)
-> MCP server -> transport. Every message goes to stderr: on stdio, stdout belongs to
the MCP protocol.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gateway.audit import AuditLog
from gateway.auth import BearerAuth, TokenTable
from gateway.compose import compose, stdio_principal
from gateway.config import ConfigError, GatewaySettings, load_settings
from gateway.errors import SetupError
from gateway.http_audit import RefusalAudit
from gateway.oauth import ResourceServer, resource_server
from gateway.policy import Policy
from gateway.runner import SandboxRunner

log = logging.getLogger("gateway.server")
# serve's look at the graph at start-up (the scope property exists somewhere): stops at the first hit.
SURVEY_TIMEOUT_S = 30.0


def _say(message: str) -> None:
    print(f"{_stamp()} [cypher-gateway] {message}", file=sys.stderr, flush=True)


def _stamp() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class _UtcFormatter(logging.Formatter):
    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")


def _configure_logging() -> None:
    """Every stderr line with its time (UTC), as the audit log has; replaces the SDK's set-up."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_UtcFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)
    # Stateless HTTP ends a throwaway session after every request and says so at INFO
    # ("Terminating session: None"), as it does for each request it dispatches: noise, not events.
    for name in ("mcp.server.streamable_http", "mcp.server.streamable_http_manager", "mcp.server.lowlevel.server"):
        logging.getLogger(name).setLevel(logging.WARNING)


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
    _exit_on_termination()
    try:
        settings = load_settings(args.config, **overrides)
        tokens = _tokens(settings, args)
        oauth = None if args.transport != "http" or args.insecure_no_auth else resource_server(settings)
        composed = compose(settings, survey=_look_at_the_graph)
    except SetupError as exc:
        _say(f"cannot start: {exc}")
        return 2
    if oauth is not None:
        # Again with the policy's roles, now that compose has loaded the policy it serves.
        roles = composed.gateway.policy.roles
        oauth = resource_server(settings, roles=roles, read_attributes=composed.gateway.policy.scope_attributes())
        granted = f"; tools and scope from the roles in claim {roles.claim!r}" if roles is not None else ""
        _say(f"OAuth bearer auth on: tokens from {settings.oauth_issuer} for {settings.oauth_resource}{granted}")
    for problem in composed.problems:
        _say(f"WARNING: {problem}")
    if composed.problems:
        _say('starting anyway: recall and analyze answer degraded ["<tool>:disabled"] and run nothing')
        _say("`cypher-gateway doctor` checks each piece and says how to fix what is missing")
    else:
        _say("Neo4j and the sandbox are reachable")
    principal = stdio_principal(settings)
    terminated: _Terminated | None = None
    try:
        if args.transport == "stdio":
            server = build_server(composed.gateway, stdio_resolver(principal), resource_principal=principal)
            _configure_logging()
            server.run("stdio")
        else:
            server = build_server(composed.gateway, stdio_resolver(principal))
            _configure_logging()
            _run_http(server, settings, tokens, composed.gateway.audit, oauth)
    except _Terminated as signalled:
        terminated = signalled
    finally:
        composed.close()
        _say("stopped; the forwarder and sandboxes of this server are removed")
    if terminated is not None:
        # The stdio transport reads stdin in a non-daemon thread, which a normal exit would wait
        # for until the client closes the pipe; everything that must be cleaned up is by now.
        sys.stderr.flush()
        os._exit(terminated.status)
    return 0


def _look_at_the_graph(policy: Policy, runner: SandboxRunner, database: str | None) -> tuple[list[str], str | None]:
    """Does the policy's scope fit the graph? Say so loudly when not; every answer then says it too."""
    from gateway import scope_survey

    try:
        found = scope_survey.survey(policy, scope_survey.via_sandbox(runner, database, SURVEY_TIMEOUT_S), counts=False)
    except scope_survey.SurveyFailed as exc:
        _say(f"WARNING: could not hold the policy's scope against the graph ({exc}); `cypher-gateway doctor` does")
        return [], None
    for problem, fix in found.problems_and_fixes:
        _say(f"WARNING: {problem}")
        _say(f"fix: {fix}")
    if found.problems:
        _say("`cypher-gateway doctor` counts what the policy hides per label and type")
    if found.property_found:
        return [], None
    return [scope_survey.PROPERTY_MISSING], f"{found.problems[0]}; the operator's fix: {scope_survey.FIX}"


class _Terminated(SystemExit):
    """SIGTERM or SIGHUP arrived: unwind (so ``finally`` cleans up), then exit with 128 + signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.status = 128 + signum


def _exit_on_termination() -> None:
    # SIGTERM (a supervisor, an MCP client stopping its server) must unwind as Ctrl-C does, so
    # that `finally` removes this server's forwarder and sandboxes; by default it ends the process
    # on the spot. uvicorn catches SIGTERM for its own graceful stop, then raises it again: here.
    def stop(signum: int, frame: Any) -> None:
        raise _Terminated(signum)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, stop)


def _tokens(settings: GatewaySettings, args: argparse.Namespace) -> TokenTable | None:
    if args.transport != "http":
        return None
    if args.insecure_no_auth:
        for _ in range(3):
            _say("WARNING: --insecure-no-auth: HTTP requests are served WITHOUT authentication")
        return None
    if settings.tokens_file is None:
        if settings.oauth_issuer is not None:
            return None  # OAuth tokens only
        raise ConfigError(
            "tokens_file (GATEWAY_TOKENS_FILE or --tokens-file) or oauth_issuer is required for HTTP; "
            "--insecure-no-auth serves anonymously and is meant only for throwaway local tests"
        )
    table = TokenTable.load(settings.tokens_file)
    weak = table.weak()
    if weak and not args.insecure_weak_tokens:
        named = "; ".join(f"principal {name!r}: {reason}" for name, reason in sorted(weak.items()))
        raise ConfigError(
            f"tokens file {settings.tokens_file} has guessable tokens ({named}); replace each with "
            "`cypher-gateway tokens new --principal NAME --scope LAYERS --tokens-file FILE`, or pass "
            "--insecure-weak-tokens for a throwaway local test"
        )
    for name in sorted(weak):
        _say(f"WARNING: --insecure-weak-tokens: principal {name!r} has a guessable token ({weak[name]})")
    _say(f"HTTP bearer auth on: {len(table)} principal(s) from {settings.tokens_file}")
    return table


def http_app(
    server: Any,
    settings: GatewaySettings,
    tokens: TokenTable | None,
    audit: AuditLog | None = None,
    oauth: ResourceServer | None = None,
) -> RefusalAudit:
    """The ASGI app: refusal auditing, then auth and size limits, in front of the SDK's stateless streamable-HTTP app.

    Responses are event streams, not plain JSON: a client that cancels a call closes its stream,
    which cancels the tool (and kills its sandbox); plain JSON responses left the handler running
    to its timeout. The stream also carries log notifications.
    """
    inner = server.streamable_http_app(
        streamable_http_path=settings.http_path,
        stateless_http=True,
        json_response=False,
        max_request_body_size=settings.http_max_body_bytes,
        host=settings.http_host,
    )
    return RefusalAudit(BearerAuth(inner, tokens, max_body_bytes=settings.http_max_body_bytes, oauth=oauth), audit)


def _run_http(
    server: Any,
    settings: GatewaySettings,
    tokens: TokenTable | None,
    audit: AuditLog | None,
    oauth: ResourceServer | None,
) -> None:
    import uvicorn

    if settings.http_host not in ("127.0.0.1", "localhost", "::1"):
        _say(f"WARNING: binding {settings.http_host}: reachable beyond this machine")
    _say(f"serving streamable HTTP on http://{settings.http_host}:{settings.http_port}{settings.http_path}")
    # log_config=None: uvicorn's lines go through the handler above, with their time.
    uvicorn.run(http_app(server, settings, tokens, audit, oauth), host=settings.http_host, port=settings.http_port,
                log_level="warning", log_config=None)  # fmt: skip


def register(subparsers: Any) -> None:
    serve = subparsers.add_parser("serve", help="serve the MCP tools over stdio (default) or streamable HTTP")
    serve.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    serve.add_argument("--config", type=Path, help="TOML settings file (else $GATEWAY_CONFIG, env, defaults)")
    serve.add_argument("--host", help="HTTP bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="HTTP port")
    serve.add_argument("--tokens-file", type=Path, help="TOML file of bearer tokens and their principals")
    serve.add_argument("--insecure-no-auth", action="store_true",
                       help="serve HTTP without authentication (logged loudly; never on a shared host)")  # fmt: skip
    serve.add_argument("--insecure-weak-tokens", action="store_true",
                       help="accept guessable tokens (short, repetitive, published; logged loudly)")  # fmt: skip
    serve.set_defaults(handler=_serve)
