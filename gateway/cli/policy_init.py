"""``cypher-gateway policy init``: a starting policy, written from a shipped one, for a user's own graph.

The shipped policies are the templates (``default``, ``mentis``, ``mindreader``: the files in
``policies/``). The text is copied as it is, comments included (they are the reviewer's
explanation), under a header saying where it came from. ``--scope-property NAME`` renames the
template's scope property throughout: the property its membership / equality rules read (``layers``
for the default and Mindreader policies, a Repository's ``name`` for Mentis), in
``scope.layers_property``, in every rule, filter and pin that names it, in the
``visible_properties`` lists that show it, and in the comments' `backticked` mentions. The rename is
checked on the result: the renamed file must read exactly ``NAME`` where the template read the old
property, otherwise nothing is written."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from gateway import rule_kinds
from gateway.policy import PolicyError, VisibilityRule

# A property name as the rules embed it in Cypher: a plain identifier (no backticks needed).
_PROPERTY_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_RULE_GROUPS = ("nodes", "relationships")
# The top-level visible_properties block: its line and every indented or comment line after it.
_VISIBLE_BLOCK = re.compile(r"(?m)^visible_properties:.*\n(?:(?:[ \t]+.*|#.*|)\n)*")


def scope_properties(document: dict[str, Any]) -> set[str]:
    """The element properties a policy's visibility rules read (its scope property, when there is one)."""
    scope = document.get("scope") or {}
    layers_property = str(scope.get("layers_property", "layers"))
    rules: list[Any] = [scope.get("default")]
    for group in _RULE_GROUPS:
        rules.extend((scope.get(group) or {}).values())
    found: set[str] = set()
    named_any = False
    for rule in rules:
        if not isinstance(rule, dict):
            continue
        named_any = True
        try:
            parsed = VisibilityRule.model_validate(rule)
        except ValueError:
            continue  # the loader says what is wrong with it; here it reads nothing
        # The properties compared with a caller's attribute: what scopes an element to its owners.
        found.update(
            part.property or layers_property
            for part in rule_kinds.walk(parsed)
            if rule_kinds.spec(part).reads_attribute
        )
    # A policy without per-label rules scopes every element by its layers property.
    return found if named_any else {layers_property}


def render_template(name: str, path: Path, scope_property: str | None = None) -> str:
    """The starting policy written from the shipped policy ``name`` at ``path``."""
    text = path.read_text(encoding="utf-8")
    document = _parse(name, text)
    command = f"cypher-gateway policy init --template {name}"
    if scope_property is not None:
        text = _renamed(name, text, document, scope_property)
        command += f" --scope-property {scope_property}"
    header = (
        f"# Written by `{command}` from the shipped policy {name!r}.\n"
        "# Give it your own `name:` (MNR suites name the policy they were written for), check it with\n"
        "# `cypher-gateway policy lint FILE`, select it with GATEWAY_POLICY_FILE=FILE and prove it on your\n"
        "# graph with an MNR suite (docs/policies.md).\n"
    )
    return header + text


def _parse(name: str, text: str) -> dict[str, Any]:
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise PolicyError(f"template {name!r} is not valid YAML: {exc}") from exc
    if not isinstance(document, dict):
        raise PolicyError(f"template {name!r} does not hold a mapping")
    return document


def _renamed(name: str, text: str, document: dict[str, Any], new: str) -> str:
    if not _PROPERTY_NAME.fullmatch(new):
        raise PolicyError(
            f"--scope-property {new!r}: a property name is letters, digits and '_', not starting with a digit"
        )
    found = scope_properties(document)
    if len(found) != 1:
        raise PolicyError(
            f"template {name!r} reads {len(found)} scope properties ({', '.join(sorted(found)) or 'none'}): "
            "--scope-property cannot tell which to rename; edit the rules by hand"
        )
    (old,) = found
    quoted = rf"(?P<q>[\"']?){re.escape(old)}(?P=q)"
    # `layers_property: layers` / `property: layers` on a line of its own, and inside flow mappings
    # (`{kind: membership, property: layers}`, `{property: name, parameter: repository}`).
    block = re.compile(rf"(?m)^(?P<key>\s*(?:-\s+)?(?:layers_)?property:\s*){quoted}(?=\s*(?:#.*)?$)")
    flow = re.compile(rf"(?P<key>[{{,]\s*(?:layers_)?property:\s*){quoted}(?=\s*[,}}])")
    renamed = flow.sub(lambda m: m["key"] + new, block.sub(lambda m: m["key"] + new, text))
    # The allow-list's entries naming it (`Repository: [name]`): the key the rules read is the one shown.
    renamed = _VISIBLE_BLOCK.sub(
        lambda b: re.sub(r"\[[^\]\n]*\]", lambda m: re.sub(rf"\b{re.escape(old)}\b", new, m[0]), b[0]), renamed
    )
    # Comments: `backticked` mentions of the old property, so the explanation still reads true.
    word = re.compile(rf"\b{re.escape(old)}\b")
    renamed = re.sub(r"`[^`\n]*`", lambda m: word.sub(new, m[0]), renamed)
    after = scope_properties(_parse(name, renamed))
    if after != {new}:
        raise PolicyError(
            f"template {name!r}: renaming {old!r} to {new!r} left the rules reading {sorted(after)}; "
            "nothing was written"
        )
    return renamed
