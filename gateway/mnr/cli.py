"""``cypher-gateway mnr run PATH… [--junit FILE] [--policy FILE] [--allow-layers-off FILE[::CASE]]``.

Runs must-not-retrieve suites under the policy every other command uses (``--policy``,
else the settings' ``policy_file``, i.e. ``GATEWAY_POLICY_FILE``). Exit 0 when every case
passed, 1 when any case failed or errored, 2 on a usage error (no case file found, an
invalid case file or policy, suites written for another policy than the one in force).
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
    run.add_argument("--policy", metavar="FILE", help="policy file, or a shipped policy's name "
                     "(default: the settings' policy_file: GATEWAY_POLICY_FILE, else the shipped default)")  # fmt: skip
    run.add_argument(
        "--allow-layers-off", action="append", default=[], metavar="FILE[::CASE]", dest="allow_layers_off",
        help="let these cases switch off the guard or the EXPLAIN check as their file says (CASE: an id or glob; "
        "FILE alone: all its cases). Without it such a case is an error and never runs. Repeatable.",
    )  # fmt: skip
    run.set_defaults(handler=_handle_run)
    seed = actions.add_parser("seed", help="seed a built-in fixture graph (replaces its old copy)")
    seed.add_argument("fixture", nargs="?", default="memory", metavar="NAME",
                      help="memory (the default policy's suites and the demo), mentis or mindreader")  # fmt: skip
    seed.set_defaults(handler=_handle_seed)


def _usage(message: str) -> int:
    print(f"cypher-gateway mnr: {message}", file=sys.stderr)
    return EXIT_USAGE


def _handle_run(args: argparse.Namespace) -> int:
    # Lazy: `cypher-gateway --help` must not pay for the runner or the driver.
    from gateway.errors import SetupError
    from gateway.mnr.cases import LayerPermit, SuiteError, discover, load_suite
    from gateway.mnr.report import junit_xml, table
    from gateway.mnr.runner import MnrSession
    from gateway.policy import load_policy

    files = discover(list(args.paths))
    if not files:
        return _usage("no *.mnr.yaml files under " + ", ".join(str(p) for p in args.paths))
    try:
        suites = [load_suite(f) for f in files]
        permits = [LayerPermit.parse(text, Path.cwd()) for text in args.allow_layers_off]
        file, source = _policy_file(args.policy)
        policy = load_policy(file)
    except (SuiteError, SetupError) as exc:
        return _usage(str(exc))
    mismatched = [s for s in suites if s.policy != policy.name]
    if mismatched:
        # Said once for the run, not once per case: every case of these files would be an error.
        lines = [f"the policy in force is {policy.name!r} ({file}, {source}), but:"]
        lines += [f"  {s.source or s.name} assumes {s.policy!r} ({len(s.cases)} cases)" for s in mismatched]
        lines.append(
            "choose the policy the suites were written for with --policy FILE (a path, or a shipped "
            "policy's name); run suites written for different policies separately. Nothing was run."
        )
        return _usage("\n".join(lines))
    try:
        session = MnrSession(policy=policy, layer_permits=permits)
    except SetupError as exc:
        return _usage(str(exc))
    with session:
        outcomes = session.run_suites(suites)
    print(table(outcomes))
    if args.junit is not None:
        args.junit.write_text(junit_xml(outcomes), encoding="utf-8")
    return EXIT_PASSED if all(o.status == "passed" for o in outcomes) else EXIT_FAILED


def _policy_file(given: str | None) -> tuple[Path, str]:
    """The policy file a run uses and where that choice came from, as every command chooses it."""
    from gateway.cli.policy import find_policy_file
    from gateway.config import load_settings
    from gateway.policy import DEFAULT_POLICY_PATH

    if given is not None:
        return find_policy_file(given)[0], "from --policy"
    file = load_settings().policy_file
    if file == DEFAULT_POLICY_PATH:
        return file, "the shipped default"
    return file, "the settings' policy_file: GATEWAY_POLICY_FILE or the config file"


def _handle_seed(args: argparse.Namespace) -> int:
    from gateway.errors import SetupError
    from gateway.mnr.runner import connection_from_env
    from gateway.mnr.seed import SeedError, seed_builtin

    try:
        ran = seed_builtin(connection_from_env(), args.fixture)
    except (SeedError, SetupError) as exc:
        print(f"cypher-gateway mnr seed: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(f"seeded {args.fixture}.cypher: {ran} statements")
    return EXIT_PASSED
