"""Test helpers: an independent cvxpy solve of Condition 1b's margin (eq. (16))."""

from __future__ import annotations

import cvxpy as cp
import numpy as np


def margin_1b(Sigma: np.ndarray) -> tuple[float, np.ndarray]:
    """lambda = max_{w in simplex} lambda_min(A(w)), A(w) = sum_e (w_e - 1/E) Sigma_e."""
    E, p, _ = Sigma.shape
    w, t = cp.Variable(E, nonneg=True), cp.Variable()
    A = sum((w[e] - 1 / E) * Sigma[e] for e in range(E))
    prob = cp.Problem(cp.Maximize(t), [cp.sum(w) == 1, A >> t * np.eye(p)])
    prob.solve(solver="CLARABEL")
    assert prob.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE), prob.status
    w0 = np.maximum(w.value, 0)
    w0 /= w0.sum()
    return float(np.linalg.eigvalsh(np.einsum("e,eij->ij", w0 - 1 / E, Sigma))[0]), w0
