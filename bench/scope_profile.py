"""What the scope rewrite costs Neo4j on a grouping aggregate: unscoped, a previous rewrite, this one.

Seeds a Mentis-like history graph under labels of its own (Repository <-IN- Task <-OF- Attempt,
``layers`` on every element, one project per repository), runs the agent's query unscoped and
as each rewrite writes it, and reports Neo4j's PROFILE db hits and the median wall time of
interleaved plain runs; then removes the graph. Every scoped variant must answer the same rows
(the check fails the run otherwise).

    .venv/bin/python bench/scope_profile.py [--old-root DIR] [--rounds 7] [--attempts 25]

``--old-root`` names a checkout of an earlier gateway (``git archive main | tar -x -C DIR``):
its ``scope.plan`` writes the "old" variant. The Neo4j is the managed local one of the
selected line (``CYPHER_GATEWAY_NEO4J_VERSION``), or ``NEO4J_URI`` & co.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from gateway import guard, scope  # noqa: E402
from gateway.domain import Principal  # noqa: E402
from gateway.ops import neo4j_local  # noqa: E402
from gateway.policy import load_policy  # noqa: E402

REPOSITORIES, TASKS_PER_REPOSITORY, PROJECTS = 50, 40, 10
QUERY = (
    "MATCH (r:{repo})<-[:IN]-(t:{task})<-[:OF]-(a:{attempt}) "
    "RETURN r.name AS repository, a.status AS status, count(*) AS attempts ORDER BY repository, status"
)
SCOPES = {"narrow": ["project-0"], "wide": [f"project-{i}" for i in range(PROJECTS)]}

_PLAN = """
import json, sys
from gateway import guard, scope
from gateway.domain import Principal
from gateway.policy import load_policy
policy = load_policy().model_copy(update={"visible_properties": None})
decision = guard.check(sys.argv[1], {}, "analyze", policy)
print(json.dumps(scope.plan(decision.parsed, policy, "analyze", Principal(name="bench")).cypher))
"""


def rewritten(query: str, root: Path | None) -> str:
    if root is None:
        # The default policy without its property list: the queries read the keys their graph has.
        policy = load_policy().model_copy(update={"visible_properties": None})
        decision = guard.check(query, {}, "analyze", policy)
        assert decision.allowed and decision.parsed is not None, decision.reason
        return scope.plan(decision.parsed, policy, "analyze", Principal(name="bench")).cypher
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, "-c", _PLAN, query], cwd=root, env=env, capture_output=True, check=True)
    return str(json.loads(out.stdout))


def db_hits(plan: Any) -> int:
    total, stack = 0, [plan]
    while stack:
        node = stack.pop()
        total += int(node.get("dbHits", 0))
        stack.extend(node.get("children", []))
    return total


def seed(session: Any, labels: dict[str, str], attempts: int) -> int:
    session.run(
        f"UNWIND range(0, $repos - 1) AS i CREATE (:{labels['repo']}:{labels['marker']} "
        "{name: 'repo-' + i, layers: ['project-' + (i % $projects)]})",
        repos=REPOSITORIES, projects=PROJECTS,
    ).consume()  # fmt: skip
    session.run(
        f"MATCH (r:{labels['repo']}) UNWIND range(1, $tasks) AS j "
        f"CREATE (r)<-[:IN {{layers: []}}]-(:{labels['task']}:{labels['marker']} "
        "{id: r.name + '/' + j, layers: r.layers})",
        tasks=TASKS_PER_REPOSITORY,
    ).consume()
    session.run(
        f"MATCH (t:{labels['task']}) CALL (t) {{ UNWIND range(1, $attempts) AS k "
        f"CREATE (t)<-[:OF {{layers: []}}]-(:{labels['attempt']}:{labels['marker']} "
        "{n: k, status: ['passed', 'failed', 'unverified'][k % 3], layers: t.layers}) } IN TRANSACTIONS OF 10 ROWS",
        attempts=attempts,
    ).consume()
    record = session.run(f"MATCH (n:{labels['marker']}) RETURN count(n) AS c").single()
    return int(record["c"]) if record else 0


def drop(session: Any, marker: str) -> None:
    session.run(f"MATCH (n:{marker}) CALL (n) {{ DETACH DELETE n }} IN TRANSACTIONS OF 300 ROWS").consume()


def measure(session: Any, variants: dict[str, str], params: dict[str, Any], rounds: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    rows: dict[str, Any] = {}
    for name, text in variants.items():
        result = session.run("PROFILE " + text, params)
        rows[name] = [r.values() for r in result]
        out[name] = {"db_hits": db_hits(result.consume().profile), "ms": []}
    for _ in range(rounds):  # interleaved, so drift on a shared machine hits every variant alike
        for name, text in variants.items():
            started = time.perf_counter()
            session.run(text, params).consume()
            out[name]["ms"].append((time.perf_counter() - started) * 1000)
    for name in variants:
        out[name]["ms"] = round(statistics.median(out[name]["ms"]), 1)
        out[name]["rows"] = len(rows[name])
    scoped = {name: value for name, value in rows.items() if name != "unscoped"}
    assert len({json.dumps(v, default=str) for v in scoped.values()}) == 1, "the rewrites answer differently"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old-root", type=Path, default=None)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--attempts", type=int, default=25, help="attempts per task")
    args = parser.parse_args()
    import neo4j

    suffix = uuid.uuid4().hex[:6]
    labels = {k: f"Bench{k.title()}{suffix}" for k in ("repo", "task", "attempt", "marker")}
    query = QUERY.format(**labels)
    variants = {"unscoped": query}
    if args.old_root is not None:
        variants["old rewrite"] = rewritten(query, args.old_root)
    variants["per-element rewrite"] = rewritten(query, None)
    connection = neo4j_local.resolve(start_managed=False)
    auth = (connection.user, connection.password.get_secret_value())
    report: dict[str, Any] = {"query": query, "neo4j": connection.uri}
    with neo4j.GraphDatabase.driver(connection.uri, auth=auth) as driver, driver.session(database="neo4j") as session:
        try:
            report["nodes"] = seed(session, labels, args.attempts)
            for scope_name, layers in SCOPES.items():
                report[scope_name] = measure(session, variants, {"__gw_scope": layers}, args.rounds)
        finally:
            drop(session, labels["marker"])
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
