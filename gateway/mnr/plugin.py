"""pytest plugin: every ``*.mnr.yaml`` file is a test module, every case a test item.

Registered as the ``cypher_gateway_mnr`` entry point (``pytest11``). Items are
marked ``integration``: they run against the real sandbox and Neo4j. One
:class:`MnrSession` (one warm pool) serves every item of the pytest session
and is closed when the session ends. Neo4j: NEO4J_URI & co., else the managed
one (started if needed); the sandbox image is built when missing. A missing
service fails the items with a message naming it; nothing is skipped. The policy is the
settings' ``policy_file`` (``GATEWAY_POLICY_FILE``). A case whose file switches off the
guard or the EXPLAIN check fails unless ``--mnr-allow-layers-off FILE[::CASE]`` names it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.mnr.cases import SUFFIX, Case, Suite, SuiteError, load_suite

_SESSION_KEY = pytest.StashKey[Any]()
_SETUP_ERROR_KEY = pytest.StashKey[str]()


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


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "neo4j2026: also runs against Neo4j 2026.x")


def pytest_collect_file(parent: pytest.Collector, file_path: Path) -> pytest.Collector | None:
    if file_path.name.endswith(SUFFIX):
        collector: MnrFile = MnrFile.from_parent(parent, path=file_path)
        return collector
    return None


def pytest_sessionfinish(session: pytest.Session) -> None:
    mnr = session.config.stash.get(_SESSION_KEY, None)
    if mnr is not None:
        mnr.close()
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
        outcome = _session(self.config).run_case(self.suite, self.case)
        if outcome.status != "passed":
            raise MnrCaseFailed(outcome.message())

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, MnrCaseFailed):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"mnr {self.suite.name}::{self.case.id}"


def _session(config: pytest.Config) -> Any:
    existing = config.stash.get(_SESSION_KEY, None)
    if existing is not None:
        return existing
    error = config.stash.get(_SETUP_ERROR_KEY, None)
    if error is not None:
        pytest.fail(error, pytrace=False)
    try:
        session = _start(config)
    except Exception as exc:
        config.stash[_SETUP_ERROR_KEY] = f"must-not-retrieve suites need the real services: {exc}"
        pytest.fail(config.stash[_SETUP_ERROR_KEY], pytrace=False)
    config.stash[_SESSION_KEY] = session
    return session


def _start(config: pytest.Config) -> Any:
    from gateway.mnr.cases import LayerPermit
    from gateway.mnr.runner import MnrSession
    from gateway.ops import images, neo4j_local

    permits = [LayerPermit.parse(text, config.rootpath) for text in config.getoption("mnr_allow_layers_off")]
    connection = neo4j_local.resolve(start_managed=True)
    return MnrSession(connection=connection, image=images.ensure_sandbox_image(), layer_permits=permits)
