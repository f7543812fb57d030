"""Condition 1b on the directions that the environment differences determine: the
data's form of Condition 4, which the route's verdict reads (the SDP of
:func:`~negdro_stats.check_condition_1b` up to ``SDP_MAX_DIM`` directions, beyond it a
vertex lower bound)."""

from __future__ import annotations

import numpy as np

from .._stats import chi2_sf
from .._typing import FloatArray
from ..data.moments import Moments
from ..exceptions import SolverError
from .conditions import DEFAULT_TOL, SDP_MAX_DIM, check_condition_1b

__all__ = ["condition_4_on_data", "covariance_shift", "projected_margin"]


def condition_4_on_data(std: Moments, U: FloatArray) -> tuple[bool, float]:
    """Condition 1b on the directions the environment differences determine (an
    orthonormal basis ``U``, from :func:`rank_test`): the data's form of Condition 4.
    Checked on the second moments and on the within-environment covariances: Condition
    4 needs ``Delta(w)`` positive definite on every intervened coordinate, which mean
    shifts alone (rank one per environment) cannot give beyond ``|E| - 1`` directions --
    yet with an observational environment they can make ``A(w)`` positive definite on
    the span of the shifts, so the covariances must differ there too.  Returns whether
    both hold and the smaller relative margin (0 when no direction is determined; NaN,
    and no claim, when the large-p solution path does not converge)."""
    if not U.shape[1]:
        return False, 0.0
    cov = std.Sigma - np.einsum("ei,ej->eij", std.mean_x, std.mean_x)     # Cov_e(X)
    margins = [projected_margin(U.T @ M @ U) for M in (std.Sigma, cov)]   # U' M_e U
    if any(np.isnan(m) for m in margins):
        return False, float("nan")
    return bool(min(margins) > DEFAULT_TOL), float(min(margins))

def projected_margin(M: FloatArray) -> float:
    """Relative Condition 1b margin of the stack ``M``: the SDP up to ``SDP_MAX_DIM``
    directions; beyond, the best vertex ``w = e_k`` of the simplex (a lower bound: a
    positive value certifies the condition, and costs |E| eigenvalue problems instead
    of a cutting-plane SDP in hundreds of dimensions).  NaN when the solver fails."""
    if M.shape[1] <= SDP_MAX_DIM:
        try:
            return float(check_condition_1b(M).relative_margin)
        except SolverError:
            return float("nan")
    mean = M.mean(axis=0)
    scale = float(np.linalg.eigvalsh(mean)[-1])
    best = max(float(np.linalg.eigvalsh(Mk - mean)[0]) for Mk in M)   # A(e_k), eq. (16)
    return best / scale


def covariance_shift(std: Moments, U: FloatArray) -> tuple[float, int, float]:
    """Whether the within-environment variances differ along a direction the
    environment differences determine (the columns of ``U``): the part of Condition 4
    (and 6) that mean shifts cannot give.  Condition 4 needs ``Delta(w0)`` positive
    definite on every intervened coordinate, and mean shifts are rank one per
    environment; where the variances along every determined direction are equal, the
    differences are mean shifts and Theorem 6's least-risk fit is not ``beta*`` unless
    at most ``|E| - 1`` covariates are shifted (random mean-shift designs, p = 20,
    six environments: Conditions 1b, 4 and 6 all fail, and the least-risk fit is
    0.8-1.5 from ``beta*`` on population moments too).

    Per direction ``u``, Bartlett's Gaussian form ``sum_e n_e (v_e - vbar)^2 / (2
    vbar^2)``, chi2(|E| - 1) under equal variances ``v_e = u' Cov_e(X) u``
    (heavier tails inflate it: a shift is then found more often); Bonferroni over the
    directions.  Returns ``(largest statistic, df, p-value)``; on population moments
    the statistic is 0 or inf."""
    E, r = std.n_envs, U.shape[1]
    if not r:
        return 0.0, E - 1, 1.0
    cov = std.Sigma - np.einsum("ei,ej->eij", std.mean_x, std.mean_x)     # Cov_e(X)
    v = np.einsum("ia,eij,ja->ea", U, cov, U)                              # (E, r)
    n = np.asarray(std.n, dtype=np.float64)[:, None]
    if not np.isfinite(n).all():                                           # population
        spread = np.abs(v - v.mean(axis=0)).max(axis=0) > 1e-9 * np.abs(v).max(axis=0)
        return (np.inf, E - 1, 0.0) if spread.any() else (0.0, E - 1, 1.0)
    vbar = (n * v).sum(axis=0) / n.sum(axis=0)
    stat = (n * (v - vbar) ** 2).sum(axis=0) / (2.0 * vbar**2)
    return float(stat.max()), E - 1, min(1.0, r * chi2_sf(float(stat.max()), E - 1))
