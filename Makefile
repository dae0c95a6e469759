# The two commands of the README. Each does all of its own set-up.
# `make unit` is the contributors' fast loop: the unit tests only, with the venv as its only set-up.
.PHONY: demo test unit setup venv lint clients

demo: setup
	.venv/bin/python -m gateway.ops.demo

# Everything on Neo4j 5.26, then the tests marked neo4j2026 (end to end, READ mode, each layer alone,
# the EXPLAIN checks, the must-not-retrieve suites, Cypher 25) again on Neo4j 2026.x.
test: setup clients
	.venv/bin/ruff check
	.venv/bin/ruff format --check
	.venv/bin/mypy
	.venv/bin/pytest; s=$$?; \
	if [ $$s -eq 5 ]; then echo "pytest collected no tests" >&2; exit 1; fi; exit $$s
	CYPHER_GATEWAY_NEO4J_VERSION=2026 .venv/bin/pytest -m neo4j2026 tests/integration tests/mnr; s=$$?; \
	if [ $$s -eq 5 ]; then echo "pytest collected no Neo4j 2026.x tests" >&2; exit 1; fi; exit $$s

unit: venv
	.venv/bin/pytest tests/unit -n 2

setup:
	bash scripts/setup.sh

# The MCP Inspector CLI versions the client check (tests/integration/clients) drives: npm, pinned by lock files.
clients:
	bash scripts/mcp-clients.sh

venv:
	bash scripts/venv.sh

lint:
	.venv/bin/ruff check
	.venv/bin/ruff format --check
	.venv/bin/mypy
