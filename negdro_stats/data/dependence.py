"""Rows that are not independent: the long-run covariance of the scores, its resamples,
and the check for serially dependent rows.

Every test and interval of the package compares environment means of scores (``x r``,
``r^2``) through their covariances ``Var_e(score) / n_e``, which assumes independent
rows.  Where the rows of an environment are a time series, the variance of a mean is
the *long-run* covariance over ``n_e``,

    S_e = Gamma_0 + sum_{l=1}^{L} (1 - l / (L + 1)) (Gamma_l + Gamma_l^T),
    Gamma_l = (1/n_e) sum_t (w_t - wbar)(w_{t-l} - wbar)^T,

Newey and West's (1987) Bartlett-kernel estimator (statsmodels' ``cov_type="HAC"``),
with the rows in their order within the environment.  ``maxlags`` L is the user's, or by
default Andrews' (1991) AR(1) plug-in for the Bartlett kernel, ``L = 1.1447 (alpha(1)
n_e)^{1/3}`` with ``alpha(1) = sum_a 4 rho_a^2 s_a^4 / ((1 - rho_a)^6 (1 + rho_a)^2) /
sum_a s_a^4 / (1 - rho_a)^4`` over the standardised score components ``a`` (their lag-1
autocorrelation ``rho_a`` and innovation variance ``s_a^2``): about 1 for independent
rows, 40 at n_e = 2,000 where every component has autocorrelation 0.8 (a fixed rule such as
``4 (n / 100)^{2/9}``, 7 there, recovers about half of that long-run variance).  Where
L > 0 the kernel is applied to the scores prewhitened component by component (Andrews and
Monahan 1992, with a diagonal filter): ``u_t = w_t - D w_{t-1}``, ``D = diag(rho_a)`` the
components' lag-1 autoregression coefficients (within ``+-RHO_MAX``), and the kernel's
estimate for ``u`` is recoloured, ``S = (I - D)^{-1} S_u (I - D)^{-1}``: the long-run
covariance of any such filter's output is exactly that, so only the kernel's bias
changes, and it falls on the weak dependence left in ``u`` instead of the strong one in
``w``.  (Measured on AR(1) components with coefficient 0.8 and the plug-in L: the kernel
alone averaged 0.88 of the long-run variance at n_e = 2,000 and 0.94 at 20,000,
prewhitened 0.99 at both, its sd up by a tenth at most; on AR(1) rows at 0.8, 2,000 per
environment, the joint robust set held ``beta*`` in 86.5% of 200 samples without and
94% with.)  L stays the plug-in's for ``w``: more lags than ``u`` needs, a little
less bias for a little more variance, and the moving blocks of the bootstrap need the
dependence of the rows themselves.  The data choose L once per environment, from the
scores of every covariate and ``r`` at the pooled least-squares fit, and keep it for
every ``b``, as a bandwidth is kept (:attr:`~negdro_stats.MultiEnvData._within`).

The package's score covariances are the Gaussian form at each ``b`` plus a term held
fixed while ``b`` moves (:class:`~negdro_stats.estimation.gmm.Cumulant`).  With dependent
rows the Gaussian form is multiplied by the environment's *long-run share*, ``c_e =
tr(Gamma_0^{-1} S_e) / q`` of the scores at the pooled least-squares fit
(:func:`long_run_share`: 1 for independent rows; where every component is AR(1) with
coefficient rho, between ``(1 + rho^2) / (1 - rho^2)``, a score that is the product of
two centred components, and ``(1 + rho) / (1 - rho)``, a component times another's
mean), and the fixed term is ``S_e`` at the fit less ``c_e`` times the Gaussian form.
So the selection's tests, the GMM weights, the robust sets and the sandwich all use
``S_e`` at the fit, and away from it the part of the covariance that moves with ``b``
grows as the long-run covariance does.  (Held at the i.i.d. form, it grows ``c_e`` times
too slowly: the joint robust set's statistic at ``beta*`` averaged 1.63 of its degrees of
freedom on AR(1) rows with coefficient 0.8, 2,000 rows per environment, and held
``beta*`` in 47% of 30 samples; 1.15 and 87% with the share.)

A test weighs its conditions by the inverse of their estimated long-run covariance, and
that estimate is noisy: it has about ``nu_e`` degrees of freedom, ``G_e - 1`` for
clusters, and for the Bartlett kernel ``n_e / sum_l w_l^2`` over its weights ``w_l = 1 -
|l| / (L + 1)`` (Priestley 1981, sec. 6.2; about ``1.5 n_e / (L + 1)``: 115 at ``n_e =
2,000`` and 25 lags).  The inverse of a Wishart estimate of a ``k x k`` covariance
overstates the inverse by ``nu / (nu - k - 1)`` on average (Anderson 2003, sec. 7.2), and
so a statistic on ``k`` conditions per environment exceeds its degrees of freedom by that
factor (1.11 for 100 clusters and 9 conditions; the i.i.d. covariance's ``n_e - 1``
make it negligible).  Every test therefore counts an environment's rows as ``n_e (nu_e -
k - 1) / nu_e`` (:meth:`LongRun.rows`, at least ``n_e / WISHART_MAX``; the same as
scaling the covariance up by the factor): the selection's J and equal-risk tests, the
GMM weights and the robust sets.  (Measured on AR(1) rows with coefficient 0.8, 2,000 per
environment, 30 samples: the joint robust statistic at ``beta*`` averaged 1.147 of its
degrees of freedom without the count and 1.045 with it; what remains is the Bartlett
kernel's own bias.)

The bootstrap draws moving blocks of ``L + 1`` consecutive rows within each environment
(Kunsch 1989), so each replicate keeps the dependence within blocks.

Where the rows come in clusters (patients of a clinic, cells of a well: ``"cluster"``,
statsmodels' name, with one group label per row), the long-run covariance is the
cluster-robust one, ``S_e = G_e / (G_e - 1) sum_g s_g s_g^T / n_e`` over the ``G_e``
clusters of the environment, ``s_g`` the sum of the centred scores of cluster g, and the
bootstrap draws whole clusters with replacement (a replicate's environment has as many
clusters as the sample's, and as many rows as they hold).  Clusters must lie within
environments: the package's tests take the environments as independent samples.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import pandas as pd

from .._typing import FloatArray
from .._validation import check_int, check_option
from ..exceptions import DataError

__all__ = ["COV_TYPES", "Dependence", "Clusters", "LongRun", "dependence_from_user",
           "serial_correlation", "long_run_share"]

COV_TYPES = ("nonrobust", "HAC", "cluster")
FEW_CLUSTERS = 10          # fewer in an environment: a warning (the covariance is noisy)
ANDREWS = 1.1447           # Andrews (1991), the Bartlett kernel's constant
RHO_MAX = 0.97             # the plug-in's AR(1) coefficients are kept within +-RHO_MAX
WISHART_MAX = 2.0          # the most a test counts the rows down by (module docstring)


@dataclass(frozen=True)
class Clusters:
    """The clusters of one environment's rows (in their order): ``index`` each row's
    cluster ``0..G-1``, and the rows grouped by cluster (``order``, ``starts``)."""

    index: np.ndarray
    order: np.ndarray
    starts: np.ndarray

    @classmethod
    def of(cls, labels: np.ndarray) -> Clusters:
        index = np.unique(labels, return_inverse=True)[1].ravel()
        order = np.argsort(index, kind="stable")
        return cls(index, order, np.flatnonzero(np.diff(index[order], prepend=-1)))

    @property
    def G(self) -> int:
        return len(self.starts)


@dataclass(frozen=True, eq=False)
class Dependence:
    """How the rows of each environment depend on each other: ``"HAC"``, a time series
    in row order, with ``maxlags`` lags (None: Andrews' plug-in per environment), or
    ``"cluster"``, with ``groups`` each used row's cluster code (module docstring)."""

    cov_type: Literal["HAC", "cluster"]
    maxlags: int | None = None
    groups: np.ndarray | None = None

    def rows(self, keep: np.ndarray) -> Dependence:
        """The same dependence of the used rows ``keep`` (a mask, or indices in order)."""
        return replace(self, groups=None if self.groups is None else self.groups[keep])

    def same(self, other: Dependence | None) -> bool:
        """Whether ``other`` says the same of the rows."""
        if other is None or (self.cov_type, self.maxlags) != (other.cov_type, other.maxlags):
            return False
        if self.groups is None or other.groups is None:
            return self.groups is other.groups
        return np.array_equal(self.groups, other.groups)

    @property
    def label(self) -> str:
        """As the summary's header names it."""
        if self.cov_type == "cluster":
            return "cluster"
        return "HAC" + ("" if self.maxlags is None else f" ({self.maxlags} lags)")

    @property
    def covariance(self) -> str:
        """The scores' covariance that every test and interval uses, in words."""
        if self.cov_type == "cluster":
            return "scores' cluster-robust covariance (clusters within environments)"
        return f"scores' long-run covariance ({self.label})"

    def lags(self, W: FloatArray) -> int:
        """The Bartlett kernel's lags for the scores ``W`` (rows in order)."""
        n = len(W)
        if self.maxlags is not None:
            return min(self.maxlags, n - 1)
        sd = W.std(axis=0)
        Z = (W[:, sd > 0] - W[:, sd > 0].mean(axis=0)) / sd[sd > 0]
        if Z.shape[1] == 0 or n < 3:
            return 0
        a, b = Z[1:], Z[:-1]
        rho = ar1(Z)
        s4 = ((a - rho * b) ** 2).mean(axis=0) ** 2
        alpha = (4.0 * rho**2 * s4 / ((1 - rho) ** 6 * (1 + rho) ** 2)).sum() / (
            s4 / (1 - rho) ** 4).sum()
        return int(min(np.ceil(ANDREWS * (alpha * n) ** (1.0 / 3.0)), n - 1))

    def long_run_cov(self, W: FloatArray, within: int | Clusters | None = None
                     ) -> FloatArray:
        """``n Var(mean of W)`` for the scores ``W`` (n, q) of one environment, rows in
        order, ``within`` the environment's :class:`Clusters` or, for a time series, its
        lags L (None: :meth:`lags` of ``W``).  A time series' is the Bartlett-kernel
        estimator of the prewhitened scores ``u``, recoloured (module docstring); its
        weight ``1 - |t - s| / (L + 1)`` on ``u_t u_s^T`` is the share of the ``n + L``
        windows of ``L + 1`` consecutive rows (the rows padded by L zeros at each end)
        that hold both, so the estimate is ``A^T A / (n (L + 1))`` for ``A`` the windows'
        sums: one product of the size of ``U^T U``, whatever L."""
        W = W - W.mean(axis=0)
        n = len(W)
        if isinstance(within, Clusters):
            sums = np.add.reduceat(W[within.order], within.starts, axis=0)
            return sums.T @ sums / n * (within.G / max(within.G - 1, 1))
        L = self.lags(W) if within is None else within
        if L <= 0 or n < 3:
            return W.T @ W / n
        rho = ar1(W)
        U = W[:-1] * -rho                          # prewhitened: u_t = w_t - rho w_{t-1}
        U += W[1:]
        U -= U.mean(axis=0)
        W, n = U, n - 1
        L = min(L, n - 1)
        c = np.zeros((n + 1, W.shape[1]))
        np.cumsum(W, axis=0, out=c[1:])            # c[t] = w_0 + ... + w_{t-1}
        head = c[1:L + 1]                          # the windows cut by the start,
        inner = c[L + 1:] - c[:n - L]              # those within the rows,
        tail = c[n] - c[n - L:n]                   # and those cut by the end
        recolour = 1.0 / (1.0 - rho)
        return ((head.T @ head + inner.T @ inner + tail.T @ tail) / (n * (L + 1.0))
                * np.multiply.outer(recolour, recolour))

    def dof(self, n: int, within: int | Clusters) -> float:
        """The degrees of freedom of :meth:`long_run_cov` of ``n`` rows (module
        docstring): ``G - 1`` for :class:`Clusters` ``within``; for a time series with
        ``within`` lags, ``n / sum_l w_l^2`` over the Bartlett weights ``w_l = 1 - |l| /
        M``, ``M = L + 1``: ``n / (1 + (M - 1)(2M - 1) / (3M))``, ``n`` without lags and
        about ``1.5 n / M`` for many."""
        if isinstance(within, Clusters):
            return float(within.G - 1)
        M = within + 1.0
        return n / (1.0 + (M - 1.0) * (2.0 * M - 1.0) / (3.0 * M))

    @staticmethod
    def units(n: int, within: int | Clusters, length: int) -> list[np.ndarray]:
        """The ``n`` rows (in order) of one environment as the units a permutation of
        the environment labels moves whole: its :class:`Clusters` ``within``, or for a
        time series runs of ``length`` consecutive rows (the last one shorter)."""
        if isinstance(within, Clusters):
            return np.split(within.order, within.starts[1:])
        return np.split(np.arange(n), np.arange(length, n, length))

    def counts(self, n: int, rng: np.random.Generator, within: int | Clusters
               ) -> np.ndarray:
        """How often each of ``n`` rows (in order) is drawn by the bootstrap: its
        :class:`Clusters` ``within`` drawn whole, with replacement, or, for a time series
        with ``within`` lags, a moving-block bootstrap of blocks of ``within + 1``
        consecutive rows (``ceil(n / block)`` block starts drawn uniformly, the rows
        concatenated and cut at ``n``)."""
        if isinstance(within, Clusters):
            return np.bincount(rng.integers(0, within.G, size=within.G),
                               minlength=within.G)[within.index]
        block = max(1, min(within + 1, n))
        starts = rng.integers(0, n - block + 1, size=-(-n // block))
        drawn = (starts[:, None] + np.arange(block)).ravel()[:n]
        return np.bincount(drawn, minlength=n)


@dataclass(frozen=True, eq=False)
class LongRun:
    """How dependent rows enter every test, per environment: ``share`` (E,), the long-run
    share, the factor of the score covariances' Gaussian form (:func:`long_run_share`),
    and ``dof`` (E,), the degrees of freedom of the long-run covariance's estimate
    (:meth:`Dependence.dof`), by which a test on ``k`` conditions per environment counts
    its rows (:meth:`rows`; module docstring)."""

    share: FloatArray
    dof: FloatArray

    def wishart(self, k: int) -> FloatArray:
        """Per environment ``nu_e / (nu_e - k - 1)`` (``nu_e`` the :attr:`dof`), the
        factor by which the inverse of an estimated ``k x k`` long-run covariance
        overstates the inverse of the covariance (a Wishart matrix's, Anderson 2003,
        sec. 7.2), at most ``WISHART_MAX``."""
        return 1.0 / np.maximum(1.0 - (k + 1.0) / self.dof, 1.0 / WISHART_MAX)

    def rows(self, n: FloatArray, k: int) -> FloatArray:
        """The rows ``n`` (E,) as a test on ``k`` conditions per environment counts them,
        ``n_e / wishart(k)``: its statistic, a quadratic form in the inverse of the
        conditions' long-run covariance, then has the mean of its reference
        distribution."""
        return n / self.wishart(k)

    def environments(self, keep: np.ndarray) -> LongRun:
        """The environments ``keep`` (integer indices)."""
        return LongRun(self.share[keep], self.dof[keep])


def dependence_from_user(cov_type: str, cov_kwds: Mapping[str, Any] | None, owner: str,
                         labels: Callable[[Any, str], np.ndarray]) -> Dependence | None:
    """The user's ``cov_type`` and ``cov_kwds`` (statsmodels' names), checked: None for
    independent rows (``"nonrobust"``, the default).  ``labels(groups, name)`` gives one
    label per used row of the data for a column name or the user's labels
    (:meth:`~negdro_stats.MultiEnvData.row_labels`)."""
    cov_type = check_option(cov_type, "cov_type", owner, COV_TYPES)
    kwds = dict(cov_kwds or {})
    allowed = {"nonrobust": set(), "HAC": {"maxlags"}, "cluster": {"groups"}}[cov_type]
    if unknown := sorted(set(kwds) - allowed):
        raise DataError(f"{owner}: cov_kwds {unknown} do not apply to cov_type={cov_type!r} "
                        f"(it takes {sorted(allowed) or 'none'}).")
    if cov_type == "nonrobust":
        return None
    if cov_type == "cluster":
        if "groups" not in kwds:
            raise DataError(f"{owner}: cov_type='cluster' needs cov_kwds={{'groups': ...}}, "
                            "the name of the column of cluster labels or one label per row.")
        codes = pd.factorize(labels(kwds["groups"], "groups"))[0]
        if (codes < 0).any():
            raise DataError(f"{owner}: groups has {int((codes < 0).sum())} missing labels; "
                            "give every row a cluster.")
        return Dependence("cluster", groups=codes)
    maxlags = kwds.get("maxlags")
    if maxlags is not None:
        maxlags = check_int(maxlags, "maxlags", owner, min_val=0)
    return Dependence("HAC", maxlags)


def ar1(W: FloatArray) -> FloatArray:
    """Each column's lag-1 autoregression coefficient (rows in order, columns centred),
    within ``+-RHO_MAX``; 0 for a constant column."""
    a, b = W[1:], W[:-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.einsum("ij,ij->j", a, b) / np.einsum("ij,ij->j", b, b)
    return np.clip(np.nan_to_num(rho), -RHO_MAX, RHO_MAX)


def serial_correlation(r: FloatArray) -> float:
    """The lag-1 autocorrelation of ``r`` (rows in order); NaN for fewer than 3 rows or
    a constant ``r``."""
    a = r - r.mean()
    ss = a @ a
    return float(a[1:] @ a[:-1] / ss) if len(a) >= 3 and ss > 0 else np.nan


def long_run_share(iid: FloatArray, long_run: FloatArray) -> float:
    """``tr(iid^{-1} long_run) / q`` of one environment's scores' covariance as if the
    rows were independent (``iid``, (q, q)) and their long-run covariance: the mean
    factor by which the dependence inflates the variance of the scores' means (module
    docstring); the pseudo-inverse where ``iid`` is singular, 1 where it is 0."""
    inv = np.linalg.pinv(iid, hermitian=True)
    rank = np.linalg.matrix_rank(iid, hermitian=True)
    return float(np.trace(inv @ long_run)) / rank if rank else 1.0
