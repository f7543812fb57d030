"""The package's one resampling loop and its default sizes: the bootstrap of the
estimator (:mod:`negdro_stats.inference.stratified`), the identification report's
bootstrap and permutations (:mod:`negdro_stats.identification.report`) and the
sample-size planner's replicates (:mod:`negdro_stats.planning`) all run through
:func:`replicate`."""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import numpy as np
from threadpoolctl import threadpool_limits

__all__ = ["replicate", "default_jobs", "DEFAULT_N_BOOT", "DEFAULT_N_RESAMPLE",
           "MAX_REPLICATES"]

T = TypeVar("T")
MAX_REPLICATES = 10**6    # more is a typo: at a millisecond a refit, 17 minutes of work
DEFAULT_N_BOOT = 200      # the estimator's bootstrap: fit() runs it on first use
DEFAULT_N_RESAMPLE = 199  # diagnose(): bootstrap resamples and permutations each (with the
#                           sample, 200 values: the 5% quantile falls on an order statistic)
THREADS_MIN_WORK = 1e8    # rows x p^2 of a replicate's pass from which threads pay


def default_jobs(data) -> int:
    """The bootstrap's worker threads where the user names none: the cores where one
    replicate's pass over the rows of ``data`` (a :class:`~negdro_stats.MultiEnvData`;
    ``N p^2`` flops, which release the GIL) is at least ``THREADS_MIN_WORK``, else one.
    Below it a replicate is many small numpy calls that hold the GIL: on eq. (33) with
    B = 40, two threads took 1.28-1.46x the time of one at p = 10 / 30 / 60 and 2,000
    rows x 4; 1.04x at p = 30, 20,000 x 4 and 1.00x at p = 100, 2,000 x 4 (about 1e8);
    0.83x at p = 60, 20,000 x 4 and 0.68x at p = 200, 2,000 x 4 (issue 42)."""
    m = data.moments
    work = m.nobs * m.p**2 if data.blocks is None and data.has_rows else 0.0
    return (os.cpu_count() or 1) if np.isfinite(work) and work >= THREADS_MIN_WORK else 1


def replicate(one: Callable[[int, np.random.Generator], T], n: int,
              rng: np.random.Generator, *, n_jobs: int = 1,
              progress: Callable | None = None) -> tuple[list[T | None], np.ndarray]:
    """The package's one resampling loop: ``one(k, child_k)`` for ``k < n``, each with its
    own generator spawned from ``rng`` (the same draws whatever ``n_jobs``; BLAS held to
    one thread per worker when ``n_jobs > 1``).  A replicate that raises a numerical error
    (``LinAlgError``, ``ValueError``, ``ArithmeticError``) fails: its result is None and
    its entry of the returned boolean mask True.  ``progress`` wraps the iteration (a
    progress bar)."""
    children = rng.spawn(n)

    def run(k: int):
        try:
            return one(k, children[k]), False
        except (np.linalg.LinAlgError, ValueError, ArithmeticError):
            return None, True

    steps = range(n)
    if n_jobs > 1:
        with threadpool_limits(limits=1), ThreadPoolExecutor(max_workers=n_jobs) as pool:
            results = pool.map(run, steps)
            results = list(progress(results) if progress is not None else results)
    else:
        results = [run(k) for k in (progress(steps) if progress is not None else steps)]
    return [r for r, _ in results], np.array([f for _, f in results], dtype=bool)
