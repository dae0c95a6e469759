"""cypher-gateway: a sandboxed, read-only Cypher analysis gateway for AI agents over Neo4j."""

__version__ = "0.1.0"
