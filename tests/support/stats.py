"""A rank test for timing oracles: do two samples of latencies come from one distribution?

No wall-clock threshold: a test asks whether the latencies of right guesses are
distinguishable from those of wrong guesses, at a strict significance level, whatever the
machine's speed. Mann-Whitney U with the normal approximation and the tie correction
(good from about 8 values per sample).
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def mann_whitney_p(first: Sequence[float], second: Sequence[float]) -> float:
    """The two-sided p-value that ``first`` and ``second`` come from one distribution."""
    n1, n2 = len(first), len(second)
    values = sorted([(v, 0) for v in first] + [(v, 1) for v in second])
    ranks = [0.0] * len(values)
    ties = 0.0
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1][0] == values[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[k] = (i + j) / 2 + 1
        t = j - i + 1
        ties += t**3 - t
        i = j + 1
    r1 = sum(rank for rank, (_, group) in zip(ranks, values, strict=True) if group == 0)
    u = r1 - n1 * (n1 + 1) / 2
    n = n1 + n2
    mean = n1 * n2 / 2
    variance = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)))
    if variance <= 0:
        return 1.0
    z = (abs(u - mean) - 0.5) / math.sqrt(variance)  # continuity correction
    return max(0.0, min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2))))
