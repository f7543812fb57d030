"""A CSV file, read one way for the library and the command line.

:class:`CsvFile` reads the header once (bounded: a file without a newline is not read
whole), checks it (a comment line above it, a repeated name, one column that holds
another separator) and gives the rows in chunks, with every defect of the text an error
that names the file, the line and the fix: ragged rows (longer or shorter than the
header), numbers with decimal commas, text that is not in the given encoding, a column
without a name.  :func:`~negdro_stats.data.readers.read_csv` streams the chunks into block
moments; :meth:`CsvFile.frame` gives the whole file as a DataFrame (the CLI's fit in
memory).  :func:`text_labels` is the one rule for environment labels read as text.
"""

from __future__ import annotations

import bz2
import codecs
import contextlib
import csv
import gzip
import io
import lzma
import os
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import IO

import numpy as np
import pandas as pd

from ..exceptions import DataError

__all__ = ["CsvFile", "text_labels", "CSV_OPTIONS", "HEADER_CHARS", "CHUNK_ROWS"]

#: One reading of a CSV text: spaces after a separator skipped, a row longer than the
#: header an error (not a silent index column).
CSV_OPTIONS = {"skipinitialspace": True, "on_bad_lines": "error", "index_col": False}
HEADER_CHARS = 1 << 20       # a first line longer than this is not a CSV header
CHUNK_ROWS = 200_000         # rows read at a time (pandas' parser; memory ~ chunk x columns)
_SEPARATORS = (",", ";", "\t", "|")
_DECIMAL_COMMA = r"[-+]?\d*,\d+(?:[eE][-+]?\d+)?"


class CsvFile:
    """The CSV file at ``path`` with its header read and checked; ``sep``, ``decimal``
    and ``encoding`` as in ``pandas.read_csv`` (compression by suffix: .gz, .bz2, .xz)."""

    def __init__(self, path: str | os.PathLike, *, sep: str = ",", decimal: str = ".",
                 encoding: str = "utf-8") -> None:
        self.path, self.sep, self.decimal, self.encoding = os.fspath(path), sep, decimal, encoding
        try:
            codecs.lookup(encoding)
        except (LookupError, TypeError):
            raise DataError(f"encoding={encoding!r} is not a text encoding Python knows; pass "
                            "e.g. encoding='utf-8' or encoding='latin-1'.") from None
        if sep == decimal:
            raise DataError(f"decimal={decimal!r} is also the separator (sep={sep!r}); a "
                            "file with decimal commas is ';'-separated: pass sep=';'.")
        self.header = self._header()
        self._looked = False
        self._short_row: tuple[int, int, int] | None = None

    def open(self) -> IO[str]:
        """The file as text, decompressed by its suffix as pandas does."""
        openers: dict[str, Callable[..., IO[str]]] = {
            ".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
        opener = openers.get(os.path.splitext(self.path)[1].lower(), open)
        return opener(self.path, "rt", newline="", encoding=self.encoding)

    def _header(self) -> list[str]:
        with self._errors():
            with self.open() as handle:
                line = handle.readline(HEADER_CHARS + 1)
        if not line.strip():
            raise DataError(f"{self.path} is empty; it needs a header row and data rows.")
        if "\x00" in line:
            raise DataError(f"{self.path} is not a text CSV file (it holds NUL bytes).")
        if len(line) > HEADER_CHARS:
            raise DataError(f"{self.path} has no header line: its first {HEADER_CHARS:,} "
                            "characters hold no line break; give a CSV file.")
        if line.startswith("#"):
            raise DataError(f"{self.path} starts with a comment line ({line.strip()[:40]!r});"
                            " remove the comment lines: a CSV file's first line is its "
                            "header.")
        written = next(csv.reader([line], delimiter=self.sep, skipinitialspace=True))
        repeated = sorted({c for c in written if written.count(c) > 1})
        if repeated:          # (pandas renames the second 'X1' to 'X1.1' and reads on)
            raise DataError(f"{self.path} has duplicate column names {repeated}; rename "
                            "them.")
        header = [str(c) for c in pd.read_csv(io.StringIO(line), sep=self.sep, nrows=0,
                                              skipinitialspace=True).columns]
        other = [s for s in _SEPARATORS if s != self.sep and s in header[0]]
        if len(header) == 1 and other:
            shown = "\\t" if other[0] == "\t" else other[0]
            raise DataError(f"{self.path} has one column {header[0][:40]!r}: it looks "
                            f"{shown!r}-separated; pass sep='{shown}'.")
        return header

    def check_named(self, names: Sequence[str]) -> None:
        """A column without a name (a written index, read as 'Unnamed: 0') is refused
        among the columns used."""
        unnamed = [c for c in names if c.startswith("Unnamed: ")]
        if unnamed:
            raise DataError(f"{self.path} has a column without a name (read as "
                            f"{unnamed[0]!r}), most likely an index written with the data; "
                            "write the file with index=False, or name the outcome and "
                            "covariates (outcome=, covariates=).")

    def chunks(self, env: str, chunk_rows: int,
               columns: Sequence[str] | None = None) -> Iterator[pd.DataFrame]:
        """The rows, ``chunk_rows`` at a time (the ``env`` column as text; only
        ``columns`` if given, else every column, checked for ragged rows)."""
        with self._errors(), pd.read_csv(
                self.path, sep=self.sep, decimal=self.decimal, encoding=self.encoding,
                chunksize=chunk_rows, dtype={env: str}, usecols=columns,
                **CSV_OPTIONS) as reader:
            while True:
                with warnings.catch_warnings():
                    warnings.simplefilter("error", pd.errors.ParserWarning)
                    chunk = next(reader, None)
                if chunk is None:
                    return
                if columns is None and chunk.isna().to_numpy().any():
                    self._refuse_short_rows()        # (pandas pads a short row with NaN)
                yield chunk

    def frame(self, env: str, names: Sequence[str], labels: Sequence[str] = ()
              ) -> pd.DataFrame:
        """The columns ``names`` and ``env`` of every row, the labels typed by
        :func:`text_labels` (a blank label is left to the container's check), and the
        columns ``labels`` (e.g. clusters) as read."""
        self.check_named(names)
        frame = pd.concat(list(self.chunks(env, CHUNK_ROWS)), ignore_index=True)
        if frame.empty:
            raise DataError(f"{self.path} has a header but no data rows.")
        self.check_numbers(frame, names)
        if env in frame.columns and frame[env].notna().all():
            frame[env] = text_labels(frame[env])(frame[env])
        names = [*names, *labels]
        return frame.loc[:, [*names, env]] if env in frame.columns else frame.loc[:, names]

    def check_numbers(self, chunk: pd.DataFrame, names: Sequence[str]) -> None:
        """Numbers written with decimal commas (the file read with decimal='.') are
        named with the fix; any other text is left to the container's check."""
        if self.decimal == ",":
            return
        commas = [c for c in self.header if c in names and chunk[c].dtype.kind not in "biufc"
                  and chunk[c].notna().any()
                  and chunk[c].dropna().astype(str).str.fullmatch(_DECIMAL_COMMA).all()]
        if commas:
            raise DataError(f"columns {', '.join(commas[:5])}{' ...' if len(commas) > 5 else ''}"
                            f" of {self.path} hold numbers with decimal commas (such as "
                            "'1,5'); pass decimal=','.")

    def _refuse_short_rows(self) -> None:
        if not self._looked:
            self._short_row, self._looked = self._odd_row(longer=False), True
        if self._short_row is not None:
            raise DataError(self._ragged(*self._short_row))

    def _odd_row(self, *, longer: bool) -> tuple[int, int, int] | None:
        """(line, fields, header fields) of the first row longer (or shorter) than the
        header; blank lines are skipped, as pandas does."""
        with self.open() as handle:
            reader = csv.reader(handle, delimiter=self.sep, skipinitialspace=True)
            n_header = len(next(reader, []))
            for row in reader:
                if row and (len(row) > n_header if longer else len(row) < n_header):
                    return reader.line_num, len(row), n_header
        return None

    def _ragged(self, line: int, n_row: int, n_header: int) -> str:
        return (f"{self.path}, line {line}: {n_row} fields, but the header has {n_header}; "
                "fix that row (a stray separator, or an unquoted one inside a value?).")

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        r"""Errors of reading the file as :class:`DataError`\ s that name it."""
        path = self.path
        try:
            yield
        except FileNotFoundError:
            raise DataError(f"{path}: no such file.") from None
        except IsADirectoryError:
            raise DataError(f"{path} is a directory; give a CSV file.") from None
        except UnicodeDecodeError:
            raise DataError(f"{path} is not valid {self.encoding} text; pass encoding= with "
                            "the file's encoding, e.g. encoding='latin-1'.") from None
        except OSError as exc:
            raise DataError(f"cannot read {path}: {exc.strerror or exc}.") from None
        except pd.errors.EmptyDataError:
            raise DataError(f"{path} is empty; it needs a header row and data rows.") from None
        except (pd.errors.ParserError, pd.errors.ParserWarning) as exc:
            match = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(exc))
            found = (self._odd_row(longer=True) if match is None
                     else (int(match[2]), int(match[3]), int(match[1])))
            if found is None:
                raise DataError(f"{path} is not a valid CSV file: "
                                f"{' '.join(str(exc).split())}") from None
            raise DataError(self._ragged(*found)) from None


class TextLabels:
    """Types the labels of a chunk by :func:`text_labels`'s rule (a plain object, so that
    a source read again can be saved with its result)."""

    def __init__(self, integral: bool) -> None:
        self.integral = integral

    def __call__(self, values: pd.Series) -> np.ndarray:
        values = values.str.strip()
        return values.astype(np.int64).to_numpy() if self.integral else values.to_numpy()


def text_labels(text: pd.Series) -> TextLabels:
    """The one rule for environment labels read as text (a CSV file's, in from_csv and in
    the CLI), decided on every label of the file: stripped of spaces, and integers where
    every label is an integer within int64 ('01' and '1' are one environment), else text
    ('1.0' and '1' are two; a 20-digit label stays text: it overflowed).  Returns the
    function that types the labels of a chunk."""
    return TextLabels(bool(text.str.strip().str.fullmatch(r"[-+]?\d{1,18}").all()))
