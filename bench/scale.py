"""Scope on a large memory graph: what the visibility rewrite costs, query by query, at 100k and 1M elements.

    .venv/bin/python bench/scale.py --size 100k          # ~5 minutes (load ~1 minute, once)
    .venv/bin/python bench/scale.py --size 1m            # ~25 minutes (load ~8 minutes, once)
    .venv/bin/python bench/scale.py --size 100k --size 1m --label after   # re-measure after a change
    .venv/bin/python bench/scale.py --size 1m --policy rules   # one policy; the others' stored figures stay
    .venv/bin/python bench/scale.py --size 100k --version 2026  # the 2026.x line (stored as 100k-2026)
    .venv/bin/python bench/scale.py --table              # the Markdown tables of every stored run

1. **The graph** (``bench/scale_graph.py``): seeded, generated in memory, loaded in UNWIND
   batches into a Neo4j of the benchmark's own (``neo4j_local.start_instance``: the managed
   release line's jars under ``<state dir>/bench-scale-<line>-<size>``, its own port and
   password), never into the managed servers the test suites use. The loaded graph is kept
   between runs (same size, seed and generator version: no reload) and the server is stopped
   at the end.
2. **Ten agent queries** (:data:`QUERIES`) through the ``analyze`` tool, each unscoped and
   scoped for a narrow principal (one project of 50) and a wide one (ten projects): the scoped
   text is exactly what ``gateway.scope.plan`` returns for the policy, so a change to the
   rewrite is measured by re-running this. Interleaved (every repetition runs the three in a
   rotated order, so a noisy neighbour hits them alike), warmed first; db hits from PROFILE
   (summed over the plan), p50/p95 ms over the repetitions, through the driver in this process.
3. **A correctness oracle** for every scoped answer: the same query written by hand with a
   visibility test on every element it matches (:class:`Oracle`, not the rewrite's code) must
   answer the same rows.
4. **Policies** (:data:`POLICIES`): ``bench/scale-membership.yaml`` (layers on everything) and
   ``bench/scale-rules.yaml`` (equality on Repository.name, derived rules for Task and Attempt,
   layers for the rest), each laid over ``policies/default.yaml`` without its property list. A
   policy the policy model does not accept yet is skipped, saying why.
5. **End to end** for three queries (recall, top-k, 2-hop): through the real ``Gateway``
   (guard, rewrite, audit, runner, sandbox), waiting for a warm container before each call,
   beside the scoped query direct.

Results go to ``bench/scale-results.json`` under ``--label`` (``before``: the rewrite that
writes one predicate over the whole path), one entry per size, so a later run adds its own
label beside the earlier ones and ``--table`` prints them side by side.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this file's directory comes first on sys.path and bench/sandbox.py would
# shadow the `sandbox` package: put the repo root there instead.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import neo4j
import yaml
from pydantic import ValidationError

from bench.scale_graph import ENDS, GENERATOR_VERSION, SCHEMA, Graph, generate, parameters, project, repository, stored
from gateway import guard, scope
from gateway.compose import compose
from gateway.config import connection_settings
from gateway.connection import Neo4jConnection
from gateway.domain import Principal
from gateway.errors import GatewayError
from gateway.managed_neo4j import ServerLine, line_for
from gateway.ops import images, neo4j_local
from gateway.paths import state_dir
from gateway.policy import DEFAULT_POLICY_PATH, Policy, ToolName

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "scale-results.json"
SIZES = {"100k": 100_000, "1m": 1_000_000}
SEED = 1
TOOL: ToolName = "analyze"
BATCH = 10_000
# The benchmark's own server: ports apart from the managed servers' (17687/17697 and their HTTP).
BOLT_PORTS = {"5.26": 17787, "2026": 17797}
# Memory for the benchmark's server: the store in the page cache, as a deployment would size it;
# everything else (transaction limits, timeouts) is the managed server's neo4j.conf.
SERVER_CONF = {
    "server.memory.heap.initial_size": "2g",
    "server.memory.heap.max_size": "2g",
    "server.memory.pagecache.size": "1g",
}
NARROW, WIDE = 1, 10  # projects a narrow and a wide principal see
# Every query runs under the version the guard reads it as, as the runner sends it (the default
# policy's default_version), so 5.26 and 2026.x read the same text the same way.
LANGUAGE = "CYPHER 5 "


# --- policies and the oracle's visibility text -----------------------------------------------------


class Oracle:
    """Visibility written by hand, per element, for the oracle queries (independent of the rewrite).

    ``node(v)`` / ``relationship(v)`` is the Cypher text "``v`` is visible"; the caller's lists
    come as ``$oracle_layers`` and ``$oracle_repositories``. Membership: ``layers`` is ``[]`` or
    shares an entry with the caller's (missing: null, so hidden in a WHERE).
    """

    def membership(self, v: str) -> str:
        return f"({v}.layers = [] OR any(__l IN {v}.layers WHERE __l IN $oracle_layers))"

    def node(self, v: str) -> str:
        return self.membership(v)

    def relationship(self, v: str) -> str:
        return self.membership(v)


class RulesOracle(Oracle):
    """Equality on Repository.name, Task and Attempt derived from their repository, layers otherwise."""

    def node(self, v: str) -> str:
        repo = "__a.name IN $oracle_repositories"
        return (
            f"(CASE WHEN {v}:Repository THEN {v}.name IN $oracle_repositories"
            f" WHEN {v}:Task THEN EXISTS {{ MATCH ({v})<-[:HAS_TASK]-(__a:Repository) WHERE {repo} }}"
            f" WHEN {v}:Attempt THEN EXISTS {{ MATCH ({v})<-[:HAS_ATTEMPT]-(:Task)<-[:HAS_TASK]-(__a:Repository)"
            f" WHERE {repo} }}"
            f" ELSE {self.membership(v)} END)"
        )


@dataclass(frozen=True)
class PolicyCase:
    """One policy the queries are measured under, and how its principals and oracle are made."""

    name: str
    overlay: Path  # laid over policies/default.yaml
    oracle: Oracle

    def load(self) -> Policy:
        """The policy, or ValidationError/ValueError when the policy model does not accept it (yet)."""
        base = yaml.safe_load(DEFAULT_POLICY_PATH.read_text(encoding="utf-8"))
        # Without its property list: the benchmark graph's keys are not the demo graph's.
        base.pop("visible_properties", None)
        overlay = yaml.safe_load(self.overlay.read_text(encoding="utf-8"))
        return Policy.model_validate(_merged(base, overlay))

    def principal(self, projects: int) -> Principal:
        """A principal who sees the first ``projects`` projects (and their repositories)."""
        return Principal(
            name=f"bench-{projects}",
            scope=frozenset(project(i) for i in range(projects)),
            attributes={"repositories": frozenset(repository(i) for i in range(projects))},
        )

    def oracle_params(self, projects: int) -> dict[str, Any]:
        return {
            "oracle_layers": [project(i) for i in range(projects)],
            "oracle_repositories": [repository(i) for i in range(projects)],
        }


POLICIES = (
    PolicyCase("membership", BENCH / "scale-membership.yaml", Oracle()),
    PolicyCase("rules", BENCH / "scale-rules.yaml", RulesOracle()),
)


def _merged(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in overlay.items():
        out[key] = _merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


# --- the queries ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    """An agent query and its oracle: the same query with ``{N:v}`` / ``{R:v}`` where ``v`` must be visible."""

    name: str
    cypher: str
    oracle: str
    end_to_end: bool = False

    def params(self, agent: dict[str, Any]) -> dict[str, Any]:
        """The agent parameters this query names: what its request would send."""
        return {k: v for k, v in agent.items() if re.search(rf"\${k}\b", self.cypher)}

    def oracle_text(self, oracle: Oracle) -> str:
        def expand(match: re.Match[str]) -> str:
            kind, var = match.group(1), match.group(2)
            return oracle.node(var) if kind == "N" else oracle.relationship(var)

        return re.sub(r"\{([NR]):(\w+)\}", expand, self.oracle)


PATH_VISIBLE = "all(__n IN nodes(p) WHERE {N:__n}) AND all(__r IN relationships(p) WHERE {R:__r})"
QUERIES = (
    Query(
        "recall of one task",
        "MATCH (r:Repository {name: $repo})-[:HAS_TASK]->(t:Task {id: $task})-[:HAS_ATTEMPT]->(a:Attempt) "
        "RETURN a.id AS attempt, a.status AS status, a.check AS check, a.outdatedReason AS outdated "
        "ORDER BY a.createdAt DESC, attempt LIMIT 50",
        "MATCH (r:Repository {name: $repo})-[h:HAS_TASK]->(t:Task {id: $task})-[ha:HAS_ATTEMPT]->(a:Attempt) "
        "WHERE {N:r} AND {R:h} AND {N:t} AND {R:ha} AND {N:a} "
        "RETURN a.id AS attempt, a.status AS status, a.check AS check, a.outdatedReason AS outdated "
        "ORDER BY a.createdAt DESC, attempt LIMIT 50",
        end_to_end=True,
    ),
    Query(
        "attempts by check per repository",
        "MATCH (r:Repository)-[:HAS_TASK]->(:Task)-[:HAS_ATTEMPT]->(a:Attempt) "
        "RETURN r.name AS repo, coalesce(a.check, 'unverified') AS check, count(*) AS attempts ORDER BY repo, check",
        "MATCH (r:Repository)-[h:HAS_TASK]->(t:Task)-[ha:HAS_ATTEMPT]->(a:Attempt) "
        "WHERE {N:r} AND {R:h} AND {N:t} AND {R:ha} AND {N:a} "
        "RETURN r.name AS repo, coalesce(a.check, 'unverified') AS check, count(*) AS attempts ORDER BY repo, check",
    ),
    Query(
        "top-k entities of a kind",
        "MATCH (e:Entity) WHERE e.kind = 'Concept' "
        "RETURN e.id AS id, e.salience AS salience ORDER BY salience DESC, id LIMIT 10",
        "MATCH (e:Entity) WHERE e.kind = 'Concept' AND {N:e} "
        "RETURN e.id AS id, e.salience AS salience ORDER BY salience DESC, id LIMIT 10",
        end_to_end=True,
    ),
    Query(
        "2-hop from every place",
        "MATCH (p:Entity {kind: 'Place'})-[:ASSERTS]->(m:Entity)-[:ASSERTS]->(x:Entity) WHERE x.kind = 'Person' "
        "RETURN count(*) AS paths, count(DISTINCT x) AS people",
        "MATCH (p:Entity {kind: 'Place'})-[r1:ASSERTS]->(m:Entity)-[r2:ASSERTS]->(x:Entity) WHERE x.kind = 'Person' "
        "AND {N:p} AND {R:r1} AND {N:m} AND {R:r2} AND {N:x} "
        "RETURN count(*) AS paths, count(DISTINCT x) AS people",
        end_to_end=True,
    ),
    Query(
        "bounded variable length (1..4)",
        "MATCH (e:Entity {id: $entity})-[:ASSERTS*1..4]-(x:Entity) RETURN count(DISTINCT x) AS reach",
        "MATCH p = (e:Entity {id: $entity})-[:ASSERTS*1..4]-(x:Entity) WHERE " + PATH_VISIBLE + " "
        "RETURN count(DISTINCT x) AS reach",
    ),
    Query(
        "OPTIONAL MATCH current facts per person",
        "MATCH (e:Entity) WHERE e.kind = 'Person' "
        "OPTIONAL MATCH (e)<-[:ABOUT]-(f:Fact) WHERE f.validTo IS NULL "
        "RETURN e.id AS id, count(f) AS facts ORDER BY facts DESC, id LIMIT 20",
        "MATCH (e:Entity) WHERE e.kind = 'Person' AND {N:e} "
        "OPTIONAL MATCH (e)<-[ab:ABOUT]-(f:Fact) WHERE f.validTo IS NULL AND {R:ab} AND {N:f} "
        "RETURN e.id AS id, count(f) AS facts ORDER BY facts DESC, id LIMIT 20",
    ),
    Query(
        "EXISTS: tasks failed and never passed",
        "MATCH (t:Task) WHERE EXISTS { MATCH (t)-[:HAS_ATTEMPT]->(a:Attempt) WHERE a.check = 'failed' } "
        "AND NOT EXISTS { MATCH (t)-[:HAS_ATTEMPT]->(b:Attempt) WHERE b.check = 'passed' } "
        "RETURN count(t) AS stuck",
        "MATCH (t:Task) WHERE {N:t} "
        "AND EXISTS { MATCH (t)-[h:HAS_ATTEMPT]->(a:Attempt) WHERE a.check = 'failed' AND {R:h} AND {N:a} } "
        "AND NOT EXISTS { MATCH (t)-[h:HAS_ATTEMPT]->(b:Attempt) WHERE b.check = 'passed' AND {R:h} AND {N:b} } "
        "RETURN count(t) AS stuck",
    ),
    Query(
        "collect one project's facts per kind",
        "MATCH (f:Fact)-[:ABOUT]->(e:Entity) WHERE $layer IN f.layers "
        "RETURN e.kind AS kind, count(*) AS n, collect(f.id) AS facts ORDER BY kind",
        "MATCH (f:Fact)-[ab:ABOUT]->(e:Entity) WHERE $layer IN f.layers AND {N:f} AND {R:ab} AND {N:e} "
        "RETURN e.kind AS kind, count(*) AS n, collect(f.id) AS facts ORDER BY kind",
    ),
    Query(
        "shortestPath between two entities",
        "MATCH (a:Entity {id: $entity}), (b:Entity {id: $entity2}) "
        "MATCH p = shortestPath((a)-[:ASSERTS*..8]-(b)) RETURN length(p) AS hops",
        "MATCH (a:Entity {id: $entity}), (b:Entity {id: $entity2}) WHERE {N:a} AND {N:b} "
        "MATCH p = shortestPath((a)-[:ASSERTS*..8]-(b)) WHERE " + PATH_VISIBLE + " RETURN length(p) AS hops",
    ),
    Query(
        "corrections of an entity's facts (1..3)",
        "MATCH (e:Entity {id: $entity})<-[:ABOUT]-(f:Fact)<-[:SUPERSEDES|CONTRADICTS*1..3]-(c:Fact) "
        "RETURN f.id AS fact, count(DISTINCT c) AS corrections ORDER BY fact",
        "MATCH p = (e:Entity {id: $entity})<-[:ABOUT]-(f:Fact)<-[:SUPERSEDES|CONTRADICTS*1..3]-(c:Fact) "
        "WHERE " + PATH_VISIBLE + " RETURN f.id AS fact, count(DISTINCT c) AS corrections ORDER BY fact",
    ),
)


# --- the server and the load ----------------------------------------------------------------------


def say(message: str) -> None:
    print(f"[scale] {message}", file=sys.stderr, flush=True)


def server_home(line_name: str, size: str) -> Path:
    return state_dir() / f"bench-scale-{line_name}-{size}"


def ready_graph(
    home: Path, line: ServerLine, bolt: int, graph_for: Callable[[], Graph], elements: int
) -> Neo4jConnection:
    """The benchmark's server in ``home``, holding the seeded graph (loaded now unless already there)."""
    marker = home / "bench-graph.json"
    wanted = {"elements": elements, "seed": SEED, "generator": GENERATOR_VERSION}
    if home.exists() and (not marker.exists() or json.loads(marker.read_text(encoding="utf-8")) != wanted):
        say(f"{home} holds another graph: starting afresh")
        neo4j_local.stop_instance(home)
        shutil.rmtree(home)
    home.mkdir(parents=True, exist_ok=True)
    connection = neo4j_local.start_instance(home, bolt=bolt, line=line, conf=SERVER_CONF)
    if not marker.exists():
        load(connection, graph_for())
        marker.write_text(json.dumps(wanted) + "\n", encoding="utf-8")
    return connection


def driver_for(connection: Neo4jConnection) -> Any:
    return neo4j.GraphDatabase.driver(connection.uri, auth=(connection.user, connection.password.get_secret_value()))


def load(connection: Neo4jConnection, graph: Graph) -> None:
    """Into an empty database: schema first (relationships find their endpoints by the id constraints),
    then UNWIND batches of nodes, then of relationships."""
    started = time.monotonic()
    with driver_for(connection) as driver, driver.session() as session:
        for statement in SCHEMA:
            session.run(statement).consume()
        session.run("CALL db.awaitIndexes(300)").consume()
        done, total = 0, graph.node_count() + graph.relationship_count()

        def progress(what: str) -> None:
            elapsed = time.monotonic() - started
            say(f"  {what}: {done:,}/{total:,} elements ({elapsed:.0f} s, {done / max(elapsed, 1e-9):,.0f}/s)")

        for label, rows in graph.nodes.items():
            for i in range(0, len(rows), BATCH):
                batch = [stored(row) for row in rows[i : i + BATCH]]
                session.run(f"UNWIND $rows AS row CREATE (n:{label}) SET n = row", rows=batch).consume()
                done += len(batch)
            progress(label)
        for rel_type, rels in graph.relationships.items():
            start, end = ENDS[rel_type]
            statement = (
                f"UNWIND $rows AS row MATCH (a:{start} {{id: row.s}}) MATCH (b:{end} {{id: row.e}}) "
                f"CREATE (a)-[r:{rel_type}]->(b) SET r = row.p"
            )
            for i in range(0, len(rels), BATCH):
                batch = [{"s": s, "e": e, "p": p} for s, e, p in rels[i : i + BATCH]]
                session.run(statement, rows=batch).consume()
                done += len(batch)
                if (i // BATCH) % 10 == 9:
                    progress(f"{rel_type} …")
            progress(rel_type)
        counted = session.run("MATCH (n) RETURN count(n) AS n").single()
        rels_counted = session.run("MATCH ()-[r]->() RETURN count(r) AS n").single()
        assert counted and rels_counted
        loaded = counted["n"] + rels_counted["n"]
        if loaded != total:
            raise RuntimeError(f"loaded {loaded:,} elements, generated {total:,}")
    say(f"loaded {total:,} elements in {time.monotonic() - started:.0f} s")


# --- measuring ------------------------------------------------------------------------------------


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))]


def normalized(rows: list[list[Any]]) -> list[Any]:
    """Rows compared as a multiset, lists inside a row as sets (collect() has no order)."""

    def value(v: Any) -> Any:
        return sorted(map(str, v)) if isinstance(v, list) else v

    return sorted(json.dumps([value(v) for v in row], default=str) for row in rows)


def run_read(driver: Any, cypher: str, params: dict[str, Any]) -> tuple[list[list[Any]], float]:
    started = time.perf_counter()
    with driver.session(default_access_mode=neo4j.READ_ACCESS) as session:
        rows = session.execute_read(lambda tx: [r.values() for r in tx.run(LANGUAGE + cypher, params)])
    return rows, (time.perf_counter() - started) * 1000


def db_hits(driver: Any, cypher: str, params: dict[str, Any]) -> int:
    with driver.session(default_access_mode=neo4j.READ_ACCESS) as session:
        summary = session.execute_read(lambda tx: tx.run(LANGUAGE + "PROFILE " + cypher, params).consume())

    def total(plan: dict[str, Any]) -> int:
        return int(plan.get("dbHits", 0)) + sum(total(child) for child in plan.get("children", []))

    return total(summary.profile)


def planning_ms(driver: Any, variants: list[Variant], rounds: int) -> dict[str, float]:
    """Median time Neo4j takes to plan each variant (``replan=force EXPLAIN``: no plan cache), taken in turn."""
    samples: dict[str, list[float]] = {v.name: [] for v in variants}
    with driver.session(default_access_mode=neo4j.READ_ACCESS) as session:
        for _ in range(rounds):
            for v in variants:
                started = time.perf_counter()
                session.run(f"{LANGUAGE}replan=force EXPLAIN {v.cypher}", v.params).consume()
                samples[v.name].append((time.perf_counter() - started) * 1000)
    return {name: statistics.median(values) for name, values in samples.items()}


def plans(driver: Any, case: PolicyCase, policy: Policy, agent: dict[str, Any], rounds: int) -> dict[str, Any]:
    """Planning time and text size of every query, unscoped and scoped (narrow, wide): no query runs.

    Every text is planned twice first, uncounted: a freshly started server plans several times
    slower until its JIT has compiled the planner."""
    out: dict[str, Any] = {}
    every = {q.name: variants_for(q, policy, case, q.params(agent)) for q in QUERIES}
    planning_ms(driver, [v for variants in every.values() for v in variants], 2)
    for query in QUERIES:
        variants = every[query.name]
        ms = planning_ms(driver, variants, rounds)
        out[query.name] = {v.name: {"plan_ms": ms[v.name], "chars": len(v.cypher)} for v in variants}
        say(f"  plan {query.name}: " + ", ".join(f"{v.name} {ms[v.name]:.1f} ms" for v in variants))
    return out


@dataclass
class Variant:
    name: str  # unscoped, narrow, wide
    cypher: str
    params: dict[str, Any]


def variants_for(query: Query, policy: Policy, case: PolicyCase, agent: dict[str, Any]) -> list[Variant]:
    """Unscoped, then scoped for the narrow and the wide principal: the text ``scope.plan`` gives."""
    limits = policy.tool(TOOL).limits
    parsed = guard.parse_query(query.cypher, limits, policy.cypher.default_version)
    guard.enforce(parsed, agent, TOOL, policy)
    out = [Variant("unscoped", query.cypher, agent)]
    for name, projects in (("narrow", NARROW), ("wide", WIDE)):
        planned = scope.plan(parsed, policy, TOOL, case.principal(projects))
        out.append(Variant(name, planned.cypher, {**agent, **planned.params}))
    return out


def measure(driver: Any, query: Query, case: PolicyCase, policy: Policy, agent: dict[str, Any], reps: int) -> Any:
    used = query.params(agent)
    try:
        variants = variants_for(query, policy, case, used)
    except GatewayError as exc:
        say(f"  {query.name}: refused ({exc})")
        return {"refused": str(exc)}
    for variant in variants:  # warm the plan cache and the page cache for each
        run_read(driver, variant.cypher, variant.params)
    hits = {v.name: db_hits(driver, v.cypher, v.params) for v in variants}
    times: dict[str, list[float]] = {v.name: [] for v in variants}
    answers: dict[str, list[list[Any]]] = {}
    for rep in range(reps):
        for i in range(len(variants)):
            variant = variants[(rep + i) % len(variants)]
            rows, ms = run_read(driver, variant.cypher, variant.params)
            times[variant.name].append(ms)
            answers[variant.name] = rows
    out: dict[str, Any] = {"cypher": query.cypher, "params": used}
    for variant in variants:
        entry: dict[str, Any] = {
            "db_hits": hits[variant.name], "p50_ms": pct(times[variant.name], 50),
            "p95_ms": pct(times[variant.name], 95), "mean_ms": statistics.fmean(times[variant.name]),
            "rows": len(answers[variant.name]),
        }  # fmt: skip
        if variant.name != "unscoped":
            projects = NARROW if variant.name == "narrow" else WIDE
            oracle_cypher = query.oracle_text(case.oracle)
            oracle_params = {**used, **case.oracle_params(projects)}
            expected, oracle_ms = run_read(driver, oracle_cypher, oracle_params)
            entry["oracle_ok"] = normalized(expected) == normalized(answers[variant.name])
            entry["oracle_rows"] = len(expected)
            entry["oracle_db_hits"] = db_hits(driver, oracle_cypher, oracle_params)
            entry["oracle_ms"] = oracle_ms
            entry["chars"] = len(variant.cypher)
            if not entry["oracle_ok"]:
                say(f"  ORACLE MISMATCH {query.name} ({variant.name}): {len(expected)} rows expected")
        out[variant.name] = entry
    u = out["unscoped"]
    say(
        f"  {query.name}: unscoped {u['db_hits']:,} hits {u['p50_ms']:.1f} ms; "
        + "; ".join(
            f"{n} {out[n]['db_hits']:,} hits {out[n]['p50_ms']:.1f} ms"
            f" ({out[n]['db_hits'] / max(u['db_hits'], 1):.2f}x, {out[n]['p50_ms'] / max(u['p50_ms'], 1e-9):.2f}x)"
            f"{'' if out[n]['oracle_ok'] else ' ORACLE MISMATCH'}"
            for n in ("narrow", "wide")
        )
    )
    return out


def end_to_end(
    connection: Neo4jConnection, driver: Any, case: PolicyCase, policy: Policy, agent: dict[str, Any], n: int
) -> dict[str, Any]:
    """Three queries through the real Gateway for the narrow principal, beside the same scoped query direct."""
    workdir = Path(tempfile.mkdtemp(prefix="cgw-scale-"))
    settings = connection_settings(connection, sandbox_image=images.ensure_sandbox_image(),
                                   audit_path=workdir / "audit.jsonl")  # fmt: skip
    composed = compose(settings, policy=policy)
    runner, gateway = composed.runner, composed.gateway
    assert runner is not None and not composed.problems, composed.problems
    principal = case.principal(NARROW)
    out: dict[str, Any] = {}
    try:
        assert runner.wait_ready(120), runner.available()
        for query in (q for q in QUERIES if q.end_to_end):
            used = query.params(agent)
            scoped = variants_for(query, policy, case, used)[1]
            expected, _ = run_read(driver, query.oracle_text(case.oracle), {**used, **case.oracle_params(NARROW)})
            gateway.run(TOOL, query.cypher, used, principal)  # warm the plan cache through the sandbox
            times: dict[str, list[float]] = {"gateway": [], "direct_scoped": [], "direct_unscoped": []}
            same = True
            for _ in range(n):
                runner.wait_ready(60)  # a warm container waits: measure the warm path
                started = time.perf_counter()
                result = gateway.run(TOOL, query.cypher, used, principal)
                times["gateway"].append((time.perf_counter() - started) * 1000)
                same = same and normalized(result.rows) == normalized(expected)
                times["direct_scoped"].append(run_read(driver, scoped.cypher, scoped.params)[1])
                times["direct_unscoped"].append(run_read(driver, query.cypher, used)[1])
            out[query.name] = {name: {"p50_ms": pct(v, 50), "p95_ms": pct(v, 95)} for name, v in times.items()}
            out[query.name]["oracle_ok"] = same
            g, d = out[query.name]["gateway"]["p50_ms"], out[query.name]["direct_scoped"]["p50_ms"]
            say(f"  end to end {query.name}: gateway {g:.1f} ms, direct scoped {d:.1f} ms, answers {same}")
    finally:
        composed.close()
        shutil.rmtree(workdir, ignore_errors=True)
    return out


def _commit() -> str:
    """The checkout measured (the rewrite's version), for telling runs apart."""
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=BENCH, capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def run_size(
    size: str, line_name: str, port: int, reps: int, e2e_n: int, only: list[str] | None, plan_only: int = 0
) -> dict[str, Any]:
    elements = SIZES[size]
    graph: Graph | None = None

    def graph_for() -> Graph:
        nonlocal graph
        if graph is None:
            say(f"generating {elements:,} elements (seed {SEED}) ...")
            graph = generate(elements, SEED)
        return graph

    home = server_home(line_name, size)
    connection = ready_graph(home, line_for(line_name), port, graph_for, elements)
    agent = parameters(graph_for())
    result: dict[str, Any] = {
        "elements": elements, "seed": SEED, "generator": GENERATOR_VERSION, "neo4j": line_name,
        "counts": graph_for().counts(), "parameters": agent, "reps": reps, "commit": _commit(),
        "cpus": os.cpu_count(), "load_before": os.getloadavg(),
        "policies": {},
    }  # fmt: skip
    try:
        with driver_for(connection) as driver:
            for case in (c for c in POLICIES if not only or c.name in only):
                try:
                    policy = case.load()
                except (ValidationError, ValueError) as exc:
                    reason = str(exc).splitlines()
                    message = f"skipped: the policy model does not accept {case.overlay.name} yet ({reason[0]}: "
                    message += f"{' '.join(reason[1:3]).strip()})"
                    say(f"policy {case.name}: {message}")
                    result["policies"][case.name] = {"skipped": message}
                    continue
                if plan_only:
                    say(f"policy {case.name}, {size}: planning time only, {plan_only} rounds")
                    result["policies"][case.name] = {
                        "plans": plans(driver, case, policy, agent, plan_only), "rounds": plan_only,
                        "commit": _commit(), "load": os.getloadavg(),
                    }  # fmt: skip
                    continue
                say(f"policy {case.name}, {size}: {len(QUERIES)} queries x (unscoped, narrow, wide), {reps} reps")
                queries = {q.name: measure(driver, q, case, policy, agent, reps) for q in QUERIES}
                # Which checkout and how loaded the machine was, per policy: a run of one policy
                # (--policy) is stored beside the others' earlier runs.
                entry: dict[str, Any] = {"queries": queries, "commit": _commit(), "load": os.getloadavg()}
                if e2e_n:
                    entry["end_to_end"] = end_to_end(connection, driver, case, policy, agent, e2e_n)
                result["policies"][case.name] = entry
    finally:
        neo4j_local.stop_instance(home)
    result["load_after"] = os.getloadavg()
    return result


# --- tables ---------------------------------------------------------------------------------------


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "-"


def _plan_table(entries: dict[str, Any]) -> str:
    rows = ["| query | chars unscoped / narrow | plan ms unscoped | narrow (x) | wide (x) |", "|---|---|---|---|---|"]
    for name, q in entries.items():
        u, n, w = q["unscoped"], q["narrow"], q["wide"]
        rows.append(
            f"| {name} | {u['chars']:,} / {n['chars']:,} | {u['plan_ms']:.1f} "
            f"| {n['plan_ms']:.1f} ({_ratio(n['plan_ms'], u['plan_ms'])}) "
            f"| {w['plan_ms']:.1f} ({_ratio(w['plan_ms'], u['plan_ms'])}) |"
        )
    return "\n".join(rows)


def tables(results: dict[str, Any]) -> str:
    """Markdown: per label, size and policy, every query's unscoped and scoped figures and ratios."""
    out: list[str] = []
    for label, sizes in results.get("runs", {}).items():
        for run in sizes.values():
            for policy, entry in run["policies"].items():
                out.append(f"\n**{label}, {run['elements']:,} elements, Neo4j {run['neo4j']}, policy {policy}**\n")
                if "skipped" in entry:
                    out.append(entry["skipped"])
                    continue
                if "plans" in entry:
                    out.append(_plan_table(entry["plans"]))
                    continue
                out.append(
                    "| query | unscoped db hits | p50 ms | narrow db hits (x) | p50 ms (x) | wide db hits (x) "
                    "| p50 ms (x) | oracle |"
                )
                out.append("|---|---|---|---|---|---|---|---|")
                for name, q in entry["queries"].items():
                    if "refused" in q:
                        out.append(f"| {name} | refused: {q['refused']} | | | | | | |")
                        continue
                    u, n, w = q["unscoped"], q["narrow"], q["wide"]
                    cells = [f"{u['db_hits']:,}", f"{u['p50_ms']:.1f}"]
                    for s in (n, w):
                        cells += [
                            f"{s['db_hits']:,} ({_ratio(s['db_hits'], u['db_hits'])})",
                            f"{s['p50_ms']:.1f} ({_ratio(s['p50_ms'], u['p50_ms'])})",
                        ]
                    ok = "ok" if n["oracle_ok"] and w["oracle_ok"] else "**MISMATCH**"
                    out.append(f"| {name} | " + " | ".join(cells) + f" | {ok} |")
                e2e = entry.get("end_to_end")
                if e2e:
                    out.append(
                        "\n| end to end (narrow) | Gateway p50 ms | direct scoped p50 ms | direct unscoped p50 ms |"
                    )
                    out.append("|---|---|---|---|")
                    for name, t in e2e.items():
                        out.append(
                            f"| {name} | {t['gateway']['p50_ms']:.1f} | {t['direct_scoped']['p50_ms']:.1f} "
                            f"| {t['direct_unscoped']['p50_ms']:.1f} |"
                        )
        if {"100k", "1m"} <= set(sizes):
            out.append(f"\n**{label}: growth 100k → 1M** (1M figure / 100k figure)\n")
            out.append("| policy | query | unscoped db hits | unscoped p50 | narrow db hits | narrow p50 | wide p50 |")
            out.append("|---|---|---|---|---|---|---|")
            small, large = sizes["100k"]["policies"], sizes["1m"]["policies"]
            for policy in large:
                if "queries" not in large[policy] or "queries" not in small.get(policy, {}):
                    continue
                for name, q in large[policy]["queries"].items():
                    p = small[policy]["queries"].get(name, {})
                    if "refused" in q or "refused" in p or not p:
                        continue
                    out.append(
                        f"| {policy} | {name} | {_ratio(q['unscoped']['db_hits'], p['unscoped']['db_hits'])} "
                        f"| {_ratio(q['unscoped']['p50_ms'], p['unscoped']['p50_ms'])} "
                        f"| {_ratio(q['narrow']['db_hits'], p['narrow']['db_hits'])} "
                        f"| {_ratio(q['narrow']['p50_ms'], p['narrow']['p50_ms'])} "
                        f"| {_ratio(q['wide']['p50_ms'], p['wide']['p50_ms'])} |"
                    )
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", action="append", choices=sorted(SIZES), help="graph size (repeatable)")
    parser.add_argument("--label", default="before", help="the name these figures are stored under (before, after)")
    parser.add_argument("--version", default="5.26", help="Neo4j release line of the benchmark's server")
    parser.add_argument(
        "--policy", action="append", choices=[c.name for c in POLICIES], help="only this policy (repeatable)"
    )
    parser.add_argument("--port", type=int, help="Bolt port of the benchmark's server (default: 17787 for 5.26)")
    parser.add_argument("--reps", type=int, help="timed repetitions per variant (100k: 15, 1m: 7)")
    parser.add_argument("--e2e", type=int, default=15, help="end-to-end calls per query (0: skip)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="JSON results (merged with what it holds)")
    parser.add_argument("--table", action="store_true", help="print the Markdown tables of --out and exit")
    parser.add_argument(
        "--plan-only", type=int, default=0, metavar="ROUNDS",
        help="measure only Neo4j's planning time (median of ROUNDS replan=force EXPLAIN), stored under the label",
    )  # fmt: skip
    args = parser.parse_args()
    results: dict[str, Any] = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else {}
    if args.table:
        print(tables(results))
        return 0
    line_name = line_for(args.version).name
    for size in args.size or ["100k"]:
        reps = args.reps or (15 if size == "100k" else 7)
        port = args.port or BOLT_PORTS[line_name]
        run = run_size(size, line_name, port, reps, args.e2e, args.policy, args.plan_only)
        # 5.26 (the default line) under the size alone, so before/after and growth read one key.
        key = size if line_name == "5.26" else f"{size}-{line_name}"
        stored = results.setdefault("runs", {}).setdefault(args.label, {})
        if args.policy and key in stored:  # the other policies' figures of this size stay
            stored[key]["policies"].update(run["policies"])
        else:
            stored[key] = run
        args.out.write_text(json.dumps(results, indent=2, default=str) + "\n", encoding="utf-8")
        say(f"results: {args.out} ({args.label}, {key})")
    print(tables(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
