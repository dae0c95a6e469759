"""Query shapes more than one test feeds the scope rewrite."""

from __future__ import annotations

# WHERE clauses built to bind looser than an appended conjunct (OR, XOR, NOT, comments,
# parentheses), and patterns hidden inside expressions, subqueries and comprehensions.
ADVERSARIAL_WHERE: list[str] = [
    "MATCH (a:Fact) WHERE a.x = 1 OR true RETURN a",
    "MATCH (a:Fact) WHERE true XOR a.x = 1 RETURN a",
    "MATCH (a:Fact) WHERE NOT a.x = 1 OR true RETURN a",
    "MATCH (a:Fact) WHERE a.x IS NULL OR true RETURN a",
    "MATCH (a:Fact) WHERE a:Secret OR true RETURN a",
    "MATCH (a:Fact) WHERE a.x IN [1, 2] OR a.y STARTS WITH 'x' RETURN a",
    "MATCH (a:Fact) WHERE CASE WHEN true THEN true END OR true RETURN a",
    "MATCH (a:Fact) WHERE true OR /* c */ true RETURN a",
    "MATCH (a:Fact) WHERE true OR true // comment\nRETURN a",
    "MATCH (a:Fact) WHERE (true) OR (true) RETURN a",
    "MATCH (a:Fact) WHERE true OR a.x =~ '.*' RETURN a",
    "MATCH (a:Fact) WHERE true OR a.x IS :: STRING RETURN a",
    # No whitespace where the rewrite inserts text: it must not fuse with the agent's words.
    "MATCH (a:Fact) WHERE a.x = 1 AND-1 < 1 / a.n RETURN a",
    "MATCH (a:Fact) WHERE a.x = 1 AND 1 / a.n = toInteger('1')AND true RETURN a",
    "MATCH (a:Fact)\n// trailing comment\nRETURN a",
    "MATCH (a:Fact) /* c */ RETURN a",
    "MATCH (a)-->(b) WHERE true OR (a)-->(:Secret) RETURN a",
    "MATCH (a) RETURN [(a)-->(b) WHERE true OR b.x = 1 | b] AS c",
    "MATCH (a) WHERE EXISTS { (a)-->(b) WHERE true OR b.x = 1 } RETURN a",
    "MATCH (a) WHERE COUNT { MATCH (a)-->(b) WHERE true OR false RETURN b } > 0 RETURN a",
    "OPTIONAL MATCH (a)-[r*1..3]-(b) WHERE true OR false RETURN a",
    "MATCH (a:Fact) USING SCAN a:Fact WHERE a.id = 'x' OR true RETURN a",
    # Pattern shapes: parenthesised paths, several parts, nested pattern predicates.
    "MATCH ((a)-->(b)) RETURN a",
    "MATCH (a), (b) WHERE a.x = b.x OR true RETURN a",
    "MATCH (a)-->(b), p = (c) RETURN p",
    "MATCH (a) WHERE ((a)-->()) RETURN a",
    "MATCH (a) WHERE NOT ((a)-->()) OR ((a)<--()) RETURN a",
    "MATCH (a) RETURN [p = (a)-->() | p] AS x",
    "MATCH (a) RETURN COUNT { (a)-->(), (a)<--() } AS c",
    "MATCH (a) RETURN EXISTS { (a)-->() } AS c",
    "MATCH (a)((x)-->(y)){1,2}(b) RETURN b",
    "OPTIONAL MATCH ((a)-->(b)){1,2} RETURN a",
    "MATCH (a {x: COUNT { (a)-->() }}) RETURN a",
    "MATCH (a)-[r {w: [(a)-->(z) | z.id][0]}]->(b) RETURN b",
    "MATCH (a) RETURN a {.id, out: [(a)-->(b) | b.id]} AS m",
    "MATCH (a) RETURN CASE WHEN (a)-->() THEN 1 ELSE 0 END AS c",
    "MATCH (a) WITH a WHERE (a)-->() OR true RETURN a",
    "MATCH (a) CALL (a) { MATCH (a)-->(b) WHERE (b.x) OR (true) RETURN b } RETURN b",
    "MATCH (a) RETURN COLLECT { MATCH (a)-->(b) RETURN b UNION MATCH (a)<--(b) RETURN b } AS c",
]
