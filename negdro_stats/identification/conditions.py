"""Identification conditions as semidefinite programmes: Conditions 1a/1b, 4 and 6.

Each check maximises a smallest eigenvalue over the simplex of environment weights:

    Condition 1b (16):  lam = max_{w in simplex} lambda_min(A(w)),
                        A(w) = sum_e (w_e - 1/|E|) Sigma_e,
    Condition 4:        max_w min{ lambda_min([Delta(w)]_{S_L,S_L}),
                                   lambda_min(sum_e w_e Sigma_e) }   and D subset S_L,
    Condition 6:        max_w t  s.t.  Delta(w) >= t h h^T / ||h||^2,
                                       H + sum_e w_e E[delta delta^T] >= t I,

with Delta(w) = sum_e (w_e - 1/|E|) E[delta^e delta^eT] (30).  The condition holds when
the optimum is positive.  Condition 6 asks for Delta(w) >= 0 with h in the span of its
positive eigenvectors (57); for a PSD matrix that span is range(Delta(w)), and
``h in range(Delta)`` holds iff ``Delta >= t h h^T`` for some ``t > 0`` (write
``Delta = V L V^T``; then ``t = 1 / (h^T Delta^+ h)`` works, and conversely
``Delta >= t h h^T`` forces ``h`` orthogonal to the kernel), so Condition 6 is the linear
SDP above.  (56) is ``H + sum_e w_e E[delta delta^T] > 0``.

Two solution paths, reported in the result:

``"sdp"``
    cvxpy, the epigraph form ``max t s.t. sum_e w_e M_e + C >= t N`` (CLARABEL, falling
    back to SCS), the matrices scaled to unit spectral norm first so that solver
    tolerances mean the same at any data scale.  The margin is then recomputed with
    numpy at the returned weights.
``"cutting-plane"``
    for p beyond ``SDP_MAX_DIM`` = 30 by default: ``w -> lambda_min(A(w))`` is
    concave with supergradient ``(v^T M_e v)_e`` (v the bottom eigenvector), so Kelley's
    cutting-plane method over the |E|-simplex (one LP per step, HiGHS) converges with an
    explicit optimality gap (upper bound from the LP, lower bound from the best point).
    Each step needs one extreme eigenpair (dense ``eigh`` up to p = 2000, Lanczos
    beyond; the margin at the returned weights is always re-checked densely).
    Measured (benchmarks/bench_conditions.py): on a dense p = 100 design the SDP takes
    19 s and the cutting planes 0.02 s, with margins equal to 1e-10 relative.
    Condition 6 beyond ``SDP_MAX_DIM`` takes the same path with feasibility cuts
    (:func:`_condition_6_planes`): its 2p x 2p SDP takes 41 s and 2.8 GB at p = 60 and
    runs out of 24 GB at p = 120, where the cuts take 0.4 s.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import linalg, optimize
from scipy.sparse.linalg import ArpackNoConvergence, eigsh

from .._json import jsonable
from .._typing import FloatArray
from ..data.moments import Moments, block
from ..exceptions import SolverError

__all__ = [
    "CONDITIONS",
    "Certificate1a",
    "Condition",
    "IdentificationResult",
    "check_condition_1b",
    "check_condition_4",
    "check_condition_6",
    "max_min_eigenvalue",
    "SDP_MAX_DIM",
]

SDP_MAX_DIM = 30
POLISH_STEPS = 6          # Newton steps of _polish
MET = 1e-12              # bounds of a margin this close (relative) have met: its value
# Clarabel's chordal decomposition panicked (a Rust index error, not a Python exception)
# on Condition 6's block-diagonal SDP of a p = 41 design; the SDPs here are dense blocks
CLARABEL_SETTINGS = {"chordal_decomposition_enable": False}
DEFAULT_TOL = 1e-7


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Certificate1a:
    """Condition 1a (14) from the maximiser w0 of Condition 1b (proof of Proposition 1).

    ``E1 = {e : w0_e > 1/|E|}``, ``E2 = {e : w0_e < 1/|E|}``, weights proportional to
    ``|w0_e - 1/|E||`` within each group; then
    ``sum_{E1} w_e Sigma_e - sum_{E2} w'_f Sigma_f = A(w0) / s`` with
    ``s = sum_{E1} (w0_e - 1/|E|)``, and ``lambda_min`` of that difference is verified.
    """

    E1: tuple
    E2: tuple
    w: FloatArray
    w_prime: FloatArray
    lambda_min: float

    def __str__(self) -> str:
        a = " + ".join(f"{x:.3g}*Sigma[{e!r}]" for e, x in zip(self.E1, self.w, strict=True))
        b = " + ".join(f"{x:.3g}*Sigma[{e!r}]" for e, x in zip(self.E2, self.w_prime,
                                                                 strict=True))
        return f"{a}  -  ({b})  has smallest eigenvalue {self.lambda_min:.3g}"


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class IdentificationResult:
    """Outcome of an identification check (Condition 1b, 4 or 6 of the paper).

    Attributes
    ----------
    condition : str
        Its name in :data:`CONDITIONS` (``"1b"``, ``"4"``, ``"6"``).
    holds : bool
        ``relative_margin > tol`` (and, for Condition 4, ``D`` within ``S_L``).
    margin : float
        For 1b: ``lambda_min(A(w0))`` of (16) in the units of the second moments, at the
        weights ``w0`` that maximise the relative margin (a lower bound of the paper's
        lambda, with the same sign as ``relative_margin``).  For 4 and 6: equal to
        ``relative_margin`` (their two requirements are on different scales; the raw
        smallest eigenvalues at ``w0`` are in ``extras``).
    relative_margin : float
        The optimum on the scale-free problem, which the verdict uses: for 1b, the
        second moments of the covariates standardised to unit root mean square, divided
        by the spectral norm of their average (invariant to rescaling any covariate);
        for 4 and 6, each requirement's matrix divided by the spectral norm of its
        average.
    weights : ndarray
        The maximising weights w0.
    envs : tuple
        Environment labels of the weights.
    certificate : Certificate1a or None
        For Condition 1b when it holds.
    failing : tuple of str
        Which requirements fail, in words (empty when the condition holds).
    path, solver, status : str
        ``"sdp"`` or ``"cutting-plane"``; the solver used; its final status.
    gap : float
        Upper bound minus the achieved relative margin (cutting-plane path; 0 for the SDP).
    tol : float
    source : {"sample", "population"}
    """

    condition: str
    holds: bool
    margin: float
    relative_margin: float
    weights: FloatArray
    envs: tuple
    certificate: Certificate1a | None
    failing: tuple[str, ...]
    path: str
    solver: str
    status: str
    gap: float
    tol: float
    source: str
    extras: dict = field(default_factory=dict)

    @property
    def paper_lambda(self) -> float:
        """The paper's ``lambda = max_w lambda_min(A(w))`` of (16) in raw units, where
        computed (``check_condition_1b(..., paper=True)``; ``diagnose()`` does); else NaN."""
        return float(self.extras.get("paper_lambda", np.nan))

    @property
    def failure(self) -> str:
        """The summaries' line when the condition fails (the margin it is based on)."""
        return (f"Condition {self.condition} fails (relative margin "
                f"{self.relative_margin:.3g} <= {self.tol:g}): the environments may not "
                "identify the causal model")

    @property
    def verdict(self) -> str:
        """One line in words; the number it cites is the one the verdict is based on."""
        name = CONDITIONS[self.condition].title
        rel = f"relative margin {self.relative_margin:.3g}"
        if self.holds:
            return f"{name} holds: {rel} > tolerance {self.tol:g}."
        if self.relative_margin > self.tol:
            return f"{name} fails: {'; '.join(self.failing)} ({rel} on the matrix part)."
        return f"{name} fails: {rel} <= tolerance {self.tol:g}: {'; '.join(self.failing)}."

    def to_dict(self) -> dict:
        """Plain JSON values: the condition, its verdict and margins, the weights by
        environment and the failing covariates (the CLI's ``--json``)."""
        return jsonable({"condition": self.condition, "holds": self.holds,
                         "margin": self.margin, "relative_margin": self.relative_margin,
                         "weights": dict(zip(self.envs, self.weights, strict=True)),
                         "failing": list(self.failing)})

    def __str__(self) -> str:
        w = ", ".join(f"{e}: {x:.3f}" for e, x in zip(self.envs, self.weights, strict=True))
        lines = [self.verdict, f"  weights w0 = ({w})",
                 f"  path: {self.path} ({self.solver}, {self.status}), tol = {self.tol:g}, "
                 f"{self.source} moments"]
        if self.certificate is not None:
            lines.append(f"  Condition 1a certificate: {self.certificate}")
        return "\n".join(lines)


# ------------------------------------------------------------------------- optimisers
def _bottom_eigpair(S: FloatArray, v0: FloatArray | None) -> tuple[float, FloatArray]:
    k = S.shape[0]
    if k > 2000:
        try:
            vals, vecs = eigsh(S, k=1, which="SA", v0=v0, tol=1e-10)
            return float(vals[0]), vecs[:, 0]
        except ArpackNoConvergence:
            pass
    vals, vecs = linalg.eigh(S, subset_by_index=[0, 0])
    return float(vals[0]), vecs[:, 0]


def _cutting_plane(evaluate: Callable[[FloatArray], tuple[float, FloatArray, bool]],
                   E: int, *, tol: float, max_iter: int = 300, start: FloatArray | None = None
                   ) -> tuple[FloatArray, float, float, str]:
    """Cutting planes with a trust region for the maximum over the simplex of a concave
    ``f``: ``evaluate(w)`` gives ``(f(w), g, True)``, ``g`` a supergradient, or, where
    ``w`` is outside the feasible set, ``(c(w), g, False)`` for a concave ``c`` that is
    non-negative on it (a feasibility cut ``c(w) + g.(w' - w) >= 0``).  ``start`` (default
    the uniform weights) must be feasible.

    Every evaluation adds the cut ``f(w') <= f(w) + g.(w' - w)``; the next point maximises
    the cuts within a box of radius r around the best point (r halves after a step that
    does not improve, which keeps Kelley's method from zig-zagging).  The LP over all cuts
    on the whole simplex is an upper bound; when the box LP's maximiser is not on the box
    it is that bound already (a local maximum of a concave function), else the whole-
    simplex LP is solved for it.
    """
    w = np.full(E, 1.0 / E) if start is None else np.asarray(start, dtype=float)
    rows, rhs = [], []                       # A_ub [w, t] <= b_ub, one row per cut
    best_w, best_f, upper, radius = w, -np.inf, np.inf, 0.5
    status = "max_iter"
    objective_lp = np.r_[np.zeros(E), -1.0]
    A_eq, b_eq = np.r_[np.ones(E), 0.0][None, :], [1.0]
    for _ in range(max_iter):
        f, g, feasible = evaluate(w)
        if feasible and f > best_f + 1e-15:
            best_w, best_f = w, f
        else:
            radius *= 0.5
        rows.append(np.r_[-g, 1.0 if feasible else 0.0])   # t <= f + g.(w' - w), or
        rhs.append(f - g @ w)                               # 0 <= c + g.(w' - w)
        A_ub, b_ub = np.array(rows), np.array(rhs)
        box = [(max(0.0, x - radius), min(1.0, x + radius)) for x in best_w]
        lp = optimize.linprog(objective_lp, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq,
                              bounds=box + [(None, None)], method="highs")
        glob = None
        if lp.status != 0:       # a box shrunk to rounding: the step from the whole simplex
            lp = glob = optimize.linprog(objective_lp, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq,
                                         b_eq=b_eq, bounds=[(0, 1)] * E + [(None, None)],
                                         method="highs")
        if lp.status != 0:
            status = f"lp status {lp.status}"
            break
        x = lp.x[:E]
        on_box = glob is None and any(
            (lo > 0 and x_i <= lo + 1e-12) or (hi < 1 and x_i >= hi - 1e-12)
            for x_i, (lo, hi) in zip(x, box, strict=True))
        bound = -lp.fun                       # the global LP value if the box is not active
        if on_box:
            glob = optimize.linprog(objective_lp, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq,
                                    bounds=[(0, 1)] * E + [(None, None)], method="highs")
            bound = -glob.fun if glob.status == 0 else np.inf
        upper = min(upper, bound)
        if upper - best_f <= tol:
            status = "optimal"
            break
        w = np.maximum(x, 0.0)
        w /= w.sum()
    return best_w, best_f, max(upper - best_f, 0.0), status


def _lambda_min_cuts(M: FloatArray, C: FloatArray
                     ) -> Callable[[FloatArray], tuple[float, FloatArray, bool]]:
    """``w -> lambda_min(sum_e w_e M_e + C)`` and its supergradient ``(v^T M_e v)_e`` (v
    the bottom eigenvector, the last one the start of the next Lanczos run)."""
    last: list = [None]

    def evaluate(w: FloatArray) -> tuple[float, FloatArray, bool]:
        f, last[0] = _bottom_eigpair(np.tensordot(w, M, axes=1) + C, last[0])
        return f, np.einsum("i,eij,j->e", last[0], M, last[0]), True
    return evaluate


def _sdp(M: FloatArray, C: FloatArray, N: FloatArray
         ) -> tuple[FloatArray, str, str, FloatArray | None]:
    """max t s.t. sum_e w_e M_e + C >= t N, w in the simplex (epigraph form): the
    weights, the solver, its status and the dual matrix of the semidefinite constraint
    (None if the solver gives none)."""
    import cvxpy as cp  # (on first use: 0.1 s of the package's import)

    E, k, _ = M.shape
    w, t = cp.Variable(E, nonneg=True), cp.Variable()
    lhs = sum(w[e] * M[e] for e in range(E)) + C           # stays symmetric for cvxpy
    prob = cp.Problem(cp.Maximize(t), [cp.sum(w) == 1, lhs - t * N >> 0])
    for solver, settings in (("CLARABEL", CLARABEL_SETTINGS), ("SCS", {})):
        try:
            with warnings.catch_warnings():       # "may be inaccurate": reported in status
                warnings.simplefilter("ignore", UserWarning)
                prob.solve(solver=solver, **settings)
        except cp.SolverError:
            continue
        if prob.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
            w0 = np.maximum(np.asarray(w.value, dtype=np.float64), 0.0)
            Z = prob.constraints[1].dual_value
            return w0 / w0.sum(), solver, prob.status, None if Z is None else np.asarray(Z)
    raise SolverError(f"The identification SDP failed with CLARABEL and SCS "
                      f"(last status {prob.status!r}).")


def max_min_eigenvalue(
    M: FloatArray, C: FloatArray, *, path: str = "auto", tol: float = 1e-7
) -> tuple[FloatArray, float, dict]:
    """``max_{w in simplex} lambda_min(sum_e w_e M_e + C)``: the weights, the value and
    facts about the solve (path, solver, status, gap).  Inputs should be scaled to unit
    spectral norm; ``tol`` is the absolute optimality gap of the cutting-plane path (it
    stalls near 1e-8 from eigenvalue rounding; within 100 tol it reports
    "optimal_inaccurate")."""
    k = M.shape[1]
    if path == "auto":
        path = "sdp" if k <= SDP_MAX_DIM else "cutting-plane"
    if path == "sdp":
        w0, solver, status, _ = _sdp(M, C, np.eye(k))
        value = float(np.linalg.eigvalsh(np.tensordot(w0, M, axes=1) + C)[0])
        return w0, value, dict(path="sdp", solver=solver, status=status, gap=0.0)
    w0, value, gap, status = _cutting_plane(_lambda_min_cuts(M, C), M.shape[0], tol=tol)
    solver, stalled = "HiGHS LP + eigh", None
    if status != "optimal" and gap > 100 * tol:  # Kelley's planes stall with many
        stalled = gap                              # environments: SDPs on a subspace
        w0, value, gap, status, solver = _subspace_sdp(M, C, w0, value, tol=tol)
    if status != "optimal" and gap <= 100 * tol:
        status = "optimal_inaccurate"
    if stalled is not None:
        status = f"{status} (cutting planes stalled at gap {stalled:.2g})"
    return w0, value, dict(path="cutting-plane", solver=solver, status=status, gap=gap)


def _subspace_sdp(M: FloatArray, C: FloatArray, w: FloatArray, value: float, *,
                  tol: float, rank: int = 8, rounds: int = 25, max_dim: int = 120
                  ) -> tuple[FloatArray, float, float, str, str]:
    """``max_w lambda_min(sum_e w_e M_e + C)`` by SDPs on a growing subspace, from the
    planes' best ``w`` (value ``value``).  For any orthonormal ``U``, ``lambda_min(A(w))``
    at the maximiser of ``lambda_min(U^T A(w) U)`` is a lower bound; ``U`` gains the
    ``rank`` bottom eigenvectors at every new ``w`` (at most ``max_dim`` columns) until
    it meets the upper bound within ``tol``.  That bound is the dual's, exact whatever
    the solver's accuracy: for any ``Z >= 0`` of unit trace, ``max_w lambda_min(A(w)) <=
    max_w tr(Z A(w)) = max_e tr(Z M_e) + tr(Z C)``, with ``Z = U Z_U U^T`` from the
    subspace SDP's dual projected onto that set.  (The restricted value at SCS's
    weights, taken as the bound, would call a Condition 4 margin of 0.00912 optimal where
    the optimum is 0.00937.)  Where the planes stall (eight environments: a 240 x 240
    Condition 4 problem at p = 120 stops at gap 0.0043, and the full SDP takes 92 s on a
    120 x 120 one) a few SDPs of 8-60 dimensions settle it.  Returns
    ``(w, value, gap, status, solver)``."""
    k = M.shape[1]
    U, best_w, best_f, upper = np.zeros((k, 0)), w, value, np.inf
    status, solver = "max_iter", "HiGHS LP + eigh"
    for _ in range(rounds):
        _, vecs = linalg.eigh(np.tensordot(w, M, axes=1) + C,
                              subset_by_index=[0, min(rank, k) - 1])
        U = linalg.orth(np.column_stack([U, vecs]))[:, :max_dim]
        MU, CU = np.einsum("ia,eij,jb->eab", U, M, U), U.T @ C @ U
        w, sdp_solver, _, Z = _sdp(MU, CU, np.eye(U.shape[1]))
        solver = f"HiGHS LP + eigh, then {sdp_solver} on a subspace"
        if Z is not None:
            vals, vecs = np.linalg.eigh((Z + Z.T) / 2.0)
            vals = np.maximum(vals, 0.0)
            if vals.sum() > 0:
                Z = (vecs * (vals / vals.sum())) @ vecs.T
                upper = min(upper, float(np.einsum("ij,eji->e", Z, MU).max()
                                         + np.einsum("ij,ji->", Z, CU)))
        f = float(np.linalg.eigvalsh(np.tensordot(w, M, axes=1) + C)[0])
        if f > best_f:
            best_w, best_f = w, f
        if upper - best_f <= tol:
            status = "optimal"
            break
    return best_w, best_f, max(upper - best_f, 0.0), status, solver


# ------------------------------------------------------------------------- conditions
def _as_stack(Sigma: Moments | FloatArray) -> tuple[FloatArray, tuple, str]:
    if isinstance(Sigma, Moments):
        return Sigma.Sigma, Sigma.envs, Sigma.source
    S = np.asarray(Sigma, dtype=np.float64)
    return S, tuple(range(S.shape[0])), "population"


def _certificate(w0: FloatArray, Sigma: FloatArray, envs: tuple) -> Certificate1a | None:
    E = len(w0)
    dev = w0 - 1.0 / E
    up, down = dev > 0, dev < 0
    if not (up.any() and down.any()):
        return None
    s = dev[up].sum()
    w, w_prime = dev[up] / s, -dev[down] / s
    diff = np.tensordot(w, Sigma[up], axes=1) - np.tensordot(w_prime, Sigma[down], axes=1)
    return Certificate1a(E1=tuple(e for e, u in zip(envs, up, strict=True) if u),
                         E2=tuple(e for e, d in zip(envs, down, strict=True) if d),
                         w=w, w_prime=w_prime,
                         lambda_min=float(np.linalg.eigvalsh(diff)[0]))


def check_condition_1b(
    Sigma: Moments | FloatArray, *, tol: float = DEFAULT_TOL, path: str = "auto",
    paper: bool = False,
) -> IdentificationResult:
    """Condition 1b: maximise ``lambda_min(A(w))`` over the simplex, eq. (16).

    Parameters
    ----------
    Sigma : Moments or array (E, p, p)
        Per-environment second moments ``E[X X^T]`` (sample or population).
    tol : float
        The condition is declared to hold when ``relative_margin > tol``.
    path : {"auto", "sdp", "cutting-plane"}
        Solution path; "auto" uses the SDP up to p = 30 (``SDP_MAX_DIM``).
    paper : bool
        Also solve (16) itself, in the units of the second moments: the paper's
        ``lambda = max_w lambda_min(A(w))`` and its weights, in ``extras``
        (:attr:`IdentificationResult.paper_lambda`).  The verdict uses the scale-free
        problem (covariates standardised), whose weights give ``margin``, a lower bound
        of that lambda (on one design 0.223 against 0.304); one more solve.

    Returns
    -------
    IdentificationResult
        With the Condition 1a certificate (Proposition 1) when the margin is positive.
    """
    S, envs, source = _as_stack(Sigma)
    E = S.shape[0]
    Ms = scale_free(S)
    w0, value, facts = max_min_eigenvalue(Ms, -Ms.mean(axis=0), path=path)
    rel = float(np.linalg.eigvalsh(np.tensordot(w0 - 1.0 / E, Ms, axes=1))[0])
    lam = float(np.linalg.eigvalsh(np.tensordot(w0 - 1.0 / E, S, axes=1))[0])  # A(w0), (16)
    if abs(rel - value) > 1e-6 * max(1.0, abs(value)):
        raise SolverError(f"The {facts['path']} path's eigenvalue ({value:.6g}) disagrees with "
                          f"a dense re-check ({rel:.6g}); use path='sdp'.")
    holds = rel > tol
    extras = {}
    if paper:                 # (16) as printed: a scalar rescaling keeps the maximiser
        top = max(float(np.linalg.eigvalsh(S.mean(axis=0))[-1]), 1e-300)
        w_raw, value, _ = max_min_eigenvalue(S / top, -S.mean(axis=0) / top, path=path)
        extras = dict(paper_lambda=max(value * top, lam), paper_weights=w_raw)
    return IdentificationResult(
        condition="1b", holds=holds, margin=lam, relative_margin=rel, weights=w0, envs=envs,
        extras=extras,
        certificate=_certificate(w0, S, envs) if holds else None,
        failing=() if holds else ("no weighting of the environments makes A(w) positive "
                                  "definite: some direction b - beta* leaves every "
                                  "environment's risk equal",),
        tol=tol, source=source, gap=facts["gap"],
        **{k: facts[k] for k in ("path", "solver", "status")})


def scale_free(S: FloatArray) -> FloatArray:
    """The stack on which Condition 1b is solved: ``A(w) > 0`` is invariant to rescaling
    covariates (a congruence), so covariates standardised to unit root mean square, then
    unit spectral norm of the average."""
    E = S.shape[0]
    d = np.sqrt(np.einsum("ejj->j", S) / E)
    St = S / np.multiply.outer(d, d)
    return St / float(np.linalg.eigvalsh(St.mean(axis=0))[-1])


def relative_margin_bounds(S: FloatArray, weights: FloatArray) -> tuple[float, float]:
    """Bounds of the relative Condition 1b margin ``max_w lambda_min(A(w))`` of the stack
    ``S`` (``(E, p, p)`` second moments, on the scale-free stack) without an SDP, from
    weights ``w`` near the optimum (another sample's ``w0``): :func:`_polish` from ``w``,
    and the vertices ``w = e_k``, whose weakest directions bound a permuted sample's
    margin better than ``w``'s.  At the optimum of a resample of the sample that ``w``
    came from, the weakest direction is usually simple and the support the same: the
    bounds then meet to rounding.  Where the smallest eigenvalue is multiple, or the
    support changes, they stay apart, and
    :func:`~negdro_stats.identification.report.identification_report` solves that draw's SDP."""
    Ms = scale_free(S)
    D = Ms - Ms.mean(axis=0)
    vals, vecs = np.linalg.eigh(D)                      # the vertices: A(e_k) = D_k
    U = vecs[:, :, 0]
    upper = float(np.einsum("ki,eij,kj->ke", U, D, U).max(axis=1).min())
    lower, polished = _polish(D, weights)
    lower, upper = max(lower, float(vals[:, 0].max())), min(upper, polished)
    if upper - lower <= MET * max(1.0, abs(upper)):   # met (to rounding, or crossed by it:
        lower = upper = (lower + upper) / 2.0          # an exact value, not two bounds)
    return lower, upper


def _polish(D: FloatArray, weights: FloatArray) -> tuple[float, float]:
    """``max_w lambda_min(sum_e w_e D_e)`` over the simplex, bounded by Newton steps from
    ``weights`` on the face they span (a face is left where a step reaches its boundary):
    the best value reached (a lower bound) and an upper bound.

    From above: for any unit vector ``u``, ``lambda_min(A(w')) <= u^T A(w') u <= max_e
    u^T D_e u`` for every ``w'`` in the simplex.  Where ``lambda_min`` is simple it is
    smooth and concave in ``w``, with gradient ``u^T D_e u`` and Hessian ``2 sum_j (u^T
    D_e v_j) (v_j^T D_f u) / (lambda_min - lambda_j)``; at most ``POLISH_STEPS`` steps,
    none where the smallest eigenvalue is (nearly) multiple.  (From a far start the
    weakest eigenvalues cross and the steps stall -- eq. (33)'s optimum has three within
    3e-3 -- so this polishes a nearby optimum; it does not replace the SDP.)"""
    face = np.flatnonzero(weights > 1e-9)
    w = weights[face] / weights[face].sum()
    lower, upper = -np.inf, np.inf
    for _ in range(POLISH_STEPS + 1):
        vals, vecs = np.linalg.eigh(np.tensordot(w, D[face], axes=1))
        u = vecs[:, 0]
        grad = np.einsum("i,eij,j->e", u, D, u)
        lower, upper = max(lower, float(vals[0])), min(upper, float(grad.max()))
        if len(vals) == 1:                       # A(w) is linear in w: the best vertex
            return upper, upper
        if upper - lower <= MET * max(1.0, abs(upper)) or vals[1] - vals[0] <= 1e-9:
            break                                        # met, or not simple: no Newton
        cross = np.einsum("i,eij,jk->ek", u, D[face], vecs[:, 1:])        # u^T D_e v_j
        H = 2.0 * (cross / (vals[0] - vals[1:])) @ cross.T
        k = len(face)
        kkt = np.block([[H - 1e-12 * np.eye(k), np.ones((k, 1))],
                        [np.ones((1, k)), np.zeros((1, 1))]])
        try:
            step = np.linalg.solve(kkt, np.append(-grad[face], 0.0))[:k]
        except np.linalg.LinAlgError:
            break
        shrink = step < 0
        ratios = np.where(shrink, -w / np.where(shrink, step, -1.0), np.inf)
        t = min(1.0, float(ratios.min()))
        w = np.maximum(w + t * step, 0.0)
        if t < 1.0 and k > 1:                            # reached the face's boundary
            keep = np.arange(k) != int(np.argmin(ratios))
            face, w = face[keep], w[keep]
        w /= w.sum()
    return lower, upper


def _block_diag(*blocks: FloatArray) -> FloatArray:
    """Block-diagonal stack for (E, k_i, k_i) arrays or (k_i, k_i) matrices."""
    if blocks[0].ndim == 3:
        return np.stack([linalg.block_diag(*(b[e] for b in blocks))
                         for e in range(blocks[0].shape[0])])
    return linalg.block_diag(*blocks)


def check_condition_4(
    Sigma: FloatArray, Delta: FloatArray, S_L: np.ndarray, D: np.ndarray, *,
    envs: tuple | None = None, names: tuple | None = None, tol: float = DEFAULT_TOL,
    path: str = "auto",
) -> IdentificationResult:
    """Condition 4 (limited interventions): ``D subset S_L`` and some w0 with
    ``[Delta(w0)]_{S_L,S_L} > 0`` and ``sum_e w0_e Sigma_e > 0``.

    Both matrix requirements are one SDP: the smallest eigenvalue of the block-diagonal
    matrix ``diag([Delta(w)]_{S_L,S_L}, sum_e w_e Sigma_e)``, maximised over w.
    """
    Sigma, Delta = np.asarray(Sigma, float), np.asarray(Delta, float)
    E, p, _ = Sigma.shape
    envs = tuple(range(E)) if envs is None else tuple(envs)
    S_L, D = np.asarray(S_L, dtype=int), np.asarray(D, dtype=int)
    failing = []
    missing = sorted(set(D.tolist()) - set(S_L.tolist()))
    if missing:
        label = [names[j] for j in missing] if names is not None else missing
        failing.append(f"children of Y never intervened on: {label} (D must lie in S_L)")
    if len(S_L) == 0:
        failing.append("no covariate is intervened on in any environment (S_L is empty)")
        return IdentificationResult(
            condition="4", holds=False, margin=0.0, relative_margin=0.0,
            weights=np.full(E, 1.0 / E), envs=envs, certificate=None,
            failing=tuple(failing), path="none", solver="none", status="skipped", gap=0.0,
            tol=tol, source="population")
    DL = block(Delta, S_L, S_L)
    s1 = max(float(np.linalg.eigvalsh(DL.mean(axis=0))[-1]), 1e-300)
    s2 = float(np.linalg.eigvalsh(Sigma.mean(axis=0))[-1])
    M = _block_diag(DL / s1, Sigma / s2)
    C = _block_diag(-DL.mean(axis=0) / s1, np.zeros((p, p)))
    w0, value, facts = max_min_eigenvalue(M, C, path=path)
    lam1 = float(np.linalg.eigvalsh(np.tensordot(w0 - 1.0 / E, DL, axes=1))[0])
    lam2 = float(np.linalg.eigvalsh(np.tensordot(w0, Sigma, axes=1))[0])
    rel = min(lam1 / s1, lam2 / s2)
    if lam1 / s1 <= tol:
        failing.append("no weighting makes the interventions' second moments on S_L "
                       "dominate their average ([Delta(w)]_{S_L,S_L} not > 0)")
    if lam2 / s2 <= tol:
        failing.append("the weighted second moment sum_e w_e Sigma_e is singular")
    return IdentificationResult(
        condition="4", holds=not failing, margin=rel, relative_margin=rel,
        weights=w0, envs=envs, certificate=None, failing=tuple(failing), tol=tol,
        source="population", gap=facts["gap"], extras=dict(lambda1=lam1, lambda2=lam2),
        **{k: facts[k] for k in ("path", "solver", "status")})


def check_condition_6(
    Delta: FloatArray, H: FloatArray, h: FloatArray, *, envs: tuple | None = None,
    tol: float = DEFAULT_TOL,
) -> IdentificationResult:
    """Condition 6 (Appendix C.2) as the SDP of the module docstring.

    ``h = 0`` (no first-order term) makes the range requirement (57) empty; the SDP then
    asks for ``Delta(w) >= 0`` and ``H + sum_e w_e E[delta delta^T] >= t I``.
    """
    Delta, H, h = np.asarray(Delta, float), np.asarray(H, float), np.asarray(h, float)
    E, p, _ = Delta.shape
    envs = tuple(range(E)) if envs is None else tuple(envs)
    hn = np.linalg.norm(h)
    scale = max(float(np.linalg.eigvalsh(H + Delta.mean(axis=0))[-1]), 1e-300)
    if p <= SDP_MAX_DIM:
        P = np.outer(h, h) / hn**2 if hn > 0 else np.zeros((p, p))
        M = _block_diag(Delta / scale, Delta / scale)
        C = _block_diag(-Delta.mean(axis=0) / scale, H / scale)
        w0, solver, status, _ = _sdp(M, C, _block_diag(P, np.eye(p)))
        path, gap = "sdp", 0.0
    else:
        w0, gap, status = _condition_6_planes(Delta / scale, H / scale, h, tol=tol)
        path, solver = "cutting-plane", "HiGHS LP + eigh"
    vals, vecs = np.linalg.eigh(np.tensordot(w0 - 1.0 / E, Delta, axes=1))
    psd = vals[0] >= -tol * scale
    pos = vals > tol * scale
    coef = vecs.T @ h                                # h in Delta(w0)'s eigenvectors
    in_range = hn == 0 or np.linalg.norm(coef[~pos]) <= 1e-6 * hn
    lam_H = float(np.linalg.eigvalsh(H + np.tensordot(w0, Delta, axes=1))[0])
    failing = []
    if not psd:
        failing.append("no weighting makes Delta(w) positive semidefinite")
    if not in_range:
        failing.append("h is not in the span of Delta(w0)'s positive eigenvectors (the "
                       "paper's eq. (57))")
    if lam_H <= tol * scale:
        failing.append("H + sum_e w_e E[delta delta^T] is singular (the paper's eq. (56))")
    # the largest t with Delta(w0) >= t h h^T / ||h||^2: ||h||^2 / (h^T Delta(w0)^+ h)
    # where it is semidefinite with h in its range, eigenvalues within the tolerance
    # taken as zero (an SDP's weights leave a kernel that the design forces at -2e-11:
    # at 1e-12 Condition 6 failed on 2 of 46 random confounded designs where it holds)
    t_range = (vals[0] if hn == 0 or not psd else 0.0 if not in_range
               else hn**2 / float(np.sum(coef[pos] ** 2 / vals[pos])))
    t_rel = min(t_range / scale, lam_H / scale)
    if not failing and t_rel <= tol:
        failing.append("the margin is not above the tolerance")
    return IdentificationResult(
        condition="6", holds=not failing, margin=t_rel, relative_margin=t_rel,
        weights=w0, envs=envs, certificate=None, failing=tuple(failing), path=path,
        solver=solver, status=status, gap=gap, tol=tol, source="population",
        extras=dict(lambda_H=lam_H))


def _condition_6_planes(Delta: FloatArray, H: FloatArray, h: FloatArray, *, tol: float
                        ) -> tuple[FloatArray, float, str]:
    """Condition 6's weights by cutting planes (:func:`_cutting_plane`) beyond
    ``SDP_MAX_DIM`` covariates, where its 2p x 2p SDP costs minutes and gigabytes (41 s
    and 2.8 GB at p = 60; at p = 120 it ran out of 24 GB).  Returns ``(w0, gap, status)``.

    ``Delta(w)`` lives in ``V``, the span of the ranges of ``Delta_e - mean(Delta)``.
    First the weights that maximise ``lambda_min`` of ``Delta(w)`` on ``V`` (Condition
    1b's problem there); where that is not above ``tol``, those weights, and the check
    fails (a ``Delta(w)`` semidefinite only with a kernel in ``V`` is not sought: the SDP
    could find one).  Else ``max min(t1(w), lambda_min(H + sum_e w_e E[delta
    delta^T]))`` -- the SDP's ``t`` -- over the ``w`` that keep ``lambda_min`` of
    ``Delta(w)`` on ``V`` above ``tol``, with ``t1(w) = max {t : Delta(w) >= t u u^T} =
    min_{u.x = 1} x^T Delta(w) x``, ``u = h / ||h||``: a minimum of linear functions of
    ``w``, so concave, the minimiser ``x = Delta^+ u / (u^T Delta^+ u)`` giving the
    supergradient ``(x^T Delta_e x)_e``.  Where ``h = 0`` or ``h`` is outside ``V``
    (never in a range: the check says so), ``t1`` is left out.  Where the optimum sits
    on a kernel that the design forces, the planes may stop at 300 steps short of it
    (status "max_iter", gap ~ 0.002 on one of 40 random designs); the margin at ``w0``
    stays a certificate."""
    E = Delta.shape[0]
    centred = Delta - Delta.mean(axis=0)
    vals, vecs = np.linalg.eigh(np.einsum("eij,ejk->ik", centred, centred))
    V = vecs[:, vals > 1e-12 * max(float(vals[-1]), 1e-300)]
    DV = np.einsum("ia,eij,jb->eab", V, Delta, V)                      # V^T Delta_e V
    start = None
    if V.shape[1]:
        start, lam_V, _, _ = _cutting_plane(_lambda_min_cuts(DV, -DV.mean(axis=0)), E,
                                            tol=tol)
        if not lam_V > tol:
            return start, 0.0, "Delta(w) is not positive definite on its span"
    hn = float(np.linalg.norm(h))
    u = h / hn if hn > 0 else h
    uV = V.T @ u
    with_t1 = hn > 0 and float(np.linalg.norm(u - V @ uV)) <= 1e-6
    lambda_H = _lambda_min_cuts(Delta, H)

    def evaluate(w: FloatArray) -> tuple[float, FloatArray, bool]:
        DVw = np.tensordot(w, DV, axes=1) - DV.mean(axis=0)
        if V.shape[1]:
            lam, v = _bottom_eigpair(DVw, None)
            if lam <= tol:                                # a feasibility cut
                return lam, np.einsum("i,eij,j->e", v, DV, v), False
        f, g, _ = lambda_H(w)
        if with_t1:
            y = linalg.solve(DVw, uV, assume_a="pos")
            t1 = 1.0 / float(uV @ y)
            if t1 < f:
                f, g = t1, np.einsum("i,eij,j->e", y * t1, DV, y * t1)
        return f, g, True

    w0, _, gap, status = _cutting_plane(evaluate, E, tol=tol, start=start)
    return w0, gap, status


# ------------------------------------------------------------------------- registry
@dataclass(frozen=True, slots=True, kw_only=True)
class Condition:
    """A sufficient condition for identification, as the reports and the CLI use it.

    Attributes
    ----------
    name : str
        The key in :data:`CONDITIONS` and :attr:`IdentificationResult.condition`.
    title : str
        How verdicts name it.
    theorem : str
        The paper's result that makes it sufficient.
    margin : str
        What its relative margin measures.
    check : callable ``(moments, design) -> IdentificationResult``
        ``moments`` are per-environment :class:`Moments`; ``design`` is the planned
        :class:`~negdro_stats.LinearSEM` in its additive form (12), or None on data.
    structural : bool
        Whether ``check`` needs the design (the interventions' ``Delta``, ``S_L``,
        ``D``, ``H``, ``h``), so that data alone cannot check it.
    with_confounding : bool
        Whether it suffices with hidden confounding of the outcome.
    """

    name: str
    title: str
    theorem: str
    margin: str
    check: Callable[[Moments, Any], IdentificationResult]
    structural: bool
    with_confounding: bool

    def applies(self, design: Any) -> bool:
        """Whether it can be checked: on data (``design`` None) only a condition on the
        moments; on a design, any condition when it is additive."""
        return not self.structural or (design is not None and design.is_additive)

    def identifies(self, result: IdentificationResult, confounded: bool) -> bool:
        """Whether ``result`` (of this condition) identifies beta* given confounding."""
        return result.holds and (self.with_confounding or not confounded)


CONDITIONS: dict[str, Condition] = {c.name: c for c in (
    Condition(name="1b", title="Condition 1b (heterogeneity: B_inv = {beta*})",
              theorem="Theorem 3",
              margin="max over the simplex of lambda_min(A(w)), covariates standardised",
              check=lambda mom, design: check_condition_1b(mom),
              structural=False, with_confounding=True),
    Condition(name="4", title="Condition 4 (limited interventions)", theorem="Theorem 6",
              margin="the smaller of lambda_min([Delta(w)]_{S_L,S_L}) and "
                     "lambda_min(sum_e w_e Sigma_e), each relative to its average",
              check=lambda mom, design: check_condition_4(
                  mom.Sigma, design.Delta, design.S_L, design.D, envs=design.envs,
                  names=design.names[1:]),
              structural=True, with_confounding=False),
    Condition(name="6", title="Condition 6 (relaxed, with confounding)",
              theorem="Theorem 12",
              margin="the largest t with Delta(w) >= t h h^T / ||h||^2 and "
                     "H + sum_e w_e E[delta delta^T] >= t I, relative",
              check=lambda mom, design: check_condition_6(design.Delta, design.H, design.h,
                                                          envs=design.envs),
              structural=True, with_confounding=True),
)}
"""The identification conditions by name, in the order the reports list them; a new
condition is one entry here (its check, title and what its margin means)."""


def identification_advice(can_resample: bool) -> str:
    """Where to go when Condition 1b fails: never to something that cannot run."""
    if can_resample:
        return ("NegDRO.diagnose() gives a confidence bound for the margin and what to do.")
    return ("diagnose() needs rows, but if these are the moments of a planned LinearSEM, its "
            "check_identification() also checks Conditions 4 and 6, under which NegDRO still "
            "identifies beta* with limited interventions.")
