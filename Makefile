# The two commands of the README. Each does all of its own set-up.
.PHONY: demo test setup lint

demo: setup
	.venv/bin/python -m gateway.ops.demo

test: setup
	.venv/bin/ruff check
	.venv/bin/mypy
	.venv/bin/pytest; s=$$?; \
	if [ $$s -eq 5 ]; then echo "pytest collected no tests" >&2; exit 1; fi; exit $$s

setup:
	bash scripts/setup.sh

lint:
	.venv/bin/ruff check
	.venv/bin/mypy
