"""The default estimator on moments: standardise, profile an intercept, run the method,
choose the support by invariance, and say whether the environments decide.

:func:`solve` is the one entry point for samples, population moments and resamples.

1. An intercept (``options.fixed``, set by ``fit_intercept``) is profiled by the pooled
   level condition ``c = ybar - b^T xbar``: the slopes are fitted on pooled-centred
   moments (:meth:`Moments.centred`), so that no threshold, test or gate depends on the
   origin of a covariate.
2. The moments are rescaled to unit root mean square and the method runs
   (:func:`negdro_stats.estimation.algorithms.run_method`).
3. With ``refit="auto"`` the support is chosen by over-identified gradient invariance
   (:func:`select_by_invariance`; the tests are in :mod:`negdro_stats.estimation.gmm`).

What the selection's consistency rests on (``refit="auto"``)
-------------------------------------------------------------
Lemma 1 makes ``E_e[X (Y - beta*^T X)]`` the same in every environment for all ``p``
covariates.  The *pilot* is the invariance GMM on every covariate with every residual
moment as an instrument: where the environment differences determine ``b``
(the stacked ``Sigma_e - Sigma_bar`` have no common null direction; implied by
Condition 1b), it is consistent at the ``n^{-1/2}`` rate, so ordering the covariates by
its ``|t|`` puts every cause ahead of every non-cause with probability tending to one --
at a cost of ``O(|E| p^3)``, with no screening by association with ``Y`` (which favours
descendants of ``Y``).  The nested supports in that order are then scored by J tests
(GMM-BIC, grown until the J test accepts, pruned by t statistics at a ``sqrt(log n)``
rate; :func:`~negdro_stats.estimation.gmm.select_support`), causes that only the pooled
regression sees are added, and pooled OLS or the invariance GMM is reported.

The J tests use ``q`` instruments with ``(|E| - 1) q^2 <= 2 n`` and
``m = (|E| - 1) q <= 3 sqrt(n)`` moment conditions (``n`` the smallest environment;
:func:`instrument_budget`): the estimated weights of ``q``-dimensional score
covariances distort J by about ``m q / n``, and the many-moment bias of GMM is of order
``m / n``, so the Hausman contrast, scaled by the information (order ``n``), is
distorted by about ``m^2 / n``; with ~100+ conditions at small ``n`` the J test
over-rejects and the continuously updated estimator drifts (its objective flattens as
``|b|`` grows).  All covariates when
``p`` is within the budget; beyond it, the first half of the pilot's order and then the
covariates whose second moments vary most across environments (a rule that does not
look at ``Y``).

Whether the environments decide
-------------------------------
A J test that accepts is not an identified answer: with mean shifts only, every small
support satisfies the few rank-one constraints.  So the invariance conditions on every
covariate, at the chosen fit, get a rank test (:func:`rank_test`): a direction of ``b``
whose information does not stand out of the sampling noise of the equations is *not
determined* by the environment differences (materially different coefficients along it
are accepted as well), and the covariates that load on it are named.  Then:

- if Condition 1b holds on the directions that the differences do determine (the data's
  form of Condition 4: a weighting dominates the average there, nothing varies
  elsewhere), NegDRO's own fit (Algorithm 3) identifies ``beta*`` provided every child
  of ``Y`` is among the intervened covariates (Theorem 6) -- an assumption the data
  cannot check, stated in the report (route ``"negdro"``);
- otherwise the fit is reported as *not identified*, with the covariates named.

In both cases the estimate is pooled OLS on the invariant support of least pooled risk
(:func:`_invariant_ols`: invariance tested at the OLS fit itself, which needs no
estimation from the weak differences) when one passes -- without Condition 4 on the
data only where that test is reliable (``m q <= n``).  Otherwise, with Condition 4 on
the data, Algorithm 3's fit; without it, the invariance fit when the J test accepts it
and its coefficients are sharply determined on its (non-empty) support (worst
standardised s.e. at most ``GATE_SE``), else Algorithm 3's: the minimiser of the DRO
objective (9), whose worst-case risk guarantee holds whether or not beta* is identified.
(Measured: Example 3 limited at n = 2,000 / 20,000, error 0.040 / 0.022 against
Algorithm 3's 0.21 / 0.056; mean shifts only at n = 2,000, 0.71 against 1.54; leaving
out one environment of eq. (33), worst held-out risk 2.28, Algorithm 3's 2.17, a weakly
determined invariance fit's 3.33.)

Why one module of ~880 lines: the route is one decision (standardise, select, test the
rank, check Condition 4 on the data, choose what to report), and its steps pass the same
standardised moments and tests to each other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache

import numpy as np
from scipy import linalg
from threadpoolctl import ThreadpoolController

from .._stats import chi2_isf, chi2_sf, norm_isf
from .._typing import FloatArray
from .._validation import listed
from ..data.fourth import RESIDUAL, gaussian_score_cov
from ..data.moments import EXACT_FIT, Moments
from ..exceptions import SolverError
from ..identification.conditions import DEFAULT_TOL, SDP_MAX_DIM, check_condition_1b
from .algorithms import invariant_refit, run_method
from .gmm import GATE_SE, N_POPULATION, Cumulant, InvarianceGMM
from .objective import env_risks, gradient, objective
from .options import SelectionReport, SolverOptions, SolverOutput
from .walk import (
    Selection,
    critical_value,
    exogenous_support,
    invariant_ls,
    null_count,
    pooled_ols,
    pooled_t,
    select_support,
)

__all__ = ["solve", "select_by_invariance", "instrument_budget", "most_heterogeneous",
           "rank_test", "RankTest",
           "GATE_SE"]

SCORE_ITERATIONS = 3     # walks with a common weight (again while the J test rejects)
BIAS_MAX = 0.5           # Algorithm 3 trusted where Theorem 4's bound is at most this
SMALL_P = 64             # up to here one BLAS thread is faster (small products)
SUBSTITUTES = 2          # near-collinear swaps tried per member of the walk's support,
SUBSTITUTE_COS = 0.95    # ... with at least this pooled cosine (a near copy)
RANK_ITERATIONS = 4      # re-weightings of the rank test at its weakest direction
RANK_SKIP = 20.0         # ... none above this multiple of its critical value


def instrument_budget(n_envs: int, n_min: float, p: int) -> int:
    """Instruments of the J tests: the largest ``q <= p`` with ``(|E| - 1) q^2 <= 2 n``
    (the estimated weights) and ``m = (|E| - 1) q <= 3 sqrt(n)`` moment conditions (the
    many-moment bias): 31 at n = 2,000 with five environments, 47 at n = 20,000 with ten,
    15 at n = 500 with five; all covariates for population moments."""
    n = N_POPULATION if not np.isfinite(n_min) else n_min
    k = max(n_envs - 1, 1)
    return int(min(p, max(1.0, min(np.sqrt(2.0 * n / k), 3.0 * np.sqrt(n) / k))))


def solve(
    mom: Moments,
    options: SolverOptions | None = None,
    *,
    score_cov: Callable[[FloatArray, np.ndarray], FloatArray] | None = None,
    cumulant: Cumulant | None = None,
    recentre: FloatArray | None = None,
    route: str | None = None,
) -> SolverOutput:
    """Run a NegDRO method on moments; see the module docstring.

    ``refit`` (Algorithm 3 only) chooses the support and the coefficients on it:

    - ``"auto"`` (default): consistent selection by over-identified gradient invariance
      (:func:`select_by_invariance`), reported when the environment differences
      determine every coefficient; otherwise Algorithm 3's support and Phi_mu fit, with
      the verdict (Condition 4 on the data, or not identified) in ``selection``.
    - ``"negdro"``: the paper verbatim (fixed threshold, Phi_mu on the support).
    - ``"invariant"``: Algorithm 3's support, coefficients by
      :func:`~negdro_stats.estimation.algorithms.invariant_refit`.

    ``options.fixed`` is the intercept column (set by the model), profiled by pooled
    centring.  ``score_cov(b, cols)`` returns ``Var_e(X_cols (Y - b^T X))``
    (``(E, len(cols), len(cols))``) on the original scale from the rows; it is used only
    for the fourth-cumulant correction of
    :func:`~negdro_stats.estimation.gmm.gaussian_score_cov`, which bootstrap replicates pass
    fixed as ``cumulant``.  ``recentre`` (E, p) is subtracted from ``sxy`` in the
    invariance conditions and the pooled regressions of the selection (the bootstrap's
    recentring, :attr:`SelectionReport.misfit`; replicates do not compute their own).
    Both on the original scale (of the centred slopes, with an intercept).  ``route``:
    the sample's :attr:`SelectionReport.route`, which bootstrap replicates follow where
    the environments leave a coefficient undetermined (no Condition 4 check per
    replicate).  A replicate (``route`` given) runs Algorithm 3 only where its route
    uses Algorithm 3's support or fit; otherwise its output has no stages and its
    options are those given (a sixth of a replicate's cost at p = 10, and the bootstrap
    records only the coefficients, the support and whether the reported fit converged).

    The settings are those of :class:`SolverOptions` (default: its defaults); the
    output's ``options`` has the defaults resolved from the data filled in.
    """
    options = SolverOptions() if options is None else options
    if options.fixed:
        return _with_intercept(mom, options, score_cov, cumulant, recentre, route)
    d, s_y = mom.scales()
    std = mom.rescale(d, s_y)
    p = std.p
    algorithm = cache(lambda: run_method(std, options))
    if route is not None and options.method == "algorithm3" and options.refit == "auto":
        results, stages, S, resolved = [], [], np.zeros(0, dtype=int), options  # (lazy)
    else:
        results, stages, S, resolved = algorithm()
    b_std = np.zeros(p)
    used_refit, report = "none", None
    if options.method != "algorithm3":
        b_std = results[-1].b
    else:
        if len(S):
            b_std[S], used_refit = results[-1].b, "negdro"
        if options.refit == "invariant" and len(S):
            b_inv = invariant_refit(std.Sigma[:, S][:, :, S], std.sxy[:, S])
            if b_inv is not None:
                b_std[S], used_refit = b_inv, "invariant"
        elif options.refit == "auto" and (exact := exact_fit(std)) is not None:
            S, b_std, report = exact
            used_refit = report.estimator
        elif options.refit == "auto":
            unit, rows_cov = standardised_cov(score_cov, d, s_y)
            with _blas().limit(limits=1 if p <= SMALL_P else None):
                report, chosen = select_by_invariance(
                    std, options.test_level, options.gamma, rows_cov,
                    None if cumulant is None else cumulant.scaled(1.0 / unit),
                    None if recentre is None else recentre / (d * s_y), route,
                    alg3_support=lambda: np.asarray(algorithm()[2], dtype=int))
            report = replace(report, cumulant=report.cumulant.scaled(unit),   # original scale
                             misfit=None if report.misfit is None
                             else report.misfit * (d * s_y))
            if chosen is not None:
                S, b_std = chosen
                used_refit = report.estimator
            elif not results:                  # Algorithm 3's fit after all (a replicate)
                results, stages, S, resolved = algorithm()
                if len(S):
                    b_std[S], used_refit = results[-1].b, "negdro"
    if not np.isfinite(b_std).all():
        raise SolverError("The refit produced non-finite coefficients; check the scale of "
                          "the data, or use refit='negdro'.")
    support = np.zeros(p, dtype=bool)
    support[S] = True
    Sigma, sxy, syy = std.Sigma, std.sxy, std.syy
    g, w = gradient(b_std, Sigma, sxy, syy, gamma=options.gamma, mu=options.mu)
    stalled = [r for r in results if not r.converged]      # report the stage that stalled
    grad_norm = (stalled[0] if stalled else results[-1]).grad_norm if results else float(
        np.linalg.norm(g[S]))
    return SolverOutput(
        b=b_std * s_y / d,
        support=support,
        w=w,
        objective=objective(b_std, Sigma, sxy, syy, gamma=options.gamma,
                            mu=options.mu) * s_y**2,
        risks=env_risks(b_std, Sigma, sxy, syy) * s_y**2,
        grad_norm=grad_norm,
        n_iter=sum(r.n_iter for r in results),
        converged=all(r.converged for r in results),
        method=options.method,
        inner=options.inner if options.method == "algorithm3" else options.method,
        stages=stages,
        options=resolved,
        refit=used_refit,
        selection=report,
    )


@cache
def _blas() -> ThreadpoolController:
    """The BLAS libraries loaded (numpy's and scipy's), found once: a fresh
    ``threadpool_limits`` looks for them on every call (0.24 ms, 1 ms under load: a
    fifth of a bootstrap replicate at p = 10)."""
    return ThreadpoolController()


def exact_fit(std: Moments) -> tuple[np.ndarray, FloatArray, SelectionReport] | None:
    """``(support, b, report)`` when the covariates give the outcome exactly (pooled
    residual below ``EXACT_FIT`` of its second moment, e.g. a covariate ``Xc = 2 Y``),
    else None.  Every residual is then 0: the exact fit has zero risk in every
    environment, so it is invariant, and no test has a variance to compare with (the
    selection's choices would be decided by rounding).  Reported: pooled OLS on the
    covariates the exact fit uses."""
    every = np.arange(std.p)
    share, b = std.unexplained()
    if not share <= EXACT_FIT:
        return None
    S = every[np.abs(b) > 1e-6 * np.abs(b).max()]
    b_std = np.zeros(std.p)
    b_std[S] = pooled_ols(std, S)[0]
    used = ", ".join(std.names[j] for j in S)
    report = SelectionReport(
        route="invariance", estimator="ols", walk=(), pruned=(), critical_t=np.nan,
        added=(), removed=(), J=np.nan, df=0, pvalue=np.nan, exogeneity=(np.nan, 0, np.nan),
        worst_se=np.nan, gate_se=GATE_SE, instruments=(), cumulant=Cumulant.zero(std.n_envs),
        reason=f"the outcome is an exact linear function of {used} (every residual is 0, "
               "so that fit is invariant, with zero risk in every environment, and no test "
               "has a variance to compare with): a covariate that copies or rescales the "
               "outcome is the usual cause")
    return S, b_std, report


def _with_intercept(mom: Moments, options: SolverOptions, score_cov, cumulant, recentre,
                    route) -> SolverOutput:
    """:func:`solve` with the constant column ``options.fixed`` profiled by the pooled
    level condition: the slopes from the pooled-centred moments of the other covariates,
    the intercept ``ybar - b^T xbar``.  The risks are unchanged (``R_e`` of the centred
    problem is the risk of the model with that intercept), and so is the residual, so
    the rows' score covariance of the centred covariates follows exactly from that of
    the covariates and the constant."""
    (const,) = options.fixed
    slopes, centred, full, rows_cov = centred_problem(mom, const, score_cov)
    out = solve(centred, replace(options, fixed=()), score_cov=rows_cov, cumulant=cumulant,
                recentre=recentre, route=route)
    support = np.ones(mom.p, dtype=bool)
    support[slopes] = out.support
    return replace(out, b=full(out.b), support=support,
                   options=replace(out.options, fixed=options.fixed))


def centred_problem(mom: Moments, const: int, score_cov: Callable | None):
    """The slopes' problem with the constant column ``const`` profiled by the pooled level
    condition: ``(slopes, centred, full, rows_cov)`` -- the other covariates' indices,
    their pooled-centred moments, ``full(b)`` (the slopes with the intercept ``ybar -
    b^T xbar`` in place) and the score covariance of the centred covariates (None
    without ``score_cov``)."""
    slopes = np.setdiff1d(np.arange(mom.p), [const])
    centred, x_bar, y_bar = mom.subset(slopes).centred()

    def full(b: FloatArray) -> FloatArray:
        out = np.zeros(mom.p)
        out[slopes], out[const] = b, y_bar - b @ x_bar
        return out

    rows_cov = None
    if score_cov is not None:
        def rows_cov(b: FloatArray, cols: np.ndarray) -> FloatArray:
            """``Var_e((X_cols - xbar) r)`` from the rows' ``Var_e(Z r)``, ``Z = (X_cols,
            1)``: the congruence by ``[I, -xbar]``, exact (a :data:`RESIDUAL` column is
            ``r`` itself, not centred)."""
            x = cols != RESIDUAL
            V = score_cov(full(b), np.append(np.where(x, slopes[np.where(x, cols, 0)],
                                                      RESIDUAL), const))
            A = np.column_stack([np.eye(len(cols)),
                                 -np.where(x, x_bar[np.where(x, cols, 0)], 0.0)])
            return A @ V @ A.T

    return slopes, centred, full, rows_cov


def standardised_cov(score_cov: Callable | None, d: FloatArray, s_y: float):
    """``(unit, rows_cov)``: the scale of ``Var(X r)`` (p, p) under :meth:`Moments.rescale`
    by ``d, s_y``, and ``score_cov`` taking and giving standardised units (None
    without it; a :data:`RESIDUAL` column has the outcome's scale)."""
    unit = np.multiply.outer(d, d) * s_y**2
    if score_cov is None:
        return unit, None

    def rows_cov(b_std: FloatArray, R: np.ndarray) -> FloatArray:
        scale = np.where(R != RESIDUAL, d[np.where(R != RESIDUAL, R, 0)], s_y) * s_y
        return score_cov(b_std * s_y / d, R) / np.multiply.outer(scale, scale)

    return unit, rows_cov


def _instruments(std: Moments, order: np.ndarray, t_pilot: FloatArray, q: int,
                 cut: float) -> np.ndarray:
    """``q`` instruments: the covariates that the pilot finds significant (``|t| >= cut``,
    in its order, at most half of ``q``), then those whose second moment varies most
    across environments (relative spread of ``E_e[X_j^2]``, which does not look at
    ``Y``).  Only significant ones: the pilot's next covariates are ranked by noise in
    the very residual moments that the J tests use, and choosing instruments for that
    noise inflates J (eq. (33) with p = 1,000 at n = 20,000: J = 492 on 343 degrees of
    freedom at beta* with the first half of the order, 327 on 358 with random ones)."""
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


def _recentring(std: Moments, b_gmm: FloatArray, S: np.ndarray, b_ols: FloatArray | None,
                alpha: float, n_min: float) -> FloatArray:
    """What the bootstrap subtracts from every replicate's ``sxy`` so that the selected
    model holds exactly in the bootstrap world (Hall and Horowitz 1996), as the true
    one does in the real world.

    - Invariance: ``g_e(b_gmm) - gbar(b_gmm)``, ``gbar`` the row-weighted mean over
      environments (which GMM profiles out with ``m``); without it the J test rejects the
      true support in most replicates.
    - Exogeneity, when pooled OLS on ``S`` was reported: the pooled score
      ``gbar_j(b_ols)`` of every covariate ``j`` whose pooled ``|t|`` on ``S + {j}`` is
      below the cut of :func:`~negdro_stats.estimation.gmm.augment_support` -- those that the
      sample says are not causes -- so that replicates do not find, half the time, a
      non-cause whose ``t`` sat just under the cut in the sample.  Covariates above the
      cut that were not added (set aside as children of Y) keep their pooled association.
    """
    w = std.pooled_weights()
    g = std.sxy - std.Sigma @ b_gmm                                   # g_e(b)
    misfit = g - w @ g
    if b_ols is not None:
        rest = np.setdiff1d(np.arange(std.p), S)
        null = rest[pooled_t(std, S, rest) < critical_value(alpha, std.p, n_min)]
        misfit[:, null] += (w @ (std.sxy - std.Sigma @ b_ols))[null]
    return misfit


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class InvariantOLS:
    """Pooled OLS on ``support`` (coefficients ``b``; ``estimator`` "ols"), or the
    constrained least squares :func:`~negdro_stats.estimation.gmm.invariant_ls` ("ils") with
    ``determined`` directions fitted to the invariance conditions, and those conditions
    tested at it (``test``: J, df, p-value; :meth:`InvarianceGMM.test_at`, ``df`` less
    ``determined``) at ``level``."""

    support: np.ndarray
    b: FloatArray
    test: tuple
    level: float
    estimator: str = "ols"
    determined: int = 0
    t: FloatArray | None = None


def _decisive_level(alpha: float, p: int, n_min: float) -> float:
    """``alpha / (p n)`` (``n`` the smallest environment, ``N_POPULATION`` for exact
    moments): the level at which the limited-interventions search calls a test decisive
    (on exact moments a wrong support's J is of order 1e11)."""
    return alpha / (p * (N_POPULATION if not np.isfinite(n_min) else n_min))


def _invariant_ols(test_at: Callable, pooled: Moments, starts: list, *, alpha: float,
                   n_min: float, keep: tuple = (), constrained: Callable | None = None,
                   ils_starts: bool = False) -> InvariantOLS | None:
    """Where the environment differences do not determine the coefficients (the routes
    "negdro" and "not identified"): pooled least squares, with invariance tested
    at that fixed fit (:meth:`InvarianceGMM.test_at`) -- no estimation from the
    differences is needed, so the test keeps its level however weak they are.
    ``test_at(S, b_S)`` returns ``(J, df, pvalue)`` (:meth:`InvarianceGMM.test_at` on the
    instruments and ``S``, with the fourth cumulant re-estimated at ``b`` when the rows
    are at hand: with a uniform light source the cumulant of another fit made the true
    support's J 74 on 45 df).

    With limited interventions the test is blind to everything but the intervened
    covariates (Example 3: the distribution of ``X1, X2, X4, Y`` is the same in every
    environment, so OLS on any support without the child ``X3`` passes), so it is a
    constraint and the pooled risk the criterion, as in Theorem 6 (the causes that were
    never intervened on still predict ``Y`` invariantly; a child of ``Y`` that was --
    Condition 4: every child is -- makes ``E_e[X r]`` move with the intervention, J of
    order n):

    1. from each of the ``starts`` (the route passes Algorithm 3's support, the
       invariance walk's, the augmented one and the empty one, and in its second call
       every covariate) that the test rejects,
       steepest descent of J by adding (as in 2.) or removing one covariate at a time;
       among the supports so reached that the test accepts, the smallest pooled BIC
       ``N log R(b) + |S| log N`` (``N`` the rows, ``R`` the pooled risk);
    2. covariates added by their pooled ``|t|`` (at least
       :func:`~negdro_stats.estimation.gmm.critical_value`, largest first) while the test
       accepts OLS with them;
    3. covariates whose ``|t|`` is below that value removed (smallest first) while it
       accepts: the pooled ``|t|``, or the fit's own where it is the constrained least
       squares below, whose constraint holds a covariate that OLS loads on, a child of
       Y, at about zero -- and at small n not at zero: its GMM part is biased towards
       OLS where the differences determine it weakly, so there the covariate must be
       decisively non-zero (``|t| >= z_{1 - alpha / (2 p n)}``, as in 2.) to stay
       (at ``crit``, bench_limited's confounded family at n = 2,000 kept a child in 2
       of 6 designs).

    ``constrained(S, b_ols)`` is the least squares constrained by the invariance
    conditions in the directions they determine
    (:func:`~negdro_stats.estimation.gmm.invariant_ls`), tested with that many fewer degrees
    of freedom: with hidden confounding OLS is biased on every support that holds a
    confounded cause, and on exact moments the constrained fit is beta* wherever
    Condition 4 or 6 holds.  It replaces a rejected OLS fit in the additions of 2. when
    the added covariate is decisively non-zero in it (``|t| >= z_{1 - alpha / (2 p
    n)}``; confounded seed 0 of bench_limited, p = 12, n = 20,000: OLS on one of the
    three causes passed, error 2.1; with them, 0.009) and in the removals of 3.; with
    ``ils_starts`` (the route's second call, where OLS is invariant on no support
    reached) in 1. as well.  (Everywhere beside OLS, it let a child of Y in at a noisy
    GMM coefficient that lowered the pooled risk and won the BIC: Example 3 limited,
    n = 10,000, seed 0, error 0.09 against 0.006.)

    Every support tried contains ``keep``: the route passes Algorithm 3's support where
    Condition 4 holds on the data, which backs it, unless OLS on it is decisively not
    invariant (p below ``alpha / (p n)``: on exact moments J is then of order 1e11), so
    that a cause is never traded for another covariate because its own test rejected
    narrowly (Example 3 at n = 20,000, seed 12: the parent's test p = 0.011, and without
    ``keep`` OLS on its parent X1 was reported as identified, error 2.8; with it,
    Algorithm 3's fit, 0.18).

    Each test is at level ``alpha / p``: the support chosen is the true one unless the
    true one's test rejects, so its level is what an error costs (at ``alpha``: Example
    3 at n = 20,000, the parent's test rejected once in ten, p = 0.02, and OLS on
    ``X1``, its parent, error 2.8, was reported); the supports to exclude have J of
    order ``n``.  None when no start is accepted."""
    n = np.where(np.isfinite(pooled.n), pooled.n, N_POPULATION)
    w = n / n.sum()
    level = alpha / max(pooled.p, 1)
    crit = critical_value(alpha, pooled.p, n_min)

    seen: dict[tuple, list] = {}            # each support is fitted once: [OLS, ILS]
    decisive = norm_isf(_decisive_level(alpha, pooled.p, n_min) / 2.0)

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
            b, r, se = constrained(S, ols.b)
            J, df, _ = test_at(S, b) if r else (np.inf, 0, 0.0)
            fit = ols
            if r and df > r and chi2_sf(J, df - r) >= level:
                fit = InvariantOLS(support=S, b=b, test=(J, df - r,
                    chi2_sf(J, df - r)), level=level, estimator="ils",
                    determined=r, t=np.abs(b) / np.maximum(se, 1e-300))
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
        return float(pooled.pooled_weights() @ env_risks(_embed(b, T, pooled.p), pooled.Sigma,
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


def _embed(b_S: FloatArray, S: np.ndarray, p: int) -> FloatArray:
    b = np.zeros(p)
    b[S] = b_S
    return b


def _condition_4_on_data(std: Moments, U: FloatArray) -> tuple[bool, float]:
    """Condition 1b on the directions the environment differences determine (an
    orthonormal basis ``U``, from :func:`rank_test`): the data's form of Condition 4.
    Checked on the second moments and on the within-environment covariances: Condition
    4 needs ``Delta(w)`` positive definite on every intervened coordinate, which mean
    shifts alone (rank one per environment) cannot give beyond ``|E| - 1`` directions --
    yet with an observational environment they can make ``A(w)`` positive definite on
    the span of the shifts, so the covariances must differ there too.  Returns whether
    both hold and the smaller relative margin (0 when no direction is determined; NaN,
    and no claim, when the large-p solution path does not converge)."""
    if not U.shape[1]:
        return False, 0.0
    cov = std.Sigma - np.einsum("ei,ej->eij", std.mean_x, std.mean_x)     # Cov_e(X)
    margins = [_projected_margin(U.T @ M @ U) for M in (std.Sigma, cov)]   # U' M_e U
    if any(np.isnan(m) for m in margins):
        return False, float("nan")
    return bool(min(margins) > DEFAULT_TOL), float(min(margins))


def _projected_margin(M: FloatArray) -> float:
    """Relative Condition 1b margin of the stack ``M``: the SDP up to ``SDP_MAX_DIM``
    directions; beyond, the best vertex ``w = e_k`` of the simplex (a lower bound: a
    positive value certifies the condition, and costs |E| eigenvalue problems instead
    of a cutting-plane SDP in hundreds of dimensions).  NaN when the solver fails."""
    if M.shape[1] <= SDP_MAX_DIM:
        try:
            return float(check_condition_1b(M).relative_margin)
        except SolverError:
            return float("nan")
    mean = M.mean(axis=0)
    scale = float(np.linalg.eigvalsh(mean)[-1])
    best = max(float(np.linalg.eigvalsh(Mk - mean)[0]) for Mk in M)   # A(e_k), eq. (16)
    return best / scale


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class RankTest:
    """Which directions of ``b`` the invariance conditions on every covariate determine.

    ``stat``: the smallest normalised information (below), referred to ``chi2(df)``
    with ``pvalue``, ``df = (equations) - p + 1``; ``null``: the directions not
    determined (columns, unit length), ``determined``: an orthonormal basis of the
    others; ``undetermined``: the covariates with a share of at least ``0.1`` in the
    null directions, most first.
    """

    stat: float
    df: int
    pvalue: float
    null: FloatArray
    determined: FloatArray
    undetermined: tuple


def rank_test(gmm: InvarianceGMM, b: FloatArray, *, alpha: float) -> RankTest:
    """A sequential rank test of the invariance Jacobian (Cragg and Donald 1997).

    ``gmm`` holds the invariance conditions (M) on every covariate (``df`` = ``(|E| - 1)
    q`` equations), ``b`` the fit.  Along a direction ``v`` that the environments do not
    determine (``(Sigma_e - Sigma_bar) v = 0`` on the instruments), the equations
    ``(Sigma_e - Sigma_bar) v`` are only sampling noise, whose covariance is that of the
    moments ``E_e[Z X^T v]``; weighted by its inverse (:meth:`InvarianceGMM.
    information_along`), ``s(v) = v^T P_v v`` is a J statistic, and ``min_v s(v)`` is
    about ``chi2(df - p + 1)`` when one direction is not determined (Anderson 1951;
    Cragg and Donald).

    First form: the generalised eigenvalues of the information at ``b`` against
    ``Sigma_bar / sigma_r^2`` (``sigma_r^2`` the mean risk at ``b``): it takes the
    noise of ``Z X^T v`` to be the residual's, ``Var(Z r) v^T Sigma_bar v / sigma_r^2``,
    which misses ``Cov(Z, X^T v)``.  With ``k`` null directions the ``k`` smallest sum to
    about ``chi2(k (df - p + k))``, and the count is the largest ``k`` whose hypothesis
    is not rejected at level ``alpha`` (:func:`~negdro_stats.estimation.gmm.null_count`).
    Where that form finds every direction determined, but not by ``RANK_SKIP`` times the
    critical value, its smallest value is calibrated: weight at the weakest direction
    ``v`` and solve again against ``Sigma_bar / (v^T Sigma_bar v)``, at most
    ``RANK_ITERATIONS`` times (at a fixed point ``v`` is its own eigenvector, with
    eigenvalue exactly ``s(v)``; they stop once it is twice the critical value: at p =
    1,000 the further steps moved it by 2%, at 1.2 s each), and the count is taken
    again.  (With an unintervened
    child of ``Y`` the first form put chi2(13) at 28-34 where ``min_v s(v)`` was 19-24;
    measured ratios of the two: 0.9 to 3.4.  Only where the first form finds no null
    direction: re-weighted at one direction, the others' values are not calibrated,
    and they counted 2 of Example 3's 3 null directions where the first form counted 3.)
    ``stat`` is the smallest eigenvalue against ``chi2(df - p + 1)``.  Determined
    directions grow like ``n``.
    """
    std, p, df = gmm.mom, gmm.p, gmm.df_base
    Sigma_bar = std.Sigma.mean(axis=0)
    risk = max(float(env_risks(b, std.Sigma, std.sxy, std.syy).mean()), 1e-12)
    vals, vecs = linalg.eigh(_symmetric(gmm.information(np.arange(p), b)), Sigma_bar / risk)
    dof = max(df - p + 1, 1)
    k = null_count(vals, df, alpha)
    critical = chi2_isf(alpha, dof)
    if not k and vals[0] <= RANK_SKIP * critical:
        weighted_at = np.zeros(p)
        for _ in range(RANK_ITERATIONS):
            v = vecs[:, 0] / np.linalg.norm(vecs[:, 0])
            if abs(v @ weighted_at) > 1.0 - 1e-8 or (weighted_at.any() and vals[0] > 2.0
                                                      * critical):
                break                       # a fixed point, or decided (docstring)
            vals, vecs = linalg.eigh(_symmetric(gmm.information_along(v)),
                                     Sigma_bar / float(v @ Sigma_bar @ v))
            weighted_at = v
        k = null_count(vals, df, alpha)
    null = np.arange(p) < k
    unit = vecs / np.linalg.norm(vecs, axis=0)
    share = (unit[:, null] ** 2).sum(axis=1)
    order = np.argsort(-share, kind="stable")
    determined = np.linalg.qr(vecs[:, ~null])[0] if (~null).any() else np.zeros((p, 0))
    return RankTest(stat=float(vals[0]), df=dof, pvalue=chi2_sf(vals[0], dof),
                    null=unit[:, null], determined=determined,
                    undetermined=tuple(int(j) for j in order if share[j] >= 0.1))


def _symmetric(A: FloatArray) -> FloatArray:
    return (A + A.T) / 2.0


def select_by_invariance(
    std: Moments, alpha: float, gamma: float,
    rows_cov: Callable[[FloatArray, np.ndarray], FloatArray] | None,
    cumulant: Cumulant | None,
    recentre: FloatArray | None,
    route: str | None = None,
    alg3_support: Callable[[], np.ndarray] | None = None,
) -> tuple[SelectionReport, tuple[np.ndarray, FloatArray] | None]:
    """The invariance route of ``refit="auto"`` on standardised moments (module docstring).

    Score covariances are
    :func:`~negdro_stats.estimation.gmm.gaussian_score_cov` (Isserlis) plus a fourth-cumulant
    term, ``rows_cov(b) - gaussian_score_cov(b)`` on the instruments, at the pilot when
    the rows are at hand, the fixed ``cumulant`` in bootstrap replicates, else 0.  After
    the walk (each J test a two-step GMM of its own model), iterated GMM: it is rerun with
    one weight for every support, evaluated at the chosen (pruned, continuously updated)
    fit, the cumulant re-estimated there when rows are at hand (two passes over the rows
    in all), and again while the J test rejects every support (at most
    ``SCORE_ITERATIONS`` walks with a common weight).  ``recentre`` (a bootstrap
    replicate; :attr:`SelectionReport.misfit`) recentres the bootstrap world at the
    sample's choice: it is subtracted from ``sxy`` in the invariance conditions (M) and
    in the pooled regressions; the score covariances keep the replicate's own moments.
    ``route`` (a replicate) is the sample's route: where the differences leave a
    coefficient undetermined, a replicate follows it instead of re-checking Condition 4.
    Returns the report and, when the invariance fit is reported (route ``"invariance"``,
    or ``"not identified"`` with a sharply determined fit that the J test accepts),
    ``(support, b_std)``; None means keep Algorithm 3's support and fit.
    ``alg3_support()`` gives that support (run on demand: only the route without every
    coefficient determined uses it).
    """
    pooled = std if recentre is None else replace(std, sxy=std.sxy - recentre)
    p, E = std.p, std.n_envs
    every = np.arange(p)
    n_min = float(std.n.min())
    K = Cumulant.zero(E) if cumulant is None else cumulant

    def at(fit) -> FloatArray:
        return _embed(fit.b, fit.support, p)

    # the pilot: every covariate, every residual moment (Lemma 1)
    wide = InvarianceGMM(std, instruments=every, cumulant=K, b_ref=np.zeros(p),
                         recentre=recentre)
    pilot = wide.fit(every)
    with np.errstate(divide="ignore", invalid="ignore"):
        t_pilot = np.nan_to_num(np.abs(pilot.b) / pilot.se, nan=0.0)
    order = every[np.argsort(-t_pilot, kind="stable")]
    q = instrument_budget(E, n_min, p)
    cut = critical_value(alpha, p, n_min)
    instruments = every if q >= p else _instruments(std, order, t_pilot, q, cut)
    grow_to = int((t_pilot >= norm_isf(alpha / 2)).sum())   # (select_support, 3.)

    def gmm_at(K: Cumulant, b_ref: FloatArray, own_weight: bool) -> InvarianceGMM:
        return InvarianceGMM(std, instruments=instruments, cumulant=K, b_ref=b_ref,
                             own_weight=own_weight, recentre=recentre)

    def cumulant_at(b: FloatArray, cols: np.ndarray = instruments) -> Cumulant:
        """Rows minus Isserlis, on the instruments (or ``cols``)."""
        return Cumulant(cols, rows_cov(b, cols) - gaussian_score_cov(std, b, cols))

    refresh = rows_cov is not None and cumulant is None
    if refresh:                                # one pass over the rows at the pilot
        K = cumulant_at(pilot.b)
    gmm = gmm_at(K, pilot.b, True)
    sel = select_support(gmm, order, alpha=alpha, n_min=n_min, grow_to=grow_to)
    walks = [sel]
    for k in range(SCORE_ITERATIONS):        # iterated GMM: one weight, at the choice
        if sel.fit is None or (k and not sel.rejected):
            break
        b0 = at(sel.fit)
        if refresh and k == 0:                 # second (last) pass over the rows
            K = cumulant_at(b0)
        gmm = gmm_at(K, b0, False)
        sel = select_support(gmm, order, alpha=alpha, n_min=n_min, grow_to=grow_to)
        walks.append(sel)
    sel = _best_of(gmm, walks, alpha=alpha, n_min=n_min)
    names = std.names
    # whether the environment differences determine every coefficient, at the choice
    b_sel = pilot.b if sel.fit is None else at(sel.fit)
    rank = rank_test(wide, b_sel, alpha=alpha)
    undetermined = tuple(names[j] for j in rank.undetermined)
    standing: tuple = ()                       # near copies the J test cannot tell apart

    def report(taken, reason, estimator, fit=None, exo=(np.nan, 0, np.nan), misfit=None,
               added=(), removed=(), identified=True, fixed=None):
        J, df, pvalue = ((np.nan, 0, np.nan) if fit is None else (fit.J, fit.df, fit.pvalue)
                         ) if fixed is None else fixed[:3]
        return SelectionReport(
            route=taken, reason=reason, estimator=estimator, walk=sel.walk,
            pruned=tuple(names[j] for j in sel.pruned), critical_t=sel.critical_t,
            added=tuple(names[j] for j in added), removed=tuple(names[j] for j in removed),
            J=J, df=df, pvalue=pvalue, exogeneity=exo,
            worst_se=np.nan if fit is None else fit.worst_se, gate_se=GATE_SE,
            rank_test=(rank.stat, rank.df, rank.pvalue),
            instruments=tuple(names[j] for j in instruments), cumulant=K, misfit=misfit,
            rejected=fixed is None and fit is not None and estimator != "negdro"
            and not fit.pvalue >= alpha,
            identified=identified, undetermined=undetermined,
            fixed_test=(np.nan, 0, np.nan, np.nan) if fixed is None else fixed,
            stand_ins=tuple((names[j], names[k]) for j, k in standing))

    doubts = []
    if undetermined:
        doubts.append(f"the environment differences do not determine the coefficients of "
                      f"{listed(undetermined)} (rank test of the invariance conditions on "
                      "every covariate: "
                      f"{rank.null.shape[1]} direction(s) not determined, smallest "
                      f"information chi2({rank.df}) = {rank.stat:.3g}, p = "
                      f"{rank.pvalue:.2g})")
    fit, ols = sel.fit, None
    if fit is not None and not (sel.rejected and sel.truncated):
        swapped, standing = _substitutes(gmm, pooled, fit.support, alpha=alpha)
        if not np.array_equal(swapped, fit.support):
            fit = gmm.fit_cue(swapped)
        ols = exogenous_support(gmm, pooled, fit.support, every, alpha=alpha, n_min=n_min,
                                screened=p)
        if ols.exogeneity[2] >= alpha and (ols.added or ols.removed):
            fit = gmm.fit_cue(ols.support)          # the support that will be reported
    if fit is not None and fit.worst_se > GATE_SE:
        doubts.append("the environment differences identify the selected support only "
                      f"weakly (worst standardised s.e. {fit.worst_se:.3g} > {GATE_SE:g})")
        undetermined = undetermined or tuple(names[j] for j in fit.support)
    if doubts:
        weak = "; ".join(doubts)
        if route is None:                      # the sample: Condition 4 on the data
            holds, margin = _condition_4_on_data(std, rank.determined)
            bound = 1.0 / (margin * (1.0 + gamma * E)) if margin > 0 else np.inf
            holds = holds and bound <= BIAS_MAX
        else:                                  # a replicate follows the sample's verdict
            holds, margin, bound = route == "negdro", np.nan, np.nan
        alg3_support = None if alg3_support is None else alg3_support()
        starts = [S for S in (alg3_support, None if fit is None else fit.support,
                              None if ols is None else ols.support, np.zeros(0, dtype=int))
                  if S is not None]
        built: dict[tuple, InvarianceGMM] = {}     # OLS is tested, then constrained, at
                                                   # the same b: one pass over the rows
        def gmm_on(S: np.ndarray, b_S: FloatArray) -> InvarianceGMM:
            """The residual moments of the instruments and of ``S`` itself (a child of Y
            in ``S`` shows there first), the weight and the cumulant at ``b``."""
            key = (tuple(np.asarray(S).tolist()), np.asarray(b_S, dtype=float).tobytes())
            if key not in built:
                b, R = np.zeros(p), np.union1d(instruments, S).astype(int)
                b[S] = b_S
                built[key] = InvarianceGMM(
                    std, instruments=R, cumulant=cumulant_at(b, R) if refresh else K,
                    b_ref=b, own_weight=False, recentre=recentre)
            return built[key]

        def test_at(S: np.ndarray, b_S: FloatArray) -> tuple:
            return gmm_on(S, b_S).test_at(S, b_S)

        def constrained(S: np.ndarray, b_S: FloatArray) -> tuple:
            """:func:`invariant_ls` on the continuously updated GMM fit (the two-step
            fit's many-moment bias towards OLS kept a child of Y: random half-shifted
            design p = 30, n = 2,000, seed 11, 56 equations)."""
            g = gmm_on(S, b_S)
            return invariant_ls(g.fit_cue(S), pooled, df=g.df_base, alpha=alpha)  # (b, r, se)

        # without Condition 4, only where the fixed-b test is reliable: the estimated
        # weights distort J by about m q / n (module docstring); at n = 500 with 60-75
        # equations (m q / n ~ 2) it passed children of Y (identified families flagged
        # at n = 500: error 0.10 -> 0.39)
        reliable = holds or gmm.df_base * len(instruments) <= n_min
        keep = ()                   # Algorithm 3's support, unless decisively not invariant
        if holds and alg3_support is not None and len(alg3_support):
            if test_at(alg3_support, pooled_ols(pooled, alg3_support)[0])[2] >= (
                    _decisive_level(alpha, p, n_min)):
                keep = tuple(int(j) for j in alg3_support)
        inv = None       # pooled OLS where it is invariant (efficient), else constrained
        for ils_starts in ((False, True) if reliable else ()):
            # the constrained fit on every covariate is beta* on exact moments (Condition
            # 4 or 6), where the other starts can miss the causes; its test is reliable
            # where (|E| - 1) p^2 <= n, as above
            wide_ok = ils_starts and (holds or (E - 1) * p * p <= n_min)
            if inv is None:
                inv = _invariant_ols(test_at, pooled, starts + [every] * wide_ok,
                                     alpha=alpha, n_min=n_min, keep=keep,
                                     constrained=constrained, ils_starts=ils_starts)
        if holds:
            verdict = (weak + "; Condition 1b holds on the directions they determine "
                       f"(relative margin {margin:.3g}; Theorem 4's bound 1 / (margin (1 + "
                       f"gamma |E|)) = {bound:.2g}), so Algorithm 3's fit identifies beta* if "
                       "every child of the outcome is among the intervened covariates "
                       "(Condition 4, Theorem 6), which the data cannot check")
        else:
            verdict = (weak + "; nor does Condition 1b hold clearly on the directions they "
                       f"determine (relative margin {margin:.3g}, Theorem 4's bound "
                       f"{bound:.2g} > {BIAS_MAX:g}): beta* is not identified by these data")
        if inv is not None:
            b_std = np.zeros(p)
            b_std[inv.support] = inv.b
            chosen = ", ".join(names[j] for j in inv.support) or "the empty support"
            (J, df, pv), level = inv.test, inv.level
            misfit = None if recentre is not None else _recentring(
                std, b_std, inv.support, b_std, alpha, n_min)
            how = (f"pooled OLS on {chosen}" if inv.estimator == "ols" else
                   f"least squares on {chosen} constrained by the invariance conditions "
                   f"in the {inv.determined} direction(s) they determine (pooled OLS is "
                   "not invariant there)")
            return report(
                "negdro" if holds else "not identified",
                verdict + f". Reported: {how}, the invariant fit with the smallest pooled "
                f"risk (the invariance conditions at that fixed fit: J = {J:.3g} on {df} "
                f"df, p = {pv:.2g}, accepted at level alpha / p = {level:.2g}); it is beta* "
                "if every child of the outcome is intervened on (Condition 4) or, with "
                "hidden confounding, Condition 6 holds", inv.estimator, fit,
                misfit=misfit, identified=holds, fixed=(J, df, pv, level)), (inv.support,
                                                                            b_std)
        if holds:
            return report("negdro", verdict + "; pooled OLS is invariant on none of the "
                          "supports chosen: reported Algorithm 3's fit", "negdro", fit), None
        verdict += ". Reported: "
        if ols is None or not (len(ols.support) and fit.worst_se <= GATE_SE
                               and fit.pvalue >= alpha):
            tested = "no support could be tested"
            if ols is not None:
                chosen = ", ".join(names[j] for j in ols.support) or "the empty support"
                tested = (f"the invariance fit on {chosen} has J test p = {fit.pvalue:.2g}, "
                          f"worst standardised s.e. {fit.worst_se:.3g}")
            return report("not identified", verdict + "Algorithm 3's fit, the minimiser of the "
                          "DRO objective (9), whose worst-case risk guarantee needs no "
                          f"identification ({tested})", "negdro", fit, identified=False), None
    elif ols is None:
        return report("negdro", "too few equations to test invariance on the larger supports "
                      "((|E| - 1) q must exceed the support size)", "negdro"), None
    S = ols.support
    if ols.exogeneity[2] >= alpha:                  # no sign of confounding: OLS is efficient
        b_std, estimator = np.zeros(p), "ols"
        b_std[S] = pooled_ols(pooled, S)[0]
    else:
        b_std, estimator = at(fit), "gmm"
    misfit = None if recentre is not None else _recentring(      # the sample only
        std, at(fit), S, b_std if estimator == "ols" else None, alpha, n_min)
    if doubts:
        reason = (verdict + "the invariance fit that the J test accepts, sharply determined "
                  f"on its support (worst standardised s.e. {fit.worst_se:.3g} <= "
                  f"{GATE_SE:g}), one invariant fit of possibly several")
    elif not fit.pvalue >= alpha:
        reason = (f"the J test rejects invariance (level {alpha:g}) on the reported support "
                  f"(p = {fit.pvalue:.2g}): no support tried is invariant")
    else:
        reason = ("the J test accepts the support, and the environment differences "
                  "determine every coefficient")
    return report("not identified" if doubts else "invariance", reason, estimator, fit,
                  ols.exogeneity, misfit, ols.added, ols.removed,
                  identified=not doubts), (S, b_std)
