"""``cypher-gateway tokens new|list|rotate|revoke``: the static tokens file, one principal at a time.

``new`` and ``rotate`` print a fresh token once; ``list`` and ``revoke`` print none (the file
holds hashes, and a stored plain token is never echoed). ``rotate`` and ``revoke`` rewrite the
file from its parsed entries (comments are not kept).

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
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from gateway.auth import AuthConfigError, TokenEntry, TokenTable
from gateway.config import load_settings
from gateway.domain import DEFAULT_ATTRIBUTE
from gateway.errors import SetupError
from gateway.identity_text import attribute_name_problem

# Recognisable in a leaked log or a secret scanner's rules.
TOKEN_PREFIX = "cgw_"  # noqa: S105 (a prefix, not a secret)
# 32 random bytes: 43 URL-safe characters after the prefix.
TOKEN_BYTES = 32
FILE_MODE = 0o600


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)


def principal_block(
    name: str, scope: list[str], token: str, attributes: Mapping[str, Iterable[str]] | None = None
) -> str:
    """The ``[[principal]]`` table for ``token``: its hash, never the token itself."""
    digest = hashlib.sha256(token.encode("utf-8")).hexdigest()
    return _block(name, scope, attributes or {}, f'token_sha256 = "{digest}"')


def _block(name: str, scope: Iterable[str], attributes: Mapping[str, Iterable[str]], secret: str) -> str:
    # A JSON string is a valid TOML basic string; attribute names are identifiers (bare TOML keys).
    text = f"[[principal]]\nname = {json.dumps(name)}\nscope = {_toml_list(scope)}\n{secret}\n"
    if attributes:
        text += "[principal.attributes]\n" + "".join(
            f"{attr} = {_toml_list(values)}\n" for attr, values in sorted(attributes.items())
        )
    return text


def _toml_list(values: Iterable[str]) -> str:
    return "[" + ", ".join(json.dumps(value) for value in sorted(values)) + "]"


def parse_attributes(specs: Iterable[str]) -> dict[str, list[str]]:
    """``--attribute repositories=r1,r2`` (repeatable) as named lists; raises AuthConfigError naming the bad one."""
    named: dict[str, list[str]] = {}
    for spec in specs:
        attr, sep, values = spec.partition("=")
        attr = attr.strip()
        if not sep:
            raise AuthConfigError(f"--attribute {spec!r}: write NAME=VALUE,VALUE (an empty list: NAME=)")
        if (problem := attribute_name_problem(attr)) is not None:
            raise AuthConfigError(f"--attribute {spec!r}: {problem}")
        if attr == DEFAULT_ATTRIBUTE:
            raise AuthConfigError(f"--attribute {spec!r}: the layers list is --scope")
        if attr in named:
            raise AuthConfigError(f"--attribute {attr} is given twice")
        named[attr] = [value.strip() for value in values.split(",") if value.strip()]
    return named


def describe_lists(entry: TokenEntry) -> str:
    """A principal's layers and named lists for ``tokens list`` (``a, b; repositories: r1``)."""
    principal = entry.principal()
    parts = [", ".join(sorted(principal.scope)) or "(global-only)"]
    for attr, values in sorted(principal.attributes.items()):
        parts.append(f"{attr}: {', '.join(sorted(values)) or '(none)'}")
    return "; ".join(parts)


def add_principal(
    path: Path, name: str, scope: list[str], attributes: Mapping[str, Iterable[str]] | None = None
) -> str:
    """Append a principal with a fresh token to the tokens file at ``path``; returns the token."""
    existing = path.read_text(encoding="utf-8") if path.exists() else ""
    if existing and name in _names(existing, path):
        raise AuthConfigError(
            f"principal {name!r} is already in {path} (each name appears only once); "
            f"`cypher-gateway tokens rotate {name}` gives it a new token"
        )
    token = new_token()
    separator = "" if not existing or existing.endswith("\n\n") else ("\n" if existing.endswith("\n") else "\n\n")
    text = existing + separator + principal_block(name, scope, token, attributes)
    TokenTable.parse(text, path)  # raises AuthConfigError (a broken file): nothing written
    _write(path, text)
    return token


def list_principals(path: Path) -> list[TokenEntry]:
    """The entries of the tokens file, in file order (their secrets are never shown)."""
    return _entries(path)


def rotate_principal(path: Path, name: str) -> str:
    """Give ``name`` a fresh token (its old one stops working); returns the new token."""
    entries = _entries(path)
    _require(entries, name, path)
    token = new_token()
    digest = hashlib.sha256(token.encode("utf-8")).hexdigest()
    _rewrite(path, [e.model_copy(update={"token": None, "token_sha256": digest}) if e.name == name else e
                    for e in entries])  # fmt: skip
    return token


def revoke_principal(path: Path, name: str) -> None:
    """Remove ``name`` from the tokens file: its token stops working at the server's next start."""
    entries = _entries(path)
    _require(entries, name, path)
    kept = [e for e in entries if e.name != name]
    if not kept:
        raise AuthConfigError(f"principal {name!r} is the last one in {path}; delete the file to serve no token")
    _rewrite(path, kept)


def _names(text: str, path: Path) -> set[str]:
    try:
        items = tomllib.loads(text).get("principal", [])
    except tomllib.TOMLDecodeError as exc:
        raise AuthConfigError(f"tokens file {path} is not valid TOML: {exc}") from exc
    if not isinstance(items, list):
        return set()
    return {str(item.get("name")) for item in items if isinstance(item, dict)}


def _entries(path: Path) -> list[TokenEntry]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise AuthConfigError(f"cannot read tokens file {path}: {exc.strerror or exc}") from exc
    TokenTable.parse(text, path)  # every check serve makes, with its messages
    return [TokenEntry.model_validate(item) for item in tomllib.loads(text)["principal"]]


def _require(entries: list[TokenEntry], name: str, path: Path) -> None:
    if name not in {e.name for e in entries}:
        known = ", ".join(repr(e.name) for e in entries)
        raise AuthConfigError(f"principal {name!r} is not in {path} (it holds {known})")


def _rewrite(path: Path, entries: list[TokenEntry]) -> None:
    blocks = []
    for e in entries:
        principal = e.principal()
        secret = f"token_sha256 = {json.dumps(e.token_sha256)}" if e.token_sha256 else f"token = {json.dumps(e.token)}"
        blocks.append(_block(e.name, principal.scope, principal.attributes, secret))
    text = "\n".join(blocks)
    TokenTable.parse(text, path)
    _write(path, text)


def _write(path: Path, text: str) -> None:
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


def register(subparsers: Any) -> None:
    tokens = subparsers.add_parser("tokens", help="bearer tokens for the HTTP transport")
    actions = tokens.add_subparsers(dest="tokens_action", required=True, metavar="ACTION")
    new = actions.add_parser(
        "new",
        help="make a fresh token for one principal: print it once, append its hash to the tokens file",
        description="Print a fresh bearer token on stdout (once: it is stored nowhere) and append the "
        "principal, its scope (and --attribute lists) and the token's SHA-256 to the tokens file (mode 0600).",
    )
    new.add_argument("--principal", required=True, metavar="NAME", help="the principal's name (unique in the file)")
    new.add_argument("--scope", required=True, metavar="LAYERS",
                     help='its layers, comma-separated; "" for global-only')  # fmt: skip
    new.add_argument("--attribute", action="append", default=[], metavar="NAME=VALUES",
                     help="a further named list a policy's rules read, e.g. repositories=acme/api,acme/web "
                     "(repeatable; NAME= for an empty list)")  # fmt: skip
    listing = actions.add_parser("list", help="the principals, their layers and named lists (never a token)")
    rotate = actions.add_parser("rotate", help="a fresh token for an existing principal, printed once")
    revoke = actions.add_parser("revoke", help="remove a principal and its token")
    for sub in (rotate, revoke):
        sub.add_argument("name", metavar="NAME", help="the principal's name")
    for sub in (new, listing, rotate, revoke):
        sub.add_argument("--tokens-file", type=Path, metavar="FILE",
                         help="the tokens file (default: the settings' tokens_file)")  # fmt: skip
        sub.add_argument("--config", type=Path, help="TOML settings file (else $GATEWAY_CONFIG, env, defaults)")
    tokens.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    try:
        path = args.tokens_file or load_settings(args.config).tokens_file
        if path is None:
            print("cypher-gateway tokens: name the file with --tokens-file (or set tokens_file)", file=sys.stderr)
            return 2
        return _act(args, path)
    except (SetupError, OSError) as exc:
        print(f"cypher-gateway tokens: {exc}", file=sys.stderr)
        return 1


def _act(args: argparse.Namespace, path: Path) -> int:
    action = args.tokens_action
    if action == "list":
        for entry in list_principals(path):
            where = describe_lists(entry)
            stored = "sha256" if entry.token_sha256 else "plain token in the file"
            print(f"{entry.name}\t{where}\t{stored}")
        return 0
    if action == "revoke":
        revoke_principal(path, args.name)
        print(f"[tokens] revoked principal {args.name!r} in {path}; restart the server to apply", file=sys.stderr)
        return 0
    if action == "rotate":
        token = rotate_principal(path, args.name)
        print(token)
        print(f"[tokens] new token for principal {args.name!r} in {path} (the old one no longer matches; restart "
              "the server to apply); the token above is shown only this once", file=sys.stderr)  # fmt: skip
        return 0
    scope = [layer.strip() for layer in args.scope.split(",") if layer.strip()]
    attributes = parse_attributes(args.attribute)
    token = add_principal(path, args.principal, scope, attributes)
    print(token)
    where = f"scope {', '.join(scope)}" if scope else "global-only scope"
    where += "".join(f"; {attr}: {', '.join(values) or '(none)'}" for attr, values in attributes.items())
    print(
        f"[tokens] added principal {args.principal!r} ({where}) to {path}; the token above is shown only this once",
        file=sys.stderr,
    )
    return 0
