"""The case-file format: pydantic models of ``*.mnr.yaml``, strict (an unknown key is an error).

A file names the policy its expectations assume, one fixture reference, optional
defaults and a list of cases::

    policy: default                    # the `name` of the policy in force; any other is refused
    fixture: builtin:memory            # or a path to a .cypher file, relative to this file
    defaults:
      principal: {name: agent-a, scope: [project-a]}   # + attributes: {repositories: [acme/api]}
      tool: analyze
    cases:
      - id: other-project-fact
        description: A fact in another project's layer never comes back.
        query: MATCH (f:Fact) RETURN f
        must_not_retrieve: [{uid: fact-b-1}]
        must_retrieve: [{uid: fact-a-1}]

docs/mnr.md describes every field and the exact pass/fail rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gateway.domain import Principal, attribute_lists
from gateway.identity_text import check_identity_text
from gateway.policy import ToolName

FIXTURES_DIR = Path(__file__).resolve().parent / "fixtures"
BUILTIN_PREFIX = "builtin:"
SUFFIX = ".mnr.yaml"

_CASE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")

Scalar = str | int | float | bool


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Selector(_Strict):
    """What to look for in a result. Exactly one kind per selector:

    * ``uid`` -- one fixture element, named by its stable key property (``uid`` unless the
      file says otherwise). It is found as a node/relationship with that element id or key,
      a relationship pointing at it, or a plain value equal to its key, its element id or one
      of its fingerprints (string properties no other fixture element holds).
    * ``labels`` / ``type`` / ``props`` -- any node or relationship that has all these labels,
      this relationship type and these property values.
    * ``value`` -- a plain (non-graph) value equal to this one, anywhere in the rows.
    * ``text`` -- a string containing this text, anywhere in the rows, inside returned nodes',
      relationships' and paths' property maps too (and their lists).
    """

    uid: str | None = None
    labels: tuple[str, ...] | None = None
    type: str | None = None
    props: dict[str, Any] | None = None
    value: Scalar | None = None
    text: Annotated[str, Field(min_length=1)] | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Selector:
        kinds = [
            name
            for name, present in (
                ("uid", self.uid is not None),
                ("element", any(v is not None for v in (self.labels, self.type, self.props))),
                ("value", self.value is not None),
                ("text", self.text is not None),
            )
            if present
        ]
        if len(kinds) != 1:
            raise ValueError(
                "a selector names exactly one of: uid | labels/type/props | value | text "
                f"(got {', '.join(kinds) or 'nothing'})"
            )
        if self.labels is not None and self.type is not None:
            raise ValueError("a selector is a node (labels) or a relationship (type), not both")
        return self

    def describe(self) -> str:
        if self.uid is not None:
            return f"uid={self.uid}"
        if self.value is not None:
            return f"value={self.value!r}"
        if self.text is not None:
            return f"text~{self.text!r}"
        parts = []
        if self.labels:
            parts.append(":" + ":".join(self.labels))
        if self.type:
            parts.append(f"[:{self.type}]")
        if self.props:
            parts.append("{" + ", ".join(f"{k}: {v!r}" for k, v in self.props.items()) + "}")
        return " ".join(parts)


class PrincipalSpec(_Strict):
    name: Annotated[str, Field(min_length=1)]
    # The layers list; an empty list means global-only, never everything. None: not written
    # (then attributes.layers, or global-only).
    scope: tuple[str, ...] | None = None
    # Further named lists a policy's rules read (``repositories``, ``tenants``, …); one the
    # principal lacks is empty.
    attributes: dict[str, tuple[str, ...]] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _identity_name(cls, value: str) -> str:
        return check_identity_text(value, "the principal's name")

    @model_validator(mode="after")
    def _lists(self) -> PrincipalSpec:
        try:
            attribute_lists(self.scope, self.attributes)
        except ValueError as exc:
            raise ValueError(f"principal {self.name!r}: {exc}") from None
        return self

    def principal(self) -> Principal:
        """The principal the gateway runs this case as."""
        scope, attributes = attribute_lists(self.scope, self.attributes)
        return Principal(name=self.name, scope=scope, attributes=attributes)


# The layers that keep a case's query a checked read: with one of them off, what the file says
# reaches Neo4j unchecked (LOAD CSV fetching a URL, a procedure off the allow-list). Suites
# come from pull requests, so a file alone never switches these off: the run must also be
# given a LayerPermit for the case (`mnr run --allow-layers-off`, pytest
# `--mnr-allow-layers-off`). READ mode is not a switch at all. The scope layers are not
# here: with the guard and the EXPLAIN check on, switching them off only shows the case
# more of its own fixture, which is what the layer-alone cases are for.
GUARDING_LAYERS = ("guard", "explain_check")


class LayersSpec(_Strict):
    """Switch gateway layers off for one case (to prove another layer holds alone)."""

    guard: bool = True
    scope_rewrite: bool = True
    explain_check: bool = True
    result_check: bool = True

    def guarding_off(self) -> tuple[str, ...]:
        """The guarding layers this spec switches off (they need a LayerPermit)."""
        return tuple(name for name in GUARDING_LAYERS if not getattr(self, name))


class Defaults(_Strict):
    principal: PrincipalSpec | None = None
    tool: ToolName | None = None
    params: dict[str, Any] | None = None


class Case(_Strict):
    id: str
    description: str = ""
    principal: PrincipalSpec | None = None
    tool: ToolName | None = None
    query: Annotated[str, Field(min_length=1)]
    params: dict[str, Any] | None = None
    layers: LayersSpec | None = None

    must_not_retrieve: tuple[Selector, ...] = ()
    must_retrieve: tuple[Selector, ...] = ()
    must_reject: str | None = None
    max_rows: Annotated[int, Field(ge=0)] | None = None
    min_rows: Annotated[int, Field(ge=0)] | None = None
    # Exact rows (JSON values, in order): for counts and other aggregates.
    expect_rows: list[list[Any]] | None = None
    # The degraded markers the answer must carry, exactly. Default: none. Listing
    # "<tool>:disabled" is the only way a case passes without the sandbox running.
    expect_degraded: tuple[str, ...] = ()
    # The answer's notifications, exactly and in order, each by its GQL status (its Neo4j code
    # when it has none). Unset: not checked. `[]` says the answer carries none.
    expect_notifications: tuple[str, ...] | None = None

    @field_validator("id")
    @classmethod
    def _id_shape(cls, value: str) -> str:
        if not _CASE_ID.fullmatch(value):
            raise ValueError("a case id is letters, digits, '.', '_' and '-' (it names a test)")
        return value

    @model_validator(mode="after")
    def _expectations(self) -> Case:
        answer_checks = (
            self.must_retrieve
            or self.expect_rows is not None
            or self.min_rows is not None
            or self.expect_degraded
            or self.expect_notifications is not None
        )
        if self.must_reject is not None:
            if answer_checks or self.must_not_retrieve or self.max_rows is not None:
                raise ValueError("must_reject stands alone: a rejected query returns nothing to check")
            if self.layers is not None and not self.layers.guard and not self.layers.scope_rewrite:
                raise ValueError("must_reject needs the guard or the scope rewrite switched on")
        elif not (answer_checks or self.must_not_retrieve or self.max_rows is not None):
            raise ValueError(
                "a case needs at least one expectation: must_not_retrieve, must_retrieve, must_reject, "
                "max_rows, min_rows, expect_rows, expect_degraded or expect_notifications"
            )
        return self


class Suite(_Strict):
    """One ``*.mnr.yaml`` file."""

    # The name of the policy the expectations were written for: what must stay hidden and
    # which rule rejects what depend on it, so a run under another policy is refused.
    policy: Annotated[str, Field(min_length=1)]
    fixture: str
    # The fixture property that names elements in `uid` selectors.
    key_property: Annotated[str, Field(min_length=1)] = "uid"
    description: str = ""
    defaults: Defaults = Defaults()
    cases: Annotated[tuple[Case, ...], Field(min_length=1)]
    # Set by load_suite: where the file is, so the fixture path can be resolved.
    source: Path | None = None

    @model_validator(mode="after")
    def _unique_ids_and_complete(self) -> Suite:
        seen: set[str] = set()
        for case in self.cases:
            if case.id in seen:
                raise ValueError(f"case id {case.id!r} appears twice")
            seen.add(case.id)
            if case.principal is None and self.defaults.principal is None:
                raise ValueError(f"case {case.id!r} has no principal (and defaults has none)")
            if case.tool is None and self.defaults.tool is None:
                raise ValueError(f"case {case.id!r} has no tool (and defaults has none)")
        return self

    @property
    def name(self) -> str:
        if self.source is None:
            return "<suite>"
        return self.source.name.removesuffix(SUFFIX)

    def fixture_path(self) -> Path:
        if self.fixture.startswith(BUILTIN_PREFIX):
            return builtin_fixture(self.fixture.removeprefix(BUILTIN_PREFIX))
        path = Path(self.fixture)
        if not path.is_absolute() and self.source is not None:
            path = self.source.parent / path
        return path.resolve()

    def resolved(self, case: Case) -> ResolvedCase:
        principal = case.principal or self.defaults.principal
        tool = case.tool or self.defaults.tool
        assert principal is not None and tool is not None  # checked by the validator
        params = case.params if case.params is not None else (self.defaults.params or {})
        return ResolvedCase(case=case, principal=principal, tool=tool, params=dict(params))


class ResolvedCase(BaseModel):
    """A case with the file's defaults filled in."""

    model_config = ConfigDict(frozen=True)

    case: Case
    principal: PrincipalSpec
    tool: ToolName
    params: dict[str, Any]


@dataclass(frozen=True)
class LayerPermit:
    """Leave, given on the command line, for cases of one file to switch guarding layers off.

    ``file`` is the case file (resolved); ``case`` a glob over case ids (``*``: every case
    of that file). There is no form that covers every file: each one is named.
    """

    file: Path
    case: str = "*"

    @classmethod
    def parse(cls, text: str, base: Path) -> LayerPermit:
        """``FILE`` or ``FILE::CASE``, ``FILE`` relative to ``base``."""
        file, sep, case = text.partition("::")
        if not file.strip() or (sep and not case.strip()):
            raise SuiteError(f"{text!r} is not FILE or FILE::CASE (a case file, and a case id or glob)")
        return cls(file=(base / file).resolve(), case=case if sep else "*")

    def allows(self, suite: Suite, case: Case) -> bool:
        return suite.source == self.file and fnmatchcase(case.id, self.case)


class SuiteError(Exception):
    """A case file cannot be read or is invalid; the message names the file and the problem."""


def builtin_fixture(name: str) -> Path:
    path = FIXTURES_DIR / f"{name}.cypher"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in FIXTURES_DIR.glob("*.cypher")))
        raise SuiteError(f"no built-in fixture {name!r} (known: {known})")
    return path


def load_suite(path: Path | str) -> Suite:
    file = Path(path)
    try:
        raw = yaml.safe_load(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SuiteError(f"cannot read {file}: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise SuiteError(f"{file} is not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise SuiteError(f"{file} must hold a mapping at the top level")
    if "source" in raw:
        raise SuiteError(f"{file}: 'source' is set by the loader, not by the file")
    try:
        suite = Suite.model_validate({**raw, "source": file.resolve()})
    except ValidationError as exc:
        raise SuiteError(f"{file} is invalid: {_describe(exc)}") from exc
    try:
        fixture = suite.fixture_path()
    except SuiteError as exc:
        raise SuiteError(f"{file}: {exc}") from exc
    if not fixture.is_file():
        raise SuiteError(f"{file}: fixture {fixture} does not exist")
    return suite


def discover(paths: list[Path]) -> list[Path]:
    """Case files named by ``paths`` (files as given, directories searched for ``*.mnr.yaml``)."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(sorted(path.rglob(f"*{SUFFIX}")))
        else:
            found.append(path)
    return found


def _describe(exc: ValidationError) -> str:
    problems = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "<root>"
        problems.append(f"{loc}: {err['msg']}")
    return "; ".join(problems)
