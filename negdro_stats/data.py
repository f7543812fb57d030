"""The data layer: every source of multi-environment data goes through :class:`MultiEnvData`.

A DataFrame, arrays, a formula or precomputed :class:`~negdro_stats.moments.Moments` are
validated here, once (the NaN policy, environment codes, the intercept, constant and
collinear covariates), and turned into per-environment moments in one chunked pass over
the rows.  The rows stay reachable for what needs them, through one small set of methods:
residual sums (the equal-risk test), score covariances (the selection's fourth-cumulant
term) and the only resampling code of the package -- the stratified bootstrap and the
permutation of environment labels -- which the estimator's bootstrap, the margin's
bootstrap bound and the permutation test all use.  Everything here pickles.
"""

from __future__ import annotations

import glob
import numbers
import os
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import replace
from functools import cached_property
from typing import Any

import narwhals.stable.v1 as nw
import numpy as np
import pandas as pd

from ._typing import ArrayLike, FloatArray
from ._validation import check_bool, check_int, check_option, progress, warn_user
from .exceptions import DataError, DataWarning
from .fourth import gaussian_score_cov
from .moments import (
    DEFAULT_BLOCKS,
    DEFAULT_CHUNK_ROWS,
    BlockAccumulator,
    BlockMoments,
    MomentAccumulator,
    Moments,
    one_blas_thread,
)

__all__ = ["MultiEnvData", "MISSING"]

MISSING = ("raise", "drop")
INTERCEPT_NAME = "const"


class MultiEnvData:
    """Validated multi-environment data: moments, names, and (optionally) the rows.

    Build it with :meth:`from_frame`, :meth:`from_arrays`, :meth:`from_formula` or
    :meth:`from_moments` (:class:`~negdro_stats.NegDRO` does so for you).

    Attributes
    ----------
    moments : Moments
        Per-environment moments of the covariates used (with a last column ``const``
        when ``fit_intercept``).
    fit_intercept : bool
        Whether a constant column was appended.
    blocks : BlockMoments or None
        Moments of K random blocks per environment; when present, the resamplers, the
        equal-risk test and the score covariances use them instead of rows (Parquet and
        Dask sources always have them and no rows; in memory, ``blocks=K`` asks for them).
    has_rows, can_resample : bool
        Whether the rows are kept (for prediction), and whether rows or blocks are (for
        everything that resamples).
    """

    def __init__(self, moments: Moments, *, fit_intercept: bool = False,
                 rows: _Rows | None = None, blocks: BlockMoments | None = None) -> None:
        self.moments = moments
        self.fit_intercept = bool(fit_intercept)
        self._rows = rows
        self.blocks = blocks

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
        if not isinstance(frame, pd.DataFrame):
            raise DataError(f"data must be a pandas DataFrame; got {type(frame).__name__}.")
        if isinstance(frame.columns, pd.MultiIndex):
            raise DataError("data has MultiIndex columns; flatten them first, e.g. "
                            "data.columns = ['_'.join(map(str, c)) for c in data.columns].")
        if len(frame) == 0:
            raise DataError("data has no rows.")
        columns = [str(c) for c in frame.columns]
        if any(not isinstance(c, str) for c in frame.columns):   # 0, None, ("a", 1): the
            frame = frame.set_axis(columns, axis=1)              # names are their str()
        dupes = sorted({c for c in columns if columns.count(c) > 1})
        if dupes:
            raise DataError(f"data has duplicate column names {dupes}; rename them.")
        if isinstance(env, str):
            if env not in columns:
                raise DataError(f"env={env!r} is not a column of data; columns are {columns}. "
                                "Pass a column name or an array of labels of length n.")
            env_values = frame[env].to_numpy()
            columns = [c for c in columns if c != env]
        else:
            env_values = _env_labels(env, frame.index)
        if not columns:
            raise DataError("data has no columns besides the environment labels; it needs "
                            "the outcome and at least one covariate.")
        if outcome is None:
            outcome = columns[0]
        elif outcome not in columns:
            raise DataError(f"outcome={outcome!r} is not a column of data; columns are "
                            f"{columns}.")
        covariates = _covariates(covariates, columns, outcome)
        sub = frame.loc[:, [outcome, *covariates]]
        non_numeric = [c for c in sub.columns if not pd.api.types.is_numeric_dtype(sub[c])
                       or pd.api.types.is_bool_dtype(sub[c])
                       or pd.api.types.is_complex_dtype(sub[c])]
        if non_numeric:
            raise DataError(f"Columns {non_numeric} are not numeric. Encode them first (e.g. "
                            "pandas.get_dummies) or use NegDRO.from_formula.")
        return cls._from_block(_FrameBlock(sub), env_values, covariates, outcome, missing,
                               fit_intercept, blocks)

    @classmethod
    def from_arrays(cls, y: ArrayLike, X: ArrayLike, env: ArrayLike, *,
                    names: Sequence[str] | None = None, outcome: str = "y",
                    missing: str = "raise", fit_intercept: bool = False,
                    blocks: int | None = None) -> MultiEnvData:
        """An outcome vector, a covariate matrix (n, p) and ``n`` environment labels."""
        X, y = np.asarray(X), np.asarray(y)
        if X.ndim != 2 or X.shape[1] == 0:
            raise DataError(f"X must be a 2-d array (n, p) with p >= 1 covariates; got shape "
                            f"{X.shape}.")
        if y.ndim != 1:
            raise DataError(f"y must be a 1-d array of length n; got shape {y.shape}.")
        if len(y) != len(X):
            raise DataError(f"y has {len(y)} rows but X has {len(X)}; they must match.")
        names = [f"x{j + 1}" for j in range(X.shape[1])] if names is None else list(names)
        if len(names) != X.shape[1]:
            raise DataError(f"names has {len(names)} entries for {X.shape[1]} columns of X.")
        if outcome in names:
            raise DataError(f"The outcome name {outcome!r} is also a covariate name.")
        if len(set(names)) != len(names):
            raise DataError(f"names has duplicates: {names}; give each covariate its own.")
        for name, arr in (("y", y), ("X", X)):
            if not (np.issubdtype(arr.dtype, np.number) and not np.issubdtype(arr.dtype, bool)
                    and not np.issubdtype(arr.dtype, np.complexfloating)):
                raise DataError(f"{name} must be real numbers; got dtype {arr.dtype}.")
        return cls._from_block(_ArrayBlock(y, X), _env_labels(env, pd.RangeIndex(len(y))),
                               names, outcome, missing, fit_intercept, blocks)

    @classmethod
    def from_formula(cls, formula: str, frame: pd.DataFrame, env: str | ArrayLike, *,
                     missing: str = "raise", fit_intercept: bool | None = None,
                     blocks: int | None = None) -> MultiEnvData:
        """A formula such as ``"y ~ 0 + x1 + np.log(x2)"`` evaluated on ``frame`` (formulaic);
        an intercept in the formula means ``fit_intercept=True``."""
        from formulaic import model_matrix

        frame = _as_pandas(frame)
        if not isinstance(frame, pd.DataFrame):
            raise DataError("from_formula needs a DataFrame as data (pandas, polars, pyarrow, "
                            f"...); got {type(frame).__name__}.")
        if isinstance(env, str) and env not in frame:
            raise DataError(f"env={env!r} is not a column of data; columns are "
                            f"{[str(c) for c in frame.columns]}.")
        env_values = (frame[env].to_numpy() if isinstance(env, str)
                      else _env_labels(env, frame.index))
        if not isinstance(formula, str) or not formula.split("~")[0].strip():
            raise DataError(f"formula must be a string 'outcome ~ covariates' (e.g. "
                            f"'y ~ 0 + x1 + x2'); got {formula!r}.")
        try:
            y, X = model_matrix(formula, frame, na_action="ignore")
        except Exception as exc:                       # formulaic's errors vary by cause
            raise DataError(f"Could not parse formula {formula!r}: {exc}") from exc
        if y.shape[1] != 1:
            raise DataError(f"The formula must have exactly one outcome; got {list(y.columns)}.")
        has_const = "Intercept" in X.columns
        X = X.drop(columns=["Intercept"]) if has_const else X
        built = pd.concat([pd.DataFrame(y), pd.DataFrame(X)], axis=1)
        return cls.from_frame(built, env_values, outcome=str(y.columns[0]), missing=missing,
                              fit_intercept=has_const if fit_intercept is None else fit_intercept,
                              blocks=blocks)

    @classmethod
    def from_moments(cls, moments: Moments, *, fit_intercept: bool | None = None
                     ) -> MultiEnvData:
        """Per-environment moments computed elsewhere (population moments of a design, or
        :class:`~negdro_stats.moments.MomentAccumulator` on a stream); no rows.

        A covariate that is the constant 1 in every environment (``model.moments`` of a
        model with an intercept ends with one, ``const``) is the intercept: by default
        (``fit_intercept=None``) it is fitted as one, moved last and named ``const``;
        ``fit_intercept=True`` without one appends it; ``fit_intercept=False`` with one is
        an error (a constant cannot be a covariate)."""
        if not isinstance(moments, Moments):
            raise DataError(f"moments must be a negdro_stats.Moments; got "
                            f"{type(moments).__name__}.")
        ones = [j for j in range(moments.p)
                if np.allclose(moments.mean_x[:, j], 1.0, rtol=0, atol=1e-12)
                and np.allclose(moments.Sigma[:, j, j], 1.0, rtol=0, atol=1e-12)]
        fit_intercept = bool(ones) if fit_intercept is None else check_bool(
            fit_intercept, "fit_intercept", "NegDRO.from_moments")
        if ones and not fit_intercept:
            raise DataError(f"Covariate {moments.names[ones[0]]!r} is the constant 1 (an "
                            "intercept); leave fit_intercept unset or pass fit_intercept=True "
                            "to fit it as one.")
        if len(ones) > 1:
            raise DataError(f"Covariates {[moments.names[j] for j in ones]} are all the "
                            "constant 1; keep one (the intercept).")
        if fit_intercept and ones:
            order = [j for j in range(moments.p) if j != ones[0]] + ones
            moments = moments.subset(order)
            moments = replace(moments, names=(*moments.names[:-1], INTERCEPT_NAME))
        elif fit_intercept:
            moments = moments.add_constant(INTERCEPT_NAME)
        _check_moments(moments)
        return cls(moments, fit_intercept=fit_intercept)

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
        try:
            import pyarrow.dataset as ds
        except ImportError as exc:
            raise ImportError("Parquet sources need pyarrow: pip install "
                              "'negdro-stats[scale]'.") from exc

        batch_rows = check_int(batch_rows, "batch_rows", "from_parquet", min_val=1)
        files = _parquet_files(path)
        schemas = _parquet_schemas(files)
        columns = list(dict.fromkeys(c for schema in schemas.values() for c in schema))
        outcome, covariates = _split_columns(columns, env, outcome, covariates)
        dataset = ds.dataset(files, format="parquet", schema=_unified_schema(
            schemas, env, [outcome, *covariates]))
        batches = dataset.to_batches(columns=[env, outcome, *covariates], batch_size=batch_rows,
                                     batch_readahead=2, fragment_readahead=1)  # bounded memory

        acc, dropped = BlockAccumulator(p=len(covariates), n_blocks=blocks), 0
        with one_blas_thread():           # (batches in file order: rows keep positions)
            for batch in progress(batches, verbose, "parquet"):
                columns = {name: batch.column(name).to_numpy(zero_copy_only=False)
                           for name in batch.schema.names}
                dropped += _add_columns(acc, columns, env, outcome, covariates, missing)
        return cls._from_block_moments(acc, covariates, outcome, fit_intercept, dropped)

    @classmethod
    def from_dask(cls, frame: Any, env: str, *, outcome: str | None = None,
                  covariates: Sequence[str] | None = None, missing: str = "raise",
                  fit_intercept: bool = False, blocks: int = DEFAULT_BLOCKS,
                  verbose: bool | None = None) -> MultiEnvData:
        """A Dask DataFrame (any Dask source: Parquet on object storage, CSV globs, ...):
        block moments per partition, tree-reduced; runs on the active
        ``dask.distributed`` client if there is one (with its progress bar when
        ``verbose``, or by default when stderr is a terminal)."""
        try:
            import dask
        except ImportError as exc:
            raise ImportError("Dask sources need dask: pip install 'negdro-stats[scale]'.") \
                from exc

        columns = [str(c) for c in frame.columns]
        outcome, covariates = _split_columns(columns, env, outcome, covariates)
        p = len(covariates)

        def partial(part: pd.DataFrame, start: int) -> tuple[BlockAccumulator, int]:
            acc = BlockAccumulator(p=p, n_blocks=blocks, start=start)
            return acc, _add_frame(acc, part, env, outcome, covariates, missing)

        def merge(a: tuple, b: tuple) -> tuple[BlockAccumulator, int]:
            return a[0].merge(b[0]), a[1] + b[1]

        # each row's block is drawn from its position in the frame: the partitions' first
        # positions need their lengths (one light pass, over the labels only)
        lengths = _dask_compute(frame[env].map_partitions(len), False).tolist()
        starts = np.cumsum([0, *lengths[:-1]]).tolist()
        parts = [dask.delayed(partial)(d, start) for d, start in zip(
            frame[[env, outcome, *covariates]].to_delayed(), starts, strict=True)]
        while len(parts) > 1:                                # tree reduction
            parts = [dask.delayed(merge)(*parts[i:i + 2]) if i + 1 < len(parts) else parts[i]
                     for i in range(0, len(parts), 2)]
        acc, dropped = _dask_compute(parts[0], verbose)
        return cls._from_block_moments(acc, covariates, outcome, fit_intercept, dropped)

    @classmethod
    def _from_block_moments(cls, acc: BlockAccumulator, covariates: list[str], outcome: str,
                            fit_intercept: bool, dropped: int) -> MultiEnvData:
        fit_intercept = check_bool(fit_intercept, "fit_intercept", "NegDRO")
        if not acc.cells:
            raise DataError("The data have no rows.")
        if dropped:
            warn_user(f"Dropped {dropped} rows with NaN or infinite values (missing='drop').",
                      DataWarning)
        blocks = acc.finish(names=covariates, outcome=outcome)
        mom = blocks.moments()
        if fit_intercept:
            mom = mom.add_constant(INTERCEPT_NAME)
        _check_moments(mom)
        return cls(mom, fit_intercept=fit_intercept, blocks=_check_blocks(blocks))

    @classmethod
    def from_any(cls, data: Any, env: Any, *, outcome: str | None = None,
                 covariates: Sequence[str] | None = None, missing: str = "raise",
                 fit_intercept: bool = False, blocks: int | None = None) -> MultiEnvData:
        """A DataFrame (:meth:`from_frame`; pandas, or polars, pyarrow and others through
        narwhals), a Dask DataFrame (:meth:`from_dask`), a Parquet path
        (:meth:`from_parquet`) or a 2-d array with the outcome in column 0."""
        if type(data).__module__.startswith("dask"):
            return cls.from_dask(data, env, outcome=outcome, covariates=covariates,
                                 missing=missing, fit_intercept=fit_intercept,
                                 blocks=blocks or DEFAULT_BLOCKS)
        data = _as_pandas(data)
        if isinstance(data, pd.DataFrame):
            return cls.from_frame(data, env, outcome=outcome, covariates=covariates,
                                  missing=missing, fit_intercept=fit_intercept, blocks=blocks)
        if isinstance(data, (str, os.PathLike)):
            if not str(data).endswith((".parquet", ".pq")) and not os.path.isdir(data):
                raise DataError(f"data={str(data)!r}: only Parquet files (.parquet) or "
                                "directories of them are read by path; read a CSV with "
                                "pandas.read_csv, or use Moments.from_csv for a large one.")
            return cls.from_parquet(str(data), env, outcome=outcome, covariates=covariates,
                                    missing=missing, fit_intercept=fit_intercept,
                                    blocks=blocks or DEFAULT_BLOCKS)
        arr = np.asarray(data)
        if arr.ndim != 2 or arr.shape[1] < 2:
            raise DataError("data must be a DataFrame or a 2-d array with the outcome in "
                            f"column 0 and at least one covariate; got shape {arr.shape}.")
        return cls.from_arrays(arr[:, 0], arr[:, 1:], env,
                               names=[f"x{j}" for j in range(1, arr.shape[1])],
                               missing=missing, fit_intercept=fit_intercept)

    @classmethod
    def _from_block(cls, block: _FrameBlock | _ArrayBlock, env_values: np.ndarray,
                    covariates: list[str], outcome: str, missing: str,
                    fit_intercept: bool, blocks: int | None = None) -> MultiEnvData:
        """The NaN policy, the environment codes and the moments, in one chunked pass."""
        missing = check_option(missing, "missing", "NegDRO", MISSING)
        fit_intercept = check_bool(fit_intercept, "fit_intercept", "NegDRO")
        n = len(env_values)
        if n == 0:
            raise DataError("data has no rows.")
        env_missing = pd.isna(env_values)
        if env_missing.any():
            raise DataError(f"env has {int(env_missing.sum())} missing labels; give those rows "
                            "an environment or drop them (missing='drop' covers the outcome "
                            "and covariates only).")
        _check_env_values(env_values)
        kept = None
        if missing == "drop":                 # a pass to find them; "raise" needs none
            finite = _finite_rows(block, n)[0]
            if not finite.all():
                kept = np.flatnonzero(finite)
                _check_drop(env_values, finite)
                warn_user(f"Dropped {n - len(kept)} of {n} rows with NaN or infinite "
                          "values (missing='drop').", DataWarning)
        codes, labels = pd.factorize(env_values if kept is None else env_values[kept],
                                     sort=True)
        rows = _Rows(block, kept, codes)
        envs = tuple(labels.tolist())
        # with blocks, one accumulator: the environments' moments are the blocks merged
        acc = MomentAccumulator(p=len(covariates), n_envs=len(labels)) if blocks is None \
            else BlockAccumulator(p=len(covariates),
                                  n_blocks=check_int(blocks, "blocks", "NegDRO", min_val=2))
        with (one_blas_thread() if blocks is not None else nullcontext()), \
                np.errstate(over="ignore", invalid="ignore"):   # (checked just below)
            start = 0     # blocks and the row sample from positions among all rows, as
            for X, y, chunk_codes in rows.chunks():     # Parquet's (codes 0..E-1: sorted
                stop = start + len(y)                   # like envs)
                acc.add(X, y, chunk_codes, positions=np.arange(start, stop) if kept is None
                        else kept[start:stop])
                start = stop
        block_moments = None if blocks is None else replace(
            acc.finish(names=covariates, outcome=outcome), envs=envs)
        mom = (acc.finish(envs=envs, names=covariates, outcome=outcome) if blocks is None
               else block_moments.moments())
        if not all(np.isfinite(a).all() for a in (mom.Sigma, mom.sxy, mom.syy)):
            finite, counts, top = _finite_rows(block, n)       # only on the error path
            if finite.all():                                   # finite, but squares overflow
                big = [f"{name} (up to {value:.3g})" for name, value
                       in zip([*covariates, outcome], top, strict=True) if value > 1e150]
                raise DataError(f"Columns {', '.join(big[:8])} hold values whose squares "
                                "overflow float64; rescale them (e.g. divide by a power of "
                                "10).")
            by_column = [f"{name}: {count}" for name, count
                         in zip([*covariates, outcome], counts, strict=True) if count]
            raise DataError(f"data has {int((~finite).sum())} row(s) with NaN or infinite "
                            f"values (by column: {', '.join(by_column[:8])}"
                            f"{', ...' if len(by_column) > 8 else ''}; "
                            "a CSV's empty, 'NA' or 'n/a' cells are read as NaN). Clean them, "
                            "or pass missing='drop'.")
        if fit_intercept:
            if INTERCEPT_NAME in covariates:
                raise DataError(f"fit_intercept=True adds a column {INTERCEPT_NAME!r}, but "
                                "data already has one; rename it or drop it.")
            mom = mom.add_constant(INTERCEPT_NAME)
        _check_moments(mom)
        return cls(mom, fit_intercept=fit_intercept, rows=rows, blocks=None
                   if block_moments is None else _check_blocks(block_moments))

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
        """Whether :meth:`score_cov` can be computed (fourth moments, or the rows)."""
        return self.moments.fourth is not None or self._rows is not None

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

    def covariate_matrix(self, exog: pd.DataFrame | ArrayLike | None = None
                         ) -> tuple[FloatArray, pd.Index | None]:
        """Covariates (without the constant) as a float64 matrix in model order, and the
        row index when ``exog`` is a DataFrame: ``exog`` has the covariate columns (extra
        ones ignored) or the covariates in model order; default: the rows given."""
        names = self.exog_names[:len(self.non_constant)]
        if exog is None:
            exog = self.exog()
            if exog is None:
                raise DataError("This model was built from moments; pass exog to predict.")
        exog = pd.DataFrame(exog) if isinstance(exog, Mapping) else _as_pandas(exog)
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

    def _with_constant(self, mom: Moments) -> Moments:
        return mom.add_constant(INTERCEPT_NAME) if self.fit_intercept else mom

    def _split(self, b: FloatArray) -> tuple[FloatArray, float]:
        b = np.asarray(b, dtype=np.float64)
        return (b[:-1], float(b[-1])) if self.fit_intercept else (b, 0.0)

    # ------------------------------------------------------------------ row passes
    def _need_rows(self, what: str) -> _Rows:
        if self._rows is None:
            raise DataError(f"{what} needs the rows; this model was built from moments.")
        return self._rows

    def risk_variances(self, b: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Per environment the risk ``R_e(b)`` (mean of ``r^2``, ``r = y - b^T x``, ``b`` in
        model order with the intercept) and the variance of its estimate,
        ``Var_e(r^2) / n_e``: from the fourth moments where the moments carry them (every
        source up to :data:`~negdro_stats.fourth.MAX_P` covariates), else from the rows
        (one chunked pass); from blocks only, the between-block variance of the block
        risks (ratio-estimator form, ``K / (K - 1)`` corrected)."""
        E, fourth = self.moments.n_envs, self.moments.fourth
        if fourth is not None:               # R from every row, Var(r^2) from the sample
            R_s, r4_s = fourth.risk_moments(np.asarray(b, dtype=np.float64))
            m = self.moments
            R = m.syy - 2.0 * (m.sxy @ b) + np.einsum("i,eij,j->e", b, m.Sigma, b)
            return R, (r4_s - R_s**2) / m.n
        if self.blocks is not None and self._rows is None:
            cells = self._with_constant(self.blocks.cells())
            K = self.blocks.n_blocks
            n = cells.n.reshape(E, K)
            with np.errstate(invalid="ignore"):
                Rk = np.nan_to_num(cells.syy - 2 * cells.sxy @ b
                                   + np.einsum("i,kij,j->k", b, cells.Sigma, b)).reshape(E, K)
            R = (n * Rk).sum(axis=1) / n.sum(axis=1)
            k_e = (n > 0).sum(axis=1)
            var = (n**2 * (Rk - R[:, None]) ** 2).sum(axis=1) / n.sum(axis=1) ** 2
            return R, var * k_e / np.maximum(k_e - 1, 1)
        slope, intercept = self._split(b)
        n, s2, s4 = (np.zeros(E) for _ in range(3))
        for X, y, codes in self._need_rows("The equal-risk test").chunks():
            r2 = (y - X @ slope - intercept) ** 2
            n += np.bincount(codes, minlength=E)
            s2 += np.bincount(codes, weights=r2, minlength=E)
            s4 += np.bincount(codes, weights=r2**2, minlength=E)
        R = s2 / n
        return R, (s4 / n - R**2) / n

    def score_cov(self, b: FloatArray, cols: ArrayLike | None = None) -> FloatArray:
        """Per environment ``Var_e(x_cols r)``, ``r = y - b^T x``, for the columns ``cols``
        of the model's covariates (the constant included; all by default):
        ``(E, |cols|, |cols|)``.  From the fourth moments where the moments carry them
        (:attr:`has_score_cov`), else from the rows, one chunk at a time.  With neither
        (population moments; more than :data:`~negdro_stats.fourth.MAX_P` covariates from
        Parquet or Dask) the selection uses the Gaussian form of this covariance (no
        fourth-cumulant term; a between-block estimate, with K - 1 degrees of freedom for
        up to 30 columns, moved the J tests far more than the term it estimates)."""
        cols = np.arange(self.moments.p) if cols is None else np.asarray(cols)
        if self.moments.fourth is not None:
            b = np.asarray(b, dtype=np.float64)
            return (gaussian_score_cov(self.moments, b, cols)
                    + self.moments.fourth.cumulant(b, cols))
        E, q = self.moments.n_envs, len(cols)
        slope, intercept = self._split(b)
        is_x = cols < len(slope)
        n, s1, s2 = np.zeros(E), np.zeros((E, q)), np.zeros((E, q, q))
        for X, y, codes in self._need_rows("The score covariance").chunks():
            r = y - X @ slope - intercept
            Z = np.ones((len(r), q))
            Z[:, is_x] = X[:, cols[is_x]]
            for e in np.unique(codes):
                Zr = Z[codes == e] * r[codes == e, None]
                n[e] += len(Zr)
                s1[e] += Zr.sum(axis=0)
                s2[e] += Zr.T @ Zr
        mean = s1 / n[:, None]
        return s2 / n[:, None, None] - np.einsum("ei,ej->eij", mean, mean)

    def environment_folds(self):
        """Leave-one-environment-out folds: for each environment ``e`` (in ``moments.envs``
        order), ``(e, train, X_e, y_e)`` with ``train`` the data of the other environments
        rebuilt from their rows (same columns, outcome and intercept) and ``X_e``, ``y_e``
        the held-out rows (covariates without the constant).  Needs the rows."""
        X, y, codes = self._need_rows("Leave-one-environment-out validation").arrays()
        names = self.exog_names[:len(self.non_constant)]
        labels = np.asarray(self.moments.envs, dtype=object)
        for e, env in enumerate(self.moments.envs):
            held = codes == e
            train = MultiEnvData.from_arrays(y[~held], X[~held], labels[codes[~held]],
                                             names=names, outcome=self.endog_name,
                                             fit_intercept=self.fit_intercept)
            yield env, train, X[held], y[held]

    # ------------------------------------------------------------------ resampling
    @cached_property
    def _groups(self) -> list[FloatArray]:
        """The rows as one float64 array ``[X, y]`` per environment (one copy, made on
        first use by a resampler)."""
        X, y, codes = self._need_rows("Resampling").arrays()
        order = np.argsort(codes, kind="stable")
        counts = np.bincount(codes, minlength=self.moments.n_envs)
        return np.split(np.column_stack([X, y])[order], np.cumsum(counts)[:-1])

    def resample(self, rng: np.random.Generator) -> Moments:
        """Moments of one stratified bootstrap sample: in every environment ``n_e`` rows
        drawn with replacement from its rows (multinomial counts ``c``, so
        ``Sigma*_e = sum_i c_i x_i x_i^T / n_e``), or, with blocks, its K blocks drawn with
        replacement.  In model order (constant included)."""
        if self.blocks is not None:
            return self._with_constant(self.blocks.resample(rng))
        weighted = []
        for Z in self._groups:
            c = np.bincount(rng.integers(0, len(Z), size=len(Z)), minlength=len(Z))
            weighted.append((Z, c.astype(np.float64)))
        return self._with_constant(self._moments_of(weighted))

    def permute(self, rng: np.random.Generator) -> Moments:
        """Moments after a random permutation of the environment labels across all rows
        (each environment keeps its size), or of the blocks' labels: the null of no
        heterogeneity."""
        if self.blocks is not None:
            return self._with_constant(self.blocks.permute(rng))
        Z = np.concatenate(self._groups)
        order = rng.permutation(len(Z))
        bounds = np.cumsum([0, *(len(g) for g in self._groups)])
        parts = [(Z[order[a:b]], None) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        return self._with_constant(self._moments_of(parts))

    def _moments_of(self, parts: list[tuple[FloatArray, FloatArray | None]]) -> Moments:
        """Moments from per-environment rows ``Z = [X, y]`` with row multiplicities."""
        t = self.moments
        E, p = len(parts), parts[0][0].shape[1] - 1
        mean, gram = np.empty((E, p + 1)), np.empty((E, p + 1, p + 1))
        for e, (Z, c) in enumerate(parts):
            n = len(Z)
            W = Z if c is None else Z * np.sqrt(c)[:, None]
            mean[e] = Z.sum(axis=0) / n if c is None else c @ Z / n
            gram[e] = W.T @ W / n                       # syrk
        return Moments(n=t.n.copy(), mean_x=mean[:, :p], mean_y=mean[:, p],
                       Sigma=gram[:, :p, :p], sxy=gram[:, :p, p], syy=gram[:, p, p],
                       envs=t.envs, names=t.names[:p], outcome=t.outcome, source="sample")

    def __repr__(self) -> str:
        m = self.moments
        return (f"<MultiEnvData: outcome={m.outcome!r}, p={m.p}, envs={m.n_envs}, "
                f"nobs={m.nobs:g}, rows={'yes' if self.has_rows else 'no'}, blocks="
                f"{'no' if self.blocks is None else self.blocks.n_blocks}>")


# ----------------------------------------------------------------------- row access
class _FrameBlock:
    """Rows of ``[outcome, covariates]`` of a DataFrame as float64 ``(X, y)``."""

    def __init__(self, sub: pd.DataFrame) -> None:
        self.sub = sub

    def __call__(self, rows: slice | np.ndarray) -> tuple[FloatArray, FloatArray]:
        values = self.sub.iloc[rows].to_numpy(dtype=np.float64)   # one chunk, copied once
        return values[:, 1:], values[:, 0]

    def exog(self) -> pd.DataFrame:
        return self.sub.iloc[:, 1:]


class _ArrayBlock:
    """Rows of an outcome vector and a covariate matrix as float64 ``(X, y)``."""

    def __init__(self, y: np.ndarray, X: np.ndarray) -> None:
        self.y, self.X = y, X

    def __call__(self, rows: slice | np.ndarray) -> tuple[FloatArray, FloatArray]:
        return (np.asarray(self.X[rows], dtype=np.float64),
                np.asarray(self.y[rows], dtype=np.float64))

    def exog(self) -> np.ndarray:
        return self.X


class _Rows:
    """The rows used (``kept`` indices after the NaN policy, or all) and their codes."""

    def __init__(self, block: _FrameBlock | _ArrayBlock, kept: np.ndarray | None,
                 codes: np.ndarray) -> None:
        self.block, self.kept, self.codes = block, kept, codes

    def chunks(self):
        """``(X, y, codes)`` of the used rows, ``DEFAULT_CHUNK_ROWS`` at a time."""
        total = len(self.codes)
        for start in range(0, total, DEFAULT_CHUNK_ROWS):
            stop = min(start + DEFAULT_CHUNK_ROWS, total)
            X, y = self.block(slice(start, stop) if self.kept is None
                              else self.kept[start:stop])
            yield X, y, self.codes[start:stop]

    def arrays(self) -> tuple[FloatArray, FloatArray, np.ndarray]:
        """``(X, y, codes)`` of all used rows (one copy)."""
        X, y = self.block(slice(None) if self.kept is None else self.kept)
        return X, y, self.codes


def _check_drop(env_values: np.ndarray, finite: np.ndarray) -> None:
    """``missing='drop'`` must leave rows in every environment."""
    if not finite.any():
        raise DataError("missing='drop' drops every row: each has a NaN or infinite value. "
                        "Check the columns (data.isna().sum() shows where).")
    labels = pd.unique(env_values).tolist()
    emptied = [e for e in labels if not finite[env_values == e].any()]
    if emptied:
        raise DataError(f"missing='drop' drops every row of environment(s) {_few(emptied)}: "
                        "clean those rows, or drop the environment(s) explicitly.")


def _parquet_files(path: str | os.PathLike | Sequence) -> list[str]:
    """The files of a Parquet source (a file, a directory read recursively, a glob or a
    list), sorted, each checked to be Parquet (the magic bytes ``PAR1``): a CSV inside a
    directory raised ArrowInvalid or a DataError depending on the sort order."""
    if isinstance(path, str | os.PathLike):
        path = os.fspath(path)
        if glob.has_magic(path):
            candidates = sorted(glob.glob(path))
        elif os.path.isdir(path):
            candidates = sorted(os.path.join(root, f) for root, _, names in os.walk(path)
                                for f in names if not f.startswith((".", "_")))
        else:
            candidates = [path]
    else:
        candidates = [os.fspath(f) for f in path]
    if not candidates:
        raise DataError(f"No Parquet files match path={path!r}.")
    for f in candidates:
        try:
            with open(f, "rb") as handle:
                magic = handle.read(4)
        except OSError as exc:
            raise DataError(f"Could not read the Parquet file {f!r}: {exc}") from exc
        if magic != b"PAR1":
            raise DataError(f"{f!r} is not a Parquet file; move it out of the source or pass "
                            "a glob such as 'folder/*.parquet'.")
    return candidates


def _parquet_schemas(files: list[str]) -> dict[str, dict[str, Any]]:
    """Each file's columns and Arrow types (footers only), without pandas' index columns."""
    import pyarrow.parquet as pq

    schemas = {}
    for f in files:
        try:
            schema = pq.read_schema(f)
        except (OSError, ValueError) as exc:
            raise DataError(f"Could not read the schema of the Parquet file {f!r}: {exc}"
                            ) from exc
        index = {c for c in (schema.pandas_metadata or {}).get("index_columns", [])
                 if isinstance(c, str)}
        schemas[f] = {str(name): schema.field(name).type for name in schema.names
                      if name not in index}
    return schemas


def _unified_schema(schemas: dict, env: str, numeric: list[str]) -> Any:
    """One schema for every file: the variables as float64 (an int64 column that is
    float64 in a later file raised ArrowInvalid), the labels as they are in every file.
    A column missing from a file, a non-numeric variable or labels of different types
    are one DataError naming the file and the column (a covariate missing from the first
    file was dropped silently, one missing from a later file read as NaN)."""
    import pyarrow as pa

    for f, schema in schemas.items():
        absent = [c for c in [env, *numeric] if c not in schema]
        if absent:
            raise DataError(f"The Parquet file {f!r} has no column(s) {absent}; every file "
                            "needs the environment, the outcome and every covariate.")
        text = [c for c in numeric if not (pa.types.is_integer(schema[c])
                                           or pa.types.is_floating(schema[c]))]
        if text:
            raise DataError(f"Columns {text} of the Parquet file {f!r} are not numeric "
                            f"({', '.join(str(schema[c]) for c in text)}); encode them first.")
    env_types = {str(schema[env]) for schema in schemas.values()}
    if len(env_types) > 1:
        listed = ", ".join(f"{f!r}: {schema[env]}" for f, schema in schemas.items())
        raise DataError(f"The environment column {env!r} has different types across the "
                        f"Parquet files ({listed}); write it with one type.")
    first = next(iter(schemas.values()))
    return pa.schema([(env, first[env]), *((c, pa.float64()) for c in numeric)])


def _dask_compute(obj: Any, verbose: bool | None) -> Any:
    """Compute a Dask object on the active distributed client if any, else locally; with
    Dask's own progress bar when asked for (or stderr is a terminal)."""
    import sys

    import dask

    show = verbose is True or (verbose is None and sys.stderr.isatty())
    try:
        from distributed import get_client
        from distributed import progress as distributed_progress

        client = get_client()
    except (ImportError, ValueError):                 # no distributed, or no client
        client = None
    if client is not None:
        future = client.compute(obj)
        if show:
            distributed_progress(future)
        return future.result()
    if show:
        from dask.diagnostics import ProgressBar

        with ProgressBar():
            return dask.compute(obj)[0]
    return dask.compute(obj)[0]


def _covariates(covariates: Sequence[str] | None, columns: list[str], outcome: str
                ) -> list[str]:
    """The covariate columns: given (checked), or every column other than the outcome."""
    if covariates is None:
        covariates = [c for c in columns if c != outcome]
    else:
        covariates = [str(c) for c in ([covariates] if isinstance(covariates, str)
                                       else covariates)]       # one name, or several
        unknown = [c for c in covariates if c not in columns]
        if unknown:
            raise DataError(f"covariates {unknown} are not columns of data; columns are "
                            f"{_few(columns, 20)}.")
        if outcome in covariates or len(set(covariates)) != len(covariates):
            raise DataError(f"covariates {covariates} repeat a column or include the "
                            f"outcome {outcome!r}.")
    if not covariates:
        raise DataError("data has no covariate columns besides the outcome.")
    return covariates


def _split_columns(columns: list[str], env: str, outcome: str | None,
                   covariates: Sequence[str] | None) -> tuple[str, list[str]]:
    """Outcome and covariates of a columnar source (Parquet, Dask) by name."""
    if not isinstance(env, str) or env not in columns:
        raise DataError(f"env={env!r} is not a column of data; columns are "
                        f"{_few(columns, 20)}.")
    rest = [c for c in columns if c != env]
    outcome = rest[0] if outcome is None and rest else outcome
    if outcome not in rest:
        raise DataError(f"outcome={outcome!r} is not a column of data; columns are "
                        f"{_few(columns, 20)}.")
    return outcome, _covariates(covariates, rest, outcome)


def _add_frame(acc: BlockAccumulator, part: pd.DataFrame, env: str, outcome: str,
               covariates: list[str], missing: str) -> int:
    """Add a pandas partition to ``acc`` (see :func:`_add_columns`)."""
    return _add_columns(acc, {c: part[c].to_numpy() for c in [env, outcome, *covariates]},
                        env, outcome, covariates, missing)


def _add_columns(acc: BlockAccumulator, columns: dict, env: str, outcome: str,
                 covariates: list[str], missing: str) -> int:
    """Add a batch or partition, given as 1-d arrays by column name, to ``acc`` with the
    NaN policy; returns the rows dropped."""
    missing = check_option(missing, "missing", "NegDRO", MISSING)
    labels = columns[env]
    if pd.isna(labels).any():
        raise DataError(f"env has {int(pd.isna(labels).sum())} missing labels; give those rows "
                        "an environment or drop them (missing='drop' covers the outcome and "
                        "covariates only).")
    _check_env_values(np.asarray(labels))
    names = [*covariates, outcome]
    text = [c for c in names if columns[c].dtype.kind not in "fiu"]
    if text:
        raise DataError(f"Columns {text} are not numeric; encode them first.")
    values = [np.asarray(columns[c], dtype=np.float64) for c in names]
    positions = acc.positions(len(labels))           # among all rows, dropped or not
    finite = np.logical_and.reduce([np.isfinite(v) for v in values])
    dropped = int(len(finite) - np.count_nonzero(finite))
    if dropped and missing == "raise":
        raise DataError(f"data has row(s) with NaN or infinite values ({dropped} in one "
                        "batch). Clean them, or pass missing='drop'.")
    if dropped:
        values, labels, positions = ([v[finite] for v in values], labels[finite],
                                     positions[finite])
    acc.add_rows(values, labels, positions)
    return dropped


def _as_pandas(data: Any) -> Any:
    """A dataframe of another library (polars, pyarrow, modin, ...: whatever narwhals
    reads eagerly) as pandas; anything else unchanged.  Lazy frames are refused: the
    user decides when to collect."""
    if isinstance(data, pd.DataFrame):
        return data
    frame = nw.from_native(data, pass_through=True)
    if isinstance(frame, nw.LazyFrame):
        raise DataError(f"data is a lazy {type(data).__name__}; collect it first (e.g. "
                        "polars' .collect()), or write it to Parquet and pass the path.")
    return frame.to_pandas() if isinstance(frame, nw.DataFrame) else data


def _few(items: list, k: int = 5) -> str:
    """A list for a message: at most ``k`` items, then how many there are in all."""
    shown = ", ".join(repr(x) for x in items[:k])
    return shown if len(items) <= k else f"{shown}, ... ({len(items)} in all)"


def _finite_rows(block: _FrameBlock | _ArrayBlock, n: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Which of the ``n`` rows hold only finite values, how many NaN or infinite values
    each column (covariates, then the outcome) holds, and each column's largest finite
    absolute value: one chunked pass."""
    finite, counts, top = np.ones(n, dtype=bool), 0, 0.0
    for start in range(0, n, DEFAULT_CHUNK_ROWS):
        X, y = block(slice(start, start + DEFAULT_CHUNK_ROWS))
        Z = np.column_stack([X, y])
        ok = np.isfinite(Z)
        finite[start:start + len(y)] = ok.all(axis=1)
        counts = counts + (~ok).sum(axis=0)
        top = np.maximum(top, np.where(ok, np.abs(Z), 0.0).max(axis=0, initial=0.0))
    return finite, counts, top


def _env_labels(env: Any, index: pd.Index) -> np.ndarray:
    """Environment labels for rows with ``index``: a Series is aligned by index (as pandas
    does), anything else is taken by position."""
    if isinstance(env, pd.Series):
        if not env.index.equals(index):
            if env.index.has_duplicates or not index.isin(env.index).all():
                raise DataError("env is a pandas Series whose index does not cover data's "
                                "index (or repeats labels); pass env.reindex(data.index), "
                                "or env.to_numpy() to match rows by position.")
            env = env.reindex(index)
        env = env.to_numpy()
    else:
        values = np.asarray(env)
        if values.ndim != 1 or len(values) != len(index):
            raise DataError(f"env has {values.size} labels in shape {values.shape} but data "
                            f"has {len(index)} rows; pass one label per row.")
        env = values
    return env


def _check_env_values(values: np.ndarray) -> None:
    """Labels must be scalars, and distinct labels must stay distinct: Python takes
    ``1``, ``1.0`` and ``True`` for one key, so they would merge into one environment."""
    if values.dtype != object:
        return
    for v in pd.unique(values):
        if not pd.api.types.is_scalar(v):
            raise DataError(f"env labels must be scalars (numbers, strings, dates); got a "
                            f"{type(v).__name__} ({v!r}); convert them, e.g. "
                            "env.astype(str).")

    def kind(v: object) -> str:
        return ("bool" if isinstance(v, bool | np.bool_) else "integer" if isinstance(
            v, numbers.Integral) else "real" if isinstance(v, numbers.Real) else "other")

    series = pd.Series(values, dtype=object)
    if len(pd.unique(series.map(type))) == 1:          # one type (e.g. text): no merging
        return
    groups: dict = {}
    for k, v in pd.unique(series.map(lambda v: (kind(v), v))):
        groups.setdefault(v, []).append(v if k == "other" else (k, v))
    merged = [" and ".join(repr(x[1] if isinstance(x, tuple) else x) for x in group)
              for group in groups.values() if len(group) > 1]
    if merged:
        raise DataError(f"env labels {merged[0]} are different labels that Python treats as "
                        "equal, so they would merge into one environment; give env one type "
                        "(e.g. env.astype(str), or integers only).")


def _check_blocks(blocks: BlockMoments) -> BlockMoments:
    """Every environment needs two non-empty blocks for the block bootstrap to vary."""
    few = [e for e, k in zip(blocks.envs, (blocks.n > 0).sum(axis=1), strict=True) if k < 2]
    if few:
        raise DataError(f"Environments {_few(few)} have fewer than 2 non-empty blocks (of "
                        f"{blocks.n_blocks}): too few rows to resample by blocks.")
    return blocks


def _check_moments(mom: Moments) -> None:
    """Checks that need only the moments: shapes, finiteness, environments, sizes,
    positive semidefiniteness, constants, collinearity."""
    E, p = len(mom.n), len(mom.names)
    shapes = {"n": (E,), "mean_x": (E, p), "mean_y": (E,), "Sigma": (E, p, p), "sxy": (E, p),
              "syy": (E,)}
    wrong = [f"{k} {np.shape(getattr(mom, k))} (expected {v})" for k, v in shapes.items()
             if np.shape(getattr(mom, k)) != v]
    if wrong or len(mom.envs) != E or p == 0:
        raise DataError(f"The moments do not fit together: {', '.join(wrong) or 'names/envs'} "
                        f"for {E} environments and {p} covariates (p >= 1 needed).")
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
    if mom.n_envs < 2:
        raise DataError(f"NegDRO needs at least 2 environments; got {mom.n_envs} "
                        f"({list(mom.envs)}). Invariance cannot be learnt from one.")
    small = [e for e, n in zip(mom.envs, mom.n, strict=True) if n < 2]
    if small:
        hint = (" Is env the column of environment labels?" if len(small) > mom.n_envs / 2
                else "")
        raise DataError(f"{len(small)} environment(s) have fewer than 2 rows "
                        f"({_few(small)}); drop or merge them.{hint}")
    thin = [e for e, n in zip(mom.envs, mom.n, strict=True) if n < mom.p]
    if thin:
        warn_user(f"Environments {_few(thin)} have fewer rows than the {mom.p} covariates; "
                  "their second moments are singular and estimates will be noisy.",
                  DataWarning)
    # Variation below a few ulps of the raw second moment cannot be told from rounding
    # (the moments are accumulated centred, so only a true constant, or an offset beyond
    # ~1e7 standard deviations, falls under it).
    tiny = 16 * np.finfo(np.float64).eps
    Z = np.zeros((E, p + 1, p + 1))           # per-environment [X, Y] second moments
    Z[:, :p, :p], Z[:, :p, p], Z[:, p, :p], Z[:, p, p] = mom.Sigma, mom.sxy, mom.sxy, mom.syy
    eig = np.linalg.eigvalsh(Z)
    low = eig[:, 0] / np.maximum(np.abs(eig[:, -1]), 1e-300)
    if (low < -1e-8).any():
        raise DataError(f"The second moments of environments "
                        f"{[e for e, x in zip(mom.envs, low, strict=True) if x < -1e-8]} are "
                        "not positive semidefinite: they cannot come from data.")
    var_y = mom.syy - mom.mean_y**2
    if np.all(var_y <= tiny * np.maximum(mom.syy, 1e-300)):
        raise DataError(f"The outcome {mom.outcome!r} is constant; there is nothing to model.")
    var_x = np.einsum("ejj->ej", mom.Sigma) - mom.mean_x**2           # within-env variances
    const = [name for j, name in enumerate(mom.names) if name != INTERCEPT_NAME
             and np.all(var_x[:, j] <= tiny * np.maximum(mom.Sigma[:, j, j], 1e-300))]
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
    check, centred = mom, mom.p > 1 and mom.names[-1] == INTERCEPT_NAME
    if centred:              # the slopes are fitted on pooled-centred moments: an offset
        check = mom.subset(np.arange(mom.p - 1)).centred()[0]   # is no collinearity
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
