"""Example 3 of "Testing the theory": hypothesis finds, and shrinks, counterexamples to
deliberately false variants of the paper's statements.

Both tests below are meant to FAIL: run them with pytest and read the falsifying
example (tests/theory/test_testing.py runs them and checks that they do).
"""

import numpy as np
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from negdro_stats import testing as nt


# Generate and shrink, without the "explain" phase: it would rerun the test (one
# identification SDP each) hundreds of times to annotate the failure.
@settings(max_examples=100, deadline=None, database=None,
          phases=[Phase.generate, Phase.shrink])
@given(sem=nt.designs(p=(1, 3), n_envs=(2, 3)), data=st.data())
def test_theorem3_with_twice_the_constant(sem, data):
    """False variant of Theorem 3: max_e R_e(b) - mean_e R_e(b) >= 2 lambda ||b - beta*||^2."""
    check = nt.theorem3(sem, data.draw(nt.coefficients(sem)))
    if check.premise:                       # Condition 1b holds: the claim applies
        assert check.lhs >= 2 * check.rhs - check.slack, check


@settings(max_examples=100, deadline=None, database=None,
          phases=[Phase.generate, Phase.shrink])
@given(sem=nt.designs())
def test_lemma1_with_the_printed_sign(sem):
    """Lemma 1 as its proof prints it: E[eps_Y X^e] = +G^T h."""
    check = nt.lemma1(sem)                  # check.rhs is the corrected -G^T h
    assert np.allclose(check.lhs, -check.rhs, atol=check.slack), check
