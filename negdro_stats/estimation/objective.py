"""The NegDRO objective on per-environment moments: risks, Phi, Phi_mu, weights, gradients.

Glossary (names follow the paper):

    Sigma[e]  = E_e[X X^T]            (uncentred second moment, not a covariance)
    sxy[e]    = E_e[X Y],  syy[e] = E_e[Y^2]
    risks[e]  = R_e(b) = E_e[(Y - b^T X)^2] = syy[e] - 2 b^T sxy[e] + b^T Sigma[e] b
    c         = gamma / (1 + gamma |E|)                       (the negative weight, eq. 17)
    a[e]      = (1 + tau) w[e] - c                             (effective weight on R_e)

The objective minimised by every solver is

    Phi_{mu,tau}(b) = max_{w in simplex} sum_e a[e] R_e(b) - mu ||w||^2,

which is Phi of eq. (17) for ``mu = tau = 0``, Phi_mu of eq. (19) for ``tau = 0`` and
the tau-adjusted objective (124) of Appendix F.3 for ``mu = 0``.  ``mu`` follows the
convention of (19): the penalty ``mu ||w||^2`` is counted once, not once per
environment as written in (22)-(23) (those equal (19) with ``|E| mu``).  Phi equals the
penalised problem (8) divided by ``1 + gamma |E|``.
"""

from __future__ import annotations

import numpy as np

from .._typing import FloatArray

__all__ = [
    "negative_weight",
    "env_risks",
    "risk_gradients",
    "project_simplex",
    "best_response",
    "objective",
    "gradient",
]


def negative_weight(gamma: float, n_envs: int) -> float:
    """``c = gamma / (1 + gamma |E|)``, the weight subtracted from every environment (17)."""
    return gamma / (1.0 + gamma * n_envs)


def env_risks(b: FloatArray, Sigma: FloatArray, sxy: FloatArray, syy: FloatArray) -> FloatArray:
    """``R_e(b) = syy[e] - 2 b^T sxy[e] + b^T Sigma[e] b`` for every environment."""
    return syy - 2.0 * (sxy @ b) + (Sigma @ b) @ b


def risk_gradients(b: FloatArray, Sigma: FloatArray, sxy: FloatArray) -> FloatArray:
    """``grad R_e(b) = 2 (Sigma[e] b - sxy[e])``, shape (E, p)."""
    return 2.0 * (Sigma @ b - sxy)


def project_simplex(v: FloatArray) -> FloatArray:
    """Euclidean projection of ``v`` onto the probability simplex (sort-based).

    Infinite entries (risks that overflowed on a diverging iterate) share the weight; NaN
    propagates, for the caller to report."""
    if not np.isfinite(v).all():
        if np.isnan(v).any():
            return np.full(len(v), np.nan)
        top = v == v.max()
        return top / top.sum()
    v = v - v.max()               # the projection is invariant to shifts along (1, ..., 1);
    u = np.sort(v)[::-1]          # without this, u_1 - (u_1 - 1) rounds to 0 for huge v
    css = np.cumsum(u) - 1.0
    k = np.arange(1, len(v) + 1)
    rho = np.nonzero(u - css / k > 0)[0][-1]
    return np.maximum(v - css[rho] / (rho + 1.0), 0.0)


def best_response(risks: FloatArray, *, mu: float, tau: float = 0.0) -> FloatArray:
    """The maximising weight of Phi_{mu,tau} at the given risks (closed form of (20)/(23)).

    For ``mu > 0`` it is the projection of ``(1 + tau) R / (2 mu)`` onto the simplex.
    For ``mu = 0`` the maximisers are the weights on the highest-risk environments; the
    one returned splits the weight equally among exact ties, which gives an element of
    the subdifferential used by Algorithm 2, eq. (53).
    """
    if mu > 0:
        return project_simplex((1.0 + tau) * risks / (2.0 * mu))
    top = risks == risks.max()
    return top / top.sum()


def objective(
    b: FloatArray,
    Sigma: FloatArray,
    sxy: FloatArray,
    syy: FloatArray,
    *,
    gamma: float,
    mu: float = 0.0,
    tau: float = 0.0,
) -> float:
    """``Phi_{mu,tau}(b)``: eq. (17) for ``mu = tau = 0``, (19) for ``tau = 0``, (124)."""
    risks = env_risks(b, Sigma, sxy, syy)
    w = best_response(risks, mu=mu, tau=tau)
    a = (1.0 + tau) * w - negative_weight(gamma, len(risks))
    return float(a @ risks - mu * (w @ w))


def gradient(
    b: FloatArray,
    Sigma: FloatArray,
    sxy: FloatArray,
    syy: FloatArray,
    *,
    gamma: float,
    mu: float = 0.0,
    tau: float = 0.0,
) -> tuple[FloatArray, FloatArray]:
    """Danskin gradient of ``Phi_{mu,tau}`` and the maximising weight ``w``.

    ``grad = sum_e ((1 + tau) w_e - c) grad R_e(b)`` with ``grad R_e = 2 (Sigma_e b - sxy_e)``.
    This is (24); the display after (20) omits the factor 2.  For ``mu = 0`` it is a
    subgradient (54).
    """
    w = best_response(env_risks(b, Sigma, sxy, syy), mu=mu, tau=tau)
    a = (1.0 + tau) * w - negative_weight(gamma, len(w))
    return a @ risk_gradients(b, Sigma, sxy), w
