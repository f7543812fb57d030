"""Sample-size planning for a planned design: how many rows per environment?

:meth:`LinearSEM.check_identification <negdro_stats.planning.design.LinearSEM.check_identification>`
says whether the environments identify ``beta*`` in the population; how many rows each
environment needs before a fit recovers it is a finite-sample question.
:func:`plan_sample_size` answers it by simulation, for a grid of candidate ``n`` (rows per
environment): it reports the estimation error ``||b - beta*||_2``, the probability that
the selected support is exactly the support of ``beta*``, and the probability that the
data will show the identification margin (the bootstrap lower bound of
:meth:`NegDRO.diagnose <negdro_stats.NegDRO.diagnose>` above its tolerance); and
:meth:`SamplePlan.required_n` inverts them.

Fast path (``draw="moments"``).  The estimator only sees per-environment moments
(docs/design.rst), so a replicate needs no rows.  For Gaussian rows with mean ``mu_e`` and
covariance ``C_e = F F^T`` the sample mean and the centred scatter of ``n`` rows are
independent,

    mean = mu_e + F g / sqrt(n),  g ~ N(0, I_k),
    sum_i (z_i - mean)(z_i - mean)^T = F W F^T,  W ~ Wishart(n - 1, I_k),

so one replicate costs ``|E|`` draws of size ``(p + 1)^2`` whatever ``n``, and the fit is
the one :meth:`NegDRO.fit <negdro_stats.NegDRO.fit>` runs on rows
(:func:`~negdro_stats.estimation.solve`).  On rows, the selection's score covariance adds a
fourth-cumulant term estimated from them; for Gaussian rows that term is pure sampling
noise, which :func:`cumulant_noise` draws from a few auxiliary rows (leaving it out made
the fits measurably worse than those on rows: P(error <= 0.05) 0.63 against 0.71 on
Example 3 at n = 700; with it, 0.68).  Up to ``AUX_ROWS`` rows per environment a
replicate instead draws its ``n`` Gaussian rows themselves, as cheap as the auxiliary
rows: its moments and its score covariance are then those of the same rows, as in a fit
on them (independent draws of the two can make the score covariance indefinite, which
the selection repairs at up to 1.5 times the cost of a fit on rows: eq. (33), p = 10,
n = 25 ... 100).  For a design with uniform noise components
(:attr:`LinearSEM.is_gaussian` False) everything is drawn as for Gaussian rows with the
same first and second moments: the fourth cumulants of the noise are left out.
``draw="rows"`` draws rows with :meth:`LinearSEM.sample` and fits them as ``NegDRO``
does (exact for any noise, slower).

The margin's bootstrap bound without a bootstrap.  ``diagnose`` reports the
``alpha``-quantile of the bootstrap relative margins.  By the bootstrap principle the
spread of the bootstrap margins around the sample margin ``m_r`` mimics the spread of
the sample margin around the population margin ``m``, which the replicates at the same
``n`` show directly, so each replicate's bound is approximated by

    LCB_r = m_r - (m - Q_alpha(m_1, ..., m_R)),

the sample margin minus the lower-tail spread of the sampling distribution (one SDP per
replicate instead of ``n_boot``).  It assumes that the bias and spread of the margin do
not depend on where the sample margin fell; near the threshold they do (a smaller margin
is biased further down), and the shift is optimistic there: on Example 3 it gave
P(bound > 0) = 0.19 and 0.87 at n = 500 and 1,000 where ``diagnose`` on rows gave 0.075
and 0.425 (40 samples each).  ``margin_boot=B`` instead runs a parametric bootstrap in
each replicate: ``B`` Wishart draws from the replicate's own moments (the Gaussian
analogue of ``diagnose``'s row bootstrap), the bound being their mean plus ``z_alpha``
times their standard deviation -- ``B`` SDPs per replicate.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .._resampling import process_jobs, replicate, workers
from .._stats import norm_ppf
from .._typing import FloatArray, IntArray
from .._validation import (
    check_int,
    check_option,
    check_rng,
    check_scalar,
    progress,
    warn_user,
)
from ..data.container import MultiEnvData
from ..data.fourth import gaussian_score_cov
from ..data.moments import Moments
from ..estimation import SolverOptions, SolverOutput, solve
from ..exceptions import DataError, DataWarning, SolverError
from ..identification import (
    IdentificationResult,
    RiskInvarianceTest,
    risk_invariance_test,
    risk_test_at,
)
from ..identification.conditions import DEFAULT_TOL, check_condition_1b
from ..identification.declared import Declarations
from ..results.plotting import plot_plan
from ..results.verdicts import verdict
from .design import DesignReport, LinearSEM

__all__ = ["SamplePlan", "cumulant_noise", "plan_sample_size", "sample_moments"]

CRITERIA = ("error", "support", "margin", "verdict")
DRAWS = ("moments", "rows")
AUX_ROWS = 200       # rows per environment: drawn up to here, else behind the cumulant noise
FINE = 64            # interpolation points between two candidate n (required_n)


def _gaussian_rows(population: Moments) -> tuple[FloatArray, list[FloatArray]]:
    """Per environment the mean ``mu_e`` of ``Z = (X, Y)`` and a factor ``F_e`` of its
    covariance (``C_e = F_e F_e^T``, zero directions dropped)."""
    p = population.p
    mu = np.column_stack([population.mean_x, population.mean_y])
    raw = np.empty((population.n_envs, p + 1, p + 1))
    raw[:, :p, :p], raw[:, :p, p] = population.Sigma, population.sxy
    raw[:, p, :p], raw[:, p, p] = population.sxy, population.syy
    factors = []
    for C in raw - np.einsum("ei,ej->eij", mu, mu):
        vals, vecs = np.linalg.eigh(C)
        keep = vals > 1e-12 * max(vals[-1], 1e-300)
        factors.append(vecs[:, keep] * np.sqrt(vals[keep]))
    return mu, factors


def sample_moments(population: Moments, n: int, rng: np.random.Generator) -> Moments:
    """The moments of ``n`` Gaussian rows per environment with the given population
    moments, drawn without the rows (see the module docstring).

    Parameters
    ----------
    population : Moments
        Population moments, e.g. ``LinearSEM.moments()``.
    n : int
        Rows per environment; at least 2.
    rng : numpy Generator

    Returns
    -------
    Moments
        Sample moments with ``n`` rows in every environment.
    """
    E, p = population.n_envs, population.p
    mu, factors = _gaussian_rows(population)
    mean, second = np.empty_like(mu), np.empty((E, p + 1, p + 1))
    for e, F in enumerate(factors):
        k = F.shape[1]
        mean[e] = mu[e] + F @ rng.standard_normal(k) / np.sqrt(n)
        W = np.atleast_2d(stats.wishart.rvs(df=n - 1, scale=np.eye(k), random_state=rng))
        second[e] = F @ W @ F.T / n + np.outer(mean[e], mean[e])      # raw E_e[Z Z^T]
    return Moments(n=np.full(E, float(n)), mean_x=mean[:, :p], mean_y=mean[:, p],
                   Sigma=second[:, :p, :p], sxy=second[:, :p, p], syy=second[:, p, p],
                   envs=population.envs, names=population.names, outcome=population.outcome,
                   source="sample")


def cumulant_noise(population: Moments, n: int, rng: np.random.Generator
                   ) -> Callable[[Moments], Callable[[FloatArray, np.ndarray], FloatArray]]:
    """What a fit on ``n`` rows adds to the Gaussian score covariance, for Gaussian rows.

    On rows, NegDRO's selection uses ``Var_e(X r)`` estimated from them: the Gaussian
    form (:func:`~negdro_stats.estimation.gmm.gaussian_score_cov`) plus a fourth-cumulant
    term.  For Gaussian rows that term is sampling noise of order n^-1/2, asymptotically
    independent of the second moments (sample cumulants of different orders are
    uncorrelated for normal data).  It is drawn from ``m = min(n, AUX_ROWS)`` auxiliary
    Gaussian rows per environment and scaled by ``sqrt(m / n)``.  Returns a function of
    the replicate's moments giving the ``score_cov(b, cols)`` that
    :func:`~negdro_stats.estimation.solve` takes.
    """
    m = min(n, AUX_ROWS)
    X, y = _draw_rows(population, m, rng)
    aux = Moments.from_arrays(X.reshape(-1, population.p), y.ravel(),
                              np.repeat(np.arange(len(X)), m))
    rows = _rows_score_cov(X, y)
    shrink = np.sqrt(m / n)

    def for_moments(mom: Moments) -> Callable[[FloatArray, np.ndarray], FloatArray]:
        def score_cov(b: FloatArray, cols: np.ndarray) -> FloatArray:
            cumulant = rows(b, cols) - gaussian_score_cov(aux, b, cols)
            return gaussian_score_cov(mom, b, cols) + shrink * cumulant
        return score_cov

    return for_moments


def _draw_rows(population: Moments, n: int, rng: np.random.Generator
               ) -> tuple[FloatArray, FloatArray]:
    """``n`` Gaussian rows per environment with the population's first and second
    moments: ``X`` (E, n, p) and ``y`` (E, n)."""
    mu, factors = _gaussian_rows(population)
    Z = np.stack([mu[e] + rng.standard_normal((n, F.shape[1])) @ F.T
                  for e, F in enumerate(factors)])                  # (E, n, p + 1)
    return Z[:, :, :-1], Z[:, :, -1]


def _rows_score_cov(X: FloatArray, y: FloatArray
                    ) -> Callable[[FloatArray, np.ndarray], FloatArray]:
    """``score_cov(b, cols)``: per environment ``Var_e(X_cols r)`` over the rows."""
    def score_cov(b: FloatArray, cols: np.ndarray) -> FloatArray:
        S = X[:, :, cols] * (y - X @ b)[:, :, None]                # X_cols r, per row
        mean = S.mean(axis=1)
        return (np.einsum("emi,emj->eij", S, S) / S.shape[1]
                - np.einsum("ei,ej->eij", mean, mean))
    return score_cov


def _replicate_moments(population: Moments, n: int, rng: np.random.Generator
                       ) -> tuple[Moments, Callable[[FloatArray, np.ndarray], FloatArray]]:
    """A replicate's moments and the score covariance its fit uses (module docstring):
    up to ``AUX_ROWS`` rows per environment, ``n`` Gaussian rows drawn and their own
    ``Var_e(X r)``; beyond, :func:`sample_moments` and :func:`cumulant_noise`."""
    if n > AUX_ROWS:
        mom = sample_moments(population, n, rng)
        return mom, cumulant_noise(population, n, rng)(mom)
    X, y = _draw_rows(population, n, rng)
    mom = Moments(n=np.full(len(X), float(n)), mean_x=X.mean(axis=1), mean_y=y.mean(axis=1),
                  Sigma=np.einsum("eni,enj->eij", X, X) / n,
                  sxy=np.einsum("eni,en->ei", X, y) / n, syy=(y**2).mean(axis=1),
                  envs=population.envs, names=population.names,
                  outcome=population.outcome, source="sample")
    return mom, _rows_score_cov(X, y)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class SamplePlan:
    """Simulated performance of NegDRO on a design, per candidate rows per environment.

    Built by :func:`plan_sample_size`; ``summary()`` prints it, ``to_frame()`` tabulates
    it and ``required_n()`` inverts it.

    Attributes
    ----------
    n : ndarray of int, shape (k,)
        Candidate rows per environment, increasing.
    errors : ndarray, shape (k, reps)
        ``||b - beta*||_2`` of every replicate (``inf`` where the fit failed).
    support_ok : ndarray of bool, shape (k, reps)
        Whether the selected support is exactly the support of ``beta*``.
    margins : ndarray, shape (k, reps)
        Relative margin of Condition 1b on every replicate's moments.
    population_margin : float
        Relative margin of Condition 1b on the design's population moments.
    boot_lcb : ndarray or None, shape (k, reps)
        With ``margin_boot > 0``: every replicate's parametric bootstrap lower bound of
        the relative margin (else None: the shift approximation is used).
    margin_alpha : float
        One minus the level of the margin's lower bound (``alpha`` of ``NegDRO.diagnose``).
    tol : float
        The margin counts as shown when its lower bound exceeds ``tol``.
    draw : str
        ``"moments"`` or ``"rows"``.
    gaussian_approximation : bool
        Whether non-Gaussian noise was simulated by Gaussian moments.
    failed : int
        Replicates whose fit raised an error (counted as failures).
    seconds : float
        Wall time of the simulation.
    verdicts : ndarray of str, shape (k, reps), or None
        Every replicate fit's verdict, as :attr:`NegDROResults.verdict
        <negdro_stats.NegDROResults.verdict>` decides it: "identified", "if Condition
        4", "not identified" or "rejected" (a failed fit: "not identified").
    design : DesignReport or None
        :meth:`LinearSEM.check_identification
        <negdro_stats.planning.design.LinearSEM.check_identification>` of the planned design
        (population moments): which conditions identify ``beta*``.
    detectable : ndarray or None, shape (k,)
        Per candidate ``n``, the departure from invariance the fit's equal-risk test
        detects with 80% power at ``beta*``: one environment's risk that much (relative)
        above the others' (:attr:`RiskInvarianceTest.detectable
        <negdro_stats.identification.RiskInvarianceTest.detectable>`, Gaussian rows).
    """

    n: IntArray
    errors: FloatArray
    support_ok: np.ndarray
    margins: FloatArray
    population_margin: float
    boot_lcb: FloatArray | None = None
    margin_alpha: float = 0.05
    tol: float = DEFAULT_TOL
    draw: str = "moments"
    gaussian_approximation: bool = False
    failed: int = 0
    seconds: float = float("nan")
    verdicts: np.ndarray | None = None
    design: DesignReport | None = None
    detectable: FloatArray | None = None

    @property
    def reps(self) -> int:
        """Replicates per candidate ``n``."""
        return self.errors.shape[1]

    @property
    def margin_lcb(self) -> FloatArray:
        """Every replicate's lower bound of the relative margin, shape (k, reps):
        ``boot_lcb`` if computed, else the shift approximation
        ``m_r - (m - Q_alpha(m_1..m_R))`` (module docstring)."""
        if self.boot_lcb is not None:
            return self.boot_lcb
        spread = self.population_margin - np.quantile(self.margins, self.margin_alpha, axis=1)
        return self.margins - spread[:, None]

    def _probability(self, criterion: str, target_error: float | None) -> FloatArray:
        """Per candidate n, the share of replicates that meet the criterion."""
        if criterion == "error":
            return (self.errors <= target_error).mean(axis=1)
        if criterion == "support":
            return self.support_ok.mean(axis=1)
        if criterion == "verdict":
            if self.verdicts is None:
                raise DataError("This plan holds no fits' verdicts (a SamplePlan built by "
                                "hand); plan_sample_size records them.")
            return np.isin(self.verdicts, ("identified", "if Condition 4")).mean(axis=1)
        if self.boot_lcb is None and not self.population_margin > self.tol:
            return np.zeros(len(self.n))     # the shift rule would only echo the noise
        return (self.margin_lcb > self.tol).mean(axis=1)

    @property
    def identified(self) -> bool:
        """Whether the design identifies ``beta*`` in the population: some condition of
        the paper holds (:attr:`DesignReport.routes <negdro_stats.planning.design.DesignReport>`:
        Condition 1b, 4 without hidden confounding, or 6); for a plan without the
        design's report, whether Condition 1b's relative margin exceeds ``tol``."""
        if self.design is not None:
            return self.design.identified
        return bool(self.population_margin > self.tol)

    def to_frame(self) -> pd.DataFrame:
        """Per candidate ``n``: median, mean, 80% quantile and RMS of the error, the
        probabilities of the right support and of showing the margin, the median
        relative margin, and the shares of fits whose verdict is "identified" and "if
        Condition 4" (:attr:`verdicts`), and the departure from invariance the equal-risk
        test detects (:attr:`detectable`)."""
        err = self.errors
        return pd.DataFrame({
            "median_error": np.median(err, axis=1),
            "mean_error": err.mean(axis=1),
            "q80_error": np.quantile(err, 0.8, axis=1),
            "rmse": np.sqrt((err**2).mean(axis=1)),
            "p_support": self._probability("support", None),
            "p_margin": self._probability("margin", None),
            "median_margin": np.median(self.margins, axis=1),
            **({} if self.verdicts is None else {
                "p_identified": (self.verdicts == "identified").mean(axis=1),
                "p_if_condition_4": (self.verdicts == "if Condition 4").mean(axis=1)}),
            **({} if self.detectable is None else {"detectable": self.detectable}),
        }, index=pd.Index(self.n, name="n per env"))

    def required_n(self, target_error: float | None = None, *, power: float = 0.8,
                   criterion: str = "error") -> int | float:
        """The smallest ``n`` per environment at which the criterion holds with
        probability ``power``.

        Parameters
        ----------
        target_error : float, optional
            For ``criterion="error"``: ``P(||b - beta*||_2 <= target_error) >= power``.
        power : float, default 0.8
            The probability to reach, in (0, 1).
        criterion : {"error", "support", "margin", "verdict"}
            ``"support"``: the exact support of ``beta*`` is selected; ``"margin"``: the
            bootstrap lower bound of Condition 1b's relative margin exceeds ``tol``;
            ``"verdict"``: the fit's verdict is "identified" or "if Condition 4", so it
            reports bounded intervals -- unconditional, or valid if every child of Y is
            intervened on (:meth:`summary` says whether the planned design meets
            that).

        Returns
        -------
        int or float
            Rows per environment, rounded up (an int).  ``inf`` if the largest candidate does
            not reach ``power``; the smallest candidate if it already does (both warn
            with :class:`~negdro_stats.exceptions.DataWarning`: extend the grid).

        Notes
        -----
        The share of replicates meeting the criterion is known at the candidates;
        between two candidates ``n_lo < n < n_hi`` it is interpolated in ``log n``
        (weight ``theta = log(n / n_lo) / log(n_hi / n_lo)`` on ``n_hi``).  For the
        support and the margin, linearly: ``(1 - theta) P(n_lo) + theta P(n_hi)``.  For
        the error, each neighbour's errors are first carried to ``n`` by the n^-1/2
        rate, ``(1 - theta) P(err_lo sqrt(n_lo / n) <= t) + theta P(err_hi sqrt(n_hi / n)
        <= t)``: exact where the error falls at that rate, and the linear blend where the
        error distribution changes shape (a selection that switches routes makes it
        bimodal; an interpolated quantile then jumps).  The curve is made
        non-decreasing in ``n`` (running maximum over a fine grid, 64 points between
        candidates) and ``n`` is where it reaches ``power``: monotone in
        ``target_error`` and ``power``, and a candidate where the share there is
        exactly ``power`` and smaller before.
        """
        criterion = check_option(criterion, "criterion", "SamplePlan.required_n", CRITERIA)
        power = check_scalar(power, "power", "SamplePlan.required_n", min_val=0, max_val=1,
                             closed="neither")
        if criterion == "error":
            if target_error is None:
                raise DataError("required_n(criterion='error') needs target_error, the "
                                "largest acceptable ||b - beta*||_2.")
            target = check_scalar(target_error, "target_error", "SamplePlan.required_n",
                                  min_val=0, closed="neither")
        elif target_error is not None:
            raise DataError(f"target_error applies to criterion='error' only; got "
                            f"criterion={criterion!r}.")
        if criterion == "margin" and not self.population_margin > self.tol:
            routes = () if self.design is None else self.design.routes
            warn_user(f"The design does not identify beta* by Condition 1b (population "
                      f"relative margin {self.population_margin:.3g} <= {self.tol:g}): no "
                      "sample size shows a margin. " + (
                          f"It is identified by Condition {' / '.join(routes)}: use "
                          "criterion='verdict'." if routes else "Plan other interventions "
                          "(LinearSEM.suggest_interventions)."), DataWarning)
            return float("inf")
        log_n, share = self._share_curve(criterion, target if criterion == "error" else None)
        n = self._crossing(log_n, np.maximum.accumulate(share), power, criterion)
        return int(np.ceil(n - 1e-6)) if np.isfinite(n) else n      # whole rows

    def _share_curve(self, criterion: str, target: float | None
                     ) -> tuple[FloatArray, FloatArray]:
        """The interpolated share meeting the criterion on a fine grid of ``log n``
        (see :meth:`required_n`)."""
        log_n = np.log(self.n.astype(np.float64))
        theta = np.linspace(0.0, 1.0, FINE + 1)[:-1]
        at_candidates = self._probability(criterion, target)
        grid, share = [], []
        for k in range(len(self.n) - 1):
            log_m = log_n[k] + theta * (log_n[k + 1] - log_n[k])
            if criterion == "error":        # errors at n_j carried to m: err sqrt(n_j / m)
                lo, hi = (np.mean(self.errors[j][None, :]
                                  <= target * np.exp((log_m[:, None] - log_n[j]) / 2), axis=1)
                          for j in (k, k + 1))
            else:
                lo, hi = at_candidates[k], at_candidates[k + 1]
            grid.append(log_m)
            share.append((1 - theta) * lo + theta * hi)
        grid.append(log_n[-1:])
        share.append(at_candidates[-1:])
        return np.concatenate(grid), np.concatenate(share)

    def _crossing(self, log_n: FloatArray, curve: FloatArray, level: float,
                  criterion: str) -> float:
        """The first ``n`` where the non-decreasing piecewise-linear ``curve`` (over
        ``log n``) reaches ``level``."""
        hit = np.flatnonzero(curve >= level)
        if len(hit) == 0:
            warn_user(f"The {criterion} criterion is not met at the largest candidate n = "
                      f"{self.n[-1]}; required_n is inf. Add larger n to the plan.",
                      DataWarning)
            return float("inf")
        k = int(hit[0])
        if k == 0:
            warn_user(f"The {criterion} criterion is already met at the smallest candidate "
                      f"n = {self.n[0]}; fewer rows may do. Add smaller n to the plan.",
                      DataWarning)
            return float(self.n[0])
        a, b = curve[k - 1], curve[k]
        t = (level - a) / (b - a)
        return float(np.exp(log_n[k - 1] + t * (log_n[k] - log_n[k - 1])))

    def summary(self) -> str:
        """The plan in plain words, with the table of :meth:`to_frame`."""
        how = (f"Gaussian moments (rows up to n = {AUX_ROWS}, Wishart scatter beyond)"
               if self.draw == "moments" else "rows drawn and fitted")
        shows = self.population_margin > self.tol
        lines = [f"Sample-size plan: {self.reps} replicates per n, {how}, "
                 f"{self.seconds:.1f} s",
                 f"Population relative margin (Condition 1b): {self.population_margin:.4g} "
                 f"({'holds' if shows else 'fails: no n shows a margin'}); "
                 f"p_margin: the {100 * (1 - self.margin_alpha):g}% bootstrap lower bound exceeds "
                 f"{self.tol:g} ("
                 + ("a parametric bootstrap in every replicate)." if self.boot_lcb is not None
                    else "shift approximation from the replicates' spread; optimistic "
                    "near the threshold, see margin_boot)."),
                 *self._design_lines(),
                 *([] if self.detectable is None else [
                     "detectable: the smallest departure from invariance the fit's "
                     "equal-risk test detects (80% power): one environment's risk that much "
                     "above the others'; smaller ones pass as invariant."]),
                 self.to_frame().to_string(float_format=lambda x: f"{x:.4g}")]
        if self.gaussian_approximation:
            lines.append("Note: the design has non-Gaussian noise; its moments were drawn as "
                         "those of Gaussian rows with the same means and covariances "
                         "(draw='rows' is exact).")
        if self.failed:
            lines.append(f"Note: {self.failed} fits failed and count as failures.")
        return "\n".join(lines)

    def _design_lines(self) -> list[str]:
        """What identifies the design, and which intervals the fits' verdicts refer to
        (the plan agrees with what the fit will say)."""
        if self.design is None:
            return []
        d = self.design
        if not d.identified:
            lines = ["Design: no condition of the paper identifies beta* "
                     "(LinearSEM.suggest_interventions()); fits should say 'not identified'."]
            if self.verdicts is not None and self.to_frame()["p_if_condition_4"].max() > 0:
                missing = [c for c in d.D if c not in d.S_L]
                why = (f"{missing}, children of Y, are never intervened on" if missing
                       else "Condition 6 fails under the hidden confounding" if d.confounded
                       else "Condition 4's matrix part fails")
                lines.append("Where a fit says 'if Condition 4' (p_if_condition_4), it is "
                             "wrong for this design: that verdict and its intervals assume "
                             "every child of Y is intervened on (Condition 4, or 6 with "
                             "confounding), which data cannot check and this design does "
                             f"not meet ({why}).")
            return lines
        children = (f"here every child of Y is (D = {list(d.D)} within S_L)"
                    if set(d.D) <= set(d.S_L) else "here not every child of Y is")
        lines = [f"Design: beta* is identified by Condition {' / '.join(d.routes)} "
                 "(population moments, LinearSEM.check_identification())"
                 + ("" if "1b" in d.routes else "; not by Condition 1b, so no n shows "
                    "its margin: read p_if_condition_4 (criterion='verdict')") + "."]
        if self.verdicts is not None:
            lines.append("Targets: error and support refer to the point estimate; the "
                         "verdicts to the intervals a fit reports: p_identified, "
                         "unconditional (bootstrap, Wald before it runs); "
                         "p_if_condition_4, Wald intervals valid if every child of Y is "
                         f"intervened on -- {children}.")
        return lines + d.declaration_lines()

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        return (f"<SamplePlan: n={self.n.tolist()}, reps={self.reps}, "
                f"draw={self.draw!r}>")

    def plot(self, target_error: float | None = None):
        """Error quantiles (left) and the probabilities (right) against ``n``, log axes;
        with ``target_error``, the target on the left and ``P(error <= target)`` on the
        right.  Returns the matplotlib ``Figure`` (needs the ``plot`` extra;
        :func:`negdro_stats.results.plotting.plot_plan`)."""
        if target_error is not None:
            target_error = check_scalar(target_error, "target_error", "SamplePlan.plot",
                                        min_val=0, closed="neither")
        return plot_plan(self, target_error=target_error)


def plan_sample_size(
    sem: LinearSEM,
    n: Sequence[int] = (250, 500, 1000, 2000, 4000),
    *,
    reps: int = 200,
    rng: np.random.Generator | int | None = None,
    gamma: float = 20.0,
    draw: str = "moments",
    margin_alpha: float = 0.05,
    margin_boot: int = 0,
    not_descendants: Sequence[str] | None = None,
    targets: Mapping | None = None,
    verbose: bool | None = None,
    **options: Any,
) -> SamplePlan:
    """Simulate NegDRO's fit on a planned design for each candidate rows per environment.

    Parameters
    ----------
    sem : LinearSEM
        The planned design (every environment gets ``n`` rows).
    n : sequence of int
        Candidate rows per environment, each at least ``p + 2``.
    reps : int, default 200
        Replicates per candidate (at least 2).
    rng : numpy Generator or seed, optional
    gamma : float, default 20
        NegDRO's ``gamma``, as in :class:`~negdro_stats.NegDRO`.
    draw : {"moments", "rows"}
        Draw each replicate's moments directly (fast; Gaussian, see the module
        docstring), or draw rows and fit them as ``NegDRO(...).fit(n_boot=0)`` does.
    margin_alpha : float, default 0.05
        One minus the level of the margin's lower bound (``alpha`` of
        ``NegDRO.diagnose``).
    margin_boot : int, default 0
        Parametric bootstrap draws per replicate for the margin's lower bound (module
        docstring; 30 is plenty for its normal approximation); 0 uses the faster, and
        near the threshold optimistic, shift approximation.
    not_descendants, targets : optional
        The declarations the fits will be given (``NegDRO(not_descendants=,
        targets=)``): the plan's summary says where the planned design contradicts
        them and whether they settle what a fit resting on Condition 4 assumes
        (:meth:`LinearSEM.check_identification
        <negdro_stats.planning.design.LinearSEM.check_identification>`).
    verbose : bool, optional
        Progress bar over the replicates (tqdm); default: in a terminal or notebook,
        after 2 s, and elsewhere (a script, a CI log) one line through :mod:`logging`
        (INFO, logger ``negdro_stats``) after 2 s saying what runs and how long it
        should take; ``False``: neither.  The replicates run in the
        resampling's workers (forked processes where they can be, ``NEGDRO_N_JOBS`` where
        set: :meth:`NegDRO.fit <negdro_stats.NegDRO.fit>`'s ``n_jobs``), with the same plan
        whatever their number.
    **options
        Solver settings, as for :meth:`NegDRO.fit <negdro_stats.NegDRO.fit>` (among
        them ``method`` and the selection's ``alpha``).

    Returns
    -------
    SamplePlan

    Raises
    ------
    DataError
        If ``sem`` is not a LinearSEM, ``n`` is not a list of distinct integers >= p + 2,
        an option is unknown, or a declaration names an unknown covariate or
        environment.

    Examples
    --------
    >>> from negdro_stats import simulate
    >>> from negdro_stats.planning import plan_sample_size
    >>> plan = plan_sample_size(simulate.example3("strong"), [100, 500, 2000], reps=20,
    ...                         rng=0, verbose=False)
    >>> plan.to_frame()["p_support"].tolist()
    [0.25, 1.0, 1.0]
    >>> plan.required_n(criterion="support")             # P(right support) >= 0.8
    326
    """
    owner = "plan_sample_size"
    if not isinstance(sem, LinearSEM):
        raise DataError(f"The 'sem' parameter of {owner} must be a LinearSEM (a planned "
                        f"design); got {type(sem).__name__}.")
    if sem.n_envs < 2:
        raise DataError(f"NegDRO needs at least 2 environments; the design has "
                        f"{sem.n_envs}. Plan at least two (LinearSEM.with_environment).")
    grid = _check_grid(n, sem.p, owner)
    reps = check_int(reps, "reps", owner, min_val=2)
    rng = check_rng(rng, "rng", owner)
    gamma = check_scalar(gamma, "gamma", owner, min_val=0)
    margin_alpha = check_scalar(margin_alpha, "margin_alpha", owner, min_val=0, max_val=1,
                                closed="neither")
    draw = check_option(draw, "draw", owner, DRAWS)
    margin_boot = check_int(margin_boot, "margin_boot", owner, min_val=0)
    if margin_boot == 1:
        raise ValueError(f"The 'margin_boot' parameter of {owner} must be 0 (the shift "
                         "approximation) or at least 2 (one draw has no spread). Got 1 "
                         "instead.")
    solver_options = SolverOptions.from_user(owner, options, gamma=gamma, fixed=())
    Declarations.from_user(not_descendants, targets, names=sem.names[1:], envs=sem.envs,
                           owner=owner)                 # named errors for this function
    design = sem.check_identification(not_descendants=not_descendants, targets=targets)
    population = sem.moments()
    beta_star, truth = sem.beta_star, sem.beta_star != 0
    shape = (len(grid), reps)
    start = time.perf_counter()

    def one(i: int, child: np.random.Generator) -> tuple[float, bool, float, float, str]:
        """Replicate ``i`` (candidate ``i // reps``): error, support, margin, bound,
        verdict."""
        n_rows = int(grid[i // reps])
        if draw == "moments":
            mom, score_cov = _replicate_moments(population, n_rows, child)
            risk_test = risk_test_at        # Gaussian rows: no fourth moments
        else:
            data = MultiEnvData.from_frame(sem.sample(n_rows, child, env_column="env"),
                                           "env", outcome=sem.names[0])
            mom, score_cov = data.moments, data.score_cov
            risk_test = lambda mom, b: risk_invariance_test(  # noqa: E731
                *data.risk_variances(b), mom)
        ident = check_condition_1b(mom)
        bound = (_bootstrap_bound(mom, n_rows, margin_boot, margin_alpha, child)
                 if margin_boot else np.nan)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")          # the replicates' fit warnings
                out = solve(mom, solver_options, score_cov=score_cov)
        except SolverError:                              # a failed fit counts as a miss
            return np.inf, False, ident.relative_margin, bound, "not identified"
        return (float(np.linalg.norm(out.b - beta_star)),
                bool(np.array_equal(out.support, truth)), ident.relative_margin, bound,
                _fit_verdict(out, ident, risk_test(mom, out.b)))

    jobs = process_jobs()
    what = (f"plan_sample_size: {shape[0] * reps} fits of NegDRO ({shape[0]} n x {reps} "
            f"replicates, {workers(jobs)})")
    results, crashed = replicate(one, shape[0] * reps, rng, n_jobs=jobs,
                                 progress=lambda steps: progress(steps, verbose, "plan",
                                                                 shape[0] * reps, what))
    if crashed.any():
        raise SolverError(f"{int(crashed.sum())} of {crashed.size} replicates failed "
                          "numerically (drawing the moments or checking the margin).")
    errors, support_ok, margins, boot_lcb, verdicts = (np.array(col).reshape(shape)
                                                       for col in zip(*results, strict=True))
    failed = int(np.isinf(errors).sum())
    return SamplePlan(n=grid, errors=errors, support_ok=support_ok, margins=margins,
                      population_margin=check_condition_1b(population).relative_margin,
                      boot_lcb=boot_lcb if margin_boot else None,
                      margin_alpha=margin_alpha, tol=DEFAULT_TOL, draw=draw,
                      gaussian_approximation=draw == "moments" and not sem.is_gaussian,
                      failed=failed, seconds=time.perf_counter() - start,
                      verdicts=verdicts, design=design,
                      detectable=np.array([_detectable(population, k, beta_star)
                                           for k in grid]))


def _fit_verdict(out: SolverOutput, ident: IdentificationResult,
                 invariance: RiskInvarianceTest) -> str:
    """The verdict :attr:`NegDROResults.verdict <negdro_stats.NegDROResults.verdict>`
    would give this fit (the one rule, :func:`negdro_stats.results.verdicts.verdict`)."""
    return verdict(SimpleNamespace(selection=out.selection, identification=ident,
                                   invariance=invariance, declarations=None))


def _detectable(population: Moments, n: int, b: FloatArray) -> float:
    """:attr:`SamplePlan.detectable` at ``n`` rows per environment."""
    rows = replace(population, n=np.full(population.n_envs, float(n)))
    return risk_test_at(rows, b).detectable


def _bootstrap_bound(mom: Moments, n: int, draws: int, alpha: float,
                     rng: np.random.Generator) -> float:
    """Parametric bootstrap lower bound of the relative margin: ``draws`` Wishart moment
    sets from ``mom`` taken as the population, mean + z_alpha sd of their margins (draws
    whose margin fails numerically are left out; NaN with fewer than two left)."""
    boot, failed = replicate(
        lambda k, child: check_condition_1b(sample_moments(mom, n, child)).relative_margin,
        draws, rng)
    boot = np.asarray([m for m, bad in zip(boot, failed, strict=True) if not bad])
    if len(boot) < 2:
        return np.nan
    return float(np.mean(boot) + norm_ppf(alpha) * np.std(boot, ddof=1))


def _check_grid(n: object, p: int, owner: str) -> IntArray:
    """Distinct integers >= p + 2 (fewer rows leave the sample second moments singular),
    sorted."""
    values = [n] if np.ndim(n) == 0 else list(n)   # type: ignore[arg-type]
    message = (f"The 'n' parameter of {owner} must be distinct integers >= p + 2 = {p + 2} "
               f"(rows per environment). Got {n!r} instead.")
    if not values or not all(not isinstance(v, bool) and (
            isinstance(v, (int, np.integer)) or isinstance(v, (float, np.floating))
            and float(v).is_integer()) for v in values):      # 200.0 is 200 rows
        raise DataError(message)
    grid = np.sort(np.asarray(values, dtype=np.int64))
    if grid[0] < p + 2 or len(np.unique(grid)) != len(grid):
        raise DataError(message)
    return grid
