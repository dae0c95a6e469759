"""The Cypher text of the visibility predicates the rewrite injects.

Each element's text is its rules' (``gateway/scope/rules.py``, each kind written by its module in
``gateway/rule_kinds``); a policy without rules holds every element to membership on its layers
property (``gateway/rule_kinds/membership.py`` says why the text is shaped as it is, checked
against Neo4j by tests/integration/scope/test_scope_neo4j.py). Paths, lists of elements and a
relationship's endpoints are written here from the two entry points, so every rule holds
wherever the rewrite checks an element.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gateway.rule_kinds.membership import membership_text
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

    def node_visible(
        self, node: str, labels: frozenset[str] = frozenset(), *, walked: frozenset[str] = frozenset()
    ) -> str:
        """``node`` (a variable or expression) is visible to the caller.

        ``labels`` are labels the pattern says the node carries (it may carry more at run time);
        the text holds every named label's rule it carries, whatever was stated. ``walked``: derived
        labels whose walk the pattern itself takes from ``node`` to a node checked visible beside
        it, so that walk is not written again.
        """
        if self.rules is None:
            return self.visible(node)
        return self.rules.node(node, labels, walked=walked)

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
        """``element`` (a variable or expression) is visible to the caller: the membership rule on the
        layers property, what a policy without rules holds every element to."""
        return membership_text(
            element,
            quote_name(self.layers_property),
            "$" + quote_name(self.scope_parameter),
            untagged_global=self.untagged_global,
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
