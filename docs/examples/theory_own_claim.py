"""Example 2 of "Testing the theory": state a claim of your own and let hypothesis
search for a counterexample.

The claim is the identity behind the feasible set (15) and Theorems 1 and 3: for every
weighting w of the environments and every b,

    sum_e (w_e - 1/|E|) R_e(b) = (b - beta*)^T A(w) (b - beta*),   A(w) as in (16),

because the first-order term of the risk (28) is the same in every environment.  It
holds with hidden confounding and children of Y, on every face of the simplex.
"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from negdro_stats import testing as nt
from negdro_stats.estimation.objective import env_risks


@settings(max_examples=50, deadline=None)
@given(sem=nt.designs(confounding=True), data=st.data())
def test_weighted_risk_gap_is_a_quadratic_form(sem, data):
    mom = sem.moments()                                   # exact population moments
    w = data.draw(nt.simplex_weights(sem.n_envs))
    b = data.draw(nt.coefficients(sem))
    d = b - sem.beta_star
    R = env_risks(b, mom.Sigma, mom.sxy, mom.syy)         # R_e(b) for every e
    A = np.einsum("e,eij->ij", w - 1 / sem.n_envs, mom.Sigma)          # A(w), eq. (16)
    lhs, rhs = (w - 1 / sem.n_envs) @ R, d @ A @ d
    assert abs(lhs - rhs) <= 1e-9 * (1 + np.abs(R).max()), (lhs, rhs)
