"""``mnr prove`` on the three shipped fixtures and policies: no leak and no wrong answer against
the visible copy, over a bounded number of generated queries plus the shipped suites' cases and
their mutants; and the positive control: with the scope rewrite switched off, the same checker
finds leaks (so a run that finds none has looked)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.domain import LayerSwitches
from gateway.mnr.cases import builtin_fixture, discover, load_suite
from gateway.mnr.prove import ProveReport, ProveSettings
from gateway.policy import load_policy

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

SUITES = Path(__file__).resolve().parents[2] / "mnr"
# Executed queries per fixture (over every principal and tool, the suites' cases and mutants
# among them): a few hundred each keeps the three runs within minutes on two busy cores. The
# acceptance run (docs/benchmarks.md) uses --n 2000.
BOUNDED = {"default": 150, "mindreader": 150, "mentis": 60}
CASES = [("default", "memory"), ("mindreader", "mindreader"), ("mentis", "mentis")]

Prove = Callable[[ProveSettings], ProveReport]


def _settings(policy_name: str, fixture: str, n: int, *, with_suites: bool = True, **extra: Any) -> ProveSettings:
    policy = load_policy(Path(__file__).resolve().parents[3] / "policies" / f"{policy_name}.yaml")
    suites = [s for s in map(load_suite, discover([SUITES])) if s.policy == policy.name and s.fixture.endswith(fixture)]
    return ProveSettings(
        policy=policy, fixture=builtin_fixture(fixture), n=n, seed=1, suites=suites if with_suites else [], **extra
    )


@pytest.mark.parametrize(("policy_name", "fixture"), CASES)
def test_no_leak_and_no_wrong_answer(mnr_prove: Prove, policy_name: str, fixture: str) -> None:
    report = mnr_prove(_settings(policy_name, fixture, BOUNDED[policy_name]))
    print(report.summary())
    assert report.executed >= BOUNDED[policy_name] and not report.dry, report.summary()
    assert report.count("leak") == 0, report.text()
    assert report.count("error_oracle") == 0, report.text()
    assert report.count("wrong_answer") == 0, report.text()


def test_the_checker_finds_leaks_with_the_scope_rewrite_off(mnr_prove: Prove) -> None:
    settings = _settings(
        "default", "memory", 40, layers=LayerSwitches(scope_rewrite=False), with_suites=False, max_differences=3
    )
    report = mnr_prove(settings)
    leaks = [d for d in report.differences if d.kind == "leak"]
    assert leaks, report.text()
    # Each is reported shrunk and with the query the gateway ran (the agent's own, unscoped here).
    assert all(d.shrunk and d.gateway for d in leaks)
