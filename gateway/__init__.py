"""cypher-gateway: a sandboxed, read-only Cypher analysis gateway for AI agents over Neo4j."""

from importlib.metadata import PackageNotFoundError, version

try:
    # The installed distribution's version (pyproject.toml's), the one version the server reports.
    __version__ = version("cypher-gateway")
except PackageNotFoundError:  # a checkout imported without being installed
    __version__ = "0+unknown"
