"""The CLI's ``check`` and the MCP ``check`` tool answer the same JSON: the whole public corpus, both tools.

Both entrances compose their Gateway from the same settings with no sandbox (checking runs
nothing, so neither Docker nor Neo4j is needed): the decision and the scoped query come from
the same guard and scope rewrite. The MCP side is the real server through the SDK's in-memory
client; the CLI side is ``cypher-gateway check`` through its ``main()``, and a handful of
cases through a real subprocess.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.client import Client
from mcp_types import TextContent

from gateway.cli import main
from gateway.compose import compose, stdio_principal
from gateway.config import load_settings
from gateway.server import build_server, stdio_resolver
from tests.support.corpus import CorpusCase, load_corpus
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH

REPO = Path(__file__).resolve().parent.parent.parent
CORPUS = load_corpus()
TOOLS = ("analyze", "recall")
POLICY_FILES = {
    "default-all-properties": ALL_PROPERTIES_POLICY_PATH,
    "permissive": REPO / "tests" / "corpus" / "policies" / "permissive.yaml",
    "allowlist": REPO / "tests" / "corpus" / "policies" / "allowlist.yaml",
}
CASES = [(case, tool) for case in CORPUS for tool in TOOLS]
Key = tuple[int, str]


def _settings_env() -> dict[str, str]:
    # The defaults, whatever the calling shell set: both sides must read the same settings.
    return {k: v for k, v in os.environ.items() if not k.startswith(("GATEWAY_", "NEO4J_"))}


@pytest.fixture(autouse=True)
def _default_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in os.environ:
        if key.startswith(("GATEWAY_", "NEO4J_")):
            monkeypatch.delenv(key)


@pytest.fixture(scope="module")
def mcp_answers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[Key, str]]:
    """The text of the MCP check tool's answer for every case and tool, from a server per policy."""
    audit = tmp_path_factory.mktemp("mcp-check") / "audit.jsonl"
    answers: dict[Key, str] = {}
    with pytest.MonkeyPatch.context() as env:
        for key in os.environ:
            if key.startswith(("GATEWAY_", "NEO4J_")):
                env.delenv(key)
        for policy_name, policy_file in POLICY_FILES.items():
            settings = load_settings(policy_file=policy_file, audit_path=audit)
            composed = compose(settings, runner=None)
            principal = stdio_principal(settings)
            server = build_server(composed.gateway, stdio_resolver(principal), resource_principal=principal)
            cases = [(case, tool) for case, tool in CASES if case["policy"] == policy_name]

            async def ask(server: Any = server, cases: list[tuple[CorpusCase, str]] = cases) -> None:
                async with Client(server) as client:
                    for case, tool in cases:
                        arguments = {"cypher": case["query"], "tool": tool, "params": case["params"]}
                        result = await client.call_tool("check", arguments)
                        text = result.content[0]
                        assert isinstance(text, TextContent) and not result.is_error, (case["id"], text)
                        answers[(case["id"], tool)] = text.text

            anyio.run(ask)
    yield answers


def _cli_args(case: dict[str, Any], tool: str) -> list[str]:
    return ["check", "--tool", tool, "--params", json.dumps(case["params"]),
            "--policy", str(POLICY_FILES[case["policy"]])]  # fmt: skip


@pytest.mark.parametrize(("case", "tool"), CASES, ids=[f"{c['id']}-{t}" for c, t in CASES])
def test_the_cli_answers_what_the_mcp_tool_answers(
    case: dict[str, Any], tool: str, mcp_answers: dict[Key, str],
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setattr(sys, "stdin", io.StringIO(case["query"]))
    code = main(_cli_args(case, tool))
    out = capsys.readouterr().out
    expected = mcp_answers[(case["id"], tool)]
    assert out == expected + "\n"
    assert code == (0 if json.loads(expected)["allowed"] else 3)


def test_both_entrances_ran_the_scope_rewrite(mcp_answers: dict[Key, str]) -> None:
    answers = [json.loads(text) for text in mcp_answers.values()]
    assert len(answers) == 2 * len(CORPUS) >= 800
    assert any(a["allowed"] and "$__gw_scope" in (a["rewritten"] or "") for a in answers)
    # Refused by the scope rewrite, not by the guard: a CLI running the guard alone would allow these.
    assert sum(a["rule"] == "scope.unsupported" for a in answers) > 0
    assert all(a["rewritten"] is None for a in answers if not a["allowed"])


SUBPROCESS_CASES = [
    (CORPUS[0], "analyze"),  # allowed, rewritten
    (next(c for c in CORPUS if c["rule"] == "write.clause"), "analyze"),
    (next(c for c in CORPUS if c["tool"] == "recall" and c["expect"] == "allow"), "recall"),
    (next(c for c in CORPUS if c["query"] == ""), "analyze"),
    (next(c for c in CORPUS if c["policy"] == "permissive" and c["expect"] == "allow"), "analyze"),
]


@pytest.mark.parametrize(("case", "tool"), SUBPROCESS_CASES, ids=[f"{c['id']}-{t}" for c, t in SUBPROCESS_CASES])
def test_the_installed_command_answers_the_same(case: dict[str, Any], tool: str, mcp_answers: dict[Key, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gateway.cli", *_cli_args(case, tool)], input=case["query"], capture_output=True,
        text=True, cwd=REPO, env=_settings_env(), timeout=60, check=False,
    )  # fmt: skip
    expected = mcp_answers[(case["id"], tool)]
    assert done.stdout == expected + "\n", done.stderr
    assert done.returncode == (0 if json.loads(expected)["allowed"] else 3)
