"""NegDRO along a grid of gamma: :class:`PathResult` (:meth:`NegDRO.fit_path
<negdro_stats.NegDRO.fit_path>`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .._saving import Saveable
from .._typing import ArrayLike, FloatArray
from .labels import REFIT_LABELS

if TYPE_CHECKING:
    from .tables import NegDROSummary

__all__ = ["PathResult"]


class PathResult(Saveable):
    """NegDRO along a grid of gamma (like the paper's Figures 5 and 7).

    Attributes
    ----------
    gammas : ndarray
    params : pandas.DataFrame
        Coefficients, one row per gamma.
    support : pandas.DataFrame of bool
        Selected covariates per gamma.
    risks : pandas.DataFrame
        Environment risks ``R_e(b)`` at each estimate.
    objective : pandas.Series
        ``Phi_mu(b)`` at each estimate (its gamma's objective).
    invariance_pvalue : pandas.Series
        p-value of the equal-risk test at each estimate (NaN without rows).
    delta, delta_upper : pandas.Series
        How far from invariant each estimate is, with its upper 95% bound
        (:attr:`RiskInvarianceTest.delta <negdro_stats.identification.RiskInvarianceTest.delta>`;
        NaN without rows).
    refit : pandas.Series of str
        How each estimate's coefficients were computed (``SolverOutput.refit``).
    """

    def __init__(self, *, gammas, params, support, risks, objective, invariance_pvalue,
                 delta, delta_upper, refit) -> None:
        self.gammas = np.asarray(gammas, dtype=np.float64)
        self.params, self.support, self.risks = params, support, risks
        self.objective, self.invariance_pvalue = objective, invariance_pvalue
        self.delta, self.delta_upper = delta, delta_upper
        self.refit = refit

    @classmethod
    def from_fits(cls, gammas: FloatArray, fits: list) -> PathResult:
        """The path from one fit (a NegDROResults) per gamma, in the order of ``gammas``."""
        idx = pd.Index(gammas, name="gamma")
        names, envs = fits[0].params.index, fits[0].risks.index
        return cls(
            gammas=gammas,
            params=pd.DataFrame([r.params for r in fits], index=idx, columns=names),
            support=pd.DataFrame([r.support for r in fits], index=idx, columns=names),
            risks=pd.DataFrame([r.risks for r in fits], index=idx, columns=envs),
            objective=pd.Series([r.objective for r in fits], index=idx, name="objective"),
            invariance_pvalue=pd.Series(
                [np.nan if r.invariance is None else r.invariance.pvalue for r in fits],
                index=idx, name="equal-risk p"),
            **{name: pd.Series([getattr(r.invariance, name, np.nan) for r in fits],
                               index=idx, name=name) for name in ("delta", "delta_upper")},
            refit=pd.Series([r.solver.refit for r in fits], index=idx, name="refit"))

    def to_frame(self) -> pd.DataFrame:
        """One row per gamma: support size, worst and mean environment risk, ``Phi_mu``,
        the equal-risk p-value, how far from invariant (:attr:`delta` and its bound) and
        the refit; the coefficients are in ``params``."""
        return pd.DataFrame({"selected": self.support.sum(axis=1),
                             "max risk": self.risks.max(axis=1),
                             "mean risk": self.risks.mean(axis=1),
                             "Phi_mu": self.objective,
                             "equal-risk p": self.invariance_pvalue,
                             "risks within": self.delta, "bound": self.delta_upper,
                             "refit": self.refit.map(lambda r: REFIT_LABELS.get(r, r))})

    def summary(self) -> NegDROSummary:
        """:meth:`to_frame` as a table (text, HTML, LaTeX), with the support of each gamma
        and a note on why the estimates may coincide."""
        from .summary import path_summary

        return path_summary(self)

    def plot(self, beta_star: ArrayLike | None = None):
        """Coefficients and environment risks along gamma; returns the Figure."""
        from .plotting import plot_path

        return plot_path(self, beta_star=beta_star)

    def __repr__(self) -> str:
        return (f"<PathResult: {len(self.gammas)} gammas in [{self.gammas.min():g}, "
                f"{self.gammas.max():g}], p={self.params.shape[1]}>")
