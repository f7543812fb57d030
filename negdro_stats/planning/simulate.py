"""The paper's simulation designs as :class:`~negdro_stats.planning.design.LinearSEM` objects.

- :func:`example2`: eq. (6), two environments differing in the covariate noise level.
- :func:`example3`: Section 5.2, limited / weak / strong intervention regimes.
- :func:`eq33`: Section 6, eq. (33), four environments, any ``p >= 5``, in the text's
  variant or the variant of the authors' public code (the errata in docs/design.rst).
- :func:`appendix_f2`: Appendix F.2, a hidden confounder whose loading on ``X1``
  depends on the environment (simulated as written; not additive in the sense of (12)).
- :func:`misspecified_sensors`: rows of a design that no linear SEM describes -- the
  outcome's mechanism is not linear, and the environments move sibling sensors' gains.

In eq. (33) the paper prints ``beta* = (1/2, 0, 1/2, 0, ...)`` after an equation that
says ``Y = X1/2 - X3/2``; the equation (and the authors' code) give
``beta* = (0.5, 0, -0.5, 0, ...)``, which is what these designs use.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd

from .._validation import check_int, check_option, check_rng, check_scalar
from ..exceptions import DataError
from .design import Intervention, LinearSEM

__all__ = ["example2", "example3", "eq33", "appendix_f2", "random_sem",
           "dense_second_moments", "misspecified_sensors", "shifted_parents_sensors",
           "light_tunnel",
           "SENSOR_TRAIN", "SHIFTED_TRAIN", "SENSOR_HELD_OUT"]

# the environments of misspecified_sensors: (sibling gain, sibling noise scale, shift of
# the children of Y); the held-out ones move the gains strongly
SENSOR_TRAIN = ((1.0, 1.0, 0.0), (1.3, 1.2, 0.5), (0.8, 1.1, -0.5), (1.2, 1.4, 1.0))
# ... and of shifted_parents_sensors' training environments, the siblings' gains moved more
SHIFTED_TRAIN = ((1.0, 1.0, 0.0), (1.6, 1.2, 0.5), (0.6, 1.1, -0.5), (1.3, 1.4, 1.0))
SENSOR_HELD_OUT = ((2.5, 2.0, 2.0), (-0.5, 2.5, -2.0), (3.0, 3.0, 3.0))
_LAWS = ("linear", "tanh", "cos2", "product")


def example2(nu: tuple[float, float] = (1.0, 2.0)) -> LinearSEM:
    """Example 2, eq. (6): ``X1 = e1, Y = X1 + eY, X2 = Y + e2``, ``(e1, e2) ~ N(0, nu_e I)``.

    ``beta* = (1, 0)``.  The environment-specific part of the covariate noise is written
    as an intervention of variance ``nu_e - min(nu)`` on top of ``eta ~ N(0, diag(1,
    min(nu), min(nu)))``.
    """
    base = min(nu)
    return LinearSEM.from_equations(
        {"Y": {"X1": 1.0}, "X2": {"Y": 1.0}},
        interventions=[{"X1": v - base, "X2": v - base} for v in nu],
        covariates=["X1", "X2"],
        noise_var={"Y": 1.0, "X1": base, "X2": base},
    )


def example3(regime: Literal["limited", "weak", "strong"] = "strong") -> LinearSEM:
    """Example 3 (Section 5.2): two environments; only ``X3`` (the child of Y) is always
    intervened on in environment 2, with variance 2; ``X1, X2, X4`` get variance 0
    (limited), 0.01 (weak) or 0.25 (strong).  ``eta ~ N(0, I_5)``; ``beta* = (0, 2, 0, 0)``.
    """
    others = {"limited": 0.0, "weak": 0.01, "strong": 0.25}
    if regime not in others:
        raise DataError(f"regime must be 'limited', 'weak' or 'strong'; got {regime!r}.")
    v = others[regime]
    return LinearSEM.from_equations(
        {"X2": {"X1": 1.0}, "Y": {"X2": 2.0}, "X3": {"X1": 0.5, "Y": -1.0}},
        interventions=[{}, {"X1": v, "X2": v, "X3": 2.0, "X4": v}],
        covariates=["X1", "X2", "X3", "X4"],
    )


def _eq33_B(p: int, child_coef: float) -> np.ndarray:
    B = np.zeros((p + 1, p + 1))           # order (Y, X1, ..., Xp); X_j is index j
    B[2, 1] = 1.0                          # X2 = X1 + e2
    B[3, 2] = 1.0                          # X3 = X2 + e3
    B[0, 1], B[0, 3] = 0.5, -0.5           # Y = X1/2 - X3/2 + eY
    B[4, 0], B[5, 0] = child_coef, -child_coef   # X4 = c Y + e4, X5 = -c Y + e5
    return B


MAX_P = 5000       # the SEMs are dense: (p + 1)^2 doubles per environment, several copies


def _check_p(p: object, owner: str, *, min_val: int) -> int:
    """``p`` as an int in ``[min_val, MAX_P]`` (eq33(p=10**5) tried to allocate 74.5 GiB)."""
    p = check_int(p, "p", owner, min_val=min_val)
    if p > MAX_P:
        raise DataError(f"p = {p} is too large for {owner}: each of its dense (p + 1) x "
                        f"(p + 1) matrices takes {8 * (p + 1) ** 2 / 2**30:.1f} GiB; p <= "
                        f"{MAX_P} is supported (for larger designs accumulate Moments from "
                        "data in blocks).")
    return p


def eq33(p: int = 10, variant: Literal["text", "code"] = "text") -> LinearSEM:
    """Section 6, eq. (33): four environments, ``beta* = (0.5, 0, -0.5, 0, ..., 0)``.

    ``variant="text"``: as printed, ``X4 = Y + e4``, ``X5 = -Y + e5``;
    ``delta^1_{1:5} = 0``, ``delta^2_{1:5} ~ N(0, 9)``, ``delta^3_{1:5} = (1, 1.5, 2, 2.5, 3)``,
    ``delta^4_{1:5} ~ U(-0.5, 0.5)``, ``delta^e_{6:p} ~ N(0, e^2/4)`` for ``e = 1..4``.

    ``variant="code"``: the authors' public code, ``X4 = 0.5 Y``, ``X5 = -0.5 Y``,
    ``delta^3_{1:5} = (1, 2, -1, -2, 1)``, ``delta^4_{1:5} ~ U(-1, 1)``, irrelevant
    coordinates with variance ``0.25 e^2`` for ``e = 0..3``.
    """
    p = _check_p(p, "eq33", min_val=5)
    if variant not in ("text", "code"):
        raise DataError(f"variant must be 'text' or 'code'; got {variant!r}.")
    text = variant == "text"
    shift3 = np.array([1.0, 1.5, 2.0, 2.5, 3.0] if text else [1.0, 2.0, -1.0, -2.0, 1.0])
    half_width4 = 0.5 if text else 1.0
    first5 = [(np.zeros(5), np.zeros(5), "normal"),
              (np.zeros(5), np.full(5, 9.0), "normal"),
              (shift3, np.zeros(5), "normal"),
              (np.zeros(5), np.full(5, half_width4**2 / 3.0), "uniform")]
    ivs = []
    for e, (mean5, var5, dist5) in enumerate(first5):
        k = e + 1 if text else e                                 # e = 1..4 or 0..3
        var = np.concatenate([var5, np.full(p - 5, 0.25 * k**2)])
        ivs.append(Intervention(np.concatenate([mean5, np.zeros(p - 5)]), np.diag(var),
                                dist=[dist5] * 5 + ["normal"] * (p - 5)))
    B = _eq33_B(p, 1.0 if text else 0.5)
    return LinearSEM(B, np.eye(p + 1), ivs)


def appendix_f2(p: int = 10) -> LinearSEM:
    """Appendix F.2: eq. (33)'s equations with a hidden confounder ``H ~ N(0, 1)``.

    ``eps_Y = N(0,1) + 0.5 H``, ``eps_1^e = N(0,1) + (0.5 + 0.2 e) H + delta_1^e``,
    ``eps_j^e = N(0,1) + delta_j^e`` (j >= 2), with ``delta^1_{1:5} = 0``,
    ``delta^2_{1:5} ~ N(0, 9)``, ``delta^3_{1:5} = (1, 2, -1, -2, 1)``,
    ``delta^4_{1:5} ~ U(-1, 1)``, ``delta^e_{6:p} ~ N(0, 0.25 e^2)``, ``e = 1..4``.
    The loading of H on ``X1`` depends on e, so ``E[eta delta^T] != 0`` and the design is
    not additive in the sense of (12): Lemma 1 and Condition 6 do not apply to it.
    """
    if p < 5:
        raise DataError(f"Appendix F.2 needs p >= 5 covariates; got p = {p}.")
    shifts = [np.zeros(5), np.zeros(5), np.array([1.0, 2.0, -1.0, -2.0, 1.0]), np.zeros(5)]
    var5 = [np.zeros(5), np.full(5, 9.0), np.zeros(5), np.full(5, 1.0 / 3.0)]
    dist5 = ["normal", "normal", "normal", "uniform"]
    means, loadings, dists = [], [], []
    for k in range(1, 5):
        # z = (N_Y, N_1..N_p, H, u_1..u_p)
        L = np.zeros((p + 1, 2 * p + 2))
        L[:, : p + 1] = np.eye(p + 1)
        L[0, p + 1] = 0.5
        L[1, p + 1] = 0.5 + 0.2 * k
        sd = np.sqrt(np.concatenate([var5[k - 1], np.full(p - 5, 0.25 * k**2)]))
        L[1:, p + 2 :] = np.diag(sd)
        means.append(np.concatenate([[0.0], shifts[k - 1], np.zeros(p - 5)]))
        loadings.append(L)
        dists.append(["normal"] * (p + 2) + [dist5[k - 1]] * 5 + ["normal"] * (p - 5))
    return LinearSEM.from_noise_factors(_eq33_B(p, 1.0), means, loadings, dists)


def random_sem(
    p: int = 30,
    *,
    n_envs: int = 5,
    n_parents: int = 3,
    n_children: int = 3,
    weak_effects: tuple[float, ...] = (),
    confounding: bool = False,
    edge_prob: float | None = None,
    intervened: float = 1.0,
    strong_env: bool = False,
    shift: Literal["both", "mean", "variance"] = "both",
    shift_downstream: bool = False,
    shift_children: bool = False,
    rng: int | np.random.Generator | None = None,
) -> LinearSEM:
    """A random acyclic linear SEM with additive interventions, for studies on designs
    that nobody tuned on.

    The covariates are split at random into an upstream half (ancestors-to-be) and a
    downstream half; ``Y`` sits between them.  ``n_parents`` upstream covariates cause
    ``Y`` with coefficients ``+-U(0.5, 1.5)``, ``len(weak_effects)`` more cause it with
    the given *standardised* effects ``|beta_j| d_j / s_y`` (root mean squares averaged
    over environments, the scale of :meth:`Moments.scales`), and ``n_children``
    downstream covariates are children of ``Y`` (``+-U(0.5, 1.5)``).  Other edges go
    forward in that order with probability ``edge_prob`` (default ``2 / p``), with
    coefficients ``+-U(0.3, 1)``.  Noise variances are ``U(0.5, 1.5)``; ``confounding``
    adds a hidden factor loading ``0.8`` on ``Y`` and ``+-U(0.5, 1)`` on three random
    covariates (eq. (12) with non-diagonal ``Omega``).  Environment 1 is observational;
    a share ``intervened`` of the covariates (default all) is shifted in one or two of
    the other environments, as ``shift`` says.  With the default shifts no weighting of
    the environments need dominate their average in every direction: Condition 1b's
    margin is often tiny (relative 1e-5 to 1e-3).

    Parameters
    ----------
    p : int, default 30
        Number of covariates.
    n_envs : int, default 5
        Number of environments (at least 2); the first is observational.
    n_parents : int, default 3
        Causes of ``Y`` with coefficients ``+-U(0.5, 1.5)``.
    n_children : int, default 3
        Children of ``Y``.
    weak_effects : tuple of float, default ()
        Standardised effects of further, weak causes of ``Y``.
    confounding : bool, default False
        Add a hidden factor on ``Y`` and three covariates.
    edge_prob : float, optional
        Probability of each forward edge among the covariates; default ``2 / p``.
    intervened : float, default 1.0
        Share of the covariates that are shifted in some environment.
    strong_env : bool, default False
        Add variance ``U(1, 2)`` to every covariate in the last environment, so that
        Condition 1b holds with a clear margin.
    shift : {"both", "mean", "variance"}, default "both"
        The law of each intervention ``delta^e_j`` on an intervened (covariate,
        environment) pair.  ``"both"``: variance ``U(0.5, 2)``, and a mean shift
        ``N(0, 1)`` with probability 0.3.  ``"mean"``: a mean shift ``N(0, 1)`` only
        (``Cov(delta^e) = 0``), so that ``A(w)`` of eq. (16) has rank below ``|E|`` and
        Condition 1b fails whenever ``p >= |E|``.  ``"variance"``: variance ``U(0.5, 2)``
        only (no mean shift).  The graph, coefficients and ``Omega`` do not depend on
        ``shift``.
    shift_downstream : bool, default False
        Shift every covariate of the downstream half (all descendants of ``Y`` among
        them) and only a share ``intervened`` of the upstream half: the limited
        interventions of Condition 4 (``D`` within ``S_L``; causes of ``Y`` may never be
        shifted).
    shift_children : bool, default False
        Shift every child of ``Y`` besides the share ``intervened`` of all covariates:
        sparse shifts that meet Condition 4's children part (``intervened`` of 0.02-0.1
        at p = 300-1,000: issue 68's experiments).  The other draws are those without it.
    rng : int or numpy Generator, optional
        Seed or generator; the same seed gives the same design.

    Returns
    -------
    LinearSEM
        Over ``(Y, X1, ..., Xp)``, with ``beta* = B[0, 1:]``.

    Raises
    ------
    DataError
        If there are too few upstream or downstream covariates, or ``n_envs < 2``.
    ValueError
        If ``shift`` is not one of "both", "mean", "variance".

    Examples
    --------
    >>> from negdro_stats import simulate
    >>> sem = simulate.random_sem(20, weak_effects=(0.05,), rng=1)
    >>> int((sem.beta_star != 0).sum()), len(sem.D)
    (4, 3)
    >>> sem = simulate.random_sem(20, n_envs=6, shift="mean", rng=1)
    >>> bool(sem.Delta.any()), sem.check_identification().condition_1b.holds
    (True, False)
    """
    shift = check_option(shift, "shift", "random_sem", ("both", "mean", "variance"))
    p = _check_p(p, "random_sem", min_val=2)
    n_envs = check_int(n_envs, "n_envs", "random_sem", min_val=2)
    rng = check_rng(rng, "rng", "random_sem")
    n_weak = len(weak_effects)
    half = p // 2
    if n_parents + n_weak > half or n_children > p - half or n_envs < 2:
        raise DataError(f"random_sem needs n_parents + len(weak_effects) <= p // 2 = {half}, "
                        f"n_children <= {p - half} and n_envs >= 2.")
    order = rng.permutation(p)                           # covariate j sits at order[.]
    up, down = order[:half], order[half:]
    edge_prob = 2.0 / p if edge_prob is None else edge_prob
    B = np.zeros((p + 1, p + 1))                         # (Y, X1..Xp); X_j is index j + 1
    for a in range(p):
        for b in range(a):
            if rng.random() < edge_prob:
                B[order[a] + 1, order[b] + 1] = rng.choice([-1, 1]) * rng.uniform(0.3, 1.0)
    parents = rng.choice(up, size=n_parents + n_weak, replace=False)
    children = rng.choice(down, size=n_children, replace=False)
    B[0, parents + 1] = rng.choice([-1, 1], size=len(parents)) * rng.uniform(
        0.5, 1.5, size=len(parents))
    B[children + 1, 0] = rng.choice([-1, 1], size=n_children) * rng.uniform(
        0.5, 1.5, size=n_children)
    Omega = np.diag(rng.uniform(0.5, 1.5, p + 1))
    if confounding:
        load = np.zeros(p + 1)
        load[0] = 0.8
        hit = rng.choice(p, size=min(3, p), replace=False)
        load[hit + 1] = rng.choice([-1, 1], size=len(hit)) * rng.uniform(0.5, 1.0, len(hit))
        Omega += np.outer(load, load)
    ivs = [Intervention.none(p)]
    var, mean = np.zeros((n_envs, p)), np.zeros((n_envs, p))
    shifted = rng.random(p) < intervened
    if shift_downstream:
        shifted[down] = True
    if shift_children:
        shifted[children] = True
    for j in np.flatnonzero(shifted):
        for e in rng.choice(np.arange(1, n_envs), size=min(n_envs - 1, rng.integers(1, 3)),
                            replace=False):
            if shift != "mean":
                var[e, j] = rng.uniform(0.5, 2.0)
            if shift == "mean":
                mean[e, j] = rng.normal()
            elif shift == "both":
                mean[e, j] = rng.normal() if rng.random() < 0.3 else 0.0
    if strong_env:
        var[-1] += rng.uniform(1.0, 2.0, p)
    ivs += [Intervention(mean[e], np.diag(var[e])) for e in range(1, n_envs)]
    sem = LinearSEM(B, Omega, ivs)
    weak = parents[n_parents:]
    for _ in range(50 if n_weak else 0):                 # fixed point: s_y depends on beta
        d, s_y = sem.moments().scales()
        target = np.sign(B[0, weak + 1]) * np.asarray(weak_effects) * s_y / d[weak]
        if np.allclose(B[0, weak + 1], target, rtol=1e-10, atol=0):
            break
        B[0, weak + 1] = target
        sem = LinearSEM(B, Omega, ivs)
    return sem


def dense_second_moments(p: int, n_envs: int = 4, rng: int | np.random.Generator = 0
                         ) -> np.ndarray:
    """Random dense per-environment second moments (E, p, p) for testing the conditions.

    A shared part ``L L^T / p + I``, plus in every environment a rank-5 intervention
    ``2 K K^T / p``; the last environment's is full rank and gets ``3 I`` on top, so that
    Condition 1b holds with a clear margin.
    """
    rng = np.random.default_rng(rng)
    L = rng.normal(size=(p, p)) / np.sqrt(p)
    shared = L @ L.T + np.eye(p)
    out = []
    for e in range(n_envs):
        last = e == n_envs - 1
        K = rng.normal(size=(p, p if last else 5)) / np.sqrt(p)
        out.append(shared + 2.0 * K @ K.T + (3.0 * np.eye(p) if last else 0.0))
    return np.stack(out)


def _mechanism(law: str, u: np.ndarray, source: np.ndarray) -> np.ndarray:
    """A parent of :func:`misspecified_sensors` from its source mix ``u``."""
    if law == "tanh":
        return 1.5 * np.tanh(u)
    if law == "cos2":
        return 2.0 * np.cos(0.8 * u) ** 2
    return u * (1.0 + 0.3 * source) if law == "product" else u


def misspecified_sensors(n: int = 2000, *, seed: int = 0,
                         ) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Sensor data that no linear SEM describes: rows of the four
    training environments :data:`SENSOR_TRAIN` and of the three held-out ones
    :data:`SENSOR_HELD_OUT`, and the design's facts.

    ``seed`` draws a design: two uniform sources ``L`` (unobserved); 2-4 parents, each
    a mechanism of a linear combination ``u`` of the sources -- linear, saturating
    (``1.5 tanh u``), a cos^2 law (``2 cos^2(0.8 u)``) or multiplicative (``u (1 + 0.3
    L_1)``) -- plus noise, never intervened on; ``Y`` linear in them plus a product of
    two; 2-4 siblings that read the sources (linearly, through ``tanh`` or squared)
    with a gain and a noise scale set by the environment; 1-2 children of ``Y`` with
    additive shifts; 1-3 unshifted noise covariates.  The parents' distribution and
    ``Y``'s mechanism are the same everywhere, so OLS on the parents has invariant
    risk; the linear model's misfit correlates with the siblings, whose moments move
    with their gains.

    Returns ``(train, held_out, facts)``: frames with ``Y``, ``X1..Xp`` (parents,
    siblings, children, noise, in that order) and ``env``; ``facts`` has ``kinds`` (each
    covariate's role), ``mechanisms`` and ``parents`` (their names)."""
    n = check_int(n, "n", "misspecified_sensors", min_val=2)
    rng = np.random.default_rng(check_int(seed, "seed", "misspecified_sensors"))
    k, m, c, z = (int(rng.integers(lo, hi)) for lo, hi in ((2, 5), (2, 5), (1, 3), (1, 4)))
    d = dict(beta=rng.choice([-1, 1], k) * rng.uniform(0.5, 1.2, k),
             loads=rng.normal(0, 1, (2, k)), mechanisms=rng.choice(_LAWS, k).tolist(),
             interaction=0.4 * rng.choice([-1, 1]), sibling_loads=rng.normal(0, 1, (2, m)),
             sibling_laws=rng.choice(["linear", "tanh", "square"], m).tolist(),
             child_gains=rng.choice([-1, 1], c) * rng.uniform(0.5, 1.0, c))
    rows = np.random.default_rng(10_000 + seed)
    kinds = ["parent"] * k + ["sibling"] * m + ["child"] * c + ["noise"] * z
    names = [f"X{j + 1}" for j in range(len(kinds))]

    def frame(exposures) -> pd.DataFrame:
        parts = []
        for e, (gain, noise, shift) in enumerate(exposures):
            L = rows.uniform(-1.5, 1.5, (n, 2))
            u = L @ d["loads"]
            P = np.column_stack([_mechanism(law, u[:, j], L[:, 0])
                                 for j, law in enumerate(d["mechanisms"])])
            P += 0.5 * rows.standard_normal(P.shape)
            y = (P @ d["beta"] + d["interaction"] * P[:, 0] * P[:, -1]
                 + 0.5 * rows.standard_normal(n))
            v = L @ d["sibling_loads"]
            reads = {"linear": lambda s: s, "tanh": np.tanh, "square": np.square}
            S = np.column_stack([reads[r](v[:, j]) for j, r in enumerate(d["sibling_laws"])])
            S = gain * S + 0.4 * noise * rows.standard_normal(S.shape)
            C = (np.outer(y, d["child_gains"]) + 0.5 * rows.standard_normal((n, c))
                 + shift * (1.0 + rows.standard_normal((n, c))))
            X = np.column_stack([P, S, C, rows.standard_normal((n, z))])
            part = pd.DataFrame(X, columns=names)
            part.insert(0, "Y", y)
            part["env"] = e
            parts.append(part)
        return pd.concat(parts, ignore_index=True)

    train, held_out = frame(SENSOR_TRAIN), frame(SENSOR_HELD_OUT)
    return train, held_out, dict(kinds=dict(zip(names, kinds, strict=True)),
                                 mechanisms=d["mechanisms"], parents=names[:k])


def shifted_parents_sensors(n: int = 2000, *, seed: int = 0, parent_shift: float = 1.0,
                            ) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Sensor data that no linear SEM describes, with the outcome's parents shifted: rows of
    four training environments and three held-out ones, and the design's facts.

    ``seed`` draws a design: 4-7 parents, inputs set by the experimenter (uniform on
    [-1.5, 1.5]); ``Y`` a sum of their mechanisms -- linear, saturating (``1.5 tanh``), a
    cos^2 law (``2 cos^2(0.8 x)``) or a gain (``x (1 + 0.3 x')``, ``x'`` another parent)
    -- plus a product of two of them and noise; 2-4 siblings, sensors that read the same
    mechanisms with loadings of their own (some through ``tanh``), a gain and a noise
    scale set by the environment; 1-2 children of ``Y`` with additive shifts; 1-3
    noise covariates.  In training, three parents are shifted (their means moved by
    ``parent_shift`` times 1-1.5, or their spread multiplied by ``1 + parent_shift``; one
    or two parents an environment) and the siblings' gains (:data:`SHIFTED_TRAIN`); the
    held-out environments leave the
    parents as in the first (observational) one and move only the siblings' gains
    (:data:`SENSOR_HELD_OUT`) and the children.  No linear model is exactly invariant
    (the linear misfit of ``Y`` on its parents moves with their distribution); OLS on
    the parents loses little out of sample, a fit that reads the siblings a great deal.

    Returns ``(train, held_out, facts)`` as :func:`misspecified_sensors`, ``facts`` with
    ``shifted`` too: the parents some training environment shifts."""
    n = check_int(n, "n", "shifted_parents_sensors", min_val=2)
    parent_shift = check_scalar(parent_shift, "parent_shift", "shifted_parents_sensors",
                                min_val=0)
    rng = np.random.default_rng(check_int(seed, "seed", "shifted_parents_sensors"))
    k, m, c, z = (int(rng.integers(lo, hi)) for lo, hi in ((4, 8), (2, 5), (1, 3), (1, 4)))
    beta = rng.choice([-1, 1], k) * rng.uniform(0.5, 1.2, k)
    laws = rng.choice(["linear", "tanh", "cos2", "gain"], k)
    other = (np.arange(k) + 1 + rng.integers(0, k - 1, k)) % k     # a gain's other parent
    pair = rng.choice(k, 2, replace=False)
    product = 0.5 * rng.choice([-1, 1])
    loads = rng.uniform(0.3, 1.5, (m, k)) * (rng.random((m, k)) < 0.7)
    saturates = rng.random(m) < 0.5
    child_gains = rng.choice([-1, 1], c) * rng.uniform(0.5, 1.0, c)
    moved = rng.choice(k, 3, replace=False)
    shifts = np.zeros((len(SHIFTED_TRAIN), k, 2))              # (mean shift, spread) per env
    shifts[:, :, 1] = 1.0
    for e in range(1, len(SHIFTED_TRAIN)):
        for j in rng.choice(moved, int(rng.integers(1, 3)), replace=False):
            if rng.random() < 0.5:
                shifts[e, j, 0] = parent_shift * rng.choice([-1, 1]) * rng.uniform(1.0, 1.5)
            else:
                shifts[e, j, 1] = 1.0 + parent_shift
    rows = np.random.default_rng(20_000 + seed)
    kinds = ["parent"] * k + ["sibling"] * m + ["child"] * c + ["noise"] * z
    names = [f"X{j + 1}" for j in range(len(kinds))]

    def mechanisms(P: np.ndarray) -> np.ndarray:
        law = {"linear": lambda j: P[:, j], "tanh": lambda j: 1.5 * np.tanh(P[:, j]),
               "cos2": lambda j: 2.0 * np.cos(0.8 * P[:, j]) ** 2,
               "gain": lambda j: P[:, j] * (1.0 + 0.3 * P[:, other[j]])}
        return np.column_stack([law[str(laws[j])](j) for j in range(k)])

    def frame(exposures, parent_shifts) -> pd.DataFrame:
        parts = []
        for e, (gain, noise, shift) in enumerate(exposures):
            P = (parent_shifts[e, :, 0]
                 + parent_shifts[e, :, 1] * rows.uniform(-1.5, 1.5, (n, k)))
            G = mechanisms(P) * beta
            y = (G.sum(axis=1) + product * P[:, pair[0]] * P[:, pair[1]]
                 + 0.5 * rows.standard_normal(n))
            S = G @ loads.T
            S[:, saturates] = 2.0 * np.tanh(S[:, saturates] / 2.0)
            S = gain * S + 0.4 * noise * rows.standard_normal((n, m))
            C = (np.outer(y, child_gains) + 0.5 * rows.standard_normal((n, c))
                 + shift * (1.0 + rows.standard_normal((n, c))))
            part = pd.DataFrame(np.column_stack([P, S, C, rows.standard_normal((n, z))]),
                                columns=names)
            part.insert(0, "Y", y)
            part["env"] = e
            parts.append(part)
        return pd.concat(parts, ignore_index=True)

    observational = np.broadcast_to(shifts[0], (len(SENSOR_HELD_OUT), k, 2))
    train, held_out = frame(SHIFTED_TRAIN, shifts), frame(SENSOR_HELD_OUT, observational)
    return train, held_out, dict(kinds=dict(zip(names, kinds, strict=True)),
                                 mechanisms=[str(x) for x in laws], parents=names[:k],
                                 shifted=[names[j] for j in range(k) if np.any(
                                     shifts[:, j] != shifts[0, j])])


# light_tunnel's environments: (sibling exposure gain, sibling noise scale, shift of the
# children, shift of the noise covariates); the held-out ones move them strongly
TUNNEL_TRAIN = ((1.0, 1.0, 0.0, 0.0), (1.4, 1.2, 0.5, 0.0), (0.7, 1.1, -0.5, 0.0),
                (1.2, 1.4, 1.0, 0.0))
TUNNEL_HELD_OUT = ((3.0, 2.0, 3.0, 2.0), (0.25, 2.5, -2.5, -2.0), (2.2, 3.0, 4.0, 3.0))


def light_tunnel(n: int = 2000, *, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """A light tunnel that no linear SEM describes, its parents shifted in training: rows
    of four training environments and three held-out ones, and the design's facts.

    ``seed`` draws a design.  Parents: LED brightnesses ``R, G, B`` (uniform on [0, 1]),
    two polariser angles ``th1, th2`` and 2-3 lamps ``L`` past the polarisers; the light
    at the outcome's sensor ``I = (a R + b G + c B) cos^2(th1 - th2) + d^T L`` (Malus's
    law), ``Y = y_max tanh(I / y_max)`` (a saturating sensor) plus noise.  Siblings (2-3):
    sensors that read the same light with weights, an angle offset and a saturation of
    their own (some before the second polariser), times an exposure gain set by the
    environment; children (1-2): an amplifier's current, linear in ``Y`` or in ``tanh
    Y``, shifted; 1-2 noise covariates.  In training three parents are shifted (a
    brightness or lamp range cut to a part of [0, 1], an angle range moved or widened;
    one or two an environment) and the siblings' gains moderately (:data:`TUNNEL_TRAIN`);
    the held-out environments keep the parents as in the first and move the siblings'
    gains, the children and the noise covariates strongly (:data:`TUNNEL_HELD_OUT`).

    Returns ``(train, held_out, facts)`` as :func:`shifted_parents_sensors`."""
    n = check_int(n, "n", "light_tunnel", min_val=2)
    rng = np.random.default_rng(check_int(seed, "seed", "light_tunnel"))
    lamps, m, c = (int(rng.integers(lo, hi)) for lo, hi in ((2, 4), (2, 4), (1, 3)))
    k = 5 + lamps
    z = max(1, min(int(rng.integers(1, 3)), 14 - k - m - c))
    rgb, d = rng.uniform(0.5, 2.0, 3), rng.uniform(0.3, 1.2, lamps)
    y_max, noise_sd = rng.uniform(1.5, 3.5), rng.uniform(0.1, 0.3)
    low = rng.uniform(0.0, np.pi / 4)
    base = np.array([(0.0, 1.0)] * 3 + [(0.0, np.pi / 3), (low, low + np.pi / 3)]
                    + [(0.0, 1.0)] * lamps)
    sib_rgb = rng.uniform(0.2, 2.0, (m, 3))                       # the siblings' sensors
    sib_lamps = rng.uniform(0.0, 1.2, (m, lamps)) * (rng.random((m, lamps)) < 0.7)
    malus, offset = rng.random(m) < 0.7, rng.uniform(-0.3, 0.3, m)
    saturates, top = rng.random(m) < 0.6, rng.uniform(1.5, 3.5, m)
    child_gains = rng.choice([-1, 1], c) * rng.uniform(0.5, 1.5, c)
    child_tanh = rng.random(c) < 0.3
    moved = rng.choice(k, 3, replace=False)
    ranges = np.repeat(base[None], len(TUNNEL_TRAIN), axis=0)
    for e in range(1, len(TUNNEL_TRAIN)):
        for j in rng.choice(moved, int(rng.integers(1, 3)), replace=False):
            lo, hi = base[j]
            if j in (3, 4):                                   # an angle
                ranges[e, j] = (base[j] + rng.choice([-1, 1]) * rng.uniform(0.25, 0.45)
                                if rng.random() < 0.6 else (lo - 0.3 * (hi - lo),
                                                            hi + 0.3 * (hi - lo)))
            else:                                             # a brightness
                u = rng.random()
                ranges[e, j] = (0.45, 1.0) if u < 0.4 else (0.0, 0.55) if u < 0.8 else (
                    0.3, 0.7)
    rows = np.random.default_rng(30_000 + seed)
    kinds = ["parent"] * k + ["sibling"] * m + ["child"] * c + ["noise"] * z
    names = [f"X{j + 1}" for j in range(len(kinds))]

    def frame(exposures, limits) -> pd.DataFrame:
        parts = []
        for e, (gain, noise, shift, drift) in enumerate(exposures):
            P = rows.uniform(limits[e, :, 0], limits[e, :, 1], (n, k))
            colour, angle, L = P[:, :3], P[:, 3] - P[:, 4], P[:, 5:]
            y = (y_max * np.tanh(((colour @ rgb) * np.cos(angle) ** 2 + L @ d) / y_max)
                 + noise_sd * rows.standard_normal(n))
            light = (colour @ sib_rgb.T
                     * np.where(malus, np.cos(angle[:, None] + offset) ** 2, 1.0)
                     + L @ sib_lamps.T)
            light = np.where(saturates, top * np.tanh(light / top), light)
            S = gain * light + 0.15 * noise * rows.standard_normal((n, m))
            C = (np.where(child_tanh, np.tanh(y)[:, None], y[:, None]) * child_gains
                 + 0.3 * rows.standard_normal((n, c))
                 + shift * (1.0 + 0.5 * rows.standard_normal((n, c))))
            Z = drift + (1.0 + 0.3 * abs(drift)) * rows.standard_normal((n, z))
            part = pd.DataFrame(np.column_stack([P, S, C, Z]), columns=names)
            part.insert(0, "Y", y)
            part["env"] = e
            parts.append(part)
        return pd.concat(parts, ignore_index=True)

    train = frame(TUNNEL_TRAIN, ranges)
    held_out = frame(TUNNEL_HELD_OUT, np.repeat(ranges[:1], len(TUNNEL_HELD_OUT), axis=0))
    return train, held_out, dict(kinds=dict(zip(names, kinds, strict=True)),
                                 mechanisms=["Malus", "saturating"], parents=names[:k],
                                 shifted=[names[j] for j in range(k) if np.any(
                                     ranges[:, j] != base[j])])
