"""Shared helpers of the benchmark scripts: timing, and writing a run's result."""

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


def write_result(out: str, table, **payload) -> dict:
    """The run's result as JSON at ``out`` (the date, command and machine beside
    ``payload``) and ``table(result)`` as text beside it (``.txt``), printed too."""
    import json
    import platform
    import sys
    from pathlib import Path

    result = dict(date=time.strftime("%Y-%m-%d %H:%M"), command=" ".join(sys.argv),
                  machine=platform.platform(), **payload)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(result, indent=1))
    text = table(result)
    print(text)
    Path(out).with_suffix(".txt").write_text(text)
    return result
