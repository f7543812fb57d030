"""The estimator's pipeline: :func:`solve`, the one entry point that fits moments (samples,
population moments and bootstrap replicates alike)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import cache

import numpy as np
from threadpoolctl import ThreadpoolController

from .._typing import FloatArray
from ..data.dependence import LongRun
from ..data.moments import Moments, block
from ..exceptions import SolverError
from .algorithms import invariant_refit, run_method
from .gmm import Cumulant
from .objective import env_risks, gradient, objective
from .options import SelectionReport, SolverOptions, SolverOutput
from .selection.standardise import centred_problem, exact_fit, standardised_cov
from .selection.verdict import select_by_invariance

__all__ = ["solve"]

SMALL_P = 64             # up to here one BLAS thread is faster (small products)


def solve(
    mom: Moments,
    options: SolverOptions | None = None,
    *,
    score_cov: Callable[[FloatArray, np.ndarray], FloatArray] | None = None,
    cumulant: Cumulant | None = None,
    recentre: FloatArray | None = None,
    route: str | None = None,
    long_run: LongRun | None = None,
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
    ``long_run``: where the rows are dependent (:class:`~negdro_stats.data.dependence.
    LongRun`; ``score_cov`` is then the rows' long-run covariance): the score
    covariances' Gaussian form is multiplied by its share, every test counts the rows
    by its degrees of freedom, and the selection's equal-risk tests read the residual
    column of ``score_cov``, not the i.i.d. variances of the moments; None for
    independent rows (a replicate's comes with ``cumulant``).

    The settings are those of :class:`SolverOptions` (default: its defaults); the
    output's ``options`` has the defaults resolved from the data filled in.
    """
    options = SolverOptions() if options is None else options
    if options.fixed:
        return _with_intercept(mom, options, score_cov, cumulant, recentre, route, long_run)
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
            b_inv = invariant_refit(block(std.Sigma, S, S), std.sxy[:, S])
            if b_inv is not None:
                b_std[S], used_refit = b_inv, "invariant"
        elif options.refit == "auto" and (exact := exact_fit(std)) is not None:
            S, b_std, report = exact
            used_refit = report.estimator
        elif options.refit == "auto":
            report, chosen = _select(std, (d, s_y), options, score_cov, cumulant, recentre,
                                     route, lambda: np.asarray(algorithm()[2], dtype=int),
                                     long_run)
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


def _select(std: Moments, scales: tuple[FloatArray, float], options: SolverOptions,
            score_cov: Callable | None, cumulant: Cumulant | None,
            recentre: FloatArray | None, route: str | None,
            alg3_support: Callable[[], np.ndarray], long_run: LongRun | None
            ) -> tuple[SelectionReport, tuple[np.ndarray, FloatArray] | None]:
    """:func:`select_by_invariance` on the standardised moments ``std`` (``scales = (d,
    s_y)``, the covariates' and the outcome's scales): the rows' score covariance, the
    cumulant and the recentring taken to that scale, the report's cumulant, misfit and
    constrained fit (its ``(P, C_d)``, ``S`` sorted) back to the original one."""
    d, s_y = scales
    unit, rows_cov = standardised_cov(score_cov, d, s_y)
    with _blas().limit(limits=1 if std.p <= SMALL_P else None):
        report, chosen = select_by_invariance(
            std, options.test_level, options.gamma, rows_cov,
            None if cumulant is None else cumulant.scaled(1.0 / unit),
            None if recentre is None else recentre / (d * s_y), route,
            alg3_support=alg3_support, long_run=long_run)
    report = replace(report, cumulant=report.cumulant.scaled(unit),
                     misfit=None if report.misfit is None else report.misfit * (d * s_y))
    if chosen is not None and report.constrained is not None:
        o = np.argsort(chosen[0])
        P, C = (M[np.ix_(o, o)] for M in report.constrained)
        u = s_y / d[np.asarray(chosen[0])[o]]
        report = replace(report, constrained=(P * np.divide.outer(u, u),
                                              C * np.multiply.outer(u, u)))
    return report, chosen


@cache
def _blas() -> ThreadpoolController:
    """The BLAS libraries loaded (numpy's and scipy's), found once: a fresh
    ``threadpool_limits`` looks for them on every call (0.24 ms, 1 ms under load: a
    fifth of a bootstrap replicate at p = 10)."""
    return ThreadpoolController()


def _with_intercept(mom: Moments, options: SolverOptions, score_cov, cumulant, recentre,
                    route, long_run) -> SolverOutput:
    """:func:`solve` with the constant column ``options.fixed`` profiled by the pooled
    level condition: the slopes from the pooled-centred moments of the other covariates,
    the intercept ``ybar - b^T xbar``.  The risks are unchanged (``R_e`` of the centred
    problem is the risk of the model with that intercept), and so is the residual, so
    the rows' score covariance of the centred covariates follows exactly from that of
    the covariates and the constant."""
    (const,) = options.fixed
    slopes, centred, full, rows_cov = centred_problem(mom, const, score_cov)
    out = solve(centred, replace(options, fixed=()), score_cov=rows_cov, cumulant=cumulant,
                recentre=recentre, route=route, long_run=long_run)
    support = np.ones(mom.p, dtype=bool)
    support[slopes] = out.support
    return replace(out, b=full(out.b), support=support,
                   options=replace(out.options, fixed=options.fixed))
