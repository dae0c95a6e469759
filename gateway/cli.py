"""The ``cypher-gateway`` command line.

Each sub-command lives in the module that owns its concept and registers
itself here through a ``register(subparsers)`` function, so this file stays a
table of contents.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# module path -> it defines register(subparsers: argparse._SubParsersAction) -> None
_COMMAND_MODULES: tuple[str, ...] = (
    "gateway.neo4j_local",
    "gateway.images",
    "gateway.server_cli",
    "gateway.policy_cli",
    "gateway.mnr.cli",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cypher-gateway",
        description="A sandboxed, read-only Cypher analysis gateway for AI agents over Neo4j.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_name in _COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    result: int = args.handler(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
