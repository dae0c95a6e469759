"""Whether a policy fits the graph it is pointed at: each misfit a finding with its fix.

What the policy model alone cannot know, because it needs the graph: a property the policy
names (``hidden_properties``, ``visible_properties``) that no element of its label or type
carries (a misspelt hidden key fails open: the real key is shown; a misspelt visible one hides
the real key), a label or relationship type the policy names that
exists nowhere (a template's placeholder, a typo), and a ``public`` rule on a label whose
elements carry a property the rules scope by. One check needs no graph (``static_findings``):
a ``public`` label other labels derive their visibility from opens them too.

``graph_findings(policy, run)`` reads the graph once (through ``run``, the operator's
unscoped READ query in a sandbox, as ``gateway.scope_survey`` does): every label and type
with the property keys its elements carry. ``doctor`` and ``policy lint --graph`` print the
same findings, and the same warning (``one_parent_warning``): how many nodes carry a label with a
derived rule beside another named label, which every layer hides.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel

from gateway import rule_kinds
from gateway.policy import Policy

# A query and its parameters -> its rows (gateway.scope_survey.Run).
Run = Callable[[str, dict[str, Any]], list[list[Any]]]

OwnerKind = Literal["label", "type"]

# Every label and relationship type that occurs, with the keys its elements carry: one pass
# over the nodes, one over the relationships (``+ [null]`` keeps an owner whose elements have
# no property at all; collect drops the null).
SHAPES = (
    "MATCH (n) UNWIND labels(n) AS owner UNWIND keys(n) + [null] AS k "
    "RETURN 'label' AS kind, owner, collect(DISTINCT k) AS keys "
    "UNION ALL MATCH ()-[r]->() WITH type(r) AS owner, r UNWIND keys(r) + [null] AS k "
    "RETURN 'type' AS kind, owner, collect(DISTINCT k) AS keys"
)
# A near-miss must be this alike (difflib's ratio, on the normalised names) to be offered.
NEAR_MISS_CUTOFF = 0.75


class Finding(BaseModel):
    """One way the policy does not fit: what was found, and the fix."""

    problem: str
    fix: str


class PropertyRef(NamedTuple):
    """A property key the policy names for one label or type, and where the policy names it."""

    owner: str | None  # None: any label or type (a default list)
    key: str
    where: str  # the policy's own path to it: "hidden_properties.Repository"


class Shapes(BaseModel):
    """Labels and relationship types that occur, each with the property keys its elements carry."""

    labels: dict[str, frozenset[str]]
    types: dict[str, frozenset[str]]

    def keys_of(self, owner: str | None) -> frozenset[str] | None:
        """The keys of a label or type named ``owner`` (a policy's owner may be either; None: of any element),
        None when no such label or type occurs."""
        if owner is None:
            return frozenset().union(*self.labels.values(), *self.types.values())
        if owner not in self.labels and owner not in self.types:
            return None
        return self.labels.get(owner, frozenset()) | self.types.get(owner, frozenset())


def property_refs(policy: Policy) -> list[PropertyRef]:
    """Every (owner, key) the policy names as a property that shows or hides, in the policy's order.

    One list per source of names: a further section of the policy that names properties adds
    its pairs here, and every check below holds it against the graph.
    """
    refs = [
        PropertyRef(owner, key, f"hidden_properties.{owner}")
        for owner, keys in policy.hidden_properties.by_owner().items()
        for key in keys
    ]
    visible = policy.visible_properties
    if visible is not None:
        for group, owners in (("nodes", visible.nodes), ("relationships", visible.relationships)):
            refs += [
                PropertyRef(owner, key, f"visible_properties.{group}.{owner}")
                for owner, keys in sorted(owners.items())
                for key in sorted(keys)
            ]
        refs += [PropertyRef(None, key, "visible_properties.default") for key in sorted(visible.default)]
    return refs


def rule_refs(policy: Policy) -> list[PropertyRef]:
    """Every (owner, key) a visibility rule or a pin reads: a misspelt one hides every element of its owner."""
    refs: list[PropertyRef] = []
    for group, rules in (("nodes", policy.scope.nodes), ("relationships", policy.scope.relationships)):
        for name, rule in sorted(rules.items()):
            for key in rule_kinds.property_refs(rule, policy.scope.layers_property):
                refs.append(PropertyRef(name, key, f"scope.{group}.{name}"))
    for tool_name, tool in sorted(policy.tools.items()):
        refs += [
            PropertyRef(label, pin.property, f"tools.{tool_name}.pins.{label}") for label, pin in tool.pins.items()
        ]
    return refs


def _normalised(name: str) -> str:
    """``apiToken``, ``api_token`` and ``API-TOKEN`` read alike: case and separators set aside."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return re.sub(r"[^a-z0-9]", "", spaced.lower())


def near_miss(key: str, present: Iterable[str]) -> str | None:
    """The key among ``present`` that ``key`` most likely meant (case-, snake- and camel-blind), or None."""
    by_norm: dict[str, str] = {}
    for name in sorted(present):
        by_norm.setdefault(_normalised(name), name)
    wanted = _normalised(key)
    if wanted in by_norm:
        return by_norm[wanted]
    close = difflib.get_close_matches(wanted, list(by_norm), n=1, cutoff=NEAR_MISS_CUTOFF)
    return by_norm[close[0]] if close else None


def scope_properties(policy: Policy) -> frozenset[str]:
    """The element properties the policy's rules compare with a caller's attribute (membership, equality)."""
    return frozenset(
        policy.scope.rule_property(part)
        for rule in policy.scope_rules()
        for part in rule_kinds.walk(rule)
        if rule_kinds.spec(part).reads_attribute
    )


def derived_from(policy: Policy) -> dict[str, list[str]]:
    """Anchor label -> the labels and relationship types whose derived rule borrows its visibility."""
    out: dict[str, list[str]] = {}
    for rules in (policy.scope.nodes, policy.scope.relationships):
        for name, rule in sorted(rules.items()):
            for anchor in dict.fromkeys(rule_kinds.anchors(rule)):
                out.setdefault(anchor, []).append(name)
    return out


def static_findings(policy: Policy) -> list[Finding]:
    """What is wrong whatever the graph holds."""
    out: list[Finding] = []
    dependants = derived_from(policy)
    for label, rule in sorted(policy.scope.nodes.items()):
        if rule_kinds.spec(rule).constant is True and dependants.get(label):
            names = ", ".join(dependants[label])
            out.append(
                Finding(
                    problem=f"scope.nodes.{label} is public, and {names} derive their visibility from {label}: every "
                    f"caller sees every {label} and everything derived from it, whatever their attributes",
                    fix=f"give {label} the rule that scopes it (equality or membership on the property that names "
                    f"its owner), or, if {names} should be visible to every caller too, make each of them public",
                )
            )
    return out


def unchecked(policy: Policy) -> list[str]:
    """What only the graph can answer, for a lint run without one."""
    out = ["that each label and relationship type the policy names occurs"]
    if property_refs(policy):
        out.append("that each property the policy names occurs on its label or type (a misspelt one fails open)")
    if any(rule_kinds.spec(rule).constant is True for rule in policy.scope.nodes.values()):
        out.append("that no public label's elements carry the property its rules scope by")
    return out


# Nodes the one-parent rule hides: a label whose rule walks to an anchor beside another named label.
ONE_PARENT = (
    "MATCH (n) WHERE any(k IN labels(n) WHERE k IN $walking) "
    "AND size([k IN labels(n) WHERE k IN $named]) > 1 RETURN count(n)"
)


def one_parent_warning(policy: Policy, run: Run) -> str | None:
    """How many nodes carry a derived label beside another named label (hidden from every caller), if any."""
    walking = sorted(policy.scope.one_parent_labels())
    if not walking or len(policy.scope.nodes) < 2:
        return None
    rows = run(ONE_PARENT, {"walking": walking, "named": sorted(policy.scope.nodes)})
    count = int(rows[0][0]) if rows else 0
    if not count:
        return None
    return (
        f"{count} node(s) carry {', '.join(walking)} beside another label the policy names and are hidden from "
        "every caller (a derived label says a node belongs to its one parent); give each one label the policy names"
    )


def read_shapes(run: Run) -> Shapes:
    labels: dict[str, frozenset[str]] = {}
    types: dict[str, frozenset[str]] = {}
    for kind, owner, keys in run(SHAPES, {}):
        (labels if kind == "label" else types)[str(owner)] = frozenset(str(k) for k in keys)
    return Shapes(labels=labels, types=types)


def _named_labels(policy: Policy) -> dict[str, list[str]]:
    """Label -> where the policy names it."""
    out: dict[str, list[str]] = {}
    for label in policy.scope.nodes:
        out.setdefault(label, []).append(f"scope.nodes.{label}")
    for rules in (policy.scope.nodes, policy.scope.relationships):
        for name, rule in rules.items():
            for anchor in dict.fromkeys(rule_kinds.anchors(rule)):
                out.setdefault(anchor, []).append(f"the derived path of {name}")
    for tool_name, tool in sorted(policy.tools.items()):
        for label in sorted(tool.denied_labels):
            out.setdefault(label, []).append(f"tools.{tool_name}.denied_labels")
        for label in sorted(tool.pins):
            out.setdefault(label, []).append(f"tools.{tool_name}.pins")
    return out


def _named_types(policy: Policy) -> dict[str, list[str]]:
    """Relationship type -> where the policy names it."""
    out: dict[str, list[str]] = {}
    for name in sorted(policy.scope.bookkeeping_relationship_types):
        out.setdefault(name, []).append("scope.bookkeeping_relationship_types")
    for name in policy.scope.relationships:
        out.setdefault(name, []).append(f"scope.relationships.{name}")
    for tool_name, tool in sorted(policy.tools.items()):
        for name in sorted(tool.denied_relationship_types):
            out.setdefault(name, []).append(f"tools.{tool_name}.denied_relationship_types")
    return out


def _absent(kind: str, name: str, where: list[str], present: Iterable[str]) -> Finding:
    guess = near_miss(name, present)
    hint = f" (did you mean {guess!r}?)" if guess is not None else ""
    return Finding(
        problem=f"the {kind} {name!r} named in {', '.join(where)} occurs nowhere in the graph{hint}",
        fix=f"correct the name to the {kind} your graph uses, or remove it from {', '.join(where)} "
        "(a template's names for a graph of another shape do not apply to yours)",
    )


def graph_findings(policy: Policy, shapes: Shapes) -> list[Finding]:
    """What does not fit between ``policy`` and the graph ``shapes`` describes."""
    out: list[Finding] = []
    for label, where in sorted(_named_labels(policy).items()):
        if label not in shapes.labels:
            out.append(_absent("label", label, where, shapes.labels))
    for name, where in sorted(_named_types(policy).items()):
        if name not in shapes.types:
            out.append(_absent("relationship type", name, where, shapes.types))
    for ref in [*property_refs(policy), *rule_refs(policy)]:
        keys = shapes.keys_of(ref.owner)
        owner = ref.owner or "element"
        if keys is None:
            assert ref.owner is not None
            out.append(_absent("label or relationship type", ref.owner, [ref.where], [*shapes.labels, *shapes.types]))
        elif ref.key not in keys:
            guess = near_miss(ref.key, keys)
            if guess is not None:
                problem = f"{ref.where} names {ref.key!r}, which no {owner} carries; its elements carry {guess!r}"
                fix = f"write {guess!r} for {ref.key!r} in {ref.where}"
            else:
                problem = f"{ref.where} names {ref.key!r}, which no {owner} carries"
                fix = (
                    f"correct {ref.key!r} in {ref.where} to a key {owner} carries "
                    f"({', '.join(sorted(keys)[:12]) or 'none'}), or remove it"
                )
            out.append(Finding(problem=problem, fix=fix))
    scoped_by = scope_properties(policy)
    for label, rule in sorted(policy.scope.nodes.items()):
        carried = sorted(scoped_by & shapes.labels.get(label, frozenset()))
        if rule_kinds.spec(rule).constant is True and carried:
            out.append(
                Finding(
                    problem=f"scope.nodes.{label} is public, but {label} elements carry {', '.join(carried)}, "
                    "which the policy's rules scope by: every caller sees every one of them",
                    fix=f"give {label} the rule that reads {carried[0]} (membership or equality), or remove "
                    f"{carried[0]} from its elements if they are truly public",
                )
            )
    return out


def fix_lines(findings: list[Finding]) -> str:
    """The findings' fixes, each once, in order."""
    return "; ".join(dict.fromkeys(f.fix for f in findings))
