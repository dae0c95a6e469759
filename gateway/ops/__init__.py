"""Operator tooling, above the request path: the managed local Neo4j, the offline image builds,
doctor, tokens and the scripted demo. Nothing a tool call runs imports these modules
(tests/unit/test_layers.py); what ``serve`` must know of the managed server and the sandbox
image is in ``gateway.managed_neo4j`` and ``gateway.image_tag``."""
