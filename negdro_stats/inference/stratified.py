"""Stratified bootstrap of the whole NegDRO estimator (thresholding included).

Each replicate draws, in every environment, ``n_e`` rows with replacement from that
environment's rows (so every ``n_e`` is kept; :meth:`MultiEnvData.resample
<negdro_stats.MultiEnvData.resample>`, the package's one resampler, rebuilds the
moments from multinomial counts) and re-runs the same estimator with the same settings on
them.  Replicates use independent child generators
spawned from the user's ``rng``, so the draws are the same whatever the number of
workers (forked processes or threads, :func:`~negdro_stats._resampling.map_jobs`); BLAS
is held to one thread per worker while workers run in parallel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from .._resampling import Jobs, replicate
from .._stats import norm_ppf
from .._typing import FloatArray
from .._validation import warn_user
from ..data.moments import Moments
from ..estimation import SolverOutput
from ..exceptions import BootstrapFailureWarning

__all__ = ["BootstrapResult", "CI_METHODS", "SHOWN_FREQ", "bootstrap"]

CI_METHODS = ("percentile", "basic", "normal")
SHOWN_FREQ = 0.1    # summaries and plots show a covariate selected or kept this often


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class BootstrapResult:
    """Bootstrap refits of NegDRO.

    Attributes
    ----------
    draws : ndarray (B, p)
        Coefficients of each refit (0 outside its support; NaN rows for failed refits).
    selected : ndarray of bool (B, p)
        The support each refit selected.
    converged : ndarray of bool (B,)
        Whether each refit met its stopping rule.
    failed : ndarray of bool (B,)
        Refits that raised an error (their rows of ``draws`` are NaN).
    """

    draws: FloatArray
    selected: np.ndarray
    converged: np.ndarray
    failed: np.ndarray

    @property
    def n_boot(self) -> int:
        """Number of replicates."""
        return len(self.failed)

    def _ok(self) -> FloatArray:
        return self.draws[~self.failed]

    def support_freq(self) -> FloatArray:
        """Share of successful refits that selected each covariate (NaN if none ran)."""
        ok = self.selected[~self.failed]
        return ok.mean(axis=0) if len(ok) else np.full(ok.shape[1], np.nan)

    def standard_error(self) -> FloatArray:
        """Standard deviation of the refits (ddof = 1); NaN with fewer than two refits."""
        ok = self._ok()
        if len(ok) < 2:
            return np.full(ok.shape[1], np.nan)
        return ok.std(axis=0, ddof=1)

    def interval(self, estimate: FloatArray, alpha: float,
                 method: Literal["percentile", "basic", "normal"] = "percentile"
                 ) -> tuple[FloatArray, FloatArray]:
        """Two-sided ``1 - alpha`` interval for every coefficient.

        ``percentile``: the alpha/2 and 1 - alpha/2 quantiles of the refits (default;
        respects the point mass at 0 that thresholding creates).  ``basic``: the
        percentile interval reflected about the estimate.  ``normal``: estimate plus or
        minus z times the bootstrap standard error.  BCa is not offered: its
        acceleration needs a jackknife over rows (n refits) and its bias correction is
        undefined where a quarter or more of the refits sit exactly at 0.
        """
        ok = self._ok()
        if len(ok) == 0:
            nan = np.full(self.draws.shape[1], np.nan)
            return nan, nan
        lo_q, hi_q = np.quantile(ok, [alpha / 2, 1 - alpha / 2], axis=0)
        if method == "percentile":
            return lo_q, hi_q
        if method == "basic":
            return 2 * estimate - hi_q, 2 * estimate - lo_q
        z = norm_ppf(1 - alpha / 2)
        se = self.standard_error()
        return estimate - z * se, estimate + z * se


def bootstrap(
    resample: Callable[[np.random.Generator], Moments],
    refit: Callable[[Moments], SolverOutput],
    *,
    p: int,
    n_boot: int,
    rng: np.random.Generator,
    n_jobs: Jobs = 1,
    progress: Callable | None = None,
) -> BootstrapResult:
    """Run ``n_boot`` bootstrap refits; see the module docstring.

    ``resample(rng)`` draws the moments of one bootstrap sample; ``refit`` maps them to a
    solver output with ``p`` coefficients.
    """
    results, failed = replicate(lambda k, child: refit(resample(child)), n_boot, rng,
                                n_jobs=n_jobs, progress=progress)
    draws = np.full((n_boot, p), np.nan)
    selected = np.zeros((n_boot, p), dtype=bool)
    converged = np.zeros(n_boot, dtype=bool)
    for k, out in enumerate(results):
        if out is not None:
            draws[k], selected[k], converged[k] = out.b, out.support, out.converged
    n_slow = int((~converged & ~failed).sum())
    if failed.any() or n_slow:
        warn_user(f"{int(failed.sum())} of {n_boot} bootstrap refits failed and {n_slow} did "
                  "not converge; intervals use the refits that ran.", BootstrapFailureWarning)
    return BootstrapResult(draws=draws, selected=selected, converged=converged, failed=failed)
