"""Block moments: per environment, the moments of K random blocks of its rows -- the
currency of resampling without the rows (:class:`BlockMoments`), built in one pass by
:class:`BlockAccumulator` (per partition, then merged)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from .._typing import ArrayLike, FloatArray
from .fourth import FourthAccumulator, FourthMoments
from .moments import SAMPLE_SEED, Moments, block_of, splitmix

__all__ = ["BlockAccumulator", "BlockMoments", "DEFAULT_BLOCKS", "blocks_of_rows"]

DEFAULT_BLOCKS = 50
_SLICE_ROWS, _CELL_ROWS = 1 << 15, 256      # slices that stay in cache (measured)


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


def blocks_of_rows(chunks, *, p: int, n_blocks: int, envs: tuple, names: Sequence[str],
                   outcome: str) -> BlockMoments:
    """The block moments of rows given as chunks ``(X, y, codes)`` (``codes`` index
    ``envs``), ``n_blocks`` per environment, in one pass (rows kept in memory whose
    resamples would each be a pass: :meth:`MultiEnvData.margin_resamplers`)."""
    acc = BlockAccumulator(p=p, n_blocks=n_blocks)
    for X, y, codes in chunks:
        acc.add(X, y, codes)
    return replace(acc.finish(names=names, outcome=outcome), envs=tuple(envs),
                   fourth=None)                  # (the rows' own moments keep theirs)


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
        return replace(self._from_cov(n_e, mean, m2 / n_e[:, None, None]),
                       fourth=self.fourth)

    def _from_cov(self, n: FloatArray, mean: FloatArray, cov: FloatArray) -> Moments:
        return Moments.from_cov(n, mean, cov, envs=self.envs, names=self.names,
                                outcome=self.outcome)

    def _about_origin(self) -> tuple[FloatArray, FloatArray, FloatArray]:
        """``(origin, S, G)``: the pooled mean of ``Z`` over all blocks, and each block's
        sums of ``Z - origin`` and of its outer products.  About the pooled mean the sums
        keep the variation at any offset, so covariances formed from them are exact up
        to the environments' mean shifts."""
        origin = np.einsum("ek,ekq->q", self.n, self.mean) / self.n.sum()
        centre = self.mean - origin
        S = self.n[..., None] * centre
        G = self.m2 + np.einsum("ek,ekq,ekr->ekqr", self.n, centre, centre)
        return origin, S, G

    def _combine(self, weights: FloatArray) -> Moments:
        """Moments of the environments made of the blocks with multiplicities ``weights``
        (E, E * K): row e counts every block of every environment ``weights[e]`` times."""
        origin, S, G = self._about_origin()
        E, K = self.n.shape
        n = weights @ self.n.reshape(E * K)
        mean = weights @ S.reshape(E * K, -1) / n[:, None]
        gram = np.tensordot(weights, G.reshape(E * K, *G.shape[2:]), axes=1) / n[:, None, None]
        return self._from_cov(n, mean + origin, gram - np.einsum("eq,er->eqr", mean, mean))

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
        E, K = self.n.shape
        n = self.n.reshape(E * K)
        with np.errstate(invalid="ignore", divide="ignore"):
            cov = self.m2.reshape(E * K, *self.m2.shape[2:]) / n[:, None, None]
        return replace(self._from_cov(n, np.where(n[:, None] > 0, self.mean.reshape(
            E * K, -1), np.nan), cov), envs=tuple((e, k) for e in self.envs for k in range(K)))
