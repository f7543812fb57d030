"""The search behind :meth:`LinearSEM.suggest_interventions
<negdro_stats.planning.design.LinearSEM.suggest_interventions>`: the smallest set ``T`` of
covariates whose independent shifts, of variance ``v`` each, in one added environment make a
planned design meet its target.

A candidate is decided by the design check itself (the registered conditions'
``check`` on the population moments, each at its relative tolerance
:data:`~negdro_stats.identification.conditions.DEFAULT_TOL`), so the advice, applied, passes
:meth:`LinearSEM.check_identification
<negdro_stats.planning.design.LinearSEM.check_identification>`.  Only the check's
decisions choose the set, never the size of a margin (which a small change of the design
can reorder): the advice moves only where a candidate's margin crosses the tolerance.

Screens.  Every check costs one SDP (about 40 ms at p = 10).  By Lemma 1 a design's
second moments are ``Sigma_e = G^T (H + Delta_e) G`` with ``Delta_e = E[delta^e
delta^eT]``, so whatever the interventions cannot move, no condition can use.  With
``M(T) = sum_e Delta_e + v I_T`` (the new environment included), the conditions need

- 1b: ``M(T)`` positive definite (a direction ``x`` with ``x^T M(T) x = 0`` has
  ``x^T Delta(w) x = 0`` for every ``w``);
- 4: ``D`` within ``S_L`` and ``T``, and ``M(T)`` positive definite on them;
- 6: ``h`` in the range of ``M(T)`` (the range of ``Delta(w)`` lies in it).

These are cheap (one eigendecomposition), grow with ``T`` (a superset of a set that passes
passes), and refuse only what the check refuses: an eigenvalue of ``M(T)`` counts as zero
below ``KERNEL`` times the largest, a hundredth of the checks' relative tolerance (1e-7;
Condition 1b's is on the covariates' scale, which ``G`` changes, so a design whose ``G``
amplifies it more than a hundredfold could see a set refused), and ``h`` counts as
outside the range when more than ``OUTSIDE`` of its norm is (the check of Condition 6
refuses 1e-6).  The covariates without which a condition's screen fails are *required*
for it: every candidate for that condition contains them.

Search.  Sizes increase from the smallest required set; within a size, candidates run in
the covariates' order (the first that works is the advice: ties are broken by that order,
not by margins).  Exact when at most ``max_exhaustive`` covariates are free (not required)
for every condition aimed at: at p = 10 with one unshifted covariate, 2^9 candidates at
most, and usually a handful, because the search stops at the first size that works.
Beyond, the search is exact up to one covariate beyond the required ones (a set found
there is the smallest, and says so), then drops covariates one at a time from the set of
all (last first) while the target still holds: the result is minimal in that no covariate
of it can be dropped.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._typing import FloatArray

__all__ = ["KERNEL", "OUTSIDE", "screens", "smallest_set"]

KERNEL = 1e-9      # eigenvalue of M(T), relative to its largest, counted as zero
OUTSIDE = 1e-3     # share of ||h|| outside range(M(T)) that rules Condition 6 out

Screen = Callable[[tuple[int, ...]], bool]


def screens(Delta: FloatArray, h: FloatArray, S_L: np.ndarray, D: np.ndarray,
            variance: float) -> dict[str, Screen]:
    """The necessary conditions of the module docstring for Conditions 1b, 4 and 6, as
    functions of ``T`` (0-based covariate indices); conditions not listed have none."""
    total = Delta.sum(axis=0)

    def moved(T: tuple[int, ...]) -> tuple[FloatArray, FloatArray]:
        M = total.copy()
        M[T, T] += variance
        return np.linalg.eigh(M)

    def kernel(vals: FloatArray, vecs: FloatArray) -> FloatArray:
        return vecs[:, vals <= KERNEL * max(float(vals[-1]), 1e-300)]

    def one_b(T: tuple[int, ...]) -> bool:
        return kernel(*moved(T)).shape[1] == 0

    def four(T: tuple[int, ...]) -> bool:
        S = sorted(set(S_L) | set(T))
        if not S or not set(D) <= set(S):
            return False
        M = total[np.ix_(S, S)] + variance * np.diag(np.isin(S, T))
        vals = np.linalg.eigvalsh(M)
        return bool(vals[0] > KERNEL * vals[-1])

    def six(T: tuple[int, ...]) -> bool:
        outside = kernel(*moved(T)).T @ h
        return bool(np.linalg.norm(outside) <= OUTSIDE * np.linalg.norm(h))

    return {"1b": one_b, "4": four, "6": six}


def _required(screen: Screen, p: int) -> tuple[int, ...]:
    """The covariates every set passing ``screen`` contains (the screen grows with T)."""
    return tuple(j for j in range(p) if not screen(tuple(i for i in range(p) if i != j)))


def smallest_set(
    p: int, aims: Sequence[str], screen: dict[str, Screen],
    evaluate: Callable[[tuple[int, ...], list[str]], Any], max_exhaustive: int,
) -> tuple[tuple[int, ...], Any, bool] | None:
    """The search of the module docstring.

    Parameters
    ----------
    p : int
        Number of covariates.
    aims : sequence of str
        The conditions aimed at (any one of them will do), in the registry's order.
    screen : dict
        Necessary conditions by name (:func:`screens`); an aim without one has none.
    evaluate : callable ``(T, names) -> found or None``
        Checks the design with ``T`` shifted on the conditions ``names`` (those whose
        screens pass) and returns what the caller needs where one of them holds.
    max_exhaustive : int
        The largest number of free covariates for which the search is exact.

    Returns
    -------
    tuple ``(T, found, exhaustive)``, or None when shifting every covariate fails.
    """
    passes = {c: screen.get(c, lambda T: True) for c in aims}
    memo: dict[tuple[int, ...], Any] = {}

    def attempt(T: tuple[int, ...]) -> Any:
        if T not in memo:
            names = [c for c in aims if passes[c](T)]
            memo[T] = evaluate(T, names) if names else None
        return memo[T]

    everything = tuple(range(p))
    if attempt(()) is not None:
        return (), memo[()], True
    if attempt(everything) is None:
        return None
    required = {c: _required(passes[c], p) for c in aims}
    exhaustive = all(p - len(R) <= max_exhaustive for R in required.values())
    top = {c: p if exhaustive else min(len(R) + 1, p) for c, R in required.items()}
    for k in range(1, max(top.values()) + 1):
        sizes = {tuple(sorted(R + extra)) for c, R in required.items() if len(R) <= k <= top[c]
                 for extra in itertools.combinations(
                     [j for j in everything if j not in R], k - len(R))}
        for T in sorted(sizes):
            if attempt(T) is not None:     # exact if every smaller size was searched
                return T, memo[T], all(k - 1 <= top[c] for c in aims)
    T = everything
    for j in reversed(everything):
        fewer = tuple(i for i in T if i != j)
        if attempt(fewer) is not None:
            T = fewer
    return T, memo[T], False
