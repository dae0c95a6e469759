"""The request path never reaches up into the operator tooling of ``gateway/ops/``.

The query's path reads top to bottom (server → service → guard → scope → runner → sandbox);
``gateway/ops/`` (fetching and starting Neo4j, building images, doctor, the demo) sits apart
from it. Two holds: every import statement of a request-path module, lazy and type-only ones
included, read from the source; and what a fresh ``serve`` interpreter actually loads.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from tests.support.env import clean_env
from tests.support.paths import REPO

GATEWAY = REPO / "gateway"
# The request path, and what `serve` itself imports.
REQUEST_PATH = ("server", "service", "compose", "config", "runner", "scope", "guard", "cypher", "cli.serve")
OFF_THE_PATH = ("gateway.ops", "gateway.mnr")


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every module an import statement anywhere in ``path`` names (``from a import b``: ``a`` and ``a.b``)."""
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in GATEWAY.rglob("*.py")}


def _on_request_path(name: str) -> bool:
    return any(name == f"gateway.{m}" or name.startswith(f"gateway.{m}.") for m in REQUEST_PATH)


def _is_off_path(name: str) -> bool:
    return any(name == m or name.startswith(m + ".") for m in OFF_THE_PATH)


def test_no_request_path_module_imports_the_operator_tooling() -> None:
    modules = _modules()
    assert "gateway.service" in modules and "gateway.runner.settings" in modules  # the walk found the package
    arrows = sorted(
        (name, target)
        for name, path in modules.items()
        if _on_request_path(name)
        for target in _imports(path)
        if _is_off_path(target)
    )
    assert arrows == []


def test_nothing_serve_reaches_imports_the_operator_tooling() -> None:
    """The closure: a module the request path imports (policy, paths, managed_neo4j, ...) counts too."""
    modules = _modules()
    seen: set[str] = set()
    todo = [name for name in modules if _on_request_path(name)]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        parents = [".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)]
        todo += [m for m in (*_imports(modules[name]), *parents) if m in modules]
    assert sorted(m for m in seen if _is_off_path(m)) == []
    assert "gateway.managed_neo4j" in seen and "gateway.image_tag" in seen  # the facts serve does need


SERVE = r"""
import json, sys
from gateway import cli
try:
    cli.main(["serve", "--help"])
except SystemExit:
    pass
from gateway.compose import compose
from gateway.config import load_settings, neo4j_connection
from gateway.runner import settings_for
from gateway.server import build_server

settings = load_settings()
connection = neo4j_connection(settings)  # no URI: the managed server's facts, from the state directory
runner_settings = settings_for(settings, connection)  # no sandbox_image: the content-hash tag
print(json.dumps({"uri": connection.uri, "image": runner_settings.image,
                  "loaded": sorted(m for m in sys.modules if m.startswith(("gateway.ops", "gateway.mnr")))}))
"""


def test_serve_loads_no_operator_tooling(tmp_path: Path) -> None:
    """A fresh interpreter down serve's path, the managed-server and image-tag defaults included."""
    home = tmp_path / "neo4j"
    home.mkdir()
    (home / "password").write_text("cgw-unit\n", encoding="utf-8")
    env = clean_env(CYPHER_GATEWAY_STATE=str(tmp_path), CYPHER_GATEWAY_NEO4J_PORT="17999")
    env.pop("CYPHER_GATEWAY_NEO4J_VERSION", None)
    done = subprocess.run([sys.executable, "-c", SERVE], env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["uri"] == "bolt://127.0.0.1:17999"  # the defaults really were resolved
    assert report["image"].startswith("cypher-gateway/sandbox:")
    assert report["loaded"] == []


def test_the_full_cli_does_load_the_tooling_so_the_probe_can_see_it(tmp_path: Path) -> None:
    """The control: the same probe sees gateway.ops when a command that needs it is parsed."""
    program = "import sys\nfrom gateway import cli\ncli.build_parser()\nprint('gateway.ops.images' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", program], env=clean_env(), cwd=REPO, capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "True"
