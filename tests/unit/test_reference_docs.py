"""The reference a reviewer reads matches the code: every module in docs/architecture.md's table,
every exception class of the tree in gateway/errors.py's docstring; SECURITY.md stays a reference
read in one sitting, and every link it and the decision records hold leads somewhere."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import gateway
import sandbox
from gateway.cypher import CypherSyntaxError
from gateway.errors import GatewayError, SetupError
from tests.support.paths import REPO

ARCHITECTURE = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
SECURITY = REPO / "SECURITY.md"
# One sitting: each guarantee one line, its detail in the decision record it links to.
SECURITY_MAX_LINES = 350
LINKED_DOCS = [SECURITY, REPO / "docs" / "security-tests.md", *sorted((REPO / "docs" / "decisions").glob("*.md"))]
# [text](target) inline, and [label]: target reference definitions at a line's start.
_INLINE = re.compile(r"\]\(([^)\s]+)\)")
_DEFINITION = re.compile(r"^\[([^\]]+)\]:\s+(\S+)", re.MULTILINE)
_USED_LABEL = re.compile(r"\[([0-9]{4}[+-]?)\](?![(:])")


def _listed(path: str) -> bool:
    """Named whole, or by file name on a line that names its folder (`gateway/scope/` ... `calls.py`)."""
    folder, _, name = path.rpartition("/")
    if f"`{path}`" in ARCHITECTURE:
        return True
    lines = [line for line in ARCHITECTURE.splitlines() if line.startswith("|") and f"{folder}/" in line]
    return any((name == "__init__.py" and f"`{folder}/`" in line) or f"`{name}`" in line for line in lines)


def test_every_module_is_in_the_architecture_table() -> None:
    modules = sorted(
        p.relative_to(REPO).as_posix() for root in ("gateway", "sandbox") for p in (REPO / root).rglob("*.py")
    )
    assert len(modules) > 60
    missing = [m for m in modules if not _listed(m) and m not in ("gateway/__init__.py", "sandbox/__init__.py")]
    assert missing == []


def _subclasses(base: type) -> set[type]:
    found: set[type] = set(base.__subclasses__())
    for sub in list(found):
        found |= _subclasses(sub)
    return found


def test_the_error_tree_names_every_caller_and_setup_error() -> None:
    for package in (gateway, sandbox):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            importlib.import_module(info.name)
    tree = gateway.errors.__doc__ or ""
    classes = _subclasses(GatewayError) | _subclasses(SetupError) | _subclasses(CypherSyntaxError)
    assert len(classes) >= 15
    assert sorted(c.__name__ for c in classes if f"── {c.__name__} " not in tree) == []


def _anchors(markdown: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens, repeats numbered."""
    anchors: set[str] = set()
    for line in markdown.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            continue
        slug = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        candidate, n = slug, 0
        while candidate in anchors:
            n += 1
            candidate = f"{slug}-{n}"
        anchors.add(candidate)
    return anchors


def _links(markdown: Path) -> list[str]:
    text = markdown.read_text(encoding="utf-8")
    return _INLINE.findall(text) + [target for _, target in _DEFINITION.findall(text)]


def test_security_md_is_read_in_one_sitting() -> None:
    lines = SECURITY.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= SECURITY_MAX_LINES
    headings = [line for line in lines if line.startswith("## ")]
    # Every layer, then the two sections other changes edit; their anchors are linked from elsewhere.
    for heading in ("## The layers", "## 1. Static guard", "## 7. Server, authentication, audit",
                    "## Scope rules", "## Timing"):  # fmt: skip
        assert heading in headings


@pytest.mark.parametrize("markdown", LINKED_DOCS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_local_link_resolves_to_a_file_and_heading(markdown: Path) -> None:
    broken = []
    for target in _links(markdown):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:: not this test's business
        path, _, anchor = target.partition("#")
        resolved = (markdown.parent / path).resolve() if path else markdown
        if not resolved.exists() or (anchor and (resolved.is_dir() or anchor not in _anchors(resolved))):
            broken.append(target)
    assert broken == []


def test_each_layer_of_security_md_links_its_records_and_its_tests() -> None:
    text = SECURITY.read_text(encoding="utf-8")
    defined = dict(_DEFINITION.findall(text))
    assert sorted(set(_USED_LABEL.findall(text)) - set(defined)) == []  # an undefined [0019] shows as text
    assert all(target.startswith("docs/decisions/") for target in defined.values())
    sections = re.split(r"^## ", text, flags=re.MULTILINE)
    layers = [s for s in sections if re.match(r"[1-7]\. ", s)]
    assert len(layers) == 7
    for section in layers:
        slug = re.sub(r"[^\w\- ]", "", section.splitlines()[0].lower()).replace(" ", "-")
        assert f"(docs/security-tests.md#{slug})" in section
        assert _USED_LABEL.search(section), section.splitlines()[0]
