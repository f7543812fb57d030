"""Confidence sets for beta* by inverting the invariance test (weak-identification robust).

At ``beta*`` the residual moments ``g_e(b) = E_e[X (Y - b^T X)]`` of *every* covariate are
the same in every environment (Lemma 1), with or without hidden confounding, however
weak the interventions.  The Anderson-Rubin-type statistic of these equations at a fixed
``b`` (no parameter estimated: the continuously updated criterion with the score
covariances ``Var_e(X r)`` evaluated at ``b``,
:meth:`~negdro_stats.selection.InvarianceGMM.test_at`)

    AR(b) = min_m sum_e n_e (g_e(b) - m)^T V_e(b)^{-1} (g_e(b) - m)  ~  chi2((|E| - 1) p)

at ``b = beta*``, whatever the strength of identification.  The joint set
``{b : AR(b) <= chi2_{1 - alpha}((|E| - 1) p)}`` therefore covers ``beta*`` with
probability ``1 - alpha`` in large samples; it is bounded where the environments
identify ``beta*``, unbounded in the directions they leave undetermined, and empty when
no ``b`` makes the moments invariant (then no invariant linear model is consistent with
the data).  It is empty exactly when the continuously updated estimator's (CUE) criterion
exceeds that quantile.

Per coefficient, the subvector statistic profiles out the others,
``AR_j(beta_0) = min_{b: b_j = beta_0} AR(b)`` (the CUE with ``Y - beta_0 X_j`` as the
outcome), referred to ``chi2((|E| - 1) p - (p - 1))``: the plug-in subvector
Anderson-Rubin test of Guggenberger, Kleibergen, Mavroeidis and Chen (2012), which keeps
its size when the nuisance coefficients are weakly identified (proved there for
conditionally homoskedastic moments; the benchmark measures it here).  The interval of
``b_j`` is the hull of the ``beta_0`` where ``AR_j`` stays below the quantile: from the
CUE by doubling steps out to ``1e6`` standard errors each way, the first crossing refined
by Brent's method; an end that is not reached, or beyond which ``AR_j`` falls below the
quantile again (the set has another piece), is infinite.  The p-value of "X_j has no
direct effect" is ``P(chi2 > AR_j(0))``.

Score covariances: the Gaussian form from the moments at each ``b`` plus the non-Gaussian
part (the rows' or fourth moments' ``Var_e(X r)`` minus the Gaussian form) estimated once
at the reported fit and held fixed, as in the selection.  With an intercept the slopes are
judged on the pooled-centred moments (the intercept profiled by the pooled level
condition, as the fit does); the intercept's own interval is not computed (NaN).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy import optimize, stats

from ._typing import FloatArray
from ._validation import check_scalar
from .exceptions import DataError
from .fourth import gaussian_score_cov
from .moments import Moments
from .route import centred_problem, instrument_budget, standardised_cov
from .selection import Cumulant, InvarianceGMM

__all__ = ["RobustSet", "robust_set"]

REACH = 1e6          # an endpoint beyond this many standard errors is infinite
MAX_DOUBLINGS = 60


@dataclass(frozen=True, eq=False)
class RobustSet:
    """The confidence set ``{b : AR(b) <= chi2_{1 - alpha}(df)}`` and its projections.

    Attributes
    ----------
    alpha : float
        1 - the coverage.
    statistic, df, critical : float, int, float
        ``min_b AR(b)`` (the CUE criterion), its degrees of freedom and the quantile the
        set compares with; the set is empty when ``statistic > critical``.
    estimate : Series
        The CUE, the centre of the per-coefficient search (original units).
    lower, upper : Series
        Per-coefficient subvector intervals (+-inf where unbounded; NaN where empty, and
        for the intercept).
    pvalues : Series
        Robust p-values of "no direct effect" (``b_j = 0``).
    df_sub, critical_sub : int, float
        Degrees of freedom and quantile of the subvector tests.
    """

    alpha: float
    statistic: float
    df: int
    critical: float
    estimate: pd.Series
    lower: pd.Series
    upper: pd.Series
    pvalues: pd.Series
    df_sub: int
    critical_sub: float
    _gmm: InvarianceGMM              # the joint test, on standardised moments
    _slopes: np.ndarray              # the coefficients it covers (model order)
    _to_std: FloatArray              # b -> standardised b, entrywise

    @property
    def empty(self) -> bool:
        """No ``b`` makes the residual moments invariant at level ``alpha``."""
        return bool(self.statistic > self.critical)

    @property
    def bounded(self) -> pd.Series:
        """Per coefficient: is its interval bounded?"""
        return np.isfinite(self.lower) & np.isfinite(self.upper)

    def conf_int(self) -> pd.DataFrame:
        """``lower`` and ``upper`` by coefficient (statsmodels' layout)."""
        return pd.DataFrame({"lower": self.lower, "upper": self.upper})

    def contains(self, b: FloatArray) -> bool:
        """Whether the joint set contains ``b`` (slopes in model order; with an intercept,
        its value is not used: it is profiled)."""
        b = np.asarray(b, dtype=np.float64)[self._slopes] * self._to_std
        return bool(self._gmm.test_at(np.arange(len(b)), b)[0] <= self.critical)

    def __repr__(self) -> str:
        state = ("empty" if self.empty else
                 "bounded" if self.bounded.loc[self.lower.notna()].all() else "unbounded")
        return (f"<RobustSet: {state}, level {1 - self.alpha:g}, min AR = "
                f"{self.statistic:.4g} vs {self.critical:.4g} (chi2 {self.df})>")


def _with_outcome_shift(mom: Moments, j: int, beta0: float) -> Moments:
    """The moments of ``(X, Y - beta0 X_j)``: fixing ``b_j = beta0`` in the invariance
    conditions is regressing this outcome on the other covariates."""
    Sj = mom.Sigma[:, :, j]
    return replace(mom, sxy=mom.sxy - beta0 * Sj,
                   syy=mom.syy - 2.0 * beta0 * mom.sxy[:, j] + beta0**2 * Sj[:, j],
                   mean_y=mom.mean_y - beta0 * mom.mean_x[:, j], fourth=None)


def robust_set(mom: Moments, b_hat: FloatArray, *, alpha: float = 0.05,
               score_cov: Callable[[FloatArray, np.ndarray], FloatArray] | None = None,
               const: int | None = None) -> RobustSet:
    """The robust confidence set of ``beta*`` (module docstring) from per-environment
    moments, the reported fit ``b_hat`` (model order) where the non-Gaussian part of the
    score covariances is estimated (``score_cov(b, cols)``, e.g.
    :meth:`~negdro_stats.data.MultiEnvData.score_cov`; without it the Gaussian form),
    and ``const`` the index of an intercept column (profiled)."""
    alpha = check_scalar(alpha, "alpha", "robust_set", min_val=0, max_val=0.5,
                         closed="neither")
    names = list(mom.names)
    b_hat = np.asarray(b_hat, dtype=np.float64)
    if const is not None:
        slopes, work, _, score_cov = centred_problem(mom, const, score_cov)
        b_work = b_hat[slopes]
    else:
        slopes, work, b_work = np.arange(mom.p), mom, b_hat
    p, E = work.p, work.n_envs
    q = instrument_budget(E, float(work.n.min()), p)
    if q < p:
        raise DataError(f"Robust confidence sets use every covariate's residual moment; "
                        f"with {p} covariates, {E} environments and {work.n.min():g} rows "
                        f"in the smallest environment that is too many moment conditions "
                        f"(at most {q} covariates here, (|E| - 1) p^2 <= 2 n and "
                        "(|E| - 1) p <= 3 sqrt(n)).  Use the bootstrap intervals, or fit "
                        "the selected covariates only.")
    d, s_y = work.scales()
    std = work.rescale(d, s_y)
    _, rows_cov = standardised_cov(score_cov, d, s_y)
    every = np.arange(p)
    b0 = b_work * d / s_y
    K = Cumulant.zero(E) if rows_cov is None else Cumulant(
        every, rows_cov(b0, every) - gaussian_score_cov(std, b0, every))

    joint = InvarianceGMM(std, instruments=every, cumulant=K, b_ref=b0)
    cue = joint.fit_cue(every)
    df = joint.df_base
    critical = float(stats.chi2.ppf(1 - alpha, df))
    df_sub = df - (p - 1)
    critical_sub = float(stats.chi2.ppf(1 - alpha, df_sub))

    starts: dict = {}

    def profile(j: int, beta0: float) -> float:
        """``AR_j(beta0)``: the CUE of ``Y - beta0 X_j`` on the others, on moments
        standardised again (``AR`` does not depend on the scales, and far from the
        estimate the shifted outcome's scale grows like ``beta0``).  The criterion is not
        convex where identification is weak, and a local minimum overstates ``AR_j``
        (intervals that miss beta*), so the least of the fits from several starts: the
        two-step estimate, the nearest point of the search so far, the CUE's and the
        reported fit's other coefficients."""
        others = np.delete(every, j)
        shifted = _with_outcome_shift(std, j, beta0)
        d_j, s_j = shifted.scales()
        unit = np.multiply.outer(d_j, d_j) * s_j**2
        gmm = InvarianceGMM(shifted.rescale(d_j, s_j), instruments=every,
                            cumulant=K.scaled(1.0 / unit), b_ref=np.zeros(p))
        near = min(starts.get(j, {}).items(), key=lambda kv: abs(kv[0] - beta0),
                   default=(None, None))[1]
        tried = [None, *(x for x in (near, cue.b[others], b0[others]) if x is not None)]
        fits = [gmm.fit_cue(others, start=None if x is None else x * d_j[others] / s_j)
                for x in tried]
        best = min(fits, key=lambda f: f.J)
        starts.setdefault(j, {})[beta0] = best.b * s_j / d_j[others]
        return best.J

    se = np.where(np.isfinite(cue.se) & (cue.se > 0), cue.se, 1.0)
    lower, upper, pvalues = np.full(p, np.nan), np.full(p, np.nan), np.full(p, np.nan)
    for j in range(p):
        pvalues[j] = float(stats.chi2.sf(profile(j, 0.0), df_sub))
        centre = _inside(lambda x, j=j: profile(j, x) - critical_sub,
                         [cue.b[j], b0[j], 0.0], se[j])
        if centre is None:
            continue                             # the set's projection on b_j is empty
        lower[j], upper[j] = (_endpoint(lambda x, j=j: profile(j, x) - critical_sub,
                                        centre, direction * se[j])
                              for direction in (-1.0, 1.0))
    scale = s_y / d                              # standardised -> original units

    def series(values: FloatArray) -> pd.Series:
        out = pd.Series(np.nan, index=names)
        out.iloc[slopes] = values
        return out

    return RobustSet(alpha=alpha, statistic=float(cue.J), df=df, critical=critical,
                     estimate=series(cue.b * scale), lower=series(lower * scale),
                     upper=series(upper * scale), pvalues=series(pvalues), df_sub=df_sub,
                     critical_sub=critical_sub, _gmm=joint, _slopes=slopes,
                     _to_std=1.0 / scale)


def _inside(excess: Callable[[float], float], candidates: list[float], step: float
            ) -> float | None:
    """A point where ``excess`` is negative: the best of ``candidates``, else the first
    found stepping out from it by doubling steps on both sides (out to ``REACH``
    steps); None if there is none (the projection is empty)."""
    values = [excess(x) for x in candidates]
    best = candidates[int(np.argmin(values))]
    if min(values) <= 0:
        return best
    for k in range(MAX_DOUBLINGS):
        for trial in (best - step * 2.0**k, best + step * 2.0**k):
            if excess(trial) <= 0:
                return trial
        if 2.0**k > REACH:
            break
    return None


def _endpoint(excess: Callable[[float], float], centre: float, step: float) -> float:
    """The end of the set on one side of ``centre`` (where ``excess`` is negative): the
    first root of ``excess`` in steps of ``step`` doubled from ``centre``, refined by
    Brent's method; +-inf if ``excess`` stays negative within ``REACH`` steps, or if it
    turns negative again beyond the root -- the set then has another piece (weakly
    identified sets are often unions of intervals), and its hull is reported: an
    interval around one piece only covered beta* in 60% of the samples of a
    mean-shift design."""
    inside, root, k = centre, None, 0
    while k < MAX_DOUBLINGS:
        trial = centre + step * 2.0**k
        out = excess(trial) > 0
        if out and root is None:
            root = float(optimize.brentq(excess, inside, trial, xtol=1e-3 * abs(step)))
        elif not out and root is not None:
            break                                  # another piece further out
        inside = trial if not out else inside
        if 2.0**k > REACH:
            return root if root is not None and out else float(np.sign(step) * np.inf)
        k += 1 if root is None else 2              # beyond the root: steps of 4x
    return float(np.sign(step) * np.inf)
