"""Pooled least squares beside the invariance fit: which covariates the pooled
regression adds or removes, and whether the chosen support is exogenous.

The differences across environments are blind to a cause whose effect is small against
the heterogeneity; pooled least squares is not, and where nothing is confounded it is the
efficient estimator.  :func:`exogenous_support` therefore adds such causes by their pooled
``t`` (:func:`augment_support`, guarded by the invariance fit, which keeps a child of Y
at coefficient 0 while least squares loads on it), removes the covariate where pooled OLS
and the invariance fit disagree most when a Hausman contrast (:func:`hausman`) rejects,
and keeps these changes only where pooled OLS ends up passing that contrast.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg

from ..._stats import chi2_sf, norm_isf
from ..._typing import FloatArray
from ...data.moments import block
from ..cue import inv_psd
from ..gmm import N_POPULATION, InvarianceGMM

__all__ = ["pooled_ols", "pooled_t", "critical_value", "augment_support", "hausman",
           "ExogenousSupport", "exogenous_support"]


def pooled_ols(mom, S: np.ndarray) -> tuple[FloatArray, FloatArray]:
    """Pooled least squares of ``Y`` on ``X_S`` from the moments, and its classical
    covariance ``sigma^2 (sum_e n_e Sigma_e[S, S])^{-1}`` (population moments count as
    ``N_POPULATION`` rows per environment)."""
    S = np.asarray(S, dtype=int)
    n = np.where(np.isfinite(mom.n), mom.n, N_POPULATION)
    if not len(S):
        return np.zeros(0), np.zeros((0, 0))
    G = np.tensordot(n, block(mom.Sigma, S, S), axes=1)
    c = n @ mom.sxy[:, S]
    b = linalg.solve(G, c, assume_a="pos")
    rss = float(n @ mom.syy - 2.0 * b @ c + b @ G @ b)
    sigma2 = max(rss, 0.0) / max(n.sum() - len(S), 1.0)
    return b, sigma2 * inv_psd(G)


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
      squares on the child's by chance -- on exact moments, a CUE coefficient of
      -24,743 next to agreement on the child's), and its own
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

def hausman(fit, b_ols: FloatArray, along: FloatArray | None = None
            ) -> tuple[float, int, float]:
    """Hausman-type contrast of pooled OLS against the invariance GMM on the support:
    ``H = (b_gmm - b_ols)^T P (b_gmm - b_ols)`` with ``P`` the GMM information, referred to
    chi-square(|S|).  Without confounding (and no child of Y in the support) OLS is
    consistent and efficient, ``Var(b_gmm - b_ols) = Var(b_gmm) - Var(b_ols) <= P^{-1}``,
    so the test is conservative; with it the contrast is O(1) and ``H`` grows like n.
    (The difference-in-Hansen test of ``E[X_S r] = 0`` rejected 13% of true nulls at 5%
    with 150 moment conditions; this contrast uses only the |S| coefficients.)
    ``along`` (|S|, |S|): a projector onto the directions contrasted, ``Q d`` with the
    covariance ``Q P^+ Q^T`` (its pseudo-inverse; df its rank); where ``P`` is singular
    only these directions need it."""
    d = fit.b - b_ols
    k = len(d)
    if k == 0:
        return 0.0, 0, 1.0
    if along is None:
        if not fit.identified:
            return np.inf, k, 0.0
        H = float(d @ fit.info @ d)
        return H, k, chi2_sf(H, k)
    cov = along @ np.linalg.pinv((fit.info + fit.info.T) / 2.0, hermitian=True) @ along.T
    vals, vecs = np.linalg.eigh((cov + cov.T) / 2.0)
    kept = vals > 1e-10 * max(vals[-1], 1e-300)
    if not kept.any():
        return 0.0, 0, 1.0
    z = vecs[:, kept].T @ (along @ d)
    H = float(z @ (z / vals[kept]))
    return H, int(kept.sum()), chi2_sf(H, int(kept.sum()))

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
