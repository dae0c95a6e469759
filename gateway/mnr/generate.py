"""Read queries for the prover, generated from a graph's real schema and a seed.

``Schema.of(graph, policy)`` lists the labels, relationship types (with the labels at their
ends), property keys and sample values the graph holds, leaving out what the policy hides
(a query naming a hidden property is refused, so it would never count). ``Generator`` draws
queries from it: 1-3 hop patterns, variable-length paths, shortestPath, OPTIONAL MATCH,
EXISTS and COUNT subqueries, pattern comprehensions, aggregates, UNION, CALL subqueries,
WITH stages and conditions that can raise (a division, a conversion, ``size`` of a value
that may have another type). ``suite_queries`` adds the user's own MNR cases and simple
mutants of them. The same seed gives the same queries.

A query is kept as clauses with their WHERE conjuncts apart, so ``shrink.py`` can drop
either while a difference remains. Row order is never compared (rows are multisets);
``LIMIT`` appears only after an ``ORDER BY`` of every returned column, which makes the rows
it keeps a function of the graph.
"""

from __future__ import annotations

import itertools
import json
import random
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gateway.mnr.cases import Suite
from gateway.mnr.runner import shown_path
from gateway.mnr.visible_copy import Graph
from gateway.policy import Policy, ToolName
from sandbox.withhold import Owners

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SAMPLES_PER_KEY = 6
MAX_STRING = 60


def name(text: str) -> str:
    return text if _IDENTIFIER.fullmatch(text) and not text.startswith("__") else "`" + text.replace("`", "``") + "`"


def literal(value: Any) -> str | None:
    """A Cypher literal for a sampled value, or None when it has none (temporal, spatial, bytes)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if value == value and abs(value) != float("inf") else None
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, list):
        parts = [literal(v) for v in value]
        return None if any(p is None for p in parts) else "[" + ", ".join(p for p in parts if p is not None) + "]"
    return None


@dataclass(frozen=True)
class Clause:
    """One clause: its text, the WHERE conjuncts that follow it, and the text after them."""

    head: str
    where: tuple[str, ...] = ()
    tail: str = ""
    # The first clause and the RETURN carry the query; the others may be dropped when shrinking.
    droppable: bool = True

    def text(self) -> str:
        out = self.head
        if self.where:
            out += " WHERE " + " AND ".join(self.where)
        return out + (" " + self.tail if self.tail else "")


@dataclass(frozen=True)
class Query:
    """One query: its clauses, the parameters it is sent with, where it came from."""

    clauses: tuple[Clause, ...]
    params: dict[str, Any] = field(default_factory=dict)
    origin: str = "generated"
    # False when the rows it keeps depend on an order nothing fixes (a user's LIMIT without ORDER BY):
    # then only the row count is compared.
    rows_determined: bool = True

    def text(self) -> str:
        return " ".join(c.text() for c in self.clauses)

    def key(self) -> str:
        return self.text() + " " + json.dumps(self.params, sort_keys=True, default=str)


@dataclass
class Schema:
    """What the graph holds, as the generator draws from it."""

    labels: list[str]
    types: list[tuple[str, str, str]]  # (start label, type, end label)
    keys: dict[str, list[str]]  # label or type -> property keys
    values: dict[tuple[str, str], list[Any]]  # (label or type, key) -> sampled values
    strings: list[str]

    @classmethod
    def of(cls, graph: Graph, policy: Policy) -> Schema:
        withholding = policy.withholding()
        keys: dict[str, set[str]] = {}
        values: dict[tuple[str, str], set[str]] = {}
        raw: dict[str, Any] = {}
        strings: set[str] = set()
        elements = [Owners("node", n.labels) for n in graph.nodes.values()]
        elements += [Owners("relationship", frozenset({r.type})) for r in graph.rels.values()]
        all_props = [n.properties for n in graph.nodes.values()] + [r.properties for r in graph.rels.values()]
        for element, every in zip(elements, all_props, strict=True):
            # Only the keys the element shows (the sandbox's reading, allow-list or deny-list).
            props = withholding.split(element, every)[0]
            for owner in element.names:
                for key, value in props.items():
                    keys.setdefault(owner, set()).add(key)
                    text = literal(value)
                    if text is not None and len(text) <= MAX_STRING:
                        values.setdefault((owner, key), set()).add(text)
                        raw[text] = value
                        if isinstance(value, str):
                            strings.add(value)
        types: set[tuple[str, str, str]] = set()
        for rel in graph.rels.values():
            for a in graph.nodes[rel.start].labels or {""}:
                for b in graph.nodes[rel.end].labels or {""}:
                    types.add((a, rel.type, b))
        return cls(
            labels=sorted({label for n in graph.nodes.values() for label in n.labels}),
            types=sorted(types),
            keys={owner: sorted(ks) for owner, ks in sorted(keys.items())},
            values={k: [raw[t] for t in sorted(v)[:SAMPLES_PER_KEY]] for k, v in sorted(values.items())},
            strings=sorted(strings),
        )


class Generator:
    """Deterministic queries over one schema; ``required`` parameters are referenced and supplied."""

    def __init__(self, schema: Schema, seed: int, required: Sequence[str] = (), params: dict[str, Any] | None = None):
        self.schema = schema
        self.rng = random.Random(seed)
        self.required = tuple(required)
        self.params = dict(params or {})
        self.shapes = [
            self._node, self._hops, self._hops, self._var_length, self._shortest, self._optional,
            self._exists, self._count_subquery, self._comprehension, self._aggregate, self._union,
            self._call, self._with_stage, self._untyped, self._ordered,
        ]  # fmt: skip

    def queries(self, n: int) -> Iterable[Query]:
        return itertools.islice(self.stream(), n)

    def stream(self) -> Iterator[Query]:
        """Queries without end (the same seed, the same sequence); repeats are the caller's to skip."""
        while True:
            query = self.rng.choice(self.shapes)()
            yield self._with_required(query)

    # ---- pieces -------------------------------------------------------------------------------

    def _label(self) -> str:
        return self.rng.choice(self.schema.labels) if self.schema.labels else "Missing"

    def _edge(self) -> tuple[str, str, str]:
        if not self.schema.types:
            return (self._label(), "MISSING", self._label())
        return self.rng.choice(self.schema.types)

    def _key(self, owner: str) -> str | None:
        keys = self.schema.keys.get(owner)
        return self.rng.choice(keys) if keys else None

    def _value(self, owner: str, key: str) -> str:
        values = self.schema.values.get((owner, key))
        if values and self.rng.random() < 0.85:
            text = literal(self.rng.choice(values))
            if text is not None:
                return text
        return (literal(self.rng.choice(self.schema.strings)) if self.schema.strings else None) or "'x'"

    def _pattern_node(self, var: str, label: str | None) -> str:
        if not label or self.rng.random() < 0.15:
            return f"({var})"
        return f"({var}:{name(label)})"

    def _rel(self, var: str, rel_type: str, *, forward: bool = True) -> str:
        typed = f":{name(rel_type)}" if rel_type and self.rng.random() < 0.85 else ""
        inner = f"[{var}{typed}]" if var or typed else ""
        direction = self.rng.random()
        if direction < 0.2:
            return f"-{inner}-"
        return f"-{inner}->" if forward else f"<-{inner}-"

    def _predicate(self, var: str, owner: str) -> str | None:
        """A condition on ``var``: a comparison, a null test, or one that can raise on some values."""
        key = self._key(owner)
        if key is None:
            return None
        prop = f"{var}.{name(key)}"
        value = self._value(owner, key)
        choice = self.rng.randrange(12)
        return [
            f"{prop} = {value}",
            f"{prop} <> {value}",
            f"{prop} IS NULL",
            f"{prop} IS NOT NULL",
            f"{prop} IN [{value}, {self._value(owner, key)}]",
            f"toString({prop}) STARTS WITH {literal(str(self.rng.choice(self.schema.strings or ['a']))[:2])}",
            f"{prop} > {value}",
            f"size({prop}) > {self.rng.randrange(3)}",  # raises on a number or a boolean
            f"1 / (size(toString({prop})) - {self.rng.randrange(1, 12)}) >= 0",  # raises on a division by zero
            f"toInteger({prop}) > {self.rng.randrange(3)}",  # raises on a list or a map
            f"NOT {prop} CONTAINS 'a'",  # null on a non-string
            f"{prop} =~ '.*{self.rng.choice('aeiou')}.*'",
        ][choice]

    def _where(self, pairs: Sequence[tuple[str, str]], chance: float = 0.6) -> tuple[str, ...]:
        out: list[str] = []
        for var, owner in pairs:
            while self.rng.random() < chance and len(out) < 3:
                predicate = self._predicate(var, owner)
                if predicate is None:
                    break
                out.append(predicate)
                chance /= 2
        return tuple(out)

    def _projection(self, var: str, owner: str) -> str:
        key = self._key(owner)
        options = [var, f"labels({var})" if owner in self.schema.labels else f"type({var})"]
        if key:
            options += [f"{var}.{name(key)}", f"{var}.{name(key)}", f"toString({var}.{name(key)})"]
        return self.rng.choice(options)

    def _returns(self, items: Sequence[tuple[str, str]]) -> Clause:
        """RETURN of plain projections or of an aggregate over them."""
        projections = [f"{self._projection(v, o)} AS c{i}" for i, (v, o) in enumerate(items)]
        kind = self.rng.randrange(6)
        if kind == 0:
            return Clause("RETURN count(*) AS n", droppable=False)
        if kind == 1:
            var, owner = items[-1]
            agg = self.rng.choice(["count", "collect", "min", "max", "count"])
            key = self._key(owner)
            if not key and agg in ("min", "max"):
                # Neo4j orders nodes and relationships by their ids, which the visible copy does not keep.
                agg = "count"
            target = f"{var}.{name(key)}" if key and agg != "count" else var
            distinct = "DISTINCT " if self.rng.random() < 0.3 else ""
            group = projections[:1] if len(projections) > 1 else []
            return Clause("RETURN " + ", ".join([*group, f"{agg}({distinct}{target}) AS agg"]), droppable=False)
        distinct = "DISTINCT " if self.rng.random() < 0.25 else ""
        return Clause("RETURN " + distinct + ", ".join(projections), droppable=False)

    # ---- shapes -------------------------------------------------------------------------------

    def _node(self) -> Query:
        label = self._label()
        return Query(
            (
                Clause(f"MATCH {self._pattern_node('a', label)}", self._where([("a", label)]), droppable=False),
                self._returns([("a", label)]),
            )
        )

    def _hops(self) -> Query:
        hops = self.rng.randint(1, 3)
        start, rel_type, end = self._edge()
        text = self._pattern_node("a", start)
        pairs = [("a", start)]
        owner = start
        for i in range(hops):
            candidates = [t for t in self.schema.types if t[0] == owner] or self.schema.types
            if i > 0 and candidates:
                start, rel_type, end = self.rng.choice(candidates)
            var = f"b{i}"
            rel = f"r{i}"
            text += self._rel(rel, rel_type) + self._pattern_node(var, end)
            pairs += [(rel, rel_type), (var, end)]
            owner = end
        where = self._where(pairs, 0.5)
        returned = [pairs[0], self.rng.choice(pairs[1:])]
        return Query((Clause(f"MATCH {text}", where, droppable=False), self._returns(returned)))

    def _var_length(self) -> Query:
        start, rel_type, _ = self._edge()
        low, high = self.rng.choice([(1, 2), (1, 3), (2, 3), (0, 2)])
        typed = f":{name(rel_type)}" if self.rng.random() < 0.6 else ""
        arrow = self.rng.choice(["-", "->"])
        text = f"MATCH p = {self._pattern_node('a', start)}-[{typed}*{low}..{high}]{arrow}(b)"
        where = self._where([("a", start)], 0.5)
        ret = self.rng.choice(
            ["RETURN length(p) AS len, count(*) AS n", "RETURN b AS b", "RETURN [x IN nodes(p) | labels(x)] AS ls",
             "RETURN count(DISTINCT b) AS n", "RETURN size(relationships(p)) AS len"]
        )  # fmt: skip
        return Query((Clause(text, where, droppable=False), Clause(ret, droppable=False)))

    def _shortest(self) -> Query:
        a, b = self._label(), self._label()
        match = Clause(
            f"MATCH {self._pattern_node('a', a)}, {self._pattern_node('b', b)}",
            self._where([("a", a), ("b", b)], 0.9),
            droppable=False,
        )
        kind = self.rng.choice(["shortestPath", "allShortestPaths"])
        path = Clause(f"MATCH p = {kind}((a)-[*..4]-(b))", ("a <> b",))
        ret = self.rng.choice(
            [
                "RETURN length(p) AS len, count(*) AS n",
                "RETURN a AS a, b AS b, length(p) AS len",
                "RETURN [x IN nodes(p) | labels(x)] AS ls",
            ]
        )
        return Query((match, path, Clause(ret, droppable=False)))

    def _optional(self) -> Query:
        start, rel_type, end = self._edge()
        first = Clause(f"MATCH {self._pattern_node('a', start)}", self._where([("a", start)]), droppable=False)
        opt = Clause(
            f"OPTIONAL MATCH (a){self._rel('r', rel_type)}{self._pattern_node('b', end)}",
            self._where([("b", end)], 0.4),
        )
        ret = self.rng.choice(
            [
                f"RETURN {self._projection('a', start)} AS a, count(b) AS n",
                f"RETURN {self._projection('b', end)} AS b",
                "RETURN count(r) AS n, count(DISTINCT a) AS m",
            ]
        )
        return Query((first, opt, Clause(ret, droppable=False)))

    def _exists(self) -> Query:
        start, rel_type, end = self._edge()
        inner = f"(a){self._rel('', rel_type)}{self._pattern_node('', end)}"
        negation = "NOT " if self.rng.random() < 0.3 else ""
        where = (f"{negation}EXISTS {{ MATCH {inner} }}", *self._where([("a", start)], 0.4))
        return Query(
            (Clause(f"MATCH {self._pattern_node('a', start)}", where, droppable=False), self._returns([("a", start)]))
        )

    def _count_subquery(self) -> Query:
        start, rel_type, end = self._edge()
        inner = f"(a){self._rel('', rel_type)}{self._pattern_node('x', end)}"
        cond = self._predicate("x", end)
        body = f"MATCH {inner}" + (f" WHERE {cond}" if cond and self.rng.random() < 0.5 else "")
        first = Clause(f"MATCH {self._pattern_node('a', start)}", self._where([("a", start)], 0.4), droppable=False)
        ret = Clause(f"RETURN {self._projection('a', start)} AS a, COUNT {{ {body} }} AS n", droppable=False)
        return Query((first, ret))

    def _comprehension(self) -> Query:
        start, rel_type, end = self._edge()
        key = self._key(end)
        value = f"x.{name(key)}" if key else "labels(x)"
        cond = self._predicate("x", end)
        where = f" WHERE {cond}" if cond and self.rng.random() < 0.5 else ""
        first = Clause(f"MATCH {self._pattern_node('a', start)}", self._where([("a", start)], 0.4), droppable=False)
        comp = f"[(a){self._rel('', rel_type)}{self._pattern_node('x', end)}{where} | {value}]"
        ret = self.rng.choice(
            [
                f"RETURN {comp} AS xs",
                f"RETURN size({comp}) AS n",
                f"RETURN {self._projection('a', start)} AS a, {comp} AS xs",
            ]
        )
        return Query((first, Clause(ret, droppable=False)))

    def _aggregate(self) -> Query:
        start, rel_type, end = self._edge()
        key = self._key(end) or "x"
        match = Clause(
            f"MATCH {self._pattern_node('a', start)}{self._rel('r', rel_type)}{self._pattern_node('b', end)}",
            self._where([("a", start), ("b", end)], 0.4),
            droppable=False,
        )
        agg = self.rng.choice(
            [
                f"count(b.{name(key)})",
                f"collect(DISTINCT b.{name(key)})",
                f"min(b.{name(key)})",
                f"max(toString(b.{name(key)}))",
                "count(DISTINCT b)",
                "sum(size(toString(b." + name(key) + ")))",
            ]
        )
        group = self.rng.choice(["", f"{self._projection('a', start)} AS g, ", "type(r) AS t, "])
        return Query((match, Clause(f"RETURN {group}{agg} AS v", droppable=False)))

    def _union(self) -> Query:
        a, b = self._label(), self._label()
        ka, kb = self._key(a), self._key(b)
        va = f"a.{name(ka)}" if ka else "labels(a)"
        vb = f"b.{name(kb)}" if kb else "labels(b)"
        kind = self.rng.choice(["UNION", "UNION ALL"])
        first = Clause(f"MATCH {self._pattern_node('a', a)}", self._where([("a", a)], 0.5), droppable=False)
        second = Clause(f"RETURN {va} AS v {kind} MATCH {self._pattern_node('b', b)}", self._where([("b", b)], 0.5))
        return Query((first, replace(second, droppable=False), Clause(f"RETURN {vb} AS v", droppable=False)))

    def _call(self) -> Query:
        start, rel_type, end = self._edge()
        first = Clause(f"MATCH {self._pattern_node('a', start)}", self._where([("a", start)], 0.5), droppable=False)
        cond = self._predicate("b", end)
        inner = f"WITH a MATCH (a){self._rel('', rel_type)}{self._pattern_node('b', end)}" + (
            f" WHERE {cond}" if cond and self.rng.random() < 0.5 else ""
        )
        agg = self.rng.choice(["count(b) AS n", "collect(labels(b)) AS n"])
        call = Clause(f"CALL {{ {inner} RETURN {agg} }}")
        ret = Clause(
            self.rng.choice([f"RETURN {self._projection('a', start)} AS a, n", "RETURN n, count(*) AS k"]),
            droppable=False,
        )
        return Query((first, call, ret))

    def _with_stage(self) -> Query:
        start, rel_type, end = self._edge()
        match = Clause(
            f"MATCH {self._pattern_node('a', start)}{self._rel('r', rel_type)}{self._pattern_node('b', end)}",
            self._where([("a", start), ("r", rel_type)], 0.4),
            droppable=False,
        )
        stage = Clause("WITH b, count(a) AS c", (f"c >= {self.rng.randrange(1, 3)}",), droppable=False)
        ret = Clause(f"RETURN {self._projection('b', end)} AS b, c", droppable=False)
        return Query((match, stage, ret))

    def _untyped(self) -> Query:
        return Query((Clause(self.rng.choice([
            "MATCH (n) RETURN labels(n) AS l, count(*) AS n",
            "MATCH ()-[r]->() RETURN type(r) AS t, count(*) AS n",
            "MATCH (n) WHERE size(labels(n)) > 1 RETURN labels(n) AS l",
            "MATCH (a)-[r]-(b) RETURN count(*) AS n",
            "MATCH (n) RETURN count(n) AS n",
            "MATCH (n)-[r]->() RETURN labels(n) AS l, type(r) AS t, count(*) AS n",
        ]), droppable=False),))  # fmt: skip

    def _ordered(self) -> Query:
        label = self._label()
        key = self._key(label)
        value = f"toString(a.{name(key)})" if key else "toString(labels(a))"
        first = Clause(f"MATCH {self._pattern_node('a', label)}", self._where([("a", label)], 0.5), droppable=False)
        order = self.rng.choice(["", " DESC"])
        return Query(
            (first, Clause(f"RETURN {value} AS v ORDER BY v{order} LIMIT {self.rng.randint(1, 4)}", droppable=False))
        )

    def _with_required(self, query: Query) -> Query:
        """A tool that requires parameters gets them referenced (a WITH in front) and supplied."""
        if not self.required:
            return query
        refs = ", ".join(f"${p} AS {name('req_' + p)}" for p in self.required)
        front = Clause(f"WITH {refs}", droppable=False)
        return replace(query, clauses=(front, *query.clauses), params=dict(self.params))


# ---- the user's own suites ---------------------------------------------------------------------

_STRING = re.compile(r"'(?:[^'\\]|\\.)*'")
_LIMIT = re.compile(r"\b(LIMIT|SKIP)\b", re.IGNORECASE)
_ORDER = re.compile(r"\bORDER\s+BY\b", re.IGNORECASE)


def suite_queries(suites: Iterable[Suite], schema: Schema, tool: ToolName, seed: int) -> list[Query]:
    """The MNR cases' queries for ``tool`` (their own parameters), and a few mutants of each."""
    rng = random.Random(seed)
    out: list[Query] = []
    for suite in suites:
        for case in suite.cases:
            resolved = suite.resolved(case)
            if resolved.tool != tool or case.layers is not None:
                continue
            text = case.query.strip().rstrip(";")
            origin = f"{shown_path(suite.source)}::{case.id}"
            for variant, how in [(text, "case"), *_mutants(text, schema, rng)]:
                determined = _LIMIT.search(variant) is None
                out.append(
                    Query((Clause(variant, droppable=False),), dict(resolved.params), f"{origin} ({how})", determined)
                )
    return out


def _mutants(text: str, schema: Schema, rng: random.Random) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    strings = _STRING.findall(text)
    if strings and schema.strings:
        target = rng.choice(strings)
        replacement = literal(rng.choice(schema.strings)) or "'x'"
        out.append((text.replace(target, replacement, 1), "other value"))
    labels = [m for m in re.finditer(r":([A-Z][A-Za-z0-9_]*)", text)]
    if labels and schema.labels:
        found = rng.choice(labels)
        other = rng.choice(schema.labels)
        out.append((text[: found.start(1)] + name(other) + text[found.end(1) :], "other label"))
    returns = [m.start() for m in re.finditer(r"\bRETURN\b", text)]
    if len(returns) == 1 and "UNION" not in text.upper():
        out.append((text[: returns[0]] + "RETURN count(*) AS n", "count"))
    if _ORDER.search(text) is None and _LIMIT.search(text):
        out.append((re.sub(r"\s+(LIMIT|SKIP)\s+\S+", "", text, flags=re.IGNORECASE), "no limit"))
    return out
