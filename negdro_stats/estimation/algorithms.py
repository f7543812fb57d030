"""Solvers for NegDRO on per-environment moments: Algorithms 1, 2, 3, SQP and refits.

All routines work on the arrays of :class:`~negdro_stats.Moments` (see the
glossary in :mod:`negdro_stats.estimation.objective`).  :func:`run_method` runs the chosen method on
moments rescaled so that every covariate and the outcome have unit root mean square
(which makes ``mu``, ``threshold`` and the tolerances scale-free); the entry point that
standardises, profiles an intercept and chooses the support is
:func:`negdro_stats.estimation.solve`.

Methods
-------
``"algorithm3"`` (default)
    Appendix F.3: minimise the tau-adjusted objective (124), hard-threshold at ``c0``,
    halve tau, repeat on the support until it is stable, then minimise Phi_mu on it.
    Each inner minimisation uses ``inner="sqp"`` (default) or ``inner="gdm"``
    (Algorithm 1, as printed).  With ``refit="auto"`` (default) the support is then
    chosen by over-identified gradient invariance and refitted (see
    :func:`negdro_stats.estimation.solve` and
    :mod:`negdro_stats.estimation.gmm`); ``refit="negdro"`` is the paper's algorithm
    verbatim; ``refit="invariant"`` refits Algorithm 3's support by (31)
    (:func:`invariant_refit`).
``"algorithm1"``
    Gradient descent-maximisation on Phi_mu, eq. (22)-(24), output = the iterate with the
    smallest gradient norm.  No thresholding.
``"algorithm2"``
    Subgradient descent-maximisation on Phi (50), (53)-(54), output chosen by the
    proximal stationarity measure ``||prox(b) - b||`` of (52).  No thresholding.

The default inner solver (``inner="sqp"``)
------------------------------------------
Write ``Phi_{mu,tau}(b) = max_w sum_e w_e phi_e(b) - mu ||w||^2`` with the quadratic
pieces ``phi_e = (1 + tau) R_e - c sum_f R_f`` (indefinite in general).  Each step
solves the quadratic model

    min_d  max_w sum_e w_e (phi_e + grad phi_e^T d) - mu ||w||^2 + d^T B d / 2,

``B = 2 M(w) = 2 sum_e a_e Sigma_e`` the Hessian of the Lagrangian at the current
weights, through its
|E|-dimensional dual: a QP over the simplex with matrix ``J B^{-1} J^T + 2 mu I``
(``J`` = the rows ``grad phi_e``), solved exactly by an active-set method; then
``d = -B^{-1} J^T w`` and an Armijo line search on Phi_{mu,tau}.  This is SQP for a
finite minimax (a max of |E| quadratics): the linearised pieces handle the kinks of the
max, and with the exact Hessian it converges quadratically near a strict local minimum,
for ``mu >= 0``.  Where B is not positive definite (it can be indefinite even at the
minimum, in directions the max over environments controls) the step is a Newton step on
the smooth Phi_mu with its generalised Hessian

    2 M(w) + (2 (1 + tau)^2 / mu) Gr_F^T (I - 11^T/|F|) Gr_F

(w the best response, F its support, ``Gr`` the rows ``Sigma_e b - sxy_e``; the
second term is the derivative of the projection onto the simplex), and a
Levenberg-Marquardt shift of B only if that is not positive definite either.  Each step
costs one or two Cholesky factorisations of a p x p matrix.  The
fixed-w quadratics are indefinite in directions that other environments control, so
``min-max != max-min`` and a dual method does not apply to Phi itself.

The proximal map (52) of Algorithm 2 is strongly convex in ``b`` and linear in ``w``, so
there a saddle point exists and :func:`prox_map` computes it exactly from the concave
dual ``f(w) = min_b [sum_e a_e R_e(b) + rho ||b - center||^2]``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from scipy import linalg

from .._typing import FloatArray
from ..data.moments import Moments, block
from ..exceptions import DataError, SolverError
from .objective import best_response, env_risks, gradient, negative_weight, objective
from .options import (
    InnerResult,
    SolverOptions,
)

__all__ = ["run_method", "sqp", "invariant_refit", "prox_map", "gdm", "subgradient_prox"]


# ---------------------------------------------------------------------------- dual solver
def _simplex_qp(Q: FloatArray, q: FloatArray, x: FloatArray) -> FloatArray:
    """Minimise ``x^T Q x / 2 + q^T x`` over the simplex; primal active set from feasible x.

    ``Q`` must be positive definite on ``{d : sum d = 0}``.  Exact after finitely many
    steps (Nocedal & Wright, Algorithm 16.3); |E| is small, so each step is a tiny solve.
    """
    E = len(q)
    x = x.copy()
    free = x > 0
    for _ in range(20 * E + 20):
        F = np.flatnonzero(free)
        k = len(F)
        kkt = np.zeros((k + 1, k + 1))
        kkt[:k, :k] = Q[np.ix_(F, F)]
        kkt[:k, k] = kkt[k, :k] = 1.0
        sol = np.linalg.solve(kkt, np.append(-q[F], 1.0))
        z = np.zeros(E)
        z[F] = sol[:k]
        if np.all(z[F] >= 0):
            x = z
            lam = Q @ x + q + sol[k]             # multipliers of the bounds x_i >= 0
            lam[free] = np.inf
            j = int(np.argmin(lam))
            if lam[j] >= -1e-12 * (1 + np.abs(q).max()):
                return x
            free[j] = True
        else:
            step = z - x
            blocking = free & (step < 0)
            ratios = np.full(E, np.inf)
            ratios[blocking] = x[blocking] / -step[blocking]
            j = int(np.argmin(ratios))
            x = np.maximum(x + min(1.0, ratios[j]) * step, 0.0)
            x[j] = 0.0
            free[j] = False
    return x


def _cholesky(M: FloatArray):
    """Cholesky factor of M, or None if M is not (numerically) positive definite."""
    try:
        return linalg.cho_factor(M, lower=True, check_finite=False)
    except linalg.LinAlgError:
        return None


def prox_map(
    Sigma: FloatArray,
    sxy: FloatArray,
    syy: FloatArray,
    *,
    gamma: float,
    rho: float,
    center: FloatArray,
    tol: float = 1e-10,
    max_iter: int = 100,
) -> FloatArray:
    """Proximal map (52): ``argmin_b Phi(b) + rho ||b - center||^2`` (``rho = 1/(2 upsilon)``).

    ``sum_e a_e(w) R_e(b) + rho ||b - center||^2`` is strongly convex in ``b`` for every w
    once ``rho`` exceeds half the weak-convexity modulus of Phi, and linear in w, so a
    saddle point exists.  The concave dual ``f(w) = min_b [...]`` is maximised over the
    simplex by projected Newton steps from uniform weights (each an |E|-dimensional QP
    solved exactly), until the duality gap ``primal(b(w)) - f(w)`` is at most ``tol`` or
    ``max_iter`` steps are taken; ``b(w)`` is then the proximal point.
    """
    E, p, _ = Sigma.shape
    c = negative_weight(gamma, E)
    eye = np.eye(p)
    ridge_const = rho * (center @ center)

    def evaluate(w):
        a = w - c
        M = np.tensordot(a, Sigma, axes=1) + rho * eye            # sum_e a_e Sigma_e + rho I
        s = a @ sxy + rho * center
        chol = linalg.cho_factor(M, lower=True, check_finite=False)  # LinAlgError if M !> 0
        b = linalg.cho_solve(chol, s, check_finite=False)           # b(w) = M^{-1} s
        return a @ syy + ridge_const - s @ b, b, chol

    def primal(b):
        return objective(b, Sigma, sxy, syy, gamma=gamma) + rho * np.sum((b - center) ** 2)

    w = np.full(E, 1.0 / E)
    f, b, chol = evaluate(w)
    n_iter = 0
    while primal(b) - f > tol and n_iter < max_iter:
        n_iter += 1
        grad = env_risks(b, Sigma, sxy, syy)                        # envelope: df/dw_e = R_e
        Gr = Sigma @ b - sxy                                        # (E, p) residual moments
        K = linalg.cho_solve(chol, Gr.T, check_finite=False)
        Q = 2.0 * (Gr @ K)                                          # minus the Hessian of f
        Q += 1e-12 * (np.trace(Q) / E + 1.0) * np.eye(E)
        d = _simplex_qp(Q, -(Q @ w + grad), w) - w
        slope = grad @ d
        if slope <= 1e-15 * (1.0 + abs(f)):
            break
        t = 1.0
        while t > 1e-10:
            try:
                f_new, b_new, chol_new = evaluate(w + t * d)
                if f_new >= f + 1e-4 * t * slope:
                    break
            except linalg.LinAlgError:
                pass
            t *= 0.5
        else:
            break
        w = np.maximum(w + t * d, 0.0)
        w /= w.sum()
        f, b, chol = f_new, b_new, chol_new
    return b


def sqp(
    Sigma: FloatArray,
    sxy: FloatArray,
    syy: FloatArray,
    *,
    gamma: float,
    mu: float,
    tau: float = 0.0,
    b_init: FloatArray,
    tol: float = 1e-8,
    max_iter: int = 200,
) -> InnerResult:
    """Stationary point of Phi_{mu,tau} by sequential quadratic programming (SQP).

    See the module docstring.  Stops when the stationarity measure is ``<= tol`` (the
    Danskin gradient norm for ``mu > 0``; ``||sum_e w_e grad phi_e||`` at the step's
    multipliers for ``mu = 0``), after ``max_iter`` steps, when no descent step exists
    even with a large Levenberg-Marquardt shift, or when the predicted decrease has been
    below rounding level (1e-12 relative) for four steps -- numerically stationary,
    which counts as converged.
    """
    E, p, _ = Sigma.shape
    c = negative_weight(gamma, E)
    b = b_init.copy()
    risks = env_risks(b, Sigma, sxy, syy)
    w = best_response(risks, mu=mu, tau=tau)
    value = objective(b, Sigma, sxy, syy, gamma=gamma, mu=mu, tau=tau)
    shift, n_iter, gn, floor_steps = 0.0, 0, np.inf, 0
    eye_p, eye_E = np.eye(p), np.eye(E)
    while True:
        Gr = Sigma @ b - sxy                                            # (E, p)
        w_br = best_response(risks, mu=mu, tau=tau)                     # (20)/(23)
        gn = float(np.linalg.norm(2.0 * (((1.0 + tau) * w_br - c) @ Gr)))  # Danskin, (24)
        if gn <= tol or n_iter >= max_iter:
            break
        n_iter += 1
        phi = (1.0 + tau) * risks - c * risks.sum()                     # pieces phi_e(b)
        J = 2.0 * ((1.0 + tau) * Gr - c * Gr.sum(axis=0))               # their gradients
        B = 2.0 * np.tensordot((1.0 + tau) * w - c, Sigma, axes=1)      # Lagrangian Hessian
        scale = max(float(np.trace(np.abs(B))) / p, 1e-12)
        chol = _cholesky(B + shift * eye_p)      # shift > 0 only after a failed search
        d = None
        if chol is None and mu > 0 and shift == 0:
            # B is indefinite (directions that other environments control): take a Newton
            # step on the smooth Phi_mu with its generalised Hessian (module docstring),
            # which is positive definite near a strict local minimum.
            F = w_br > 0
            GF, sF = Gr[F], Gr[F].sum(axis=0)
            H = 2.0 * np.tensordot((1.0 + tau) * w_br - c, Sigma, axes=1) + (
                2.0 * (1.0 + tau) ** 2 / mu) * (GF.T @ GF - np.outer(sF, sF) / F.sum())
            chol_h = _cholesky(H)
            if chol_h is not None:
                g = 2.0 * (((1.0 + tau) * w_br - c) @ Gr)
                d = -linalg.cho_solve(chol_h, g, check_finite=False)
                w_new, decrease = w_br, -float(g @ d)
        if d is None:
            lm_shift = shift
            while chol is None:                                         # Levenberg-Marquardt
                lm_shift = max(4.0 * lm_shift, 1e-6 * scale)
                chol = _cholesky(B + lm_shift * eye_p)
            K = linalg.cho_solve(chol, J.T, check_finite=False)         # (p, E)
            Q = J @ K + 2.0 * mu * eye_E
            Q += 1e-13 * (np.trace(Q) / E + 1e-300) * eye_E
            w_new = _simplex_qp(Q, -phi, w)                             # dual of the QP step
            d = -K @ w_new
            if mu == 0:          # Phi is not differentiable: measure ||sum_e w_e grad phi_e||
                gn = float(np.linalg.norm(J.T @ w_new))
                if gn <= tol:
                    break
            decrease = -float(d @ (J.T @ w_new))                   # = d^T (B + lm_shift) d
        # Below ~1e-12 relative the objective cannot resolve the decrease, so the Armijo
        # test would reject a good step: take the full (locally quadratic) step then.
        t = 1.0 if decrease > 1e-12 * (1.0 + abs(value)) else 0.0
        while 1e-10 <= t:                                               # Armijo on Phi_mu
            b_new = b + t * d
            v_new = objective(b_new, Sigma, sxy, syy, gamma=gamma, mu=mu, tau=tau)
            if v_new <= value - 1e-4 * t * decrease:
                break
            t *= 0.5
        if t == 0.0:
            floor_steps += 1
            if floor_steps > 3:                     # numerically stationary: stop there
                break
            t, b_new = 1.0, b + d
            v_new = objective(b_new, Sigma, sxy, syy, gamma=gamma, mu=mu, tau=tau)
        elif t < 1e-10:
            if shift > 1e8 * scale:                                     # no descent possible
                break
            shift = max(10.0 * shift, 1e-6 * scale)
            continue
        b, value, w = b_new, v_new, w_new
        risks = env_risks(b, Sigma, sxy, syy)
        if t == 1.0:
            shift = 0.0 if shift < 1e-9 * scale else 0.1 * shift
    return InnerResult(
        b=b,
        w=best_response(risks, mu=mu, tau=tau),
        value=value,
        grad_norm=gn,
        n_iter=n_iter,
        converged=gn <= tol or floor_steps > 3,
    )


# ----------------------------------------------------------------------- Algorithms 1, 2
def gdm(
    Sigma: FloatArray,
    sxy: FloatArray,
    syy: FloatArray,
    *,
    gamma: float,
    mu: float,
    tau: float = 0.0,
    step_size: float,
    max_iter: int,
    tol: float,
    b_init: FloatArray,
) -> InnerResult:
    """Algorithm 1: gradient descent-maximisation on Phi_{mu,tau}, eqs. (23)-(24).

    Stops early once ``||grad|| <= tol``; returns the iterate with the smallest gradient
    norm, as the algorithm's output rule says.
    """
    b = b_init.copy()
    best = (np.inf, b, None)
    t = 0
    for t in range(max_iter + 1):
        g, w = gradient(b, Sigma, sxy, syy, gamma=gamma, mu=mu, tau=tau)  # (23), Danskin
        gn = float(np.linalg.norm(g))
        if gn < best[0]:
            best = (gn, b, w)
        if gn <= tol or t == max_iter:
            break
        b = b - step_size * g                                            # (24)
    gn, b, w = best
    return InnerResult(
        b=b,
        w=w,
        value=objective(b, Sigma, sxy, syy, gamma=gamma, mu=mu, tau=tau),
        grad_norm=gn,
        n_iter=t,
        converged=gn <= tol,
    )


def subgradient_prox(
    Sigma: FloatArray,
    sxy: FloatArray,
    syy: FloatArray,
    *,
    gamma: float,
    step_size: float,
    max_iter: int,
    tol: float,
    upsilon: float,
    b_init: FloatArray,
) -> InnerResult:
    """Algorithm 2: subgradient descent-maximisation on Phi (50), eqs. (53)-(54).

    The output is the iterate with the smallest ``||prox(b) - b|| / upsilon`` (52); the
    proximal map is computed exactly by :func:`prox_map` with ``rho = 1/(2 upsilon)``
    (strongly convex for ``upsilon`` below the inverse weak-convexity modulus).
    Stops early once that measure is ``<= tol``.
    """
    b = b_init.copy()
    best = (np.inf, b, None)
    t = 0
    for t in range(max_iter + 1):
        prox = prox_map(Sigma, sxy, syy, gamma=gamma, rho=1.0 / (2.0 * upsilon), center=b)
        measure = float(np.linalg.norm(prox - b)) / upsilon
        if measure < best[0]:
            best = (measure, b)
        if measure <= tol or t == max_iter:
            break
        g, _ = gradient(b, Sigma, sxy, syy, gamma=gamma)                # (53)-(54)
        b = b - step_size * g
    measure, b = best
    return InnerResult(
        b=b,
        w=best_response(env_risks(b, Sigma, sxy, syy), mu=0.0),
        value=objective(b, Sigma, sxy, syy, gamma=gamma),
        grad_norm=measure,
        n_iter=t,
        converged=measure <= tol,
    )


# --------------------------------------------------------------------------- entry point
def invariant_refit(Sigma: FloatArray, sxy: FloatArray, *, rcond: float = 1e-6
                    ) -> FloatArray | None:
    """Coefficients on a selected support from gradient invariance, eq. (31).

    Under additive interventions E[eps_Y X^e] = -G^T h is the same in every environment
    (Lemma 1), so ``E_e[X_S (Y - b^T X)]`` is invariant at ``b = beta*`` for any support
    ``S`` containing the causes (children of Y included): the least-squares solution of
    ``(Sigma_e - Sigma_bar)_SS b = (sxy_e - sxy_bar)_S`` stacked over e (equal weight per
    environment, as in A(w) of (16)).  It is identified when the stacked matrix ``D`` has
    full column rank -- implied by Condition 1b on the support -- and then converges at
    the n^{-1/2} rate, while the minimiser of Phi_mu chases the sampling noise of the
    residual variances (about n^{-1/4}; Theorem 5).

    Returns None (not identified) when the smallest singular value of ``D`` is below
    ``rcond`` times the largest (e.g. the limited regime of Example 3, where only Phi_mu
    identifies beta*).  Call on standardised moments, so that the weighting is
    scale-free.  The default ``refit="auto"`` generalises it: all covariates' residual
    moments, efficient weights, tests (:mod:`negdro_stats.estimation.gmm`).
    """
    E, k, _ = Sigma.shape
    D = (Sigma - Sigma.mean(axis=0)).reshape(-1, k)
    r = (sxy - sxy.mean(axis=0)).reshape(-1)
    b, _, rank, sv = np.linalg.lstsq(D, r, rcond=None)
    if rank < k or sv[-1] <= rcond * sv[0]:
        return None
    return b


def _lipschitz(Sigma: FloatArray, gamma: float, tau: float) -> float:
    """Bound on the curvature of ``sum_e a_e R_e``: ``2 (1 + tau + c|E|) max_e ||Sigma_e||``."""
    E = Sigma.shape[0]
    p = Sigma.shape[1]
    top = max(float(linalg.eigvalsh(S, subset_by_index=[p - 1, p - 1])[0]) for S in Sigma)
    return 2.0 * (1.0 + tau + negative_weight(gamma, E) * E) * top


def run_method(std: Moments, options: SolverOptions
               ) -> tuple[list[InnerResult], tuple, np.ndarray, SolverOptions]:
    """Run ``options.method`` on standardised moments (see the module docstring).

    Returns the inner results in order, the stages of Algorithm 3 (``tau``, support size,
    iterations, convergence), the final support ``S`` (all covariates for Algorithms 1
    and 2; Algorithm 3's thresholded support, whose coefficients are the last result's),
    and the options with the defaults resolved from the data (``step_size``,
    ``max_iter``, ``tol``, ``upsilon``).  Only optimisation: the choice of the support
    by invariance and the intercept live in :mod:`negdro_stats.estimation.selection`
    and :mod:`negdro_stats.estimation.pipeline`.
    """
    gamma, method, inner, mu = options.gamma, options.method, options.inner, options.mu
    tau, threshold = options.tau, options.threshold
    step_size, max_iter, tol, upsilon = (options.step_size, options.max_iter, options.tol,
                                         options.upsilon)
    Sigma, sxy, syy = std.Sigma, std.sxy, std.syy
    E, p = std.n_envs, std.p
    is_sqp = method == "algorithm3" and inner == "sqp"
    if max_iter is None:
        max_iter = 200 if is_sqp else 10_000
    if tol is None:
        tol = 1e-8 if is_sqp else 1e-6
    uses_gradient = method != "algorithm3" or inner == "gdm"
    if step_size is None and uses_gradient:
        step_size = 1.0 / _lipschitz(Sigma, gamma, tau if method == "algorithm3" else 0.0)
    if method == "algorithm2":
        # Phi is m-weakly convex with m <= 2 c ||sum_e Sigma_e||; upsilon = 1/(2m) makes
        # the proximal problem (52) m-strongly convex.
        top = linalg.eigvalsh(Sigma.sum(0), subset_by_index=[p - 1, p - 1])[0]
        natural = 1.0 / (4.0 * negative_weight(gamma, E) * top)
        if upsilon is not None and upsilon < 1e-8 * natural:
            raise DataError(f"upsilon={upsilon:g} is below 1e-8 of its natural scale "
                            f"1 / (4 c lambda_max) = {natural:.3g} (standardised moments): "
                            "the proximal map (52) then equals its centre in floating point, "
                            "so every point would look stationary. Leave upsilon unset, or "
                            f"use at least {1e-8 * natural:.3g}.")
        upsilon = natural if upsilon is None else upsilon

    def minimise(S: np.ndarray, tau_s: float, b0: FloatArray) -> InnerResult:
        Sig, sx = block(Sigma, S, S), sxy[:, S]
        if inner == "sqp":
            return sqp(Sig, sx, syy, gamma=gamma, mu=mu, tau=tau_s, b_init=b0,
                       tol=tol, max_iter=max_iter)
        return gdm(Sig, sx, syy, gamma=gamma, mu=mu, tau=tau_s, step_size=step_size,
                   max_iter=max_iter, tol=tol, b_init=b0)

    S = np.arange(p)
    stages: list[dict] = []
    if method == "algorithm1":
        results = [gdm(Sigma, sxy, syy, gamma=gamma, mu=mu, step_size=step_size,
                       max_iter=max_iter, tol=tol, b_init=np.zeros(p))]
    elif method == "algorithm2":
        results = [subgradient_prox(Sigma, sxy, syy, gamma=gamma, step_size=step_size,
                                    max_iter=max_iter, tol=tol, upsilon=upsilon,
                                    b_init=np.zeros(p))]
    else:                                                     # Algorithm 3, Appendix F.3
        results, tau_s, b = [], tau, np.zeros(p)
        while len(S):
            res = minimise(S, tau_s, b)
            results.append(res)
            stages.append(dict(tau=tau_s, size=len(S), n_iter=res.n_iter,
                               converged=res.converged))
            keep = np.abs(res.b) >= threshold                 # S^tau = {j : |b_j| >= c0}
            tau_s /= 2.0
            S, b = S[keep], res.b[keep]
            if keep.all():
                break
        if len(S):
            results.append(minimise(S, 0.0, b))               # final: Phi_mu on S
            stages.append(dict(tau=0.0, size=len(S), n_iter=results[-1].n_iter,
                               converged=results[-1].converged))
    if not all(np.isfinite(r.b).all() for r in results):
        raise SolverError(f"The {method} iterates diverged (non-finite coefficients); lower "
                          "step_size, or use the default method='algorithm3' with inner='sqp'.")
    return results, tuple(stages), S, replace(options, step_size=step_size,
                                              max_iter=max_iter, tol=tol, upsilon=upsilon)
