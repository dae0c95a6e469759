"""scope.untagged: hidden by default; the opt-in to global is linted and said in plain words."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gateway.cli.policy import lint_warnings, render_policy
from gateway.policy import Policy, ScopeSettings, load_policy


def _with_untagged(value: str) -> Policy:
    policy = load_policy()
    return Policy.model_validate({**policy.model_dump(), "scope": {**policy.scope.model_dump(), "untagged": value}})


def test_untagged_elements_are_hidden_by_default() -> None:
    assert ScopeSettings().untagged == "hidden"
    assert load_policy().scope.untagged == "hidden"
    shown = render_policy(load_policy())
    assert "an element without 'layers', or whose 'layers' is not a list of strings, is hidden" in shown
    assert not [w for w in lint_warnings(load_policy()) if "untagged" in w]


def test_untagged_global_is_warned_about_and_shown() -> None:
    opted_in = _with_untagged("global")
    assert any("scope.untagged is global" in w for w in lint_warnings(opted_in))
    assert "an element without 'layers' is GLOBAL" in render_policy(opted_in)


def test_untagged_takes_only_the_two_words() -> None:
    with pytest.raises(ValidationError):
        _with_untagged("visible")
