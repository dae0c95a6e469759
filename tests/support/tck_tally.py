"""The TCK run's tally: verdicts by kind and category, refusals by rule, and where the time went."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from tests.support.tck_run import Verdict

KINDS = ("read", "write", "error", "procedure")
CATEGORIES = ("equal", "neo4j-differs", "neo4j-refused", "truncated", "refused", "different", "wrote")


@dataclass
class Tally:
    verdicts: list[Verdict] = field(default_factory=list)
    started: float | None = None
    finished: float | None = None

    def add(self, verdict: Verdict) -> None:
        self.verdicts.append(verdict)

    def counts(self) -> dict[str, dict[str, int]]:
        table: dict[str, dict[str, int]] = {kind: dict.fromkeys(("scenarios", "run", *CATEGORIES), 0) for kind in KINDS}
        for verdict in self.verdicts:
            row = table[verdict.kind]
            row["scenarios"] += 1
            row[verdict.category] += 1
            if verdict.category != "refused":
                row["run"] += 1  # reached Neo4j through the gateway
        return table

    def refused_by_rule(self) -> dict[str, dict[str, int]]:
        rules: dict[str, Counter[str]] = defaultdict(Counter)
        for verdict in self.verdicts:
            if verdict.category == "refused":
                rules[verdict.kind][verdict.detail] += 1
        return {kind: dict(counter.most_common()) for kind, counter in rules.items()}

    def neo4j_codes(self) -> dict[str, dict[str, int]]:
        codes: dict[str, Counter[str]] = defaultdict(Counter)
        for verdict in self.verdicts:
            if verdict.category in ("neo4j-refused", "equal") and verdict.detail:
                codes[verdict.kind][verdict.detail] += 1
        return {kind: dict(counter.most_common()) for kind, counter in codes.items()}

    def seconds(self) -> dict[str, Any]:
        phases: dict[str, list[float]] = defaultdict(list)
        for verdict in self.verdicts:
            for phase, spent in verdict.seconds.items():
                phases[phase].append(spent)
        out: dict[str, Any] = {
            phase: {"total": round(sum(v), 1), "median_ms": round(statistics.median(v) * 1000, 1)}
            for phase, v in sorted(phases.items())
        }
        if self.started is not None and self.finished is not None:
            out["wall"] = round(self.finished - self.started, 1)
        return out

    def table(self) -> list[str]:
        counts = self.counts()
        columns = ("scenarios", "run", *CATEGORIES)
        lines = [f"{'kind':<10}" + "".join(f"{c:>15}" for c in columns)]
        for kind in KINDS:
            lines.append(f"{kind:<10}" + "".join(f"{counts[kind][c]:>15}" for c in columns))
        total = {c: sum(counts[k][c] for k in KINDS) for c in columns}
        lines.append(f"{'all':<10}" + "".join(f"{total[c]:>15}" for c in columns))
        for kind, rules in self.refused_by_rule().items():
            lines.append(f"refused {kind}s by rule: " + ", ".join(f"{rule} {n}" for rule, n in rules.items()))
        for verdict in self.verdicts:
            if verdict.category in ("different", "wrote"):
                lines.append(f"{verdict.category}: {verdict.name}: {verdict.message}")
        timing = self.seconds()
        lines.append("seconds: " + ", ".join(f"{phase} {spent}" for phase, spent in timing.items()))
        return lines

    def report(self, version: str) -> dict[str, Any]:
        return {
            "tck": f"org.opencypher:tck:{version}",
            "counts": self.counts(),
            "refused_by_rule": self.refused_by_rule(),
            "neo4j_codes": self.neo4j_codes(),
            "seconds": self.seconds(),
            "findings": [asdict(v) for v in self.verdicts if v.category in ("different", "wrote", "neo4j-differs")],
        }
