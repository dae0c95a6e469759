"""TCK values on both sides of a comparison, brought to one comparable form.

The TCK writes expected cells in its own notation: ``null``, ``true``, ``1``, ``1.0``, ``NaN``,
``-Inf``, ``'text'``, ``[1, 2]``, ``{k: 1}``, nodes ``(:A:B {k: 1})``, relationships
``[:T {k: 1}]`` and paths ``<(:A)-[:T]->(:B)>``; temporal values are the strings Java's
``java.time`` prints for them. The gateway answers with the sandbox's tagged JSON
(``sandbox/serialize.py``). ``parse`` reads the first, ``from_json`` the second, and both give
a ``Value``: nested tuples whose first item names the type, so ``1``, ``1.0`` and ``true`` stay
apart (Python would call them equal) and rows can be compared as multisets.

Nodes and relationships compare by labels/type and properties (the TCK has no ids); a path by
its elements in order, each relationship with its direction.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

Value = tuple[Any, ...]

NULL: Value = ("null",)


class TckValueError(ValueError):
    """A cell is not in the TCK's value notation; the message says where."""


# --- the TCK's notation ------------------------------------------------------------------------------

_NUMBER = re.compile(r"-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|`(?:[^`]|``)*`")
_ESCAPES = {"'": "'", '"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}


def parse(text: str) -> Value:
    """One expected cell in the TCK's notation."""
    reader = _Reader(text)
    value = reader.value()
    reader.skip_space()
    if not reader.at_end():
        raise reader.error("unexpected text after the value")
    return value


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def error(self, message: str) -> TckValueError:
        return TckValueError(f"{message} at {self.pos} in {self.text!r}")

    def at_end(self) -> bool:
        return self.pos >= len(self.text)

    def skip_space(self) -> None:
        while not self.at_end() and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self, literal: str) -> bool:
        self.skip_space()
        return self.text.startswith(literal, self.pos)

    def take(self, literal: str) -> bool:
        if self.peek(literal):
            self.pos += len(literal)
            return True
        return False

    def expect(self, literal: str) -> None:
        if not self.take(literal):
            raise self.error(f"expected {literal!r}")

    def name(self) -> str:
        self.skip_space()
        match = _NAME.match(self.text, self.pos)
        if match is None:
            raise self.error("expected a name")
        self.pos = match.end()
        word = match.group()
        return word[1:-1].replace("``", "`") if word.startswith("`") else word

    def value(self) -> Value:
        self.skip_space()
        for word, value in (("null", NULL), ("true", ("bool", True)), ("false", ("bool", False))):
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return value
        for word, number in (("NaN", math.nan), ("Inf", math.inf), ("-Inf", -math.inf)):
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return float_value(number)
        if self.peek("'"):
            return ("str", self.string())
        if self.peek("<"):
            return self.path()
        if self.peek("("):
            return self.node()
        if self.peek("[:"):
            return self.relationship()
        if self.take("["):
            items: list[Value] = []
            while not self.take("]"):
                if items:
                    self.expect(",")
                items.append(self.value())
            return ("list", tuple(items))
        if self.peek("{"):
            return self.map()
        match = _NUMBER.match(self.text, self.pos)
        if match is None:
            raise self.error("not a TCK value")
        self.pos = match.end()
        literal = match.group()
        if re.fullmatch(r"-?\d+", literal):
            return ("int", int(literal))
        return float_value(float(literal))

    def string(self) -> str:
        self.expect("'")
        out: list[str] = []
        while True:
            if self.at_end():
                raise self.error("unterminated string")
            char = self.text[self.pos]
            self.pos += 1
            if char == "'":
                return "".join(out)
            if char == "\\" and not self.at_end():
                escaped = self.text[self.pos]
                self.pos += 1
                out.append(_ESCAPES.get(escaped, "\\" + escaped))
            else:
                out.append(char)

    def map(self) -> Value:
        self.expect("{")
        entries: dict[str, Value] = {}
        while not self.take("}"):
            if entries:
                self.expect(",")
            key = self.name()
            self.expect(":")
            entries[key] = self.value()
        return map_value(entries)

    def node(self) -> Value:
        self.expect("(")
        labels: list[str] = []
        while self.take(":"):
            labels.append(self.name())
        properties = self.map() if self.peek("{") else map_value({})
        self.expect(")")
        return node_value(labels, properties)

    def relationship(self) -> Value:
        self.expect("[")
        self.expect(":")
        rel_type = self.name()
        properties = self.map() if self.peek("{") else map_value({})
        self.expect("]")
        return relationship_value(rel_type, properties)

    def path(self) -> Value:
        self.expect("<")
        steps: list[Value] = [self.node()]
        while not self.take(">"):
            if self.take("<-"):
                rel = self.relationship()
                self.expect("-")
                steps.append(("step", rel, "<-"))
            else:
                self.expect("-")
                rel = self.relationship()
                self.expect("->")
                steps.append(("step", rel, "->"))
            steps.append(self.node())
        return ("path", tuple(steps))


# --- building blocks shared by both sides ----------------------------------------------------------


def float_value(number: float) -> Value:
    # repr keeps NaN equal to NaN and -0.0 apart from 0.0; Python's repr and Java's
    # Double.toString both print the shortest digits that read back as the same double.
    return ("float", "NaN" if math.isnan(number) else repr(number))


def map_value(entries: dict[str, Value]) -> Value:
    return ("map", tuple(sorted(entries.items())))


def node_value(labels: Iterable[str], properties: Value) -> Value:
    return ("node", tuple(sorted(labels)), properties)


def relationship_value(rel_type: str, properties: Value) -> Value:
    return ("rel", rel_type, properties)


# --- the sandbox's tagged JSON ---------------------------------------------------------------------


def from_json(value: Any) -> Value:
    """One value of a gateway answer (or of Neo4j's, serialized the same way)."""
    if value is None:
        return NULL
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return float_value(value)
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, list):
        return ("list", tuple(from_json(item) for item in value))
    if not isinstance(value, dict):
        raise TckValueError(f"not a serialized value: {value!r}")
    tag = value.get("$type")
    if tag is None:
        return map_value({key: from_json(item) for key, item in value.items()})
    if tag == "map":
        return map_value({key: from_json(item) for key, item in value["value"].items()})
    if tag == "float":
        return float_value(float(value["value"]))
    if tag == "node":
        return _node_json(value)
    if tag == "relationship":
        return _relationship_json(value)
    if tag == "path":
        return _path_json(value)
    if tag in ("date", "localtime", "time", "localdatetime", "datetime"):
        return ("str", java_temporal(tag, value["iso"], value.get("zone")))
    if tag == "duration":
        return ("str", java_duration(value["months"], value["days"], value["seconds"], value["nanoseconds"]))
    return (tag, repr(sorted(value.items())))


def _node_json(value: dict[str, Any]) -> Value:
    return node_value(value["labels"], map_value({k: from_json(v) for k, v in value["properties"].items()}))


def _relationship_json(value: dict[str, Any]) -> Value:
    return relationship_value(value["type"], map_value({k: from_json(v) for k, v in value["properties"].items()}))


def _path_json(value: dict[str, Any]) -> Value:
    nodes, rels = value["nodes"], value["relationships"]
    steps: list[Value] = [_node_json(nodes[0])]
    for i, rel in enumerate(rels):
        direction = "->" if rel["startElementId"] == nodes[i]["elementId"] else "<-"
        steps.append(("step", _relationship_json(rel), direction))
        steps.append(_node_json(nodes[i + 1]))
    return ("path", tuple(steps))


# --- temporal values as java.time prints them --------------------------------------------------------

_ISO_TIME = re.compile(r"(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?")
_OFFSET = re.compile(r"([+-])(\d{2}):(\d{2})(?::(\d{2}))?$")


def java_time_of_day(iso: str) -> str:
    """``HH:MM[:SS[.fraction]]``: seconds only when not zero, the fraction in groups of three digits."""
    match = _ISO_TIME.fullmatch(iso)
    if match is None:
        raise TckValueError(f"not a time of day: {iso!r}")
    hours, minutes, seconds, fraction = match.groups()
    nanos = int((fraction or "0").ljust(9, "0"))
    out = f"{hours}:{minutes}"
    if int(seconds) or nanos:
        out += f":{seconds}"
    if nanos:
        digits = f"{nanos:09d}"
        while digits.endswith("000"):
            digits = digits[:-3]
        out += "." + digits
    return out


def _java_offset(offset: str) -> str:
    match = _OFFSET.fullmatch(offset)
    if match is None:
        raise TckValueError(f"not an offset: {offset!r}")
    sign, hours, minutes, seconds = match.groups()
    if hours == minutes == "00" and not int(seconds or "0"):
        return "Z"
    return f"{sign}{hours}:{minutes}" + (f":{seconds}" if seconds and int(seconds) else "")


def java_temporal(kind: str, iso: str, zone: str | None) -> str:
    """The string ``java.time`` prints for a temporal value the sandbox serialized as ISO 8601."""
    if kind == "date":
        return iso
    date, _, rest = iso.rpartition("T") if "T" in iso else ("", "", iso)
    offset = ""
    if kind in ("time", "datetime"):
        match = re.search(r"[+-]\d{2}:\d{2}(?::\d{2})?$|Z$", rest)
        if match is not None:
            offset = _java_offset(match.group().replace("Z", "+00:00"))
            rest = rest[: match.start()]
    out = (f"{date}T" if date else "") + java_time_of_day(rest) + offset
    # A named zone follows the offset; UTC stands for a plain zero offset in the sandbox's output.
    if kind == "datetime" and zone and zone != "UTC":
        out += f"[{zone}]"
    return out


def java_duration(months: int, days: int, seconds: int, nanoseconds: int) -> str:
    """The string Neo4j's duration prints (``P1Y2M3DT4H5M6.7S``; ``PT0S`` when zero)."""
    if not (months or days or seconds or nanoseconds):
        return "PT0S"
    out = "P"
    years, rest_months = int(months / 12), months - 12 * int(months / 12)
    if years:
        out += f"{years}Y"
    if rest_months:
        out += f"{rest_months}M"
    if days:
        out += f"{days}D"
    if seconds or nanoseconds:
        total = seconds * 1_000_000_000 + nanoseconds
        sign = "-" if total < 0 else ""
        whole, nanos = divmod(abs(total), 1_000_000_000)
        hours, minutes, secs = whole // 3600, (whole // 60) % 60, whole % 60
        out += "T"
        if hours:
            out += f"{sign}{hours}H"
        if minutes:
            out += f"{sign}{minutes}M"
        if secs or nanos:
            fraction = f".{nanos:09d}".rstrip("0") if nanos else ""
            out += f"{sign}{secs}{fraction}S"
    return out


# --- rows ------------------------------------------------------------------------------------------


def unordered_lists(value: Value) -> Value:
    """``value`` with every list's items sorted ("ignoring element order for lists")."""
    tag = value[0]
    if tag == "list":
        return ("list", tuple(sorted((unordered_lists(v) for v in value[1]), key=repr)))
    if tag == "map":
        return ("map", tuple((k, unordered_lists(v)) for k, v in value[1]))
    return value


def same_rows(
    expected: Sequence[Sequence[Value]], actual: Sequence[Sequence[Value]], *, ordered: bool, ignore_list_order: bool
) -> bool:
    """Rows equal as a sequence when ``ordered``, else as a multiset."""
    if ignore_list_order:
        expected = [[unordered_lists(v) for v in row] for row in expected]
        actual = [[unordered_lists(v) for v in row] for row in actual]
    want = [tuple(row) for row in expected]
    got = [tuple(row) for row in actual]
    if ordered:
        return want == got
    return Counter(want) == Counter(got)
