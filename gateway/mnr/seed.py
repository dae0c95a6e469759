"""Seeding fixture graphs and reading them back, with write credentials.

Harness-only: this is the one module of ``gateway.mnr`` that talks to Neo4j
directly (through the ``neo4j`` driver, imported lazily). Agent queries never
come here; they go through ``gateway.service.Gateway`` and the sandbox. The
gateway server never imports this module.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gateway.connection import Neo4jConnection
from gateway.mnr.cases import FIXTURES_DIR, builtin_fixture
from gateway.mnr.match import FixtureElement

MEMORY_FIXTURE = FIXTURES_DIR / "memory.cypher"
# The graph shapes of the systems users run, one per shipped policy of that name
# (`builtin:mentis` for policies/mentis.yaml, `builtin:mindreader` for policies/mindreader.yaml).
MENTIS_FIXTURE = FIXTURES_DIR / "mentis.cypher"
MINDREADER_FIXTURE = FIXTURES_DIR / "mindreader.cypher"
# Every string value only one fixture element holds identifies it, however short: a hidden
# entity's name "Ada" returned as a plain value is a leak. (A value shared with another
# element cannot name either; match.py searches inside longer strings only from 12 on.)
MIN_FINGERPRINT = 1

_STATEMENT_END = re.compile(r";[ \t]*(?:\r?\n|$)")


class SeedError(Exception):
    """A fixture could not be seeded or read back; the message names the statement or element."""


def statements(text: str) -> list[str]:
    """Split a seed file into statements: ``;`` at the end of a line ends one; ``//`` lines are comments."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("//")]
    body = "\n".join(lines)
    return [part.strip() for part in _STATEMENT_END.split(body) if part.strip()]


def connect(connection: Neo4jConnection) -> Any:
    """A write-capable driver (the harness's own; agent queries never use it)."""
    import neo4j

    driver = neo4j.GraphDatabase.driver(connection.uri, auth=(connection.user, connection.password.get_secret_value()))
    try:
        driver.verify_connectivity()
    except Exception as exc:
        driver.close()
        raise SeedError(f"cannot reach Neo4j at {connection.uri} to seed fixtures: {exc}") from exc
    return driver


def seed(driver: Any, path: Path, database: str | None = None) -> int:
    """Run every statement of ``path`` in its own write transaction; returns how many ran."""
    parts = statements(path.read_text(encoding="utf-8"))
    with driver.session(database=database) as session:
        for i, statement in enumerate(parts, 1):
            try:
                session.run(statement).consume()
            except Exception as exc:
                raise SeedError(f"{path.name}: statement {i} failed: {exc}\n{statement[:400]}") from exc
    return len(parts)


def seed_memory(connection: Neo4jConnection) -> int:
    """Seed the built-in fixture memory graph (the demo's data); returns the statements run."""
    return seed_builtin(connection, MEMORY_FIXTURE.stem)


def seed_builtin(connection: Neo4jConnection, name: str) -> int:
    """Seed the built-in fixture ``name`` (``memory``, ``mentis``, ``mindreader``); returns the statements run.

    An unknown name raises :class:`SeedError` naming the known ones.
    """
    from gateway.mnr.cases import SuiteError

    try:
        path = builtin_fixture(name)
    except SuiteError as exc:
        raise SeedError(str(exc)) from exc
    driver = connect(connection)
    try:
        return seed(driver, path, connection.database)
    finally:
        driver.close()


def builtin_fixture_names() -> list[str]:
    """The built-in fixtures by name, as ``builtin:<name>`` in a case file names them."""
    return sorted(path.stem for path in FIXTURES_DIR.glob("*.cypher"))


def fixture_elements(driver: Any, key_property: str, database: str | None = None) -> dict[str, FixtureElement]:
    """Every node and relationship that has ``key_property``, keyed by its value, with fingerprints."""
    query = (
        "MATCH (n) WHERE n[$key] IS NOT NULL RETURN n[$key] AS key, elementId(n) AS id, properties(n) AS props "
        "UNION ALL "
        "MATCH ()-[r]->() WHERE r[$key] IS NOT NULL RETURN r[$key] AS key, elementId(r) AS id, properties(r) AS props"
    )
    ends = "MATCH (a)-[r]->(b) WHERE r[$key] IS NOT NULL RETURN r[$key] AS rel, a[$key] AS start, b[$key] AS end"
    with driver.session(database=database) as session:
        result = session.run(query, key=key_property)
        records = [(str(rec["key"]), str(rec["id"]), dict(rec["props"])) for rec in result]
        at: dict[str, set[str]] = {}
        for rec in session.run(ends, key=key_property):
            for end in (rec["start"], rec["end"]):
                if end is not None:
                    at.setdefault(str(end), set()).add(str(rec["rel"]))
    holders: Counter[str] = Counter()
    for _, _, props in records:
        holders.update(set(_strings(props.values())))
    ids: dict[str, set[str]] = {}
    prints: dict[str, set[str]] = {}
    for key, element_id, props in records:
        ids.setdefault(key, set()).add(element_id)
        own = {s for s in _strings(props.values()) if len(s) >= MIN_FINGERPRINT and holders[s] == 1}
        prints.setdefault(key, {key}).update(own)
    return {
        key: FixtureElement(
            key=key,
            element_ids=frozenset(ids[key]),
            fingerprints=frozenset(prints[key]),
            relationships=frozenset(at.get(key, ())),
        )
        for key in ids
    }


def _strings(values: Iterable[Any]) -> Iterable[str]:
    for value in values:
        if isinstance(value, str):
            yield value
        elif isinstance(value, list):
            yield from (v for v in value if isinstance(v, str))
