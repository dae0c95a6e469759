"""``cypher-gateway check`` and ``cypher-gateway policy show|lint|explain|matrix|init``.

``check`` is a fixed contract other tooling depends on: one query on stdin,
one JSON object on stdout, the same the MCP ``check`` tool answers
``{"allowed", "rule", "reason", "tool", "policy", "rewritten"}`` (guard and scope
rewrite through a composed Gateway; nothing runs, so neither Docker nor Neo4j is
needed); exit 0 allowed, 3 rejected, 2 usage error (unreadable or invalid policy
or settings, bad ``--params`` JSON).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from gateway import rule_kinds
from gateway.catalogue import CATALOGUE, Stage
from gateway.compose import compose, stdio_principal
from gateway.config import load_settings
from gateway.errors import SetupError
from gateway.identity_text import printable_lines, terminal_json
from gateway.ops.tokens import parse_attributes
from gateway.policy import (
    POLICIES_DIR,
    TOOL_NAMES,
    Limits,
    Policy,
    PolicyError,
    ScopeFilter,
    ToolName,
    VisibilityRule,
    load_policy,
)

EXIT_ALLOWED = 0
EXIT_INVALID_POLICY = 1  # `policy lint` found problems
EXIT_USAGE = 2
EXIT_REJECTED = 3

# Procedures that read files/URLs, run dynamic Cypher, write or administer; an
# allow-list naming one of these is almost certainly a mistake.
_DANGEROUS_PROCEDURE_PREFIXES = (
    "apoc.load.",
    "apoc.cypher.",
    "apoc.periodic.",
    "apoc.export.",
    "apoc.import.",
    "apoc.trigger.",
    "apoc.create.",
    "apoc.merge.",
    "apoc.refactor.",
    "apoc.custom.",
    "apoc.do.",
    "apoc.systemdb.",
    "dbms.",
    "tx.",
    "db.create",
    "db.clearquerycaches",
    "db.index.vector.",
    "db.index.fulltext.",
    "db.schema.",
)


def register(subparsers: Any) -> None:
    check_parser = subparsers.add_parser(
        "check",
        help="decide whether one query (read from stdin) may run and show its scoped form; prints one JSON object",
        description="Read one Cypher query from stdin and print what the MCP check tool answers for it: "
        "allowed, rule, reason, tool, policy and the rewritten (scoped) query, as one JSON object. Nothing runs. "
        "Exit 0 when allowed, 3 when rejected, 2 on a usage error.",
    )
    check_parser.add_argument("--policy", metavar="FILE", help="policy file (default: the settings' policy_file)")
    check_parser.add_argument("--tool", choices=TOOL_NAMES, default="analyze", help="tool whose rules apply")
    check_parser.add_argument("--params", metavar="JSON", default="{}", help="query parameters as a JSON object")
    check_parser.add_argument("--principal", metavar="NAME",
                              help="who asks (default: the settings' stdio_principal, `stdio`)")  # fmt: skip
    check_parser.add_argument("--scope", metavar="LAYERS", help="the caller's layers, comma-separated "
                              "(default: the settings' stdio_scope; empty means global-only)")  # fmt: skip
    check_parser.add_argument("--attribute", action="append", default=None, metavar="NAME=VALUES",
                              help="a named list of the caller that the policy's rules read, e.g. "
                              "repositories=acme/api (repeatable; default: the settings' "
                              "stdio_attributes)")  # fmt: skip
    check_parser.add_argument("--config", type=Path, help="TOML settings file (else $GATEWAY_CONFIG, env, defaults)")
    check_parser.set_defaults(handler=_handle_check)

    policy_parser = subparsers.add_parser("policy", help="show or lint a policy file")
    actions = policy_parser.add_subparsers(dest="policy_action", required=True, metavar="ACTION")
    show = actions.add_parser("show", help="print a policy as a table for a reviewer")
    show.add_argument("file", nargs="?", help="policy file, or the name of a shipped policy (default: default)")
    show.set_defaults(handler=_handle_show)
    lint = actions.add_parser(
        "lint", help="validate one policy file, and with --graph hold it against the graph (exit 0 valid, 1 not)",
        description="Validate one policy file. With --graph, also read the graph of the settings' Neo4j (through "
        "a sandbox, as doctor does) and fail, with the fix, on every label, relationship type or property the policy "
        "names that the graph does not have (near-misses named). Exit 0 valid, 1 invalid or not fitting.",
    )  # fmt: skip
    lint.add_argument("file", help="policy file")
    lint.add_argument("--graph", action="store_true", help="hold the policy against the graph the settings name")
    lint.add_argument(
        "--config", type=Path, help="TOML settings file for --graph (else $GATEWAY_CONFIG, env, defaults)"
    )
    lint.set_defaults(handler=_handle_lint)
    explain = actions.add_parser(
        "explain", help="say whether a principal sees one element, and which rule decided",
        description="Evaluate the rewrite's own visibility predicate for one element of the graph the settings name "
        "(through a sandbox, as doctor does) for one principal, and say which rule decided: a label's rule, a "
        "derived anchor chain, the default, untagged, bookkeeping or denied. Exit 0 visible, 1 not visible, 2 usage.",
    )  # fmt: skip
    explain.add_argument("--policy", metavar="FILE", help="policy file (default: the settings' policy_file)")
    explain.add_argument("--principal", required=True, metavar="NAME[:ATTR=V,V;ATTR=V]",
                         help="who asks, with the attribute lists the rules read (layers= is the scope), e.g. "
                         "ci-bot:repositories=acme/payments")  # fmt: skip
    explain.add_argument(
        "--element",
        required=True,
        metavar="LABEL:KEY=VALUE",
        help="the node of that label (else the relationship of that type) whose KEY reads VALUE",
    )
    _review_arguments(explain)
    explain.set_defaults(handler=_handle_explain)
    table = actions.add_parser(
        "matrix", help="principals x labels and types: how many elements each sees, and which properties",
        description="For each principal and each label and relationship type of the graph the settings name "
        "(after seeding --fixture into it, with write credentials), count the elements the rewrite's own "
        "predicate shows and list the properties an answer shows; a terminal table, and with --html a "
        "self-contained page a reviewer can attach.",
    )  # fmt: skip
    table.add_argument("--policy", metavar="FILE", help="policy file (default: the settings' policy_file)")
    table.add_argument("--principal", required=True, action="append", metavar="NAME[:ATTR=V,V;ATTR=V]",
                       help="a principal to compare (repeatable)")  # fmt: skip
    table.add_argument("--fixture", metavar="FILE", help="a Cypher seed file (or builtin:NAME) to load first")
    table.add_argument("--html", type=Path, metavar="FILE", help="also write the matrix as one HTML page")
    _review_arguments(table)
    table.set_defaults(handler=_handle_matrix)
    init = actions.add_parser(
        "init", help="write a starting policy to stdout from a shipped one: policy init --template NAME > my.yaml",
        description="Print a shipped policy (the template: default, mentis or mindreader) with a header, ready to "
        "edit; --scope-property renames the property its visibility rules read (layers, or Mentis's repository "
        "name) throughout. Exit 0 written, 2 usage error (unknown template, a name that is not a property).",
    )  # fmt: skip
    init.add_argument("--template", required=True, metavar="NAME", help="a shipped policy: "
                      + ", ".join(p.stem for p in sorted(POLICIES_DIR.glob("*.yaml"))))  # fmt: skip
    init.add_argument("--scope-property", metavar="NAME",
                      help="the name your graph gives the scope property (e.g. layer_ids)")  # fmt: skip
    init.set_defaults(handler=_handle_init)


def _usage_error(message: str) -> int:
    print(f"cypher-gateway: {message}", file=sys.stderr)
    return EXIT_USAGE


def _handle_check(args: argparse.Namespace) -> int:
    try:
        params = json.loads(args.params)
    except json.JSONDecodeError as exc:
        return _usage_error(f"--params is not valid JSON: {exc}")
    if not isinstance(params, dict):
        return _usage_error("--params must be a JSON object")
    overrides: dict[str, Any] = {}
    if args.policy is not None:
        overrides["policy_file"] = args.policy
    if args.principal is not None:
        overrides["stdio_principal"] = args.principal
    if args.scope is not None:
        overrides["stdio_scope"] = args.scope
    try:
        if args.attribute is not None:
            overrides["stdio_attributes"] = parse_attributes(args.attribute)
        settings = load_settings(args.config, **overrides)
        # No runner: checking runs nothing. No audit log: this is not an agent's tool call.
        composed = compose(settings, runner=None, audit=False)
    except SetupError as exc:
        return _usage_error(str(exc))
    result = composed.gateway.check(args.tool, sys.stdin.read(), params, stdio_principal(settings))
    # The MCP tool's text content, byte for byte.
    print(terminal_json(result.model_dump(mode="json")))
    return EXIT_ALLOWED if result.allowed else EXIT_REJECTED


def property_sentences(policy: Policy) -> list[str]:
    """Which properties an answer may show, and how names are compared, in a reviewer's words."""
    visible = policy.visible_properties
    if visible is None and not policy.hidden_properties.names():
        return [
            "properties: no list (neither visible_properties nor hidden_properties), which fails open: every "
            "property of a visible element is shown, a secret written to the graph later included"
        ]
    if visible is None:
        hidden = policy.hidden_properties.by_owner()
        return [
            "properties: a deny-list (hidden_properties), which fails open: a key it does not name, misspelt or "
            "added to the graph later, is shown; names are compared case-insensitively (apiToken hides APITOKEN)",
            "hidden properties (never named by a query, never in an answer or the schema tool): "
            + ("; ".join(f"{owner}: {', '.join(keys)}" for owner, keys in hidden.items()) or "none"),
        ]

    def keys(names: frozenset[str]) -> str:
        return ", ".join(sorted(names)) or "(none)"

    lines = [
        "properties: an allow-list (visible_properties), which fails closed: a key not listed for an element is "
        "never in an answer, never in the schema tool, and refused when a query names it while no label or type "
        "lists it; names are exact (apiToken does not show APITOKEN)",
        "properties: a node shows the keys listed for every one of its labels that has a list (the "
        "intersection), default when none has; a relationship its type's, else default",
    ]
    lines += [f"visible properties of :{label}: {keys(names)}" for label, names in sorted(visible.nodes.items())]
    lines += [f"visible properties of [:{rel}]: {keys(names)}" for rel, names in sorted(visible.relationships.items())]
    lines.append(f"visible properties by default: {keys(visible.default)}")
    return lines


def lint_warnings(policy: Policy) -> list[str]:
    """Valid but suspicious settings a reviewer should look at."""
    warnings: list[str] = []
    if policy.visible_properties is None and policy.hidden_properties.names():
        warnings.append(
            "hidden_properties is a deny-list and fails open: a key it does not name (misspelt, or added to the "
            "graph later) is shown; list what an answer may show in visible_properties instead"
        )
    elif policy.visible_properties is None:
        warnings.append(
            "the policy names no property list, so every property of a visible element is shown (a secret "
            "written to the graph later included); list what an answer may show in visible_properties"
        )
    if policy.scope.untagged == "global":
        warnings.append(
            f"scope.untagged is global: an element without {policy.scope.layers_property!r} is visible to every "
            "caller, so a writer bug or a renamed property discloses it; tag global elements with an empty list"
        )
    for tool in TOOL_NAMES:
        tp = policy.tool(tool)
        for proc in sorted(tp.procedures_allowed):
            if proc.lower().startswith(_DANGEROUS_PROCEDURE_PREFIXES):
                warnings.append(
                    f"tools.{tool}.procedures_allowed: {proc} can read files/URLs, write, "
                    "run dynamic Cypher, administer or bypass label filters"
                )
        if tp.procedures_allowed and "CALL_PROCEDURE" not in {str(c) for c in tp.allowed_clauses}:
            warnings.append(f"tools.{tool}: procedures are allow-listed but CALL_PROCEDURE is not an allowed clause")
        if tp.limits.allow_unbounded_var_length:
            warnings.append(f"tools.{tool}.limits.allow_unbounded_var_length is true: traversals are unbounded")
        for family in ("apoc.load.*", "apoc.cypher.*"):
            if family not in tp.functions_denied:
                warnings.append(f"tools.{tool}.functions_denied does not deny {family}")
    return warnings


def untagged_sentence(policy: Policy) -> str:
    """What happens to an element without the scope property, in a reviewer's words."""
    name = policy.scope.layers_property
    if policy.scope.untagged == "global":
        return (
            f"an element without {name!r} is GLOBAL: every caller sees it (untagged: global); "
            f"an element whose {name!r} is not a list of strings is hidden"
        )
    return (
        f"an element without {name!r}, or whose {name!r} is not a list of strings, is hidden from every caller; "
        f"{name}: [] makes an element global"
    )


def _article(word: str) -> str:
    return ("an " if word[:1].lower() in "aeiou" else "a ") + word


class _Sentences:
    """The sentence context a kind words its rule with (gateway.rule_kinds.base.SentenceContext)."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy

    def rule_property(self, rule: VisibilityRule) -> str:
        return self.policy.scope.rule_property(rule)

    def holds(self, rule: VisibilityRule, subject: str) -> str:
        return rule_kinds.spec(rule).sentence(rule, subject, self)

    def anchor_rule(self, label: str) -> VisibilityRule:
        return self.policy.scope.nodes[label]


def _holds(policy: Policy, rule: VisibilityRule, subject: str) -> str:
    """What ``rule`` asks of ``subject`` ("its Task's Repository"), as the end of a sentence."""
    return _Sentences(policy).holds(rule, subject)


def _visible(policy: Policy, rule: VisibilityRule) -> str:
    """When an element under ``rule`` is visible, as the end of a sentence ("visible when ...")."""
    constant = rule_kinds.spec(rule).constant
    if constant is not None:
        return "visible to every caller" if constant else "never visible"
    return f"visible when {_holds(policy, rule, 'its')}" + (f" (path {rule.path})" if rule.path else "")


def _filter_sentence(policy: Policy, f: ScopeFilter) -> str:
    if f.rule is not None:
        return _holds(policy, f.rule, "its")
    return f"it has no {f.property}" if f.absent else f"its {f.property} is {f.equals!r}"


def rule_sentences(policy: Policy) -> list[str]:
    """Every visibility rule, filter and pin of ``policy`` as a reviewer's sentence (decision 0018)."""
    sc = policy.scope
    unnamed = "an element of a label or type not named below"
    out = [f"{unnamed} is {_visible(policy, sc.default)}"]
    for kind, rules in (("node", sc.nodes), ("relationship", sc.relationships)):
        for name, rule in sorted(rules.items()):
            who = _article(name) if kind == "node" else f"a relationship of type {name}"
            out.append(f"{who} is {_visible(policy, rule)}")
    for name, filters in sorted(sc.filters.items()):
        for f in filters:
            condition = _filter_sentence(policy, f)
            out.append(f"under {', '.join(sorted(f.tools))}, {_article(name)} is visible only when {condition}")
    for tool in TOOL_NAMES:
        for label, pin in sorted(policy.tool(tool).pins.items()):
            out.append(
                f"under {tool}, {_article(label)} is visible only when its {pin.property} equals the request's "
                f"${pin.parameter} (and so is anything derived from it)"
            )
    if sc.nodes:
        out.append(
            "a node carrying several named labels must meet every one's rule; one carrying none meets the default; "
            "a relationship also needs both endpoints visible"
        )
    if walking := sorted(sc.one_parent_labels()):
        out.append(
            f"a node labelled {_one_of(walking)} (visible through its one parent) that carries any other "
            "named label is hidden, whatever each rule says"
        )
    return out


def _one_of(names: list[str]) -> str:
    return ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]


def _handle_lint(args: argparse.Namespace) -> int:
    from gateway import policy_fit, scope_survey

    try:
        policy = load_policy(args.file)
    except PolicyError as exc:
        print(f"invalid: {exc}")
        return EXIT_INVALID_POLICY
    for warning in lint_warnings(policy):
        print(f"warning: {warning}")
    findings = policy_fit.static_findings(policy)
    if args.graph:
        try:
            with scope_survey.operator_reads(load_settings(args.config)) as run:
                findings += policy_fit.graph_findings(policy, policy_fit.read_shapes(run))
                if (hidden := policy_fit.one_parent_warning(policy, run)) is not None:
                    print(f"warning: {hidden}")
        except (SetupError, scope_survey.SurveyFailed) as exc:
            return _usage_error(f"cannot read the graph: {exc}")
    else:
        for what in policy_fit.unchecked(policy):
            print(f"not checked (no --graph): {what}")
    for finding in findings:
        print(f"problem: {finding.problem}\n  fix: {finding.fix}")
    if findings:
        print(f"invalid: policy {policy.name!r} is well-formed, but {len(findings)} problem(s) above need their fix")
        return EXIT_INVALID_POLICY
    print(f"ok: policy {policy.name!r} is valid" + (" and fits the graph" if args.graph else ""))
    return EXIT_ALLOWED


def _fmt(values: Any) -> str:
    if isinstance(values, (set, frozenset, list, tuple)):
        items = sorted(str(v) for v in values) if isinstance(values, (set, frozenset)) else [str(v) for v in values]
        return ", ".join(items) if items else "(none)"
    return str(values)


def render_policy(policy: Policy) -> str:
    rows: list[tuple[str, str, str]] = []

    def row(label: str, getter: Any) -> None:
        rows.append((label, _fmt(getter(policy.tool("recall"))), _fmt(getter(policy.tool("analyze")))))

    row("description", lambda t: t.description or "-")
    row("allowed clauses", lambda t: t.allowed_clauses)
    row("procedures allowed", lambda t: t.procedures_allowed)
    row("functions denied", lambda t: t.functions_denied)
    row("required parameters", lambda t: t.required_parameters)
    row("denied labels", lambda t: t.denied_labels)
    row("denied relationship types", lambda t: t.denied_relationship_types)
    for field in Limits.model_fields:
        row(f"limits.{field}", lambda t, f=field: getattr(t.limits, f))

    width0 = max(len(r[0]) for r in rows)
    width1 = min(48, max(len("recall"), *(len(r[1]) for r in rows)))
    title = f"Policy {policy.name!r}"
    lines = [f"{title}: {policy.description.strip()}" if policy.description else title]
    lines.append("")
    lines.append(f"{'setting':<{width0}}  {'recall':<{width1}}  analyze")
    lines.append(f"{'-' * width0}  {'-' * width1}  {'-' * 7}")
    for label, recall, analyze in rows:
        recall_lines = _wrap(recall, width1)
        analyze_lines = _wrap(analyze, 60)
        for i in range(max(len(recall_lines), len(analyze_lines))):
            left = label if i == 0 else ""
            r = recall_lines[i] if i < len(recall_lines) else ""
            an = analyze_lines[i] if i < len(analyze_lines) else ""
            lines.append(f"{left:<{width0}}  {r:<{width1}}  {an}".rstrip())
    res = policy.reserved_parameters
    lines.append("")
    lines.append(f"reserved parameters: keys {_fmt(res.keys)}; prefixes {_fmt(res.prefixes)}")
    sc = policy.scope
    from gateway.scope_survey import reads_layers

    # A layers property no rule reads is not described: the sentences below say what each rule reads.
    layers = f"layers property {sc.layers_property!r}, " if reads_layers(policy) else ""
    lines.append(
        f"scope: parameter ${sc.scope_parameter}, {layers}"
        f"bookkeeping types {_fmt(sc.bookkeeping_relationship_types)}, allow bookkeeping {dict(sc.allow_bookkeeping)}"
    )
    if layers:
        lines.append(f"scope: {untagged_sentence(policy)}")
    for sentence in rule_sentences(policy):
        lines.append(f"scope: {sentence}")
    lines += property_sentences(policy)
    sb = policy.sandbox
    reuse = (
        "one query per container"
        if sb.max_queries_per_container == 1
        else f"up to {sb.max_queries_per_container} queries of one principal per container"
    )
    lines.append(
        f"sandbox: {reuse} (idle ones removed after {sb.idle_container_seconds:g} s); "
        f"at most {sb.max_concurrent_per_principal} running queries per principal; "
        f"'busy' after waiting {sb.busy_wait_ms} ms"
    )
    lines.append("")
    lines.append("Rules a request can be refused by, in the order it meets them (the first objection decides):")
    width = max(len(rule.id) for rule in CATALOGUE)
    stage = None
    for rule in CATALOGUE:
        if rule.stage != stage:
            stage = rule.stage
            lines.append(f"  [{_STAGE_TITLES[stage]}]")
        lines.append(f"    {rule.id:<{width}}  {rule.sentence}")
    return "\n".join(lines)


_STAGE_TITLES: dict[Stage, str] = {
    "request": "the request's shape",
    "parse": "reading the Cypher",
    "guard": "the static guard",
    "scope": "the scope rewrite",
    "sandbox": "inside the sandbox",
}


def _wrap(text: str, width: int) -> list[str]:
    out: list[str] = []
    current = ""
    for word in text.split(" "):
        if current and len(current) + 1 + len(word) > width:
            out.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    out.append(current)
    return out


def shipped_policies() -> dict[str, Path]:
    """The policies the package ships, by name (the file's stem): ``default``, …."""
    return {path.stem: path for path in sorted(POLICIES_DIR.glob("*.yaml"))}


def find_policy_file(given: str) -> tuple[Path, str | None]:
    """The file ``given`` names, and a note when it is a shipped policy rather than a local file.

    ``given`` is a path; when nothing is there, a bare name (``default``) or a path of the
    checkout's shape (``policies/default.yaml``, ``default.yaml``) names the shipped policy of
    that name, so the commands the docs show work from an installed wheel, outside a checkout.
    Anything else that is not a file is an error naming what was looked up.
    """
    path = Path(given).expanduser()
    if path.is_file():
        return path, None
    shipped = shipped_policies()
    bare = path.name == given and not path.suffix
    checkout_shaped = path.suffix in (".yaml", ".yml") and path.parent in (Path("."), Path("policies"))
    name = path.stem if (bare or checkout_shaped) else None
    if name is not None and name in shipped:
        note = None if bare else f"{given} is not a file here; using the shipped policy {name!r} ({shipped[name]})"
        return shipped[name], note
    looked = f"looked for the file {path.absolute()}"
    if name is not None:
        looked += f" and a shipped policy named {name!r} in {POLICIES_DIR}"
    raise PolicyError(
        f"no policy {given!r}: {looked}; shipped policies: {', '.join(shipped) or '(none)'} "
        "(give one's name, or the path of your own policy file)"
    )


def _handle_init(args: argparse.Namespace) -> int:
    from gateway.cli.policy_init import render_template

    shipped = shipped_policies()
    if args.template not in shipped:
        return _usage_error(
            f"no template {args.template!r}: the templates are the shipped policies: {', '.join(shipped)}"
        )
    try:
        text = render_template(args.template, shipped[args.template], args.scope_property)
    except PolicyError as exc:
        return _usage_error(str(exc))
    sys.stdout.write(text)
    return EXIT_ALLOWED


def _review_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tool", choices=TOOL_NAMES, default="analyze", help="tool whose rules apply")
    parser.add_argument("--params", metavar="JSON", default="{}",
                        help="request parameters the tool's pins read, as a JSON object")  # fmt: skip
    parser.add_argument("--config", type=Path, help="TOML settings file (else $GATEWAY_CONFIG, env, defaults)")


def rule_sentence(policy: Policy, name: str, tool: ToolName) -> str:
    """The rule, filters and pin one label or type is held to under ``tool``, as ``policy show`` words them."""
    sc = policy.scope
    rule = sc.nodes.get(name) or sc.relationships.get(name) or sc.default
    parts = [_visible(policy, rule)]
    for f in sc.filters.get(name, ()):
        if tool in f.tools:
            parts.append(f"only when {_filter_sentence(policy, f)}")
    pin = policy.tool(tool).pins.get(name)
    if pin is not None:
        parts.append(f"only when its {pin.property} equals the request's ${pin.parameter}")
    return ", ".join(parts)


def _review_inputs(args: argparse.Namespace) -> tuple[Any, Policy, dict[str, Any]]:
    """The settings, the policy and the parameters ``explain`` and ``matrix`` read (SetupError, ValueError)."""
    params = json.loads(args.params)
    if not isinstance(params, dict):
        raise ValueError("--params must be a JSON object")
    overrides = {"policy_file": args.policy} if args.policy is not None else {}
    settings = load_settings(args.config, **overrides)
    return settings, load_policy(settings.policy_file), params


def _handle_explain(args: argparse.Namespace) -> int:
    from gateway import scope_survey
    from gateway.ops import policy_review

    try:
        settings, policy, params = _review_inputs(args)
        principal = policy_review.parse_principal(args.principal)
        ref = policy_review.ElementRef.parse(args.element)
        with scope_survey.operator_reads(settings) as run:
            found = policy_review.explain(policy, run, principal, ref, args.tool, params)
    except (SetupError, ValueError, scope_survey.SurveyFailed) as exc:
        return _usage_error(str(exc))
    print(policy_review.render_explanation(found))
    return EXIT_ALLOWED if found.visible else EXIT_INVALID_POLICY


def _handle_matrix(args: argparse.Namespace) -> int:
    from gateway import scope_survey
    from gateway.ops import policy_review

    try:
        settings, policy, params = _review_inputs(args)
        principals = [policy_review.parse_principal(spec) for spec in args.principal]
        if args.fixture is not None:
            policy_review.seed_fixture(settings, args.fixture)
        with scope_survey.operator_reads(settings) as run:
            found = policy_review.matrix(policy, run, principals, args.tool, params)
    except (SetupError, ValueError, scope_survey.SurveyFailed) as exc:
        return _usage_error(str(exc))
    print(policy_review.render_matrix(found))
    if args.html is not None:
        args.html.write_text(policy_review.matrix_html(found, policy.name, principals), encoding="utf-8")
        print(f"\nwritten: {args.html}")
    return EXIT_ALLOWED


def _handle_show(args: argparse.Namespace) -> int:
    try:
        file = None
        if args.file is not None:
            file, note = find_policy_file(args.file)
            if note is not None:
                print(f"cypher-gateway: {note}", file=sys.stderr)
        policy = load_policy(file)
    except PolicyError as exc:
        return _usage_error(str(exc))
    # A policy's names and values are printed escaped: a control character in one cannot forge a line.
    print(printable_lines(render_policy(policy)))
    return EXIT_ALLOWED
