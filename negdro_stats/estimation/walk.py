"""The support walk on the invariance GMM (:mod:`.gmm`): which covariates are in the
model.

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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg

from .._stats import chi2_isf, chi2_sf, norm_isf
from .._typing import FloatArray
from ..data.moments import block
from .gmm import GATE_SE, N_POPULATION, GMMFit, InvarianceGMM, inv_psd

__all__ = ["Selection", "select_support", "augment_support", "exogenous_support",
           "ExogenousSupport", "hausman", "pooled_ols", "pooled_t", "critical_value",
           "invariant_ls", "ConstrainedLS", "null_count"]


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
    G = np.tensordot(n, block(mom.Sigma, S, S), axes=1)
    c = n @ mom.sxy[:, S]
    b = linalg.solve(G, c, assume_a="pos")
    rss = float(n @ mom.syy - 2.0 * b @ c + b @ G @ b)
    sigma2 = max(rss, 0.0) / max(n.sum() - len(S), 1.0)
    return b, sigma2 * inv_psd(G)

def null_count(vals: FloatArray, df: int, alpha: float, p: int | None = None) -> int:
    """How many directions the invariance conditions leave undetermined, from ``vals``,
    the ascending generalised eigenvalues of their information against the second
    moments over the risk (``route.rank_test``): the largest ``k`` whose ``k``
    smallest sum to at most the ``1 - alpha`` quantile of ``chi2(k (df - p + k))``
    (Cragg and Donald 1997), ``p = len(vals)`` unless given (``vals`` the smallest
    only: the count among them); 0 when every direction is determined."""
    p = len(vals) if p is None else p
    for k in range(len(vals), 0, -1):
        if vals[:k].sum() <= chi2_isf(alpha, k * max(df - p + k, 1)):
            return k
    return 0

@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class ConstrainedLS:
    """:func:`invariant_ls`'s fit on a support: coefficients ``b``, the number of
    ``determined`` directions, the standard errors ``se`` that the selection's t tests
    use, and the parts of the reported covariance: ``b = P b_gmm + (I - P) b_ols`` with
    the ``projector`` ``P = V_d V_d^T G / R`` onto the determined directions, and
    ``cov_determined`` ``= V_d diag(1 / vals_d) V_d^T``, the GMM's covariance along
    them (:func:`negdro_stats.inference.sandwich.refit_cov` adds ``(I - P) C_ols (I -
    P)^T``, ``C_ols`` White's sandwich of pooled OLS)."""

    b: FloatArray
    determined: int
    se: FloatArray
    projector: FloatArray
    cov_determined: FloatArray


def invariant_ls(gmm: InvarianceGMM, S: np.ndarray, mom, *, alpha: float,
                 fit: GMMFit | None = None) -> ConstrainedLS:
    """Pooled least squares constrained by the invariance conditions (M) where they
    determine the coefficients: ``b = argmin R_pool(b)`` subject to the GMM estimate
    in the directions it determines, on ``S``; ``mom`` the pooled moments.  The GMM is
    ``gmm``'s continuously updated fit on ``S`` (``fit`` where given; the two-step fit on
    every instrument had a many-moment bias towards OLS that kept a child of Y, random
    half-shifted design p = 30, n = 2,000, seed 11) if every instrument informs ``b_S``;
    else, on the instruments that do (:meth:`InvarianceGMM.relevant`),
    the GMM with the weight at ``gmm``'s reference fit and then again with the weight
    at the constrained fit so found (the efficient weight where that is ``beta*``; at a
    reference that is pooled OLS, biased by confounding, the residual's variance and
    with it the standard errors are too small: issue 40's design at p = 10, s.e. 0.035
    for a spread of 0.041).  (The continuously updated fit on those few instruments
    drifts along the directions they leave open, where a larger residual shrinks the
    weight: issue 40's design at p = 30, seed 17, a noise covariate at -38, the
    information gone, error 0.69.)

    With ``G`` the pooled second moments of ``X_S`` and ``V`` the generalised
    eigenvectors of the GMM's information against ``M = G / R_pool(b_ols)``
    (``V^T M V = I``), the criterion and the constraints separate along ``V``:

        b = b_ols + V_d V_d^T M (b_gmm - b_ols) = P b_gmm + (I - P) b_ols,

    ``V_d`` the ``r`` determined directions (:func:`null_count` at level ``alpha`` on the
    informed instruments' equations): pooled OLS along the directions the environment
    differences do not determine, GMM along the others.  On population moments, the
    moment-invariant set ``{b: E_e[X (Y - X^T b)] equal for all e}`` holds ``beta*``
    (Lemma 1) and lies inside the risk-invariant set, on which ``beta*`` has the smallest
    pooled risk when Condition 4 (Theorem 6) or 6 (Theorem 12, hidden confounding)
    holds: the constrained least squares is then ``beta*`` exactly -- the global answer
    that Algorithm 3, a descent on the non-convex objective (9), need not reach.  ``se``
    from ``V_d diag(1 / vals_d) V_d^T + V_n V_n^T / N`` (GMM along the determined
    directions, homoskedastic OLS along the others; ``N`` the rows): the selection's t
    statistics.  The reported covariance is :class:`ConstrainedLS`'s.
    """
    S = np.asarray(S, dtype=int)
    b_ols, cov_ols = pooled_ols(mom, S)
    none = np.zeros((len(S), len(S)))
    ols = ConstrainedLS(b=b_ols, determined=0, se=np.sqrt(np.diag(cov_ols)),
                        projector=none, cov_determined=none)
    informed = gmm.relevant(S, alpha)
    if not len(S) or informed is None:          # (no instrument's first stage varies)
        return ols
    n = np.where(np.isfinite(mom.n), mom.n, N_POPULATION)
    G = np.tensordot(n / n.sum(), block(mom.Sigma, S, S), axes=1)
    sxy, syy = (n / n.sum()) @ mom.sxy[:, S], float((n / n.sum()) @ mom.syy)
    risk = max(syy - 2.0 * b_ols @ sxy + b_ols @ G @ b_ols, 1e-12 * max(syy, 1e-300))

    def constrained(fit: GMMFit) -> ConstrainedLS:
        vals, V = linalg.eigh((fit.info + fit.info.T) / 2.0, G / risk)
        k = null_count(vals, informed.df_base, alpha)
        if k == len(S):
            return ols
        Vd, Vn = V[:, k:], V[:, :k]
        cov_d = (Vd / np.maximum(vals[k:], 1e-300)) @ Vd.T
        P = Vd @ (Vd.T @ (G / risk))
        se = np.sqrt(np.diag(cov_d) + (Vn**2).sum(axis=1) / n.sum())
        b = b_ols + Vd @ (Vd.T @ (G / risk) @ (fit.b - b_ols))       # = P b_gmm + (I - P) b_ols
        return ConstrainedLS(b=b, determined=len(S) - k, se=se,
                             projector=P, cov_determined=cov_d)

    if informed is gmm:
        return constrained(gmm.fit_cue(S) if fit is None else fit)
    first = np.zeros(gmm.p)
    first[S] = constrained(informed.fit(S)).b
    return constrained(informed.fit_at(S, first))

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
