r"""Tokens of Neo4j Cypher (5 and 25), produced by one linear scan.

The lexer follows Neo4j's own lexical rules where a guard could be fooled:

* block comments do **not** nest (``/* a /* b */`` ends at the first ``*/``);
* ``//`` comments end at ``\r`` as well as ``\n``;
* strings use backslash escapes, so ``'x\\'`` is a complete string;
* backticked names escape a backtick by doubling it and are never keywords;
* whitespace is an explicit set (ASCII whitespace and the Unicode space
  separators), not Python's ``\s``: a character Neo4j might read as part of a
  name is never silently dropped here;
* a ``//`` comment containing a Unicode line separator (U+0085, U+2028, …) is
  refused: if Neo4j ended the comment there, the rest of the line would be code
  this lexer never saw;
* Neo4j decodes ``\uXXXX`` escapes in the raw text *before* lexing (measured
  on 5.26: ``'\u0027 CREATE (x) //'`` is an empty string followed by a live
  CREATE, and ``// \u000a`` ends a comment). Any ``\uXXXX`` that decodes to
  something other than a letter or digit is refused wherever it appears;
* ``name$x`` is one identifier to Neo4j but a name and a parameter here, so a
  parameter (or the ``$`` of a dynamic label, ``$(expr)``) glued to a preceding
  name is refused;
* anything else (an unknown character, an unterminated string or comment) is a
  :class:`~gateway.cypher.errors.CypherSyntaxError`, so the guard fails closed.

Brackets are paired here: every opening bracket records the index of its closing
token (and vice versa), so the parser can look past a parenthesised group in
O(1), and an unbalanced query is refused before parsing. Nesting deeper than
``max_depth`` brackets is :class:`~gateway.cypher.errors.CypherTooDeep`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from gateway.cypher.errors import CypherSyntaxError, CypherTooDeep


class TokenKind(Enum):
    ID = "identifier"  # unquoted name or keyword
    QID = "quoted identifier"  # `backticked`
    STR = "string"
    NUM = "number"
    PARAM = "parameter"
    OP = "operator"  # punctuation and symbolic operators, brackets included
    EOF = "end of query"


@dataclass(slots=True)
class Token:
    kind: TokenKind
    value: str  # identifier text (unescaped for QID), operator text, parameter name, raw number/string
    start: int
    end: int
    upper: str = ""  # keyword form of an unquoted identifier; "" for everything else
    match: int = -1  # for a bracket: index of its partner token


# Order matters: longer operators before their prefixes; ``..`` before numbers like ``.5``.
_MASTER = re.compile(
    r"""
    [ \t\n\r\x0b\x0c\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*
    (?:
    (?P<ID>[^\W\d]\w*)
  | (?P<LCOMMENT>//[^\r\n]*)
  | (?P<BCOMMENT>/\*.*?\*/)
  | (?P<BADCOMMENT>/\*)
  | (?P<STR>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<BADSTR>['"])
  | (?P<QID>`(?:[^`]|``)*`)
  | (?P<BADQID>`)
  | (?P<PARAM>\$(?:[^\W\d]\w*|\d+|`(?:[^`]|``)*`))
  | (?P<NUM>0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|(?:\d[\d_]*(?:\.\d[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d+)?)
  | (?P<OP>\.\.|<>|<=|>=|=~|\+=|::|\|\||[-+*/%^=<>()\[\]{},.:;|&!?$])
  | (?P<END>\Z)
  | (?P<ERR>.)
    )
    """,
    re.VERBOSE | re.DOTALL,
)

_UNICODE_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})?")
_ODD_LINE_BREAK = re.compile("[\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = {v: k for k, v in _OPENERS.items()}


# Token kinds as module constants: looking up an Enum member costs more than building the token.
_ID, _QID, _STR, _NUM, _PARAM, _OP, _EOF = (
    TokenKind.ID, TokenKind.QID, TokenKind.STR, TokenKind.NUM, TokenKind.PARAM, TokenKind.OP, TokenKind.EOF,
)  # fmt: skip


def tokenize(text: str, *, max_depth: int | None = None) -> list[Token]:
    """The tokens of ``text``, ending with an EOF token.

    Raises :class:`CypherSyntaxError` for text Neo4j would read differently or not
    at all, and :class:`CypherTooDeep` when brackets nest deeper than ``max_depth``
    (checked after the whole text is read, so a lexical error anywhere wins).
    """
    if "\\u" in text:
        for esc in _UNICODE_ESCAPE.finditer(text):
            if esc.group(1) is None:
                # Neo4j refuses a \u without four hex digits anywhere, even in a comment.
                raise CypherSyntaxError("\\u must be followed by four hexadecimal digits", text, esc.start())
            decoded = chr(int(esc.group(1), 16))
            if not decoded.isalnum():
                raise CypherSyntaxError(
                    f"the escape {esc.group()} decodes to {decoded!r}, which Neo4j applies before reading "
                    "strings and comments; write the character itself",
                    text,
                    esc.start(),
                )
    tokens: list[Token] = []
    stack: list[int] = []
    deepest = 0
    deepest_at = 0
    # Every match is optional leading whitespace plus one token (the named group).
    for m in _MASTER.finditer(text):
        kind = m.lastgroup
        if kind is None or kind == "END":
            break
        start, end = m.span(kind)
        if kind == "BCOMMENT":
            continue
        if kind == "LCOMMENT":
            if _ODD_LINE_BREAK.search(m.group(kind)):
                raise CypherSyntaxError("a // comment contains an unusual line separator", text, start)
            continue
        if kind == "ID":
            value = m.group(kind)
            tokens.append(Token(_ID, value, start, end, value.upper()))
        elif kind == "OP":
            value = m.group(kind)
            if value == "$" and tokens and tokens[-1].end == start and tokens[-1].kind in (_ID, _NUM):
                raise CypherSyntaxError("'$' directly after a name; put a space before it", text, start)
            tok = Token(_OP, value, start, end)
            if value in _OPENERS:
                stack.append(len(tokens))
                if len(stack) > deepest:
                    deepest, deepest_at = len(stack), start
            elif value in _CLOSERS:
                if not stack or tokens[stack[-1]].value != _CLOSERS[value]:
                    raise CypherSyntaxError(f"unbalanced {value!r}", text, start)
                opener = stack.pop()
                tokens[opener].match = len(tokens)
                tok.match = opener
            tokens.append(tok)
        elif kind == "QID":
            tokens.append(Token(_QID, m.group(kind)[1:-1].replace("``", "`"), start, end))
        elif kind == "PARAM":
            if tokens and tokens[-1].end == start and tokens[-1].kind in (_ID, _NUM):
                # Neo4j reads "name$x" as one identifier ($ is a Java identifier part).
                raise CypherSyntaxError("'$' directly after a name; put a space before the parameter", text, start)
            name = m.group(kind)[1:]
            if name.startswith("`"):
                name = name[1:-1].replace("``", "`")
            tokens.append(Token(_PARAM, name, start, end))
        elif kind == "STR":
            tokens.append(Token(_STR, m.group(kind), start, end))
        elif kind == "NUM":
            tokens.append(Token(_NUM, m.group(kind), start, end))
        elif kind == "BADCOMMENT":
            raise CypherSyntaxError("unterminated block comment", text, start)
        elif kind == "BADSTR":
            raise CypherSyntaxError("unterminated string literal", text, start)
        elif kind == "BADQID":
            raise CypherSyntaxError("unterminated backticked name", text, start)
        else:
            raise CypherSyntaxError(f"unexpected character {m.group(kind)!r}", text, start)
    if stack:
        opener_tok = tokens[stack[-1]]
        raise CypherSyntaxError(f"unclosed {opener_tok.value!r}", text, opener_tok.start)
    if max_depth is not None and deepest > max_depth:
        raise CypherTooDeep(f"brackets nest {deepest} levels deep; the limit is {max_depth}", text, deepest_at)
    tokens.append(Token(_EOF, "", len(text), len(text)))
    return tokens


_ESCAPES = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", "'": "'", '"': '"', "\\": "\\"}
_ESCAPE_RE = re.compile(r"\\(u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)", re.DOTALL)


def string_value(raw: str) -> str:
    """The value of a string literal token (quotes removed, escapes applied)."""

    def sub(m: re.Match[str]) -> str:
        esc = m.group(1)
        if esc[0] in "uU" and len(esc) > 1:
            return chr(int(esc[1:], 16))
        return _ESCAPES.get(esc, "\\" + esc)

    return _ESCAPE_RE.sub(sub, raw[1:-1])
