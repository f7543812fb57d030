"""The walk: the pilot, the instruments, the nested supports that the pilot orders
scored by J tests (iterated GMM), near copies swapped and the exogeneity of the chosen
support checked.

:func:`select_support` orders the candidates by the ``|t|`` of the GMM fit on all of
them, computes the J statistic of every nested support, chooses by Andrews' (1999)
GMM-BIC ``J_k + k log n`` (consistent: the smallest support containing the causes wins
with probability tending to one), grows the choice until the J test no longer rejects at
level ``alpha`` (else says invariance is rejected), and prunes it backwards by t
statistics with the critical value ``max(z_{1 - alpha / (2 |S|)}, sqrt(log n))``: the
Bonferroni part bounds the probability of keeping any non-cause by ``alpha`` at every
``n``, and the ``sqrt(log n)`` (BIC) part makes that probability vanish as ``n`` grows
while any fixed non-zero effect, whose t statistic grows like ``sqrt(n)``, is kept.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from ..._stats import chi2_isf, norm_isf
from ..._typing import FloatArray
from ...data import risk_variances
from ...data.dependence import LongRun
from ...data.fourth import RESIDUAL, gaussian_score_cov
from ...data.moments import Moments
from ...identification import RiskInvarianceTest, risk_invariance_test
from ..gmm import GATE_SE, N_POPULATION, Cumulant, GMMFit, InvarianceGMM
from ..objective import env_risks
from .exogeneity import ExogenousSupport, critical_value, exogenous_support, pooled_ols

__all__ = ["Selection", "select_support", "instrument_budget", "most_heterogeneous", "Walked",
           "walk", "refine", "embed"]

SCORE_ITERATIONS = 3     # walks with a common weight (again while the J test rejects)
SUBSTITUTES = 2          # near-collinear swaps tried per member of the walk's support,
SUBSTITUTE_COS = 0.95    # ... with at least this pooled cosine (a near copy)


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
       degrees of freedom where the CUE J is 206) -- among the supports that improve on
       ``k_bic`` significantly: ``J_bic - J_k >= chi2_{1 - alpha}(k - k_bic)`` with one
       weight for both (:meth:`InvarianceGMM.j_reference`: the distance test of the
       nested models; a weak cause whose omission makes J reject passes it), and that
       the data determine sharply (worst standardised s.e. at most ``GATE_SE``) --
       and only as far as ``order[:grow_to]`` (the route passes the covariates whose
       pilot ``|t|`` is significant: the pilot is consistent, so a cause that J sees
       is among them with probability tending to one).  Growth is for a weak cause just
       past ``k_bic``, not a guarantee against a J test that rejects the true support
       narrowly (p = 200 at n = 20,000 with 423 equations: p = 0.006 at the parents):
       unlimited, it walks on to 107 covariates that absorb noise, and pruning from
       there ends at one child of Y (error 2.8, reported as identified).  If no
       support passes, ``rejected`` is set and the BIC choice kept.
    4. Backward pruning of covariates off the order (e.g. a child of Y ahead of a
       weak parent) by the ``|t|`` of the continuously updated fit (:meth:`fit_cue`), with
       the critical value ``max(z_{1 - alpha / (2 |S|)}, sqrt(log n))``.  Standard errors
       are inflated by ``sqrt(max(1, J / df))``: where invariance fails (J well above its
       degrees of freedom), a misfit would otherwise make covariates look significant
       that only absorb it; under invariance ``J / df -> 1`` and nothing changes.
       Clear noise goes first by the two-step fit's ``|t|`` (below half the critical
       value; one CUE per removal costs 460 of 467 s at p = 200), then the CUE's; each
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


def instrument_budget(n_envs: int, n_min: float, p: int) -> int:
    """Instruments of the J tests: the largest ``q <= p`` with ``(|E| - 1) q^2 <= 2 n``
    (the estimated weights) and ``m = (|E| - 1) q <= 3 sqrt(n)`` moment conditions (the
    many-moment bias): 31 at n = 2,000 with five environments, 47 at n = 20,000 with ten,
    15 at n = 500 with five; all covariates for population moments."""
    n = N_POPULATION if not np.isfinite(n_min) else n_min
    k = max(n_envs - 1, 1)
    return int(min(p, max(1.0, min(np.sqrt(2.0 * n / k), 3.0 * np.sqrt(n) / k))))

def _pilot_order(pilot: GMMFit) -> tuple[FloatArray, np.ndarray]:
    """The pilot's ``|t|`` and the covariates by decreasing ``|t|``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t_pilot = np.nan_to_num(np.abs(pilot.b) / pilot.se, nan=0.0)
    return t_pilot, np.argsort(-t_pilot, kind="stable")

def _instruments(std: Moments, pilot: GMMFit, q: int, alpha: float) -> np.ndarray:
    """``q`` instruments (every covariate where ``q >= p``): the covariates that the
    ``pilot`` finds significant (``|t| >= cut``, in its order, at most half of ``q``),
    then those whose second moment varies most
    across environments (relative spread of ``E_e[X_j^2]``, which does not look at
    ``Y``).  Only significant ones: the pilot's next covariates are ranked by noise in
    the very residual moments that the J tests use, and choosing instruments for that
    noise inflates J (eq. (33) with p = 1,000 at n = 20,000: J = 492 on 343 degrees of
    freedom at beta* with the first half of the order, 327 on 358 with random ones)."""
    if q >= std.p:
        return np.arange(std.p)
    t_pilot, order = _pilot_order(pilot)
    cut = critical_value(alpha, std.p, float(std.n.min()))
    first = [int(j) for j in order[:(q + 1) // 2] if t_pilot[j] >= cut]
    others = [j for j in most_heterogeneous(std) if j not in set(first)]
    return np.sort(np.array(first + others[:q - len(first)], dtype=int))

def most_heterogeneous(std: Moments) -> np.ndarray:
    """The covariates by decreasing relative spread of ``E_e[X_j^2]`` across environments
    (a rule that does not look at ``Y``)."""
    second = np.einsum("ejj->ej", std.Sigma)
    return np.argsort(-(second.std(axis=0) / second.mean(axis=0)), kind="stable")

def _best_of(gmm: InvarianceGMM, walks: list[Selection], *, alpha: float,
             n_min: float) -> Selection:
    """The walks' choices compared under the last weight model (``gmm``): continuously
    updated fits, those the J test accepts first, among them the sharply determined ones
    (worst standardised s.e. at most ``GATE_SE``: a drifting CUE lowers J with huge
    coefficients, p = 200: J 281 on 405 degrees of freedom, s.e. 9.7), then the smallest
    GMM-BIC ``J + |S| log n`` (Andrews 1999).  A walk whose J tests share one weight, evaluated
    at one model, lets a child of Y absorb the sampling noise of the residual moments
    that this weight ignores (random design, p = 100, n = 20,000: adding one child cuts
    the two-step J from 348 to 207 on about 400 degrees of freedom, and the walk keeps
    it); the continuously updated J, whose weight moves with ``b``, does not reward it."""
    chosen = {}
    for walk in walks:
        if walk.fit is not None:
            chosen.setdefault(tuple(walk.fit.support), walk)
    if len(chosen) <= 1:
        return walks[-1]
    penalty = np.log(N_POPULATION if not np.isfinite(n_min) else n_min)
    fits = {S: walk.fit if walk is walks[-1] else gmm.fit_cue(np.asarray(S, dtype=int))
            for S, walk in chosen.items()}
    S = min(fits, key=lambda S: (not fits[S].pvalue >= alpha, not fits[S].worst_se <= GATE_SE,
                                 fits[S].J + penalty * len(S)))
    return replace(chosen[S], fit=fits[S], rejected=not fits[S].pvalue >= alpha)

def _substitutes(gmm: InvarianceGMM, pooled: Moments, S: np.ndarray, *, alpha: float
                 ) -> tuple[np.ndarray, tuple]:
    """The walk's support with each member swapped for a near substitute where that is
    better: the walk compares nested supports in the pilot's order, so between two nearly
    collinear covariates (a cause and a proxy of it, ``X6 = X1 + 0.05 u``) the order, set
    by noise, decides, and the J test barely tells them apart.  So for each ``j`` in
    ``S`` the ``SUBSTITUTES`` covariates outside it most collinear with ``j``, among
    those with a pooled cosine of at least ``SUBSTITUTE_COS``, are tried in its place,
    and a swap is kept where the J test (the common weight) accepts the new support at
    level ``alpha`` and its pooled OLS risk is smaller: among invariant supports the
    least pooled risk, as Theorem 6 orders them (a proxy's residual keeps ``beta_j (X_j -
    proxy)``: without the swap, a near copy reported in a parent's place gives errors of
    1-2 with no warning, 3 seeds of 3).
    Until no swap improves.  Only near copies: tried on any covariate, the swap puts
    children of ``Y``, whose pooled risk is lower, in place of three parents (random
    design p = 30, n = 2,000, seed 12: error 0.42 against 0.02), the common-weight J test
    accepting them.  Returns the support and the pairs ``(j, k)`` where ``k`` could
    still stand in for ``j``: the J test accepts the swap too (its pooled risk is
    larger, but by sampling noise or not, the data barely tell them apart; at s = 0.03 one
    seed of 10 keeps the copy)."""
    S = np.sort(np.asarray(S, dtype=int))
    G = np.tensordot(pooled.pooled_weights(), pooled.Sigma, axes=1)
    d = np.sqrt(np.diag(G))
    cos = np.abs(G / np.multiply.outer(d, d))

    def risk(T: np.ndarray) -> float:
        b = pooled_ols(pooled, T)[0]
        return float(pooled.pooled_weights() @ env_risks(embed(b, T, pooled.p), pooled.Sigma,
                                                          pooled.sxy, pooled.syy))

    best = risk(S)
    while True:                 # each swap lowers the risk strictly: no support comes back
        trial, standing = None, []
        for j in S:
            outside = np.setdiff1d(np.arange(pooled.p), S)
            near = outside[cos[j, outside] >= SUBSTITUTE_COS]
            for k in near[np.argsort(-cos[j, near], kind="stable")[:SUBSTITUTES]]:
                T = np.sort(np.append(S[S != j], k))
                if gmm.fit(T).pvalue >= alpha:
                    standing.append((int(j), int(k)))
                    if (r := risk(T)) < best:
                        best, trial = r, T
        if trial is None:
            return S, tuple(standing)          # the stand-ins of the support returned
        S = trial

def embed(b_S: FloatArray, S: np.ndarray, p: int) -> FloatArray:
    b = np.zeros(p)
    b[S] = b_S
    return b


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Walked:
    """What the walk found on the standardised moments ``std``, shared by the later
    stages: the pilot (``wide``, every covariate and every residual moment, and its fit
    ``pilot``), the ``instruments``, the cumulant term ``cumulant`` as the walk left it
    (re-estimated from the rows when ``refresh``), the last weight model ``gmm`` and the
    walk chosen, ``sel``.  ``pooled`` is ``std`` with the bootstrap's recentring.
    ``long_run``: for dependent rows (:class:`~negdro_stats.data.dependence.LongRun`,
    carried by the cumulant: a bootstrap replicate's is the sample's), the factor of the
    Gaussian form in every score covariance and the rows every test counts
    (:class:`~negdro_stats.estimation.gmm.Cumulant`); the equal-risk tests read it too
    (:meth:`risk_variances`).  None for independent rows."""

    std: Moments
    pooled: Moments
    recentre: FloatArray | None
    alpha: float
    n_min: float
    wide: InvarianceGMM
    pilot: GMMFit
    instruments: np.ndarray
    cumulant: Cumulant
    rows_cov: Callable[[FloatArray, np.ndarray], FloatArray] | None
    refresh: bool
    gmm: InvarianceGMM
    sel: Selection
    long_run: LongRun | None = None

    def at(self, fit: GMMFit) -> FloatArray:
        """A fit's coefficients on every covariate."""
        return embed(fit.b, fit.support, self.std.p)

    def instruments_within(self, q: int) -> np.ndarray:
        """``q`` instruments chosen by the walk's rule (:func:`_instruments`), for a
        test that needs fewer than the walk's."""
        return _instruments(self.std, self.pilot, q, self.alpha)

    def cumulant_at(self, b: FloatArray, cols: np.ndarray | None = None) -> Cumulant:
        """Rows minus Isserlis, on the instruments (or ``cols``)."""
        cols = self.instruments if cols is None else cols
        return _cumulant_at(self.std, self.rows_cov, b, cols, self.long_run)

    def rank_gmm(self, b: FloatArray) -> InvarianceGMM:
        """The invariance conditions on every covariate for the rank test at ``b``: the
        pilot's (:attr:`wide`, the Gaussian form of the score covariance), or, with
        dependent rows, with their long-run covariance at ``b`` (without it the test
        takes the noise of dependent rows for determined directions)."""
        if self.long_run is None or self.rows_cov is None:
            return self.wide
        every = np.arange(self.std.p)
        return InvarianceGMM(self.std, instruments=every, cumulant=self.cumulant_at(b, every),
                             b_ref=b, recentre=self.recentre)

    def risk_variances(self, mom: Moments, b: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Per environment the risk at ``b`` on ``mom`` and the variance of its estimate:
        :func:`~negdro_stats.data.risk_variances` (i.i.d. rows); where they are dependent
        (``long_run``), the long-run variance of ``r^2`` over the rows the test counts
        (:meth:`~negdro_stats.data.dependence.LongRun.rows`), from the rows, or in a
        bootstrap replicate the i.i.d. variance times the long-run share."""
        R, var = risk_variances(mom, b)
        if self.long_run is None:
            return R, var
        if self.rows_cov is not None:
            var = self.rows_cov(b, np.array([RESIDUAL]))[:, 0, 0] / mom.n
        else:
            var = var * self.long_run.share
        return R, var * self.long_run.wishart(1)

    def risk_test(self, mom: Moments, b: FloatArray) -> RiskInvarianceTest:
        """The equal-risk test at ``b`` on ``mom`` (:meth:`risk_variances`)."""
        return risk_invariance_test(*self.risk_variances(mom, b), mom)


def _cumulant_at(std: Moments, rows_cov: Callable, b: FloatArray, cols: np.ndarray,
                 long_run: LongRun | None) -> Cumulant:
    return Cumulant(cols, rows_cov(b, cols) - gaussian_score_cov(std, b, cols,
                                                                 long_run=long_run),
                    long_run)


def walk(std: Moments, alpha: float,
         rows_cov: Callable[[FloatArray, np.ndarray], FloatArray] | None,
         cumulant: Cumulant | None, recentre: FloatArray | None, *,
         long_run: LongRun | None = None) -> Walked:
    """The pilot, the instruments and the iterated walk of
    :func:`~negdro_stats.estimation.selection.select_by_invariance` (its docstring): the pilot
    orders the covariates by ``|t|``, the walk (each J test a two-step GMM of its own
    model) chooses a support, and it is rerun with one weight for every support at the
    choice, again while the J test rejects every support (``SCORE_ITERATIONS``); the walks'
    choices are then compared under the last weight (:func:`_best_of`).  ``long_run``:
    :attr:`Walked.long_run`, where no ``cumulant`` carries it."""
    pooled = std if recentre is None else replace(std, sxy=std.sxy - recentre, cov=None)
    p, E = std.p, std.n_envs
    every = np.arange(p)
    n_min = float(std.n.min())
    K = Cumulant.zero(E, long_run) if cumulant is None else cumulant
    # the pilot: every covariate, every residual moment (Lemma 1)
    wide = InvarianceGMM(std, instruments=every, cumulant=K, b_ref=np.zeros(p),
                         recentre=recentre)
    pilot = wide.fit(every)
    t_pilot, order = _pilot_order(pilot)
    q = instrument_budget(E, n_min, p)
    instruments = _instruments(std, pilot, q, alpha)
    grow_to = int((t_pilot >= norm_isf(alpha / 2)).sum())   # (select_support, 3.)

    def gmm_at(K: Cumulant, b_ref: FloatArray, own_weight: bool) -> InvarianceGMM:
        return InvarianceGMM(std, instruments=instruments, cumulant=K, b_ref=b_ref,
                             own_weight=own_weight, recentre=recentre)

    refresh = rows_cov is not None and cumulant is None
    if refresh:                                # one pass over the rows at the pilot
        K = _cumulant_at(std, rows_cov, pilot.b, instruments, long_run)
    gmm = gmm_at(K, pilot.b, True)
    sel = select_support(gmm, order, alpha=alpha, n_min=n_min, grow_to=grow_to)
    walks = [sel]
    for k in range(SCORE_ITERATIONS):        # iterated GMM: one weight, at the choice
        if sel.fit is None or (k and not sel.rejected):
            break
        b0 = embed(sel.fit.b, sel.fit.support, p)
        if refresh and k == 0:                 # second (last) pass over the rows
            K = _cumulant_at(std, rows_cov, b0, instruments, long_run)
        gmm = gmm_at(K, b0, False)
        sel = select_support(gmm, order, alpha=alpha, n_min=n_min, grow_to=grow_to)
        walks.append(sel)
    sel = _best_of(gmm, walks, alpha=alpha, n_min=n_min)
    return Walked(std=std, pooled=pooled, recentre=recentre, alpha=alpha, n_min=n_min,
                  wide=wide, pilot=pilot, instruments=instruments, cumulant=K,
                  rows_cov=rows_cov, refresh=refresh, gmm=gmm, sel=sel,
                  long_run=K.long_run)


def refine(w: Walked) -> tuple[GMMFit | None, ExogenousSupport | None, tuple]:
    """The walk's support with near copies swapped (:func:`_substitutes`) and causes that
    only the pooled regression sees added, or a child of Y removed
    (:func:`~negdro_stats.estimation.selection.exogeneity.exogenous_support`): ``(fit, ols,
    stand_ins)``, the invariance fit on the support to report, the exogeneity check (None where the
    walk found nothing to test) and the pairs ``(member, stand-in)`` the J test cannot
    tell apart."""
    fit, ols, standing = w.sel.fit, None, ()
    if fit is not None and not (w.sel.rejected and w.sel.truncated):
        swapped, standing = _substitutes(w.gmm, w.pooled, fit.support, alpha=w.alpha)
        if not np.array_equal(swapped, fit.support):
            fit = w.gmm.fit_cue(swapped)
        ols = exogenous_support(w.gmm, w.pooled, fit.support, np.arange(w.std.p),
                                alpha=w.alpha, n_min=w.n_min, screened=w.std.p)
        if ols.exogeneity[2] >= w.alpha and (ols.added or ols.removed):
            fit = w.gmm.fit_cue(ols.support)          # the support that will be reported
    return fit, ols, standing
