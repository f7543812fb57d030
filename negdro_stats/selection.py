"""Consistent support selection by over-identified gradient invariance (Lemma 1).

Lemma 1 makes the residual moment ``E_e[X (Y - beta*^T X)] = -G^T h`` the same in every
environment, for *all* covariates -- children of ``Y`` included, with or without hidden
confounding (additive interventions, eq. (12)).  For a candidate support ``S`` the
moment conditions

    g_e(b) - m = 0,   g_e(b) = E_e[Z (Y - b_S^T X_S)],   e = 1..|E|,             (M)

with a common unknown ``m`` and ``Z`` a set of ``q`` instrument covariates, are
``|E| q`` equations in ``|S| + q`` unknowns: over-identified whenever
``(|E| - 1) q > |S|``.  Two-step GMM with the weight ``W_e = n_e V_e^{-1}``,
``V_e = Var_e(Z r)`` (the score covariance at a pilot estimate), gives

- the estimate ``b_S`` with covariance ``P_SS^{-1}`` (``P`` below), consistent at the
  n^{-1/2} rate on any ``S`` that contains the causes and is identified (the stacked
  environment differences of ``Sigma_e[Z, S]`` have full column rank -- weaker than
  Condition 1b on ``S``, since every instrument row counts);
- Hansen's J statistic, ``chi^2((|E| - 1) q - |S|)`` under (M): a test of invariance on
  ``S`` (ICP's acceptance test, at polynomial cost).

Profiling ``m`` out leaves a quadratic in ``b``: with ``M_e = Sigma_e[Z, :]``,
``u_e = sxy_e[Z]`` and ``Wbar = sum_e W_e``,

    P = sum_e M_e^T W_e M_e - (sum_e W_e M_e)^T Wbar^{-1} (sum_e W_e M_e),
    c = sum_e M_e^T W_e u_e - (sum_e W_e M_e)^T Wbar^{-1} (sum_e W_e u_e),

so ``b_S = P_SS^{-1} c_S``: one ``O(|E| q p^2)`` precomputation, then a ``|S| x |S|``
solve per candidate support.

Selection (:func:`select_support`) walks the nested supports that NegDRO's first stage
orders (largest standardised coefficient first), takes the first that the J test
accepts at level ``alpha``, then prunes it backwards by t statistics with the critical
value ``max(z_{1 - alpha / (2 |S|)}, sqrt(log n))``: the Bonferroni part bounds the
probability of keeping any non-cause by ``alpha`` at every ``n``, and the
``sqrt(log n)`` (BIC) part makes that probability vanish as ``n`` grows while any fixed
non-zero effect, whose t statistic grows like ``sqrt(n)``, is kept -- consistency in
both directions.  The J test keeps the fixed level ``alpha``: rejecting the true
support only moves the walk to a superset, which the pruning then cuts back.

Population moments (``n = inf``) are treated as a sample of ``N_POPULATION`` rows:
sampling noise is then far below rounding error, so the tests are exact up to it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg, stats

from ._typing import FloatArray

__all__ = ["InvarianceGMM", "GMMFit", "Selection", "SelectionReport", "select_support",
           "gaussian_score_cov", "N_POPULATION"]

N_POPULATION = 1e12     # rows assumed for population moments: noise far below rounding


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class GMMFit:
    """Two-step GMM fit of the invariance conditions (M) on one support.

    ``b`` and ``cov`` are on the scale of the moments given to :class:`InvarianceGMM`;
    ``J`` is Hansen's statistic with ``df`` degrees of freedom and ``pvalue``;
    ``identified`` is False when ``P_SS`` is singular (then ``b`` is a minimum-norm
    solution and ``cov`` is infinite).
    """

    support: np.ndarray
    b: FloatArray
    cov: FloatArray
    J: float
    df: int
    pvalue: float
    identified: bool

    @property
    def se(self) -> FloatArray:
        """Standard errors of ``b``."""
        return np.sqrt(np.diag(self.cov))

    @property
    def worst_se(self) -> float:
        """Standard error along the least identified direction: ``lambda_min(P_SS)^-1/2``."""
        if not len(self.b):
            return 0.0
        return float(np.sqrt(np.linalg.eigvalsh(self.cov)[-1])) if self.identified else np.inf


class InvarianceGMM:
    """The profiled GMM criterion of (M) for every support at once (module docstring).

    Parameters
    ----------
    Sigma, sxy : arrays (E, p, p), (E, p)
        Per-environment moments.
    V : array (E, p, p)
        Score covariances ``Var_e(X r)`` at a pilot estimate (same scale as the moments).
    n : array (E,)
        Rows per environment (``inf`` for population moments).
    instruments : int array
        The covariates ``Z`` whose residual moments are required to be invariant.
    """

    def __init__(self, Sigma: FloatArray, sxy: FloatArray, V: FloatArray, n: FloatArray,
                 instruments: np.ndarray) -> None:
        E = Sigma.shape[0]
        R = np.asarray(instruments)
        q = len(R)
        n = np.where(np.isfinite(n), n, N_POPULATION)
        self.n, self.R = n, R
        self.M = Sigma[:, R, :]                                   # (E, q, p)
        self.u = sxy[:, R]                                        # (E, q)
        VR = V[:, R][:, :, R]
        ridge = 1e-10 * np.einsum("ejj->e", VR)[:, None, None] / q * np.eye(q)
        self.W = np.stack([n[e] * linalg.pinvh(VR[e] + ridge[e]) for e in range(E)])
        WM = self.W @ self.M                                      # (E, q, p)
        Wu = np.einsum("eij,ej->ei", self.W, self.u)
        Wbar = self.W.sum(axis=0)
        SWM, SWu = WM.sum(axis=0), Wu.sum(axis=0)
        proj = linalg.solve(Wbar, np.column_stack([SWM, SWu]), assume_a="pos")
        self.P = np.einsum("eqi,eqj->ij", self.M, WM) - SWM.T @ proj[:, :-1]
        self.P = (self.P + self.P.T) / 2.0
        self.c = np.einsum("eqi,eq->i", self.M, Wu) - SWM.T @ proj[:, -1]
        self.df_base = (E - 1) * q
        self._Wbar = Wbar

    def criterion(self, S: np.ndarray, b: FloatArray) -> float:
        """``J(b) = min_m sum_e n_e (g_e(b) - m)^T V_e^{-1} (g_e(b) - m)``, from residuals."""
        r = self.u - self.M[:, :, S] @ b                          # (E, q): g_e(b)
        Wr = np.einsum("eij,ej->ei", self.W, r)
        m = linalg.solve(self._Wbar, Wr.sum(axis=0), assume_a="pos")
        dev = r - m
        return float(np.einsum("ei,ei->", dev, np.einsum("eij,ej->ei", self.W, dev)))

    def fit(self, S: np.ndarray) -> GMMFit:
        """GMM estimate, covariance and J test on the support ``S`` (integer indices)."""
        S = np.asarray(S, dtype=int)
        k = len(S)
        df = self.df_base - k
        P = self.P[np.ix_(S, S)]
        identified = True
        if k:
            vals, vecs = np.linalg.eigh(P)
            identified = bool(vals[0] > 1e-12 * max(vals[-1], 1e-300))
            inv_vals = np.where(vals > 1e-12 * max(vals[-1], 1e-300), 1.0 / np.maximum(
                vals, 1e-300), 0.0)
            b = vecs @ (inv_vals * (vecs.T @ self.c[S]))
            cov = (vecs * inv_vals) @ vecs.T if identified else np.full((k, k), np.inf)
        else:
            b, cov = np.zeros(0), np.zeros((0, 0))
        J = max(self.criterion(S, b), 0.0)
        pvalue = float(stats.chi2.sf(J, df)) if df > 0 else np.nan
        return GMMFit(support=S, b=b, cov=cov, J=J, df=df, pvalue=pvalue,
                      identified=identified)

    def exogeneity_test(self, fit: GMMFit) -> tuple[float, int, float]:
        """Difference-in-Hansen (C) test of ``E_e[X_S r] = 0`` on top of (M) at ``fit``.

        Restricting the common moment ``m`` to 0 on the rows of ``S`` among the
        instruments adds ``|S cap Z|`` conditions; ``C = J_restricted - J`` is
        ``chi^2(|S cap Z|)`` when the covariates in ``S`` are uncorrelated with the
        structural error (no hidden confounding of them, no child of Y among them).
        Returns ``(C, df, pvalue)``.
        """
        S = fit.support
        E, q, _ = self.M.shape
        free_m = ~np.isin(self.R, S)
        df = int(q - free_m.sum())
        if df == 0:
            return 0.0, 0, 1.0
        blocks, targets = [], []
        for e in range(E):
            L = linalg.cholesky(self.W[e], lower=True)            # W_e = L L^T
            A = np.column_stack([self.M[e][:, S], np.eye(q)[:, free_m]])
            blocks.append(L.T @ A)
            targets.append(L.T @ self.u[e])
        theta = np.linalg.lstsq(np.vstack(blocks), np.concatenate(targets), rcond=None)[0]
        resid = np.concatenate(targets) - np.vstack(blocks) @ theta
        C = max(float(resid @ resid) - fit.J, 0.0)
        return C, df, float(stats.chi2.sf(C, df))


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Selection:
    """Outcome of :func:`select_support` (indices refer to the moments given to it).

    Attributes
    ----------
    fit : GMMFit or None
        The GMM fit on the selected support; None when no support in the walk passed the
        J test (invariance rejected on every nested support).
    walk : tuple of (size, J, df, pvalue)
        The J test along the nested supports, in walk order.
    pruned : tuple of int
        Covariates removed by the t-statistic pruning, in order.
    critical_t : float
        The pruning critical value used last.
    best : GMMFit or None
        The fit with the largest J p-value along the walk (the selected one if any).
    """

    fit: GMMFit | None
    walk: tuple
    pruned: tuple
    critical_t: float
    best: GMMFit | None


def select_support(gmm: InvarianceGMM, order: np.ndarray, *, fixed: np.ndarray,
                   alpha: float, n_min: float) -> Selection:
    """Walk the nested supports ``fixed + order[:k]``, k = 0, 1, ...; J test; prune.

    See the module docstring for the rule and its rates.
    """
    fixed = np.asarray(fixed, dtype=int)
    n_eff = N_POPULATION if not np.isfinite(n_min) else n_min
    walk, fit, best = [], None, None
    for k in range(len(order) + 1):
        S = np.concatenate([fixed, order[:k]]).astype(int)
        if gmm.df_base - len(S) <= 0:
            break
        trial = gmm.fit(S)
        walk.append((len(S), trial.J, trial.df, trial.pvalue))
        if trial.identified and (best is None or trial.pvalue > best.pvalue):
            best = trial
        if trial.identified and trial.pvalue >= alpha:
            fit = trial
            break
    pruned, crit = [], np.nan
    while fit is not None:
        free = np.flatnonzero(~np.isin(fit.support, fixed))
        if not len(free):
            break
        crit = max(stats.norm.isf(alpha / (2 * len(free))), np.sqrt(np.log(n_eff)))
        t = np.abs(fit.b[free]) / fit.se[free]
        j = free[np.argmin(t)]
        if t.min() >= crit:
            break
        trial = gmm.fit(np.delete(fit.support, j))
        if not (trial.identified and trial.pvalue >= alpha):
            break
        pruned.append(int(fit.support[j]))
        fit = trial
    return Selection(fit=fit, walk=tuple(walk), pruned=tuple(pruned), critical_t=float(crit),
                     best=fit if fit is not None else best)


def gaussian_score_cov(Sigma: FloatArray, sxy: FloatArray, syy: FloatArray,
                       b: FloatArray) -> FloatArray:
    """``Var_e(X r)`` at ``b`` when only moments are known: ``Sigma_e R_e - g_e g_e^T``.

    ``Var_e(X r) = E_e[X X^T r^2] - g_e g_e^T`` with ``g_e = E_e[X r]``; the first term
    is ``Sigma_e R_e(b)`` when the residual ``r = Y - b^T X`` is independent of ``X``.
    Positive semi-definite by Cauchy-Schwarz.  Used for population moments (where any
    positive definite weight gives the same exact answer) and for moments accumulated
    without their rows (fourth moments unknown).
    """
    risks = syy - 2.0 * (sxy @ b) + (Sigma @ b) @ b
    g = sxy - Sigma @ b
    return Sigma * risks[:, None, None] - np.einsum("ei,ej->eij", g, g)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class SelectionReport:
    """How the default estimator (``refit="auto"``) chose its support and coefficients.

    Attributes
    ----------
    route : {"invariance", "negdro"}
        ``"invariance"``: the support passed the J test and is identified by the
        environment differences, so the coefficients come from ``estimator``.
        ``"negdro"``: Algorithm 3's support and its Phi_mu fit (the paper), because
        ``reason``.
    reason : str
        Why the route was taken, in words.
    estimator : {"ols", "gmm", "negdro"}
        Pooled OLS on the support (when the exogeneity test does not reject), the
        invariance GMM, or NegDRO's final stage.
    walk : tuple of (size, J, df, pvalue)
        The J test along the nested supports.
    pruned : tuple of str
        Covariates removed by the t-statistic pruning.
    critical_t : float
        The pruning critical value.
    J, df, pvalue : float, int, float
        Hansen's J test of invariance on the reported support (NaN if none passed).
    exogeneity : tuple of (C, df, pvalue)
        Difference-in-Hansen test of ``E[X_S eps] = 0`` that chose OLS over GMM.
    worst_se : float
        Standardised standard error along the least identified direction of the union
        of this support and Algorithm 3's; the invariance route needs it below
        ``gate_se``.
    gate_se : float
    instruments : tuple of str
        The covariates whose residual moments are required to be invariant.
    score_cov : ndarray (E, p, p)
        The score covariances ``Var_e(X r)`` used in the weights (original scale); the
        bootstrap reuses them.
    misfit : ndarray (E, p) or None
        ``g_e(b) - mean_f g_f(b)`` at the GMM estimate on the selected support (original
        scale): the sample's departure from exact invariance.  The bootstrap subtracts it
        from every replicate's moment conditions (recentring, Hall and Horowitz 1996), so
        that the selected model holds exactly in the bootstrap world, as the true one
        does in the real world; without it the J test rejects the true support in most
        replicates.
    """

    route: str
    reason: str
    estimator: str
    walk: tuple
    pruned: tuple
    critical_t: float
    J: float
    df: int
    pvalue: float
    exogeneity: tuple
    worst_se: float
    gate_se: float
    instruments: tuple
    score_cov: FloatArray
    misfit: FloatArray | None = None
