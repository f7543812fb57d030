"""Saving and loading results: a pickle with the package version, read back by an
unpickler that refuses everything but the package's classes and the numpy / pandas types
their values pickle as, so a crafted file can neither run code nor hand pandas or pyarrow
inconsistent buffers to read out of bounds.

A file written by :meth:`Saveable.save` holds no Arrow buffer: pandas' Arrow-backed
arrays (the default ``str`` dtype included) are stored as object arrays of their Python
values and rebuilt from them.  Files of earlier versions hold Arrow arrays; each is
rebuilt from its buffers only after pyarrow's full validation (offsets, lengths, UTF-8)
passes, and every frame's and series' blocks are checked against their axes.
"""

from __future__ import annotations

import gc
import hashlib
import hmac
import io
import os
import pickle
from typing import Any

import numpy as np
import pandas as pd
from pandas.core.arrays.masked import BaseMaskedArray
from pandas.core.internals.managers import BlockManager, SingleBlockManager

from ._moved import new_path
from ._validation import warn_user
from ._version import __version__
from .exceptions import DataError, DataWarning

__all__ = ["Saveable", "load"]


class Saveable:
    """``save(path)`` and ``load(path)`` by pickle, as statsmodels' results: the model
    and its data are saved with them (so ``predict`` works after loading).  Loading
    refuses anything but the package's own classes and the types they hold
    (:func:`load`); load only files from a source you trust."""

    def save(self, path: str | os.PathLike, *, overwrite: bool = False) -> None:
        """Save to ``path`` (a pickle with the package version, after a line with its
        SHA-256, so that a file changed since is refused); see :meth:`load`.  An
        existing file is replaced only with ``overwrite=True``; a symbolic link is never
        followed.  The file is written beside ``path``, loaded back, and only then renamed
        to it, so a failed save leaves ``path`` as it was."""
        if not isinstance(path, str | os.PathLike):
            raise DataError(f"path must be a file name (str or os.PathLike); got "
                            f"{type(path).__name__}.")
        if not isinstance(overwrite, bool | np.bool_):
            raise DataError(f"overwrite must be True or False; got {overwrite!r}.")
        name = os.fspath(path)
        if not name or "\x00" in str(name) or str(name).endswith(("/", os.sep)) or (
                os.path.isdir(name)):
            raise DataError(f"path={str(path)!r} is not a file name: give one such as "
                            "'fit.pkl' (not empty, no NUL character, not a folder).")
        if os.path.islink(path):
            raise DataError(f"path={str(path)!r} is a symbolic link; save() does not follow "
                            "links: give the target's own path.")
        if not overwrite and os.path.lexists(path):
            raise DataError(f"path={str(path)!r} exists; pass overwrite=True to replace it.")
        # written to a new file beside it, checked by loading, then renamed over the
        # target: a save that fails never leaves a partial or unloadable file in its place
        tmp = f"{os.fspath(path)}.{os.getpid()}.{id(self):x}.saving"
        flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                 | getattr(os, "O_BINARY", 0))
        try:
            fd = os.open(tmp, flags, 0o644)
        except OSError as exc:
            raise DataError(f"Could not save to path={str(path)!r}: {exc}") from exc
        try:
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(_sealed({"negdro_stats": __version__, "results": self}))
                load(tmp, type(self))
            except (DataError, pickle.PicklingError, TypeError, AttributeError) as exc:
                raise DataError(f"Could not save to path={str(path)!r}: the file written "
                                f"does not load back ({exc}); path was left as it "
                                "was.") from exc
            os.replace(tmp, path)
        finally:
            if os.path.lexists(tmp):
                os.remove(tmp)

    @classmethod
    def load(cls, path: str | os.PathLike) -> Any:
        """Results saved by :meth:`save`; a file of another kind is a DataError, one saved
        by another version of negdro_stats a DataWarning."""
        return load(path, cls)


# The first line of a file written by save(), before the SHA-256 of the pickle after it.
_SEAL = b"negdro_stats results, sha256 "


def _sealed(payload: dict) -> bytes:
    """The bytes save() writes: :data:`_SEAL`, the pickle's SHA-256 (hex) and a newline,
    then the pickle."""
    buffer = io.BytesIO()
    _ResultsPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(payload)
    body = buffer.getvalue()
    return _SEAL + hashlib.sha256(body).hexdigest().encode() + b"\n" + body


def _unsealed(data: bytes, path: str | os.PathLike) -> bytes:
    """The pickle in a file's bytes, checked against the SHA-256 before it (a checksum,
    against damage: not a signature); a file without the seal (an earlier version's, or
    one written by pickle itself) as it is."""
    if not data.startswith(_SEAL):
        return data
    digest, body = data[len(_SEAL):len(_SEAL) + 65], data[len(_SEAL) + 65:]
    if not hmac.compare_digest(digest, hashlib.sha256(body).hexdigest().encode() + b"\n"):
        raise DataError(f"path={str(path)!r} was changed after save() wrote it: its "
                        "SHA-256 does not match the one saved with it (a damaged copy?); "
                        "save the result again from its source.")
    return body


class _ResultsPickler(pickle.Pickler):
    """The pickler of :meth:`Saveable.save`: a pandas array backed by Arrow (the default
    ``str`` dtype, ``ArrowDtype`` columns) is stored as an object array of its Python
    values and its dtype, rebuilt by :func:`_arrow_backed`, so the file holds no Arrow
    buffer for a loader to trust."""

    def reducer_override(self, obj: Any) -> Any:
        if not isinstance(obj, pd.arrays.ArrowExtensionArray):
            return NotImplemented
        dtype: Any = obj.dtype
        if isinstance(dtype, pd.ArrowDtype):
            # by name ('double[pyarrow]'); a type whose name pandas does not read back
            # (dictionary, nested) is stored as plain objects
            dtype = str(dtype) if _dtype_named(str(dtype)) == dtype else "object"
        return _arrow_backed, (obj.to_numpy(dtype=object, na_value=None), dtype)


def _dtype_named(name: str) -> Any:
    try:
        return pd.api.types.pandas_dtype(name)
    except (TypeError, ValueError):
        return None


def _arrow_backed(values: Any, dtype: Any) -> Any:
    """The pandas array :class:`_ResultsPickler` stored as ``values`` (a 1-d object
    array) and ``dtype`` (a ``StringDtype`` or a dtype's name), rebuilt from the Python
    values by pandas."""
    if not (isinstance(values, np.ndarray) and values.dtype == object and values.ndim == 1
            and isinstance(dtype, str | pd.StringDtype)):
        raise pickle.UnpicklingError("an Arrow-backed array is stored in an unknown form")
    return pd.array(values, dtype=_dtype_named(dtype) if isinstance(dtype, str) else dtype)


# Arrow arrays in files of earlier versions (pandas' `str` labels): rebuilt by these in
# place of pyarrow's own functions, which trust the buffers they are given.
def _arrow_array(data: Any) -> Any:
    """``pyarrow.lib._restore_array``: a flat (not nested, not dictionary-encoded) Arrow
    array from its type, length, null count, offset and buffers, after pyarrow's full
    validation of the buffers (offsets in bounds and ordered, valid UTF-8, null count)."""
    import pyarrow as pa

    try:
        dtype, length, null_count, offset, buffers, children, dictionary = data
    except (TypeError, ValueError) as exc:
        raise pickle.UnpicklingError("an Arrow array is stored in an unknown form") from exc
    flat = isinstance(dtype, pa.DataType) and (pa.types.is_primitive(dtype) or any(
        check(dtype) for check in (pa.types.is_string, pa.types.is_large_string,
                                   pa.types.is_binary, pa.types.is_large_binary)))
    if not (flat and not children and dictionary is None and isinstance(buffers, list)
            and all(b is None or isinstance(b, pa.Buffer) for b in buffers)
            and all(type(v) is int for v in (length, null_count, offset))):
        raise pickle.UnpicklingError("an Arrow array is stored in an unknown form")
    array = pa.Array.from_buffers(dtype, length, buffers, null_count, offset)
    array.validate(full=True)
    return array


def _arrow_buffer(data: Any) -> Any:
    """``pyarrow.lib.py_buffer``: a buffer that owns a copy of the bytes."""
    import pyarrow as pa

    if not isinstance(data, bytes | bytearray):
        raise pickle.UnpicklingError("an Arrow buffer is stored in an unknown form")
    return pa.py_buffer(bytes(data))


def _arrow_type(name: Any) -> Any:
    """``pyarrow.lib.type_for_alias``: an Arrow type by its name."""
    import pyarrow as pa

    if not isinstance(name, str):
        raise pickle.UnpicklingError("an Arrow type is stored in an unknown form")
    return pa.type_for_alias(name)


def _bytearray(data: Any = b"", *encoding: str) -> bytearray:
    """``bytearray`` of the bytes (or latin-1 text) a pickle of protocol < 5 stores,
    never of a length the file names (``bytearray(10**12)``)."""
    if not isinstance(data, bytes | str) or isinstance(data, str) != bool(encoding):
        raise pickle.UnpicklingError("a bytearray is stored in an unknown form")
    return bytearray(data, *encoding)


# pyarrow's reconstruction functions, which trust the buffers they are given, and
# bytearray (which would make an array of any size), replaced by checking ones
_REPLACED = {("pyarrow.lib", "_restore_array"): _arrow_array,
             ("pyarrow.lib", "py_buffer"): _arrow_buffer,
             ("pyarrow.lib", "type_for_alias"): _arrow_type,
             ("builtins", "bytearray"): _bytearray}

# What a saved result may refer to besides the package's own classes: the builtins,
# numpy and pandas types and reconstruction functions that its arrays, frames and labels
# pickle as (measured on fits from frames, arrays, moments and fit_path with integer,
# string, categorical and datetime environment labels, and on Arrow-backed frames).
# No builtin that makes an object of a size the file chooses (range, bytes).
_SAFE_GLOBALS = {
    "builtins": {"slice", "set", "frozenset", "complex", "dict", "list", "tuple", "int",
                 "float", "str", "bool"},
    "collections": {"OrderedDict"},
    "datetime": {"datetime", "date", "time", "timedelta", "timezone"},
    "numpy": {"dtype", "ndarray"},
    "numpy._core.multiarray": {"_reconstruct", "scalar"},
    "numpy.core.multiarray": {"_reconstruct", "scalar"},
    "numpy._core.numeric": {"_frombuffer"},
    "numpy.core.numeric": {"_frombuffer"},
    "pandas._libs.arrays": {"__pyx_unpickle_NDArrayBacked"},
    "pandas._libs.internals": {"_unpickle_block"},
    "pandas._libs.tslibs.timestamps": {"_unpickle_timestamp"},
    "pandas._libs.tslibs.timedeltas": {"_timedelta_unpickle"},
    "pandas._libs.tslibs.nattype": {"_nat_unpickle"},
    "pandas": {"NA"},
    "pandas.core.indexes.base": {"_new_Index"},
    "pandas.core.indexes.datetimes": {"_new_DatetimeIndex"},
    "pandas.core.indexes.period": {"_new_PeriodIndex"},
    "negdro_stats._saving": {"_arrow_backed"},
}

# pandas' containers and arrays a result holds, by name: not those whose integer codes
# index another array unchecked (Categorical, MultiIndex), nor sparse or interval data.
_PANDAS_CONTAINERS = (
    pd.Series, pd.DataFrame, pd.Index, pd.RangeIndex, pd.DatetimeIndex, pd.TimedeltaIndex,
    pd.PeriodIndex, pd.arrays.DatetimeArray, pd.arrays.TimedeltaArray,
    pd.arrays.PeriodArray, pd.arrays.StringArray, pd.arrays.NumpyExtensionArray,
    pd.arrays.FloatingArray, pd.arrays.IntegerArray, pd.arrays.BooleanArray,
    pd.arrays.ArrowExtensionArray, pd.arrays.ArrowStringArray, BlockManager,
    SingleBlockManager)
_PANDAS_VALUES = (pd.api.extensions.ExtensionDtype, pd.Timestamp, pd.Timedelta, pd.Period,
                  pd.DateOffset)


def _safe_global(module: str, name: str, obj: object) -> bool:
    """The package's classes, numpy dtypes and scalars, pandas' containers and value
    types, and :data:`_SAFE_GLOBALS`: never a function that could run code."""
    if name in _SAFE_GLOBALS.get(module, ()):
        return True
    if not isinstance(obj, type):
        return False
    top = module.split(".")[0]
    return (obj.__module__.split(".")[0] == "negdro_stats"
            or (top == "numpy" and issubclass(obj, (np.dtype, np.generic)))
            or (top == "pandas" and (obj in _PANDAS_CONTAINERS
                                     or issubclass(obj, _PANDAS_VALUES))))


class _ResultsUnpickler(pickle.Unpickler):
    """Refuses every global but :func:`_safe_global`'s: a crafted file cannot reach
    ``os.system`` or any other callable.  pyarrow's reconstruction functions and
    ``bytearray`` are replaced by the checking ones of :data:`_REPLACED`."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _REPLACED:
            if module == "pyarrow.lib":
                import pyarrow  # noqa: F401  (an ImportError names the package to install)
            return _REPLACED[module, name]
        module = new_path(module, name)                   # saved under 0.1's flat layout
        obj = None
        if module.split(".")[0] in ("negdro_stats", "numpy", "pandas"):
            try:
                obj = super().find_class(module, name)
            except (AttributeError, ImportError):
                obj = None
        if not _safe_global(module, name, obj):
            raise pickle.UnpicklingError(
                f"it refers to {module}.{name}, which no result of negdro_stats holds "
                "(refused without running it)")
        return super().find_class(module, name)


def _check_pandas(root: object) -> None:
    """Every frame, series and masked array reachable from ``root`` is consistent, as
    pandas' compiled code assumes without checking: each block's rows are distinct
    positions of the frame's columns and its shape fits the axes; a mask has its
    data's shape; an Arrow-backed array holds Arrow data of its dtype."""
    seen, todo = set(), [root]
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, BlockManager | SingleBlockManager):
            _check_blocks(obj)
        elif isinstance(obj, pd.DataFrame | pd.Series):
            if type(obj.__dict__.get("_mgr")) is not (
                    BlockManager if isinstance(obj, pd.DataFrame) else SingleBlockManager):
                raise pickle.UnpicklingError(f"a {type(obj).__name__} without its data")
        elif isinstance(obj, pd.arrays.ArrowExtensionArray):
            _check_arrow_backed(obj)
        elif isinstance(obj, BaseMaskedArray):
            data, mask = obj.__dict__.get("_data"), obj.__dict__.get("_mask")
            if not (isinstance(data, np.ndarray) and isinstance(mask, np.ndarray)
                    and mask.dtype == bool and mask.shape == data.shape):
                raise pickle.UnpicklingError("a masked array whose mask does not fit")
        if isinstance(obj, dict | list | tuple | set | frozenset) or type(
                obj).__module__.split(".")[0] in ("negdro_stats", "pandas"):
            todo.extend(r for r in gc.get_referents(obj) if not isinstance(r, type))


def _check_blocks(manager: BlockManager | SingleBlockManager) -> None:
    axes, blocks = manager.axes, manager.blocks
    if not (len(axes) == manager.ndim and all(isinstance(a, pd.Index) for a in axes)
            and all(b.ndim == manager.ndim for b in blocks)):
        raise pickle.UnpicklingError("a frame whose blocks do not fit its axes")
    if manager.ndim == 1:
        fits = len(blocks) == 1 and blocks[0].values.ndim == 1 and (
            len(blocks[0].values) == len(axes[0]))
    else:
        rows = [b.mgr_locs.as_array for b in blocks]
        fits = all(b.values.shape == (len(r), len(axes[1])) if b.values.ndim == 2 else (
            b.values.ndim == 1 and len(r) == 1 and len(b.values) == len(axes[1]))
            for b, r in zip(blocks, rows, strict=True)) and np.array_equal(
            np.sort(np.concatenate([np.zeros(0, np.intp), *rows])), np.arange(len(axes[0])))
    if not fits:
        raise pickle.UnpicklingError("a frame whose blocks do not fit its axes")


def _check_arrow_backed(array: pd.api.extensions.ExtensionArray) -> None:
    import pyarrow as pa

    data, dtype = array.__dict__.get("_pa_array"), array.__dict__.get("_dtype")
    want = dtype.pyarrow_dtype if isinstance(dtype, pd.ArrowDtype) else None
    if not (isinstance(data, pa.ChunkedArray) and (
            data.type == want if want is not None else pa.types.is_string(data.type)
            or pa.types.is_large_string(data.type))):
        raise pickle.UnpicklingError("an Arrow-backed array whose data is not of its dtype")


def load(path: str | os.PathLike, kind: type | None = None) -> Any:
    """Results saved by ``save(path)`` (:class:`NegDROResults` or :class:`PathResult`; of
    class ``kind`` when given).  A file changed since save() wrote it is refused (its
    SHA-256 is checked).  The file is read by a restricted unpickler that refuses
    any global but the package's classes and the numpy / pandas types its results hold,
    so a crafted file cannot run code through it; Arrow arrays (in files of earlier
    versions) are validated before use and every frame is checked against its axes, so
    no byte of the file can make pandas or pyarrow read out of bounds.  Still load only
    files from a source you trust (a result is data you will act on)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise DataError(f"Could not read path={str(path)!r}: {exc}") from exc
    try:
        payload = _ResultsUnpickler(io.BytesIO(_unsealed(data, path))).load()
        _check_pandas(payload)
    except DataError:
        raise
    except ImportError as exc:         # a value of an optional package (Arrow-backed text)
        package = (exc.name or "an optional package").split(".")[0]
        raise DataError(f"path={str(path)!r} holds values stored by {package}, which is not "
                        f"installed here: pip install {package}, then load it.") from exc
    except Exception as exc:           # pickle raises many kinds on a foreign file
        raise DataError(f"path={str(path)!r} is not a file saved by negdro_stats' "
                        f"save(), or was changed since ({type(exc).__name__}: {exc}).") from exc
    kind = kind or Saveable
    if not (isinstance(payload, dict) and isinstance(payload.get("results"), kind)):
        raise DataError(f"path={str(path)!r} does not hold {kind.__name__.lstrip('_')} "
                        "saved by negdro_stats' save().")
    if payload.get("negdro_stats") != __version__:
        warn_user(f"{str(path)!r} was saved by negdro_stats {payload.get('negdro_stats')}; "
                  f"this is {__version__}: check the results before relying on them.",
                  DataWarning)
    return payload["results"]
