"""The wheel, installed into a fresh venv outside the checkout, works from nothing to an answer.

The wheel is built from a copy of the work tree (so a stale ``build/`` cannot leak into
it) with pip, as ``pipx`` and ``uv`` would build or install it. Every file of the
repository's ``policies/`` and ``docker/`` must be in it, byte for byte, under
``gateway/resources/`` (and nothing as a top-level name in site-packages). Then, from an
empty directory, with its own state directory and Neo4j ports, the installed
``cypher-gateway`` runs what a new user types: ``policy show``, ``images build``,
``neo4j start``, ``mnr seed``, ``doctor``, ``tokens new``, and ``serve`` over stdio and
over HTTP with the new token, each answering one MCP ``analyze`` call.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from gateway import image_tag
from gateway.ops import images
from gateway.ops.demo import FACTS_A, FACTS_QUERY, SCOPE_A
from tests.support.env import clean_env
from tests.support.paths import REPO
from tests.support.ports import free_port
from tests.support.server import start_http_server, stop

SHIPPED_DIRS = ("policies", "docker")


def _run(args: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None,
         timeout: float = 600) -> subprocess.CompletedProcess[str]:  # fmt: skip
    done = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    output = f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    assert done.returncode == 0, f"{' '.join(args[:4])} exited {done.returncode}:\n{output}"
    return done


def _copy_work_tree(target: Path) -> None:
    """Tracked and untracked-but-not-ignored files, symlinks kept as symlinks."""
    listed = _run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO).stdout.split("\0")
    for name in filter(None, listed):
        source, dest = REPO / name, target / name
        if not source.exists() and not source.is_symlink():
            continue  # deleted in the work tree, not yet in the index
        dest.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            dest.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, dest)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("source")
    _copy_work_tree(source)
    dist = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(source)])
    (built,) = dist.glob("cypher_gateway-*.whl")
    return built


@dataclass(frozen=True)
class Installed:
    bin: Path
    home: Path  # an empty directory outside the checkout: the working directory of every command
    env: dict[str, str]

    def run(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return _run([str(self.bin / "cypher-gateway"), *args], env=self.env, cwd=self.home, timeout=timeout)


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    root = tmp_path_factory.mktemp("installed")
    assert not root.is_relative_to(REPO)
    venv = root / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)])
    home = root / "home"
    home.mkdir()
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if not Path(p).is_relative_to(REPO))
    env = clean_env(
        PATH=path,
        # Its own managed Neo4j: the state directory and ports of this test alone.
        CYPHER_GATEWAY_STATE=str(root / "state"),
        CYPHER_GATEWAY_NEO4J_PORT=str(free_port()),
        CYPHER_GATEWAY_NEO4J_HTTP_PORT=str(free_port()),
        GATEWAY_POOL_SIZE="1",
    )
    for name in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"):
        env.pop(name, None)
    cli = Installed(venv / "bin", home, env)
    yield cli
    subprocess.run([str(cli.bin / "cypher-gateway"), "neo4j", "stop"], env=env, cwd=home, capture_output=True,
                   timeout=120, check=False)  # fmt: skip


def test_the_wheel_ships_the_repositorys_policies_and_image_files(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        expected = [p for d in SHIPPED_DIRS for p in sorted((REPO / d).rglob("*")) if p.is_file()]
        assert expected, "the repository has policies/ and docker/"
        for path in expected:
            inside = "gateway/resources/" + path.relative_to(REPO).as_posix()
            assert inside in names, f"{inside} is not in the wheel"
            assert archive.read(inside) == path.read_bytes(), f"{inside} differs from {path.relative_to(REPO)}"
        assert "gateway/mnr/fixtures/memory.cypher" in names
        assert {"gateway/mnr/fixtures/mentis.cypher", "gateway/mnr/fixtures/mindreader.cypher"} <= names
    # Nothing lands in site-packages under a name of its own (docker/ there is the Docker SDK).
    top_level = {name.split("/", 1)[0] for name in names}
    assert {name for name in top_level if not name.endswith(".dist-info")} == {"gateway", "sandbox"}


def _stdio_analyze(installed: Installed) -> dict[str, Any]:
    env = {**installed.env, "GATEWAY_STDIO_PRINCIPAL": "agent-a", "GATEWAY_STDIO_SCOPE": ",".join(SCOPE_A)}
    params = StdioServerParameters(command=str(installed.bin / "cypher-gateway"), args=["serve"], env=env,
                                   cwd=str(installed.home))  # fmt: skip

    async def call() -> dict[str, Any]:
        with (installed.home / "stdio-server.log").open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=120) as client:
                result = await client.call_tool("analyze", {"cypher": FACTS_QUERY})
        assert not result.is_error, result
        return dict(result.structured_content or {})

    return anyio.run(call)


def _http_analyze(url: str, token: str) -> dict[str, Any]:
    async def call() -> dict[str, Any]:
        async with (
            create_mcp_http_client(headers={"authorization": f"Bearer {token}"}) as http,
            Client(streamable_http_client(url, http_client=http), read_timeout_seconds=120) as client,
        ):
            result = await client.call_tool("analyze", {"cypher": FACTS_QUERY})
        assert not result.is_error, result
        return dict(result.structured_content or {})

    return anyio.run(call)


@pytest.mark.timeout(1200)
def test_from_nothing_to_an_answer_outside_the_checkout(installed: Installed) -> None:
    where = installed.run("--help")  # the console script starts
    assert "doctor" in where.stdout and "tokens" in where.stdout
    python = str(installed.bin / "python")
    located = _run([python, "-c", "import gateway, sandbox; print(gateway.__file__); print(sandbox.__file__)"],
                   env=installed.env, cwd=installed.home).stdout.split()  # fmt: skip
    assert all(Path(p).is_relative_to(installed.bin.parent) for p in located), located

    shown = installed.run("policy", "show")
    assert "Policy 'default'" in shown.stdout and "write.clause" in shown.stdout
    # The path the docs show names the shipped copy when no checkout is around.
    shown = installed.run("policy", "show", "policies/default.yaml")
    assert "Policy 'default'" in shown.stdout and "using the shipped policy 'default'" in shown.stderr
    # A starting policy for one's own graph, from the installed templates.
    started_policy = installed.run("policy", "init", "--template", "mindreader", "--scope-property", "layer_ids")
    assert "layers_property: layer_ids" in started_policy.stdout and "name: mindreader" in started_policy.stdout

    built = json.loads(installed.run("images", "build").stdout)
    # Same sources, same content hashes: the installed copies are the checkout's files.
    assert built == {"sandbox": image_tag.sandbox_image_tag(), "neo4j": images.neo4j_image_tag()}

    started = json.loads(installed.run("neo4j", "start").stdout)
    assert started["uri"] == f"bolt://127.0.0.1:{installed.env['CYPHER_GATEWAY_NEO4J_PORT']}"
    assert "seeded memory.cypher" in installed.run("mnr", "seed").stdout

    doctor = subprocess.run([str(installed.bin / "cypher-gateway"), "doctor", "--json"], env=installed.env,
                            cwd=installed.home, capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    report = json.loads(doctor.stdout)
    assert doctor.returncode == 0 and report["ok"], json.dumps(report, indent=2)

    answer = _stdio_analyze(installed)
    assert [row[0] for row in answer["rows"]] == FACTS_A and answer["degraded"] == []

    tokens = installed.home / "tokens.toml"
    token = installed.run("tokens", "new", "--principal", "agent-a", "--scope", ",".join(SCOPE_A),
                          "--tokens-file", str(tokens)).stdout.strip()  # fmt: skip
    assert token not in tokens.read_text()
    port = free_port()
    log = installed.home / "http-server.log"
    server = start_http_server(installed.env, ["--tokens-file", str(tokens)], log, port,
                               cli=str(installed.bin / "cypher-gateway"), cwd=installed.home)  # fmt: skip
    try:
        answer = _http_analyze(f"http://127.0.0.1:{port}/mcp", token)
    finally:
        stop(server)
    assert [row[0] for row in answer["rows"]] == FACTS_A and answer["degraded"] == []
    assert token not in log.read_text()
