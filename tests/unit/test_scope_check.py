"""Layer 2 (sandbox/scope_check.py) on serialized rows: every element is checked, whole rows go."""

from __future__ import annotations

from typing import Any

import pytest

from sandbox.scope_check import filter_rows
from sandbox.wire import ScopeCheck

CHECK = ScopeCheck(layers_property="layers", layers=["project-a"], hidden_relationship_types=["SUPERSEDES"])


# An element without the layers property (node(MISSING)); the helpers' default is global ([]).
MISSING: Any = object()


def node(layers: Any = (), **props: Any) -> dict[str, Any]:
    properties = dict(props)
    if layers is not MISSING:
        properties["layers"] = list(layers) if isinstance(layers, tuple) else layers
    return {"$type": "node", "elementId": "4:x:1", "labels": ["Fact"], "properties": properties}


def rel(layers: Any = (), rel_type: str = "RELATES") -> dict[str, Any]:
    properties = {} if layers is MISSING else {"layers": list(layers) if isinstance(layers, tuple) else layers}
    return {"$type": "relationship", "elementId": "5:x:1", "type": rel_type,
            "startElementId": "4:x:1", "endElementId": "4:x:2", "properties": properties}  # fmt: skip


@pytest.mark.parametrize(
    "value",
    [
        node(),  # an empty list: global
        node([]),
        node(["project-a"]),
        node(["project-b", "project-a"]),
        rel(["project-a"]),
        {"$type": "path", "nodes": [node(), node(["project-a"])], "relationships": [rel()]},
        [node(), [node([])]],
        {"key": node(["project-a"])},
        "a plain string",
        42,
        None,
    ],
)
def test_visible_values_are_kept(value: Any) -> None:
    rows, redacted = filter_rows(["v"], [[value]], CHECK)
    assert rows == [[value]] and redacted == 0


@pytest.mark.parametrize(
    "value",
    [
        node(["project-b"]),
        node("project-a"),  # a string, not a list: malformed, hidden even though it names the scope
        node([1, 2]),
        node([None]),
        node(["project-a", None]),  # a list holding a null is malformed, even with a match
        node(["project-a", 1]),
        node(MISSING),  # no layers property: hidden (fail closed)
        rel(MISSING),
        node(None),  # a null value is a missing one
        rel(["project-b"]),
        rel((), "SUPERSEDES"),  # a bookkeeping type is hidden whatever its layers
        # A hidden node in the middle of a path hides the whole path.
        {"$type": "path", "nodes": [node(), node(["project-b"]), node()], "relationships": [rel(), rel()]},
        [node(), [node(), [node(["project-b"])]]],  # nested in collected lists
        {"deep": {"deeper": node(["project-b"])}},  # inside a map value
        {"$type": "map", "value": {"$type": node(["project-b"])}},  # a user map wrapped by the serializer
        {"$type": "node", "elementId": "4:x:9", "labels": [], "properties": "not a map"},
    ],
)
def test_a_row_with_any_hidden_element_is_dropped_whole(value: Any) -> None:
    # The second column stands for `n.secret`: it must go with the hidden element.
    rows, redacted = filter_rows(["n", "secret"], [[value, "SECRET"], [node(), "fine"]], CHECK)
    assert rows == [[node(), "fine"]] and redacted == 1


def test_untagged_global_is_an_opt_in_that_keeps_malformed_hidden() -> None:
    opted_in = ScopeCheck(layers_property="layers", layers=["project-a"], untagged="global")
    rows, redacted = filter_rows(["n"], [[node(MISSING)], [rel(MISSING)], [node("project-a")], [node([1])]], opted_in)
    assert rows == [[node(MISSING)], [rel(MISSING)]] and redacted == 2


def test_empty_scope_means_global_only() -> None:
    empty = ScopeCheck(layers_property="layers", layers=[])
    rows, redacted = filter_rows(["n"], [[node()], [node([])], [node(["project-a"])]], empty)
    assert rows == [[node()], [node([])]] and redacted == 1


def test_the_layers_property_name_comes_from_the_check() -> None:
    custom = ScopeCheck(layers_property="vis", layers=["x"])
    hidden = {"$type": "node", "elementId": "1", "labels": [], "properties": {"vis": ["y"], "layers": ["x"]}}
    assert filter_rows(["n"], [[hidden]], custom) == ([], 1)


def test_deeply_nested_lists_do_not_overflow() -> None:
    value: Any = node(["project-b"])
    for _ in range(5000):
        value = [value]
    assert filter_rows(["v"], [[value]], CHECK) == ([], 1)
