"""``cypher-gateway mnr run PATH… [--junit FILE]``: run must-not-retrieve suites.

Exit 0 when every case passed, 1 when any case failed or errored, 2 on a
usage error (no case file found, an invalid case file or policy).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

EXIT_PASSED = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def register(subparsers: Any) -> None:
    mnr = subparsers.add_parser("mnr", help="must-not-retrieve suites: scope tests over a fixture graph")
    actions = mnr.add_subparsers(dest="mnr_action", required=True, metavar="ACTION")
    run = actions.add_parser(
        "run",
        help="run *.mnr.yaml case files through the real gateway, sandbox and Neo4j",
        description="Seed each suite's fixture, run every case through the gateway and print a table. "
        "Exit 0 when all pass, 1 on any failure, 2 on a usage error. Neo4j: NEO4J_URI/NEO4J_USER/"
        "NEO4J_PASSWORD, else the managed one (cypher-gateway neo4j start).",
    )
    run.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="case files or directories")
    run.add_argument("--junit", type=Path, metavar="FILE", help="also write JUnit XML here")
    run.add_argument("--policy", metavar="FILE", help="policy file (default: policies/default.yaml)")
    run.set_defaults(handler=_handle_run)
    seed = actions.add_parser("seed", help="seed the built-in fixture memory graph (replaces its old copy)")
    seed.set_defaults(handler=_handle_seed)


def _usage(message: str) -> int:
    print(f"cypher-gateway mnr: {message}", file=sys.stderr)
    return EXIT_USAGE


def _handle_run(args: argparse.Namespace) -> int:
    # Lazy: `cypher-gateway --help` must not pay for the runner or the driver.
    from gateway.errors import SetupError
    from gateway.mnr.cases import SuiteError, discover, load_suite
    from gateway.mnr.report import junit_xml, table
    from gateway.mnr.runner import MnrSession
    from gateway.policy import load_policy

    files = discover(list(args.paths))
    if not files:
        return _usage("no *.mnr.yaml files under " + ", ".join(str(p) for p in args.paths))
    try:
        suites = [load_suite(f) for f in files]
        policy = load_policy(args.policy)
    except (SuiteError, SetupError) as exc:
        return _usage(str(exc))
    try:
        session = MnrSession(policy=policy)
    except SetupError as exc:
        return _usage(str(exc))
    with session:
        outcomes = session.run_suites(suites)
    print(table(outcomes))
    if args.junit is not None:
        args.junit.write_text(junit_xml(outcomes), encoding="utf-8")
    return EXIT_PASSED if all(o.status == "passed" for o in outcomes) else EXIT_FAILED


def _handle_seed(args: argparse.Namespace) -> int:
    from gateway.errors import SetupError
    from gateway.mnr.runner import connection_from_env
    from gateway.mnr.seed import MEMORY_FIXTURE, SeedError, seed_memory

    try:
        ran = seed_memory(connection_from_env())
    except (SeedError, SetupError) as exc:
        print(f"cypher-gateway mnr seed: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(f"seeded {MEMORY_FIXTURE.name}: {ran} statements")
    return EXIT_PASSED
