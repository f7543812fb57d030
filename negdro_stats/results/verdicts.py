"""The verdicts a result is read by, each decided once: what the reader must not miss
(the summary's warning line) and which kind of interval every view reports."""

from __future__ import annotations

import math
import statistics
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np

from .._stats import holm, norm_isf
from .._validation import listed
from ..exceptions import DataError
from ..identification.report import ClosestSupport, closest_to_invariance
from ..inference.robust import ROBUST_TABLE_MAX_P, RobustSet, too_few_moments

__all__ = ["Problem", "problems", "fit_problems", "fit_warning", "interval_kind",
           "least_risk_tests", "closest_fit",
           "conditional", "condition_1b", "verdict",
           "VERDICTS", "gamma_not_used", "risk_alarm", "risks_differ",
           "rests_on_condition_4", "on_condition_4", "rests_on", "rests_on_line",
           "declared", "contradicted", "mean_left_out", "direct_causes",
           "rows_look_dependent", "rejects_the_fit", "no_invariant_model"]

VERDICTS = ("identified", "if Condition 4", "not identified", "rejected")

Results = Any   # a NegDROResults (results imports this module)
SMALL_ENV = 4   # an environment with 1/4 of the median rows sees a shift half as sharply
_READ = object()  # problems(): read res.identification
WARNING_LINE = 250   # the fit's warning, one line
DEPENDENT_LEVEL = 1e-3   # rows look dependent: a residual autocorrelation beyond its
DEPENDENT_RHO = 0.1      # null's bound at this level and this large (module docstring)


class Problem(NamedTuple):
    """One thing the reader must not miss, decided once (:func:`problems`): ``said`` in
    full (the summary's warning line, :meth:`to_dict`, the CLI) and ``head``, its clause
    in the fit's one-line warning (:func:`fit_warning`); ``data``: a problem of the data
    (``DataWarning``), not of identification; ``last``: the warning puts it after the
    others (Condition 1b's failure: the route's own reasons say more)."""

    said: str
    head: str
    data: bool = False
    last: bool = False


def problems(res: Results, ident: Any = _READ) -> list[Problem]:
    """What the reader must not miss: identification fails, invariance is rejected,
    the data contradict a declaration, the intercept is left out
    (:func:`mean_left_out`).  Where the fit rests on Condition 4
    (:func:`on_condition_4`), that is the fit's verdict, said once in the notes, not an
    alarm: neither Condition 1b's failure nor the undetermined directions are problems
    then.  ``ident``: Condition 1b's check to read (default ``res.identification``; the
    fit passes the one it computed, None past ``p = 30``, where it is computed on first
    use).  Where there is any and the residuals say the rows are dependent while the fit
    takes them as independent (:func:`rows_look_dependent`), that comes first: every
    test behind the others then misreads the noise."""
    found = _problems(res, ident, "")
    if any(not problem.data for problem in found) and (dependent := rows_look_dependent(res)):
        return [Problem(
            f"{dependent}, and every test here takes the rows as independent: this may be "
            "why the fit is in doubt; refit with cov_type='HAC' (rows in time order) or "
            "cov_type='cluster' with cov_kwds={'groups': ...}",
            f"{dependent}: refit with cov_type='HAC' (or 'cluster')"),
            *_problems(res, ident, dependent)]
    return found


def _problems(res: Results, ident: Any, dependent: str) -> list[Problem]:
    """:func:`problems` but the dependent rows (``dependent``: the clause that says the
    rows look dependent, said before these, or empty)."""
    found = []
    ident, sel = res.identification if ident is _READ else ident, res.selection
    on_4 = on_condition_4(res)
    if ident is not None and not ident.holds and not on_4:
        found.append(Problem(ident.failure, f"Condition 1b fails (margin "
                                            f"{ident.relative_margin:.2g})", last=True))
    if sel is not None and not sel.identified and not on_4:
        found.append(Problem(
            f"NOT IDENTIFIED: these environments do not determine "
            f"{listed(sel.undetermined, 5)}", f"not identified: {listed(sel.undetermined, 3)} "
            "left open"))
    if targets := contradicted(res):
        one = len(targets) == 1
        found.append(Problem(
            f"{listed(targets, 5)} {'is' if one else 'are'} declared intervened on "
            f"(targets=) and selected, but the environments leave "
            f"{'its coefficient' if one else 'their coefficients'} open: the intervention "
            "is not seen in these rows (too few, or too weak a shift), and the data cannot "
            f"tell {'it' if one else 'them'} from an unshifted child of the outcome",
            f"{listed(targets, 3)} {'is' if one else 'are'} declared intervened on "
            "(targets=) but left open by the environments: not identified"))
    if sel is not None and sel.assumes_condition_4 and not on_4:
        found.append(Problem(
            f"identified only if every child of the outcome is intervened on (Condition 4, "
            f"not checkable): these environments do not determine "
            f"{listed(sel.undetermined, 5)}", "not identified, even if every child of the "
            "outcome is intervened on (Condition 4)"))
    if sel is not None and sel.undetermined and sel.mean_shifts_only:
        found.append(Problem(
            f"the environments shift means only (every covariate's variance is the same in "
            f"each: p = {sel.covariance_shift[2]:.2g}), which cannot give Condition 4 or 6 "
            "beyond |E| - 1 covariates", "the environments shift means only"))
    found += _least_risk_doubts(sel)
    if sel is not None and sel.no_invariant_fit and not no_invariant_model(res):
        found.append(_no_invariant_fit(res))      # (the J test's suspects are cleared)
    elif sel is not None and sel.rejected:
        found.append(Problem("the J test rejects invariance on the reported support",
                             f"the J test rejects invariance (level {sel.test_level:g}) on "
                             "every support tried" + _rejection_hint(res, dependent)))
    elif sel is not None and sel.no_invariant_fit:
        found.append(_no_invariant_fit(res))
    if sel is not None and sel.stand_ins:
        pairs = "; ".join(f"{k} for {j}" for j, k in sel.stand_ins)
        found.append(Problem(f"near copies could stand in for selected causes ({pairs})",
                             f"near copies that the invariance test cannot tell apart "
                             f"({pairs})"))
    if said := mean_left_out(res):
        found.append(Problem(said, said, data=True))
    if risk_alarm(res):
        inv = res.invariance
        decisively = "decisively " if inv.decisive else ""
        found.append(Problem(
            f"the environment risks differ {decisively}at the estimate (p = "
            f"{inv.pvalue:.2g})" + ("" if inv.decisive else
                                    ", and Theorem 6's least-risk fit must have equal risks")
            + ("" if sel is not None and sel.no_invariant_fit or not inv.decisive
               else _somewhere(res)),
            f"the environments' risks differ {decisively}at the estimate (p = "
            f"{inv.pvalue:.2g})"))
    return found


def _no_invariant_fit(res: Results) -> Problem:
    """The problem where no fit the selection tried is invariant
    (:attr:`SelectionReport.no_invariant_fit`): the invariance model is rejected
    (:func:`no_invariant_model`; the summary's first line says the joint robust set is
    empty, where it is), or the fit is not identified."""
    why, fit = res.selection.no_invariant_fit, f"NegDRO's fit of (9) at gamma = {res.gamma:g}"
    if no_invariant_model(res):
        return Problem(f"no invariant linear model fits: {why}",
                       f"no invariant linear model fits these data: the estimate is {fit}")
    rs = _joint(res)
    return Problem(
        f"NOT IDENTIFIED: no fit the selection tried is invariant ({why}){_somewhere(res)}",
        "not identified: no fit the selection tried is invariant, " + (
            "and these rows allow no joint test of every b" if rs is None else
            f"but some linear model may be (joint test p = {rs.pvalue:.2g})")
        + f"; the estimate is {fit}")


def rejects_the_fit(res: Results) -> bool:
    """The data reject the reported fit's invariance decisively (level 1e-4): the
    equal-risk test at the estimate (:attr:`RiskInvarianceTest.decisive`), or, in the
    route, the J test on every support tried or the equal-risk test at the route's fit
    (:attr:`SelectionReport.no_invariant_fit`; the fit reported is then NegDRO's own at
    the model's gamma).  Whether every linear model fails too is
    :func:`no_invariant_model`'s question."""
    sel = res.selection
    return bool(res.invariance is not None and res.invariance.decisive
                or sel is not None and sel.invariance_rejected)


def no_invariant_model(res: Results) -> bool:
    """The joint robust set (:meth:`NegDROResults.robust_set`, level 0.05, the set the summary
    prints) holds no model of ``Y``: no ``b`` makes every covariate's residual moments
    and the risks invariant (:attr:`RobustSet.holds_model`: a set that holds only ``b`` far
    out along a direction whose own moments are invariant does not count; eq. (33) at
    p = 100 with the outcome's mechanism changed in one environment: least AR 20 far out
    against 206; the outcome scaled by 3 in one of 3 environments, p = 15, 100 rows
    each, 12 seeds: least AR 0.2-1.5 far out, 96-272 at the models), nor does an exact
    fit's set (it reads every residual below ``EXACT_FIT`` of the outcome's variance as
    0, so it cannot tell models apart). Where it does hold some, a fit that
    :func:`rejects_the_fit` is the selection's failure, not the model's (the selection
    tests supports at fixed fits; at small ``n`` or under weak identification each can
    fail while the full model does not: 7 of 40 samples of
    ``study_dependent_coverage``'s cl0.6:0:2000 and 3 of 40 i.i.d. samples of its design
    at n = 200, least ``AR`` 7-26 against the quantile 40, ``beta*`` inside the set in
    all). False too where the set cannot be computed (too few moment conditions): the
    supports tried are not every model (random_sem at p = 60, n = 300 x 6: the selection
    rejected every support of 2 of 150 linear SEMs whose model holds)."""
    rs = _joint(res)
    return rs is not None and (rs.exact or not rs.holds_model)


def _joint(res: Results) -> RobustSet | None:
    """The joint robust set at its default level, None where the rows allow none."""
    try:
        return res.robust_set()
    except DataError:
        return None


def _somewhere(res: Results) -> str:
    """Why the invariance model is not rejected beside a rejected fit (''
    where it is: :func:`no_invariant_model`)."""
    if no_invariant_model(res):
        return ""
    if (rs := _joint(res)) is None:
        return (", and these rows allow no joint test of every b (too few moment "
                "conditions: robust_set() says how many), so whether any linear model is "
                "invariant cannot be told")
    return (f", yet some linear model is not rejected (the least invariance statistic over "
            f"every b, p = {rs.pvalue:.2g} on {rs.df} df): the environments cannot tell "
            "which b is beta*")


def _rejection_hint(res: Results, dependent: str) -> str:
    """What may break invariance, after the J test's rejection: nothing more where the
    rows look dependent (said before it); the usual suspects, and where the fit already
    takes the rows as dependent, dependence its covariance misses."""
    if dependent:
        return ""
    if res.cov_type == "nonrobust":
        return " (an intervened outcome? a missing cause?)"
    missed = ("more lags than the covariance's (cov_kwds={'maxlags': ...})?"
              if res.cov_type == "HAC" else "clusters wider than the groups given?")
    return f" (an intervened outcome? a missing cause? {missed})"


def _least_risk_doubts(sel: Any) -> list[Problem]:
    """Why the data cannot tell a least-risk fit is Theorem 6's (:func:`problems`):
    two readings of invariance disagree, a rival of smaller risk passes, the fit's own
    invariance test passed only at the search's level."""
    found = []
    if sel is not None and sel.contested:
        linear, ratio = sel.contested
        found.append(Problem(
            "cannot tell whether the outcome's mechanism is linear: the least-risk fit on "
            "the support's own moments and equal risks (Theorem 6) is reported; the "
            f"intervened covariates' residual moments (Lemma 1) choose "
            f"{listed(linear, 5) or 'the empty support'}, whose worst "
            f"leave-one-environment-out risk is {ratio:.3g} times as large",
            "two readings of invariance choose different fits"))
    if sel is not None and sel.rival:
        name, _, _, pvalue = sel.rival
        found.append(Problem(
            f"cannot tell whether the fit is the least-risk invariant one (Theorem 6): the "
            f"same fit with {name} added passes the invariance test too (p = "
            f"{pvalue:.2g}) with a smaller pooled risk; {name} is a cause no environment "
            "shifts, or a descendant of the outcome whose shift the data do not show",
            f"a fit with {name} added passes at a smaller risk"))
    if sel is not None and sel.narrow and not sel.invariance_rejected:
        found.append(_narrow(sel))
    return found


def _narrow(sel: Any) -> Problem:
    """The problem of a least-risk fit whose invariance the data cannot tell
    (:attr:`SelectionReport.narrow`): the focused test where it rejects, else the
    contrast, else the omnibus test."""
    J, df, pvalue, member = sel.focused_test
    tail = "so no interval conditional on Condition 4 is given"
    if pvalue < sel.test_level:
        return Problem(
            f"cannot tell whether the least-risk fit is invariant: {member}'s own condition "
            f"E_e[{member} (Y - b'X)] differs across environments (J = {J:.3g} on {df} df, "
            f"p = {pvalue:.2g} with Bonferroni over the support, below alpha = "
            f"{sel.test_level:g}): {member} may be a child of the outcome that an "
            f"environment shifts; {tail}",
            f"{member}'s own invariance test gives p = {pvalue:.2g} < alpha")
    H, df, pvalue = sel.contrast_test
    if pvalue < sel.test_level:
        return Problem(
            f"cannot tell whether the least-risk fit is beta*: the invariance conditions "
            f"on its support move the coefficients it takes from pooled OLS (Hausman "
            f"contrast H = {H:.3g} on {df} df, p = {pvalue:.2g}, below alpha = "
            f"{sel.test_level:g}): hidden confounding, under which neither Condition 4 nor "
            f"6 makes pooled OLS beta*, or a wrong support; {tail}",
            f"the invariance conditions move its OLS coefficients (contrast p = "
            f"{pvalue:.2g} < alpha)")
    J, df, pvalue, level = sel.fixed_test
    return Problem(
        f"cannot tell whether the least-risk fit is invariant: its invariance test "
        f"gives p = {pvalue:.2g}, below alpha = {sel.test_level:g} (accepted only at the "
        f"search's level {level:.2g}), {tail}",
        f"its invariance test gives p = {pvalue:.2g} < alpha")


def fit_problems(res: Results) -> list[str]:
    """What :func:`problems` says in full: the summary's warning line, :meth:`to_dict`
    and the CLI (:func:`interval_kind` reads it)."""
    return [problem.said for problem in problems(res)]


def fit_warning(res: Results, ident: Any = _READ, advice: str = "") -> str:
    """The fit's one ``IdentificationWarning``, a line of at most ``WARNING_LINE``
    characters: the ``head`` of each of :func:`problems` not of the data (``last`` ones
    last), joined, as many as fit beside ``advice`` (at least one), then how many more
    the summary gives, then ``advice``; empty where there is none."""
    heads = [problem.head for problem in sorted(problems(res, ident), key=lambda x: x.last)
             if not problem.data]
    limit = WARNING_LINE - len(advice)
    said, room = heads[:1], limit - len("; 9 more in the summary")
    for i, head in enumerate(heads[1:], start=2):
        if len("; ".join(said + [head])) > (limit if i == len(heads) else room):
            break
        said.append(head)
    if not said:
        return ""
    more = len(heads) - len(said)
    line = "; ".join(said) + (f"; {more} more in the summary" if more else "") + advice
    return line[0].upper() + line[1:]


def mean_left_out(res: Results) -> str | None:
    """The problem of a left-out intercept (:attr:`NegDROResults.mean_left_out`), or
    None: a data problem (the fit warns with a ``DataWarning``), in :func:`fit_problems`
    beside the others."""
    if not res.mean_left_out:
        return None
    return (f"the residuals have mean {res.residual_mean:.3g} ({res.residual_mean_share:.0%} "
            "of their mean square) without an intercept: refit with fit_intercept=True")


def rests_on_condition_4(res: Results) -> bool:
    """The fit is Theorem 6's least-risk invariant fit, or Algorithm 3's where Condition
    1b holds on the determined directions: ``beta*`` only if every child of the outcome
    is intervened on (:attr:`SelectionReport.least_risk`,
    :attr:`~SelectionReport.assumes_condition_4`)."""
    sel = res.selection
    return sel is not None and (sel.least_risk or sel.assumes_condition_4)


def on_condition_4(res: Results) -> bool:
    """The fit's claim rests on Condition 4 (the :func:`verdict` "if Condition 4"),
    assumed or, for its children, declared (:func:`declared`).  Neither
    Condition 1b's failure nor the undetermined directions are problems then, and the
    intervals are conditional on it (:func:`conditional`)."""
    return verdict(res) == "if Condition 4"


def contradicted(res: Results) -> tuple[str, ...]:
    """Declared targets (``NegDRO(targets=)``) in the support whose coefficients the
    environments leave open (:attr:`SelectionReport.left_open`), where the fit rests on
    Condition 4: a target's shift would determine its coefficient, so its intervention
    is not seen in these rows (too few of them, or too weak a shift), and the data
    cannot tell it from an unshifted child of the outcome.  Such a fit is "not
    identified" (:func:`verdict`): where a child is shifted in a small environment
    only, the fits that hold it as such a target are mostly far from ``beta*`` (measured:
    docs/design.rst, Measured choices)."""
    decl, sel = res.declarations, res.selection
    if decl is None or not rests_on_condition_4(res):
        return ()
    return tuple(name for name in decl.contradicted(sel.left_open)
                 if res.support.get(name, False))


def _settled(res: Results) -> bool:
    """Every direction the environments leave open lies among covariates declared not
    to be descendants of the outcome (no set of the others holds ``OPEN_SHARE`` of one:
    :meth:`SelectionReport.open_among`), so no child of ``Y`` is among them: every child
    is among the covariates the environments shift, Condition 4 as declared."""
    decl, sel = res.declarations, res.selection
    if decl is None or not decl.not_descendants or sel.open_span is None:
        return False
    outside = [j for j, name in enumerate(res.params.index)
               if name not in decl.not_descendants and j != res.intercept]
    return not sel.open_among(outside)


def declared(res: Results) -> bool:
    """The user's declarations settle the child part of what a Condition 4 fit rests
    on: every direction the environments leave open lies among covariates declared not
    to be descendants of the outcome, so every child is intervened on.  The verdict
    stays "if Condition 4": Theorem 6 also needs no hidden confounding (else Condition
    6), which neither the data nor these declarations settle (with hidden confounding,
    true declarations cover fits far from ``beta*``; measured: docs/design.rst,
    Measured choices).  The RESTS ON line names both."""
    return verdict(res) == "if Condition 4" and _settled(res)


def rests_on(res: Results) -> tuple[str, ...]:
    """The members of the support whose coefficients the environments leave open
    (:attr:`SelectionReport.left_open`), where the claim rests on Condition 4
    (:func:`on_condition_4`; :func:`rests_on_line` says it): the least pooled risk sets
    them, and the data cannot tell such a member, a cause no environment shifts, from a
    child of the outcome that none shifts.  Each is a cause only if every child of the
    outcome is intervened on; a user who knows otherwise (measured before the outcome,
    assigned by design: ``NegDRO(not_descendants=)``) can settle it, the data cannot."""
    sel = res.selection
    if sel is None or not on_condition_4(res):
        return ()
    return tuple(name for name in sel.left_open if res.support.get(name, False))


def rests_on_line(res: Results) -> str | None:
    """What a fit whose claim rests on Condition 4 (:func:`on_condition_4`) assumes, in
    one line (the summary's line above the tables, :meth:`to_dict`), or None."""
    if res.selection is None or not on_condition_4(res):
        return None
    members, y = rests_on(res), res.endog_name
    if declared(res):
        return (f"RESTS ON: what you declared ({res.declarations.describe()}): every "
                f"direction the environments leave open is among covariates that are not "
                f"descendants of {y}, so every child of {y} is intervened on (Condition 4); "
                f"and no hidden confounding of {y} with the covariates (Theorem 6; else "
                "Condition 6), which neither the data nor the declarations settle")
    said = (f"every child of {y} is intervened on (Condition 4; Condition 6 "
            "with hidden confounding), which the data cannot check")
    if members:
        said += (f"; {listed(members, 5)} {'is' if len(members) == 1 else 'are'} not "
                 "determined by the environments: a cause only if no child of "
                 f"{y} goes unshifted{_small_environment(res)}")
    decl = res.declarations
    if decl is None or not decl.not_descendants:
        return "RESTS ON: " + said + (" (not_descendants= settles it)" if members else "")
    open_ = [name for name in res.selection.left_open if name not in decl.not_descendants]
    return "RESTS ON: " + said + (
        f"; the environments leave open {listed(open_, 5)}, not declared "
        f"non-descendants of {y}" if open_ else "; a direction the environments leave open "
        f"lies mostly among covariates not declared non-descendants of {y}")


def _small_environment(res: Results) -> str:
    """Where the smallest environment has at most ``1 / SMALL_ENV`` of the median
    environment's rows, the clause of :func:`rests_on_line` that says so: a shift
    confined to it is estimated ``sqrt(median / n_e)`` times less precisely, so a child
    of the outcome shifted there alone can be left open, a cause to the data, and no
    test has power against it (measured: docs/design.rst, Measured choices)."""
    n = res.nobs_env
    env, median = n.idxmin(), statistics.median(n)
    if n[env] * SMALL_ENV > median or not math.isfinite(n.max()):    # (population)
        return ""
    return (f" -- environment {env} has {int(n[env]):,} rows (median {median:,.0f}): a child "
            f"of {res.endog_name} shifted there alone is seen only if its shift is about "
            f"{math.sqrt(median / n[env]):.1f} times one an environment of median size "
            "shows")


def rows_look_dependent(res: Results) -> str:
    """Where the fit takes the rows as independent (``cov_type="nonrobust"``), whether
    its residuals say otherwise: in some environment the lag-1 autocorrelation of the
    residuals at the estimate, rows in their order (:attr:`NegDROResults.
    serial_correlation`), exceeds both its bound under independence, ``z_{1 - l / (2
    E)} / sqrt(n_e)`` (``l = DEPENDENT_LEVEL``, Bonferroni over the environments), and
    ``DEPENDENT_RHO`` (0.1: an AR(1) with it has a long-run variance 22% above the i.i.d.
    one).  Time series and clusters of consecutive rows show it; clusters in scattered
    rows do not.  The clause that says so, empty where not."""
    rho = res.serial_correlation if res.cov_type == "nonrobust" else None
    if rho is None:
        return ""
    mom = res.model.data.moments
    bound = norm_isf(DEPENDENT_LEVEL / (2 * len(rho))) / np.sqrt(mom.n)
    size = np.where(np.isfinite(rho), np.abs(rho), 0.0)
    flagged = (size > bound) & (size >= DEPENDENT_RHO)
    if not flagged.any():
        return ""
    e = int(np.argmax(np.where(flagged, size, -1.0)))
    return (f"rows look dependent (lag-1 autocorrelation {rho[e]:.2f} of the residuals in "
            f"environment {mom.envs[e]})")


def risk_alarm(res: Results) -> bool:
    """The equal-risk test at the estimate is an alarm (the fit's warning and the
    summary's warning line; decided here for both): it rejects decisively
    (:attr:`RiskInvarianceTest.decisive`, level 1e-4), or at
    :attr:`SelectionReport.alarm_level` (``alpha / 3``, a supplementary check) where the
    fit rests on Condition 4 (:func:`rests_on_condition_4`): Theorem 6 orders the
    risk-invariant fits, and the claim is that this one is.  Elsewhere (the
    environments determine every coefficient) a rejection at 0.05 is evidence, stated
    in the notes, and it keeps the robust intervals in place of a bootstrap's
    (:func:`risks_differ`)."""
    inv = res.invariance
    return inv is not None and (inv.decisive or rests_on_condition_4(res)
                                and inv.pvalue < res.selection.alarm_level)


def risks_differ(res: Results) -> bool:
    """The equal-risk test at the estimate rejects at level 0.05, short of an alarm
    (:func:`risk_alarm`): stated in the notes, and the intervals stay the robust ones
    (:func:`interval_kind`)."""
    return bool(res.invariance is not None and res.invariance.rejects
                and not risk_alarm(res))


def verdict(res: Results) -> str:
    """Whether the estimate is ``beta*``, decided once (one of :data:`VERDICTS`; the
    summary's header and notes, the fit's warnings and :meth:`to_dict` read it):

    - ``"if Condition 4"``: the environments leave directions undetermined and the
      estimate is ``beta*`` if every child of the outcome is intervened on (Condition
      4, Theorem 6; Condition 6 with hidden confounding), which the data cannot check:
      Theorem 6's least-risk invariant fit (:attr:`SelectionReport.least_risk`), or
      Algorithm 3's fit where Condition 1b holds on the directions the environments
      determine (:attr:`SelectionReport.assumes_condition_4`), and the equal-risk test
      at the estimate does not reject (:func:`risk_alarm`: a fit whose risks
      differ is not ``beta*``, whatever the children), and the within-environment variance of
      some covariate differs across environments
      (:attr:`SelectionReport.covariance_shift`: mean shifts alone cannot give
      Condition 4 or 6 beyond ``|E| - 1`` covariates), and no declared target in the
      support is left open (:func:`contradicted`);
    - ``"not identified"``: the selection says so and no stated condition can hold
      (Algorithm 3's fall-back, a least-risk fit that the data cannot tell invariant:
      :attr:`SelectionReport.narrow`, risks that differ (:func:`risk_alarm`), mean shifts only,
      two readings of invariance that choose different fits:
      :attr:`SelectionReport.contested`, a fit of smaller pooled risk that the data
      cannot tell from invariant: :attr:`SelectionReport.rival`),
      or, without an invariance selection, Condition 1b fails on the data;
    - ``"identified"``: the environment differences determine every coefficient;
    - ``"rejected"``, before all of these: the data reject the reported fit's
      invariance decisively (:func:`rejects_the_fit`, level ``RISK_WARN_LEVEL``,
      1e-4), and every linear model's too: the joint robust set holds no finite ``b``
      (:func:`no_invariant_model`; the rows must allow the set).  The invariance model
      fails (an
      intervention on the outcome, a missing cause), so no fit is ``beta*`` whatever
      identifies it (the Sachs data: "identified" beside "no invariant linear model is
      consistent with these data").  Where the fit is rejected but some ``b`` is not
      (or the rows allow no joint test), the verdict is "not identified": the fit is
      not ``beta*``, and the data cannot tell which ``b`` is.  Not at 0.05: the J
      test's rejections there are mostly fits close to ``beta*`` (they still warn).

    "if Condition 4" does not warn: where Condition 4 holds its fits are close to
    ``beta*``, and a warning that fires on good and bad fits alike teaches users to
    ignore it (measured: docs/design.rst, Measured choices)."""
    sel = res.selection
    if rejects_the_fit(res):
        return "rejected" if no_invariant_model(res) else "not identified"
    if sel is None:                       # the paper's estimator: Condition 1b alone
        ident = res.identification
        return "identified" if ident is None or ident.holds else "not identified"
    if rests_on_condition_4(res):     # never "identified" (declared() says why)
        # (Algorithm 3's fit can hold an unshifted grandchild of Y beside a narrow
        # least-risk test: measured in docs/design.rst, Measured choices)
        if (sel.narrow or sel.mean_shifts_only or sel.contested or risk_alarm(res)
                or contradicted(res)):
            return "not identified"
        return "if Condition 4"
    return "identified" if sel.identified else "not identified"


def conditional(res: Results) -> bool:
    """The intervals are conditional on Condition 4 (or 6): the fit is Theorem 6's
    least-risk invariant fit where the environments leave directions open
    (:attr:`SelectionReport.least_risk`: its invariance test accepted it at ``alpha``),
    and the :func:`verdict` is "if Condition 4": among others, the equal-risk test at
    the estimate does not reject decisively (:attr:`RiskInvarianceTest.decisive`:
    Theorem 6 orders the risk-invariant fits, and one whose risks differ is not
    ``beta*``, whatever the children; at level 0.05 the test rejects about 1 in 20
    good fits), and the differences are not mean shifts alone."""
    sel = res.selection
    return sel is not None and sel.least_risk and on_condition_4(res)


def condition_1b(res: Results) -> str | None:
    """"holds" / "fails" of the fit's Condition 1b check, or "unclear": a positive
    sample margin where the rank test does not reject an undetermined direction ``v``,
    along which ``A(w) v = 0`` for every ``w`` (the data are consistent with a
    population margin of 0); None without the check.  The summary's header and
    ``to_dict()["identification"]`` (the CLI's JSON) read it."""
    if res.identification is None:
        return None
    if not res.identification.holds:
        return "fails"
    sel = res.selection
    return "unclear" if sel is not None and sel.undetermined else "holds"


def interval_kind(res: Results) -> str:
    """The kind of interval a result reports -- decided here once, and read by
    :meth:`~negdro_stats.NegDROResults.conf_int` (its default), ``summary()`` and
    ``to_dict()`` (the CLI's JSON).  "A bootstrap" is the fit's own (``fit(n_boot=B)``),
    never one run later on request: the kind does not depend on what was called
    before.

    - where the fit is Theorem 6's least-risk invariant fit in directions the
      environments leave undetermined (:func:`conditional`), intervals
      valid if every child of the outcome is intervened on (Condition 4; Condition
      6 with hidden confounding), which the data cannot check: ``"bootstrap"`` with
      a bootstrap (the selection's variability included), else ``"wald"``,
      ``b +- z se`` from ``cov_params()`` (conditional on the selected support too);
    - otherwise ``"bootstrap"`` with a bootstrap where nothing in the fit warns and
      the equal-risk test at the estimate does not reject (:func:`risks_differ`);
    - else ``"robust"`` (test inversion, valid however weak the identification),
      for at most ``ROBUST_TABLE_MAX_P`` coefficients;
    - ``"wald"`` beyond that (the robust intervals cost about 15 fits per
      coefficient), or where the rows allow too few moment conditions for a robust
      set (:func:`~negdro_stats.inference.robust.too_few_moments`: ``conf_int()``
      raised where the summary showed Wald columns), conditional on the selected
      support.
    """
    ran = res.fit_bootstrap is not None
    if conditional(res):
        return "bootstrap" if ran else "wald"
    if ran and not fit_problems(res) and not risks_differ(res):
        return "bootstrap"
    return "robust" if len(res.params) <= ROBUST_TABLE_MAX_P and too_few_moments(
        res.model.data.moments, res.intercept) is None else "wald"


def gamma_not_used(res: Results) -> str | None:
    """Why ``gamma`` does not enter the reported coefficients, or None where it does
    (Algorithm 3's fit of the DRO objective (9) is reported): where the answer is the
    gamma -> infinity end of NegDRO's trade-off, the summary says so, since any gamma
    gives the same answer there."""
    sel = res.selection
    if sel is None or sel.estimator == "negdro":
        return None
    if sel.route == "invariance":
        return ("the environments determine every coefficient, and the invariance fit is "
                "NegDRO's gamma -> infinity end (Theorem 4's bias bound at 0)")
    return ("the invariant fit of least pooled risk (Theorem 6) does not depend on it; "
            "gamma enters only Theorem 4's bound, which decides whether Algorithm 3's fit "
            "is trusted")


def direct_causes(res: Results, robust: Any, alpha: float
                  ) -> list[tuple[tuple[str, ...] | None, str]]:
    """The covariates declared direct causes at family-wise error ``alpha`` under the
    assumption that identifies them, decided here for every view: pairs of (names, or
    None where the data cannot tell; what the declaration assumes).  Holm's step-down
    on the robust p-values (``robust``, a :class:`RobustSet`, valid however weak the
    identification) where they are given; on the analytic P>|z| of the selected
    covariates where the :func:`verdict` rests on Condition 4, or where the fit is
    identified and no robust p-values are given (conditional on the support); none
    where the data reject invariance, or leave the fit unidentified without robust
    p-values."""
    v = verdict(res)
    if v == "rejected":
        return [(None, "the data reject invariance")]
    usable = robust is not None and not robust.empty
    found: list[tuple[tuple[str, ...] | None, str]] = []
    if v == "if Condition 4":
        found.append((_holm(res, alpha), "if Condition 4, Holm on P>|z|"))
    elif v == "identified" and not usable:
        found.append((_holm(res, alpha), "conditional on the support, Holm on P>|z|"))
    if usable:
        causes = robust.causes(alpha)
        found.append((tuple(causes.index[causes]), "no condition, Holm on robust p"))
    return found or [(None, "not identified, and no robust p-values")]


def _holm(res: Results, alpha: float) -> tuple[str, ...]:
    """Holm's step-down on the analytic P>|z| of the selected covariates, the intercept
    left out (:func:`direct_causes`)."""
    p = res.pvalues[res.support.to_numpy()].dropna()
    if res.intercept is not None:
        p = p.drop(res.params.index[res.intercept], errors="ignore")
    return tuple(p.index[holm(p.to_numpy(), alpha)])


def least_risk_tests(res: Results) -> dict:
    """For :meth:`~negdro_stats.NegDROResults.to_dict`, two tests of the least-risk fit
    (None where not run): each selected covariate's own invariance condition
    (:attr:`SelectionReport.focused_test`), which a child of the outcome that an
    environment shifts moves, and the contrast of its OLS coefficients
    (:attr:`SelectionReport.contrast_test`), which hidden confounding moves."""
    sel = res.selection
    J, df, pvalue, name = (np.nan, 0, np.nan, "") if sel is None else sel.focused_test
    H, h_df, h_pvalue = (np.nan, 0, np.nan) if sel is None else sel.contrast_test
    return {"own_conditions": {"covariate": name, "statistic": J, "df": df,
                               "pvalue_bonferroni": pvalue} if np.isfinite(pvalue) else None,
            "ols_contrast": {"statistic": H, "df": h_df, "pvalue": h_pvalue}
            if np.isfinite(h_pvalue) else None}


def closest_fit(res: Results) -> ClosestSupport | None:
    """:attr:`NegDROResults.closest_to_invariance`: among the reported fit and pooled OLS
    along a backward path, the one of least pooled risk that is invariant up to the
    smallest tolerance the data certify
    (:func:`~negdro_stats.identification.report.closest_to_invariance`), tested as
    :attr:`~NegDROResults.invariance`, coefficients as :attr:`~NegDROResults.params`.
    None without that test, or past
    :data:`~negdro_stats.identification.report.CLOSEST_MAX_P` covariates."""
    if res.invariance is None:
        return None
    data = res.model.data
    closest = closest_to_invariance(
        data.moments, () if res.intercept is None else (res.intercept,),
        test_at=res.model.risk_test,
        fit=(tuple(np.flatnonzero(res.support.to_numpy())), res.solver.b))
    return None if closest is None else replace(closest, b=data.to_user(closest.b))
