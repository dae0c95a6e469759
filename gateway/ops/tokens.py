"""``cypher-gateway tokens new``: a fresh bearer token for one principal, shown once.

The token is printed on stdout and nowhere else; the tokens file gets only its SHA-256
(``token_sha256``), so the file holds no secret. The file is rewritten whole (a temporary
file, then a rename) with mode 0600, and only after the table it would hold has loaded:
a duplicate name or a broken file stops the command before anything changes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import secrets
import sys
import tempfile
from pathlib import Path
from typing import Any

from gateway.auth import TokenTable
from gateway.config import load_settings
from gateway.errors import SetupError

# Recognisable in a leaked log or a secret scanner's rules.
TOKEN_PREFIX = "cgw_"  # noqa: S105 (a prefix, not a secret)
# 32 random bytes: 43 URL-safe characters after the prefix.
TOKEN_BYTES = 32
FILE_MODE = 0o600


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)


def principal_block(name: str, scope: list[str], token: str) -> str:
    """The ``[[principal]]`` table for ``token``: its hash, never the token itself."""
    digest = hashlib.sha256(token.encode("utf-8")).hexdigest()
    # A JSON string is a valid TOML basic string.
    layers = ", ".join(json.dumps(layer) for layer in scope)
    return f'[[principal]]\nname = {json.dumps(name)}\nscope = [{layers}]\ntoken_sha256 = "{digest}"\n'


def add_principal(path: Path, name: str, scope: list[str]) -> str:
    """Append a principal with a fresh token to the tokens file at ``path``; returns the token."""
    existing = path.read_text(encoding="utf-8") if path.exists() else ""
    token = new_token()
    separator = "" if not existing or existing.endswith("\n\n") else ("\n" if existing.endswith("\n") else "\n\n")
    text = existing + separator + principal_block(name, scope, token)
    TokenTable.parse(text, path)  # raises AuthConfigError (a duplicate name, a broken file): nothing written
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tokens-", dir=path.parent)
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return token


def register(subparsers: Any) -> None:
    tokens = subparsers.add_parser("tokens", help="bearer tokens for the HTTP transport")
    actions = tokens.add_subparsers(dest="tokens_action", required=True, metavar="ACTION")
    new = actions.add_parser(
        "new",
        help="make a fresh token for one principal: print it once, append its hash to the tokens file",
        description="Print a fresh bearer token on stdout (once: it is stored nowhere) and append the "
        "principal, its scope and the token's SHA-256 to the tokens file (mode 0600).",
    )
    new.add_argument("--principal", required=True, metavar="NAME", help="the principal's name (unique in the file)")
    new.add_argument("--scope", required=True, metavar="LAYERS",
                     help='its layers, comma-separated; "" for global-only')  # fmt: skip
    new.add_argument("--tokens-file", type=Path, metavar="FILE",
                     help="the tokens file (default: the settings' tokens_file)")  # fmt: skip
    new.add_argument("--config", type=Path, help="TOML settings file (else $GATEWAY_CONFIG, env, defaults)")
    tokens.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    scope = [layer.strip() for layer in args.scope.split(",") if layer.strip()]
    try:
        path = args.tokens_file or load_settings(args.config).tokens_file
        if path is None:
            print("cypher-gateway tokens: name the file with --tokens-file (or set tokens_file)", file=sys.stderr)
            return 2
        token = add_principal(path, args.principal, scope)
    except (SetupError, OSError) as exc:
        print(f"cypher-gateway tokens: {exc}", file=sys.stderr)
        return 1
    print(token)
    where = f"scope {', '.join(scope)}" if scope else "global-only scope"
    print(
        f"[tokens] added principal {args.principal!r} ({where}) to {path}; the token above is shown only this once",
        file=sys.stderr,
    )
    return 0
