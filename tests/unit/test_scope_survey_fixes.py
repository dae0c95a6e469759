"""Each problem serve and doctor report about the policy against the graph comes with its own fix."""

from __future__ import annotations

from gateway.scope_survey import FIX, NAMES_FIX, Survey


def test_a_missing_label_is_not_told_to_change_the_scope_property() -> None:
    found = Survey(layers_property="slug", property_found=True, missing_labels=["Tsk"], missing_types=["CONTRADICTS"])
    pairs = found.problems_and_fixes
    assert [fix for _, fix in pairs] == [NAMES_FIX, NAMES_FIX]
    assert "Tsk" in pairs[0][0] and "CONTRADICTS" in pairs[1][0]
    assert all("layers_property" not in fix for _, fix in pairs)


def test_the_scope_property_s_fix_goes_with_the_scope_property_only() -> None:
    found = Survey(
        layers_property="layerz", property_found=False, missing_labels=["Tsk"], missing_types=[],
        missing_properties=["Repository.slug"],
    )  # fmt: skip
    pairs = found.problems_and_fixes
    assert pairs[0] == (found.problems[0], FIX) and "'layerz' occurs on no node" in pairs[0][0]
    assert [fix for _, fix in pairs[1:]] == [NAMES_FIX, NAMES_FIX]
    assert found.problems == [problem for problem, _ in pairs]
    assert found.property_problems == found.problems[:2]
