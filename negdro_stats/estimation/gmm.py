"""Consistent support selection by over-identified gradient invariance (Lemma 1).

Lemma 1 makes the residual moment ``E_e[X (Y - beta*^T X)] = -G^T h`` the same in every
environment, for *all* covariates -- children of ``Y`` included, with or without hidden
confounding (additive interventions, eq. (12)).  For a candidate support ``S`` the
moment conditions

    g_e(b) - m = 0,   g_e(b) = E_e[Z (Y - b_S^T X_S)],   e = 1..|E|,             (M)

with a common unknown ``m`` and ``Z`` a set of ``q`` instrument covariates, are
``|E| q`` equations in ``|S| + q`` unknowns: over-identified whenever
``(|E| - 1) q > |S|``.  GMM with the weight ``W_e = n_e V_e^{-1}``,
``V_e = Var_e(Z r)`` (the score covariance), gives

- the estimate ``b_S`` with covariance ``P_SS^{-1}`` (``P`` below), consistent at the
  n^{-1/2} rate on any ``S`` that contains the causes and is identified (the stacked
  environment differences of ``Sigma_e[Z, S]`` have full column rank -- weaker than
  Condition 1b on ``S``, since every instrument row counts);
- Hansen's J statistic, ``chi^2((|E| - 1) q - |S|)`` under (M): a test of invariance on
  ``S`` (ICP's acceptance test, at polynomial cost).

Profiling ``m`` out leaves a quadratic in ``b``: with ``M_e = Sigma_e[Z, S]``,
``u_e = sxy_e[Z]`` and ``Wbar = sum_e W_e``,

    P = sum_e M_e^T W_e M_e - (sum_e W_e M_e)^T Wbar^{-1} (sum_e W_e M_e),
    c = sum_e M_e^T W_e u_e - (sum_e W_e M_e)^T Wbar^{-1} (sum_e W_e u_e),

so ``b_S = P^{-1} c`` at ``O(|E| q^2 |S|)`` per support.  ``V_e(b)`` comes from the
moments by Isserlis' theorem (:func:`gaussian_score_cov`) plus a fourth-cumulant term
estimated once from the rows, so it can be evaluated at any ``b`` without the rows:
two-step GMM per support, one common weight for comparing supports, and the
continuously updated estimator (CUE, ``W`` evaluated at ``b`` while minimising), which
removes the many-moment bias of two-step GMM for the reported fit.

Population moments (``n = inf``) are treated as a sample of ``N_POPULATION`` rows:
sampling noise is then far below rounding error, so the tests are exact up to it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from scipy import linalg, special

from .._stats import chi2_isf, chi2_sf
from .._typing import FloatArray
from ..data.dependence import LongRun
from ..data.fourth import gaussian_score_cov, isserlis_parts
from ..data.moments import N_POPULATION, block
from .cue import (
    ContinuouslyUpdated,
    Minimum,
    counted_rows,
    inv_psd,
    score_weights,
    with_cumulant,
)

__all__ = ["InvarianceGMM", "GMMFit", "Cumulant", "N_POPULATION", "GATE_SE",
           "first_stage_wald"]

GATE_SE = 0.1           # sharply determined: worst standardised s.e. below this (route, growth)

CUE_FTOL = 1e-12       # a continuously updated fit has converged: predicted decrease of J
#                         at most this share (the fits within ~1e-8 of their minimum)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class GMMFit:
    """GMM fit of the invariance conditions (M) on one support.

    ``b`` and ``cov`` are on the scale of the moments given to :class:`InvarianceGMM`;
    ``info`` is the information matrix ``P_SS`` (``cov`` is its inverse, formed on
    demand); ``J`` is Hansen's statistic with ``df`` degrees of freedom and ``pvalue``;
    ``identified`` is False when ``P_SS`` is singular (then ``b`` is a minimum-norm
    solution and ``cov`` is infinite).
    """

    support: np.ndarray
    b: FloatArray
    info: FloatArray
    J: float
    df: int
    pvalue: float
    identified: bool

    @property
    def cov(self) -> FloatArray:
        """Covariance of ``b``: ``P_SS^{-1}`` (infinite when not identified)."""
        k = len(self.b)
        if not self.identified:
            return np.full((k, k), np.inf)
        return inv_psd(self.info) if k else np.zeros((0, 0))

    @property
    def se(self) -> FloatArray:
        """Standard errors of ``b``."""
        return np.sqrt(np.diag(self.cov))

    @property
    def worst_se(self) -> float:
        """Standard error along the least identified direction: ``lambda_min(P_SS)^-1/2``."""
        if not len(self.b):
            return 0.0
        if not self.identified:
            return np.inf
        return float(1.0 / np.sqrt(np.linalg.eigvalsh(self.info)[0]))

    def reordered(self, order: np.ndarray) -> GMMFit:
        """The same fit with the support's coordinates in the order ``order``."""
        return replace(self, support=self.support[order], b=self.b[order],
                       info=self.info[np.ix_(order, order)])

def _in_order(fitter: Callable, S: np.ndarray, start: FloatArray | None = None) -> GMMFit:
    """``fitter(S, start)`` on the sorted support, then put in the order asked for: a
    support's fit is computed (and kept) once for any order of its coordinates (the
    walk's supports follow the pilot's order, the pooled checks' are sorted and
    :func:`~.walk._supports_cause` appends the candidate: 202 of 1,046 continuously
    updated fits in a B = 200 bootstrap on eq. (33) repeated another order's)."""
    S = np.asarray(S, dtype=int)
    if not np.any(S[1:] < S[:-1]):
        return fitter(S, start)
    order = np.argsort(S)
    start = None if start is None else np.asarray(start)[order]
    return fitter(S[order], start).reordered(np.argsort(order))

class InvarianceGMM(ContinuouslyUpdated):
    """GMM of the invariance conditions (M) on any support (module docstring).

    Parameters
    ----------
    mom : Moments
        Per-environment moments (standardised in the solver).
    instruments : int array
        The covariates ``Z`` whose residual moments are required to be invariant.
    cumulant : Cumulant
        Fourth-cumulant part of ``Var_e(Z r)`` added to :func:`gaussian_score_cov`.
    b_ref : array (p,)
        Where the (first-step) weight is evaluated.
    own_weight : bool
        True: each :meth:`fit` is a two-step GMM of its own model (a first step with the
        weight at ``b_ref``, then the weight re-evaluated at that estimate).  False: one
        weight, at ``b_ref``, for every support -- the better choice once ``b_ref`` is a
        good estimate, since a model's own first step can be noisy in its weakly
        identified directions, which biases its weight and over-rejects its J test.
    recentre : array (E, p), optional
        Subtracted from ``sxy`` in (M) only (the bootstrap's recentring); the score
        covariances use ``mom`` as it is.

    :meth:`fit_cue` is the continuously updated estimator (Hansen, Heaton and Yaron
    1996): the weight is evaluated at ``b`` itself while minimising, which removes the
    many-moment bias of two-step GMM (it acts like LIML; Newey and Smith 2004).  With
    40-150 moment conditions that bias is what keeps a child of Y in the support at
    moderate n, so the selected support is pruned and reported with it.
    """

    def __init__(self, mom, *, instruments: np.ndarray, cumulant: Cumulant,
                 b_ref: FloatArray, own_weight: bool = True,
                 recentre: FloatArray | None = None) -> None:
        R = np.asarray(instruments)
        self.R, self.cols, self.mom, self.cumulant, self.b_ref = R, R, mom, cumulant, b_ref
        self.recentre = recentre
        self.n = counted_rows(mom, len(R), cumulant.long_run)
        self.M = block(mom.Sigma, R, slice(None))                             # (E, q, p)
        sxy = mom.sxy if recentre is None else mom.sxy - recentre
        self.u = sxy[:, R]                                        # (E, q)
        self.p = mom.p
        self.K, self.long_run = cumulant.on(R), cumulant.long_run
        self.own_weight = own_weight
        self.df_base = (mom.n_envs - 1) * len(R)
        self._W_ref = self._weights(b_ref)
        self._Wbar_inv_ref = inv_psd(self._W_ref.sum(axis=0))    # (every support uses it)
        self._done: dict[tuple, GMMFit] = {}      # fit and fit_cue (no start) per support

    def relevant(self, S: np.ndarray, alpha: float) -> InvarianceGMM | None:
        """The same conditions on the instruments that inform ``b_S``: those whose first
        stage ``E_e[Z X_S^T]`` differs across environments (:func:`first_stage_wald`
        beyond the ``1 - alpha / q`` quantile, Bonferroni over the ``q`` instruments);
        ``self`` where every instrument does, None where none does.

        The other instruments' conditions hold at any ``b`` up to noise: they add no
        information, yet with many of them the continuously updated estimate spreads
        beyond ``P_SS^{-1}`` (many weak moments, Newey and Windmeijer 2009), and on the
        instruments that pass it does not (measured: docs/design.rst, Measured
        choices).  Selecting instruments on their first stage does not look at ``Y``
        (Belloni, Chen, Chernozhukov and Hansen 2012 select them by lasso and keep the
        usual inference).  Estimation only: the J tests keep every
        instrument (the misfit of a wrong support shows in any of them)."""
        S = np.asarray(S, dtype=int)
        q, k = len(self.R), len(S)
        if not k or not q:
            return self
        df = (self.mom.n_envs - 1) * k
        keep = self.R[first_stage_wald(self.mom, self.R, S, self.n) > chi2_isf(alpha / q, df)]
        if not len(keep):
            return None
        if len(keep) == q:
            return self
        return InvarianceGMM(self.mom, instruments=keep, cumulant=self.cumulant,
                             b_ref=self.b_ref, own_weight=self.own_weight,
                             recentre=self.recentre)

    def environments(self, keep: np.ndarray) -> InvarianceGMM:
        """The same conditions on the environments ``keep`` (integer indices): the
        cumulant estimated on every environment's rows, not again."""
        return InvarianceGMM(self.mom.environments(keep), instruments=self.R,
                             cumulant=self.cumulant.environments(keep), b_ref=self.b_ref,
                             own_weight=self.own_weight,
                             recentre=None if self.recentre is None else self.recentre[keep])

    def _score(self, b: FloatArray) -> FloatArray:
        """``Var_e(Z r)`` at ``b``: :func:`gaussian_score_cov` on the instruments plus the
        cumulant.  The cumulant was estimated at another ``b``; a covariance, unlike the
        estimate of a correction to it, must stay positive definite, so per environment
        the cumulant is scaled by ``t = min(1, (1 - FLOOR) / |low|)``, ``low`` the
        smallest eigenvalue of ``G^{-1/2} K G^{-1/2}``: then ``V >= FLOOR * G``, and ``V``
        is continuous in ``b``.  (Halving ``K`` until ``G + K`` is positive definite would
        leave ``V`` as near singular as the halving's last step allows: a difference of
        rounding between two sources of the same rows then moves a J statistic from 1e3
        to 1.7e4.)  ``t = 1`` where ``G + K / (1 - FLOOR)`` is positive definite (one
        Cholesky, the common case)."""
        return with_cumulant(gaussian_score_cov(self.mom, b, self.R,
                                                long_run=self.long_run), self.K)

    def _weights(self, b: FloatArray) -> FloatArray:
        """``W_e = n_e Var_e(Z r)^{-1}`` at ``b`` (a tiny ridge keeps it finite)."""
        return self._invert(self._score(b))

    def _invert(self, V: FloatArray) -> FloatArray:
        return score_weights(V, self.n)

    def conditions(self, b_S: FloatArray, S: np.ndarray
                   ) -> tuple[FloatArray, tuple, FloatArray, FloatArray]:
        """(M) at ``b``: ``g_e(b) = u_e - M_e[:, S] b_S`` and its Jacobian ``-M_e[:, S]``
        (:meth:`ContinuouslyUpdated.conditions`)."""
        b = self._full(S, b_S)
        M = block(self.M, slice(None), S)
        return b, isserlis_parts(self.mom, b, self.R), self.u - M @ b_S, -M

    def fit_cue(self, S: np.ndarray, start: FloatArray | None = None) -> GMMFit:
        """Continuously updated GMM on ``S``, started at ``start`` (default: the two-step
        estimate; the pruning passes the previous CUE fit without the removed coordinate,
        which saves most of the iterations on large supports); the covariance is
        ``P_SS^{-1}`` with the weight at the CUE estimate.  (Its correction of
        the two-step estimate can exceed several two-step standard errors: those are too
        small with many moments; on the random designs of
        ``benchmarks/bench_selection.py`` bounding the step makes the errors worse.)

        Minimised by :func:`gauss_newton` (Hessian ``2 P``), L-BFGS-B where that has not
        converged.  Without ``start``, computed once per support in any order
        (:func:`_in_order`)."""
        return _in_order(self._cue, S, start)

    def _cue(self, S: np.ndarray, start: FloatArray | None) -> GMMFit:
        key = ("cue", S.tobytes())
        if start is None and key in self._done:
            return self._done[key]
        two = self.fit(S)
        found = None
        if len(S) and two.identified:
            found = self.minimise(S, two.b if start is None else start, ftol=CUE_FTOL,
                                  max_steps=60)
        if found is None:                                 # keep the two-step estimate
            found = Minimum(two.b, np.nan, False)
        b_S, J, info = found.b, found.J, found.P        # the weight at b_S itself
        if info is None:
            J, _, info = self.evaluate(b_S, S, information=True)
        J, df = max(J, 0.0), self.df_base - len(S)
        fit = GMMFit(support=S, b=b_S, info=info, J=J, df=df, pvalue=chi2_sf(J, df),
                     identified=_normal_solution(info, np.zeros(len(S)))[1])
        if start is None:
            self._done[key] = fit
        return fit

    def _solve(self, S: np.ndarray, W: FloatArray):
        """Minimise ``J(b_S) = min_m sum_e (g_e - m)^T W_e (g_e - m)`` with m profiled out."""
        M = block(self.M, slice(None), S)
        WM = W @ M
        Wu = np.einsum("eij,ej->ei", W, self.u)
        SWM, SWu = WM.sum(axis=0), Wu.sum(axis=0)
        Wbar_inv = self._Wbar_inv_ref if W is self._W_ref else inv_psd(W.sum(axis=0))
        proj = Wbar_inv @ np.column_stack([SWM, SWu])
        E, q, k = M.shape
        P = M.reshape(E * q, k).T @ WM.reshape(E * q, k) - SWM.T @ proj[:, :-1]  # (BLAS)
        P = (P + P.T) / 2.0
        c = np.einsum("eqi,eq->i", M, Wu) - SWM.T @ proj[:, -1]
        b, identified = _normal_solution(P, c)
        r = self.u - M @ b                                        # (E, q): g_e(b)
        Wr = np.einsum("eij,ej->ei", W, r)
        dev = r - Wbar_inv @ Wr.sum(axis=0)
        J = max(float(np.einsum("ei,ei->", dev, np.einsum("eij,ej->ei", W, dev))), 0.0)
        return b, P, J, identified

    def _full(self, S: np.ndarray, b_S: FloatArray) -> FloatArray:
        b = np.zeros(self.p)
        b[S] = b_S
        return b

    def j_reference(self, S: np.ndarray) -> float:
        """J of ``S`` with the weight at ``b_ref``: one weight for every support, so that
        the differences of nested supports are distance statistics (chi-square with the
        difference of sizes where the extra coefficients are 0)."""
        return self._solve(np.asarray(S, dtype=int), self._W_ref)[2]

    def test_at(self, S: np.ndarray, b_S: FloatArray) -> tuple[float, int, float]:
        """The invariance conditions (M) tested at a fixed ``b`` (not fitted to them):
        ``J(b)`` with the weight at ``b``, referred to ``chi2((|E| - 1) q)``.  Returns
        ``(J, df, pvalue)``."""
        J = max(self.objective(np.asarray(b_S, dtype=float), np.asarray(S, dtype=int))[0],
                0.0)
        return J, self.df_base, chi2_sf(J, self.df_base)

    def own_tests_at_ols(self, S: np.ndarray, b_S: FloatArray, cols: np.ndarray
                         ) -> tuple[FloatArray, int, FloatArray]:
        """``(J, df, pvalues)`` of ``E_e[X_k r]`` equal across environments at pooled OLS
        ``b_S``, for each ``k`` in ``cols`` alone (``|E| - 1`` df; an omnibus J dilutes
        it).  With ``g_f`` the mean scores ``X_R r`` (covariance ``V_f / n_f``), ``pi_f =
        n_f / N``, ``G`` the pooled ``Sigma[S, S]``, the delta method gives ``g_ek(b_ols)
        = g_ek - Sigma_e[k, S] G^{-1} sum_f pi_f g_f[S]``: a Wald test of its contrasts
        with their exact covariance (each environment by its own precision)."""
        S, E = np.asarray(S, dtype=int), self.mom.n_envs
        pos = {int(j): i for i, j in enumerate(self.R)}
        iS, ik = [pos[int(j)] for j in S], np.array([pos[int(k)] for k in cols])
        b, pi = self._full(S, b_S), self.mom.pooled_weights()
        A = np.zeros((len(ik), E, E, len(self.R)))                    # D_ke = A[k,e,f] . g_f
        A[np.arange(len(ik))[:, None], np.arange(E), np.arange(E), ik[:, None]] = 1.0
        if len(S):
            M_S = self.M[:, :, S]                                     # Sigma_e[R, S]
            H = linalg.solve(np.tensordot(pi, M_S[:, iS], axes=1),
                             M_S[:, ik].transpose(2, 0, 1).reshape(len(S), -1),
                             assume_a="pos").reshape(len(S), E, len(ik))
            A[..., iS] -= np.einsum("sek,f->kefs", H, pi)
        V = self._score(b) / self.n[:, None, None]
        C = np.hstack([np.eye(E - 1), -np.ones((E - 1, 1))])          # contrasts with the last
        CD = (self.u - self.M @ b)[:, ik].T @ C.T
        cov = np.einsum("ae,kefi,fij,kgfj,bg->kab", C, A, V, A, C, optimize=True)
        J = np.maximum(np.einsum("ka,ka->k", CD, np.linalg.solve(cov, CD[..., None])[..., 0]), 0)
        return J, E - 1, special.chdtrc(E - 1, J)

    def information(self, S: np.ndarray, b: FloatArray) -> FloatArray:
        """The information ``P_SS`` of the support ``S`` with the weight at ``b`` (p,)."""
        return self._solve(np.asarray(S, dtype=int), self._weights(b))[1]

    def score_map(self, S: np.ndarray, b: FloatArray) -> FloatArray:
        """``G_e = H_e^T W_e`` (E, |S|, q) with the weight at ``b`` (p,), ``H_e = M_e -
        Wbar^{-1} sum_f W_f M_f`` (``M_e = Sigma_e[Z, S]``): to first order the estimate's
        error is ``P_SS^{-1} sum_e G_e`` times the errors of the environments' mean scores
        ``E_e[Z r]`` at the truth (the normal equations linearised, the common ``m``
        profiled: their deviations vanish there); ``sum_e G_e V_e G_e^T / n_e = P_SS``
        with ``V_e = n_e W_e^{-1}``."""
        W = self._weights(b)
        M = block(self.M, slice(None), np.asarray(S, dtype=int))
        H = M - inv_psd(W.sum(axis=0)) @ (W @ M).sum(axis=0)
        return np.einsum("eqk,eqr->ekr", H, W)

    def information_along(self, v: FloatArray) -> FloatArray:
        """The information of every covariate with the weight of the moments ``E_e[Z
        X^T v]`` (Isserlis; the noise of the equations ``(Sigma_e - Sigma_bar) v`` along
        ``v``): ``v^T P v`` is then the J statistic of their invariance, ``chi2`` where
        the environments do not determine ``v`` (the rank test's calibration,
        :func:`negdro_stats.estimation.selection.rank_test`).  Computed as the score covariance of
        the outcome ``X^T v`` at ``b = 0``; with dependent rows, times the environments'
        long-run share (:class:`~negdro_stats.data.dependence.LongRun`), as every
        score covariance away from the fit."""
        m = self.mom
        along = m.with_outcome(np.append(v, 0.0))
        W = self._invert(gaussian_score_cov(along, np.zeros(self.p), self.R,
                                            long_run=self.long_run))
        return self._solve(np.arange(self.p), W)[1]

    def fit(self, S: np.ndarray) -> GMMFit:
        """GMM estimate, covariance and J test on the support ``S`` (computed once per
        support, in any order (:func:`_in_order`): the walk, the pruning and the CUE's
        start ask for the same supports, 35% of the calls of a bootstrap on eq. (33))."""
        return _in_order(lambda S, _: self._two_step(S), S)

    def _two_step(self, S: np.ndarray) -> GMMFit:
        key = ("two", S.tobytes())
        if key not in self._done:
            fit = self._fitted(S, self._W_ref)
            if self.own_weight:                                   # second step
                fit = self._fitted(S, self._weights(self._full(S, fit.b)))
            self._done[key] = fit
        return self._done[key]

    def fit_at(self, S: np.ndarray, b: FloatArray) -> GMMFit:
        """GMM on the support ``S`` with the weight at ``b`` (p,): one quadratic."""
        return self._fitted(np.asarray(S, dtype=int), self._weights(b))

    def _fitted(self, S: np.ndarray, W: FloatArray) -> GMMFit:
        b, info, J, identified = self._solve(S, W)
        df = self.df_base - len(S)
        return GMMFit(support=S, b=b, info=info, J=J, df=df, pvalue=chi2_sf(J, df),
                      identified=identified)

def _normal_solution(P: FloatArray, c: FloatArray) -> tuple[FloatArray, bool]:
    """``P^{-1} c`` and whether the information ``P`` identifies every coefficient
    (Cholesky where it is well conditioned; else its eigenvalues above ``1e-12`` of the
    largest decide, and ``b`` is the minimum-norm solution)."""
    if not len(c):
        return np.zeros(0), True
    try:                                        # well-conditioned: Cholesky suffices
        L = np.linalg.cholesky(P)
        if np.diag(L).min() ** 2 > 1e-10 * np.diag(P).max():
            return linalg.cho_solve((L, True), c, check_finite=False), True
    except np.linalg.LinAlgError:
        pass
    vals, vecs = np.linalg.eigh(P)              # (near) singular: eigenvalues decide
    ok = vals > 1e-12 * max(vals[-1], 1e-300)
    inv_vals = np.where(ok, 1.0 / np.maximum(vals, 1e-300), 0.0)
    return vecs @ (inv_vals * (vecs.T @ c)), bool(ok.all())

def first_stage_wald(mom, R: np.ndarray, S: np.ndarray, n: FloatArray) -> FloatArray:
    """Per instrument ``z`` in ``R``, the Wald statistic of ``E_e[z X_S]`` being equal in
    every environment, ``sum_e n_e d_e^T Omega_e^{-1} d_e`` (``d_e`` its deviation from
    the precision-weighted mean), ``chi2((|E| - 1) |S|)`` where it is; ``Omega_e =
    Var_e(z X_S)`` by Isserlis' theorem from the environment's means ``mu`` and
    covariances ``C``::

        Omega_kl = (C_zz + mu_z^2) C_kl + C_zk C_zl + mu_z (mu_k C_zl + mu_l C_zk)
                   + C_zz mu_k mu_l.

    ``n`` the rows per environment (finite)."""
    C, mu = mom.within()[:, :mom.p, :mom.p], mom.mean_x
    c_zz, c_zs, c_ss = C[:, R, R], block(C, R, S), block(C, S, S)
    mu_z, mu_s = mu[:, R], mu[:, S]
    mu_c = np.einsum("eqk,el->eqkl", c_zs, mu_s)
    omega = ((c_zz + mu_z**2)[:, :, None, None] * c_ss[:, None]
             + np.einsum("eqk,eql->eqkl", c_zs, c_zs)
             + mu_z[:, :, None, None] * (mu_c + mu_c.transpose(0, 1, 3, 2))
             + c_zz[:, :, None, None] * np.einsum("ek,el->ekl", mu_s, mu_s)[:, None])
    W = n[:, None, None, None] * np.linalg.pinv(omega, hermitian=True)
    M = block(mom.Sigma, R, S)                                      # (E, q, |S|)
    centre = np.einsum("qkl,ql->qk", np.linalg.pinv(W.sum(axis=0), hermitian=True),
                       np.einsum("eqkl,eql->qk", W, M))
    d = M - centre
    return np.einsum("eqk,eqkl,eql->q", d, W, d)

@dataclass(frozen=True, slots=True, eq=False)
class Cumulant:
    """The part of the score covariances that is held fixed while ``b`` moves (it
    changes slowly), on some covariates: ``Var_e(Z r)`` from the rows minus
    :func:`gaussian_score_cov` (times the long-run share), for ``Z`` the covariates
    ``cols``; ``block`` has shape (E, q, q).  ``long_run``: where the rows are dependent
    (:class:`~negdro_stats.data.dependence.LongRun`), whose share multiplies the
    Gaussian form at every ``b`` and whose degrees of freedom count the rows of every
    test (:func:`counted_rows`); None for independent rows (the block is then the
    non-Gaussian part)."""

    cols: np.ndarray
    block: FloatArray
    long_run: LongRun | None = None

    def __setstate__(self, state: list) -> None:
        """A result saved before 2026-12-07 holds no ``long_run`` (independent rows), one
        saved on that day the long-run share alone (its tests counted every row)."""
        cols, block, *rest = state
        long_run = rest[0] if rest else None
        if isinstance(long_run, np.ndarray):
            long_run = LongRun(long_run, np.full(len(long_run), np.inf))
        for name, value in zip(("cols", "block", "long_run"), (cols, block, long_run),
                               strict=True):
            object.__setattr__(self, name, value)

    @classmethod
    def zero(cls, n_envs: int, long_run: LongRun | None = None) -> Cumulant:
        return cls(np.zeros(0, dtype=int), np.zeros((n_envs, 0, 0)), long_run)

    def on(self, cols: np.ndarray) -> FloatArray:
        """The block for ``cols`` (zero for covariates it was not estimated on)."""
        where = {int(j): k for k, j in enumerate(self.cols)}
        pos = np.array([where.get(int(j), -1) for j in cols], dtype=int)
        out = np.zeros((self.block.shape[0], len(cols), len(cols)))
        known = np.flatnonzero(pos >= 0)
        out[np.ix_(np.arange(len(out)), known, known)] = self.block[
            np.ix_(np.arange(len(out)), pos[known], pos[known])]
        return out

    def environments(self, keep: np.ndarray) -> Cumulant:
        """The blocks of the environments ``keep`` (integer indices)."""
        return Cumulant(self.cols, self.block[keep],
                        None if self.long_run is None else self.long_run.environments(keep))

    def scaled(self, unit: FloatArray) -> Cumulant:
        """Multiplied entrywise by ``unit[cols, cols]`` (a change of scale)."""
        return Cumulant(self.cols, self.block * unit[np.ix_(self.cols, self.cols)],
                        self.long_run)
