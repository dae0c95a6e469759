"""Test data in Neo4j: each fixture seeds under its own marker label and removes only that label.

No test wipes the whole database or reads another test's data: a fixture's queries name
its marker label, and checks count under that label only.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any


def unique_label(prefix: str) -> str:
    """A marker label no other run or test uses."""
    return f"{prefix}{uuid.uuid4().hex[:10]}"


def delete_label(driver: Any, label: str, database: str | None = None) -> None:
    driver.execute_query(f"MATCH (n:`{label}`) DETACH DELETE n", database_=database)


@contextmanager
def labelled_graph(
    driver: Any, label: str, statements: Iterable[str], database: str | None = None, **params: Any
) -> Iterator[str]:
    """Seed ``statements`` (every node they create carries ``label``); yield the label; remove it.

    Nodes left under ``label`` by an interrupted earlier run are removed first, so a fixed
    label is as safe as a run-unique one.
    """
    delete_label(driver, label, database)
    with driver.session(database=database) as session:
        for statement in statements:
            session.run(statement, params).consume()
    try:
        yield label
    finally:
        delete_label(driver, label, database)


def count_label(driver: Any, label: str) -> int:
    records, _, _ = driver.execute_query(f"MATCH (n:`{label}`) RETURN count(n) AS c")
    return int(records[0]["c"])


def fingerprint(driver: Any, label: str) -> dict[str, Any]:
    """Counts and a checksum of every property and label under ``label`` (and its relationships)."""
    with driver.session() as session:
        nodes = session.run(f"MATCH (n:{label}) RETURN n.i AS i, properties(n) AS p, labels(n) AS l ORDER BY i").data()
        rels = session.run(f"MATCH (:{label})-[r]->() RETURN type(r) AS t, properties(r) AS p ORDER BY p.w").data()
    digest = hashlib.sha256(json.dumps([nodes, rels], sort_keys=True, default=str).encode()).hexdigest()
    return {"nodes": len(nodes), "relationships": len(rels), "checksum": digest}
