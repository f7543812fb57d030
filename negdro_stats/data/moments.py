"""Per-environment moments: the one currency of the package (docs/design.rst).

The squared-error risk of a linear predictor is quadratic in ``b``, so every quantity in
the paper is a function of, per environment ``e``,

    n_e,  mean_x[e] = E_e[X],  mean_y[e] = E_e[Y],
    Sigma[e] = E_e[X X^T],  sxy[e] = E_e[X Y],  syy[e] = E_e[Y^2]

(raw, uncentred second moments: mean shifts are part of the heterogeneity, so nothing is
centred per environment).  :class:`Moments` holds them.  It is built from rows in one
pass (:meth:`Moments.from_arrays`, :class:`MomentAccumulator` for chunked streams) or
directly from population moments (:meth:`Moments.from_population`, used by
:class:`negdro_stats.LinearSEM`).  Solvers never touch rows, so their cost does not
depend on n.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import pandas as pd
from threadpoolctl import ThreadpoolController

from .._typing import ArrayLike, FloatArray
from .fourth import FourthAccumulator, FourthMoments

__all__ = ["Moments", "MomentAccumulator", "N_POPULATION"]

N_POPULATION = 1e12      # rows assumed for population moments: noise far below rounding
EXACT_FIT = 1e-10        # unexplained share of an outcome the covariates give exactly
DEFAULT_CHUNK_ROWS = 65_536


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

    # ----------------------------------------------------------------- transforms
    def subset(self, cols: ArrayLike) -> Moments:
        """Moments of the covariates ``cols`` (integer indices or a boolean mask)."""
        idx = np.arange(self.p)[np.asarray(cols)]
        return replace(
            self,
            mean_x=self.mean_x[:, idx],
            Sigma=self.Sigma[:, idx][:, :, idx],
            sxy=self.sxy[:, idx],
            names=tuple(self.names[j] for j in idx),
            fourth=None if self.fourth is None else self.fourth.select(np.append(idx, self.p)),
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
        )

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
        compare with (the data's warning and :func:`negdro_stats.estimation.route.exact_fit`)."""
        d, s_y = self.scales()
        w = self.pooled_weights()
        G = np.tensordot(w, self.Sigma, axes=1) / np.multiply.outer(d, d)
        c = w @ self.sxy / (d * s_y)
        b = np.linalg.lstsq(G, c, rcond=None)[0]
        return float(1.0 - c @ b / (w @ self.syy / s_y**2)), b

    def centred(self) -> tuple[Moments, FloatArray, float]:
        """Moments of ``(X - xbar, Y - ybar)``, ``xbar, ybar`` the pooled means
        (:meth:`pooled_weights`), and those means.

        This profiles an intercept by the pooled level condition ``c = ybar - b^T xbar``
        (as scikit-learn centres): adding a constant to a covariate or to the outcome
        leaves the centred moments unchanged, so nothing computed from them depends on
        the origin.  The per-environment means stay (mean shifts are heterogeneity).
        Formed from the within-environment covariances, ``Sigma_e - mu_e mu_e^T``, plus
        ``(mu_e - xbar)(mu_e - xbar)^T``.
        """
        w = self.pooled_weights()
        x_bar, y_bar = w @ self.mean_x, float(w @ self.mean_y)
        dx, dy = self.mean_x - x_bar, self.mean_y - y_bar
        outer = np.einsum("ei,ej->eij", self.mean_x, self.mean_x)
        centred = replace(
            self,
            mean_x=dx,
            mean_y=dy,
            Sigma=(self.Sigma - outer) + np.einsum("ei,ej->eij", dx, dx),
            sxy=(self.sxy - self.mean_x * self.mean_y[:, None]) + dx * dy[:, None],
            syy=(self.syy - self.mean_y**2) + dy**2,
            fourth=None if self.fourth is None else self.fourth.moved(np.append(x_bar, y_bar)),
        )
        return centred, x_bar, y_bar

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
        present = np.unique(codes)
        for e in present:
            rows = slice(None) if len(present) == 1 else codes == e
            Z = np.empty((len(y) if len(present) == 1 else int(rows.sum()), self.p + 1))
            Z[:, : self.p] = X[rows]                      # one float64 copy of the chunk
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
        p, n = self.p, self._count
        mean = self._mean.copy()
        gram = self._m2 / n[:, None, None] + np.einsum("ei,ej->eij", mean, mean)
        return Moments(
            n=n.copy(),
            mean_x=mean[:, :p],
            mean_y=mean[:, p],
            Sigma=gram[:, :p, :p],
            sxy=gram[:, :p, p],
            syy=gram[:, p, p],
            envs=tuple(envs),
            names=tuple(names),
            outcome=outcome,
            source="sample",
            fourth=self._fourth.finish(list(range(self.n_envs))),
        )


# ------------------------------------------------------------------------- block moments
DEFAULT_BLOCKS = 50
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
    (a hash of the row's values put identical rows in one block: on discrete data the
    block bootstrap's standard errors were 3x the row bootstrap's).  Codes in the
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


class BlockAccumulator:
    """Moments of ``K`` blocks per environment, accumulated chunk by chunk and mergeable
    (per partition, then a tree reduction): every row goes to the block :func:`block_of`
    gives its position in the source; within a block, centred cross-products are merged
    exactly (Chan et al.).  Positions count the rows given, from ``start`` (a partition's
    first row), unless :meth:`add_rows` is given them (a reader that drops rows passes
    their positions among all rows, so that chunking does not move them).

    Environments are keyed by label as they appear, so partitions need not agree on them.
    """

    def __init__(self, *, p: int, n_blocks: int = DEFAULT_BLOCKS, seed: int = 0,
                 start: int = 0) -> None:
        self.p, self.n_blocks, self.seed, self.rows = p, n_blocks, seed, start
        self.cells: dict = {}                 # label -> [n (K,), mean (K, q), m2 (K, q, q)]
        self.fourth = FourthAccumulator(p)    # of the environments (not of the blocks)

    def positions(self, n: int) -> np.ndarray:
        """The positions of the next ``n`` rows of the source (advances the count)."""
        out = np.arange(self.rows, self.rows + n, dtype=np.uint64)
        self.rows += n
        return out

    def add(self, X: ArrayLike, y: ArrayLike, labels: ArrayLike,
            positions: np.ndarray | None = None) -> None:
        """Add rows ``(X, y)`` with their environment labels and positions in the source
        (default: the next rows)."""
        X = np.asarray(X, dtype=np.float64)
        Zt = np.empty((self.p + 1, X.shape[0]))           # one variable per row: the
        Zt[: self.p], Zt[self.p] = X.T, np.asarray(y, dtype=np.float64)   # gathers are
        self.add_rows(list(Zt), labels, positions)                        # contiguous

    def add_rows(self, Z: FloatArray | Sequence[FloatArray], labels: ArrayLike,
                 positions: np.ndarray | None = None) -> None:
        """Add rows ``Z = [X, y]`` (a float64 array, or its columns as 1-d arrays, e.g.
        straight from Arrow) with their labels and positions in the source (default: the
        next ones), a cache-sized slice at a time (at least ``_CELL_ROWS`` rows a cell on
        average): one sort by (environment, block), then one centred product per
        non-empty block."""
        columns = ([Z[:, j] for j in range(Z.shape[1])] if isinstance(Z, np.ndarray)
                   else [np.asarray(z, dtype=np.float64) for z in Z])
        codes, keys = pd.factorize(np.asarray(labels))
        keys = [key.item() if hasattr(key, "item") else key for key in keys]
        positions = self.positions(len(codes)) if positions is None else positions
        if self.fourth.cells is not None:
            Z, hashes = np.column_stack(columns), splitmix(positions, SAMPLE_SEED)
            for e, key in enumerate(keys):
                mine = codes == e
                self.fourth.add(Z[mine], key, hashes[mine])
        step = max(_SLICE_ROWS, _CELL_ROWS * len(keys) * self.n_blocks)
        for start in range(0, len(codes), step):
            rows = slice(start, start + step)
            self._add_slice([z[rows] for z in columns], codes[rows], keys,
                            block_of(positions[rows], self.n_blocks, self.seed))

    def _add_slice(self, columns: list[FloatArray], codes: np.ndarray, keys: list,
                   block: np.ndarray) -> None:
        K, q = self.n_blocks, self.p + 1
        cells = len(keys) * K
        cell = codes.astype(np.min_scalar_type(cells)) * K + block
        order = np.argsort(cell, kind="stable")        # small unsigned keys: a radix sort
        Zt = np.empty((q, len(order)))                 # sorted rows, one variable per row
        for j in range(q):                             # (contiguous gathers)
            np.take(columns[j], order, out=Zt[j], mode="clip")   # (order: a permutation)
        counts = np.bincount(cell, minlength=cells)
        full = np.flatnonzero(counts)                  # the non-empty cells, in sorted order
        m = counts[full]
        starts = np.cumsum(m) - m
        mean = np.add.reduceat(Zt, starts, axis=1) / m            # (q, cells)
        m2 = np.empty((len(full), q, q))
        for i, (a, b) in enumerate(zip(starts, starts + m, strict=True)):
            W = Zt[:, a:b]
            W -= mean[:, i, None]
            np.matmul(W, W.T, out=m2[i])
        for e in np.unique(full // K):
            mine = full // K == e
            _chan_merge(self._cell(keys[e]), full[mine] % K, m[mine], mean[:, mine].T,
                        m2[mine])

    def _cell(self, key: object) -> list:
        """The state ``[n (K,), mean (K, q), m2 (K, q, q)]`` of environment ``key``."""
        if key not in self.cells:
            q = self.p + 1
            self.cells[key] = [np.zeros(self.n_blocks), np.zeros((self.n_blocks, q)),
                               np.zeros((self.n_blocks, q, q))]
        return self.cells[key]

    def merge(self, other: BlockAccumulator) -> BlockAccumulator:
        """Fold ``other`` (same p, blocks and seed) into this accumulator; returns self."""
        for key, (n, mean, m2) in other.cells.items():
            k = np.flatnonzero(n)
            _chan_merge(self._cell(key), k, n[k], mean[k], m2[k])
        self.fourth.merge(other.fourth)
        return self

    def finish(self, *, names: Sequence[str], outcome: str = "y") -> BlockMoments:
        """The blocks of every environment, environments in sorted label order."""
        labels = sorted(self.cells, key=lambda v: (type(v).__name__, v))
        n, mean, m2 = (np.stack([self.cells[k][i] for k in labels]) for i in range(3))
        return BlockMoments(n=n, mean=mean, m2=m2, envs=tuple(labels), names=tuple(names),
                            outcome=outcome, fourth=self.fourth.finish(labels))


def _chan_merge(cell: list, k: np.ndarray, m: FloatArray, mean: FloatArray, m2: FloatArray
                ) -> None:
    """Fold blocks ``k`` (distinct) with ``m > 0`` rows, means ``(len(k), q)`` and centred
    cross-products ``(len(k), q, q)`` into ``cell`` (Chan, Golub and LeVeque's update)."""
    n = cell[0][k]
    delta = mean - cell[1][k]
    total = n + m
    cell[0][k] = total
    cell[1][k] += delta * (m / total)[:, None]
    cell[2][k] += m2 + delta[:, :, None] * delta[:, None, :] * (n * m / total)[:, None, None]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class BlockMoments:
    """Per environment, the moments of ``K`` random blocks of its rows: the currency of
    resampling without the rows (the bootstrap draws blocks, the permutation test permutes
    their environment labels).

    Attributes
    ----------
    n : ndarray (E, K)
        Rows per block.
    mean : ndarray (E, K, p + 1)
        Block means of ``Z = [X, y]``.
    m2 : ndarray (E, K, p + 1, p + 1)
        Centred cross-products ``sum (Z - mean)(Z - mean)^T`` of each block.
    fourth : FourthMoments or None
        The environments' fourth moments (not the blocks'), for :meth:`moments`.
    """

    n: FloatArray
    mean: FloatArray
    m2: FloatArray
    envs: tuple
    names: tuple
    outcome: str
    fourth: FourthMoments | None = None

    @property
    def n_blocks(self) -> int:
        return self.n.shape[1]

    def moments(self) -> Moments:
        """The environments' moments: the blocks merged exactly."""
        n_e = self.n.sum(axis=1)
        mean = np.einsum("ek,ekq->eq", self.n, self.mean) / n_e[:, None]
        d = self.mean - mean[:, None, :]
        m2 = self.m2.sum(axis=1) + np.einsum("ek,ekq,ekr->eqr", self.n, d, d)
        return replace(self._from_sums(n_e, mean, m2 / n_e[:, None, None]
                                       + np.einsum("eq,er->eqr", mean, mean)),
                       fourth=self.fourth)

    def _from_sums(self, n: FloatArray, mean: FloatArray, gram: FloatArray) -> Moments:
        p = len(self.names)
        return Moments(n=n, mean_x=mean[:, :p], mean_y=mean[:, p], Sigma=gram[:, :p, :p],
                       sxy=gram[:, :p, p], syy=gram[:, p, p], envs=self.envs,
                       names=self.names, outcome=self.outcome, source="sample")

    def _raw(self) -> tuple[FloatArray, FloatArray]:
        """Block sums of ``Z`` and of ``Z Z^T``."""
        S = self.n[..., None] * self.mean
        G = self.m2 + np.einsum("ek,ekq,ekr->ekqr", self.n, self.mean, self.mean)
        return S, G

    def _combine(self, weights: FloatArray) -> Moments:
        """Moments of the environments made of the blocks with multiplicities ``weights``
        (E, E * K): row e counts every block of every environment ``weights[e]`` times."""
        S, G = self._raw()
        E, K = self.n.shape
        n = weights @ self.n.reshape(E * K)
        mean = weights @ S.reshape(E * K, -1) / n[:, None]
        gram = np.tensordot(weights, G.reshape(E * K, *G.shape[2:]), axes=1) / n[:, None, None]
        return self._from_sums(n, mean, gram)

    def resample(self, rng: np.random.Generator) -> Moments:
        """A block bootstrap: in every environment, its non-empty blocks drawn with
        replacement (as many draws as there are of them)."""
        E, K = self.n.shape
        weights = np.zeros((E, E * K))
        for e in range(E):
            full = np.flatnonzero(self.n[e] > 0)
            weights[e, e * K + full] = rng.multinomial(len(full), np.full(len(full),
                                                                         1.0 / len(full)))
        return self._combine(weights)

    def permute(self, rng: np.random.Generator) -> Moments:
        """The non-empty blocks' environment labels permuted (every environment keeps its
        number of them)."""
        E, K = self.n.shape
        full = np.flatnonzero(self.n.reshape(E * K) > 0)
        counts = (self.n > 0).sum(axis=1)
        weights = np.zeros((E, E * K))
        weights[np.repeat(np.arange(E), counts), rng.permutation(full)] = 1.0
        return self._combine(weights)

    def cells(self) -> Moments:
        """Every block as its own 'environment' (E * K of them; empty blocks have n = 0
        and NaN moments)."""
        S, G = self._raw()
        E, K = self.n.shape
        n = self.n.reshape(E * K)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = S.reshape(E * K, -1) / n[:, None]
            gram = G.reshape(E * K, *G.shape[2:]) / n[:, None, None]
        p = len(self.names)
        return Moments(n=n, mean_x=mean[:, :p], mean_y=mean[:, p], Sigma=gram[:, :p, :p],
                       sxy=gram[:, :p, p], syy=gram[:, p, p],
                       envs=tuple((e, k) for e in self.envs for k in range(K)),
                       names=self.names, outcome=self.outcome, source="sample")
