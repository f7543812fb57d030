"""Inference for the intercept that the pooled level condition profiles.

With ``fit_intercept=True`` the slopes ``b`` are fitted on the pooled-centred moments and
the intercept is ``c = ybar - b^T xbar`` (pooled means, weights ``pi_e = n_e / N``), so
shifting a covariate changes only the intercept.  With ``eps = Y - c - beta*^T X`` the
model's noise (mean 0 in every environment) and ``epsbar`` its pooled mean,

    c_hat - c = epsbar - xbar^T (b_hat - beta*)                                      (I)

to first order.  Each kind of interval follows from (I):

* **Analytic** (:func:`profiled_cov`, for :func:`~.sandwich.refit_cov`): the delta method.
  The slopes' refit solves equations in the centred residual ``eps - epsbar``, so its
  error is ``sum_e L_e d_e - h epsbar``, ``d_e`` the error of environment ``e``'s mean
  score ``E_e[Z_c eps]`` (``Z_c`` its instruments less their pooled means), ``L_e`` the
  refit's linear map and ``h = sum_e L_e E_e[Z_c]`` the profiled intercept's effect
  (0 for pooled least squares, whose instruments' pooled means are 0; not for the
  invariance GMM where the environments shift the covariates' means).  With
  ``Var(sum_e L_e d_e) = C`` (the refit's covariance), ``a = Cov(sum_e L_e d_e, epsbar)
  = sum_e L_e Cov_e(Z_c eps, eps) / N`` and ``v = Var(epsbar) = sum_e n_e Var_e(eps) / N^2``
  (the environments' rows fixed by design, :func:`level_variance`)::

      Var(b_hat) = C - a h^T - h a^T + h h^T v,     Cov(b_hat, epsbar) = a - h v,

  and ``Var(c_hat)``, ``Cov(b_hat, c_hat)`` by (I).  For Gaussian noise of one variance
  ``a = h v``: the cross term vanishes, and the slopes' covariance is ``C - h h^T v``.
  The scores' covariances are the rows' (or the fourth moments'), else their Gaussian
  form, at the reported fit; everything is conditional on the selected support, as the
  slopes' intervals are.
* **Robust** (:class:`~.robust.RobustSet`): ``t = xbar^T beta*`` is a linear function of
  the slopes, so the covariates are transformed (:meth:`InterceptPlan.moments`) to make
  it a coefficient, and the subvector test the slopes' intervals invert gives its
  interval ``[t_lo, t_hi]`` at level ``alpha / 2``, with the slopes' intervals' validity
  however weakly the environments identify them; ``epsbar`` has the normal interval
  ``+- z se`` at level ``alpha / 2`` (``z = z_{1 - alpha / 4}``, ``se = sqrt(v)`` with
  the noise's variances at the reported fit: consistent where the slopes are, and where
  they are not identified ``t``'s interval is unbounded unless ``xbar`` is orthogonal to
  the undetermined directions).  By Bonferroni, ``[ybar - t_hi - z se, ybar - t_lo + z
  se]`` covers ``c`` with probability at least ``1 - alpha`` (asymptotically).  The
  transform keeps the instruments: the coordinate that carries ``t`` is an instrument,
  so the transformed instruments span the same space, and the statistic does not change
  under an invertible transform of them.  No p-value is given for ``c``.
* **Bootstrap**: every refit profiles its own intercept, so the refits' intercepts are
  its draws (:mod:`.stratified`).

Population moments (``n = inf``) count as ``N_POPULATION`` rows per environment, as
everywhere in the package: their Wald and robust intervals of the intercept, as of the
slopes, are the true value to within ~1e-6 (points up to that convention); there are no
rows to bootstrap.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from .._typing import FloatArray
from ..data.fourth import gaussian_score_cov
from ..data.moments import Moments
from ..estimation import N_POPULATION

__all__ = ["profiled_cov", "level_variance", "InterceptPlan"]


def _rows(mom: Moments) -> FloatArray:
    """Rows per environment (``N_POPULATION`` for population moments)."""
    return np.where(np.isfinite(mom.n), mom.n, N_POPULATION)


def level_variance(mom: Moments, b: FloatArray) -> float:
    """``Var(rbar) = sum_e n_e Var_e(r) / N^2`` of the pooled mean of ``r = Y - b^T X``
    (``b`` over the covariates of ``mom``): the environments' rows fixed by design, as
    in the stratified bootstrap; ``Var_e(r)`` from the within-environment covariances."""
    n = _rows(mom)
    u = np.append(-np.asarray(b, dtype=np.float64), 1.0)
    var_r = np.maximum(np.einsum("i,eij,j->e", u, mom.within(), u), 0.0)
    return float(n @ var_r / n.sum() ** 2)


def profiled_cov(mom: Moments, b: FloatArray, const: int, T: np.ndarray, C: FloatArray,
                 parts: list[tuple[FloatArray, np.ndarray]],
                 score_cov: Callable[[FloatArray, np.ndarray], FloatArray] | None
                 ) -> FloatArray:
    """The covariance (|T| + 1, |T| + 1) of the slopes ``T`` and the intercept ``const``
    (model order, last) by the delta method of the module docstring, on the moments
    ``mom`` of the model (constant included) at its fit ``b``.  ``C`` is the refit's
    covariance of the slopes ``T`` and ``parts`` its linear maps: pairs ``(L, Z)`` of a
    map ``L`` (E, |T|, |Z|) on the centred scores of the covariates ``Z`` (model
    order); ``score_cov(b, cols)`` the rows' ``Var_e(X_cols r)`` (None: its Gaussian
    form)."""
    n = _rows(mom)
    N = n.sum()
    slopes = np.setdiff1d(np.arange(mom.p), [const])
    x_bar = mom.pooled_weights() @ mom.mean_x
    x_bar[const] = 0.0
    a, h = np.zeros(len(T)), np.zeros(len(T))
    for L, Z in parts:
        cols = np.append(Z, const)
        V = score_cov(b, cols) if score_cov is not None else gaussian_score_cov(mom, b, cols)
        kappa = V[:, :-1, -1] - x_bar[Z] * V[:, -1:, -1]        # Cov_e(Z_c r, r)
        a += np.einsum("ekq,eq->k", L, kappa) / N
        h += np.einsum("ekq,eq->k", L, mom.mean_x[:, Z] - x_bar[Z])
    v = level_variance(mom.subset(slopes), b[slopes])
    cov_b = C - np.outer(a, h) - np.outer(h, a) + np.outer(h, h) * v
    cross = a - h * v                                            # Cov(b_T, epsbar)
    xT = x_bar[T]
    out = np.empty((len(T) + 1, len(T) + 1))
    out[:-1, :-1] = cov_b
    out[:-1, -1] = out[-1, :-1] = cross - cov_b @ xT
    out[-1, -1] = v + xT @ cov_b @ xT - 2.0 * xT @ cross
    return out


@dataclass(frozen=True, slots=True, eq=False)
class InterceptPlan:
    """What the robust interval of the intercept needs (module docstring), in the
    standardised units of the slopes' robust set: ``const`` (the intercept's position),
    ``alpha`` (its level; ``alpha / 2`` for ``t``), ``a_std`` (``t = s_y a_std^T
    b_std``), ``k`` (the coordinate that carries ``t``: the instrument with the largest
    ``|a_std|``), ``y_bar`` and ``s_y`` (``c = y_bar - s_y t_std``, the data's frame)
    and ``se`` (of ``epsbar``)."""

    const: int
    alpha: float
    a_std: FloatArray
    k: int
    y_bar: float
    s_y: float
    se: float

    @property
    def Q(self) -> FloatArray:
        """``b_std = Q b_new``: ``b_new`` keeps every coefficient but the ``k``-th, which
        is ``t_std = a_std^T b_std``."""
        Q = np.eye(len(self.a_std))
        Q[self.k] = -self.a_std / self.a_std[self.k]
        Q[self.k, self.k] = 1.0 / self.a_std[self.k]
        return Q

    def moments(self, std: Moments) -> Moments:
        """The moments of ``(X Q, Y)``: covariates under which ``b_new^T X_new =
        b_std^T X`` (the fourth moments dropped)."""
        Q = self.Q
        Qz = np.eye(std.p + 1)
        Qz[:-1, :-1] = Q
        return replace(std, mean_x=std.mean_x @ Q, Sigma=Q.T @ std.Sigma @ Q,
                       sxy=std.sxy @ Q, fourth=None,
                       cov=None if std.cov is None else Qz.T @ std.cov @ Qz)

    def coefficients(self, b_std: FloatArray) -> FloatArray:
        """``b_new`` from ``b_std``."""
        out = np.array(b_std, dtype=np.float64)
        out[self.k] = self.a_std @ b_std
        return out

    def instruments_map(self, R: np.ndarray) -> FloatArray:
        """The map (|R| + 1, |R| + 1) of the scores ``(Z r, r^2)`` to the new
        covariates' (``Z_new = Q_RR^T Z``; ``k`` is in ``R``)."""
        A = np.eye(len(R) + 1)
        A[:-1, :-1] = self.Q[np.ix_(R, R)]
        return A

    def interval(self, t_lo: float, t_hi: float, z: float) -> tuple[float, float]:
        """``c``'s interval from ``t_std``'s and the normal quantile ``z``."""
        return (self.y_bar - self.s_y * t_hi - z * self.se,
                self.y_bar - self.s_y * t_lo + z * self.se)
