"""The bootstrap's views of a result (one truth per result).

A result holds at most two bootstraps: the fit's own (``fit(n_boot=B)``), which the
summary, :meth:`~negdro_stats.NegDROResults.to_dict`, the CLI and ``interval_kind`` read,
and one run later on request (:meth:`BootstrapViews.run_bootstrap`, or
``conf_int(kind="bootstrap")``), which only the bootstrap quantities asked for by name
read.  So no view depends on what was called before, and no property starts the
refits: a pending bootstrap's quantities raise :class:`~negdro_stats.BootstrapPendingError`,
which says how to run it and about how long it takes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from .._resampling import DEFAULT_N_BOOT, MAX_REPLICATES, check_jobs
from .._validation import check_int, check_rng, generator_from_state
from ..exceptions import BootstrapPendingError, DataError
from ..inference.stratified import BootstrapResult
from .source import FitSource

__all__ = ["BootstrapViews"]


class BootstrapViews:
    """The bootstrap quantities of :class:`~negdro_stats.NegDROResults` (module
    docstring).  ``_bootstrap`` is the fit's own, ``_deferred`` the plan of the default
    one (``n_boot``, the fit's ``rng`` as plain data, ``n_jobs``, ``verbose``),
    ``_requested`` the one run on request."""

    _bootstrap: BootstrapResult | None
    _deferred: dict | None
    _requested: BootstrapResult | None = None       # (files saved before it existed)
    fit_seconds: float = float("nan")               # (idem)
    model: FitSource
    solver: Any
    can_resample: bool
    params: pd.Series
    _unbounded: Callable[[], np.ndarray]

    @property
    def fit_bootstrap(self) -> BootstrapResult | None:
        """The bootstrap ``fit(n_boot=B)`` ran (None otherwise): the one the summary,
        :meth:`to_dict` and ``interval_kind`` read."""
        return self._bootstrap

    @property
    def bootstrap(self) -> BootstrapResult | None:
        """The bootstrap refits: the fit's own, else the one run on request
        (:meth:`run_bootstrap`); None while the default one is pending
        (:attr:`bootstrap_pending`) and without one.  Never starts the refits."""
        return self._bootstrap if self._bootstrap is not None else self._requested

    @property
    def bootstrap_deferred(self) -> bool:
        """``fit()`` without ``n_boot`` deferred the default bootstrap, whether or not it
        has run since (the summary says so, the same before and after)."""
        return self._deferred is not None

    @property
    def bootstrap_pending(self) -> bool:
        """True while the deferred bootstrap has not run: :meth:`run_bootstrap` runs
        it."""
        return self.bootstrap_deferred and self.bootstrap is None

    def run_bootstrap(self, n_boot: int | None = None, rng: Any = None, *,
                      n_jobs: int | str | None = None, verbose: bool | None = None
                      ) -> BootstrapResult:
        """Run the stratified bootstrap of the whole estimator now (a progress bar with
        the time left in a terminal or notebook) and return it; it is then
        :attr:`bootstrap`, read by :attr:`boot_se`, :attr:`support_freq`,
        :attr:`bootstrap_draws` and ``conf_int(kind="bootstrap")``.  The summary keeps
        the fit's own intervals (``summary(intervals="bootstrap")`` shows these).

        Without arguments: the pending default bootstrap (``DEFAULT_N_BOOT`` refits with
        the fit's ``rng``: the draws ``fit(n_boot=B, rng=...)`` gives), or the bootstrap
        already run.  ``n_boot`` / ``rng`` choose them (``rng`` default: the fit's where
        it was kept, else fresh entropy) while none has run: a result holds one
        bootstrap, which every view reads."""
        owner = "NegDROResults.run_bootstrap"
        if self.bootstrap is not None:
            if n_boot is None and rng is None:
                return self.bootstrap
            raise DataError(f"{owner}: this result has its bootstrap ({self.bootstrap.n_boot} "
                            "refits), which every view reads; for another, refit with "
                            "fit(n_boot=B, rng=...).")
        if not self.can_resample:
            raise DataError(f"{owner}: a model built from moments has no rows to resample; "
                            "fit a model built from the data to bootstrap it.")
        plan = self._deferred or {"n_boot": DEFAULT_N_BOOT, "rng": None, "n_jobs": None,
                                  "verbose": None}
        n_boot = plan["n_boot"] if n_boot is None else check_int(
            n_boot, "n_boot", owner, min_val=2, max_val=MAX_REPLICATES)
        rng = (check_rng(rng, "rng", owner) if rng is not None or plan["rng"] is None
               else generator_from_state(plan["rng"]))
        n_jobs = plan["n_jobs"] if n_jobs is None else check_jobs(n_jobs, owner)
        self._requested = self.model.run_bootstrap(
            self.solver, n_boot, rng, n_jobs, plan["verbose"] if verbose is None else verbose)
        return self._requested

    def _computed(self, what: str) -> BootstrapResult | None:
        """:attr:`bootstrap` for the quantity ``what``; a pending one is an error that
        says how to run it (a property never starts the refits)."""
        if self.bootstrap_pending:
            plan = self._deferred
            cost = ("" if not np.isfinite(self.fit_seconds) else
                    f" (about {max(plan['n_boot'] * self.fit_seconds, 1):.0f} s: "
                    f"{plan['n_boot']} refits of a {self.fit_seconds:.2g} s fit)")
            raise BootstrapPendingError(
                f"{what}: the bootstrap has not run: fit() defers it.  Run it with "
                f"res.run_bootstrap(){cost}, or fit(n_boot=B) to run it with the fit; "
                "fit(n_boot=0) for none.")
        return self.bootstrap

    @property
    def boot_se(self) -> pd.Series:
        """Bootstrap standard errors (sd of the refits, selection included); NaN without
        a bootstrap (``n_boot=0``); inf for a coefficient the environments do not
        determine (as :attr:`bse`).  Raises :class:`BootstrapPendingError` while the default
        bootstrap waits for :meth:`run_bootstrap`."""
        boot = self._computed("boot_se")
        values = (np.full(len(self.params), np.nan) if boot is None
                  else boot.standard_error())
        values = np.where(self._unbounded(), np.inf, values)
        return pd.Series(values, index=self.params.index, name="boot se")

    @property
    def support_freq(self) -> pd.Series:
        """Selection frequency: the share of bootstrap refits that kept each covariate.

        Read it as in stability selection: covariates kept in (nearly) every refit are
        stable findings; frequencies well below 1 say the selection depends on the
        sample.  NaN without a bootstrap; :class:`BootstrapPendingError` as :attr:`boot_se`.
        """
        boot = self._computed("support_freq")
        values = np.full(len(self.params), np.nan) if boot is None else boot.support_freq()
        return pd.Series(values, index=self.params.index, name="sel. freq")

    @property
    def bootstrap_draws(self) -> pd.DataFrame:
        """The bootstrap refits as a DataFrame (replicates x covariates);
        :class:`BootstrapPendingError` as :attr:`boot_se`."""
        boot = self._computed("bootstrap_draws")
        draws = np.empty((0, len(self.params))) if boot is None else boot.draws
        return pd.DataFrame(draws, columns=self.params.index)
