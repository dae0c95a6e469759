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


def _answer(tx: Any, cypher: str, params: dict[str, Any]) -> Answer:
    result = tx.run(cypher, params)
    rows = sorted(json.dumps([to_json(value) for value in record.values()], sort_keys=True) for record in result)
    return Answer(tuple(result.keys()), tuple(rows))


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
) -> tuple[Answer, Answer]:
    """Neo4j's answer to ``query`` and the gateway's (``rewritten``), on the graph ``setup`` builds.

    ``literals`` are parameters written as Cypher literals (the TCK's), evaluated by Neo4j;
    ``gateway_params`` are the scope plan's own (the caller's attribute lists), the rewritten
    query's only.
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
                original = _answer(tx, query, params)
            except Neo4jError as exc:
                original = Answer(error=exc.code)
            if original.error is None:
                try:
                    return original, _answer(tx, rewritten, gateway_params)
                except Neo4jError as exc:
                    return original, Answer(error=exc.code)
        finally:
            tx.close()
        # The original failed at run time and took the transaction with it: the same graph again.
        tx = session.begin_transaction()
        try:
            _graph(tx, setup, literals or {})
            try:
                return original, _answer(tx, rewritten, gateway_params)
            except Neo4jError as exc:
                return original, Answer(error=exc.code)
        finally:
            tx.close()
