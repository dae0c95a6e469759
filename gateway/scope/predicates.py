"""The Cypher text of the visibility predicates the rewrite injects.

One element ``x`` is visible when its layers property is an empty list of
strings (global), or a list of strings with one in the caller's scope
parameter. A missing property hides the element (unless the policy opts into
``scope.untagged: global``), and so does anything malformed (a string, a
number, a list holding a non-string or a null): a writer bug, a renamed
property or a graph scoped some other way must turn into a missing answer,
never a disclosure. The property is read once (bound by a one-element
``any``), not once per test.

The type test needs ``NOT NULL``: ``null IS :: LIST<STRING NOT NULL>`` is true
in Neo4j (every type includes null unless it says otherwise).

Why ``CASE`` and not ``OR``/``AND``: Neo4j does not promise the order in which
it evaluates ``OR`` operands, and ``size('a')``/``any(l IN 5 …)`` raise type
errors at run time. ``CASE`` branches are evaluated only when selected, so a
malformed value yields ``false`` instead of an error (checked against Neo4j
5.26 by tests/test_scope_neo4j.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gateway.scope.rules import ToolRules

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# Generated names all start with this prefix; the rewrite refuses queries that
# use it themselves, so a generated variable can never capture an agent's one.
GENERATED_PREFIX = "__gw_"


def quote_name(name: str) -> str:
    """A symbolic name as Cypher text (backticks only when needed, doubled inside)."""
    if _IDENTIFIER.fullmatch(name):
        return name
    return "`" + name.replace("`", "``") + "`"


def string_literal(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


@dataclass(frozen=True)
class Predicates:
    """Builds predicate text for one policy's property name, parameter and hidden types."""

    layers_property: str
    scope_parameter: str
    hidden_types: tuple[str, ...]
    # The policy's scope.untagged: True only when it opted into "global" for a missing property.
    untagged_global: bool = False
    # The policy's rules for this tool (gateway/scope/rules.py); None: membership on layers_property
    # for every element, the reading of a policy that names no rules.
    rules: ToolRules | None = None

    # The two entry points the rewrite uses (docs/decisions/0018): what a pattern states about the
    # element (labels, types; possibly nothing) lets a rule table pick the rules that apply.

    def node_visible(self, node: str, labels: frozenset[str] = frozenset()) -> str:
        """``node`` (a variable or expression) is visible to the caller.

        ``labels`` are labels the pattern says the node carries (it may carry more at run time);
        the text holds every named label's rule it carries, whatever was stated.
        """
        if self.rules is None:
            return self.visible(node)
        return self.rules.node(node, labels)

    def relationship_visible(self, rel: str, types: frozenset[str] = frozenset()) -> str:
        """``rel`` is visible and not of a hidden type (its endpoints are checked apart).

        ``types`` are the types the pattern allows (``[:A|B]``); the relationship has one of them.
        """
        own = self.visible(rel) if self.rules is None else self.rules.relationship(rel, types)
        own = f"({own})"
        hidden = [t for t in self.hidden_types if not types or t in types]
        if not hidden:
            return own
        return f"{own} AND NOT type({rel}) IN [{', '.join(string_literal(t) for t in hidden)}]"

    def visible(self, element: str) -> str:
        """``element`` (a variable or expression) is visible to the caller."""
        value = f"{GENERATED_PREFIX}v"
        item = f"{GENERATED_PREFIX}l"
        scope = "$" + quote_name(self.scope_parameter)
        missing = f"WHEN {value} IS NULL THEN true " if self.untagged_global else ""
        return (
            f"any({value} IN [{element}.{quote_name(self.layers_property)}] WHERE CASE {missing}"
            f"WHEN {value} IS :: LIST<STRING NOT NULL> NOT NULL THEN size({value}) = 0 OR "
            f"any({item} IN {value} WHERE {item} IN {scope}) "
            "ELSE false END)"
        )

    def visible_relationship(self, rel: str) -> str:
        """The relationship itself is visible and not of a hidden type (endpoints are checked apart)."""
        return self.relationship_visible(rel)

    # The rest is written from the two entry points above, so every rule the policy states holds
    # wherever the rewrite checks an element.

    def visible_path(self, path: str, *, has_relationships: bool = True) -> str:
        """Every node and every relationship on ``path`` is visible (a relationship's ends are nodes of it)."""
        node = f"{GENERATED_PREFIX}x"
        out = f"all({node} IN nodes({path}) WHERE {self.node_visible(node)})"
        if has_relationships:
            rel = f"{GENERATED_PREFIX}r"
            out += f" AND all({rel} IN relationships({path}) WHERE {self.relationship_visible(rel)})"
        return out

    def visible_relationship_with_endpoints(self, rel: str, types: frozenset[str] = frozenset()) -> str:
        """A relationship and both its ends (where the ends have no variable of their own)."""
        return (
            f"({self.relationship_visible(rel, types)}) AND ({self.node_visible(f'startNode({rel})')}) "
            f"AND ({self.node_visible(f'endNode({rel})')})"
        )

    def visible_nodes(self, nodes: str, labels: frozenset[str] = frozenset()) -> str:
        """Every node of the list ``nodes`` (a group variable) is visible."""
        node = f"{GENERATED_PREFIX}x"
        return f"all({node} IN {nodes} WHERE {self.node_visible(node, labels)})"

    def visible_relationships(self, rels: str, types: frozenset[str] = frozenset()) -> str:
        """Every relationship of the list ``rels``, with both its ends, is visible."""
        rel = f"{GENERATED_PREFIX}e"
        return f"all({rel} IN {rels} WHERE {self.visible_relationship_with_endpoints(rel, types)})"
