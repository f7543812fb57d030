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

Selection (:func:`select_support`) orders the candidates by the ``|t|`` of the GMM fit on
all of them, computes the J statistic of every nested support, chooses by Andrews'
(1999) GMM-BIC ``J_k + k log n`` (consistent: the smallest support containing the
causes wins with probability tending to one), grows the choice until the J test no
longer rejects at level ``alpha`` (else says invariance is rejected), and prunes it
backwards by t statistics with the critical value ``max(z_{1 - alpha / (2 |S|)},
sqrt(log n))``: the Bonferroni part bounds the probability of keeping any non-cause
by ``alpha`` at every ``n``, and the ``sqrt(log n)`` (BIC) part makes that probability
vanish as ``n`` grows while any fixed non-zero effect, whose t statistic grows like
``sqrt(n)``, is kept -- consistency in both directions, at the same ``log n`` rate as
the BIC step.

The differences across environments are blind to a cause whose effect is small against
the heterogeneity; pooled least squares is not, and where nothing is confounded it is the
efficient estimator.  :func:`exogenous_support` therefore adds such causes by their pooled
``t`` (:func:`augment_support`, guarded by the invariance fit, which keeps a child of Y
at coefficient 0 while least squares loads on it), removes the covariate where pooled OLS
and the invariance fit disagree most when a Hausman contrast (:func:`hausman`) rejects,
and keeps these changes only where pooled OLS ends up passing that contrast.

Population moments (``n = inf``) are treated as a sample of ``N_POPULATION`` rows:
sampling noise is then far below rounding error, so the tests are exact up to it.

Why one module of ~950 lines: the GMM of the invariance conditions, its weights, J and
rank tests and the support walk share the same per-support factorisations; apart, each
part would re-derive them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy import linalg, optimize, special

from .._typing import FloatArray
from .._validation import listed
from ..data.fourth import gaussian_score_cov, isserlis_parts, score_cov_derivative

__all__ = ["InvarianceGMM", "GMMFit", "Selection", "SelectionReport", "Cumulant",
           "select_support", "augment_support", "exogenous_support",
           "ExogenousSupport", "hausman", "pooled_ols", "pooled_t", "critical_value",
           "gaussian_score_cov", "invariant_ls", "null_count", "N_POPULATION", "inv_psd",
           "score_weights", "with_cumulant", "chi2_sf", "chi2_isf", "norm_isf"]

N_POPULATION = 1e12     # rows assumed for population moments: noise far below rounding
GATE_SE = 0.1           # sharply determined: worst standardised s.e. below this (route, growth)
SCORE_FLOOR = 0.1       # score covariances stay >= this share of their Gaussian form


def chi2_sf(x: float, df: float) -> float:
    """``scipy.stats.chi2.sf(x, df)`` (NaN for ``df < 1``) through ``scipy.special``,
    without the distribution object's argument handling: 0.5 us against 24 us, and
    the selection of one bootstrap replicate calls it about 50 times."""
    return float(special.chdtrc(df, max(x, 0.0))) if df >= 1 else np.nan


def chi2_isf(a: float, df: float) -> float:
    """``scipy.stats.chi2.isf(a, df)`` through ``scipy.special`` (see :func:`chi2_sf`)."""
    return float(special.chdtri(df, a)) if df >= 1 else np.nan


def norm_isf(a: float) -> float:
    """``scipy.stats.norm.isf(a)`` through ``scipy.special`` (see :func:`chi2_sf`)."""
    return float(-special.ndtri(a))


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




class InvarianceGMM:
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
        self.R, self.mom = R, mom
        self.n = np.where(np.isfinite(mom.n), mom.n, N_POPULATION)
        self.M = mom.Sigma[:, R, :]                               # (E, q, p)
        sxy = mom.sxy if recentre is None else mom.sxy - recentre
        self.u = sxy[:, R]                                        # (E, q)
        self.p = mom.p
        self.K = cumulant.on(R)
        self.own_weight = own_weight
        self.df_base = (mom.n_envs - 1) * len(R)
        self._W_ref = self._weights(b_ref)

    def _score(self, b: FloatArray) -> FloatArray:
        """``Var_e(Z r)`` at ``b``: :func:`gaussian_score_cov` on the instruments plus the
        cumulant.  The cumulant was estimated at another ``b``; a covariance, unlike the
        estimate of a correction to it, must stay positive definite, so per environment
        the cumulant is scaled by ``t = min(1, (1 - FLOOR) / |low|)``, ``low`` the
        smallest eigenvalue of ``G^{-1/2} K G^{-1/2}``: then ``V >= FLOOR * G``, and ``V``
        is continuous in ``b``.  (Halving ``K`` until ``G + K`` was positive definite left
        ``V`` as near singular as the halving's last step allowed: a difference of
        rounding between two sources of the same rows moved a J statistic from 1e3 to
        1.7e4.)  ``t = 1`` where ``G + K / (1 - FLOOR)`` is positive definite (one
        Cholesky, the common case)."""
        return with_cumulant(gaussian_score_cov(self.mom, b, self.R), self.K)

    def _score_form(self, b: FloatArray, S: np.ndarray, a: FloatArray) -> FloatArray:
        """``sum_e a_e^T (dV_e / db_k) a_e / n_e`` for ``k`` in ``S``: the derivative of the
        score covariance enters the CUE gradient only through this form
        (:func:`~negdro_stats.data.fourth.score_cov_derivative`, O(|E| q |S|): ``dV a``
        without forming ``dV``)."""
        dVa = score_cov_derivative(self.mom, isserlis_parts(self.mom, b, self.R), self.R, a, S)
        return np.einsum("eqk,eq,e->k", dVa, a, 1.0 / self.n)

    def _weights(self, b: FloatArray) -> FloatArray:
        """``W_e = n_e Var_e(Z r)^{-1}`` at ``b`` (a tiny ridge keeps it finite)."""
        return self._invert(self._score(b))

    def _invert(self, V: FloatArray) -> FloatArray:
        return score_weights(V, self.n)

    def _cue_objective(self, b_S: FloatArray, S: np.ndarray) -> tuple[float, FloatArray]:
        """CUE criterion ``J(b) = min_m sum_e (g_e - m)^T W_e(b) (g_e - m)`` and gradient.

        By the envelope theorem (m profiled out),
        ``dJ/db_k = -2 sum_e M_e[:, k]^T W_e dev_e - sum_e (W_e dev_e)^T dV_e/db_k
        (W_e dev_e) / n_e``.
        """
        b = self._full(S, b_S)
        W = self._invert(self._score(b))
        r = self.u - self.M[:, :, S] @ b_S
        Wr = np.einsum("eij,ej->ei", W, r)
        dev = r - inv_psd(W.sum(axis=0)) @ Wr.sum(axis=0)
        Wd = np.einsum("eij,ej->ei", W, dev)
        J = float(np.einsum("ei,ei->", dev, Wd))
        grad = (-2.0 * np.einsum("eqk,eq->k", self.M[:, :, S], Wd)
                - self._score_form(b, S, Wd))
        return J, grad

    def fit_cue(self, S: np.ndarray, start: FloatArray | None = None) -> GMMFit:
        """Continuously updated GMM on ``S``, started at ``start`` (default: the two-step
        estimate; the pruning passes the previous CUE fit without the removed coordinate,
        which saves most of the iterations on large supports); the covariance is
        ``P_SS^{-1}`` with the weight at the CUE estimate.  (Its correction of
        the two-step estimate can exceed several two-step standard errors: those are too
        small with many moments; measured on the random designs of
        ``benchmarks/bench_selection.py``, bounding the step made the errors worse.)"""
        S = np.asarray(S, dtype=int)
        two = self.fit(S)
        b_S = two.b
        if len(S) and two.identified:
            with np.errstate(all="ignore"):           # (no warnings module: threads)
                try:
                    opt = optimize.minimize(self._cue_objective,
                                            two.b if start is None else start, args=(S,),
                                            jac=True, method="L-BFGS-B",
                                            options={"maxiter": 200})
                    if np.isfinite(opt.fun) and np.all(np.isfinite(opt.x)):
                        b_S = opt.x
                except (linalg.LinAlgError, ValueError):
                    pass                                   # keep the two-step estimate
        _, info, _, identified = self._solve(S, self._weights(self._full(S, b_S)))
        J = max(self._cue_objective(b_S, S)[0], 0.0)      # the weight at b_S itself
        df = self.df_base - len(S)
        return GMMFit(support=S, b=b_S, info=info, J=J, df=df,
                      pvalue=chi2_sf(J, df),
                      identified=identified)

    def _solve(self, S: np.ndarray, W: FloatArray):
        """Minimise ``J(b_S) = min_m sum_e (g_e - m)^T W_e (g_e - m)`` with m profiled out."""
        M = self.M[:, :, S]
        WM = W @ M
        Wu = np.einsum("eij,ej->ei", W, self.u)
        Wbar = W.sum(axis=0)
        SWM, SWu = WM.sum(axis=0), Wu.sum(axis=0)
        Wbar_inv = inv_psd(Wbar)
        proj = Wbar_inv @ np.column_stack([SWM, SWu])
        E, q, k = M.shape
        P = M.reshape(E * q, k).T @ WM.reshape(E * q, k) - SWM.T @ proj[:, :-1]  # (BLAS)
        P = (P + P.T) / 2.0
        c = np.einsum("eqi,eq->i", M, Wu) - SWM.T @ proj[:, -1]
        k = len(S)
        identified = True
        if k:
            try:                                    # well-conditioned: Cholesky suffices
                L = np.linalg.cholesky(P)
                if np.diag(L).min() ** 2 <= 1e-10 * np.diag(P).max():
                    raise np.linalg.LinAlgError
                b = linalg.cho_solve((L, True), c, check_finite=False)
            except np.linalg.LinAlgError:           # (near) singular: eigenvalues decide
                vals, vecs = np.linalg.eigh(P)
                ok = vals > 1e-12 * max(vals[-1], 1e-300)
                identified = bool(ok.all())
                inv_vals = np.where(ok, 1.0 / np.maximum(vals, 1e-300), 0.0)
                b = vecs @ (inv_vals * (vecs.T @ c))
        else:
            b = np.zeros(0)
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
        J = max(self._cue_objective(np.asarray(b_S, dtype=float),
                                    np.asarray(S, dtype=int))[0], 0.0)
        return J, self.df_base, chi2_sf(J, self.df_base)

    def information(self, S: np.ndarray, b: FloatArray) -> FloatArray:
        """The information ``P_SS`` of the support ``S`` with the weight at ``b`` (p,)."""
        return self._solve(np.asarray(S, dtype=int), self._weights(b))[1]

    def information_along(self, v: FloatArray) -> FloatArray:
        """The information of every covariate with the weight of the moments ``E_e[Z
        X^T v]`` (Isserlis; the noise of the equations ``(Sigma_e - Sigma_bar) v`` along
        ``v``): ``v^T P v`` is then the J statistic of their invariance, ``chi2`` where
        the environments do not determine ``v`` (the rank test's calibration,
        :func:`negdro_stats.estimation.route.rank_test`).  Computed as the score covariance of the
        outcome ``X^T v`` at ``b = 0``."""
        m = self.mom
        along = replace(m, mean_y=m.mean_x @ v, sxy=m.Sigma @ v,
                        syy=np.einsum("i,eij,j->e", v, m.Sigma, v), fourth=None)
        W = self._invert(gaussian_score_cov(along, np.zeros(self.p), self.R))
        return self._solve(np.arange(self.p), W)[1]

    def fit(self, S: np.ndarray) -> GMMFit:
        """GMM estimate, covariance and J test on the support ``S``."""
        S = np.asarray(S, dtype=int)
        b, info, J, identified = self._solve(S, self._W_ref)
        if self.own_weight:                                       # second step
            b, info, J, identified = self._solve(S, self._weights(self._full(S, b)))
        df = self.df_base - len(S)
        pvalue = chi2_sf(J, df)
        return GMMFit(support=S, b=b, info=info, J=J, df=df, pvalue=pvalue,
                      identified=identified)


def score_weights(V: FloatArray, n: FloatArray) -> FloatArray:
    """``W_e = n_e V_e^{-1}`` (a ridge of 1e-10 of the mean eigenvalue keeps it finite).

    An environment with ``n_e <= q`` rows (``q`` instruments) has a score covariance of
    rank at most ``n_e - 1`` whatever the data: its other directions carry no estimate
    and get no weight (the pseudo-inverse on its ``n_e - 1`` largest eigenvalues).  The
    ridge's weight of ~1e10 on them turned rounding (moments equal to 1e-16 from a
    frame and from Dask) into J tests that differed by O(1) and supports that differed
    (1 in 200 of the fuzz test's frames)."""
    q = V.shape[1]
    ridge = 1e-10 * np.einsum("ejj->e", V)[:, None, None] / q * np.eye(q)
    W = n[:, None, None] * inv_psd(V + ridge)
    for e in np.flatnonzero(n <= q):
        vals, vecs = np.linalg.eigh(V[e])
        rank = max(int(n[e]) - 1, 0)
        inv = np.zeros(q)
        if rank:
            top = vals[q - rank:]
            inv[q - rank:] = np.where(top > 0, 1.0 / np.where(top > 0, top, 1.0), 0.0)
        W[e] = n[e] * (vecs * inv) @ vecs.T
    return W


def with_cumulant(gauss: FloatArray, K: FloatArray) -> FloatArray:
    """``gauss + t K`` per environment, ``t`` as :meth:`InvarianceGMM._score` says (1 where
    ``gauss + K / (1 - SCORE_FLOOR)`` is positive definite): a covariance ``>= SCORE_FLOOR
    gauss``, continuous in ``b``."""
    if not K.any() or _is_pd(gauss + K / (1.0 - SCORE_FLOOR)):
        return gauss + K
    V = gauss.copy()
    for e in range(len(V)):
        try:
            L = np.linalg.cholesky(gauss[e])
        except np.linalg.LinAlgError:        # the Gaussian part itself is singular
            continue
        half = linalg.solve_triangular(L, K[e], lower=True)
        low = float(np.linalg.eigvalsh(linalg.solve_triangular(L, half.T, lower=True))[0])
        V[e] += min(1.0, (1.0 - SCORE_FLOOR) / max(-low, 1e-300)) * K[e]
    return V


def _is_pd(A: FloatArray) -> bool:
    """Whether a (stack of) symmetric matrices is positive definite (Cholesky)."""
    try:
        np.linalg.cholesky(A)
        return True
    except np.linalg.LinAlgError:
        return False


def inv_psd(A: FloatArray) -> FloatArray:
    """Inverse of a (stack of) symmetric positive definite matrices; pseudo-inverse of
    any that is only semi-definite."""
    try:
        np.linalg.cholesky(A)                       # positive definite (every one)
        return np.linalg.inv(A)
    except np.linalg.LinAlgError:
        flat = A.reshape(-1, *A.shape[-2:])
        return np.stack([linalg.pinvh(a) for a in flat]).reshape(A.shape)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Selection:
    """Outcome of :func:`select_support` (indices refer to the moments given to it).

    Attributes
    ----------
    fit : GMMFit or None
        The continuously updated GMM fit on the selected support (None only when no
        support could be tested: too few equations).
    rejected : bool
        Whether the J test rejects invariance (level ``alpha``) on ``fit`` itself (then
        no support from the BIC choice on passed it and ``fit`` is the pruned BIC
        choice).
    truncated : bool
        Whether the walk stopped before the end of the order because larger supports
        have no degrees of freedom left (``(|E| - 1) q <= |S|``): then a rejection may
        only mean that the causes lie beyond what the equations can test.
    walk : tuple of (size, J, df, pvalue)
        The two-step J test along the nested supports.
    pruned : tuple of int
        Covariates removed by the t-statistic pruning, in order.
    critical_t : float
        The pruning critical value used last.
    """

    fit: GMMFit | None
    rejected: bool
    truncated: bool
    walk: tuple
    pruned: tuple
    critical_t: float


def select_support(gmm: InvarianceGMM, order: np.ndarray, *, alpha: float,
                   n_min: float, grow_to: int | None = None) -> Selection:
    """Choose among the nested supports ``order[:k]``, then prune.

    1. Two-step J statistic ``J_k`` of every nested support with positive degrees of
       freedom.
    2. Andrews' (1999) GMM-BIC: ``k_bic = argmin_k J_k + k log n`` (``n`` the smallest
       environment).  A support missing a cause has ``J_k`` of order ``n``, a correct
       one an extra chi-square for each superfluous covariate, so the smallest correct
       support is chosen with probability tending to one.
    3. The invariance guarantee: grow from ``k_bic`` to the first support whose J test
       does not reject at level ``alpha`` -- the two-step one and, to confirm it, the
       continuously updated one, which does not depend on where the weight was
       evaluated (a common weight evaluated at a wrong model, e.g. with children of Y in
       it, inflates the score variances and hides the misfit: two-step J of 63 on 112
       degrees of freedom where the CUE J was 206) -- among the supports that improve on
       ``k_bic`` significantly: ``J_bic - J_k >= chi2_{1 - alpha}(k - k_bic)`` with one
       weight for both (:meth:`InvarianceGMM.j_reference`: the distance test of the
       nested models; a weak cause whose omission makes J reject passes it), and that
       the data determine sharply (worst standardised s.e. at most ``GATE_SE``) --
       and only as far as ``order[:grow_to]`` (the route passes the covariates whose
       pilot ``|t|`` is significant: the pilot is consistent, so a cause that J sees
       is among them with probability tending to one).  Growth is for a weak cause just
       past ``k_bic``, not a guarantee against a J test that rejects the true support
       narrowly (p = 200 at n = 20,000 with 423 equations: p = 0.006 at the parents):
       unlimited, it walked on to 107 covariates that absorb noise, and pruning from
       there ended at one child of Y (error 2.8, reported as identified).  If no
       support passes, ``rejected`` is set and the BIC choice kept.
    4. Backward pruning of covariates off the order (e.g. a child of Y ahead of a
       weak parent) by the ``|t|`` of the continuously updated fit (:meth:`fit_cue`), with
       the critical value ``max(z_{1 - alpha / (2 |S|)}, sqrt(log n))``.  Standard errors
       are inflated by ``sqrt(max(1, J / df))``: where invariance fails (J well above its
       degrees of freedom), a misfit would otherwise make covariates look significant
       that only absorb it; under invariance ``J / df -> 1`` and nothing changes.
       Clear noise goes first by the two-step fit's ``|t|`` (below half the critical
       value; one CUE per removal cost 460 of 467 s at p = 200), then the CUE's; each
       step is warm-started at the previous fit without the removed coordinate.  No J
       test accompanies each removal; what guards the report is that ``rejected`` and
       the reason text are the reported fit's own J test.

    ``rejected`` is the J test of the reported (pruned) fit itself.
    """
    n_eff = N_POPULATION if not np.isfinite(n_min) else n_min
    penalty = np.log(n_eff)
    walk, fits, truncated, k_bic = [], [], False, None

    def bic(k: int) -> float:
        return fits[k].J + penalty * k

    for k in range(len(order) + 1):
        S = np.asarray(order[:k], dtype=int)
        if gmm.df_base - len(S) <= 0:
            truncated = True
            break
        trial = gmm.fit(S)
        walk.append((len(S), trial.J, trial.df, trial.pvalue))
        fits.append(trial)
        if trial.identified and (k_bic is None or bic(k) < bic(k_bic)):
            k_bic = k
        # no larger support can beat the BIC choice (J >= 0), and one from it on passes
        if k_bic is not None and penalty * (k + 1) >= bic(k_bic) and any(
                fits[j].identified and fits[j].pvalue >= alpha for j in range(k_bic, k + 1)):
            break
    ok = [k for k, f in enumerate(fits) if f.identified]
    if not ok:
        return Selection(fit=None, rejected=False, truncated=truncated, walk=tuple(walk),
                         pruned=(), critical_t=np.nan)
    k_bic = min(ok, key=lambda k: fits[k].J + penalty * k)
    fit, k = None, k_bic
    j_bic = gmm.j_reference(fits[k_bic].support)
    last = len(order) if grow_to is None else max(min(grow_to, len(order)), k_bic)
    while k <= last:
        gain = chi2_isf(alpha, k - k_bic) if k > k_bic else 0.0
        if gain >= j_bic:                           # no larger support can improve enough
            break
        if k == len(fits):                          # beyond where the walk stopped
            S = np.asarray(order[:k], dtype=int)
            if gmm.df_base - len(S) <= 0:
                truncated = True
                break
            fits.append(gmm.fit(S))
            walk.append((len(S), fits[k].J, fits[k].df, fits[k].pvalue))
        if (fits[k].identified and fits[k].pvalue >= alpha and (k == k_bic or (
                fits[k].worst_se <= GATE_SE
                and j_bic - gmm.j_reference(fits[k].support) >= gain))):
            cue = gmm.fit_cue(fits[k].support)
            if cue.pvalue >= alpha:
                fit = cue
                break
        k += 1
    if fit is None:
        fit = gmm.fit_cue(fits[k_bic].support)
    pruned = []
    two = _prune(lambda S, start: gmm.fit(S), gmm.fit(fit.support), alpha=alpha,
                 n_min=n_min, pruned=pruned, scale=0.5)
    if pruned:                                      # the clear noise gone: the CUE again
        keep = np.isin(fit.support, two.support)
        fit = gmm.fit_cue(two.support, start=fit.b[keep])
    fit = _prune(lambda S, start: gmm.fit_cue(S, start=start), fit, alpha=alpha,
                 n_min=n_min, pruned=pruned)
    crit = critical_value(alpha, max(len(fit.support), 1), n_min)   # (the last one used
                                                                     # if all were pruned)
    return Selection(fit=fit, rejected=not fit.pvalue >= alpha, truncated=truncated,
                     walk=tuple(walk), pruned=tuple(pruned), critical_t=float(crit))


def _prune(refit, fit, *, alpha: float, n_min: float, pruned: list,
           scale: float = 1.0) -> GMMFit:
    """Backward elimination from ``fit`` while the smallest inflated ``|t|`` is below
    ``scale`` times :func:`critical_value`; ``refit(S, start)`` fits a support (warm
    started at the previous coefficients without the removed one); removed covariates
    are appended to ``pruned``."""
    while len(fit.support):
        inflation = max(1.0, fit.J / fit.df)
        t = np.abs(fit.b) / (fit.se * np.sqrt(inflation))
        j = int(np.argmin(t))
        if t[j] >= scale * critical_value(alpha, len(fit.support), n_min):
            break
        trial = refit(np.delete(fit.support, j), np.delete(fit.b, j))
        if not trial.identified:
            break
        pruned.append(int(fit.support[j]))
        fit = trial
    return fit


def pooled_ols(mom, S: np.ndarray) -> tuple[FloatArray, FloatArray]:
    """Pooled least squares of ``Y`` on ``X_S`` from the moments, and its classical
    covariance ``sigma^2 (sum_e n_e Sigma_e[S, S])^{-1}`` (population moments count as
    ``N_POPULATION`` rows per environment)."""
    S = np.asarray(S, dtype=int)
    n = np.where(np.isfinite(mom.n), mom.n, N_POPULATION)
    if not len(S):
        return np.zeros(0), np.zeros((0, 0))
    G = np.tensordot(n, mom.Sigma[:, S][:, :, S], axes=1)
    c = n @ mom.sxy[:, S]
    b = linalg.solve(G, c, assume_a="pos")
    rss = float(n @ mom.syy - 2.0 * b @ c + b @ G @ b)
    sigma2 = max(rss, 0.0) / max(n.sum() - len(S), 1.0)
    return b, sigma2 * inv_psd(G)


def null_count(vals: FloatArray, df: int, alpha: float) -> int:
    """How many directions the invariance conditions leave undetermined, from ``vals``,
    the ascending generalised eigenvalues of their information against the second
    moments over the risk (``route.rank_test``): the largest ``k`` whose ``k``
    smallest sum to at most the ``1 - alpha`` quantile of ``chi2(k (df - p + k))``
    (Cragg and Donald 1997), ``p = len(vals)``; 0 when every direction is determined."""
    p = len(vals)
    for k in range(p, 0, -1):
        if vals[:k].sum() <= chi2_isf(alpha, k * max(df - p + k, 1)):
            return k
    return 0


def invariant_ls(fit: GMMFit, mom, *, df: int, alpha: float) -> tuple[FloatArray, int]:
    """Pooled least squares constrained by the invariance conditions (M) where they
    determine the coefficients: ``b = argmin R_pool(b)`` subject to the GMM estimate
    ``fit`` in the directions it determines, on ``fit.support``.

    With ``G`` the pooled second moments of ``X_S`` and ``V`` the generalised
    eigenvectors of ``fit.info`` against ``G / R_pool(b_ols)`` (``V^T G V / R = I``),
    the criterion and the constraints separate along ``V``:

        b = b_ols + V_d V_d^T (G / R) (b_gmm - b_ols),

    ``V_d`` the ``r`` determined directions (:func:`null_count` at level ``alpha`` with
    ``df`` equations): pooled OLS along the directions the environment differences do
    not determine, GMM along the others.  On population moments, the moment-invariant
    set ``{b: E_e[X (Y - X^T b)] equal for all e}`` holds ``beta*`` (Lemma 1) and lies
    inside the risk-invariant set, on which ``beta*`` has the smallest pooled risk when
    Condition 4 (Theorem 6) or 6 (Theorem 12, hidden confounding) holds: the constrained
    least squares is then ``beta*`` exactly -- the global answer that Algorithm 3, a
    descent on the non-convex objective (9), need not reach.  Returns ``(b_S, r, se)``:
    ``se`` from ``Cov(b) = V_d diag(1 / vals_d) V_d^T + V_n V_n^T / N`` (GMM along the
    determined directions, OLS along the others; ``N`` the rows).
    """
    S = np.asarray(fit.support, dtype=int)
    b_ols, cov_ols = pooled_ols(mom, S)
    if not len(S):
        return b_ols, 0, np.zeros(0)
    n = np.where(np.isfinite(mom.n), mom.n, N_POPULATION)
    G = np.tensordot(n / n.sum(), mom.Sigma[:, S][:, :, S], axes=1)
    sxy, syy = (n / n.sum()) @ mom.sxy[:, S], float((n / n.sum()) @ mom.syy)
    risk = max(syy - 2.0 * b_ols @ sxy + b_ols @ G @ b_ols, 1e-12 * max(syy, 1e-300))
    vals, V = linalg.eigh((fit.info + fit.info.T) / 2.0, G / risk)
    k = null_count(vals, df, alpha)
    if k == len(S):
        return b_ols, 0, np.sqrt(np.diag(cov_ols))
    Vd, Vn = V[:, k:], V[:, :k]
    var = (Vd**2) @ (1.0 / np.maximum(vals[k:], 1e-300)) + (Vn**2).sum(axis=1) / n.sum()
    return b_ols + Vd @ (Vd.T @ (G / risk) @ (fit.b - b_ols)), len(S) - k, np.sqrt(var)


def pooled_t(mom, S: np.ndarray, js) -> FloatArray:
    """``|t|`` of pooled least squares for each ``j`` in ``js`` on ``S + {j}`` (classical
    standard errors, as :func:`pooled_ols`), all at once by partial regression on ``S``."""
    S, js = np.asarray(S, dtype=int), np.asarray(js, dtype=int)
    if not len(js):
        return np.zeros(0)
    n = np.where(np.isfinite(mom.n), mom.n, N_POPULATION)
    G = np.tensordot(n, mom.Sigma, axes=1)
    c, yy = n @ mom.sxy, float(n @ mom.syy)
    if len(S):
        proj = linalg.solve(G[np.ix_(S, S)], np.column_stack([G[np.ix_(S, js)], c[S]]),
                            assume_a="pos")
        s_jj = np.diag(G)[js] - np.einsum("si,si->i", G[np.ix_(S, js)], proj[:, :-1])
        c_j = c[js] - proj[:, :-1].T @ c[S]
        rss = yy - c[S] @ proj[:, -1]
    else:
        s_jj, c_j, rss = np.diag(G)[js], c[js], yy
    s_jj = np.maximum(s_jj, 1e-300)
    rss_j = np.maximum(rss - c_j**2 / s_jj, 0.0)
    sigma2 = rss_j / max(n.sum() - len(S) - 1, 1.0)
    return np.abs(c_j / s_jj) / np.maximum(np.sqrt(sigma2 / s_jj), 1e-300)


def critical_value(alpha: float, m: int, n_min: float) -> float:
    """``max(z_{1 - alpha / (2 m)}, sqrt(log n))``: every cut of the selection (pruning,
    pooled additions, the contrast guard) -- Bonferroni over ``m`` tests at any n, and a
    ``sqrt(log n)`` rate for consistency."""
    log_n = np.log(N_POPULATION if not np.isfinite(n_min) else n_min)
    return max(norm_isf(alpha / (2 * max(m, 1))), np.sqrt(log_n))


def augment_support(gmm: InvarianceGMM, mom, S: np.ndarray, candidates: np.ndarray, *,
                    alpha: float, n_min: float, screened: int) -> tuple[np.ndarray, tuple]:
    """Add the causes that the environment differences see only weakly: by the pooled
    regression, guarded by the invariance fit.

    A cause whose effect is small against the heterogeneity of the environments moves J
    by less than the BIC penalty ``log n``, yet its pooled t statistic is large: pooled
    least squares uses the levels ``E[X (Y - b^T X)] = 0``, which the differences across
    environments discard (measured: standardised effects of 0.05 have pooled
    ``|t|`` of 7-12 at n = 2,000 per environment and are dropped by the walk).  A child
    of Y has a large pooled t as well, but there pooled least squares and the invariance
    fit disagree: on ``S + {child}`` the invariance conditions still hold at ``beta*``
    (coefficient 0 on the child, Lemma 1) while least squares loads on the child.  So,
    from ``S``, repeatedly:

    - ``t_j``: the pooled OLS t statistic of ``j`` on ``S + {j}``, for every candidate;
    - the candidate with the largest ``|t_j| >= max(z_{1 - alpha / (2 m)}, sqrt(log n))``
      (the rate and Bonferroni bound of :func:`select_support`; ``m = screened``, the
      number of covariates searched) is added if the continuously updated invariance
      fit on ``S + {j}`` supports it as a cause (:func:`_supports_cause`): it agrees
      with pooled least squares on every coordinate (all coordinates, not only
      ``j``'s: when ``S`` lacks a cause, the invariance fit on ``S + {child}`` is
      misspecified and can wander far on the other coordinates while matching least
      squares on the child's by chance -- found by hypothesis on exact moments: a CUE
      coefficient of -24,743 next to agreement on the child's), and its own
      coefficient on ``j`` is at least ``z_{1 - alpha}`` standard errors from 0 towards
      least squares.  Agreement alone is no evidence where the environments move ``j``
      little (wide invariance standard errors): descendants of Y with pooled ``|t|`` of
      3.6-15 passed it and, once in, made non-causes significant in the pooled
      regression (p = 100: nine non-causes added in one fit).  The one-sided test keeps
      the chance of adding a child at ``alpha`` per addition.  A candidate that fails
      is set aside;
    - then every earlier addition is re-checked on the grown support: one whose pooled
      ``|t|`` there has fallen below the cut (it only stood in for the later one, e.g. a
      descendant of the cause added after it) is removed and not offered again.

    Both cuts grow like ``sqrt(log n)`` while a cause's ``t`` and a child's contrast grow
    like ``sqrt(n)``: the step keeps causes and excludes children with probability
    tending to one (a non-cause that is not a descendant of Y has a pooled ``t`` of
    order one).  Returns the support (sorted) and the added covariates in order.
    """
    S = np.sort(np.asarray(S, dtype=int))
    rest = [int(j) for j in candidates if j not in set(S)]
    crit = critical_value(alpha, screened, n_min)
    added = []
    while rest:
        t = dict(zip(rest, pooled_t(mom, S, rest), strict=True))
        ranked = [j for j in sorted(rest, key=lambda j: -t[j]) if t[j] >= crit]
        for j in ranked:
            T = np.append(S, j)
            rest.remove(j)
            if _supports_cause(gmm, mom, T, alpha=alpha, n_min=n_min):
                S = np.sort(T)
                added.append(j)
                break
        else:
            break
        while len(added) > 1:                      # re-check the earlier additions
            own = {a: pooled_t(mom, np.setdiff1d(S, [a]), [a])[0] for a in added[:-1]}
            weakest = min(own, key=own.get)
            if own[weakest] >= crit:
                break
            S = np.setdiff1d(S, [weakest])
            added.remove(weakest)
    return S, tuple(added)


def hausman(fit, b_ols: FloatArray) -> tuple[float, int, float]:
    """Hausman-type contrast of pooled OLS against the invariance GMM on the support:
    ``H = (b_gmm - b_ols)^T P (b_gmm - b_ols)`` with ``P`` the GMM information, referred to
    chi-square(|S|).  Without confounding (and no child of Y in the support) OLS is
    consistent and efficient, ``Var(b_gmm - b_ols) = Var(b_gmm) - Var(b_ols) <= P^{-1}``,
    so the test is conservative; with it the contrast is O(1) and ``H`` grows like n.
    (The difference-in-Hansen test of ``E[X_S r] = 0`` rejected 13% of true nulls at 5%
    with 150 moment conditions; this contrast uses only the |S| coefficients.)"""
    d = fit.b - b_ols
    k = len(d)
    if k == 0:
        return 0.0, 0, 1.0
    if not fit.identified:
        return np.inf, k, 0.0
    H = float(d @ fit.info @ d)
    return H, k, chi2_sf(H, k)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class ExogenousSupport:
    """Outcome of :func:`exogenous_support`: the support on which pooled OLS is
    reported when ``exogeneity`` does not reject, the covariates removed from and added
    to the support given to reach it, and the Hausman contrast there (else the support
    given and the contrast on it)."""

    support: np.ndarray
    removed: tuple
    added: tuple
    exogeneity: tuple


def _supports_cause(gmm: InvarianceGMM, mom, T: np.ndarray, *, alpha: float,
                    n_min: float) -> bool:
    """Whether the invariance fit on ``T`` supports its last covariate ``j`` as a cause:
    pooled least squares and the invariance fit agree on every coordinate (contrast
    below ``max(z_{1 - alpha / (2 |T|)}, sqrt(log n))``), and the invariance fit moves
    ``b_j`` away from 0 towards least squares by at least ``z_{1 - alpha}`` of its
    standard errors -- a one-sided test at level ``alpha`` of "j is a child of Y"
    (Lemma 1 holds the invariance coefficient of a child at 0)."""
    inv = gmm.fit_cue(T)
    if not inv.identified:
        return False
    b_ols = pooled_ols(mom, T)[0]
    contrast = np.abs(b_ols - inv.b) / inv.se
    toward = np.sign(b_ols[-1]) * inv.b[-1] / inv.se[-1]
    return bool(contrast.max() < critical_value(alpha, len(T), n_min)
                and toward >= norm_isf(alpha))


def _contrasts(gmm: InvarianceGMM, mom, S: np.ndarray) -> FloatArray:
    """``|b_ols - b_inv| / se_inv`` per coordinate of ``S``: pooled least squares against
    the continuously updated invariance fit (``inf`` where that is not identified)."""
    inv = gmm.fit_cue(S)
    if not inv.identified:
        return np.full(len(S), np.inf)
    return np.abs(pooled_ols(mom, S)[0] - inv.b) / inv.se


def exogenous_support(gmm: InvarianceGMM, mom, S: np.ndarray, candidates: np.ndarray, *,
                      alpha: float, n_min: float, screened: int) -> ExogenousSupport:
    """Find the support on which pooled OLS is consistent, if the data allow one.

    First :func:`augment_support` adds the causes that only the pooled regression sees
    (under hidden confounding a non-cause can have a significant pooled ``t`` too, so
    this is kept only if pooled OLS passes the test below).  Then the Hausman contrast
    (:func:`hausman`) of pooled OLS with the invariance GMM decides.  When it rejects,
    either a hidden confounder biases least squares (then the invariance GMM is the
    answer) or a child of Y sits in ``S`` (the walk can take a child for a weak cause it
    resembles).  A child is where least squares and the
    invariance fit disagree most (Lemma 1 keeps its invariance coefficient at 0, least
    squares loads on it), so the covariate with the largest per-coordinate contrast is
    removed when that contrast is at least ``max(z_{1 - alpha / 2}, sqrt(log n))``:
    :func:`augment_support` starts again from ``S``
    without the removed covariates, which are not offered again (the walk may have
    taken the child for the weak cause that the refill now finds, and what was added
    beside a child may only have absorbed its bias), and, if the J test accepts
    invariance on the result, the contrast is retested there.  Nothing is changed
    unless this ends at a support where the contrast does not reject: then ``S`` is
    returned as given, with the contrast on it.
    """
    S0 = np.sort(np.asarray(S, dtype=int))
    guard = critical_value(alpha, 1, n_min)
    S = augment_support(gmm, mom, S0, candidates, alpha=alpha, n_min=n_min,
                        screened=screened)[0]
    dropped = set()
    while True:
        exo = hausman(gmm.fit(S), pooled_ols(mom, S)[0])
        if exo[2] >= alpha:
            return ExogenousSupport(support=S, removed=tuple(np.setdiff1d(S0, S)),
                                    added=tuple(np.setdiff1d(S, S0)), exogeneity=exo)
        z = _contrasts(gmm, mom, S)
        k = int(np.argmax(z)) if len(S) else -1
        if k < 0 or not np.isfinite(z[k]) or z[k] < guard:
            break
        dropped.add(int(S[k]))
        pool = np.array([j for j in candidates if j not in dropped], dtype=int)
        T = augment_support(gmm, mom, np.setdiff1d(S0, list(dropped)), pool, alpha=alpha,
                            n_min=n_min, screened=screened)[0]
        if gmm.fit(T).pvalue < alpha:
            break
        S = T
    return ExogenousSupport(support=S0, removed=(), added=(),
                            exogeneity=hausman(gmm.fit(S0), pooled_ols(mom, S0)[0]))


@dataclass(frozen=True, slots=True, eq=False)
class Cumulant:
    """The non-Gaussian part of the score covariances on some covariates: ``Var_e(Z r)``
    from the rows minus :func:`gaussian_score_cov`, for ``Z`` the covariates ``cols``;
    ``block`` has shape (E, q, q).  Held fixed while ``b`` moves (it changes slowly)."""

    cols: np.ndarray
    block: FloatArray

    @classmethod
    def zero(cls, n_envs: int) -> Cumulant:
        return cls(np.zeros(0, dtype=int), np.zeros((n_envs, 0, 0)))

    def on(self, cols: np.ndarray) -> FloatArray:
        """The block for ``cols`` (zero for covariates it was not estimated on)."""
        where = {int(j): k for k, j in enumerate(self.cols)}
        pos = np.array([where.get(int(j), -1) for j in cols], dtype=int)
        out = np.zeros((self.block.shape[0], len(cols), len(cols)))
        known = np.flatnonzero(pos >= 0)
        out[np.ix_(np.arange(len(out)), known, known)] = self.block[
            np.ix_(np.arange(len(out)), pos[known], pos[known])]
        return out

    def scaled(self, unit: FloatArray) -> Cumulant:
        """Multiplied entrywise by ``unit[cols, cols]`` (a change of scale)."""
        return Cumulant(self.cols, self.block * unit[np.ix_(self.cols, self.cols)])


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class SelectionReport:
    """How the default estimator (``refit="auto"``) chose its support and coefficients.

    Attributes
    ----------
    route : {"invariance", "negdro", "not identified"}
        ``"invariance"``: the environment differences determine every coefficient and
        the support was chosen by J tests, so the coefficients come from
        ``estimator``.  ``"negdro"``: Algorithm 3's support and its Phi_mu fit (the
        paper), because ``reason`` (e.g. limited interventions, where Condition 4 on the
        data holds).  ``"not identified"``: the environments do not determine the
        coefficients of ``undetermined`` and Condition 4 fails on the data; Algorithm
        3's fit is reported without a claim.
    reason : str
        Why the route was taken, in words.
    estimator : {"ols", "ils", "gmm", "negdro"}
        Pooled OLS on the support (when the exogeneity test does not reject, or where the
        differences do not determine the coefficients and the invariance conditions
        accept OLS), least squares constrained by the invariance conditions where they
        determine the coefficients (:func:`invariant_ls`: OLS is not invariant there, as
        with hidden confounding), the invariance GMM, or NegDRO's final stage.
    walk : tuple of (size, J, df, pvalue)
        The J test along the nested supports.
    pruned : tuple of str
        Covariates removed by the t-statistic pruning.
    critical_t : float
        The pruning critical value.
    added : tuple of str
        Covariates added afterwards by :func:`augment_support` (pooled t statistic,
        guarded by the invariance fit).
    removed : tuple of str
        Covariates removed by :func:`exogenous_support` (pooled least squares and the
        invariance fit disagree on them most: a child of Y).
    J, df, pvalue : float, int, float
        Hansen's J test (continuously updated) of invariance on the reported support.
    rejected : bool
        The J test rejects invariance on the reported support (then no nested support
        from the BIC choice on passed it; reported with a warning).
    identified : bool
        False when the route is ``"not identified"``.
    undetermined : tuple of str
        Covariates whose coefficients the environment differences do not determine
        (their share in the directions the rank test finds undetermined is at least
        0.1), least determined first.
    exogeneity : tuple of (H, df, pvalue)
        Hausman contrast of pooled OLS against the invariance GMM on the support
        (:func:`hausman`); OLS is reported when it does not reject.
    worst_se : float
        Standardised standard error along the least identified direction of the
        selected support's invariance fit; the invariance route needs it at most
        ``gate_se``.
    gate_se : float
    rank_test : tuple of (stat, df, pvalue)
        The rank test of the invariance conditions on every covariate
        (:func:`negdro_stats.estimation.route.rank_test`): the smallest normalised information; a
        p-value above ``alpha`` means some direction is not determined.
    instruments : tuple of str
        The covariates whose residual moments are required to be invariant.
    cumulant : Cumulant
        The non-Gaussian part of the score covariances on the instruments, at the
        chosen estimate (original scale; empty without rows).  The bootstrap reuses it.
    misfit : ndarray (E, p) or None
        ``g_e(b) - mean_f g_f(b)`` at the GMM estimate on the selected support (original
        scale): the sample's departure from exact invariance.  The bootstrap subtracts it
        from every replicate's moment conditions (recentring, Hall and Horowitz 1996), so
        that the selected model holds exactly in the bootstrap world, as the true one
        does in the real world; without it the J test rejects the true support in most
        replicates.
    fixed_test : tuple of (J, df, pvalue, level)
        Where the environment differences do not determine the coefficients: the
        invariance test at the reported pooled OLS fit itself (a fixed ``b``), which
        accepted it at ``level`` among the supports tried, the one with the smallest
        pooled risk (:func:`negdro_stats.estimation.route._invariant_ols`; then ``J``, ``df``,
        ``pvalue`` are this test's).  NaN when that path was not taken.
    stand_ins : tuple of (str, str)
        Pairs ``(selected, stand-in)`` of near copies (pooled cosine at least 0.95)
        where the J test accepts the support with the stand-in too: the data barely tell
        which of the two is the cause (:func:`negdro_stats.estimation.route._substitutes`; the
        reported one has the smaller pooled risk).
    """

    route: str
    reason: str
    estimator: str
    walk: tuple
    pruned: tuple
    critical_t: float
    added: tuple
    removed: tuple
    J: float
    df: int
    pvalue: float
    exogeneity: tuple
    worst_se: float
    gate_se: float
    instruments: tuple
    cumulant: Cumulant
    misfit: FloatArray | None = None
    rejected: bool = False
    rank_test: tuple = (np.nan, 0, np.nan)
    identified: bool = True
    undetermined: tuple = ()
    fixed_test: tuple = (np.nan, 0, np.nan, np.nan)
    stand_ins: tuple = ()

    @property
    def assumes_condition_4(self) -> bool:
        """Identified only under an assumption the data cannot check: the environments
        leave ``undetermined`` undetermined, and the reported fit is the invariant one of
        least pooled risk, which is ``beta*`` when every child of the outcome is
        intervened on (Condition 4, Theorem 6; Condition 6 with hidden confounding).  A
        child of ``Y`` that no environment shifts makes other fits invariant too, and
        data cannot tell it from a parent that no environment shifts."""
        return self.identified and bool(self.undetermined)

    @property
    def exact(self) -> bool:
        """The covariates give the outcome exactly
        (:func:`negdro_stats.estimation.route.exact_fit`): pooled OLS reported, nothing
        tested."""
        return self.route == "invariance" and not self.walk

    def __repr__(self) -> str:
        """The route and its evidence in a few lines (the arrays stay attributes)."""
        lines = [f"<SelectionReport: route={self.route!r}, estimator={self.estimator!r}",
                 f"  reason: {self.reason}"]
        lines.append(f"  J = {self.J:.4g}, df = {self.df}, p = {self.pvalue:.3g}; "
                     f"worst standardised s.e. {self.worst_se:.3g} (gate {self.gate_se:g})")
        if self.undetermined:
            lines.append(f"  not determined: {listed(self.undetermined, 10)}")
        if self.route == "invariance":
            lines += [f"  {label}: {', '.join(map(str, names))}" for label, names in
                      (("pruned", self.pruned), ("added", self.added),
                       ("removed", self.removed)) if names]
        lines.append(f"  walk: {len(self.walk)} supports tried; instruments: "
                     f"{len(self.instruments)}>")
        return "\n".join(lines)
