"""Analytic covariance of the reported coefficients, conditional on the selected support.

The statsmodels-style ``cov_params()``, ``tvalues`` and ``pvalues`` of
:class:`~negdro_stats.NegDROResults` treat the support ``S`` as fixed (as if
chosen before seeing the data); the robust p-values (:mod:`negdro_stats.inference.robust`) are the
unconditional ones.  By the estimator that produced the coefficients on ``S``:

* pooled OLS: the heteroskedasticity-robust sandwich (White's HC0, as statsmodels'
  ``OLS(...).fit(cov_type="HC0")``)
  ``A^{-1} B A^{-1}`` with ``A = sum_e n_e E_e[X_S X_S^T]`` and
  ``B = sum_e n_e E_e[X_S X_S^T r^2]`` (the rows' ``Var_e(X_S r)`` plus
  ``g_e g_e^T``, ``g_e = E_e[X_S r]``; the Gaussian form of ``Var_e(X_S r)`` where the
  model keeps neither rows nor fourth moments);
* the invariance GMM: ``P_SS^{-1}``, the inverse information of the invariance
  conditions (M) with the weight at the estimate, on the selection's instruments and
  cumulant (efficient GMM; with an intercept, of the slopes on the pooled-centred
  moments, and the intercept's variance is not computed);
* least squares constrained by the invariance conditions where they determine the
  coefficients (``"ils"``, :func:`~negdro_stats.estimation.selection.least_risk.invariant_ls`,
  ``b = P b_gmm + (I - P) b_ols``): ``(I - P) C_r (I - P)^T + C_d``, along the
  directions the conditions leave open the sandwich ``C_r = A^{-1} B A^{-1}`` of the
  pooled score at the estimate (``B = sum_e n_e Var_e(X_S r)``: the score's mean
  ``E_e[X r]`` is invariant there, not 0) and along the others the GMM's inverse
  information, on the instruments that inform the support, with the weight at the
  constrained fit (:attr:`SelectionReport.constrained`).  The cross term
  ``Cov(b_ols, b_gmm)`` is left out: the GMM uses the environments' differences of
  ``E_e[X r]``, OLS their pooled mean, and these are uncorrelated where the scores'
  variances are equal across environments (``Cov = (V_e - sum_f w_f V_f) / N``);
  ``benchmarks/bench_partial.py --coverage`` measures what that costs.  With an
  intercept, of the slopes; the intercept's variance is not computed;
* the other refits (Algorithm 3's ``Phi_mu`` fit, the gradient-invariance refit): not
  available (NaN), and ``method`` says why.

Coefficients outside ``S`` are 0 by selection: their rows and columns are NaN.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import linalg

from .._typing import FloatArray
from ..data.fourth import gaussian_score_cov
from ..data.moments import Moments, block
from ..estimation import N_POPULATION, InvarianceGMM, SelectionReport, centred_problem

__all__ = ["refit_cov"]


def refit_cov(mom: Moments, b: FloatArray, support: np.ndarray, refit: str, *,
              selection: SelectionReport | None = None,
              score_cov: Callable[[FloatArray, np.ndarray], FloatArray] | None = None,
              const: int | None = None) -> tuple[FloatArray, str]:
    """``(cov, method)``: the (p, p) covariance of ``b`` (model order) conditional on the
    boolean ``support`` (the constant ``const`` always in it), for the estimator
    ``refit`` (module docstring), and the method's name."""
    p = mom.p
    S = np.flatnonzero(support)
    if const is not None:
        S = np.union1d(S, [const])
    cov = np.full((p, p), np.nan)
    if refit == "ols":
        cov[np.ix_(S, S)] = _ols_hc0(mom, b, S, score_cov)
        return cov, "pooled OLS, heteroskedasticity-robust (HC0)"
    if refit == "gmm" and selection is not None:
        work, slopes, cov_score = mom, np.arange(p), score_cov
        if const is not None:
            slopes, work, _, cov_score = centred_problem(mom, const, score_cov)
        names = list(work.names)
        R = np.array([names.index(z) for z in selection.instruments], dtype=int)
        gmm = InvarianceGMM(work, instruments=R, cumulant=selection.cumulant,
                            b_ref=b[slopes])
        T = np.flatnonzero(support[slopes])
        if len(T):
            cov[np.ix_(slopes[T], slopes[T])] = linalg.pinvh(gmm.information(T, b[slopes]))
        return cov, "invariance GMM, inverse information at the estimate"
    if refit == "ils" and selection is not None and selection.constrained is not None:
        slopes = np.arange(p) if const is None else np.setdiff1d(np.arange(p), [const])
        T = slopes[np.flatnonzero(support[slopes])]
        at = np.searchsorted(S, T)
        cov_open = _ols_hc0(mom, b, S, score_cov, between=False)[np.ix_(at, at)]
        P, cov_d = selection.constrained
        free = np.eye(len(T)) - P
        cov[np.ix_(T, T)] = free @ cov_open @ free.T + cov_d
        return cov, ("least squares constrained by invariance: the pooled score's sandwich "
                     "along the open directions, the GMM's inverse information along the "
                     "determined ones")
    return cov, f"not available for the {refit!r} refit"


def _ols_hc0(mom: Moments, b: FloatArray, S: np.ndarray,
             score_cov: Callable[[FloatArray, np.ndarray], FloatArray] | None, *,
             between: bool = True) -> FloatArray:
    """White's HC0 sandwich of pooled least squares on ``S`` at its estimate ``b``:
    ``A^{-1} B A^{-1}``, ``B = sum_e n_e (Var_e(X_S r) + g_e g_e^T)``.  ``between=False``:
    without ``g_e g_e^T``, the variance of the pooled score ``sum_e n_e g_e`` with the
    environments' rows fixed by design, at a ``b`` where ``g_e`` need not vanish (the
    constrained fit: ``E_e[X r]`` is invariant there, not 0, with hidden confounding)."""
    n = np.where(np.isfinite(mom.n), mom.n, N_POPULATION)
    A = np.tensordot(n, block(mom.Sigma, S, S), axes=1)
    g = mom.sxy[:, S] - mom.Sigma[:, S, :] @ b                      # (E, |S|)
    V = score_cov(b, S) if score_cov is not None else gaussian_score_cov(mom, b, S)
    B = np.tensordot(n, V + between * np.einsum("ei,ej->eij", g, g), axes=1)
    A_inv = linalg.pinvh(A)
    return A_inv @ B @ A_inv
