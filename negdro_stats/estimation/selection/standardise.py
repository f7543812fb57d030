"""The selection's first step: the problem on standardised moments -- an intercept profiled
by the pooled level condition, score covariances in standardised units, and the exact
fit that no test can judge."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..._typing import FloatArray
from ...data.fourth import RESIDUAL
from ...data.moments import EXACT_FIT, Moments
from ..gmm import GATE_SE, Cumulant
from ..options import SelectionReport
from .exogeneity import pooled_ols

__all__ = ["centred_problem", "standardised_cov", "exact_fit"]


def centred_problem(mom: Moments, const: int, score_cov: Callable | None):
    """The slopes' problem with the constant column ``const`` profiled by the pooled level
    condition: ``(slopes, centred, full, rows_cov)`` -- the other covariates' indices,
    their pooled-centred moments, ``full(b)`` (the slopes with the intercept ``ybar -
    b^T xbar`` in place) and the score covariance of the centred covariates (None
    without ``score_cov``)."""
    slopes = np.setdiff1d(np.arange(mom.p), [const])
    centred, x_bar, y_bar = mom.subset(slopes).centred()

    def full(b: FloatArray) -> FloatArray:
        out = np.zeros(mom.p)
        out[slopes], out[const] = b, y_bar - b @ x_bar
        return out

    rows_cov = None
    if score_cov is not None:
        def rows_cov(b: FloatArray, cols: np.ndarray) -> FloatArray:
            """``Var_e((X_cols - xbar) r)`` from the rows' ``Var_e(Z r)``, ``Z = (X_cols,
            1)``: the congruence by ``[I, -xbar]``, exact (a :data:`RESIDUAL` column is
            ``r`` itself, not centred)."""
            x = cols != RESIDUAL
            V = score_cov(full(b), np.append(np.where(x, slopes[np.where(x, cols, 0)],
                                                      RESIDUAL), const))
            A = np.column_stack([np.eye(len(cols)),
                                 -np.where(x, x_bar[np.where(x, cols, 0)], 0.0)])
            return A @ V @ A.T

    return slopes, centred, full, rows_cov

def standardised_cov(score_cov: Callable | None, d: FloatArray, s_y: float):
    """``(unit, rows_cov)``: the scale of ``Var(X r)`` (p, p) under :meth:`Moments.rescale`
    by ``d, s_y``, and ``score_cov`` taking and giving standardised units (None
    without it; a :data:`RESIDUAL` column has the outcome's scale)."""
    unit = np.multiply.outer(d, d) * s_y**2
    if score_cov is None:
        return unit, None

    def rows_cov(b_std: FloatArray, R: np.ndarray) -> FloatArray:
        scale = np.where(R != RESIDUAL, d[np.where(R != RESIDUAL, R, 0)], s_y) * s_y
        return score_cov(b_std * s_y / d, R) / np.multiply.outer(scale, scale)

    return unit, rows_cov

def exact_fit(std: Moments) -> tuple[np.ndarray, FloatArray, SelectionReport] | None:
    """``(support, b, report)`` when the covariates give the outcome exactly (pooled
    residual below ``EXACT_FIT`` of its second moment, e.g. a covariate ``Xc = 2 Y``),
    else None.  Every residual is then 0: the exact fit has zero risk in every
    environment, so it is invariant, and no test has a variance to compare with (the
    selection's choices would be decided by rounding).  Reported: pooled OLS on the
    covariates the exact fit uses."""
    every = np.arange(std.p)
    share, b = std.unexplained()
    if not share <= EXACT_FIT:
        return None
    S = every[np.abs(b) > 1e-6 * np.abs(b).max()]
    b_std = np.zeros(std.p)
    b_std[S] = pooled_ols(std, S)[0]
    used = ", ".join(std.names[j] for j in S)
    report = SelectionReport(
        route="invariance", estimator="ols", walk=(), pruned=(), critical_t=np.nan,
        added=(), removed=(), J=np.nan, df=0, pvalue=np.nan, exogeneity=(np.nan, 0, np.nan),
        worst_se=np.nan, gate_se=GATE_SE, instruments=(), cumulant=Cumulant.zero(std.n_envs),
        reason=f"the outcome is an exact linear function of {used} (every residual is 0, "
               "so that fit is invariant, with zero risk in every environment, and no test "
               "has a variance to compare with): a covariate that copies or rescales the "
               "outcome is the usual cause")
    return S, b_std, report
