"""pytest plugin: every ``*.mnr.yaml`` file is a test module, every case a test item.

Registered as the ``cypher_gateway_mnr`` entry point (``pytest11``). Items are
marked ``integration``: they run against the real sandbox and Neo4j. One
:class:`MnrSession` (one warm pool) serves every item of the pytest session
and is closed when the session ends. Neo4j: NEO4J_URI & co., else the managed
one (started if needed); the sandbox image is built when missing. A missing
service fails the items with a message naming it; nothing is skipped. The policy is the
settings' ``policy_file`` (``GATEWAY_POLICY_FILE``), except for the directories the ini option
``mnr_policies`` maps to a policy (``tests/mnr/mentis = mentis``: suites written for another
shipped policy run under it, in the same pytest run, each policy with its own session sharing
one sandbox pool). A case whose file switches off the guard or the EXPLAIN check fails unless
``--mnr-allow-layers-off FILE[::CASE]`` names it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.mnr.cases import SUFFIX, Case, Suite, SuiteError, load_suite

# One MnrSession per policy file (None: the settings' policy), and the set-up error of each.
_SESSION_KEY = pytest.StashKey[dict[Path | None, Any]]()
_SETUP_ERROR_KEY = pytest.StashKey[dict[Path | None, str]]()


class MnrCaseFailed(Exception):
    """Raised by an item whose case did not pass; carries the runner's message."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mnr", "must-not-retrieve suites")
    group.addoption(
        "--mnr-allow-layers-off", action="append", default=[], metavar="FILE[::CASE]", dest="mnr_allow_layers_off",
        help="let these cases switch off the guard or the EXPLAIN check as their file says (FILE relative to "
        "the rootdir, as in test ids; CASE an id or glob; FILE alone: all its cases). Without it such a case "
        "fails and never runs. Repeatable.",
    )  # fmt: skip
    parser.addini(
        "mnr_policies", type="linelist", default=[],
        help="DIR = POLICY, one per line: the *.mnr.yaml files under DIR (relative to the rootdir) run under "
        "POLICY (a policy file relative to the rootdir, or a shipped policy's name); every other file under the "
        "settings' policy_file (GATEWAY_POLICY_FILE).",
    )  # fmt: skip


@pytest.fixture(scope="session")
def mnr_prove() -> Iterator[Any]:
    """``mnr_prove(settings) -> ProveReport``: ``cypher-gateway mnr prove`` for a test.

    The gateway side runs on the managed Neo4j (NEO4J_URI & co. when set) with the sandbox image
    built when missing; the visible copies on the prover's own Neo4j (``CYPHER_GATEWAY_PROVE_HOME``
    and ``CYPHER_GATEWAY_PROVE_PORT``, as the command reads them), started once for the session
    and stopped at its end when this fixture started it. A test asserts on the report::

        def test_no_leak(mnr_prove):
            report = mnr_prove(ProveSettings(policy=load_policy("mentis"), fixture=builtin_fixture("mentis"), n=200))
            assert report.count("leak") == 0, report.text()
    """
    from gateway.mnr.cli import copy_home, copy_port
    from gateway.mnr.prove import ProveSettings, copy_neo4j, prove
    from gateway.ops import images, neo4j_local

    connection = neo4j_local.resolve(start_managed=True)
    image = images.ensure_sandbox_image()
    home, port = copy_home(None), copy_port(None)
    with copy_neo4j(home, port):

        def run(settings: ProveSettings) -> Any:
            return prove(settings, copy_home=home, copy_port=port, connection=connection, image=image)

        yield run


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "neo4j2026: also runs against Neo4j 2026.x")


def pytest_collect_file(parent: pytest.Collector, file_path: Path) -> pytest.Collector | None:
    if file_path.name.endswith(SUFFIX):
        collector: MnrFile = MnrFile.from_parent(parent, path=file_path)
        return collector
    return None


def pytest_sessionfinish(session: pytest.Session) -> None:
    sessions = session.config.stash.get(_SESSION_KEY, None)
    if sessions is not None:
        # The settings' session last: the others share its sandbox pool.
        for key in sorted(sessions, key=lambda k: k is None):
            sessions[key].close()
        del session.config.stash[_SESSION_KEY]


class MnrFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        try:
            suite = load_suite(self.path)
        except SuiteError as exc:
            raise self.CollectError(str(exc)) from exc
        for case in suite.cases:
            item: MnrItem = MnrItem.from_parent(self, name=case.id, suite=suite, case=case)
            item.add_marker(pytest.mark.integration)
            item.add_marker(pytest.mark.neo4j2026)  # the suites run on both Neo4j release lines
            yield item


class MnrItem(pytest.Item):
    def __init__(self, *, suite: Suite, case: Case, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.suite = suite
        self.case = case

    def runtest(self) -> None:
        outcome = _session(self.config, _policy_for(self.config, self.path)).run_case(self.suite, self.case)
        if outcome.status != "passed":
            raise MnrCaseFailed(outcome.message())

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, MnrCaseFailed):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"mnr {self.suite.name}::{self.case.id}"


def _policy_for(config: pytest.Config, path: Path) -> Path | None:
    """The policy file ``mnr_policies`` names for the suite at ``path``; None: the settings' policy."""
    from gateway.cli.policy import find_policy_file

    for line in config.getini("mnr_policies"):
        directory, sep, policy = (part.strip() for part in line.partition("="))
        if not sep or not directory or not policy:
            raise pytest.UsageError(f"mnr_policies: {line!r} is not DIR = POLICY")
        if path.resolve().is_relative_to((config.rootpath / directory).resolve()):
            local = config.rootpath / policy
            return local.resolve() if local.is_file() else find_policy_file(policy)[0].resolve()
    return None


def _session(config: pytest.Config, policy: Path | None) -> Any:
    sessions = config.stash.setdefault(_SESSION_KEY, {})
    errors = config.stash.setdefault(_SETUP_ERROR_KEY, {})
    if policy in sessions:
        return sessions[policy]
    if policy in errors:
        pytest.fail(errors[policy], pytrace=False)
    try:
        session = _start(config) if policy is None else _start_for(_session(config, None), policy)
    except Exception as exc:
        what = "must-not-retrieve suites need the real services" if policy is None else f"policy {policy}"
        errors[policy] = f"{what}: {exc}"
        pytest.fail(errors[policy], pytrace=False)
    sessions[policy] = session
    return session


def _permits(config: pytest.Config) -> list[Any]:
    from gateway.mnr.cases import LayerPermit

    return [LayerPermit.parse(text, config.rootpath) for text in config.getoption("mnr_allow_layers_off")]


def _start(config: pytest.Config) -> Any:
    from gateway.mnr.runner import MnrSession
    from gateway.ops import images, neo4j_local

    connection = neo4j_local.resolve(start_managed=True)
    return MnrSession(connection=connection, image=images.ensure_sandbox_image(), layer_permits=_permits(config))


def _start_for(base: Any, policy: Path) -> Any:
    """A session under ``policy`` on the settings' session's Neo4j, sharing its sandbox pool."""
    from gateway.mnr.runner import MnrSession
    from gateway.policy import load_policy

    return MnrSession(
        connection=base.connection, policy=load_policy(policy), runner=base.runner,
        layer_permits=base.layer_permits,
    )  # fmt: skip
