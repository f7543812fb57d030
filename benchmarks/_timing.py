"""Shared helpers of the benchmark scripts: timing, running jobs in processes, writing a
run's result, and the table of errors by verdict."""

from __future__ import annotations

import statistics
import time
import warnings


def run_jobs(fn, jobs: list, processes: int, chunksize: int = 1) -> list:
    """``[fn(job) for job in jobs]``, in ``processes`` worker processes where above 1."""
    if processes <= 1:
        return [fn(job) for job in jobs]
    import multiprocessing
    with multiprocessing.Pool(processes) as pool:
        return pool.map(fn, jobs, chunksize=chunksize)


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


def fit_warned(fit):
    """``fit()``'s result and whether it warned with an IdentificationWarning (the
    alarm of issue 40 item 6), with its wall time (s)."""
    from negdro_stats import IdentificationWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = time.perf_counter()
        res = fit()
        seconds = time.perf_counter() - t
    return res, any(issubclass(w.category, IdentificationWarning) for w in caught), seconds


def verdict_lines(rows: list, error: str = "error") -> list[str]:
    """Issue 40 item 6 (verdicts that discriminate): per verdict the fit reports
    (``res.verdict``) and whether it warned, the number of fits and their errors
    (median, mean, share <= 0.1)."""
    import numpy as np

    groups: dict[tuple, list] = {}
    for r in rows:
        if "verdict" in r:
            groups.setdefault((r["verdict"], r["warned"]), []).append(r[error])
    lines = ["errors by the verdict reported and whether the fit warned:",
             f"{'verdict':>16} {'warned':>6} {'fits':>5} {'med err':>8} {'mean err':>8} "
             f"{'<=0.1':>6}"]
    for (verdict, warned), errs in sorted(groups.items()):
        e = np.array(errs)
        lines.append(f"{verdict:>16} {str(warned):>6} {len(e):>5} {np.median(e):>8.3f} "
                     f"{e.mean():>8.3f} {np.mean(e <= 0.1):>6.2f}")
    return lines if groups else []
