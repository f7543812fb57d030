"""The summary's notes in full (``summary(detail=True)``, and the collapsible block of
its HTML): how the support and the coefficients were chosen, what each kind of interval
assumes, what the bootstrap did, and the rest of the fit's facts; each note from one
function that reads the results' fields."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._resampling import DEFAULT_N_BOOT
from .._validation import listed
from ..exceptions import DataError
from ..identification.conditions import identification_advice
from ..inference.robust import ROBUST_TABLE_MAX_P, RobustSet, too_few_moments
from ..inference.stratified import BootstrapResult
from .verdicts import (
    condition_1b,
    conditional,
    declared,
    gamma_not_used,
    on_condition_4,
    risks_differ,
)

__all__ = ["alarm_notes", "bootstrap_note", "excluded", "fit_notes", "if_condition_4", "outside",
           "robust_disagrees", "robust_or_reason", "selection_notes", "shown_bootstrap",
           "unreliable", "wald_note"]

Results = Any   # a NegDROResults (results imports this module's importer)


def robust_disagrees(res: Results, robust: RobustSet | None) -> list[str]:
    """Where the robust set, not empty, says more than the selection: a selection whose
    rank test finds every coefficient determined, beside robust intervals that are
    unbounded for a selected coefficient (the rank test is a test at level alpha, and
    the robust set says the data allow other invariant fits).  (Not the intercept, which
    the robust set leaves out: NaN, never "bounded".  A rejected fit beside a set that
    is not empty is not "rejected": :func:`~.verdicts.no_invariant_model`.)"""
    sel = res.selection
    if (robust is None or robust.empty or sel is None or sel.exact
            or res.verdict == "rejected"):
        return []
    if not sel.identified or sel.undetermined:
        return []
    const = res.intercept
    selected = [name for k, name in enumerate(res.params.index)
                if res.support.iloc[k] and k != const]
    bounded = robust.bounded_of(selected)          # (only these: ~15 fits each)
    names = [name for name in selected if not bounded[name]]
    return [f"the robust intervals of {listed(names, 5)} are unbounded: weakly identified "
            "(the selection's rank test found every coefficient determined, yet the data "
            "allow other invariant fits), so read the standard errors with care"
            ] if names else []


def unreliable(rs: RobustSet) -> str:
    """What the set's verdict and intervals rest on where the chi2 reference does not
    hold (:attr:`RobustSet.reliable`), else ''."""
    return "" if rs.reliable else (
        f"  The chi2 reference is unreliable on these data: resampling the rows inflates "
        f"the statistic {rs.bartlett:.3g}-fold (a few rows dominate the scores' fourth "
        f"moments), so quantiles x {rs.scale:.3f} are a rough guide only; a log transform "
        "of skewed measurements may help.")


def robust_or_reason(res: Results, alpha: float, kind: str, asked: bool,
                      problems: list[str]) -> tuple[RobustSet | None, bool, str | None]:
    """The robust set the summary uses or None, whether its p-values (and, for ``kind``
    ``"robust"``, its intervals) fill the table, and the note that says why (or why
    not).  Computed for the robust kind, beside Theorem 6's least-risk fit (robust p
    beside the conditional intervals), and beside Wald intervals where the fit warns
    (an empty set leads the warning line)."""
    if not conditional(res) and (kind == "bootstrap" or kind == "wald" and not problems):
        return None, False, None
    try:
        rs = res.robust_set(alpha)
    except DataError as err:
        return None, False, f"Robust intervals not computed: {err}"
    p = int(rs.estimate.notna().sum())
    if kind != "robust" and (rs.empty or p > ROBUST_TABLE_MAX_P):
        return rs, False, None if rs.empty else (
            f"The robust set is not empty (least AR = {rs.statistic:.4g} <= "
            f"{rs.critical:.4g}, {rs.reference}); its p-values cost a few fits per "
            f"coefficient and its intervals about 15, so with {p} they are not computed for "
            "the summary: res.robust_pvalues, res.conf_int(kind='robust'), or "
            "summary(intervals='robust').")
    causes = rs.causes()
    state = ("The set is empty (no b passes the test)." if rs.empty else
             ("An interval of +-inf: the environments leave that coefficient "
              "undetermined.  " if kind == "robust" else "")
             + f"Direct causes at family-wise error {rs.alpha:g} (Holm on robust p): "
             + (", ".join(causes.index[causes]) or "none") + "." + unreliable(rs))
    tested = ("every covariate's" if len(rs.instruments) == rs.estimate.notna().sum()
              else f"{len(rs.instruments)} covariates' (those whose second moments vary "
              "most across environments; too few rows for all)")
    test = (f"the invariance test of {tested} residual moments and of the risks "
            f"({_SUBVECTOR_TESTS[rs.test].format(df=rs.df_sub)} at level {rs.alpha:g}"
            + (f"; quantiles x {rs.scale:.3f}, the bootstrap's Bartlett factor"
               if rs.scale > 1.0 else "") + ")")
    if kind != "robust":
        return rs, True, (f"robust p: the p-value of b_j = 0 by {test}, valid however weak "
                          "the identification and without Condition 4; the robust "
                          "intervals (res.conf_int(kind='robust')) are those b_j at which "
                          f"it does not reject.  {state}")
    why = ("asked for" if asked else
           "shown instead of the bootstrap's because of the warning above: where "
           "identification is weak or invariance is rejected, a bootstrap of the fit "
           "gives confidence the data do not support" if problems else
           "shown instead of the bootstrap's because the environment risks differ at the "
           f"estimate (p = {res.invariance.pvalue:.2g}; the note below)"
           if risks_differ(res) and res.fit_bootstrap is not None else
           "the default without fit(n_boot=B)")
    why += "" if asked else "; res.interval_kind"
    return rs, True, (f"Intervals: robust ({why}): the b_j at which "
                      f"{test} does not reject, valid however weak the identification; "
                      f"robust p = its p-value of b_j = 0.  {state}")


def if_condition_4(res: Results) -> str:
    return (f"valid if every child of {res.endog_name} is intervened on (Condition 4; with "
            "hidden confounding, Condition 6): the data cannot check this "
            "(res.interval_kind)")


def wald_note(res: Results, alpha: float) -> str:
    """What the Wald intervals are conditional on."""
    what = (f"b +- z_{{{1 - alpha / 2:g}}} x std err ({res.cov_method}; cov_params()), "
            "conditional on the selected support")
    if conditional(res):
        return (f"Intervals: Wald, {what}, and {if_condition_4(res)}.  P>|z| is the "
                "same conditional test of b_j = 0; robust p needs neither condition.  The "
                "bootstrap's intervals include the selection's variability: "
                "res.conf_int(kind='bootstrap').")
    if too_few_moments(res.model.data.moments, res.intercept) is not None:
        return (f"Intervals: Wald, {what} (res.interval_kind; the rows allow too few "
                "moment conditions for robust ones: res.robust_set() says why).")
    return (f"Intervals: Wald, {what} (res.interval_kind; the robust ones cost about 15 "
            "fits per coefficient: summary(intervals='robust')).")


_SUBVECTOR_TESTS = {"kj": "Kleibergen's KJ test: score chi2(1), J chi2({df} - 1)",
                    "ar": "subvector Anderson-Rubin, chi2({df})"}


def _format_test(test: tuple) -> str:
    stat, df, pvalue = test
    return f"chi2({df}) = {stat:.3g}, p = {pvalue:.3g}"


def shown_bootstrap(res: Results, kind: str) -> BootstrapResult | None:
    """The bootstrap the summary reads: the fit's own (``fit(n_boot=B)``), so that the
    summary does not depend on what was called before, or, where its
    intervals were asked for by name (``kind``), the one run on request."""
    return res.bootstrap if kind == "bootstrap" else res.fit_bootstrap


def excluded(res: Results, ci: Any, kind: str, robust: RobustSet | None) -> list[str]:
    """The coefficients whose robust interval excludes their own estimate (e.g. X2 = 0
    beside [-0.047, -0.001]), where the table shows robust intervals."""
    if kind != "robust" or robust is None or robust.empty:
        return []
    b, lo, hi = res.params.to_numpy(), ci["lower"].to_numpy(), ci["upper"].to_numpy()
    with np.errstate(invalid="ignore"):
        return [str(res.params.index[j]) for j in np.flatnonzero((lo > b) | (hi < b))]


def outside(res: Results, ci: Any, kind: str, robust: RobustSet | None) -> list[str]:
    """A note on the coefficients of :func:`excluded`: the estimate is the selection's,
    the robust interval the test inversion's, and they disagree there."""
    names = excluded(res, ci, kind, robust)
    if not names:
        return []
    return [f"The robust intervals of {listed(names, 5)} exclude the estimate itself: the "
            "estimate is the selection's (a covariate not selected is 0), the interval "
            "the invariance test's, which rejects that value (robust p below alpha).  A "
            "weak effect the selection missed, or a model the test finds misspecified: "
            "read these coefficients with care."]


def _std_coef_rule(res: Results) -> str:
    return "std coef = coef x RMS(X_j) / RMS(Y)" + (
        ", root mean squares about the pooled means" if res.fit_intercept else "")


def _least_risk_reading(sel: Any) -> str:
    """What a least-risk fit that is not "if Condition 4" is: one of two readings that
    the data cannot tell apart, a fit the data cannot tell invariant (the warning says
    why), or ``beta*`` under Condition 4 or 6."""
    if sel.contested:
        return (f"  The linear reading of invariance chooses "
                f"{listed(sel.contested[0], 5) or 'the empty support'} (the warning above): "
                "the data cannot tell which holds.")
    if sel.narrow:
        return "  The data cannot tell whether it is beta* (the warning above)."
    return ("  This is beta* if every child of the outcome is among the intervened "
            "covariates (Condition 4) or, with hidden confounding, Condition 6 holds, which "
            "the data cannot check.")


def selection_notes(res: Results, kind: str) -> list[str]:
    """How the support and the coefficients were chosen (the first notes)."""
    sel = res.selection
    on_4 = sel is not None and on_condition_4(res)
    if sel is not None and sel.exact:
        return [f"{_std_coef_rule(res)}.  Reported: pooled OLS, because "
                f"{sel.reason}."]
    if sel is not None and np.isfinite(sel.fixed_test[3]):
        J, df, pvalue, level = sel.fixed_test
        tested = sel.fixed_test_requires
        fitted = (f"pooled OLS fit passes the invariance test at that fixed fit ({tested}; "
                  "no estimation from the differences), with the smallest pooled risk "
                  "(BIC); pooled OLS on it is reported" if sel.estimator == "ols" else
                  f"fit passes the invariance test at that fit ({tested}), with the "
                  "smallest pooled risk (BIC); reported: least squares constrained by the "
                  "invariance conditions where the differences determine the coefficients "
                  "(pooled OLS was not invariant: hidden confounding, or a child of the "
                  "outcome)")
        notes = [
            f"{_std_coef_rule(res)}.  The environment differences do not "
            "determine the coefficients, so the support is the one, among those whose "
            f"{fitted}.  Test at the reported fit: J = {J:.3g}, df = {df}, p = "
            f"{pvalue:.3g}, accepted at level alpha / p = {level:.2g}."
            + ("" if on_4 else _least_risk_reading(sel)),
        ]
    elif sel is not None and sel.estimator != "negdro":
        notes = [
            f"{_std_coef_rule(res)}.  Support chosen by invariance: GMM-BIC "
            "over nested supports of the gradient-invariance conditions (Lemma 1), "
            + ("no support passed the J test" if sel.rejected else
               "grown until the J test accepts") + ", pruned by abs(t) >= "
            f"{sel.critical_t:.3g}" + (f" (removed: {', '.join(sel.pruned)})" if sel.pruned
                                       else "") + f"; J = {sel.J:.3g}, df = {sel.df}, "
            f"p = {sel.pvalue:.3g}.",
            *(["WARNING: the J test rejects invariance on the reported support (no support "
               "from the BIC choice on passed it); the invariance assumption may be "
               "violated."] if sel.rejected else []),
            ("Hausman contrast of pooled OLS with the invariance GMM on the support "
             + _format_test(sel.exogeneity) + ": " + (
                "not rejected, so pooled OLS on the support is reported (efficient)."
                if sel.estimator == "ols" else "rejected (hidden confounding, or a child "
                "of the outcome in the support), so the invariance GMM is reported.")
             + (f"  Added by their pooled t (the invariance fit agrees): "
                f"{', '.join(sel.added)}." if sel.added else "")
             + (f"  Removed (pooled OLS and the invariance fit disagree most: a child "
                f"of the outcome?): {', '.join(sel.removed)}." if sel.removed else "")),
        ]
    else:
        notes = [
            f"{_std_coef_rule(res)}; Algorithm 3 keeps covariates with "
            "|std coef| >= c0 and refits on them.",
        ]
        if sel is not None:
            notes.append(f"Invariance selection not used: {sel.reason}; Algorithm 3's "
                         "support and Phi_mu fit are reported.")
    if sel is not None and not len(sel.cumulant.cols) and not res.population:
        notes.append("The J tests used the Gaussian form of the score covariances: the "
                     "source cannot be read again (batches from an iterator) and carries "
                     "the fourth moments of a few covariates only "
                     "(negdro_stats.data.fourth.MAX_P).  Exact for Gaussian rows; with "
                     "heavier or lighter tails the tests are approximate (a frame, "
                     "Parquet, CSV or Dask source, or fewer covariates, gives the rows' "
                     "form).")
    open_, more = "" if sel is None else ", ".join(sel.undetermined), (
        " (more environments, or interventions on these covariates, would determine them).")
    if on_4:
        notes.insert(0, ("Identified as declared, if unconfounded (RESTS ON)" if declared(res) else
                         f"Identified if every child of {res.endog_name} is intervened on "
                         "(Condition 4; with hidden confounding, Condition 6), which the "
                         "data cannot check") + f": {sel.reason}." + (
                         f"  The robust intervals assume neither condition: those of "
                         f"{open_} are (-inf, inf)" + more if kind == "robust" and open_
                         else ""))
    elif sel is not None and not sel.identified:
        notes.insert(0, f"NOT IDENTIFIED: {sel.reason}.  The intervals of {open_} are "
                     "(-inf, inf) and their standard errors inf: the data are consistent "
                     "with other values of them" + more)
    return notes


def bootstrap_note(res: Results, ci_method: str, kind: str) -> str:
    """What the bootstrap did (or that there is none), and how to read its columns."""
    if (boot := shown_bootstrap(res, kind)) is not None:        # (never runs a pending one)
        unconverged = int((~boot.converged & ~boot.failed).sum())
        blocks = getattr(getattr(res.model, "data", None), "blocks", None)
        unit = ("" if blocks is None else f" (by blocks: each environment's "
                f"{blocks.n_blocks} random blocks of rows drawn with replacement)")
        freq = ("sel. freq = share of refits that selected the covariate (0.00: none "
                "did, and the refits' interval is [0, 0])")
        what = {
            "bootstrap": f"{ci_method} intervals"
                         + (f", {if_condition_4(res)}" if conditional(res) else "")
                         + f"; {freq}.  Intervals of a thresholded estimator are not "
                         "normal: read them with sel. freq.",
            "robust": f"{freq}; boot se and the bootstrap's intervals: "
                      "summary(intervals='bootstrap').",
            "wald": "its standard errors, intervals and selection frequencies: "
                    "summary(intervals='bootstrap'), res.conf_int(kind='bootstrap').",
        }[kind]
        return (f"Bootstrap: {boot.n_boot} stratified refits of the whole "
                f"estimator{unit}; {what}"
                + (f"  {int(boot.failed.sum())} refits failed (left out)."
                   if boot.failed.any() else "")
                + (f"  {unconverged} refits stopped before tol (kept; 'Converged' "
                   "above is the fit's own)." if unconverged else ""))
    analytic = ("" if kind == "wald" else "std err: analytic, conditional on the selected "
                f"support ({res.cov_method}; cov_params()).  ")
    if res.bootstrap_deferred:
        return (f"{analytic}The bootstrap ({DEFAULT_N_BOOT} stratified refits of the whole "
                "estimator, selection included) runs on request: res.run_bootstrap(), "
                "then res.boot_se, res.support_freq, summary(intervals='bootstrap'); or "
                "fit(n_boot=B) to run it with the fit and show it here.")
    return (f"{analytic}No bootstrap (n_boot=0, or a model built from moments)"
            + ("; robust intervals: summary(intervals='robust')." if kind == "wald" else "."))


def fit_notes(res: Results) -> list[str]:
    """The rest: the refit, identification, gamma, the equal-risk test, the intercept,
    then :func:`alarm_notes`."""
    s, ident, notes = res.settings, res.identification, []
    if res.solver.refit == "invariant":
        notes.append("Coefficients on the support refitted by gradient invariance, eq. (31); "
                     "Stationarity refers to the last Phi_mu stage.")
    elif s.get("refit") == "invariant" and res.solver.refit == "negdro":
        notes.append("The gradient-invariance refit is not identified on the support (the "
                     "environments' second moments differ too little there); the Phi_mu "
                     "fit is reported.")
    if ident is not None and not ident.holds and on_condition_4(res):
        notes.append(f"Condition 1b fails (relative margin {ident.relative_margin:.3g}), as "
                     "where environments shift some covariates only: the estimate rests on "
                     "Condition 4 or 6 (above).")
    elif ident is not None and not ident.holds:
        notes.append(f"{ident.failure}; " + identification_advice(res.can_resample))
    elif ident is not None and condition_1b(res) == "unclear":
        notes.append(f"Cond. 1b 'unclear': the sample margin {ident.relative_margin:.3g} is "
                     "positive, but the rank test does not reject a direction v that the "
                     "environments leave undetermined, along which A(w) v = 0 for every "
                     "weighting w: the data are consistent with a population margin of 0 ("
                     "NegDRO.diagnose() gives a confidence bound).")
    why = gamma_not_used(res)
    if why is not None:
        notes.append(f"gamma = {res.gamma:g} does not enter these coefficients: {why}; "
                     "the trade-off along gamma: fit_path(), fit(refit='negdro').")
    if res.invariance is not None:
        notes.append(str(res.invariance))
    if ident is not None and res.fit_intercept:
        notes.append("The margin leaves out the constant column, which is never intervened "
                     "on.")
    return notes + alarm_notes(res)


def alarm_notes(res: Results) -> list[str]:
    """The notes a short summary keeps too: the outcome taken from the first column,
    a solver that stopped before ``tol``, population moments."""
    notes = []
    if res.outcome_first_column:
        notes.append(f"The outcome is the first column, {res.endog_name!r}, regressed on the "
                     "others: outcome= was not given.")
    if not res.converged:
        notes.append(f"The solver did not reach tol = {res.settings['tol']:g}: treat the "
                     "estimate with care, or raise max_iter.")
    if res.population:
        notes.append("Fitted on population moments: No. Observations is infinite.")
    return notes
