"""The objective: eq. (8) = (9)/(1+gamma|E|), the closed-form simplex maximiser, Danskin."""

import cvxpy as cp
import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from negdro_stats import simulate
from negdro_stats import testing as nt
from negdro_stats.estimation.objective import (
    best_response,
    env_risks,
    gradient,
    negative_weight,
    objective,
    project_simplex,
)

floats = st.floats(-3, 3)


@given(sem=nt.designs(), gamma=st.floats(0, 50), data=st.data())
def test_eq8_equals_eq9_over_one_plus_gamma_E(sem, gamma, data):
    """Phi (17) = [max R + gamma|E| (max R - mean R)] / (1 + gamma|E|), i.e. (8)/(1+gamma|E|);
    and = max over U(gamma) of (9) divided by 1 + gamma|E| (the worst environment gets
    1 + gamma(|E| - 1), the others -gamma)."""
    mom = sem.moments()
    E = mom.n_envs
    b = np.array(data.draw(st.lists(floats, min_size=mom.p, max_size=mom.p)))
    R = env_risks(b, mom.Sigma, mom.sxy, mom.syy)
    eq8 = R.max() + gamma * E * (R.max() - R.mean())
    w9 = np.full(E, -gamma)
    w9[R.argmax()] = 1 + gamma * (E - 1)
    phi = objective(b, mom.Sigma, mom.sxy, mom.syy, gamma=gamma)
    scale = 1 + np.abs(R).max() * (1 + gamma * E)
    assert abs(phi * (1 + gamma * E) - eq8) <= 1e-9 * scale
    assert abs(phi * (1 + gamma * E) - w9 @ R) <= 1e-9 * scale


@given(v=st.lists(st.floats(-10, 10), min_size=1, max_size=8))
def test_projection_onto_simplex(v):
    v = np.array(v)
    w = project_simplex(v)
    assert np.all(w >= 0) and abs(w.sum() - 1) < 1e-12
    # Optimality: <v - w, u - w> <= 0 for every vertex u of the simplex.
    assert np.all((v - w) - (v - w) @ w <= 1e-9)


def test_closed_form_maximiser_equals_cvxpy_qp():
    """(20)/(23): argmax_w sum_e (w_e - c) R_e - mu ||w||^2 is the projection of R/(2 mu)."""
    rng = np.random.default_rng(0)
    for _ in range(5):
        R = rng.uniform(0, 3, size=5)
        mu = rng.uniform(0.05, 2)
        w = cp.Variable(5)
        prob = cp.Problem(cp.Maximize(R @ w - mu * cp.sum_squares(w)), [w >= 0, cp.sum(w) == 1])
        prob.solve(solver="CLARABEL")
        assert_allclose(best_response(R, mu=mu), w.value, atol=1e-6)


@given(sem=nt.designs(), data=st.data(), mu=st.floats(0.01, 1), tau=st.floats(0, 1))
def test_danskin_gradient_matches_finite_differences(sem, data, mu, tau):
    """grad Phi_{mu,tau} = sum_e ((1+tau) w_e - c) grad R_e (Danskin; (24) with the factor 2)."""
    mom = sem.moments()
    b = np.array(data.draw(st.lists(floats, min_size=mom.p, max_size=mom.p)))
    g, _ = gradient(b, mom.Sigma, mom.sxy, mom.syy, gamma=5.0, mu=mu, tau=tau)
    h = 1e-6
    fd = np.array([(objective(b + h * e, mom.Sigma, mom.sxy, mom.syy, gamma=5.0, mu=mu, tau=tau)
                    - objective(b - h * e, mom.Sigma, mom.sxy, mom.syy, gamma=5.0, mu=mu, tau=tau))
                   / (2 * h) for e in np.eye(mom.p)])
    # Central differences of a C^1 function with piecewise-quadratic pieces: the error is
    # O(h^2 * curvature) away from kinks of the projection, O(h * curvature) near them.
    curv = np.abs(mom.Sigma).max() * (1 + 1 / mu) * (1 + np.abs(b).max()) ** 2
    assert_allclose(g, fd, atol=1e-4 * curv)


def test_tau_objective_is_phi_plus_tau_max_risk():
    """(124): Phi(b) + tau max_e R_e(b), the mu = 0 case of Phi_{mu,tau}."""
    mom = simulate.eq33(p=6).moments()
    b = np.linspace(-1, 1, 6)
    R = env_risks(b, mom.Sigma, mom.sxy, mom.syy)
    lhs = objective(b, mom.Sigma, mom.sxy, mom.syy, gamma=20.0, tau=0.3)
    rhs = objective(b, mom.Sigma, mom.sxy, mom.syy, gamma=20.0) + 0.3 * R.max()
    assert_allclose(lhs, rhs, rtol=1e-12)
    assert_allclose(negative_weight(20.0, 4), 20 / 81)
