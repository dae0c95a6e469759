"""The memory graph ``bench/scale.py`` measures scope on: seeded, generated in memory, no files.

Both kinds of memory graph the gateway serves, in one database, about one third nodes and two
thirds relationships (the shape of the graph the scope cost was first measured on):

* **Mindreader-like knowledge**: ``Entity {id, name, kind, salience}``, ``Fact {id, text,
  confidence, validTo?}``, ``(Fact)-[:ABOUT]->(Entity)`` (a subject and an object per fact),
  ``(Entity)-[:ASSERTS {weight, validTo?}]->(Entity)``, and the correction edges
  ``(Fact)-[:SUPERSEDES|CONTRADICTS]->(Fact)`` from a newer fact to an older one.
* **Mentis-like history**: ``Repository {name}`` -[:HAS_TASK]-> ``Task {id, title, status}``
  -[:HAS_ATTEMPT]-> ``Attempt {id, status, check?, createdAt, outdatedReason?}``, and
  ``(Attempt)-[:MENTIONS]->(Entity)`` tying the two together. No ``check`` means unverified.

Every node and relationship carries ``layers`` (membership; ``[]`` = global, about 10 %), so
the membership policy covers the whole graph; ``Repository.name`` serves an equality rule and
the Task/Attempt paths to their repository serve derived rules. Each project ``project-NN``
owns one repository ``repo-NN``, and most elements stay within their project (a narrow scope
is about 1/50 of the graph, as a team's memory inside an organisation's would be).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

# Bumped whenever generate() changes what it makes: a stored graph of another version is reloaded.
GENERATOR_VERSION = 1
PROJECTS = 50
ENTITY_KINDS = ("Person", "Concept", "Project", "Tool", "Place")
TASK_STATUSES = ("open", "done", "blocked")
ATTEMPT_STATUSES = ("done", "in_progress", "abandoned")
# (start label, end label) of every relationship type; loading matches endpoints by ``id``.
ENDS: dict[str, tuple[str, str]] = {
    "HAS_TASK": ("Repository", "Task"),
    "HAS_ATTEMPT": ("Task", "Attempt"),
    "ABOUT": ("Fact", "Entity"),
    "MENTIONS": ("Attempt", "Entity"),
    "SUPERSEDES": ("Fact", "Fact"),
    "CONTRADICTS": ("Fact", "Fact"),
    "ASSERTS": ("Entity", "Entity"),
}
# What a deployment of both systems would index: the ids recall is anchored on, the repository
# name, and the attempt properties history queries filter and sort by.
SCHEMA = (
    "CREATE CONSTRAINT bench_entity_id IF NOT EXISTS FOR (n:Entity) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT bench_fact_id IF NOT EXISTS FOR (n:Fact) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT bench_repository_id IF NOT EXISTS FOR (n:Repository) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT bench_repository_name IF NOT EXISTS FOR (n:Repository) REQUIRE n.name IS UNIQUE",
    "CREATE CONSTRAINT bench_task_id IF NOT EXISTS FOR (n:Task) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT bench_attempt_id IF NOT EXISTS FOR (n:Attempt) REQUIRE n.id IS UNIQUE",
    "CREATE INDEX bench_entity_name IF NOT EXISTS FOR (n:Entity) ON (n.name)",
    "CREATE INDEX bench_entity_kind IF NOT EXISTS FOR (n:Entity) ON (n.kind)",
    "CREATE INDEX bench_attempt_created IF NOT EXISTS FOR (n:Attempt) ON (n.createdAt)",
    "CREATE INDEX bench_attempt_check IF NOT EXISTS FOR (n:Attempt) ON (n.check)",
    "CREATE INDEX bench_fact_valid_to IF NOT EXISTS FOR (n:Fact) ON (n.validTo)",
)


def project(i: int) -> str:
    return f"project-{i:02d}"


def repository(i: int) -> str:
    return f"repo-{i:02d}"


@dataclass
class Graph:
    """Nodes by label (property maps, each with a unique ``id``) and relationships by type."""

    elements: int
    seed: int
    nodes: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # type -> (start id, end id, properties)
    relationships: dict[str, list[tuple[str, str, dict[str, Any]]]] = field(default_factory=dict)

    def node_count(self) -> int:
        return sum(len(rows) for rows in self.nodes.values())

    def relationship_count(self) -> int:
        return sum(len(rows) for rows in self.relationships.values())

    def counts(self) -> dict[str, int]:
        return {**{k: len(v) for k, v in self.nodes.items()}, **{k: len(v) for k, v in self.relationships.items()}}


def generate(elements: int, seed: int = 1) -> Graph:
    """A graph of exactly ``elements`` nodes + relationships (at least 1,000), the same for the same seed."""
    if elements < 1000:
        raise ValueError("the generator needs at least 1,000 elements (50 projects, each with some of everything)")
    rng = random.Random(seed)
    graph = Graph(elements, seed)

    def layers(home: int) -> list[str]:
        # ~10 % global, ~75 % the home project only, ~15 % shared with a second project.
        draw = rng.random()
        if draw < 0.10:
            return []
        if draw < 0.85:
            return [project(home)]
        return sorted({project(home), project(rng.randrange(PROJECTS))})

    def near(pool: list[list[str]], home: int, locality: float) -> str:
        """An id from the home project's pool with probability ``locality``, else from any project's."""
        bucket = pool[home] if rng.random() < locality and pool[home] else pool[rng.randrange(PROJECTS)]
        while not bucket:
            bucket = pool[rng.randrange(PROJECTS)]
        return rng.choice(bucket)

    n_entity, n_fact = round(0.10 * elements), round(0.08 * elements)
    n_task, n_attempt = round(0.02 * elements), round(0.12 * elements)
    n_mentions, n_supersedes, n_contradicts = round(0.08 * elements), round(0.03 * elements), round(0.02 * elements)

    repos = [{"id": f"r{i}", "name": repository(i), "layers": [project(i)]} for i in range(PROJECTS)]
    entities: list[dict[str, Any]] = []
    entity_pool: list[list[str]] = [[] for _ in range(PROJECTS)]
    for i in range(n_entity):
        home = rng.randrange(PROJECTS)
        entities.append({
            "id": f"e{i}", "name": f"entity {i}", "kind": rng.choices(ENTITY_KINDS, (3, 4, 1, 1, 1))[0],
            "salience": round(rng.random(), 6), "layers": layers(home), "home": home,
        })  # fmt: skip
        entity_pool[home].append(f"e{i}")
    facts: list[dict[str, Any]] = []
    fact_pool: list[list[str]] = [[] for _ in range(PROJECTS)]
    about: list[tuple[str, str, dict[str, Any]]] = []
    for i in range(n_fact):
        home = rng.randrange(PROJECTS)
        fact: dict[str, Any] = {
            "id": f"f{i}", "text": f"fact {i}", "confidence": round(rng.random(), 4), "layers": layers(home),
            "home": home,
        }  # fmt: skip
        if rng.random() < 0.10:
            fact["validTo"] = 1_700_000_000 + i  # retired, never overwritten
        facts.append(fact)
        fact_pool[home].append(f"f{i}")
        for _ in range(2):  # subject and object
            about.append((f"f{i}", near(entity_pool, home, 0.85), {"layers": layers(home)}))
    tasks: list[dict[str, Any]] = []
    task_pool: list[list[str]] = [[] for _ in range(PROJECTS)]
    has_task: list[tuple[str, str, dict[str, Any]]] = []
    for i in range(n_task):
        home = rng.randrange(PROJECTS)
        task_id = f"{repository(home)}/T{i}"
        tasks.append({
            "id": task_id, "title": f"task {i}", "status": rng.choice(TASK_STATUSES), "layers": layers(home),
            "home": home,
        })  # fmt: skip
        task_pool[home].append(task_id)
        has_task.append((f"r{home}", task_id, {"layers": layers(home)}))
    attempts: list[dict[str, Any]] = []
    has_attempt: list[tuple[str, str, dict[str, Any]]] = []
    attempt_pool: list[list[str]] = [[] for _ in range(PROJECTS)]
    for i in range(n_attempt):
        home = rng.randrange(PROJECTS)
        attempt: dict[str, Any] = {
            "id": f"a{i}", "status": rng.choice(ATTEMPT_STATUSES), "createdAt": 1_700_000_000 + 60 * i,
            "action": f"action {i}", "layers": layers(home), "home": home,
        }  # fmt: skip
        check = rng.random()
        if check < 0.40:
            attempt["check"] = "passed"
        elif check < 0.70:
            attempt["check"] = "failed"
        if rng.random() < 0.05:
            attempt["outdatedReason"] = "superseded by a later commit"
        attempts.append(attempt)
        attempt_pool[home].append(f"a{i}")
        has_attempt.append((near(task_pool, home, 1.0), f"a{i}", {"layers": layers(home)}))
    mentions = [
        (near(attempt_pool, home, 1.0), near(entity_pool, home, 0.8), {"layers": layers(home)})
        for home in (rng.randrange(PROJECTS) for _ in range(n_mentions))
    ]

    def corrections(count: int) -> list[tuple[str, str, dict[str, Any]]]:
        out = []
        for _ in range(count):
            home = rng.randrange(PROJECTS)
            a, b = near(fact_pool, home, 0.9), near(fact_pool, home, 0.9)
            newer, older = (a, b) if int(a[1:]) > int(b[1:]) else (b, a)
            out.append((newer, older, {"layers": layers(home)}))
        return out

    supersedes, contradicts = corrections(n_supersedes), corrections(n_contradicts)
    nodes = len(repos) + n_entity + n_fact + n_task + n_attempt
    fixed = len(about) + len(has_task) + len(has_attempt) + len(mentions) + len(supersedes) + len(contradicts)
    n_asserts = elements - nodes - fixed
    asserts = []
    for _ in range(n_asserts):
        home = rng.randrange(PROJECTS)
        props: dict[str, Any] = {"layers": layers(home), "weight": round(rng.random(), 4)}
        if rng.random() < 0.10:
            props["validTo"] = 1_700_000_000
        asserts.append((near(entity_pool, home, 1.0), near(entity_pool, home, 0.8), props))

    graph.nodes = {"Repository": repos, "Entity": entities, "Fact": facts, "Task": tasks, "Attempt": attempts}
    graph.relationships = {
        "HAS_TASK": has_task, "HAS_ATTEMPT": has_attempt, "ABOUT": about, "MENTIONS": mentions,
        "SUPERSEDES": supersedes, "CONTRADICTS": contradicts, "ASSERTS": asserts,
    }  # fmt: skip
    return graph


def stored(row: dict[str, Any]) -> dict[str, Any]:
    """A node's properties as loaded: ``home`` is the generator's bookkeeping, not data."""
    return {k: v for k, v in row.items() if k != "home"}


def parameters(graph: Graph, home: int = 0) -> dict[str, str]:
    """Agent parameters that find something in ``project(home)`` (so a narrow scope answers rows).

    The repository of the project; its task with the most attempts; the project's entity (its
    own layer only) with the most facts about it that have corrections, and the best connected
    other one (for shortestPath). Ties go to the smaller id, so the choice is the seed's.
    """
    own = [project(home)]
    attempts: dict[str, int] = {}
    for task, _, _ in graph.relationships["HAS_ATTEMPT"]:
        attempts[task] = attempts.get(task, 0) + 1
    tasks = [t["id"] for t in graph.nodes["Task"] if t["home"] == home and t["layers"] == own]
    task = max(tasks, key=lambda t: (attempts.get(t, 0), t))
    corrected = {end for rel in ("SUPERSEDES", "CONTRADICTS") for _, end, _ in graph.relationships[rel]}
    score: dict[str, int] = {}
    for fact, entity, _ in graph.relationships["ABOUT"]:
        score[entity] = score.get(entity, 0) + (1 if fact in corrected else 0)
    degree: dict[str, int] = {}
    for start, end, _ in graph.relationships["ASSERTS"]:
        degree[start] = degree.get(start, 0) + 1
        degree[end] = degree.get(end, 0) + 1
    candidates = [e["id"] for e in graph.nodes["Entity"] if e["home"] == home and e["layers"] == own]
    entity = max(candidates, key=lambda e: (score.get(e, 0), degree.get(e, 0), e))
    other = max((e for e in candidates if e != entity), key=lambda e: (degree.get(e, 0), e))
    return {"repo": repository(home), "task": task, "entity": entity, "entity2": other, "layer": project(home)}
