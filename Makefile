# The two commands of the README. Each does all of its own set-up.
# `make unit` is the contributors' fast loop: the unit tests only, with the venv as its only set-up.
.PHONY: demo test unit setup venv lint clients

demo: setup
	.venv/bin/python -m gateway.ops.demo

test: setup clients
	.venv/bin/ruff check
	.venv/bin/ruff format --check
	.venv/bin/mypy
	.venv/bin/pytest; s=$$?; \
	if [ $$s -eq 5 ]; then echo "pytest collected no tests" >&2; exit 1; fi; exit $$s

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
