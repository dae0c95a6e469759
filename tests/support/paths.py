"""Where the repository, the test data and the installed CLI are."""

from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
REPO = TESTS.parent
CORPUS_DIR = TESTS / "corpus"
MNR_SUITES = TESTS / "mnr"
# The shipped default policy without its property list (every property shown): for tests of the
# guard, the scope rewrite and the sandbox over graphs of their own shape.
ALL_PROPERTIES_POLICY_PATH = TESTS / "policies" / "default-all-properties.yaml"
# The console script of the installed package, next to the interpreter running the tests.
GATEWAY_CLI = str(Path(sys.executable).parent / "cypher-gateway")
