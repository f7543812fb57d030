"""Per-environment fourth moments of ``(X, Y)``, from a sample of rows kept in the one pass.

The selection weights the invariance conditions by the score covariances ``Var_e(Z r)``,
``r = Y - b^T X``, and the equal-risk test needs ``Var_e(r^2)``, both at several ``b``:
fourth moments of the rows.  Per environment, take the rows about their mean ``c_e``,
``v = (X - c_e^X, Y - c_e^Y, 1)`` (``m = p + 2`` entries).  ``Z`` and ``r`` are linear
maps of ``v`` (``Z = T v``, ``r = alpha^T v``), so at any ``b``

    Var_e(Z r) = T (E_e[v v^T r^2] - h h^T) T^T,   h = E_e[v r],

a pass over the kept rows (:meth:`FourthMoments.score_cov`,
:meth:`FourthMoments.risk_moments`).  The selection takes from them only the
non-Gaussian part of the score covariance, ``Var_e(Z r)`` minus its Gaussian (Isserlis)
form from the same rows (:meth:`FourthMoments.cumulant`), a correction that needs no more
than a few thousand rows to be estimated well.  So at most ``SAMPLE_ROWS`` rows per
environment are kept, all of them below that: the rows whose position in the source
(``0, 1, ...``) has the smallest splitmix64 hash, a bottom-k sample that any split into
chunks, files, batches or partitions keeps the same, in hash order.  Every source -- a
frame, arrays, a CSV stream, Parquet, Dask, blocks -- therefore keeps the same rows to the
last bit, and :meth:`NegDRO.from_moments` on their moments gives the same fit.

:class:`~negdro_stats.Moments` carries the sample through its changes of
variables: subsets and an appended constant are index maps, centring moves ``c``,
rescaling is a diagonal scaling.  About the sample's mean the sums keep their precision at
any offset (``1e7 + noise``).

Cost: ``SAMPLE_ROWS m^2`` flops per environment and evaluation (a fit evaluates at 3 ``b``,
its summary at 2 more), ``SAMPLE_ROWS (m + 1)`` numbers per environment.  (Folding the
sample into ``E_e[P P^T]``, ``P = vech(v v^T)``, would make any evaluation ``O(m^4)``:
``SAMPLE_ROWS m^4 / 4`` flops per environment at the end of the pass, 28 ms of a 36 ms
fit at p = 10 and 0.6 s at p = 30, for 5 evaluations.)  Samples are
kept up to ``MAX_P`` covariates and ``MAX_ENTRIES`` numbers over all environments (at
p = 100, 9 environments); beyond that the score covariance is computed from the rows, in
memory or read again from the source, and takes its Gaussian form where there are none
(the summary says so).  Up to ``MAX_P`` a fit's hundreds of score covariances (a
least-risk search) cost a sum over the sample each, not a pass over the rows: at p = 100
and 4 x 125,000 rows 25 s where the rows took 102 s (and a Parquet file read again 515
s); the covariance-shift test's kurtosis and the robust sets' Bartlett factor are
measured on the sample too (past ``MAX_P`` they take Gaussian values).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from .._typing import FloatArray
from .dependence import LongRun

__all__ = ["FourthMoments", "FourthAccumulator", "gaussian_score_cov", "isserlis_parts",
           "block", "takes_every", "score_cov_derivative", "score_cov_form",
           "MAX_P", "MAX_ENTRIES", "SAMPLE_ROWS", "RESIDUAL"]

MAX_P = 100                 # covariates carried at most (an appended constant not counted)
SAMPLE_ROWS = 1 << 14       # rows per environment the fourth moments are computed from
MAX_ENTRIES = 1 << 24       # numbers kept over all environments (128 MiB)
RESIDUAL = -1               # an instrument index that stands for the residual r itself


def block(A: FloatArray, rows, cols) -> FloatArray:
    """``A[:, rows][:, :, cols]`` of a stack of matrices ``A`` (E, m, k), C-ordered (no
    copy of a C-ordered ``A`` where both take every row and column in order).  The fancy
    index alone leaves the environments innermost in memory, where batched products copy
    or stride: Algorithm 3's SQP at p = 1,000 takes 1.34 s for 9 steps on it."""
    if takes_every(rows, A.shape[1]) and takes_every(cols, A.shape[2]):
        return np.ascontiguousarray(A)
    return np.ascontiguousarray(A[:, rows][:, :, cols])


def takes_every(index, size: int) -> bool:
    """Whether ``index`` (a slice or integers) takes every one of ``size`` in order."""
    if isinstance(index, slice):
        return index == slice(None)
    index = np.asarray(index)
    return (index.dtype.kind in "iu" and len(index) == size
            and bool((index == np.arange(size)).all()))


def outer(a: FloatArray, z: FloatArray) -> FloatArray:
    return np.einsum("...i,...j->...ij", a, z)


def isserlis_parts(mom, b: FloatArray, cols: np.ndarray):
    """Per environment, for ``r = Y - b^T X`` and the instruments ``Z = X_cols``: means
    ``mu`` of Z and ``mu_r``, ``E[X r]`` (all covariates) and ``E[Z r]``, ``E[r^2]``,
    ``c = Cov(Z, r)`` and ``E[Z Z^T]``.  A column :data:`RESIDUAL` in ``cols`` stands
    for ``r`` itself (``Z r = r^2``: the risk's score).  ``mom`` has the fields of
    :class:`~negdro_stats.Moments`."""
    mu_r = mom.mean_y - mom.mean_x @ b
    nz = np.flatnonzero(b)                          # the fits' b are sparse: O(E p |S|)
    Sb = mom.Sigma[:, :, nz] @ b[nz]
    g_full = mom.sxy - Sb
    risk = mom.syy - 2.0 * (mom.sxy @ b) + Sb @ b
    x = cols != RESIDUAL
    if x.all():
        mu, g, Sig = mom.mean_x[:, cols], g_full[:, cols], block(mom.Sigma, cols, cols)
    else:
        xc = np.where(x, cols, 0)
        mu = np.where(x, mom.mean_x[:, xc], mu_r[:, None])
        g = np.where(x, g_full[:, xc], risk[:, None])
        Sig = block(mom.Sigma, xc, xc).astype(g.dtype)   # E[W W^T], W = (X_cols, r)
        Sig[:, ~x, :] = g[:, None, :]
        Sig[:, :, ~x] = g[:, :, None]
    c = g - mu * mu_r[:, None]
    return mu, mu_r, g_full, g, risk, c, Sig


def gaussian_score_cov(mom, b: FloatArray, cols: np.ndarray | None = None,
                       parts: tuple | None = None, long_run: LongRun | None = None
                       ) -> FloatArray:
    """``Var_e(X r)`` at ``b`` from first and second moments, exact for Gaussian rows.

    With ``r = Y - b^T X``, per environment mean ``mu`` of X, ``mu_r`` of r and
    covariances ``C_xx``, ``c = Cov(X, r)``, ``C_rr``, Isserlis' theorem gives::

        E[X X^T r^2] = mu mu^T (mu_r^2 + C_rr) + 2 mu_r (mu c^T + c mu^T)
                       + (mu_r^2 + C_rr) C_xx + 2 c c^T
                     = E[X X^T] E[r^2] + 2 mu_r (mu c^T + c mu^T) + 2 c c^T,

    and ``Var_e(X r) = E[X X^T r^2] - g g^T`` with ``g = E[X r]``; on the covariates
    ``cols`` only (default all), shape (E, q, q).  For non-Gaussian rows the difference
    is a fourth-cumulant term (:meth:`FourthMoments.cumulant`).  ``mom`` has the fields of
    :class:`~negdro_stats.Moments`; ``parts``: :func:`isserlis_parts` at ``b``
    and ``cols`` where the caller has them.  ``long_run``: for dependent rows, whose
    :attr:`~negdro_stats.data.dependence.LongRun.share` multiplies the form
    (:mod:`negdro_stats.data.dependence`).
    """
    cols = np.arange(mom.Sigma.shape[1]) if cols is None else np.asarray(cols)
    mu, mu_r, _, g, risk, c, Sig = isserlis_parts(mom, b, cols) if parts is None else parts
    twice = 2.0 * mu_r[:, None]                 # the four outer products in one product
    low = np.stack([twice * mu, twice * c, 2.0 * c, -g], axis=2)            # (E, q, 4)
    V = low @ np.stack([c, mu, c, g], axis=1)
    V += Sig * risk[:, None, None]
    return V if long_run is None else V * long_run.share[:, None, None]


def score_cov_form(mom, parts: tuple, cols: np.ndarray, a: FloatArray,
                   S: np.ndarray) -> FloatArray:
    """``a_e^T (dV_e / db_k) a_e`` for ``k`` in ``S``, shape (E, |S|): the only part of
    :func:`score_cov_derivative` the CUE gradients need, without forming ``dV a``
    (O(|E| p |S|) in a few vector operations; ``dV a`` takes 15 operations on (E, q, |S|)
    arrays, a quarter of a robust set's time at p = 30).  Differentiating ``a^T V a =
    a^T E[W W^T] a rho + 4 mu_r (mu^T a) (c^T a) + 2 (c^T a)^2 - (g^T a)^2`` (the terms of
    :func:`score_cov_derivative`, where only ``r`` moves) with ``a_r`` the weight of the
    residual's column: ``a^T dE[W W^T] a = 2 a_r (dg^T a) - a_r^2 d rho``."""
    mu, mu_r, g_full, g, rho, c, Sig = parts
    is_r = cols == RESIDUAL
    a_r = a[:, is_r].sum(axis=1)                                      # (E,)
    a_x = np.zeros_like(mom.mean_x)                                   # a on the covariates
    np.add.at(a_x, (slice(None), cols[~is_r]), a[:, ~is_r])           # (a column twice: sum)
    d_rho, d_mur = -2.0 * g_full[:, S], -mom.mean_x[:, S]              # (E, |S|)
    d_ga = a_r[:, None] * d_rho - np.einsum("ep,epk->ek", a_x, mom.Sigma[:, :, S])
    ca, mua, ga = (np.einsum("ei,ei->e", v, a) for v in (c, mu, g))
    d_mua = a_r[:, None] * d_mur
    d_ca = d_ga - mu_r[:, None] * d_mua - mua[:, None] * d_mur
    aSa = np.einsum("ei,eij,ej->e", a, Sig, a)
    return ((2.0 * a_r[:, None] * d_ga - (a_r**2)[:, None] * d_rho) * rho[:, None]
            + aSa[:, None] * d_rho + 4.0 * d_mur * (mua * ca)[:, None]
            + 4.0 * mu_r[:, None] * (d_mua * ca[:, None] + mua[:, None] * d_ca)
            + 4.0 * ca[:, None] * d_ca - 2.0 * ga[:, None] * d_ga)


def score_cov_derivative(mom, parts: tuple, cols: np.ndarray, a: FloatArray,
                         S: np.ndarray | None = None) -> FloatArray:
    """``(dV_e / db_k) a_e`` for ``k`` in ``S`` (default all), shape (E, |cols|, |S|),
    for ``V`` the :func:`gaussian_score_cov` on ``cols`` at the point of ``parts``
    (:func:`isserlis_parts`): the derivative of the Gaussian form ``V = E[W W^T] rho +
    2 mu_r (mu c^T + c mu^T) + 2 c c^T - g g^T`` of ``W = (Z, r)``, ``rho = E[r^2]``,
    ``g = E[W r]``, ``c = Cov(W, r)``, where only the entries of ``r`` move with ``b``
    (``dr / db_k = -X_k``).  The CUE gradients take ``a^T dV a`` (the selection's and the robust
    statistic's), Kleibergen's score statistic ``dV a`` itself."""
    S = np.arange(mom.p) if S is None else S
    mu, mu_r, g_full, g, rho, c, Sig = parts
    is_r = cols == RESIDUAL
    xc = np.where(is_r, 0, cols)
    d_rho, d_mur = -2.0 * g_full[:, S], -mom.mean_x[:, S]            # (E, |S|)
    d_mu = np.where(is_r[None, :, None], d_mur[:, None, :], 0.0)   # (E, c, |S|)
    d_g = np.where(is_r[None, :, None], d_rho[:, None, :], -mom.Sigma[:, xc][:, :, S])
    d_c = d_g - d_mu * mu_r[:, None, None] - mu[:, :, None] * d_mur[:, None, :]
    ca, mua, ga = (np.einsum("ei,ei->e", v, a) for v in (c, mu, g))
    d_ca, d_mua, d_ga = (np.einsum("eip,ei->ep", v, a) for v in (d_c, d_mu, d_g))
    a_r = a[:, is_r].sum(axis=1)                # (0 without the risk's column)
    d_Sig_a = np.where(is_r[None, :, None], d_ga[:, None, :],   # r's row: d E[r W^T] a,
                       d_g * a_r[:, None, None])                # the others d E[W r] a_r
    return (d_Sig_a * rho[:, None, None] + (Sig @ a[:, :, None]) * d_rho[:, None, :]
            + 2.0 * d_mur[:, None, :] * (mu * ca[:, None] + c * mua[:, None])[:, :, None]
            + 2.0 * mu_r[:, None, None] * (d_mu * ca[:, None, None]
                                           + mu[:, :, None] * d_ca[:, None, :]
                                           + d_c * mua[:, None, None]
                                           + c[:, :, None] * d_mua[:, None, :])
            + 2.0 * (d_c * ca[:, None, None] + c[:, :, None] * d_ca[:, None, :])
            - (d_g * ga[:, None, None] + g[:, :, None] * d_ga[:, None, :]))


@dataclass(frozen=True, slots=True, eq=False)
class FourthMoments:
    """Every environment's row sample about the points ``shift`` (module docstring).

    Attributes
    ----------
    shift : ndarray (E, p + 1)
        Per environment the point ``c_e`` of ``(X, Y)`` the rows are taken about.
    rows : tuple of ndarray (n_e, p + 2)
        Per environment the kept rows ``v = (X - c_e^X, Y - c_e^Y, 1)``, in hash order.
    second : ndarray (E, p + 2, p + 2)
        ``E_e[v v^T]`` (:meth:`of` computes it).
    """

    shift: FloatArray
    rows: tuple
    second: FloatArray

    @classmethod
    def of(cls, shift: FloatArray, rows) -> FourthMoments:
        """From the points and the rows ``v`` (the second moments computed here)."""
        return cls(shift, tuple(rows), np.stack([v.T @ v / len(v) for v in rows]))

    @property
    def m(self) -> int:
        return self.shift.shape[1] + 1

    # ---------------------------------------------------------- changes of variables
    def select(self, source: np.ndarray, constant: FloatArray | float = 0.0
               ) -> FourthMoments:
        """New variables ``(X', Y')`` of which variable ``j`` is old variable
        ``source[j]``, or the constant ``constant`` where ``source[j] < 0`` (its ``v``
        entry is 0); the ``1`` stays last."""
        src = np.append(np.asarray(source, dtype=int), self.m - 1)
        kept, at = src >= 0, np.maximum(src, 0)
        rows = [np.where(kept, v[:, at], 0.0) for v in self.rows]
        second = np.where(np.outer(kept, kept), self.second[:, at][:, :, at], 0.0)
        new_shift = np.where(src[:-1] >= 0, self.shift[:, at[:-1]], constant)
        return FourthMoments(new_shift, tuple(rows), second)

    def environments(self, keep: np.ndarray) -> FourthMoments:
        """The samples of the environments ``keep`` (integer indices)."""
        return FourthMoments(self.shift[keep], tuple(self.rows[e] for e in keep),
                             self.second[keep])

    def moved(self, offset: FloatArray) -> FourthMoments:
        """Of ``(X, Y) - offset`` (the same rows about the same points)."""
        return FourthMoments(self.shift - offset, self.rows, self.second)

    def scaled(self, factor: FloatArray) -> FourthMoments:
        """Of ``(X, Y) * factor`` entrywise."""
        s = np.append(factor, 1.0)
        return FourthMoments(self.shift * factor, tuple(v * s for v in self.rows),
                             self.second * np.multiply.outer(s, s))

    # ---------------------------------------------------------- what the tests need
    def _maps(self, b: FloatArray, cols: np.ndarray) -> tuple[FloatArray, FloatArray]:
        """``T`` (E, q, m) with ``Z = T v`` (``X_cols``, and ``r`` for a column
        :data:`RESIDUAL`) and ``alpha`` (E, m) with ``r = Y - b^T X = alpha^T v``."""
        E, k = self.shift.shape
        a = np.append(-np.asarray(b, dtype=np.float64), 1.0)
        alpha = np.empty((E, k + 1))
        alpha[:, :k] = a
        alpha[:, k] = self.shift @ a
        x = np.flatnonzero(cols != RESIDUAL)
        T = np.zeros((E, len(cols), k + 1))
        T[:, x, cols[x]] = 1.0
        T[:, x, k] = self.shift[:, cols[x]]
        T[:, cols == RESIDUAL, :] = alpha[:, None, :]      # the residual: r = alpha^T v
        return T, alpha

    def score_cov(self, b: FloatArray, cols: np.ndarray) -> FloatArray:
        """``Var_e(X_cols r)``, ``r = Y - b^T X``: ``T Cov(v r) T^T`` with
        ``Cov(v r) = E[v v^T r^2] - h h^T``, ``h = E[v r] = E[v v^T] alpha`` (centred
        before ``T`` adds the points back: a covariate at ``1e6`` keeps the precision of
        its variation); ``(E, q, q)``."""
        cols = np.asarray(cols, dtype=int)
        T, alpha = self._maps(b, cols)
        h = np.einsum("emn,en->em", self.second, alpha)
        C = np.stack([w.T @ w / len(w) for w in self._products(alpha)])
        C -= np.einsum("ei,ej->eij", h, h)
        V = T @ C @ T.transpose(0, 2, 1)
        return (V + V.transpose(0, 2, 1)) / 2.0          # symmetric to the last bit

    def _products(self, alpha: FloatArray) -> list[FloatArray]:
        """Per environment the rows' ``v r``, ``r = alpha_e^T v``."""
        return [v * (v @ a)[:, None] for v, a in zip(self.rows, alpha, strict=True)]

    def score_draws(self, b: FloatArray, cols: np.ndarray, draws: int,
                    rng: np.random.Generator) -> tuple[FloatArray, FloatArray]:
        """Resamples of every environment's rows (with replacement, ``draws`` times):
        per resample the mean of ``X_cols r`` less the sample's, ``(draws, E, q)``, and
        the covariance :meth:`score_cov` gives on it, ``(draws, E, q, q)``."""
        cols = np.asarray(cols, dtype=int)
        T, alpha = self._maps(b, cols)
        E, q = len(self.rows), len(cols)
        dev, cov = np.empty((draws, E, q)), np.empty((draws, E, q, q))
        upper = np.triu_indices(self.m)
        for e, w in enumerate(self._products(alpha)):
            n = len(w)
            picks = rng.integers(0, n, size=(draws, n)) + n * np.arange(draws)[:, None]
            weights = np.bincount(picks.ravel(), minlength=draws * n).reshape(draws, n) / n
            h = weights @ w                                 # (draws, m)
            products = weights @ (w[:, upper[0]] * w[:, upper[1]])   # E*[w w^T], one gemm
            C = np.empty((draws, self.m, self.m))
            C[:, upper[0], upper[1]] = C[:, upper[1], upper[0]] = products
            C -= outer(h, h)
            dev[:, e] = (h - w.mean(axis=0)) @ T[e].T
            V = T[e] @ C @ T[e].T
            cov[:, e] = (V + V.transpose(0, 2, 1)) / 2.0
        return dev, cov

    def risk_moments(self, b: FloatArray) -> tuple[FloatArray, FloatArray]:
        """``E_e[r^2]`` and ``E_e[r^4]``, ``r = Y - b^T X``."""
        _, alpha = self._maps(b, np.zeros(0, dtype=int))
        r2 = [(v @ a) ** 2 for v, a in zip(self.rows, alpha, strict=True)]
        return (np.einsum("em,emn,en->e", alpha, self.second, alpha),
                np.array([np.mean(x**2) for x in r2]))

    def cumulant(self, b: FloatArray, cols: np.ndarray) -> FloatArray:
        """The non-Gaussian part of ``Var_e(X_cols r)``: :meth:`score_cov` minus
        :func:`gaussian_score_cov` of the same rows (what a fit adds to the Gaussian form
        of its own moments, which use every row)."""
        E, k = self.shift.shape
        H = np.zeros((E, k + 1, k + 1))                   # (X, Y, 1) = H v
        H[:, np.arange(k + 1), np.arange(k + 1)] = 1.0
        H[:, :k, k] = self.shift
        raw = H @ self.second @ H.transpose(0, 2, 1)      # E[(X, Y, 1)(X, Y, 1)^T]
        p = k - 1
        rows = SimpleNamespace(mean_x=raw[:, :p, k], mean_y=raw[:, p, k],
                               Sigma=raw[:, :p, :p], sxy=raw[:, :p, p], syy=raw[:, p, p])
        return self.score_cov(b, cols) - gaussian_score_cov(rows, np.asarray(b, float), cols)


class FourthAccumulator:
    """The bottom-``SAMPLE_ROWS`` sample of every environment's rows (keyed by any
    label) by the hash of their positions, mergeable; :meth:`finish` gives the
    :class:`FourthMoments` (``None`` past ``MAX_P`` / ``MAX_ENTRIES``)."""

    def __init__(self, p: int) -> None:
        self.k = p + 1                                     # variables (X, Y)
        self.cells: dict | None = {} if p <= MAX_P else None   # [hashes, rows, bound]

    def _fits(self, n_envs: int) -> bool:
        return n_envs * SAMPLE_ROWS * (self.k + 2) <= MAX_ENTRIES

    def add(self, Z: FloatArray, key: object, hashes: np.ndarray) -> None:
        """Rows ``Z = [X, y]`` (``(rows, p + 1)``) of environment ``key``, with the hashes
        of their positions in the source (distinct)."""
        if self.cells is None or not len(Z):
            return
        if key not in self.cells and not self._fits(len(self.cells) + 1):
            self.cells = None
            return
        self._fold(key, np.asarray(hashes, dtype=np.uint64), np.asarray(Z, dtype=np.float64))

    def _fold(self, key: object, hashes: np.ndarray, rows: FloatArray) -> None:
        """Keep the ``SAMPLE_ROWS`` smallest hashes of the cell and the new rows (a full
        cell admits only rows below its largest hash: most rows are not copied)."""
        bound = None                                       # the largest hash kept, once full
        if key in self.cells:
            old_h, old_rows, bound = self.cells[key]
            if bound is not None:
                below = hashes < bound
                hashes, rows = hashes[below], rows[below]
            hashes, rows = np.concatenate([old_h, hashes]), np.concatenate([old_rows, rows])
        else:
            rows = rows.copy()
        if len(hashes) > 2 * SAMPLE_ROWS:                  # trim (amortised)
            keep = np.argpartition(hashes, SAMPLE_ROWS)[:SAMPLE_ROWS]
            hashes, rows = hashes[keep], rows[keep]
            bound = hashes.max()
        self.cells[key] = [hashes, rows, bound]

    def merge(self, other: FourthAccumulator) -> FourthAccumulator:
        """Fold ``other``'s samples in."""
        if self.cells is None or other.cells is None or not self._fits(
                len(self.cells.keys() | other.cells.keys())):
            self.cells = None
            return self
        for key, (hashes, rows, _) in other.cells.items():
            self._fold(key, hashes, rows)
        return self

    def finish(self, keys: list) -> FourthMoments | None:
        """The samples of the environments ``keys``, in that order, each in hash order (so
        that every source sums the same rows in the same order)."""
        if self.cells is None or any(k not in self.cells for k in keys):
            return None
        shifts, kept = [], []
        for key in keys:
            hashes, rows, _ = self.cells[key]
            rows = rows[np.argsort(hashes)[:SAMPLE_ROWS]]
            shift = rows.mean(axis=0)
            v = np.ones((len(rows), self.k + 1))
            v[:, :self.k] = rows - shift
            with np.errstate(over="ignore"):
                if not np.isfinite(np.abs(v).max() ** 4):   # fourth powers past float64:
                    return None                             # the rows, or the Gaussian form
            shifts.append(shift)
            kept.append(v)
        return FourthMoments.of(np.stack(shifts), kept)
