"""The running Neo4j has no built-in function the scope rewrite's review has not classified.

A newer server (2026.x, Cypher 25) adds functions; each must be let through with a reason or
refused with one (gateway/scope/calls.py) before it reaches an agent's query unreviewed.
"""

from __future__ import annotations

from typing import Any

from gateway.guard import functions
from gateway.scope.calls import REFUSED_FUNCTIONS, SAFE_FUNCTIONS, function_is_safe
from tests.unit.test_scope_calls import BUILT_INS


def test_every_built_in_function_of_the_running_neo4j_was_reviewed(neo4j_driver: Any) -> None:
    records, _, _ = neo4j_driver.execute_query("SHOW FUNCTIONS YIELD name, isBuiltIn WHERE isBuiltIn RETURN name")
    running = {record["name"] for record in records}
    assert len(running) > 100, "SHOW FUNCTIONS listed too little to be the built-ins"
    reviewed = SAFE_FUNCTIONS | {name.lower() for name in REFUSED_FUNCTIONS}
    assert sorted(name for name in running if name.lower() not in reviewed) == []
    assert set(BUILT_INS) <= running  # the unit test's list is no wider than a real server's
    # The one function table has a row for each, and every one the rewrite lets through (Cypher syntax with
    # a function's name aside: all(), reduce(), …) has a cost model.
    rows = {name: functions.lookup(name) for name in running}
    assert sorted(name for name, row in rows.items() if row is None) == []
    unreviewed = [
        name
        for name, row in rows.items()
        if row is not None and function_is_safe(name) and row.scope is not functions.SYNTAX and row.cost is None
    ]
    assert unreviewed == []
