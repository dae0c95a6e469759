"""The suites in hidden/ assume their own policy (hidden/policy.yaml), not the one in force here.

``tests/integration/mnr/test_hidden_properties_suite.py`` runs them under it; the CLI does too:
``cypher-gateway mnr run --policy tests/mnr/hidden/policy.yaml tests/mnr/hidden``.
"""

collect_ignore = ["hidden"]
