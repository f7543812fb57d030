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
  model keeps neither rows nor fourth moments); with an intercept, the constant is one
  of the columns;
* the invariance GMM: ``P_SS^{-1}``, the inverse information of the invariance
  conditions (M) with the weight at the estimate, on the selection's instruments and
  cumulant (efficient GMM); with an intercept, of the slopes on the pooled-centred
  moments, with the profiled intercept's terms (:func:`~.intercept.profiled_cov`);
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
  intercept, of the slopes, with the profiled intercept's terms
  (:func:`~.intercept.profiled_cov`; its GMM's map is that of the instruments that
  inform the support, with the weight at the estimate);
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
from .intercept import profiled_cov

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
    if refit not in ("gmm", "ils") or selection is None or (
            refit == "ils" and selection.constrained is None):
        return cov, f"not available for the {refit!r} refit"
    work, slopes = mom, np.arange(p)
    if const is not None:
        slopes, work, _, _ = centred_problem(mom, const, score_cov)
    names = list(work.names)
    R = np.array([names.index(z) for z in selection.instruments], dtype=int)
    T = np.flatnonzero(support[slopes])

    def gmm() -> InvarianceGMM:
        return InvarianceGMM(work, instruments=R, cumulant=selection.cumulant,
                             b_ref=b[slopes])

    if refit == "gmm":
        gmm_fit = gmm()
        C = linalg.pinvh(gmm_fit.information(T, b[slopes])) if len(T) else np.zeros((0, 0))
        maps = [] if const is None else [
            (np.einsum("kl,elq->ekq", C, gmm_fit.score_map(T, b[slopes])), slopes[R])]
        method = "invariance GMM, inverse information at the estimate"
    else:
        assert selection.constrained is not None              # (the "ils" refit's, above)
        P, C_d = selection.constrained
        free = np.eye(len(T)) - P
        at = np.searchsorted(S, slopes[T])
        cov_open = _ols_hc0(mom, b, S, score_cov, between=False)[np.ix_(at, at)]
        C = free @ cov_open @ free.T + C_d
        maps = [] if const is None else _ils_maps(work, slopes, T, b, gmm(),
                                                  selection.test_level, C_d, free)
        method = ("least squares constrained by invariance: the pooled score's sandwich "
                  "along the open directions, the GMM's inverse information along the "
                  "determined ones")
    if const is None:
        cov[np.ix_(T, T)] = C
        return cov, method
    on = np.append(slopes[T], const)
    order = np.argsort(on)
    joint = profiled_cov(mom, b, const, slopes[T], C, maps, score_cov)
    cov[np.ix_(on[order], on[order])] = joint[np.ix_(order, order)]
    return cov, method


def _ils_maps(work: Moments, slopes: np.ndarray, T: np.ndarray, b: FloatArray,
              gmm: InvarianceGMM, level: float, C_d: FloatArray,
              free: FloatArray) -> list[tuple[FloatArray, np.ndarray]]:
    """The constrained fit's linear maps on the centred scores (:func:`profiled_cov`):
    ``(I - P) G^{-1} pi_e`` of pooled OLS on the support (``G`` the pooled second
    moments of the centred ``X_T``) and ``C_d G_e`` of the GMM on the instruments that
    inform the support at the selection's test ``level`` (none where none does), with
    the weight at the estimate."""
    pi = work.pooled_weights()
    G = np.tensordot(pi, block(work.Sigma, T, T), axes=1)
    ols = np.einsum("kl,e->ekl", free @ linalg.pinvh(G), pi)
    maps = [(ols, slopes[T])]
    informed = gmm.relevant(T, level)
    if informed is not None and len(T):
        maps.append((np.einsum("kl,elq->ekq", C_d, informed.score_map(T, b[slopes])),
                     slopes[informed.R]))
    return maps


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
