"""The openCypher TCK's scenarios, taken from Maven Central into the cache (never committed).

``scenarios()`` reads every ``.feature`` file of ``org.opencypher:tck`` (pinned: Maven's
RELEASE metadata for it points at a bogus version) with the Cucumber project's own Gherkin
parser, and gives each scenario's graph set-up, parameters and query.
"""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gherkin.parser import Parser
from gherkin.pickles.compiler import Compiler, GherkinDocumentWithURI, PickleStep

from gateway.paths import cache_dir

TCK_VERSION = "1.0.0-M23"


@dataclass
class TckScenario:
    name: str  # "<feature file stem> <scenario name>", unique
    graph: str | None  # a named graph shipped in the jar ("binary-tree-1"), or None for an empty one
    setup: list[str] = field(default_factory=list)  # Cypher run before the query
    params: dict[str, str] = field(default_factory=dict)  # name -> Cypher literal
    query: str = ""
    needs_procedure: bool = False  # a fixture procedure the TCK harness defines
    expects_error: bool = False
    side_effects: bool = False


def tck_dir() -> Path:
    """The unpacked TCK (``features/``, ``graphs/``), fetched with Maven once per machine."""
    target = cache_dir() / f"opencypher-tck-{TCK_VERSION}"
    if (target / ".complete").exists():
        return target
    if shutil.which("mvn") is None:
        raise RuntimeError("Maven (`mvn`) is not on PATH; it fetches the openCypher TCK from Maven Central")
    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    command = ["mvn", "-B", "-q", "dependency:copy", f"-Dartifact=org.opencypher:tck:{TCK_VERSION}",
               f"-DoutputDirectory={staging}"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    jar = staging / f"tck-{TCK_VERSION}.jar"
    if done.returncode != 0 or not jar.exists():
        raise RuntimeError(f"Maven could not fetch org.opencypher:tck:{TCK_VERSION}:\n{done.stdout[-3000:]}")
    with zipfile.ZipFile(jar) as archive:
        for member in archive.namelist():
            if member.startswith(("features/", "graphs/")):
                archive.extract(member, staging)
    jar.unlink()
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    (target / ".complete").write_text(f"org.opencypher:tck:{TCK_VERSION}\n", encoding="utf-8")
    return target


def named_graph(name: str) -> str:
    """The Cypher that builds one of the TCK's named graphs."""
    return (tck_dir() / "graphs" / name / f"{name}.cypher").read_text(encoding="utf-8")


def scenarios() -> list[TckScenario]:
    """Every scenario of the TCK (outlines expanded), in file order."""
    out: list[TckScenario] = []
    parser, compiler = Parser(), Compiler()
    for path in sorted((tck_dir() / "features").rglob("*.feature")):
        document = GherkinDocumentWithURI(**parser.parse(path.read_text(encoding="utf-8")), uri=str(path))
        seen: dict[str, int] = {}
        for pickle in compiler.compile(document):
            name = f"{path.stem} {pickle['name']}"
            seen[name] = seen.get(name, 0) + 1
            if seen[name] > 1:
                name = f"{name} #{seen[name]}"
            out.append(_scenario(name, pickle["steps"]))
    return out


def _scenario(name: str, steps: list[PickleStep]) -> TckScenario:
    scenario = TckScenario(name=name, graph=None)
    for step in steps:
        text = step["text"]
        argument: Any = step.get("argument") or {}
        doc = argument.get("docString", {}).get("content", "")
        if text.startswith("the ") and text.endswith(" graph") and step["type"] == "Context":
            scenario.graph = text.removeprefix("the ").removesuffix(" graph")
        elif text.startswith("having executed"):
            scenario.setup.append(doc)
        elif text.startswith("parameters are"):
            for row in argument["dataTable"]["rows"]:
                key, value = (cell["value"] for cell in row["cells"])
                scenario.params[key] = value
        elif text.startswith("there exists a procedure"):
            scenario.needs_procedure = True
        elif text.startswith("executing"):
            scenario.query = doc
        elif " should be raised" in text:
            scenario.expects_error = True
        elif text.startswith("the side effects should be"):
            scenario.side_effects = True
    return scenario
