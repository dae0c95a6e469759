"""How a regular expression backtracks, read from its text (Java's syntax, as Neo4j's ``=~`` uses).

Neo4j evaluates ``=~`` with ``java.util.regex``, a backtracking engine that no
transaction timeout interrupts. Two families of patterns make it run for
minutes on a short subject: a repetition of a group that itself repeats or
alternates (``(a+)+``, ``(.*a){25}``, ``(a|aa)*``) or a back-reference
(exponential), and many free quantifiers in a row (``.*a.*a.*b``: the subject's
length to the power of their number). :func:`read` reports both; anything it
does not understand (the COMMENTS flag, an unbalanced bracket) is refused by the
caller, never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass


class RegexUnreadable(ValueError):
    """The pattern uses syntax this reader does not follow; the caller refuses it."""


@dataclass(frozen=True)
class Backtracking:
    """What one pattern can cost.

    ``exponential`` names the construct that backtracks exponentially (None if none);
    ``quantifiers`` counts the free quantifiers (``*``, ``+``, ``?``, ``{m,n}`` with
    ``m < n``) that can give back characters to what follows them: matching costs up
    to the subject's length to that power. A free quantifier at the very end of the
    pattern has nothing after it to retry and is not counted.
    """

    exponential: str | None
    quantifiers: int


@dataclass
class _Group:
    start: int
    free_inside: bool = False  # a free quantifier or an alternation directly or deeper inside
    alternation: bool = False


def read(pattern: str) -> Backtracking:
    """Scan ``pattern`` once; raises :class:`RegexUnreadable` on syntax it does not follow."""
    stack: list[_Group] = [_Group(0)]
    free: list[int] = []  # end offsets of free quantifiers (to drop a trailing one)
    exponential: str | None = None
    i, n = 0, len(pattern)
    atom_start = -1  # where the last atom began (for quantifiers)
    atom_group: _Group | None = None  # the group that atom was, if it was one
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            if i + 1 >= n:
                raise RegexUnreadable("a pattern cannot end with a backslash")
            nxt = pattern[i + 1]
            if (nxt.isdigit() and nxt != "0") or nxt == "k":
                exponential = exponential or f"the back-reference \\{nxt}"
            if nxt == "Q":
                end = pattern.find("\\E", i + 2)
                atom_start, atom_group = i, None
                i = n if end < 0 else end + 2
                continue
            if nxt in "pPxNk" and i + 2 < n and pattern[i + 2] in "{<":
                close = pattern.find("}" if pattern[i + 2] == "{" else ">", i + 3)
                if close < 0:
                    raise RegexUnreadable("an unclosed escape")
                atom_start, atom_group = i, None
                i = close + 1
                continue
            atom_start, atom_group = i, None
            i += 2
            continue
        if ch == "[":
            atom_start, atom_group = i, None
            i = _class_end(pattern, i)
            continue
        if ch == "(":
            body = i + 1
            if pattern.startswith("(?", i):
                body = _group_body(pattern, i)
                if body < 0:  # inline flags alone, (?i): no group
                    i = -body
                    continue
            stack.append(_Group(i))
            i = body
            atom_start, atom_group = -1, None
            continue
        if ch == ")":
            if len(stack) == 1:
                raise RegexUnreadable("an unbalanced ')'")
            group = stack.pop()
            if group.free_inside or group.alternation:
                stack[-1].free_inside = True
            atom_start, atom_group = group.start, group
            i += 1
            continue
        if ch == "|":
            stack[-1].alternation = True
            atom_start, atom_group = -1, None
            i += 1
            continue
        if ch in "*+?{":
            quant_end, is_free, repeats = _quantifier(pattern, i)
            if quant_end < 0:  # a '{' that is not a quantifier is a literal
                atom_start, atom_group = i, None
                i += 1
                continue
            if atom_start < 0:
                raise RegexUnreadable("a quantifier with nothing before it")
            if atom_group is not None and (atom_group.free_inside or atom_group.alternation) and repeats:
                exponential = exponential or (
                    f"the repeated group {pattern[atom_group.start : i]!r}, which itself repeats or alternates"
                )
            if is_free:
                free.append(quant_end)
                stack[-1].free_inside = True
            atom_start, atom_group = -1, None
            i = quant_end
            continue
        atom_start, atom_group = i, None
        i += 1
    if len(stack) != 1:
        raise RegexUnreadable("an unclosed '('")
    count = len(free)
    if free and free[-1] == _trailing_end(pattern):
        count -= 1
    return Backtracking(exponential, count)


def _group_body(pattern: str, i: int) -> int:
    """Where the body of the ``(?…`` group at ``i`` starts; minus the offset after ``(?flags)`` (no group)."""
    n = len(pattern)
    j = i + 2
    if pattern.startswith(("<=", "<!"), j):
        return j + 2
    if j < n and pattern[j] in ":=!>":
        return j + 1
    if j < n and pattern[j] == "<":
        close = pattern.find(">", j)
        if close < 0:
            raise RegexUnreadable("an unclosed group name")
        return close + 1
    k = j
    while k < n and (pattern[k].isalpha() or pattern[k] == "-"):
        k += 1
    if "x" in pattern[j:k].replace("-x", ""):
        raise RegexUnreadable("the COMMENTS flag (?x) is not accepted")
    if k < n and pattern[k] == ")":
        return -(k + 1)
    if k < n and pattern[k] == ":":
        return k + 1
    raise RegexUnreadable("an unknown group construct")


def _trailing_end(pattern: str) -> int:
    """Where the pattern's last quantifier would have to end to count as trailing (before a final ``$``)."""
    end = len(pattern)
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        end -= 1
    return end


def _class_end(pattern: str, i: int) -> int:
    """The offset just after the character class that starts at ``i`` (nested classes included)."""
    depth = 0
    j = i
    n = len(pattern)
    while j < n:
        ch = pattern[j]
        if ch == "\\":
            j += 2
            continue
        if ch == "[":
            depth += 1
            j += 1
            if j < n and pattern[j] == "^":
                j += 1
            if j < n and pattern[j] == "]":  # a ']' first in a class is a literal
                j += 1
            continue
        if ch == "]":
            depth -= 1
            j += 1
            if depth == 0:
                return j
            continue
        j += 1
    raise RegexUnreadable("an unclosed '['")


def _quantifier(pattern: str, i: int) -> tuple[int, bool, bool]:
    """``(end, free, repeats)`` of the quantifier at ``i``; end -1 when ``{`` is not one.

    ``free``: it can match a varying number of times. ``repeats``: it can match more than once.
    """
    ch = pattern[i]
    if ch == "{":
        close = pattern.find("}", i)
        if close < 0:
            return -1, False, False
        body = pattern[i + 1 : close]
        low, comma, high = body.partition(",")
        if not low.strip().isdigit() or (high.strip() and not high.strip().isdigit()):
            return -1, False, False
        lo = int(low)
        hi = None if comma and not high.strip() else (int(high) if comma else lo)
        end = close + 1
        free = hi is None or hi > lo
        repeats = hi is None or hi > 1
    else:
        end = i + 1
        free = True
        repeats = ch != "?"
    if end < len(pattern) and pattern[end] in "?+":  # lazy or possessive
        end += 1
    return end, free, repeats
