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
COPY_HOME_ENV = "CYPHER_GATEWAY_PROVE_HOME"
COPY_PORT_ENV = "CYPHER_GATEWAY_PROVE_PORT"
DEFAULT_COPY_PORT = 17707


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
    prove = actions.add_parser(
        "prove",
        help="non-interference: the gateway's answers against a copy of the graph without what the principal "
        "cannot see",
        description="Seed FIXTURE, build the visible copy per principal and tool in a Neo4j of the prover's own, run "
        "generated queries (and --suite cases and their mutants) through the gateway and as plain Cypher on the "
        "copy, and report leaks, error oracles and wrong answers, each shrunk and with its rewritten query. "
        "Exit 0 when no leak and no error oracle was found, 1 otherwise, 2 on a usage error (docs/mnr.md).",
    )
    prove.add_argument("--policy", required=True, metavar="FILE", help="policy file, or a shipped policy's name")
    prove.add_argument("--fixture", required=True, metavar="FILE",
                       help="a .cypher seed file (statements end with ; at a line end), or builtin:<name>")  # fmt: skip
    prove.add_argument(
        "--principal", action="append", default=[], metavar="NAME=ATTR:V1,V2[;ATTR:V…]",
        help="a principal to prove for (a plain NAME=V1,V2 is its layers); repeatable. Default: nobody, each value "
        "the graph holds for an attribute the rules read (at most 6), and everyone",
    )  # fmt: skip
    prove.add_argument("--n", type=int, default=2000, help="queries to execute over all principals and tools")
    prove.add_argument("--seed", type=int, default=0, help="the generator's seed (same seed, same queries)")
    prove.add_argument("--tool", action="append", choices=["recall", "analyze"], dest="tools",
                       help="prove this tool only (repeatable; default both)")  # fmt: skip
    prove.add_argument("--suite", action="append", default=[], type=Path, metavar="PATH",
                       help="*.mnr.yaml files or directories whose cases (and their mutants) also run")  # fmt: skip
    prove.add_argument("--copy-home", type=Path, metavar="DIR",
                       help=f"the copy Neo4j's state directory (${COPY_HOME_ENV}; <state>/prove-copy)")  # fmt: skip
    prove.add_argument("--copy-port", type=int, metavar="PORT",
                       help=f"its Bolt port (default ${COPY_PORT_ENV}, else {DEFAULT_COPY_PORT})")  # fmt: skip
    prove.add_argument("--json", type=Path, metavar="FILE", help="also write the report as JSON here")
    prove.set_defaults(handler=_handle_prove)
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


def _handle_prove(args: argparse.Namespace) -> int:
    from gateway.errors import SetupError
    from gateway.mnr.cases import BUILTIN_PREFIX, SuiteError, builtin_fixture, discover, load_suite
    from gateway.mnr.prove import ProveError, ProveSettings, parse_principal, prove
    from gateway.policy import load_policy

    try:
        policy = load_policy(_policy_file(args.policy)[0])
        fixture = (
            builtin_fixture(args.fixture.removeprefix(BUILTIN_PREFIX))
            if args.fixture.startswith(BUILTIN_PREFIX)
            else Path(args.fixture)
        )
        if not fixture.is_file():
            return _usage(f"fixture {fixture} does not exist")
        suites = [load_suite(f) for f in discover(list(args.suite))]
        principals = [parse_principal(text) for text in args.principal]
    except (SuiteError, SetupError, ValueError) as exc:
        return _usage(str(exc))
    mismatched = [s for s in suites if s.policy != policy.name]
    if mismatched:
        return _usage(", ".join(str(s.source) for s in mismatched) + f" assume another policy than {policy.name!r}")
    if args.n < 1:
        return _usage("--n must be at least 1")
    settings = ProveSettings(
        policy=policy, fixture=fixture, principals=principals, n=args.n, seed=args.seed,
        tools=args.tools or ["recall", "analyze"], suites=suites,
    )  # fmt: skip
    try:
        report = prove(settings, copy_home=copy_home(args.copy_home), copy_port=copy_port(args.copy_port))
    except (ProveError, SetupError) as exc:
        print(f"cypher-gateway mnr prove: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(report.text())
    if args.json is not None:
        args.json.write_text(report.model_dump_json(indent=2), encoding="utf-8")
    return EXIT_PASSED if report.count("leak") == 0 and report.count("error_oracle") == 0 else EXIT_FAILED


def copy_home(given: Path | None) -> Path:
    """Where the copy's Neo4j keeps its state: the option, the environment, else the state directory's."""
    import os

    from gateway.paths import state_dir

    if given is not None:
        return given
    env = os.environ.get(COPY_HOME_ENV)
    return Path(env) if env else state_dir() / "prove-copy"


def copy_port(given: int | None) -> int:
    import os

    if given is not None:
        return given
    env = os.environ.get(COPY_PORT_ENV)
    return int(env) if env else DEFAULT_COPY_PORT


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
