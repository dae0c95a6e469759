"""``cypher-gateway mnr run`` usage errors exit 2 before any service is needed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.mnr import SUITE_HEADER

HEADER = SUITE_HEADER


def _run_cli(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway.cli", "mnr", "run", *args], capture_output=True, text=True, timeout=240
    )


def test_cli_usage_errors_exit_2(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = _run_cli([str(empty)])
    assert proc.returncode == 2 and "no *.mnr.yaml files" in proc.stderr
    bad = tmp_path / "bad.mnr.yaml"
    bad.write_text(HEADER + "  - id: x\n    query: RETURN 1\n    must_not_retreive: []\n")
    proc = _run_cli([str(bad)])
    assert proc.returncode == 2 and "must_not_retreive" in proc.stderr
