"""``policy explain`` and ``policy matrix``: what a policy shows whom, for a reviewer.

Both decide visibility with the rewrite's own predicate text (``gateway.scope.predicates``
over ``gateway.scope.rules``, the text every agent query is given), evaluated on the graph in
one of the operator's unscoped reads (``scope_survey.operator_reads``): an explanation cannot
disagree with what an agent gets. The words around it (which rule, which anchor chain, untagged,
bookkeeping) come from the policy, in the sentences ``policy show`` prints.

What each principal sees of an element's properties is what the sandbox's own withholding
leaves of its keys (``sandbox.withhold``), so the matrix shows the answer's properties too.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from gateway import rule_kinds
from gateway.cli.policy import rule_sentence
from gateway.config import GatewaySettings, neo4j_connection
from gateway.domain import Principal, attribute_lists
from gateway.errors import SetupError
from gateway.policy import Policy, ToolName, VisibilityRule, derived_anchor_label
from gateway.rule_kinds.derived import is_derived
from gateway.scope.predicates import Predicates, quote_name
from gateway.scope.rules import MAX_DERIVED_DEPTH, ToolRules
from gateway.scope_survey import Run
from sandbox.tagged import TYPE_KEY

ElementKind = Literal["node", "relationship"]


class ReviewError(SetupError):
    """A principal or element given on the command line cannot be read, or names nothing."""


def parse_principal(spec: str) -> Principal:
    """``NAME`` or ``NAME:ATTR=V1,V2;ATTR=V`` (``layers=`` is the scope) as a principal."""
    name, _, rest = spec.partition(":")
    if not name.strip():
        raise ReviewError(f"principal {spec!r}: write NAME or NAME:ATTRIBUTE=VALUE,VALUE;ATTRIBUTE=VALUE")
    named: dict[str, list[str]] = {}
    for part in filter(None, (p.strip() for p in rest.split(";"))):
        attr, sep, values = part.partition("=")
        if not sep or attr.strip() in named:
            raise ReviewError(f"principal {spec!r}: {part!r} is not ATTRIBUTE=VALUE,VALUE given once")
        named[attr.strip()] = [v.strip() for v in values.split(",") if v.strip()]
    try:
        scope, attributes = attribute_lists(None, named)
        return Principal(name=name.strip(), scope=scope, attributes=attributes)
    except ValueError as exc:
        raise ReviewError(f"principal {spec!r}: {exc}") from exc


def describe_principal(principal: Principal) -> str:
    lists = [f"layers={','.join(sorted(principal.scope))}"] if principal.scope else []
    lists += [f"{k}={','.join(sorted(v))}" for k, v in sorted(principal.attributes.items())]
    return f"{principal.name} ({'; '.join(lists) or 'no attributes'})"


class ElementRef(BaseModel):
    """``LABEL:KEY=VALUE``: the node (or relationship of that type) whose KEY reads VALUE."""

    owner: str
    key: str
    value: str

    @classmethod
    def parse(cls, spec: str) -> ElementRef:
        owner, _, rest = spec.partition(":")
        key, sep, value = rest.partition("=")
        if not owner or not key or not sep:
            raise ReviewError(f"element {spec!r}: write LABEL:KEY=VALUE (or TYPE:KEY=VALUE for a relationship)")
        return cls(owner=owner, key=key, value=value)


class Explanation(BaseModel):
    element: str
    kind: ElementKind
    owners: list[str]  # its labels, or its type
    visible: bool
    decided_by: str  # label rule, derived anchor chain, default, untagged, bookkeeping, denied
    reasons: list[str]


def _predicates(policy: Policy, tool: ToolName) -> tuple[Predicates, ToolRules]:
    """The rewrite's predicate builder for ``tool``, built as ``gateway.scope.plan`` builds it."""
    settings, rules = policy.scope, ToolRules.of(policy, tool)
    hidden = tuple(sorted(policy.hidden_relationship_types(tool)))
    return Predicates(
        settings.layers_property, settings.scope_parameter, hidden, settings.untagged == "global", rules
    ), rules


def _params(rules: ToolRules, principal: Principal, params: dict[str, Any]) -> dict[str, Any]:
    return {**params, **rules.parameters(principal)}


def explain(
    policy: Policy, run: Run, principal: Principal, ref: ElementRef, tool: ToolName = "analyze",
    params: dict[str, Any] | None = None,
) -> Explanation:  # fmt: skip
    """Whether ``principal`` sees the element ``ref`` names through ``tool``, and which rule decided."""
    predicates, rules = _predicates(policy, tool)
    values = _params(rules, principal, params or {}) | {"__key": ref.key, "__value": ref.value}
    owner = quote_name(ref.owner)
    named = sorted(policy.scope.nodes)
    per_label = ", ".join(rules.label_condition("x", label) for label in named) or ""
    node_rows = run(
        f"MATCH (x:{owner}) WHERE toString(x[$__key]) = $__value "
        f"RETURN labels(x), keys(x), {predicates.node_visible('x')}, [{per_label}], {rules.default_condition('x')} "
        "LIMIT 2",
        values,
    )
    if node_rows:
        found = _explain_node(policy, principal, ref, node_rows, named, tool)
        for label in found.owners:
            if label in policy.scope.nodes and is_derived(policy.scope.nodes[label]):
                found.reasons.insert(-1, _anchor_chain(policy, rules, run, ref, label))
        return found
    rel_rows = run(
        f"MATCH ()-[x:{owner}]->() WHERE toString(x[$__key]) = $__value "
        f"RETURN type(x), keys(x), {predicates.visible_relationship_with_endpoints('x', frozenset({ref.owner}))}, "
        f"{predicates.relationship_visible('x', frozenset({ref.owner}))}, {predicates.node_visible('startNode(x)')}, "
        f"{predicates.node_visible('endNode(x)')} LIMIT 2",
        values,
    )
    if not rel_rows:
        raise ReviewError(f"no node labelled {ref.owner} and no relationship of type {ref.owner} has {ref.key} = "
                          f"{ref.value!r} in the graph")  # fmt: skip
    return _explain_relationship(policy, principal, ref, rel_rows, tool)


def _anchor_chain(policy: Policy, rules: ToolRules, run: Run, ref: ElementRef, label: str) -> str:
    """Where ``label``'s derived rule leads for this element: the anchors reached, and what the last one reads."""
    steps: list[str] = []
    chain, current, rule = [label], label, policy.scope.nodes[label]
    while is_derived(rule) and len(chain) <= MAX_DERIVED_DEPTH:
        steps.append(rules.derived[rule.path or ""].renamed(f"a{len(steps)}", f"a{len(steps) + 1}"))
        current = derived_anchor_label(rule.path or "")
        chain.append(current)
        rule = policy.scope.nodes[current]
    last = f"a{len(steps)}"
    reads_one = rule_kinds.spec(rule).reads_attribute
    reads = f"{last}.{quote_name(policy.scope.rule_property(rule))}" if reads_one else "1"
    rows = run(
        f"MATCH (a0:{quote_name(ref.owner)}) WHERE toString(a0[$__key]) = $__value "
        + " ".join(f"OPTIONAL MATCH {step}" for step in steps)
        + f" RETURN count(DISTINCT {last}), collect(DISTINCT {reads})",
        {"__key": ref.key, "__value": ref.value},
    )
    reached, values = rows[0] if rows else (0, [])
    path = " -> ".join(chain)
    if not reached:
        return f"its anchor chain {path} reaches no {current}: nothing to borrow visibility from"
    if not reads_one:
        return f"its anchor chain {path} reaches {reached} {current} ({rule.kind})"
    prop = policy.scope.rule_property(rule)
    return f"its anchor chain {path} reaches {reached} {current} whose {prop} is {', '.join(map(repr, values))}"


def _one(ref: ElementRef, rows: list[list[Any]]) -> list[Any]:
    if len(rows) > 1:
        raise ReviewError(f"{ref.owner}:{ref.key}={ref.value} names more than one element; give a key that is unique")
    return rows[0]


def _explain_node(
    policy: Policy, principal: Principal, ref: ElementRef, rows: list[list[Any]], named: list[str], tool: ToolName
) -> Explanation:
    labels, keys, visible, per_label, default_holds = _one(ref, rows)
    carried = [label for label in named if label in labels]
    holds = dict(zip(named, per_label, strict=True))
    reasons: list[str] = []
    decided_by = ""
    if tool_denied := sorted(set(labels) & policy.tool(tool).denied_labels):
        reasons.append(f"tools.{tool}.denied_labels names {', '.join(tool_denied)}: a query naming it is refused")
    for label in carried:
        rule = policy.scope.nodes[label]
        sentence = rule_sentence(policy, label, tool)
        reasons.append(f"{label} ({rule.kind}): {sentence}: {'holds' if holds[label] else 'does NOT hold'}")
        if not holds[label] and not decided_by:
            decided_by = _kind_words(policy, keys, rule)
    walking = sorted(set(carried) & policy.scope.one_parent_labels())
    if walking and len(carried) > 1:
        reasons.append(
            f"it carries {', '.join(carried)}: {', '.join(walking)} is visible only through its one parent, so a "
            "node that also carries another named label is hidden whatever each rule says"
        )
        decided_by = "one parent: a derived label beside another named label"
    if not carried:
        rule = policy.scope.default
        reasons.append(f"it carries no label the policy names: the default rule ({rule.kind}) decides: "
                       f"{'holds' if default_holds else 'does NOT hold'}")  # fmt: skip
        decided_by = "default: " + _kind_words(policy, keys, rule)
    elif not decided_by:
        decided_by = " and ".join(
            f"{label}: {_kind_words(policy, keys, policy.scope.nodes[label])}" for label in carried
        )
    reasons.append(f"{principal.name} is: {describe_principal(principal)}")
    return Explanation(element=f"{ref.owner}:{ref.key}={ref.value}", kind="node", owners=sorted(labels),
                       visible=bool(visible), decided_by=decided_by, reasons=reasons)  # fmt: skip


def _kind_words(policy: Policy, keys: list[str], rule: VisibilityRule) -> str:
    spec = rule_kinds.spec(rule)
    if spec.reads_attribute:
        prop = policy.scope.rule_property(rule)
        if prop not in keys:
            return f"untagged (it has no {prop!r})"
        return f"{spec.label} on {prop!r}"
    return spec.label


def _explain_relationship(
    policy: Policy, principal: Principal, ref: ElementRef, rows: list[list[Any]], tool: ToolName
) -> Explanation:
    rel_type, keys, visible, own, start, end = _one(ref, rows)
    rule = policy.scope.relationships.get(rel_type, policy.scope.default)
    reasons = [f"{rel_type} ({rule.kind}): {rule_sentence(policy, rel_type, tool)}: "
               f"{'holds' if own else 'does NOT hold'}"]  # fmt: skip
    hidden = rel_type in policy.hidden_relationship_types(tool)
    if hidden:
        bookkeeping = rel_type in policy.scope.bookkeeping_relationship_types
        reasons.append(
            f"{rel_type} is a bookkeeping type {tool} does not allow (scope.allow_bookkeeping)"
            if bookkeeping and rel_type not in policy.tool(tool).denied_relationship_types
            else f"{rel_type} is in tools.{tool}.denied_relationship_types"
        )
    reasons.append(f"its start node is {'visible' if start else 'NOT visible'}, its end node "
                   f"{'visible' if end else 'NOT visible'} (a relationship needs both)")  # fmt: skip
    if hidden:
        decided_by = "bookkeeping" if rel_type in policy.scope.bookkeeping_relationship_types else "denied"
    elif not own:
        decided_by = _kind_words(policy, keys, rule)
    elif not (start and end):
        decided_by = "an endpoint's rule"
    else:
        decided_by = _kind_words(policy, keys, rule)
    reasons.append(f"{principal.name} is: {describe_principal(principal)}")
    return Explanation(element=f"{ref.owner}:{ref.key}={ref.value}", kind="relationship", owners=[rel_type],
                       visible=bool(visible), decided_by=decided_by, reasons=reasons)  # fmt: skip


def render_explanation(found: Explanation) -> str:
    verdict = "VISIBLE" if found.visible else "NOT visible"
    lines = [f"{found.element} ({found.kind} {', '.join(found.owners)}): {verdict}; decided by: {found.decided_by}"]
    lines += [f"  - {reason}" for reason in found.reasons]
    return "\n".join(lines)


def seed_fixture(settings: GatewaySettings, fixture: str) -> int:
    """Load a seed file (or ``builtin:NAME``) into the settings' Neo4j with write credentials, as ``mnr seed`` does."""
    from gateway.mnr import seed
    from gateway.mnr.cases import SuiteError, builtin_fixture

    target = neo4j_connection(settings)
    try:
        path = builtin_fixture(fixture.removeprefix("builtin:")) if fixture.startswith("builtin:") else Path(fixture)
        driver = seed.connect(target)
        try:
            return seed.seed(driver, path, target.database)
        finally:
            driver.close()
    except (seed.SeedError, SuiteError, OSError) as exc:
        raise ReviewError(f"cannot seed {fixture}: {exc}") from exc


# --- the matrix ---------------------------------------------------------------------------------


class Cell(BaseModel):
    visible: int
    total: int
    properties: list[str]  # the keys an answer shows of the visible elements


class Matrix(BaseModel):
    tool: ToolName
    principals: list[str]
    # "label Repository" / "type HAS_TASK" -> principal -> cell
    rows: dict[str, dict[str, Cell]]


def matrix(
    policy: Policy, run: Run, principals: list[Principal], tool: ToolName = "analyze",
    params: dict[str, Any] | None = None,
) -> Matrix:  # fmt: skip
    """Per principal, per label and relationship type: how many elements it sees, and which keys."""
    predicates, rules = _predicates(policy, tool)
    withholding = policy.withholding()
    rows: dict[str, dict[str, Cell]] = {}
    for principal in principals:
        values = _params(rules, principal, params or {})
        node_rows = run(
            f"MATCH (x) WITH x, {predicates.node_visible('x')} AS v UNWIND labels(x) AS owner "
            "RETURN 'label', owner, count(*), sum(CASE WHEN v THEN 1 ELSE 0 END), "
            "collect(DISTINCT CASE WHEN v THEN [labels(x), keys(x)] END)",
            values,
        )
        rel_rows = run(
            f"MATCH ()-[x]->() WITH x, {predicates.visible_relationship_with_endpoints('x')} AS v "
            "RETURN 'type', type(x), count(*), sum(CASE WHEN v THEN 1 ELSE 0 END), "
            "collect(DISTINCT CASE WHEN v THEN [[type(x)], keys(x)] END)",
            values,
        )
        for kind, owner, total, visible, shapes in [*node_rows, *rel_rows]:
            shown: set[str] = set()
            for owners, keys in shapes:
                element = {TYPE_KEY: "node" if kind == "label" else "relationship", "labels": owners,
                           "type": owners[0], "properties": dict.fromkeys(keys)}  # fmt: skip
                withholding.apply(element)
                shown |= set(element["properties"])
            rows.setdefault(f"{kind} {owner}", {})[principal.name] = Cell(
                visible=visible, total=total, properties=sorted(shown)
            )
    return Matrix(tool=tool, principals=[p.name for p in principals], rows=dict(sorted(rows.items())))


def render_matrix(found: Matrix) -> str:
    width = max([len(name) for name in found.rows] + [len("label / type")])
    cells = {name: {p: f"{c.visible}/{c.total}" for p, c in row.items()} for name, row in found.rows.items()}
    widths = {p: max([len(p)] + [len(r.get(p, "")) for r in cells.values()]) for p in found.principals}
    lines = [f"visible of total, under {found.tool}", ""]
    lines.append(f"{'label / type':<{width}}  " + "  ".join(f"{p:>{widths[p]}}" for p in found.principals))
    lines.append(f"{'-' * width}  " + "  ".join("-" * widths[p] for p in found.principals))
    for name, texts in cells.items():
        lines.append(f"{name:<{width}}  " + "  ".join(f"{texts.get(p, '0/0'):>{widths[p]}}" for p in found.principals))
    lines += ["", "properties an answer shows (of the visible elements):"]
    for name, row in found.rows.items():
        for principal, cell in row.items():
            if cell.visible:
                lines.append(f"  {name}, {principal}: {', '.join(cell.properties) or '(none)'}")
    return "\n".join(lines)


_CSS = (
    "body{font-family:system-ui,sans-serif;margin:2em;color:#222}"
    "table{border-collapse:collapse}th,td{border:1px solid #bbb;padding:.3em .6em;vertical-align:top}"
    "th{background:#eee;text-align:left}td.none{color:#999}td.some{background:#fff6d6}td.all{background:#dff3df}"
    ".props{font-size:.8em;color:#555}"
)


def matrix_html(found: Matrix, policy_name: str, principals: list[Principal]) -> str:
    """One self-contained page (inline CSS, no script, nothing fetched) a reviewer can attach."""
    e = html.escape
    head = "".join(f"<th>{e(p)}</th>" for p in found.principals)
    body = []
    for name, row in found.rows.items():
        tds = []
        for principal in found.principals:
            cell = row.get(principal, Cell(visible=0, total=0, properties=[]))
            css = "none" if not cell.visible else "all" if cell.visible == cell.total else "some"
            props = f'<div class="props">{e(", ".join(cell.properties))}</div>' if cell.visible else ""
            count = f'data-visible="{cell.visible}" data-total="{cell.total}"'
            tds.append(f'<td class="{css}" {count}>{cell.visible} / {cell.total}{props}</td>')
        body.append(f"<tr><th>{e(name)}</th>{''.join(tds)}</tr>")
    who = "".join(f"<li>{e(describe_principal(p))}</li>" for p in principals)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>Policy {e(policy_name)}: who sees what</title><style>{_CSS}</style></head><body>"
        f"<h1>Policy {e(policy_name)}: who sees what under {e(found.tool)}</h1>"
        f"<p>Visible of total elements per label and relationship type, and the properties an answer shows.</p>"
        f"<ul>{who}</ul>"
        f'<table id="matrix"><thead><tr><th>label / type</th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
        "</body></html>\n"
    )
