"""The data layer: every source of multi-environment data ends in :class:`MultiEnvData`.

The readers (:mod:`negdro_stats.data.readers`: a DataFrame, arrays, a formula, CSV, Parquet,
Dask) give one pass over a source's rows; here that pass, or precomputed
:class:`~negdro_stats.Moments`, becomes validated data, once (the intercept,
constant and collinear covariates, environment sizes).  The rows stay reachable for what
needs them, through one small set of methods: residual sums (the equal-risk test), score
covariances (the selection's fourth-cumulant term) and the only resampling code of the
package -- the stratified bootstrap and the permutation of environment labels -- which
the estimator's bootstrap, the margin's bootstrap bound and the permutation test all
use.  Everything here pickles.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from .._typing import ArrayLike, FloatArray
from .._validation import check_bool, check_option, few, warn_user
from ..exceptions import DataError, DataWarning
from .blocks import DEFAULT_BLOCKS, BlockMoments, blocks_of_rows
from .csv_file import CHUNK_ROWS
from .dependence import (
    FEW_CLUSTERS,
    Clusters,
    Dependence,
    LongRun,
    long_run_share,
    serial_correlation,
)
from .fourth import RESIDUAL, gaussian_score_cov, takes_every
from .moments import EXACT_FIT, N_POPULATION, Moments, by_environment
from .readers import (
    FIRST_COLUMN,
    MISSING,
    Read,
    Rows,
    Stream,
    as_pandas,
    path_kind,
    read_arrays,
    read_batches,
    read_csv,
    read_dask,
    read_formula,
    read_frame,
    read_parquet,
    read_rows,
)

__all__ = ["MultiEnvData", "MISSING", "intercept_index", "split_intercept", "risk_variances"]

INTERCEPT_NAME = "const"
MARGIN_BLOCKS = 200         # blocks per environment of diagnose()'s draws (margin_resamplers)
MARGIN_BLOCK_ROWS = 50      # rows per block at least
MAX_BLOCK_ENTRIES = 1 << 24     # numbers of their moments at most (128 MiB)
MARGIN_SIZES = 1.1          # permuted by blocks where the environments' sizes are this close


def risk_variances(mom: Moments, b: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Per environment the risk ``R_e(b)`` (``r = Y - b^T X``) and the variance of its
    estimate ``Var_e(r^2) / n_e`` from the moments alone: ``Var_e(r^2)`` from the fourth
    moments they keep (``mom.fourth``), else as for Gaussian rows -- ``r`` normal with
    mean ``m_e`` and variance ``s_e^2``, ``Var(r^2) = 2 s^4 + 4 m^2 s^2`` (population
    moments count as ``N_POPULATION`` rows)."""
    b = np.asarray(b, dtype=np.float64)
    R = mom.syy - 2.0 * (mom.sxy @ b) + np.einsum("i,eij,j->e", b, mom.Sigma, b)
    if mom.fourth is not None:
        R_s, r4_s = mom.fourth.risk_moments(b)
        var = r4_s - R_s**2
    else:
        m = mom.mean_y - mom.mean_x @ b
        s2 = np.maximum(R - m**2, 0.0)
        var = 2.0 * s2**2 + 4.0 * m**2 * s2
    return R, var / np.where(np.isfinite(mom.n), mom.n, N_POPULATION)


def intercept_index(n_params: int, fit_intercept: bool) -> int | None:
    """Where the intercept sits among ``n_params`` coefficients (model order): last, or
    None without one.  The one place that says so."""
    return n_params - 1 if fit_intercept else None


def split_intercept(b: ArrayLike, fit_intercept: bool) -> tuple[FloatArray, float]:
    """``(slopes, intercept)`` of coefficients in model order (intercept 0 without one)."""
    b = np.asarray(b, dtype=np.float64)
    k = intercept_index(len(b), fit_intercept)
    return (b, 0.0) if k is None else (np.delete(b, k), float(b[k]))


LONG_RUN_KEPT = 2**22   # numbers of long-run covariances kept at recent b's (32 MB)
CACHE_ROWS = 4096        # rows of a score pass's products at a time (measured: 1.2 x faster)


def _scores(X: FloatArray, r: FloatArray, cols: np.ndarray, every: bool) -> FloatArray:
    """The rows' ``x_cols r`` (:meth:`MultiEnvData.score_cov`'s columns)."""
    if every:                                       # (no gather: a third of the pass)
        return X * r[:, None]
    is_x = (cols < X.shape[1]) & (cols != RESIDUAL)
    W = X[:, np.where(is_x, cols, 0)]               # one gather, in X's own layout (a
    W[:, ~is_x] = 1.0                               # C-order copy of a frame's F-order
    W[:, cols == RESIDUAL] = r[:, None]             # takes 3x, np.take 20x): the constant
    W *= r[:, None]                                 # and r
    return W


class MultiEnvData:
    """Validated multi-environment data: moments, names, and (optionally) the rows.

    Build it with :meth:`from_frame`, :meth:`from_arrays`, :meth:`from_formula` or
    :meth:`from_moments` (:class:`~negdro_stats.NegDRO` does so for you).

    Attributes
    ----------
    moments : Moments
        Per-environment moments of the covariates used, the working moments of every fit
        and test: with ``fit_intercept``, of the data less their pooled means
        (:attr:`origin`) and with a last column ``const`` (an intercept model fits the
        same residuals in either frame, and about the means a covariate ``1e9 + noise``
        keeps its variation); :meth:`user_moments` gives them in the data's own frame.
    origin : ndarray (p + 1,) or None
        With ``fit_intercept``, the pooled means of the covariates and the outcome that
        :attr:`moments` are taken about (:meth:`to_user` maps coefficients back); None
        without an intercept.
    fit_intercept : bool
        Whether a constant column was appended.
    outcome_first_column : bool
        The outcome was not named: the first column other than ``env`` was taken (the
        summary's header says so).
    blocks : BlockMoments or None
        Moments of K random blocks per environment; when present, the resamplers, the
        equal-risk test and the score covariances use them instead of rows (Parquet and
        Dask sources always have them and no rows; in memory, ``blocks=K`` asks for them).
    has_rows, can_resample : bool
        Whether the rows are kept (for prediction), and whether rows or blocks are (for
        everything that resamples).
    """

    origin: FloatArray | None = None        # (results saved before 2026-12-05 lack it)
    dependence: Dependence | None = None    # independent rows (with_dependence)
    _margin_blocks: BlockMoments | None = None      # made on first use (margin_resamplers)
    _dependent: MultiEnvData | None = None          # with_dependence's last copy
    _stream: Stream | None = None                   # a source read again (none saved before 12-08)

    def __init__(self, moments: Moments, *, fit_intercept: bool = False,
                 rows: Rows | None = None, blocks: BlockMoments | None = None,
                 stream: Stream | None = None, first_column: bool = False) -> None:
        """``moments``: of the covariates in the data's frame, without a constant."""
        self.fit_intercept = bool(fit_intercept)
        if self.fit_intercept:
            w = moments.pooled_weights()
            self.origin = np.append(w @ moments.mean_x, w @ moments.mean_y)
        self.moments = self._working(moments)
        self.outcome_first_column = bool(first_column)
        self._rows = rows
        self._stream = stream
        self.blocks = blocks

    def __getstate__(self) -> dict:
        """Pickled and copied without the resamplers' sorted copy of the rows and what
        depends on :attr:`dependence` (made again on use)."""
        return {k: v for k, v in self.__dict__.items()
                if k not in ("_sorted_rows", "_margin_blocks", "_dependent_rows",
                             "_dependent", "_units")}

    def __setstate__(self, state: dict) -> None:
        """A file saved before 2026-12-05 may hold the rows' sorted copy in the layout of
        its time (not about the means): it is dropped and made again."""
        self.__dict__.update({k: v for k, v in state.items() if k != "_sorted_rows"})

    # ------------------------------------------------------------------ sources
    @classmethod
    def from_frame(cls, frame: pd.DataFrame, env: str | ArrayLike, *,
                   outcome: str | None = None, covariates: Sequence[str] | None = None,
                   missing: str = "raise", fit_intercept: bool = False,
                   blocks: int | None = None) -> MultiEnvData:
        """A DataFrame with the outcome, the covariates and (optionally) the env column.

        ``env`` is a column name, a pandas Series (aligned by index) or labels by
        position; ``outcome`` defaults to the first column other than ``env``;
        ``covariates`` to every other column.  ``blocks=K`` also keeps the moments of K
        random blocks per environment and resamples those instead of rows.
        """
        fit_intercept = _check_options(missing, fit_intercept)
        return cls._from_read(read_rows(read_frame(frame, env, outcome, covariates),
                                        missing, blocks), fit_intercept, outcome is None)

    @classmethod
    def from_arrays(cls, y: ArrayLike, X: ArrayLike, env: ArrayLike, *,
                    names: Sequence[str] | None = None, outcome: str = "y",
                    missing: str = "raise", fit_intercept: bool = False,
                    blocks: int | None = None) -> MultiEnvData:
        """An outcome vector, a covariate matrix (n, p) and ``n`` environment labels."""
        fit_intercept = _check_options(missing, fit_intercept)
        return cls._from_read(read_rows(read_arrays(y, X, env, names, outcome), missing,
                                        blocks), fit_intercept)

    @classmethod
    def from_formula(cls, formula: str, frame: pd.DataFrame, env: str | ArrayLike, *,
                     missing: str = "raise", fit_intercept: bool | None = None,
                     blocks: int | None = None) -> MultiEnvData:
        """A formula such as ``"y ~ 0 + x1 + np.log(x2)"`` evaluated on ``frame`` (formulaic);
        an intercept in the formula means ``fit_intercept=True``."""
        if fit_intercept is not None:
            fit_intercept = _check_options(missing, fit_intercept)
        table = read_formula(formula, frame, env)
        return cls._from_read(read_rows(table, missing, blocks),
                              table.intercept if fit_intercept is None else fit_intercept)

    @classmethod
    def from_moments(cls, moments: Moments, *, fit_intercept: bool | None = None
                     ) -> MultiEnvData:
        """Per-environment moments computed elsewhere (population moments of a design, or
        :class:`~negdro_stats.MomentAccumulator` on a stream); no rows.

        A covariate that is the constant 1 in every environment (``model.moments`` of a
        model with an intercept ends with one, ``const``) is the intercept: by default
        (``fit_intercept=None``) it is fitted as one, moved last and named ``const``;
        ``fit_intercept=True`` without one appends it; ``fit_intercept=False`` with one is
        an error (a constant cannot be a covariate)."""
        if not isinstance(moments, Moments):
            raise DataError(f"moments must be a negdro_stats.Moments; got "
                            f"{type(moments).__name__}.")
        _check_form(moments)
        ones = moments.ones()
        fit_intercept = bool(ones) if fit_intercept is None else check_bool(
            fit_intercept, "fit_intercept", "NegDRO.from_moments")
        if ones and not fit_intercept:
            raise DataError(f"Covariate {moments.names[ones[0]]!r} is the constant 1 (an "
                            "intercept); leave fit_intercept unset or pass fit_intercept=True "
                            "to fit it as one.")
        if len(ones) > 1:
            raise DataError(f"Covariates {[moments.names[j] for j in ones]} are all the "
                            "constant 1; keep one (the intercept).")
        data = cls(moments.subset([j for j in range(moments.p) if j not in ones]),
                   fit_intercept=fit_intercept)
        _check_moments(data.moments, data.origin)
        return data

    @classmethod
    def from_parquet(cls, path: str | Sequence[str], env: str, *, outcome: str | None = None,
                     covariates: Sequence[str] | None = None, missing: str = "raise",
                     fit_intercept: bool = False, blocks: int = DEFAULT_BLOCKS,
                     batch_rows: int = 1 << 17, verbose: bool | None = None) -> MultiEnvData:
        """Parquet files (a path, a directory, a glob or a list; pyarrow datasets), read
        batch by batch and only the needed columns, in one pass: the moments and the
        moments of ``blocks`` random blocks per environment (memory independent of n).
        The pass is compute-bound: pyarrow's decoding already keeps the cores busy, so
        more threads do not help (measured; see ``benchmarks/bench_scale.py``)."""
        fit_intercept = _check_options(missing, fit_intercept)
        return cls._from_read(read_parquet(
            path, env, outcome=outcome, covariates=covariates, missing=missing,
            blocks=blocks, batch_rows=batch_rows, verbose=verbose), fit_intercept,
            outcome is None)

    @classmethod
    def from_dask(cls, frame: Any, env: str, *, outcome: str | None = None,
                  covariates: Sequence[str] | None = None, missing: str = "raise",
                  fit_intercept: bool = False, blocks: int = DEFAULT_BLOCKS,
                  verbose: bool | None = None) -> MultiEnvData:
        """A Dask DataFrame (any Dask source: Parquet on object storage, CSV globs, ...):
        block moments per partition, tree-reduced; runs on the active
        ``dask.distributed`` client if there is one (with its progress bar when
        ``verbose``, or by default in a terminal or notebook)."""
        fit_intercept = _check_options(missing, fit_intercept)
        return cls._from_read(read_dask(frame, env, outcome=outcome, covariates=covariates,
                                        missing=missing, blocks=blocks, verbose=verbose),
                              fit_intercept, outcome is None)

    @classmethod
    def from_csv(cls, path: str | os.PathLike, env: str, *, outcome: str | None = None,
                 covariates: Sequence[str] | None = None, missing: str = "raise",
                 fit_intercept: bool = False, blocks: int = DEFAULT_BLOCKS,
                 chunk_rows: int = CHUNK_ROWS, encoding: str = "utf-8", sep: str = ",",
                 decimal: str = ".", verbose: bool | None = None) -> MultiEnvData:
        """A CSV file larger than memory, ``chunk_rows`` rows at a time: the moments and
        block moments as for Parquet (for a CSV that fits in memory, ``pandas.read_csv``
        and :meth:`from_frame` keep the rows).  The environment labels are typed once
        for the whole file (integers if every label is one, else text); ``encoding``,
        ``sep`` and ``decimal`` are as in ``pandas.read_csv``."""
        fit_intercept = _check_options(missing, fit_intercept)
        return cls._from_read(read_csv(
            path, env, outcome=outcome, covariates=covariates, missing=missing,
            blocks=blocks, chunk_rows=chunk_rows, encoding=encoding, sep=sep,
            decimal=decimal, verbose=verbose), fit_intercept, outcome is None)

    @classmethod
    def from_batches(cls, batches: Iterable[Any], env: str, *, outcome: str | None = None,
                     covariates: Sequence[str] | None = None, missing: str = "raise",
                     fit_intercept: bool = False, blocks: int = DEFAULT_BLOCKS,
                     verbose: bool | None = None) -> MultiEnvData:
        """Any stream of batches, each a DataFrame or a mapping of column name to 1-d
        array, in one pass: the moments and block moments as for Parquet, memory
        independent of n.  A database table is ``pandas.read_sql(query, connection,
        chunksize=100_000)``; a file format without a reader here is a generator of its
        batches.  The first batch names the columns."""
        fit_intercept = _check_options(missing, fit_intercept)
        return cls._from_read(read_batches(
            batches, env, outcome=outcome, covariates=covariates, missing=missing,
            blocks=blocks, verbose=verbose), fit_intercept, outcome is None)

    @classmethod
    def from_any(cls, data: Any, env: Any, *, outcome: str | ArrayLike | None = None,
                 covariates: Sequence[str] | None = None, missing: str = "raise",
                 fit_intercept: bool = False, blocks: int | None = None) -> MultiEnvData:
        """A DataFrame (:meth:`from_frame`; pandas, or polars, pyarrow and others through
        narwhals), a Dask DataFrame (:meth:`from_dask`), an iterator of batches
        (:meth:`from_batches`), a Parquet or CSV path
        (:meth:`from_parquet`, :meth:`from_csv`) or a 2-d array with the outcome in
        column 0, or of the covariates with ``outcome`` an array (:meth:`_from_array`)."""
        options = dict(outcome=outcome, covariates=covariates, missing=missing,
                       fit_intercept=fit_intercept)
        if outcome is not None and not isinstance(outcome, str) and (
                not isinstance(as_pandas(data), np.ndarray | list | tuple)):
            raise DataError(f"outcome= names a column of data; got a {type(outcome).__name__}."
                            " Add the outcome to the data as a column and pass its name, or "
                            "pass the covariates as a 2-d array with outcome=<n values>.")
        if type(data).__module__.startswith("dask"):
            return cls.from_dask(data, env, blocks=blocks or DEFAULT_BLOCKS, **options)
        if isinstance(data, Iterator):       # SQL or CSV chunks, a generator of frames
            return cls.from_batches(data, env, blocks=blocks or DEFAULT_BLOCKS, **options)
        data = as_pandas(data)
        if isinstance(data, pd.DataFrame):
            return cls.from_frame(data, env, blocks=blocks, **options)
        if isinstance(data, (str, os.PathLike)):
            kind = path_kind(data)
            if kind == "csv":
                return cls.from_csv(data, env, blocks=blocks or DEFAULT_BLOCKS,
                                    sep="\t" if str(data).endswith(".tsv") else ",",
                                    **options)
            if kind is None:
                raise DataError(f"data={str(data)!r}: a path must name Parquet files "
                                "(.parquet, a directory or a glob of them) or a CSV file "
                                "(.csv, .csv.gz, .tsv, .txt).")
            return cls.from_parquet(data, env, blocks=blocks or DEFAULT_BLOCKS, **options)
        return cls._from_array(np.asarray(data), env, outcome, covariates, missing,
                               fit_intercept, blocks)

    @classmethod
    def _from_array(cls, arr: np.ndarray, env: Any, outcome: Any,
                    covariates: Sequence[str] | None, missing: str,
                    fit_intercept: bool, blocks: int | None) -> MultiEnvData:
        """A 2-d array: the covariates, with ``outcome`` an array of ``n`` values, else
        the outcome in column 0 (named ``outcome``, default "y", with the warning of an
        outcome not named) and the covariates after it; ``covariates`` names them."""
        vector = outcome is not None and not isinstance(outcome, str)
        if arr.ndim != 2 or arr.shape[1] < 1 + (not vector):
            raise DataError("data must be a DataFrame, or a 2-d array with the outcome in "
                            "column 0 (or given as outcome=<array of n values>) and at least "
                            f"one covariate; got shape {arr.shape}.")
        y, X = (np.asarray(outcome), arr) if vector else (arr[:, 0], arr[:, 1:])
        if vector and (y.ndim != 1 or len(y) != len(arr)):
            raise DataError(f"outcome is an array of shape {y.shape}, data has {len(arr)} "
                            "rows: give the outcome as n values (one per row of data), or "
                            "its column's name with a DataFrame.")
        names = (None if covariates is None            # (read_arrays: x1, x2, ...)
                 else [covariates] if isinstance(covariates, str) else list(covariates))
        if names is not None and len(names) != X.shape[1]:
            raise DataError(f"covariates names {len(names)} columns, but the array has "
                            f"{X.shape[1]} covariate columns" + ("" if vector else
                            " (column 0 is the outcome)") + "; name each once.")
        fit_intercept = _check_options(missing, fit_intercept)
        if outcome is None:
            warn_user(f"{FIRST_COLUMN}: column 0 of the array is the outcome, regressed on "
                      "the others; give outcome=<array of n values> with the covariates "
                      "as data, or a DataFrame and outcome='...'.", DataWarning)
        table = read_arrays(y, X, env, names, "y" if vector or outcome is None else outcome)
        return cls._from_read(read_rows(table, missing, blocks), fit_intercept,
                              outcome is None)

    @classmethod
    def _from_read(cls, read: Read, fit_intercept: bool,
                   first_column: bool = False) -> MultiEnvData:
        """Validated data from one pass over a source (every reader ends here): the NaN
        policy's verdict, the intercept and the checks on the moments; ``first_column``:
        the outcome was not named (the first column was taken)."""
        fit_intercept = check_bool(fit_intercept, "fit_intercept", "NegDRO")
        if fit_intercept and INTERCEPT_NAME in read.covariates:
            raise DataError(f"fit_intercept=True adds a column {INTERCEPT_NAME!r}, but data "
                            "already has one; rename it or drop it.")
        mom, blocks = read.moments()
        data = cls(mom, fit_intercept=fit_intercept, rows=read.rows, stream=read.stream,
                   blocks=None if blocks is None else _check_blocks(blocks),
                   first_column=first_column)
        _check_moments(data.moments, data.origin)
        return data

    # ------------------------------------------------------------------ names
    @property
    def exog_names(self) -> list[str]:
        """Covariate names in model order (``const`` last with an intercept)."""
        return list(self.moments.names)

    @property
    def endog_name(self) -> str:
        """The outcome's name."""
        return self.moments.outcome

    @property
    def has_rows(self) -> bool:
        return self._rows is not None

    @property
    def has_score_cov(self) -> bool:
        """Whether :meth:`score_cov` can be computed (fourth moments, the rows, or a
        source read again)."""
        return self.moments.fourth is not None or self._passes

    def with_dependence(self, dependence: Dependence | None) -> MultiEnvData:
        """The same data with rows that depend as ``dependence`` says (None: independent):
        :meth:`score_cov`, :meth:`risk_variances` and :meth:`resample` then use the long-run
        covariances and moving blocks of :mod:`negdro_stats.data.dependence`, from the
        rows in their order.  The last such copy is kept: a refit with the same
        dependence reads its lags, long-run shares and covariances again, as a refit
        of independent rows reads the moments again."""
        if dependence is not None and self._rows is None:
            raise DataError(f"cov_type={dependence.cov_type!r} needs the rows in their order; "
                            "this model was built from moments or blocks only.")
        if dependence is not None and dependence.groups is not None:
            self._check_clusters(dependence.groups)
        last = self._dependent
        if dependence is not None and last is not None and dependence.same(last.dependence):
            return last
        out = copy.copy(self)
        out.dependence = dependence
        if dependence is not None:
            self._dependent = out
        return out

    def row_labels(self, values: Any, name: str) -> np.ndarray:
        """One label per used row (after the NaN policy): ``values`` the name of a column of
        the data's frame that is neither the outcome nor a covariate, or one label per
        row of the data (a pandas Series aligned by index)."""
        return self._need_rows(f"{name} (cov_type='cluster')").labels(values, name)

    def _check_clusters(self, groups: np.ndarray) -> None:
        """Clusters (codes per used row) lie within environments, at least two in each;
        a warning where an environment has fewer than ``FEW_CLUSTERS``."""
        codes = self._need_rows("cov_type='cluster'").codes
        pairs = np.unique(np.column_stack([groups, codes]), axis=0)
        if len(pairs) > len(np.unique(groups)):
            crossing = int((np.bincount(pairs[:, 0]) > 1).sum())
            raise DataError(f"{crossing} clusters of groups hold rows of more than one "
                            "environment; clusters must lie within environments (the tests "
                            "take the environments as independent samples).")
        per_env = np.bincount(pairs[:, 1], minlength=self.moments.n_envs)
        envs = np.asarray(self.moments.envs, dtype=object)
        if (per_env < 2).any():
            raise DataError(f"Environment(s) {few(list(envs[per_env < 2]))} hold a single "
                            "cluster; the cluster-robust covariance needs at least two in "
                            "each environment.")
        if (few_ := per_env < FEW_CLUSTERS).any():
            warn_user(f"Environment(s) {few(list(envs[few_]))} hold fewer than {FEW_CLUSTERS} "
                      f"clusters ({per_env.min()} at least): cluster-robust tests and "
                      "intervals are unreliable with so few.", DataWarning)

    @property
    def has_risk_variances(self) -> bool:
        """Whether :meth:`risk_variances` can be computed (the equal-risk test)."""
        return self.has_score_cov or self.blocks is not None

    @property
    def can_resample(self) -> bool:
        return self._rows is not None or self.blocks is not None

    def exog(self) -> pd.DataFrame | np.ndarray | None:
        """The covariates of every row given (dropped rows included), for prediction;
        None without rows."""
        return None if self._rows is None else self._rows.block.exog()

    def endog(self) -> pd.Series | np.ndarray | None:
        """The outcome of every row given (dropped rows included); None without rows."""
        return None if self._rows is None else self._rows.block.endog()

    def covariate_matrix(self, exog: pd.DataFrame | ArrayLike | None = None
                         ) -> tuple[FloatArray, pd.Index | None]:
        """Covariates (without the constant) as a float64 matrix in model order, and the
        row index when ``exog`` is a DataFrame: ``exog`` has the covariate columns (extra
        ones ignored) or the covariates in model order; default: the rows given."""
        names = self.exog_names[:len(self.non_constant)]
        if exog is None:
            exog = self.exog()
            if exog is None:
                raise DataError("This model keeps no rows (built from moments, or read as a "
                                "stream: CSV, Parquet, Dask, batches); pass exog to predict.")
        if isinstance(exog, Mapping):
            try:
                exog = pd.DataFrame(exog)
            except (ValueError, TypeError) as err:
                raise DataError(f"predict(exog=...): a mapping needs a sequence of values per "
                                f"column ({err}); for one row pass {{name: [value]}}.") from None
        else:
            exog = as_pandas(exog)
        if isinstance(exog, pd.DataFrame):
            if any(not isinstance(c, str) for c in exog.columns):    # as for the fit
                exog = exog.set_axis([str(c) for c in exog.columns], axis=1)
            missing = [n for n in names if n not in exog.columns]
            if missing:
                raise DataError(f"exog lacks the covariate columns {missing}.")
            text = [n for n in names if exog[n].dtype.kind not in "biuf"]
            if text:
                raise DataError(f"exog's columns {text} are not numeric; encode them as "
                                "for the fit.")
            return exog[names].to_numpy(dtype=np.float64), exog.index
        try:
            X = np.asarray(exog, dtype=np.float64)
        except (TypeError, ValueError):
            raise DataError("exog must be a DataFrame (or a dict of columns) with the "
                            f"covariates {names}, or a numeric (n, {len(names)}) array; got "
                            f"{type(exog).__name__}.") from None
        if X.ndim != 2 or X.shape[1] != len(names):
            raise DataError(f"exog must have shape (n, {len(names)}) with columns {names}; "
                            f"got {X.shape}.")
        return X, None

    # ------------------------------------------------------------------ the intercept
    @property
    def non_constant(self) -> list[int]:
        """Indices of the covariates other than the appended constant."""
        return list(range(self.moments.p - (1 if self.fit_intercept else 0)))

    def without_constant(self, mom: Moments) -> Moments:
        """The moments the slopes are judged on: with an intercept, the pooled-centred
        moments of the other covariates (:meth:`Moments.centred`; the intercept is
        profiled by the pooled level condition, as the fit does, so Conditions 1b/4/6
        do not depend on the origin of a covariate, and a constant, never intervened on,
        is left out); without one, ``mom`` itself."""
        return mom.subset(self.non_constant).centred()[0] if self.fit_intercept else mom

    def _working(self, mom: Moments) -> Moments:
        """Moments in the data's frame (a resample's, the blocks') in the frame of
        :attr:`moments`: about :attr:`origin` and with the constant, with an intercept."""
        if not self.fit_intercept:
            return mom
        if self.origin is not None:
            mom = mom.shifted(self.origin)
        return mom.add_constant(INTERCEPT_NAME)

    def user_moments(self) -> Moments:
        """:attr:`moments` in the data's own frame (not about the means; with the
        constant last where there is an intercept)."""
        if self.origin is None:
            return self.moments
        return self.moments.subset(self.non_constant).shifted(-self.origin).add_constant(
            INTERCEPT_NAME)

    def to_user(self, b: FloatArray) -> FloatArray:
        """Coefficients (..., p) fitted on :attr:`moments` in the data's frame: the same
        slopes, and the intercept ``c = c_0 + ybar - b^T xbar`` for the one ``c_0``
        fitted about the means ``(xbar, ybar)`` (:attr:`origin`)."""
        b = np.array(b, dtype=np.float64)
        if self.origin is not None:
            b[..., -1] += self.origin[-1] - b[..., :-1] @ self.origin[:-1]
        return b

    def cov_to_user(self, cov: FloatArray) -> FloatArray:
        """A covariance (p, p) of coefficients on :attr:`moments` in the data's frame
        (the congruence by :meth:`to_user`'s Jacobian, over the rows that are not NaN:
        a coefficient fixed at 0 does not move the intercept)."""
        cov = np.array(cov, dtype=np.float64)
        S = np.flatnonzero(np.isfinite(np.diag(cov)))
        if self.origin is None or cov.shape[0] - 1 not in S:
            return cov
        J = np.eye(cov.shape[0])
        J[-1, :-1] = -self.origin[:-1]
        J = J[np.ix_(S, S)]
        cov[np.ix_(S, S)] = J @ cov[np.ix_(S, S)] @ J.T
        return cov

    @property
    def _passes(self) -> bool:
        """Whether a pass over the rows can be made: rows in memory, or a source read
        again (:class:`~negdro_stats.data.readers.Stream`)."""
        return self._rows is not None or (self._stream is not None and self._stream.readable)

    def _chunks(self, what: str):
        """The rows, one chunk at a time, in the frame of :attr:`moments` (without the
        constant): in memory, or read again from the source (whose rows per environment
        must be those of the first pass)."""
        stream = None if self._rows is not None or not self._passes else self._stream
        chunks = self._need_rows(what).chunks() if stream is None else stream.chunks(
            self.moments.envs)
        n = np.zeros(self.moments.n_envs)
        for X, y, codes in chunks:
            n += np.bincount(codes, minlength=len(n))
            if self.origin is not None:
                X, y = X - self.origin[:-1], y - self.origin[-1]
            yield X, y, codes
        if stream is not None and not np.array_equal(n, self.moments.n):
            raise stream.changed(f"{int(n.sum())} rows where it had {int(self.moments.n.sum())}"
                                 if n.sum() != self.moments.n.sum()
                                 else "its rows moved between environments")

    # ------------------------------------------------------------------ row passes
    def _need_rows(self, what: str) -> Rows:
        if self._rows is None:
            source = ("read from a stream (Parquet, CSV, Dask or batches), which keeps "
                      "moments and blocks only: load the rows into a DataFrame to use it"
                      if self.blocks is not None else "built from moments")
            raise DataError(f"{what} needs the rows in memory; this model was {source}.")
        return self._rows

    def risk_variances(self, b: FloatArray, score_cov: Callable | None = None
                       ) -> tuple[FloatArray, FloatArray]:
        """Per environment the risk ``R_e(b)`` (mean of ``r^2``, ``r = y - b^T x``, ``b`` in
        model order with the intercept) and the variance of its estimate,
        ``Var_e(r^2) / n_e``: from the fourth moments where the moments carry them (every
        source up to :data:`~negdro_stats.data.fourth.MAX_P` covariates), else from the rows
        (one chunked pass); from blocks only, the between-block variance of the block
        risks (ratio-estimator form, ``K / (K - 1)`` corrected).  With dependent rows the
        long-run variance of ``r^2`` (``r``'s score) from ``score_cov`` (a fit's,
        :meth:`score_cov_of_fit`; :meth:`score_cov` by default), over the rows the
        test counts (:meth:`~negdro_stats.data.dependence.LongRun.rows`)."""
        E, fourth = self.moments.n_envs, self.moments.fourth
        if self.dependence is not None:
            R = risk_variances(self.moments, b)[0]
            var = (score_cov or self.score_cov)(b, np.array([RESIDUAL]))[:, 0, 0]
            return R, var / self._dependent_rows[1].rows(self.moments.n, 1)
        if fourth is not None:               # R from every row, Var(r^2) from the sample
            return risk_variances(self.moments, b)
        if self.blocks is not None and not self._passes:
            cells = self._working(self.blocks.cells())
            K = self.blocks.n_blocks
            n = cells.n.reshape(E, K)
            with np.errstate(invalid="ignore"):
                Rk = np.nan_to_num(cells.syy - 2 * cells.sxy @ b
                                   + np.einsum("i,kij,j->k", b, cells.Sigma, b)).reshape(E, K)
            R = (n * Rk).sum(axis=1) / n.sum(axis=1)
            k_e = (n > 0).sum(axis=1)
            var = (n**2 * (Rk - R[:, None]) ** 2).sum(axis=1) / n.sum(axis=1) ** 2
            return R, var * k_e / np.maximum(k_e - 1, 1)
        slope, intercept = split_intercept(b, self.fit_intercept)
        n, s2, s4 = (np.zeros(E) for _ in range(3))
        for X, y, codes in self._chunks("The equal-risk test"):
            r2 = (y - X @ slope - intercept) ** 2
            n += np.bincount(codes, minlength=E)
            s2 += np.bincount(codes, weights=r2, minlength=E)
            s4 += np.bincount(codes, weights=r2**2, minlength=E)
        R = s2 / n
        return R, (s4 / n - R**2) / n

    def score_cov(self, b: FloatArray, cols: ArrayLike | None = None) -> FloatArray:
        """Per environment ``Var_e(x_cols r)``, ``r = y - b^T x``, for the columns ``cols``
        of the model's covariates (the constant included; all by default; a column
        :data:`~negdro_stats.data.fourth.RESIDUAL` stands for ``r``, whose ``x r`` is
        ``r^2``): ``(E, |cols|, |cols|)``.  From the fourth moments where the moments carry them
        (:attr:`has_score_cov`), else from the rows, one chunk at a time.  With neither
        (population moments; batches from an iterator past
        :data:`~negdro_stats.data.fourth.MAX_P` covariates) the selection uses the
        Gaussian form of this covariance (no
        fourth-cumulant term; a between-block estimate, with K - 1 degrees of freedom for
        up to 30 columns, moved the J tests far more than the term it estimates)."""
        cols = np.arange(self.moments.p) if cols is None else np.asarray(cols)
        if self.dependence is not None:
            return self._long_run_cov(b, cols, self.dependence)
        if self.moments.fourth is not None:
            b = np.asarray(b, dtype=np.float64)
            return (gaussian_score_cov(self.moments, b, cols)
                    + self.moments.fourth.cumulant(b, cols))
        E, q = self.moments.n_envs, len(cols)
        slope, intercept = split_intercept(b, self.fit_intercept)
        every = takes_every(cols, len(slope))
        n, s1, s2 = np.zeros(E), np.zeros((E, q)), np.zeros((E, q, q))
        for X, y, codes in self._chunks("The score covariance"):
            r = y - X @ slope - intercept
            for e, rows in by_environment(codes):
                X_e, r_e = X[rows], r[rows]
                n[e] += len(r_e)
                for a in range(0, len(r_e), CACHE_ROWS):    # products that stay in cache
                    W = _scores(X_e[a:a + CACHE_ROWS], r_e[a:a + CACHE_ROWS], cols, every)
                    s1[e] += W.sum(axis=0)
                    s2[e] += W.T @ W
        mean = s1 / n[:, None]
        return s2 / n[:, None, None] - np.einsum("ei,ej->eij", mean, mean)

    def score_cov_of_fit(self) -> Callable[[FloatArray, np.ndarray], FloatArray]:
        """:meth:`score_cov` for one fit.  With dependent rows each covariance is a pass
        over the rows, so the fit's last ``b``'s are kept (up to ``LONG_RUN_KEPT``
        numbers), on the columns asked for at ``b``, ``r`` and ``b``'s support: a
        least-risk search asks at each fit for its instruments, then again for ``r^2``
        and the support's own conditions (62 passes for 165 asks on ``bench_dependent``'s
        design 1); a block of a covariance is that of the block's scores."""
        dependence = self.dependence
        if dependence is None:
            return self.score_cov
        kept: dict[bytes, tuple[np.ndarray, FloatArray]] = {}          # oldest first

        def score_cov(b: FloatArray, cols: np.ndarray) -> FloatArray:
            b, cols = np.asarray(b, dtype=np.float64), np.asarray(cols)
            held, cov = kept.pop(b.tobytes(), (np.zeros(0, dtype=int), None))
            if cov is None or not np.isin(cols, held).all():
                held = np.union1d(np.union1d(cols, held),
                                  np.append(np.flatnonzero(b), RESIDUAL))
                cov = self._long_run_cov(b, held, dependence)
            kept[b.tobytes()] = held, cov
            while sum(c.size for _, c in kept.values()) > LONG_RUN_KEPT and len(kept) > 1:
                kept.pop(next(iter(kept)))
            at = np.searchsorted(held, cols)
            return cov[:, at[:, None], at]

        return score_cov

    def _long_run_cov(self, b: FloatArray, cols: np.ndarray, dependence: Dependence
                      ) -> FloatArray:
        """:meth:`score_cov` for dependent rows: each environment's long-run covariance
        of its scores, rows in order (:meth:`Dependence.long_run_cov`, with
        :attr:`_within`)."""
        return np.stack([dependence.long_run_cov(W, within) for W, within in zip(
            self._environment_scores(b, cols, "The long-run score covariance"), self._within,
            strict=True)])

    def _environment_scores(self, b: FloatArray, cols: np.ndarray, what: str
                            ) -> list[FloatArray]:
        """Each environment's scores ``x_cols r`` at ``b`` (:meth:`score_cov`'s columns),
        its rows in their order (from :attr:`_sorted_rows`, whose rows are less the
        pooled means ``_origin``: ``x = z + (_origin - origin)``, ``origin`` 0 without an
        intercept)."""
        self._need_rows(what)
        slope, intercept = split_intercept(b, self.fit_intercept)
        Z, bounds = self._sorted_rows
        k = len(slope)
        shift = self._origin - (0.0 if self.origin is None else self.origin)
        r = Z @ np.concatenate([-slope, [1.0, 0.0]]) + (shift[-1] - shift[:-1] @ slope
                                                          - intercept)
        W = _scores(Z[:, :k] + shift[:-1] if shift.any() else Z[:, :k], r, cols,
                    takes_every(cols, k))
        return [W[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]

    def serial_correlation(self, b: FloatArray) -> FloatArray:
        """Per environment the lag-1 autocorrelation of the residuals ``r = y - b^T x``
        (``b`` in model order), rows in their order (:func:`~negdro_stats.data.dependence.
        serial_correlation`; NaN for fewer than 3 rows)."""
        slope, intercept = split_intercept(b, self.fit_intercept)
        r_e: list[list[FloatArray]] = [[] for _ in range(self.moments.n_envs)]
        for X, y, codes in self._chunks("The residuals' serial correlation"):
            r = y - X @ slope - intercept      # one chunk at a time, no sorted copy
            for e, rows in by_environment(codes):
                r_e[e].append(r[rows])
        return np.array([serial_correlation(np.concatenate(r)) if r else np.nan
                         for r in r_e])

    def environment_folds(self):
        """Leave-one-environment-out folds: for each environment ``e`` (in ``moments.envs``
        order), ``(e, train, X_e, y_e)`` with ``train`` the data of the other environments
        rebuilt from their rows (same columns, outcome and intercept) and ``X_e``, ``y_e``
        the held-out rows (covariates without the constant).  Needs the rows.  Dependent
        rows' ``train`` keeps their :attr:`dependence` (its clusters, its order)."""
        X, y, codes = self._need_rows("Leave-one-environment-out validation").arrays()
        names = self.exog_names[:len(self.non_constant)]
        labels = np.asarray(self.moments.envs, dtype=object)
        for e, env in enumerate(self.moments.envs):
            held = codes == e
            train = MultiEnvData.from_arrays(y[~held], X[~held], labels[codes[~held]],
                                             names=names, outcome=self.endog_name,
                                             fit_intercept=self.fit_intercept)
            if self.dependence is not None:
                train = train.with_dependence(self.dependence.rows(~held))
            yield env, train, X[held], y[held]

    # ------------------------------------------------------------------ resampling
    @cached_property
    def _sorted_rows(self) -> tuple[FloatArray, np.ndarray]:
        """Every row ``[X, y, 1]`` less the pooled means (so that offsets keep their
        variation), sorted by environment (the resamplers' one copy, made on first use;
        the column of ones gives the sums in the same product as the second moments),
        and the environments' bounds in it."""
        X, y, codes = self._need_rows("Resampling").arrays()
        origin = self._origin
        Z = np.column_stack([X - origin[:-1], y - origin[-1], np.ones(len(y))])
        counts = np.bincount(codes, minlength=self.moments.n_envs)
        return (np.take(Z, np.argsort(codes, kind="stable"), axis=0),
                np.concatenate([[0], np.cumsum(counts)]))

    @property
    def _groups(self) -> list[FloatArray]:
        """The sorted rows of each environment (views)."""
        Z, bounds = self._sorted_rows
        return [Z[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]

    def for_replicates(self) -> MultiEnvData:
        """What the resampling reads, for replicates that run elsewhere (the tasks of a
        Dask cluster): with blocks and no rows, the blocks and the moments, without the
        fourth moments' sample of rows or the way back to the source (so only moments
        travel); with rows, the data itself (a row bootstrap draws them)."""
        if self.blocks is None or self._rows is not None:
            return self
        out = copy.copy(self)
        out._stream = None
        out.moments = replace(self.moments, fourth=None)
        out.blocks = replace(self.blocks, fourth=None)
        return out

    def resample(self, rng: np.random.Generator) -> Moments:
        """Moments of one stratified bootstrap sample: in every environment ``n_e`` rows
        drawn with replacement from its rows (multinomial counts ``c``, so
        ``Sigma*_e = sum_i c_i x_i x_i^T / n_e``), or, with blocks, its K blocks drawn with
        replacement.  In model order (constant included)."""
        if self.blocks is not None:
            return self._working(self.blocks.resample(rng))
        weighted, n = [], []
        for Z, within in zip(self._groups, self._within, strict=True):
            c = (np.bincount(rng.integers(0, len(Z), size=len(Z)), minlength=len(Z))
                 if self.dependence is None else self.dependence.counts(len(Z), rng, within))
            weighted.append(Z * np.sqrt(c.astype(np.float64))[:, None])
            n.append(c.sum())
        return self._working(self._moments_of(weighted, np.array(n, dtype=np.float64)))

    @property
    def _within(self) -> list[int | Clusters]:
        """How each environment's rows (sorted, :attr:`_sorted_rows`) hang together, for
        the long-run covariance and the bootstrap: its :class:`Clusters`, or its lags,
        chosen once for the data (:meth:`Dependence.lags` of the scores of every
        covariate and ``r`` at the pooled least-squares fit), as a bandwidth is; 0 for
        independent rows."""
        if self.dependence is None:
            return [0] * self.moments.n_envs
        return self._dependent_rows[0]

    @property
    def long_run(self) -> LongRun | None:
        """How the rows' dependence enters every test (:class:`~negdro_stats.data.
        dependence.LongRun`): per environment the long-run share of the covariance of
        the scores of every covariate and ``r`` at the pooled least-squares fit (where
        the lags are chosen), the factor of the score covariances' Gaussian form, and
        the degrees of freedom of the long-run covariance; None for independent rows."""
        return None if self.dependence is None else self._dependent_rows[1]

    @cached_property
    def _dependent_rows(self) -> tuple[list[int | Clusters], LongRun]:
        """:attr:`_within` and :attr:`long_run` of dependent rows, from one pass over
        the rows (the scores at the pooled least-squares fit)."""
        dependence = self.dependence
        assert dependence is not None                       # (read only for them)
        scores = self._pooled_scores("The long-run covariance")
        if dependence.groups is not None:
            codes = self._need_rows("cov_type='cluster'").codes
            groups = dependence.groups[np.argsort(codes, kind="stable")]
            bounds = self._sorted_rows[1]
            within: list[int | Clusters] = [
                Clusters.of(groups[a:b]) for a, b in zip(bounds[:-1], bounds[1:],
                                                         strict=True)]
        else:
            within = [dependence.lags(W) for W in scores]
        return within, LongRun(
            np.array([long_run_share(np.cov(W, rowvar=False, bias=True),
                                     dependence.long_run_cov(W, w))
                      for W, w in zip(scores, within, strict=True)]),
            np.array([dependence.dof(len(W), w)
                      for W, w in zip(scores, within, strict=True)]))

    def _pooled_scores(self, what: str) -> list[FloatArray]:
        """:meth:`_environment_scores` of every covariate and ``r`` at the pooled
        least-squares fit."""
        m = self.moments
        b = np.linalg.lstsq(m.Sigma.sum(axis=0), m.sxy.sum(axis=0), rcond=None)[0]
        return self._environment_scores(b, np.append(np.arange(m.p), RESIDUAL), what)

    def margin_resamplers(self) -> tuple[Callable[[np.random.Generator], Moments],
                                         Callable[[np.random.Generator], Moments]]:
        """``(resample, permute)`` for :meth:`NegDRO.diagnose`, whose hundreds of draws
        need only second moments: where the rows are in memory, every environment has
        ``MARGIN_BLOCK_ROWS`` rows per block for ``MARGIN_BLOCKS`` blocks, and their
        moments fit in ``MAX_BLOCK_ENTRIES`` numbers, the blocks' (one pass, then each
        draw a weighted sum of E K Gram matrices instead of a pass over the rows;
        ``benchmarks/bench_conditions.py --only blocks`` compares the bound and the
        permutation test with the rows'); else :meth:`resample` and :meth:`permute`.
        The permutation is of blocks only where the environments' sizes are within
        ``MARGIN_SIZES`` of each other: a block permutation keeps each environment's
        number of blocks, not of rows (with 10,000 / 200,000 rows, every permuted
        environment has ~57,000 and the null's margins are far wider than the rows')."""
        E, q = self.moments.n_envs, len(self.non_constant) + 1
        if (self.blocks is not None or self._rows is None or self.dependence is not None
                or self.moments.n.min() < MARGIN_BLOCK_ROWS * MARGIN_BLOCKS
                or E * MARGIN_BLOCKS * q * q > MAX_BLOCK_ENTRIES):
            return self.resample, self.permute
        if self._margin_blocks is None:
            self._margin_blocks = blocks_of_rows(
                self._rows.chunks(), p=q - 1, n_blocks=MARGIN_BLOCKS,
                envs=self.moments.envs, names=self.exog_names[:q - 1],
                outcome=self.endog_name)
        blocks, n = self._margin_blocks, self.moments.n
        return (lambda rng: self._working(blocks.resample(rng)),
                (lambda rng: self._working(blocks.permute(rng)))
                if n.max() <= MARGIN_SIZES * n.min() else self.permute)

    def permute(self, rng: np.random.Generator) -> Moments:
        """Moments after a random permutation of the environment labels across all rows
        (each environment keeps its size), or of the blocks' labels: the null of no
        heterogeneity.  With dependent rows, of whole units (:attr:`_units`: clusters,
        or runs of consecutive rows as long as the longest moving block), each
        environment keeping its number of units: a permutation of single rows would
        take the dependence within an environment for a difference between them."""
        if self.blocks is not None:
            return self._working(self.blocks.permute(rng))
        Z, bounds = self._sorted_rows
        n = None
        if self.dependence is None:
            order = rng.permutation(len(Z))
        else:
            units, per_env = self._units
            drawn = [units[u] for u in rng.permutation(len(units))]
            order = np.concatenate(drawn)
            rows = np.cumsum([len(u) for u in drawn])           # (after each unit)
            bounds = np.concatenate([[0], rows[np.cumsum(per_env) - 1]])
            n = np.diff(bounds).astype(np.float64)
        shuffled = np.take(Z, order, axis=0)                 # (take: 8x a fancy index)
        return self._working(self._moments_of(
            [shuffled[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)], n))

    @cached_property
    def _units(self) -> tuple[list[np.ndarray], np.ndarray]:
        """The units :meth:`permute` moves whole (rows of :attr:`_sorted_rows`), every
        environment's in turn, and how many each environment has
        (:meth:`Dependence.units`)."""
        _, bounds = self._sorted_rows
        length = max((w for w in self._within if not isinstance(w, Clusters)), default=0) + 1
        units = [[a + u for u in Dependence.units(b - a, within, length)]
                 for a, b, within in zip(bounds[:-1], bounds[1:], self._within, strict=True)]
        return [u for env in units for u in env], np.array([len(env) for env in units])

    @property
    def _origin(self) -> FloatArray:
        """The pooled means of ``[X, y]`` in the data's frame (without the constant)."""
        if self.origin is not None:
            return self.origin
        t = self.moments
        w, p = t.pooled_weights(), len(self.non_constant)
        return np.append(w @ t.mean_x[:, :p], w @ t.mean_y)

    def _moments_of(self, parts: list[FloatArray], n: FloatArray | None = None) -> Moments:
        """Moments from per-environment rows ``W = sqrt(c) [Z - origin, 1]`` (``c`` the
        rows' multiplicities, ``n`` their sums: by default the data's ``n_e``): ``W^T W /
        n_e`` holds the second moments about the origin and, in its last column, the
        means."""
        t = self.moments
        n = t.n.copy() if n is None else n
        gram = np.stack([W.T @ W for W in parts]) / n[:, None, None]         # (syrk)
        mean = gram[:, :-1, -1]
        return Moments.from_cov(n, mean + self._origin, gram[:, :-1, :-1]
                                - np.einsum("eq,er->eqr", mean, mean), envs=t.envs,
                                names=t.names[:len(self.non_constant)], outcome=t.outcome)

    def __repr__(self) -> str:
        m = self.moments
        return (f"<MultiEnvData: outcome={m.outcome!r}, p={m.p}, envs={m.n_envs}, "
                f"nobs={m.nobs:g}, rows={'yes' if self.has_rows else 'no'}, blocks="
                f"{'no' if self.blocks is None else self.blocks.n_blocks}>")


def _check_options(missing: str, fit_intercept: bool) -> bool:
    """The data options, checked before any source is read (so that every source
    reports the same error first)."""
    check_option(missing, "missing", "NegDRO", MISSING)
    return check_bool(fit_intercept, "fit_intercept", "NegDRO")


def _check_blocks(blocks: BlockMoments) -> BlockMoments:
    """Every environment needs two non-empty blocks for the block bootstrap to vary."""
    thin = [e for e, k in zip(blocks.envs, (blocks.n > 0).sum(axis=1), strict=True) if k < 2]
    if thin:
        raise DataError(f"Environments {few(thin)} have fewer than 2 non-empty blocks (of "
                        f"{blocks.n_blocks}): too few rows to resample by blocks.")
    return blocks


def _check_moments(mom: Moments, origin: FloatArray | None = None) -> None:
    """Checks that need only the moments (the working ones, about ``origin`` if not None):
    :func:`_check_form`, the environments, the variation, collinearity and an outcome
    the covariates determine."""
    _check_form(mom)
    _check_environments(mom)
    _check_variation(mom, origin)
    _check_outcome_not_determined(_check_collinearity(mom))


def _check_environments(mom: Moments) -> None:
    """At least two environments of at least two rows; a warning where one has no more
    rows than covariates."""
    if mom.n_envs < 2:
        raise DataError(f"NegDRO needs at least 2 environments; got {mom.n_envs} "
                        f"({list(mom.envs)}). Invariance cannot be learnt from one.")
    small = [e for e, n in zip(mom.envs, mom.n, strict=True) if n < 2]
    if small:
        hint = (" Is env the column of environment labels?" if len(small) > mom.n_envs / 2
                else "")
        raise DataError(f"{len(small)} environment(s) have fewer than 2 rows "
                        f"({few(small)}); drop or merge them.{hint}")
    thin = [f"{e!r} ({n:g} rows)" for e, n in zip(mom.envs, mom.n, strict=True)
            if n <= mom.p]                  # (centred: rank n_e - 1 < p)
    if thin:
        names = ", ".join(thin[:8]) + (", ..." if len(thin) > 8 else "")
        plural, verb, whose = ("s", "have", "their") if len(thin) > 1 else ("", "has", "its")
        warn_user(f"Environment{plural} {names} {verb} no more rows than the {mom.p} "
                  f"covariates: the covariance of {whose} rows is singular and estimates "
                  "will be noisy.", DataWarning)


def _check_variation(mom: Moments, origin: FloatArray | None) -> None:
    """Second moments that can come from data; an outcome and covariates that vary
    within the environments beyond rounding."""
    E, p = len(mom.n), len(mom.names)
    # Variation that cannot be told from rounding: a variance below a few ulps of the
    # second moment the fit uses (raw without an intercept: an offset beyond ~1e7
    # standard deviations is lost there), or, about the means (``origin``), a standard
    # deviation below a few ulps of the values themselves.
    tiny = 16 * np.finfo(np.float64).eps
    values = np.zeros(p) if origin is None else np.append(np.abs(origin[:-1]), 0.0)
    Z = np.zeros((E, p + 1, p + 1))           # per-environment [X, Y] second moments
    Z[:, :p, :p], Z[:, :p, p], Z[:, p, :p], Z[:, p, p] = mom.Sigma, mom.sxy, mom.sxy, mom.syy
    low = _lowest_eigenvalue_share(Z)
    if (low < -1e-8).any():
        raise DataError(f"The second moments of environments "
                        f"{[e for e, x in zip(mom.envs, low, strict=True) if x < -1e-8]} are "
                        "not positive semidefinite: they cannot come from data.")
    within = np.einsum("ejj->ej", mom.within())         # within-env variances of [X, Y]
    var_x, var_y = within[:, :p], within[:, p]
    if np.all(var_y <= tiny * np.maximum(mom.syy, 1e-300)):
        raise DataError(f"The outcome {mom.outcome!r} is constant; there is nothing to model.")
    const = [name for j, name in enumerate(mom.names) if name != INTERCEPT_NAME
             and np.all(var_x[:, j] <= np.maximum(tiny * np.maximum(mom.Sigma[:, j, j], 1e-300),
                                                  (tiny * values[j])**2))]
    rms = np.sqrt(np.abs(np.einsum("ejj->ej", mom.Sigma)).max(axis=0))
    per_env = [name for name in const       # between-environment spread far above rounding
               if np.ptp(mom.mean_x[:, mom.names.index(name)])
               > 1e-6 * rms[mom.names.index(name)]]
    if per_env:
        raise DataError(f"Covariates {per_env} take one value per environment (environment-"
                        "level variables, e.g. a site's size, or the environment labels "
                        "themselves): their effect cannot be told apart from the "
                        "environments' shifts. Drop them; if one holds the environment "
                        "labels, pass its name as env= instead.")
    if const:
        raise DataError(f"Covariates {const} are constant (to working precision: their "
                        "variation is below 1e-15 of their mean square). Drop them, use "
                        "fit_intercept=True for an intercept, or subtract a large offset.")


def _check_collinearity(mom: Moments) -> Moments:
    """More rows than covariates and covariates that are not (nearly) collinear, checked
    on the moments the slopes are fitted on (pooled-centred with an intercept: an offset
    is no collinearity), which it returns."""
    check, centred = mom, mom.p > 1 and mom.names[-1] == INTERCEPT_NAME
    if centred:
        check = mom.subset(np.arange(mom.p - 1)).centred()[0]
    rows = float(np.sum(mom.n))                       # (inf for population moments)
    if check.p >= rows:
        raise DataError(f"{check.p} covariates but {rows:.0f} rows (p >= n): the pooled "
                        f"{'covariance' if centred else 'second-moment'} matrix is singular, "
                        "so no regression on all of them is determined.  Keep at most "
                        f"{rows - 1:.0f} covariates (covariates=[...]), or collect more rows.")
    d, _ = check.scales()
    corr = check.Sigma.mean(axis=0) / np.multiply.outer(d, d)
    try:                         # Cholesky: L_jj^2 = share of X_j not explained by X_<j
        resid = np.diag(np.linalg.cholesky(corr)) ** 2
    except np.linalg.LinAlgError:
        resid = np.zeros(1)
    if resid.min() <= 1e-10:
        vals, vecs = np.linalg.eigh(corr)                         # only on the error path
        involved = [check.names[j] for j in np.flatnonzero(np.abs(vecs[:, 0]) > 1e-3)]
        raise DataError(f"Covariates {involved} are collinear (the pooled "
                        f"{'covariance' if centred else 'second-moment'} matrix is "
                        "singular); drop one of them.")
    if resid.min() <= 1e-8:
        warn_user(f"A covariate is nearly collinear with the others (only "
                  f"{resid.min():.1e} of its second moment is unexplained); estimates "
                  "may be unstable.", DataWarning)
    return check


def _check_form(mom: Moments) -> None:
    """Shapes that fit together, finite values, squares that neither overflow nor
    underflow."""
    E, p = len(mom.n), len(mom.names)
    shapes = {"n": (E,), "mean_x": (E, p), "mean_y": (E,), "Sigma": (E, p, p), "sxy": (E, p),
              "syy": (E,)}
    wrong = [f"{k} {np.shape(getattr(mom, k))} (expected {v})" for k, v in shapes.items()
             if np.shape(getattr(mom, k)) != v]
    if wrong or len(mom.envs) != E or p == 0:
        raise DataError(f"The moments do not fit together: {', '.join(wrong) or 'names/envs'} "
                        f"for {E} environments and {p} covariates (p >= 1 needed).")
    for what, labels in (("covariate names", mom.names), ("environment labels", mom.envs)):
        repeated = sorted({str(x) for x in labels if list(labels).count(x) > 1})
        if repeated:
            raise DataError(f"The moments repeat the {what} {few(repeated)}; each must be "
                            "distinct (rename them, or merge the environments' moments).")
    bad = [k for k in ("mean_x", "mean_y", "Sigma", "sxy", "syy")
           if not np.isfinite(getattr(mom, k)).all()]
    if bad or np.isnan(mom.n).any():
        raise DataError(f"The moments hold NaN or infinite values in {bad or ['n']}.")
    scale = np.concatenate([np.einsum("ejj->ej", mom.Sigma).ravel(), mom.syy])
    level = np.abs(np.concatenate([mom.mean_x.ravel(), mom.mean_y]))
    if scale.max() > 1e200 or scale[scale > 0].min(initial=1.0) < 1e-200 or (
            (scale == 0) & (level > 0)).any():          # squares that underflowed to 0
        raise DataError("Some columns have values so large or so small (mean squares beyond "
                        "1e200 or below 1e-200) that products of moments overflow or "
                        "underflow; rescale them (multiply or divide by a power of 10).")


def _lowest_eigenvalue_share(Z: FloatArray) -> FloatArray:
    """Per matrix of the stack ``Z`` its smallest eigenvalue over the largest in absolute
    value, where that is below ``-1e-8``; else a number above it (0): a Cholesky factor of
    ``Z + 1e-8 max(diag Z) I`` shows that (``max(diag Z) <= lambda_max``) at a sixth of
    the cost of the eigenvalues (0.31 s at p = 1,000)."""
    ridge = 1e-8 * np.abs(np.einsum("eii->ei", Z)).max(axis=1)
    low = np.zeros(len(Z))
    for e in range(len(Z)):
        try:
            np.linalg.cholesky(Z[e] + ridge[e] * np.eye(Z.shape[1]))
        except np.linalg.LinAlgError:
            eig = np.linalg.eigvalsh(Z[e])
            low[e] = eig[0] / max(abs(eig[-1]), 1e-300)
    return low


def _check_outcome_not_determined(check: Moments) -> None:
    """Warn of an outcome that the covariates give exactly (a covariate that copies or
    rescales it, e.g. ``Xc = 2 Y``): every residual is 0, so no test of invariance has a
    variance to compare with (the default fit reports that exact fit;
    :func:`negdro_stats.estimation.selection.exact_fit`, the same decision)."""
    unexplained, b = check.unexplained()
    if unexplained > EXACT_FIT:
        return
    involved = [name for name, bj in zip(check.names, b, strict=True) if abs(bj) > 1e-3]
    warn_user(f"The outcome {check.outcome!r} is an exact linear function of the "
              f"covariates {involved} (unexplained share {max(unexplained, 0.0):.1e}): "
              "one probably copies the outcome; drop it to model the outcome.", DataWarning)
