"""A property-testing kit for the theory: hypothesis strategies for linear SEMs with
interventions, and the paper's results as checkable statements.

Requires hypothesis (``pip install 'negdro_stats[test]'``); the rest of the package
does not.  A property test draws a design, evaluates a statement of
:mod:`negdro_stats.theory` on it, and asserts that no counterexample appears::

    from hypothesis import assume, given
    from hypothesis import strategies as st
    from negdro_stats import testing as nt

    @given(sem=nt.designs(confounding=True, condition_1b=True), data=st.data())
    def test_theorem3(sem, data):
        check = nt.theorem3(sem, data.draw(nt.coefficients(sem)))
        assume(check.premise)
        assert check.holds, check

Designs are drawn from hypothesis primitives (edges, coefficients, variances), so a
failing example shrinks to a small design: few covariates, two environments, zero
edges where an edge is not needed.  See the "Testing the theory" page of the docs.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

try:
    from hypothesis import assume
    from hypothesis import strategies as st
except ImportError as err:                                    # pragma: no cover
    raise ImportError("negdro_stats.testing needs hypothesis, an optional dependency: "
                      "install it with the test extra, pip install 'negdro_stats[test]'."
                      ) from err

from . import theory
from .exceptions import DataError
from .identification.conditions import check_condition_1b
from .planning.design import Intervention, LinearSEM
from .theory import (  # noqa: F401 (re-exported: theory.__all__ is part of __all__)
    StatementCheck,
    algorithm3_exactness,
    default_exactness,
    lemma1,
    lemma1_second_moments,
    proposition1,
    risk_form,
    theorem3,
    theorem4,
    theorem4_radius,
)

__all__ = ["designs", "simplex_weights", "coefficients", "samples",
           *theory.__all__]                    # the statements, re-exported

INTERVENTIONS = ("full", "limited", "none")


def _bounds(value: int | tuple[int, int], name: str, low: int) -> tuple[int, int]:
    lo, hi = (value, value) if np.ndim(value) == 0 else tuple(value)
    if not (int(lo) == lo and int(hi) == hi and low <= lo <= hi):
        raise DataError(f"'{name}' must be an integer >= {low} or a range (lo, hi) with "
                        f"{low} <= lo <= hi; got {value!r}.")
    return int(lo), int(hi)


def _interval(value: tuple[float, float], name: str, low: float) -> tuple[float, float]:
    lo, hi = (float(v) for v in value)
    if not (np.isfinite(lo) and np.isfinite(hi) and low <= lo <= hi):
        raise DataError(f"'{name}' must be a range (lo, hi) with {low:g} <= lo <= hi; "
                        f"got {value!r}.")
    return lo, hi


def _signed(lo: float, hi: float) -> st.SearchStrategy[float]:
    """A coefficient with magnitude in [lo, hi] and either sign (shrinks to +lo)."""
    return st.builds(lambda neg, m: -m if neg else m, st.booleans(), st.floats(lo, hi))


def designs(
    *,
    p: int | tuple[int, int] | None = None,
    n_envs: int | tuple[int, int] = (2, 4),
    confounding: bool | None = None,
    confounding_strength: tuple[float, float] = (0.3, 1.0),
    interventions: Literal["full", "limited", "none"] = "full",
    intervene_children: bool | None = None,
    intervention_mean: tuple[float, float] = (-0.5, 0.5),
    intervention_variance: tuple[float, float] = (0.5, 3.0),
    weak_parents: bool = False,
    weak_effects: tuple[float, float] = (0.01, 0.1),
    min_parents: int = 0,
    parent_effects: tuple[float, float] = (0.3, 1.5),
    condition_1b: bool | None = None,
    min_margin: float = 1e-3,
) -> st.SearchStrategy[LinearSEM]:
    """Random acyclic linear SEMs over ``(Y, X_1..X_p)`` with additive interventions,
    eqs. (10)-(12).

    The variables are ordered ``X_1..X_k, Y, X_{k+1}..X_p`` (k drawn): every edge goes
    forward in that order (so the graph is acyclic), ``X_1..X_k`` may be parents of Y
    and ``X_{k+1}..X_p`` children.  Each possible edge is absent or has a coefficient
    of magnitude in [0.3, 1.5]; the noise variances are in [0.5, 1.5].  Environment 1
    is observational; the others shift covariates (eq. (12)).

    Parameters
    ----------
    p, n_envs : int or (int, int)
        Number of covariates (>= 1; >= 2 for limited interventions) and of environments
        (>= 2), fixed or a range; ``p`` defaults to (1, 5), or (2, 5) when limited.
    confounding : bool, optional
        Hidden confounding (a latent factor loading on Y and on some covariates, so
        ``Omega[0, 1:] != 0``); None draws either.
    confounding_strength : (float, float)
        Range of the factor's standard deviation.
    interventions : {"full", "limited", "none"}
        "full": every covariate is intervened on in some environment; "limited": a
        non-empty proper subset ``S_L`` (29) as in Condition 4 (children of Y included
        unless ``intervene_children=False``); "none": all environments are equal.
    intervene_children : bool, optional
        Whether the children of Y are intervened on (True: all of them; False: none);
        None leaves it to ``interventions``.
    intervention_mean, intervention_variance : (float, float)
        Ranges of the mean shift and the variance of each intervened coordinate.
    weak_parents : bool
        Make one parent of Y weak: a coefficient of magnitude in ``weak_effects``.
    min_parents : int
        At least this many covariates are parents of Y (0: ``Y`` may have none, and
        ``beta*`` is then 0 without confounding; a theorem checked on such draws is
        checked on its trivial case).
    parent_effects : (float, float)
        Range of the magnitudes of Y's parents' coefficients (the other edges' is
        [0.3, 1.5]); a theorem whose premise asks for clearly non-zero effects keeps more
        draws with a higher floor.
    condition_1b : bool, optional
        True: keep designs where Condition 1b holds with relative margin
        (:attr:`IdentificationResult.relative_margin`) at least ``min_margin``;
        False: keep designs where it fails; None: no filter.  Each draw then costs one
        identification SDP (about 10 ms).
    min_margin : float
        See ``condition_1b``.

    Returns
    -------
    SearchStrategy[LinearSEM]

    Raises
    ------
    DataError
        When a knob is out of range (at the call, not at the first draw).
    """
    if interventions not in INTERVENTIONS:
        raise DataError(f"'interventions' must be one of {INTERVENTIONS}; got "
                        f"{interventions!r}.")
    for name, value in (("confounding", confounding), ("condition_1b", condition_1b),
                        ("intervene_children", intervene_children)):
        if value is not None and not isinstance(value, (bool, np.bool_)):
            raise DataError(f"'{name}' must be True, False or None; got {value!r}.")
    if condition_1b and interventions != "full":
        raise DataError(f"condition_1b=True needs interventions='full': Condition 1b asks "
                        f"the environments to vary every direction, which "
                        f"interventions={interventions!r} designs (almost) never do -- "
                        "hypothesis would filter out every draw. Limited designs are "
                        "identified by Condition 4 instead (check_condition_4).")
    if isinstance(min_parents, bool) or not isinstance(min_parents, (int, np.integer)) \
            or min_parents < 0:
        raise DataError(f"'min_parents' must be an integer >= 0; got {min_parents!r}.")
    p_min = max(2 if interventions == "limited" else 1, min_parents)
    if not (np.isfinite(min_margin) and min_margin >= 0):
        raise DataError(f"'min_margin' must be a finite relative margin >= 0; got "
                        f"{min_margin!r}.")
    return _designs(
        p=_bounds((p_min, 5) if p is None else p, "p", p_min),
        n_envs=_bounds(n_envs, "n_envs", 2), confounding=confounding,
        strength=_interval(confounding_strength, "confounding_strength", 0.0),
        interventions=interventions, intervene_children=intervene_children,
        mean=_interval(intervention_mean, "intervention_mean", -np.inf),
        variance=_interval(intervention_variance, "intervention_variance", 0.0),
        weak=_interval(weak_effects, "weak_effects", 0.0) if weak_parents else None,
        min_parents=int(min_parents),
        parent=_interval(parent_effects, "parent_effects", 0.0),
        condition_1b=condition_1b, min_margin=float(min_margin))


@st.composite
def _designs(draw, *, p, n_envs, confounding, strength, interventions, intervene_children,
             mean, variance, weak, min_parents, parent, condition_1b, min_margin
             ) -> LinearSEM:
    p_lo, p_hi = p
    p = draw(st.integers(p_lo, p_hi))
    E = draw(st.integers(*n_envs))
    k = draw(st.integers(max(0 if weak is None else 1, min_parents), p))   # X_1..X_k: before Y
    pos = np.r_[k, np.arange(p) + (np.arange(p) >= k)]          # position of Y, X_1..X_p
    edge = st.one_of(st.just(0.0), _signed(0.3, 1.5))
    into_y = st.one_of(st.just(0.0), _signed(*parent))
    B = np.zeros((p + 1, p + 1))
    for child in range(p + 1):
        for src in range(p + 1):
            if pos[src] < pos[child]:
                B[child, src] = draw(into_y if child == 0 else edge)
    for j in range(1, k + 1):                   # Y's parents, at least min_parents
        if np.count_nonzero(B[0, 1:k + 1]) >= min_parents:
            break
        if B[0, j] == 0:
            B[0, j] = draw(_signed(*parent))
    if weak is not None:
        B[0, 1 + draw(st.integers(0, k - 1))] = draw(_signed(*weak))
    Omega = np.diag([draw(st.floats(0.5, 1.5)) for _ in range(p + 1)])
    if draw(st.booleans()) if confounding is None else confounding:
        load = np.r_[1.0, [draw(st.one_of(st.just(0.0), _signed(0.5, 1.0))) for _ in range(p)]]
        if not load[1:].any():
            load[1] = 1.0
        Omega += draw(st.floats(*strength)) ** 2 * np.outer(load, load)
    if interventions == "limited" and np.all(B[1:, 0] != 0):
        B[p, 0] = 0.0                           # Condition 4 needs a non-child outside S_L
    children = B[1:, 0] != 0
    if interventions == "none":
        targets = np.zeros(p, dtype=bool)
    elif interventions == "full":
        targets = np.ones(p, dtype=bool)
    else:
        targets = np.array([draw(st.booleans()) for _ in range(p)])
        targets |= children
        if targets.all():                       # limited: someone stays untouched
            targets[draw(st.sampled_from(np.flatnonzero(~children).tolist()))] = False
        if not targets.any():
            targets[draw(st.integers(0, p - 1))] = True
    if intervene_children is not None:
        targets = np.where(children, intervene_children, targets)
    variance, shift = st.floats(*variance), st.floats(*mean)
    var, mean = np.zeros((E, p)), np.zeros((E, p))
    for j in np.flatnonzero(targets):
        envs = {draw(st.integers(1, E - 1))} | {e for e in range(1, E) if draw(st.booleans())}
        for e in sorted(envs):
            var[e, j], mean[e, j] = draw(variance), draw(shift)
    sem = LinearSEM(B, Omega, [Intervention(mean[e], np.diag(var[e])) for e in range(E)])
    if condition_1b is not None:
        c1b = check_condition_1b(sem.moments())
        assume(c1b.relative_margin >= min_margin if condition_1b else not c1b.holds)
    return sem


@st.composite
def simplex_weights(draw, n: int) -> np.ndarray:
    """A point of the probability simplex with ``n`` entries (faces and vertices
    included; shrinks to the first vertex)."""
    raw = np.array(draw(st.lists(st.floats(0, 1), min_size=n, max_size=n)))
    if raw.sum() == 0:
        raw[0] = 1.0
    return raw / raw.sum()


@st.composite
def coefficients(draw, sem: LinearSEM, *, spread: float = 3.0) -> np.ndarray:
    """A coefficient vector ``b = beta* + d`` with every ``|d_j| <= spread`` (shrinks
    to ``beta*``)."""
    d = draw(st.lists(st.floats(-spread, spread), min_size=sem.p, max_size=sem.p))
    return sem.beta_star + np.array(d)


@st.composite
def samples(
    draw,
    design: LinearSEM | st.SearchStrategy[LinearSEM],
    *,
    n_per_env: int | tuple[int, int] = (20, 500),
    env_column: str = "env",
):
    """Rows drawn from a design (:meth:`LinearSEM.sample`): a DataFrame with the outcome
    first and the environment in ``env_column``.

    ``design`` is a LinearSEM or a strategy for one (e.g. :func:`designs`); the number
    of rows per environment and the random seed are drawn (the rows themselves come
    from numpy, so a failing example is reproduced by its seed, not shrunk row by row).
    """
    sem = draw(design) if isinstance(design, st.SearchStrategy) else design
    n_lo, n_hi = _bounds(n_per_env, "n_per_env", 1)
    return sem.sample(draw(st.integers(n_lo, n_hi)), rng=draw(st.integers(0, 2**32 - 1)),
                      env_column=env_column)
