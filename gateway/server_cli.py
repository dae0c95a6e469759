"""``cypher-gateway serve`` (stdio or streamable HTTP) and ``cypher-gateway audit tail|summary``.

``serve``: settings -> :func:`~gateway.compose.compose` (policy, runner, audit, Gateway)
-> MCP server -> transport. Every message goes to stderr: on stdio, stdout belongs to
the MCP protocol.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from gateway.audit import AuditLog
from gateway.auth import BearerAuth, TokenTable
from gateway.compose import compose, stdio_principal
from gateway.config import ConfigError, GatewaySettings, load_settings
from gateway.errors import SetupError
from gateway.oauth import ResourceServer, resource_server

log = logging.getLogger("gateway.server")


def _say(message: str) -> None:
    print(f"[cypher-gateway] {message}", file=sys.stderr, flush=True)


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
        if oauth is not None:
            _say(f"OAuth bearer auth on: tokens from {settings.oauth_issuer} for {settings.oauth_resource}")
        composed = compose(settings)
    except SetupError as exc:
        _say(f"cannot start: {exc}")
        return 2
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
            server.run("stdio")
        else:
            server = build_server(composed.gateway, stdio_resolver(principal))
            _run_http(server, settings, tokens, oauth)
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
    server: Any, settings: GatewaySettings, tokens: TokenTable | None, oauth: ResourceServer | None = None
) -> BearerAuth:
    """The ASGI app: auth and size limits in front of the SDK's stateless streamable-HTTP app.

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
    return BearerAuth(inner, tokens, max_body_bytes=settings.http_max_body_bytes, oauth=oauth)


def _run_http(server: Any, settings: GatewaySettings, tokens: TokenTable | None, oauth: ResourceServer | None) -> None:
    import uvicorn

    if settings.http_host not in ("127.0.0.1", "localhost", "::1"):
        _say(f"WARNING: binding {settings.http_host}: reachable beyond this machine")
    _say(f"serving streamable HTTP on http://{settings.http_host}:{settings.http_port}{settings.http_path}")
    uvicorn.run(http_app(server, settings, tokens, oauth), host=settings.http_host, port=settings.http_port,
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
    serve.add_argument("--insecure-weak-tokens", action="store_true",
                       help="accept guessable tokens (short, repetitive, published; logged loudly)")  # fmt: skip
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
