"""The readers: every source of multi-environment data, read in one place.

A source is read into a :class:`Read`: the moments accumulated in one pass over its rows
(a :class:`~negdro_stats.MomentAccumulator` in memory, a
:class:`~negdro_stats.data.blocks.BlockAccumulator` for blocks and streams), the outcome and
covariate names, the NaN policy's account of the pass and, in memory, the rows.
:class:`~negdro_stats.MultiEnvData` turns a :class:`Read` into validated data; it
does not read anything itself.

- In memory: :func:`read_frame` (pandas, and through :func:`as_pandas` polars, pyarrow
  and whatever narwhals reads), :func:`read_arrays`, :func:`read_formula`, each a
  :class:`Table`, passed over by :func:`read_rows`.
- Streams, batch by batch, memory independent of n: :func:`read_batches` (any iterator
  of frames or column mappings: SQL chunks, a cursor, a generator), and through it
  :func:`read_parquet` and :func:`read_csv` (its text read by
  :class:`~negdro_stats.data.csv_file.CsvFile`); :func:`read_dask` (partitions, merged).
  A new streaming format is a generator of batches given to :func:`read_batches`.
  Parquet, CSV and Dask sources can be read again (:class:`Stream`), for the passes a
  fit asks for past the covariates whose fourth moments a source carries.

Every reader uses the same three checks: :func:`resolve_columns` (the outcome and
covariates by name), :func:`check_real` (the variables are real numbers: pandas, numpy
and Arrow types alike) and :func:`check_labels` (environment labels present, scalar and
distinct); and the same NaN policy, :class:`NanPolicy` (``missing='raise'`` or
``'drop'``, decided after the pass from its counts, one message for every source).
A row's position in its source (dropped rows counted) places it in its block and in the
fourth-moment sample, so every split of the same rows gives the same moments.

Why one module of ~1,000 lines: every reader (frames, arrays, formulas, Parquet, Dask,
blocks) feeds one accumulator and one NaN policy, so that every source gives the same
moments, and a source read again (:class:`Stream`) goes through its reader's own
batches and the same rule for rows; one module keeps that one code path visible.
"""

from __future__ import annotations

import glob
import itertools
import numbers
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import Any

import narwhals.stable.v1 as nw
import numpy as np
import pandas as pd

from .._resampling import active_client
from .._typing import ArrayLike, FloatArray
from .._validation import (
    check_int,
    check_option,
    did_you_mean,
    few,
    in_notebook,
    progress,
    warn_user,
)
from ..exceptions import DataError, DataWarning
from .blocks import DEFAULT_BLOCKS, BlockAccumulator, BlockMoments
from .csv_file import CHUNK_ROWS, CsvFile, TextLabels, text_labels
from .moments import DEFAULT_CHUNK_ROWS, MomentAccumulator, Moments, one_blas_thread

__all__ = ["MISSING", "path_kind", "NanPolicy", "Read", "Rows", "Stream", "Table", "as_pandas",
           "check_labels", "check_real", "read_arrays", "read_batches", "read_csv", "read_dask",
           "read_formula", "read_frame", "read_parquet", "read_rows", "resolve_columns",
           "FIRST_COLUMN"]

CSV_SUFFIXES = (".csv", ".csv.gz", ".tsv", ".txt")
PARQUET_SUFFIXES = (".parquet", ".pq")


def path_kind(path: str | os.PathLike) -> str | None:
    """Which reader a path takes, the one place that decides (``NegDRO(path)`` and the
    CLI): ``"parquet"`` for a directory, a glob or a .parquet or .pq file (only Parquet
    is read from many files), else ``"csv"`` for a .csv, .csv.gz, .tsv or .txt file,
    else None."""
    text = str(path)
    if text.endswith(PARQUET_SUFFIXES) or os.path.isdir(text) or glob.has_magic(text):
        return "parquet"
    if text.endswith(CSV_SUFFIXES):
        return "csv"
    return None


MISSING = ("raise", "drop")
NAN_HINT = "a CSV's empty, 'NA' or 'n/a' cells are read as NaN"
FIRST_COLUMN = "outcome= not given"
KEEP_BYTES = 1 << 31      # a source read again is kept in memory up to this size (Stream)


# ----------------------------------------------------------------------- the checks
def unique_columns(columns: Sequence[str], env: str | None, where: str = "data",
                     flags: Mapping[str, str] | None = None) -> list[str]:
    """``columns`` after checking that no name repeats, without ``env`` (a column name
    that must be among them, or None when the labels are given apart)."""
    columns = [str(c) for c in columns]
    dupes = sorted({c for c in columns if columns.count(c) > 1})
    if dupes:
        raise DataError(f"{where} has duplicate column names {dupes}; rename them.")
    if env is None:
        return columns
    if not isinstance(env, str) or env not in columns:
        raise DataError(f"{flags['env'] + ' ' if flags else 'env='}{env!r} is not a column "
                        f"of {where}.{did_you_mean(env, columns)} Columns are "
                        f"{few(columns, 20)}. Pass the name of the column of environment "
                        "labels.")
    return [c for c in columns if c != env]


def resolve_columns(columns: Sequence[str], env: str | None, outcome: str | None,
                    covariates: Sequence[str] | None, where: str = "data",
                    flags: Mapping[str, str] | None = None) -> tuple[str, list[str]]:
    """The outcome and the covariates among ``columns`` (``env`` is a column name, or None
    when the labels are given apart): the outcome defaults to the first column other than
    ``env`` (with a :class:`DataWarning` that says how to choose), the covariates to every
    other column.  ``flags`` names the arguments in the
    messages (the CLI's ``{"env": "--env", ...}``; default ``env=``, ``outcome=``...)."""
    def arg(key: str, value: object) -> str:
        return f"{flags[key]} {value!r}" if flags else f"{key}={value!r}"

    columns = unique_columns(columns, env, where, flags)
    if not columns:
        raise DataError(f"{where} has no columns besides the environment labels; it needs "
                        "the outcome and at least one covariate.")
    if outcome is None:
        outcome = columns[0]
        if flags is None:                               # (the CLI says it in its own words)
            warn_user(f"{FIRST_COLUMN}: the first column, {outcome!r}, is the outcome, "
                      "regressed on the other columns; name it with outcome='...' (and "
                      "the covariates with covariates=[...]).", DataWarning)
    elif outcome not in columns:
        hint = (" (it is the env column)." if outcome == env
                else "." + did_you_mean(outcome, columns))
        raise DataError(f"{arg('outcome', outcome)} is not a column of {where}{hint} "
                        f"Columns are {few(columns, 20)}.")
    if covariates is None:
        covariates = [c for c in columns if c != outcome]
    else:
        if not isinstance(covariates, str | Iterable):
            raise DataError(f"{flags['covariates'] if flags else 'covariates'} must be a "
                            f"column name or a list of names; got {covariates!r}.")
        covariates = [str(c) for c in ([covariates] if isinstance(covariates, str)
                                       else covariates)]       # one name, or several
        unknown = [c for c in covariates if c not in columns]
        name = flags["covariates"] if flags else "covariates"
        if unknown:
            hints = "".join(did_you_mean(c, columns) for c in unknown)
            raise DataError(f"{name} names unknown column(s) {', '.join(unknown)}.{hints} "
                            f"Columns are {few(columns, 20)}.")
        if outcome in covariates or len(set(covariates)) != len(covariates):
            raise DataError(f"{name} {covariates} repeat a column or include the outcome "
                            f"{outcome!r}; list each covariate once.")
    if not covariates:
        raise DataError(f"{where} has no covariate columns besides the outcome {outcome!r}.")
    return outcome, covariates


def _is_real(dtype: Any) -> bool:
    """Integers or floats (pandas, numpy or Arrow types; not bool, complex or text)."""
    if type(dtype).__module__.startswith("pyarrow"):
        import pyarrow as pa

        return pa.types.is_integer(dtype) or pa.types.is_floating(dtype)
    return (pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)
            and not pd.api.types.is_complex_dtype(dtype))


def check_real(types: Mapping[str, Any], where: str = "data") -> None:
    """The variables (name -> dtype) must be real numbers."""
    text = [c for c, dtype in types.items() if not _is_real(dtype)]
    flags = [c for c in text if pd.api.types.is_bool_dtype(types[c])]
    if flags and len(flags) == len(text):
        raise DataError(f"Columns {flags} of {where} are True/False: pass them as 0/1, e.g. "
                        f"data.astype({{{flags[0]!r}: int}}).")
    if text:
        kinds = ", ".join(f"{c}: {types[c]}" for c in text[:8])
        raise DataError(f"Columns {text} of {where} are not numeric ({kinds}). Encode them "
                        "first (e.g. pandas.get_dummies; a bool as 0/1) or use "
                        "NegDRO.from_formula.")


def check_labels(values: np.ndarray) -> None:
    """Environment labels must be present and scalars, and distinct labels must stay
    distinct: Python takes ``1``, ``1.0`` and ``True`` for one key, so they would merge
    into one environment."""
    absent = pd.isna(values)
    if absent.any():
        raise DataError(f"env has {int(absent.sum())} missing labels; give those rows an "
                        "environment or drop them (missing='drop' covers the outcome and "
                        "covariates only).")
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


class NanPolicy:
    """The NaN policy of every source: rows with a NaN or infinite value are left out of
    the moments as they pass (:meth:`keep`); after the pass (:meth:`finish`)
    ``missing='raise'`` turns any into one error with the counts by column, and
    ``'drop'`` warns how many were dropped, or refuses when every row, or every row of an
    environment, went.  Policies of partitions merge."""

    def __init__(self, missing: str, names: Sequence[str]) -> None:
        self.missing = check_option(missing, "missing", "NegDRO", MISSING)
        self.names = list(names)
        self.rows = self.dropped = 0
        self.bad = np.zeros(len(self.names), dtype=np.int64)   # non-finite cells by column
        self.dropped_labels: set = set()

    def keep(self, parts: Sequence[np.ndarray], labels: np.ndarray) -> np.ndarray | None:
        """Which rows of a chunk to keep (None: all).  ``parts`` hold the chunk's values
        in ``names`` order: 1-d arrays (a column each) or 2-d arrays (columns each)."""
        self.rows += len(labels)
        with np.errstate(over="ignore", invalid="ignore"):
            if all(np.isfinite(part.sum(axis=0)).all() for part in parts):
                return None             # (a finite sum has no NaN or infinite term)
        columns = [c for part in parts for c in (part.T if part.ndim == 2 else [part])]
        finite = np.ones(len(labels), dtype=bool)
        for j, c in enumerate(columns):        # only in a chunk with a bad row (or a sum
            ok = np.isfinite(c)                # that overflowed)
            self.bad[j] += int(len(c) - np.count_nonzero(ok))
            finite &= ok
        if finite.all():
            return None
        self.dropped += int(len(finite) - np.count_nonzero(finite))
        self.dropped_labels.update(pd.unique(labels[~finite]).tolist())
        return finite

    def merge(self, other: NanPolicy) -> NanPolicy:
        """Fold the policy of another part of the same source into this one."""
        self.rows += other.rows
        self.dropped += other.dropped
        self.bad += other.bad
        self.dropped_labels |= other.dropped_labels
        return self

    def finish(self, kept_labels: Sequence) -> None:
        """The policy's verdict on the pass: an error, a warning, or nothing."""
        if self.rows == 0:
            raise DataError("data has no rows.")
        if not self.dropped:
            return
        if self.missing == "raise":
            by_column = [f"{name}: {count}" for name, count
                         in zip(self.names, self.bad, strict=True) if count]
            raise DataError(f"data has {self.dropped} row(s) with NaN or infinite values (by "
                            f"column: {', '.join(by_column[:8])}"
                            f"{', ...' if len(by_column) > 8 else ''}; {NAN_HINT}). Clean "
                            "them, or pass missing='drop'.")
        if self.dropped == self.rows:
            raise DataError("missing='drop' drops every row: each has a NaN or infinite "
                            "value. Check the columns (data.isna().sum() shows where).")
        emptied = sorted(self.dropped_labels - set(kept_labels),
                         key=lambda v: (type(v).__name__, v))
        if emptied:
            raise DataError(f"missing='drop' drops every row of environment(s) "
                            f"{few(emptied)}: clean those rows, or drop the environment(s) "
                            "explicitly.")
        warn_user(f"Dropped {self.dropped} of {self.rows} rows with NaN or infinite values "
                  "(missing='drop').", DataWarning)

    def overflow(self, mom: Moments) -> DataError:
        """The error for finite values whose squares overflow float64 (the columns whose
        mean square is infinite)."""
        square = np.concatenate([np.einsum("ejj->ej", mom.Sigma), mom.syy[:, None]], axis=1)
        big = [name for name, ok in zip(self.names, np.isfinite(square).all(axis=0),
                                        strict=True) if not ok]
        return DataError(f"Columns {few(big, 8)} hold values whose squares overflow float64 "
                         "(|x| beyond about 1e154); rescale them (e.g. divide by a power of "
                         "10).")


# ----------------------------------------------------------------------- what a pass gives
@dataclass
class Read:
    """One pass over a source: the accumulator, the names, the NaN policy's account and,
    in memory, the rows (with the environments' labels, for codes 0..E-1), or for a
    source that can be read again, its :class:`Stream`."""

    acc: MomentAccumulator | BlockAccumulator
    covariates: list[str]
    outcome: str
    policy: NanPolicy
    rows: Rows | None = None
    envs: tuple | None = None
    stream: Stream | None = None

    def moments(self) -> tuple[Moments, BlockMoments | None]:
        """The NaN policy's verdict, then the moments and (with blocks) block moments."""
        self.policy.finish(list(self.acc.cells) if self.envs is None
                           else [self.envs[c] for c in np.unique(self.rows.codes)])
        names = dict(names=self.covariates, outcome=self.outcome)
        with np.errstate(over="ignore", invalid="ignore"):   # (overflow: checked below)
            if isinstance(self.acc, MomentAccumulator):
                mom, blocks = self.acc.finish(envs=self.envs, **names), None
            else:
                blocks = self.acc.finish(**names)
                if self.envs is not None:                  # (in memory: keyed by code)
                    blocks = replace(blocks, envs=self.envs)
                mom = blocks.moments()
        if not all(np.isfinite(a).all() for a in (mom.Sigma, mom.sxy, mom.syy)):
            raise self.policy.overflow(mom)
        return mom, blocks


# ----------------------------------------------------------------------- rows in memory
class FrameRows:
    """Rows of ``[outcome, covariates]`` of a DataFrame as float64 ``(X, y)``; ``source``
    the frame they come from (for labels in its other columns)."""

    def __init__(self, sub: pd.DataFrame, source: pd.DataFrame) -> None:
        self.sub, self.source = sub, source

    def labels(self, values: Any, name: str) -> np.ndarray:
        """One label per row: ``values`` the name of a column of ``source`` other than the
        outcome and the covariates, or one label per row (a Series aligned by index)."""
        if not isinstance(values, str):
            return _env_labels(values, self.sub.index, name)
        if values in self.sub.columns:
            raise DataError(f"{name}={values!r} is the outcome or a covariate of this model; "
                            "labels need a column of their own (build the model with "
                            "covariates=[...] without it).")
        if values not in self.source.columns:
            raise DataError(f"{name}={values!r} is not a column of the data; columns: "
                            f"{few(list(self.source.columns), 8)}.")
        return self.source[values].to_numpy()

    def __call__(self, rows: slice | np.ndarray) -> tuple[FloatArray, FloatArray]:
        values = self.sub.iloc[rows].to_numpy(dtype=np.float64)   # one chunk, copied once
        return values[:, 1:], values[:, 0]

    def __len__(self) -> int:
        return len(self.sub)

    def exog(self) -> pd.DataFrame:
        return self.sub.iloc[:, 1:]

    def endog(self) -> pd.Series:
        return self.sub.iloc[:, 0]


class ArrayRows:
    """Rows of an outcome vector and a covariate matrix as float64 ``(X, y)``."""

    def __init__(self, y: np.ndarray, X: np.ndarray) -> None:
        self.y, self.X = y, X

    def labels(self, values: Any, name: str) -> np.ndarray:
        """One label per row, by position (arrays have no other columns)."""
        if isinstance(values, str):
            raise DataError(f"{name}={values!r} names a column, but this model was built "
                            "from arrays; pass one label per row.")
        return _env_labels(values, pd.RangeIndex(len(self.y)), name)

    def __call__(self, rows: slice | np.ndarray) -> tuple[FloatArray, FloatArray]:
        return (np.asarray(self.X[rows], dtype=np.float64),
                np.asarray(self.y[rows], dtype=np.float64))

    def __len__(self) -> int:
        return len(self.y)

    def exog(self) -> np.ndarray:
        return self.X

    def endog(self) -> np.ndarray:
        return self.y


class Rows:
    """The rows used (``kept`` indices after the NaN policy, or all) and their codes."""

    def __init__(self, block: FrameRows | ArrayRows, kept: np.ndarray | None,
                 codes: np.ndarray) -> None:
        self.block, self.kept, self.codes = block, kept, codes

    def chunks(self) -> Iterator[tuple[FloatArray, FloatArray, np.ndarray]]:
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

    def labels(self, values: Any, name: str) -> np.ndarray:
        """One label per used row (:meth:`FrameRows.labels`, the NaN policy's rows)."""
        labels = self.block.labels(values, name)
        return labels if self.kept is None else labels[self.kept]


class Stream:
    """A source that can be read again (Parquet files, a CSV file, a Dask DataFrame), for
    the passes a fit asks for beyond the moments: the score covariances and the
    equal-risk test's variances past the covariates whose fourth moments a source carries
    (:data:`~negdro_stats.data.fourth.MAX_P`), from the rows as a frame in memory gives
    them.  ``batches()`` gives the source's batches again, as the first pass read them;
    a row is kept by the same rule (every value finite: the NaN policy gave its verdict
    on the first pass) and its label is coded by the environments' order.  ``batches``
    (:class:`ParquetBatches`, :class:`CsvBatches`) is plain data, so that a saved result
    keeps it (reading again needs the source where it was); a Dask DataFrame's
    (:class:`DaskBatches`) is not saved: a result loaded from a file then has no
    source (:attr:`readable`).  The rows of the first complete pass
    are kept in memory where they fit in ``KEEP_BYTES`` (a fit's least-risk search can
    ask for hundreds of passes: one over a Parquet file costs several times one over a
    frame's rows); larger sources are read each time."""

    def __init__(self, batches: Callable[[], Iterable[Mapping[str, np.ndarray]]] | None,
                 env: str, names: list[str], where: str) -> None:
        self.batches, self.env, self.names, self.where = batches, env, names, where
        self._kept: list | None = None

    def __getstate__(self) -> dict:
        """Saved without the rows kept in memory, and without batches that cannot be."""
        saved = getattr(self.batches, "saved", True)
        return {**self.__dict__, "_kept": None, "batches": self.batches if saved else None}

    @property
    def readable(self) -> bool:
        """Whether the source can be read again (not a Dask DataFrame's, loaded)."""
        return self.batches is not None

    def chunks(self, envs: Sequence) -> Iterator[tuple[FloatArray, FloatArray, np.ndarray]]:
        """``(X, y, codes)`` of the kept rows, a batch at a time; ``envs`` the labels in
        code order."""
        if self._kept is not None:
            yield from self._kept
            return
        kept: list | None = []
        size = 0
        for X, y, codes in self._read(pd.Index(list(envs))):
            if kept is not None:
                size += (X.size + y.size) * 8 + codes.nbytes
                kept = kept if size <= KEEP_BYTES else None
                if kept is not None:
                    kept.append((X, y, codes))
            yield X, y, codes
        self._kept = kept

    def _read(self, index: pd.Index) -> Iterator[tuple[FloatArray, FloatArray, np.ndarray]]:
        """One pass over the source, the labels coded by ``index``."""
        if self.batches is None:
            raise DataError(f"{self.where} is not saved with a result: refit from it to "
                            "read its rows again.")
        batches = iter(self.batches())
        while True:
            try:
                batch = next(batches, None)
            except (OSError, DataError) as exc:       # (moved, removed, rewritten unlike)
                raise DataError(f"Could not read {self.where} again ({exc}); a fit past "
                                "the fourth moments' covariates reads its source again: "
                                "keep it where it was, or refit on a copy.") from exc
            if batch is None:
                return
            values = np.column_stack([np.asarray(batch[c], dtype=np.float64)
                                      for c in self.names])
            keep = np.isfinite(values).all(axis=1)
            codes = index.get_indexer(np.asarray(batch[self.env])[keep])
            if (codes < 0).any():
                raise self.changed("it holds environments it did not")
            values = values[keep]
            yield values[:, :-1], values[:, -1], codes

    def changed(self, how: str) -> DataError:
        """The error for a source that is not what the first pass read."""
        return DataError(f"{self.where} changed since it was read ({how}): read it again "
                         "and refit.")


@dataclass
class Table:
    """An in-memory source, checked: its rows, one environment label per row, the names
    and whether a formula asked for an intercept."""

    block: FrameRows | ArrayRows
    env: np.ndarray
    covariates: list[str]
    outcome: str
    intercept: bool = False


def as_pandas(data: Any) -> Any:
    """A dataframe of another library (polars, pyarrow, modin, ...: whatever narwhals
    reads eagerly) as pandas; anything else unchanged.  Lazy frames are refused: the
    user decides when to collect."""
    if isinstance(data, pd.DataFrame):
        return data
    names = getattr(data, "column_names", None)      # a pyarrow Table may repeat a name
    if isinstance(names, list):                      # (narwhals: DuplicateError)
        unique_columns(names, None, where=f"data (a {type(data).__name__})")
    frame = nw.from_native(data, pass_through=True)
    if isinstance(frame, nw.LazyFrame):
        raise DataError(f"data is a lazy {type(data).__name__}; collect it first (e.g. "
                        "polars' .collect()), or write it to Parquet and pass the path.")
    return frame.to_pandas() if isinstance(frame, nw.DataFrame) else data


def read_frame(frame: pd.DataFrame, env: str | ArrayLike, outcome: str | None = None,
               covariates: Sequence[str] | None = None, source: pd.DataFrame | None = None
               ) -> Table:
    """A DataFrame with the outcome, the covariates and (optionally) the env column;
    ``env`` is a column name, a pandas Series (aligned by index) or labels by position.
    ``source``: the user's frame that ``frame`` was built from (default ``frame``), whose
    other columns can hold labels (:meth:`FrameRows.labels`)."""
    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"data must be a pandas DataFrame; got {type(frame).__name__}.")
    if isinstance(frame.columns, pd.MultiIndex):
        raise DataError("data has MultiIndex columns; flatten them first, e.g. "
                        "data.columns = ['_'.join(map(str, c)) for c in data.columns].")
    if len(frame) == 0:
        raise DataError("data has no rows.")
    if any(not isinstance(c, str) for c in frame.columns):   # 0, None, ("a", 1): the
        frame = frame.set_axis([str(c) for c in frame.columns], axis=1)   # names are str()
    by_name = isinstance(env, str)
    outcome, covariates = resolve_columns(frame.columns, env if by_name else None, outcome,
                                          covariates)
    env_values = frame[env].to_numpy() if by_name else _env_labels(env, frame.index)
    sub = frame.loc[:, [outcome, *covariates]]
    check_real(sub.dtypes.to_dict())
    return Table(FrameRows(sub, frame if source is None else source), env_values, covariates,
                 outcome)


def read_arrays(y: ArrayLike, X: ArrayLike, env: ArrayLike, names: Sequence[str] | None = None,
                outcome: str = "y") -> Table:
    """An outcome vector, a covariate matrix (n, p) and ``n`` environment labels."""
    X, y = np.asarray(X), np.asarray(y)
    if y.ndim == 2 and X.ndim == 1:
        raise DataError(f"from_arrays takes (y, X, env), the outcome first as in "
                        f"statsmodels' OLS(y, X); got a 2-d y {y.shape} and a 1-d X "
                        f"{X.shape}: scikit-learn's order (X, y). Swap them.")
    if X.ndim != 2 or X.shape[1] == 0:
        raise DataError(f"X must be a 2-d array (n, p) with p >= 1 covariates; got shape "
                        f"{X.shape}.")
    if y.ndim != 1:
        raise DataError(f"y must be a 1-d array of length n; got shape {y.shape}.")
    if len(y) != len(X):
        raise DataError(f"y has {len(y)} rows but X has {len(X)}; they must match.")
    if len(y) == 0:
        raise DataError("data has no rows.")
    names = [f"x{j + 1}" for j in range(X.shape[1])] if names is None else list(names)
    if len(names) != X.shape[1]:
        raise DataError(f"names has {len(names)} entries for {X.shape[1]} columns of X.")
    if outcome in names:
        raise DataError(f"The outcome name {outcome!r} is also a covariate name.")
    resolve_columns([outcome, *names], None, outcome, names, where="names")
    check_real({"y": y.dtype, "X": X.dtype}, where="the arrays")
    return Table(ArrayRows(y, X), _env_labels(env, pd.RangeIndex(len(y))), names, outcome)


def read_formula(formula: str, frame: Any, env: str | ArrayLike) -> Table:
    """A formula such as ``"y ~ 0 + x1 + np.log(x2)"`` evaluated on ``frame``
    (formulaic); ``Table.intercept`` says whether the formula has one."""
    from formulaic import model_matrix

    frame = as_pandas(frame)
    if not isinstance(frame, pd.DataFrame):
        raise DataError("from_formula needs a DataFrame as data (pandas, polars, pyarrow, "
                        f"...); got {type(frame).__name__}.")
    if isinstance(env, str):           # (the formula names the outcome: no default here)
        unique_columns(frame.columns, env)
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
    return replace(read_frame(built, env_values, outcome=str(y.columns[0]), source=frame),
                   intercept=has_const)


def _env_labels(env: Any, index: pd.Index, name: str = "env") -> np.ndarray:
    """Labels (``name``: environments by default) for rows with ``index``: a Series is
    aligned by index (as pandas does), anything else is taken by position."""
    if isinstance(env, pd.Series):
        if not env.index.equals(index):
            if env.index.has_duplicates or not index.isin(env.index).all():
                raise DataError(f"{name} is a pandas Series whose index does not cover "
                                f"data's index (or repeats labels); pass "
                                f"{name}.reindex(data.index), or {name}.to_numpy() to match "
                                "rows by position.")
            env = env.reindex(index)
        return env.to_numpy()
    values = np.asarray(env)
    if values.ndim == 0:
        raise DataError(f"{name}={env!r} is neither a column name nor one label per row: "
                        f"pass the name (a str) of the column of labels, or an array of "
                        f"{len(index)} labels.")
    if values.ndim != 1 or len(values) != len(index):
        raise DataError(f"{name} has {values.size} labels in shape {values.shape} but data "
                        f"has {len(index)} rows; pass one label per row (or the name of the "
                        "column that holds them).")
    return values


def read_rows(table: Table, missing: str, blocks: int | None = None) -> Read:
    """One chunked pass over an in-memory table: the NaN policy, the environment codes
    (labels sorted) and the moments, or with ``blocks=K`` the block moments (the
    environments' moments are the blocks merged)."""
    check_labels(table.env)
    policy = NanPolicy(missing, [*table.covariates, table.outcome])
    codes, labels = pd.factorize(table.env, sort=True)
    p, E = len(table.covariates), len(labels)
    acc = MomentAccumulator(p=p, n_envs=E) if blocks is None else BlockAccumulator(
        p=p, n_blocks=_blocks(blocks))
    n = len(codes)
    finite = np.ones(n, dtype=bool)                 # the rows the NaN policy keeps
    with (one_blas_thread() if blocks is not None else nullcontext()), \
            np.errstate(over="ignore", invalid="ignore"):   # (overflow: checked after)
        for start in range(0, n, DEFAULT_CHUNK_ROWS):
            X, y = table.block(slice(start, start + DEFAULT_CHUNK_ROWS))
            positions = np.arange(start, start + len(y))     # among all rows, as Parquet's
            mask = policy.keep([X, y], table.env[start:start + len(y)])
            if mask is not None:
                X, y, positions = X[mask], y[mask], positions[mask]
                finite[start:start + len(mask)] = mask
            acc.add(X, y, codes[positions], positions=positions)
    used = None if policy.dropped == 0 else np.flatnonzero(finite)
    return Read(acc, table.covariates, table.outcome, policy, envs=tuple(labels.tolist()),
                rows=Rows(table.block, used, codes if used is None else codes[used]))


# ----------------------------------------------------------------------- streams
def _add_columns(acc: BlockAccumulator, policy: NanPolicy, columns: Mapping[str, np.ndarray],
                 env: str) -> None:
    """Add a batch or partition, given as 1-d arrays by column name, to ``acc``."""
    labels = np.asarray(columns[env])
    check_labels(labels)
    values = [np.asarray(columns[c], dtype=np.float64) for c in policy.names]
    positions = acc.positions(len(labels))           # among all rows, dropped or not
    mask = policy.keep(values, labels)
    if mask is not None:
        values, labels, positions = [v[mask] for v in values], labels[mask], positions[mask]
    with np.errstate(over="ignore", invalid="ignore"):   # (overflow: checked after)
        acc.add_rows(values, labels, positions)


def read_batches(batches: Iterable[Any], env: str, *, outcome: str | None = None,
                 covariates: Sequence[str] | None = None, missing: str = "raise",
                 blocks: int = DEFAULT_BLOCKS, verbose: bool | None = None,
                 columns: Sequence[str] | None = None, total: int | None = None,
                 where: str = "the batches", desc: str = "batches") -> Read:
    """Any stream of batches, each a DataFrame or a mapping of column name to 1-d array
    (``pandas.read_sql(..., chunksize=)``, ``pandas.read_csv(..., chunksize=)``, a
    database cursor, a generator), read in one pass into block moments (memory
    independent of n).  ``columns`` names the columns before the pass (else the first
    batch does); every batch must hold the environment labels, the outcome and the
    covariates.  The Parquet and CSV readers are this loop over their own batches."""
    batches = iter(batches)
    if columns is None:
        first = next(batches, None)
        if first is None:
            raise DataError(f"{where} are empty: there is no batch to read.")
        columns = list(_batch_columns(first, 0, where))
        batches = itertools.chain([first], batches)
    outcome, covariates = resolve_columns(columns, env, outcome, covariates, where=where)
    names = [*covariates, outcome]
    acc = BlockAccumulator(p=len(covariates), n_blocks=_blocks(blocks))
    policy = NanPolicy(missing, names)
    with one_blas_thread():             # (batches in order: rows keep their positions)
        for k, batch in enumerate(progress(batches, verbose, desc, total=total)):
            arrays = _batch_arrays(batch, [env, *names], k, where)
            check_real({c: arrays[c].dtype for c in names}, where=where)
            _add_columns(acc, policy, arrays, env)
    return Read(acc, covariates, outcome, policy)


def _batch_columns(batch: Any, k: int, where: str) -> dict[str, Any]:
    """Batch ``k``'s column keys by their string names."""
    if not hasattr(batch, "keys") or not hasattr(batch, "__getitem__"):
        raise DataError(f"Batch {k} of {where} is a {type(batch).__name__}; each batch must "
                        "be a DataFrame or a mapping of column name to 1-d array.")
    return {str(c): c for c in batch.keys()}


def _batch_arrays(batch: Any, needed: list[str], k: int, where: str) -> dict[str, np.ndarray]:
    """The needed columns of batch ``k`` as 1-d arrays, by (string) name."""
    present = _batch_columns(batch, k, where)
    lacking = [c for c in needed if c not in present]
    if lacking:
        raise DataError(f"Batch {k} of {where} lacks the column(s) {lacking} that the first "
                        "names; every batch needs the same columns.")
    arrays = {c: np.asarray(batch[present[c]]) for c in needed}
    lengths = {a.shape for a in arrays.values()}
    if len(lengths) != 1 or len(next(iter(lengths))) != 1:
        raise DataError(f"Batch {k} of {where} has columns of shapes {sorted(lengths)}; each "
                        "column of a batch must be 1-d, and all of one length.")
    return arrays


def read_parquet(path: str | os.PathLike | Sequence, env: str, *, outcome: str | None = None,
                 covariates: Sequence[str] | None = None, missing: str = "raise",
                 blocks: int = DEFAULT_BLOCKS, batch_rows: int = 1 << 17,
                 verbose: bool | None = None) -> Read:
    """Parquet files (a path, a directory, a glob or a list; pyarrow datasets), read
    batch by batch and only the needed columns, with one schema for every file checked
    before the pass."""
    try:
        import pyarrow.dataset  # noqa: F401
    except ImportError as exc:
        raise ImportError("Parquet sources need pyarrow: pip install "
                          "'negdro-stats[scale]'.") from exc

    batch_rows = check_int(batch_rows, "batch_rows", "from_parquet", min_val=1)
    files = _parquet_files(path)
    schemas = _parquet_schemas(files)
    columns = list(dict.fromkeys(c for schema in schemas.values() for c in schema))
    outcome, covariates = resolve_columns(columns, env, outcome, covariates)
    _unified_schema(schemas, env, [outcome, *covariates])       # (checked before the pass)
    batches = ParquetBatches(files, env, [outcome, *covariates], batch_rows)
    read = read_batches(batches(), env, outcome=outcome, covariates=covariates,
                        missing=missing, blocks=blocks, verbose=verbose, columns=columns,
                        desc="parquet")
    return replace(read, stream=Stream(batches, env, [*covariates, outcome],
                                       "the Parquet files"))


@dataclass(frozen=True)
class ParquetBatches:
    """The Parquet ``files``' batches of the columns ``env`` and ``numeric``, in one
    schema (their footers read again each time: plain data, saved with a result)."""

    files: list[str]
    env: str
    numeric: list[str]
    batch_rows: int

    def __call__(self) -> Iterator[dict[str, np.ndarray]]:
        import pyarrow.dataset as ds

        schema = _unified_schema(_parquet_schemas(self.files), self.env, self.numeric)
        dataset = ds.dataset(self.files, format="parquet", schema=schema)
        for batch in dataset.to_batches(columns=[self.env, *self.numeric],
                                        batch_size=self.batch_rows, batch_readahead=2,
                                        fragment_readahead=1):          # bounded memory
            yield {name: batch.column(name).to_numpy(zero_copy_only=False)
                   for name in batch.schema.names}


def read_dask(frame: Any, env: str, *, outcome: str | None = None,
              covariates: Sequence[str] | None = None, missing: str = "raise",
              blocks: int = DEFAULT_BLOCKS, verbose: bool | None = None) -> Read:
    """A Dask DataFrame (any Dask source: Parquet on object storage, CSV globs, ...):
    block moments per partition, tree-reduced; runs on the active ``dask.distributed``
    client if there is one."""
    try:
        import dask
    except ImportError as exc:
        raise ImportError("Dask sources need dask: pip install 'negdro-stats[scale]'.") \
            from exc

    if not hasattr(frame, "columns") or not hasattr(frame, "to_delayed"):
        raise DataError(f"from_dask needs a Dask DataFrame; got {type(frame).__name__} (a "
                        "Dask Series holds one column: use series.to_frame() and add the "
                        "environment column).")
    if any(not isinstance(c, str) for c in frame.columns):   # 0, None: names are str(),
        frame = frame.rename(columns=str)                    # as for a pandas frame
    outcome, covariates = resolve_columns(list(frame.columns), env, outcome, covariates)
    check_real({c: frame[c].dtype for c in [outcome, *covariates]})
    p, n_blocks = len(covariates), _blocks(blocks)
    names = [*covariates, outcome]
    check_option(missing, "missing", "NegDRO", MISSING)

    def partial(part: pd.DataFrame, start: int) -> tuple[BlockAccumulator, NanPolicy]:
        acc, policy = BlockAccumulator(p=p, n_blocks=n_blocks, start=start), NanPolicy(
            missing, names)
        _add_columns(acc, policy, {c: part[c].to_numpy() for c in [env, *names]}, env)
        return acc, policy

    def merge(a: tuple, b: tuple) -> tuple[BlockAccumulator, NanPolicy]:
        return a[0].merge(b[0]), a[1].merge(b[1])

    # each row's block is drawn from its position in the frame: the partitions' first
    # positions need their lengths, counted on the very collection that is read (dask's
    # query planner fuses Parquet partitions by the columns selected: the labels alone
    # had fewer partitions than all the columns, "zip() argument 2 is shorter")
    used = frame[[env, *names]]
    lengths = _dask_compute(used.map_partitions(len), False).tolist()
    starts = np.cumsum([0, *lengths[:-1]]).tolist()
    delayed = used.to_delayed()
    if len(delayed) != len(starts):
        raise DataError(f"The Dask DataFrame gave {len(delayed)} partitions but {len(starts)} "
                        "partition lengths; persist it first (frame.persist()).")
    parts = [dask.delayed(partial)(d, start) for d, start in zip(delayed, starts, strict=True)]
    while len(parts) > 1:                                # tree reduction
        parts = [dask.delayed(merge)(*parts[i:i + 2]) if i + 1 < len(parts) else parts[i]
                 for i in range(0, len(parts), 2)]
    acc, policy = _dask_compute(parts[0], verbose)
    return Read(acc, covariates, outcome, policy,
                stream=Stream(DaskBatches(used), env, names, "the Dask DataFrame"))


@dataclass(frozen=True)
class DaskBatches:
    """The Dask DataFrame's partitions in order, one at a time (on the active client).
    Not saved with a result (a file that held a Dask graph would not load safely)."""

    frame: Any
    saved = False

    def __call__(self) -> Iterator[dict[str, np.ndarray]]:
        for part in self.frame.to_delayed():
            part = _dask_compute(part, False)
            yield {str(c): part[c].to_numpy() for c in part.columns}


def read_csv(path: str | os.PathLike, env: str, *, outcome: str | None = None,
             covariates: Sequence[str] | None = None, missing: str = "raise",
             blocks: int = DEFAULT_BLOCKS, chunk_rows: int = CHUNK_ROWS,
             encoding: str = "utf-8", sep: str = ",", decimal: str = ".",
             verbose: bool | None = None) -> Read:
    """A CSV file (:class:`~negdro_stats.data.csv_file.CsvFile`: its header and text
    checked) read ``chunk_rows`` rows at a time, in two passes: the environment column
    first (typed once for the whole file by
    :func:`~negdro_stats.data.csv_file.text_labels`), then the variables into block
    moments.  Empty, 'NA' and 'n/a' cells are NaN (the NaN policy); a column without a
    name (a written index) is refused unless left out."""
    chunk_rows = check_int(chunk_rows, "chunk_rows", "from_csv", min_val=1)
    file = CsvFile(path, sep=sep, decimal=decimal, encoding=encoding)
    outcome, covariates = resolve_columns(file.header, env, outcome, covariates,
                                          where=file.path)
    names = [*covariates, outcome]
    file.check_named(names)
    # the first pass reads every column, so that ragged rows are found
    text = pd.concat([chunk[env] for chunk in file.chunks(env, chunk_rows)]
                     or [pd.Series([], dtype=str)])
    if len(text) == 0:
        raise DataError(f"{file.path} has a header but no data rows.")
    if text.isna().any():
        raise DataError(f"{file.path} has {int(text.isna().sum())} rows with a blank {env!r} "
                        "cell; give every row an environment label.")
    batches = CsvBatches(file, env, names, chunk_rows, text_labels(text))
    read = read_batches(batches(), env, outcome=outcome, covariates=covariates,
                        missing=missing, blocks=blocks, verbose=verbose, columns=file.header,
                        total=-(-len(text) // chunk_rows), where=file.path, desc="csv")
    return replace(read, stream=Stream(batches, env, names, file.path))


@dataclass(frozen=True)
class CsvBatches:
    """The CSV file's chunks: the labels typed, the variables checked to be numbers."""

    file: CsvFile
    env: str
    names: list[str]
    chunk_rows: int
    typed: TextLabels

    def __call__(self) -> Iterator[dict[str, np.ndarray]]:
        file, env, names = self.file, self.env, self.names
        for chunk in file.chunks(env, self.chunk_rows, [env, *names]):
            file.check_numbers(chunk, names)
            check_real(chunk[names].dtypes.to_dict(), where=f"{file.path} (a cell that is "
                       "not a number; leave the column out with covariates=[...])")
            yield {env: self.typed(chunk[env]), **{c: chunk[c].to_numpy() for c in names}}


def _blocks(blocks: int) -> int:
    return check_int(blocks, "blocks", "NegDRO", min_val=2, max_val=10**9)


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
        unique_columns(schema.names, None, where=f)    # repeated names (pyarrow: KeyError)
        index = {c for c in (schema.pandas_metadata or {}).get("index_columns", [])
                 if isinstance(c, str)}
        schemas[f] = {str(name): schema.field(name).type for name in schema.names
                      if name not in index}
    return schemas


def _unified_schema(schemas: dict, env: str, numeric: list[str]) -> Any:
    """One schema for every file: the variables as float64 (an int64 column that is
    float64 in a later file would raise ArrowInvalid), the labels as they are in every
    file.  A column missing from a file, a non-numeric variable or labels of different
    types are one DataError naming the file and the column (not a covariate dropped
    silently, nor one read as NaN)."""
    import pyarrow as pa

    for f, schema in schemas.items():
        absent = [c for c in [env, *numeric] if c not in schema]
        if absent:
            raise DataError(f"The Parquet file {f!r} has no column(s) {absent}; every file "
                            "needs the environment, the outcome and every covariate.")
        check_real({c: schema[c] for c in numeric}, where=f"the Parquet file {f!r}")
    env_types = {str(schema[env]) for schema in schemas.values()}
    if len(env_types) > 1:
        listed = ", ".join(f"{f!r}: {schema[env]}" for f, schema in schemas.items())
        raise DataError(f"The environment column {env!r} has different types across the "
                        f"Parquet files ({listed}); write it with one type.")
    first = next(iter(schemas.values()))
    return pa.schema([(env, first[env]), *((c, pa.float64()) for c in numeric)])


def _dask_compute(obj: Any, verbose: bool | None) -> Any:
    """Compute a Dask object on the active distributed client if any, else locally; with
    Dask's own progress bar when asked for (or in a terminal or notebook)."""
    import dask

    show = verbose is True or (verbose is None and (sys.stderr.isatty() or in_notebook()))
    client = active_client()
    if client is not None:
        from distributed import progress as distributed_progress

        future = client.compute(obj)
        if show:
            distributed_progress(future)
        return future.result()
    if show:
        from dask.diagnostics import ProgressBar

        with ProgressBar():
            return dask.compute(obj)[0]
    return dask.compute(obj)[0]
