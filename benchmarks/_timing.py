"""Shared timing helper for the benchmark scripts."""

from __future__ import annotations

import statistics
import time


def timed(fn, reps: int = 5):
    """Run ``fn`` ``reps`` times; return its last result and the median wall time (s)."""
    out, times = None, []
    for _ in range(reps):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return out, statistics.median(times)
