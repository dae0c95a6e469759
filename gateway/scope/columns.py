"""Keep the agent's columns: the rewrite must not show in what the agent gets back.

Two things the rewrite adds could reach the result:

* the generated variables (``__gw_p1 = (a)-->(b)``, ``(__gw_n1)``, ``-[__gw_r1]->``): ``RETURN *`` and ``WITH *`` would
  carry them as extra columns, group and deduplicate by them, and send them through UNION and
  COLLECT. A ``*`` that would see one is replaced by the agent's own variables it stands for,
  in the order Neo4j gives them (sorted by name, before the listed items, leaving out a name
  also listed). Under hidden properties a final ``RETURN *`` is spelt out the same way even
  when nothing is generated, so the projection wrapper (``projection.py``) names its columns;
* the rewritten text of an unaliased projection: Neo4j names such a column by the expression's
  source text (a variable and a map projection by the variable's name), so
  ``RETURN COUNT { (a)-->() }`` would come back under the rewritten text. Such an item gets
  ``AS`` the name Neo4j gives the agent's own.

Which variables a ``*`` stands for follows Neo4j 5's scoping (checked against 5.26): a query
part's *own* variables, those its clauses declared (MATCH and OPTIONAL MATCH pattern variables,
UNWIND, WITH/RETURN items, YIELD fields, the columns a CALL subquery returns). Variables a
subquery only imports (``CALL (x) { … }``, EXISTS/COUNT/COLLECT bodies) are not its own.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass, field

from gateway.cypher import ParsedQuery, ast
from gateway.scope.calls import NAME_ONLY_PROCEDURES
from gateway.scope.edits import Edits, token_at
from gateway.scope.predicates import quote_name

# Pattern owners inside expressions: an item holding one is rewritten.
_REWRITTEN = (ast.SubqueryExpr, ast.PatternComprehension, ast.PatternPredicate)


@dataclass
class _Part:
    """The variables one query part has declared so far, and which of them the gateway generated."""

    own: set[str] = field(default_factory=set)
    generated: set[str] = field(default_factory=set)


def keep_agent_columns(
    parsed: ParsedQuery,
    edits: Edits,
    generated: dict[ast.PatternPart, list[str]],
    rewritten: Container[ast.Node] = frozenset(),
    expand: Container[ast.Projection] = frozenset(),
) -> dict[ast.Projection, list[str]]:
    """Record the edits that keep generated variables out of ``*`` and rewritten text out of column names.

    ``generated`` maps each MATCH pattern part to the names the rewrite gave in it (its path, its
    anonymous elements); ``rewritten`` holds the other nodes whose text the rewrite changed.
    ``expand``: projections whose ``*`` is replaced by the variables it stands for even when none
    is generated (the final RETURNs the projection wrapper must name column by column). Returns,
    for each of those it could expand, its columns in Neo4j's order.
    """
    for node in parsed.walk():
        if isinstance(node, ast.Return):
            for item in node.projection.items:
                if renamed_by_rewrite(item, rewritten):
                    edits.close(item, f" AS {_backticked(column_name(parsed, item))}")
    columns = _Columns(parsed, edits, generated, expand)
    for statement in parsed.statements:
        columns.body(statement.body, _Part())
    for node in parsed.walk():
        # Subquery expressions start a query part of their own (their outer variables are imported).
        if isinstance(node, ast.SubqueryExpr) and node.body is not None:
            columns.body(node.body, _Part())
    return columns.expanded


def renamed_by_rewrite(item: ast.ReturnItem, rewritten: Container[ast.Node] = frozenset()) -> bool:
    """An unaliased item whose text the rewrite changes: it gets ``AS`` the agent's column name.

    ``rewritten``: the nodes other than pattern owners whose text the rewrite changes.
    """
    return item.alias is None and any(isinstance(n, _REWRITTEN) or n in rewritten for n in item.expression.walk())


def _backticked(text: str) -> str:
    return "`" + text.replace("`", "``") + "`"


class _Columns:
    def __init__(
        self,
        parsed: ParsedQuery,
        edits: Edits,
        generated: dict[ast.PatternPart, list[str]],
        expand: Container[ast.Projection],
    ) -> None:
        self.parsed, self.edits, self.generated, self.expand = parsed, edits, generated, expand
        self.expanded: dict[ast.Projection, list[str]] = {}

    def body(self, body: ast.QueryBody, part: _Part) -> list[str]:
        """Walk one query (each UNION or WHEN branch from ``part``); the names of the columns it returns."""
        if isinstance(body, ast.Next):
            # Each segment's returned columns are the next one's own variables; none is generated.
            columns: list[str] = []
            for index, segment in enumerate(body.segments):
                columns = self.body(segment, part if index == 0 else _Part(set(columns)))
            return columns
        queries: list[ast.SingleQuery]
        if isinstance(body, ast.Union):
            queries = body.queries
        elif isinstance(body, ast.When):
            queries = [branch.body for branch in body.branches]
            queries += [body.otherwise] if body.otherwise is not None else []
        else:
            queries = [body]
        results = [self.single(query, _Part(set(part.own), set(part.generated))) for query in queries]
        return results[0]

    def single(self, query: ast.SingleQuery, part: _Part) -> list[str]:
        columns: list[str] = []
        for clause in query.clauses:
            if isinstance(clause, ast.Match):
                for pattern in clause.patterns:
                    part.own.update(_declared(pattern))
                    if pattern in self.generated:
                        part.own.update(self.generated[pattern])
                        part.generated.update(self.generated[pattern])
            elif isinstance(clause, ast.With | ast.Return):
                columns = self.projection(clause.projection, part)
            elif isinstance(clause, ast.Unwind):
                part.own.add(clause.variable.name)
            elif isinstance(clause, ast.Let):
                part.own.update(item.variable.name for item in clause.items)
            elif isinstance(clause, ast.CallSubquery):
                # Depth bounded by the parser's nesting limit, like the query's own brackets.
                part.own.update(self.body(clause.body, _Part()))
            elif isinstance(clause, ast.CallProcedure):
                part.own.update(_yielded(clause))
        return columns

    def projection(self, projection: ast.Projection, part: _Part) -> list[str]:
        """Expand a ``*`` that would carry generated variables; the part's variables afterwards."""
        listed = [name for item in projection.items if (name := _item_name(item)) is not None]
        if not projection.star:
            part.own, part.generated = set(listed), set()
            return listed
        # A listed name is not repeated by the `*` (`RETURN *, a` has one column a, after the others).
        agent = sorted(part.own - part.generated - set(listed))
        # With no variable at all Neo4j refuses the `*` itself: it stays, for Neo4j to say so.
        expand = bool(part.own - part.generated) and (bool(part.generated) or projection in self.expand)
        if expand:
            star = token_at(self.parsed, projection.start, "*")  # the first token, or the one after DISTINCT
            self.edits.replace(star, star + 1, ", ".join(quote_name(name) for name in agent))
            if not agent:  # everything it stood for is listed: `*, a` becomes `a`
                comma = token_at(self.parsed, star + 1, ",")
                self.edits.replace(comma, comma + 1, "")
            part.own -= part.generated
            part.generated = set()
            if projection in self.expand:
                self.expanded[projection] = agent
        part.own.update(listed)
        return [*sorted(part.own - set(listed)), *listed]


def column_name(parsed: ParsedQuery, item: ast.ReturnItem) -> str:
    """The name Neo4j gives ``item``'s column (checked against 5.26)."""
    return _item_name(item) or parsed.source(item.expression)


def _item_name(item: ast.ReturnItem) -> str | None:
    """The variable an item binds: its alias, or the variable it is (a map projection's too)."""
    if item.alias is not None:
        return item.alias.name
    expression = ast.unparen(item.expression)
    if isinstance(expression, ast.MapProjection):
        return expression.subject.name
    return expression.name if isinstance(expression, ast.Variable) else None


def _declared(pattern: ast.PatternPart) -> set[str]:
    """The variables a MATCH pattern declares (its path, its elements, its groups' elements)."""
    names = {pattern.variable.name} if pattern.variable is not None else set()
    paths = [pattern.path]
    while paths:
        for element in paths.pop().elements:
            if isinstance(element, ast.QuantifiedPath):
                paths.append(element.path)
            elif element.variable is not None:
                names.add(element.variable.name)
    return names


def _yielded(clause: ast.CallProcedure) -> list[str]:
    if clause.yield_star:
        return list(NAME_ONLY_PROCEDURES.get(clause.name.lower(), ()))
    return [item.alias.name if item.alias is not None else item.name for item in clause.yield_items]
