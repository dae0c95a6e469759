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
be a timestamp. A ``COLLECT {}`` subquery, which Neo4j does not track either, holds
one element per row of its body: its UNWINDs' lengths multiplied, the data once for
its MATCHes, capped by a LIMIT known before the query runs.

:func:`measure` returns every objection found, each with its rule; the rules in
``gateway.guard.rules`` report the first of their kind. Every expression node
of the tree must be reached by the walk, or the query is refused
(``size.iterations``, naming the construct): a construct added to the parser
later is refused until this module bounds it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gateway import catalogue
from gateway.cypher import ParsedQuery, ast
from gateway.guard import functions, regex
from gateway.guard.bounds import (
    BOOLEAN,
    DATA,
    ENTITY,
    NULL,
    NUMBER,
    ONE,
    STORED,
    ZERO,
    Bound,
    Reads,
    Shape,
    join,
    own,
    union,
)
from gateway.guard.size_math import (
    FREE,
    Cost,
    arithmetic,
    as_element,
    ceil_div,
    chars_as_steps,
    compared,
    list_of,
    map_of,
    path_shape,
    plus,
    read,
    search,
    smaller,
    string_of,
    value_shape,
    without,
)
from gateway.policy import Limits

_QUANTITY = {"length": "length", "elements": "element count", "chars": "characters"}
# Reduces analysed inside each other's step: deeper nesting is refused rather than bounded.
MAX_REDUCE_DEPTH = 4
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
        self.unwound: dict[int, Bound] = {}  # per UNWIND clause, the length of the list it unwinds

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
                self.unwound[id(clause)] = shape.length
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
            self.bind(part.variable, env, path_shape(rels, frozenset({part.variable.name})))

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
                    self.bind(element.variable, env, path_shape(inner, frozenset({element.variable.name})))
                if element.where is not None:
                    self.root(element.where, env)
        return rels

    def _element(self, var: ast.Variable | None, env: Env, repeat: Bound) -> None:
        if var is None:
            return
        own_reads = frozenset({var.name})
        shape = ENTITY.with_(reads=own_reads) if repeat == ONE else list_of(ENTITY, repeat, reads=own_reads)
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
                self._param_shapes[name] = value_shape(self.params[name], depth=0)
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
        cost = Cost(trip * per_step, union(source.reads, without(step.reads, var)))
        if body is None:
            return cost, None
        absorb = own(body.reads, var) or (stored_trip and body.reads is not None)
        elements = trip * (as_element(body).at_unit_data() if absorb else as_element(body))
        chars = trip * (body.chars.at_unit_data() if absorb else body.chars)
        built = Shape("list", length=trip, elements=elements, chars=chars, item=body,
                      reads=union(source.reads, without(body.reads, var)))  # fmt: skip
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
        absorb = own(without(step.reads, node.accumulator.name), var)
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
        reads = union(init.reads, source.reads, without(without(step.reads, var), node.accumulator.name))
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
            copied = {"string": chars_as_steps(finals["chars"]), "list": finals["length"]}.get(
                acc.kind, finals["length"] + chars_as_steps(finals["chars"])
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
            self.bind(node.path_variable, inner, path_shape(rels, frozenset({node.path_variable.name})))
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
        # EXISTS and COUNT build nothing from them (each row's expressions are bounded where they stand).
        if node.kind == "EXISTS":
            return BOOLEAN, Cost(ONE)
        if node.kind == "COUNT":
            return NUMBER, Cost(ONE)
        item = next(iter(columns.values())) if len(columns) == 1 else STORED
        # COLLECT holds every row: as many as its UNWINDs, MATCHes and LIMITs let through.
        trip = DATA if node.body is None else _rows(node.body, self, ONE)
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
            return string_of(value), FREE
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
            elements = elements + as_element(shape)
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
        out = map_of(shapes)
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
                shapes.append(read(env.get(node.subject.name, STORED)))
        out = map_of(shapes)
        self.check_value(node, out)
        return out, cost

    def property(self, node: ast.Property, env: Env) -> tuple[Shape, Cost]:
        subject, cost = self.expr(node.subject, env)
        if subject.kind == "map" and subject.item is not None:
            return subject.item, cost
        return read(subject), cost

    def index(self, node: ast.Index, env: Env) -> tuple[Shape, Cost]:
        (subject, _), cost = self.exprs([node.subject, node.index], env)
        if subject.kind == "map" and subject.item is not None:
            return subject.item, cost
        if subject.kind in ("entity", "map", "path"):
            return read(subject), cost  # n[key]: a property read
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
            out = plus(left, right)
            if op == "+" and left.kind == "number" and right.kind == "number":
                out = arithmetic("+", left, right)
            # Concatenation copies at most the result, which check_value bounds; a reduce that
            # concatenates at every step is bounded by the accumulator rule.
            self.check_value(node, out)
            return out, cost
        if op in ("-", "*", "/", "%", "^"):
            return arithmetic(op, left, right), cost
        if op in _PREDICATE_OPS:
            return BOOLEAN, cost + self.predicate_cost(node, op, left, right, node.right)
        return BOOLEAN, cost

    def predicate_cost(self, node: ast.Node, op: str, left: Shape, right: Shape, right_node: ast.Expr) -> Cost:
        """What one comparison, search or match of ``left`` with ``right`` walks (``=~``: its backtracking)."""
        reads = union(left.reads, right.reads)
        if op == "IN":
            # One comparison per element, each at most as long as that element: the list's whole content.
            # A stored list's length is walked in full even though one value read from it is paid.
            return Cost(right.length.join(compared(right)), right.reads)
        if op in ("=", "<>", "<", ">", "<=", ">="):
            # Equality and order stop at the shorter side; lists compare element by element, nested ones too.
            return Cost(smaller(compared(left), compared(right)), reads)
        if op in ("STARTS_WITH", "ENDS_WITH"):
            return Cost(chars_as_steps(smaller(left.chars, right.chars)), reads)
        if op == "CONTAINS":
            return Cost(search(left, right), reads)
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
        return string_of(node.word), FREE

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
        model = functions.cost_model(node.name)
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
            self.check_value(node, out, tracked=model.tracked)
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
                return list_of(NUMBER, DATA, reads=None), ZERO
            divisor = abs(exact[2]) if isinstance(exact[2], int) and exact[2] else 1
            length = ceil_div(bounds[0] + bounds[1], divisor) + ONE
        reads = union(start.reads, end.reads, step.reads)
        self.limit(
            catalogue.SIZE_RANGE, length, self.limits.max_range_length,
            f"{self.text(node)!r} produces a number of elements that",
        )  # fmt: skip
        item_bound = (start.int_bound() or ZERO).join(end.int_bound() or ZERO)
        return list_of(NUMBER.with_(magnitude=item_bound), length, reads=reads), ZERO


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


def _pattern_variables(path: ast.Path) -> frozenset[str]:
    return frozenset(n.name for n in path.walk() if isinstance(n, ast.Variable))


def _own_match(reads: Reads, bound: frozenset[str], match: str) -> Reads:
    """Reads of the pattern's own variables become the match's own (one element per match)."""
    if reads is None or not reads & bound:
        return reads
    return (reads - bound) | {match}


def _rows(body: ast.QueryBody, analysis: _Analysis, rows: Bound) -> Bound:
    """An upper bound of the rows ``body`` answers, entered with ``rows`` rows.

    An UNWIND multiplies the rows by its list's length; a MATCH (a procedure's YIELD) by what the data
    holds, counted once: rows the data decides are ``D`` however many patterns they pass, as for
    ``collect()``. A LIMIT known before the query runs caps them; UNION adds its branches, WHEN
    takes the largest, NEXT passes each segment's rows to the next.
    """
    if isinstance(body, ast.Next):
        for segment in body.segments:
            rows = _rows(segment, analysis, rows)
        return rows
    if isinstance(body, ast.Union):
        return sum((_rows(query, analysis, rows) for query in body.queries), ZERO)
    if isinstance(body, ast.When):
        branches = [branch.body for branch in body.branches] + ([body.otherwise] if body.otherwise else [])
        out = ZERO
        for query in branches:
            out = out.join(_rows(query, analysis, rows))
        return out
    for clause in body.clauses:
        if isinstance(clause, ast.Match | ast.CallProcedure):
            rows = _data_once(rows * DATA)
        elif isinstance(clause, ast.Unwind):
            rows = _data_once(rows * analysis.unwound.get(id(clause), DATA))
        elif isinstance(clause, ast.CallSubquery) and _returns(clause.body):
            inner = _rows(clause.body, analysis, ONE)
            rows = _data_once(rows * (inner.join(ONE) if clause.optional else inner))
        elif isinstance(clause, ast.With | ast.Return):
            rows = _limited(rows, clause.projection.limit, analysis)
        elif isinstance(clause, ast.OrderBySkipLimit):
            rows = _limited(rows, clause.limit, analysis)
    return rows


def _returns(body: ast.QueryBody) -> bool:
    """Whether a CALL subquery returns rows (a unit subquery, without RETURN, passes its caller's on)."""
    if isinstance(body, ast.Next):
        return _returns(body.segments[-1])
    if isinstance(body, ast.Union):
        return _returns(body.queries[0])
    if isinstance(body, ast.When):
        return _returns(body.branches[0].body) if body.branches else False
    return any(isinstance(clause, ast.Return) for clause in body.clauses)


def _data_once(rows: Bound) -> Bound:
    """``rows`` with the data counted once in each term (rows the data decides are ``D``, as collect()'s)."""
    out: dict[tuple[int, ...], int] = {}
    for exps, coefficient in rows.terms.items():
        once = (min(exps[0], 1), *exps[1:]) if exps else exps
        out[once] = out.get(once, 0) + coefficient
    return Bound(out)


def _limited(rows: Bound, limit: ast.Expr | None, analysis: _Analysis) -> Bound:
    """``rows`` capped by a LIMIT known before the query runs (a literal or a parameter)."""
    value: object = None
    if isinstance(limit, ast.Literal):
        value = limit.value
    elif isinstance(limit, ast.Parameter):
        value = analysis.params.get(limit.name)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        return rows
    return smaller(rows, Bound.of(value))
