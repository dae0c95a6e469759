"""The front end's one error type: the text is not Cypher this parser reads, at a position.

Every failure of ``gateway.cypher.parse`` (an unknown character, an unterminated
string, an unexpected token) is a :class:`CypherSyntaxError` carrying the offset,
line and column where reading stopped. The two bounds the front end enforces
are subclasses, so a caller can tell "not Cypher" from "too big to read":
:class:`CypherTooDeep` (brackets or expressions nested past the limit) and
:class:`CypherTooLarge` (more characters than the limit). So is
:class:`CypherUnsupported`: Cypher 25 that Neo4j reads and this front end
recognises but refuses, naming the construct.
"""

from __future__ import annotations


class CypherSyntaxError(ValueError):
    """The text cannot be read as Cypher. ``message`` says why; ``offset``, ``line``, ``column`` say where."""

    def __init__(self, message: str, text: str, offset: int) -> None:
        self.message = message
        self.offset = offset
        self.line = text.count("\n", 0, offset) + 1
        self.column = offset - (text.rfind("\n", 0, offset) + 1) + 1
        where = "end of query" if offset >= len(text) else f"line {self.line}, column {self.column}"
        super().__init__(f"{message} (at {where})")


class CypherTooDeep(CypherSyntaxError):
    """Brackets or expressions nest deeper than the limit the caller set."""


class CypherTooLarge(CypherSyntaxError):
    """The text is longer than the limit the caller set; nothing of it was read."""


class CypherUnsupported(CypherSyntaxError):
    """Cypher 25 that Neo4j reads but this gateway does not (yet): ``construct`` names it."""

    def __init__(self, construct: str, text: str, offset: int) -> None:
        self.construct = construct
        super().__init__(f"{construct} is Cypher 25 that this gateway does not accept", text, offset)
