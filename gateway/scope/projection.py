"""Never fetch a hidden value: the answer's nodes and relationships come back as maps of shown keys.

Under hidden properties (either form: the allow-list ``visible_properties`` or the deny-list
``hidden_properties``) the sandbox leaves hidden keys out of what it converts, but Neo4j would
still read and send them, and the driver decode them: the answer's time would grow with their
size. So the query's final ``RETURN`` (each UNION or WHEN branch's, the last NEXT segment's)
becomes a ``WITH`` of the same items, ordering, skip and limit, followed by two projections::

    … WITH <the agent's items> ORDER BY … LIMIT …
    WITH [c1, c2] AS __gw_v
    WITH CASE WHEN valueType(__gw_v) =~ <holds an element or a map> THEN [<each column wrapped>]
         ELSE __gw_v END AS __gw_v
    RETURN __gw_v[0] AS c1, __gw_v[1] AS c2

A column that holds no element and no map is passed as it is (the ``valueType`` test); a RETURN
whose every column surely holds none (``plain.py``: ``t.id``, ``count(*)``) is not wrapped at all.
When every column is plain or a variable that is surely one node or relationship wherever the
query binds it (``Kinds``: ``RETURN t, t.id``), the row list and the container levels are left
out: each element column becomes its marked map alone, ``CASE WHEN t IS NULL THEN NULL ELSE {…}
END``, a few hundred characters instead of some seven thousand for Neo4j to plan. In a
wrapped column, each node becomes ``{__gw: $__gw_shown, n: elementId, l: labels, p: [[key,
value], …]}`` holding only the keys ``ShownKeys`` lets through (plus those the result check
reads), each relationship likewise, and each list, map or path that holds one a marked
container of its items; ``sandbox/rebuild.py`` turns them back into the elements themselves, so
the agent's answer is the one it would get without the wrapper. Only the values of shown keys
are ever read: ``keys()`` names the others without loading them.

The wrapper covers ``DEPTH`` levels of lists, maps and paths inside a column (``[[[n]]]``,
``{a: [[p]]}``, ``collect(nodes(p))``). Cypher has no recursion, so below them a value that may
still hold an element (``valueType()`` names every type a list holds; maps are opened
``LOOKAHEAD`` more levels) becomes ``{__gw: tag, deep: true}``: Neo4j sends the marker, not the
value, and the sandbox refuses the job (rule ``sandbox.too_deep``). Nested lists of plain values
are passed at any depth. A final ``RETURN *`` is spelt out first (``columns.py``), so its
columns are wrapped like any other; a query cannot end in a procedure call under scope (the
rewrite refuses every one).

Ordering and ``DISTINCT`` are the agent's own: they run in the agent's projection, before the
wrapper, and the two appended projections neither reorder nor group.
"""

from __future__ import annotations

import secrets
from collections.abc import Collection, Container, Mapping
from dataclasses import dataclass, field
from typing import Literal

from gateway.cypher import ParsedQuery, ast
from gateway.scope.columns import column_name, renamed_by_rewrite
from gateway.scope.edits import Edits, token_at
from gateway.scope.plain import Plainness
from gateway.scope.predicates import GENERATED_PREFIX, quote_name
from gateway.scope.visible_props import DEFAULT_PARAMETER, SHOWN_PARAMETERS, Kinds
from sandbox.rebuild import MARK, TAG_PARAMETER, TOO_DEEP
from sandbox.wire import VisibleKeys

# How many levels of lists, maps and paths inside a column the wrapper rebuilds; below them, how
# many more levels of maps it opens to tell plain values from elements (past both: sandbox.too_deep).
DEPTH = 3
LOOKAHEAD = 2
HIDE_PARAMETER = f"{GENERATED_PREFIX}hide"
KEEP_PARAMETER = f"{GENERATED_PREFIX}keep"
ElementKind = Literal["node", "relationship"]
# How a final RETURN's column is projected: passed as it is, or as the one element it surely holds.
ColumnForm = Literal["plain", "node", "relationship"]
ROW = f"{GENERATED_PREFIX}row"
# valueType() names every type a list holds, however nested; a map's values it does not name.
_HOLDS_ELEMENTS = "'.*(NODE|RELATIONSHIP|PATH|MAP|ANY).*'"
_HOLDS_GRAPH = "'.*(NODE|RELATIONSHIP|PATH).*'"


@dataclass(frozen=True)
class ShownKeys:
    """Which property keys of an element may leave Neo4j: the one place the wrapper asks.

    Two forms, as the policy's (``sandbox/withhold.py`` applies the same rule after the read):

    * the deny-list ``hidden``: label or type -> the keys it hides (compared case-insensitively,
      as the guard and the sandbox compare them);
    * the allow-list ``visible`` (``visible_properties``; exact names): a node shows the keys
      listed for every one of its labels that has an entry, ``default`` when none has; a
      relationship its type's list, else ``default``.

    ``keep``: hidden keys the result check reads, sent for it and withheld by the sandbox after it.
    """

    hidden: Mapping[str, Collection[str]] = field(default_factory=dict)
    keep: Collection[str] = ()
    visible: VisibleKeys | None = None

    def active(self) -> bool:
        return self.visible is not None or any(self.hidden.values())

    def condition(self, key: str, owners: str, kind: ElementKind) -> str:
        """Cypher: ``key`` (a string) may be sent for an element of ``kind`` with ``owners`` (its labels or [type])."""
        kept = f"toLower({key}) IN ${KEEP_PARAMETER}"
        if self.visible is not None:
            lists = f"${SHOWN_PARAMETERS[kind]}"
            listed = f"o IN keys({lists})"
            shown = (
                f"CASE WHEN any(o IN {owners} WHERE {listed}) THEN all(o IN {owners} WHERE NOT {listed} OR "
                f"{key} IN {lists}[o]) ELSE {key} IN ${DEFAULT_PARAMETER} END"
            )
            return f"({shown} OR {kept})"
        lowered = f"toLower({key})"
        hidden = f"reduce(h = [], o IN {owners} | h + coalesce(${HIDE_PARAMETER}[toLower(o)], []))"
        return f"(NOT {lowered} IN {hidden} OR {kept})"

    def parameters(self) -> dict[str, object]:
        keep = sorted({k.lower() for k in self.keep})
        if self.visible is not None:
            return {
                SHOWN_PARAMETERS["node"]: {label: list(keys) for label, keys in self.visible.nodes.items()},
                SHOWN_PARAMETERS["relationship"]: {
                    rel_type: list(keys) for rel_type, keys in self.visible.relationships.items()
                },
                DEFAULT_PARAMETER: list(self.visible.default),
                KEEP_PARAMETER: keep,
            }
        hide: dict[str, list[str]] = {}
        for owner, keys in self.hidden.items():
            hide.setdefault(owner.lower(), [])
            hide[owner.lower()] = sorted(set(hide[owner.lower()]) | {k.lower() for k in keys})
        return {HIDE_PARAMETER: hide, KEEP_PARAMETER: keep}


def _properties(value: str, owners: str, kind: ElementKind, shown: ShownKeys, depth: int) -> str:
    key = f"{GENERATED_PREFIX}k{depth}"
    return f"[{key} IN keys({value}) WHERE {shown.condition(key, owners, kind)} | [{key}, {value}[{key}]]]"


def _marked(fields: str) -> str:
    return f"{{{MARK}: ${TAG_PARAMETER}, {fields}}}"


def _element(value: str, kind: ElementKind, shown: ShownKeys, depth: int) -> str:
    """Cypher: the node or relationship ``value`` as the marked map of its shown keys."""
    if kind == "node":
        return _marked(
            f"n: elementId({value}), l: labels({value}), "
            f"p: {_properties(value, f'labels({value})', 'node', shown, depth)}"
        )
    return _marked(
        f"r: elementId({value}), t: type({value}), s: elementId(startNode({value})), "
        f"e: elementId(endNode({value})), p: {_properties(value, f'[type({value})]', 'relationship', shown, depth)}"
    )


def wrapped(value: str, shown: ShownKeys, depth: int) -> str:
    """Cypher: ``value`` (a variable) with its elements projected, ``depth`` levels of containers deep."""
    branches = [
        f"WHEN {value} IS NULL THEN NULL",
        f"WHEN {value} IS :: NODE THEN {_element(value, 'node', shown, depth)}",
        f"WHEN {value} IS :: RELATIONSHIP THEN {_element(value, 'relationship', shown, depth)}",
    ]
    if depth == 0:
        # Past the levels the wrapper rebuilds: a value that may still hold an element is replaced
        # by a marker the sandbox refuses (sandbox.too_deep), never sent with its hidden values.
        branches.append(f"WHEN {_may_hold_elements(value, LOOKAHEAD)} THEN {_marked(f'{TOO_DEEP}: true')}")
    if depth > 0:
        item, key = f"{GENERATED_PREFIX}i{depth}", f"{GENERATED_PREFIX}k{depth}"
        items = (
            f"CASE WHEN {value} IS :: PATH THEN [{item} IN nodes({value}) + relationships({value}) | [NULL, {item}]] "
            f"WHEN {value} IS :: MAP THEN [{key} IN keys({value}) | [{key}, {value}[{key}]]] "
            f"ELSE [{item} IN {value} | [NULL, {item}]] END"
        )
        kind = f"CASE WHEN {value} IS :: PATH THEN 'path' WHEN {value} IS :: MAP THEN 'map' ELSE 'list' END"
        pair = f"{GENERATED_PREFIX}e{depth}"
        element = f"{GENERATED_PREFIX}x{depth}"
        container = _marked(
            f"c: {kind}, i: [{pair} IN {items} | [{pair}[0], "
            f"[{element} IN [{pair}[1]] | {wrapped(element, shown, depth - 1)}][0]]]"
        )
        branches.append(
            f"WHEN {value} IS :: PATH OR {value} IS :: MAP OR "
            f"({value} IS :: LIST<ANY> AND valueType({value}) =~ {_HOLDS_ELEMENTS}) THEN {container}"
        )
    return f"CASE {' '.join(branches)} ELSE {value} END"


def _may_hold_elements(value: str, depth: int) -> str:
    """Cypher: ``value`` (a variable, not itself a node or relationship) could hold an element.

    ``valueType()`` names every type a list holds, however nested, but not a map's values: maps
    are opened ``depth`` more levels, past which one counts as holding an element. Nested lists
    of plain values never do.
    """
    if depth == 0:
        return f"({value} IS :: PATH OR {value} IS :: MAP OR valueType({value}) =~ {_HOLDS_ELEMENTS})"
    key, item = f"{GENERATED_PREFIX}dk{depth}", f"{GENERATED_PREFIX}dx{depth}"
    inner = _may_hold_elements(item, depth - 1)
    return (
        f"CASE WHEN {value} IS :: PATH THEN true "
        f"WHEN {value} IS :: MAP THEN any({key} IN keys({value}) WHERE any({item} IN [{value}[{key}]] WHERE {inner})) "
        f"WHEN {value} IS :: LIST<ANY> THEN valueType({value}) =~ {_HOLDS_GRAPH} OR "
        f"(valueType({value}) =~ {_HOLDS_ELEMENTS} AND any({item} IN {value} WHERE {inner})) "
        "ELSE false END"
    )


def final_queries(body: ast.QueryBody) -> list[ast.SingleQuery]:
    """The single queries whose RETURN is the answer's: every UNION and WHEN branch, NEXT's last segment."""
    return ast.single_queries(body, answer_only=True)


def final_returns(parsed: ParsedQuery) -> list[ast.Return]:
    """The RETURN clauses whose rows are the answer (a query ending otherwise has none here)."""
    returns = []
    for statement in parsed.statements:
        for query in final_queries(statement.body):
            last = query.clauses[-1] if query.clauses else None
            if isinstance(last, ast.Return):
                returns.append(last)
    return returns


def wrap_returns(
    parsed: ParsedQuery,
    edits: Edits,
    shown: ShownKeys,
    rewritten: Container[ast.Node] = frozenset(),
    stars: Mapping[ast.Projection, list[str]] | None = None,
) -> bool:
    """Record the edits that wrap every final RETURN; False when none could be (nothing to tag).

    ``stars``: the variables each final ``RETURN *`` was expanded to (``columns.keep_agent_columns``);
    a ``*`` not expanded (no variable in scope: Neo4j refuses it) is left as it is. A RETURN whose
    every column is plain (``plain.py``: ``t.id``, ``count(a)``) cannot send an element, so it is
    left as written: the wrapper's text would only cost Neo4j planning time.
    """
    done = False
    nodes = list(parsed.walk())
    kinds = Kinds(nodes)
    plainness = Plainness(nodes, kinds.of)

    def form(expression: ast.Expr) -> ColumnForm | None:
        if plainness.plain(expression):
            return "plain"
        kind = kinds.of(expression)
        return "node" if kind == "node" else "relationship" if kind == "relationship" else None

    for clause in final_returns(parsed):
        projection = clause.projection
        starred = (stars or {}).get(projection) if projection.star else []
        if starred is None or not (starred or projection.items):
            continue
        forms = [form(ast.Variable(start=0, end=0, name=name)) for name in starred]
        forms += [form(item.expression) for item in projection.items]
        if all(f == "plain" for f in forms):
            continue
        _wrap(parsed, edits, clause, shown, rewritten, starred, forms)
        done = True
    return done


def _wrap(
    parsed: ParsedQuery,
    edits: Edits,
    clause: ast.Return,
    shown: ShownKeys,
    rewritten: Container[ast.Node],
    starred: list[str],
    forms: list[ColumnForm | None],
) -> None:
    keyword = token_at(parsed, clause.start, parsed.text[clause.start : clause.start + 6])
    edits.replace(keyword, keyword + 6, "WITH")
    names: list[str] = list(starred)
    for item in clause.projection.items:
        name = column_name(parsed, item)
        names.append(name)
        plain = item.alias is None and not isinstance(ast.unparen(item.expression), ast.Variable)
        if plain and not renamed_by_rewrite(item, rewritten):
            edits.close(item, f" AS {_backticked(name)}")
    known_forms = [f for f in forms if f is not None]
    if len(known_forms) == len(forms):
        # Every column is plain or surely one element (or null): each is projected on its own,
        # without the row list and the container levels a column of unknown shape needs.
        known = [_known(_backticked(name), f, shown) for name, f in zip(names, known_forms, strict=True)]
        edits.close(
            clause, " RETURN " + ", ".join(f"{k} AS {_backticked(n)}" for k, n in zip(known, names, strict=True))
        )
        return
    columns = ", ".join(_backticked(n) for n in names)
    row = f"{GENERATED_PREFIX}c"
    # The trailing 0 and '' make the list's static element type ANY: Neo4j checks function
    # argument types before it runs, and would refuse elementId() on a column it knows is a list.
    projected = (
        f" WITH [{columns}, 0, ''] AS {ROW} WITH CASE WHEN valueType({ROW}) =~ {_HOLDS_ELEMENTS} "
        f"THEN [{row} IN {ROW}[0..{len(names)}] | {wrapped(row, shown, DEPTH)}] ELSE {ROW} END AS {ROW} RETURN "
        + ", ".join(f"{ROW}[{index}] AS {_backticked(name)}" for index, name in enumerate(names))
    )
    edits.close(clause, projected)


def _known(value: str, form: ColumnForm, shown: ShownKeys) -> str:
    """Cypher: a column of known form, projected (a plain value passes as it is)."""
    if form == "plain":
        return value
    return f"CASE WHEN {value} IS NULL THEN NULL ELSE {_element(value, form, shown, 0)} END"


def new_tag() -> str:
    """A fresh tag for one request: the sandbox rebuilds only maps that carry it."""
    return secrets.token_hex(16)


def _backticked(name: str) -> str:
    return quote_name(name) if name.isidentifier() else "`" + name.replace("`", "``") + "`"
