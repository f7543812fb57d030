"""Leave-one-environment-out (LOEO) validation of NegDRO and its peers.

An invariant model is judged by its risk on environments it has not seen: for each
environment ``e``, fit every method on the other environments and measure the mean squared
error on ``e``'s rows.  The worst case over held-out environments is the quantity NegDRO
guards (the max of eq. (9)); pooled least squares (ERM) is the yardstick.

A fold can judge a causal model only where its training environments identify ``beta*``:
elsewhere no estimator fitted on them is ``beta*``, and a model that leans on a child of
the outcome can win on the held-out rows.  Each fold is marked by the verdict of NegDRO's
fit on its training environments (:attr:`NegDROResults.verdict
<negdro_stats.NegDROResults.verdict>`), and the summary gives the figures over the
identified folds beside those over all folds.

This module sits above the peers and below the model: the NegDRO fit arrives as a callable
(:meth:`NegDRO.validate_loeo <negdro_stats.NegDRO.validate_loeo>` passes its own), so
:mod:`negdro_stats.studies` stays the one module that imports both.
"""

from __future__ import annotations

import html
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pandas as pd

from .._typing import ArrayLike, FloatArray
from .._validation import check_option, progress
from ..data.container import MultiEnvData, split_intercept
from ..exceptions import DataError, SubsetCapError
from .baselines import BASELINES, ENUMERATING, fit_baseline

if TYPE_CHECKING:
    from ..results.results import NegDROResults

__all__ = ["LOEOResult", "LOEOSummary", "LOEO_METHODS", "fit_method",
           "leave_one_environment_out"]

#: The methods validated by default: NegDRO and the peers whose cost is polynomial in p.
#: ICP and EILLS enumerate up to 2^p supports per fold (ICP: 2.8 s per fit at p = 14,
#: doubling with each covariate); pass them in ``methods`` when p is small.
LOEO_METHODS = ("negdro", *(m for m in BASELINES if m not in ENUMERATING))

#: The verdict of a fold whose NegDRO fit failed (see ``notes``).
FIT_FAILED = "fit failed"

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True, eq=False)
class LOEOSummary:
    """The held-out risks summarised, and what they can judge.

    Attributes
    ----------
    table : pandas.DataFrame
        One column per method; rows ``("all folds", s)`` and ``("identified folds", s)``
        for ``s`` in ``worst`` (max), ``mean`` and ``folds`` (the folds where the method's
        fit succeeded: a method with fewer folds than the others is not comparable).
    judgement : str
        One line: which folds can judge a causal model (those whose training
        environments identify ``beta*``), with each method's worst/mean held-out risk
        over them beside those over all folds; "cannot tell, because ..." where no fold
        can.
    """

    table: pd.DataFrame
    judgement: str

    def __str__(self) -> str:
        return f"{self.table.to_string(float_format='{:.4g}'.format)}\n{self.judgement}"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return (self.table.to_html(float_format="{:.4g}".format)
                + f"<p>{html.escape(self.judgement)}</p>")


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class LOEOResult:
    """Held-out risks of leave-one-environment-out validation.

    Attributes
    ----------
    risks : pandas.DataFrame
        Mean squared error on the held-out environment's rows; one row per held-out
        environment (index ``held_out``), one column per method.  NaN where a fit failed
        (see ``notes``).
    verdicts : pandas.Series
        Per held-out environment, the verdict of NegDRO's fit on the other (training)
        environments: one of :data:`~negdro_stats.results.verdicts.VERDICTS`, or
        ``"fit failed"``.  Only ``"identified"`` folds can judge a causal model
        (:attr:`identified`).
    nobs : pandas.Series
        Rows of each held-out environment.
    notes : tuple of str
        Failed fits and the warnings raised by the fits, one line each.
    """

    risks: pd.DataFrame
    verdicts: pd.Series
    nobs: pd.Series
    notes: tuple[str, ...] = ()

    @property
    def identified(self) -> pd.Series:
        """Per held-out environment, whether the training environments identify
        ``beta*`` (NegDRO's verdict on them is "identified"): only these folds can judge
        a causal model.  "if Condition 4" does not count: it needs every child of the
        outcome intervened on in the training environments, which the data cannot
        check.  Necessary, not sufficient: on a held-out environment that shifts the
        outcome's children less than the training ones did, a model that leans on them
        still predicts better than ``beta*``."""
        return _identified(self.verdicts)

    def to_frame(self) -> pd.DataFrame:
        """The held-out risks (a copy; rows held-out environments, columns methods),
        then the fold's ``identified`` and ``verdict`` columns."""
        return self.risks.join(self.identified).join(self.verdicts)

    def summary(self) -> LOEOSummary:
        """Per method the worst and mean held-out risk and the folds fitted, over all
        folds and over the identified folds, and the one line of what they judge."""
        parts = {"all folds": self.risks, "identified folds": self.risks[self.identified]}
        table = pd.concat({name: pd.DataFrame({"worst": r.max(), "mean": r.mean(),
                                               "folds": r.notna().sum()}).T
                           for name, r in parts.items()})
        return LOEOSummary(table=table, judgement=_judgement(self.risks, self.verdicts))

    @property
    def worst_env(self) -> pd.Series:
        """Per method, the held-out environment with the largest risk (None where every
        fit failed)."""
        return pd.Series({m: risk.idxmax() if risk.notna().any() else None
                          for m, risk in self.risks.items()}, name="worst_env", dtype=object)

    def __str__(self) -> str:
        lines = ["Leave-one-environment-out validation: held-out mean squared error; "
                 "verdict: NegDRO's on the training environments",
                 self.to_frame().to_string(float_format="{:.4g}".format), "",
                 str(self.summary()),
                 "worst environment: " + ", ".join(f"{m} {e}" for m, e
                                                    in self.worst_env.items())]
        lines += [f"[{k}] {note}" for k, note in enumerate(self.notes, start=1)]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"<LOEOResult: {len(self.risks)} environments, {self.risks.shape[1]} methods, "
                f"{int(self.identified.sum())} folds identify beta*>")


def _identified(verdicts: pd.Series) -> pd.Series:
    """The folds whose training environments identify ``beta*`` (see
    :attr:`LOEOResult.identified`)."""
    return (verdicts == "identified").rename("identified")


def _figures(risks: pd.DataFrame) -> str:
    """'negdro 1.1/1.06, erm 0.58/0.54': each method's worst/mean risk over ``risks``."""
    return ", ".join(f"{m} {r.max():.4g}/{r.mean():.4g}" for m, r in risks.items())


def _judgement(risks: pd.DataFrame, verdicts: pd.Series) -> str:
    """The summary's one line (see :class:`LOEOSummary`)."""
    identified = _identified(verdicts)
    if not identified.any():
        said = "; ".join(f"{v!r} with {_environments(list(verdicts.index[verdicts == v]))} "
                         "held out" for v in dict.fromkeys(verdicts))
        return (f"Cannot tell which model is causal from these held-out risks, because no "
                f"fold's training environments identify beta* (NegDRO's verdict: {said}); "
                f"the worst/mean held-out MSE over all folds ({_figures(risks)}) ranks "
                "predictions, not causal models.")
    if identified.all():
        return (f"Every fold's training environments identify beta* (NegDRO's verdict), so "
                f"each can judge a causal model; worst/mean held-out MSE: {_figures(risks)}.")
    return (f"Only folds whose training environments identify beta* can judge a causal "
            f"model: {int(identified.sum())} of {len(verdicts)} (held out "
            f"{', '.join(map(repr, verdicts.index[identified]))}); worst/mean held-out MSE "
            f"over them: {_figures(risks[identified])} (all folds: {_figures(risks)}).")


def leave_one_environment_out(
    data: MultiEnvData,
    fit_negdro: Callable[[MultiEnvData], NegDROResults],
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
        ``fit_negdro(train) -> NegDROResults``: NegDRO's fit on a fold's training
        environments, with its identification checked (its ``verdict`` marks the fold;
        its ``params``, in model order with the intercept last, are NegDRO's column).
        Called on every fold, also where ``methods`` leaves NegDRO out.
    methods : sequence of str
        ``"negdro"`` and any of :data:`negdro_stats.peers.baselines.BASELINES` (``"erm"`` is
        pooled least squares), fitted with their default options.
    verbose : bool, optional
        Progress bar over environments (tqdm); default as for
        :meth:`NegDRO.fit <negdro_stats.NegDRO.fit>`.

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
    index = pd.Index(envs, name="held_out")
    risks = pd.DataFrame(np.nan, index=index, columns=pd.Index(methods, name="method"))
    verdicts = pd.Series(FIT_FAILED, index=index, name="verdict", dtype=object)
    nobs, events = pd.Series(0, index=index, name="nobs"), {}
    folds = progress(data.environment_folds(), verbose, "held-out environments", len(envs),
                     f"validate_loeo: {len(envs)} folds, each refitting every method")
    for env, train, X, y in folds:
        nobs[env] = len(y)
        fold = _recorded(events, "negdro", env, partial(fit_negdro, train))
        if fold is not None:
            verdicts[env] = fold.verdict
        for method in methods:
            b = ((None if fold is None else fold.params.to_numpy()) if method == "negdro"
                 else _recorded(events, method, env, partial(fit_method, method, train, {})))
            if b is not None:
                slope, intercept = split_intercept(b, data.fit_intercept)
                risks.loc[env, method] = float(np.mean((y - X @ slope - intercept) ** 2))
    return LOEOResult(risks=risks, verdicts=verdicts, nobs=nobs, notes=tuple(
        f"{method} {'failed' if kind == 'failed' else 'warned'} with "
        f"{_environments(list(dict.fromkeys(held)))} held out: {message}"
        for (method, kind, message), held in events.items()))


def _recorded(events: dict, method: str, env: Any, fit: Callable[[], _T]) -> _T | None:
    """``fit()``, its warnings and its failure (None) recorded in ``events`` by method,
    kind and message, for the notes."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = fit()
        except (DataError, np.linalg.LinAlgError) as exc:
            events.setdefault((method, "failed", str(exc)), []).append(env)
            return None
    for w in caught:
        events.setdefault((method, "warned", str(w.message)), []).append(env)
    return out


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
