"""Hypothesis strategies: random acyclic linear SEMs (eq. (10)) with additive interventions."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from negdro_stats import Intervention, LinearSEM


@st.composite
def additive_sems(draw, *, max_p: int = 5, max_envs: int = 4, confounding: bool = True,
                  strong: bool = False) -> LinearSEM:
    """A random acyclic SEM over (Y, X_1..X_p).

    B is strictly lower triangular under a random order of the p + 1 variables (so the
    graph is acyclic), Omega = L L^T (non-diagonal = hidden confounding) or diagonal, and
    each environment has a diagonal intervention covariance and a mean shift; the first
    environment is observational.  ``strong`` makes every covariate intervened on in some
    environment with variance >= 1 (so Condition 1b tends to hold).
    """
    p = draw(st.integers(2, max_p))
    n_envs = draw(st.integers(2, max_envs))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    k = p + 1
    order = rng.permutation(k)
    B = np.zeros((k, k))
    for a in range(k):
        for b in range(a):
            if rng.random() < 0.5:
                B[order[a], order[b]] = rng.choice([-1, 1]) * rng.uniform(0.3, 1.5)
    if confounding:
        L = np.tril(rng.normal(scale=0.4, size=(k, k)), -1) + np.diag(rng.uniform(0.5, 1.5, k))
        Omega = L @ L.T
    else:
        Omega = np.diag(rng.uniform(0.5, 1.5, k))
    ivs = [Intervention.none(p)]
    for e in range(1, n_envs):
        lo = 1.0 if strong and e == n_envs - 1 else 0.0
        var = rng.uniform(lo, 3.0, p) * (rng.random(p) < (1.0 if lo else 0.7))
        mean = rng.normal(scale=0.5, size=p) * (rng.random(p) < 0.3)
        ivs.append(Intervention(mean, np.diag(var)))
    return LinearSEM(B, Omega, ivs)


@st.composite
def simplex_weights(draw, n: int) -> np.ndarray:
    """A point of the probability simplex (including faces)."""
    raw = np.array(draw(st.lists(st.floats(0, 1), min_size=n, max_size=n)))
    if raw.sum() == 0:
        raw[0] = 1.0
    return raw / raw.sum()
