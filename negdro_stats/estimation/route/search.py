"""Stage 2 of the route: the pilot, the instruments and the walk over the nested
supports that the pilot orders (iterated GMM), then near copies swapped and the
exogeneity of the chosen support checked."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from ..._stats import norm_isf
from ..._typing import FloatArray
from ...data.fourth import gaussian_score_cov
from ...data.moments import Moments
from ..gmm import GATE_SE, N_POPULATION, Cumulant, GMMFit, InvarianceGMM
from ..objective import env_risks
from ..walk import (
    ExogenousSupport,
    Selection,
    critical_value,
    exogenous_support,
    pooled_ols,
    select_support,
)

__all__ = ["instrument_budget", "most_heterogeneous", "Walked", "walk", "refine", "embed"]

SCORE_ITERATIONS = 3     # walks with a common weight (again while the J test rejects)
SUBSTITUTES = 2          # near-collinear swaps tried per member of the walk's support,

SUBSTITUTE_COS = 0.95    # ... with at least this pooled cosine (a near copy)


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
    that this weight ignores (random design, p = 100, n = 20,000: adding one child cut
    the two-step J from 348 to 207 on about 400 degrees of freedom, and the walk kept
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
    proxy)``; an adversarial review found errors of 1-2 with no warning, 3 seeds of 3).
    Until no swap improves.  Only near copies: tried on any covariate, the swap put
    children of ``Y``, whose pooled risk is lower, in place of three parents (random
    design p = 30, n = 2,000, seed 12; error 0.02 -> 0.42), the common-weight J test
    accepting them.  Returns the support and the pairs ``(j, k)`` where ``k`` could
    still stand in for ``j``: the J test accepts the swap too (its pooled risk is
    larger, but by sampling noise or not, the data barely tell them apart; at s = 0.03 one
    seed of 10 kept the copy)."""
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
    walk chosen, ``sel``.  ``pooled`` is ``std`` with the bootstrap's recentring."""

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
        return _cumulant_at(self.std, self.rows_cov, b, cols)


def _cumulant_at(std: Moments, rows_cov: Callable, b: FloatArray, cols: np.ndarray
                 ) -> Cumulant:
    return Cumulant(cols, rows_cov(b, cols) - gaussian_score_cov(std, b, cols))


def walk(std: Moments, alpha: float,
         rows_cov: Callable[[FloatArray, np.ndarray], FloatArray] | None,
         cumulant: Cumulant | None, recentre: FloatArray | None) -> Walked:
    """The pilot, the instruments and the iterated walk of
    :func:`~negdro_stats.estimation.route.select_by_invariance` (its docstring): the pilot
    orders the covariates by ``|t|``, the walk (each J test a two-step GMM of its own
    model) chooses a support, and it is rerun with one weight for every support at the
    choice, again while the J test rejects every support (``SCORE_ITERATIONS``); the walks'
    choices are then compared under the last weight (:func:`_best_of`)."""
    pooled = std if recentre is None else replace(std, sxy=std.sxy - recentre, cov=None)
    p, E = std.p, std.n_envs
    every = np.arange(p)
    n_min = float(std.n.min())
    K = Cumulant.zero(E) if cumulant is None else cumulant
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
        K = _cumulant_at(std, rows_cov, pilot.b, instruments)
    gmm = gmm_at(K, pilot.b, True)
    sel = select_support(gmm, order, alpha=alpha, n_min=n_min, grow_to=grow_to)
    walks = [sel]
    for k in range(SCORE_ITERATIONS):        # iterated GMM: one weight, at the choice
        if sel.fit is None or (k and not sel.rejected):
            break
        b0 = embed(sel.fit.b, sel.fit.support, p)
        if refresh and k == 0:                 # second (last) pass over the rows
            K = _cumulant_at(std, rows_cov, b0, instruments)
        gmm = gmm_at(K, b0, False)
        sel = select_support(gmm, order, alpha=alpha, n_min=n_min, grow_to=grow_to)
        walks.append(sel)
    sel = _best_of(gmm, walks, alpha=alpha, n_min=n_min)
    return Walked(std=std, pooled=pooled, recentre=recentre, alpha=alpha, n_min=n_min,
                  wide=wide, pilot=pilot, instruments=instruments, cumulant=K,
                  rows_cov=rows_cov, refresh=refresh, gmm=gmm, sel=sel)


def refine(w: Walked) -> tuple[GMMFit | None, ExogenousSupport | None, tuple]:
    """The walk's support with near copies swapped (:func:`_substitutes`) and causes that
    only the pooled regression sees added, or a child of Y removed
    (:func:`~negdro_stats.estimation.walk.exogenous_support`): ``(fit, ols, stand_ins)``,
    the invariance fit on the support to report, the exogeneity check (None where the
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
