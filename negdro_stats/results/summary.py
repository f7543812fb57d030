"""The summaries of results as text, HTML and LaTeX: statsmodels' ``Summary`` tables from
small helpers that each read the results' fields (the header, the coefficients, the
environments, the verdict line and the numbered notes), and the path's table.

Imported on the first ``summary()``: statsmodels' table module is the slowest import
of the package's, and a fit does not need it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from statsmodels.iolib.table import SimpleTable

from .._resampling import DEFAULT_N_BOOT
from .._validation import listed
from ..exceptions import DataError
from ..identification.conditions import identification_advice
from ..inference.robust import ROBUST_TABLE_MAX_P, RobustSet, too_few_moments
from ..inference.stratified import SHOWN_FREQ, BootstrapResult
from .labels import COV_SHORT, METHOD_LABELS, REFIT_LABELS, REFIT_SHORT, VERDICT_LABELS
from .tables import (
    WIDTH,
    NegDROSummary,
    Table,
    fmt_bound,
    fmt_num,
    fmt_p,
    grid,
    pair_widths,
    shorten,
    wrap_note,
)
from .verdicts import (
    condition_1b,
    conditional,
    declared,
    fit_problems,
    gamma_not_used,
    on_condition_4,
    rests_on_line,
    risks_differ,
)

__all__ = ["NegDROSummary", "build_summary", "path_summary"]

Results = Any   # a NegDROResults (results imports this module, so it cannot be named here)

def _method_label(res: Results) -> str:
    """What produced the coefficients: the support's choice + the refit on it."""
    sel, refit = res.selection, res.solver.refit
    if refit == "none":                               # Algorithms 1, 2, or an empty support
        return METHOD_LABELS[(res.solver.method, res.solver.inner)]
    if sel is None:                                   # refit="negdro" / "invariant" asked
        return "NegDRO (paper)" if refit == "negdro" else REFIT_LABELS[refit]
    support = "J tests" if sel.route == "invariance" else "Alg. 3"
    return f"{support} + {REFIT_SHORT[refit]}"


def _is_intercept(res: Results, j: int) -> bool:
    """The appended constant column (``fit_intercept=True``): in every model, never selected."""
    return res.fit_intercept and j == len(res.params) - 1


def _robust_disagrees(res: Results, robust: RobustSet | None) -> list[str]:
    """A selection whose rank test finds every coefficient determined, beside robust
    intervals that are unbounded for a selected coefficient: the rank test is a test at
    level alpha, and the robust set says the data allow other invariant fits.  (Not the
    intercept, which the robust set leaves out: NaN, never "bounded".)"""
    sel = res.selection
    if robust is None or robust.empty or sel is None or sel.exact or not sel.identified \
            or sel.undetermined:
        return []
    const = res.intercept
    selected = [name for k, name in enumerate(res.params.index)
                if res.support.iloc[k] and k != const]
    bounded = robust.bounded_of(selected)          # (only these: ~15 fits each)
    names = [name for name in selected if not bounded[name]]
    return [f"the robust intervals of {listed(names, 5)} are unbounded: the data allow "
            "other invariant fits (the selection's rank test found every coefficient "
            "determined), so read the standard errors with care"] if names else []


def _unreliable(rs: RobustSet) -> str:
    """What the set's verdict and intervals rest on where the chi2 reference does not
    hold (:attr:`RobustSet.reliable`), else ''."""
    return "" if rs.reliable else (
        f"  The chi2 reference is unreliable on these data: resampling the rows inflates "
        f"the statistic {rs.bartlett:.3g}-fold (a few rows dominate the scores' fourth "
        f"moments), so quantiles x {rs.scale:.3f} are a rough guide only; a log transform "
        "of skewed measurements may help.")


def _verdict(problems: list[str], robust: RobustSet | None, rests: str | None
             ) -> str | None:
    """One line above the tables: what the answer rests on
    (:func:`~negdro_stats.results.verdicts.rests_on_line`), an empty robust set, then
    the problems."""
    lines = [] if rests is None else [rests + "."]
    if robust is not None and robust.empty:
        lines.append(f"WARNING: NO INVARIANT LINEAR MODEL is consistent with these data: the "
                     f"invariance test rejects every b (least AR = {robust.statistic:.4g} > "
                     f"{robust.critical:.4g}, the {robust.reference} quantile at level "
                     f"{robust.alpha:g}); no interval is reported." + _unreliable(robust))
    if problems:
        lines.append("WARNING: " + "; ".join(problems) + " -- see the notes below.")
    return "\n".join(lines) or None



def _robust_or_reason(res: Results, alpha: float, kind: str, asked: bool,
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
            f"{rs.critical:.4g}, {rs.reference}); its p-values and intervals cost about 15 "
            f"fits per coefficient, so with {p} they are not computed for the summary: "
            "res.conf_int(kind='robust'), or summary(intervals='robust').")
    causes = rs.causes()
    unbounded = rs.bounded.index[~rs.bounded & rs.estimate.notna()]
    state = ("The set is empty (no b passes the test)." if rs.empty else
             ("Every interval is bounded" if not len(unbounded) else "+-inf where the "
              f"environments leave a coefficient undetermined ({listed(unbounded, 5)})")
             + f".  Direct causes at family-wise error {rs.alpha:g} (Holm on robust p): "
             + (", ".join(causes.index[causes]) or "none") + "." + _unreliable(rs))
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


def _if_condition_4(res: Results) -> str:
    return (f"valid if every child of {res.endog_name} is intervened on (Condition 4; with "
            "hidden confounding, Condition 6): the data cannot check this "
            "(res.interval_kind)")


def _wald_note(res: Results, alpha: float) -> str:
    """What the Wald intervals are conditional on."""
    what = (f"b +- z_{{{1 - alpha / 2:g}}} x std err ({res.cov_method}; cov_params()), "
            "conditional on the selected support")
    if conditional(res):
        return (f"Intervals: Wald, {what}, and {_if_condition_4(res)}.  P>|z| is the "
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


def build_summary(res: Results, *, alpha: float, show: str, ci_method: str,
                   intervals: str) -> NegDROSummary:
    """The summary: the header, the coefficients, the environments, then the verdict
    line and the numbered notes (each part from one helper below)."""
    kind = res.interval_kind if intervals == "auto" else intervals
    top, width = _header_table(res, kind)
    rows = np.arange(len(res.params))
    if show == "selected":
        rows = rows[res.support.to_numpy()
                    | (_shown_bootstrap(res, kind) is not None
                       and res.support_freq.fillna(0).to_numpy() >= SHOWN_FREQ)]
    problems = fit_problems(res)
    checked, in_table, robust_note = _robust_or_reason(res, alpha, kind, intervals != "auto",
                                                       problems)
    problems += _robust_disagrees(res, checked)
    robust = checked if in_table else None
    if kind == "robust" and robust is None:             # not computable: the analytic ones
        kind = "wald"
    env_rows = [[f"{n:g}", f"{w:.3f}", fmt_num(r)]
                for n, w, r in zip(res.nobs_env, res.weights, res.risks, strict=True)]
    ci = (robust.conf_int() if kind == "robust" else
          res.conf_int(alpha, ci_method if kind == "bootstrap" else None, kind=kind))
    smry = NegDROSummary()
    smry.tables = [top, _coef_table(res, rows, ci, alpha, kind, robust, width),
                   grid(env_rows, ["n_e", "weight w_e", "risk R_e(b)"],
                          [str(e) for e in res.weights.index], "environment", width)]
    verdict = _verdict(problems, checked, rests_on_line(res))
    smry.verdict = None if verdict is None else "\n".join(
        wrap_note(line, width, indent="") for line in verdict.split("\n"))
    notes = [*_selection_notes(res, kind),
             *[note for note in (_wald_note(res, alpha) if kind == "wald" else None,
                                 robust_note) if note is not None],
             _bootstrap_note(res, ci_method, kind),
             *_outside(res, ci, kind, robust),
             *_fit_notes(res, shown=len(rows), show=show)]
    smry.add_extra_txt([wrap_note(f"[{k}] {t}", width)
                        for k, t in enumerate(notes, start=1)])
    return smry


def _shown_bootstrap(res: Results, kind: str) -> BootstrapResult | None:
    """The bootstrap the summary reads: the fit's own (``fit(n_boot=B)``), so that the
    summary does not depend on what was called before, or, where its
    intervals were asked for by name (``kind``), the one run on request."""
    return res.bootstrap if kind == "bootstrap" else res.fit_bootstrap


def _header_table(res: Results, kind: str) -> tuple[SimpleTable, int]:
    """The two-column header and the width of every table (WIDTH, unless a value is too
    long for it)."""
    boot = _shown_bootstrap(res, kind)
    left = [
        ("Dep. Variable:", f"{res.endog_name} (first column)" if res.outcome_first_column
         and len(res.endog_name) <= 4 else shorten(res.endog_name, 19)),
        ("Method:", _method_label(res)),
        ("Solver:", METHOD_LABELS[(res.solver.method, res.solver.inner)]),
        ("gamma:", f"{res.gamma:g}" + (" (not used)" if gamma_not_used(res) else "")),
        ("No. Observations:", f"{res.nobs:g}"),
        ("No. Environments:", f"{res.n_envs}"),
        ("Boot reps:", "on request" if res.bootstrap_deferred else
         "0" if boot is None else f"{boot.n_boot}"),
        ("R-squared:", f"{res.rsquared:.3f}"),                 # (pooled: rsquared)
    ]
    ident = res.identification
    right = [
        ("Cond. 1b rel. margin:", "n/a" if ident is None else
         f"{ident.relative_margin:.3g} {condition_1b(res)}"),
        ("Selected:", f"{int(res.support.sum())} of {len(res.params)}"),
        ("Identified:", "if unconfounded" if declared(res) else VERDICT_LABELS[res.verdict]),
        ("Converged:", "yes" if res.converged else "NO"),
        ("Iterations:", f"{res.n_iter}"),
        ("Stationarity:", f"{res.grad_norm:.2e}"),
        ("Objective Phi_mu:", f"{res.objective:.4g}"),
        ("Cov. Type:", COV_SHORT.get(res.solver.refit, "n/a")),
    ]
    widths = pair_widths([left, right], WIDTH, sep=2)
    top = Table([[a, b, c, d] for (a, b), (c, d) in zip(left, right, strict=True)],
                      txt_fmt={"data_fmts": ["%s"], "empty_cell": "", "colsep": "  ",
                               "data_aligns": "lrlr", "colwidths": widths})
    return top, sum(widths) + 2 * 3


def _coef_table(res: Results, rows: np.ndarray, ci: Any, alpha: float, kind: str,
                robust: RobustSet | None, width: int) -> SimpleTable:
    """The coefficients of ``rows`` with the intervals of ``kind``: Wald (the analytic
    standard errors and their p-values), the bootstrap's (its standard errors,
    intervals and selection frequencies) or robust (the robust intervals beside the
    analytic standard errors, or the bootstrap's selection frequencies); the robust
    p-values wherever ``robust`` is given.  At most 7 columns (78 wide): ``std coef``
    gives way to the robust p beside another kind's intervals."""
    has_boot = _shown_bootstrap(res, kind) is not None           # (never runs a pending one)
    beside = robust is not None and kind != "robust"
    headers = ["coef"] + ([] if beside else ["std coef"]) + ["selected"] + {
        "wald": ["std err", "P>|z|"], "bootstrap": ["boot se"],
        "robust": [] if has_boot else ["std err"]}[kind] + (
        ["robust p"] if robust is not None else []) + [f"[{alpha / 2:g}", f"{1 - alpha / 2:g}]"]
    headers += ["sel. freq"] if has_boot and kind != "wald" else []
    coef_rows = []
    for j in rows:
        selected = bool(res.support.iloc[j])
        row = [fmt_num(res.params.iloc[j])] + ([] if beside else [fmt_num(res.std_params.iloc[j])])
        row.append("always" if _is_intercept(res, j) else "yes" if selected else "-")
        never = kind == "bootstrap" and not selected and res.support_freq.iloc[j] == 0
        if kind == "bootstrap":
            row.append("-" if never else fmt_num(res.boot_se.iloc[j]))
        elif kind == "wald" or not has_boot:             # (conditional on the support)
            row.append(fmt_num(res.bse.iloc[j]) if selected else "-")
        if kind == "wald":
            row.append(fmt_p(res.pvalues.iloc[j]) if selected else "-")
        if robust is not None:
            row.append(fmt_p(robust.pvalues.iloc[j]))
        if kind == "robust" and robust.empty:
            row += ["empty", "empty"]
        elif (selected or kind != "wald") and not never:
            row += [fmt_bound(ci["lower"].iloc[j]), fmt_bound(ci["upper"].iloc[j])]
        else:
            row += ["-", "-"]
        if has_boot and kind != "wald":
            row.append(f"{res.support_freq.iloc[j]:.2f}")
        coef_rows.append(row)
    return grid(coef_rows or [["-"] * len(headers)], headers,
                  [str(res.params.index[j]) for j in rows] or ["(none)"], "", width)


def _outside(res: Results, ci: Any, kind: str, robust: RobustSet | None) -> list[str]:
    """A note on the coefficients whose interval excludes their own estimate (e.g.
    X2 = 0 beside [-0.047, -0.001]): the estimate is the selection's, the
    robust interval the test inversion's, and they disagree there."""
    if kind != "robust" or robust is None or robust.empty:
        return []
    b, lo, hi = res.params.to_numpy(), ci["lower"].to_numpy(), ci["upper"].to_numpy()
    with np.errstate(invalid="ignore"):
        out = np.flatnonzero((lo > b) | (hi < b))
    if not len(out):
        return []
    names = [str(res.params.index[j]) for j in out]
    return [f"The robust intervals of {listed(names, 5)} exclude the estimate itself: the "
            "estimate is the selection's (a covariate not selected is 0), the interval "
            "the invariance test's, which rejects that value (robust p below alpha).  A "
            "weak effect the selection missed, or a model the test finds misspecified: "
            "read these coefficients with care."]


def _std_coef_rule(res: Results) -> str:
    return "std coef = coef x RMS(X_j) / RMS(Y)" + (
        ", root mean squares about the pooled means" if res.fit_intercept else "")


def _selection_notes(res: Results, kind: str) -> list[str]:
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
            f"{pvalue:.3g}, accepted at level alpha / p = {level:.2g}." + (
                "" if on_4 else "  The linear reading of invariance chooses "
                f"{listed(sel.contested[0], 5) or 'the empty support'} (the warning above): "
                "the data cannot tell which holds." if sel.contested else "  This is beta* "
                "if every child of the outcome is among the intervened covariates (Condition "
                "4) or, with hidden confounding, Condition 6 holds, which the data cannot "
                "check."),
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
                     "source keeps no rows and carries the fourth moments of a few "
                     "covariates only (negdro_stats.data.fourth.MAX_P).  Exact for "
                     "Gaussian rows; with heavier or lighter tails the tests are "
                     "approximate (a frame in memory, or fewer covariates, gives the exact "
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


def _bootstrap_note(res: Results, ci_method: str, kind: str) -> str:
    """What the bootstrap did (or that there is none), and how to read its columns."""
    if (boot := _shown_bootstrap(res, kind)) is not None:        # (never runs a pending one)
        unconverged = int((~boot.converged & ~boot.failed).sum())
        blocks = getattr(getattr(res.model, "data", None), "blocks", None)
        unit = ("" if blocks is None else f" (by blocks: each environment's "
                f"{blocks.n_blocks} random blocks of rows drawn with replacement)")
        freq = ("sel. freq = share of refits that selected the covariate ('-': none did, "
                "the refits' interval is [0, 0])")
        what = {
            "bootstrap": f"{ci_method} intervals"
                         + (f", {_if_condition_4(res)}" if conditional(res) else "")
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


def _fit_notes(res: Results, *, shown: int, show: str) -> list[str]:
    """The rest: rows not shown, the refit, identification, convergence, the equal-risk
    test, the intercept and population moments."""
    s, ident, notes = res.settings, res.identification, []
    if res.outcome_first_column:
        notes.append(f"The outcome is the first column, {res.endog_name!r}, regressed on the "
                     "others: outcome= was not given.")
    if show == "selected" and shown < len(res.params):
        notes.append(f"{len(res.params) - shown} covariates neither selected nor selected "
                     f"in >= {SHOWN_FREQ:.0%} of refits are not shown; summary(show='all') "
                     "lists them.")
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
    if not res.converged:
        notes.append(f"The solver did not reach tol = {s['tol']:g}: treat the estimate "
                     "with care, or raise max_iter.")
    if res.invariance is not None:
        notes.append(str(res.invariance))
    if ident is not None and res.fit_intercept:
        notes.append("The margin leaves out the constant column, which is never intervened "
                     "on.")
    if res.population:
        notes.append("Fitted on population moments: No. Observations is infinite.")
    return notes


def path_summary(path: Any) -> NegDROSummary:
    """:meth:`PathResult.summary`: the path as a table, with the support of each gamma and
    a note on why the estimates may coincide."""
    frame = path.to_frame()
    names = path.support.columns
    rows = [[f"{row['selected']:d}", fmt_num(row["max risk"]), fmt_num(row["mean risk"]),
             fmt_num(row["Phi_mu"]), "n/a" if np.isnan(row["equal-risk p"])
             else f"{row['equal-risk p']:.3g}", row["refit"]]
            for _, row in frame.iterrows()]
    table = grid(rows, ["selected", "max risk", "mean risk", "Phi_mu", "risk p",
                          "refit"], [f"{g:g}" for g in path.gammas], "gamma")
    supports = {tuple(names[m]) for m in path.support.to_numpy()}
    smry = NegDROSummary()
    smry.tables = [table]
    notes = ["risk p = p-value of the equal-risk test at the estimate; coefficients: "
             ".params, supports: .support."]
    if len(supports) == 1 and (path.refit != "negdro").all():
        notes.append("Every gamma selected the same support "
                     f"({', '.join(map(str, next(iter(supports)))) or 'none'}); with the "
                     "default refit the coefficients on it do not depend on gamma.  "
                     "refit='negdro' shows Phi_mu's own path (the paper's Figures 5 and 7).")
    smry.add_extra_txt([wrap_note(f"[{k}] {t}")
                        for k, t in enumerate(notes, start=1)])
    return smry
