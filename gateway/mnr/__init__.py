"""Must-not-retrieve suites: YAML cases that prove what a principal can never see.

    from gateway.mnr import MnrSession, load_suite
    with MnrSession() as session:
        outcomes = session.run_suite(load_suite("tests/mnr/forgotten_scope.mnr.yaml"))

Also ``cypher-gateway mnr run PATH…`` and a pytest plugin (``*.mnr.yaml`` files
become test items). The format is described in docs/mnr.md. The fixture memory
graph the demo seeds is ``gateway/mnr/fixtures/memory.cypher``
(``gateway.mnr.seed.seed_memory(connection)`` or ``cypher-gateway mnr seed``).
"""

from __future__ import annotations

from gateway.mnr.cases import Case, PrincipalSpec, Selector, Suite, SuiteError, builtin_fixture, discover, load_suite
from gateway.mnr.runner import CaseOutcome, MnrSession, connection_from_env, counts

__all__ = [
    "Case",
    "CaseOutcome",
    "MnrSession",
    "PrincipalSpec",
    "Selector",
    "Suite",
    "SuiteError",
    "builtin_fixture",
    "connection_from_env",
    "counts",
    "discover",
    "load_suite",
]
