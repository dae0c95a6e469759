"""``cypher-gateway auth inspect [TOKEN|-]``: what a bearer token would get from ``serve``, without serving.

The token is read from stdin by default (``-``; at a terminal, without echo), so it stays out of
the shell's history and the process list. It is checked by :func:`gateway.auth.authenticate`,
the function ``serve``'s HTTP middleware calls, with the tokens file, OAuth settings and policy
roles ``serve`` would load. The token itself is never printed.

Exit codes: 0 the token is accepted (printed: the principal, its attribute lists, its roles,
the tools it may call, and the warning its answers would carry when it lacks a mapped claim);
1 it is refused (printed: why); 2 the settings, the policy or the tokens file cannot be loaded,
or no way to accept a token is configured.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from pathlib import Path
from typing import Any

from gateway.auth import Authenticated, TokenTable, authenticate
from gateway.config import ConfigError, GatewaySettings, load_settings
from gateway.domain import DEFAULT_ATTRIBUTE
from gateway.errors import SetupError
from gateway.oauth import TokenRefused, resource_server
from gateway.policy import load_policy
from gateway.server import MCP_TOOLS

EXIT_ACCEPTED, EXIT_REFUSED, EXIT_SETUP = 0, 1, 2


def inspect(token: str, settings: GatewaySettings) -> Authenticated:
    """Whom ``token`` names under ``settings``: :class:`TokenRefused` or :class:`SetupError` otherwise."""
    policy = load_policy(settings.policy_file)
    tokens = TokenTable.load(settings.tokens_file) if settings.tokens_file is not None else None
    oauth = resource_server(settings, roles=policy.roles, read_attributes=policy.scope_attributes())
    if tokens is None and oauth is None:
        raise ConfigError("neither tokens_file nor oauth_issuer is set: serve --transport http would accept no token")
    return authenticate(token, tokens, oauth)


def report(found: Authenticated) -> dict[str, Any]:
    """What an accepted token gets, as ``auth inspect`` prints it (never the token)."""
    principal = found.principal
    lists = {DEFAULT_ATTRIBUTE: principal.scope, **principal.attributes}
    return {
        "accepted": True,
        "source": "oauth" if found.oauth is not None else "tokens file",
        "principal": principal.name,
        "issuer": found.oauth.issuer if found.oauth is not None else None,
        "subject": found.oauth.subject if found.oauth is not None else None,
        "attributes": {name: sorted(values) for name, values in sorted(lists.items())},
        "roles": sorted(found.oauth.roles) if found.oauth is not None else [],
        "tools": [tool for tool in MCP_TOOLS if found.may_call(tool)],
        # The sentence every answer to this token carries (degraded identity:claim-missing); None when none.
        "warning": found.oauth.claim_warning() if found.oauth is not None else None,
    }


def render(document: dict[str, Any]) -> str:
    if not document["accepted"]:
        return f"refused: {document['reason']}"
    where = (f"an OAuth token of {document['issuer']} (subject {document['subject']})"
             if document["source"] == "oauth" else "a token of the tokens file")  # fmt: skip
    lines = [f"accepted: {where}", f"principal   {document['principal']}"]
    for name, values in document["attributes"].items():
        lines.append(f"{name:<11} {', '.join(values) or '(none: rules reading it show nothing)'}")
    if document["roles"]:
        lines.append(f"roles       {', '.join(document['roles'])}")
    lines.append(f"tools       {', '.join(document['tools'])}")
    if document["warning"]:
        lines.append(f"WARNING     {document['warning']}")
    return "\n".join(lines)


def _read_token(argument: str) -> str:
    if argument != "-":
        return argument.strip()
    if sys.stdin.isatty():
        return getpass.getpass("bearer token (not echoed): ").strip()
    return sys.stdin.read().strip()


def _handle(args: argparse.Namespace) -> int:
    try:
        settings = load_settings(args.config)
        token = _read_token(args.token)
        if not token:
            raise ConfigError("no token given (pass one, or pipe it to stdin)")
        document = report(inspect(token, settings))
        status = EXIT_ACCEPTED
    except TokenRefused as exc:
        document, status = {"accepted": False, "reason": exc.reason}, EXIT_REFUSED
    except SetupError as exc:
        print(f"cannot inspect: {exc}", file=sys.stderr)
        return EXIT_SETUP
    print(json.dumps(document, indent=2) if args.json else render(document))
    return status


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "auth",
        help="what a bearer token would get from serve (auth inspect)",
        description="Check bearer tokens exactly as serve --transport http does.",
    )
    commands = parser.add_subparsers(dest="auth_command", required=True, metavar="SUBCOMMAND")
    inspect_parser = commands.add_parser(
        "inspect",
        help="verify a token as serve would: its principal, attributes, roles and tools, or why it is refused",
        description="Exit 0: accepted; 1: refused (the reason is printed); 2: the settings, policy or tokens "
        "file cannot be loaded. The token is never printed.",
    )
    inspect_parser.add_argument("token", nargs="?", default="-",
                                help="the token, or - (the default) to read it from stdin")  # fmt: skip
    inspect_parser.add_argument("--config", type=Path, help="TOML settings file (else $GATEWAY_CONFIG, env, defaults)")
    inspect_parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    inspect_parser.set_defaults(handler=_handle)
