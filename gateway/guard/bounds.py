"""The abstract values the size check computes with: upper bounds and value shapes.

A :class:`Bound` is an upper bound written as a polynomial with non-negative
integer coefficients in a few symbols: ``D`` stands for "as large as the data
makes it" (a stored list or string, a ``collect()``, a pattern comprehension,
a path of unbounded length), and ``A1``, ``A2``, … for the accumulator of the
``reduce`` being looked at (so the check can see whether a step adds to its
accumulator or multiplies it). ``3 + 2·D`` reads "at most three, plus two per
element of some data-sized list". Exponents are capped at 2: whatever grows
with the square of the data is refused however fast it grows.

A :class:`Shape` is what the check knows about one value: how long it is when
iterated, how many leaf values it holds (shared references counted each time),
how many characters its strings hold, the shape of its elements, and, when it
is an integer or a string known before the query runs, that value.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

# Exponent vector: index 0 is D, index i >= 1 the accumulator of the reduce at depth i.
Exponents = tuple[int, ...]
MAX_EXPONENT = 2
# A bound this large is refused by every limit; keeping it finite keeps arithmetic cheap.
SATURATED = 10**30


def _trim(exps: Exponents) -> Exponents:
    end = len(exps)
    while end and exps[end - 1] == 0:
        end -= 1
    return exps[:end]


def _mul_exps(a: Exponents, b: Exponents) -> Exponents:
    n = max(len(a), len(b))
    return _trim(tuple(min(MAX_EXPONENT, (a[i] if i < len(a) else 0) + (b[i] if i < len(b) else 0)) for i in range(n)))


class Bound:
    """A polynomial upper bound (see the module docstring); immutable."""

    __slots__ = ("terms",)

    def __init__(self, terms: dict[Exponents, int] | None = None) -> None:
        self.terms: dict[Exponents, int] = {e: min(c, SATURATED) for e, c in (terms or {}).items() if c > 0}

    @classmethod
    def of(cls, n: int) -> Bound:
        return cls({(): n}) if n > 0 else ZERO

    @classmethod
    def symbol(cls, index: int) -> Bound:
        exps = [0] * (index + 1)
        exps[index] = 1
        return cls({tuple(exps): 1})

    def __add__(self, other: Bound) -> Bound:
        out = dict(self.terms)
        for e, c in other.terms.items():
            out[e] = out.get(e, 0) + c
        return Bound(out)

    def __mul__(self, other: Bound) -> Bound:
        out: dict[Exponents, int] = {}
        for e1, c1 in self.terms.items():
            for e2, c2 in other.terms.items():
                e = _mul_exps(e1, e2)
                out[e] = out.get(e, 0) + c1 * c2
        return Bound(out)

    def scale(self, n: int) -> Bound:
        return self * Bound.of(n)

    def join(self, other: Bound) -> Bound:
        """An upper bound of both (coefficient-wise maximum: every symbol is at least 1)."""
        out = dict(self.terms)
        for e, c in other.terms.items():
            out[e] = max(out.get(e, 0), c)
        return Bound(out)

    def at_unit_data(self) -> Bound:
        """This bound with D read as 1: data already paid for by the list being iterated."""
        out: dict[Exponents, int] = {}
        for e, c in self.terms.items():
            e2 = _trim((0, *e[1:])) if e else e
            out[e2] = out.get(e2, 0) + c
        return Bound(out)

    def split(self, index: int) -> tuple[Bound, Bound, bool]:
        """``(rest, coefficient, super_linear)`` of this bound in symbol ``index``.

        ``self == rest + coefficient·S + (higher powers of S)``; ``super_linear`` says
        whether higher powers occur.
        """
        rest: dict[Exponents, int] = {}
        coef: dict[Exponents, int] = {}
        higher = False
        for e, c in self.terms.items():
            p = e[index] if index < len(e) else 0
            if p == 0:
                rest[e] = c
            else:
                stripped = _trim(tuple(0 if i == index else x for i, x in enumerate(e)))
                if p == 1:
                    coef[stripped] = coef.get(stripped, 0) + c
                else:
                    higher = True
        return Bound(rest), Bound(coef), higher

    def substitute(self, index: int, value: Bound) -> Bound:
        out = ZERO
        for e, c in self.terms.items():
            p = e[index] if index < len(e) else 0
            term = Bound({_trim(tuple(0 if i == index else x for i, x in enumerate(e))): c})
            for _ in range(p):
                term = term * value
            out = out + term
        return out

    @property
    def static(self) -> int:
        """The part that does not grow with any symbol."""
        return self.terms.get((), 0)

    def data(self, degree: int) -> int:
        """The coefficient of D**degree (accumulator symbols resolved already)."""
        return sum(c for e, c in self.terms.items() if (e[0] if e else 0) == degree and not any(e[1:]))

    @property
    def data_degree(self) -> int:
        return max((e[0] if e else 0 for e in self.terms), default=0)

    def is_zero(self) -> bool:
        return not self.terms

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Bound) and self.terms == other.terms

    def __hash__(self) -> int:
        return hash(frozenset(self.terms.items()))

    def __repr__(self) -> str:
        return f"Bound({self.describe()})"

    def describe(self) -> str:
        """``1,000,000``, ``3 per data element``, ``2 + 5 per data element``: how a refusal says it."""
        if not self.terms:
            return "0"
        parts: list[str] = []
        if self.static:
            parts.append(f"{self.static:,}")
        for degree in range(1, MAX_EXPONENT + 1):
            c = self.data(degree)
            if c:
                squared = ", squared" if degree == 2 else ""
                parts.append(f"{c:,} per element of a data-sized list{squared}")
        if not parts:
            parts.append("an amount that depends on a reduce's accumulator")
        return " + ".join(parts)


ZERO = Bound()
ONE = Bound.of(1)
DATA = Bound.symbol(0)

Reads = frozenset[str] | None
"""Variables whose stored values size a value (or a cost); None: rows built it."""


def union(*reads: Reads) -> Reads:
    """The reads of a value made from values with these reads (None wins: built from rows)."""
    out: frozenset[str] = frozenset()
    for r in reads:
        if r is None:
            return None
        out |= r
    return out


def own(reads: Reads, variable: str) -> bool:
    """Whether every data-sized part comes from ``variable``'s own stored values (or there is none)."""
    return reads is not None and reads <= {variable}


Kind = Literal["number", "boolean", "string", "list", "map", "entity", "path", "null", "any"]


@dataclass(frozen=True)
class Shape:
    """What the size check knows about one value.

    ``length``: elements when iterated (lists; 0 for scalars). ``elements``: leaf values,
    flattened, map entries counted (a scalar is 1). ``chars``: characters of every string
    inside. ``item``: the shape of each element (lists). ``reads``: the variables whose
    stored values give this value its data-sized parts (``x.name`` reads ``x``), or None
    when rows built them (``collect()``, a pattern comprehension): iterating ``x`` over a
    list and reading each element's own stored values costs the list once, not once per
    element per element. ``exact``: the value itself when it is known before the query
    runs (literals, parameters and arithmetic on them). ``magnitude``: a bound on an
    integer's absolute value when it is not exact but bounded (``size(list)``).
    """

    kind: Kind
    length: Bound = ZERO
    elements: Bound = ONE
    chars: Bound = ZERO
    item: Shape | None = None
    reads: Reads = frozenset()
    exact: int | float | str | None = None
    magnitude: Bound | None = None

    def with_(self, **changes: object) -> Shape:
        return replace(self, **changes)  # type: ignore[arg-type]

    @property
    def element(self) -> Shape:
        """The shape of one element when iterated (unknown elements are data-sized values)."""
        if self.item is not None:
            return self.item
        return STORED if self.kind in ("any", "list") else SCALAR

    def int_bound(self) -> Bound | None:
        """A bound on this integer's absolute value, or None when nothing bounds it."""
        if isinstance(self.exact, int) and not isinstance(self.exact, bool):
            return Bound.of(abs(self.exact))
        if isinstance(self.exact, float):
            return Bound.of(int(min(abs(self.exact), SATURATED)) + 1)
        return self.magnitude


SCALAR = Shape("any", chars=Bound.of(64))
"""A scalar of unknown type whose size does not depend on data (a number, a date, a short id)."""
NUMBER = Shape("number")
BOOLEAN = Shape("boolean")
NULL = Shape("null", elements=ZERO)
ENTITY = Shape("entity")
"""A node or relationship: a reference; its properties are read with ``.key``."""
STORED = Shape("any", length=DATA, elements=DATA, chars=DATA, item=None, reads=None)
"""A value of unknown type and size that rows produced (give ``reads`` when a variable's stored value is read)."""


def join(a: Shape, b: Shape) -> Shape:
    """A shape that bounds both ``a`` and ``b`` (CASE branches, list elements, coalesce)."""
    if a is b:
        return a
    if a.kind == "null":
        return b
    if b.kind == "null":
        return a
    item: Shape | None
    if a.item is None:
        item = b.item if a.kind not in ("any", "list") else None
    elif b.item is None:
        item = a.item if b.kind not in ("any", "list") else None
    else:
        item = join(a.item, b.item)
    return Shape(
        kind=a.kind if a.kind == b.kind else "any",
        length=a.length.join(b.length),
        elements=a.elements.join(b.elements),
        chars=a.chars.join(b.chars),
        item=item,
        reads=union(a.reads, b.reads),
        exact=a.exact if a.exact == b.exact and type(a.exact) is type(b.exact) else None,
        magnitude=_join_magnitude(a, b),
    )


def _join_magnitude(a: Shape, b: Shape) -> Bound | None:
    ma, mb = a.int_bound(), b.int_bound()
    if ma is None or mb is None:
        return None
    return ma.join(mb)
