"""Identity text: what a principal's name or attribute value may hold, and how a CLI prints any text.

Every string that says who is asking (a tokens-file name, an OAuth claim used as the name or
an attribute, the stdio settings, an MNR case's principal) is checked here before it becomes a
:class:`gateway.domain.Principal`, and the principal checks it again. The rule:

- 1 to :data:`MAX_IDENTITY_CHARS` characters;
- letters, marks, digits, punctuation and symbols (Unicode categories L*, M*, N*, P*, S*) and
  the plain space U+0020, neither first nor last;
- nothing else: no control characters (``\\n``, ``\\x1b``…), no format characters (bidi overrides,
  zero-width joiners), no surrogates, private-use or unassigned code points (Unicode C*), and no
  other separators (U+2028, U+2029, no-break and other spaces that print like U+0020).

So a name prints as one line that shows what it is. Text read back from elsewhere (an audit line
written by an older version, a reason, a client address) may hold anything: :func:`printable`
escapes it for a terminal, and every CLI line that shows such text goes through it.
"""

from __future__ import annotations

import json
import re
import unicodedata

# Above any real subject, user name or repository path; a claim is the issuer's data, bounded.
MAX_IDENTITY_CHARS = 256
# Refused characters are named by code point, never echoed: the message itself is printed.
_ALLOWED_CATEGORIES = ("L", "M", "N", "P", "S")


def _allowed(char: str) -> bool:
    return char == " " or unicodedata.category(char).startswith(_ALLOWED_CATEGORIES)


def identity_text_problem(value: object, limit: int = MAX_IDENTITY_CHARS) -> str | None:
    """Why ``value`` cannot be an identity string of at most ``limit`` characters (a sentence that
    never quotes it), or None when it can."""
    if not isinstance(value, str):
        return "is not a string"
    if not value:
        return "is empty"
    if len(value) > limit:
        return f"is longer than {limit} characters"
    for char in value:
        if not _allowed(char):
            return (f"holds the character U+{ord(char):04X} ({_kind(char)}); only letters, digits, punctuation, "
                    "symbols and spaces are allowed")  # fmt: skip
    if value[0] == " " or value[-1] == " ":
        return "starts or ends with a space"
    return None


def check_identity_text(value: str, what: str) -> str:
    """``value`` when it is an identity string; else ValueError saying ``what`` is wrong with it."""
    problem = identity_text_problem(value)
    if problem is not None:
        raise ValueError(f"{what} {problem}")
    return value


def _kind(char: str) -> str:
    category = unicodedata.category(char)
    return {
        "Cc": "a control character",
        "Cf": "a format character such as a bidi override",
        "Cs": "a surrogate",
        "Co": "a private-use character",
        "Cn": "an unassigned code point",
        "Zl": "a line separator",
        "Zp": "a paragraph separator",
        "Zs": "a space other than U+0020",
    }.get(category, f"category {category}")


def printable(text: object) -> str:
    """``text`` as one terminal-safe line: a backslash doubled, every character an identity string
    may not hold written as ``\\xNN``, ``\\uNNNN`` or ``\\UNNNNNNNN``. Old or foreign text cannot
    start a line, move the cursor or hide what follows."""
    out: list[str] = []
    for char in str(text):
        if char == "\\":
            out.append("\\\\")
        elif _allowed(char):
            out.append(char)
        elif ord(char) <= 0xFF:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) <= 0xFFFF:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    return "".join(out)


def printable_lines(text: str) -> str:
    """Multi-line ``text`` (a rendered policy) with each line made :func:`printable`; only its own line breaks stay."""
    return "\n".join(printable(line) for line in text.split("\n"))


def terminal_json(data: object) -> str:
    """``data`` as compact JSON that is safe on a terminal: readable non-ASCII kept, every character an
    identity string may not hold (bidi overrides, zero-width, private-use) written as a JSON escape, so
    the output still parses to exactly ``data``."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return "".join(char if char.isascii() or _allowed(char) else json.dumps(char)[1:-1] for char in text)


# An attribute name becomes part of a reserved parameter name (``$__gw_attr_<name>``): an
# identifier, and never one that starts like the gateway's own parameters.
ATTRIBUTE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
RESERVED_PREFIX = "__gw"


def attribute_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a principal's attribute list, or None when it can."""
    if not ATTRIBUTE_NAME.fullmatch(name):
        return f"attribute name {name[:80]!r} is not an identifier (letters, digits, _; at most 64)"
    if name.startswith(RESERVED_PREFIX):
        return f"attribute name {name!r} starts with the reserved {RESERVED_PREFIX!r}"
    return None
