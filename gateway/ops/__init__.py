"""Operator tooling, apart from the request path: the managed local Neo4j, the offline image
builds and the scripted demo. Nothing a tool call runs imports these modules."""
