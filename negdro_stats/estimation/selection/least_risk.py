"""Theorem 6 on data: where the environment differences leave coefficients undetermined,
the invariant fit with the smallest pooled risk (pooled OLS, or least squares
constrained by the invariance conditions where OLS is not invariant), invariance
tested at that fixed fit, from the supports the route has at hand."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import linalg

from ..._stats import chi2_sf, norm_isf
from ..._typing import FloatArray
from ...data import risk_variances
from ...data.moments import Moments, block
from ...identification.determined import covariance_shift
from ..gmm import N_POPULATION, GMMFit, InvarianceGMM
from ..objective import env_risks
from .exogeneity import ExogenousSupport, critical_value, hausman, pooled_ols, pooled_t
from .rank import null_count
from .walk import Walked

__all__ = ["ConstrainedLS", "invariant_ls", "InvariantOLS", "Readings", "invariant_ols",
           "decisive_level", "held_out_risks", "FixedFits", "reliable_instruments",
           "least_risk_fit", "ols_contrast", "own_condition_test", "contest"]


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
    every instrument has a many-moment bias towards OLS that can keep a child of Y) if
    every instrument informs ``b_S``; else, on the instruments that do
    (:meth:`InvarianceGMM.relevant`), the GMM with the weight at ``gmm``'s reference fit
    and then again with the weight at the constrained fit so found (the efficient weight
    where that is ``beta*``; at a reference that is pooled OLS, biased by confounding,
    the residual's variance and with it the standard errors are too small).  (The
    continuously updated fit on those few instruments drifts along the directions they
    leave open, where a larger residual shrinks the weight, until the information is
    gone.)  Measured: docs/design.rst, Measured choices.

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


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class InvariantOLS:
    """Pooled OLS on ``support`` (coefficients ``b``; ``estimator`` "ols"), or the
    constrained least squares :func:`~negdro_stats.estimation.selection.least_risk.invariant_ls`
    ("ils", its fit ``ils``) with ``determined`` directions fitted to the invariance conditions,
    and those conditions tested at it (``test``: J, df, p-value;
    :meth:`InvarianceGMM.test_at`, ``df`` less ``determined``) at ``level``."""

    support: np.ndarray
    b: FloatArray
    test: tuple
    level: float
    ils: ConstrainedLS | None = None

    @property
    def estimator(self) -> str:
        return "ols" if self.ils is None else "ils"

    @property
    def determined(self) -> int:
        return 0 if self.ils is None else self.ils.determined

    @property
    def t(self) -> FloatArray | None:
        """The constrained fit's ``|t|`` (None for OLS)."""
        return None if self.ils is None else np.abs(self.b) / np.maximum(self.ils.se, 1e-300)

@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Readings:
    """Theorem 6's least-risk invariant fit under two readings of "invariant", where they
    choose different supports:

    - ``linear``: the residual moments of the instruments and of the support are the
      same in every environment -- Lemma 1 for a linear outcome mechanism and additive
      interventions, whose power against a child of Y comes from every intervened
      covariate;
    - ``own``: the support's own residual moments and the environments' risks are the
      same -- what Theorem 6 orders the fits by, and all that holds at the causal fit
      when the mechanism is not linear: the linear model's misfit then correlates with
      covariates outside the support, and a gain that moves such a covariate moves
      its residual moment (measured: docs/design.rst, Measured choices).

    ``held_out`` is each fit's risk in every environment when fitted to the others and
    its variance (:func:`held_out_risks`; the constrained fit's own refit where the
    linear reading's fit is one: scored by pooled OLS on its support instead, a
    constrained fit whose values follow misspecified moments is judged by another fit's
    risks and can be reported), and
    :attr:`own_predicts_better` whether the ``own`` fit's worst is the lower one by more
    than its sampling error: then the linear reading's choice does not predict an
    unseen environment as an invariant fit should, the data cannot tell which reading
    holds, and the fit that guards the worst-case risk better (NegDRO's objective (9))
    is reported, not identified."""

    linear: InvariantOLS
    own: InvariantOLS
    held_out: tuple
    alpha: float

    @property
    def worst(self) -> tuple[float, float]:
        """The worst held-out risk of the linear and the own reading's fit."""
        return tuple(float(np.max(risks)) for risks, _ in self.held_out)

    @property
    def own_predicts_better(self) -> bool:
        """The own reading's worst held-out risk is below the linear one's by more than
        ``z_{1 - alpha}`` standard errors of the difference, the two estimates taken as
        independent (which overstates the error of a difference of positively
        correlated risks, so that an own-reading fit with a child of Y that predicts
        slightly better does not win; measured: docs/design.rst, Measured choices)."""
        (lin, lin_var), (own, own_var) = self.held_out
        i, j = int(np.argmax(lin)), int(np.argmax(own))
        return bool(lin[i] - own[j] > norm_isf(self.alpha) * np.sqrt(lin_var[i] + own_var[j]))


def held_out_risks(mom: Moments, S: np.ndarray,
                   refit: Callable[[np.ndarray], FloatArray] | None = None, *,
                   variances: Callable[[Moments, FloatArray], tuple] = risk_variances
                   ) -> tuple[FloatArray, FloatArray]:
    """Leave one environment out: for every environment ``e``, the risk ``R_e`` of the
    fit on ``S`` to the other environments' moments, and the variance of its estimate
    (``variances(mom, b)``, by default :func:`~negdro_stats.data.risk_variances`: the
    fourth moments where the moments keep them); two arrays of shape (E,).  The fit is
    pooled least squares, or ``refit(keep)``, the coefficients on ``S`` fitted to the
    environments ``keep``.  NaN for an environment whose others do not determine the
    pooled fit (their Gram matrix on ``S`` is singular, e.g. two environments, one of 2
    rows): no reading is decided by it (:attr:`Readings.own_predicts_better` is False then)."""
    S = np.asarray(S, dtype=int)
    n = np.where(np.isfinite(mom.n), mom.n, N_POPULATION)
    G = n[:, None, None] * block(mom.Sigma, S, S)
    c = n[:, None] * mom.sxy[:, S]
    risks, spread = np.empty(mom.n_envs), np.empty(mom.n_envs)
    for e in range(mom.n_envs):
        b = np.zeros(mom.p)
        if len(S) and refit is not None:
            b[S] = refit(np.delete(np.arange(mom.n_envs), e))
        elif len(S):
            try:
                b[S] = linalg.solve(G.sum(0) - G[e], c.sum(0) - c[e], assume_a="pos")
            except linalg.LinAlgError:
                risks[e] = spread[e] = np.nan
                continue
        R, var = variances(mom, b)
        risks[e], spread[e] = R[e], var[e]
    return risks, spread


def decisive_level(alpha: float, p: int, n_min: float) -> float:
    """``alpha / (p n)`` (``n`` the smallest environment, ``N_POPULATION`` for exact
    moments): the level at which the limited-interventions search calls a test decisive
    (on exact moments a wrong support's J is of order 1e11)."""
    return alpha / (p * (N_POPULATION if not np.isfinite(n_min) else n_min))

def invariant_ols(test_at: Callable, pooled: Moments, starts: list, *, alpha: float,
                   n_min: float, keep: tuple = (), constrained: Callable | None = None,
                   ils_starts: bool = False) -> InvariantOLS | None:
    """Where the environment differences do not determine the coefficients (the routes
    "negdro" and "not identified"): pooled least squares, with invariance tested
    at that fixed fit (:meth:`InvarianceGMM.test_at`) -- no estimation from the
    differences is needed, so the test keeps its level however weak they are.
    ``test_at(S, b_S)`` returns ``(J, df, pvalue)`` (:meth:`InvarianceGMM.test_at` on the
    instruments and ``S``, with the fourth cumulant re-estimated at ``b`` when the rows
    are at hand: the cumulant of another fit can inflate the true support's J).

    With limited interventions the test is blind to everything but the intervened
    covariates (Example 3: the distribution of ``X1, X2, X4, Y`` is the same in every
    environment, so OLS on any support without the child ``X3`` passes), so it is a
    constraint and the pooled risk the criterion, as in Theorem 6 (the causes that are
    never intervened on still predict ``Y`` invariantly; a child of ``Y`` that is --
    Condition 4: every child is -- makes ``E_e[X r]`` move with the intervention, J of
    order n):

    1. from each of the ``starts`` (the route passes Algorithm 3's support, the
       invariance walk's, the augmented one and the empty one, and in its second call
       every covariate) that the test rejects,
       steepest descent of J by adding (as in 2.) or removing one covariate at a time;
       among the supports so reached that the test accepts, the smallest pooled BIC
       ``N log R(b) + |S| log N`` (``N`` the rows, ``R`` the pooled risk);
    2. covariates added by their pooled ``|t|`` (at least
       :func:`~negdro_stats.estimation.selection.exogeneity.critical_value`, largest first) while
       the test accepts OLS with them;
    3. covariates whose ``|t|`` is below that value removed (smallest first) while it
       accepts: the pooled ``|t|``, or the fit's own where it is the constrained least
       squares below, whose constraint holds a covariate that OLS loads on, a child of
       Y, at about zero -- and at small n not at zero: its GMM part is biased towards
       OLS where the differences determine it weakly, so there the covariate must be
       decisively non-zero (``|t| >= z_{1 - alpha / (2 p n)}``, as in 2.) to stay
       (at ``crit`` a child of Y can stay).

    ``constrained(S, b_ols)`` is the least squares constrained by the invariance
    conditions in the directions they determine
    (:func:`~negdro_stats.estimation.selection.least_risk.invariant_ls`), tested with that many
    fewer degrees of freedom: with hidden confounding OLS is biased on every support that holds a
    confounded cause, and on exact moments the constrained fit is beta* wherever
    Condition 4 or 6 holds.  It replaces a rejected OLS fit in the additions of 2. when
    the added covariate is decisively non-zero in it (``|t| >= z_{1 - alpha / (2 p
    n)}``; without it, OLS on a support with one of several confounded causes can be
    what passes) and in the removals of 3.; with ``ils_starts`` (the route's second
    call, where OLS is invariant on no support reached) in 1. as well.  (Everywhere
    beside OLS, it would let a child of Y in at a noisy GMM coefficient that lowers the
    pooled risk and wins the BIC.)

    Every support tried contains ``keep``: the route passes Algorithm 3's support where
    Condition 4 holds on the data, which backs it, unless OLS on it is decisively not
    invariant (p below ``alpha / (p n)``: on exact moments J is then of order 1e11), so
    that a cause is never traded for another covariate because its own test rejects
    narrowly.

    Each test is at level ``alpha / p``: the support chosen is the true one unless the
    true one's test rejects, so its level is what an error costs; the supports to
    exclude have J of order ``n``.  (Measured: docs/design.rst, Measured choices.)
    None when no start is accepted."""
    n = np.where(np.isfinite(pooled.n), pooled.n, N_POPULATION)
    w = n / n.sum()
    level = alpha / max(pooled.p, 1)
    crit = critical_value(alpha, pooled.p, n_min)

    seen: dict[tuple, list] = {}            # each support is fitted once: [OLS, ILS]
    decisive = norm_isf(decisive_level(alpha, pooled.p, n_min) / 2.0)

    def fitted(S, ils: bool = ils_starts) -> InvariantOLS:
        """Pooled OLS on ``S``; where the test rejects it and ``ils``, the constrained
        least squares instead if the test accepts that."""
        S = np.sort(np.asarray(S, dtype=int))
        if (key := tuple(S.tolist())) not in seen:
            b = pooled_ols(pooled, S)[0]
            seen[key] = [InvariantOLS(support=S, b=b, test=test_at(S, b), level=level),
                         None]
        ols, fit = seen[key]
        if not ils or ols.test[2] >= level or constrained is None or not len(S):
            return ols
        if fit is None:
            ils = constrained(S, ols.b)
            r = ils.determined
            J, df, _ = test_at(S, ils.b) if r else (np.inf, 0, 0.0)
            fit = ols
            if r and df > r and chi2_sf(J, df - r) >= level:
                fit = InvariantOLS(support=S, b=ils.b, test=(J, df - r, chi2_sf(J, df - r)),
                                   level=level, ils=ils)
            seen[key][1] = fit
        return fit

    def tested(S, ils: bool = ils_starts) -> InvariantOLS | None:
        fit = fitted(S, ils)
        return fit if fit.test[2] >= level else None

    def grows(S, j) -> InvariantOLS | None:
        """``S + {j}`` if the test accepts OLS on it, or the constrained least squares
        with ``j`` decisively non-zero (``|t| >= z_{1 - alpha / (2 p n)}``: a child of Y,
        which OLS loads on, is held at about zero by the constraint, and its noise there
        must not bring it in)."""
        T = np.append(S, j)
        if (fit := tested(T, False)) is not None or constrained is None:
            return fit
        fit = tested(T, True)
        if fit is None or fit.estimator == "ols":
            return fit
        return fit if fit.t[int(np.flatnonzero(fit.support == j)[0])] >= decisive else None

    def bic(fit: InvariantOLS) -> float:
        full = np.zeros(pooled.p)
        full[fit.support] = fit.b
        risk = max(float(w @ env_risks(full, pooled.Sigma, pooled.sxy, pooled.syy)), 1e-300)
        return n.sum() * np.log(risk) + len(fit.support) * np.log(n.sum())

    def ranked(S, skip=()) -> np.ndarray:
        """The covariates outside ``S`` with pooled ``|t| >= crit`` on ``S + {j}``, largest
        first."""
        rest = np.setdiff1d(np.arange(pooled.p), np.union1d(S, list(skip))).astype(int)
        t = pooled_t(pooled, S, rest) if len(rest) else np.zeros(0)
        return rest[np.argsort(-t, kind="stable")][:np.count_nonzero(t >= crit)]

    keep = set(int(j) for j in keep)

    def neighbours(S) -> list:
        """``S`` with one covariate added (from ``ranked(S)``) or removed (not of ``keep``)."""
        return ([np.append(S, j) for j in ranked(S)]
                + [np.delete(S, i) for i in range(len(S)) if int(S[i]) not in keep])

    accepted = []
    for S in {tuple(np.sort(np.union1d(S, list(keep)).astype(int))) for S in starts}:
        fit = fitted(S)
        while fit.test[2] < level:             # a rejected start: steepest descent of J
            step = min(map(fitted, neighbours(fit.support)), key=lambda f: f.test[0],
                       default=fit)
            if step.test[0] >= fit.test[0]:
                break
            fit = step
        if fit.test[2] >= level:
            accepted.append(fit)
    if not accepted:
        return None
    best, tried = min(accepted, key=bic), set()
    while True:                                              # 2. additions
        grown = None
        for j in ranked(best.support, tried):
            tried.add(int(j))
            if (grown := grows(best.support, j)) is not None:
                break
        if grown is None:
            break
        best = grown
    while len(best.support):                                 # 3. removals
        own = [np.inf if int(j) in keep else best.t[i] if best.t is not None else
               pooled_t(pooled, np.delete(best.support, i), [j])[0]
               for i, j in enumerate(best.support)]
        i = int(np.argmin(own))
        if own[i] >= (crit if best.estimator == "ols" else decisive):
            break
        trial = tested(np.delete(best.support, i), constrained is not None)
        if trial is None:
            break
        best = trial
    return best


class FixedFits:
    """The invariance conditions at fixed fits (:meth:`InvarianceGMM.test_at`): the
    residual moments of ``instruments`` and of the support itself (a child of Y in the
    support shows there first; ``own``: of the support alone), the weight and the
    cumulant at ``b`` (on every environment's rows); each built once (OLS is tested,
    then constrained, at the same ``b``: one pass over the rows)."""

    def __init__(self, w: Walked, instruments: np.ndarray) -> None:
        self.w, self.instruments = w, instruments
        self.built: dict[tuple, InvarianceGMM] = {}

    def gmm_on(self, S: np.ndarray, b_S: FloatArray, own: bool = False,
               keep: np.ndarray | None = None) -> InvarianceGMM:
        """The conditions at ``b`` (``b_S`` on ``S``), of the environments ``keep``."""
        key = (tuple(np.asarray(S).tolist()), np.asarray(b_S, dtype=float).tobytes(), own)
        if key not in self.built:
            w = self.w
            b = np.zeros(w.std.p)
            b[S] = b_S
            R = (np.asarray(S, dtype=int) if own
                 else np.union1d(self.instruments, S).astype(int))
            self.built[key] = InvarianceGMM(
                w.std, instruments=R, cumulant=w.cumulant_at(b, R) if w.refresh else w.cumulant,
                b_ref=b, own_weight=False, recentre=w.recentre)
        return self.built[key] if keep is None else self.built[key].environments(keep)

    def test_at(self, S: np.ndarray, b_S: FloatArray) -> tuple:
        """``(J, df, pvalue)`` of the conditions at the fixed fit ``b_S`` on ``S``."""
        return self.gmm_on(S, b_S).test_at(S, b_S)


def reliable_instruments(w: Walked) -> int:
    """How many instruments a test at a fixed fit is reliable on without Condition 4:
    ``(|E| - 1) q^2 <= n`` (:func:`least_risk_fit`)."""
    if not np.isfinite(w.n_min):
        return len(w.instruments)
    return max(int(np.sqrt(w.n_min / (w.std.n_envs - 1))), 1)


def least_risk_fit(w: Walked, fit: GMMFit | None, ols: ExogenousSupport | None, *,
                holds: bool, alg3_support: np.ndarray | None, instruments: np.ndarray):
    """Theorem 6's least-risk invariant fit (:func:`~.least_risk.invariant_ols`) from the
    supports the route has at hand (Algorithm 3's, the walk's, the augmented one, the
    empty one; every covariate in the second round, where ``(|E| - 1) p^2 <= n``),
    invariance tested at each fixed fit on the residual moments of ``instruments`` and of
    the support itself (the linear reading), and again with the support's own moments
    and the equal-risk test (Theorem 6's reading, :class:`~.least_risk.Readings`).
    Returns ``(fit, readings)``: the own reading's fit and both readings where they
    choose different supports and the own one predicts held-out environments better
    (:attr:`~.least_risk.Readings.own_predicts_better`), else the linear reading's
    fit and None.  ``(None, None)`` where no fit
    passes, or where without Condition 4 (``holds``) the test is not reliable: the
    estimated weights distort J by about ``m q / n`` (``m = |E| - 1`` equations on each
    of ``q`` instruments; module docstring); at n = 500 with 60-75 equations (``m q / n
    ~ 2``) it passes children of Y (measured: docs/design.rst, Measured choices).

    The own reading (pooled OLS only, from the same starts and the linear reading's
    support) contends only where the linear one found a fit and the environments
    shift some covariate's variance (:func:`covariance_shift`): with mean shifts alone
    a child of Y moves its own residual moment and the risks only at second order in
    the shift, and the own reading's fit, a better predictor with children of Y in
    it, would replace good fits by bad ones.  Alone, Theorem 6's reading chooses
    worse on linear designs (an own-moments pass with a child of Y), hence the held-out
    arbiter.  (Measured: docs/design.rst, Measured choices.)"""
    std, pooled, alpha, n_min = w.std, w.pooled, w.alpha, w.n_min
    p, E, every = std.p, std.n_envs, np.arange(std.p)
    starts = [S for S in (alg3_support, None if fit is None else fit.support,
                          None if ols is None else ols.support, np.zeros(0, dtype=int))
              if S is not None]
    fixed = FixedFits(w, instruments)
    gmm_on, test_at = fixed.gmm_on, fixed.test_at

    def own_test_at(S: np.ndarray, b_S: FloatArray) -> tuple:
        """Theorem 6's constraint as it reads (:class:`~.least_risk.Readings`): the
        support's own residual moments and the equal-risk test at ``b``, Bonferroni
        (twice the smaller p-value); on the empty support the risks alone."""
        b = np.zeros(p)
        b[S] = b_S
        risk = w.risk_test(pooled, b)
        if not len(S):
            return risk.statistic, risk.df, risk.pvalue
        J, df, pvalue = gmm_on(S, b_S, own=True).test_at(S, b_S)
        return J + risk.statistic, df + risk.df, min(1.0, 2.0 * min(pvalue, risk.pvalue))

    def constrained(S: np.ndarray, b_S: FloatArray, keep: np.ndarray | None = None):
        """:func:`invariant_ls` (on the environments ``keep``: the readings' refits)."""
        data = pooled if keep is None else pooled.environments(keep)
        return invariant_ls(gmm_on(S, b_S, keep=keep), S, data, alpha=alpha)

    reliable = holds or (E - 1) * len(instruments) ** 2 <= n_min    # (the docstring)
    keep = ()                   # Algorithm 3's support, unless decisively not invariant
    if holds and alg3_support is not None and len(alg3_support):
        if test_at(alg3_support, pooled_ols(pooled, alg3_support)[0])[2] >= (
                decisive_level(alpha, p, n_min)):
            keep = tuple(int(j) for j in alg3_support)

    def search(test: Callable) -> InvariantOLS | None:
        """Pooled OLS where it is invariant (efficient), else constrained."""
        inv = None
        for ils_starts in ((False, True) if reliable else ()):
            # the constrained fit on every covariate (beta* on exact moments under
            # Condition 4 or 6) is a start only where its test is reliable, (|E| - 1)
            # p^2 <= n: past it the descent costs p constrained fits a step, over 100x the
            # time for the same estimates (measured: docs/design.rst, Measured choices)
            wide_ok = ils_starts and (E - 1) * p * p <= n_min
            if inv is None:
                inv = invariant_ols(test, pooled, starts + [every] * wide_ok,
                                    alpha=alpha, n_min=n_min, keep=keep,
                                    constrained=constrained, ils_starts=ils_starts)
        return inv

    if (linear := search(test_at)) is None:
        return None, None
    if covariance_shift(std)[2] >= alpha:       # mean shifts only: no contest (docstring)
        return linear, None
    # Theorem 6's reading by pooled OLS alone, from the same starts and the linear
    # reading's support: where the linear model fits its own moments and risks but not
    # the instruments', OLS is the least-risk fit on a support (no constrained fits:
    # they double the time and never win; measured: docs/design.rst, Measured choices)
    own = invariant_ols(own_test_at, pooled, starts + [linear.support], alpha=alpha,
                        n_min=n_min, keep=keep)
    if own is None or np.array_equal(own.support, linear.support):
        return linear, None
    readings = Readings(linear=linear, own=own, alpha=alpha, held_out=tuple(held_out_risks(
        pooled, f.support, None if f.ils is None else
        lambda keep, f=f: constrained(f.support, f.b, keep).b, variances=w.risk_variances)
        for f in (linear, own)))
    return (own, readings) if readings.own_predicts_better else (linear, None)


def ols_contrast(w: Walked, inv: InvariantOLS) -> tuple:
    """:attr:`SelectionReport.contrast_test`: along the directions where the least-risk
    fit ``inv`` is pooled OLS (every direction of an OLS fit, ``I - P`` of a constrained
    one), the Hausman contrast (:func:`~.exogeneity.hausman`) of OLS against the
    invariance GMM on the same support -- the instruments whose first stage informs
    ``b_S`` (:meth:`InvarianceGMM.relevant`), the weight at the reported fit (one step:
    a score test at it, robust to the drift of the continuously updated fit where the
    environments barely move ``b_S``) -- ``(H, df, pvalue)``.  Without hidden
    confounding both are consistent there; with it OLS is not, and neither Condition 4
    nor 6 makes the fit ``beta*`` (under 6 the least-risk fit is the invariant one).  NaN
    where nothing is contrasted: the empty support, every direction determined, no
    instrument informs ``b_S``.  (Measured on "if Condition 4" fits: docs/design.rst,
    Measured choices.)"""
    S, none = inv.support, (np.nan, 0, np.nan)
    along = np.eye(len(S)) if inv.ils is None else np.eye(len(S)) - inv.ils.projector
    if not len(S) or (inv.ils is not None and inv.determined == len(S)):
        return none
    b = np.zeros(w.std.p)
    b[S] = inv.b
    informed = FixedFits(w, w.instruments).gmm_on(S, inv.b).relevant(S, w.alpha)
    if informed is None:
        return none
    return hausman(informed.fit_at(S, b), inv.b, along)


def own_condition_test(w: Walked, inv: InvariantOLS) -> tuple:
    """:attr:`SelectionReport.focused_test`: each support member's own invariance
    condition at the reported pooled OLS fit (:meth:`InvarianceGMM.own_tests_at_ols`,
    ``|E| - 1`` df each), the smallest p-value times the support's size (Bonferroni)
    and the member it belongs to; NaN for a constrained fit, the empty support or a
    condition without variance (degenerate rows)."""
    S, none = inv.support, (np.nan, 0, np.nan, "")
    if inv.estimator != "ols" or not len(S):
        return none
    try:
        J, df, pvalues = FixedFits(w, S).gmm_on(S, inv.b, own=True).own_tests_at_ols(
            S, inv.b, S)
    except np.linalg.LinAlgError:        # a member's condition has no variance to test
        return none
    i = int(np.argmin(pvalues))
    return float(J[i]), df, min(1.0, len(S) * float(pvalues[i])), w.std.names[S[i]]


def contest(readings: Readings, names: tuple) -> tuple[tuple, str]:
    """:attr:`SelectionReport.contested` and the reason's words, where the own reading's
    fit predicts held-out environments better (:class:`~.least_risk.Readings`)."""
    linear = ", ".join(names[j] for j in readings.linear.support) or "the empty support"
    own = ", ".join(names[j] for j in readings.own.support) or "the empty support"
    lin_risk, own_risk = readings.worst
    return (tuple(names[j] for j in readings.linear.support),
            lin_risk / max(own_risk, 1e-300)), (
        f"; and two readings of invariance choose different fits: the residual moments of "
        f"the intervened covariates (Lemma 1, for a linear outcome mechanism) choose "
        f"{linear}; the support's own moments and equal risks (Theorem 6) choose {own}, "
        f"which predicts a held-out environment better (worst leave-one-environment-out "
        f"risk {own_risk:.3g} against {lin_risk:.3g}, standardised).  The data cannot "
        f"tell whether the outcome's mechanism is linear, so beta* is not identified")
