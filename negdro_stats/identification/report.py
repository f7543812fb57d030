"""Identification from data: how sure can a user be that the environments identify beta*?

:func:`identification_report` (behind :meth:`NegDRO.diagnose`) combines

- Condition 1b/1a on the sample moments (:func:`~negdro_stats.check_condition_1b`);
- a bootstrap lower confidence bound for the relative margin (rows resampled within each
  environment, so every n_e is kept);
- a permutation test of the margin: under H0 the environment labels are exchangeable,
  so permuting them across rows gives the null distribution of the relative margin (a
  small p says the margin is larger than label noise alone would give; environments
  that differ hugely in ways that do not make A(w) positive definite give a large p);
- a model-rejection signal: a test of equal environment risks at the NegDRO estimate
  (the analogue of ICP's "no set accepted"), see :class:`RiskInvarianceTest`.

The bootstrap and permutation draws run through :func:`~negdro_stats._resampling.replicate`
(the estimator's bootstrap loop): one generator spawned per draw, and a draw whose margin
fails numerically is left out and counted (a warning), not an error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields

import numpy as np
from scipy import optimize, stats

from .._json import jsonable
from .._resampling import Jobs, replicate
from .._stats import chi2_isf, chi2_sf, norm_isf, norm_sf
from .._typing import FloatArray
from .._validation import warn_user
from ..data import risk_variances
from ..data.moments import Moments
from ..exceptions import BootstrapFailureWarning
from .conditions import (
    SDP_MAX_DIM,
    IdentificationResult,
    check_condition_1b,
    relative_margin_bounds,
)

__all__ = ["ClosestSupport", "closest_to_invariance", "CLOSEST_MAX_P", "detectable_departure",
           "IdentificationReport", "RiskInvarianceTest", "identification_report",
           "risk_invariance_test", "risk_test_at"]


RISK_TEST_LEVEL = 0.05   # the equal-risk test's verdict ("evidence against ...")
RISK_WARN_LEVEL = 1e-4   # ... decisive: a warning at fit time (RiskInvarianceTest.decisive)
DETECT_POWER = 0.8       # the power at which a detectable departure is quoted
# closest_to_invariance's backward path: p^2 / 2 equal-risk tests, each a sum over the
# fourth moments' row sample (about 13 s at p = 40-50 and 80,000 rows); a fit constant
# counted
CLOSEST_MAX_P = 31


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class RiskInvarianceTest:
    """Test of H0: ``R_e(b) = R_f(b)`` for all environments, at a given ``b``.

    Welch-type heteroscedastic statistic on the per-environment mean squared residuals,
    ``T = sum_e W_e (R_e - R_W)^2`` with ``W_e = 1 / Var(R_e)`` (``n_e / Var_e(r^2)`` from
    rows; from block moments, the between-block variance of the block risks) and ``R_W`` the
    W-weighted mean, referred to chi-square with ``|E| - 1`` degrees of freedom.  ``b`` is
    treated as fixed; since NegDRO chooses ``b`` to make the risks equal, the test is
    conservative at the NegDRO estimate: a small p-value is strong evidence that no
    linear model has invariant risks (the invariance assumption (2) looks violated, or a
    cause is missing from the covariates).
    """

    statistic: float
    df: int
    pvalue: float
    risks: FloatArray
    envs: tuple
    variances: FloatArray
    weights: FloatArray

    def __setstate__(self, state: list) -> None:
        """Unpickle; a test saved before ``variances`` and ``weights`` were kept gets NaN
        for them, so its tolerance reads as unknown (NaN, "n/a"), not as 0."""
        names = [f.name for f in fields(self)]
        values = dict(zip(names, state, strict=False))
        nan = np.full(len(values["risks"]), np.nan)
        for name in names:
            object.__setattr__(self, name, values.get(name, nan))

    @property
    def deviations(self) -> FloatArray:
        """Each environment's risk relative to the pooled risk, ``R_e / R - 1`` with ``R =
        sum_e (n_e / n) R_e`` (0 where every risk is 0; NaN where the shares are unknown,
        a test saved before they were kept)."""
        pooled = float(self.weights @ self.risks)
        if np.isnan(pooled):
            return np.full_like(self.risks, np.nan)
        return self.risks / pooled - 1.0 if pooled > 0 else np.zeros_like(self.risks)

    @property
    def delta(self) -> float:
        """How far from invariant the risks are: ``max_e |R_e / R - 1|``, the smallest
        tolerance ``delta`` with every environment's risk within ``delta`` of the pooled
        one, at this ``b``."""
        return float(np.max(np.abs(self.deviations)))

    def equivalence_pvalue(self, delta: float) -> float:
        """p-value of the equivalence test of H0: ``max_e |R_e / R - 1| >= delta`` against
        "invariant up to ``delta``": per environment the two one-sided tests of
        ``|R_e / R - 1| >= delta`` (TOST, delta method, ``b`` fixed), and the largest of
        their p-values (intersection-union: level ``alpha`` without a multiplicity
        correction, since "invariant up to ``delta``" needs every environment)."""
        se = self._deviation_se()
        d = self.deviations
        with np.errstate(divide="ignore", invalid="ignore"):
            p = np.maximum(norm_sf((delta - d) / se), norm_sf((delta + d) / se))
        p = np.where(se > 0, p, (np.abs(d) >= delta).astype(float))
        return float(np.max(p))

    @property
    def delta_upper(self) -> float:
        """Upper confidence bound of :attr:`delta` at level ``1 - RISK_TEST_LEVEL``: the
        smallest tolerance at which :meth:`equivalence_pvalue` is below the level,
        ``max_e (|R_e / R - 1| + z se_e)``."""
        z = norm_isf(RISK_TEST_LEVEL)
        return float(np.max(np.abs(self.deviations) + z * self._deviation_se()))

    @property
    def detectable(self) -> float:
        """The departure from invariance these environments can detect: the smallest
        relative difference ``d`` of any one environment's risk from the others' that the
        test detects with probability :data:`DETECT_POWER` (:func:`detectable_departure`,
        at these risks' variances; 0 at an exact fit, whose risks are all 0)."""
        pooled = float(self.weights @ self.risks)
        if np.isnan(pooled) or np.isnan(self.variances).any():
            return np.nan
        return detectable_departure(self.variances / pooled**2) if pooled > 0 else 0.0

    def _deviation_se(self) -> FloatArray:
        """Standard errors of :attr:`deviations` by the delta method (the risks'
        estimates independent between environments, with :attr:`variances`)."""
        pooled = float(self.weights @ self.risks)
        if pooled <= 0:
            return np.zeros_like(self.risks)
        J = np.eye(len(self.risks)) / pooled - np.outer(self.risks, self.weights) / pooled**2
        return np.sqrt(J**2 @ self.variances)

    @property
    def rejects(self) -> bool:
        """Whether the risks differ at level :data:`RISK_TEST_LEVEL`."""
        return bool(self.pvalue < RISK_TEST_LEVEL)

    @property
    def decisive(self) -> bool:
        """Whether the risks differ at level :data:`RISK_WARN_LEVEL`: the fit warns.  (The
        test's reference ignores that ``b`` was estimated and selected, and it rejects
        up to 12% of samples at level 0.05 at beta* itself; at 1e-4 it flags none of
        66 fits within 0.1 of beta* and 7 of 14 fits further away: random, confounded
        and variance-shift designs, n = 500 and 2,000, 10 seeds.)"""
        return bool(self.pvalue < RISK_WARN_LEVEL)

    def to_dict(self) -> dict:
        """Plain JSON values: the statistic, its degrees of freedom and p-value, how far from
        invariant (:attr:`delta`, :attr:`delta_upper` at its level) and the
        :attr:`detectable` departure."""
        return jsonable({"statistic": self.statistic, "df": self.df, "pvalue": self.pvalue,
                         "delta": self.delta, "delta_upper": self.delta_upper,
                         "delta_level": 1.0 - RISK_TEST_LEVEL, "detectable": self.detectable})

    def __str__(self) -> str:
        verdict = ("evidence against risk invariance" if self.rejects
                   else "no evidence against risk invariance")
        said = (f"Equal environment risks at the estimate: chi2({self.df}) = "
                f"{self.statistic:.3g}, p = {self.pvalue:.3g} ({verdict}).")
        if np.isnan(self.delta):                  # (a test saved before it was kept)
            return said
        return (f"{said}  Every "
                f"environment's risk is within {percent(self.delta)} of the pooled risk "
                f"(upper {1 - RISK_TEST_LEVEL:.0%} bound {percent(self.delta_upper)}: "
                "an equivalence test of invariance up to that tolerance rejects "
                f"at {RISK_TEST_LEVEL:g}).  {detectable_sentence(self.detectable)}")


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class IdentificationReport:
    """Identification diagnostics on data; ``summary()`` says in words what to do.

    Attributes
    ----------
    condition_1b : IdentificationResult
        Condition 1b/1a on the sample moments.
    margin_lcb : float
        Bootstrap lower confidence bound (level ``1 - alpha``) of the relative margin;
        NaN when ``n_boot = 0``.
    boot_bounds : ndarray (n_boot, 2)
        Bounds of the bootstrap relative margins: equal where the margin was solved for,
        else bounds from the sample's weights
        (:func:`~negdro_stats.identification.conditions.relative_margin_bounds`) on a side where it
        cannot move the confidence bound; NaN where it failed.
    n_solved : int
        The margins solved for (bootstrap and permutation); the others were decided by
        their bounds.
    perm_pvalue : float
        Permutation p-value of the relative margin under exchangeable environment labels
        (permuted margins within ``condition_1b.tol`` of the observed one count as ties,
        against it; NaN when ``n_perm = 0``).
    invariance : RiskInvarianceTest or None
        The model-rejection signal at the NegDRO estimate.
    alpha : float
    """

    condition_1b: IdentificationResult
    margin_lcb: float
    boot_bounds: FloatArray
    perm_pvalue: float
    n_perm: int
    n_solved: int
    invariance: RiskInvarianceTest | None
    alpha: float

    @property
    def margin(self) -> float:
        """The identifiability margin lambda (Condition 1b)."""
        return self.condition_1b.margin

    @property
    def holds_with_confidence(self) -> bool:
        """Whether the bootstrap lower bound of the relative margin is positive."""
        return bool(self.margin_lcb > self.condition_1b.tol)

    def to_dict(self) -> dict:
        """Plain JSON values (the CLI's ``diagnose --json``)."""
        return jsonable({
            "condition_1b": self.condition_1b.to_dict(), "margin_lcb": self.margin_lcb,
            "perm_pvalue": self.perm_pvalue, "holds_with_confidence": self.holds_with_confidence,
            "invariance": None if self.invariance is None else self.invariance.to_dict(),
            "alpha": self.alpha, "n_perm": self.n_perm})

    def summary(self) -> str:
        """The report in plain words."""
        c = self.condition_1b
        level = f"{100 * (1 - self.alpha):g}%"
        lines = ["Identification report (Condition 1b on sample moments)", "=" * 56]
        if c.holds and self.holds_with_confidence:
            lines.append("Verdict: the environments differ enough for NegDRO to identify the "
                         f"causal model (Condition 1b holds with {level} confidence).")
        elif c.holds:
            lines.append("Verdict: Condition 1b holds on these data, but not with "
                         f"{level} confidence: the heterogeneity may be sampling noise.")
        else:
            lines.append("Verdict: Condition 1b fails: some direction leaves every "
                         "environment's risk unchanged, so invariance alone cannot pin "
                         "down beta*.")
        w = ", ".join(f"{e}: {x:.3f}" for e, x in zip(c.envs, c.weights, strict=True))
        paper = (f"; the paper's lambda of (16), its own solve in raw units = "
                 f"{c.paper_lambda:.4g}" if np.isfinite(c.paper_lambda) else "")
        lines.append(f"  Relative margin {c.relative_margin:.4g} (the verdict's, covariates "
                     f"standardised) at weights w0 = ({w}): lambda_min(A(w0)) = "
                     f"{c.margin:.4g}{paper}; path {c.path}.")
        if len(self.boot_bounds):
            lines.append(f"  Bootstrap ({len(self.boot_bounds)} resamples within "
                         f"environments): {level} lower confidence bound of the relative "
                         f"margin = {self.margin_lcb:.4g}.")
        draws = len(self.boot_bounds) + self.n_perm
        if draws:
            lines.append(f"  {self.n_solved} of the {draws} resampled margins were solved "
                         "for; bounds from the sample's weights placed the others on the "
                         "side that cannot change the bound or the p-value.")
        if self.n_perm:
            lines.append(f"  Permutation test of the margin against exchangeable labels "
                         f"({self.n_perm} label "
                         f"permutations): p = {self.perm_pvalue:.3g}"
                         + ("." if c.holds else " (uninformative here: the observed margin "
                            "is not above the tolerance, so there is no identifying "
                            "heterogeneity to test; the equal-risk test below speaks to "
                            "differences between the environments)."))
        if c.certificate is not None:
            lines.append(f"  Condition 1a certificate: {c.certificate}.")
        if self.invariance is not None:
            lines.append(f"Model check: {self.invariance}")
        if not (c.holds and self.holds_with_confidence):
            lines += [
                "What to do:",
                "  - collect more environments, or stronger or different interventions, so "
                "that some weighting of the environments dominates their average in every "
                "direction;",
                "  - if only some covariates can be intervened on, check the limited-"
                "intervention route (Condition 4: every child of the outcome must be "
                "intervened on) with LinearSEM.check_identification on a planned design;",
                "  - more rows per environment narrow the bootstrap bound.",
            ]
        if self.invariance is not None and self.invariance.pvalue < self.alpha:
            lines.append("  - the risks differ at the estimate: the invariance assumption "
                         "may fail (an unobserved cause, or interventions on the outcome).")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class ClosestSupport:
    """:func:`closest_to_invariance`'s answer: coefficients ``b`` on ``support`` (indices
    in model order; pooled OLS, or the reported fit where that is the one chosen), its
    equal-risk ``test`` (the delta it is invariant up to, with its bound), the
    ``tolerance`` the data certify (the smallest upper bound among the fits compared)
    and the number of fits ``compared``."""

    support: tuple
    b: FloatArray
    test: RiskInvarianceTest
    tolerance: float
    compared: int

    def to_dict(self, names: list) -> dict:
        """Plain JSON values, the covariates by ``names`` (model order)."""
        return jsonable({"support": [names[j] for j in self.support],
                         "params": {names[j]: self.b[j] for j in self.support},
                         "invariance": self.test.to_dict(), "tolerance": self.tolerance,
                         "compared": self.compared})


def detectable_departure(relative_variances: FloatArray) -> float:
    """The smallest ``d`` such that the equal-risk test (level :data:`RISK_TEST_LEVEL`)
    detects with probability :data:`DETECT_POWER` one environment's risk at ``(1 + d) R``
    beside the others' at ``R``, whichever environment departs; ``relative_variances``
    are the variances of the risks' estimates over ``R^2`` (``Var(r^2) / (n_e R^2)``, ``2 /
    n_e`` for centred Gaussian residuals).  Environment ``e`` departing gives the
    noncentrality ``d^2 W_e W_o / (W_e + W_o)``, ``W_e = 1 / (v_e (1 + d)^2)`` (its
    residuals scaled with its risk), ``W_o`` the sum of the others' ``1 / v_f``,
    against the chi2(|E| - 1) critical value; infinite where that stays below what the
    power needs however large ``d`` (``1 / v_e``, its limit, too small: few rows)."""
    v = np.asarray(relative_variances, dtype=np.float64)
    if np.any(v <= 0):
        return 0.0
    df = len(v) - 1
    critical = chi2_isf(RISK_TEST_LEVEL, df)
    needed = optimize.brentq(lambda lam: stats.ncx2.sf(critical, df, lam) - DETECT_POWER,
                             1e-9, 1e4)

    def shortfall(d: float, e: int) -> float:
        W_e, W_o = 1.0 / (v[e] * (1.0 + d) ** 2), np.sum(1.0 / np.delete(v, e))
        return d**2 * W_e * W_o / (W_e + W_o) - needed

    if needed >= 1.0 / v.max():
        return np.inf
    return max(optimize.brentq(shortfall, 0.0, 1e9, args=(e,)) for e in range(len(v)))


def detectable_sentence(d: float) -> str:
    """:func:`detectable_departure` in words (nothing where it is unknown, NaN)."""
    if np.isnan(d):
        return ""
    if not np.isfinite(d):
        return ("At these sizes the test cannot detect a departure of one environment's "
                f"risk with {DETECT_POWER:.0%} power, however large (too few rows).")
    return (f"At these sizes the test detects ({DETECT_POWER:.0%} power) one environment's "
            f"risk {percent(d)} above the others'; smaller departures from invariance can "
            "pass unseen.")


def percent(x: float) -> str:
    """A relative tolerance as a percentage, to two significant digits ("n/a" where it is
    unknown, NaN)."""
    if np.isnan(x):
        return "n/a"
    return f"{100 * x:.2g}%" if x < 10 else f"{100 * x:.0f}%"


def risk_invariance_test(risks: FloatArray, variances: FloatArray,
                         mom: Moments) -> RiskInvarianceTest:
    """See :class:`RiskInvarianceTest`; inputs are per-environment risks ``R_e(b)`` and the
    variances of their estimates (``Var_e(r^2) / n_e`` from rows, or between blocks), and
    the moments they come from (the environments and their shares of the rows)."""
    E = mom.n_envs
    R = np.asarray(risks, dtype=np.float64)
    W = 1.0 / np.maximum(variances, 1e-300)
    RW = (W @ R) / W.sum()
    T = float(W @ (R - RW) ** 2)
    return RiskInvarianceTest(statistic=T, df=E - 1, pvalue=chi2_sf(T, E - 1),
                              risks=R, envs=mom.envs,
                              variances=np.asarray(variances, dtype=np.float64),
                              weights=mom.pooled_weights())


def risk_test_at(mom: Moments, b: FloatArray) -> RiskInvarianceTest:
    """The equal-risk test at ``b`` from the moments alone
    (:func:`~negdro_stats.data.risk_variances`)."""
    return risk_invariance_test(*risk_variances(mom, b), mom)


def closest_to_invariance(mom: Moments, keep: tuple = (), *,
                          test_at: Callable[[FloatArray], RiskInvarianceTest],
                          fit: tuple | None = None) -> ClosestSupport | None:
    """Theorem 6 with a tolerance, where no support is invariant: pooled OLS on each
    support of a backward path -- from every covariate, each step removing the one whose
    removal leaves the smallest upper bound of :attr:`RiskInvarianceTest.delta` --
    and ``fit`` (``(support, b)``, the reported one); the tolerance ``delta*`` the data
    certify (the smallest upper bound among them), and among the fits invariant up to it
    (``delta <= delta*``) the one of least pooled risk.  Every support holds ``keep``
    (the intercept); ``test_at(b)`` is the equal-risk test.  None past
    :data:`CLOSEST_MAX_P` covariates.  (Not a causal claim: with nonlinear mechanisms
    and shifted parents the parents' linear fit is often not the closest to invariant;
    docs/design.rst, Measured choices.)"""
    if mom.p > CLOSEST_MAX_P:
        return None
    pooled = mom.pooled_weights()
    G = np.tensordot(pooled, mom.Sigma, 1)
    c = pooled @ mom.sxy

    def fitted(S: tuple) -> tuple[RiskInvarianceTest, FloatArray]:
        b = np.zeros(mom.p)
        if S:
            idx = list(S)
            b[idx] = np.linalg.lstsq(G[np.ix_(idx, idx)], c[idx], rcond=None)[0]
        return test_at(b), b

    S = tuple(range(mom.p))
    path = [(S, *fitted(S))]
    while len(S) > len(keep):
        trials = [(T, *fitted(T)) for T in (tuple(k for k in S if k != j) for j in S
                                             if j not in keep)]
        path.append(min(trials, key=lambda t: t[1].delta_upper))
        S = path[-1][0]
    if fit is not None:
        path.append((tuple(fit[0]), test_at(fit[1]), fit[1]))
    tolerance = min(t.delta_upper for _, t, _ in path)
    S, test, b = min(((S, t, b) for S, t, b in path if t.delta <= tolerance),
                     key=lambda f: float(f[1].weights @ f[1].risks))
    return ClosestSupport(support=S, b=b, test=test, tolerance=tolerance,
                          compared=len(path))


def identification_report(
    *,
    condition_1b: IdentificationResult,
    invariance: RiskInvarianceTest | None,
    second_moments: Callable[[Moments], FloatArray],
    resample: Callable[[np.random.Generator], Moments],
    permute: Callable[[np.random.Generator], Moments],
    n_boot: int,
    n_perm: int,
    alpha: float,
    rng: np.random.Generator,
    progress: Callable | None = None,
    n_jobs: Jobs = 1,
) -> IdentificationReport:
    """Bootstrap and permutation around Condition 1b; see the module docstring.

    ``second_moments(mom)`` is the stack whose Condition 1b margin is taken (without any
    constant column: a constant is never intervened on, so it would make the margin 0);
    ``resample(rng)`` and ``permute(rng)`` draw the moments of a stratified bootstrap
    sample and of a label permutation
    (:class:`~negdro_stats.MultiEnvData`'s resamplers).

    Each draw's margin is first bounded from the sample's weights
    (:func:`~negdro_stats.identification.conditions.relative_margin_bounds`: a few eigenvalue
    problems), and solved for (an SDP) only where the bounds cannot decide: the
    bootstrap bound needs the order statistics at the ``alpha`` quantile, the
    permutation p-value which side of the observed margin each draw is on.  The answer
    is the one every margin solved would give, up to the SDP's accuracy (the bounds are
    exact eigenvalues; where a solver's optimum falls short of a lower bound by its
    tolerance, the bound is the better value).  Past ``SDP_MAX_DIM`` covariates every
    margin is solved (the stacks are not kept).  The draws run in ``n_jobs`` workers
    (:func:`~negdro_stats._resampling.replicate`).
    """
    sample = condition_1b

    def draw(k: int, child: np.random.Generator):
        S = np.ascontiguousarray(      # (the same layout in any worker: the SDP's rounding)
            second_moments(resample(child) if k < n_boot else permute(child)))
        if S.shape[1] > SDP_MAX_DIM:                    # solved now: stacks not kept
            value = check_condition_1b(S).relative_margin
            return None, value, value
        return (S, *relative_margin_bounds(S, sample.weights))

    draws, failed = replicate(draw, n_boot + n_perm, rng, n_jobs=n_jobs,   # (one loop)
                              progress=progress)
    stacks = [None if d is None else d[0] for d in draws]
    bounds = np.array([(np.nan, np.nan) if d is None else d[1:] for d in draws],
                      dtype=np.float64).reshape(-1, 2)
    solved = 0

    def solve(i: int) -> None:
        nonlocal solved
        try:
            value = check_condition_1b(stacks[i]).relative_margin
        except (np.linalg.LinAlgError, ValueError, ArithmeticError):
            bounds[i], failed[i] = np.nan, True
            return
        bounds[i], solved = value, solved + 1

    boot, perm = bounds[:n_boot], bounds[n_boot:]
    lcb = _quantile_from_bounds(boot, alpha, solve)
    # a permuted margin within the verdict's tolerance of the observed one is a tie, and
    # ties count against the margin: at a margin of 0 (~1e-9 from the solver) the p-value
    # is 1, not the share of rounding errors above it (0.45-0.75 on four such designs)
    observed = sample.relative_margin - sample.tol
    for i in np.flatnonzero((perm[:, 0] < observed) & (perm[:, 1] >= observed)):
        solve(n_boot + i)                               # the bounds straddle the margin
    if failed.any():
        warn_user(f"{int(failed[:n_boot].sum())} of {n_boot} bootstrap and "
                  f"{int(failed[n_boot:].sum())} of {n_perm} permutation margins failed; "
                  "the bound and the p-value use the others.", BootstrapFailureWarning)
    perm = perm[np.isfinite(perm[:, 0])]
    exceed = int((perm[:, 0] >= observed).sum())
    return IdentificationReport(
        condition_1b=sample, margin_lcb=lcb, boot_bounds=boot,
        perm_pvalue=(1 + exceed) / (1 + len(perm)) if len(perm) else float("nan"),
        n_perm=n_perm, invariance=invariance, alpha=alpha,
        n_solved=solved + sum(d is not None and d[0] is None for d in draws))


def _quantile_from_bounds(bounds: FloatArray, alpha: float,
                          solve: Callable[[int], None]) -> float:
    """``np.quantile(values, alpha)`` of values known by bounds ``(lower, upper)`` (rows of
    ``bounds``, NaN rows left out), solving (``solve(i)`` sets row ``i`` to its value, or
    NaN) only the rows whose interval meets the interval that holds the two order
    statistics the quantile interpolates: the ``j``-th smallest lower and the ``k``-th
    smallest upper bound.  The others lie wholly below or above it, and stand in as
    ``-inf`` / ``+inf``, which leaves those order statistics unchanged."""
    while True:
        ok = np.isfinite(bounds[:, 0])
        if not ok.any():
            return float("nan")
        h = alpha * (ok.sum() - 1)
        j, k = int(np.floor(h)), int(np.ceil(h))
        low = np.sort(bounds[ok, 0])[j]
        high = np.sort(bounds[ok, 1])[k]
        open_ = ok & (bounds[:, 0] < bounds[:, 1]) & (bounds[:, 1] >= low) & (
            bounds[:, 0] <= high)
        if not open_.any():
            break
        for i in np.flatnonzero(open_):
            solve(i)
    ok = np.isfinite(bounds[:, 0])
    lo, hi = bounds[ok, 0], bounds[ok, 1]
    values = np.where(lo == hi, lo, np.where(hi < low, -np.inf, np.inf))
    return float(np.quantile(values, alpha))
