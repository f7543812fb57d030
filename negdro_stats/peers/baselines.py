"""Peer methods on the same per-environment moments, behind one small interface.

``fit_baseline(method, moments, **options) -> BaselineResult`` with ``method`` one of:

- ``"erm"``: pooled least squares (rows weighted equally, i.e. environments by n_e);
- ``"anchor"``: anchor regression (Rothenhaeusler et al. 2021) with the environment
  indicators as anchors: minimise ``||(I - P_A) r||^2 + gamma ||P_A r||^2``, i.e.
  ``sum_e pi_e [E_e r^2 + (gamma - 1) (E_e r)^2]``, ``r = Y - b^T X``;
- ``"drig"``: DRIG (Shen et al. 2025), eq. (32): ``R_0 + gamma sum_e w_e (R_e - R_0)``
  with a reference environment 0 and weights w;
- ``"causal_dantzig"``: CausalDantzig (Rothenhaeusler et al. 2019): the inverse of (31) on
  the environments' differences from their average (least squares over all of them;
  exactly the inverse for two environments), or with ``lam > 0`` the l1 version of
  Appendix C.3 as a linear programme;
- ``"icp"``: invariant causal prediction (Peters et al. 2016): every subset S up to
  ``max_size``, pooled OLS with intercept on S, Welch t-tests of residual means and
  F-tests of residual variances of each environment against the rest, Bonferroni factor
  2(|E| - 1) as in the R package and ``causalicp``; estimate = intersection of the
  accepted sets, intervals = union over accepted sets of the OLS intervals on S with the
  R package's quantile z_{1 - alpha/4} (0 outside S; the paper suggests a t quantile
  instead);
- ``"eills"``: EILLS (Fan et al. 2024) by brute force over supports:
  ``sum_e R_e(b) + gamma sum_e sum_{j in supp b} (E_e[(Y - b^T X) X_j])^2``.

ICP and EILLS enumerate subsets by size and stop after ``max_subsets`` of them (default
``MAX_SUBSETS`` = 2^15, every subset of 15 covariates), with ``details["capped"]`` set: a
deterministic limit, so results do not depend on the machine's load.

Everything is computed from the moments (the residual means and variances that ICP tests
are moments too), so these peers cost what NegDRO costs to read the data.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import optimize, stats

from .._stats import norm_ppf
from .._typing import FloatArray
from ..data.moments import Moments, block
from ..exceptions import DataError

MAX_SUBSETS = 2**15     # ICP / EILLS stop (and say so) after this many subsets: all of p = 15

__all__ = ["BaselineResult", "BASELINES", "ENUMERATING", "fit_baseline"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class BaselineResult:
    """A peer method's estimate.

    Attributes
    ----------
    method : str
    params : pandas.Series
    support : pandas.Series of bool
    seconds : float
        Wall time of the fit (moments given).
    conf_int : pandas.DataFrame or None
        ``lower``/``upper`` (ICP only).
    details : dict
        Method-specific facts (ICP: accepted sets and their p-values; EILLS: objective).
    """

    method: str
    params: pd.Series
    support: pd.Series
    seconds: float
    conf_int: pd.DataFrame | None = None
    details: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        sel = list(self.support[self.support].index)
        return f"<BaselineResult {self.method}: selected {sel}, {self.seconds:.3g} s>"


def _pooled(mom: Moments) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, float]:
    """Row-weighted pooled raw moments: Sigma, sxy, mean_x, mean_y, syy."""
    pi = mom.pooled_weights()
    return (np.tensordot(pi, mom.Sigma, 1), pi @ mom.sxy, pi @ mom.mean_x, pi @ mom.mean_y,
            float(pi @ mom.syy))


def _erm(mom: Moments) -> tuple[FloatArray, dict]:
    S, s, *_ = _pooled(mom)
    return np.linalg.solve(S, s), {}


def _anchor(mom: Moments, gamma: float = 5.0) -> tuple[FloatArray, dict]:
    pi = mom.pooled_weights()
    M = np.tensordot(pi, mom.Sigma, 1) + (gamma - 1) * np.einsum(
        "e,ei,ej->ij", pi, mom.mean_x, mom.mean_x)
    v = pi @ mom.sxy + (gamma - 1) * (pi * mom.mean_y) @ mom.mean_x
    return np.linalg.solve(M, v), {"gamma": gamma}


def _drig(mom: Moments, gamma: float = 10.0, reference: int = 0,
          weights: FloatArray | None = None) -> tuple[FloatArray, dict]:
    others = [e for e in range(mom.n_envs) if e != reference]
    w = np.full(len(others), 1 / len(others)) if weights is None else np.asarray(weights)
    S0, s0 = mom.Sigma[reference], mom.sxy[reference]
    M = S0 + gamma * np.tensordot(w, mom.Sigma[others] - S0, 1)          # Hessian/2 of (32)
    v = s0 + gamma * w @ (mom.sxy[others] - s0)
    if np.linalg.eigvalsh(M)[0] <= 0:
        raise DataError("DRIG's objective (the paper's eq. (32)) is not convex here: the "
                        "reference environment "
                        f"{mom.envs[reference]!r} is not dominated; choose another or a "
                        "smaller gamma.")
    return np.linalg.solve(M, v), {"gamma": gamma, "reference": mom.envs[reference]}


def _causal_dantzig(mom: Moments, lam: float = 0.0) -> tuple[FloatArray, dict]:
    D = (mom.Sigma - mom.Sigma.mean(axis=0)).reshape(-1, mom.p)
    r = (mom.sxy - mom.sxy.mean(axis=0)).reshape(-1)
    if lam == 0:
        b, *_ = np.linalg.lstsq(D, r, rcond=None)
        return b, {"lam": 0.0}
    # min ||b||_1  s.t.  ||D b - r||_inf <= lam, with b = u - v, u, v >= 0
    p = mom.p
    A = np.block([[D, -D], [-D, D]])
    lp = optimize.linprog(np.ones(2 * p), A_ub=A, b_ub=np.r_[r + lam, lam - r],
                          bounds=[(0, None)] * (2 * p), method="highs")
    if lp.status != 0:
        raise DataError(f"The l1 CausalDantzig LP is infeasible for lam = {lam:g}; raise lam.")
    return lp.x[:p] - lp.x[p:], {"lam": lam}


def _subsets(p: int, max_size: int | None, max_subsets: int):
    """Subsets of ``range(p)`` by size up to ``max_size``, then None once ``max_subsets``
    have been given (a deterministic cap on the enumeration, unlike a time limit)."""
    sizes = range(0, (p if max_size is None else max_size) + 1)
    for count, S in enumerate(itertools.chain.from_iterable(
            itertools.combinations(range(p), k) for k in sizes)):
        if count == max_subsets:
            yield None
            return
        yield S


def _eills(mom: Moments, gamma: float = 20.0, max_size: int | None = None,
           max_subsets: int = MAX_SUBSETS) -> tuple[FloatArray, dict]:
    p = mom.p
    best = (np.inf, np.zeros(p), ())
    for S in _subsets(p, max_size, max_subsets):
        if S is None:
            return best[1], {"objective": best[0], "support": best[2], "capped": True}
        idx = list(S)
        b = np.zeros(p)
        if idx:
            Sig = block(mom.Sigma, idx, idx)
            # sum_e R_e + gamma sum_e ||(Sigma_e b - sxy_e)_S||^2, quadratic in b_S
            M = Sig.sum(0) + gamma * np.einsum("eki,ekj->ij", Sig, Sig)
            v = mom.sxy[:, idx].sum(0) + gamma * np.einsum("eki,ek->i", Sig,
                                                           mom.sxy[:, idx])
            b[idx] = np.linalg.solve(M, v)
        g = mom.Sigma @ b - mom.sxy
        val = float(np.sum(mom.syy - 2 * mom.sxy @ b + (mom.Sigma @ b) @ b)
                    + gamma * np.sum(g[:, idx] ** 2))
        if val < best[0]:
            best = (val, b, S)
    return best[1], {"objective": best[0], "support": best[2], "capped": False}


def _icp(mom: Moments, alpha: float = 0.05, max_size: int | None = None,
         max_subsets: int = MAX_SUBSETS) -> tuple[FloatArray, dict]:
    if not np.isfinite(mom.n).all():
        raise DataError("ICP tests need sample sizes; these are population moments.")
    p, E, n = mom.p, mom.n_envs, mom.n
    N = n.sum()
    S_pool, s_pool, mx, my, syy = _pooled(mom)
    cov = S_pool - np.outer(mx, mx)                                     # pooled covariance
    cxy = s_pool - mx * my
    accepted, pvals, lo, hi = [], {}, np.full(p, np.inf), np.full(p, -np.inf)
    capped = False
    for S in _subsets(p, max_size, max_subsets):
        if S is None:
            capped = True
            break
        idx = list(S)
        b = np.zeros(p)
        if idx:
            b[idx] = np.linalg.solve(cov[np.ix_(idx, idx)], cxy[idx])
        c = my - b @ mx                                             # intercept
        m1 = mom.mean_y - mom.mean_x @ b - c                        # E_e[r]
        m2 = (mom.syy - 2 * mom.sxy @ b + (mom.Sigma @ b) @ b
              - 2 * c * (mom.mean_y - mom.mean_x @ b) + c * c)       # E_e[r^2]
        # each environment (a) against the rest (b), all environments at once
        na, nb = n, N - n
        ma, mb = m1, (n @ m1 - n * m1) / nb
        va = (m2 - ma**2) * na / (na - 1)
        vb = ((n @ m2 - n * m2) / nb - mb**2) * nb / (nb - 1)
        t = (ma - mb) / np.sqrt(va / na + vb / nb)                  # Welch
        dof = (va / na + vb / nb) ** 2 / ((va / na) ** 2 / (na - 1)
                                          + (vb / nb) ** 2 / (nb - 1))
        F = stats.f.cdf(va / vb, na - 1, nb - 1)
        smallest = min(float(np.min(2 * stats.t.sf(np.abs(t), dof))),
                       float(np.min(2 * np.minimum(F, 1 - F))))
        pval = min(1.0, smallest * 2 * (E - 1))
        pvals[S] = pval
        if pval >= alpha:
            accepted.append(S)
            if idx:   # OLS intervals on S with the R package's quantile z_{1-alpha/4}
                sigma = np.sqrt(max(syy - my**2 - cxy[idx] @ b[idx], 0.0) * N
                                / (N - len(idx) - 1))
                q = norm_ppf(1 - alpha / 4)
                se = sigma * np.sqrt(np.diag(np.linalg.inv(cov[np.ix_(idx, idx)])) / N)
                lo[idx] = np.minimum(lo[idx], b[idx] - q * se)
                hi[idx] = np.maximum(hi[idx], b[idx] + q * se)
            out = np.setdiff1d(np.arange(p), idx)
            lo[out], hi[out] = np.minimum(lo[out], 0.0), np.maximum(hi[out], 0.0)
    estimate = set(range(p))
    for S in accepted:
        estimate &= set(S)
    estimate = sorted(estimate) if accepted else []
    b = np.zeros(p)
    if estimate:
        b[estimate] = np.linalg.solve(cov[np.ix_(estimate, estimate)], cxy[estimate])
    if not accepted:
        lo, hi = np.full(p, np.nan), np.full(p, np.nan)
    return b, {"accepted_sets": accepted, "set_pvalues": pvals, "estimate": estimate,
               "model_rejected": not accepted, "capped": capped, "conf_int": (lo, hi)}


BASELINES = {"erm": _erm, "anchor": _anchor, "drig": _drig,
             "causal_dantzig": _causal_dantzig, "icp": _icp, "eills": _eills}
#: The peers that enumerate supports (cost 2^p, ``max_subsets``, ``details["capped"]``).
ENUMERATING = ("icp", "eills")


def fit_baseline(method: str, moments: Moments, **options) -> BaselineResult:
    """Fit a peer method on per-environment moments; see the module docstring.

    ``moments`` may come from :class:`negdro_stats.NegDRO` (``model.moments``), from data
    via :meth:`Moments.from_arrays`, or from a design (``sem.moments()``).  A covariate
    that is the constant 1 is an intercept: the peer is fitted about the pooled means
    (:meth:`Moments.about_means`), as in the leave-one-environment-out validation, and
    the intercept reported in the data's frame (ICP's interval for it is NaN: a bound of
    the centred intercept alone does not map).  On raw moments DRIG's and causal
    Dantzig's estimates depended on the data's origin (they difference raw second
    moments), and offsets of 1e6 cost digits (causal Dantzig's intercept -1.93e6 for
    -4.15e5); about the means they do neither.
    """
    if method not in BASELINES:
        raise DataError(f"Unknown baseline {method!r}; choose from {sorted(BASELINES)}.")
    start = time.perf_counter()
    ones = moments.ones()
    if len(ones) == 1:              # an intercept: fitted about the pooled means
        work, origin = moments.about_means(ones[0])
        b, details = BASELINES[method](work, **options)
        b = np.array(b, dtype=np.float64)
        b[ones[0]] += origin[-1] - b @ origin[:-1]             # (origin's const entry: 0)
        if details.get("conf_int") is not None:      # (a bound of c_0 alone does not map)
            details["conf_int"] = tuple(np.where(np.arange(len(b)) == ones[0], np.nan, v)
                                        for v in details["conf_int"])
    else:
        b, details = BASELINES[method](moments, **options)
    seconds = time.perf_counter() - start
    names = pd.Index(moments.names, name="covariate")
    ci = details.pop("conf_int", None)
    return BaselineResult(
        method=method, params=pd.Series(b, index=names, name="coef"),
        support=pd.Series(np.abs(b) > 0, index=names, name="selected"), seconds=seconds,
        conf_int=None if ci is None else pd.DataFrame({"lower": ci[0], "upper": ci[1]},
                                                      index=names),
        details=details)
