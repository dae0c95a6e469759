"""The gateway's one Cypher front end: text -> tokens -> parser -> tree.

    parsed = parse(text, max_chars=100_000, max_depth=64)   # ParsedQuery, or CypherSyntaxError
    for match in parsed.find_all(ast.Match): ...

``tokens.py`` reads the text as Neo4j would (where a guard could be fooled),
``parser.py`` builds the tree of ``ast.py`` and nothing else, ``query.py`` holds
the result (text, tokens, statements) with the walk/source/rewrite helpers the
guard and the scope rewrite share. Every failure is one
:class:`CypherSyntaxError` with its position; the two bounds are its subclasses
:class:`CypherTooDeep` and :class:`CypherTooLarge`; Cypher 25 it recognises and refuses is
:class:`CypherUnsupported`.
"""

from gateway.cypher import ast
from gateway.cypher.errors import CypherSyntaxError, CypherTooDeep, CypherTooLarge, CypherUnsupported
from gateway.cypher.query import ParsedQuery, parse

__all__ = ["CypherSyntaxError", "CypherTooDeep", "CypherTooLarge", "CypherUnsupported", "ParsedQuery", "ast", "parse"]
