"""The ``cypher-gateway`` command line: the operator's side of the gateway.

This package holds the commands that are only a command (``serve``, ``check`` and ``policy``,
``audit``); the others live with the concept they operate (``gateway/ops/``, ``gateway/mnr/``).
Each registers itself here through a ``register(subparsers)`` function, so this file stays a
table of contents. Nothing on the request path imports this package but ``serve``'s own module.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType

from gateway import __version__

# In the order `cypher-gateway --help` lists them.
_COMMANDS = (
    "gateway.ops.neo4j_local", "gateway.ops.images", "gateway.ops.doctor", "gateway.cli.serve",
    "gateway.cli.audit", "gateway.ops.tokens", "gateway.cli.auth", "gateway.cli.policy", "gateway.mnr.cli",
)  # fmt: skip
# `serve` is the long-lived process agents talk to: it loads what it runs and none of the
# operator tooling the other commands bring (tests/unit/test_layers.py holds that).
_SERVE = ("gateway.cli.serve",)


def build_parser(commands: Sequence[str] = _COMMANDS) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cypher-gateway",
        description="A sandboxed, read-only Cypher analysis gateway for AI agents over Neo4j.",
    )
    parser.add_argument("--version", action="version", version=f"cypher-gateway {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in commands:
        module: ModuleType = importlib.import_module(name)
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_SERVE if arguments[:1] == ["serve"] else _COMMANDS)
    args = parser.parse_args(arguments)
    result: int = args.handler(args)
    return result
