"""Must-not-retrieve suites written by tests: the file header they share."""

from __future__ import annotations

# The policy, fixture and defaults of a suite; cases follow, indented by two spaces.
SUITE_HEADER = """\
policy: default
fixture: builtin:memory
defaults:
  principal: {name: agent-a, scope: [project-a]}
  tool: analyze
cases:
"""
