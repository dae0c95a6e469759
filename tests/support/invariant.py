"""The rewrite's invariant, checked on the real Neo4j: on a graph where every element is visible,
the gateway answers the agent's query exactly as Neo4j answers it (every element carries
``layers: []``, global).

``compare`` builds the graph inside a transaction that is rolled back (after deleting, in that
transaction only, whatever else the database holds, so other tests' data is neither seen nor
touched), runs the agent's query and the rewritten one there, and says what differs. The
gateway's answer is modelled as the sandbox gives it: Neo4j's EXPLAIN of the agent's own text
first (its refusal is the answer), then the rewritten query.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from neo4j.exceptions import Neo4jError

from sandbox.serialize import to_json

LAYERS = "layers"  # the default policy's scope property


@dataclass(frozen=True)
class Answer:
    columns: tuple[str, ...] = ()
    rows: tuple[str, ...] = ()  # each row as JSON, sorted: rows compare as a multiset
    error: str | None = None  # Neo4j's error code

    def __str__(self) -> str:
        if self.error is not None:
            return f"error {self.error}"
        return f"columns {list(self.columns)}, {len(self.rows)} rows {list(self.rows)[:3]}"


def _without_list_order(value: Any) -> Any:
    """``value`` with every list's elements sorted, at every depth (maps keep their keys)."""
    if isinstance(value, list):
        return sorted((_without_list_order(item) for item in value), key=lambda item: json.dumps(item, sort_keys=True))
    if isinstance(value, dict):
        return {key: _without_list_order(item) for key, item in value.items()}
    return value


def _answer(tx: Any, cypher: str, params: dict[str, Any], ignore_list_order: bool = False) -> Answer:
    result = tx.run(cypher, params)
    rows = []
    for record in result:
        row = [to_json(value) for value in record.values()]
        rows.append(json.dumps(_without_list_order(row) if ignore_list_order else row, sort_keys=True))
    return Answer(tuple(result.keys()), tuple(sorted(rows)))


def _graph(tx: Any, setup: list[str], literals: dict[str, str]) -> dict[str, Any]:
    tx.run("MATCH (n) DETACH DELETE n").consume()
    for statement in setup:
        tx.run(statement).consume()
    # Every element global, said explicitly (an untagged element is hidden): both queries see the tag.
    tx.run(f"MATCH (n) WHERE n.{LAYERS} IS NULL SET n.{LAYERS} = []").consume()
    tx.run(f"MATCH ()-[r]->() WHERE r.{LAYERS} IS NULL SET r.{LAYERS} = []").consume()
    return {name: tx.run(f"RETURN {literal} AS v").single()["v"] for name, literal in literals.items()}


def compare(
    driver: Any,
    query: str,
    rewritten: str,
    *,
    setup: list[str],
    params: dict[str, Any] | None = None,
    literals: dict[str, str] | None = None,
    scope_parameter: str = "__gw_scope",
    gateway_params: dict[str, Any] | None = None,
    ignore_list_order: bool = False,
) -> tuple[Answer, Answer]:
    """Neo4j's answer to ``query`` and the gateway's (``rewritten``), on the graph ``setup`` builds.

    ``literals`` are parameters written as Cypher literals (the TCK's), evaluated by Neo4j;
    ``gateway_params`` are the scope plan's own (the caller's attribute lists), the rewritten
    query's only. ``ignore_list_order`` compares lists as the TCK's "ignoring element order for
    lists" does: ``collect()`` without an ORDER BY has no order of its own, and the rewritten
    plan may visit rows in another one.
    """
    params = dict(params or {})
    with driver.session() as session:
        try:
            session.run("EXPLAIN " + query, params).consume()
        except Neo4jError as exc:
            refused = Answer(error=exc.code)
            return refused, refused  # the sandbox answers with this very refusal
    gateway_params = {scope_parameter: [], **(gateway_params or {})}
    with driver.session() as session:
        tx = session.begin_transaction()
        try:
            params.update(_graph(tx, setup, literals or {}))
            gateway_params.update(params)
            try:
                original = _answer(tx, query, params, ignore_list_order)
            except Neo4jError as exc:
                original = Answer(error=exc.code)
            if original.error is None:
                try:
                    return original, _answer(tx, rewritten, gateway_params, ignore_list_order)
                except Neo4jError as exc:
                    return original, Answer(error=exc.code)
        finally:
            tx.close()
        # The original failed at run time and took the transaction with it: the same graph again.
        tx = session.begin_transaction()
        try:
            _graph(tx, setup, literals or {})
            try:
                return original, _answer(tx, rewritten, gateway_params, ignore_list_order)
            except Neo4jError as exc:
                return original, Answer(error=exc.code)
        finally:
            tx.close()
