"""The openCypher TCK's scenarios, taken from Maven Central into the cache (never committed).

``tck_dir()`` resolves ``org.opencypher:tck`` (the version pinned in ``docker/tck/pom.xml``)
with Maven, the route the managed Neo4j takes, and unpacks its ``features/`` and ``graphs/``
into the cache. ``scenarios()`` reads every ``.feature`` file with the Cucumber project's own
Gherkin parser (outlines expanded over their examples) and gives each scenario's graph,
set-up, parameters, query and expected outcome, as the TCK states them.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from gherkin.parser import Parser
from gherkin.pickles.compiler import Compiler, GherkinDocumentWithURI, PickleStep

from gateway.paths import cache_dir
from tests.support.paths import REPO

TCK_POM = REPO / "docker" / "tck" / "pom.xml"

# What a scenario is, for the gateway: a read it may run, a write it must refuse, a query
# the TCK expects to fail, or one that needs the TCK's own fixture procedures.
Kind = Literal["read", "write", "error", "procedure"]

_ERROR_STEP = re.compile(r"an? (\w+) should be raised at (compile time|runtime|any time): (\S+)")


@dataclass(frozen=True)
class TckError:
    """``Then a <type> should be raised at <phase>: <detail>``."""

    type: str
    phase: str
    detail: str


@dataclass(frozen=True)
class Expected:
    """The result table a scenario expects: cells are TCK value literals (``tests.support.tck_values``)."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    ordered: bool = False
    ignore_list_order: bool = False


@dataclass
class TckScenario:
    name: str  # "<feature file stem> <scenario name>[ #<example row>]", unique
    graph: str | None  # a named graph shipped in the jar ("binary-tree-1"), or None for an empty one
    setup: list[str] = field(default_factory=list)  # Cypher run before the query
    params: dict[str, str] = field(default_factory=dict)  # name -> Cypher literal
    query: str = ""
    needs_procedure: bool = False  # a fixture procedure the TCK harness defines
    expects_error: bool = False
    side_effects: bool = False  # the scenario states side effects: the query writes
    feature: str = ""  # the .feature file, relative to features/
    error: TckError | None = None
    expected: Expected | None = None  # the query's result table (None when an error is expected)

    @property
    def kind(self) -> Kind:
        if self.needs_procedure:
            return "procedure"
        if self.expects_error:
            return "error"
        if self.side_effects:
            return "write"
        return "read"


# --- the TCK's files ---------------------------------------------------------------------------------


def tck_version() -> str:
    match = re.search(r"<tck\.version>([^<]+)</tck\.version>", TCK_POM.read_text(encoding="utf-8"))
    if not match:
        raise RuntimeError(f"{TCK_POM} does not declare <tck.version>")
    return match.group(1).strip()


def tck_dir() -> Path:
    """The unpacked TCK (``features/``, ``graphs/``), fetched with Maven once per machine."""
    version = tck_version()
    target = cache_dir() / f"opencypher-tck-{version}"
    if (target / ".complete").exists():
        return target
    if shutil.which("mvn") is None:
        raise RuntimeError("Maven (`mvn`) is not on PATH; it fetches the openCypher TCK from Maven Central")
    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    jars = staging / "jars"
    jars.mkdir(parents=True)
    command = [
        "mvn", "-B", "-q", "-f", str(TCK_POM), "dependency:copy-dependencies",
        f"-DoutputDirectory={jars}", "-DincludeScope=runtime",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    jar = jars / f"tck-{version}.jar"
    if done.returncode != 0 or not jar.exists():
        raise RuntimeError(f"Maven could not fetch org.opencypher:tck:{version}:\n{done.stdout[-3000:]}")
    with zipfile.ZipFile(jar) as archive:
        for member in archive.namelist():
            if member.startswith(("features/", "graphs/")):
                archive.extract(member, staging)
    shutil.rmtree(jars)
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    (target / ".complete").write_text(f"org.opencypher:tck:{version}\n", encoding="utf-8")
    return target


def named_graph(name: str, root: Path | None = None) -> str:
    """The Cypher that builds one of the TCK's named graphs."""
    return ((root or tck_dir()) / "graphs" / name / f"{name}.cypher").read_text(encoding="utf-8")


# --- scenarios ---------------------------------------------------------------------------------------


def scenarios(root: Path | None = None) -> list[TckScenario]:
    """Every scenario of the TCK (outlines expanded), in file order."""
    features = (root or tck_dir()) / "features"
    out: list[TckScenario] = []
    for path in sorted(features.rglob("*.feature")):
        out.extend(parse_feature(path.read_text(encoding="utf-8"), str(path.relative_to(features))))
    return out


def selection(every: int, pool: Sequence[TckScenario]) -> list[TckScenario]:
    """A fixed sample for CI: every write and fixture-procedure call (refusals cost no sandbox),
    and each feature file's first read/error scenario and every ``every``-th after it, so every
    feature of the language is still asked. ``every=1`` keeps them all."""
    seen: dict[tuple[str, Kind], int] = {}
    out: list[TckScenario] = []
    for scenario in pool:
        if scenario.kind in ("write", "procedure"):
            out.append(scenario)
            continue
        key = (scenario.feature, scenario.kind)
        index = seen.get(key, 0)
        seen[key] = index + 1
        if index % every == 0:
            out.append(scenario)
    return out


def parse_feature(text: str, uri: str) -> list[TckScenario]:
    """The scenarios of one ``.feature`` file's text; ``uri`` names the file."""
    document = GherkinDocumentWithURI(**Parser().parse(text), uri=uri)
    stem = Path(uri).stem
    example_rows: dict[str, int] = {}
    out: list[TckScenario] = []
    for pickle in Compiler().compile(document):
        name = f"{stem} {pickle['name']}"
        if len(pickle["astNodeIds"]) > 1:  # a Scenario Outline row: number it within its outline
            example_rows[name] = example_rows.get(name, 0) + 1
            name = f"{name} #{example_rows[name]}"
        scenario = _scenario(name, pickle["steps"])
        scenario.feature = uri
        out.append(scenario)
    return out


def _scenario(name: str, steps: Sequence[PickleStep]) -> TckScenario:
    scenario = TckScenario(name=name, graph=None)
    after_control_query = False  # a control query's result belongs to it, not to the query
    for step in steps:
        text = step["text"]
        argument: Any = step.get("argument") or {}
        doc = argument.get("docString", {}).get("content", "")
        if text.startswith("the ") and text.endswith(" graph") and step["type"] == "Context":
            scenario.graph = text.removeprefix("the ").removesuffix(" graph")
        elif text.startswith("having executed"):
            scenario.setup.append(doc)
        elif text.startswith("parameters are"):
            for key, value in _table(argument):
                scenario.params[key] = value
        elif text.startswith("there exists a procedure"):
            scenario.needs_procedure = True
        elif text == "executing query:":
            scenario.query = doc
        elif text == "executing control query:":
            after_control_query = True
        elif (match := _ERROR_STEP.fullmatch(text)) is not None:
            scenario.expects_error = True
            scenario.error = TckError(*match.groups())
        elif text.startswith("the side effects should be"):
            scenario.side_effects = any(int(count) != 0 for _, count in _table(argument))
        elif text.startswith("the result should be") and not after_control_query:
            scenario.expected = _expected(text, argument)
    return scenario


def _table(argument: Any) -> Iterator[list[str]]:
    for row in argument["dataTable"]["rows"]:
        yield [cell["value"] for cell in row["cells"]]


def _expected(text: str, argument: Any) -> Expected:
    if text == "the result should be empty":
        return Expected(columns=(), rows=())
    header, *rows = list(_table(argument))
    return Expected(
        columns=tuple(header),
        rows=tuple(tuple(row) for row in rows),
        ordered="in order" in text,
        ignore_list_order="ignoring element order for lists" in text,
    )
