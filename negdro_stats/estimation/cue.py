"""The continuously updated GMM criterion, one for the selection and the robust sets.

Both test moment conditions that are equal in every environment: the selection's
invariance conditions ``E_e[Z r]`` (:class:`~negdro_stats.estimation.gmm.InvarianceGMM`)
and the robust sets' ``(E_e[Z r], E_e[r^2])`` (:mod:`negdro_stats.inference.robust`),
``r = Y - b^T X``.  With ``m_e(b)`` the conditions of environment ``e`` on the columns
``cols``, ``D_e`` their Jacobian on the support ``S`` and ``W_e(b) = n_e V_e(b)^{-1}``,

    J(b) = min_m sum_e (m_e(b) - m)^T W_e(b) (m_e(b) - m),

the weight evaluated at ``b`` itself while minimising (Hansen, Heaton and Yaron 1996).
``V_e(b)`` is the Gaussian form of the score covariance (Isserlis, from the moments,
:func:`~negdro_stats.data.fourth.gaussian_score_cov`), times the environment's long-run
share ``c_e`` where the rows are dependent (:mod:`negdro_stats.data.dependence`), plus a
fixed part ``K`` kept positive definite (:func:`with_cumulant`); ``n_e`` is then the rows as
a test on the ``q`` conditions counts them (:func:`counted_rows`).  :class:`ContinuouslyUpdated` is
the criterion (its value, gradient and information); a subclass says what its conditions
are.  :func:`gauss_newton` is its one minimiser.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Literal, NamedTuple, overload

import numpy as np
from scipy import linalg, optimize
from scipy.linalg import lapack

from .._typing import FloatArray
from ..data.dependence import LongRun
from ..data.fourth import gaussian_score_cov, score_cov_form
from ..data.moments import EXACT_FIT, N_POPULATION, Moments

__all__ = ["ContinuouslyUpdated", "gauss_newton", "Minimum", "inv_psd", "score_weights",
           "with_cumulant", "cumulant_scaling", "score_form", "counted_rows",
           "SECANT_AFTER"]

SECANT_AFTER = 3        # Gauss-Newton steps of a continuously updated fit (the selection's and
#                         the robust sets') before BFGS updates (gauss_newton; B = 200 on a
#                         confounded p = 15 design: 29,081 evaluations against 33,781 without;
#                         a robust set at p = 30: 4,270 against 5,511)
SCORE_FLOOR = 0.1       # score covariances stay >= this share of their Gaussian form
LAPACK_FROM = 64        # inv_psd: matrices of this many rows inverted one by one from their
#                         Cholesky factor (below, numpy's batched inverse is faster)


class Weighed(NamedTuple):
    """The criterion's state at ``b``: the Isserlis ``parts``, the Jacobian ``D`` (E, q,
    |S|), the weights ``W`` (E, q, q), the inverse of their sum, the deviations ``dev``
    (E, q) from the best common ``m`` and the cumulant's ``scaling``."""

    parts: tuple
    D: FloatArray
    W: FloatArray
    Wbar_inv: FloatArray
    dev: FloatArray
    scaling: tuple[FloatArray, FloatArray]


class ContinuouslyUpdated:
    """The continuously updated criterion of conditions equal across environments
    (module docstring).  A subclass sets ``mom`` (the moments), ``cols`` (the columns of
    the score covariance), ``K`` (its non-Gaussian part, (E, q, q)), ``n`` (rows per
    environment as the criterion counts them, finite: :func:`counted_rows`) and, for
    dependent rows, ``long_run`` (:class:`~negdro_stats.data.dependence.LongRun`), and
    gives :meth:`conditions`."""

    mom: Moments
    cols: np.ndarray
    K: FloatArray
    n: FloatArray
    long_run: LongRun | None = None

    def conditions(self, b_S: FloatArray, S: np.ndarray
                   ) -> tuple[FloatArray, tuple, FloatArray, FloatArray]:
        """``(b, parts, m, D)``: the full coefficient vector, the Isserlis parts at it
        (:func:`~negdro_stats.data.fourth.isserlis_parts` on ``cols``), the conditions
        ``m_e(b)`` (E, q) and their Jacobian on ``S`` (E, q, |S|)."""
        raise NotImplementedError

    def weighed(self, b_S: FloatArray, S: np.ndarray) -> Weighed:
        """The state at ``b`` (:class:`Weighed`).  Where every environment's risk is 0 to
        rounding (``EXACT_FIT``: an outcome the covariates give exactly), the conditions
        hold exactly and the deviations are 0: ``V`` is 0 there too, and ``d^T V^{-1} d``
        would be rounding over rounding (a statistic of 14.5 or 0 at the estimate, by
        chance)."""
        b, parts, m, D = self.conditions(b_S, S)
        gauss = gaussian_score_cov(self.mom, b, self.cols, parts, self.long_run)
        scaling = cumulant_scaling(gauss, self.K)
        W = score_weights(gauss + scaling[0][:, None, None] * self.K, self.n)
        Wbar_inv = inv_psd(W.sum(axis=0))
        dev = m - Wbar_inv @ np.einsum("eij,ej->i", W, m)
        if np.all(parts[4] <= EXACT_FIT * np.maximum(self.mom.syy, 1.0)):
            dev = np.zeros_like(dev)
        return Weighed(parts, D, W, Wbar_inv, dev, scaling)

    @overload
    def evaluate(self, b_S: FloatArray, S: np.ndarray, information: Literal[True]
                 ) -> tuple[float, FloatArray, FloatArray]: ...

    @overload
    def evaluate(self, b_S: FloatArray, S: np.ndarray, information: Literal[False] = ...
                 ) -> tuple[float, FloatArray, None]: ...

    def evaluate(self, b_S: FloatArray, S: np.ndarray, information: bool = False
                 ) -> tuple[float, FloatArray, FloatArray | None]:
        """``(J, gradient, P)`` from one evaluation of the weights.  The gradient by the
        envelope theorem (``m`` profiled out): ``2 sum_e D_e^T a_e - sum_e a_e^T (dV_e /
        db) a_e / n_e``, ``a_e = W_e d_e``; ``P`` (with ``information``) is ``sum_e D_e^T
        W_e D_e`` less the common mean's share, half the Gauss-Newton Hessian."""
        state = self.weighed(b_S, S)
        D, W, dev = state.D, state.W, state.dev
        a = np.einsum("eij,ej->ei", W, dev)
        J = float(np.einsum("ei,ei->", dev, a))
        form = score_form(self.mom, state.parts, self.cols, a, S, self.K, state.scaling)
        if self.long_run is not None:
            form = form * self.long_run.share[:, None]
        grad = 2.0 * np.einsum("eqk,eq->k", D, a) - form.T @ (1.0 / self.n)
        if not information:
            return J, grad, None
        WD = W @ D
        SWD = WD.sum(axis=0)
        E, q, k = D.shape
        P = D.reshape(E * q, k).T @ WD.reshape(E * q, k) - SWD.T @ state.Wbar_inv @ SWD
        return J, grad, (P + P.T) / 2.0

    def objective(self, b_S: FloatArray, S: np.ndarray) -> tuple[float, FloatArray]:
        """``(J, gradient)`` at ``b_S``."""
        return self.evaluate(b_S, S)[:2]

    def minimise(self, S: np.ndarray, start: FloatArray, **options) -> Minimum | None:
        """:func:`gauss_newton` from ``start`` (``options``: its ``ftol``, ``max_steps``,
        ``enough``, ``run_off``); None where a step met a singular system."""
        with np.errstate(all="ignore"):           # (no warnings module: threads)
            try:
                return gauss_newton(lambda b: self.evaluate(b, S, information=True), start,
                                    lambda b: self.objective(b, S),
                                    secant_after=SECANT_AFTER, **options)
            except (linalg.LinAlgError, ValueError):
                return None


class Minimum(NamedTuple):
    """Where :func:`gauss_newton` stopped: ``b``, the criterion ``J`` there, whether it
    ``converged`` and the information ``P`` at ``b`` (None where L-BFGS-B moved ``b``
    after the last evaluation: then evaluate it again)."""

    b: FloatArray
    J: float
    converged: bool
    P: FloatArray | None = None


def gauss_newton(evaluate: Callable, b: FloatArray, objective: Callable, *, ftol: float,
                 max_steps: int = 30, secant_after: int | None = None,
                 enough: float = np.inf, run_off: int | None = None) -> Minimum:
    """Minimise a GMM criterion ``J`` from ``b``; ``evaluate(b) -> (J, gradient, P)``
    with ``2 P`` the Gauss-Newton Hessian (the information at the weight of ``b``),
    ``objective(b) -> (J, gradient)``.

    Steps ``-H^{-1} gradient``, halved until ``J`` decreases by a share of the predicted
    decrease ``gradient^T H^{-1} gradient`` (Armijo), until that or the decrease made is
    at most ``ftol * max(J, 1)``.  ``H = 2 P`` at each step (Gauss-Newton: a few steps
    where the conditions nearly hold, since the weight's derivative that ``P`` leaves out
    is then small); after ``secant_after`` steps, ``H`` is updated by BFGS from the last
    ``2 P`` instead (a misspecified support, ``J`` far above its degrees of freedom,
    converged linearly: 30 Gauss-Newton steps and more).  Stops after ``run_off`` steps
    while ``J > enough``.  Where it has not converged and ``J <= enough``, L-BFGS-B on
    ``objective`` from there (kept where it goes lower).  The selection's and the robust
    sets' continuously updated fits are this one minimiser."""
    b = np.array(b, dtype=np.float64)
    J, grad, P = evaluate(b)
    H = 2.0 * P
    converged = False
    for it in range(max_steps):
        if run_off is not None and it >= run_off and J > enough:
            break
        step = np.linalg.solve(H + 1e-12 * np.trace(H) * np.eye(len(b)), grad)
        if float(grad @ step) <= ftol * max(J, 1.0):
            converged = True
            break
        t = 1.0
        while t > 1e-4:
            J_new, grad_new, P_new = evaluate(b - t * step)
            if np.isfinite(J_new) and J_new <= J - 1e-4 * t * float(grad @ step):
                break
            t /= 2.0
        else:
            break
        s, y = -t * step, grad_new - grad
        b, converged = b + s, J - J_new <= ftol * max(J, 1.0)
        J, grad, P = J_new, grad_new, P_new
        if converged:
            break
        if secant_after is None or it + 1 < secant_after:
            H = 2.0 * P
        elif float(s @ y) > 1e-12 * float(np.linalg.norm(s) * np.linalg.norm(y)):
            Hs = H @ s                                       # (BFGS; kept if not convex)
            H = H - np.outer(Hs, Hs) / float(s @ Hs) + np.outer(y, y) / float(s @ y)
    if not converged and J <= enough:
        opt = optimize.minimize(objective, b, jac=True, method="L-BFGS-B",
                                options={"maxiter": 200, "ftol": ftol})
        if np.isfinite(opt.fun) and opt.fun < J and np.all(np.isfinite(opt.x)):
            b, J, P = opt.x, float(opt.fun), None
    return Minimum(b, float(J), converged, P)


def score_weights(V: FloatArray, n: FloatArray) -> FloatArray:
    """``W_e = n_e V_e^{-1}`` (a ridge of 1e-10 of the mean eigenvalue keeps it finite).

    An environment with ``n_e <= q`` rows (``q`` instruments) has a score covariance of
    rank at most ``n_e - 1`` whatever the data: its other directions carry no estimate
    and get no weight (the pseudo-inverse on its ``n_e - 1`` largest eigenvalues).  The
    ridge's weight of ~1e10 on them would turn rounding (moments equal to 1e-16 from a
    frame and from Dask) into J tests that differ by O(1) and supports that differ
    (1 in 200 of the fuzz test's frames)."""
    q = V.shape[1]
    ridged = V.copy()                       # (in place: at q = 1,000 the temporaries of
    ridged.reshape(len(V), -1)[:, ::q + 1] += 1e-10 * np.einsum("ejj->e", V)[:, None] / q
    W = inv_psd(ridged)                     # V + ridge I and n W take 0.06 s a call)
    W *= n[:, None, None]
    for e in np.flatnonzero(n <= q):
        vals, vecs = np.linalg.eigh(V[e])
        rank = max(int(n[e]) - 1, 0)
        inv = np.zeros(q)
        if rank:
            top = vals[q - rank:]
            inv[q - rank:] = np.where(top > 0, 1.0 / np.where(top > 0, top, 1.0), 0.0)
        W[e] = n[e] * (vecs * inv) @ vecs.T
    return W

def with_cumulant(gauss: FloatArray, K: FloatArray) -> FloatArray:
    """``gauss + t K`` per environment, ``t`` as :meth:`InvarianceGMM._score` says (1 where
    ``gauss + K / (1 - SCORE_FLOOR)`` is positive definite): a covariance ``>= SCORE_FLOOR
    gauss``, continuous in ``b``.  ``gauss`` itself where ``K`` is 0 (the pilot's, on
    every covariate: two passes over (E, p, p) saved at each of its weights)."""
    if not K.any():
        return gauss
    t, _ = cumulant_scaling(gauss, K)
    return gauss + t[:, None, None] * K


def cumulant_scaling(gauss: FloatArray, K: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Per environment the share ``t`` of the cumulant ``K`` that :func:`with_cumulant`
    adds, and where ``t < 1`` the vector ``x`` with ``K x = low gauss x``, ``x^T gauss x
    = 1`` (zero elsewhere): ``t = (1 - SCORE_FLOOR) / (-low)`` moves with the Gaussian
    part, ``dt = t x^T d(gauss) x`` (the derivative of a generalised eigenvalue), which
    the criteria's gradients add to ``dV = d(gauss) + dt K``.  (Without it the gradient
    is wrong wherever ``t < 1``: example 3 at n = 1,000, -0.067 against 0.0004, and the
    continuously updated fits stop short of their minimum.)"""
    E, q = gauss.shape[:2]
    t, x = np.ones(E), np.zeros((E, q))
    if not K.any() or _is_pd(gauss + K / (1.0 - SCORE_FLOOR)):
        return t, x
    for e in range(E):
        try:
            L = np.linalg.cholesky(gauss[e])
        except np.linalg.LinAlgError:        # the Gaussian part itself is singular
            continue
        half = linalg.solve_triangular(L, K[e], lower=True)
        vals, vecs = np.linalg.eigh(linalg.solve_triangular(L, half.T, lower=True))
        if (1.0 - SCORE_FLOOR) < -vals[0]:
            t[e] = (1.0 - SCORE_FLOOR) / -vals[0]
            x[e] = linalg.solve_triangular(L, vecs[:, 0], lower=True, trans="T")
    return t, x

def score_form(mom, parts: tuple, cols: np.ndarray, a: FloatArray, S: np.ndarray,
               K: FloatArray, scaling: tuple[FloatArray, FloatArray]) -> FloatArray:
    """``a_e^T (dV_e / db_k) a_e`` for ``k`` in ``S``, shape (E, |S|), of the score
    covariance ``V = gauss + t K`` (``scaling = (t, x)`` of :func:`cumulant_scaling` at
    ``b``, ``parts`` the Isserlis parts there): the only part of ``dV`` the continuously
    updated criteria's gradients need.  (With a long-run share ``c``, ``V = c gauss + t
    K``, ``x`` normalised on ``c gauss``: ``c`` times this.)"""
    t, x = scaling
    form = score_cov_form(mom, parts, cols, a, S)
    if x.any():
        aKa = np.einsum("ei,eij,ej->e", a, K, a)
        form = form + (t * aKa)[:, None] * score_cov_form(mom, parts, cols, x, S)
    return form

def counted_rows(mom: Moments, k: int, long_run: LongRun | None) -> FloatArray:
    """The rows of each environment as a criterion on ``k`` conditions per environment
    counts them: ``n_e`` (``N_POPULATION`` for population moments), for dependent rows
    fewer (:meth:`~negdro_stats.data.dependence.LongRun.rows`)."""
    n = np.where(np.isfinite(mom.n), mom.n, N_POPULATION)
    return n if long_run is None else long_run.rows(n, k)


def _is_pd(A: FloatArray) -> bool:
    """Whether a (stack of) symmetric matrices is positive definite (Cholesky)."""
    try:
        np.linalg.cholesky(A)
        return True
    except np.linalg.LinAlgError:
        return False

def inv_psd(A: FloatArray) -> FloatArray:
    """Inverse of a (stack of) symmetric positive definite matrices; pseudo-inverse of
    any that is only semi-definite.  From ``LAPACK_FROM`` rows on, LAPACK's Cholesky
    factor and its inverse (``potrf``, ``potri``: a third of the work of a Cholesky check
    and an LU inverse, 2.7 times faster at 1,000 rows); below, one batched call (Python's
    cost per matrix is the larger there)."""
    flat = A.reshape(int(np.prod(A.shape[:-2])), *A.shape[-2:])
    if not flat.size or (flat.shape[-1] < LAPACK_FROM and _is_pd(flat)):
        try:        # (a Cholesky factor can exist where LU meets an exact zero pivot)
            return np.asarray(np.linalg.inv(A), dtype=np.float64)
        except np.linalg.LinAlgError:
            pass
    out = np.empty_like(flat)
    for a, inv in zip(flat, out, strict=True):
        factor, info = lapack.dpotrf(a, lower=False, clean=False)
        if not info:
            upper, info = lapack.dpotri(factor, lower=False, overwrite_c=True)
        if info:
            inv[...] = linalg.pinvh(a)
        else:                                   # potri fills the upper triangle only
            inv[...] = upper
            np.copyto(inv, upper.T, where=_below_diagonal(len(a)))
    return out.reshape(A.shape)


@functools.lru_cache(maxsize=8)
def _below_diagonal(q: int) -> np.ndarray:
    return np.tri(q, k=-1, dtype=bool)
