"""Per-environment moments: the one currency of the package (docs/design.rst).

The squared-error risk of a linear predictor is quadratic in ``b``, so every quantity in
the paper is a function of, per environment ``e``,

    n_e,  mean_x[e] = E_e[X],  mean_y[e] = E_e[Y],
    Sigma[e] = E_e[X X^T],  sxy[e] = E_e[X Y],  syy[e] = E_e[Y^2]

(raw, uncentred second moments: mean shifts are part of the heterogeneity, so nothing is
centred per environment).  :class:`Moments` holds them, and, for sample moments, the
within-environment covariances ``cov[e] = Cov_e([X, Y])`` they were formed from: raw
moments of ``1e9 + noise`` cannot carry the noise's variance (it is below the rounding of
``1e18``), so a fit with an intercept, which only needs the centred moments
(:meth:`Moments.centred`), takes them from ``cov``.  It is built from rows in one
pass (:meth:`Moments.from_arrays`, :class:`MomentAccumulator` for chunked streams) or
directly from population moments (:meth:`Moments.from_population`, used by
:class:`negdro_stats.LinearSEM`).  Solvers never touch rows, so their cost does not
depend on n.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, fields, replace
from typing import Literal

import numpy as np
import pandas as pd
from scipy import linalg
from threadpoolctl import ThreadpoolController

from .._typing import ArrayLike, FloatArray
from .fourth import FourthAccumulator, FourthMoments, block

__all__ = ["Moments", "MomentAccumulator", "N_POPULATION", "block"]

N_POPULATION = 1e12      # rows assumed for population moments: noise far below rounding
EXACT_FIT = 1e-10        # unexplained share of an outcome the covariates give exactly
DEFAULT_CHUNK_ROWS = 65_536
_SQRT_TINY = float(np.sqrt(np.finfo(np.float64).tiny))   # ~1.5e-154: its square underflows



@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Moments:
    """Per-environment first and raw second moments of ``(X, Y)``.

    Attributes
    ----------
    n : ndarray, shape (E,)
        Rows per environment (``inf`` for population moments).
    mean_x : ndarray, shape (E, p)
        ``E_e[X]``.
    mean_y : ndarray, shape (E,)
        ``E_e[Y]``.
    Sigma : ndarray, shape (E, p, p)
        ``E_e[X X^T]``, the uncentred second moment (not a covariance).
    sxy : ndarray, shape (E, p)
        ``E_e[X Y]``.
    syy : ndarray, shape (E,)
        ``E_e[Y^2]``.
    envs : tuple
        Environment labels, in the order of the first axis.
    names : tuple of str
        Covariate names.
    outcome : str
        Outcome name.
    source : {"sample", "population"}
        Whether these are sample or population moments.
    fourth : FourthMoments or None
        The rows' fourth moments (:mod:`negdro_stats.data.fourth`), from which the score
        covariances and risk variances of the tests follow at any ``b``; computed in the
        pass over the rows up to :data:`negdro_stats.data.fourth.MAX_P` covariates, None for
        population moments and beyond it.
    cov : ndarray, shape (E, p + 1, p + 1), or None
        ``Cov_e([X, Y])``, accumulated about each environment's mean, so exact at any
        offset; None where only raw moments are known (then ``Sigma - mean mean^T``:
        :meth:`within`).  It must describe the same moments: a change of ``Sigma``,
        ``sxy``, ``syy`` or the means that does not change it must drop it (checked).
    """

    n: FloatArray
    mean_x: FloatArray
    mean_y: FloatArray
    Sigma: FloatArray
    sxy: FloatArray
    syy: FloatArray
    envs: tuple
    names: tuple[str, ...]
    outcome: str = "y"
    source: Literal["sample", "population"] = "sample"
    fourth: FourthMoments | None = None
    cov: FloatArray | None = None

    def __post_init__(self) -> None:
        if self.cov is None:
            return
        # Along a fixed random direction v: |(derived - cov) v| <= 1e-8 size (size @ |v|)
        # wherever every entry is within 1e-8 size size^T (rounding: ~eps of the raw
        # moments' size); the matrices themselves take 0.05 s a copy at p = 1,000.  A
        # column whose mean square underflows (|x| below ~1e-154, e.g. x * 1e-200) keeps
        # cross moments its size of 0 cannot bound: its size is at least sqrt(tiny)
        # (the data checks refuse such columns with their own message).
        v = np.random.default_rng(0).standard_normal(self.p + 1)
        mean = np.column_stack([self.mean_x, self.mean_y])
        raw_v = np.column_stack([self.Sigma @ v[:-1] + self.sxy * v[-1],
                                 self.sxy @ v[:-1] + self.syy * v[-1]])
        size = np.maximum(np.sqrt(np.abs(np.column_stack([np.einsum("eii->ei", self.Sigma),
                                                          self.syy]))), _SQRT_TINY)
        with np.errstate(invalid="ignore"):          # (an empty block's NaN moments)
            gap = raw_v - mean * (mean @ v)[:, None] - self.cov @ v
            stale = np.abs(gap) > 1e-8 * size * (size @ np.abs(v))[:, None]
        if stale.any():
            raise ValueError("Moments.cov does not match the raw moments: a transform "
                             "changed them without carrying cov (pass cov=None).")

    def __setstate__(self, state: list) -> None:
        """Unpickling (a frozen dataclass's list of field values): fields a file saved by
        an earlier version lacks (``cov``) take their defaults."""
        for i, f in enumerate(fields(self)):
            object.__setattr__(self, f.name, state[i] if i < len(state) else f.default)

    def _raw_z(self) -> FloatArray:
        """``E_e[Z Z^T]``, ``Z = [X, Y]``."""
        p = self.p
        Z = np.empty((self.n_envs, p + 1, p + 1))
        Z[:, :p, :p], Z[:, :p, p], Z[:, p, :p], Z[:, p, p] = (self.Sigma, self.sxy,
                                                                self.sxy, self.syy)
        return Z

    def _raw_within(self) -> FloatArray:
        mean = np.column_stack([self.mean_x, self.mean_y])
        return self._raw_z() - np.einsum("ei,ej->eij", mean, mean)

    def within(self) -> FloatArray:
        """``Cov_e([X, Y])`` (E, p + 1, p + 1): :attr:`cov` where kept, else from the raw
        moments (exact for population moments; for sample moments with offsets beyond
        ~1e7 standard deviations only ``cov`` keeps the variation)."""
        return self._raw_within() if self.cov is None else self.cov

    @property
    def n_envs(self) -> int:
        """Number of environments ``|E|``."""
        return self.Sigma.shape[0]

    @property
    def p(self) -> int:
        """Number of covariates."""
        return self.Sigma.shape[1]

    @property
    def nobs(self) -> float:
        """Total number of rows (``inf`` for population moments)."""
        return float(self.n.sum())

    @classmethod
    def from_population(
        cls,
        *,
        Sigma: ArrayLike,
        sxy: ArrayLike,
        syy: ArrayLike,
        mean_x: ArrayLike | None = None,
        mean_y: ArrayLike | None = None,
        envs: Sequence | None = None,
        names: Sequence[str] | None = None,
        outcome: str = "Y",
    ) -> Moments:
        """Moments given directly (population moments of a design, or precomputed ones)."""
        Sigma = np.array(Sigma, dtype=np.float64)
        E, p, _ = Sigma.shape
        return cls(
            n=np.full(E, np.inf),
            mean_x=np.zeros((E, p)) if mean_x is None else np.array(mean_x, dtype=np.float64),
            mean_y=np.zeros(E) if mean_y is None else np.array(mean_y, dtype=np.float64),
            Sigma=Sigma,
            sxy=np.array(sxy, dtype=np.float64).reshape(E, p),
            syy=np.array(syy, dtype=np.float64).reshape(E),
            envs=tuple(range(E)) if envs is None else tuple(envs),
            names=tuple(f"X{j + 1}" for j in range(p)) if names is None else tuple(names),
            outcome=outcome,
            source="population",
        )

    @classmethod
    def from_arrays(
        cls,
        X: ArrayLike,
        y: ArrayLike,
        env: ArrayLike,
        *,
        names: Sequence[str] | None = None,
        outcome: str = "y",
        chunk_rows: int = DEFAULT_CHUNK_ROWS,
    ) -> Moments:
        """Sample moments in one pass over the rows, ``chunk_rows`` rows at a time.

        Inputs are assumed clean (finite, matching lengths); :class:`negdro_stats.NegDRO`
        validates user data before calling this.
        """
        X = np.asarray(X)
        y = np.asarray(y)
        codes, labels = pd.factorize(np.asarray(env), sort=True)
        acc = MomentAccumulator(p=X.shape[1], n_envs=len(labels))
        for start in range(0, X.shape[0], chunk_rows):
            stop = start + chunk_rows
            acc.add(X[start:stop], y[start:stop], codes[start:stop])
        p = X.shape[1]
        return acc.finish(
            envs=tuple(labels.tolist()),
            names=tuple(f"X{j + 1}" for j in range(p)) if names is None else tuple(names),
            outcome=outcome,
        )

    @classmethod
    def from_cov(cls, n: FloatArray, mean: FloatArray, cov: FloatArray, *, envs: Sequence,
                 names: Sequence[str], outcome: str) -> Moments:
        """Sample moments from per-environment means ``mean`` (E, p + 1) and covariances
        ``cov`` (E, p + 1, p + 1) of ``[X, y]`` (kept as :attr:`cov`)."""
        p = len(names)
        with np.errstate(invalid="ignore"):         # (an empty block's NaN moments)
            gram = cov + np.einsum("eq,er->eqr", mean, mean)
        return cls(n=n, mean_x=mean[:, :p], mean_y=mean[:, p], Sigma=gram[:, :p, :p],
                   sxy=gram[:, :p, p], syy=gram[:, p, p], envs=tuple(envs),
                   names=tuple(names), outcome=outcome, source="sample", cov=cov)

    # ----------------------------------------------------------------- transforms
    def subset(self, cols: ArrayLike) -> Moments:
        """Moments of the covariates ``cols`` (integer indices or a boolean mask)."""
        idx = np.arange(self.p)[np.asarray(cols)]
        z = np.append(idx, self.p)
        return replace(
            self,
            mean_x=self.mean_x[:, idx],
            Sigma=block(self.Sigma, idx, idx),
            sxy=self.sxy[:, idx],
            names=tuple(self.names[j] for j in idx),
            fourth=None if self.fourth is None else self.fourth.select(z),
            cov=None if self.cov is None else block(self.cov, z, z),
        )

    def environments(self, keep: ArrayLike) -> Moments:
        """Moments of the environments ``keep`` (integer indices, in that order)."""
        keep = np.asarray(keep, dtype=int)
        return replace(
            self, n=self.n[keep], mean_x=self.mean_x[keep], mean_y=self.mean_y[keep],
            Sigma=self.Sigma[keep], sxy=self.sxy[keep], syy=self.syy[keep],
            envs=tuple(self.envs[e] for e in keep),
            fourth=None if self.fourth is None else self.fourth.environments(keep),
            cov=None if self.cov is None else self.cov[keep],
        )

    def add_constant(self, name: str = "const") -> Moments:
        """Append a constant covariate ``1``; its moments follow from the first moments."""
        E, p = self.n_envs, self.p
        Sigma = np.empty((E, p + 1, p + 1))
        Sigma[:, :p, :p] = self.Sigma
        Sigma[:, :p, p] = Sigma[:, p, :p] = self.mean_x
        Sigma[:, p, p] = 1.0
        return replace(
            self,
            mean_x=np.column_stack([self.mean_x, np.ones(E)]),
            Sigma=Sigma,
            sxy=np.column_stack([self.sxy, self.mean_y]),
            names=(*self.names, name),
            fourth=None if self.fourth is None else self.fourth.select(
                [*range(p), -1, p], constant=1.0),
            cov=None if self.cov is None else np.insert(
                np.insert(self.cov, p, 0.0, axis=1), p, 0.0, axis=2),   # no variation
        )

    def ones(self) -> list[int]:
        """The covariates that are the constant 1 in every environment (an intercept)."""
        return [j for j in range(self.p)
                if np.allclose(self.mean_x[:, j], 1.0, rtol=0, atol=1e-12)
                and np.allclose(self.Sigma[:, j, j], 1.0, rtol=0, atol=1e-12)]

    def about_means(self, const: int) -> tuple[Moments, FloatArray]:
        """With the constant covariate ``const``: the moments of the other covariates and
        the outcome less their pooled means, the constant in its place, and those means
        ``(xbar, ybar)`` (p + 1 numbers, the constant's 0).  A linear fit with the
        constant has the same residuals here, and its intercept in the data's frame is
        ``c_0 + ybar - b^T xbar`` (:meth:`negdro_stats.data.MultiEnvData.to_user` does
        the same for the model's moments); no product of moments cancels digits here."""
        others = [j for j in range(self.p) if j != const]
        w = self.pooled_weights()
        origin = np.append(w @ self.mean_x[:, others], w @ self.mean_y)
        moved = self.subset(others).shifted(origin).add_constant(self.names[const])
        order = np.insert(np.arange(self.p - 1), const, self.p - 1)
        return moved.subset(order), np.insert(origin, const, 0.0)

    def with_outcome(self, u: FloatArray) -> Moments:
        """Moments of ``(X, [X, Y] @ u)``: the outcome replaced by a linear combination of
        the covariates and itself (``u``, length p + 1), e.g. ``Y - beta0 X_j``; the
        fourth moments are dropped.  (Only the outcome's row and column change: O(p^2).)
        Where :attr:`cov` is kept, the new outcome's raw moments are formed from it
        (``Cov_e`` plus the means' product, as :meth:`shifted` does): a combination that
        cancels (``Y - 2 X_3`` where ``Y = 2 X_3``) then keeps moments that agree with its
        covariance, instead of the raw moments' rounding of the terms it cancelled."""
        u_x, u_y = u[:self.p], u[self.p]
        mean = np.column_stack([self.mean_x, self.mean_y]) @ u
        if self.cov is None:
            new_sxy = self.Sigma @ u_x + self.sxy * u_y                 # E_e[X (Z u)]
            return replace(self, mean_y=mean, sxy=new_sxy,
                           syy=new_sxy @ u_x + (self.sxy @ u_x + self.syy * u_y) * u_y,
                           fourth=None)
        cov, c = self.cov.copy(), self.cov @ u
        cov[:, self.p, :], cov[:, :, self.p] = c, c
        cov[:, self.p, self.p] = c @ u
        return replace(self, mean_y=mean, sxy=c[:, :self.p] + self.mean_x * mean[:, None],
                       syy=cov[:, self.p, self.p] + mean**2, fourth=None, cov=cov)

    def pooled_weights(self) -> FloatArray:
        """Each environment's share of the rows, ``n_e / n`` (equal shares for population
        moments, whose ``n`` is infinite)."""
        n = np.where(np.isfinite(self.n), self.n, 1.0)
        return n / n.sum()

    def residual_mean(self, b: FloatArray) -> tuple[float, float]:
        """The pooled mean of the residual ``Y - b^T X`` and its share of the residual's
        pooled second moment."""
        w = self.pooled_weights()
        mean = float(w @ (self.mean_y - self.mean_x @ b))
        second = float(w @ (self.syy - 2.0 * self.sxy @ b + np.einsum(
            "i,eij,j->e", b, self.Sigma, b)))
        return mean, mean**2 / second if second > 0 else 0.0

    def unexplained(self) -> tuple[float, FloatArray]:
        """The share of the outcome's pooled second moment that pooled least squares on
        every covariate leaves, and its coefficients on the scale of :meth:`scales`
        (standardised, so that covariates at 1e-6 and 1e6 keep the precision).  At most
        ``EXACT_FIT`` (rounding is ~1e-16): the covariates give the outcome exactly, e.g.
        a covariate ``Xc = 2 Y`` -- every residual is 0, and no test has a variance to
        compare with (the data's warning and
        :func:`negdro_stats.estimation.selection.exact_fit`)."""
        d, s_y = self.scales()
        w = self.pooled_weights()
        G = np.tensordot(w, self.Sigma, axes=1) / np.multiply.outer(d, d)
        c = w @ self.sxy / (d * s_y)
        try:                      # (Cholesky where well conditioned: lstsq's SVD takes
            L = np.linalg.cholesky(G)     # 0.27 s at p = 1,000, twice per fit)
            well = np.diag(L).min() ** 2 > 1e-8 * np.diag(G).max()
        except np.linalg.LinAlgError:
            well = False
        b = (linalg.cho_solve((L, True), c, check_finite=False) if well
             else np.linalg.lstsq(G, c, rcond=None)[0])
        return float(1.0 - c @ b / (w @ self.syy / s_y**2)), b

    def centred(self) -> tuple[Moments, FloatArray, float]:
        """Moments of ``(X - xbar, Y - ybar)``, ``xbar, ybar`` the pooled means
        (:meth:`pooled_weights`), and those means.

        This profiles an intercept by the pooled level condition ``c = ybar - b^T xbar``
        (as scikit-learn centres): adding a constant to a covariate or to the outcome
        leaves the centred moments unchanged, so nothing computed from them depends on
        the origin.  The per-environment means stay (mean shifts are heterogeneity).
        Formed from the within-environment covariances (:meth:`within`: exact at any
        offset for sample moments) plus ``(mu_e - xbar)(mu_e - xbar)^T``.
        """
        w = self.pooled_weights()
        x_bar, y_bar = w @ self.mean_x, float(w @ self.mean_y)
        return self.shifted(np.append(x_bar, y_bar)), x_bar, y_bar

    def shifted(self, origin: FloatArray) -> Moments:
        """Moments of ``[X, Y] - origin`` (``origin``: p + 1 numbers), formed from the
        within-environment covariances (:meth:`within`), so exact at any offset where
        they are kept."""
        cov, p = self.within(), self.p
        d = np.column_stack([self.mean_x, self.mean_y]) - origin
        raw = cov + np.einsum("ei,ej->eij", d, d)
        return replace(
            self,
            mean_x=d[:, :p],
            mean_y=d[:, p],
            Sigma=raw[:, :p, :p],
            sxy=raw[:, :p, p],
            syy=raw[:, p, p],
            fourth=None if self.fourth is None else self.fourth.moved(origin),
        )

    def scales(self) -> tuple[FloatArray, float]:
        """Root mean second moments ``d_j`` of each covariate and ``s_y`` of the outcome.

        Averages are over environments with equal weight, as in ``A(w)`` of eq. (16).
        """
        d = np.sqrt(np.einsum("ejj->j", self.Sigma) / self.n_envs)
        s_y = float(np.sqrt(self.syy.mean()))
        return d, s_y

    def rescale(self, d: FloatArray, s_y: float) -> Moments:
        """Moments of ``(X_j / d_j, Y / s_y)``.

        With ``d, s_y = self.scales()`` every covariate and the outcome have unit root
        mean square, which makes tolerances and thresholds scale-free: a coefficient
        ``b`` on the original scale is ``b_tilde * s_y / d`` on this one.
        """
        return replace(
            self,
            mean_x=self.mean_x / d,
            mean_y=self.mean_y / s_y,
            Sigma=self.Sigma / np.multiply.outer(d, d),
            sxy=self.sxy / (d * s_y),
            syy=self.syy / s_y**2,
            fourth=None if self.fourth is None else self.fourth.scaled(np.append(1.0 / d,
                                                                                 1.0 / s_y)),
            cov=None if self.cov is None else self.cov / np.multiply.outer(
                np.append(d, s_y), np.append(d, s_y)),
        )


class MomentAccumulator:
    """Accumulate per-environment means and centred cross-products of ``Z = [X, y]``
    chunk by chunk, merged exactly (numerically stable at any offset), and the fourth
    moments (:class:`~negdro_stats.data.fourth.FourthAccumulator`).

    Use it to build :class:`Moments` from data that do not fit in memory::

        acc = MomentAccumulator(p=p, n_envs=E)
        for X, y, codes in chunks:        # codes: integer environment codes 0..E-1
            acc.add(X, y, codes)
        mom = acc.finish(envs=labels, names=names)
    """

    def __init__(self, *, p: int, n_envs: int) -> None:
        self.p, self.n_envs = p, n_envs
        self._count = np.zeros(n_envs)
        self._mean = np.zeros((n_envs, p + 1))
        self._m2 = np.zeros((n_envs, p + 1, p + 1))      # centred sums of squares, per env
        self._fourth = FourthAccumulator(p)
        self.rows = 0                                     # rows given so far (positions)

    def add(self, X: ArrayLike, y: ArrayLike, codes: ArrayLike,
            positions: np.ndarray | None = None) -> None:
        """Add one chunk of rows (``codes`` are integer environment codes; ``positions``
        their positions in the source, default the next ones).

        Each environment's chunk is centred at its own mean and merged exactly with what
        came before (Chan, Golub and LeVeque's pairwise update), so that large offsets
        (a covariate ``1e7 + noise``) keep their variance."""
        X, y, codes = np.asarray(X), np.asarray(y), np.asarray(codes)
        if positions is None:
            positions = np.arange(self.rows, self.rows + len(codes), dtype=np.uint64)
        self.rows += len(codes)
        hashes = splitmix(positions, SAMPLE_SEED)
        for e, rows in by_environment(codes):
            Xe = X[rows]                                  # a view where codes are sorted
            layout = "F" if Xe.strides[0] < Xe.strides[1] else "C"   # X's own (a frame's
            Z = np.empty((len(Xe), self.p + 1), order=layout)  # is F): a copy 1.5x as fast
            Z[:, : self.p] = Xe
            Z[:, self.p] = y[rows]
            self._fourth.add(Z, int(e), hashes[rows])
            m = len(Z)
            mean = Z.mean(axis=0)
            Z -= mean
            m2 = Z.T @ Z                                  # numpy dispatches this to syrk
            n = self._count[e]
            delta = mean - self._mean[e]
            self._count[e] = n + m
            self._mean[e] += delta * (m / (n + m))
            self._m2[e] += m2 + np.outer(delta, delta) * (n * m / (n + m))

    def finish(
        self, *, envs: Sequence, names: Sequence[str], outcome: str = "y"
    ) -> Moments:
        """Raw moments ``E_e[Z Z^T] = M2_e / n_e + mean_e mean_e^T`` as :class:`Moments`."""
        n = self._count
        mom = Moments.from_cov(n.copy(), self._mean.copy(), self._m2 / n[:, None, None],
                               envs=envs, names=names, outcome=outcome)
        return replace(mom, fourth=self._fourth.finish(list(range(self.n_envs))))


def by_environment(codes: np.ndarray) -> Iterator[tuple[int, slice | np.ndarray]]:
    """``(e, rows)`` for every environment in a chunk: a slice where the chunk is sorted
    by environment (a frame grouped by it; no copy of the rows), else a mask."""
    if not len(codes):
        return
    if np.all(codes[1:] >= codes[:-1]):                # (np.unique: 0.3 ms a chunk)
        ends = np.append(np.flatnonzero(codes[1:] != codes[:-1]) + 1, len(codes))
        for a, b in zip(np.append(0, ends[:-1]), ends, strict=True):
            yield int(codes[a]), slice(int(a), int(b))
    else:
        for e in np.unique(codes):
            yield int(e), codes == e


# ------------------------------------------------------------------------- row hashes
_SLICE_ROWS, _CELL_ROWS = 1 << 15, 256      # slices that stay in cache (measured)
_GOLDEN, _MIX = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9
SAMPLE_SEED = 0x5EED            # the fourth moments' row sample (not the blocks' stream)


def splitmix(positions: np.ndarray, seed: int = 0) -> np.ndarray:
    """splitmix64's output number ``seed + position + 1`` for every position (a bijection
    of uint64: distinct positions, distinct hashes)."""
    h = np.asarray(positions, dtype=np.uint64) + np.uint64(seed + 1)
    h *= np.uint64(_GOLDEN)                    # splitmix64's state (wraps modulo 2^64)
    h ^= h >> np.uint64(30)
    h *= np.uint64(_MIX)
    h ^= h >> np.uint64(27)
    h *= np.uint64(0x94D049BB133111EB)
    h ^= h >> np.uint64(31)
    return h


def block_of(positions: np.ndarray, n_blocks: int, seed: int = 0) -> np.ndarray:
    """The block of every row from its position in the source (``0, 1, ...`` over the
    rows in source order): splitmix64's output number ``seed + position + 1``, a seeded
    random stream, so that any split of the same rows into chunks, batches or
    partitions puts every row in the same block, and repeated rows spread like any others
    (a hash of the row's values would put identical rows in one block: on discrete data
    the block bootstrap's standard errors are then 3x the row bootstrap's).  Codes in the
    smallest unsigned type, so that sorting by them is a radix sort."""
    return (splitmix(positions, seed) % np.uint64(n_blocks)).astype(
        np.min_scalar_type(max(n_blocks - 1, 0)))


@functools.cache
def _blas() -> ThreadpoolController:
    """The BLAS thread pools, found once (finding them costs milliseconds)."""
    return ThreadpoolController()


def one_blas_thread() -> AbstractContextManager:
    """BLAS on one thread for a pass: its products are small (q x a few thousand), where
    BLAS threads only cost (measured: 5.0 ms against 8.1 ms a 2^17-row batch, p = 20)."""
    return _blas().limit(limits=1)
