"""The selection's verdict: whether the environments decide, and what is reported
(the invariance fit, pooled OLS, Theorem 6's least-risk invariant fit or Algorithm
3's), with the bootstrap's recentring."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from ..._stats import chi2_sf
from ..._typing import FloatArray
from ..._validation import listed
from ...data.dependence import LongRun
from ...data.moments import Moments
from ...identification import RISK_WARN_LEVEL
from ...identification.determined import condition_4_on_data, covariance_shift
from ..gmm import GATE_SE, Cumulant, GMMFit
from ..options import ALARM_SHARE, OPEN_SHARE, SelectionReport
from .exogeneity import ExogenousSupport, critical_value, pooled_ols, pooled_t
from .least_risk import (
    ConstrainedLS,
    FixedFits,
    contest,
    invariant_ls,
    least_risk_fit,
    ols_contrast,
    own_condition_test,
    reliable_instruments,
)
from .rank import RankTest, rank_test
from .walk import Walked, refine, walk

__all__ = ["select_by_invariance"]

BIAS_MAX = 0.5           # Algorithm 3 trusted where Theorem 4's bound is at most this


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
      below the cut of :func:`~negdro_stats.estimation.selection.exogeneity.augment_support` --
      those that the sample says are not causes -- so that replicates do not find, half the time, a
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

def select_by_invariance(
    std: Moments, alpha: float, gamma: float,
    rows_cov: Callable[[FloatArray, np.ndarray], FloatArray] | None,
    cumulant: Cumulant | None,
    recentre: FloatArray | None,
    route: str | None = None,
    alg3_support: Callable[[], np.ndarray] | None = None,
    long_run: LongRun | None = None,
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
    ``(support, b_std)``; None means keep Algorithm 3's support and fit, as where no
    invariant linear model fits the sample (:func:`_no_invariant_fit`: Algorithm 3's
    fit of objective (9) at ``gamma``, decided here, once).
    ``alg3_support()`` gives that support (run on demand: only the route without every
    coefficient determined uses it).  ``long_run``: where ``rows_cov`` is the rows' long-run
    covariance (dependent rows; :attr:`Walked.long_run`),
    read by the equal-risk tests too
    (:meth:`~negdro_stats.estimation.selection.walk.Walked.risk_test`).
    """
    w = walk(std, alpha, rows_cov, cumulant, recentre, long_run=long_run)
    # whether the environment differences determine every coefficient, at the choice
    at = w.pilot.b if w.sel.fit is None else w.at(w.sel.fit)
    rank = rank_test(w.rank_gmm(at), at, alpha=alpha)
    fit, ols, standing = refine(w)
    doubts, undetermined = _doubts(w, rank, fit)
    decided, verdict = None, ""
    if doubts:
        decided, verdict = _undetermined(w, rank, fit, ols, "; ".join(doubts), gamma=gamma,
                                         route=route, alg3_support=alg3_support)
    elif ols is None:
        decided = Decision(route="negdro", estimator="negdro", reason=(
            "too few equations to test invariance on the larger supports ((|E| - 1) q must "
            "exceed the support size)")), None
    if decided is None:
        decided = _determined(w, fit, ols, verdict, doubted=bool(doubts),
                              undetermined=undetermined)
    decision, chosen = decided
    report = _report(w, rank, decision, undetermined, standing)
    if route is None and (why := _no_invariant_fit(w, report, chosen)):
        return _objective_9(report, gamma, why), None
    return report, chosen


def _no_invariant_fit(w: Walked, report: SelectionReport,
                      chosen: tuple[np.ndarray, FloatArray] | None) -> str:
    """Why no fit the selection tried is invariant, decisively (level
    ``RISK_WARN_LEVEL``): the J test rejects every support tried, or the equal-risk test
    rejects at the route's fit (:meth:`Walked.risk_test`).  Empty where the route's fit
    may be invariant, or where Algorithm 3's fit is reported already (``chosen`` None).
    (Whether any linear model is invariant is the verdict's question, on the joint
    robust set: :func:`~negdro_stats.results.verdicts.no_invariant_model`.)"""
    if chosen is None:
        return ""
    if report.rejected and report.pvalue < RISK_WARN_LEVEL:
        return f"the J test rejects every support tried, p = {report.pvalue:.2g}"
    risks = w.risk_test(w.std, chosen[1])
    if risks.pvalue < RISK_WARN_LEVEL:
        return (f"the environments' risks differ at the invariance route's fit, p = "
                f"{risks.pvalue:.2g}")
    return ""


def _objective_9(report: SelectionReport, gamma: float, why: str) -> SelectionReport:
    """The report where no fit the selection tried is invariant (``why``,
    :attr:`SelectionReport.no_invariant_fit`): Algorithm 3's fit of (9) is reported, the
    trade-off at ``gamma`` that needs no invariance."""
    return replace(report, estimator="negdro", no_invariant_fit=why, reason=(
        f"{report.reason}.  No fit the selection tried is invariant ({why}): reported "
        f"Algorithm 3's fit of NegDRO's objective (9) at gamma = {gamma:g}, the trade-off "
        "between the worst environment's risk and the spread of the risks, which needs no "
        "invariance"))


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Decision:
    """What the route reports and why (the stage's part of a :class:`SelectionReport`):
    ``fit`` the invariance fit whose J test is reported (None: none), ``fixed`` the test
    at a fixed fit ``(J, df, pvalue, level)`` where that fit is reported instead."""

    route: str
    reason: str
    estimator: str
    fit: GMMFit | None = None
    exogeneity: tuple = (np.nan, 0, np.nan)
    misfit: FloatArray | None = None
    added: tuple = ()
    removed: tuple = ()
    identified: bool = True
    fixed: tuple | None = None
    focused: tuple = (np.nan, 0, np.nan, "")
    contrast: tuple = (np.nan, 0, np.nan)
    constrained: ConstrainedLS | None = None
    contested: tuple = ()
    rival: tuple = ()


def _report(w: Walked, rank: RankTest, d: Decision, undetermined: tuple,
            standing: tuple) -> SelectionReport:
    """The :class:`SelectionReport` of a decision, with the walk's and the rank test's
    facts."""
    names, fit, sel = w.std.names, d.fit, w.sel
    J, df, pvalue = ((np.nan, 0, np.nan) if fit is None else (fit.J, fit.df, fit.pvalue)
                     ) if d.fixed is None else d.fixed[:3]
    return SelectionReport(
        route=d.route, reason=d.reason, estimator=d.estimator, walk=sel.walk,
        pruned=tuple(names[j] for j in sel.pruned), critical_t=sel.critical_t,
        added=tuple(names[j] for j in d.added), removed=tuple(names[j] for j in d.removed),
        J=J, df=df, pvalue=pvalue, exogeneity=d.exogeneity,
        worst_se=np.nan if fit is None else fit.worst_se, gate_se=GATE_SE,
        rank_test=(rank.stat, rank.df, rank.pvalue),
        instruments=tuple(names[j] for j in w.instruments), cumulant=w.cumulant,
        misfit=d.misfit,
        rejected=d.fixed is None and fit is not None and d.estimator != "negdro"
        and not fit.pvalue >= w.alpha,
        identified=d.identified, undetermined=undetermined,
        fixed_test=(np.nan, 0, np.nan, np.nan) if d.fixed is None else d.fixed,
        focused_test=d.focused, contrast_test=d.contrast,
        stand_ins=tuple((names[j], names[k]) for j, k in standing), test_level=w.alpha,
        contested=d.contested, rival=d.rival,
        left_open=() if w.recentre is not None else tuple(
            names[j] for j in np.flatnonzero(rank.open_share >= OPEN_SHARE)),
        open_span=None if w.recentre is not None else rank.open_span,
        constrained=None if d.constrained is None else (d.constrained.projector,
                                                        d.constrained.cov_determined),
        covariance_shift=covariance_shift(w.std) if undetermined
        and w.recentre is None else (np.nan, 0, np.nan))


def _doubts(w: Walked, rank: RankTest, fit: GMMFit | None) -> tuple[list[str], tuple]:
    """Why the environments may not decide, in words (empty: they do), and the
    covariates left undetermined: those the rank test names, else, where the fit is
    only weakly determined, its support."""
    names = w.std.names
    undetermined = tuple(names[j] for j in rank.undetermined)
    doubts = []
    if undetermined:
        doubts.append(f"the environment differences do not determine the coefficients of "
                      f"{listed(undetermined)} (rank test of the invariance conditions on "
                      "every covariate: "
                      f"{rank.null.shape[1]} direction(s) not determined, smallest "
                      f"information chi2({rank.df}) = {rank.stat:.3g}, p = "
                      f"{rank.pvalue:.2g})")
    if fit is not None and fit.worst_se > GATE_SE:
        doubts.append("the environment differences identify the selected support only "
                      f"weakly (worst standardised s.e. {fit.worst_se:.3g} > {GATE_SE:g})")
        undetermined = undetermined or tuple(names[j] for j in fit.support)
    return doubts, undetermined


def _undetermined(w: Walked, rank: RankTest, fit: GMMFit | None,
                  ols: ExogenousSupport | None, weak: str, *, gamma: float,
                  route: str | None, alg3_support: Callable[[], np.ndarray] | None):
    """Where the environment differences leave directions undetermined: Condition 4 on
    the data (the sample; a replicate follows the sample's ``route``), then Theorem 6's
    least-risk invariant fit (:func:`least_risk_fit`) where one passes, else Algorithm 3's
    fit.  Returns ``((decision, chosen), verdict)``, or ``(None, verdict)`` where the
    sharply determined invariance fit is to be reported after all (:func:`_determined`,
    with ``verdict`` leading its reason)."""
    std, alpha, names = w.std, w.alpha, w.std.names
    if route is None:                      # the sample: Condition 4 on the data
        holds, margin = condition_4_on_data(std, rank.determined)
        bound = 1.0 / (margin * (1.0 + gamma * std.n_envs)) if margin > 0 else np.inf
        holds = holds and bound <= BIAS_MAX
    else:                                  # a replicate follows the sample's verdict
        holds, margin, bound = route == "negdro", np.nan, np.nan
    alg3 = None if alg3_support is None else alg3_support()
    inv, readings = least_risk_fit(w, fit, ols, holds=holds, alg3_support=alg3,
                                instruments=w.instruments)
    reportable = ols is not None and bool(len(ols.support)) and (
        fit.worst_se <= GATE_SE and fit.pvalue >= alpha)      # the walk's fit (_determined)
    few = reliable_instruments(w)
    if inv is None and not holds and not reportable and few < len(w.instruments):
        # Algorithm 3's fall-back is next: first the search with a test that is
        # reliable on fewer instruments (least_risk_fit), since the fall-back can keep a
        # child of Y.  Not in place of a reportable walk's fit: at n = 500 the weaker
        # test passes children of Y there (measured: docs/design.rst, Measured choices)
        inv, readings = least_risk_fit(w, fit, ols, holds=holds, alg3_support=alg3,
                                    instruments=w.instruments_within(few))
    if holds:
        verdict = (weak + "; Condition 1b holds on the directions they determine "
                   f"(margin {margin:.3g} there; Theorem 4's bound 1 / (margin (1 + "
                   f"gamma |E|)) = {bound:.2g}), so Algorithm 3's fit identifies beta* if "
                   "every child of the outcome is among the intervened covariates "
                   "(Condition 4, Theorem 6), which the data cannot check")
    else:
        verdict = (weak + "; nor does Condition 1b hold clearly on the directions they "
                   f"determine (margin {margin:.3g} there, Theorem 4's bound "
                   f"{bound:.2g} > {BIAS_MAX:g}), so Algorithm 3's fit may be biased there")
    contested, identified = (), holds
    if readings is not None:                 # the data cannot tell which reading holds
        (contested, said), identified = contest(readings, names), False
        verdict += said
    if inv is not None:
        return _least_risk_decision(w, fit, inv, verdict, identified, contested), verdict
    if holds:
        return (Decision(route="negdro", estimator="negdro", fit=fit, identified=False,
                         reason=(
            verdict + "; pooled OLS is invariant on none of the supports chosen, which "
            "Condition 4 makes unlikely, so the data cannot tell whether Algorithm 3's "
            "fit, reported, is beta*: not identified")), None), verdict
    if not reportable:
        tested = "no support could be tested"
        if ols is not None:
            chosen = ", ".join(names[j] for j in ols.support) or "the empty support"
            tested = (f"the invariance fit on {chosen} has J test p = {fit.pvalue:.2g}, "
                      f"worst standardised s.e. {fit.worst_se:.3g}")
        return (Decision(route="not identified", estimator="negdro", fit=fit,
                         identified=False, reason=(
                             verdict + ": beta* is not identified by these data. Reported: "
                             "Algorithm 3's fit, the minimiser of the DRO objective (9), whose "
                             "worst-case risk guarantee needs no identification "
                             f"({tested})")), None), verdict
    return None, verdict + ". Reported: "


def _least_risk_decision(w: Walked, fit: GMMFit | None, inv, verdict: str,
                         identified: bool, contested: tuple) -> tuple[Decision, tuple]:
    """The decision that reports Theorem 6's least-risk invariant fit ``inv``
    (:func:`least_risk_fit`) and the chosen ``(support, b)``, standardised."""
    std, recentre, alpha, n_min, names = w.std, w.recentre, w.alpha, w.n_min, w.std.names
    b_std = np.zeros(std.p)
    b_std[inv.support] = inv.b
    chosen = ", ".join(names[j] for j in inv.support) or "the empty support"
    (J, df, pv), level = inv.test, inv.level
    misfit = None if recentre is not None else _recentring(
        std, b_std, inv.support, b_std, alpha, n_min)
    how = (f"pooled OLS on {chosen}" if inv.estimator == "ols" else
           f"least squares on {chosen} constrained by the invariance conditions "
           f"in the {inv.determined} direction(s) they determine (pooled OLS is "
           "not invariant there)")
    decision = Decision(
        route="negdro" if identified else "not identified", estimator=inv.estimator,
        focused=own_condition_test(w, inv) if recentre is None else (np.nan, 0, np.nan, ""),
        contrast=ols_contrast(w, inv) if recentre is None else (np.nan, 0, np.nan),
        reason=verdict + f". Reported: {how}, the invariant fit with the smallest pooled "
        f"risk (the invariance conditions at that fixed fit: J = {J:.3g} on {df} "
        f"df, p = {pv:.2g}, accepted at level alpha / p = {level:.2g})", fit=fit,
        misfit=misfit,
        identified=identified, fixed=(J, df, pv, level), constrained=inv.ils,
        contested=contested)
    return decision, (inv.support, b_std)


def _determined(w: Walked, fit: GMMFit, ols: ExogenousSupport, verdict: str, *,
                doubted: bool, undetermined: tuple = ()
                ) -> tuple[Decision, tuple[np.ndarray, FloatArray]]:
    """The invariance route's report: pooled OLS on the support where the Hausman
    contrast finds no confounding (efficient, and the least-risk fit on the support),
    else the invariance GMM.  ``doubted`` where the environments leave directions open
    (``verdict`` says why; ``undetermined`` the covariates they leave open, by name):
    this sharply determined fit is one invariant fit of possibly several (its
    :func:`_rival` is named), and the report, unless pooled OLS is, is
    :func:`~negdro_stats.estimation.selection.least_risk.invariant_ls` on its support -- the GMM's
    value along the directions the conditions determine, pooled least squares along the
    others, Theorem 6's least-risk invariant fit there.  The GMM's own value along an
    open direction is noise: the walk's many weak moments make its standard errors
    look sharp, also for an unshifted noise covariate that the rank test leaves
    undetermined (measured: docs/design.rst, Measured choices)."""
    std, alpha, n_min = w.std, w.alpha, w.n_min
    S, ils, rival = ols.support, None, ()
    if ols.exogeneity[2] >= alpha:                  # no sign of confounding: OLS is efficient
        b_std, estimator = np.zeros(std.p), "ols"
        b_std[S] = pooled_ols(w.pooled, S)[0]
    elif doubted:       # Theorem 6 on the fit's support (the docstring)
        S, b_std, estimator = fit.support, np.zeros(std.p), "ils"
        ils = invariant_ls(w.gmm, S, w.pooled, alpha=alpha, fit=fit)
        b_std[S] = ils.b
    else:
        b_std, estimator = w.at(fit), "gmm"
    misfit = None if w.recentre is not None else _recentring(      # the sample only
        std, b_std if estimator == "ils" else w.at(fit), S,
        None if estimator == "gmm" else b_std, alpha, n_min)
    if doubted and w.recentre is None:                              # (the sample only)
        rival = _rival(w, S, [std.names.index(v) for v in undetermined],
                       constrained=estimator == "ils")
    if doubted and estimator == "ols":
        reason = (verdict + "pooled OLS on the walk's support, whose invariance fit the J "
                  f"test accepts (worst standardised s.e. {fit.worst_se:.3g} <= "
                  f"{GATE_SE:g}) and where the Hausman contrast finds no confounding: the "
                  "invariant fit with the smallest pooled risk on that support (Theorem 6)")
    elif doubted:
        reason = (verdict + "least squares on the support of the invariance fit that the "
                  "J test accepts (worst standardised s.e. "
                  f"{fit.worst_se:.3g} <= {GATE_SE:g}), constrained by the invariance "
                  "conditions in the directions they determine and pooled where they do "
                  "not: the invariant fit with the smallest pooled risk on that support "
                  "(Theorem 6), not the GMM's value in directions the data leave open")
    elif not fit.pvalue >= alpha:
        reason = (f"the J test rejects invariance (level {alpha:g}) on the reported support "
                  f"(p = {fit.pvalue:.2g}): no support tried is invariant")
    else:
        reason = ("the J test accepts the support, and the environment differences "
                  "determine every coefficient")
    if rival:
        name, J, df, pvalue = rival
        reason += (f"; but the same fit with {name} added passes the invariance test at "
                   f"that fixed fit too (J = {J:.3g} on {df} df, p = {pvalue:.2g}) with a smaller "
                   f"pooled risk: {name} is a cause that no environment shifts, missing here, "
                   "or a descendant of the outcome whose shift these data do not show, and "
                   "they cannot tell which: beta* is not identified")
    return Decision(route="not identified" if doubted else "invariance", reason=reason,
                    estimator=estimator, fit=fit, exogeneity=ols.exogeneity, misfit=misfit,
                    added=() if estimator == "ils" else ols.added,
                    removed=() if estimator == "ils" else ols.removed,
                    identified=not doubted, constrained=ils, rival=rival), (S, b_std)


def _rival(w: Walked, S: np.ndarray, undetermined: list, *, constrained: bool) -> tuple:
    """A fit of smaller pooled risk than the walk's support ``S`` gives that the data
    cannot tell from invariant, where ``S`` is reported with directions left open
    (:func:`_determined`): pooled OLS on ``S + {j}`` (``constrained``, where OLS on
    ``S`` is not invariant and the report is :func:`invariant_ls`: that fit on ``S +
    {j}``, tested with as many fewer degrees of freedom as it determines), ``j`` among
    the ``undetermined`` covariates (indices) by its pooled ``|t|`` there (at least
    :func:`critical_value`, largest first), the first that the invariance test at that
    fixed fit accepts at ``alpha`` (the linear reading of :func:`least_risk_fit`, on as
    many instruments as it is reliable on, :func:`reliable_instruments`).  ``(name, J, df,
    pvalue)``, or ``()`` where there is none.  A rival is another fit: it loads on ``j``
    decisively (``|t|`` at least that value: a constrained fit that holds ``j`` at
    about 0 is the fit on ``S`` again), and, as pooled OLS, ``j``'s own condition does
    not reject (:meth:`InvarianceGMM.own_tests_at_ols`, ``|E| - 1`` df, which an
    omnibus J over every instrument dilutes).

    Theorem 6 makes ``beta*`` the invariant fit of least pooled risk over every support,
    not the least on the walk's: the walk stops at the first support the J test
    accepts, and a cause that no environment shifts is invariant in or out of it.  Two
    invariant fits differ only along directions the environments leave open (Theorem
    6's proof: ``(Sigma_e - Sigma_f)(b - b') = 0``), and such a cause is undetermined, so
    only the undetermined covariates are candidates: a candidate the rank test sees
    shifted would break the invariance of the fit it joins.  Where a rival exists it is
    that cause or a descendant of Y whose shift these data do not show, and they cannot
    tell which.  (With every covariate a candidate, descendants of Y that the rank test
    sees shifted but this test does not reject are rivals too, and good fits lose their
    claim; measured: docs/design.rst, Measured choices.)"""
    rest = np.setdiff1d(np.asarray(undetermined, dtype=int), S)
    if not len(rest):
        return ()
    t = pooled_t(w.pooled, S, rest)
    q = min(reliable_instruments(w), len(w.instruments))
    fixed = FixedFits(w, w.instruments if q == len(w.instruments)
                         else w.instruments_within(q))
    crit = critical_value(w.alpha / ALARM_SHARE, w.std.p, w.n_min)   # (alarm_level)
    for j in rest[np.argsort(-t, kind="stable")][:np.count_nonzero(t >= crit)]:
        T = np.sort(np.append(S, j))
        at_j = int(np.searchsorted(T, j))
        b, r = pooled_ols(w.pooled, T)[0], 0
        if constrained:
            fit = invariant_ls(fixed.gmm_on(T, b), T, w.pooled, alpha=w.alpha)
            if abs(fit.b[at_j]) < crit * fit.se[at_j]:     # the same fit as on S
                continue
            b, r = fit.b, fit.determined
        elif fixed.gmm_on(T, b).own_tests_at_ols(T, b, [j])[2][0] < w.alpha:
            continue                                    # j's own condition rejects
        J, df, _ = fixed.test_at(T, b)
        if df > r and (pvalue := chi2_sf(J, df - r)) >= w.alpha:
            return w.std.names[j], J, df - r, pvalue
    return ()
