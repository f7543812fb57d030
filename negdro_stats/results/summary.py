"""The summaries of results as text, HTML and LaTeX: statsmodels' ``Summary`` tables from
small helpers that each read the results' fields (the verdict lines, the header, the
coefficients, the environments, a few lines below), with the numbered notes of
:mod:`~negdro_stats.results.notes` on demand (``summary(detail=True)``, and the
collapsible block of the HTML); and the path's table.

Imported on the first ``summary()``: statsmodels' table module is the slowest import
of the package's, and a fit does not need it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from statsmodels.iolib.table import SimpleTable

from .._validation import listed
from ..identification.report import percent
from ..inference.robust import RobustSet
from ..inference.stratified import SHOWN_FREQ
from .labels import COV_SHORT, METHOD_LABELS, REFIT_LABELS, REFIT_SHORT, VERDICT_LABELS
from .notes import (
    alarm_notes,
    bootstrap_note,
    excluded,
    fit_notes,
    outside,
    robust_disagrees,
    robust_or_reason,
    selection_notes,
    shown_bootstrap,
    unreliable,
    wald_note,
)
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
    direct_causes,
    gamma_not_used,
    problems,
    rests_on_line,
    rows_look_dependent,
)

__all__ = ["FOLD_MIN", "NegDROSummary", "build_summary", "path_summary"]

Results = Any   # a NegDROResults (results imports this module, so it cannot be named here)
FOLD_MIN = 4    # unselected rows with nothing to show fold into one line from this many on


def build_summary(res: Results, *, alpha: float, show: str | None, ci_method: str,
                  intervals: str, detail: bool) -> NegDROSummary:
    """The summary: the verdict lines, the header, the coefficients, the environments,
    then a few lines (the default) or the numbered notes (``detail``); the notes are
    the HTML's collapsible block either way.  ``show``: None folds the unselected rows
    with nothing to show (:func:`_rows`), unless ``detail`` and p <= ``SHOW_ALL_MAX_P``."""
    kind = res.interval_kind if intervals == "auto" else intervals
    found = sorted(problems(res), key=lambda problem: problem.last)
    checked, in_table, robust_note = robust_or_reason(
        res, alpha, kind, intervals != "auto", [problem.said for problem in found])
    disagree = robust_disagrees(res, checked)
    robust = checked if in_table else None
    if kind == "robust" and robust is None:             # not computable: the analytic ones
        kind = "wald"
    if kind == "robust":                  # only the shown rows' (~15 fits each)
        rows, folded = _rows(res, kind, robust, None, show)
        ci = robust.conf_int(list(res.params.index[rows]))
    else:
        ci = res.conf_int(alpha, ci_method if kind == "bootstrap" else None, kind=kind)
        rows, folded = _rows(res, kind, robust, ci, show)
    top, width = _header_table(res, kind, detail)
    smry = NegDROSummary()
    smry.tables = [top, _coef_table(res, rows, ci, alpha, kind, robust, width, detail,
                                    ci_method)]
    envs = _env_table(res, width, detail)
    smry.tables += [] if envs is None else [envs]
    said = [problem.said if detail else problem.head for problem in found] + disagree
    smry.verdict = "\n".join(wrap_note(line, width, indent="")
                             for line in _verdict(res, said, checked, detail))
    notes = [*selection_notes(res, kind),
             *[note for note in (wald_note(res, alpha) if kind == "wald" else None,
                                 robust_note) if note is not None],
             bootstrap_note(res, ci_method, kind),
             *outside(res, ci, kind, robust),
             *fit_notes(res)]
    numbered = [wrap_note(f"[{k}] {t}", width) for k, t in enumerate(notes, start=1)]
    lines: list[str | None] = [_folded(res, folded, kind, robust)] if len(folded) else []
    if detail:
        smry.add_extra_txt([wrap_note(line, width, indent="") for line in
                            [*lines, _closest_line(res)] if line is not None] + numbered)
        return smry
    lines += [*alarm_notes(res), _outside_short(res, ci, kind, robust),
              _causes_line(res, robust, alpha), _closest_line(res),
              None if envs is not None else _env_line(res),
              f"{len(notes)} notes: summary(detail=True)"
              + ("; the bootstrap: res.run_bootstrap()." if res.bootstrap_deferred else ".")]
    smry.add_extra_txt([wrap_note(line, width, indent="  ") for line in lines
                        if line is not None])
    smry.details = "\n".join(numbered)
    return smry


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


def _invariance_p(res: Results) -> float:
    """The invariance test at the reported fit, the one the notes quote: at the fixed fit
    of a least-risk route, else the J test of the selected support (NaN without one)."""
    sel = res.selection
    if sel is None:
        return float("nan")
    return float(sel.fixed_test[2] if np.isfinite(sel.fixed_test[3]) else sel.pvalue)


def _verdict(res: Results, said: list[str], robust: RobustSet | None, detail: bool
             ) -> list[str]:
    """The lines above the tables: an empty robust set, the problems (``said``), then
    what the answer rests on (:func:`~negdro_stats.results.verdicts.rests_on_line`; for
    an identified fit, the invariance it rests on)."""
    rests = rests_on_line(res)
    if rests is None and res.verdict == "identified":
        p = _invariance_p(res)
        tested = "" if np.isnan(p) else f" (tested at the fit: p = {p:.3g})"
        rests = (f"RESTS ON: {res.endog_name}'s mechanism being the same in every "
                 f"environment{tested}, whose differences determine every coefficient")
    lines = []
    if robust is not None and robust.empty:
        independent = " if the rows are independent" if rows_look_dependent(res) else ""
        lines.append(f"WARNING: NO INVARIANT LINEAR MODEL is consistent with these "
                     f"data{independent}: the invariance test rejects every b (least AR = "
                     f"{robust.statistic:.4g} > "
                     f"{robust.critical:.4g}, the {robust.reference} quantile at level "
                     f"{robust.alpha:g}); no interval is reported." + unreliable(robust))
    if said:
        lines.append("WARNING: " + "; ".join(said) + (" -- see the notes below." if detail
                                                      else "."))
    return lines + ([] if rests is None else [rests + "."])


def _header_table(res: Results, kind: str, detail: bool) -> tuple[SimpleTable, int]:
    """The two-column header and the width of every table (WIDTH, unless a value is too
    long for it); ``detail`` adds the solver's facts."""
    ident, used = res.identification, gamma_not_used(res) is None
    boot = shown_bootstrap(res, kind)
    p_inv, p_risk = _invariance_p(res), getattr(res.invariance, "pvalue", float("nan"))
    dependence = res.model.data.dependence
    cov = ("Cov. Type:", COV_SHORT.get(res.solver.refit, "n/a") if dependence is None
           else dependence.label)
    left = [
        ("Dep. Variable:", f"{res.endog_name} (first column)" if res.outcome_first_column
         and len(res.endog_name) <= 4 else shorten(res.endog_name, 19)),
        ("Method:", _method_label(res)),
        ("No. Observations:", f"{res.nobs:g}"),
        ("No. Environments:", f"{res.n_envs}" if detail or res.nobs_env.nunique() > 1
         else f"{res.n_envs} x {res.nobs_env.iloc[0]:g}"),
        ("R-squared:", f"{res.rsquared:.3f}"),                 # (pooled: rsquared)
        ("gamma:", f"{res.gamma:g}") if used and not detail else cov,
    ]
    if used and not detail and dependence is not None:    # (every number rests on it)
        left.append(cov)
    right = [
        ("Verdict:", "if unconfounded" if declared(res) else VERDICT_LABELS[res.verdict]),
        ("Selected:", f"{int(res.support.sum())} of {len(res.params)}"),
        ("Cond. 1b margin:", "n/a" if ident is None else
         f"{ident.relative_margin:.3g} {condition_1b(res)}"),
        ("Invariance test p:", "n/a" if np.isnan(p_inv) else f"{p_inv:.3g}"),
        ("Equal risks p:", "n/a" if np.isnan(p_risk) else f"{p_risk:.3g}"),
        ("Risks within:", "n/a" if res.invariance is None or np.isnan(res.invariance.delta)
         else f"{percent(res.invariance.delta)} (bound {percent(res.invariance.delta_upper)})"),
        ("Converged:", "yes" if res.converged else "NO"),
    ]
    right += [("", "")] * (len(left) - len(right))
    left += [("", "")] * (len(right) - len(left))
    if detail:
        left += [("Solver:", METHOD_LABELS[(res.solver.method, res.solver.inner)]),
                 ("gamma:", f"{res.gamma:g}" + ("" if used else " (not used)")),
                 ("Boot reps:", "on request" if res.bootstrap_deferred else
                  "0" if boot is None else f"{boot.n_boot}")]
        right += [("Iterations:", f"{res.n_iter}"), ("Stationarity:", f"{res.grad_norm:.2e}"),
                  ("Objective Phi_mu:", f"{res.objective:.4g}")]
    widths = pair_widths([left, right], WIDTH, sep=2)
    top = Table([[a, b, c, d] for (a, b), (c, d) in zip(left, right, strict=True)],
                txt_fmt={"data_fmts": ["%s"], "empty_cell": "", "colsep": "  ",
                         "data_aligns": "lrlr", "colwidths": widths})
    return top, sum(widths) + 2 * 3


def _rows(res: Results, kind: str, robust: RobustSet | None, ci: Any | None,
          show: str | None) -> tuple[np.ndarray, np.ndarray]:
    """The coefficient rows shown and those folded into one line: every row with
    ``show="all"``; else the selected ones, the intercept, and any unselected one with
    something to show (a robust p below the intervals' alpha, an interval ``ci`` that
    excludes 0, a bootstrap selection frequency of at least ``SHOWN_FREQ``); the rest
    fold when ``show="selected"`` or, by default, when there are at least ``FOLD_MIN``
    of them.  The robust intervals (``ci`` None) exclude 0 only where robust p is below
    alpha: the rows are chosen before them, and only theirs are computed."""
    every = np.arange(len(res.params))
    if show == "all":
        return every, every[:0]
    keep = res.support.to_numpy().copy()
    keep[every == (-1 if res.intercept is None else res.intercept)] = True
    if robust is not None and not robust.empty:
        keep |= robust.pvalues.fillna(1.0).to_numpy() < robust.alpha
    if ci is not None:
        with np.errstate(invalid="ignore"):
            lo, hi = ci["lower"].to_numpy(), ci["upper"].to_numpy()
            keep |= (lo > 0) | (hi < 0)
    if shown_bootstrap(res, kind) is not None:
        keep |= res.support_freq.fillna(0).to_numpy() >= SHOWN_FREQ
    if show is None and (~keep).sum() < FOLD_MIN:
        return every, every[:0]
    return every[keep], every[~keep]


def _folded(res: Results, folded: np.ndarray, kind: str, robust: RobustSet | None) -> str:
    """The line of the folded rows (:func:`_rows`): how many, which, and what they share."""
    names = [str(res.params.index[j]) for j in folded]
    if robust is not None and not robust.empty:
        shared = f"; robust p >= {robust.pvalues.iloc[folded].min():.3g}"
    elif shown_bootstrap(res, kind) is not None:
        shared = f"; selected in fewer than {SHOWN_FREQ:.0%} of the refits"
    else:
        shared = ""
    return (f"Not shown, not selected (coef 0{shared}): {listed(names, 6)}; "
            "summary(show='all') lists them.")


def _coef_table(res: Results, rows: np.ndarray, ci: Any, alpha: float, kind: str,
                robust: RobustSet | None, width: int, detail: bool, ci_method: str
                ) -> SimpleTable:
    """The coefficients of ``rows`` with the intervals of ``kind``, titled by what they
    assume (:func:`_caption`): Wald (the analytic standard errors and their p-values),
    the bootstrap's (its standard errors, intervals and selection frequencies) or robust
    (the robust intervals beside the analytic standard errors, or the bootstrap's
    selection frequencies); the robust p-values wherever ``robust`` is given.  Every
    bound is :meth:`conf_int`'s.  ``detail`` adds ``std coef`` (unless the robust p
    stands beside another kind's intervals) and ``selected``: at most 7 columns."""
    has_boot = shown_bootstrap(res, kind) is not None           # (never runs a pending one)
    std = detail and not (robust is not None and kind != "robust")
    headers = ["coef"] + (["std coef"] if std else []) + (["selected"] if detail else []) + {
        "wald": ["std err", "P>|z|"], "bootstrap": ["boot se"],
        "robust": [] if has_boot else ["std err"]}[kind] + (
        ["robust p"] if robust is not None else []) + [f"[{alpha / 2:g}", f"{1 - alpha / 2:g}]"]
    headers += ["sel. freq"] if has_boot and kind != "wald" else []
    coef_rows = []
    for j in rows:
        selected = bool(res.support.iloc[j])
        row = [fmt_num(res.params.iloc[j])] + ([fmt_num(res.std_params.iloc[j])] if std else [])
        if detail:
            row.append("always" if _is_intercept(res, j) else "yes" if selected else "-")
        if kind == "bootstrap":
            row.append(fmt_num(res.boot_se.iloc[j]))
        elif kind == "wald" or not has_boot:             # (conditional on the support)
            row.append(fmt_bound(res.bse.iloc[j]) if selected else "-")
        if kind == "wald":
            row.append(fmt_p(res.pvalues.iloc[j]) if selected else "-")
        if robust is not None:
            row.append(fmt_p(robust.pvalues.iloc[j]))
        if kind == "robust" and robust.empty:
            row += ["empty", "empty"]
        elif selected or kind != "wald":
            row += [fmt_bound(ci["lower"].iloc[j]), fmt_bound(ci["upper"].iloc[j])]
        else:
            row += ["-", "-"]
        if has_boot and kind != "wald":
            row.append(f"{res.support_freq.iloc[j]:.2f}")
        coef_rows.append(row)
    table = grid(coef_rows or [["-"] * len(headers)], headers,
                 [str(res.params.index[j]) for j in rows] or ["(none)"], "", width)
    table.title = _caption(res, kind, alpha, robust, ci_method)
    return table


def _caption(res: Results, kind: str, alpha: float, robust: RobustSet | None,
             ci_method: str) -> str:
    """The coefficient table's title (at most 78 wide): which kind of interval it shows
    and what each column assumes."""
    level = f"{1 - alpha:.0%}"
    beside = "; robust p: no condition" if robust is not None and kind != "robust" else ""
    if kind == "robust":
        return f"{level} intervals, robust p: test inversion, valid however weak the identification"
    if kind == "bootstrap" and conditional(res):
        return f"{level} {ci_method} bootstrap: valid if Condition 4 holds" + beside
    if kind == "bootstrap":
        boot = shown_bootstrap(res, kind)
        refits = "" if boot is None else f", {boot.n_boot} refits"
        return f"{level} {ci_method} bootstrap intervals{refits}, selection included" + beside
    if conditional(res):
        return f"std err, P>|z|, {level} CI: valid if Condition 4 holds" + beside
    return f"std err, P>|z|, {level} CI: Wald, conditional on the selected support" + beside


def _env_table(res: Results, width: int, detail: bool) -> SimpleTable | None:
    """The environments: one row each (``detail``), or one column each where they fit
    in ``width`` (None where they do not: :func:`_env_line`).  The rows per environment
    where they differ (else the header says them), the worst-case weights only where
    gamma enters the coefficients."""
    labels = [str(e) for e in res.weights.index]
    if detail:
        rows = [[f"{n:g}", f"{w:.3f}", fmt_num(r)]
                for n, w, r in zip(res.nobs_env, res.weights, res.risks, strict=True)]
        return grid(rows, ["n_e", "weight w_e", "risk R_e(b)"], labels, "environment", width)
    rows, stubs = [[fmt_num(r) for r in res.risks]], ["risk R_e(b)"]
    if res.nobs_env.nunique() > 1:               # (equal sizes: the header's "4 x 2000")
        rows.insert(0, [f"{n:g}" for n in res.nobs_env])
        stubs.insert(0, "n_e")
    if gamma_not_used(res) is None:
        rows.append([f"{w:.3f}" for w in res.weights])
        stubs.append("weight w_e")
    cols = [max(8, len(label), *(len(row[k]) for row in rows)) + 1
            for k, label in enumerate(labels)]
    if max(len(s) for s in stubs) + sum(cols) + len(cols) > width:
        return None
    return grid(rows, labels, stubs, "environment", width)


def _env_line(res: Results) -> str:
    """The environments in one line where their table does not fit."""
    n, r = res.nobs_env, res.risks
    return (f"{res.n_envs} environments of {n.min():g} to {n.max():g} rows; risks R_e(b) "
            f"from {fmt_num(r.min())} ({r.idxmin()}) to {fmt_num(r.max())} ({r.idxmax()}); "
            "summary(detail=True) lists each.")


def _outside_short(res: Results, ci: Any, kind: str, robust: RobustSet | None
                   ) -> str | None:
    """:func:`~negdro_stats.results.notes.outside` in one line."""
    names = excluded(res, ci, kind, robust)
    if not names:
        return None
    return (f"{listed(names, 4)}: the robust interval excludes the estimate (a missed "
            "effect, or misspecification).")


def _causes_line(res: Results, robust: RobustSet | None, alpha: float) -> str:
    """The direct causes under the assumption that identifies them
    (:func:`~negdro_stats.results.verdicts.direct_causes`)."""
    found = direct_causes(res, robust, alpha)
    return f"Direct causes at FWER {alpha:g}: " + "; ".join(
        f"{'cannot tell' if names is None else listed(names, 8) or 'none'} ({basis})"
        for names, basis in found) + "."


def _closest_line(res: Results) -> str | None:
    """Where the data reject invariance, the fit closest to it
    (:attr:`NegDROResults.closest_to_invariance`)."""
    closest = res.closest_to_invariance if res.verdict == "rejected" else None
    if closest is None:
        return None
    names = res.params.index[[j for j in closest.support if j != res.intercept]]
    reported = tuple(closest.support) == tuple(np.flatnonzero(res.support.to_numpy())) and (
        np.array_equal(closest.b, res.params.to_numpy()))
    what = "the reported fit" if reported else f"pooled OLS on {listed(names, 8) or 'no covariate'}"
    return (f"Closest to invariance of {closest.compared} fits compared: {what}, risks within "
            f"{percent(closest.test.delta)} (bound {percent(closest.test.delta_upper)}); not "
            "a causal claim (res.closest_to_invariance).")


def path_summary(path: Any) -> NegDROSummary:
    """:meth:`PathResult.summary`: the path as a table, with the support of each gamma and
    a note on why the estimates may coincide."""
    frame = path.to_frame()
    names = path.support.columns
    rows = [[f"{row['selected']:d}", fmt_num(row["max risk"]), fmt_num(row["mean risk"]),
             fmt_num(row["Phi_mu"]), "n/a" if np.isnan(row["equal-risk p"])
             else f"{row['equal-risk p']:.3g}", "n/a" if np.isnan(row["risks within"])
             else percent(row["risks within"]), REFIT_SHORT.get(refit, refit)]
            for (_, row), refit in zip(frame.iterrows(), path.refit, strict=True)]
    table = grid(rows, ["selected", "max risk", "mean risk", "Phi_mu", "risk p", "within",
                        "refit"], [f"{g:g}" for g in path.gammas], "gamma")
    supports = {tuple(names[m]) for m in path.support.to_numpy()}
    smry = NegDROSummary()
    smry.tables = [table]
    notes = ["risk p = p-value of the equal-risk test at the estimate; within = every "
             "environment's risk within that share of the pooled risk (upper 95% bounds: "
             ".delta_upper); coefficients: .params, supports: .support."]
    if len(supports) == 1 and (path.refit != "negdro").all():
        notes.append("Every gamma selected the same support "
                     f"({', '.join(map(str, next(iter(supports)))) or 'none'}); with the "
                     "default refit the coefficients on it do not depend on gamma.  "
                     "refit='negdro' shows Phi_mu's own path (the paper's Figures 5 and 7).")
    smry.add_extra_txt([wrap_note(f"[{k}] {t}")
                        for k, t in enumerate(notes, start=1)])
    return smry
