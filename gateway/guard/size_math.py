"""Value-size arithmetic: the shapes of the values an expression builds, and what comparing, searching
and copying them costs in iteration steps.

Pure functions of :class:`~gateway.guard.bounds.Shape` and :class:`~gateway.guard.bounds.Bound`
(see ``gateway.guard.size_walk`` for the rule they serve): the walk combines them per
expression, the function cost models (``gateway.guard.cost_models``) per call.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gateway.guard.bounds import (
    BOOLEAN,
    ENTITY,
    NULL,
    NUMBER,
    ONE,
    SCALAR,
    STORED,
    ZERO,
    Bound,
    Reads,
    Shape,
    join,
    union,
)

# A list or map held in a list or map costs this many elements besides its entries: its own
# memory (an empty map or list holds about as much as eight integers). Per element of a data-sized
# list that is more than limits.max_data_factor allows: build such values with collect(), which
# Neo4j's memory limit sees.
CONTAINER = Bound.of(8)
# Exact strings longer than this are only measured, not kept (a replace() search string is short).
EXACT_STRING_LIMIT = 1_000
_INT64 = 2**63
# Characters compared or copied per iteration step. Measured on Neo4j 5.26 (two busy cores): one
# step of a comprehension ~60 ns, a character of String search (CONTAINS, replace(), split()) ~0.14 ns,
# of a string copy ~0.19 ns: 300-450 characters per step. 64 keeps a safety factor of five.
CHARS_PER_STEP = 64


@dataclass(frozen=True)
class Cost:
    """Iteration steps of one evaluation; ``reads``: the variables whose stored lists its data-sized part iterates."""

    steps: Bound = ZERO
    reads: Reads = frozenset()

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.steps + other.steps, union(self.reads, other.reads))


FREE = Cost()


def string_of(value: str) -> Shape:
    return Shape("string", chars=Bound.of(len(value)), exact=value if len(value) <= EXACT_STRING_LIMIT else None)


def list_of(item: Shape, length: Bound, *, reads: Reads) -> Shape:
    return Shape("list", length=length, elements=length * item.elements, chars=length * item.chars, item=item,
                 reads=reads)  # fmt: skip


def map_of(values: list[Shape]) -> Shape:
    item: Shape | None = None
    elements, chars = ZERO, ZERO
    for shape in values:
        item = shape if item is None else join(item, shape)
        elements = elements + (ONE if shape.elements.is_zero() else as_element(shape))
        chars = chars + shape.chars
    return Shape("map", length=Bound.of(len(values)), elements=elements, chars=chars, item=item,
                 reads=union(*(s.reads for s in values)))  # fmt: skip


def as_element(shape: Shape) -> Bound:
    """What ``shape`` costs as an element of a list or map: a list or map carries its own weight."""
    return shape.elements + CONTAINER if shape.kind in ("list", "map") else shape.elements


def compared(shape: Shape) -> Bound:
    """What comparing ``shape`` walks: a list the query built (collected ones included) in full, every
    nested element and character of it (``[a] = [b]`` compares all of ``a``); a value read from one
    element (a property, possibly a stored list) once, since its size is what the store holds for that
    element, paid for by reading it — else ``n.a = 1 OR n.b = 2 OR …`` would count every comparison as
    a walk over data-sized lists."""
    walked = shape.elements + chars_as_steps(shape.chars)
    return walked if shape.kind == "list" else walked.at_unit_data()


def chars_as_steps(chars: Bound) -> Bound:
    """Characters compared or copied, in iteration steps (``CHARS_PER_STEP`` to a step).

    A size known before the query runs is rounded down: the step that makes the comparison or the
    copy is counted where it is made and pays for its first ``CHARS_PER_STEP`` characters. A size
    the data or an accumulator decides is rounded up, so a loop around it still multiplies it
    (``[i IN range(1, 100000) WHERE n.bio CONTAINS 'x']`` searches the stored text 100,000 times).
    """
    return Bound({e: (-(-c // CHARS_PER_STEP) if e else c // CHARS_PER_STEP) for e, c in chars.terms.items()})


def search(text: Shape, needle: Shape) -> Bound:
    """Searching ``text`` for ``needle`` (CONTAINS, replace(), split(), indexOf): Java's String search is
    naive, up to len(text) * len(needle) character comparisons, and reaches no safepoint while it runs
    (a long one stops every thread of the JVM)."""
    return chars_as_steps(text.chars * needle.chars)


def smaller(a: Bound, b: Bound) -> Bound:
    """An upper bound of min(a, b): the one known before the query runs, else the smaller, else both."""
    a_static, b_static = set(a.terms) <= {()}, set(b.terms) <= {()}
    if a_static and b_static:
        return a if a.static <= b.static else b
    if a_static:
        return a
    if b_static:
        return b
    return a.join(b)


def read(subject: Shape) -> Shape:
    """A value read from the database through ``subject`` (a property of it, its labels, keys, …)."""
    return STORED.with_(reads=subject.reads)


def without(reads: Reads, variable: str) -> Reads:
    return None if reads is None else reads - {variable}


def path_shape(rels: Bound, reads: Reads) -> Shape:
    """A path of at most ``rels`` relationships; ``length`` is that count (``length(p)``)."""
    return Shape("path", length=rels, elements=rels + rels + ONE, item=ENTITY, reads=reads, magnitude=rels)


def value_shape(value: Any, depth: int) -> Shape:
    """The exact shape of a caller's parameter value (JSON: lists, maps, strings, numbers)."""
    if value is None:
        return NULL
    if isinstance(value, bool):
        return BOOLEAN
    if isinstance(value, int | float):
        return NUMBER.with_(exact=value)
    if isinstance(value, str):
        return string_of(value)
    if depth > 64:  # JSON nested this deep is refused by the request parser long before; stay bounded
        return STORED
    if isinstance(value, list | tuple):
        shapes = [value_shape(v, depth + 1) for v in value]
        item: Shape | None = None
        elements, chars = ZERO, ZERO
        for shape in shapes:
            item = shape if item is None else join(item, shape)
            elements = elements + shape.elements
            chars = chars + shape.chars
        return Shape("list", length=Bound.of(len(shapes)), elements=elements, chars=chars, item=item or NULL)
    if isinstance(value, Mapping):
        return map_of([value_shape(v, depth + 1) for v in value.values()])
    return SCALAR


def plus(left: Shape, right: Shape) -> Shape:
    """``a + b`` / ``a || b``: list concatenation, string concatenation or arithmetic."""
    reads = union(left.reads, right.reads)
    if left.kind == "list" or right.kind == "list":

        def as_list(s: Shape) -> tuple[Bound, Shape]:
            return (s.length, s.element) if s.kind in ("list", "any") else (ONE, s)

        (ll, li), (rl, ri) = as_list(left), as_list(right)
        return Shape("list", length=ll + rl, elements=left.elements + right.elements, chars=left.chars + right.chars,
                     item=join(li, ri), reads=reads)  # fmt: skip
    if left.kind == "number" and right.kind == "number":
        return NUMBER
    exact = (
        left.exact + right.exact
        if isinstance(left.exact, str)
        and isinstance(right.exact, str)
        and len(left.exact) + len(right.exact) <= EXACT_STRING_LIMIT
        else None
    )
    # A number joined to a string is written out: at most 24 characters.
    digits = Bound.of(24) if {left.kind, right.kind} == {"number", "string"} else ZERO
    chars = left.chars + right.chars + digits
    if "string" in (left.kind, right.kind) and "any" not in (left.kind, right.kind):
        return Shape("string", chars=chars, exact=exact, reads=reads)
    # Either side may be a list read from the data: bound it as a list and as a string.
    return Shape(
        "any", length=left.length + right.length + ONE, elements=left.elements + right.elements, chars=chars,
        item=join(left.element, right.element), reads=reads,
    )  # fmt: skip


def arithmetic(op: str, left: Shape, right: Shape) -> Shape:
    a, b = left.exact, right.exact
    if _is_number(a) and _is_number(b):
        assert isinstance(a, int | float) and isinstance(b, int | float)
        value = _exact_arithmetic(op, a, b)
        if value is not None:
            return NUMBER.with_(exact=value)
    ma, mb = left.int_bound(), right.int_bound()
    magnitude: Bound | None = None
    if ma is not None and mb is not None:
        if op in ("+", "-"):
            magnitude = ma + mb
        elif op == "*":
            magnitude = ma * mb
        elif op in ("/", "%"):
            magnitude = ma if op == "/" else mb
    if left.kind not in ("number", "any") and right.kind not in ("number", "any"):
        return SCALAR  # temporal arithmetic
    return NUMBER.with_(magnitude=magnitude)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _exact_arithmetic(op: str, a: int | float, b: int | float) -> int | float | None:
    try:
        if op == "^":
            result: int | float = float(a) ** float(b)
        elif isinstance(a, int) and isinstance(b, int):
            if op == "+":
                result = a + b
            elif op == "-":
                result = a - b
            elif op == "*":
                result = a * b
            elif op == "/":
                if b == 0:
                    return None
                result = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
            else:
                if b == 0:
                    return None
                result = int(math.fmod(a, b))
            if not -_INT64 <= result < _INT64:
                return None  # Neo4j raises on integer overflow
        else:
            fa, fb = float(a), float(b)
            result = {"+": fa + fb, "-": fa - fb, "*": fa * fb, "/": fa / fb if fb else math.inf,
                      "%": math.fmod(fa, fb) if fb else math.nan}[op]  # fmt: skip
    except (OverflowError, ValueError, ZeroDivisionError):
        return None
    if isinstance(result, float) and not math.isfinite(result):
        return None
    return result


def ceil_div(bound: Bound, divisor: int) -> Bound:
    if divisor <= 1:
        return bound
    return Bound({e: -(-c // divisor) for e, c in bound.terms.items()})
