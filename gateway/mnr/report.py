"""Outcomes as a terminal table and as JUnit XML (for CI test reports)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from itertools import groupby

from gateway.mnr.runner import CaseOutcome, counts

_MARK = {"passed": "PASS", "failed": "FAIL", "error": "ERROR"}


def summary(outcomes: Sequence[CaseOutcome]) -> str:
    tally = counts(outcomes)
    return f"{tally['cases']} cases: {tally['passed']} passed, {tally['failed']} failed, {tally['error']} errors"


def table(outcomes: Sequence[CaseOutcome], width: int = 60) -> str:
    """One line per case (status, case, tool, scope, what happened), then each failure in full."""
    rows = [
        (
            _MARK[o.status],
            o.name,
            o.tool,
            "; ".join([",".join(o.scope) or "(global)", *(f"{k}={','.join(v)}" for k, v in o.attributes.items())]),
            _clip(o.detail if o.status == "passed" else (o.failures[0] if o.failures else o.detail), width),
        )
        for o in outcomes
    ]
    header = ("STATUS", "CASE", "TOOL", "SCOPE", "RESULT")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in [header, *rows]]
    failed = [o for o in outcomes if o.status != "passed"]
    if failed:
        lines.append("")
        lines.extend(o.message() for o in failed)
    lines.append("")
    lines.append(summary(outcomes))
    return "\n".join(lines)


def junit_xml(outcomes: Sequence[CaseOutcome], name: str = "mnr") -> str:
    """JUnit XML: one <testsuite> per case file, one <testcase> per case."""
    root = ET.Element("testsuites", name=name)
    total = counts(outcomes)
    root.set("tests", str(total["cases"]))
    root.set("failures", str(total["failed"]))
    root.set("errors", str(total["error"]))
    root.set("time", f"{sum(o.duration_ms for o in outcomes) / 1000:.3f}")
    for suite_name, group in groupby(outcomes, key=lambda o: o.suite):
        cases = list(group)
        tally = counts(cases)
        suite = ET.SubElement(
            root, "testsuite", name=suite_name, tests=str(tally["cases"]), failures=str(tally["failed"]),
            errors=str(tally["error"]), skipped="0", time=f"{sum(o.duration_ms for o in cases) / 1000:.3f}",
        )  # fmt: skip
        if cases[0].file:
            suite.set("file", cases[0].file)
        for outcome in cases:
            testcase = ET.SubElement(
                suite, "testcase", classname=f"mnr.{suite_name}", name=outcome.case_id,
                time=f"{outcome.duration_ms / 1000:.3f}",
            )  # fmt: skip
            if outcome.status != "passed":
                tag = "failure" if outcome.status == "failed" else "error"
                message = _xml_safe(_clip("; ".join(outcome.failures), 500))
                element = ET.SubElement(testcase, tag, message=message, type=f"mnr.{outcome.status}")
                element.text = _xml_safe(outcome.message())
            elif outcome.detail:
                ET.SubElement(testcase, "system-out").text = _xml_safe(outcome.detail)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _xml_safe(text: str) -> str:
    # XML 1.0 cannot hold most control characters, even escaped; a leaked value may contain them.
    return "".join(ch if ch in "\t\n\r" or ord(ch) >= 0x20 else f"\\x{ord(ch):02x}" for ch in text)
