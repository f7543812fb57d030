"""The package's one resampling loop and its default sizes: the bootstrap of the
estimator (:mod:`negdro_stats.inference.stratified`), the identification report's
bootstrap and permutations (:mod:`negdro_stats.identification.report`) and the
sample-size planner's replicates (:mod:`negdro_stats.planning`) all run through
:func:`replicate`."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import numpy as np
from threadpoolctl import threadpool_limits

__all__ = ["replicate", "DEFAULT_N_BOOT", "DEFAULT_N_RESAMPLE", "MAX_REPLICATES"]

T = TypeVar("T")
MAX_REPLICATES = 10**6    # more is a typo: at a millisecond a refit, 17 minutes of work
DEFAULT_N_BOOT = 200      # the estimator's bootstrap: fit() runs it on first use
DEFAULT_N_RESAMPLE = 199  # diagnose(): bootstrap resamples and permutations each (with the
#                           sample, 200 values: the 5% quantile falls on an order statistic)


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
