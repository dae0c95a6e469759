"""Each reviewed function's cost model: the shape of what one call returns and the steps it takes.

A handler receives the shapes of the call's arguments (already measured by the walk,
``gateway.guard.size_walk``) and answers with the result's shape and the iteration steps of
the call itself. Which function uses which model is written in the one function table,
``gateway.guard.functions``; a function without a model there is refused (function.unreviewed).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from gateway.cypher import ast
from gateway.guard.bounds import (
    BOOLEAN,
    DATA,
    ENTITY,
    NULL,
    NUMBER,
    ONE,
    SCALAR,
    ZERO,
    Bound,
    Shape,
    join,
    union,
)
from gateway.guard.size_math import (
    as_element,
    ceil_div,
    chars_as_steps,
    compared,
    list_of,
    read,
    search,
)


class SizeCheck(Protocol):
    """What a cost model may ask of the walk that calls it: ``range()`` measures its bounds and reports
    its own objections there."""

    def range_(self, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]: ...


FunctionHandler = Callable[["SizeCheck", ast.FunctionCall, list[Shape]], tuple[Shape, Bound]]


def _arg(args: list[Shape], i: int) -> Shape:
    return args[i] if i < len(args) else NULL


def same(analysis: SizeCheck, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    """Functions whose result is at most their first argument (a slice, a copy, a conversion)."""
    first = _arg(args, 0)
    return first.with_(exact=None, magnitude=first.int_bound()), first.length


def element_of(analysis: SizeCheck, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    return _arg(args, 0).element, ZERO


def scalar(analysis: SizeCheck, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    return SCALAR.with_(chars=ZERO), ZERO


def number_of(analysis: SizeCheck, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    return NUMBER, ZERO


def entity(analysis: SizeCheck, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    return ENTITY, ZERO


def boolean(analysis: SizeCheck, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    return BOOLEAN, ZERO


def size(analysis: SizeCheck, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    subject = _arg(args, 0)
    if isinstance(subject.exact, str):
        return NUMBER.with_(exact=len(subject.exact)), ZERO
    if subject.kind == "list":
        bound = subject.length
    elif subject.kind == "string":
        bound = subject.chars
    else:
        bound = subject.length.join(subject.chars)
    return NUMBER.with_(magnitude=bound), ZERO


def to_integer(analysis: SizeCheck, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    value = _arg(args, 0)
    if isinstance(value.exact, int | float) and not isinstance(value.exact, bool) and math.isfinite(value.exact):
        return NUMBER.with_(exact=int(value.exact)), ZERO
    if isinstance(value.exact, str):
        try:
            return NUMBER.with_(exact=int(float(value.exact.strip()))), ZERO
        except (ValueError, OverflowError):
            return NULL, ZERO
    return NUMBER.with_(magnitude=value.int_bound()), ZERO


def absolute(analysis: SizeCheck, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    value = _arg(args, 0)
    if isinstance(value.exact, int | float) and not isinstance(value.exact, bool):
        return NUMBER.with_(exact=abs(value.exact)), ZERO
    return NUMBER.with_(magnitude=value.int_bound()), ZERO


def collect(analysis: SizeCheck, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    # One element per row: what a row read from the database is paid by the row (and tracked by
    # Neo4j's memory limit); what the query built for it counts per row.
    item = _arg(args, 0)
    absorb = item.reads is not None
    return Shape(
        "list", length=DATA, elements=DATA * (as_element(item).at_unit_data() if absorb else as_element(item)),
        chars=DATA * (item.chars.at_unit_data() if absorb else item.chars), item=item, reads=None,
    ), ZERO  # fmt: skip


def stored_list(analysis: SizeCheck, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    """labels(), keys() of an element, properties(): read from the database for this value."""
    subject = _arg(args, 0)
    if subject.kind == "map":
        return list_of(SCALAR, subject.length, reads=subject.reads), subject.length
    return read(subject), ZERO


def path_list(relationships: bool) -> FunctionHandler:
    def handler(analysis: SizeCheck, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
        path = _arg(args, 0)
        if path.kind != "path":
            return read(path), ZERO
        length = path.length if relationships else path.length + ONE
        return list_of(ENTITY, length, reads=path.reads), length

    return handler


def split(analysis: SizeCheck, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    # The delimiters (one string or a list of them) are each searched for in the text.
    text, delimiters = _arg(args, 0), _arg(args, 1)
    pieces = text.chars + ONE
    piece = Shape("string", chars=text.chars, reads=text.reads)
    out = Shape("list", length=pieces, elements=pieces, chars=text.chars, item=piece, reads=text.reads)
    return out, search(text, delimiters) + delimiters.length


def index_of(analysis: SizeCheck, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    """string.indexOf(s, v): a search; coll.indexOf(l, v): one comparison per element."""
    subject, value = _arg(args, 0), _arg(args, 1)
    if subject.kind == "list" or node.name.lower().startswith("coll."):
        return NUMBER, subject.length + compared(subject)
    return NUMBER, search(subject, value)


def string_join(analysis: SizeCheck, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    """string.join(list, separator): every string once, the separator between each two."""
    strings, separator = _arg(args, 0), _arg(args, 1)
    chars = strings.chars + strings.length * separator.chars
    return Shape("string", chars=chars, reads=union(strings.reads, separator.reads)), strings.length


def regex_replace(analysis: SizeCheck, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    """string.regexReplace(s, regex, replacement): a pattern that matches the empty string inserts the
    replacement at every position (its matching cost is the regex's, checked by the caller)."""
    text, replacement = _arg(args, 0), _arg(args, 2)
    chars = text.chars + (text.chars + ONE) * replacement.chars
    return Shape("string", chars=chars, reads=union(text.reads, replacement.reads)), ZERO


def list_builder(analysis: SizeCheck, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    """coll.distinct/flatten/insert/remove/sort: at most the list's elements (plus one inserted value),
    one pass of comparisons over them (sorting: a comparison per element per halving of the list)."""
    subject = _arg(args, 0)
    inserted = _arg(args, 2) if node.name.lower() == "coll.insert" else NULL
    length = subject.length + (ONE if inserted.kind != "null" else ZERO)
    # coll.flatten lifts nested elements to the top: the flattened count bounds its length.
    if node.name.lower() == "coll.flatten":
        length = subject.elements
    item = None if node.name.lower() == "coll.flatten" else subject.item
    out = Shape("list", length=length, elements=subject.elements + inserted.elements,
                chars=subject.chars + inserted.chars, item=item,
                reads=union(subject.reads, inserted.reads))  # fmt: skip
    walk = subject.length + compared(subject)
    if node.name.lower() == "coll.sort":
        # n log n comparisons: the log of the part the query chose (a stored list's own is what the store holds).
        return out, walk + walk.scale(max(1, subject.length.static.bit_length()))
    return out, walk


def list_sum(analysis: SizeCheck, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    return NUMBER, _arg(args, 0).length


def map_merge(analysis: SizeCheck, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    """A map of at most both maps' entries."""
    first, second = _arg(args, 0), _arg(args, 1)
    out = Shape("map", length=first.length + second.length, elements=first.elements + second.elements,
                chars=first.chars + second.chars, item=join(first.element, second.element),
                reads=union(first.reads, second.reads))  # fmt: skip
    return out, first.length + second.length


def vector_math(analysis: SizeCheck, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    """vector.similarity.*, vector_distance, vector_norm: one pass over both vectors."""
    return NUMBER, _arg(args, 0).length + _arg(args, 1).length


def parse_text(analysis: SizeCheck, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    """Temporal, point, uuid and vector constructors: one pass over their text arguments."""
    return SCALAR, chars_as_steps(sum((a.chars for a in args), ZERO)) + sum((a.length for a in args), ZERO)


def format_temporal(analysis: SizeCheck, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    """format(temporal, pattern): a pattern letter writes at most a field (a month's name, 9 digits)."""
    pattern = _arg(args, 1)
    return Shape("string", chars=Bound.of(64) + pattern.chars.scale(16), reads=pattern.reads), chars_as_steps(
        pattern.chars
    )


def string_like(factor: int = 1) -> FunctionHandler:
    def handler(analysis: SizeCheck, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
        text = _arg(args, 0)
        return Shape("string", chars=text.chars.scale(factor), reads=text.reads), ZERO

    return handler


def to_string(analysis: SizeCheck, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    value = _arg(args, 0)
    if value.kind == "number":
        magnitude = value.int_bound()
        digits = len(str(magnitude.static)) + 2 if magnitude is not None and magnitude.data_degree == 0 else 24
        return Shape("string", chars=Bound.of(digits)), ZERO
    if value.kind in ("string", "any"):
        return Shape("string", chars=value.chars + Bound.of(64), reads=value.reads), ZERO
    return Shape("string", chars=Bound.of(64)), ZERO


def replace(analysis: SizeCheck, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    text, needle, replacement = _arg(args, 0), _arg(args, 1), _arg(args, 2)
    if isinstance(needle.exact, str) and needle.exact:
        chars = text.chars * ceil_div(replacement.chars, len(needle.exact)).join(ONE)
    else:
        # An empty search string inserts the replacement before every character and at the end.
        chars = text.chars + (text.chars + ONE) * replacement.chars
    out = Shape("string", chars=chars, reads=union(text.reads, replacement.reads))
    # Finding the search string in the text is a search; building the result copies it.
    return out, search(text, needle) + chars_as_steps(chars)


def substring(analysis: SizeCheck, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    text = _arg(args, 0)
    return Shape("string", chars=text.chars, reads=text.reads), ZERO


def trim(analysis: SizeCheck, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    """trim/ltrim/rtrim/btrim: each trimmed character is looked up among the trim characters."""
    if node.trim_mode is not None:  # trim(BOTH chars FROM s): the text comes last
        text, chars = _arg(args, len(args) - 1), (_arg(args, 0) if len(args) > 1 else NULL)
    else:
        text, chars = _arg(args, 0), _arg(args, 1)
    return Shape("string", chars=text.chars, reads=text.reads), search(text, chars)


def extreme(analysis: SizeCheck, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    """coll.max/coll.min: one comparison per element, nested elements walked."""
    subject = _arg(args, 0)
    return subject.element, subject.length + compared(subject)


def coalesce(analysis: SizeCheck, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    out = NULL
    for arg in args:
        out = join(out, arg)
    return out, ZERO


def list_conversion(analysis: SizeCheck, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    subject = _arg(args, 0)
    length = subject.length
    return list_of(SCALAR.with_(chars=subject.element.chars), length, reads=subject.reads), length


def range_list(analysis: SizeCheck, node: ast.FunctionCall, args: list[Shape]) -> tuple[Shape, Bound]:
    if len(args) < 2:
        return NULL, ZERO  # Neo4j refuses the call
    return analysis.range_(node, args)


@dataclass(frozen=True)
class FunctionModel:
    """A reviewed function's cost model: its handler gives the result's shape and the steps one call
    takes; ``regex`` is the position of an argument read as a regular expression (checked like
    ``=~``); ``pass_through``: its result is a value the query already holds (nothing new is built);
    ``tracked``: an aggregation Neo4j's memory limit sees, which may hold ``max_data_chars`` elements
    per row."""

    handler: FunctionHandler
    regex: int | None = None
    pass_through: bool = False
    tracked: bool = False
