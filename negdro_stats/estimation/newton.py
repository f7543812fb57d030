"""The one minimiser of the continuously updated GMM criteria: :func:`gauss_newton`,
used by the selection's fits (:meth:`~negdro_stats.estimation.gmm.InvarianceGMM.fit_cue`)
and the robust sets' profile fits (:mod:`negdro_stats.inference.robust`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from scipy import optimize

from .._typing import FloatArray

__all__ = ["gauss_newton", "Minimum"]


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
