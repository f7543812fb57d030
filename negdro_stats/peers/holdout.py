"""Leave-one-environment-out (LOEO) validation of NegDRO and its peers.

An invariant model is judged by its risk on environments it has not seen: for each
environment ``e``, fit every method on the other environments and measure the mean squared
error on ``e``'s rows.  The worst case over held-out environments is the quantity NegDRO
guards (the max of eq. (9)); pooled least squares (ERM) is the yardstick.

This module sits above the peers and below the model: the NegDRO fit arrives as a callable
(:meth:`NegDRO.validate_loeo <negdro_stats.NegDRO.validate_loeo>` passes its own), so
:mod:`negdro_stats.studies` stays the one module that imports both.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._typing import ArrayLike, FloatArray
from .._validation import check_option, progress
from ..data.container import MultiEnvData, split_intercept
from ..exceptions import DataError, SubsetCapError
from .baselines import BASELINES, ENUMERATING, fit_baseline

__all__ = ["LOEOResult", "LOEO_METHODS", "fit_method", "leave_one_environment_out"]

#: The methods validated by default: NegDRO and the peers whose cost is polynomial in p.
#: ICP and EILLS enumerate up to 2^p supports per fold (ICP: 2.8 s per fit at p = 14,
#: doubling with each covariate); pass them in ``methods`` when p is small.
LOEO_METHODS = ("negdro", *(m for m in BASELINES if m not in ENUMERATING))


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class LOEOResult:
    """Held-out risks of leave-one-environment-out validation.

    Attributes
    ----------
    risks : pandas.DataFrame
        Mean squared error on the held-out environment's rows; one row per held-out
        environment (index ``held_out``), one column per method.  NaN where a fit failed
        (see ``notes``).
    nobs : pandas.Series
        Rows of each held-out environment.
    notes : tuple of str
        Failed fits and the warnings raised by the fits, one line each.
    """

    risks: pd.DataFrame
    nobs: pd.Series
    notes: tuple[str, ...] = ()

    def to_frame(self) -> pd.DataFrame:
        """The held-out risks (a copy): rows held-out environments, columns methods."""
        return self.risks.copy()

    def summary(self) -> pd.DataFrame:
        """Per method (columns) the ``worst`` (max) and the ``mean`` held-out risk over
        the environments (rows), and ``folds``, the environments where its fit succeeded:
        a method with fewer folds than the others is not comparable (see ``notes``)."""
        return pd.DataFrame({"worst": self.risks.max(), "mean": self.risks.mean(),
                             "folds": self.risks.notna().sum()}).T

    @property
    def worst_env(self) -> pd.Series:
        """Per method, the held-out environment with the largest risk (None where every
        fit failed)."""
        return pd.Series({m: risk.idxmax() if risk.notna().any() else None
                          for m, risk in self.risks.items()}, name="worst_env", dtype=object)

    def __str__(self) -> str:
        lines = ["Leave-one-environment-out validation: held-out mean squared error",
                 self.risks.to_string(float_format="{:.4g}".format), "",
                 self.summary().to_string(float_format="{:.4g}".format),
                 "worst environment: " + ", ".join(f"{m} {e}" for m, e
                                                    in self.worst_env.items())]
        lines += [f"[{k}] {note}" for k, note in enumerate(self.notes, start=1)]
        return "\n".join(lines)

    def __repr__(self) -> str:
        worst = self.risks.max()[self.risks.notna().all()]      # methods with every fold
        best = worst.idxmin() if len(worst) else None
        return (f"<LOEOResult: {len(self.risks)} environments, {self.risks.shape[1]} methods, "
                f"lowest worst-case risk: {best}>")


def leave_one_environment_out(
    data: MultiEnvData,
    fit_negdro: Callable[[MultiEnvData], FloatArray],
    *,
    methods: Sequence[str] = LOEO_METHODS,
    verbose: bool | None = None,
) -> LOEOResult:
    """Leave-one-environment-out validation of NegDRO and its peers on ``data``.

    Parameters
    ----------
    data : MultiEnvData
        Data with rows (not moments only): each fold is rebuilt from the rows of the other
        environments, and the held-out risk is computed on the held-out rows.
    fit_negdro : callable
        ``fit_negdro(train) -> params`` in model order (the intercept, if any, last).
    methods : sequence of str
        ``"negdro"`` and any of :data:`negdro_stats.peers.baselines.BASELINES` (``"erm"`` is
        pooled least squares), fitted with their default options.
    verbose : bool, optional
        Progress bar over environments (tqdm); default: in a terminal or notebook,
        after 2 s.

    Returns
    -------
    LOEOResult

    Raises
    ------
    DataError
        Without rows, with fewer than three environments (each fold must keep two), with
        a method named twice, or ICP with an intercept column.
    ValueError
        For an unknown method (with the nearest name).
    """
    methods = _check_methods(methods)
    if not data.has_rows:
        raise DataError("Leave-one-environment-out validation needs the rows (each fold is "
                        "refitted without one environment and scored on its rows); these "
                        "data are moments only (from moments, Parquet or Dask). Build the "
                        "model from a DataFrame or arrays.")
    if "icp" in methods and data.fit_intercept:
        raise DataError("ICP fits its own intercept (its OLS on each subset is centred), so "
                        "the model's constant column makes its design singular; validate "
                        "ICP on a model without fit_intercept.")
    envs = data.moments.envs
    if len(envs) < 3:
        raise DataError(f"Leave-one-environment-out validation needs at least 3 environments "
                        f"(NegDRO needs 2 to fit on); these data have {len(envs)}: "
                        f"{list(envs)}.")
    risks = pd.DataFrame(np.nan, index=pd.Index(envs, name="held_out"),
                         columns=pd.Index(methods, name="method"))
    nobs, events = pd.Series(0, index=risks.index, name="nobs"), {}
    folds = progress(data.environment_folds(), verbose, "held-out environments",
                     total=len(envs))
    for env, train, X, y in folds:
        nobs[env] = len(y)
        for method in methods:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    b = fit_method(method, train, {"negdro": fit_negdro})
                except (DataError, np.linalg.LinAlgError) as exc:
                    events.setdefault((method, "failed", str(exc)), []).append(env)
                    continue
            for w in caught:
                events.setdefault((method, "warned", str(w.message)), []).append(env)
            slope, intercept = split_intercept(b, data.fit_intercept)
            risks.loc[env, method] = float(np.mean((y - X @ slope - intercept) ** 2))
    return LOEOResult(risks=risks, nobs=nobs, notes=tuple(
        f"{method} {'failed' if kind == 'failed' else 'warned'} with "
        f"{_environments(list(dict.fromkeys(held)))} held out: {message}"
        for (method, kind, message), held in events.items()))


def _environments(held: list) -> str:
    """'environment 3' or 'environments 1, 2, 4' (a note per method and message)."""
    return (f"environment {held[0]!r}" if len(held) == 1
            else "environments " + ", ".join(map(repr, held)))


def fit_method(method: str, data: MultiEnvData,
               negdro: Mapping[str, Callable[[MultiEnvData], ArrayLike]],
               **options: Any) -> FloatArray:
    """One method's coefficients on ``data`` (model order): a NegDRO fit named in
    ``negdro`` (name to ``fit(data) -> params``), else the peer of that name
    (:func:`~negdro_stats.fit_baseline` with ``options``).  The one dispatch of
    the validation and the studies.

    Raises
    ------
    SubsetCapError
        When a peer that enumerates supports stopped at its cap.
    """
    if method in negdro:
        return np.asarray(negdro[method](data), dtype=np.float64)
    res = fit_baseline(method, data.moments, **options)
    if res.details.get("capped"):
        raise SubsetCapError(f"{method} stopped after enumerating its cap of supports "
                             "(baselines.MAX_SUBSETS); use it with fewer covariates.")
    return data.to_user(res.params.to_numpy())    # (fitted about the means, with one)


def _check_methods(methods: Sequence[str]) -> tuple[str, ...]:
    if isinstance(methods, str):
        methods = (methods,)
    known = ("negdro", *BASELINES)
    methods = tuple(check_option(m, "methods", "leave_one_environment_out", known)
                    for m in methods)
    if not methods or len(set(methods)) != len(methods):
        raise DataError(f"methods must name each method once, at least one of {known}; "
                        f"got {methods!r}.")
    return methods
