"""What one evaluation of each expression can build and how long it can iterate, before anything runs.

Neo4j stops *operator* work (MATCH, UNWIND, aggregation, sorting) at the
transaction timeout, and its memory tracker sees what operators hold
(``collect()``, DISTINCT, ORDER BY). It stops neither inside an *expression*:
a list comprehension, ``reduce``, a quantifier, string building or a regular
expression runs to its end, or until the heap is gone, whatever the timeout
says, and what it builds is not tracked. So the guard bounds expression work
itself, statically, with the sizes the query's text and parameters give it:

* every value an expression builds gets an upper bound on its length, its leaf
  elements (flattened, shared references counted each time) and its characters;
* every evaluation of an expression gets an upper bound on its iteration steps
  (a comprehension's steps times its body's, plus the linear passes of ``IN``,
  list functions and regular expressions);
* sizes known before the query runs (literals, parameters, arithmetic on them,
  ``size()`` of such values) are exact; sizes that only the data decides are
  written with a symbol ``D`` (see ``gateway.guard.bounds``).

The rule for data-dependent sizes: a query may do a bounded amount of work and
build a bounded amount of value **per element** of a data-sized list
(``limits.max_data_factor``), never an amount that grows with the square of the
data (iterating a collected list inside an iteration over a collected list, a
collected list inside each element of another). Values read from the database
for the element at hand (``x.name`` while iterating ``x``) are paid for by the
list being iterated: the gateway bounds what a query multiplies, not what the
database holds. ``range()`` bounds must be known before the query runs or be
``size()``/``length()`` of a bounded value: an integer read from the data could
be a timestamp.

:func:`measure` returns every objection found, each with its rule; the rules in
``gateway.guard.rules`` report the first of their kind. Every expression node
of the tree must be reached by the walk, or the query is refused
(``size.iterations``, naming the construct): a construct added to the parser
later is refused until this module bounds it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gateway import catalogue
from gateway.cypher import ParsedQuery, ast
from gateway.guard import regex
from gateway.guard.bounds import (
    BOOLEAN,
    DATA,
    ENTITY,
    NULL,
    NUMBER,
    ONE,
    SCALAR,
    STORED,
    ZERO,
    Bound,
    Reads,
    Shape,
    join,
    own,
    union,
)
from gateway.policy import Limits

_QUANTITY = {"length": "length", "elements": "element count", "chars": "characters"}
# A list or map held in a list or map costs this many elements besides its entries: its own
# memory (an empty map or list holds about as much as eight integers). Per element of a data-sized
# list that is more than limits.max_data_factor allows: build such values with collect(), which
# Neo4j's memory limit sees.
CONTAINER = Bound.of(8)
# Reduces analysed inside each other's step: deeper nesting is refused rather than bounded.
MAX_REDUCE_DEPTH = 4
# Exact strings longer than this are only measured, not kept (a replace() search string is short).
_EXACT_STRING_LIMIT = 1_000
_INT64 = 2**63
# Characters compared or copied per iteration step. Measured on Neo4j 5.26 (two busy cores): one
# step of a comprehension ~60 ns, a character of String search (CONTAINS, replace(), split()) ~0.14 ns,
# of a string copy ~0.19 ns: 300-450 characters per step. 64 keeps a safety factor of five.
CHARS_PER_STEP = 64
_BOOLEAN_OPS = ("AND", "OR", "XOR")

Env = dict[str, Shape]


@dataclass(frozen=True)
class Objection:
    """One size rule's objection: the rule and the sentence that says what and how much."""

    rule: catalogue.Rule
    reason: str


@dataclass
class SizeReport:
    objections: list[Objection] = field(default_factory=list)

    def first(self, rule: catalogue.Rule) -> str | None:
        for objection in self.objections:
            if objection.rule is rule:
                return objection.reason
        return None


@dataclass(frozen=True)
class Cost:
    """Iteration steps of one evaluation; ``reads``: the variables whose stored lists its data-sized part iterates."""

    steps: Bound = ZERO
    reads: Reads = frozenset()

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.steps + other.steps, union(self.reads, other.reads))


FREE = Cost()


@dataclass
class _Pending:
    """A limit check whose bound may still name a reduce's accumulator (resolved when that reduce is)."""

    rule: catalogue.Rule
    bound: Bound
    limit: int
    what: str
    per_data: tuple[int, str]  # the limit per element of a data-sized list, and the setting's name


def measure(parsed: ParsedQuery, params: Mapping[str, Any], limits: Limits) -> SizeReport:
    """Every size objection to ``parsed`` with ``params``, under ``limits``."""
    analysis = _Analysis(parsed, params, limits)
    for statement in parsed.statements:
        analysis.query_body(statement.body, {})
    analysis.finish()
    return analysis.report


def _describe(bound: Bound) -> str:
    return bound.describe()


class _Analysis:
    def __init__(self, parsed: ParsedQuery, params: Mapping[str, Any], limits: Limits) -> None:
        self.parsed = parsed
        self.params = params
        self.limits = limits
        self.report = SizeReport()
        self.pending: list[_Pending] = []
        self.reduce_depth = 0
        self.seen: set[int] = set()
        self._param_shapes: dict[str, Shape] = {}
        self.chains: set[int] = set()  # boolean operators already counted in a longer chain

    # --- objections ------------------------------------------------------------------------------

    def object(self, rule: catalogue.Rule, reason: str) -> None:
        self.report.objections.append(Objection(rule, reason))

    def text(self, node: ast.Node, width: int = 80) -> str:
        source = " ".join(self.parsed.source(node).split())
        return source if len(source) <= width else source[: width - 1] + "…"

    def limit(
        self, rule: catalogue.Rule, bound: Bound, limit: int, what: str, per_data: tuple[int, str] | None = None
    ) -> None:
        """Check ``bound`` against ``limit`` (static) and the data rule; later if it names an accumulator."""
        per = per_data or (self.limits.max_data_factor, "limits.max_data_factor")
        self.pending.append(_Pending(rule, bound, limit, what, per))

    def _judge(self, item: _Pending) -> None:
        bound, limit, (factor, setting) = item.bound, item.limit, item.per_data
        if bound.data(2) > 0 or bound.data_degree >= 2:
            self.object(item.rule, f"{item.what} grows with the square of the data ({_describe(bound)})")
        elif bound.static > limit:
            self.object(item.rule, f"{item.what} reaches {bound.static:,}; the limit is {limit:,}")
        elif bound.data(1) > factor:
            self.object(
                item.rule,
                f"{item.what} reaches {bound.data(1):,} per element of a data-sized list; "
                f"the limit is {factor:,} ({setting})",
            )

    def finish(self) -> None:
        for item in self.pending:
            self._judge(item)
        self.pending.clear()
        missed = [node for node in self.parsed.walk() if isinstance(node, ast.Expr) and id(node) not in self.seen]
        if missed:
            node = missed[0]
            self.object(
                catalogue.SIZE_ITERATIONS,
                f"the size check cannot bound {type(node).__name__} {self.text(node)!r}; it is refused until it can",
            )

    def check_value(self, node: ast.Node, shape: Shape, *, tracked: bool = False) -> None:
        """A value an expression builds: its elements and characters are bounded.

        ``tracked``: an aggregation Neo4j's memory limit sees (``collect()``); per row it may hold
        up to ``max_data_chars`` elements instead of ``max_data_factor``.
        """
        what = f"{self.text(node)!r}"
        limits = self.limits
        per_row = (limits.max_data_chars, "limits.max_data_chars") if tracked else None
        self.limit(
            catalogue.SIZE_ELEMENTS, shape.elements, limits.max_list_elements, f"{what} builds a value whose size",
            per_row,
        )  # fmt: skip
        self.limit(
            catalogue.SIZE_STRING, shape.chars, limits.max_string_chars, f"{what} builds strings whose length",
            (limits.max_data_chars, "limits.max_data_chars"),
        )  # fmt: skip

    def check_cost(self, node: ast.Node, cost: Cost) -> None:
        self.limit(
            catalogue.SIZE_ITERATIONS, cost.steps, self.limits.max_iterations,
            f"one evaluation of {self.text(node)!r} iterates a number of times that",
        )  # fmt: skip

    # --- queries and clauses ---------------------------------------------------------------------

    def query_body(self, body: ast.QueryBody, env: Env) -> Env:
        if isinstance(body, ast.Union):
            self.seen.add(id(body))
            out: Env = {}
            for query in body.queries:
                for name, shape in self.single_query(query, dict(env)).items():
                    out[name] = join(out[name], shape) if name in out else shape
            return out
        if isinstance(body, ast.When):
            self.seen.add(id(body))
            out = {}
            branches = [(branch.condition, branch.body) for branch in body.branches]
            for condition, query in [*branches, *([(None, body.otherwise)] if body.otherwise else [])]:
                if condition is not None:
                    self.root(condition, env)
                for name, shape in self.single_query(query, dict(env)).items():
                    out[name] = join(out[name], shape) if name in out else shape
            return out
        if isinstance(body, ast.Next):
            self.seen.add(id(body))
            for segment in body.segments:  # each segment's returned columns are the next one's variables
                env = self.query_body(segment, env)
            return env
        return self.single_query(body, dict(env))

    def single_query(self, query: ast.SingleQuery, env: Env) -> Env:
        returned: Env = {}
        for clause in query.clauses:
            if isinstance(clause, ast.Match):
                self.match(clause, env)
            elif isinstance(clause, ast.With):
                env = self.projection(clause.projection, env)
                if clause.where is not None:
                    self.root(clause.where, env)
            elif isinstance(clause, ast.Return):
                returned = self.projection(clause.projection, env)
            elif isinstance(clause, ast.OrderBySkipLimit):
                for sort in clause.order_by:
                    self.root(sort.expression, env)
                for bound in (clause.skip, clause.limit):
                    if bound is not None:
                        self.root(bound, env)
            elif isinstance(clause, ast.Let):
                for let_item in clause.items:
                    self.bind(let_item.variable, env, self.root(let_item.expression, env))
            elif isinstance(clause, ast.Filter):
                self.root(clause.condition, env)
            elif isinstance(clause, ast.Unwind):
                shape = self.root(clause.expression, env)
                self.bind(clause.variable, env, shape.element)
            elif isinstance(clause, ast.CallSubquery):
                inner = dict(env)
                for var in clause.scope or []:
                    self.seen.add(id(var))
                env.update(self.query_body(clause.body, inner))
            elif isinstance(clause, ast.CallProcedure):
                for arg in clause.args or []:
                    self.root(arg, env)
                for item in clause.yield_items:
                    name = item.alias.name if item.alias is not None else item.name
                    if item.alias is not None:
                        self.seen.add(id(item.alias))
                    env[name] = STORED.with_(reads=frozenset({name}))
                if clause.where is not None:
                    self.root(clause.where, env)
            # Finish and Forbidden hold no expressions the size check needs (a Forbidden is refused anyway).
        return returned

    def projection(self, projection: ast.Projection, env: Env) -> Env:
        out: Env = dict(env) if projection.star else {}
        for item in projection.items:
            shape = self.root(item.expression, env)
            if item.alias is not None:
                self.seen.add(id(item.alias))
                out[item.alias.name] = shape
            elif isinstance(item.expression, ast.Variable):
                out[item.expression.name] = shape
            else:  # a column named by its text (RETURN in a subquery; WITH refuses it in Neo4j)
                out[self.parsed.source(item.expression)] = shape
        scope = {**env, **out}
        for sort in projection.order_by:
            self.root(sort.expression, scope)
        for bound in (projection.skip, projection.limit):
            if bound is not None:
                self.root(bound, scope)
        return out

    def match(self, clause: ast.Match, env: Env) -> None:
        for part in clause.patterns:
            self.pattern_part(part, env)
        for hint in clause.hints:
            self.seen.update(id(n) for n in hint.walk())
        if clause.where is not None:
            self.root(clause.where, env)

    def bind(self, var: ast.Variable, env: Env, shape: Shape) -> None:
        self.seen.add(id(var))
        env[var.name] = shape

    # --- patterns ----------------------------------------------------------------------------------

    def pattern_part(self, part: ast.PatternPart, env: Env) -> None:
        rels = self.path(part.path, env, repeat=ONE)
        if part.variable is not None:
            self.bind(part.variable, env, _path_shape(rels, frozenset({part.variable.name})))

    def path(self, path: ast.Path, env: Env, repeat: Bound) -> Bound:
        """Bind the path's variables (lists when repeated) and return how many relationships it spans."""
        rels = ZERO
        for element in path.elements:
            if isinstance(element, ast.NodePattern):
                self.node_pattern(element, env, repeat)
            elif isinstance(element, ast.RelPattern):
                rels = rels + self.rel_pattern(element, env, repeat)
            else:
                q = element.quantifier
                times = ONE if q is None else (DATA if q.max is None else Bound.of(q.max))
                if q is not None:
                    self.seen.add(id(q))
                inner = self.path(element.path, env, repeat * times)
                rels = rels + inner * times
                if element.variable is not None:  # (q = … WHERE length(q) > 1) after a selector
                    self.bind(element.variable, env, _path_shape(inner, frozenset({element.variable.name})))
                if element.where is not None:
                    self.root(element.where, env)
        return rels

    def _element(self, var: ast.Variable | None, env: Env, repeat: Bound) -> None:
        if var is None:
            return
        own_reads = frozenset({var.name})
        shape = ENTITY.with_(reads=own_reads) if repeat == ONE else _list_of(ENTITY, repeat, reads=own_reads)
        # Inside a quantified path the WHERE sees one element; after it, the variable is a list.
        self.bind(var, env, shape)

    def node_pattern(self, node: ast.NodePattern, env: Env, repeat: Bound) -> None:
        self._element(node.variable, env, repeat)
        self._inline(node.variable, node.labels, node.properties, node.where, env)

    def rel_pattern(self, rel: ast.RelPattern, env: Env, repeat: Bound) -> Bound:
        bound = rel.length or rel.quantifier
        span = ONE if bound is None else (DATA if bound.max is None else Bound.of(bound.max))
        if bound is not None:
            self.seen.add(id(bound))
        self._element(rel.variable, env, repeat * span if bound is not None else repeat)
        self._inline(rel.variable, rel.types, rel.properties, rel.where, env)
        return span

    def _inline(
        self, var: ast.Variable | None, labels: ast.Node | None, properties: ast.Expr | None,
        where: ast.Expr | None, env: Env,
    ) -> None:  # fmt: skip
        """An element pattern's labels or types, property map and inline WHERE (they see one element)."""
        if labels is not None:
            self.seen.update(id(n) for n in labels.walk())
        local = dict(env)
        if var is not None:
            local[var.name] = ENTITY
        if properties is not None:
            self.root(properties, local)
        if where is not None:
            self.root(where, local)

    # --- expressions ---------------------------------------------------------------------------------

    def root(self, expr: ast.Expr, env: Env) -> Shape:
        """An expression a clause evaluates once per row: its whole cost is one evaluation's."""
        shape, cost = self.expr(expr, env)
        self.check_cost(expr, cost)
        return shape

    def expr(self, node: ast.Expr, env: Env) -> tuple[Shape, Cost]:
        self.seen.add(id(node))
        handler = _EXPRESSIONS.get(type(node))
        if handler is None:
            # Reported by finish(): every expression must be bounded by a handler here.
            self.seen.discard(id(node))
            return STORED, FREE
        return handler(self, node, env)

    def exprs(self, nodes: list[ast.Expr], env: Env) -> tuple[list[Shape], Cost]:
        shapes: list[Shape] = []
        cost = FREE
        for node in nodes:
            shape, c = self.expr(node, env)
            shapes.append(shape)
            cost = cost + c
        return shapes, cost

    def param(self, name: str) -> Shape:
        if name not in self._param_shapes:
            if name in self.params:
                self._param_shapes[name] = _value_shape(self.params[name], depth=0)
            else:
                self._param_shapes[name] = NULL.with_(kind="null")
        return self._param_shapes[name]

    # iteration constructs ------------------------------------------------------------------------------

    def loop_variable(self, var: ast.Variable, env: Env, source: Shape) -> str:
        """Bind ``var`` to one element of ``source``: whatever data it holds is its own."""
        self.bind(var, env, source.element.with_(reads=frozenset({var.name})))
        return var.name

    def iterate(self, source: Shape, body_cost: Cost, body: Shape | None, var: str) -> tuple[Cost, Shape | None]:
        """The cost of one pass over ``source`` with a body costing ``body_cost``, and the list of ``body`` values.

        What the body spends on the element's own stored values (``x.name``, ``x.tags``) is
        paid by the list being iterated: counted once per element, not once per element of
        the data. Anything else it spends is multiplied by the trip count.
        """
        trip = source.length
        # Iterating a stored list while reading other stored values costs what the database
        # holds (stored times stored): data once. A trip the query chose (a range, a list
        # built from rows) multiplies everything except the element's own values.
        stored_trip = trip.data_degree >= 1 and source.reads is not None
        step = Cost(ONE) + body_cost
        absorb_cost = own(step.reads, var) or (stored_trip and step.reads is not None)
        per_step = step.steps.at_unit_data() if absorb_cost else step.steps
        cost = Cost(trip * per_step, union(source.reads, _without(step.reads, var)))
        if body is None:
            return cost, None
        absorb = own(body.reads, var) or (stored_trip and body.reads is not None)
        elements = trip * (_as_element(body).at_unit_data() if absorb else _as_element(body))
        chars = trip * (body.chars.at_unit_data() if absorb else body.chars)
        built = Shape("list", length=trip, elements=elements, chars=chars, item=body,
                      reads=union(source.reads, _without(body.reads, var)))  # fmt: skip
        return cost, built

    def comprehension(self, node: ast.ListComprehension, env: Env) -> tuple[Shape, Cost]:
        source, source_cost = self.expr(node.source, env)
        inner = dict(env)
        var = self.loop_variable(node.variable, inner, source)
        body_cost = FREE
        if node.where is not None:
            _, c = self.expr(node.where, inner)
            body_cost = body_cost + c
        if node.projection is not None:
            body, c = self.expr(node.projection, inner)
            body_cost = body_cost + c
        else:
            body = inner[var]
        loop, built = self.iterate(source, body_cost, body, var)
        assert built is not None
        cost = source_cost + loop
        self.check_cost(node, cost)
        self.check_value(node, built)
        return built, cost

    def quantified(self, node: ast.Quantified, env: Env) -> tuple[Shape, Cost]:
        source, source_cost = self.expr(node.source, env)
        inner = dict(env)
        var = self.loop_variable(node.variable, inner, source)
        body_cost = FREE
        if node.where is not None:
            _, body_cost = self.expr(node.where, inner)
        loop, _ = self.iterate(source, body_cost, None, var)
        cost = source_cost + loop
        self.check_cost(node, cost)
        return BOOLEAN, cost

    def reduce(self, node: ast.Reduce, env: Env) -> tuple[Shape, Cost]:
        init, init_cost = self.expr(node.initial, env)
        source, source_cost = self.expr(node.source, env)
        trip = source.length
        if self.reduce_depth >= MAX_REDUCE_DEPTH:
            self.seen.update(id(n) for n in node.walk())
            self.object(
                catalogue.SIZE_ACCUMULATOR,
                f"{self.text(node)!r} is nested {MAX_REDUCE_DEPTH + 1} reduce() deep; the size check goes "
                f"{MAX_REDUCE_DEPTH} deep",
            )
            return STORED, init_cost + source_cost
        self.reduce_depth += 1
        symbol = self.reduce_depth
        # A number stays a number (``s + x`` adds); anything else may grow at every step.
        grows = init.kind not in ("number", "boolean")
        acc = init.with_(exact=None, magnitude=None)
        if grows:
            size = Bound.symbol(symbol)
            kind = "any" if init.kind == "null" else init.kind
            # A string is not iterated and counts as one element; everything else may grow in every size.
            acc = acc.with_(kind=kind, length=ZERO if kind == "string" else size,
                            elements=ONE if kind == "string" else size, chars=size)  # fmt: skip
        inner = dict(env)
        self.bind(node.accumulator, inner, acc)
        var = self.loop_variable(node.variable, inner, source)
        mark = len(self.pending)
        step, step_cost = self.expr(node.expression, inner)
        if node.predicate is not None:  # allReduce's condition, evaluated at every step
            _, predicate_cost = self.expr(node.predicate, inner)
            step_cost = step_cost + predicate_cost
        self.reduce_depth -= 1

        # Each size of the step's result is rest + coefficient·accumulator: a coefficient of 1
        # adds ``rest`` per step, more (or a power) multiplies the accumulator.
        absorb = own(_without(step.reads, node.accumulator.name), var)
        finals: dict[str, Bound] = {}
        doubling: str | None = None
        adds = False
        for quantity in ("length", "elements", "chars"):
            before: Bound = getattr(init, quantity)
            rest, coefficient, higher = getattr(step, quantity).split(symbol)
            if higher or (not coefficient.is_zero() and coefficient != ONE):
                doubling = doubling or quantity
                finals[quantity] = before
            elif coefficient == ONE:
                finals[quantity] = before + trip * (rest.at_unit_data() if absorb else rest)
                adds = adds or not rest.is_zero()
            else:
                finals[quantity] = before.join(rest)
        final_size = finals["length"].join(finals["elements"]).join(finals["chars"])
        # Checks made inside the step may name the accumulator: resolve them with its final size.
        for item in self.pending[mark:]:
            item.bound = item.bound.substitute(symbol, final_size)
        body_cost = Cost(step_cost.steps.substitute(symbol, final_size), step_cost.reads)
        loop, _ = self.iterate(source, body_cost, None, var)
        cost = init_cost + source_cost + loop
        reads = union(init.reads, source.reads, _without(_without(step.reads, var), node.accumulator.name))
        shape = join(init, step).with_(
            length=finals["length"], elements=finals["elements"], chars=finals["chars"], exact=None,
            magnitude=None, reads=reads,
        )  # fmt: skip
        if doubling is not None:
            self.object(
                catalogue.SIZE_ACCUMULATOR,
                f"{self.text(node)!r} multiplies its accumulator at every step (its {_QUANTITY[doubling]} at least "
                "double): it grows exponentially",
            )
        elif grows and adds and trip.data_degree >= 1 and source.reads is None:
            self.object(
                catalogue.SIZE_ACCUMULATOR,
                f"{self.text(node)!r} copies a growing accumulator once per element of a list built from rows: its "
                "cost grows with the square of the data (build the list with collect() or a list comprehension)",
            )
        elif grows and adds:
            self.limit(
                catalogue.SIZE_ACCUMULATOR, trip, self.limits.max_accumulator_iterations,
                f"{self.text(node)!r} copies a growing accumulator at every step; its number of steps",
            )  # fmt: skip
            # Each step copies the accumulator (a string's characters, a list's references): the copies
            # add up to the steps times the final size, whatever the size limits allow of each.
            copied = {"string": _chars_as_steps(finals["chars"]), "list": finals["length"]}.get(
                acc.kind, finals["length"] + _chars_as_steps(finals["chars"])
            )
            if source.reads is not None:  # a stored list and its own values: what the database holds, once
                copied = copied.at_unit_data()
            copies = trip * copied
            self.limit(
                catalogue.SIZE_ACCUMULATOR, copies, self.limits.max_iterations,
                f"{self.text(node)!r} copies its accumulator at every step; the copies add up to a number of steps "
                "that",
            )  # fmt: skip
        self.check_cost(node, cost)
        self.check_value(node, shape)
        return shape, cost

    # patterns and subqueries inside expressions -------------------------------------------------------

    def pattern_comprehension(self, node: ast.PatternComprehension, env: Env) -> tuple[Shape, Cost]:
        inner = dict(env)
        rels = self.path(node.pattern, inner, repeat=ONE)
        self.seen.add(id(node.pattern))
        if node.path_variable is not None:
            self.bind(node.path_variable, inner, _path_shape(rels, frozenset({node.path_variable.name})))
        bound = _pattern_variables(node.pattern)
        body_cost = FREE
        if node.where is not None:
            _, body_cost = self.expr(node.where, inner)
        body, c = self.expr(node.projection, inner)
        body_cost = body_cost + c
        # One element per match: what each match reads of its own elements is paid by the match.
        matches = Shape("list", length=DATA, elements=DATA, reads=None)
        var = "\x00match"
        body = body.with_(reads=_own_match(body.reads, bound, var))
        loop, built = self.iterate(matches, Cost(body_cost.steps, _own_match(body_cost.reads, bound, var)), body, var)
        assert built is not None
        self.check_cost(node, loop)
        self.check_value(node, built)
        return built, loop

    def pattern_predicate(self, node: ast.PatternPredicate, env: Env) -> tuple[Shape, Cost]:
        self.pattern_part(node.pattern, dict(env))
        return BOOLEAN, Cost(ONE)

    def subquery(self, node: ast.SubqueryExpr, env: Env) -> tuple[Shape, Cost]:
        inner = dict(env)
        columns: Env = {}
        if node.body is not None:
            columns = self.query_body(node.body, inner)
        else:
            for part in node.patterns:
                self.pattern_part(part, inner)
            if node.where is not None:
                self.root(node.where, inner)
        # The subquery's rows are operator work, stopped at the timeout; one evaluation is one step here.
        if node.kind == "EXISTS":
            return BOOLEAN, Cost(ONE)
        if node.kind == "COUNT":
            return NUMBER, Cost(ONE)
        item = next(iter(columns.values())) if len(columns) == 1 else STORED
        rows = _limit_of(node.body, self)
        trip = DATA if rows is None else Bound.of(rows)
        # One element per row; a row's own stored values are paid by the row.
        var = "\x00row"
        _, built = self.iterate(Shape("list", length=trip, reads=None), FREE, item.with_(reads=frozenset({var})), var)
        assert built is not None
        self.check_value(node, built)
        return built.with_(item=item), Cost(ONE)

    # --- the rest of the expressions ----------------------------------------------------------------

    def literal(self, node: ast.Literal, env: Env) -> tuple[Shape, Cost]:
        value = node.value
        if node.kind == "string":
            assert isinstance(value, str)
            return _string(value), FREE
        if node.kind == "number":
            assert isinstance(value, int | float) and not isinstance(value, bool)
            return NUMBER.with_(exact=value), FREE
        if node.kind == "boolean":
            return BOOLEAN, FREE
        return NULL, FREE

    def parameter(self, node: ast.Parameter, env: Env) -> tuple[Shape, Cost]:
        shape = self.param(node.name)
        self.check_value(node, shape)
        return shape, FREE

    def variable(self, node: ast.Variable, env: Env) -> tuple[Shape, Cost]:
        return env.get(node.name, STORED), FREE

    def paren(self, node: ast.Paren, env: Env) -> tuple[Shape, Cost]:
        return self.expr(node.expression, env)

    def list_literal(self, node: ast.ListLiteral, env: Env) -> tuple[Shape, Cost]:
        shapes, cost = self.exprs(node.items, env)
        item: Shape | None = None
        elements, chars = ZERO, ZERO
        for shape in shapes:
            item = shape if item is None else join(item, shape)
            elements = elements + _as_element(shape)
            chars = chars + shape.chars
        out = Shape(
            "list", length=Bound.of(len(shapes)), elements=elements, chars=chars, item=item or NULL,
            reads=union(*(s.reads for s in shapes)),
        )  # fmt: skip
        self.check_value(node, out)
        return out, cost

    def map_literal(self, node: ast.MapLiteral, env: Env) -> tuple[Shape, Cost]:
        for entry in node.entries:
            self.seen.add(id(entry))
        shapes, cost = self.exprs([e.value for e in node.entries], env)
        out = _map_of(shapes)
        self.check_value(node, out)
        return out, cost

    def map_projection(self, node: ast.MapProjection, env: Env) -> tuple[Shape, Cost]:
        self.seen.add(id(node.subject))
        shapes: list[Shape] = []
        cost = FREE
        for item in node.items:
            self.seen.add(id(item))
            if item.kind == "literal" and item.value is not None:
                shape, c = self.expr(item.value, env)
                shapes.append(shape)
                cost = cost + c
            elif item.kind == "variable" and item.value is not None:
                shape, c = self.expr(item.value, env)
                shapes.append(shape)
            else:  # .key or .*: read from the element
                shapes.append(_read(env.get(node.subject.name, STORED)))
        out = _map_of(shapes)
        self.check_value(node, out)
        return out, cost

    def property(self, node: ast.Property, env: Env) -> tuple[Shape, Cost]:
        subject, cost = self.expr(node.subject, env)
        if subject.kind == "map" and subject.item is not None:
            return subject.item, cost
        return _read(subject), cost

    def index(self, node: ast.Index, env: Env) -> tuple[Shape, Cost]:
        (subject, _), cost = self.exprs([node.subject, node.index], env)
        if subject.kind == "map" and subject.item is not None:
            return subject.item, cost
        if subject.kind in ("entity", "map", "path"):
            return _read(subject), cost  # n[key]: a property read
        return subject.element, cost

    def slice(self, node: ast.Slice, env: Env) -> tuple[Shape, Cost]:
        subject, cost = self.expr(node.subject, env)
        for bound in (node.lower, node.upper):
            if bound is not None:
                _, c = self.expr(bound, env)
                cost = cost + c
        return subject.with_(exact=None), cost

    def binary(self, node: ast.BinaryOp, env: Env) -> tuple[Shape, Cost]:
        if node.op in _BOOLEAN_OPS and id(node) not in self.chains:
            operands = self.boolean_operands(node)
            if operands > self.limits.max_boolean_operands:
                self.object(
                    catalogue.SIZE_OPERANDS,
                    f"one chain of AND / OR / XOR holds {operands:,} operands; the limit is "
                    f"{self.limits.max_boolean_operands:,} (limits.max_boolean_operands)",
                )
        # Iterative over nested operators: a flat chain of 2,000 ORs is as deep as the tree gets
        # without brackets, far past Python's recursion limit.
        done: dict[int, tuple[Shape, Cost]] = {}
        stack: list[tuple[ast.BinaryOp, bool]] = [(node, False)]
        while stack:
            current, expanded = stack.pop()
            if not expanded:
                stack.append((current, True))
                stack.extend(
                    (child, False) for child in (current.right, current.left) if isinstance(child, ast.BinaryOp)
                )
                continue
            self.seen.add(id(current))
            sides = [
                done.pop(id(child)) if isinstance(child, ast.BinaryOp) else self.expr(child, env)
                for child in (current.left, current.right)
            ]
            done[id(current)] = self._binary_one(current, sides[0], sides[1])
        return done[id(node)]

    def _binary_one(
        self, node: ast.BinaryOp, left_side: tuple[Shape, Cost], right_side: tuple[Shape, Cost]
    ) -> tuple[Shape, Cost]:
        (left, left_cost), (right, right_cost) = left_side, right_side
        cost = left_cost + right_cost
        op = node.op
        if op in ("+", "||"):
            out = _plus(left, right)
            if op == "+" and left.kind == "number" and right.kind == "number":
                out = _arithmetic("+", left, right)
            # Concatenation copies at most the result, which check_value bounds; a reduce that
            # concatenates at every step is bounded by the accumulator rule.
            self.check_value(node, out)
            return out, cost
        if op in ("-", "*", "/", "%", "^"):
            return _arithmetic(op, left, right), cost
        if op in _PREDICATE_OPS:
            return BOOLEAN, cost + self.predicate_cost(node, op, left, right, node.right)
        return BOOLEAN, cost

    def predicate_cost(self, node: ast.Node, op: str, left: Shape, right: Shape, right_node: ast.Expr) -> Cost:
        """What one comparison, search or match of ``left`` with ``right`` walks (``=~``: its backtracking)."""
        reads = union(left.reads, right.reads)
        if op == "IN":
            # One comparison per element, each at most as long as that element: the list's whole content.
            # A stored list's length is walked in full even though one value read from it is paid.
            return Cost(right.length.join(_compared(right)), right.reads)
        if op in ("=", "<>", "<", ">", "<=", ">="):
            # Equality and order stop at the shorter side; lists compare element by element, nested ones too.
            return Cost(_smaller(_compared(left), _compared(right)), reads)
        if op in ("STARTS_WITH", "ENDS_WITH"):
            return Cost(_chars_as_steps(_smaller(left.chars, right.chars)), reads)
        if op == "CONTAINS":
            return Cost(_search(left, right), reads)
        return self.regex(node, left, right, right_node)

    def boolean_operands(self, node: ast.BinaryOp) -> int:
        """The operands of the chain of AND / OR / XOR / NOT (through brackets) ``node`` heads.

        Neo4j's semantic analysis and its rewrite of predicates take time that grows with them
        (1,900 ORs: 2.7 s), before its transaction timeout applies.
        """
        count = 0
        stack: list[ast.Expr] = [node]
        while stack:
            current = stack.pop()
            if isinstance(current, ast.Paren):
                stack.append(current.expression)
            elif isinstance(current, ast.UnaryOp) and current.op == "NOT":
                stack.append(current.operand)
            elif isinstance(current, ast.BinaryOp) and current.op in _BOOLEAN_OPS:
                self.chains.add(id(current))
                stack.extend((current.left, current.right))
            else:
                count += 1
        return count

    def regex(self, node: ast.Node, subject: Shape, pattern: Shape, pattern_node: ast.Expr) -> Cost:
        """The backtracking cost of matching ``subject`` against ``pattern`` (refused when unbounded)."""
        if pattern.kind == "null":
            return FREE
        if not isinstance(pattern.exact, str):
            self.object(
                catalogue.REGEX_BACKTRACKING,
                f"the regular expression {self.text(pattern_node)!r} is not known before the query runs; "
                "pass it as a literal or a parameter",
            )
            return FREE
        try:
            found = regex.read(pattern.exact)
        except regex.RegexUnreadable as exc:
            self.object(catalogue.REGEX_BACKTRACKING, f"the regular expression {pattern.exact!r} is refused: {exc}")
            return FREE
        if found.exponential is not None:
            self.object(
                catalogue.REGEX_BACKTRACKING,
                f"the regular expression {pattern.exact!r} can backtrack exponentially ({found.exponential})",
            )
            return FREE
        steps = subject.chars + ONE
        cost = steps
        for _ in range(max(0, found.quantifiers - 1)):
            cost = cost * steps
        self.limit(
            catalogue.REGEX_BACKTRACKING, cost, self.limits.max_iterations,
            f"matching {self.text(node)!r} ({found.quantifiers} free quantifiers, each retried over the subject) "
            "costs a number of steps that",
        )  # fmt: skip
        # In the iteration count a match is one pass over its subject; its power is judged above.
        return Cost(steps, subject.reads)

    def unary(self, node: ast.UnaryOp, env: Env) -> tuple[Shape, Cost]:
        operand, cost = self.expr(node.operand, env)
        if node.op == "NOT":
            return BOOLEAN, cost
        if node.op == "-" and isinstance(operand.exact, int | float) and not isinstance(operand.exact, bool):
            return NUMBER.with_(exact=-operand.exact), cost
        return NUMBER.with_(exact=operand.exact if isinstance(operand.exact, int | float) else None,
                            magnitude=operand.int_bound()), cost  # fmt: skip

    def partial_predicate(self, node: ast.PartialPredicate, env: Env, subject: Shape = STORED) -> tuple[Shape, Cost]:
        """One operand of an extended CASE, with ``subject`` (the CASE's) as its left side."""
        self.seen.add(id(node))
        if node.labels is not None:
            self.seen.update(id(n) for n in node.labels.walk())
        if node.right is None:
            return BOOLEAN, FREE
        right, cost = self.expr(node.right, env)
        op = " ".join(node.op.split()).replace(" ", "_")
        if op in _PREDICATE_OPS:
            cost = cost + self.predicate_cost(node, op, subject, right, node.right)
        return BOOLEAN, cost

    def keyword(self, node: ast.Keyword, env: Env) -> tuple[Shape, Cost]:
        return _string(node.word), FREE

    def predicate(
        self, node: ast.IsNull | ast.TypePredicate | ast.LabelCheck | ast.IsNormalized, env: Env
    ) -> tuple[Shape, Cost]:
        operand = node.subject if isinstance(node, ast.LabelCheck) else node.operand
        _, cost = self.expr(operand, env)
        if isinstance(node, ast.LabelCheck):
            self.seen.update(id(n) for n in node.labels.walk())
        return BOOLEAN, cost

    def case(self, node: ast.Case, env: Env) -> tuple[Shape, Cost]:
        cost = FREE
        subject = NULL
        if node.subject is not None:
            subject, cost = self.expr(node.subject, env)
        out: Shape | None = None
        for when in node.whens:
            self.seen.add(id(when))
            for condition in when.conditions:
                # ``CASE x WHEN =~ 'r'``, ``WHEN CONTAINS $n``: the subject is the predicate's left side.
                if isinstance(condition, ast.PartialPredicate):
                    cost = cost + self.partial_predicate(condition, env, subject)[1]
                elif node.subject is not None:  # ``CASE x WHEN v``: x = v
                    value, c = self.expr(condition, env)
                    cost = cost + c + self.predicate_cost(condition, "=", subject, value, condition)
                else:
                    cost = cost + self.expr(condition, env)[1]
            result, c = self.expr(when.result, env)
            cost = cost + c
            out = result if out is None else join(out, result)
        if node.default is not None:
            default, c = self.expr(node.default, env)
            cost = cost + c
            out = default if out is None else join(out, default)
        return out or NULL, cost

    def function(self, node: ast.FunctionCall, env: Env) -> tuple[Shape, Cost]:
        args, cost = self.exprs(node.args, env)
        name = node.name.lower()
        model = FUNCTIONS.get(name)
        if model is None:
            # Fail closed: a function nobody reviewed (a new Neo4j release's, a plugin's) may search,
            # match or build anything; guessing its cost from its arguments let one build 4e8 characters.
            self.object(
                catalogue.FUNCTION_UNREVIEWED,
                f"{node.name}() has no reviewed cost model in the guard; it is refused until it is reviewed",
            )
            return STORED, cost
        out, steps = model.handler(self, node, args)
        if model.regex is not None and len(args) > model.regex:
            cost = cost + self.regex(node, args[0], args[model.regex], node.args[model.regex])
        if out.kind in ("list", "string", "map", "any") and not model.pass_through:
            self.check_value(node, out, tracked=name in _TRACKED)
        return out, cost + Cost(steps, union(*(a.reads for a in args)))

    # range() is the one builder whose size comes from integer arguments.
    def range_(self, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
        start, end = args[0], args[1]
        step = args[2] if len(args) > 2 else NUMBER.with_(exact=1)
        exact = [a.exact for a in (start, end, step)]
        if all(isinstance(x, int) and not isinstance(x, bool) for x in exact):
            s, e, st = exact
            assert isinstance(s, int) and isinstance(e, int) and isinstance(st, int)
            length = Bound.of(0 if st == 0 else max(0, (e - s) // st + 1))
        else:
            bounds = [a.int_bound() for a in (start, end, step)]
            if bounds[0] is None or bounds[1] is None or bounds[2] is None:
                unknown = [self.text(n) for n, b in zip(node.args, bounds, strict=False) if b is None]
                self.object(
                    catalogue.SIZE_RANGE,
                    f"{self.text(node)!r} takes its bounds from the data ({', '.join(unknown)}): its length is not "
                    "known before it runs; use literals, parameters, or size() of a list",
                )
                return _list_of(NUMBER, DATA, reads=None), ZERO
            divisor = abs(exact[2]) if isinstance(exact[2], int) and exact[2] else 1
            length = _ceil_div(bounds[0] + bounds[1], divisor) + ONE
        reads = union(start.reads, end.reads, step.reads)
        self.limit(
            catalogue.SIZE_RANGE, length, self.limits.max_range_length,
            f"{self.text(node)!r} produces a number of elements that",
        )  # fmt: skip
        item_bound = (start.int_bound() or ZERO).join(end.int_bound() or ZERO)
        return _list_of(NUMBER.with_(magnitude=item_bound), length, reads=reads), ZERO


_PREDICATE_OPS = frozenset({"IN", "=", "<>", "<", ">", "<=", ">=", "STARTS_WITH", "ENDS_WITH", "CONTAINS", "=~"})

_Handler = Callable[["_Analysis", Any, Env], tuple[Shape, Cost]]
_EXPRESSIONS: dict[type[ast.Node], _Handler] = {
    ast.Literal: _Analysis.literal,
    ast.Parameter: _Analysis.parameter,
    ast.Variable: _Analysis.variable,
    ast.Paren: _Analysis.paren,
    ast.ListLiteral: _Analysis.list_literal,
    ast.MapLiteral: _Analysis.map_literal,
    ast.MapProjection: _Analysis.map_projection,
    ast.Property: _Analysis.property,
    ast.Index: _Analysis.index,
    ast.Slice: _Analysis.slice,
    ast.BinaryOp: _Analysis.binary,
    ast.UnaryOp: _Analysis.unary,
    ast.IsNull: _Analysis.predicate,
    ast.TypePredicate: _Analysis.predicate,
    ast.LabelCheck: _Analysis.predicate,
    ast.IsNormalized: _Analysis.predicate,
    ast.PartialPredicate: _Analysis.partial_predicate,
    ast.Keyword: _Analysis.keyword,
    ast.FunctionCall: _Analysis.function,
    ast.Case: _Analysis.case,
    ast.ListComprehension: _Analysis.comprehension,
    ast.Quantified: _Analysis.quantified,
    ast.Reduce: _Analysis.reduce,
    ast.PatternComprehension: _Analysis.pattern_comprehension,
    ast.PatternPredicate: _Analysis.pattern_predicate,
    ast.SubqueryExpr: _Analysis.subquery,
}


# --- shapes of values ------------------------------------------------------------------------------


def _string(value: str) -> Shape:
    return Shape("string", chars=Bound.of(len(value)), exact=value if len(value) <= _EXACT_STRING_LIMIT else None)


def _list_of(item: Shape, length: Bound, *, reads: Reads) -> Shape:
    return Shape("list", length=length, elements=length * item.elements, chars=length * item.chars, item=item,
                 reads=reads)  # fmt: skip


def _map_of(values: list[Shape]) -> Shape:
    item: Shape | None = None
    elements, chars = ZERO, ZERO
    for shape in values:
        item = shape if item is None else join(item, shape)
        elements = elements + (ONE if shape.elements.is_zero() else _as_element(shape))
        chars = chars + shape.chars
    return Shape("map", length=Bound.of(len(values)), elements=elements, chars=chars, item=item,
                 reads=union(*(s.reads for s in values)))  # fmt: skip


def _as_element(shape: Shape) -> Bound:
    """What ``shape`` costs as an element of a list or map: a list or map carries its own weight."""
    return shape.elements + CONTAINER if shape.kind in ("list", "map") else shape.elements


def _compared(shape: Shape) -> Bound:
    """What comparing ``shape`` walks: a list the query built (collected ones included) in full, every
    nested element and character of it (``[a] = [b]`` compares all of ``a``); a value read from one
    element (a property, possibly a stored list) once, since its size is what the store holds for that
    element, paid for by reading it — else ``n.a = 1 OR n.b = 2 OR …`` would count every comparison as
    a walk over data-sized lists."""
    walked = shape.elements + _chars_as_steps(shape.chars)
    return walked if shape.kind == "list" else walked.at_unit_data()


def _chars_as_steps(chars: Bound) -> Bound:
    """Characters compared or copied, in iteration steps (``CHARS_PER_STEP`` to a step).

    A size known before the query runs is rounded down: the step that makes the comparison or the
    copy is counted where it is made and pays for its first ``CHARS_PER_STEP`` characters. A size
    the data or an accumulator decides is rounded up, so a loop around it still multiplies it
    (``[i IN range(1, 100000) WHERE n.bio CONTAINS 'x']`` searches the stored text 100,000 times).
    """
    return Bound({e: (-(-c // CHARS_PER_STEP) if e else c // CHARS_PER_STEP) for e, c in chars.terms.items()})


def _search(text: Shape, needle: Shape) -> Bound:
    """Searching ``text`` for ``needle`` (CONTAINS, replace(), split(), indexOf): Java's String search is
    naive, up to len(text) * len(needle) character comparisons, and reaches no safepoint while it runs
    (a long one stops every thread of the JVM)."""
    return _chars_as_steps(text.chars * needle.chars)


def _smaller(a: Bound, b: Bound) -> Bound:
    """An upper bound of min(a, b): the one known before the query runs, else the smaller, else both."""
    a_static, b_static = set(a.terms) <= {()}, set(b.terms) <= {()}
    if a_static and b_static:
        return a if a.static <= b.static else b
    if a_static:
        return a
    if b_static:
        return b
    return a.join(b)


def _read(subject: Shape) -> Shape:
    """A value read from the database through ``subject`` (a property of it, its labels, keys, …)."""
    return STORED.with_(reads=subject.reads)


def _without(reads: Reads, variable: str) -> Reads:
    return None if reads is None else reads - {variable}


def _pattern_variables(path: ast.Path) -> frozenset[str]:
    return frozenset(n.name for n in path.walk() if isinstance(n, ast.Variable))


def _own_match(reads: Reads, bound: frozenset[str], match: str) -> Reads:
    """Reads of the pattern's own variables become the match's own (one element per match)."""
    if reads is None or not reads & bound:
        return reads
    return (reads - bound) | {match}


def _path_shape(rels: Bound, reads: Reads) -> Shape:
    """A path of at most ``rels`` relationships; ``length`` is that count (``length(p)``)."""
    return Shape("path", length=rels, elements=rels + rels + ONE, item=ENTITY, reads=reads, magnitude=rels)


def _value_shape(value: Any, depth: int) -> Shape:
    """The exact shape of a caller's parameter value (JSON: lists, maps, strings, numbers)."""
    if value is None:
        return NULL
    if isinstance(value, bool):
        return BOOLEAN
    if isinstance(value, int | float):
        return NUMBER.with_(exact=value)
    if isinstance(value, str):
        return _string(value)
    if depth > 64:  # JSON nested this deep is refused by the request parser long before; stay bounded
        return STORED
    if isinstance(value, list | tuple):
        shapes = [_value_shape(v, depth + 1) for v in value]
        item: Shape | None = None
        elements, chars = ZERO, ZERO
        for shape in shapes:
            item = shape if item is None else join(item, shape)
            elements = elements + shape.elements
            chars = chars + shape.chars
        return Shape("list", length=Bound.of(len(shapes)), elements=elements, chars=chars, item=item or NULL)
    if isinstance(value, Mapping):
        return _map_of([_value_shape(v, depth + 1) for v in value.values()])
    return SCALAR


def _plus(left: Shape, right: Shape) -> Shape:
    """``a + b`` / ``a || b``: list concatenation, string concatenation or arithmetic."""
    reads = union(left.reads, right.reads)
    if left.kind == "list" or right.kind == "list":

        def as_list(s: Shape) -> tuple[Bound, Shape]:
            return (s.length, s.element) if s.kind in ("list", "any") else (ONE, s)

        (ll, li), (rl, ri) = as_list(left), as_list(right)
        return Shape("list", length=ll + rl, elements=left.elements + right.elements, chars=left.chars + right.chars,
                     item=join(li, ri), reads=reads)  # fmt: skip
    if left.kind == "number" and right.kind == "number":
        return NUMBER
    exact = (
        left.exact + right.exact
        if isinstance(left.exact, str)
        and isinstance(right.exact, str)
        and len(left.exact) + len(right.exact) <= _EXACT_STRING_LIMIT
        else None
    )
    # A number joined to a string is written out: at most 24 characters.
    digits = Bound.of(24) if {left.kind, right.kind} == {"number", "string"} else ZERO
    chars = left.chars + right.chars + digits
    if "string" in (left.kind, right.kind) and "any" not in (left.kind, right.kind):
        return Shape("string", chars=chars, exact=exact, reads=reads)
    # Either side may be a list read from the data: bound it as a list and as a string.
    return Shape(
        "any", length=left.length + right.length + ONE, elements=left.elements + right.elements, chars=chars,
        item=join(left.element, right.element), reads=reads,
    )  # fmt: skip


def _arithmetic(op: str, left: Shape, right: Shape) -> Shape:
    a, b = left.exact, right.exact
    if _is_number(a) and _is_number(b):
        assert isinstance(a, int | float) and isinstance(b, int | float)
        value = _exact_arithmetic(op, a, b)
        if value is not None:
            return NUMBER.with_(exact=value)
    ma, mb = left.int_bound(), right.int_bound()
    magnitude: Bound | None = None
    if ma is not None and mb is not None:
        if op in ("+", "-"):
            magnitude = ma + mb
        elif op == "*":
            magnitude = ma * mb
        elif op in ("/", "%"):
            magnitude = ma if op == "/" else mb
    if left.kind not in ("number", "any") and right.kind not in ("number", "any"):
        return SCALAR  # temporal arithmetic
    return NUMBER.with_(magnitude=magnitude)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _exact_arithmetic(op: str, a: int | float, b: int | float) -> int | float | None:
    try:
        if op == "^":
            result: int | float = float(a) ** float(b)
        elif isinstance(a, int) and isinstance(b, int):
            if op == "+":
                result = a + b
            elif op == "-":
                result = a - b
            elif op == "*":
                result = a * b
            elif op == "/":
                if b == 0:
                    return None
                result = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
            else:
                if b == 0:
                    return None
                result = int(math.fmod(a, b))
            if not -_INT64 <= result < _INT64:
                return None  # Neo4j raises on integer overflow
        else:
            fa, fb = float(a), float(b)
            result = {"+": fa + fb, "-": fa - fb, "*": fa * fb, "/": fa / fb if fb else math.inf,
                      "%": math.fmod(fa, fb) if fb else math.nan}[op]  # fmt: skip
    except (OverflowError, ValueError, ZeroDivisionError):
        return None
    if isinstance(result, float) and not math.isfinite(result):
        return None
    return result


def _ceil_div(bound: Bound, divisor: int) -> Bound:
    if divisor <= 1:
        return bound
    return Bound({e: -(-c // divisor) for e, c in bound.terms.items()})


def _limit_of(body: ast.QueryBody | None, analysis: _Analysis) -> int | None:
    """The static row limit of a subquery body's final RETURN (summed over UNION branches), if every branch has one."""
    if body is None:
        return None
    if isinstance(body, ast.Next):  # the last segment returns the rows
        return _limit_of(body.segments[-1], analysis)
    queries: list[ast.SingleQuery]
    if isinstance(body, ast.Union):
        queries = body.queries
    elif isinstance(body, ast.When):
        # One branch runs: its limit bounds the rows when every branch, ELSE included, has one.
        if body.otherwise is None:
            return None
        limits = [_limit_of(q, analysis) for q in [branch.body for branch in body.branches] + [body.otherwise]]
        return None if any(limit is None for limit in limits) else max(limit for limit in limits if limit is not None)
    else:
        queries = [body]
    total = 0
    for query in queries:
        last = query.clauses[-1] if query.clauses else None
        if not isinstance(last, ast.Return) or last.projection.limit is None:
            return None
        limit_node = last.projection.limit
        value: object = None
        if isinstance(limit_node, ast.Literal):
            value = limit_node.value
        elif isinstance(limit_node, ast.Parameter):
            value = analysis.params.get(limit_node.name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            return None
        total += value
    return total


# --- functions -------------------------------------------------------------------------------------

_FunctionHandler = Callable[["_Analysis", ast.FunctionCall, list[Shape]], tuple[Shape, Bound]]


def _arg(args: list[Shape], i: int) -> Shape:
    return args[i] if i < len(args) else NULL


def _same(analysis: _Analysis, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    """Functions whose result is at most their first argument (a slice, a copy, a conversion)."""
    first = _arg(args, 0)
    return first.with_(exact=None, magnitude=first.int_bound()), first.length


def _element_of(analysis: _Analysis, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    return _arg(args, 0).element, ZERO


def _scalar(analysis: _Analysis, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    return SCALAR.with_(chars=ZERO), ZERO


def _number_of(analysis: _Analysis, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    return NUMBER, ZERO


def _entity(analysis: _Analysis, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    return ENTITY, ZERO


def _boolean(analysis: _Analysis, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    return BOOLEAN, ZERO


def _size(analysis: _Analysis, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    subject = _arg(args, 0)
    if isinstance(subject.exact, str):
        return NUMBER.with_(exact=len(subject.exact)), ZERO
    if subject.kind == "list":
        bound = subject.length
    elif subject.kind == "string":
        bound = subject.chars
    else:
        bound = subject.length.join(subject.chars)
    return NUMBER.with_(magnitude=bound), ZERO


def _to_integer(analysis: _Analysis, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    value = _arg(args, 0)
    if isinstance(value.exact, int | float) and not isinstance(value.exact, bool) and math.isfinite(value.exact):
        return NUMBER.with_(exact=int(value.exact)), ZERO
    if isinstance(value.exact, str):
        try:
            return NUMBER.with_(exact=int(float(value.exact.strip()))), ZERO
        except (ValueError, OverflowError):
            return NULL, ZERO
    return NUMBER.with_(magnitude=value.int_bound()), ZERO


def _abs(analysis: _Analysis, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    value = _arg(args, 0)
    if isinstance(value.exact, int | float) and not isinstance(value.exact, bool):
        return NUMBER.with_(exact=abs(value.exact)), ZERO
    return NUMBER.with_(magnitude=value.int_bound()), ZERO


def _collect(analysis: _Analysis, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    # One element per row: what a row read from the database is paid by the row (and tracked by
    # Neo4j's memory limit); what the query built for it counts per row.
    item = _arg(args, 0)
    absorb = item.reads is not None
    return Shape(
        "list", length=DATA, elements=DATA * (_as_element(item).at_unit_data() if absorb else _as_element(item)),
        chars=DATA * (item.chars.at_unit_data() if absorb else item.chars), item=item, reads=None,
    ), ZERO  # fmt: skip


def _stored_list(analysis: _Analysis, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    """labels(), keys() of an element, properties(): read from the database for this value."""
    subject = _arg(args, 0)
    if subject.kind == "map":
        return _list_of(SCALAR, subject.length, reads=subject.reads), subject.length
    return _read(subject), ZERO


def _path_list(relationships: bool) -> _FunctionHandler:
    def handler(analysis: _Analysis, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
        path = _arg(args, 0)
        if path.kind != "path":
            return _read(path), ZERO
        length = path.length if relationships else path.length + ONE
        return _list_of(ENTITY, length, reads=path.reads), length

    return handler


def _split(analysis: _Analysis, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    # The delimiters (one string or a list of them) are each searched for in the text.
    text, delimiters = _arg(args, 0), _arg(args, 1)
    pieces = text.chars + ONE
    piece = Shape("string", chars=text.chars, reads=text.reads)
    out = Shape("list", length=pieces, elements=pieces, chars=text.chars, item=piece, reads=text.reads)
    return out, _search(text, delimiters) + delimiters.length


def _index_of(analysis: _Analysis, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    """string.indexOf(s, v): a search; coll.indexOf(l, v): one comparison per element."""
    subject, value = _arg(args, 0), _arg(args, 1)
    if subject.kind == "list" or node.name.lower().startswith("coll."):
        return NUMBER, subject.length + _compared(subject)
    return NUMBER, _search(subject, value)


def _string_join(analysis: _Analysis, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    """string.join(list, separator): every string once, the separator between each two."""
    strings, separator = _arg(args, 0), _arg(args, 1)
    chars = strings.chars + strings.length * separator.chars
    return Shape("string", chars=chars, reads=union(strings.reads, separator.reads)), strings.length


def _regex_replace(analysis: _Analysis, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    """string.regexReplace(s, regex, replacement): a pattern that matches the empty string inserts the
    replacement at every position (its matching cost is the regex's, checked by the caller)."""
    text, replacement = _arg(args, 0), _arg(args, 2)
    chars = text.chars + (text.chars + ONE) * replacement.chars
    return Shape("string", chars=chars, reads=union(text.reads, replacement.reads)), ZERO


def _list_builder(analysis: _Analysis, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    """coll.distinct/flatten/insert/remove/sort: at most the list's elements (plus one inserted value),
    one pass of comparisons over them (sorting: a comparison per element per halving of the list)."""
    subject = _arg(args, 0)
    inserted = _arg(args, 2) if node.name.lower() == "coll.insert" else NULL
    length = subject.length + (ONE if inserted.kind != "null" else ZERO)
    # coll.flatten lifts nested elements to the top: the flattened count bounds its length.
    if node.name.lower() == "coll.flatten":
        length = subject.elements
    item = None if node.name.lower() == "coll.flatten" else subject.item
    out = Shape("list", length=length, elements=subject.elements + inserted.elements,
                chars=subject.chars + inserted.chars, item=item,
                reads=union(subject.reads, inserted.reads))  # fmt: skip
    walk = subject.length + _compared(subject)
    if node.name.lower() == "coll.sort":
        # n log n comparisons: the log of the part the query chose (a stored list's own is what the store holds).
        return out, walk + walk.scale(max(1, subject.length.static.bit_length()))
    return out, walk


def _list_sum(analysis: _Analysis, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    return NUMBER, _arg(args, 0).length


def _map_merge(analysis: _Analysis, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    """A map of at most both maps' entries."""
    first, second = _arg(args, 0), _arg(args, 1)
    out = Shape("map", length=first.length + second.length, elements=first.elements + second.elements,
                chars=first.chars + second.chars, item=join(first.element, second.element),
                reads=union(first.reads, second.reads))  # fmt: skip
    return out, first.length + second.length


def _vector_math(analysis: _Analysis, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    """vector.similarity.*, vector_distance, vector_norm: one pass over both vectors."""
    return NUMBER, _arg(args, 0).length + _arg(args, 1).length


def _parse_text(analysis: _Analysis, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    """Temporal, point, uuid and vector constructors: one pass over their text arguments."""
    return SCALAR, _chars_as_steps(sum((a.chars for a in args), ZERO)) + sum((a.length for a in args), ZERO)


def _format(analysis: _Analysis, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    """format(temporal, pattern): a pattern letter writes at most a field (a month's name, 9 digits)."""
    pattern = _arg(args, 1)
    return Shape("string", chars=Bound.of(64) + pattern.chars.scale(16), reads=pattern.reads), _chars_as_steps(
        pattern.chars
    )


def _string_like(factor: int = 1) -> _FunctionHandler:
    def handler(analysis: _Analysis, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
        text = _arg(args, 0)
        return Shape("string", chars=text.chars.scale(factor), reads=text.reads), ZERO

    return handler


def _to_string(analysis: _Analysis, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    value = _arg(args, 0)
    if value.kind == "number":
        magnitude = value.int_bound()
        digits = len(str(magnitude.static)) + 2 if magnitude is not None and magnitude.data_degree == 0 else 24
        return Shape("string", chars=Bound.of(digits)), ZERO
    if value.kind in ("string", "any"):
        return Shape("string", chars=value.chars + Bound.of(64), reads=value.reads), ZERO
    return Shape("string", chars=Bound.of(64)), ZERO


def _replace(analysis: _Analysis, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    text, search, replacement = _arg(args, 0), _arg(args, 1), _arg(args, 2)
    if isinstance(search.exact, str) and search.exact:
        chars = text.chars * _ceil_div(replacement.chars, len(search.exact)).join(ONE)
    else:
        # An empty search string inserts the replacement before every character and at the end.
        chars = text.chars + (text.chars + ONE) * replacement.chars
    out = Shape("string", chars=chars, reads=union(text.reads, replacement.reads))
    # Finding the search string in the text is a search; building the result copies it.
    return out, _search(text, search) + _chars_as_steps(chars)


def _substring(analysis: _Analysis, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    text = _arg(args, 0)
    return Shape("string", chars=text.chars, reads=text.reads), ZERO


def _trim(analysis: _Analysis, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    """trim/ltrim/rtrim/btrim: each trimmed character is looked up among the trim characters."""
    if node.trim_mode is not None:  # trim(BOTH chars FROM s): the text comes last
        text, chars = _arg(args, len(args) - 1), (_arg(args, 0) if len(args) > 1 else NULL)
    else:
        text, chars = _arg(args, 0), _arg(args, 1)
    return Shape("string", chars=text.chars, reads=text.reads), _search(text, chars)


def _extreme(analysis: _Analysis, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    """coll.max/coll.min: one comparison per element, nested elements walked."""
    subject = _arg(args, 0)
    return subject.element, subject.length + _compared(subject)


def _coalesce(analysis: _Analysis, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    out = NULL
    for arg in args:
        out = join(out, arg)
    return out, ZERO


def _list_conversion(analysis: _Analysis, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    subject = _arg(args, 0)
    length = subject.length
    return _list_of(SCALAR.with_(chars=subject.element.chars), length, reads=subject.reads), length


def _range(analysis: _Analysis, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    if len(args) < 2:
        return NULL, ZERO  # Neo4j refuses the call
    return analysis.range_(node, args)


@dataclass(frozen=True)
class FunctionModel:
    """A reviewed function's cost model: its handler gives the result's shape and the steps one call
    takes; ``regex`` is the position of an argument read as a regular expression (checked like
    ``=~``); ``pass_through``: its result is a value the query already holds (nothing new is built)."""

    handler: _FunctionHandler
    regex: int | None = None
    pass_through: bool = False


_F = FunctionModel

# Every function the guard lets a query call, each with its reviewed cost model; any other name is
# refused (function.unreviewed). Names are lower case (Neo4j resolves built-ins case-insensitively).
# Compared against SHOW FUNCTIONS of Neo4j 5.26 and 2026.x (Cypher 5 and 25): every built-in is here
# except file() and linenumber() (LOAD CSV only, denied) and graph.byName()/graph.byElementId() (USE).
# APOC and other plugins' functions are refused until someone reviews each.
FUNCTIONS: dict[str, FunctionModel] = {
    "range": _F(_range),
    "collect": _F(_collect),
    "size": _F(_size),
    "length": _F(_size),
    "char_length": _F(_size),
    "character_length": _F(_size),
    "head": _F(_element_of, pass_through=True),
    "last": _F(_element_of, pass_through=True),
    "tail": _F(_same, pass_through=True),
    "reverse": _F(_same),
    "isempty": _F(_boolean),
    "exists": _F(_boolean),
    "coalesce": _F(_coalesce, pass_through=True),
    "keys": _F(_stored_list, pass_through=True),
    "labels": _F(_stored_list, pass_through=True),
    "properties": _F(_stored_list, pass_through=True),
    "nodes": _F(_path_list(relationships=False)),
    "relationships": _F(_path_list(relationships=True)),
    "startnode": _F(_entity),
    "endnode": _F(_entity),
    "split": _F(_split),
    "replace": _F(_replace),
    "substring": _F(_substring),
    "left": _F(_substring),
    "right": _F(_substring),
    "trim": _F(_trim),
    "ltrim": _F(_trim),
    "rtrim": _F(_trim),
    "btrim": _F(_trim),
    "toupper": _F(_string_like()),
    "tolower": _F(_string_like()),
    "upper": _F(_string_like()),
    "lower": _F(_string_like()),
    # Unicode normalisation can expand a character into several (NFKD: up to 18).
    "normalize": _F(_string_like(18)),
    "tostring": _F(_to_string),
    "tostringornull": _F(_to_string),
    "tointeger": _F(_to_integer),
    "tointegerornull": _F(_to_integer),
    "tofloat": _F(_number_of),
    "tofloatornull": _F(_number_of),
    "toboolean": _F(_boolean),
    "tobooleanornull": _F(_boolean),
    "tostringlist": _F(_list_conversion),
    "tointegerlist": _F(_list_conversion),
    "tofloatlist": _F(_list_conversion),
    "tobooleanlist": _F(_list_conversion),
    "abs": _F(_abs),
    "count": _F(_number_of),
    "sum": _F(_number_of),
    "avg": _F(_number_of),
    "stdev": _F(_number_of),
    "stdevp": _F(_number_of),
    "percentilecont": _F(_number_of),
    "percentiledisc": _F(_element_of, pass_through=True),
    "min": _F(_same, pass_through=True),
    "max": _F(_same, pass_through=True),
    "id": _F(_number_of),
    "elementid": _F(_scalar),
    "type": _F(_scalar),
    "valuetype": _F(_scalar),
    "timestamp": _F(_number_of),
    "rand": _F(_number_of),
    "randomuuid": _F(_scalar),
    "ceil": _F(_number_of),
    "floor": _F(_number_of),
    "round": _F(_number_of),
    "sign": _F(_number_of),
    "sqrt": _F(_number_of),
    "exp": _F(_number_of),
    "log": _F(_number_of),
    "log10": _F(_number_of),
    "e": _F(_number_of),
    "pi": _F(_number_of),
    "sin": _F(_number_of),
    "cos": _F(_number_of),
    "tan": _F(_number_of),
    "cot": _F(_number_of),
    "asin": _F(_number_of),
    "acos": _F(_number_of),
    "atan": _F(_number_of),
    "atan2": _F(_number_of),
    "haversin": _F(_number_of),
    "degrees": _F(_number_of),
    "radians": _F(_number_of),
    "isnan": _F(_boolean),
    "point": _F(_parse_text),
    "point.distance": _F(_number_of),
    "point.withinbbox": _F(_boolean),
    "distance": _F(_number_of),
    "date": _F(_parse_text),
    "datetime": _F(_parse_text),
    "localdatetime": _F(_parse_text),
    "localtime": _F(_parse_text),
    "time": _F(_parse_text),
    "duration": _F(_parse_text),
    "duration.between": _F(_scalar),
    "duration.inmonths": _F(_scalar),
    "duration.indays": _F(_scalar),
    "duration.inseconds": _F(_scalar),
    "date.truncate": _F(_scalar),
    "datetime.truncate": _F(_scalar),
    "date.statement": _F(_scalar),
    "date.transaction": _F(_scalar),
    "date.realtime": _F(_scalar),
    "datetime.fromepoch": _F(_scalar),
    "datetime.fromepochmillis": _F(_scalar),
    "nullif": _F(_same, pass_through=True),
    # Cypher 25 (Neo4j 2026.x) and spellings 5.26 lacks
    "stdev_pop": _F(_number_of),
    "stdev_samp": _F(_number_of),
    "percentile_cont": _F(_number_of),
    "percentile_disc": _F(_element_of, pass_through=True),
    "collect_list": _F(_collect),
    "cardinality": _F(_size),
    "path_length": _F(_size),
    "ceiling": _F(_number_of),
    "ln": _F(_number_of),
    "sinh": _F(_number_of),
    "cosh": _F(_number_of),
    "tanh": _F(_number_of),
    "coth": _F(_number_of),
    "property_exists": _F(_boolean),
    "local_datetime": _F(_parse_text),
    "local_time": _F(_parse_text),
    "zoned_datetime": _F(_parse_text),
    "zoned_time": _F(_parse_text),
    "duration_between": _F(_scalar),
    "datetime.realtime": _F(_scalar),
    "datetime.statement": _F(_scalar),
    "datetime.transaction": _F(_scalar),
    "localdatetime.realtime": _F(_scalar),
    "localdatetime.statement": _F(_scalar),
    "localdatetime.transaction": _F(_scalar),
    "localdatetime.truncate": _F(_scalar),
    "localtime.realtime": _F(_scalar),
    "localtime.statement": _F(_scalar),
    "localtime.transaction": _F(_scalar),
    "localtime.truncate": _F(_scalar),
    "time.realtime": _F(_scalar),
    "time.statement": _F(_scalar),
    "time.transaction": _F(_scalar),
    "time.truncate": _F(_scalar),
    "format": _F(_format),
    "uuid": _F(_parse_text),
    "uuid.leastsignificantbits": _F(_number_of),
    "uuid.mostsignificantbits": _F(_number_of),
    "string.indexof": _F(_index_of),
    "string.join": _F(_string_join),
    "string.regexreplace": _F(_regex_replace, regex=1),
    "coll.indexof": _F(_index_of),
    "coll.max": _F(_extreme, pass_through=True),
    "coll.min": _F(_extreme, pass_through=True),
    "coll.distinct": _F(_list_builder),
    "coll.flatten": _F(_list_builder),
    "coll.insert": _F(_list_builder),
    "coll.remove": _F(_list_builder),
    "coll.sort": _F(_list_builder),
    "vector": _F(_parse_text),
    "vector.similarity.cosine": _F(_vector_math),
    "vector.similarity.euclidean": _F(_vector_math),
    "vector_distance": _F(_vector_math),
    "vector_norm": _F(_vector_math),
    "vector_dimension_count": _F(_number_of),
    # APOC, where a policy allows it: only the functions reviewed here (the rest are refused)
    "apoc.text.join": _F(_string_join),
    "apoc.coll.sum": _F(_list_sum),
    "apoc.map.merge": _F(_map_merge),
}
# Aggregations Neo4j's memory limit sees: per row they may hold max_data_chars elements.
_TRACKED = frozenset({"collect", "collect_list"})
