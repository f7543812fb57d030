"""The paper's results as checkable statements on a planned design.

Each function evaluates both sides of one result for a :class:`~negdro_stats.LinearSEM`
with additive interventions (eq. (12)) -- from its exact population moments, never from
samples -- and returns a :class:`StatementCheck`: which side is which, whether the
statement's premise holds for this design, and whether its conclusion holds.  A
counterexample is a design (and ``b``, ``w``, ``gamma`` where relevant) for which the
premise holds and the conclusion does not; :mod:`negdro_stats.testing` supplies the
hypothesis strategies that search for one.

The statements follow the paper with its errata corrected (docs/design.rst): Lemma 1 with
``E[eps_Y X^e] = -G^T h`` (the printed proof has the opposite sign), ``G^T (H + ...) G``
as in Lemma 1 (not Section 3.2's ``G (H + ...) G``), and Theorem 4 with the explicit
constants of its proof (Appendix A.6) instead of the ``lesssim`` of (21).

Tolerances are relative: ``tol`` times a scale stated in each function (the size of
the quantities compared), so the checks mean the same at any data scale.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from ._typing import ArrayLike, FloatArray
from .data.moments import Moments
from .estimation import SolverOptions, env_risks, gradient, negative_weight, solve
from .exceptions import DataError
from .identification.conditions import Certificate1a, IdentificationResult, check_condition_1b
from .model import NegDRO
from .planning.design import LinearSEM

__all__ = [
    "StatementCheck",
    "lemma1",
    "lemma1_second_moments",
    "risk_form",
    "theorem3",
    "theorem4",
    "theorem4_radius",
    "proposition1",
    "algorithm3_exactness",
    "default_exactness",
]

Relation = Literal["==", "<=", ">="]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class StatementCheck:
    """One result of the paper evaluated on one design: premise => lhs (relation) rhs.

    Attributes
    ----------
    statement : str
        The result, e.g. ``"Theorem 3"``.
    claim : str
        Its conclusion in words and symbols.
    lhs_name, rhs_name : str
        What each side is.
    lhs, rhs : float or ndarray
        The two sides, evaluated (arrays are compared entrywise).
    relation : {"==", "<=", ">="}
        How the conclusion compares them.
    slack : float
        The tolerance the comparison allows (absolute, in the units of the sides).
    premise : bool
        Whether the statement's assumptions hold for this design.
    premise_text : str
        Those assumptions in words (with the number they rest on).
    holds : bool
        Whether the conclusion holds (within ``slack``), whatever the premise.
    details : dict
        Intermediate quantities (margins, weights, norms) for a failure report.
    """

    statement: str
    claim: str
    lhs_name: str
    rhs_name: str
    lhs: float | FloatArray
    rhs: float | FloatArray
    relation: Relation
    slack: float
    premise: bool
    premise_text: str
    holds: bool
    details: dict = field(default_factory=dict)

    @property
    def counterexample(self) -> bool:
        """True when the premise holds and the conclusion fails."""
        return self.premise and not self.holds

    @property
    def worst_gap(self) -> float:
        """The largest violation of the relation before the slack (<= 0 when it holds
        exactly): ``max |lhs - rhs|`` for ``==``, ``max(lhs - rhs)`` for ``<=``,
        ``max(rhs - lhs)`` for ``>=``."""
        diff = np.asarray(self.lhs, dtype=np.float64) - np.asarray(self.rhs, dtype=np.float64)
        sign = {"==": None, "<=": 1.0, ">=": -1.0}[self.relation]
        return float(np.max(np.abs(diff)) if sign is None else np.max(sign * diff))

    def __str__(self) -> str:
        verdict = ("holds" if self.holds else "FAILS") + (
            "" if self.premise else " (premise not met: the statement says nothing here)")
        with np.printoptions(precision=6, suppress=True):
            lines = [f"{self.statement}: {self.claim} -- {verdict}",
                     f"  premise: {self.premise_text} -> {self.premise}",
                     f"  lhs = {self.lhs_name} = {self.lhs}",
                     f"  rhs = {self.rhs_name} = {self.rhs}",
                     f"  relation: lhs {self.relation} rhs within {self.slack:.3g} "
                     f"(worst gap {self.worst_gap:.3g})"]
            lines += [f"  {k} = {v}" for k, v in self.details.items()]
        return "\n".join(lines)


def _compare(lhs, rhs, relation: Relation, slack: float) -> bool:
    diff = np.asarray(lhs, dtype=np.float64) - np.asarray(rhs, dtype=np.float64)
    if relation == "==":
        return bool(np.all(np.abs(diff) <= slack))
    return bool(np.all(diff <= slack) if relation == "<=" else np.all(diff >= -slack))


def _check(*, lhs, rhs, relation: Relation, slack: float, **fields) -> StatementCheck:
    return StatementCheck(lhs=lhs, rhs=rhs, relation=relation, slack=slack,
                          holds=_compare(lhs, rhs, relation, slack), **fields)


def _additive(sem: LinearSEM, what: str) -> None:
    if not isinstance(sem, LinearSEM):
        raise DataError(f"{what} needs a LinearSEM as 'sem'; got {type(sem).__name__}.")
    if not sem.is_additive:
        raise DataError(f"{what} is stated for additive-intervention designs (eq. (12)); "
                        "this SEM was built from noise factors, so G, H and h are undefined.")


def _deviation(sem: LinearSEM, b: ArrayLike) -> FloatArray:
    b = np.asarray(b, dtype=np.float64).ravel()
    if b.shape != (sem.p,) or not np.isfinite(b).all():
        raise DataError(f"'b' must be {sem.p} finite coefficients (one per covariate of the "
                        f"design); got shape {b.shape}.")
    return b - sem.beta_star


def _margin(sem: LinearSEM, condition_1b: IdentificationResult | None) -> IdentificationResult:
    return check_condition_1b(sem.moments()) if condition_1b is None else condition_1b


_PREMISE_1B = "Condition 1b (16) holds: relative margin {:.3g} > tol {:g}"


# ------------------------------------------------------------------------- Lemma 1
def lemma1(sem: LinearSEM, *, tol: float = 1e-9) -> StatementCheck:
    """Lemma 1, first moments: ``E[eps_Y X^e] = -G^T h`` in every environment e.

    The left side comes from the population moments (``E[X Y] - E[X X^T] beta*``, i.e.
    from ``(I - B)^{-1}`` directly), the right side from the closed forms of ``G`` and
    ``h``.  The proof in the paper prints ``+G^T h``; the sign is corrected here
    (the errata in docs/design.rst; Example 2 by hand gives ``E[eps_Y X] = (0, sigma_Y^2)``).
    The slack is ``tol`` times ``1 + m (1 + ||beta*||_1)``, with ``m`` the largest
    entry of ``E[X X^T]`` and ``E[X Y]`` (the size of the two terms of the left side).
    """
    _additive(sem, "lemma1")
    mom = sem.moments()
    lhs = mom.sxy - mom.Sigma @ sem.beta_star                       # E[eps_Y X^e], (E, p)
    rhs = np.broadcast_to(-sem.G.T @ sem.h, lhs.shape)
    scale = 1.0 + max(np.abs(mom.Sigma).max(), np.abs(mom.sxy).max()) * (
        1.0 + np.abs(sem.beta_star).sum())
    return _check(statement="Lemma 1", claim="E[eps_Y X^e] = -G^T h for every e",
                  lhs_name="E[eps_Y X^e] (rows: environments)", rhs_name="-G^T h",
                  lhs=lhs, rhs=rhs, relation="==", slack=tol * scale, premise=True,
                  premise_text="additive interventions (12)")


def lemma1_second_moments(sem: LinearSEM, *, tol: float = 1e-9) -> StatementCheck:
    """Lemma 1, second moments: ``E[X^e X^eT] = G^T (H + E[delta^e delta^eT]) G``.

    Section 3.2 prints ``G (H + ...) G``; Lemma 1's ``G^T (...) G`` is the correct form.
    The slack is ``tol`` times the largest entry of ``E[X X^T]``.
    """
    _additive(sem, "lemma1_second_moments")
    Sigma = sem.moments().Sigma
    G = sem.G
    rhs = np.einsum("ji,ejk,kl->eil", G, sem.H + sem.Delta, G)      # G^T (H + Delta_e) G
    return _check(statement="Lemma 1", claim="E[X^e X^eT] = G^T (H + E[delta^e delta^eT]) G",
                  lhs_name="E[X^e X^eT]", rhs_name="G^T (H + E[delta^e delta^eT]) G",
                  lhs=Sigma, rhs=rhs, relation="==",
                  slack=tol * (1.0 + np.abs(Sigma).max()), premise=True,
                  premise_text="additive interventions (12)")


def risk_form(sem: LinearSEM, b: ArrayLike, *, tol: float = 1e-9) -> StatementCheck:
    """Eq. (28): ``R_e(b) = sigma_Y^2 + 2 (G^T h)^T (b - beta*) + (b - beta*)^T Sigma_e
    (b - beta*)`` for every environment e, whose first-order term does not depend on e.

    The left side is the risk from the population moments; the slack is ``tol`` times
    ``1 + max_e |R_e(b)|``.
    """
    _additive(sem, "risk_form")
    d = _deviation(sem, b)
    mom = sem.moments()
    lhs = env_risks(d + sem.beta_star, mom.Sigma, mom.sxy, mom.syy)
    rhs = sem.Omega[0, 0] + 2.0 * (sem.G.T @ sem.h) @ d + np.einsum("i,eij,j->e",
                                                                     d, mom.Sigma, d)
    return _check(statement="Eq. (28)",
                  claim="R_e(b) = sigma_Y^2 + 2 (G^T h)^T d + d^T Sigma_e d, d = b - beta*",
                  lhs_name="R_e(b) (per environment)", rhs_name="the right side of (28)",
                  lhs=lhs, rhs=rhs, relation="==",
                  slack=tol * (1.0 + np.abs(lhs).max()), premise=True,
                  premise_text="additive interventions (12)")


# ------------------------------------------------------------------ Theorems 1, 3, 4
def theorem3(sem: LinearSEM, b: ArrayLike, *, condition_1b: IdentificationResult | None = None,
             tol: float = 1e-7) -> StatementCheck:
    """Theorems 1 and 3 quantified: under Condition 1b with margin ``lambda``,
    ``max_e R_e(b) - mean_e R_e(b) >= lambda ||b - beta*||^2`` for every b.

    So ``beta*`` is the only risk-invariant model (the feasible set (15) of the
    constrained problem (7) is ``{beta*}``).  Why: the first-order term of (28) is the
    same in every environment, so ``max - mean >= sum_e (w0_e - 1/|E|) R_e(b) =
    d^T A(w0) d``.  ``lambda`` is ``lambda_min(A(w0))`` at the weights of
    :func:`~negdro_stats.check_condition_1b` (pass its result as ``condition_1b`` to
    reuse it); the slack is ``tol`` times ``1 + max_e |R_e(b)|``.

    Examples
    --------
    >>> from negdro_stats import simulate
    >>> from negdro_stats.theory import theorem3
    >>> sem = simulate.eq33(p=5)
    >>> check = theorem3(sem, sem.beta_star + 0.1)
    >>> check.premise, check.holds
    (True, True)
    >>> print(check.lhs_name, ">=", check.rhs_name)
    max_e R_e(b) - mean_e R_e(b) >= lambda ||b - beta*||^2
    """
    _additive(sem, "theorem3")
    d = _deviation(sem, b)
    c1b = _margin(sem, condition_1b)
    mom = sem.moments()
    R = env_risks(d + sem.beta_star, mom.Sigma, mom.sxy, mom.syy)
    return _check(statement="Theorem 3", claim="max_e R_e(b) - mean_e R_e(b) >= "
                  "lambda ||b - beta*||^2", lhs_name="max_e R_e(b) - mean_e R_e(b)",
                  rhs_name="lambda ||b - beta*||^2", lhs=float(R.max() - R.mean()),
                  rhs=float(c1b.margin * (d @ d)), relation=">=",
                  slack=tol * (1.0 + np.abs(R).max()), premise=c1b.holds,
                  premise_text=_PREMISE_1B.format(c1b.relative_margin, c1b.tol),
                  details=dict(lam=c1b.margin, w0=c1b.weights, risks=R))


def theorem4_radius(lam: float, a: float, mu: float) -> float:
    """The largest ``x = ||b - beta*||`` with ``lam x^2 <= a x + mu``:
    ``(a + sqrt(a^2 + 4 lam mu)) / (2 lam)``.

    Theorem 4's proof (A.6) gives ``a = ||G^T h|| / (1 + gamma |E|) +
    ||grad Phi_mu(b)|| / 2``; at a stationary point ``a`` is the bias term alone.
    """
    return float((a + np.sqrt(a * a + 4.0 * lam * mu)) / (2.0 * lam))


def theorem4(sem: LinearSEM, b: ArrayLike, *, gamma: float, mu: float,
             condition_1b: IdentificationResult | None = None,
             tol: float = 1e-8) -> StatementCheck:
    """Theorem 4 with the constants of its proof (A.6): under Condition 1b, every b has

        lambda ||b - beta*||^2 <= (||G^T h|| / (1 + gamma|E|) + ||grad Phi_mu(b)|| / 2)
                                  ||b - beta*|| + mu,

    i.e. ``||b - beta*||`` is at most :func:`theorem4_radius` of those constants; at a
    stationary point (``grad Phi_mu(b) = 0``) that radius is
    ``O(1 / (lambda (1 + gamma|E|)) + sqrt(mu / lambda))``, the bound (21).  The last
    term is ``mu (||w0||^2 - ||w_bar||^2) <= mu``.  ``mu`` follows the convention of
    (19) (counted once), as :func:`negdro_stats.estimation.objective.gradient`.  Only ``||G^T h||``
    enters, so the sign erratum of Lemma 1 does not change this statement.  The slack is
    ``tol`` times ``1 + radius``.
    """
    _additive(sem, "theorem4")
    if not (np.isfinite(gamma) and gamma >= 0 and np.isfinite(mu) and mu >= 0):
        raise DataError(f"theorem4 needs gamma >= 0 and mu >= 0 (finite); got gamma={gamma!r}, "
                        f"mu={mu!r}.")
    d = _deviation(sem, b)
    c1b = _margin(sem, condition_1b)
    mom = sem.moments()
    g, w_bar = gradient(d + sem.beta_star, mom.Sigma, mom.sxy, mom.syy, gamma=gamma, mu=mu)
    bias = np.linalg.norm(sem.G.T @ sem.h) / (1.0 + gamma * mom.n_envs)
    a = bias + np.linalg.norm(g) / 2.0
    radius = theorem4_radius(c1b.margin, a, mu) if c1b.margin > 0 else np.inf
    return _check(statement="Theorem 4", claim="||b - beta*|| <= the radius of (A.6)",
                  lhs_name="||b - beta*||",
                  rhs_name="(a + sqrt(a^2 + 4 lam mu)) / (2 lam), a = ||G^T h||/(1+gamma|E|)"
                           " + ||grad Phi_mu(b)||/2", lhs=float(np.linalg.norm(d)),
                  rhs=radius, relation="<=", slack=tol * (1.0 + radius),
                  premise=c1b.holds,
                  premise_text=_PREMISE_1B.format(c1b.relative_margin, c1b.tol),
                  details=dict(lam=c1b.margin, bias=bias, grad_norm=float(np.linalg.norm(g)),
                               w_bar=w_bar))


# ------------------------------------------------------------------- Proposition 1
def proposition1(sem_or_Sigma: LinearSEM | Moments | ArrayLike, certificate: Certificate1a, *,
                 envs: tuple | None = None) -> StatementCheck:
    """Proposition 1, Condition 1a => 1b, by the construction of its proof (A.5).

    Given a certificate ``sum_{E1} w_e Sigma_e - sum_{E2} w'_f Sigma_f > 0`` (14), the
    weights ``w0_e = 1/|E| + C w_e`` on E1, ``1/|E| - C w'_f`` on E2 and ``1/|E|``
    elsewhere, with ``C = min{(1 - 1/|E|) / max w, (1/|E|) / max w'}``, lie in the
    simplex and have ``A(w0) = C (certificate difference) > 0``.  The check compares
    ``lambda_min(A(w0))`` with ``C lambda_min(difference)``; the premise is that the
    certificate's difference is positive definite.  ``certificate`` is typically
    ``check_condition_1b(...).certificate`` (the other direction of the proposition).
    """
    if not isinstance(certificate, Certificate1a):
        raise DataError("proposition1 needs a Certificate1a as 'certificate' (e.g. "
                        "check_condition_1b(...).certificate, which is None when Condition "
                        f"1b fails); got {type(certificate).__name__}.")
    if isinstance(sem_or_Sigma, LinearSEM | Moments):
        mom = sem_or_Sigma.moments() if isinstance(sem_or_Sigma, LinearSEM) else sem_or_Sigma
        Sigma, envs = mom.Sigma, mom.envs
    else:
        Sigma = np.asarray(sem_or_Sigma, dtype=np.float64)
        envs = tuple(range(Sigma.shape[0])) if envs is None else tuple(envs)
    E = len(envs)
    index = {e: k for k, e in enumerate(envs)}
    up = [index[e] for e in certificate.E1]
    down = [index[e] for e in certificate.E2]
    diff = (np.tensordot(certificate.w, Sigma[up], axes=1)
            - np.tensordot(certificate.w_prime, Sigma[down], axes=1))
    kappa = float(np.linalg.eigvalsh(diff)[0])
    C = min((1 - 1 / E) / certificate.w.max(), (1 / E) / certificate.w_prime.max())
    w0 = np.full(E, 1.0 / E)
    w0[up] += C * certificate.w
    w0[down] -= C * certificate.w_prime
    A = np.tensordot(w0 - 1.0 / E, Sigma, axes=1)                  # A(w0), eq. (16)
    lam = float(np.linalg.eigvalsh(A)[0])
    in_simplex = bool(np.all(w0 >= -1e-12) and abs(w0.sum() - 1) <= 1e-12)
    scale = 1.0 + np.abs(Sigma).max()
    return _check(statement="Proposition 1", claim="a Condition 1a certificate gives "
                  "w0 in the simplex with lambda_min(A(w0)) = C kappa > 0",
                  lhs_name="lambda_min(A(w0)) (0 if w0 leaves the simplex)",
                  rhs_name="C * lambda_min(certificate difference)",
                  lhs=lam if in_simplex else 0.0, rhs=C * kappa, relation="==",
                  slack=1e-9 * scale, premise=bool(kappa > 1e-12 * scale),
                  premise_text=f"the certificate's difference (14) is positive definite: "
                               f"kappa = {kappa:.3g}",
                  details=dict(C=C, w0=w0))


# ------------------------------------------------------------- population exactness
def algorithm3_exactness(sem: LinearSEM, *, gamma: float = 20.0, mu: float = 1e-3,
                         tau: float = 0.1, threshold: float = 0.15,
                         tol: float = 1e-6) -> StatementCheck:
    """Algorithm 3 (the paper's estimator, ``refit="negdro"``) on population moments
    returns ``beta*`` and its support exactly, when Theorem 4's radius is small.

    Premise: no hidden confounding, Condition 1b on the standardised scale, and the
    radius ``r`` of Theorem 4 at a stationary point of the first stage below
    ``threshold`` with every causal coefficient (standardised) above ``threshold + r``.
    Why: the first stage minimises ``Phi_{mu,tau} = (1 + tau) Phi_{mu'}`` with
    ``c' = c / (1 + tau)``, ``mu' = mu / (1 + tau)``, so Theorem 4's proof bounds its
    error by ``r`` (with ``1 - c'|E|`` in place of ``1 / (1 + gamma|E|)``); thresholding
    then keeps exactly the causes, on which the risks have no first-order term, and
    ``beta*`` minimises every later stage.  The slack is ``tol (1 + max |beta*|)``.
    """
    _additive(sem, "algorithm3_exactness")
    mom = sem.moments()
    d, s_y = mom.scales()
    std = mom.rescale(d, s_y)
    c1b = check_condition_1b(std)
    E = mom.n_envs
    beta_std = sem.beta_star * d / s_y
    causal = beta_std != 0
    c_tau = negative_weight(gamma, E) / (1 + tau)
    v_norm = np.linalg.norm(sem.G.T @ sem.h / (d * s_y))        # G^T h, standardised
    radius = (theorem4_radius(c1b.margin, (1 - c_tau * E) * v_norm, mu / (1 + tau))
              if c1b.margin > 0 else np.inf)
    confounded = bool(np.any(sem.Omega[0, 1:] != 0))
    premise = (not confounded and c1b.holds and radius < threshold
               and bool(np.all(np.abs(beta_std[causal]) >= threshold + radius)))
    out = solve(mom, SolverOptions(gamma=gamma, mu=mu, tau=tau, threshold=threshold,
                                   refit="negdro"))
    scale = 1.0 + np.abs(sem.beta_star).max()
    check = _check(statement="Algorithm 3 (population)",
                   claim="the estimate is beta* and its support is {j: beta*_j != 0}",
                   lhs_name="Algorithm 3's estimate", rhs_name="beta*", lhs=out.b,
                   rhs=sem.beta_star, relation="==", slack=tol * scale, premise=premise,
                   premise_text=f"no hidden confounding ({not confounded}), Condition 1b "
                                f"(standardised lambda {c1b.margin:.3g}), Theorem 4 radius "
                                f"{radius:.3g} < threshold {threshold:g} <= min |causal| - "
                                "radius",
                   details=dict(radius=radius, support=out.support, beta_std=beta_std))
    return _with_support(check, out.support, causal)


def default_exactness(sem: LinearSEM, *, condition_1b: IdentificationResult | None = None,
                      tol: float = 1e-6) -> StatementCheck:
    """The default estimator (``NegDRO.from_moments(sem.moments()).fit()``) returns
    ``beta*`` and its support exactly on population moments when Condition 1b holds and
    it takes the invariance route.

    This is the package's claim, built on Theorem 3 and Lemma 1: with exact moments the
    invariance equations hold exactly at ``beta*`` on every support containing the
    causes, and Condition 1b makes ``beta*`` their only solution.  Children of Y, weak
    parents and hidden confounding are all allowed.  The premise includes the route
    (``results.selection.route == "invariance"``): with too few equations to test
    invariance ((|E| - 1) p not above the support size) or a weakly identified support
    the default falls back to Algorithm 3, which carries Theorem 4's bias under
    confounding (see :func:`algorithm3_exactness` for when it is exact).  The slack is
    ``tol (1 + max |beta*|)``.

    Under Condition 4 (Theorem 6) or Condition 6 (Theorem 12) alone the paper promises
    ``beta*`` only in the limit ``gamma -> inf``, and the default estimate at
    ``gamma = 20`` is not exact: hypothesis shrinks a counterexample to two covariates
    (``beta* = 0``, an intervened child ``X2 = X1 + 1.5 Y``; estimate
    ``(-0.066, 0.044)``), so no exactness statement is made there.
    """
    _additive(sem, "default_exactness")
    c1b = _margin(sem, condition_1b)
    with warnings.catch_warnings(record=True) as caught:       # reported in details
        warnings.simplefilter("always")
        res = NegDRO.from_moments(sem.moments()).fit(n_boot=0)
    b = res.params.to_numpy()
    check = _check(statement="Default estimator (population)",
                   claim="the estimate is beta* and its support is {j: beta*_j != 0}",
                   lhs_name="the default estimate", rhs_name="beta*", lhs=b,
                   rhs=sem.beta_star, relation="==",
                   slack=tol * (1.0 + np.abs(sem.beta_star).max()),
                   premise=c1b.holds and res.selection.route == "invariance",
                   premise_text=_PREMISE_1B.format(c1b.relative_margin, c1b.tol)
                   + f"; the route taken is {res.selection.route!r} ({res.selection.reason})",
                   details=dict(condition_1b=c1b.holds, route=res.selection.route,
                                support=res.support.to_numpy(),
                                warnings=[(w.category.__name__, str(w.message))
                                          for w in caught]))
    return _with_support(check, res.support.to_numpy(), sem.beta_star != 0)


def _with_support(check: StatementCheck, support: FloatArray, causal: FloatArray
                  ) -> StatementCheck:
    """The estimate's check, failing also when the support differs from beta*'s."""
    same = bool(np.array_equal(np.asarray(support, dtype=bool), causal))
    if same:
        return check
    return replace(check, holds=False,
                   details={**check.details, "support differs from beta*'s": True})
