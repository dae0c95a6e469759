"""The ``cypher-gateway`` command line.

Each sub-command lives in the module that owns its concept and registers
itself here through a ``register(subparsers)`` function, so this file stays a
table of contents.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from gateway import __version__, audit_cli, policy_cli, server_cli
from gateway.mnr import cli as mnr_cli
from gateway.ops import doctor, images, neo4j_local, tokens

# In the order `cypher-gateway --help` lists them.
_COMMANDS = (neo4j_local, images, doctor, server_cli, audit_cli, tokens, policy_cli, mnr_cli)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cypher-gateway",
        description="A sandboxed, read-only Cypher analysis gateway for AI agents over Neo4j.",
    )
    parser.add_argument("--version", action="version", version=f"cypher-gateway {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in _COMMANDS:
        command.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    result: int = args.handler(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
